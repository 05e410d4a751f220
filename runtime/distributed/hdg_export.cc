#include "runtime/distributed/hdg_export.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/logging.h"
#include "flexgraph/base/status.h"
#include "flexgraph/graph/io/npy.h"

namespace fg::runtime {
namespace {

// One HDG as plain arrays: what a worker sends and what is written.
struct Forest {
  std::vector<int64_t> roots;
  // Per level 1..L (index k - 1).
  std::vector<std::vector<int64_t>> indptr;
  std::vector<std::vector<int32_t>> indices;
  std::vector<std::vector<float>> weights;
  std::vector<uint8_t> weighted;
  int levels() const { return static_cast<int>(indptr.size()); }
};

Forest FromHdg(const hdg::Hdg& h) {
  Forest f;
  for (int64_t r = 0; r < h.num_roots(); ++r) f.roots.push_back(h.roots().i32()[r]);
  for (int k = 1; k <= h.num_levels(); ++k) {
    const Csr& c = h.level(k).csr();
    f.indptr.emplace_back(c.row_ptr(), c.row_ptr() + c.num_rows + 1);
    f.indices.emplace_back(c.col(), c.col() + c.nnz());
    const Tensor& w = h.level(k).weights;
    f.weighted.push_back(w.defined());
    f.weights.emplace_back();
    if (w.defined()) f.weights.back().assign(w.f32(), w.f32() + w.numel());
  }
  return f;
}

std::string Encode(const std::vector<Forest>& layers, const Tensor& ids, const Tensor& keys) {
  std::string out;
  AppendVector(&out, std::vector<int64_t>(ids.i64(), ids.i64() + ids.numel()));
  AppendVector(&out, std::vector<int64_t>(keys.i64(), keys.i64() + keys.numel()));
  AppendVector(&out, std::vector<int64_t>{static_cast<int64_t>(layers.size())});
  for (const Forest& f : layers) {
    AppendVector(&out, f.roots);
    AppendVector(&out, f.weighted);
    for (int k = 0; k < f.levels(); ++k) {
      AppendVector(&out, f.indptr[k]);
      AppendVector(&out, f.indices[k]);
      AppendVector(&out, f.weights[k]);
    }
  }
  return out;
}

absl::Status Decode(const std::string& in, int worker, std::unordered_map<int64_t, int64_t>* source,
                    std::vector<Forest>* layers) {
  size_t pos = 0;
  std::vector<int64_t> ids, keys, count;
  FG_RETURN_IF_ERROR(TakeVector(in, &pos, "export_hdg", worker, &ids));
  FG_RETURN_IF_ERROR(TakeVector(in, &pos, "export_hdg", worker, &keys));
  FG_RETURN_IF_ERROR(TakeVector(in, &pos, "export_hdg", worker, &count));
  if (ids.size() != keys.size() || count.size() != 1) {
    return absl::DataLossError(absl::StrCat("export_hdg: malformed from worker ", worker));
  }
  for (size_t i = 0; i < ids.size(); ++i) (*source)[ids[i]] = keys[i];
  // Each layer takes at least two vectors (16 bytes), each level three more.
  if (count[0] < 0 || count[0] > static_cast<int64_t>((in.size() - pos) / 16)) {
    return absl::DataLossError(absl::StrCat("export_hdg: worker ", worker, " sent ", count[0], " layers in ",
                                            in.size() - pos, " bytes"));
  }
  layers->resize(count[0]);
  for (size_t layer = 0; layer < layers->size(); ++layer) {
    Forest& f = (*layers)[layer];
    FG_RETURN_IF_ERROR(TakeVector(in, &pos, "export_hdg", worker, &f.roots));
    FG_RETURN_IF_ERROR(TakeVector(in, &pos, "export_hdg", worker, &f.weighted));
    if (f.weighted.empty() || f.weighted.size() > (in.size() - pos) / 24) {
      return absl::DataLossError(absl::StrCat("export_hdg: worker ", worker, " sent layer ", layer, " with ",
                                              f.weighted.size(), " levels in ", in.size() - pos, " bytes"));
    }
    f.indptr.resize(f.weighted.size());
    f.indices.resize(f.weighted.size());
    f.weights.resize(f.weighted.size());
    for (int k = 0; k < f.levels(); ++k) {
      FG_RETURN_IF_ERROR(TakeVector(in, &pos, "export_hdg", worker, &f.indptr[k]));
      FG_RETURN_IF_ERROR(TakeVector(in, &pos, "export_hdg", worker, &f.indices[k]));
      FG_RETURN_IF_ERROR(TakeVector(in, &pos, "export_hdg", worker, &f.weights[k]));
    }
    // Every level's offsets ascend from 0 to its children, each level's rows are its parents'
    // children (the top level's, the roots), and weights go with the weighted levels.
    for (int k = 0; k < f.levels(); ++k) {
      const std::vector<int64_t>& ptr = f.indptr[k];
      const int64_t rows = k + 1 == f.levels() ? static_cast<int64_t>(f.roots.size()) : -1;
      const int64_t below = k == 0 ? -1 : static_cast<int64_t>(f.indptr[k - 1].size()) - 1;
      bool ok = !ptr.empty() && ptr[0] == 0 && ptr.back() == static_cast<int64_t>(f.indices[k].size()) &&
                (rows < 0 || static_cast<int64_t>(ptr.size()) == rows + 1) &&
                f.weights[k].size() == (f.weighted[k] ? f.indices[k].size() : 0);
      for (size_t r = 1; ok && r < ptr.size(); ++r) ok = ptr[r] >= ptr[r - 1];
      for (size_t e = 0; ok && k > 0 && e < f.indices[k].size(); ++e) ok = f.indices[k][e] >= 0 && f.indices[k][e] < below;
      if (!ok) {
        return absl::DataLossError(absl::StrCat("export_hdg: worker ", worker, " sent layer ", layer, " level ",
                                                k + 1, " malformed"));
      }
    }
  }
  return absl::OkStatus();
}

// Every root and level-1 child that `worker` sent is in some worker's table.
absl::Status KnownVertices(const std::vector<Forest>& layers, int worker,
                           const std::unordered_map<int64_t, int64_t>& source) {
  for (size_t layer = 0; layer < layers.size(); ++layer) {
    const Forest& f = layers[layer];
    for (const int64_t v : f.roots) {
      if (!source.contains(v)) {
        return absl::DataLossError(absl::StrCat("export_hdg: worker ", worker, " sent root ", v, " of layer ", layer,
                                                ", which is in no worker's table"));
      }
    }
    for (const int32_t v : f.indices[0]) {
      if (!source.contains(v)) {
        return absl::DataLossError(absl::StrCat("export_hdg: worker ", worker, " sent vertex ", v, " in layer ", layer,
                                                ", which is in no worker's table"));
      }
    }
  }
  return absl::OkStatus();
}

int64_t SourceOf(const std::unordered_map<int64_t, int64_t>& source, int64_t v) {
  const auto it = source.find(v);
  FG_CHECK(it != source.end()) << "export_hdg: vertex " << v << " is in no worker's table";
  return it->second;
}

// Appends row `row` of level k (1-based) of `src` to `out` with its subtree; returns its new row.
int64_t Append(const Forest& src, int k, int64_t row, const std::unordered_map<int64_t, int64_t>& source,
               Forest* out) {
  const int i = k - 1;
  const int64_t mine = static_cast<int64_t>(out->indptr[i].size()) - 1;
  std::vector<std::pair<int32_t, float>> children;  // (child, weight)
  for (int64_t e = src.indptr[i][row]; e < src.indptr[i][row + 1]; ++e) {
    const int32_t c = src.indices[i][e];
    children.emplace_back(k == 1 ? static_cast<int32_t>(SourceOf(source, c))
                                 : static_cast<int32_t>(Append(src, k - 1, c, source, out)),
                          src.weighted[i] ? src.weights[i][e] : 0.0f);
  }
  // A flat neighbourhood is a set: its order follows the workers' vertex ids (GCN places the root
  // among its neighbours by id), so it is written by source id.
  if (src.levels() == 1) std::sort(children.begin(), children.end());
  for (const auto& [c, w] : children) {
    out->indices[i].push_back(c);
    if (src.weighted[i]) out->weights[i].push_back(w);
  }
  out->indptr[i].push_back(static_cast<int64_t>(out->indices[i].size()));
  return mine;
}

absl::Status Write(const std::vector<std::vector<Forest>>& parts, const std::unordered_map<int64_t, int64_t>& source,
                   const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("export_hdg: cannot create ", dir, ": ", ec.message()));
  for (size_t layer = 0; layer < parts[0].size(); ++layer) {
    const Forest& first = parts[0][layer];
    Forest out;
    out.weighted = first.weighted;
    out.indptr.assign(first.levels(), std::vector<int64_t>{0});
    out.indices.resize(first.levels());
    out.weights.resize(first.levels());
    // Every worker's roots, by source id.
    std::vector<std::tuple<int64_t, size_t, int64_t>> roots;
    for (size_t w = 0; w < parts.size(); ++w) {
      const Forest& f = parts[w][layer];
      if (f.levels() != first.levels()) {
        return absl::DataLossError(absl::StrCat("export_hdg: layer ", layer, " has ", f.levels(), " levels on worker ",
                                                w, ", ", first.levels(), " on worker 0"));
      }
      for (size_t r = 0; r < f.roots.size(); ++r) roots.emplace_back(SourceOf(source, f.roots[r]), w, r);
    }
    std::sort(roots.begin(), roots.end());
    for (const auto& [id, w, r] : roots) {
      out.roots.push_back(id);
      Append(parts[w][layer], first.levels(), static_cast<int64_t>(r), source, &out);
    }
    const std::string prefix = absl::StrCat(dir, "/layer", layer, ".");
    FG_RETURN_IF_ERROR(graph::io::WriteNpy(prefix + "roots.npy", Tensor::FromVector(out.roots)));
    for (int k = 1; k <= out.levels(); ++k) {
      const std::string level = absl::StrCat(prefix, "level", k, ".");
      FG_RETURN_IF_ERROR(graph::io::WriteNpy(level + "indptr.npy", Tensor::FromVector(out.indptr[k - 1])));
      FG_RETURN_IF_ERROR(graph::io::WriteNpy(level + "indices.npy", Tensor::FromVector(out.indices[k - 1])));
      if (out.weighted[k - 1]) {
        FG_RETURN_IF_ERROR(graph::io::WriteNpy(level + "weights.npy", Tensor::FromVector(out.weights[k - 1])));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ExportHdgs(Communicator* comm, const std::vector<const hdg::Hdg*>& layers, const Tensor& table_ids,
                        const Tensor& table_keys, const std::string& dir) {
  std::vector<Forest> mine;
  for (const hdg::Hdg* h : layers) mine.push_back(FromHdg(*h));
  const int workers = comm ? comm->size() : 1, me = comm ? comm->rank() : 0;
  std::vector<std::string> received(1, Encode(mine, table_ids, table_keys));
  if (workers > 1) {
    std::vector<std::string> send(workers);
    send[0] = std::move(received[0]);
    FG_ASSIGN_OR_RETURN(received, comm->AllToAllV(std::move(send), MakeTag(0, 0, 0, TrafficKind::kControl, 11)));
    if (me != 0) return absl::OkStatus();
  }
  std::unordered_map<int64_t, int64_t> source;
  std::vector<std::vector<Forest>> parts(workers);
  for (int w = 0; w < workers; ++w) FG_RETURN_IF_ERROR(Decode(received[w], w, &source, &parts[w]));
  for (int w = 0; w < workers; ++w) {
    FG_RETURN_IF_ERROR(KnownVertices(parts[w], w, source));
    if (parts[w].size() != parts[0].size()) {
      return absl::DataLossError(absl::StrCat("export_hdg: worker ", w, " sent ", parts[w].size(), " layers, worker 0 ",
                                              parts[0].size()));
    }
  }
  return Write(parts, source, dir);
}

}  // namespace fg::runtime
