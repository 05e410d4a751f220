#include "flexgraph/graph/builder.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/parallel.h"
#include "flexgraph/base/status.h"

namespace fg::graph {

namespace {
constexpr uint64_t kLoopMarker = 0xFFFFFFFFull;  // low 32 bits of an added loop's key
constexpr int64_t kGrain = 4096;
}  // namespace

CsrBuildOptions HomogeneousBuildOptions(const LoadOptions& options) {
  CsrBuildOptions b;
  b.deduplicate = options.deduplicate;
  b.remove_self_loops = options.remove_self_loops;
  b.add_reverse_edges = options.add_reverse_edges;
  return b;
}

absl::StatusOr<Csr> BuildCsr(int64_t num_rows, int64_t num_cols, const int64_t* rows,
                             const int64_t* cols, int64_t m, const float* weights,
                             const CsrBuildOptions& options, Tensor* entry_ids) {
  const bool square = num_rows == num_cols;
  if ((options.add_reverse_edges || options.add_self_loops) && !square) {
    return absl::InvalidArgumentError(absl::StrCat(
        "reverse edges and self loops need a square matrix, got ", num_rows, " x ", num_cols));
  }
  if (num_cols > INT32_MAX || num_rows > INT32_MAX) {
    return absl::InvalidArgumentError(absl::StrCat(
        "graph has ", std::max(num_rows, num_cols),
        " nodes of one type; column ids are int32 (at most 2^31 - 1 nodes per type)"));
  }
  const int64_t total = options.add_reverse_edges ? 2 * m : m;
  if (total >= (int64_t{1} << 32) - 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(total, " entries: one Csr build handles fewer than 2^32"));
  }
  // Validate ids (first bad edge by index, independent of threads).
  std::atomic<int64_t> bad{m};
  ParallelForDynamic(0, (m + kGrain - 1) / kGrain, 1, [&](int64_t b) {
    const int64_t lo = b * kGrain, hi = std::min(m, lo + kGrain);
    for (int64_t k = lo; k < hi && k < bad.load(std::memory_order_relaxed); ++k) {
      if (rows[k] < 0 || rows[k] >= num_rows || cols[k] < 0 || cols[k] >= num_cols) {
        int64_t cur = bad.load();
        while (k < cur && !bad.compare_exchange_weak(cur, k)) {
        }
        break;
      }
    }
  });
  if (bad.load() < m) {
    const int64_t k = bad.load();
    return absl::InvalidArgumentError(absl::StrCat("edge ", k, " (", rows[k], ", ", cols[k],
                                                   ") outside the ", num_rows, " x ", num_cols,
                                                   " matrix"));
  }
  auto entry = [&](int64_t k, int64_t* r, int64_t* c) {
    if (k < m) {
      *r = rows[k];
      *c = cols[k];
    } else {
      *r = cols[k - m];
      *c = rows[k - m];
    }
  };
  const bool drop_loops = options.remove_self_loops || options.add_self_loops;
  // 1. Count entries per row.
  std::vector<int64_t> offsets(num_rows + 1, 0);
  ParallelFor(0, total, [&](int64_t k) {
    int64_t r, c;
    entry(k, &r, &c);
    if (drop_loops && r == c) return;
    std::atomic_ref<int64_t>(offsets[r + 1]).fetch_add(1, std::memory_order_relaxed);
  });
  if (options.add_self_loops) {
    for (int64_t r = 0; r < num_rows; ++r) ++offsets[r + 1];
  }
  for (int64_t r = 0; r < num_rows; ++r) offsets[r + 1] += offsets[r];
  const int64_t filled = offsets[num_rows];
  // 2. Scatter keys (column << 32 | entry id); the order within a row is fixed by sorting.
  std::vector<uint64_t> keys(filled);
  std::vector<int64_t> cursor(offsets.begin(), offsets.end() - 1);
  if (options.add_self_loops) {
    ParallelFor(0, num_rows, [&](int64_t r) {
      keys[cursor[r]++] = (static_cast<uint64_t>(r) << 32) | kLoopMarker;
    });
  }
  ParallelFor(0, total, [&](int64_t k) {
    int64_t r, c;
    entry(k, &r, &c);
    if (drop_loops && r == c) return;
    const int64_t pos = std::atomic_ref<int64_t>(cursor[r]).fetch_add(1, std::memory_order_relaxed);
    keys[pos] = (static_cast<uint64_t>(c) << 32) | static_cast<uint64_t>(k);
  });
  // 3. Sort rows, then deduplicate (keep the smallest entry id; real loops sort before markers).
  std::vector<int64_t> kept(num_rows + 1, 0);
  ParallelForDynamic(0, num_rows, 256, [&](int64_t r) {
    uint64_t* b = keys.data() + offsets[r];
    uint64_t* e = keys.data() + offsets[r + 1];
    std::sort(b, e);
    int64_t n = e - b;
    if (options.deduplicate || options.add_self_loops) {
      int64_t w = 0;
      for (int64_t i = 0; i < n; ++i) {
        const bool dup = w > 0 && (b[w - 1] >> 32) == (b[i] >> 32);
        if (dup && (options.deduplicate || (b[i] & 0xFFFFFFFFull) == kLoopMarker)) continue;
        b[w++] = b[i];
      }
      n = w;
    }
    kept[r + 1] = n;
  });
  for (int64_t r = 0; r < num_rows; ++r) kept[r + 1] += kept[r];
  const int64_t nnz = kept[num_rows];
  Csr csr;
  csr.num_rows = num_rows;
  csr.num_cols = num_cols;
  csr.offsets = Tensor::Empty({num_rows + 1}, DType::kInt64);
  std::memcpy(csr.offsets.i64(), kept.data(), sizeof(int64_t) * (num_rows + 1));
  csr.indices = Tensor::Empty({nnz}, DType::kInt32);
  Tensor ids = Tensor::Empty({nnz}, DType::kInt64);
  if (weights != nullptr) csr.values = Tensor::Empty({nnz});
  int32_t* ci = csr.indices.i32();
  int64_t* ei = ids.i64();
  float* cv = weights != nullptr ? csr.values.f32() : nullptr;
  ParallelForDynamic(0, num_rows, 256, [&](int64_t r) {
    const uint64_t* b = keys.data() + offsets[r];
    for (int64_t i = 0, n = kept[r + 1] - kept[r]; i < n; ++i) {
      const int64_t o = kept[r] + i;
      ci[o] = static_cast<int32_t>(b[i] >> 32);
      const uint64_t low = b[i] & 0xFFFFFFFFull;
      ei[o] = low == kLoopMarker ? kAddedLoop : static_cast<int64_t>(low);
      if (cv != nullptr) cv[o] = low == kLoopMarker ? 1.0f : weights[static_cast<int64_t>(low) % m];
    }
  });
  if (entry_ids != nullptr) *entry_ids = ids;
  return csr;
}

Tensor GatherEntryRows(const Tensor& table, const Tensor& entry_ids, int64_t m) {
  const int64_t nnz = entry_ids.numel();
  const int64_t f = table.row_width();
  Tensor out = Tensor::Empty({nnz, f});
  const float* src = table.f32();
  float* dst = out.f32();
  const int64_t* ids = entry_ids.i64();
  ParallelFor(0, nnz, [&](int64_t e) {
    if (ids[e] == kAddedLoop) {
      std::memset(dst + e * f, 0, sizeof(float) * f);
    } else {
      std::memcpy(dst + e * f, src + (ids[e] % m) * f, sizeof(float) * f);
    }
  });
  return out;
}

absl::StatusOr<Relation> BuildRelation(const std::string& src_type, const std::string& name,
                                       const std::string& dst_type, int64_t num_src,
                                       int64_t num_dst, const int64_t* src, const int64_t* dst,
                                       int64_t m, const float* weights, const Tensor& edge_feat,
                                       const CsrBuildOptions& options) {
  Relation rel;
  rel.src_type = src_type;
  rel.name = name;
  rel.dst_type = dst_type;
  Tensor ids;
  FG_ASSIGN_OR_RETURN(rel.by_src, BuildCsr(num_src, num_dst, src, dst, m, weights, options, &ids));
  if (options.add_reverse_edges) {
    rel.by_dst = rel.by_src;  // symmetric
    rel.symmetric = true;
  } else {
    FG_ASSIGN_OR_RETURN(rel.by_dst, BuildCsr(num_dst, num_src, dst, src, m, weights, options));
  }
  if (edge_feat.defined()) rel.edge_feat = GatherEntryRows(edge_feat, ids, m);
  return rel;
}

absl::StatusOr<HeteroGraph> BuildHomogeneousGraph(int64_t n, const int64_t* src, const int64_t* dst,
                                                  int64_t m, const Tensor& edge_feat,
                                                  const CsrBuildOptions& options) {
  HeteroGraph g;
  g.node_types = {"node"};
  g.num_nodes = {n};
  FG_ASSIGN_OR_RETURN(Relation rel,
                      BuildRelation("node", "edge", "node", n, n, src, dst, m, nullptr, edge_feat, options));
  g.relations.push_back(std::move(rel));
  return g;
}

}  // namespace fg::graph
