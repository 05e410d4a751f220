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

// Sort keys of one row's entries: the column first, then the entry id (kLoopMarker for added
// loops, so that a real loop sorts first). Narrow: packed into 64 bits (columns and entry ids
// below 2^32); wide: two words.
struct NarrowKeys {
  using Key = uint64_t;
  static Key Make(uint64_t col, uint64_t id) { return (col << 32) | id; }
  static uint64_t Col(Key k) { return k >> 32; }
  static uint64_t Id(Key k) { return k & 0xFFFFFFFFull; }
  static constexpr uint64_t kMarker = kLoopMarker;
};
struct WideKeys {
  struct Key {
    uint64_t col, id;
    bool operator<(const Key& o) const { return col != o.col ? col < o.col : id < o.id; }
  };
  static Key Make(uint64_t col, uint64_t id) { return {col, id}; }
  static uint64_t Col(const Key& k) { return k.col; }
  static uint64_t Id(const Key& k) { return k.id; }
  static constexpr uint64_t kMarker = ~uint64_t{0};
};

// Steps 1-4 of BuildCsr on validated input; `Index` is the column id type.
template <typename Keys, typename Index>
Csr BuildValidated(int64_t num_rows, int64_t num_cols, const int64_t* rows, const int64_t* cols,
                   int64_t m, const float* weights, const CsrBuildOptions& options,
                   Tensor* entry_ids) {
  using Key = typename Keys::Key;
  const int64_t total = options.add_reverse_edges ? 2 * m : m;
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
  // 2. Scatter keys; the order within a row is fixed by sorting.
  std::vector<Key> keys(filled);
  std::vector<int64_t> cursor(offsets.begin(), offsets.end() - 1);
  if (options.add_self_loops) {
    ParallelFor(0, num_rows, [&](int64_t r) {
      keys[cursor[r]++] = Keys::Make(static_cast<uint64_t>(r), Keys::kMarker);
    });
  }
  ParallelFor(0, total, [&](int64_t k) {
    int64_t r, c;
    entry(k, &r, &c);
    if (drop_loops && r == c) return;
    const int64_t pos = std::atomic_ref<int64_t>(cursor[r]).fetch_add(1, std::memory_order_relaxed);
    keys[pos] = Keys::Make(static_cast<uint64_t>(c), static_cast<uint64_t>(k));
  });
  // 3. Sort rows, then deduplicate (keep the smallest entry id; real loops sort before markers).
  std::vector<int64_t> kept(num_rows + 1, 0);
  ParallelForDynamic(0, num_rows, 256, [&](int64_t r) {
    Key* b = keys.data() + offsets[r];
    Key* e = keys.data() + offsets[r + 1];
    std::sort(b, e);
    int64_t n = e - b;
    if (options.deduplicate || options.add_self_loops) {
      int64_t w = 0;
      for (int64_t i = 0; i < n; ++i) {
        const bool dup = w > 0 && Keys::Col(b[w - 1]) == Keys::Col(b[i]);
        if (dup && (options.deduplicate || Keys::Id(b[i]) == Keys::kMarker)) continue;
        b[w++] = b[i];
      }
      n = w;
    }
    kept[r + 1] = n;
  });
  for (int64_t r = 0; r < num_rows; ++r) kept[r + 1] += kept[r];
  // 4. Write the matrix.
  const int64_t nnz = kept[num_rows];
  Csr csr;
  csr.num_rows = num_rows;
  csr.num_cols = num_cols;
  csr.offsets = Tensor::Empty({num_rows + 1}, DType::kInt64);
  std::memcpy(csr.offsets.i64(), kept.data(), sizeof(int64_t) * (num_rows + 1));
  csr.indices = Tensor::Empty({nnz}, sizeof(Index) == 8 ? DType::kInt64 : DType::kInt32);
  Tensor ids = Tensor::Empty({nnz}, DType::kInt64);
  if (weights != nullptr) csr.values = Tensor::Empty({nnz});
  Index* ci = static_cast<Index*>(csr.indices.raw());
  int64_t* ei = ids.i64();
  float* cv = weights != nullptr ? csr.values.f32() : nullptr;
  ParallelForDynamic(0, num_rows, 256, [&](int64_t r) {
    const Key* b = keys.data() + offsets[r];
    for (int64_t i = 0, n = kept[r + 1] - kept[r]; i < n; ++i) {
      const int64_t o = kept[r] + i;
      ci[o] = static_cast<Index>(Keys::Col(b[i]));
      const uint64_t id = Keys::Id(b[i]);
      const bool loop = id == Keys::kMarker;
      ei[o] = loop ? kAddedLoop : static_cast<int64_t>(id);
      if (cv != nullptr) cv[o] = loop ? 1.0f : weights[static_cast<int64_t>(id) % m];
    }
  });
  if (entry_ids != nullptr) *entry_ids = ids;
  return csr;
}

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
  if (num_rows < 0 || num_cols < 0 || m < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("negative size: ", num_rows, " x ", num_cols, " with ", m, " edges"));
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
  const int64_t total = options.add_reverse_edges ? 2 * m : m;
  const bool wide = options.int64_indices || num_cols > INT32_MAX || num_rows > INT32_MAX ||
                    total >= (int64_t{1} << 32) - 1;
  if (!wide) {
    return BuildValidated<NarrowKeys, int32_t>(num_rows, num_cols, rows, cols, m, weights, options,
                                               entry_ids);
  }
  return BuildValidated<WideKeys, int64_t>(num_rows, num_cols, rows, cols, m, weights, options,
                                           entry_ids);
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
