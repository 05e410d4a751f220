// The inputs of the performance model (runtime/plan/planner.h): a graph's counts and degree
// distribution, a model's shape, and the distributed sparse-dense products (SpMMs) one training
// epoch runs, as FlexGraph's built-in models run them. Plain values; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/tensor/csr.h"

namespace fg::plan {

// Vertices per degree. Degrees count adjacency entries, self loops excluded.
struct DegreeHistogram {
  std::vector<std::pair<int64_t, int64_t>> bins;  // (degree, vertices), degree ascending
  int64_t Vertices() const;
  int64_t Entries() const;  // sum of degree x vertices
  // Sum over vertices v of 1 - (1 - q)^deg(v): the expected vertices with at least one neighbour in
  // a block that receives each neighbour independently with probability q (a random partition).
  double ExpectedTouched(double q) const;
};

DegreeHistogram HistogramOf(const std::vector<int64_t>& degrees);
// n vertices whose degrees follow a Poisson law of the given mean (a uniform random graph).
DegreeHistogram PoissonDegrees(int64_t n, double mean);
// n vertices with a power-law tail P(deg >= d) ~ d^(1 - alpha) (alpha > 2), capped at n - 1 and
// scaled so that the degrees sum to `entries` (within rounding). 4096 quantile buckets.
DegreeHistogram PowerLawDegrees(int64_t n, int64_t entries, double alpha);

// A graph as the model sees it: adjacency entries (destination <- source, self loops excluded)
// and both degree distributions (in: entries per destination, out: per source).
struct GraphCounts {
  int64_t vertices = 0;
  int64_t entries = 0;
  DegreeHistogram in_degrees, out_degrees;
};
// Counts of an in-edge Csr (rows = destinations); self loops are not counted.
GraphCounts CountsOf(const Csr& in_edges);

enum class ModelKind { kGcn, kSage, kGin, kSgc };
// "gcn", "sage", "gin", "sgc"; the error names --model and the valid names.
absl::StatusOr<ModelKind> ParseModelKind(const std::string& name);
const char* ModelName(ModelKind kind);

struct ModelShape {
  ModelKind kind = ModelKind::kGcn;
  int64_t features = 0, hidden = 0, classes = 0;
  int layers = 2;  // SGC: hops
};
// Errors name the field (features, hidden, classes, layers).
absl::Status Validate(const ModelShape& m);

struct LayerDims {
  int64_t in = 0, out = 0;
  int64_t message = 0;        // width of the rows the aggregation reads (and the exchange moves)
  bool message_trained = false;  // the message depends on parameters: its gradient is exchanged back
  bool aggregates_self = false;  // the aggregation matrix holds a self loop per vertex (GCN, SGC)
  double update_flops_per_row = 0;  // forward dense flops per vertex (GEMMs)
  int64_t activation_width = 0;     // floats per vertex the elementwise ops touch (dense inputs and outputs)
  int64_t parameters = 0;
};
// Per layer, as udf_examples/<model> builds it: GCN and SAGE project first when that narrows the
// rows (message = min(in, out)); GIN aggregates its input (an MLP in -> hidden -> out after);
// SGC propagates the features K times and applies one linear classifier at the last hop.
std::vector<LayerDims> Layers(const ModelShape& m);
int64_t Parameters(const ModelShape& m);

// One distributed SpMM: layer `layer`'s aggregation forward (A x M) or its transpose backward
// (A^T x dM), over rows `width` wide.
struct Spmm {
  int layer = 0;
  int64_t width = 0;
  bool backward = false;
};
// The SpMMs of one training step (forward, then backward where the message is trained), as
// FlexGraph's exchange runs them with dropout on the input (the models' defaults): a layer-0 message
// that is the constant input itself (SGC) is received once per run and is not counted per epoch.
std::vector<Spmm> TrainingSpmms(const ModelShape& m);
// The SpMMs of one evaluation pass (forward only; the same layer-0 rule).
std::vector<Spmm> EvaluationSpmms(const ModelShape& m);

}  // namespace fg::plan
