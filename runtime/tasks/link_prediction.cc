#include "runtime/tasks/link_prediction.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "flexgraph/autograd/functions.h"
#include "flexgraph/base/logging.h"
#include "flexgraph/base/parallel.h"
#include "flexgraph/base/rng.h"
#include "flexgraph/base/status.h"

namespace fg::runtime {
namespace {

// Stream tags of the task's random draws.
constexpr uint64_t kTrainNegatives = 0x7EA1;
constexpr uint64_t kEvalNegatives = 0xE7A1;

// Appends the (src, dst) pairs of an int64 [k, 2] tensor, checking their range.
absl::Status AppendPairs(const Tensor& pairs, const std::string& what, int64_t num_src,
                         int64_t num_dst, std::vector<int32_t>* src, std::vector<int32_t>* dst) {
  if (!pairs.defined() || pairs.numel() == 0) return absl::OkStatus();
  if (pairs.rank() != 2 || pairs.dim(1) != 2 || pairs.dtype() != DType::kInt64) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": expected int64 (src, dst) pairs, got ", ShapeToString(pairs.shape())));
  }
  for (int64_t k = 0; k < pairs.dim(0); ++k) {
    const int64_t s = pairs.i64()[2 * k], d = pairs.i64()[2 * k + 1];
    if (s < 0 || s >= num_src || d < 0 || d >= num_dst) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": pair ", k, " (", s, ", ", d,
                                                     ") outside [0, ", num_src, ") x [0, ",
                                                     num_dst, ")"));
    }
    src->push_back(static_cast<int32_t>(s));
    dst->push_back(static_cast<int32_t>(d));
  }
  return absl::OkStatus();
}

std::vector<std::vector<int32_t>> SortedLists(int64_t num_src,
                                              const std::vector<const std::vector<int32_t>*>& srcs,
                                              const std::vector<const std::vector<int32_t>*>& dsts) {
  std::vector<std::vector<int32_t>> lists(num_src);
  for (size_t p = 0; p < srcs.size(); ++p) {
    for (size_t k = 0; k < srcs[p]->size(); ++k) lists[(*srcs[p])[k]].push_back((*dsts[p])[k]);
  }
  for (auto& l : lists) {
    std::sort(l.begin(), l.end());
    l.erase(std::unique(l.begin(), l.end()), l.end());
  }
  return lists;
}

// The pairs (rows[k], cols[k]) as a rows x rows matrix, entries grouped by row in pair order;
// entry_of[k] receives the entry index of pair k.
SparseMatrixPtr PairMatrix(int64_t num_rows, const std::vector<int32_t>& rows,
                           const std::vector<int32_t>& cols, std::vector<int64_t>* entry_of) {
  std::vector<int64_t> offsets(num_rows + 1, 0);
  for (int32_t r : rows) ++offsets[r + 1];
  for (int64_t r = 0; r < num_rows; ++r) offsets[r + 1] += offsets[r];
  std::vector<int64_t> next(offsets.begin(), offsets.end() - 1);
  std::vector<int32_t> indices(rows.size());
  entry_of->resize(rows.size());
  for (size_t k = 0; k < rows.size(); ++k) {
    const int64_t e = next[rows[k]]++;
    indices[e] = cols[k];
    (*entry_of)[k] = e;
  }
  return std::make_shared<const SparseMatrix>(Csr::FromVectors(num_rows, num_rows, offsets, indices));
}

}  // namespace

nau::OptionList LinkPredictionTask::Options() {
  using nau::OptionType;
  return {{"relation", OptionType::kString, "", "predicted relation src___name___dst (\"\": the only edge split)"},
          {"loss", OptionType::kString, "bce", "bce (binary cross-entropy) or margin (PinSage's max-margin)"},
          {"margin", OptionType::kFloat, "0.1", "margin of the margin loss"},
          {"negatives", OptionType::kInt, "4", "negative destinations per training pair and epoch"},
          {"eval_negatives", OptionType::kInt, "100", "negatives per validation/test pair (hits@10)"}};
}

absl::StatusOr<std::unique_ptr<LinkPredictionTask>> LinkPredictionTask::Create(
    graph::Dataset* dataset, const flexgraph::RunConfig& config) {
  std::unique_ptr<LinkPredictionTask> t(new LinkPredictionTask());
  const std::string& name = config.dataset().path();
  const nau::OptionValues options(
      Options(), std::map<std::string, std::string>(config.model().options().begin(),
                                                    config.model().options().end()));
  std::string key = options.String("relation");
  if (key.empty()) {
    if (dataset->edge_splits.size() != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "dataset ", name, " has ", dataset->edge_splits.size(),
          " edge splits: choose the predicted relation with --model_opt relation=<src___name___dst>"));
    }
    key = dataset->edge_splits.begin()->first;
  }
  graph::HeteroGraph& g = dataset->graph;
  const graph::Relation* found = g.FindRelation(key);
  if (found == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("relation: '", key, "' is not a relation of dataset ", name));
  }
  key = found->Key();
  auto split = dataset->edge_splits.find(key);
  if (split == dataset->edge_splits.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("split: dataset ", name, " has no edge split for relation ", key));
  }
  const int rel_index = static_cast<int>(found - g.relations.data());
  graph::Relation& rel = g.relations[rel_index];
  t->relation_ = key;
  t->src_type_ = rel.src_type;
  t->dst_type_ = rel.dst_type;
  t->num_src_ = g.NumNodes(rel.src_type);
  t->num_dst_ = g.NumNodes(rel.dst_type);
  const nau::VertexSpace space(g);
  t->src_offset_ = space.type_offset(space.TypeIndex(rel.src_type));
  t->dst_offset_ = space.type_offset(space.TypeIndex(rel.dst_type));
  t->seed_ = config.train().seed();

  const std::string& loss = options.String("loss");
  if (loss == "bce") {
    t->loss_ = LossKind::kBce;
  } else if (loss == "margin") {
    t->loss_ = LossKind::kMargin;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("link prediction option 'loss' expects bce or margin, got '", loss, "'"));
  }
  FG_ASSIGN_OR_RETURN(double margin, options.Float("margin"));
  if (!(margin >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("link prediction option 'margin' must not be negative, got ", margin));
  }
  t->margin_ = static_cast<float>(margin);
  FG_ASSIGN_OR_RETURN(int64_t negatives, options.Int("negatives"));
  FG_ASSIGN_OR_RETURN(int64_t eval_negatives, options.Int("eval_negatives"));
  if (negatives < 1 || negatives > 1000) {
    return absl::InvalidArgumentError(
        absl::StrCat("link prediction option 'negatives' must lie in [1, 1000], got ", negatives));
  }
  if (eval_negatives < 1 || eval_negatives > 10000) {
    return absl::InvalidArgumentError(absl::StrCat(
        "link prediction option 'eval_negatives' must lie in [1, 10000], got ", eval_negatives));
  }
  t->negatives_ = static_cast<int>(negatives);
  t->eval_negatives_ = static_cast<int>(eval_negatives);

  const graph::EdgeSplit& es = split->second;
  const std::string where = absl::StrCat("split of ", key);
  t->partitioned_ = dataset->part.has_value();
  FG_RETURN_IF_ERROR(AppendPairs(es.train, where + " (train)", t->num_src_, t->num_dst_,
                                 &t->train_src_, &t->train_dst_));
  FG_RETURN_IF_ERROR(AppendPairs(es.valid, where + " (valid)", t->num_src_, t->num_dst_,
                                 &t->valid_.src, &t->valid_.dst));
  FG_RETURN_IF_ERROR(AppendPairs(es.test, where + " (test)", t->num_src_, t->num_dst_,
                                 &t->test_.src, &t->test_.dst));
  // Interactions known in training, and in any split or the stored graph (for true negatives).
  std::vector<int32_t> graph_src, graph_dst;
  if (t->partitioned_) {
    // A part holds the pairs of the sources it owns; its relation holds the training edges.
    auto total = dataset->part->train_pairs_total.find(key);
    t->global_train_ = total == dataset->part->train_pairs_total.end() ? 0 : total->second;
    if (t->global_train_ < 1) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": no training pairs in any part of ", name));
    }
  } else {
    t->global_train_ = t->num_train();
    if (t->train_src_.empty() || t->test_.src.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": needs training and test pairs (has ", t->train_src_.size(),
                       " and ", t->test_.src.size(), ")"));
    }
    for (int64_t s = 0; s < rel.by_src.num_rows; ++s) {
      for (int64_t e = rel.by_src.row_ptr()[s]; e < rel.by_src.row_ptr()[s + 1]; ++e) {
        graph_src.push_back(static_cast<int32_t>(s));
        graph_dst.push_back(rel.by_src.col()[e]);
      }
    }
    // Message passing sees the training links only.
    FG_RETURN_IF_ERROR(graph::KeepTrainingEdges(dataset, key));
  }
  t->train_seen_ = SortedLists(t->num_src_, {&t->train_src_}, {&t->train_dst_});
  t->all_seen_ = SortedLists(t->num_src_, {&t->train_src_, &t->valid_.src, &t->test_.src, &graph_src},
                             {&t->train_dst_, &t->valid_.dst, &t->test_.dst, &graph_dst});

  // Fixed evaluation negatives.
  int split_id = 0;
  for (EvalSet* set : {&t->valid_, &t->test_}) {
    const int64_t n = static_cast<int64_t>(set->src.size());
    const int q = t->eval_negatives_;
    set->neg.assign(n * q, 0);
    ParallelFor(0, n, [&](int64_t i) {
      RandomStream rng(t->seed_, MixKey(kEvalNegatives, split_id, static_cast<uint64_t>(set->src[i]),
                                        static_cast<uint64_t>(set->dst[i])));
      for (int j = 0; j < q; ++j) set->neg[i * q + j] = t->SampleNegative(t->all_seen_[set->src[i]], rng);
    });
    ++split_id;
  }
  return t;
}

int32_t LinkPredictionTask::SampleNegative(const std::vector<int32_t>& exclude,
                                           RandomStream& rng) const {
  int32_t d = 0;
  for (int attempt = 0; attempt < 64; ++attempt) {
    d = static_cast<int32_t>(rng.Below(static_cast<uint64_t>(num_dst_)));
    if (!std::binary_search(exclude.begin(), exclude.end(), d)) break;
  }
  return d;
}

absl::Status LinkPredictionTask::SetOutputRows(const Tensor& roots) {
  const int64_t lo = std::min(src_offset_, dst_offset_);
  const int64_t hi = std::max(src_offset_ + num_src_, dst_offset_ + num_dst_);
  std::vector<int32_t> row_of(hi - lo, -1);
  for (int64_t r = 0; r < roots.numel(); ++r) {
    const int64_t v = roots.i64()[r];
    if (v >= lo && v < hi) row_of[v - lo] = static_cast<int32_t>(r);
  }
  auto fill = [&](int64_t offset, int64_t n, const std::string& type,
                  std::vector<int32_t>* rows) -> absl::Status {
    rows->assign(n, -1);
    for (int64_t i = 0; i < n; ++i) {
      (*rows)[i] = row_of[offset + i - lo];
      if ((*rows)[i] < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "link prediction: the model outputs no embedding for ", type, " ", i,
            " (its last layer must have every vertex of ", src_type_, " and ", dst_type_, " as a root)"));
      }
    }
    return absl::OkStatus();
  };
  FG_RETURN_IF_ERROR(fill(src_offset_, num_src_, src_type_, &src_row_));
  return fill(dst_offset_, num_dst_, dst_type_, &dst_row_);
}

void LinkPredictionTask::TrainNegatives(int64_t i, int epoch, int32_t* dst) const {
  RandomStream rng(seed_, MixKey(kTrainNegatives, static_cast<uint64_t>(epoch),
                                 static_cast<uint64_t>(train_src_[i]), static_cast<uint64_t>(train_dst_[i])));
  for (int j = 0; j < negatives_; ++j) dst[j] = SampleNegative(train_seen_[train_src_[i]], rng);
}

ag::Var LinkPredictionTask::Loss(const ag::Var& embeddings, int epoch) const {
  // This worker's training pairs: those of a part's sources, else every share_size_-th one.
  const int64_t total = num_train();
  const int64_t n =
      partitioned_ ? total : total / share_size_ + (share_rank_ < total % share_size_ ? 1 : 0);
  if (n == 0) return ag::Scale(ag::Sum(embeddings), 0.0f);  // still runs the exchanges
  std::vector<int64_t> pairs(n);
  for (int64_t k = 0; k < n; ++k) pairs[k] = partitioned_ ? k : k * share_size_ + share_rank_;
  auto src_row = [&](int32_t s) { return src_row_[s]; };
  auto dst_row = [&](int32_t t) { return dst_row_[t]; };
  const int64_t rows = embeddings.rows();
  if (positives_ == nullptr || positives_->csr().num_rows != rows) {  // the same pairs every epoch
    std::vector<int32_t> src(n), dst(n);
    for (int64_t k = 0; k < n; ++k) {
      src[k] = src_row_[train_src_[pairs[k]]];
      dst[k] = dst_row_[train_dst_[pairs[k]]];
    }
    positives_ = PairMatrix(rows, src, dst, &positive_entry_);
  }
  return PairLoss(embeddings, pairs, src_row, dst_row, epoch,
                  static_cast<float>(n) / static_cast<float>(global_train_), positives_, positive_entry_);
}

Tensor LinkPredictionTask::BatchRoots(const Tensor& items, int epoch) const {
  std::vector<int64_t> ids;
  std::vector<int32_t> neg(negatives_);
  for (int64_t k = 0; k < items.numel(); ++k) {
    const int64_t i = items.i64()[k];
    ids.push_back(src_offset_ + train_src_[i]);
    ids.push_back(dst_offset_ + train_dst_[i]);
    TrainNegatives(i, epoch, neg.data());
    for (int32_t t : neg) ids.push_back(dst_offset_ + t);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return Tensor::FromVector(ids);
}

ag::Var LinkPredictionTask::BatchLoss(const ag::Var& output, const Tensor& roots, const Tensor& items,
                                      int epoch) const {
  auto row = [&](int64_t global) {
    const int64_t* at = std::lower_bound(roots.i64(), roots.i64() + roots.numel(), global);
    FG_CHECK(at != roots.i64() + roots.numel() && *at == global) << "vertex " << global << " not in the batch";
    return static_cast<int32_t>(at - roots.i64());
  };
  std::vector<int64_t> pairs(items.i64(), items.i64() + items.numel());
  return PairLoss(output, pairs, [&](int32_t s) { return row(src_offset_ + s); },
                  [&](int32_t t) { return row(dst_offset_ + t); }, epoch, 1.0f, nullptr, {});
}

ag::Var LinkPredictionTask::PairLoss(const ag::Var& embeddings, const std::vector<int64_t>& pairs,
                                     const std::function<int32_t(int32_t)>& src_row,
                                     const std::function<int32_t(int32_t)>& dst_row, int epoch,
                                     float scale, SparseMatrixPtr positives,
                                     const std::vector<int64_t>& positive_entry) const {
  const int64_t n = static_cast<int64_t>(pairs.size());
  const int q = negatives_;
  const int64_t rows = embeddings.rows();
  std::vector<int64_t> built_entry;
  if (positives == nullptr) {
    std::vector<int32_t> src(n), dst(n);
    for (int64_t k = 0; k < n; ++k) {
      src[k] = src_row(train_src_[pairs[k]]);
      dst[k] = dst_row(train_dst_[pairs[k]]);
    }
    positives = PairMatrix(rows, src, dst, &built_entry);
  }
  const std::vector<int64_t>& pos_entry = built_entry.empty() ? positive_entry : built_entry;
  // Negative j of positive k is entry k * q + j; its draws are keyed by the pair (source ids).
  std::vector<int32_t> neg_src(n * q), neg_dst(n * q);
  ParallelFor(0, n, [&](int64_t k) {
    const int64_t i = pairs[k];
    TrainNegatives(i, epoch, neg_dst.data() + k * q);
    for (int j = 0; j < q; ++j) {
      neg_src[k * q + j] = src_row(train_src_[i]);
      neg_dst[k * q + j] = dst_row(neg_dst[k * q + j]);
    }
  });
  std::vector<int64_t> negative_entry;
  SparseMatrixPtr negatives = PairMatrix(rows, neg_src, neg_dst, &negative_entry);
  // Scores as SDDMM over the pair matrices: no [pairs, d] gathers, forward or backward.
  ag::Var s_pos = ag::Reshape(ag::SddmmDot(positives, embeddings, embeddings), {n, 1});
  ag::Var s_neg = ag::Reshape(ag::SddmmDot(negatives, embeddings, embeddings), {n * q, 1});
  if (loss_ == LossKind::kMargin) {
    // The positive of each negative entry, in the positives' entry order.
    std::vector<int32_t> owner(n * q);
    for (int64_t k = 0; k < n * q; ++k) {
      owner[negative_entry[k]] = static_cast<int32_t>(pos_entry[k / q]);
    }
    ag::Var gap = ag::Sub(s_neg, ag::GatherRows(s_pos, Tensor::FromVector(owner)));
    const Tensor margin = Tensor::Full({1}, margin_).To(gap.value().device());
    return ag::Scale(ag::Mean(ag::Relu(ag::AddBias(gap, ag::Var(margin)))), scale);
  }
  const Device device = s_pos.value().device();
  ag::Var l_pos = ag::BceWithLogits(s_pos, Tensor::Full({n}, 1.0f).To(device));
  ag::Var l_neg = ag::BceWithLogits(s_neg, Tensor::Zeros({n * q}, DType::kFloat32, device));
  return ag::Scale(ag::Add(l_pos, l_neg), 0.5f * scale);
}

}  // namespace fg::runtime
