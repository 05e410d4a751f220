// LinkPredictionTask's evaluation: scores of pairs, ROC-AUC and hits@10 over the fixed negatives,
// and recommendations (the best-scoring destinations per source). See link_prediction.h.
#include "runtime/tasks/link_prediction.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "flexgraph/base/parallel.h"
#include "flexgraph/nn/metrics.h"

namespace fg::runtime {

std::vector<float> LinkPredictionTask::Scores(const Tensor& emb, const std::vector<int32_t>& src,
                                              const std::vector<int32_t>& dst) const {
  std::vector<float> s(src.size());
  const int64_t d = emb.row_width();
  ParallelFor(0, static_cast<int64_t>(src.size()), [&](int64_t i) {
    const float* a = emb.f32() + static_cast<int64_t>(src_row_[src[i]]) * d;
    const float* b = emb.f32() + static_cast<int64_t>(dst_row_[dst[i]]) * d;
    // 16 independent partial sums: the inner loop vectorizes without reassociating a reduction.
    float acc[16] = {};
    int64_t j = 0;
    for (; j + 16 <= d; j += 16) {
      for (int l = 0; l < 16; ++l) acc[l] += a[j + l] * b[j + l];
    }
    for (; j < d; ++j) acc[j % 16] += a[j] * b[j];
    float total = 0.0f;
    for (int l = 0; l < 16; ++l) total += acc[l];
    s[i] = total;
  });
  return s;
}

LinkPredictionTask::Recommendations LinkPredictionTask::Recommend(const Tensor& embeddings,
                                                                  int k) const {
  Recommendations r;
  r.k = k;
  r.dst.assign(num_src_ * k, -1);
  r.score.assign(num_src_ * k, std::nanf(""));
  const int64_t d = embeddings.row_width();
  ParallelForDynamic(0, num_src_, 16, [&](int64_t s) {
    const float* a = embeddings.f32() + static_cast<int64_t>(src_row_[s]) * d;
    const std::vector<int32_t>& seen = train_seen_[s];
    // A min-heap of the best k so far: (score, -id), so that lower ids win ties.
    std::vector<std::pair<float, int32_t>> heap;
    auto worse = [](const std::pair<float, int32_t>& x, const std::pair<float, int32_t>& y) {
      return x.first > y.first || (x.first == y.first && x.second < y.second);
    };
    for (int32_t t = 0; t < num_dst_; ++t) {
      if (std::binary_search(seen.begin(), seen.end(), t)) continue;
      const float* b = embeddings.f32() + static_cast<int64_t>(dst_row_[t]) * d;
      float score = 0;
      for (int64_t j = 0; j < d; ++j) score += a[j] * b[j];
      const std::pair<float, int32_t> entry(score, t);
      if (static_cast<int>(heap.size()) < k) {
        heap.push_back(entry);
        std::push_heap(heap.begin(), heap.end(), worse);
      } else if (worse(entry, heap.front())) {
        std::pop_heap(heap.begin(), heap.end(), worse);
        heap.back() = entry;
        std::push_heap(heap.begin(), heap.end(), worse);
      }
    }
    std::sort(heap.begin(), heap.end(), worse);
    for (size_t i = 0; i < heap.size(); ++i) {
      r.dst[s * k + i] = heap[i].second;
      r.score[s * k + i] = heap[i].first;
    }
  });
  int64_t hits = 0;
  for (size_t i = 0; i < test_.src.size(); ++i) {
    const int32_t* top = r.dst.data() + static_cast<int64_t>(test_.src[i]) * k;
    hits += std::find(top, top + k, test_.dst[i]) != top + k;
  }
  r.test_recall = test_.src.empty() ? 0 : static_cast<double>(hits) / test_.src.size();
  return r;
}

std::vector<float> LinkPredictionTask::AllWorkers(const std::vector<float>& mine,
                                                  const WorkerSum& sum) const {
  if (!partitioned_) return mine;
  std::vector<double> counts(share_size_, 0.0);
  counts[share_rank_] = static_cast<double>(mine.size());
  sum(&counts);
  int64_t offset = 0, total = 0;
  for (int w = 0; w < share_size_; ++w) {
    if (w < share_rank_) offset += static_cast<int64_t>(counts[w]);
    total += static_cast<int64_t>(counts[w]);
  }
  std::vector<double> all(total, 0.0);  // the sum of zeros and one value is that value
  for (size_t k = 0; k < mine.size(); ++k) all[offset + k] = mine[k];
  sum(&all);
  return std::vector<float>(all.begin(), all.end());
}

EpochMetrics LinkPredictionTask::Evaluate(const Tensor& embeddings, const WorkerSum& sum) {
  const int q = eval_negatives_;
  // ROC-AUC of every worker's positives against their first negatives; `pos`: this worker's.
  auto auc = [&](const EvalSet& set, std::vector<float>* pos, int64_t* pairs) {
    *pos = Scores(embeddings, set.src, set.dst);
    std::vector<int32_t> first(set.src.size());
    for (size_t i = 0; i < first.size(); ++i) first[i] = set.neg[i * q];
    const std::vector<float> all_pos = AllWorkers(*pos, sum);
    const std::vector<float> all_neg = AllWorkers(Scores(embeddings, set.src, first), sum);
    *pairs = static_cast<int64_t>(all_pos.size());
    if (all_pos.empty()) return std::nan("");  // no pairs in this split: no metric (not 0)
    std::vector<float> scores = all_pos;
    scores.insert(scores.end(), all_neg.begin(), all_neg.end());
    std::vector<int> labels(all_pos.size(), 1);
    labels.resize(scores.size(), 0);
    return nn::RocAuc(scores, labels);
  };
  Metrics m;
  std::vector<float> pos;
  auto report = [](const Metrics& lm) {
    EpochMetrics e;
    e.valid = lm.valid_auc;
    e.extra = {{"valid_auc", lm.valid_auc},
               {"test_auc", lm.test_auc},
               {"test_hits_at_10", lm.test_hits_at_10}};
    return e;
  };
  int64_t pairs = 0;
  m.valid_auc = auc(valid_, &pos, &pairs);
  // Test metrics are only reported at the best validation epoch: recompute them when the
  // validation AUC improves, otherwise repeat those of the best epoch so far.
  if (pairs > 0 && m.valid_auc <= best_.valid_auc && best_.valid_auc > 0) {
    m.test_auc = best_.test_auc;
    m.test_hits_at_10 = best_.test_hits_at_10;
    return report(m);
  }
  m.test_auc = auc(test_, &pos, &pairs);
  // hits@10: each test positive against all of its negatives, summed over the workers.
  const int64_t n = static_cast<int64_t>(test_.src.size());
  std::vector<int32_t> rep_src(n * q);
  for (int64_t i = 0; i < n; ++i) std::fill_n(rep_src.begin() + i * q, q, test_.src[i]);
  const std::vector<float> neg = Scores(embeddings, rep_src, test_.neg);
  std::vector<std::vector<float>> per_query(n);
  for (int64_t i = 0; i < n; ++i) per_query[i].assign(neg.begin() + i * q, neg.begin() + (i + 1) * q);
  std::vector<double> hits = {n > 0 ? std::round(nn::HitsAtK(pos, per_query, 10) * n) : 0.0};
  if (partitioned_) sum(&hits);
  m.test_hits_at_10 = pairs > 0 ? hits[0] / pairs : 0.0;
  best_ = m;
  return report(m);
}

std::string LinkPredictionTask::EpochLine(double loss, const EpochMetrics& m, double seconds) const {
  return absl::StrFormat("loss %.4f  valid AUC %.4f  test AUC %.4f  hits@10 %.4f  %.3fs", loss,
                         m.extra.at("valid_auc"), m.extra.at("test_auc"),
                         m.extra.at("test_hits_at_10"), seconds);
}

}  // namespace fg::runtime
