// Evaluation metrics over predictions and labels. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "flexgraph/tensor/tensor.h"

namespace fg::nn {

// Argmax class per row of scores [n, C], for the given rows (int32), as int64.
std::vector<int64_t> ArgmaxRows(const Tensor& scores, const Tensor& rows);
double Accuracy(const std::vector<int64_t>& pred, const std::vector<int64_t>& truth);
// Unweighted mean of per-class F1 over classes that occur in truth or pred.
double MacroF1(const std::vector<int64_t>& pred, const std::vector<int64_t>& truth,
               int64_t num_classes);
// Macro-F1 from per-class true-positive, false-positive and false-negative counts (classes with
// no occurrence are skipped), as MacroF1 computes.
double MacroF1FromCounts(const std::vector<int64_t>& tp, const std::vector<int64_t>& fp,
                         const std::vector<int64_t>& fn);
// Micro-F1 (equals accuracy for single-label classification).
double MicroF1(const std::vector<int64_t>& pred, const std::vector<int64_t>& truth,
               int64_t num_classes);
// Area under the ROC curve of scores for binary labels (ties get half credit).
double RocAuc(const std::vector<float>& scores, const std::vector<int>& labels);
// Fraction of queries whose positive scores higher than all but fewer than k of its negatives:
// each query has one positive score and a list of negative scores.
double HitsAtK(const std::vector<float>& positive, const std::vector<std::vector<float>>& negatives,
               int k);

}  // namespace fg::nn
