#include "flexgraph/nn/metrics.h"

#include <algorithm>
#include <numeric>

#include "flexgraph/base/logging.h"

namespace fg::nn {

std::vector<int64_t> ArgmaxRows(const Tensor& scores, const Tensor& rows) {
  const int64_t c = scores.row_width();
  std::vector<int64_t> out(rows.numel());
  for (int64_t k = 0; k < rows.numel(); ++k) {
    const float* s = scores.f32() + static_cast<int64_t>(rows.i32()[k]) * c;
    out[k] = std::max_element(s, s + c) - s;
  }
  return out;
}

double Accuracy(const std::vector<int64_t>& pred, const std::vector<int64_t>& truth) {
  FG_CHECK(pred.size() == truth.size()) << "Accuracy: sizes differ";
  if (pred.empty()) return 0.0;
  int64_t ok = 0;
  for (size_t i = 0; i < pred.size(); ++i) ok += pred[i] == truth[i];
  return static_cast<double>(ok) / pred.size();
}

double MacroF1(const std::vector<int64_t>& pred, const std::vector<int64_t>& truth,
               int64_t num_classes) {
  std::vector<int64_t> tp(num_classes), fp(num_classes), fn(num_classes);
  for (size_t i = 0; i < pred.size(); ++i) {
    if (pred[i] == truth[i]) {
      ++tp[truth[i]];
    } else {
      ++fp[pred[i]];
      ++fn[truth[i]];
    }
  }
  return MacroF1FromCounts(tp, fp, fn);
}

double MacroF1FromCounts(const std::vector<int64_t>& tp, const std::vector<int64_t>& fp,
                         const std::vector<int64_t>& fn) {
  double sum = 0.0;
  int present = 0;
  for (size_t c = 0; c < tp.size(); ++c) {
    if (tp[c] + fp[c] + fn[c] == 0) continue;
    ++present;
    sum += 2.0 * tp[c] / (2.0 * tp[c] + fp[c] + fn[c]);
  }
  return present ? sum / present : 0.0;
}

double MicroF1(const std::vector<int64_t>& pred, const std::vector<int64_t>& truth,
               int64_t num_classes) {
  return Accuracy(pred, truth);
}

double RocAuc(const std::vector<float>& scores, const std::vector<int>& labels) {
  FG_CHECK(scores.size() == labels.size()) << "RocAuc: sizes differ";
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] < scores[b]; });
  // Mann-Whitney U with average ranks for ties.
  double rank_sum_pos = 0.0;
  int64_t pos = 0, neg = 0;
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j < order.size() && scores[order[j]] == scores[order[i]]) ++j;
    const double avg_rank = (i + 1 + j) / 2.0;
    for (size_t k = i; k < j; ++k) {
      if (labels[order[k]]) {
        rank_sum_pos += avg_rank;
        ++pos;
      } else {
        ++neg;
      }
    }
    i = j;
  }
  if (pos == 0 || neg == 0) return 0.5;
  return (rank_sum_pos - pos * (pos + 1) / 2.0) / (static_cast<double>(pos) * neg);
}

double HitsAtK(const std::vector<float>& positive, const std::vector<std::vector<float>>& negatives,
               int k) {
  FG_CHECK(positive.size() == negatives.size()) << "HitsAtK: sizes differ";
  if (positive.empty()) return 0.0;
  int64_t hits = 0;
  for (size_t q = 0; q < positive.size(); ++q) {
    int64_t higher = 0;
    for (float s : negatives[q]) higher += s >= positive[q];
    hits += higher < k;
  }
  return static_cast<double>(hits) / positive.size();
}

}  // namespace fg::nn
