#include "runtime/tasks/graph_tasks.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "flexgraph/autograd/functions.h"
#include "flexgraph/base/logging.h"
#include "flexgraph/base/status.h"
#include "flexgraph/nn/metrics.h"

namespace fg::runtime {
namespace {

double Ratio(double a, double b) { return b > 0 ? a / b : std::nan(""); }

Tensor Int32(const std::vector<int32_t>& v) { return Tensor::FromVector(v); }

// The batch graph of every vertex's row: graph i owns rows [node_offsets[i], node_offsets[i+1]).
std::vector<int64_t> GraphOfRows(const graph::GraphSet& bs) {
  std::vector<int64_t> of(bs.node_offsets.i64()[bs.num_graphs()]);
  for (int64_t g = 0; g < bs.num_graphs(); ++g) {
    for (int64_t v = bs.NodeBegin(g); v < bs.NodeEnd(g); ++v) of[v] = g;
  }
  return of;
}

}  // namespace

GraphSetTask::GraphSetTask(const graph::Dataset* dataset) : dataset_(dataset) {
  const graph::GraphSet& gs = *dataset->graphs;
  split_of_.assign(gs.num_graphs(), -1);
  const Tensor* splits[3] = {&gs.train, &gs.valid, &gs.test};
  for (int s = 0; s < 3; ++s) {
    for (int64_t k = 0; splits[s]->defined() && k < splits[s]->numel(); ++k) {
      split_of_[splits[s]->i64()[k]] = s;
    }
  }
}

ag::Var GraphSetTask::Loss(const ag::Var& output, int) const {
  return BatchLoss(output, WholeSet(*dataset_));
}

EpochMetrics GraphSetTask::Evaluate(const Tensor& output, const WorkerSum& sum) {
  const GraphBatch whole = WholeSet(*dataset_);
  std::map<std::string, double> splits[3];
  for (int s = 0; s < 3; ++s) splits[s] = Metrics(output, whole, s);
  return SplitMetrics(splits);
}

EpochMetrics GraphSetTask::SplitMetrics(const std::map<std::string, double> (&splits)[3]) const {
  EpochMetrics m;
  const char* names[3] = {"train", "valid", "test"};
  double* main[3] = {&m.train, &m.valid, &m.test};
  for (int s = 0; s < 3; ++s) {
    auto get = [&](const char* key) {
      auto it = splits[s].find(key);
      return it == splits[s].end() ? std::nan("") : it->second;
    };
    *main[s] = kind() == nau::Task::kEdgeClassification && splits[s].count("auc") ? get("auc")
                                                                                  : get("accuracy");
    for (const auto& [key, value] : splits[s]) {
      if (key != "items") m.extra[absl::StrCat(names[s], "_", key)] = value;
    }
  }
  m.test_micro_f1 = m.extra.count("test_accuracy") ? m.extra["test_accuracy"] : std::nan("");
  m.test_macro_f1 = m.valid_macro_f1 = std::nan("");
  return m;
}

std::string GraphSetTask::EpochLine(double loss, const EpochMetrics& m, double seconds) const {
  auto get = [&](const std::string& key) {
    auto it = m.extra.find(key);
    return it == m.extra.end() ? std::nan("") : it->second;
  };
  if (kind() == nau::Task::kEdgeClassification && m.extra.count("valid_efficiency")) {
    return absl::StrFormat("loss %.4f  valid eff %.4f pur %.4f auc %.4f  test eff %.4f pur %.4f  %.3fs",
                           loss, get("valid_efficiency"), get("valid_purity"), get("valid_auc"),
                           get("test_efficiency"), get("test_purity"), seconds);
  }
  return absl::StrFormat("loss %.4f  train %.4f  valid %.4f  test %.4f  %.3fs", loss, m.train, m.valid,
                         m.test, seconds);
}

// --- edge classification ------------------------------------------------------------------------

nau::OptionList EdgeClassificationTask::Options() {
  using nau::OptionType;
  return {{"pos_weight", OptionType::kFloat, "1", "binary edges: weight of a true edge in the loss"},
          {"class_weights", OptionType::kString, "",
           "multi-class edges: comma-separated weight per class (\"\": 1 each)"},
          {"cut", OptionType::kFloat, "0.5", "binary edges: an edge is kept when its score > cut"}};
}

absl::StatusOr<std::unique_ptr<EdgeClassificationTask>> EdgeClassificationTask::Create(
    const graph::Dataset* dataset, const nau::OptionValues& options) {
  if (!dataset->IsGraphSet() || !dataset->graphs->edge_labels.defined()) {
    return absl::InvalidArgumentError(
        absl::StrCat("dataset ", dataset->name, " has no edge labels (edge-label of a graph set)"));
  }
  const graph::GraphSet& gs = *dataset->graphs;
  if (gs.edge_labels.rank() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dataset ", dataset->name, ": edge labels of several tasks per edge are not supported"));
  }
  if (gs.train.defined() == false || gs.train.numel() == 0) {
    return absl::InvalidArgumentError(absl::StrCat("dataset ", dataset->name, ": no training graphs"));
  }
  std::unique_ptr<EdgeClassificationTask> t(new EdgeClassificationTask(dataset));
  t->classes_ = std::max<int64_t>(2, gs.num_edge_classes);
  t->binary_ = t->classes_ == 2;
  FG_ASSIGN_OR_RETURN(double pw, options.Float("pos_weight"));
  FG_ASSIGN_OR_RETURN(double cut, options.Float("cut"));
  if (!(pw > 0)) return absl::InvalidArgumentError(absl::StrCat("pos_weight: ", pw, " is not positive"));
  if (!(cut >= 0 && cut <= 1)) return absl::InvalidArgumentError(absl::StrCat("cut: ", cut, " outside [0, 1]"));
  t->pos_weight_ = static_cast<float>(pw);
  t->cut_ = static_cast<float>(cut);
  t->class_weights_.assign(t->classes_, 1.0f);
  // Loss items per graph: labelled entries of the union Csr's rows of training graphs.
  const GraphBatch whole = WholeSet(*dataset);
  const std::vector<int64_t> labels = t->EntryLabels(whole);
  const int64_t* row_ptr = dataset->Adjacency().row_ptr();
  t->training_items_.assign(gs.num_graphs(), 0);
  for (int64_t g = 0; g < gs.num_graphs(); ++g) {
    if (t->split_of_[g] != 0) continue;
    for (int64_t k = row_ptr[gs.NodeBegin(g)]; k < row_ptr[gs.NodeEnd(g)]; ++k) {
      t->training_items_[g] += labels[k] >= 0;
    }
  }
  const std::string& cw = options.String("class_weights");
  if (!cw.empty()) {
    std::vector<std::string> words = absl::StrSplit(cw, ',');
    if (static_cast<int64_t>(words.size()) != t->classes_) {
      return absl::InvalidArgumentError(absl::StrCat("class_weights: ", words.size(), " weights for ",
                                                     t->classes_, " edge classes"));
    }
    for (size_t c = 0; c < words.size(); ++c) {
      float w;
      if (!absl::SimpleAtof(words[c], &w) || !(w > 0)) {
        return absl::InvalidArgumentError(
            absl::StrCat("class_weights: '", words[c], "' (class ", c, ") is not a positive number"));
      }
      t->class_weights_[c] = w;
    }
  }
  return t;
}

std::vector<int64_t> EdgeClassificationTask::EntryLabels(const GraphBatch& batch) const {
  const graph::GraphSet& bs = *batch.data->graphs;
  const int64_t M = bs.num_edges();
  std::vector<int64_t> out(bs.entry_edges.numel());
  for (size_t k = 0; k < out.size(); ++k) {
    const int64_t e = bs.entry_edges.i64()[k];
    out[k] = e < 0 ? -1 : bs.edge_labels.i64()[e % M];
  }
  return out;
}

ag::Var EdgeClassificationTask::BatchLoss(const ag::Var& output, const GraphBatch& batch,
                                          double denominator) const {
  return RowsLoss(output, batch, nullptr, denominator);
}

ag::Var EdgeClassificationTask::RowsLoss(const ag::Var& output, const GraphBatch& batch,
                                         const std::vector<int32_t>* entries, double denominator) const {
  const Csr& a = batch.data->Adjacency();
  const std::vector<int64_t> labels = EntryLabels(batch);
  const std::vector<int64_t> graph_of = GraphOfRows(*batch.data->graphs);
  std::vector<int64_t> row_of(a.nnz());  // each entry's row (destination)
  for (int64_t r = 0; r < a.num_rows; ++r) {
    std::fill(row_of.begin() + a.row_ptr()[r], row_of.begin() + a.row_ptr()[r + 1], r);
  }
  // Output row j scores entry j, or entries[j].
  std::vector<int64_t> out_labels;
  std::vector<std::vector<int32_t>> rows(classes_);  // labelled output rows of training graphs, by class
  int64_t n = 0;
  const int64_t taken = entries != nullptr ? static_cast<int64_t>(entries->size()) : a.nnz();
  for (int64_t j = 0; j < taken; ++j) {
    const int64_t k = entries != nullptr ? (*entries)[j] : j;
    const int64_t label = InSplit(batch, graph_of[row_of[k]], 0) ? labels[k] : -1;
    out_labels.push_back(std::max<int64_t>(label, 0));
    if (label < 0) continue;
    FG_CHECK(label < classes_) << "edge label " << label << " of " << classes_ << " classes";
    rows[label].push_back(static_cast<int32_t>(j));
    ++n;
  }
  FG_CHECK(output.rows() == static_cast<int64_t>(out_labels.size()))
      << "edge classification: " << output.value().ShapeString() << " output rows for "
      << out_labels.size() << " entries";
  if (n == 0) return ag::Scale(ag::Sum(output), 0.0f);
  const double d = denominator > 0 ? denominator : static_cast<double>(n);
  const Device device = output.value().device();
  ag::Var loss;
  auto add = [&](const ag::Var& term) { loss = loss.defined() ? ag::Add(loss, term) : term; };
  if (binary_) {
    // sum of w_i * bce_i over d = sum over classes of w_c |rows_c| / d * mean bce over rows_c.
    for (int c = 0; c < 2; ++c) {
      if (rows[c].empty()) continue;
      const ag::Var logits = ag::GatherRows(output, Int32(rows[c]).To(device));
      const Tensor target = Tensor::Full({static_cast<int64_t>(rows[c].size())}, static_cast<float>(c));
      const float w = static_cast<float>((c == 1 ? pos_weight_ : 1.0f) * rows[c].size() / d);
      add(ag::Scale(ag::BceWithLogits(logits, target.To(device)), w));
    }
    return loss;
  }
  const ag::Var logp = ag::LogSoftmax(output);
  Tensor all_labels = Tensor::FromVector(out_labels);
  for (int64_t c = 0; c < classes_; ++c) {
    if (rows[c].empty()) continue;
    const float w = static_cast<float>(class_weights_[c] * rows[c].size() / d);
    add(ag::Scale(ag::NllLoss(logp, all_labels.To(device), Int32(rows[c]).To(device)), w));
  }
  return loss;
}

std::vector<double> EdgeClassificationTask::EdgeScores(const Tensor& output, const GraphBatch& batch) const {
  FG_CHECK(binary_) << "edge scores of a multi-class edge task";
  return MeanEdgeScores(output, batch);
}

std::vector<double> EdgeClassificationTask::MeanEdgeScores(const Tensor& output_any, const GraphBatch& batch) const {
  const Tensor output = output_any.To(Device::kCpu);
  const graph::GraphSet& bs = *batch.data->graphs;
  const int64_t M = bs.num_edges();
  const int64_t width = output.row_width();
  FG_CHECK(output.rows() == bs.entry_edges.numel() && width == num_classes())
      << "edge classification: output " << output.ShapeString() << " for "
      << bs.entry_edges.numel() << " entries of " << num_classes() << " scores";
  // Per original edge: the mean of its entries' scores (probabilities for binary, logits else).
  std::vector<double> score(M * width, 0.0);
  std::vector<int> count(M, 0);
  for (int64_t k = 0; k < bs.entry_edges.numel(); ++k) {
    const int64_t e = bs.entry_edges.i64()[k];
    if (e < 0) continue;
    const int64_t edge = e % M;
    ++count[edge];
    for (int64_t j = 0; j < width; ++j) {
      const float x = output.f32()[k * width + j];
      score[edge * width + j] += binary_ ? 1.0 / (1.0 + std::exp(-static_cast<double>(x))) : x;
    }
  }
  for (int64_t e = 0; e < M; ++e) {
    for (int64_t j = 0; j < width; ++j) {
      score[e * width + j] = count[e] > 0 ? score[e * width + j] / count[e] : std::nan("");
    }
  }
  return score;
}

std::map<std::string, double> EdgeClassificationTask::Metrics(const Tensor& output,
                                                              const GraphBatch& batch,
                                                              int split) const {
  const graph::GraphSet& bs = *batch.data->graphs;
  const std::vector<double> score = MeanEdgeScores(output, batch);
  const int64_t width = num_classes();
  double tp = 0, fp = 0, fn = 0, correct = 0, items = 0;
  std::vector<float> scores;
  std::vector<int> truth;
  for (int64_t g = 0; g < bs.num_graphs(); ++g) {
    if (!InSplit(batch, g, split)) continue;
    for (int64_t e = bs.EdgeBegin(g); e < bs.EdgeEnd(g); ++e) {
      const int64_t label = bs.edge_labels.i64()[e];
      if (label < 0 || std::isnan(score[e * width])) continue;
      ++items;
      if (binary_) {
        const double s = score[e];
        const bool kept = s > cut_;
        tp += kept && label == 1;
        fp += kept && label == 0;
        fn += !kept && label == 1;
        correct += kept == (label == 1);
        scores.push_back(static_cast<float>(s));
        truth.push_back(static_cast<int>(label));
      } else {
        int64_t best = 0;
        for (int64_t j = 1; j < width; ++j) best = score[e * width + j] > score[e * width + best] ? j : best;
        correct += best == label;
      }
    }
  }
  std::map<std::string, double> m = {{"accuracy", Ratio(correct, items)}, {"items", items}};
  if (binary_) {
    m["efficiency"] = Ratio(tp, tp + fn);
    m["purity"] = Ratio(tp, tp + fp);
    bool both = false;
    for (int t : truth) both |= t != truth.front();
    m["auc"] = both ? nn::RocAuc(scores, truth) : std::nan("");
  }
  return m;
}

// --- graph classification -----------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<GraphClassificationTask>> GraphClassificationTask::Create(
    const graph::Dataset* dataset) {
  if (!dataset->IsGraphSet() || !dataset->graphs->graph_labels.defined() ||
      dataset->graphs->graph_labels.dtype() != DType::kInt64 ||
      dataset->graphs->graph_labels.rank() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dataset ", dataset->name, " has no class label per graph (int64 graph-label, one task)"));
  }
  if (!dataset->graphs->train.defined() || dataset->graphs->train.numel() == 0) {
    return absl::InvalidArgumentError(absl::StrCat("dataset ", dataset->name, ": no training graphs"));
  }
  std::unique_ptr<GraphClassificationTask> t(new GraphClassificationTask(dataset));
  t->classes_ = std::max<int64_t>(2, dataset->graphs->num_graph_classes);
  const graph::GraphSet& gs = *dataset->graphs;
  t->training_items_.assign(gs.num_graphs(), 0);
  for (int64_t g = 0; g < gs.num_graphs(); ++g) {
    t->training_items_[g] = t->split_of_[g] == 0 && gs.graph_labels.i64()[g] >= 0;
  }
  return t;
}

ag::Var GraphClassificationTask::BatchLoss(const ag::Var& output, const GraphBatch& batch,
                                           double denominator) const {
  const graph::GraphSet& bs = *batch.data->graphs;
  FG_CHECK(output.rows() == batch.num_graphs() && output.row_width() == classes_)
      << "graph classification: output " << output.value().ShapeString() << " for "
      << batch.num_graphs() << " graphs of " << classes_ << " classes";
  std::vector<int32_t> rows;
  for (int64_t g = 0; g < batch.num_graphs(); ++g) {
    const int64_t label = bs.graph_labels.i64()[g];
    if (label >= 0 && InSplit(batch, g, 0)) rows.push_back(static_cast<int32_t>(g));
  }
  if (rows.empty()) return ag::Scale(ag::Sum(output), 0.0f);
  const Device device = output.value().device();
  const ag::Var mean =
      ag::NllLoss(ag::LogSoftmax(output), bs.graph_labels.To(device), Int32(rows).To(device));
  return denominator > 0 ? ag::Scale(mean, static_cast<float>(rows.size() / denominator)) : mean;
}

std::map<std::string, double> GraphClassificationTask::Metrics(const Tensor& output_any,
                                                               const GraphBatch& batch,
                                                               int split) const {
  const Tensor output = output_any.To(Device::kCpu);
  const graph::GraphSet& bs = *batch.data->graphs;
  double correct = 0, items = 0;
  std::vector<float> scores;
  std::vector<int> truth;
  for (int64_t g = 0; g < batch.num_graphs(); ++g) {
    const int64_t label = bs.graph_labels.i64()[g];
    if (label < 0 || !InSplit(batch, g, split)) continue;
    const float* row = output.f32() + g * classes_;
    int64_t best = 0;
    for (int64_t c = 1; c < classes_; ++c) best = row[c] > row[best] ? c : best;
    correct += best == label;
    ++items;
    if (classes_ == 2) {
      scores.push_back(row[1] - row[0]);  // monotone in the softmax probability of class 1
      truth.push_back(static_cast<int>(label));
    }
  }
  std::map<std::string, double> m = {{"accuracy", Ratio(correct, items)}, {"items", items}};
  if (classes_ == 2) {
    bool both = false;
    for (int t : truth) both |= t != truth.front();
    m["auc"] = both ? nn::RocAuc(scores, truth) : std::nan("");
  }
  return m;
}

absl::StatusOr<std::unique_ptr<GraphSetTask>> MakeGraphSetTask(const graph::Dataset* dataset,
                                                               const nau::OptionValues& options) {
  if (dataset->IsGraphSet() && dataset->graphs->edge_labels.defined()) {
    FG_ASSIGN_OR_RETURN(auto t, EdgeClassificationTask::Create(dataset, options));
    return std::unique_ptr<GraphSetTask>(std::move(t));
  }
  FG_ASSIGN_OR_RETURN(auto t, GraphClassificationTask::Create(dataset));
  return std::unique_ptr<GraphSetTask>(std::move(t));
}

}  // namespace fg::runtime
