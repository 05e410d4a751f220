#include "runtime/comm/collectives.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/logging.h"
#include "flexgraph/base/status.h"

namespace fg::runtime {
namespace {

// Tag phases of the collectives (the exchange ops own 0..12).
constexpr int kPhaseRing = 14;
// Phase 15, by round: 0 small all-reduces and barriers; 1 broadcasts; 2 Split (sub_communicator.cc);
// 3 the sparsity-aware rows of the grid products (runtime/grid).
constexpr int kPhaseSmall = 15;

// One collective call, named by its phase and the caller's (epoch, step); its messages differ
// only in their round, which has a tag field of its own.
struct Collective {
  int epoch;
  int phase;
  TrafficKind kind;
  int step;
  uint64_t Tag(int round) const { return MakeTag(epoch, 0, phase, kind, step, round); }
};

}  // namespace

absl::Status RingAllReduce(Communicator& comm, float* data, int64_t n, int epoch, int step) {
  const int p = comm.size(), r = comm.rank();
  FG_CHECK(p <= kMaxRingWorkers) << "RingAllReduce over " << p << " workers";
  if (p == 1 || n == 0) return absl::OkStatus();
  const Collective call{epoch, kPhaseRing, TrafficKind::kAllReduce, step};
  auto lo = [&](int c) { return n * c / p; };
  auto len = [&](int c) { return lo(c + 1) - lo(c); };
  // Every ring chunk is cut into the same number of segments, each its own message: a segment
  // moves on as soon as it is reduced, so receiving, reducing and sending overlap.
  const int64_t most = len(p - 1);
  const int64_t max_segments = kMaxTagRound / (2 * (p - 1));
  const int64_t segments = std::clamp<int64_t>((most + kRingSegmentFloats - 1) / kRingSegmentFloats, 1, max_segments);
  auto seg_lo = [&](int c, int64_t j) { return lo(c) + len(c) * j / segments; };
  auto seg_len = [&](int c, int64_t j) { return seg_lo(c, j + 1) - seg_lo(c, j); };
  auto tag = [&](int round, int64_t j) { return call.Tag(static_cast<int>(round * segments + j)); };
  const int right = (r + 1) % p, left = (r + p - 1) % p;
  auto send = [&](int round, int c, int64_t j) {
    comm.Send(right, tag(round, j), FloatsToBytes(data + seg_lo(c, j), seg_len(c, j)));
  };
  // Rounds 0 .. p-2 reduce-scatter: round s receives chunk (r - s - 1) % p, adds it and passes it
  // on as round s + 1; after round p-2, chunk (r + 1) % p holds the full sum. Rounds p-1 .. 2p-3
  // all-gather the summed chunks the same way, copying instead of adding.
  for (int64_t j = 0; j < segments; ++j) send(0, r, j);
  for (int round = 0; round < 2 * (p - 1); ++round) {
    const int c = ((round < p - 1 ? r - round - 1 : r - (round - p + 1)) % p + p) % p;
    for (int64_t j = 0; j < segments; ++j) {
      FG_ASSIGN_OR_RETURN(std::string bytes, comm.Recv(left, tag(round, j)));
      const int64_t m = seg_len(c, j);
      float* dst = data + seg_lo(c, j);
      if (round >= p - 1) {
        FG_RETURN_IF_ERROR(BytesToFloats(bytes, dst, m, left));
      } else if (bytes.size() != static_cast<size_t>(m) * sizeof(float)) {
        return BytesToFloats(bytes, nullptr, m, left);  // the size error, naming the peer
      } else {
        const char* src = bytes.data();
        for (int64_t i = 0; i < m; ++i) {  // straight from the message: no staging copy
          float x;
          std::memcpy(&x, src + i * sizeof(float), sizeof(float));
          dst[i] += x;
        }
      }
      if (round + 1 < 2 * (p - 1)) send(round + 1, c, j);
    }
  }
  return absl::OkStatus();
}

absl::Status AllReduceDoubles(Communicator& comm, std::vector<double>* values, int epoch,
                              int step) {
  const int p = comm.size(), r = comm.rank();
  if (p == 1) return absl::OkStatus();
  const uint64_t tag = Collective{epoch, kPhaseSmall, TrafficKind::kControl, step}.Tag(0);
  const std::string mine(reinterpret_cast<const char*>(values->data()),
                         values->size() * sizeof(double));
  for (int q = 0; q < p; ++q) {
    if (q != r) comm.Send(q, tag, mine);
  }
  std::vector<double> sum(values->size(), 0.0);
  for (int q = 0; q < p; ++q) {
    std::string bytes = mine;
    if (q != r) {
      FG_ASSIGN_OR_RETURN(bytes, comm.Recv(q, tag));
    }
    if (bytes.size() != mine.size()) {
      return absl::DataLossError(absl::StrCat("all-reduce message from worker ", q, " has ",
                                              bytes.size(), " bytes, expected ", mine.size()));
    }
    const double* v = reinterpret_cast<const double*>(bytes.data());
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += v[i];
  }
  *values = std::move(sum);
  return absl::OkStatus();
}

absl::Status BarrierOverMessages(Communicator& comm, int epoch, int step) {
  std::vector<double> nothing = {0.0};
  return AllReduceDoubles(comm, &nothing, epoch, step);
}

absl::Status BroadcastOverMessages(Communicator& comm, std::string* payload, int root, int epoch, int step,
                                   TrafficKind kind) {
  const int p = comm.size(), r = comm.rank();
  if (root < 0 || root >= p) return absl::InvalidArgumentError(absl::StrCat("broadcast from worker ", root, " of ", p));
  if (p == 1) return absl::OkStatus();
  const uint64_t tag = Collective{epoch, kPhaseSmall, kind, step}.Tag(1);
  if (r == root) {
    for (int q = 0; q < p; ++q) {
      if (q != r) comm.Send(q, tag, *payload);
    }
    return absl::OkStatus();
  }
  FG_ASSIGN_OR_RETURN(*payload, comm.Recv(root, tag));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> AllToAllVOverMessages(Communicator& comm,
                                                              std::vector<std::string> send,
                                                              uint64_t tag) {
  const int p = comm.size(), r = comm.rank();
  if (static_cast<int>(send.size()) != p) {
    return absl::InvalidArgumentError(absl::StrCat("all-to-all with ", send.size(), " buffers for ", p, " workers"));
  }
  for (int q = 0; q < p; ++q) {
    if (q != r) comm.Send(q, tag, std::move(send[q]));
  }
  std::vector<std::string> got(p);
  got[r] = std::move(send[r]);
  for (int q = 0; q < p; ++q) {
    if (q == r) continue;
    FG_ASSIGN_OR_RETURN(got[q], comm.Recv(q, tag));
  }
  return got;
}

namespace {
// StartAllToAllV over Send and Recv: one message per peer with bytes to send or receive.
class MessagePendingAllToAllV final : public Communicator::PendingAllToAllV {
 public:
  MessagePendingAllToAllV(Communicator& comm, std::vector<int64_t> recv_bytes, uint64_t tag)
      : comm_(comm), recv_bytes_(std::move(recv_bytes)), tag_(tag) {}
  absl::StatusOr<std::vector<std::string>> Finish() override {
    std::vector<std::string> got(recv_bytes_.size());
    for (int q = 0; q < static_cast<int>(recv_bytes_.size()); ++q) {
      if (recv_bytes_[q] == 0) continue;
      FG_ASSIGN_OR_RETURN(got[q], comm_.Recv(q, tag_));
      if (static_cast<int64_t>(got[q].size()) != recv_bytes_[q]) {
        return absl::DataLossError(absl::StrCat("worker ", q, " sent ", got[q].size(), " bytes where ",
                                                recv_bytes_[q], " were planned (", TagString(tag_), ")"));
      }
    }
    return got;
  }

 private:
  Communicator& comm_;
  std::vector<int64_t> recv_bytes_;
  uint64_t tag_;
};
}  // namespace

std::unique_ptr<Communicator::PendingAllToAllV> StartAllToAllVOverMessages(Communicator& comm,
                                                                           const Communicator::PartFn& part,
                                                                           std::vector<int64_t> recv_bytes,
                                                                           uint64_t tag) {
  for (int q = 0; q < comm.size(); ++q) {
    if (q == comm.rank()) continue;
    std::string bytes = part(q);
    if (!bytes.empty()) comm.Send(q, tag, std::move(bytes));
  }
  return std::make_unique<MessagePendingAllToAllV>(comm, std::move(recv_bytes), tag);
}

// Communicator's collectives default to the message-based ones above.
absl::Status Communicator::AllReduce(float* data, int64_t n, int epoch, int step) {
  return RingAllReduce(*this, data, n, epoch, step);
}
absl::Status Communicator::AllReduce(std::vector<double>* values, int epoch, int step) {
  return AllReduceDoubles(*this, values, epoch, step);
}
absl::Status Communicator::Broadcast(std::string* payload, int root, int epoch, int step, TrafficKind kind) {
  return BroadcastOverMessages(*this, payload, root, epoch, step, kind);
}
absl::Status Communicator::Barrier(int epoch, int step) { return BarrierOverMessages(*this, epoch, step); }
absl::StatusOr<std::vector<std::string>> Communicator::AllToAllV(std::vector<std::string> send, uint64_t tag) {
  return AllToAllVOverMessages(*this, std::move(send), tag);
}
std::unique_ptr<Communicator::PendingAllToAllV> Communicator::StartAllToAllV(const PartFn& part,
                                                                            std::vector<int64_t> recv_bytes,
                                                                            uint64_t tag) {
  return StartAllToAllVOverMessages(*this, part, std::move(recv_bytes), tag);
}
absl::Status Communicator::AllReduceOnDevice(float*, int64_t, void*) {
  return absl::UnimplementedError("this communicator has no device collectives (the NCCL backend has)");
}

}  // namespace fg::runtime
