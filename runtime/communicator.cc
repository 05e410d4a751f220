#include "runtime/communicator.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/timer.h"

namespace fg::runtime {

const char* TrafficKindName(TrafficKind k) {
  switch (k) {
    case TrafficKind::kFeatures:
      return "features";
    case TrafficKind::kPartials:
      return "partials";
    case TrafficKind::kGradients:
      return "gradients";
    case TrafficKind::kAllReduce:
      return "allreduce";
    case TrafficKind::kControl:
      return "control";
  }
  return "?";
}

uint64_t MakeTag(int epoch, int layer, int phase, TrafficKind kind, int step) {
  // epoch: 28 bits | layer: 8 | phase: 4 | kind: 4 | step: 20
  return (static_cast<uint64_t>(epoch & 0xFFFFFFF) << 36) |
         (static_cast<uint64_t>(layer & 0xFF) << 28) | (static_cast<uint64_t>(phase & 0xF) << 24) |
         (static_cast<uint64_t>(static_cast<int>(kind) & 0xF) << 20) |
         static_cast<uint64_t>(step & 0xFFFFF);
}

TrafficKind TagKind(uint64_t tag) {
  const int k = static_cast<int>((tag >> 20) & 0xF);
  return k < kNumTrafficKinds ? static_cast<TrafficKind>(k) : TrafficKind::kControl;
}

void Mailbox::Put(int src, uint64_t tag, std::string payload) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    messages_[{src, tag}] = std::move(payload);
  }
  cv_.notify_all();
}

absl::StatusOr<std::string> Mailbox::Take(int src, uint64_t tag,
                                          std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto key = std::make_pair(src, tag);
  const bool ready = cv_.wait_for(lock, timeout, [&] {
    return !aborted_.ok() || messages_.count(key) > 0;
  });
  if (messages_.count(key) > 0) {
    std::string payload = std::move(messages_[key]);
    messages_.erase(key);
    return payload;
  }
  if (!aborted_.ok()) return aborted_;
  (void)ready;
  return absl::DeadlineExceededError(
      absl::StrCat("no message from worker ", src, " within ", timeout.count() / 1000.0,
                   " s (tag ", tag, ")"));
}

void Mailbox::Abort(const absl::Status& status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (aborted_.ok()) aborted_ = status;
  }
  cv_.notify_all();
}

absl::Status Mailbox::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return aborted_;
}

namespace {

class InProcessCommunicator : public Communicator {
 public:
  InProcessCommunicator(int rank, std::shared_ptr<std::vector<Mailbox>> boxes)
      : rank_(rank), boxes_(std::move(boxes)) {}
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(boxes_->size()); }
  void Send(int peer, uint64_t tag, std::string payload) override {
    CountSent(tag, payload.size());
    (*boxes_)[peer].Put(rank_, tag, std::move(payload));
  }
  absl::StatusOr<std::string> Recv(int peer, uint64_t tag) override {
    Stopwatch w;
    auto r = (*boxes_)[rank_].Take(peer, tag, timeout());
    CountWait(w.Seconds());
    return r;
  }
  void Abort(const absl::Status& status) override {
    for (auto& b : *boxes_) b.Abort(status);
  }

 private:
  int rank_;
  std::shared_ptr<std::vector<Mailbox>> boxes_;
};

}  // namespace

std::vector<std::unique_ptr<Communicator>> MakeInProcessGroup(int size) {
  auto boxes = std::make_shared<std::vector<Mailbox>>(size);
  std::vector<std::unique_ptr<Communicator>> group;
  for (int r = 0; r < size; ++r) group.push_back(std::make_unique<InProcessCommunicator>(r, boxes));
  return group;
}

std::string FloatsToBytes(const float* data, size_t n) {
  return std::string(reinterpret_cast<const char*>(data), n * sizeof(float));
}

absl::Status BytesToFloats(const std::string& bytes, float* out, size_t n, int peer) {
  if (bytes.size() != n * sizeof(float)) {
    return absl::DataLossError(absl::StrCat("message from worker ", peer, " has ", bytes.size(),
                                            " bytes, expected ", n * sizeof(float)));
  }
  if (n > 0) std::memcpy(out, bytes.data(), bytes.size());
  return absl::OkStatus();
}

}  // namespace fg::runtime
