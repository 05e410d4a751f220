#include "runtime/comm/communicator.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/logging.h"
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
    case TrafficKind::kSetup:
      return "setup";
  }
  return "?";
}

namespace {

constexpr int kRoundShift = 0;
constexpr int kStepShift = kRoundShift + kTagRoundBits;
constexpr int kKindShift = kStepShift + kTagStepBits;
constexpr int kPhaseShift = kKindShift + kTagKindBits;
constexpr int kLayerShift = kPhaseShift + kTagPhaseBits;
constexpr int kEpochShift = kLayerShift + kTagLayerBits;
static_assert(kEpochShift + kTagEpochBits == 64, "the fields fill the tag");

uint64_t Field(const char* name, int value, int bits, int shift) {
  FG_CHECK(value >= 0 && value < (int64_t{1} << bits))
      << "tag field " << name << " = " << value << " does not fit in " << bits << " bits";
  return static_cast<uint64_t>(value) << shift;
}

int Extract(uint64_t tag, int bits, int shift) {
  return static_cast<int>((tag >> shift) & ((uint64_t{1} << bits) - 1));
}

}  // namespace

uint64_t MakeTag(int epoch, int layer, int phase, TrafficKind kind, int step, int round) {
  return Field("epoch", epoch, kTagEpochBits, kEpochShift) |
         Field("layer", layer, kTagLayerBits, kLayerShift) |
         Field("phase", phase, kTagPhaseBits, kPhaseShift) |
         Field("kind", static_cast<int>(kind), kTagKindBits, kKindShift) |
         Field("step", step, kTagStepBits, kStepShift) |
         Field("round", round, kTagRoundBits, kRoundShift);
}

TagFields DecodeTag(uint64_t tag) {
  TagFields f;
  f.epoch = Extract(tag, kTagEpochBits, kEpochShift);
  f.layer = Extract(tag, kTagLayerBits, kLayerShift);
  f.phase = Extract(tag, kTagPhaseBits, kPhaseShift);
  f.kind = Extract(tag, kTagKindBits, kKindShift);
  f.step = Extract(tag, kTagStepBits, kStepShift);
  f.round = Extract(tag, kTagRoundBits, kRoundShift);
  return f;
}

TrafficKind TagKind(uint64_t tag) {
  const int k = DecodeTag(tag).kind;
  return k < kNumTrafficKinds ? static_cast<TrafficKind>(k) : TrafficKind::kControl;
}

std::string TagString(uint64_t tag) {
  const TagFields f = DecodeTag(tag);
  const std::string kind = f.kind < kNumTrafficKinds
                               ? TrafficKindName(static_cast<TrafficKind>(f.kind))
                               : absl::StrCat(f.kind);
  return absl::StrCat("epoch ", f.epoch, ", layer ", f.layer, ", phase ", f.phase, ", kind ", kind,
                      ", step ", f.step, ", round ", f.round);
}

absl::Status Mailbox::Put(int src, uint64_t tag, std::string payload) {
  absl::Status status;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto [it, inserted] = messages_.try_emplace({src, tag}, std::move(payload));
    if (!inserted) {  // neither message can be trusted: drop the waiting one, fail every take
      status = absl::DataLossError(absl::StrCat("worker ", src,
                                                " sent a second message with the same tag (",
                                                TagString(tag), ") before the first was received"));
      messages_.erase(it);
      if (aborted_.ok()) aborted_ = status;
    }
  }
  cv_.notify_all();
  return status;
}

absl::StatusOr<std::string> Mailbox::Take(int src, uint64_t tag,
                                          std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto key = std::make_pair(src, tag);
  const bool arrived =
      cv_.wait_for(lock, timeout, [&] { return !aborted_.ok() || messages_.count(key) > 0; });
  if (!aborted_.ok()) return aborted_;
  if (!arrived) {
    return absl::DeadlineExceededError(absl::StrCat("no message from worker ", src, " within ",
                                                    timeout.count() / 1000.0, " s (tag ",
                                                    TagString(tag), ")"));
  }
  auto node = messages_.extract(key);
  return std::move(node.mapped());
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
    if (auto s = (*boxes_)[peer].Put(rank_, tag, std::move(payload)); !s.ok()) Abort(s);
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
