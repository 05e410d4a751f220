#include "runtime/train/summary.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace fg::runtime {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

size_t FirstSteadyEpoch(size_t epochs) { return epochs > 5 ? 1 : 0; }

google::protobuf::Value NumberValue(double v) {
  google::protobuf::Value out;
  if (std::isfinite(v)) {
    out.set_number_value(v);
  } else {
    out.set_null_value(google::protobuf::NULL_VALUE);
  }
  return out;
}

std::vector<std::pair<std::string, double>> NamedMetrics(const EpochMetrics& m) {
  std::vector<std::pair<std::string, double>> out = {
      {"train_accuracy", m.train},          {"valid_accuracy", m.valid},
      {"valid_macro_f1", m.valid_macro_f1}, {"test_accuracy", m.test},
      {"test_macro_f1", m.test_macro_f1},   {"test_micro_f1", m.test_micro_f1}};
  for (const auto& [key, value] : m.extra) out.emplace_back(key, value);
  return out;
}

google::protobuf::Struct SummaryStruct(const TrainResult& r) {
  google::protobuf::Struct s;
  auto& f = *s.mutable_fields();
  f["model"].set_string_value(r.model);
  f["dataset"].set_string_value(r.dataset);
  f["seed"] = NumberValue(static_cast<double>(r.seed));
  f["epochs"] = NumberValue(r.epochs);
  f["best_epoch"] = NumberValue(r.best_epoch);
  f["resumed_from_epoch"] = NumberValue(r.resumed_from_epoch);
  f["final_loss"] = NumberValue(r.final_loss);
  f["epoch0_loss"] = NumberValue(r.epoch0_loss);
  f["train_accuracy"] = NumberValue(r.train_accuracy);
  f["valid_accuracy"] = NumberValue(r.valid_accuracy);
  f["valid_macro_f1"] = NumberValue(r.valid_macro_f1);
  f["test_accuracy"] = NumberValue(r.test_accuracy);
  f["test_macro_f1"] = NumberValue(r.test_macro_f1);
  f["test_micro_f1"] = NumberValue(r.test_micro_f1);
  f["epoch_seconds_median"] = NumberValue(r.epoch_seconds_median);
  f["hdg_bytes"] = NumberValue(static_cast<double>(r.hdg_bytes));
  f["peak_rss_bytes"] = NumberValue(static_cast<double>(r.peak_rss_bytes));
  f["peak_tensor_bytes"] = NumberValue(static_cast<double>(r.peak_tensor_bytes));
  f["host_fresh_bytes"] = NumberValue(static_cast<double>(r.host_fresh_bytes));
  f["peak_device_bytes"] = NumberValue(static_cast<double>(r.peak_device_bytes));
  f["num_vertices"] = NumberValue(static_cast<double>(r.num_vertices));
  f["num_edges"] = NumberValue(static_cast<double>(r.num_edges));
  if (r.traffic.world_size > 1) f["exchange"].set_string_value(r.traffic.exchange);
  auto& stages = *f["stage_seconds"].mutable_struct_value()->mutable_fields();
  for (const auto& [name, value] : r.stats.Named()) stages[name] = NumberValue(value);
  // Evaluation runs outside the training step, so the per-epoch stats have none.
  std::map<std::string, std::vector<double>> per_epoch;
  for (size_t e = FirstSteadyEpoch(r.epoch_stats.size()); e < r.epoch_stats.size(); ++e) {
    for (const auto& [name, value] : r.epoch_stats[e].Named()) {
      if (std::string(name) != "evaluation") per_epoch[name].push_back(value);
    }
  }
  if (!per_epoch.empty()) {
    auto& median = *f["stage_seconds_median_epoch"].mutable_struct_value()->mutable_fields();
    for (auto& [name, v] : per_epoch) median[name] = NumberValue(Median(std::move(v)));
  }
  if (r.batches_per_epoch > 0) {
    auto& mb = *f["minibatch"].mutable_struct_value()->mutable_fields();
    mb["batches_per_epoch"] = NumberValue(static_cast<double>(r.batches_per_epoch));
    mb["bulk"] = NumberValue(r.bulk);
    mb["sampled_edges_per_epoch"] = NumberValue(static_cast<double>(r.sampled_edges_per_epoch));
    mb["sampling_wait_seconds"] = NumberValue(r.sampling_wait_seconds);
    if (r.remote_rows_fetched >= 0) {
      mb["remote_rows_fetched"] = NumberValue(static_cast<double>(r.remote_rows_fetched));
      mb["remote_rows_cached"] = NumberValue(static_cast<double>(r.remote_rows_cached));
      mb["remote_rows_capacity"] = NumberValue(static_cast<double>(r.remote_rows_capacity));
    }
    if (r.remote_neighbourhood_entries_fetched >= 0) {
      mb["remote_neighbourhood_entries_fetched"] = NumberValue(static_cast<double>(r.remote_neighbourhood_entries_fetched));
      mb["remote_neighbourhood_entries_cached"] = NumberValue(static_cast<double>(r.remote_neighbourhood_entries_cached));
    }
  }
  for (const auto& [key, value] : r.extra) f[key] = NumberValue(value);
  auto list = [](const std::vector<double>& v, google::protobuf::Value* out) {
    auto* l = out->mutable_list_value();
    for (double x : v) *l->add_values() = NumberValue(x);
  };
  list(r.losses, &f["losses"]);
  list(r.epoch_seconds, &f["epoch_seconds"]);
  list(r.epoch_host_syncs, &f["epoch_host_syncs"]);
  auto* history = f["history"].mutable_list_value();
  for (const EpochRecord& e : r.history) {
    auto& h = *history->add_values()->mutable_struct_value()->mutable_fields();
    h["epoch"] = NumberValue(e.epoch);
    h["loss"] = NumberValue(e.loss);
    h["seconds"] = NumberValue(e.seconds);
    h["lr"] = NumberValue(e.lr);
    auto& st = *h["stage_seconds"].mutable_struct_value()->mutable_fields();
    for (const auto& [name, value] : e.stats.Named()) st[name] = NumberValue(value);
    if (e.evaluated) {
      for (const auto& [key, value] : NamedMetrics(e.metrics)) h[key] = NumberValue(value);
    }
  }
  return s;
}

std::string StructToJson(const google::protobuf::Struct& s) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  std::string json;
  // A Struct of numbers, strings, lists and nested Structs always prints.
  (void)google::protobuf::util::MessageToJsonString(s, &json, options);
  return json;
}

absl::StatusOr<google::protobuf::Struct> StructFromJson(const std::string& json,
                                                        const std::string& where) {
  google::protobuf::Struct s;
  auto status = google::protobuf::util::JsonStringToMessage(json, &s);
  if (!status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": not a JSON object: ", status.ToString()));
  }
  return s;
}

std::string SummaryJson(const TrainResult& r) { return StructToJson(SummaryStruct(r)); }

namespace {

// A metric with 4 decimals, or "n/a" when absent (NaN).
std::string Metric(double v) { return std::isnan(v) ? "n/a" : absl::StrFormat("%.4f", v); }

double Extra(const TrainResult& r, const char* key) {
  auto it = r.extra.find(key);
  return it == r.extra.end() ? std::nan("") : it->second;
}

bool LinkPrediction(const TrainResult& r) { return r.task == nau::Task::kLinkPrediction; }

}  // namespace

std::string ResultLine(const TrainResult& r) {
  std::string test, valid;
  if (LinkPrediction(r)) {
    test = absl::StrCat("test AUC ", Metric(Extra(r, "test_auc")), ", hits@10 ",
                        Metric(Extra(r, "test_hits_at_10")));
    valid = absl::StrCat("best valid AUC ", Metric(Extra(r, "valid_auc")));
  } else {
    test = std::isnan(r.test_accuracy)
               ? std::string("no test split")
               : absl::StrCat("test accuracy ", Metric(r.test_accuracy), ", macro-F1 ",
                              Metric(r.test_macro_f1), ", micro-F1 ", Metric(r.test_micro_f1));
    valid = absl::StrCat("best valid ", Metric(r.valid_accuracy), ", macro-F1 ",
                         Metric(r.valid_macro_f1));
  }
  const std::string selected =
      std::isnan(r.best_selection) && r.best_epoch > 0
          ? absl::StrCat("no validation split: the last epoch, ", r.best_epoch)
          : absl::StrCat(valid, ", at epoch ", r.best_epoch);
  return absl::StrFormat("%s on %s: %s (%s), final loss %.4f", r.model, r.dataset, test, selected,
                         r.final_loss);
}

void PrintSummary(const TrainResult& r, std::FILE* out) {
  const std::string metrics =
      LinkPrediction(r)
          ? absl::StrCat("valid AUC ", Metric(Extra(r, "valid_auc")), "  test AUC ",
                         Metric(Extra(r, "test_auc")), "  hits@10 ",
                         Metric(Extra(r, "test_hits_at_10")))
          : absl::StrCat("valid ", Metric(r.valid_accuracy), " (macro-F1 ",
                         Metric(r.valid_macro_f1), ")  test ", Metric(r.test_accuracy),
                         "  macro-F1 ", Metric(r.test_macro_f1), "  micro-F1 ",
                         Metric(r.test_micro_f1));
  std::fprintf(out,
               "summary: model %s  dataset %s  epochs %d  best epoch %d  %s  median epoch %.4fs  "
               "HDG %.1f MiB  "
               "peak RSS %.1f MiB (tensors %.1f MiB)\n"
               "stages: %s\n",
               r.model.c_str(), r.dataset.c_str(), r.epochs, r.best_epoch, metrics.c_str(),
               r.epoch_seconds_median, r.hdg_bytes / 1048576.0, r.peak_rss_bytes / 1048576.0,
               r.peak_tensor_bytes / 1048576.0, r.stats.Shares().c_str());
  if (r.peak_device_bytes > 0) {
    std::fprintf(out, "GPU: peak %.1f MiB in use, the host waited %.0f times per training step\n",
                 r.peak_device_bytes / 1048576.0, Median(r.epoch_host_syncs));
  }
  if (r.batches_per_epoch > 0) {
    std::fprintf(out, "mini-batch: %lld batches and %lld sampled HDG entries per epoch, %.3fs waited for samples\n",
                 static_cast<long long>(r.batches_per_epoch),
                 static_cast<long long>(r.sampled_edges_per_epoch), r.sampling_wait_seconds);
    if (r.remote_rows_fetched >= 0) {
      std::fprintf(out, "other workers' input rows: %lld fetched, %lld from the cache (of %lld rows) in the last epoch\n",
                   static_cast<long long>(r.remote_rows_fetched), static_cast<long long>(r.remote_rows_cached),
                   static_cast<long long>(r.remote_rows_capacity));
    }
    if (r.remote_neighbourhood_entries_fetched >= 0) {
      std::fprintf(out, "other workers' neighbourhoods: %lld entries fetched, %lld from the cache in the last epoch\n",
                   static_cast<long long>(r.remote_neighbourhood_entries_fetched),
                   static_cast<long long>(r.remote_neighbourhood_entries_cached));
    }
  }
}

}  // namespace fg::runtime
