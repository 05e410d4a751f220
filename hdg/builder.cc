#include "hdg/builder.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/logging.h"
#include "flexgraph/base/parallel.h"
#include "flexgraph/base/progress.h"

namespace fg::hdg {
namespace {

constexpr int64_t kRootsPerChunk = 512;

// Sets block_arity of a level from its offsets.
void ComputeBlockArity(HdgLevel* level) {
  const int64_t* o = level->csr().row_ptr();
  level->block_arity.clear();
  for (size_t t = 0; t + 1 < level->type_offsets.size(); ++t) {
    const int64_t lo = level->type_offsets[t], hi = level->type_offsets[t + 1];
    int64_t arity = hi > lo ? o[lo + 1] - o[lo] : 0;
    for (int64_t i = lo; i < hi && arity >= 0; ++i) {
      if (o[i + 1] - o[i] != arity) arity = -1;
    }
    level->block_arity.push_back(arity);
  }
}

HdgLevel MakeLevel(int64_t rows, int64_t cols, Tensor offsets, Tensor children, Tensor weights,
                   std::vector<int64_t> type_offsets) {
  Csr c;
  c.num_rows = rows;
  c.num_cols = cols;
  c.offsets = std::move(offsets);
  c.indices = std::move(children);
  HdgLevel level;
  level.matrix = std::make_shared<SparseMatrix>(std::move(c));
  level.weights = std::move(weights);
  level.type_offsets = std::move(type_offsets);
  ComputeBlockArity(&level);
  return level;
}

}  // namespace

Hdg FlatHdg(SchemaTree schema, int64_t num_vertices, Tensor roots, Tensor offsets, Tensor children,
            Tensor weights) {
  const int64_t n = roots.numel();
  FG_CHECK(offsets.numel() == n + 1 && schema.kind() == SchemaKind::kFlat);
  FG_CHECK(schema.weighted() == weights.defined());
  std::vector<HdgLevel> levels;
  levels.push_back(MakeLevel(n, num_vertices, std::move(offsets), std::move(children),
                             std::move(weights), {0, n}));
  return Hdg(std::move(schema), num_vertices, std::move(roots), std::move(levels));
}

void NeighborWriter::Fail(const std::string& message) {
  if (buf_->error.empty()) buf_->error = absl::StrCat("root ", root_, ": ", message);
}

void NeighborWriter::Add(int32_t vertex, float weight) {
  if (schema_->kind() != SchemaKind::kFlat) {
    return Fail("Add() on a metapath schema; use AddInstance()");
  }
  if (vertex < 0 || vertex >= num_vertices_) {
    return Fail(absl::StrCat("neighbor ", vertex, " outside the vertex table [0, ", num_vertices_,
                             ")"));
  }
  buf_->children.push_back(vertex);
  if (schema_->weighted()) buf_->weights.push_back(weight);
  ++buf_->counts.back();
}

void NeighborWriter::AddInstance(int type, std::span<const int32_t> vertices) {
  if (schema_->kind() != SchemaKind::kMetapath) {
    return Fail("AddInstance() on a flat schema; use Add()");
  }
  if (type < 0 || type >= schema_->num_types()) {
    return Fail(absl::StrCat("metapath type ", type, " outside [0, ", schema_->num_types(), ")"));
  }
  const MetapathType& mp = schema_->metapaths()[type];
  if (static_cast<int>(vertices.size()) != mp.length) {
    return Fail(absl::StrCat("instance of ", mp.name, " has ", vertices.size(),
                             " vertices, expected ", mp.length));
  }
  for (int32_t v : vertices) {
    if (v < 0 || v >= num_vertices_) {
      return Fail(absl::StrCat("instance vertex ", v, " outside the vertex table [0, ",
                               num_vertices_, ")"));
    }
  }
  auto& inst = buf_->instances[type];
  inst.insert(inst.end(), vertices.begin(), vertices.end());
  ++buf_->inst_counts[type].back();
}

absl::StatusOr<Hdg> HdgBuilder::Build(const std::vector<int32_t>& roots,
                                      const SelectFn& select) const {
  const int64_t n = static_cast<int64_t>(roots.size());
  const int64_t chunks = std::max<int64_t>(1, (n + kRootsPerChunk - 1) / kRootsPerChunk);
  const int types = schema_.num_types();
  const bool metapath = schema_.kind() == SchemaKind::kMetapath;
  std::vector<NeighborWriter::Buffer> buffers(chunks);
  // Progress lines only for a selection long enough to be waited for (not per graph of a batch).
  constexpr int64_t kProgressRoots = int64_t{1} << 20;
  std::optional<Progress> progress;
  if (n >= kProgressRoots) progress.emplace("hdg", n);
  std::atomic<int64_t> done{0};
  ParallelForDynamic(0, chunks, 1, [&](int64_t c) {
    NeighborWriter::Buffer& buf = buffers[c];
    buf.instances.resize(metapath ? types : 0);
    buf.inst_counts.resize(metapath ? types : 0);
    const int64_t lo = c * kRootsPerChunk, hi = std::min(n, lo + kRootsPerChunk);
    for (int64_t i = lo; i < hi; ++i) {
      if (metapath) {
        for (auto& v : buf.inst_counts) v.push_back(0);
      } else {
        buf.counts.push_back(0);
      }
      NeighborWriter writer(&schema_, num_vertices_, &buf, roots[i]);
      select(roots[i], writer);
    }
    if (progress) progress->Update(done += hi - lo);
  });
  for (const auto& b : buffers) {
    if (!b.error.empty()) return absl::InvalidArgumentError(absl::StrCat("NeighborSelection: ", b.error));
  }
  Tensor root_tensor = Tensor::FromVector(roots);
  std::vector<HdgLevel> levels;

  if (!metapath) {
    // One level: roots -> vertices.
    std::vector<int64_t> chunk_base(chunks + 1, 0);
    for (int64_t c = 0; c < chunks; ++c) {
      chunk_base[c + 1] = chunk_base[c] + static_cast<int64_t>(buffers[c].children.size());
    }
    const int64_t nnz = chunk_base[chunks];
    if (nnz >= (int64_t{1} << 31)) {
      return absl::ResourceExhaustedError("HDG level has 2^31 or more children");
    }
    Tensor offsets = Tensor::Empty({n + 1}, DType::kInt64);
    Tensor children = Tensor::Empty({nnz}, DType::kInt32);
    Tensor weights = schema_.weighted() ? Tensor::Empty({nnz}) : Tensor();
    offsets.i64()[0] = 0;
    ParallelFor(0, chunks, [&](int64_t c) {
      const auto& b = buffers[c];
      int64_t at = chunk_base[c];
      const int64_t first = c * kRootsPerChunk;
      for (size_t i = 0; i < b.counts.size(); ++i) {
        at += b.counts[i];
        offsets.i64()[first + i + 1] = at;
      }
      if (!b.children.empty()) {
        std::memcpy(children.i32() + chunk_base[c], b.children.data(), b.children.size() * 4);
        if (weights.defined()) {
          std::memcpy(weights.f32() + chunk_base[c], b.weights.data(), b.weights.size() * 4);
        }
      }
    });
    levels.push_back(MakeLevel(n, num_vertices_, offsets, children, weights, {0, n}));
    if (progress) progress->Finish();
    return Hdg(schema_, num_vertices_, root_tensor, std::move(levels));
  }

  // Metapath schema. Level 1: instances, blocked by type, roots in order within a block.
  std::vector<int64_t> inst_type_offsets(types + 1, 0);
  std::vector<std::vector<int64_t>> chunk_inst_base(types, std::vector<int64_t>(chunks + 1, 0));
  for (int t = 0; t < types; ++t) {
    for (int64_t c = 0; c < chunks; ++c) {
      chunk_inst_base[t][c + 1] =
          chunk_inst_base[t][c] +
          static_cast<int64_t>(buffers[c].instances[t].size()) / schema_.metapaths()[t].length;
    }
    inst_type_offsets[t + 1] = inst_type_offsets[t] + chunk_inst_base[t][chunks];
  }
  const int64_t num_inst = inst_type_offsets[types];
  std::vector<int64_t> vertex_base(types + 1, 0);
  for (int t = 0; t < types; ++t) {
    vertex_base[t + 1] = vertex_base[t] + (inst_type_offsets[t + 1] - inst_type_offsets[t]) *
                                              schema_.metapaths()[t].length;
  }
  if (vertex_base[types] >= (int64_t{1} << 31)) {
    return absl::ResourceExhaustedError("HDG instance level has 2^31 or more children");
  }
  Tensor l1_off = Tensor::Empty({num_inst + 1}, DType::kInt64);
  Tensor l1_children = Tensor::Empty({vertex_base[types]}, DType::kInt32);
  for (int t = 0; t < types; ++t) {
    const int64_t len = schema_.metapaths()[t].length;
    for (int64_t i = inst_type_offsets[t]; i <= inst_type_offsets[t + 1]; ++i) {
      l1_off.i64()[i] = vertex_base[t] + (i - inst_type_offsets[t]) * len;
    }
  }
  // Level 2: groups (type t, root r) at t * n + r; children are instance ids.
  Tensor l2_off = Tensor::Empty({types * n + 1}, DType::kInt64);
  Tensor l2_children = Tensor::Empty({num_inst}, DType::kInt32);
  l2_off.i64()[0] = 0;
  ParallelFor(0, chunks, [&](int64_t c) {
    const auto& b = buffers[c];
    const int64_t first = c * kRootsPerChunk;
    for (int t = 0; t < types; ++t) {
      const int64_t len = schema_.metapaths()[t].length;
      const int64_t inst0 = inst_type_offsets[t] + chunk_inst_base[t][c];
      if (!b.instances[t].empty()) {
        std::memcpy(l1_children.i32() + vertex_base[t] + chunk_inst_base[t][c] * len,
                    b.instances[t].data(), b.instances[t].size() * 4);
      }
      int64_t at = inst0;
      for (size_t i = 0; i < b.inst_counts[t].size(); ++i) {
        for (int64_t k = 0; k < b.inst_counts[t][i]; ++k, ++at) {
          l2_children.i32()[at] = static_cast<int32_t>(at);
        }
        l2_off.i64()[t * n + first + i + 1] = at;
      }
    }
  });
  std::vector<int64_t> group_type_offsets(types + 1);
  for (int t = 0; t <= types; ++t) group_type_offsets[t] = t * n;
  // Level 3: roots; children are their groups, one per type.
  Tensor l3_off = Tensor::Empty({n + 1}, DType::kInt64);
  Tensor l3_children = Tensor::Empty({n * types}, DType::kInt32);
  for (int64_t r = 0; r <= n; ++r) l3_off.i64()[r] = r * types;
  for (int64_t r = 0; r < n; ++r) {
    for (int t = 0; t < types; ++t) l3_children.i32()[r * types + t] = static_cast<int32_t>(t * n + r);
  }
  levels.push_back(MakeLevel(num_inst, num_vertices_, l1_off, l1_children, Tensor(),
                             inst_type_offsets));
  levels.push_back(MakeLevel(types * n, num_inst, l2_off, l2_children, Tensor(),
                             group_type_offsets));
  levels.push_back(MakeLevel(n, types * n, l3_off, l3_children, Tensor(), {0, n}));
  if (progress) progress->Finish();
  return Hdg(schema_, num_vertices_, root_tensor, std::move(levels));
}

}  // namespace fg::hdg
