// flexgraph track --model_dir M [--dataset D] [--cut C] [--split test|valid|train|all] ...
// Particle tracking with a trained edge classifier (train --model interaction --save_model M):
// scores every candidate edge of the chosen graphs (events), builds track candidates from the
// kept edges and reports the tracking metrics (flexgraph/graph/track_building.h), on stdout and,
// with --summary_json, as JSON with the efficiency per pT and eta bin (`flexgraph report` plots
// them). Exit status: 0 ok, 1 failure, 2 usage error.
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "flexgraph/base/status.h"
#include "flexgraph/graph/io/file.h"
#include "flexgraph/graph/track_building.h"
#include "flexgraph/graph/tracking.h"
#include "runtime/cli/commands.h"
#include "runtime/cli/flags.h"
#include "runtime/tasks/graph_tasks.h"
#include "runtime/train/config.h"
#include "runtime/train/inference.h"
#include "runtime/train/saved_model.h"

namespace fg::cli {
namespace {

std::string Num(double v) { return std::isfinite(v) ? absl::StrFormat("%.6g", v) : "null"; }

std::string BinsJson(const graph::EfficiencyBins& b) {
  std::vector<std::string> efficiency;
  for (size_t i = 0; i < b.particles.size(); ++i) {
    efficiency.push_back(Num(b.particles[i] > 0 ? static_cast<double>(b.matched[i]) / b.particles[i] : NAN));
  }
  std::vector<std::string> edges;
  for (double e : b.edges) edges.push_back(Num(e));
  return absl::StrCat(R"({"bin_edges": [)", absl::StrJoin(edges, ", "), R"(], "particles": [)",
                      absl::StrJoin(b.particles, ", "), R"(], "matched": [)",
                      absl::StrJoin(b.matched, ", "), R"(], "efficiency": [)",
                      absl::StrJoin(efficiency, ", "), "]}");
}

// The graph ids of split `name` (train, valid, test, all). Errors name the flag.
absl::StatusOr<std::vector<int64_t>> SplitGraphs(const graph::GraphSet& gs, const std::string& name) {
  std::vector<int64_t> ids;
  if (name == "all") {
    ids.resize(gs.num_graphs());
    std::iota(ids.begin(), ids.end(), 0);
    return ids;
  }
  const Tensor* split = name == "train" ? &gs.train : name == "valid" ? &gs.valid : name == "test" ? &gs.test : nullptr;
  if (split == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("--split ", name, ": expected train, valid, test or all"));
  }
  if (split->defined()) ids.assign(split->i64(), split->i64() + split->numel());
  if (ids.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--split ", name, ": the dataset has no ", name,
                                                   " graphs (--split all measures every graph)"));
  }
  return ids;
}

int Track(const std::vector<std::string>& args) {
  FlagSet flags("track",
                "Builds particle tracks from the edges a trained edge classifier keeps (train --model "
                "interaction --save_model DIR) and reports edge efficiency and purity, track "
                "efficiency, fake and duplicate rates.");
  flags.AddString("model_dir", "", "directory written by train --save_model (required)");
  flags.AddString("dataset", "", "tracking dataset (default: the one the model was trained on)");
  flags.AddString("split", "test", "graphs to measure: train, valid, test or all");
  flags.AddString("cut", "", "keep an edge when its score > cut (default: the model's cut option)");
  flags.AddString("extend_cut", "0.1",
                  "join track ends left free at the cut through edges with score > extend_cut (>= cut: no extension)");
  flags.AddString("min_hits", "3", "hits of a track candidate, at least");
  flags.AddString("pt_min", "1.0", "GeV: reconstructable particles have pT above it");
  flags.AddString("particle_min_hits", "5", "hits of a reconstructable particle, at least");
  flags.AddString("batch_size", "1", "graphs scored at once");
  flags.AddString("threads", "", "threads (default: all cores)");
  flags.AddString("out", "", "write the candidates as CSV: graph,track,hit (hit: the graph's vertex index)");
  flags.AddString("summary_json", "", "also write a JSON summary to this file");
  if (auto s = flags.Parse(args); !s.ok()) {
    std::fprintf(stderr, "flexgraph track: %s\n\n%s", std::string(s.message()).c_str(), flags.Usage().c_str());
    return 2;
  }
  if (flags.help_requested()) {
    std::printf("%s", flags.Usage().c_str());
    return 0;
  }
  int code = 1;
  auto run = [&]() -> absl::Status {
    if (flags.Get("model_dir").empty()) {
      code = 2;
      return absl::InvalidArgumentError("--model_dir is required");
    }
    graph::TrackBuildingOptions building;
    graph::TrackMetricsOptions metrics;
    int64_t batch_size = 1;
    {
      code = 2;
      FG_ASSIGN_OR_RETURN(building.min_hits, flags.GetInt("min_hits"));
      FG_ASSIGN_OR_RETURN(building.extend_cut, flags.GetDouble("extend_cut"));
      FG_ASSIGN_OR_RETURN(metrics.pt_min, flags.GetDouble("pt_min"));
      FG_ASSIGN_OR_RETURN(metrics.particle_min_hits, flags.GetInt("particle_min_hits"));
      FG_ASSIGN_OR_RETURN(batch_size, flags.GetInt("batch_size"));
      if (building.min_hits < 1) return absl::InvalidArgumentError("--min_hits: must be at least 1");
      if (batch_size < 0) return absl::InvalidArgumentError("--batch_size: must not be negative");
      code = 1;
    }
    FG_ASSIGN_OR_RETURN(flexgraph::SavedModel saved, runtime::ReadSavedModel(flags.Get("model_dir")));
    flexgraph::RunConfig config = saved.config();
    if (flags.IsSet("dataset")) config.mutable_dataset()->set_path(flags.Get("dataset"));
    if (flags.IsSet("threads")) {
      code = 2;
      FG_ASSIGN_OR_RETURN(int64_t threads, flags.GetInt("threads"));
      config.mutable_train()->set_threads(static_cast<int>(threads));
      code = 1;
    }
    config.mutable_output()->set_quiet(true);
    FG_ASSIGN_OR_RETURN(flexgraph::RunConfig resolved, runtime::ResolveConfig(config));
    FG_ASSIGN_OR_RETURN(auto model, runtime::LoadModel(flags.Get("model_dir"), saved, resolved));
    const runtime::GraphBatchTraining* batches = model->trainer->graph_batches();
    const graph::Dataset& ds = model->trainer->dataset();
    if (batches == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(resolved.dataset().path(), " is not a set of graphs"));
    }
    FG_RETURN_IF_ERROR(graph::CheckTrackingDataset(ds));
    const auto* task = dynamic_cast<const runtime::EdgeClassificationTask*>(&model->trainer->task());
    if (task == nullptr || !task->binary()) {
      return absl::InvalidArgumentError(absl::StrCat(resolved.dataset().path(), ": ", model->trainer->task().Describe(),
                                                     " is not binary edge classification"));
    }
    building.cut = task->cut();
    if (flags.IsSet("cut")) {
      code = 2;
      FG_ASSIGN_OR_RETURN(building.cut, flags.GetDouble("cut"));
      code = 1;
    }
    code = 2;
    FG_ASSIGN_OR_RETURN(std::vector<int64_t> graphs, SplitGraphs(*ds.graphs, flags.Get("split")));
    code = 1;
    FG_ASSIGN_OR_RETURN(std::vector<float> scores, batches->EdgeScores(graphs, batch_size));
    std::vector<std::vector<std::vector<int64_t>>> candidates;
    FG_ASSIGN_OR_RETURN(graph::TrackMetrics m,
                        graph::MeasureTracks(ds, graphs, scores, building, metrics, &candidates));
    std::printf(
        "track: %lld %s graphs of %s at cut %.3g: edge efficiency %.4f purity %.4f; %lld candidates "
        "(at least %lld hits), track efficiency %.4f (%lld of %lld particles with pT > %.3g GeV and "
        "at least %lld hits), fake rate %.4f, duplicate rate %.4f\n",
        static_cast<long long>(m.graphs), flags.Get("split").c_str(), ds.name.c_str(), building.cut,
        m.edge_efficiency(), m.edge_purity(), static_cast<long long>(m.candidates),
        static_cast<long long>(building.min_hits), m.track_efficiency(),
        static_cast<long long>(m.matched), static_cast<long long>(m.reconstructable), metrics.pt_min,
        static_cast<long long>(metrics.particle_min_hits), m.fake_rate(), m.duplicate_rate());
    if (!flags.Get("out").empty()) {
      std::string csv = "graph,track,hit\n";
      for (size_t i = 0; i < graphs.size(); ++i) {
        const int64_t g = graphs[i];
        for (size_t t = 0; t < candidates[i].size(); ++t) {
          for (int64_t v : candidates[i][t]) absl::StrAppend(&csv, g, ",", t, ",", v - ds.graphs->NodeBegin(g), "\n");
        }
      }
      FG_RETURN_IF_ERROR(graph::io::WriteFileAtomically(flags.Get("out"), csv));
    }
    if (flags.IsSet("summary_json")) {
      const std::string json = absl::StrCat(
          "{", absl::StrFormat(R"("dataset": "%s", "split": "%s", "graphs": %d, "cut": %s, "extend_cut": %s, )",
                               absl::CEscape(ds.name), flags.Get("split"), m.graphs, Num(building.cut),
                               Num(building.extend_cut)),
          absl::StrFormat(R"("edge_efficiency": %s, "edge_purity": %s, "track_efficiency": %s, )",
                          Num(m.edge_efficiency()), Num(m.edge_purity()), Num(m.track_efficiency())),
          absl::StrFormat(R"("fake_rate": %s, "duplicate_rate": %s, "candidates": %d, "fakes": %d, )",
                          Num(m.fake_rate()), Num(m.duplicate_rate()), m.candidates, m.fakes),
          absl::StrFormat(R"("duplicates": %d, "reconstructable_particles": %d, "matched_particles": %d, )",
                          m.duplicates, m.reconstructable, m.matched),
          absl::StrFormat(R"("true_edges": %d, "kept_edges": %d, "kept_true_edges": %d, )", m.true_edges,
                          m.kept_edges, m.kept_true_edges),
          absl::StrFormat(R"("filter_dropped_true_edges": %d, )", m.dropped_true_edges),
          absl::StrFormat(R"("pt_min": %s, "particle_min_hits": %d, "min_hits": %d, )", Num(metrics.pt_min),
                          metrics.particle_min_hits, building.min_hits),
          R"("efficiency_vs_pt": )", BinsJson(m.by_pt), R"(, "efficiency_vs_eta": )", BinsJson(m.by_eta),
          "}\n");
      FG_RETURN_IF_ERROR(graph::io::WriteFileAtomically(flags.Get("summary_json"), json));
    }
    return absl::OkStatus();
  };
  if (absl::Status s = run(); !s.ok()) {
    std::fprintf(stderr, "flexgraph track: %s\n", std::string(s.message()).c_str());
    return code;
  }
  return 0;
}

const CommandRegistrar kTrack("track", "build particle tracks with a trained edge classifier", Track);

}  // namespace
}  // namespace fg::cli
