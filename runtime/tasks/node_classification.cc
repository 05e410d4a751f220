#include "runtime/tasks/node_classification.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "flexgraph/autograd/functions.h"
#include "flexgraph/base/status.h"
#include "flexgraph/nn/metrics.h"
#include "nau/context.h"

namespace fg::runtime {

absl::StatusOr<std::unique_ptr<NodeClassificationTask>> NodeClassificationTask::Create(
    const graph::Dataset& dataset, const std::string& target, const std::string& dataset_name) {
  auto lab = dataset.labels.find(target);
  if (lab == dataset.labels.end() || !lab->second.defined()) {
    return absl::InvalidArgumentError(
        absl::StrCat("dataset ", dataset_name, " has no labels for node type '", target, "'"));
  }
  auto split = dataset.splits.find(target);
  if (split == dataset.splits.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("split: dataset ", dataset_name, " has no split for node type '", target, "'"));
  }
  std::unique_ptr<NodeClassificationTask> t(new NodeClassificationTask());
  t->dataset_ = &dataset;
  t->target_ = target;
  t->dataset_name_ = dataset_name;
  const nau::VertexSpace space(dataset.graph);
  const int type = space.TypeIndex(target);
  t->base_ = space.type_offset(type);
  t->num_target_ = space.type_size(type);
  t->num_classes_ = dataset.num_classes.count(target) ? dataset.num_classes.at(target) : 0;
  if (t->num_classes_ < 2 || t->num_classes_ > t->num_target_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "labels of node type '", target, "' in dataset ", dataset_name, " make ", t->num_classes_,
        " classes for ", t->num_target_, " vertices (labels are 0, 1, ...; is one out of range?)"));
  }
  t->global_train_ = split->second.train.defined() ? split->second.train.numel() : 0;
  if (dataset.part) {  // a part labels its own vertices and counts every part's training ones
    t->first_label_ = dataset.part->begin(type);
    auto total = dataset.part->train_total.find(target);
    t->global_train_ = total == dataset.part->train_total.end() ? 0 : total->second;
  }
  if (t->global_train_ == 0) {
    return absl::InvalidArgumentError(absl::StrCat("split: empty training split in ", dataset_name));
  }
  const Tensor& train = split->second.train;
  for (int64_t k = 0; train.defined() && k < train.numel(); ++k) {
    t->train_ids_.push_back(t->base_ + train.i64()[k]);
  }
  std::sort(t->train_ids_.begin(), t->train_ids_.end());
  return t;
}

absl::Status NodeClassificationTask::SetOutputRows(const Tensor& roots) {
  const Tensor& labels = dataset_->labels.at(target_);
  const graph::Split& split = dataset_->splits.at(target_);
  labels_ = Tensor::Empty({roots.numel()}, DType::kInt64);
  placed_labels_ = placed_train_rows_ = Tensor();
  for (int64_t k = 0; k < roots.numel(); ++k) {
    labels_.i64()[k] = labels.i64()[roots.i64()[k] - base_ - first_label_];
  }
  // Split membership per target vertex (a vertex is in at most one split, once).
  std::vector<const char*> member(num_target_, nullptr);
  auto rows_of = [&](const Tensor& ids, const char* what, Tensor* out) -> absl::Status {
    std::vector<int32_t> rows;
    const int64_t n = ids.defined() ? ids.numel() : 0;
    for (int64_t k = 0; k < n; ++k) {
      const int64_t v = ids.i64()[k];
      if (v < 0 || v >= num_target_) {
        return absl::InvalidArgumentError(absl::StrCat(dataset_name_, ": ", what, " split: node id ",
                                                       v, " outside [0, ", num_target_, ")"));
      }
      if (member[v] != nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(dataset_name_, ": ", what, " split: node ", v,
                                                       " is also in the ", member[v], " split"));
      }
      member[v] = what;
      const int64_t label = labels.i64()[v - first_label_];
      if (label < 0 || label >= num_classes_) {
        return absl::InvalidArgumentError(absl::StrCat(
            dataset_name_, ": ", what, " split: node ", v, " of type '", target_, "' has label ",
            label, ", outside [0, ", num_classes_, ")"));
      }
      const int64_t g = base_ + v;
      const int64_t* it = std::lower_bound(roots.i64(), roots.i64() + roots.numel(), g);
      if (it != roots.i64() + roots.numel() && *it == g) {
        rows.push_back(static_cast<int32_t>(it - roots.i64()));
      }
    }
    *out = Tensor::FromVector(rows);
    return absl::OkStatus();
  };
  FG_RETURN_IF_ERROR(rows_of(split.train, "train", &train_rows_));
  FG_RETURN_IF_ERROR(rows_of(split.valid, "valid", &valid_rows_));
  return rows_of(split.test, "test", &test_rows_);
}

ag::Var NodeClassificationTask::Loss(const ag::Var& output, int) const {
  if (train_rows_.numel() == 0) {
    return ag::Scale(ag::Sum(output), 0.0f);  // no local labels: still runs the exchanges
  }
  // Labels were checked against the classes by SetOutputRows.
  if (!placed_labels_.defined() || placed_labels_.device() != output.value().device()) {
    placed_labels_ = labels_.To(output.value().device());
    placed_train_rows_ = train_rows_.To(output.value().device());
  }
  ag::Var loss = ag::NllLoss(ag::LogSoftmax(output), placed_labels_, placed_train_rows_);
  if (train_rows_.numel() == global_train_) return loss;
  return ag::Scale(loss, static_cast<float>(train_rows_.numel()) / global_train_);
}

int64_t NodeClassificationTask::NumTrainingItems() const {
  return static_cast<int64_t>(train_ids_.size());
}

Tensor NodeClassificationTask::BatchRoots(const Tensor& items, int) const {
  std::vector<int64_t> ids(items.numel());
  for (int64_t k = 0; k < items.numel(); ++k) ids[k] = train_ids_[items.i64()[k]];
  std::sort(ids.begin(), ids.end());
  return Tensor::FromVector(ids);
}

ag::Var NodeClassificationTask::BatchLoss(const ag::Var& output, const Tensor& roots, const Tensor&,
                                          int) const {
  const Tensor& labels = dataset_->labels.at(target_);
  Tensor batch_labels = Tensor::Empty({roots.numel()}, DType::kInt64);
  Tensor rows = Tensor::Empty({roots.numel()}, DType::kInt32);
  for (int64_t k = 0; k < roots.numel(); ++k) {
    batch_labels.i64()[k] = labels.i64()[roots.i64()[k] - base_ - first_label_];
    rows.i32()[k] = static_cast<int32_t>(k);
  }
  const Device device = output.value().device();
  return ag::NllLoss(ag::LogSoftmax(output), batch_labels.To(device), rows.To(device));
}

EpochMetrics NodeClassificationTask::Evaluate(const Tensor& output, const WorkerSum& sum) {
  // Counts (correct and total per split; per-class tp, fp, fn on test), summed across workers.
  const int64_t C = num_classes_;
  // Per-class counts: test at 6, valid at 6 + 3C.
  std::vector<double> counts(6 + 6 * C, 0.0);
  auto tally = [&](const Tensor& rows, int slot, int per_class_at) {
    const bool per_class = per_class_at >= 0;
    auto pred = nn::ArgmaxRows(output, rows);
    for (int64_t k = 0; k < rows.numel(); ++k) {
      const int64_t truth = labels_.i64()[rows.i32()[k]];
      counts[slot] += pred[k] == truth;
      counts[slot + 1] += 1;
      if (per_class && truth >= 0 && truth < C && pred[k] >= 0 && pred[k] < C) {
        if (pred[k] == truth) {
          counts[per_class_at + 3 * truth] += 1;
        } else {
          counts[per_class_at + 3 * pred[k] + 1] += 1;
          counts[per_class_at + 3 * truth + 2] += 1;
        }
      }
    }
  };
  tally(train_rows_, 0, -1);
  tally(valid_rows_, 2, static_cast<int>(6 + 3 * C));
  tally(test_rows_, 4, 6);
  sum(&counts);
  // An empty split (no validation or test vertices in any worker) has no metrics: NaN, which the
  // summary reports as null and the trainer as an absent split, never as 0.
  auto ratio = [](double a, double b) { return b > 0 ? a / b : std::nan(""); };
  EpochMetrics m;
  m.train = ratio(counts[0], counts[1]);
  m.valid = ratio(counts[2], counts[3]);
  m.test = ratio(counts[4], counts[5]);
  m.test_micro_f1 = m.test;
  auto macro_f1 = [&](int64_t at) {
    std::vector<int64_t> tp(C), fp(C), fn(C);
    for (int64_t c = 0; c < C; ++c) {
      tp[c] = static_cast<int64_t>(counts[at + 3 * c]);
      fp[c] = static_cast<int64_t>(counts[at + 3 * c + 1]);
      fn[c] = static_cast<int64_t>(counts[at + 3 * c + 2]);
    }
    return nn::MacroF1FromCounts(tp, fp, fn);
  };
  m.test_macro_f1 = counts[5] > 0 ? macro_f1(6) : std::nan("");
  m.valid_macro_f1 = counts[3] > 0 ? macro_f1(6 + 3 * C) : std::nan("");
  return m;
}

std::string NodeClassificationTask::EpochLine(double loss, const EpochMetrics& m,
                                              double seconds) const {
  return absl::StrFormat("loss %.4f  train %.4f  valid %.4f  test %.4f  %.3fs", loss, m.train,
                         m.valid, m.test, seconds);
}

std::string SkippedClassesWarning(const graph::Dataset& dataset, const std::string& type) {
  auto it = dataset.labels.find(type);
  if (it == dataset.labels.end() || it->second.rank() != 1) return "";
  const Tensor& labels = it->second;
  std::vector<int64_t> count;
  int64_t largest_at = -1;
  for (int64_t v = 0; v < labels.numel(); ++v) {
    const int64_t l = labels.i64()[v];
    if (l < 0 || l > labels.numel()) continue;  // unlabeled, or refused by Create
    if (l >= static_cast<int64_t>(count.size())) {
      count.resize(l + 1, 0);
      largest_at = v;
    }
    ++count[l];
  }
  std::vector<int64_t> empty;
  for (size_t c = 0; c < count.size(); ++c) {
    if (count[c] == 0) empty.push_back(static_cast<int64_t>(c));
  }
  if (empty.empty()) return "";
  return absl::StrFormat(
      "labels of '%s': no vertex has class %s; the largest label, %d (vertex %d), makes %d "
      "classes (a typo?)",
      type, absl::StrJoin(empty.begin(), empty.begin() + std::min<size_t>(empty.size(), 8), ", "),
      static_cast<int64_t>(count.size()) - 1, largest_at, static_cast<int64_t>(count.size()));
}

}  // namespace fg::runtime
