#include "runtime/comm/nccl_communicator.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/status.h"

namespace fg::runtime {
namespace {

// NCCL is loaded when a run asks for it (dlopen), so the binary starts on machines without it.
struct Nccl {
  ncclResult_t (*GetUniqueId)(ncclUniqueId*);
  ncclResult_t (*CommInitRank)(ncclComm_t*, int, ncclUniqueId, int);
  ncclResult_t (*AllReduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
  ncclResult_t (*CommAbort)(ncclComm_t);
  ncclResult_t (*CommDestroy)(ncclComm_t);
  const char* (*GetErrorString)(ncclResult_t);
  ncclResult_t (*CommSplit)(ncclComm_t, int, int, ncclComm_t*, ncclConfig_t*);  // NCCL 2.18+; else null
};

absl::StatusOr<const Nccl*> LoadNccl() {
  static const absl::StatusOr<Nccl> nccl = []() -> absl::StatusOr<Nccl> {
    void* lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return absl::FailedPreconditionError(absl::StrCat("cannot load NCCL: ", dlerror()));
    Nccl n;
    bool ok = true;
    auto get = [&](auto* fn, const char* name) {
      *fn = reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(dlsym(lib, name));
      ok = ok && *fn != nullptr;
    };
    get(&n.GetUniqueId, "ncclGetUniqueId");
    get(&n.CommInitRank, "ncclCommInitRank");
    get(&n.AllReduce, "ncclAllReduce");
    get(&n.CommAbort, "ncclCommAbort");
    get(&n.CommDestroy, "ncclCommDestroy");
    get(&n.GetErrorString, "ncclGetErrorString");
    if (!ok) return absl::FailedPreconditionError("libnccl.so.2 lacks the functions FlexGraph calls");
    n.CommSplit = reinterpret_cast<decltype(n.CommSplit)>(dlsym(lib, "ncclCommSplit"));
    return n;
  }();
  if (!nccl.ok()) return nccl.status();
  return &*nccl;
}

absl::Status NcclError(const Nccl& nccl, ncclResult_t code, const char* call) {
  if (code == ncclSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(call, ": ", nccl.GetErrorString(code)));
}

absl::Status CudaError(cudaError_t code, const char* call) {
  if (code == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(call, ": ", cudaGetErrorString(code)));
}

// A NCCL communicator over `host`'s workers: worker 0's id broadcast through `host` (step `step`).
// Collective over `host`.
absl::StatusOr<ncclComm_t> InitOver(const Nccl& nccl, Communicator& host, int step) {
  std::string id(sizeof(ncclUniqueId), '\0');
  if (host.rank() == 0) {
    ncclUniqueId unique;
    FG_RETURN_IF_ERROR(NcclError(nccl, nccl.GetUniqueId(&unique), "ncclGetUniqueId"));
    std::memcpy(id.data(), &unique, sizeof(unique));
  }
  FG_RETURN_IF_ERROR(host.Broadcast(&id, 0, 0, step));
  if (id.size() != sizeof(ncclUniqueId)) return absl::DataLossError("a malformed NCCL id from worker 0");
  ncclUniqueId unique;
  std::memcpy(&unique, id.data(), sizeof(unique));
  ncclComm_t comm = nullptr;
  FG_RETURN_IF_ERROR(NcclError(nccl, nccl.CommInitRank(&comm, host.size(), unique, host.rank()), "ncclCommInitRank"));
  return comm;
}

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(const Nccl& nccl, std::unique_ptr<Communicator> host, ncclComm_t comm)
      : nccl_(nccl), host_(std::move(host)), comm_(comm) {}
  ~NcclCommunicator() override {
    if (comm_ != nullptr) nccl_.CommDestroy(comm_);
  }

  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  void Send(int peer, uint64_t tag, std::string payload) override { host_->Send(peer, tag, std::move(payload)); }
  absl::StatusOr<std::string> Recv(int peer, uint64_t tag) override { return host_->Recv(peer, tag); }
  void Abort(const absl::Status& status) override {
    if (comm_ != nullptr) nccl_.CommAbort(comm_);  // wakes kernels waiting for a peer that will not come
    comm_ = nullptr;
    host_->Abort(status);
  }
  absl::Status AllReduce(float* data, int64_t n, int epoch, int step) override {
    return host_->AllReduce(data, n, epoch, step);
  }
  absl::Status AllReduce(std::vector<double>* values, int epoch, int step) override {
    return host_->AllReduce(values, epoch, step);
  }
  absl::Status Broadcast(std::string* payload, int root, int epoch, int step,
                         TrafficKind kind = TrafficKind::kControl) override {
    return host_->Broadcast(payload, root, epoch, step, kind);
  }
  // The host's group, with its own NCCL communicator for device collectives: ncclCommSplit where
  // NCCL has it (2.18+), else one bootstrapped through the group. Collective over this run.
  absl::StatusOr<std::unique_ptr<Communicator>> Split(int colour, int key) override {
    if (comm_ == nullptr) return absl::AbortedError("the NCCL communicator was aborted");
    FG_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> group, host_->Split(colour, key));
    ncclComm_t sub = nullptr;
    if (nccl_.CommSplit != nullptr) {
      FG_RETURN_IF_ERROR(NcclError(nccl_, nccl_.CommSplit(comm_, colour, key, &sub, nullptr), "ncclCommSplit"));
    } else {
      FG_ASSIGN_OR_RETURN(sub, InitOver(nccl_, *group, 8));
    }
    return std::unique_ptr<Communicator>(new NcclCommunicator(nccl_, std::move(group), sub));
  }
  absl::Status Barrier(int epoch, int step) override { return host_->Barrier(epoch, step); }
  absl::StatusOr<std::vector<std::string>> AllToAllV(std::vector<std::string> send, uint64_t tag) override {
    return host_->AllToAllV(std::move(send), tag);
  }

  bool HasDeviceCollectives() const override { return true; }
  absl::Status AllReduceOnDevice(float* device_data, int64_t n, void* stream) override {
    if (comm_ == nullptr) return absl::AbortedError("the NCCL communicator was aborted");
    CountSent(TrafficKind::kAllReduce, static_cast<size_t>(2 * n * sizeof(float) * (size() - 1) / size()));
    FG_RETURN_IF_ERROR(NcclError(nccl_, nccl_.AllReduce(device_data, device_data, static_cast<size_t>(n), ncclFloat,
                                                        ncclSum, comm_, static_cast<cudaStream_t>(stream)),
                                 "ncclAllReduce"));
    return absl::OkStatus();
  }

 private:
  const Nccl& nccl_;
  std::unique_ptr<Communicator> host_;
  ncclComm_t comm_;
};

}  // namespace

bool NcclBuilt() { return true; }

absl::StatusOr<std::unique_ptr<Communicator>> MakeNcclCommunicator(std::unique_ptr<Communicator> host) {
  FG_ASSIGN_OR_RETURN(const Nccl* nccl, LoadNccl());
  int devices = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&devices); e != cudaSuccess || devices == 0) {
    return absl::FailedPreconditionError(absl::StrCat("the NCCL backend needs a GPU; this machine has none (",
                                                      e == cudaSuccess ? "no device" : cudaGetErrorString(e), ")"));
  }
  const int rank = host->rank(), size = host->size();
  const int device = rank % devices;
  // Every rank names its device: two ranks on one GPU are refused before NCCL hangs or aborts.
  char name[256] = "";
  gethostname(name, sizeof(name) - 1);
  std::vector<std::string> where(size, absl::StrCat(name, " GPU ", device));
  FG_ASSIGN_OR_RETURN(std::vector<std::string> all,
                      host->AllToAllV(std::move(where), MakeTag(0, 0, 0, TrafficKind::kControl, 7)));
  for (int q = 0; q < size; ++q) {
    if (q != rank && all[q] == all[rank]) {
      return absl::FailedPreconditionError(absl::StrCat("workers ", std::min(q, rank), " and ", std::max(q, rank),
                                                        " would share ", all[rank],
                                                        ": NCCL needs one GPU per worker"));
    }
  }
  FG_RETURN_IF_ERROR(CudaError(cudaSetDevice(device), "cudaSetDevice"));
  FG_ASSIGN_OR_RETURN(ncclComm_t comm, InitOver(*nccl, *host, 7));
  return std::unique_ptr<Communicator>(new NcclCommunicator(*nccl, std::move(host), comm));
}

}  // namespace fg::runtime
