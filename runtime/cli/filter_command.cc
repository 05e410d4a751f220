// flexgraph filter --model_dir F --out OUT.fgc [--dataset D] [--cut C | --efficiency E] ...
// The filter stage of the particle-tracking pipeline (Exa.TrkX): scores every candidate edge of
// every graph with a trained edge classifier (train --model filter --save_model F; any binary edge
// classifier works), keeps those above the cut and writes the filtered dataset as a .fgc cache
// (flexgraph/graph/edge_filter.h: labels, edge features, hits' truth and particles carried; the
// dropped true edges counted per hit, so that `flexgraph track` on the filtered dataset counts
// them as lost). With --efficiency, the cut is the highest that keeps that fraction of the true
// edges of the --cut_split graphs (default valid), stated on stdout. Exit status: 0 ok, 1
// failure, 2 usage error.
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "flexgraph/base/status.h"
#include "flexgraph/base/timer.h"
#include "flexgraph/graph/edge_filter.h"
#include "flexgraph/graph/io/cache.h"
#include "flexgraph/graph/io/file.h"
#include "runtime/cli/commands.h"
#include "runtime/cli/flags.h"
#include "runtime/tasks/graph_tasks.h"
#include "runtime/train/config.h"
#include "runtime/train/inference.h"
#include "runtime/train/saved_model.h"

namespace fg::cli {
namespace {

std::string Num(double v) { return std::isfinite(v) ? absl::StrFormat("%.6g", v) : "null"; }

// Edge counts of a split before and after the filter.
struct SplitCounts {
  int64_t graphs = 0, edges = 0, kept = 0, true_edges = 0, kept_true = 0, earlier_dropped = 0;
  double efficiency() const { return true_edges ? double(kept_true) / true_edges : NAN; }
  // Over the pipeline so far: true edges earlier stages dropped count as lost.
  double pipeline_efficiency() const {
    return true_edges + earlier_dropped ? double(kept_true) / (true_edges + earlier_dropped) : NAN;
  }
  double purity_before() const { return edges ? double(true_edges) / edges : NAN; }
  double purity_after() const { return kept ? double(kept_true) / kept : NAN; }
  std::string Json() const {
    return absl::StrFormat(
        R"({"graphs": %d, "edges": %d, "kept_edges": %d, "true_edges": %d, "kept_true_edges": %d, )"
        R"("earlier_dropped_true_edges": %d, "efficiency": %s, "pipeline_efficiency": %s, )"
        R"("purity_before": %s, "purity_after": %s})",
        graphs, edges, kept, true_edges, kept_true, earlier_dropped, Num(efficiency()),
        Num(pipeline_efficiency()), Num(purity_before()), Num(purity_after()));
  }
};

std::vector<int64_t> Ids(const Tensor& split) {
  return split.defined() ? std::vector<int64_t>(split.i64(), split.i64() + split.numel())
                         : std::vector<int64_t>{};
}

int Filter(const std::vector<std::string>& args) {
  FlagSet flags("filter",
                "Keeps the candidate edges a trained edge classifier (train --model filter "
                "--save_model DIR) scores above a cut and writes the filtered dataset (.fgc) with "
                "the labels, edge features and truth carried, for the next stage (train --model "
                "interaction, track); the dropped true edges stay counted as lost.");
  flags.AddString("model_dir", "", "directory written by train --save_model (required)");
  flags.AddString("dataset", "", "dataset to filter (default: the one the model was trained on)");
  flags.AddString("out", "", "the filtered dataset, a .fgc file (required)");
  flags.AddString("cut", "", "keep an edge when its score > cut (default: the model's cut option)");
  flags.AddString(
      "efficiency", "",
      "instead of --cut: the highest cut keeping this fraction of the true edges of --cut_split");
  flags.AddString("cut_split", "valid", "graphs --efficiency reads: train, valid, test or all");
  flags.AddString("batch_size", "1", "graphs scored at once");
  flags.AddString("threads", "", "threads (default: all cores)");
  flags.AddString("summary_json", "", "also write the counts per split as JSON to this file");
  if (auto s = flags.Parse(args); !s.ok()) {
    std::fprintf(stderr, "flexgraph filter: %s\n\n%s", std::string(s.message()).c_str(),
                 flags.Usage().c_str());
    return 2;
  }
  if (flags.help_requested()) {
    std::printf("%s", flags.Usage().c_str());
    return 0;
  }
  int code = 2;
  auto run = [&]() -> absl::Status {
    if (flags.Get("model_dir").empty())
      return absl::InvalidArgumentError("--model_dir is required");
    const std::string out = flags.Get("out");
    if (!absl::EndsWith(out, ".fgc")) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--out '", out,
          "': expected a .fgc file (the cache keeps the hits' truth that track reads)"));
    }
    if (flags.IsSet("cut") && flags.IsSet("efficiency")) {
      return absl::InvalidArgumentError("--cut and --efficiency: give one");
    }
    const std::string cut_split = flags.Get("cut_split");
    if (cut_split != "train" && cut_split != "valid" && cut_split != "test" && cut_split != "all") {
      return absl::InvalidArgumentError(
          absl::StrCat("--cut_split ", cut_split, ": expected train, valid, test or all"));
    }
    FG_ASSIGN_OR_RETURN(int64_t batch_size, flags.GetInt("batch_size"));
    if (batch_size < 0) return absl::InvalidArgumentError("--batch_size: must not be negative");
    double efficiency = 0, cut = 0;
    if (flags.IsSet("efficiency")) {
      FG_ASSIGN_OR_RETURN(efficiency, flags.GetDouble("efficiency"));
      if (!(efficiency > 0 && efficiency <= 1)) {
        return absl::InvalidArgumentError(
            absl::StrCat("--efficiency ", efficiency, ": outside (0, 1]"));
      }
    }
    if (flags.IsSet("cut")) {
      FG_ASSIGN_OR_RETURN(cut, flags.GetDouble("cut"));
    }
    FG_ASSIGN_OR_RETURN(flexgraph::SavedModel saved,
                        runtime::ReadSavedModel(flags.Get("model_dir")));
    flexgraph::RunConfig config = saved.config();
    if (flags.IsSet("dataset")) config.mutable_dataset()->set_path(flags.Get("dataset"));
    if (flags.IsSet("threads")) {
      FG_ASSIGN_OR_RETURN(int64_t threads, flags.GetInt("threads"));
      config.mutable_train()->set_threads(static_cast<int>(threads));
    }
    config.mutable_output()->set_quiet(true);
    code = 1;
    FG_ASSIGN_OR_RETURN(flexgraph::RunConfig resolved, runtime::ResolveConfig(config));
    FG_ASSIGN_OR_RETURN(auto model, runtime::LoadModel(flags.Get("model_dir"), saved, resolved));
    const runtime::GraphBatchTraining* batches = model->trainer->graph_batches();
    if (batches == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(resolved.dataset().path(), " is not a set of graphs"));
    }
    const auto* task =
        dynamic_cast<const runtime::EdgeClassificationTask*>(&model->trainer->task());
    if (task == nullptr || !task->binary()) {
      return absl::InvalidArgumentError(absl::StrCat(resolved.dataset().path(), ": ",
                                                     model->trainer->task().Describe(),
                                                     " is not binary edge classification"));
    }
    if (!flags.IsSet("cut")) cut = task->cut();
    Stopwatch watch;
    const graph::GraphSet& gs = *model->trainer->dataset().graphs;
    std::vector<int64_t> all(gs.num_graphs());
    std::iota(all.begin(), all.end(), 0);
    FG_ASSIGN_OR_RETURN(std::vector<float> scores, batches->EdgeScores(all, batch_size));
    const double score_seconds = watch.Seconds();
    const std::vector<int64_t> ids[4] = {Ids(gs.train), Ids(gs.valid), Ids(gs.test), all};
    const char* names[4] = {"train", "valid", "test", "all"};
    if (flags.IsSet("efficiency")) {
      const int s = cut_split == "train"   ? 0
                    : cut_split == "valid" ? 1
                    : cut_split == "test"  ? 2
                                           : 3;
      if (ids[s].empty()) {
        code = 2;
        return absl::InvalidArgumentError(absl::StrCat("--cut_split ", cut_split,
                                                       ": the dataset has no ", cut_split,
                                                       " graphs (--cut_split all, or --cut)"));
      }
      FG_ASSIGN_OR_RETURN(cut, graph::CutForEfficiency(gs, scores, ids[s], efficiency));
      std::printf("filter: cut %.9g keeps %.4g of the true edges of the %s graphs\n", cut,
                  efficiency, cut_split.c_str());
    }
    // The dataset as stored (the trainer's copy may have normalised features), same edge order.
    graph::LoadOptions load;
    load.split = resolved.dataset().split();
    FG_ASSIGN_OR_RETURN(graph::Dataset source, graph::LoadDataset(resolved.dataset().path(), load));
    if (!source.IsGraphSet() || source.graphs->num_edges() != gs.num_edges()) {
      return absl::InternalError(
          absl::StrCat(resolved.dataset().path(), ": reloaded with another edge count"));
    }
    std::vector<uint8_t> keep(gs.num_edges());
    for (int64_t k = 0; k < gs.num_edges(); ++k) keep[k] = std::isnan(scores[k]) || scores[k] > cut;
    FG_ASSIGN_OR_RETURN(graph::Dataset filtered, graph::FilterGraphSetEdges(source, keep));
    const std::vector<int64_t> earlier = graph::DroppedTrueEdgesPerGraph(gs);
    SplitCounts counts[4];
    for (int s = 0; s < 4; ++s) {
      for (int64_t g : ids[s]) {
        SplitCounts& c = counts[s];
        ++c.graphs;
        c.earlier_dropped += earlier[g];
        for (int64_t k = gs.EdgeBegin(g); k < gs.EdgeEnd(g); ++k) {
          const bool truth = gs.edge_labels.i64()[k] == 1;
          c.edges += 1;
          c.kept += keep[k];
          c.true_edges += truth;
          c.kept_true += truth && keep[k];
        }
      }
    }
    for (int s = 0; s < 4; ++s) {
      const SplitCounts& c = counts[s];
      if (c.graphs == 0) continue;
      std::printf(
          "filter: %s (%lld graphs): %lld of %lld edges kept (%.2fx fewer), efficiency %.4f "
          "(%lld of %lld true edges; %.4f with the %lld dropped before), purity %.4f -> %.4f\n",
          names[s], static_cast<long long>(c.graphs), static_cast<long long>(c.kept),
          static_cast<long long>(c.edges), c.kept ? double(c.edges) / c.kept : NAN, c.efficiency(),
          static_cast<long long>(c.kept_true), static_cast<long long>(c.true_edges),
          c.pipeline_efficiency(), static_cast<long long>(c.earlier_dropped), c.purity_before(),
          c.purity_after());
    }
    FG_RETURN_IF_ERROR(graph::io::WriteCache(filtered, out));
    std::printf("filter: wrote %s (scored in %.2f s)\n", out.c_str(), score_seconds);
    if (flags.IsSet("summary_json")) {
      // The counts over every graph at the top level, then per split.
      const std::string all = counts[3].Json();
      std::string json =
          absl::StrCat("{",
                       absl::StrFormat(R"("dataset": "%s", "out": "%s", "cut": %s, )",
                                       resolved.dataset().path(), out, Num(cut)),
                       all.substr(1, all.size() - 2));
      for (int s = 0; s < 4; ++s) {
        if (counts[s].graphs > 0)
          absl::StrAppend(&json, ", \"", names[s], "\": ", counts[s].Json());
      }
      absl::StrAppend(&json, "}\n");
      FG_RETURN_IF_ERROR(graph::io::WriteFileAtomically(flags.Get("summary_json"), json));
    }
    return absl::OkStatus();
  };
  if (absl::Status s = run(); !s.ok()) {
    std::fprintf(stderr, "flexgraph filter: %s\n", std::string(s.message()).c_str());
    return code;
  }
  return 0;
}

const CommandRegistrar kFilter("filter",
                               "keep the candidate edges a trained edge filter scores above a cut",
                               Filter);

}  // namespace
}  // namespace fg::cli
