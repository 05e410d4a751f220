// libFuzzer target: sampling across workers (runtime/distributed/distributed_sampling.h) against a peer whose
// messages are the input. Worker 0 samples two batches over a small graph split between two
// workers: LADIES on the whole graph or on parts, node-wise or ShaDow on parts; worker 1 answers
// each exchange (the seeds, each layer's or hop's row requests and replies, ShaDow's induced rows,
// the sampled batches, the input rows)
// with the input's next message. Worker 0 must end with batches or an error, never crash, trip a
// sanitizer or hang.
#include <fuzzer/FuzzedDataProvider.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "hdg/builder.h"
#include "runtime/distributed/distributed_sampling.h"
#include "runtime/distributed/sampling_messages.h"

namespace {

using namespace fg;           // NOLINT
using namespace fg::runtime;  // NOLINT

constexpr int kVertices = 24;

// A weighted ring with chords, each row holding its root in the middle; vertices 0-11 are worker
// 0's, with 3 features each.
struct Graph {
  Graph() {
    std::vector<int32_t> roots(kVertices);
    for (int32_t v = 0; v < kVertices; ++v) roots[v] = v;
    auto hdg = hdg::HdgBuilder(hdg::SchemaTree::Flat("neighbor", true), kVertices)
                   .Build(roots, [](int32_t v, hdg::NeighborWriter& out) {
                     out.Add((v + 1) % kVertices, 0.5f);
                     out.Add(v, 1.0f);
                     out.Add((v + 5) % kVertices, 0.25f);
                     out.Add((v * 7 + 3) % kVertices, 2.0f);
                   });
    matrix = std::make_unique<sampling::NeighbourhoodMatrix>(
        *sampling::NeighbourhoodMatrix::Create(std::make_shared<const hdg::Hdg>(std::move(*hdg)), kVertices));
    std::vector<int32_t> owner(kVertices);
    for (int v = 0; v < kVertices; ++v) owner[v] = v < kVertices / 2 ? 0 : 1;
    owners = Ownership(owner);
    mine.features = Tensor::FromVector(std::vector<float>(3 * kVertices / 2, 0.5f)).Reshape({kVertices / 2, 3});
    std::vector<int64_t> keys(kVertices / 2);
    for (int v = 0; v < kVertices / 2; ++v) keys[v] = v;
    mine.keys = Tensor::FromVector(keys);
  }
  std::unique_ptr<sampling::NeighbourhoodMatrix> matrix;
  Ownership owners;
  OwnedRows mine;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Graph* graph = new Graph();
  FuzzedDataProvider in(data, size);
  enum Mode { kLadiesWholeGraph, kLadiesParts, kNodeWiseParts, kShadowParts };
  const int mode = in.ConsumeIntegralInRange(0, 3);
  const bool leaders = mode == kLadiesWholeGraph || mode == kLadiesParts;
  std::vector<std::string> messages;
  while (in.remaining_bytes() > 0 && messages.size() < 8) messages.push_back(in.ConsumeRandomLengthString(1 << 14));
  // The exchanges worker 0 takes part in, in order.
  using namespace sampling_messages;  // NOLINT
  std::vector<uint64_t> tags;
  if (leaders) tags.push_back(Tag(0, 0, TrafficKind::kControl, kStepLeaderSeeds, 0));
  if (mode != kLadiesWholeGraph) {
    // Layers from the seeds down; ShaDow's hops from the seed out, then layer 0's induced rows
    // (both layers share one matrix), named from the top layer number down.
    const std::vector<int> layers = mode == kShadowParts ? std::vector<int>{0, 1, kMaxTagLayer - 1}
                                                         : std::vector<int>{1, 0};
    for (int layer : layers) {
      tags.push_back(Tag(0, layer, TrafficKind::kControl, kStepRowRequest, 0));
      tags.push_back(Tag(0, layer, TrafficKind::kControl, kStepRowReply, 0));
    }
  }
  if (leaders) tags.push_back(Tag(0, 0, TrafficKind::kControl, kStepLeaderRows, 0));
  if (mode != kLadiesWholeGraph) {
    tags.push_back(Tag(0, 0, TrafficKind::kControl, kStepInputRequest, 0));
    tags.push_back(Tag(0, 0, TrafficKind::kFeatures, kStepInputReply, 0));
  }
  auto group = MakeInProcessGroup(2);
  for (auto& c : group) c->set_timeout(std::chrono::milliseconds(20000));
  std::thread peer([&] {
    for (size_t i = 0; i < tags.size(); ++i) {
      if (!group[1]->Recv(0, tags[i]).ok()) return;
      group[1]->Send(0, tags[i], i < messages.size() ? messages[i] : std::string());
    }
  });
  sampling::SamplerOptions o;
  o.kind = mode == kNodeWiseParts ? sampling::SamplerKind::kNodeWise
           : mode == kShadowParts  ? sampling::SamplerKind::kShadow
                                   : sampling::SamplerKind::kLayerWise;
  o.layer_size = 4;
  o.fanouts = {2, 2};
  const std::vector<Tensor> seeds = {Tensor::FromVector(std::vector<int64_t>{0, 2, 4}),
                                     Tensor::FromVector(std::vector<int64_t>{6, 8})};
  const sampling::NeighbourhoodMatrix* a = graph->matrix.get();
  auto got = mode == kLadiesWholeGraph
                 ? SampleLayerWiseAcrossWorkers(*group[0], nullptr, {a, a}, o, 0, 0, 0, seeds, seeds)
                 : SampleAcrossParts(*group[0], graph->owners, graph->mine, {a, a}, o, 0, 0, 0, seeds);
  group[0]->Abort(absl::CancelledError("done"));
  peer.join();
  return 0;
}
