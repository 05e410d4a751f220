#include "runtime/grid/blocks.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/logging.h"
#include "runtime/comm/communicator.h"

namespace fg::grid {
namespace {

uint64_t SplitMix(uint64_t* s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

int VertexBlocks::BlockOf(int64_t pos) const {
  if (!bounds.empty()) return static_cast<int>(std::upper_bound(bounds.begin() + 1, bounds.end() - 1, pos) - bounds.begin()) - 1;
  int b = static_cast<int>(pos * blocks / std::max<int64_t>(n, 1));
  while (b + 1 < blocks && Lo(b + 1) <= pos) ++b;
  while (b > 0 && Lo(b) > pos) --b;
  return b;
}

VertexBlocks VertexBlocks::Make(int64_t n, int blocks, uint64_t seed) {
  VertexBlocks v;
  v.n = n;
  v.blocks = blocks;
  v.order.resize(n);
  for (int64_t p = 0; p < n; ++p) v.order[p] = p;
  uint64_t s = seed;
  if (seed != 0) {
    for (int64_t p = n - 1; p > 0; --p) {  // Fisher-Yates
      const int64_t q = static_cast<int64_t>(SplitMix(&s) % static_cast<uint64_t>(p + 1));
      std::swap(v.order[p], v.order[q]);
    }
  }
  v.position.resize(n);
  for (int64_t p = 0; p < n; ++p) v.position[v.order[p]] = p;
  return v;
}

VertexBlocks VertexBlocks::FromBounds(std::vector<int64_t> bounds) {
  VertexBlocks v = Make(bounds.back(), static_cast<int>(bounds.size()) - 1, 0);
  v.bounds = std::move(bounds);
  return v;
}

void VertexBlocks::SortWithinBlocks() {
  for (int b = 0; b < blocks; ++b) std::sort(order.begin() + Lo(b), order.begin() + Lo(b + 1));
  for (int64_t p = 0; p < n; ++p) position[order[p]] = p;
}

Csr BlockRows(const Csr& a, const VertexBlocks& blocks, int i) {
  std::vector<int64_t> offsets = {0};
  std::vector<int32_t> cols;
  std::vector<float> vals;
  const float* w = a.val();
  a.VisitIndices([&](const auto* col) {
    for (int64_t p = blocks.Lo(i); p < blocks.Lo(i + 1); ++p) {
      const int64_t v = blocks.order[p];
      for (int64_t e = a.row_ptr()[v]; e < a.row_ptr()[v + 1]; ++e) {
        cols.push_back(static_cast<int32_t>(blocks.position[col[e]]));
        vals.push_back(w != nullptr ? w[e] : 1.0f);
      }
      offsets.push_back(static_cast<int64_t>(cols.size()));
    }
  });
  return Csr::FromVectors(blocks.Size(i), blocks.n, offsets, cols, vals);
}

std::vector<Csr> SplitColumnBlocks(const Csr& rows, const VertexBlocks& blocks, const std::vector<bool>& want) {
  const int nb = blocks.blocks;
  std::vector<std::vector<int64_t>> offsets(nb, std::vector<int64_t>{0});
  std::vector<std::vector<int32_t>> cols(nb);
  std::vector<std::vector<float>> vals(nb);
  const int32_t* c = rows.nnz() > 0 ? rows.col() : nullptr;
  for (int64_t r = 0; r < rows.num_rows; ++r) {
    for (int64_t e = rows.row_ptr()[r]; e < rows.row_ptr()[r + 1]; ++e) {
      const int k = blocks.BlockOf(c[e]);
      if (!want[k]) continue;
      cols[k].push_back(static_cast<int32_t>(c[e] - blocks.Lo(k)));
      vals[k].push_back(rows.val() != nullptr ? rows.val()[e] : 1.0f);
    }
    for (int k = 0; k < nb; ++k) offsets[k].push_back(static_cast<int64_t>(cols[k].size()));
  }
  std::vector<Csr> out(nb);
  for (int k = 0; k < nb; ++k) {
    if (want[k]) out[k] = Csr::FromVectors(rows.num_rows, blocks.Size(k), offsets[k], cols[k], vals[k]);
  }
  return out;
}

std::vector<std::vector<int32_t>> RowsReaching(const Csr& rows, const VertexBlocks& blocks, int64_t lo, int64_t hi) {
  std::vector<std::vector<int32_t>> out(blocks.blocks);
  const int32_t* c = rows.nnz() > 0 ? rows.col() : nullptr;
  for (int64_t r = lo; r < hi; ++r) {
    for (int64_t e = rows.row_ptr()[r]; e < rows.row_ptr()[r + 1]; ++e) {
      std::vector<int32_t>& list = out[blocks.BlockOf(c[e])];
      if (list.empty() || list.back() != r - lo) list.push_back(static_cast<int32_t>(r - lo));
    }
  }
  return out;
}

Csr ColumnRange(const Csr& block, int64_t lo, int64_t hi) {
  std::vector<int64_t> offsets = {0};
  std::vector<int32_t> cols;
  std::vector<float> vals;
  const int32_t* c = block.nnz() > 0 ? block.col() : nullptr;
  for (int64_t r = 0; r < block.num_rows; ++r) {
    for (int64_t e = block.row_ptr()[r]; e < block.row_ptr()[r + 1]; ++e) {
      if (c[e] < lo || c[e] >= hi) continue;
      cols.push_back(static_cast<int32_t>(c[e] - lo));
      vals.push_back(block.val() != nullptr ? block.val()[e] : 1.0f);
    }
    offsets.push_back(static_cast<int64_t>(cols.size()));
  }
  return Csr::FromVectors(block.num_rows, hi - lo, offsets, cols, vals);
}

std::vector<int32_t> TouchedColumns(const Csr& block, Csr* compact) {
  const int64_t nnz = block.nnz();
  const int32_t* c = nnz > 0 ? block.col() : nullptr;
  std::vector<int32_t> touched(c, c + nnz);
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
  if (compact != nullptr) {
    std::vector<int32_t> index(block.num_cols, -1);
    for (size_t t = 0; t < touched.size(); ++t) index[touched[t]] = static_cast<int32_t>(t);
    std::vector<int64_t> offsets(block.row_ptr(), block.row_ptr() + block.num_rows + 1);
    std::vector<int32_t> cols(nnz);
    for (int64_t e = 0; e < nnz; ++e) cols[e] = index[c[e]];
    std::vector<float> vals(block.val(), block.val() + (block.val() ? nnz : 0));
    *compact = Csr::FromVectors(block.num_rows, static_cast<int64_t>(touched.size()), offsets, cols, vals);
  }
  return touched;
}

std::string EncodeBlock(const Csr& block) {
  const int64_t rows = block.num_rows, nnz = block.nnz();
  std::string out(4 * rows + 8 * nnz, '\0');
  char* p = out.data();
  for (int64_t r = 0; r < rows; ++r) {
    const int32_t len = static_cast<int32_t>(block.degree(r));
    std::memcpy(p + 4 * r, &len, 4);
  }
  if (nnz > 0) {
    std::memcpy(p + 4 * rows, block.col(), 4 * nnz);
    FG_CHECK(block.val() != nullptr) << "EncodeBlock: a block without values";
    std::memcpy(p + 4 * rows + 4 * nnz, block.val(), 4 * nnz);
  }
  return out;
}

absl::StatusOr<Csr> DecodeBlock(const std::string& bytes, int64_t rows, int64_t cols, int peer) {
  const auto bad = [&](const std::string& why) {
    return absl::DataLossError(absl::StrCat("sparse block from grid worker ", peer, ": ", why));
  };
  if (bytes.size() < static_cast<size_t>(4 * rows) || (bytes.size() - 4 * rows) % 8 != 0) {
    return bad(absl::StrCat(bytes.size(), " bytes for ", rows, " rows"));
  }
  const int64_t nnz = static_cast<int64_t>((bytes.size() - 4 * rows) / 8);
  std::vector<int64_t> offsets(rows + 1, 0);
  for (int64_t r = 0; r < rows; ++r) {
    int32_t len;
    std::memcpy(&len, bytes.data() + 4 * r, 4);
    if (len < 0) return bad("a negative row length");
    offsets[r + 1] = offsets[r] + len;
  }
  if (offsets[rows] != nnz) return bad(absl::StrCat("row lengths sum to ", offsets[rows], ", not ", nnz));
  std::vector<int32_t> c(nnz);
  std::vector<float> v(nnz);
  if (nnz > 0) {
    std::memcpy(c.data(), bytes.data() + 4 * rows, 4 * nnz);
    std::memcpy(v.data(), bytes.data() + 4 * rows + 4 * nnz, 4 * nnz);
  }
  for (int32_t x : c) {
    if (x < 0 || x >= cols) return bad(absl::StrCat("column ", x, " outside ", cols));
  }
  return Csr::FromVectors(rows, cols, offsets, c, v);
}

CallName NameCall(int64_t call, int stages) {
  FG_CHECK(stages >= 1 && stages <= kGridSteps) << "a grid product of " << stages << " stages";
  const int per = kGridSteps / stages;
  static_assert(kGridEpochBase * 2 == runtime::kMaxTagEpoch + 1);
  return {kGridEpochBase + static_cast<int>((call / per) % kGridEpochBase), static_cast<int>(call % per) * stages};
}

ag::Var ProductOp(const ag::Var& h, const char* op, int64_t rows, const ProductFn& forward, ProductFn backward,
                  absl::Status* status) {
  auto z = forward(h.value());
  if (!z.ok()) {
    if (status->ok()) *status = z.status();
    return ag::Var(Tensor::Zeros({rows, h.value().row_width()}));
  }
  return ag::MakeResult(std::move(*z), op, {h},
                        [backward = std::move(backward), status, op, hr = ag::GradRef(h)](const Tensor& g) {
                          auto gh = backward(g);
                          if (!gh.ok()) {
                            if (status->ok()) *status = gh.status();
                            return;
                          }
                          ag::AccumulateGrad(hr, *gh, op);
                        });
}

std::string GatherRowBytes(const Tensor& x, const std::vector<int32_t>& idx) {
  const int64_t w = x.row_width();
  std::string out(idx.size() * w * sizeof(float), '\0');
  char* p = out.data();
  for (size_t r = 0; r < idx.size(); ++r) {
    std::memcpy(p + r * w * sizeof(float), x.f32() + idx[r] * w, w * sizeof(float));
  }
  return out;
}

absl::StatusOr<Tensor> BytesToTensor(const std::string& bytes, int64_t rows, int64_t w, int peer) {
  if (bytes.size() != static_cast<size_t>(rows * w) * sizeof(float)) {
    return absl::DataLossError(absl::StrCat("dense block from grid worker ", peer, " has ", bytes.size(),
                                            " bytes, expected ", rows, " x ", w, " floats"));
  }
  Tensor t = Tensor::Empty({rows, w});
  if (rows * w > 0) std::memcpy(t.f32(), bytes.data(), bytes.size());
  return t;
}

void AppendEntry(std::string* out, int32_t row, int32_t col, float weight) {
  char bytes[12];
  std::memcpy(bytes, &row, 4), std::memcpy(bytes + 4, &col, 4), std::memcpy(bytes + 8, &weight, 4);
  out->append(bytes, 12);
}

absl::StatusOr<Csr> DecodeBlockRows(const std::vector<std::string>& got, const VertexBlocks& blocks, int i) {
  const int64_t lo = blocks.Lo(i), size = blocks.Size(i);
  std::vector<int64_t> offsets(size + 1, 0);
  for (size_t q = 0; q < got.size(); ++q) {
    if (got[q].size() % 12 != 0) {
      return absl::DataLossError(absl::StrCat("grid set-up: worker ", q, " sent ", got[q].size(),
                                              " bytes of matrix entries, not a multiple of 12"));
    }
    for (size_t at = 0; at < got[q].size(); at += 12) {
      int32_t r, c;
      float w;
      std::memcpy(&r, got[q].data() + at, 4), std::memcpy(&c, got[q].data() + at + 4, 4);
      std::memcpy(&w, got[q].data() + at + 8, 4);
      if (r < lo || r >= lo + size || c < 0 || c >= blocks.n) {
        return absl::DataLossError(absl::StrCat("grid set-up: worker ", q, " sent entry (", r, ", ", c,
                                                ") outside block ", i, "'s rows [", lo, ", ", lo + size, ")"));
      }
      if (!std::isfinite(w)) {
        return absl::DataLossError(absl::StrCat("grid set-up: worker ", q, " sent weight ", w, " for entry (", r, ", ",
                                                c, ")"));
      }
      ++offsets[r - lo + 1];
    }
  }
  for (int64_t r = 0; r < size; ++r) offsets[r + 1] += offsets[r];
  std::vector<int64_t> next(offsets.begin(), offsets.end() - 1);
  std::vector<int32_t> cols(offsets.back());
  std::vector<float> vals(offsets.back());
  for (const std::string& bytes : got) {
    for (size_t at = 0; at < bytes.size(); at += 12) {
      int32_t r;
      std::memcpy(&r, bytes.data() + at, 4);
      const int64_t e = next[r - lo]++;
      std::memcpy(&cols[e], bytes.data() + at + 4, 4), std::memcpy(&vals[e], bytes.data() + at + 8, 4);
    }
  }
  return Csr::FromVectors(size, blocks.n, offsets, cols, vals);
}

}  // namespace fg::grid
