// Communicator: tagged point-to-point messages between the P workers of a run, the layer every
// distributed exchange, all-reduce and barrier is built on. Send() queues a message and returns at
// once (delivery is asynchronous, in order per peer); Recv() blocks until the message with that
// (peer, tag) arrives, the communicator is aborted, or the timeout passes — never forever.
// Implementations: in-process (threads of one process, for fast tests) and gRPC (grpc_communicator.h).
// Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace fg::runtime {

// What a message carries, for the traffic accounting in run summaries.
enum class TrafficKind { kFeatures = 0, kPartials = 1, kGradients = 2, kAllReduce = 3, kControl = 4 };
inline constexpr int kNumTrafficKinds = 5;
const char* TrafficKindName(TrafficKind k);

// Tags: (epoch, layer, phase, kind, step) packed into 64 bits; distinct messages between one pair
// of workers always have distinct tags.
uint64_t MakeTag(int epoch, int layer, int phase, TrafficKind kind, int step = 0);
TrafficKind TagKind(uint64_t tag);

// Received messages keyed by (source, tag), with blocking takes. Thread-safe.
class Mailbox {
 public:
  void Put(int src, uint64_t tag, std::string payload);
  absl::StatusOr<std::string> Take(int src, uint64_t tag, std::chrono::milliseconds timeout);
  // Wakes every waiter with `status` and fails later takes.
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
  // Queues `payload` for `peer` (!= rank()).
  virtual void Send(int peer, uint64_t tag, std::string payload) = 0;
  // The message from `peer` with `tag`.
  virtual absl::StatusOr<std::string> Recv(int peer, uint64_t tag) = 0;
  // Fails every pending and future Recv with `status` (e.g. a peer died).
  virtual void Abort(const absl::Status& status) = 0;

  // Bytes sent per traffic kind, and seconds spent blocked in Recv.
  int64_t bytes_sent(TrafficKind k) const { return bytes_sent_[static_cast<int>(k)].load(); }
  double wait_seconds() const { return wait_micros_.load() * 1e-6; }
  void set_timeout(std::chrono::milliseconds t) { timeout_ = t; }
  std::chrono::milliseconds timeout() const { return timeout_; }

 protected:
  void CountSent(uint64_t tag, size_t bytes) {
    bytes_sent_[static_cast<int>(TagKind(tag))] += static_cast<int64_t>(bytes);
  }
  void CountWait(double seconds) { wait_micros_ += static_cast<int64_t>(seconds * 1e6); }

 private:
  std::atomic<int64_t> bytes_sent_[kNumTrafficKinds] = {};
  std::atomic<int64_t> wait_micros_{0};
  std::chrono::milliseconds timeout_{std::chrono::seconds(120)};
};

// P communicators connected in memory (one per worker thread).
std::vector<std::unique_ptr<Communicator>> MakeInProcessGroup(int size);

// Float buffers as message payloads (raw little-endian bytes).
std::string FloatsToBytes(const float* data, size_t n);
absl::Status BytesToFloats(const std::string& bytes, float* out, size_t n, int peer);

}  // namespace fg::runtime
