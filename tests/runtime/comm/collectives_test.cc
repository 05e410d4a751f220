// Collectives over the in-process communicator: the ring all-reduce and the small all-reduce give
// every worker the exact sums at any worker count (P = 40 included, past the old tag field's
// limit) and in several segments per chunk, back to back; tags keep every field apart and reject values that do not fit; a mailbox
// refuses a second message with the same (source, tag) instead of overwriting the first; planned
// split-phase all-to-alls overlap and name a peer that sends other than planned.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "runtime/comm/collectives.h"
#include "runtime/comm/communicator.h"

namespace fg::runtime {
namespace {

using std::chrono::milliseconds;

// Runs body(rank) on one thread per worker of an in-process group of `parts`.
template <typename Body>
void RunGroup(int parts, Body body) {
  auto group = MakeInProcessGroup(parts);
  for (auto& c : group) c->set_timeout(milliseconds(20000));
  std::vector<std::thread> threads;
  for (int r = 0; r < parts; ++r) threads.emplace_back([&, r] { body(*group[r]); });
  for (auto& t : threads) t.join();
}

// Integer-valued floats, so that sums are exact in any order.
float Value(int rank, int64_t i, int call) {
  return static_cast<float>((rank + 1) * (i % 13 + 1) + call);
}

void ExpectRingSums(int parts, int64_t n, int calls) {
  std::vector<std::vector<float>> data(parts, std::vector<float>(n));
  std::vector<absl::Status> status(parts);
  std::vector<std::vector<float>> got(parts);  // [call * n + i]
  RunGroup(parts, [&](Communicator& comm) {
    const int r = comm.rank();
    for (int call = 0; call < calls && status[r].ok(); ++call) {
      for (int64_t i = 0; i < n; ++i) data[r][i] = Value(r, i, call);
      // Consecutive calls: same epoch with different steps, then the next epoch.
      status[r] = RingAllReduce(comm, data[r].data(), n, call / 2, call % 2);
      got[r].insert(got[r].end(), data[r].begin(), data[r].end());
    }
  });
  for (int r = 0; r < parts; ++r) {
    ASSERT_TRUE(status[r].ok()) << "P=" << parts << " worker " << r << ": " << status[r];
    ASSERT_EQ(got[r].size(), static_cast<size_t>(n * calls));
  }
  for (int call = 0; call < calls; ++call) {
    for (int64_t i = 0; i < n; ++i) {
      float expect = 0;
      for (int r = 0; r < parts; ++r) expect += Value(r, i, call);
      for (int r = 0; r < parts; ++r) {
        ASSERT_EQ(got[r][call * n + i], expect)
            << "P=" << parts << " n=" << n << " call " << call << " worker " << r << " i " << i;
      }
    }
  }
}

TEST(Collectives, RingAllReduceSumsIdentically) {
  for (int parts : {2, 3, 5}) ExpectRingSums(parts, 11, 1);
}

TEST(Collectives, RingAllReduceAtFortyWorkers) {
  // 2(P-1) = 78 rounds per call: more than the old 32-round step field held.
  ExpectRingSums(40, 1000, 4);
}

TEST(Collectives, RingAllReduceInSegmentsOfUnequalLength) {
  // Chunks of about 2.5 segments, passed on segment by segment, back to back.
  ExpectRingSums(3, 3 * kRingSegmentFloats * 5 / 2 + 5, 2);
  ExpectRingSums(2, 2 * kRingSegmentFloats + 1, 1);
}

TEST(Collectives, RingAllReduceWithFewerElementsThanWorkers) {
  for (int64_t n : {1, 2}) ExpectRingSums(3, n, 2);  // some chunks empty
  ExpectRingSums(40, 7, 2);
}

TEST(Collectives, AllReduceDoublesAndBarrierAtFortyWorkers) {
  constexpr int kParts = 40, kCalls = 3;
  std::vector<absl::Status> status(kParts);
  std::vector<std::vector<std::vector<double>>> got(kParts);
  RunGroup(kParts, [&](Communicator& comm) {
    const int r = comm.rank();
    for (int call = 0; call < kCalls && status[r].ok(); ++call) {
      std::vector<double> v = {1.0, static_cast<double>(r), 0.5 * r + call};
      status[r] = AllReduceDoubles(comm, &v, 7, call);
      got[r].push_back(v);
      if (status[r].ok()) status[r] = comm.Barrier(7, 100 + call);
    }
  });
  for (int r = 0; r < kParts; ++r) {
    ASSERT_TRUE(status[r].ok()) << "worker " << r << ": " << status[r];
    ASSERT_EQ(got[r].size(), static_cast<size_t>(kCalls));
    for (int call = 0; call < kCalls; ++call) {
      // 0 + 1 + ... + 39 = 780; every partial sum is exact in doubles.
      const std::vector<double> expect = {40.0, 780.0, 0.5 * 780 + 40.0 * call};
      EXPECT_EQ(got[r][call], expect) << "worker " << r << " call " << call;
    }
  }
}

TEST(Tags, FieldsRoundTripAtTheirLimits) {
  const uint64_t tag =
      MakeTag(kMaxTagEpoch, kMaxTagLayer, 15, TrafficKind::kControl, kMaxTagStep, kMaxTagRound);
  const TagFields f = DecodeTag(tag);
  EXPECT_EQ(f.epoch, kMaxTagEpoch);
  EXPECT_EQ(f.layer, kMaxTagLayer);
  EXPECT_EQ(f.phase, 15);
  EXPECT_EQ(f.kind, static_cast<int>(TrafficKind::kControl));
  EXPECT_EQ(f.step, kMaxTagStep);
  EXPECT_EQ(f.round, kMaxTagRound);
  EXPECT_EQ(TagKind(MakeTag(3, 1, 2, TrafficKind::kGradients, 4, 5)), TrafficKind::kGradients);
  EXPECT_EQ(TagString(MakeTag(3, 1, 14, TrafficKind::kAllReduce, 2, 77)),
            "epoch 3, layer 1, phase 14, kind allreduce, step 2, round 77");
  // Every field is independent: changing one never gives another tag's value.
  const uint64_t base = MakeTag(1, 1, 1, TrafficKind::kFeatures, 1, 1);
  EXPECT_NE(base, MakeTag(1, 1, 1, TrafficKind::kFeatures, 1, 2));
  EXPECT_NE(MakeTag(0, 0, 14, TrafficKind::kAllReduce, 0, 32),
            MakeTag(0, 0, 14, TrafficKind::kAllReduce, 1, 0));
}

TEST(Tags, RingRoundsAreDistinctUpToTheLargestGroup) {
  EXPECT_GE(kMaxRingWorkers, 1 << 16);
  const uint64_t first = MakeTag(0, 0, 14, TrafficKind::kAllReduce, 0, 0);
  const uint64_t last = MakeTag(0, 0, 14, TrafficKind::kAllReduce, 0, 2 * kMaxRingWorkers - 3);
  EXPECT_EQ(DecodeTag(last).round, 2 * kMaxRingWorkers - 3);
  EXPECT_EQ(DecodeTag(last).step, 0);
  EXPECT_NE(first, last);
}

TEST(TagsDeathTest, AFieldThatDoesNotFitIsAProgrammingError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(MakeTag(kMaxTagEpoch + 1, 0, 0, TrafficKind::kControl), "epoch");
  EXPECT_DEATH(MakeTag(-1, 0, 0, TrafficKind::kControl), "epoch");
  EXPECT_DEATH(MakeTag(0, kMaxTagLayer + 1, 0, TrafficKind::kControl), "layer");
  EXPECT_DEATH(MakeTag(0, 0, 16, TrafficKind::kControl), "phase");
  EXPECT_DEATH(MakeTag(0, 0, 0, TrafficKind::kControl, kMaxTagStep + 1), "step");
  EXPECT_DEATH(MakeTag(0, 0, 0, TrafficKind::kControl, 0, kMaxTagRound + 1), "round");
}

TEST(Mailbox, ATagMayBeReusedOnceTaken) {
  Mailbox box;
  const uint64_t tag = MakeTag(1, 0, 15, TrafficKind::kControl, 3);
  for (const char* payload : {"first", "second"}) {
    ASSERT_TRUE(box.Put(2, tag, payload).ok());
    auto got = box.Take(2, tag, milliseconds(1000));
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, payload);
  }
  // The same tag from another source is another message.
  ASSERT_TRUE(box.Put(2, tag, "a").ok());
  ASSERT_TRUE(box.Put(4, tag, "b").ok());
  EXPECT_EQ(*box.Take(4, tag, milliseconds(1000)), "b");
  EXPECT_EQ(*box.Take(2, tag, milliseconds(1000)), "a");
}

TEST(Mailbox, ASecondMessageWithTheSameSourceAndTagIsAnError) {
  Mailbox box;
  const uint64_t tag = MakeTag(5, 0, 14, TrafficKind::kAllReduce, 2, 33);
  const uint64_t other = MakeTag(5, 0, 14, TrafficKind::kAllReduce, 2, 34);
  absl::StatusOr<std::string> waiting;
  std::thread waiter([&] { waiting = box.Take(1, other, milliseconds(20000)); });
  ASSERT_TRUE(box.Put(3, tag, "first").ok());
  const absl::Status dup = box.Put(3, tag, "second");
  waiter.join();

  EXPECT_EQ(dup.code(), absl::StatusCode::kDataLoss);
  for (const char* part :
       {"worker 3", "epoch 5", "phase 14", "kind allreduce", "step 2", "round 33"}) {
    EXPECT_NE(dup.message().find(part), std::string::npos) << part << " in " << dup.message();
  }
  // The waiting take, a take of the duplicated message and any later take fail with it.
  EXPECT_EQ(waiting.status(), dup);
  EXPECT_EQ(box.Take(3, tag, milliseconds(10)).status(), dup);
  EXPECT_EQ(box.Put(1, other, "late").code(), absl::StatusCode::kOk);
  EXPECT_EQ(box.Take(1, other, milliseconds(10)).status(), dup);
  EXPECT_EQ(box.status(), dup);
}

TEST(Communicator, ADuplicateSendFailsTheWholeGroup) {
  auto group = MakeInProcessGroup(3);
  for (auto& c : group) c->set_timeout(milliseconds(20000));
  const uint64_t tag = MakeTag(0, 1, 0, TrafficKind::kFeatures);
  absl::StatusOr<std::string> bystander;
  std::thread t([&] { bystander = group[2]->Recv(1, tag); });
  group[0]->Send(1, tag, "a");
  group[0]->Send(1, tag, "b");
  t.join();
  auto r = group[1]->Recv(0, tag);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("worker 0"), std::string::npos) << r.status();
  EXPECT_EQ(bystander.status(), r.status());
}

TEST(Communicator, PlannedAllToAllsOverlapAndCheckTheirSizes) {
  // Worker r sends q + 1 copies of byte 'a' + r to each worker q != r (none to one peer); two calls
  // are in flight at once and finish in the other order.
  const int P = 4;
  std::vector<std::string> first(P), second(P);
  std::vector<absl::Status> status(P);
  auto plan = [&](int from, int to) -> int64_t { return from == to || (from + to) % 5 == 0 ? 0 : to + 1; };
  RunGroup(P, [&](Communicator& comm) {
    const int r = comm.rank();
    std::vector<int64_t> recv_bytes(P);
    std::vector<std::string> send(P);
    for (int q = 0; q < P; ++q) {
      recv_bytes[q] = plan(q, r);
      send[q] = std::string(plan(r, q), static_cast<char>('a' + r));
    }
    auto part = [&](int q) { return send[q]; };
    auto a = comm.StartAllToAllV(part, recv_bytes, MakeTag(0, 0, 0, TrafficKind::kFeatures));
    auto b = comm.StartAllToAllV(part, recv_bytes, MakeTag(0, 1, 0, TrafficKind::kFeatures));
    auto got_b = b->Finish();
    auto got_a = a->Finish();
    status[r] = got_a.ok() ? got_b.status() : got_a.status();
    if (status[r].ok()) {
      for (int q = 0; q < P; ++q) {
        first[r] += (*got_a)[q];
        second[r] += (*got_b)[q];
      }
    }
  });
  for (int r = 0; r < P; ++r) {
    ASSERT_TRUE(status[r].ok()) << "worker " << r << ": " << status[r];
    std::string want;
    for (int q = 0; q < P; ++q) want += std::string(plan(q, r), static_cast<char>('a' + q));
    EXPECT_EQ(first[r], want) << "worker " << r;
    EXPECT_EQ(second[r], want) << "worker " << r;
  }
  // A peer that sends other than the planned size is named.
  absl::StatusOr<std::vector<std::string>> wrong;
  RunGroup(2, [&](Communicator& comm) {
    const uint64_t tag = MakeTag(1, 0, 0, TrafficKind::kPartials);
    if (comm.rank() == 0) {
      comm.StartAllToAllV([](int) { return std::string("xyz"); }, {0, 0}, tag)->Finish().IgnoreError();
    } else {
      wrong = comm.StartAllToAllV([](int) { return std::string(); }, {2, 0}, tag)->Finish();
    }
  });
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("worker 0 sent 3 bytes where 2 were planned"), std::string::npos)
      << wrong.status();
}

TEST(Communicator, AbortWakesWaitersWithTheReason) {
  auto group = MakeInProcessGroup(2);
  std::thread t([&] { group[1]->Abort(absl::UnavailableError("worker 1 died")); });
  auto r = group[0]->Recv(1, 42);
  t.join();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("worker 1 died"), std::string::npos);
  auto g = MakeInProcessGroup(2);
  g[0]->set_timeout(milliseconds(50));
  auto late = g[0]->Recv(1, 7);
  EXPECT_EQ(late.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(late.status().message().find("worker 1"), std::string::npos);
}

}  // namespace
}  // namespace fg::runtime
