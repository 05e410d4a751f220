// Communicator::Split's default (communicator.h): the groups as views of their parent that translate
// ranks and pass tags through; the collectives run over the view's Send/Recv (collectives.cc).
#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/status.h"
#include "flexgraph/base/timer.h"
#include "runtime/comm/communicator.h"

namespace fg::runtime {
namespace {

// Split's own messages: phase 15 (the small collectives', which use rounds 0 and 1) at round 2,
// named by the splitting communicator's lineage (epoch field) and its count of splits (step field).
constexpr int kPhaseSmall = 15, kRoundSplit = 2;

class SubCommunicator final : public Communicator {
 public:
  SubCommunicator(Communicator* parent, std::vector<int> members, int rank, uint32_t lineage)
      : parent_(parent), members_(std::move(members)), rank_(rank) {
    set_lineage(lineage);
    set_timeout(parent->timeout());
  }
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(members_.size()); }
  void Send(int peer, uint64_t tag, std::string payload) override {
    CountSent(tag, payload.size());
    parent_->Send(members_[peer], tag, std::move(payload));
  }
  absl::StatusOr<std::string> Recv(int peer, uint64_t tag) override {
    Stopwatch w;
    auto got = parent_->Recv(members_[peer], tag);
    CountWait(w.Seconds());
    if (!got.ok() && absl::IsDeadlineExceeded(got.status())) {
      return absl::DeadlineExceededError(absl::StrCat("group worker ", peer, " (worker ", members_[peer],
                                                      " of the run): ", got.status().message()));
    }
    return got;
  }
  void Abort(const absl::Status& status) override { parent_->Abort(status); }

 private:
  Communicator* parent_;
  std::vector<int> members_;  // parent ranks, by group rank
  int rank_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Communicator>> Communicator::Split(int colour, int key) {
  if (colour < 0) {
    return absl::InvalidArgumentError(absl::StrCat("Split: colour ", colour, " of worker ", rank(),
                                                   " is negative (every worker must join a group)"));
  }
  const int p = size(), r = rank();
  const int call = splits_++;
  const uint64_t tag = MakeTag(static_cast<int>(lineage_ & kMaxTagEpoch), 0, kPhaseSmall, TrafficKind::kControl,
                               call % (kMaxTagStep + 1), kRoundSplit);
  std::vector<int> colours(p), keys(p);
  colours[r] = colour, keys[r] = key;
  std::string mine;
  AppendVector(&mine, std::vector<int>{colour, key});
  for (int q = 0; q < p; ++q) {
    if (q != r) Send(q, tag, mine);
  }
  for (int q = 0; q < p; ++q) {
    if (q == r) continue;
    FG_ASSIGN_OR_RETURN(std::string bytes, Recv(q, tag));
    std::vector<int> v;
    size_t pos = 0;
    FG_RETURN_IF_ERROR(TakeVector(bytes, &pos, "split", q, &v));
    if (v.size() != 2) return absl::DataLossError(absl::StrCat("split message from worker ", q, " is malformed"));
    colours[q] = v[0], keys[q] = v[1];
  }
  std::vector<int> members;
  for (int q = 0; q < p; ++q) {
    if (colours[q] == colour) members.push_back(q);
  }
  std::stable_sort(members.begin(), members.end(),
                   [&](int a, int b) { return std::tie(keys[a], a) < std::tie(keys[b], b); });
  const int my = static_cast<int>(std::find(members.begin(), members.end(), r) - members.begin());
  // The group's lineage: the same on every member (a function of this communicator's lineage and
  // count of splits), never 0, and unlike this communicator's.
  uint64_t h = (static_cast<uint64_t>(lineage_) << 32 | static_cast<uint32_t>(call)) * 0x9E3779B97F4A7C15ull;
  h ^= h >> 29;
  uint32_t lineage = static_cast<uint32_t>(1 + h % kMaxTagEpoch);
  if ((lineage & kMaxTagEpoch) == (lineage_ & kMaxTagEpoch)) lineage = lineage % kMaxTagEpoch + 1;
  return std::unique_ptr<Communicator>(new SubCommunicator(this, std::move(members), my, lineage));
}

}  // namespace fg::runtime
