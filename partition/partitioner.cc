#include "partition/partitioner.h"

#include <metis.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <mutex>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "flexgraph/base/progress.h"
#include "flexgraph/base/rng.h"
#include "flexgraph/base/status.h"
#include "partition/cost_model.h"

static_assert(sizeof(idx_t) == sizeof(int32_t), "FlexGraph expects METIS built with 32-bit idx_t");

namespace fg::partition {
namespace {

absl::Status CheckRequest(const PartitionInput& in, int num_parts) {
  if (in.graph == nullptr) return absl::InvalidArgumentError("partitioner: no graph");
  const int64_t n = in.graph->num_rows;
  if (num_parts < 1) {
    return absl::InvalidArgumentError(absl::StrCat("parts must be at least 1, got ", num_parts));
  }
  if (num_parts > n) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot split ", n, " vertices into ", num_parts, " parts"));
  }
  if (!in.vertex_weights.empty() && static_cast<int64_t>(in.vertex_weights.size()) != n) {
    return absl::InvalidArgumentError("partitioner: vertex weights do not match the graph");
  }
  if (!in.memory_weights.empty() && static_cast<int64_t>(in.memory_weights.size()) != n) {
    return absl::InvalidArgumentError("partitioner: memory weights do not match the graph");
  }
  if (!in.edge_weights.empty() && static_cast<int64_t>(in.edge_weights.size()) != in.graph->nnz()) {
    return absl::InvalidArgumentError("partitioner: edge weights do not match the graph");
  }
  return absl::OkStatus();
}

class HashPartitioner : public Partitioner {
 public:
  Method method() const override { return Method::kHash; }
  absl::StatusOr<std::vector<int32_t>> Assign(const PartitionInput& in, int P) const override {
    FG_RETURN_IF_ERROR(CheckRequest(in, P));
    std::vector<int32_t> owners(in.graph->num_rows);
    for (size_t v = 0; v < owners.size(); ++v) {
      owners[v] = static_cast<int32_t>(MixKey(in.seed, v) % static_cast<uint64_t>(P));
    }
    return owners;
  }
};

class RangePartitioner : public Partitioner {
 public:
  Method method() const override { return Method::kRange; }
  absl::StatusOr<std::vector<int32_t>> Assign(const PartitionInput& in, int P) const override {
    FG_RETURN_IF_ERROR(CheckRequest(in, P));
    const int64_t n = in.graph->num_rows;
    std::vector<int32_t> owners(n);
    for (int64_t v = 0; v < n; ++v) owners[v] = static_cast<int32_t>(v * P / n);
    return owners;
  }
};

class MetisPartitioner : public Partitioner {
 public:
  Method method() const override { return Method::kMetis; }
  absl::StatusOr<std::vector<int32_t>> Assign(const PartitionInput& in, int P) const override {
    FG_RETURN_IF_ERROR(CheckRequest(in, P));
    const Csr& g = *in.graph;
    const int64_t n = g.num_rows;
    if (P == 1) return std::vector<int32_t>(n, 0);
    const int64_t need = EstimateMetisBytes(n, g.nnz(), P);
    const int64_t have = in.memory_limit_bytes > 0 ? in.memory_limit_bytes : AvailableMemoryBytes();
    if (need > have) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "METIS needs about %.2f GiB for %d vertices and %d adjacency entries, but only %.2f GiB "
          "%s; use --method hash or range, or a machine with more memory",
          need / 1073741824.0, n, g.nnz(), have / 1073741824.0,
          in.memory_limit_bytes > 0 ? "are allowed" : "are available"));
    }
    std::vector<idx_t> xadj(n + 1), adjncy(g.col(), g.col() + g.nnz()), part(n, 0);
    for (int64_t v = 0; v <= n; ++v) xadj[v] = static_cast<idx_t>(g.row_ptr()[v]);
    // One weight per vertex and constraint, interleaved (METIS's layout).
    const bool two = !in.memory_weights.empty();
    std::vector<idx_t> vwgt;
    if (two) {
      vwgt.resize(2 * n);
      for (int64_t v = 0; v < n; ++v) {
        vwgt[2 * v] = in.vertex_weights.empty() ? 1 : in.vertex_weights[v];
        vwgt[2 * v + 1] = in.memory_weights[v];
      }
    } else {
      vwgt.assign(in.vertex_weights.begin(), in.vertex_weights.end());
    }
    std::vector<idx_t> adjwgt(in.edge_weights.begin(), in.edge_weights.end());
    idx_t nvtxs = static_cast<idx_t>(n), ncon = two ? 2 : 1, nparts = P, objval = 0;
    idx_t options[METIS_NOPTIONS];
    METIS_SetDefaultOptions(options);
    options[METIS_OPTION_NUMBERING] = 0;
    options[METIS_OPTION_SEED] = static_cast<idx_t>(in.seed & 0x7fffffff);
    // METIS draws from one process-wide random state: concurrent calls would change each other's
    // draws, and one input and seed would no longer give one partition.
    static std::mutex metis;
    std::lock_guard<std::mutex> serial(metis);
    const int rc = METIS_PartGraphKway(&nvtxs, &ncon, xadj.data(), adjncy.data(),
                                       vwgt.empty() ? nullptr : vwgt.data(), nullptr,
                                       adjwgt.empty() ? nullptr : adjwgt.data(), &nparts, nullptr,
                                       nullptr, options, &objval, part.data());
    if (rc != METIS_OK) {
      return absl::InternalError(absl::StrCat(
          "METIS_PartGraphKway failed (",
          rc == METIS_ERROR_INPUT    ? "invalid input"
          : rc == METIS_ERROR_MEMORY ? "out of memory"
                                     : "error",
          ") on ", n, " vertices, ", g.nnz(), " adjacency entries, ", P, " parts"));
    }
    return std::vector<int32_t>(part.begin(), part.end());
  }
};

}  // namespace

const char* MethodName(Method m) {
  switch (m) {
    case Method::kHash:
      return "hash";
    case Method::kRange:
      return "range";
    case Method::kMetis:
      return "metis";
    case Method::kBalanced:
      return "balanced";
  }
  return "?";
}

absl::StatusOr<Method> ParseMethod(const std::string& name) {
  for (Method m : {Method::kHash, Method::kRange, Method::kMetis, Method::kBalanced}) {
    if (name == MethodName(m)) return m;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown partition method '", name, "' (expected hash, range, metis or balanced)"));
}

std::unique_ptr<Partitioner> MakePartitioner(Method method) {
  switch (method) {
    case Method::kHash:
      return std::make_unique<HashPartitioner>();
    case Method::kRange:
      return std::make_unique<RangePartitioner>();
    case Method::kMetis:
    case Method::kBalanced:
      return std::make_unique<MetisPartitioner>();
  }
  return nullptr;
}

int64_t EstimateMetisBytes(int64_t n, int64_t nnz, int num_parts) {
  // Our idx_t copies: xadj, adjncy, vwgt, adjwgt, part. METIS: the coarsening hierarchy (each
  // level about 10 words per vertex and 2 per entry, the levels summing to about 3x the input on
  // skewed graphs), k-way refinement boundary data per vertex and part, and its work space.
  // Measured peak RSS on RMAT graphs stays below this bound (see bench/README.md).
  const double words = 3.0 * n + 2.0 * nnz + 3.0 * (10.0 * n + 2.0 * nnz) +
                       2.0 * n * std::min(num_parts, 32) / 8.0 + 2.0 * n + nnz;
  return static_cast<int64_t>(words * sizeof(idx_t)) + (int64_t{64} << 20);
}


namespace {
// Per-vertex estimates as METIS weights: the mean vertex weighs `unit` (at least 1 each).
std::vector<int32_t> ScaledWeights(const std::vector<double>& c) {
  const int64_t n = static_cast<int64_t>(c.size());
  double sum = 0;
  for (double x : c) sum += x;
  const double mean = n > 0 ? sum / n : 0;
  // The mean vertex weighs `unit`; the total stays below 2^30 (idx_t).
  const double unit = std::max(1.0, std::min(64.0, std::floor(double{1 << 30} / std::max<int64_t>(1, n) / 2)));
  std::vector<int32_t> w(n, 1);
  if (mean <= 0) return w;
  for (int64_t v = 0; v < n; ++v) {
    w[v] = static_cast<int32_t>(std::max(1.0, std::round(c[v] / mean * unit)));
  }
  return w;
}
}  // namespace

std::vector<int32_t> MetisVertexWeights(const CostModel& cost) { return ScaledWeights(cost.vertex_compute()); }

std::vector<int32_t> MetisMemoryWeights(const CostModel& cost) {
  std::vector<double> rows = cost.workload().row_floats;
  rows.resize(cost.num_vertices(), 0.0);
  return ScaledWeights(rows);
}

std::vector<int32_t> MetisEdgeWeights(const CostModel& cost) {
  const Csr& g = cost.union_graph();
  const int64_t* rp = g.row_ptr();
  const int32_t* col = g.col();
  std::vector<int32_t> weight(g.nnz(), 1), stamp(g.nnz(), -1);
  auto find = [&](int64_t r, int32_t u) -> int64_t {
    const int32_t* b = col + rp[r];
    const int32_t* e = col + rp[r + 1];
    const int32_t* it = std::lower_bound(b, e, u);
    return it != e && *it == u ? it - col : -1;
  };
  const Workload& w = cost.workload();
  for (int l = 0; l < static_cast<int>(w.layers.size()); ++l) {
    const LayerWorkload& lw = w.layers[l];
    for (size_t k = 0; k < lw.roots.size(); ++k) {
      const int32_t r = lw.roots[k];
      for (int64_t i = lw.root_nodes[k]; i < lw.root_nodes[k + 1]; ++i) {
        for (int64_t e = lw.bottom.row_ptr()[i]; e < lw.bottom.row_ptr()[i + 1]; ++e) {
          const int32_t u = lw.bottom.col()[e];
          if (u == r) continue;
          const int64_t ru = find(r, u);
          if (ru < 0 || stamp[ru] == l) continue;
          const int64_t ur = find(u, r);
          stamp[ru] = stamp[ur] = l;
          ++weight[ru];
          ++weight[ur];
        }
      }
    }
  }
  return weight;
}

}  // namespace fg::partition
