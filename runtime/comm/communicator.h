// Communicator: tagged point-to-point messages between the P workers of a run, the layer every
// distributed exchange, all-reduce and barrier is built on. Send() queues a message and returns at
// once (delivery is asynchronous, in order per peer); Recv() blocks until the message with that
// (peer, tag) arrives, the communicator is aborted, or the timeout passes — never forever.
// Implementations: in-process (threads of one process, for fast tests), gRPC (grpc_communicator.h)
// and MPI (mpi_communicator.h).
// Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace fg::runtime {

// What a message carries, for the traffic accounting in run summaries.
// kSetup: a run's one-time distribution of data (a process grid's matrix blocks), not per epoch.
enum class TrafficKind { kFeatures = 0, kPartials = 1, kGradients = 2, kAllReduce = 3, kControl = 4, kSetup = 5 };
inline constexpr int kNumTrafficKinds = 6;
const char* TrafficKindName(TrafficKind k);

// Tags: every message between one ordered pair of workers is named by a 64-bit tag, and two
// messages waiting at the same receiver never share (source, tag): a Mailbox refuses the second.
// Fields, from the high bits down:
//   epoch  22 bits  [42, 64)  training epoch
//   layer   8 bits  [34, 42)  model layer (0 for whole-model collectives)
//   phase   4 bits  [30, 34)  which exchange or collective; each caller owns its phase values
//   kind    3 bits  [27, 30)  TrafficKind, for the traffic accounting
//   step   10 bits  [17, 27)  which call of that phase in the epoch and layer
//   round  17 bits  [0, 17)   the message's round inside one collective call (a ring over P
//                             workers uses 2(P-1) rounds, so P up to 65536)
// MakeTag checks that every field fits (FG_CHECK): a value out of range is a programming error,
// never a silent collision with another field.
inline constexpr int kTagEpochBits = 22, kTagLayerBits = 8, kTagPhaseBits = 4, kTagKindBits = 3,
                     kTagStepBits = 10, kTagRoundBits = 17;
inline constexpr int kMaxTagEpoch = (1 << kTagEpochBits) - 1;
inline constexpr int kMaxTagLayer = (1 << kTagLayerBits) - 1;
inline constexpr int kMaxTagStep = (1 << kTagStepBits) - 1;
inline constexpr int kMaxTagRound = (1 << kTagRoundBits) - 1;
static_assert(kNumTrafficKinds <= (1 << kTagKindBits));

struct TagFields {
  int epoch = 0, layer = 0, phase = 0;
  int kind = 0;  // a TrafficKind value
  int step = 0, round = 0;
};

uint64_t MakeTag(int epoch, int layer, int phase, TrafficKind kind, int step = 0, int round = 0);
TagFields DecodeTag(uint64_t tag);
// The traffic kind of a tag (kControl for a kind field that names none).
TrafficKind TagKind(uint64_t tag);
// "epoch 3, layer 1, phase 14, kind allreduce, step 2, round 7", for error messages.
std::string TagString(uint64_t tag);

// Received messages keyed by (source, tag), with blocking takes. Thread-safe.
class Mailbox {
 public:
  // Stores the message from `src` with `tag` until a Take. A second message with the same
  // (src, tag) while the first still waits is a protocol error, never an overwrite: the mailbox
  // is aborted with a DataLoss status naming the source and the tag's fields, which Put returns.
  absl::Status Put(int src, uint64_t tag, std::string payload);
  // The message from `src` with `tag`, removed from the mailbox. Fails with the abort status once
  // the mailbox is aborted (even if the message is here), or DeadlineExceeded after `timeout`.
  absl::StatusOr<std::string> Take(int src, uint64_t tag, std::chrono::milliseconds timeout);
  // Wakes every waiter with `status` and fails later takes (the first abort's status wins).
  void Abort(const absl::Status& status);
  absl::Status status() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::pair<int, uint64_t>, std::string> messages_;
  absl::Status aborted_;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Queues `payload` for `peer` (!= rank()). Sending a tag while the peer still holds an
  // unreceived message with it from this worker fails the run (see Mailbox::Put).
  virtual void Send(int peer, uint64_t tag, std::string payload) = 0;
  // The message from `peer` with `tag`.
  virtual absl::StatusOr<std::string> Recv(int peer, uint64_t tag) = 0;
  // Fails every pending and future Recv with `status` (e.g. a peer died).
  virtual void Abort(const absl::Status& status) = 0;

  // Collectives. Every worker calls each in the same order, from one thread at a time, with the
  // same name (`epoch` < 2^22 and `step` < 2^10, or `tag`); errors name the peer. The defaults run
  // over Send/Recv with their timeout (collectives.h); a backend with native collectives (MPI)
  // overrides them.
  // Sums n floats across workers in place; every worker ends with identical values.
  virtual absl::Status AllReduce(float* data, int64_t n, int epoch, int step);
  // Sums a short vector of doubles across workers (metrics); identical everywhere.
  virtual absl::Status AllReduce(std::vector<double>* values, int epoch, int step);
  // Worker `root`'s payload, on every worker; the root's bytes are counted as `kind`.
  virtual absl::Status Broadcast(std::string* payload, int root, int epoch, int step,
                                 TrafficKind kind = TrafficKind::kControl);
  virtual absl::Status Barrier(int epoch, int step);
  // Sends send[q] to each worker q and returns what each worker sent this one (entry rank() is
  // send[rank()]). `tag` names the call as for Send.
  virtual absl::StatusOr<std::vector<std::string>> AllToAllV(std::vector<std::string> send, uint64_t tag);
  // The split-phase all-to-all of the exchange, whose sizes both sides know from a plan:
  // StartAllToAllV sends part(q) to each worker q != rank() (nothing when empty), asking for each
  // part just before it can leave, and returns; Finish returns what each worker q sent this one,
  // recv_bytes[q] bytes at entry q, or an error naming the worker. Computation and other calls may
  // run in between; every worker starts its calls in the same order and finishes each once.
  class PendingAllToAllV {
   public:
    virtual ~PendingAllToAllV() = default;
    virtual absl::StatusOr<std::vector<std::string>> Finish() = 0;
  };
  using PartFn = std::function<std::string(int peer)>;
  virtual std::unique_ptr<PendingAllToAllV> StartAllToAllV(const PartFn& part, std::vector<int64_t> recv_bytes,
                                                           uint64_t tag);

  // Sub-communicators (MPI_Comm_split semantics). Collective over this communicator: every worker
  // calls it, in the same order as its other calls. The workers that pass the same `colour` (>= 0)
  // form a group, ranked by (key, rank here); the result's Send/Recv/collectives run over that
  // group, with its ranks. This communicator must outlive the result; aborting either aborts both.
  // Default (sub_communicator.cc): a view of this one that translates ranks and passes tags through,
  // so a group's message is this communicator's message with the same tag. Hence the tag contract:
  // two communicators that have a pair of workers in common (this one and any group of it; groups
  // of two splits whose members overlap) must not have a message with the same tag in flight
  // between that pair at the same time. Groups of one process grid (rows, columns and fibres of a
  // 2D or 3D grid; the layers and replica groups of 1.5D) have no pair in common — two distinct
  // workers differ in some coordinate, and each such group fixes all coordinates but one — so
  // they may use the same tags, concurrently (process_grid.h); calls on this communicator itself
  // must be named apart from the groups' calls in flight. Split's own messages are named by the
  // communicator's lineage and its count of splits. MPI overrides it with MPI_Comm_split (the
  // group's native collectives run on the new MPI communicator, whose tags are its own).
  virtual absl::StatusOr<std::unique_ptr<Communicator>> Split(int colour, int key);

  // Device collectives (the NCCL backend, nccl_communicator.h): sums n floats held in this
  // worker's GPU memory in place, enqueued on `stream` (a cudaStream_t; complete when the stream
  // reaches it, no host synchronisation). Other backends fail with Unimplemented: callers stage
  // device buffers through host memory and use AllReduce.
  virtual bool HasDeviceCollectives() const { return false; }
  virtual absl::Status AllReduceOnDevice(float* device_data, int64_t n, void* stream);

  // Bytes sent per traffic kind, and seconds spent blocked in Recv.
  int64_t bytes_sent(TrafficKind k) const { return bytes_sent_[static_cast<int>(k)].load(); }
  double wait_seconds() const { return wait_micros_.load() * 1e-6; }
  void set_timeout(std::chrono::milliseconds t) { timeout_ = t; }
  std::chrono::milliseconds timeout() const { return timeout_; }

 protected:
  void CountSent(uint64_t tag, size_t bytes) {
    bytes_sent_[static_cast<int>(TagKind(tag))] += static_cast<int64_t>(bytes);
  }
  void CountSent(TrafficKind kind, size_t bytes) {
    bytes_sent_[static_cast<int>(kind)] += static_cast<int64_t>(bytes);
  }
  void CountWait(double seconds) { wait_micros_ += static_cast<int64_t>(seconds * 1e6); }
  // A group made by the default Split: its lineage (a name shared by its members, never 0) names
  // the messages of its own splits.
  void set_lineage(uint32_t lineage) { lineage_ = lineage; }

 private:
  uint32_t lineage_ = 0;  // 0: a communicator not made by the default Split
  int splits_ = 0;        // Split calls so far
  std::atomic<int64_t> bytes_sent_[kNumTrafficKinds] = {};
  std::atomic<int64_t> wait_micros_{0};
  std::chrono::milliseconds timeout_{std::chrono::seconds(120)};
};

// P communicators connected in memory (one per worker thread). A failed delivery (a duplicate
// (source, tag)) aborts every communicator of the group.
std::vector<std::unique_ptr<Communicator>> MakeInProcessGroup(int size);

// Float buffers as message payloads (raw little-endian bytes).
std::string FloatsToBytes(const float* data, size_t n);
absl::Status BytesToFloats(const std::string& bytes, float* out, size_t n, int peer);

// Length-prefixed vectors of a trivially copyable T, several to a message: AppendVector writes
// one, TakeVector reads the one at *pos; a truncated message is a DataLoss error naming `what`
// and the peer.
template <typename T>
void AppendVector(std::string* out, const std::vector<T>& v) {
  const uint64_t n = v.size();
  out->append(reinterpret_cast<const char*>(&n), sizeof(n));
  if (n > 0) out->append(reinterpret_cast<const char*>(v.data()), n * sizeof(T));
}
template <typename T>
absl::Status TakeVector(const std::string& in, size_t* pos, const char* what, int peer, std::vector<T>* v) {
  const auto truncated = [&] {
    return absl::DataLossError(absl::StrCat(what, " message from worker ", peer, " is truncated"));
  };
  uint64_t n = 0;
  if (in.size() - *pos < sizeof(n)) return truncated();
  std::memcpy(&n, in.data() + *pos, sizeof(n));
  *pos += sizeof(n);
  if (n > (in.size() - *pos) / sizeof(T)) return truncated();
  v->resize(n);
  if (n > 0) std::memcpy(v->data(), in.data() + *pos, n * sizeof(T));
  *pos += n * sizeof(T);
  return absl::OkStatus();
}

}  // namespace fg::runtime
