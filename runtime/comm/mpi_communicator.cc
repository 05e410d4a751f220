#include "runtime/comm/mpi_communicator.h"

// MPI's C API only (no deprecated C++ bindings, which need another library).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <atomic>
#include <algorithm>
#include <climits>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <list>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/status.h"
#include "flexgraph/base/timer.h"

namespace fg::runtime {
namespace {

constexpr int kMessageTag = 1;  // the one MPI tag of point-to-point messages

absl::Status MpiError(int code, const char* call) {
  if (code == MPI_SUCCESS) return absl::OkStatus();
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return absl::InternalError(absl::StrCat(call, ": ", std::string(text, len)));
}

class MpiCommunicator final : public Communicator {
 public:
  // Over `base`: MPI_COMM_WORLD, or a group's communicator from Split, which this one then owns.
  explicit MpiCommunicator(MPI_Comm base = MPI_COMM_WORLD) : group_(base != MPI_COMM_WORLD ? base : MPI_COMM_NULL) {
    MPI_Comm_rank(base, &rank_);
    MPI_Comm_size(base, &size_);
    MPI_Comm_dup(base, &p2p_);
    MPI_Comm_dup(base, &coll_);
    MPI_Comm_dup(base, &xchg_);
    progress_ = std::thread([this] { Progress(); });
  }
  // A group waits (up to its timeout) for its outstanding sends, then frees its MPI communicators;
  // the world's are freed by FinishMpi.
  ~MpiCommunicator() override {
    if (group_ == MPI_COMM_NULL) {
      Stop();
      return;
    }
    const bool drained = DrainSends();
    Stop();
    if (!drained) {  // MPI may still read the buffers of the sends left: keep them, and the communicators
      new std::list<Outgoing>(std::move(pending_));
      return;
    }
    MPI_Comm_free(&p2p_);
    MPI_Comm_free(&coll_);
    MPI_Comm_free(&xchg_);
    MPI_Comm_free(&group_);
  }

  // MPI_Comm_split of this communicator's ranks: the group's own MPI communicator (its messages
  // and native collectives never meet this one's).
  absl::StatusOr<std::unique_ptr<Communicator>> Split(int colour, int key) override {
    if (colour < 0) {
      return absl::InvalidArgumentError(absl::StrCat("Split: colour ", colour, " of worker ", rank_,
                                                     " is negative (every worker must join a group)"));
    }
    MPI_Comm sub = MPI_COMM_NULL;
    FG_RETURN_IF_ERROR(MpiError(MPI_Comm_split(coll_, colour, key, &sub), "MPI_Comm_split"));
    auto group = std::make_unique<MpiCommunicator>(sub);
    group->set_timeout(timeout());
    return std::unique_ptr<Communicator>(std::move(group));
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void Send(int peer, uint64_t tag, std::string payload) override {
    CountSent(tag, payload.size());
    std::string framed(sizeof(tag), '\0');
    std::memcpy(framed.data(), &tag, sizeof(tag));
    framed += payload;
    if (framed.size() > static_cast<size_t>(INT_MAX)) {
      Abort(absl::ResourceExhaustedError(absl::StrCat("a message of ", framed.size(), " bytes for worker ", peer,
                                                      " exceeds MPI's 2 GiB count")));
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      pending_.push_back({MPI_REQUEST_NULL, std::move(framed)});
      Outgoing& out = pending_.back();
      MPI_Isend(out.bytes.data(), static_cast<int>(out.bytes.size()), MPI_BYTE, peer, kMessageTag, p2p_,
                &out.request);
    }
    wake_.notify_one();
  }

  absl::StatusOr<std::string> Recv(int peer, uint64_t tag) override {
    Stopwatch wait;
    ++receiving_;
    wake_.notify_one();
    auto got = mailbox_.Take(peer, tag, timeout());
    --receiving_;
    CountWait(wait.Seconds());
    if (!got.ok() && absl::IsDeadlineExceeded(got.status())) {
      return absl::DeadlineExceededError(absl::StrCat("no message from worker ", peer, " (", TagString(tag),
                                                      ") within ", timeout().count() / 1000, " s"));
    }
    return got;
  }

  void Abort(const absl::Status& status) override { mailbox_.Abort(status); }

  absl::Status AllReduce(float* data, int64_t n, int epoch, int step) override {
    (void)epoch, (void)step;
    if (size_ == 1 || n == 0) return absl::OkStatus();
    CountSent(TrafficKind::kAllReduce, static_cast<size_t>(2 * n * sizeof(float) * (size_ - 1) / size_));
    for (int64_t at = 0; at < n; at += INT_MAX) {
      const int count = static_cast<int>(std::min<int64_t>(INT_MAX, n - at));
      FG_RETURN_IF_ERROR(MpiError(
          MPI_Allreduce(MPI_IN_PLACE, data + at, count, MPI_FLOAT, MPI_SUM, coll_), "MPI_Allreduce"));
    }
    return absl::OkStatus();
  }

  absl::Status AllReduce(std::vector<double>* values, int epoch, int step) override {
    (void)epoch, (void)step;
    if (size_ == 1 || values->empty()) return absl::OkStatus();
    CountSent(TrafficKind::kControl, values->size() * sizeof(double));
    return MpiError(MPI_Allreduce(MPI_IN_PLACE, values->data(), static_cast<int>(values->size()),
                                  MPI_DOUBLE, MPI_SUM, coll_),
                    "MPI_Allreduce");
  }

  absl::Status Broadcast(std::string* payload, int root, int epoch, int step,
                         TrafficKind kind = TrafficKind::kControl) override {
    (void)epoch, (void)step;
    if (root < 0 || root >= size_) {
      return absl::InvalidArgumentError(absl::StrCat("broadcast from worker ", root, " of ", size_));
    }
    uint64_t bytes = payload->size();
    FG_RETURN_IF_ERROR(MpiError(MPI_Bcast(&bytes, 1, MPI_UINT64_T, root, coll_), "MPI_Bcast"));
    if (bytes > static_cast<uint64_t>(INT_MAX)) {
      return absl::ResourceExhaustedError(absl::StrCat("a broadcast of ", bytes, " bytes exceeds MPI's 2 GiB count"));
    }
    payload->resize(bytes);
    if (rank_ == root) CountSent(kind, bytes * (size_ - 1));
    return MpiError(MPI_Bcast(payload->data(), static_cast<int>(bytes), MPI_BYTE, root, coll_), "MPI_Bcast");
  }

  absl::Status Barrier(int epoch, int step) override {
    (void)epoch, (void)step;
    return MpiError(MPI_Barrier(coll_), "MPI_Barrier");
  }

  absl::StatusOr<std::vector<std::string>> AllToAllV(std::vector<std::string> send, uint64_t tag) override {
    if (static_cast<int>(send.size()) != size_) {
      return absl::InvalidArgumentError(absl::StrCat("all-to-all with ", send.size(), " buffers for ", size_, " workers"));
    }
    std::vector<int> send_counts(size_), recv_counts(size_);
    int64_t send_total = 0;
    for (int q = 0; q < size_; ++q) {
      if (q == rank_) continue;
      if (send[q].size() > static_cast<size_t>(INT_MAX)) {
        return absl::ResourceExhaustedError(absl::StrCat("an all-to-all message of ", send[q].size(),
                                                         " bytes for worker ", q, " exceeds MPI's 2 GiB count"));
      }
      send_counts[q] = static_cast<int>(send[q].size());
      send_total += static_cast<int64_t>(send[q].size());
    }
    CountSent(TagKind(tag), static_cast<size_t>(send_total));
    FG_RETURN_IF_ERROR(MpiError(
        MPI_Alltoall(send_counts.data(), 1, MPI_INT, recv_counts.data(), 1, MPI_INT, coll_), "MPI_Alltoall"));
    // Pairwise, straight between the callers' buffers (MPI_Alltoallv would need them contiguous).
    std::vector<std::string> got(size_);
    std::vector<MPI_Request> requests;
    requests.reserve(2 * size_);
    for (int q = 0; q < size_; ++q) {
      if (q == rank_ || recv_counts[q] == 0) continue;
      got[q].resize(recv_counts[q]);
      requests.emplace_back();
      MPI_Irecv(got[q].data(), recv_counts[q], MPI_BYTE, q, kMessageTag, coll_, &requests.back());
    }
    for (int q = 0; q < size_; ++q) {
      if (q == rank_ || send_counts[q] == 0) continue;
      requests.emplace_back();
      MPI_Isend(send[q].data(), send_counts[q], MPI_BYTE, q, kMessageTag, coll_, &requests.back());
    }
    FG_RETURN_IF_ERROR(MpiError(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE),
                                "MPI_Waitall"));
    got[rank_] = std::move(send[rank_]);
    return got;
  }

  // MPI_Ialltoallv on a communicator of its own (the exchange's calls start in the same order on
  // every rank); Finish tests it until done, the run aborts or the timeout passes.
  std::unique_ptr<PendingAllToAllV> StartAllToAllV(const PartFn& part, std::vector<int64_t> recv_bytes,
                                                   uint64_t tag) override {
    auto pending = std::make_unique<Pending>(this, tag);
    std::vector<std::string> send(size_);
    for (int q = 0; q < size_; ++q) {
      if (q != rank_) send[q] = part(q);
    }
    std::vector<int> send_counts(size_), send_displs(size_), recv_counts(size_), recv_displs(size_);
    int64_t send_total = 0, recv_total = 0;
    for (int q = 0; q < size_; ++q) {
      send_displs[q] = static_cast<int>(std::min<int64_t>(send_total, INT_MAX));
      recv_displs[q] = static_cast<int>(std::min<int64_t>(recv_total, INT_MAX));
      send_counts[q] = static_cast<int>(std::min<size_t>(send[q].size(), INT_MAX));
      recv_counts[q] = static_cast<int>(std::min<int64_t>(recv_bytes[q], INT_MAX));
      send_total += static_cast<int64_t>(send[q].size());
      recv_total += recv_bytes[q];
    }
    if (send_total > INT_MAX || recv_total > INT_MAX) {
      pending->status = absl::ResourceExhaustedError(absl::StrCat(
          "an exchange of ", std::max(send_total, recv_total), " bytes (", TagString(tag),
          ") exceeds MPI's 2 GiB count: use more workers or the gRPC backend"));
      Abort(pending->status);
      return pending;
    }
    CountSent(tag, static_cast<size_t>(send_total));
    // MPI_Ialltoallv takes one buffer each way: a lone part is that buffer, several are joined.
    const int64_t sending = std::count_if(send.begin(), send.end(), [](const std::string& b) { return !b.empty(); });
    if (sending == 1) {
      for (std::string& part : send) {
        if (!part.empty()) pending->send = std::move(part);
      }
    } else {
      pending->send.reserve(send_total);
      for (const std::string& part : send) pending->send += part;
    }
    pending->recv.resize(recv_total);
    pending->recv_bytes = std::move(recv_bytes);
    pending->status = MpiError(MPI_Ialltoallv(pending->send.data(), send_counts.data(), send_displs.data(), MPI_BYTE,
                                              pending->recv.data(), recv_counts.data(), recv_displs.data(), MPI_BYTE,
                                              xchg_, &pending->request),
                               "MPI_Ialltoallv");
    wake_.notify_one();
    return pending;
  }

  // Waits for this rank's sends until they complete (true) or the timeout passes (false).
  bool DrainSends() {
    Stopwatch wait;
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (pending_.empty()) return true;
      }
      if (group_ != MPI_COMM_NULL && wait.Seconds() > timeout().count() / 1000.0) return false;
      wake_.notify_one();
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }

  // Waits for this rank's sends, then for every rank's (a barrier), then stops receiving.
  absl::Status Finish() {
    DrainSends();
    const absl::Status s = MpiError(MPI_Barrier(coll_), "MPI_Barrier");
    Stop();
    MPI_Comm_free(&p2p_);
    MPI_Comm_free(&coll_);
    MPI_Comm_free(&xchg_);
    return s;
  }

 private:
  struct Outgoing {
    MPI_Request request;
    std::string bytes;
  };
  struct Pending final : PendingAllToAllV {
    Pending(MpiCommunicator* c, uint64_t t) : comm(c), tag(t) {}
    // A collective's request cannot be freed or cancelled: one left unfinished (only when the run
    // fails) keeps its buffers, which MPI may still read and write, for the rest of the process.
    ~Pending() override {
      if (request != MPI_REQUEST_NULL) {
        new std::string(std::move(send));
        new std::string(std::move(recv));
      }
    }
    absl::StatusOr<std::vector<std::string>> Finish() override {
      FG_RETURN_IF_ERROR(status);
      Stopwatch wait;
      ++comm->receiving_;
      comm->wake_.notify_one();
      for (int spins = 0;; ++spins) {
        int done = 0;
        status = MpiError(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
        if (!status.ok() || done) break;
        status = comm->mailbox_.status();
        if (!status.ok()) break;
        if (wait.Seconds() > comm->timeout().count() / 1000.0) {
          status = absl::DeadlineExceededError(absl::StrCat("exchange ", TagString(tag), " not complete within ",
                                                            comm->timeout().count() / 1000, " s"));
          break;
        }
        if (spins > 100) std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
      --comm->receiving_;
      comm->CountWait(wait.Seconds());
      FG_RETURN_IF_ERROR(status);
      std::vector<std::string> got(recv_bytes.size());
      const auto from = std::find_if(recv_bytes.begin(), recv_bytes.end(), [](int64_t b) { return b > 0; });
      if (from != recv_bytes.end() && *from == static_cast<int64_t>(recv.size())) {  // one sender: its part is the buffer
        got[from - recv_bytes.begin()] = std::move(recv);
        return got;
      }
      for (size_t q = 0, at = 0; q < got.size(); at += recv_bytes[q], ++q) got[q] = recv.substr(at, recv_bytes[q]);
      return got;
    }
    MpiCommunicator* comm;
    uint64_t tag;
    absl::Status status;
    MPI_Request request = MPI_REQUEST_NULL;
    std::string send, recv;
    std::vector<int64_t> recv_bytes;
  };

  void Stop() {
    stop_ = true;
    wake_.notify_all();
    if (progress_.joinable()) progress_.join();
  }

  // Completes sends and receives incoming messages into the mailbox (a blocking probe would spin a
  // core inside MPI). Polls every 20 us while a Recv waits or a send is outstanding; otherwise
  // backs off to 1 ms, leaving the cores to computation and native collectives.
  void Progress() {
    std::chrono::microseconds idle{20};
    while (!stop_.load()) {
      bool busy = false, urgent = receiving_.load() > 0;
      {
        std::unique_lock<std::mutex> lock(mu_);
        urgent = urgent || !pending_.empty();
        for (auto it = pending_.begin(); it != pending_.end();) {
          int done = 0;
          MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
          it = done ? pending_.erase(it) : std::next(it);
        }
        int flag = 0;
        MPI_Message message;
        MPI_Status status;
        MPI_Improbe(MPI_ANY_SOURCE, kMessageTag, p2p_, &flag, &message, &status);
        if (flag) {
          busy = true;
          int bytes = 0;
          MPI_Get_count(&status, MPI_BYTE, &bytes);
          std::string framed(bytes, '\0');
          MPI_Mrecv(framed.data(), bytes, MPI_BYTE, &message, MPI_STATUS_IGNORE);
          uint64_t tag = 0;
          if (framed.size() < sizeof(tag)) {
            mailbox_.Abort(absl::DataLossError(absl::StrCat("a truncated message from worker ", status.MPI_SOURCE)));
            continue;
          }
          std::memcpy(&tag, framed.data(), sizeof(tag));
          (void)mailbox_.Put(status.MPI_SOURCE, tag, framed.substr(sizeof(tag)));
        }
      }
      if (busy) continue;
      idle = urgent ? std::chrono::microseconds(20) : std::min(2 * idle, std::chrono::microseconds(1000));
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait_for(lock, idle);
    }
  }

  int rank_ = 0, size_ = 1;
  MPI_Comm group_ = MPI_COMM_NULL;  // a group's communicator from MPI_Comm_split (owned)
  MPI_Comm p2p_ = MPI_COMM_NULL, coll_ = MPI_COMM_NULL, xchg_ = MPI_COMM_NULL;
  Mailbox mailbox_;
  std::mutex mu_;
  std::list<Outgoing> pending_;  // guarded by mu_; a list keeps the buffers in place
  std::condition_variable wake_;  // Send and Recv wake the progress thread
  std::atomic<int> receiving_{0};
  std::atomic<bool> stop_{false};
  std::thread progress_;
};

}  // namespace

bool MpiBuilt() { return true; }

absl::StatusOr<std::unique_ptr<Communicator>> MakeMpiCommunicator() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    FG_RETURN_IF_ERROR(MpiError(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread"));
    if (provided < MPI_THREAD_MULTIPLE) {
      return absl::FailedPreconditionError(
          "this MPI library does not support MPI_THREAD_MULTIPLE, which the MPI backend needs");
    }
  }
  return std::unique_ptr<Communicator>(new MpiCommunicator());
}

absl::Status FinishMpi(std::unique_ptr<Communicator> comm) {
  absl::Status s = static_cast<MpiCommunicator*>(comm.get())->Finish();
  comm.reset();
  MPI_Finalize();
  return s;
}

void AbortMpi(int exit_code) {
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);
}

}  // namespace fg::runtime
