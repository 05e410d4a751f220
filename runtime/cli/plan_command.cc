// `flexgraph plan`: the performance model (runtime/plan/planner.h) for a dataset, or for counts
// and a degree law, a model, P workers, a device and a link: per training scheme the bytes each
// worker sends and receives per epoch, its memory and the epoch time, and the scheme it picks.
//
//   flexgraph plan --dataset rmat:scale=18,edge_factor=16,features=128,classes=8 --workers 8 --device cpu
//   flexgraph plan --vertices 111e6 --edges 1.6e9 --undirected --features 128 --hidden 256
//       --classes 172 --layers 3 --model gcn --workers 1024 --device h100 --bandwidth_gbps 200
//       --latency_us 5
//   flexgraph plan --dataset D --model gcn --hidden 16 --workers 2 --partitions hash --explain run.json
//       (a launched run's summary: its measured bytes and time beside the prediction)
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "flexgraph/base/status.h"
#include "flexgraph/graph/dataset.h"
#include "flexgraph/graph/io/file.h"
#include "partition/partitioner.h"
#include "runtime/cli/commands.h"
#include "runtime/cli/flags.h"
#include "runtime/cluster/leader.h"
#include "runtime/plan/planner.h"
#include "runtime/train/summary.h"

namespace fg::cli {
namespace {

void AddFlags(FlagSet* f) {
  f->AddString("dataset", "", "a dataset (anything `train --dataset` takes): its counts, degrees, features and classes");
  f->AddString("vertices", "", "without --dataset: vertices (e.g. 111e6)");
  f->AddString("edges", "", "without --dataset: adjacency entries, or undirected edges with --undirected");
  f->AddBool("undirected", false, "--edges counts undirected edges, each stored both ways");
  f->AddString("degrees", "powerlaw:2.5", "without --dataset: degree law, poisson or powerlaw:ALPHA (ALPHA > 2)");
  f->AddString("model", "gcn", "gcn, sage, gin or sgc");
  f->AddString("features", "", "input feature width (default: the dataset's)");
  f->AddString("hidden", "256", "hidden width");
  f->AddString("classes", "", "classes (default: the dataset's)");
  f->AddString("layers", "2", "layers (SGC: hops)");
  f->AddString("workers", "", "number of workers P");
  f->AddString("device", "cpu", "cpu, h100 or h200");
  f->AddString("ceilings_json", "", "cpu rates from bench/machine_ceilings' JSON output instead of DESIGN.md's");
  f->AddString("memory_gib", "", "memory per worker in GiB (default: the device's, shared by --workers_per_device)");
  f->AddString("workers_per_device", "1",
               "workers sharing one device (a machine's cores, or a GPU): each gets that share of its rates and memory");
  f->AddString("bandwidth_gbps", "200", "link bandwidth per worker, Gbit/s");
  f->AddString("latency_us", "5", "latency per message, microseconds");
  f->AddString("partitions", "hash,metis",
               "with --dataset: 1D partitions to measure the cut of (hash, metis; none); METIS is skipped "
               "where it would not fit in memory");
  f->AddString("evaluations_per_epoch", "0", "forward-only evaluation passes per epoch to include");
  f->AddString("seed", "1", "seed of the hash partition and METIS");
  f->AddString("summary_json", "", "also write the plan as JSON to this file");
  f->AddString("explain", "",
               "a run's --summary_json (launch -- train): its measured bytes per worker and epoch, and "
               "epoch time, beside this plan's prediction for the 1D scheme it ran (--exchange auto: "
               "partial; --partitions names the run's partition; --seed its train seed)");
  f->AddString("explain_exchange", "auto", "with --explain: the run's --exchange, auto or rows");
}

absl::StatusOr<double> Positive(const FlagSet& f, const char* name) {
  FG_ASSIGN_OR_RETURN(double v, f.GetDouble(name));
  if (!(v > 0) || !std::isfinite(v)) return absl::InvalidArgumentError(absl::StrCat("--", name, " must be positive, got ", f.Get(name)));
  return v;
}

absl::StatusOr<int64_t> Count(const FlagSet& f, const char* name) {
  FG_ASSIGN_OR_RETURN(double v, Positive(f, name));
  if (v != std::floor(v) || v > 9e18) return absl::InvalidArgumentError(absl::StrCat("--", name, " must be a whole number, got ", f.Get(name)));
  return static_cast<int64_t>(v);
}

absl::StatusOr<plan::PlanInput> FromFlags(const FlagSet& f) {
  plan::PlanInput in;
  FG_ASSIGN_OR_RETURN(in.model.kind, plan::ParseModelKind(f.Get("model")));
  if (!f.IsSet("workers")) return absl::InvalidArgumentError("--workers is required");
  FG_ASSIGN_OR_RETURN(const int64_t workers, Count(f, "workers"));
  if (workers > (1 << 20)) return absl::InvalidArgumentError("--workers: at most 1048576");
  in.workers = static_cast<int>(workers);
  FG_ASSIGN_OR_RETURN(const int64_t layers, Count(f, "layers"));
  in.model.layers = static_cast<int>(layers);
  FG_ASSIGN_OR_RETURN(in.model.hidden, Count(f, "hidden"));
  if (f.IsSet("features")) {
    FG_ASSIGN_OR_RETURN(in.model.features, Count(f, "features"));
  }
  if (f.IsSet("classes")) {
    FG_ASSIGN_OR_RETURN(in.model.classes, Count(f, "classes"));
  }
  const std::string dataset = f.Get("dataset");
  FG_ASSIGN_OR_RETURN(const int64_t seed, f.GetInt("seed"));
  if (!dataset.empty()) {
    if (f.IsSet("vertices") || f.IsSet("edges")) return absl::InvalidArgumentError("--dataset and --vertices/--edges exclude each other");
    FG_ASSIGN_OR_RETURN(graph::Dataset ds, graph::LoadDataset(dataset, {}));
    FG_RETURN_IF_ERROR(ds.graph.ToInt32Indices());
    if (ds.graph.relations.size() != 1 || ds.features.size() > 1) {
      return absl::InvalidArgumentError(absl::StrCat("--dataset ", dataset, ": the model covers homogeneous graphs"));
    }
    const Csr& adj = ds.Adjacency();
    in.graph = plan::CountsOf(adj);
    if (!f.IsSet("features")) {
      if (ds.features.empty()) return absl::InvalidArgumentError(absl::StrCat("--dataset ", dataset, " has no features: give --features"));
      in.model.features = ds.features.begin()->second.shape()[1];
    }
    if (!f.IsSet("classes")) {
      if (ds.num_classes.empty()) return absl::InvalidArgumentError(absl::StrCat("--dataset ", dataset, " has no labels: give --classes"));
      in.model.classes = ds.num_classes.begin()->second;
    }
    const bool self_loops = in.model.kind == plan::ModelKind::kGcn || in.model.kind == plan::ModelKind::kSgc;
    // Each partition is the one a launched run of this model gets (METIS weighted by its cost model).
    flexgraph::RunConfig user;
    user.mutable_dataset()->set_path(dataset);
    user.mutable_model()->set_name(f.Get("model"));
    user.mutable_model()->set_hidden(static_cast<int32_t>(in.model.hidden));
    user.mutable_model()->set_layers(in.model.layers);
    user.mutable_train()->set_seed(seed);
    FG_ASSIGN_OR_RETURN(const flexgraph::RunConfig run, runtime::ResolveConfig(user));
    std::optional<partition::CostModel> cost;  // built once, for the first partition measured
    const std::vector<std::string> names = absl::StrSplit(f.Get("partitions"), ',', absl::SkipEmpty());
    for (const std::string& name : names) {
      if (name == "none") continue;
      FG_ASSIGN_OR_RETURN(const partition::Method method, partition::ParseMethod(name));
      if (method != partition::Method::kHash && method != partition::Method::kMetis) {
        return absl::InvalidArgumentError(absl::StrCat("--partitions ", name, ": hash, metis or none"));
      }
      if (in.workers > adj.num_rows) continue;  // refused by MakePlan with the numbers
      if (method == partition::Method::kMetis && in.workers == 1) continue;
      if (!cost) {
        FG_ASSIGN_OR_RETURN(cost, runtime::CostModelForRun(ds, run));
      }
      auto part = runtime::PartitionForRun(ds, *cost, run, in.workers, method);
      if (!part.ok() && method == partition::Method::kMetis) {
        std::fprintf(stderr, "plan: METIS skipped: %s\n", std::string(part.status().message()).c_str());
        continue;
      }
      FG_RETURN_IF_ERROR(part.status());
      in.cuts.push_back({name, plan::CountCut(adj, part->owners, in.workers, self_loops)});
    }
  } else {
    if (!f.IsSet("vertices") || !f.IsSet("edges") || !f.IsSet("features") || !f.IsSet("classes")) {
      return absl::InvalidArgumentError("without --dataset, give --vertices, --edges, --features and --classes");
    }
    FG_ASSIGN_OR_RETURN(in.graph.vertices, Count(f, "vertices"));
    FG_ASSIGN_OR_RETURN(in.graph.entries, Count(f, "edges"));
    if (f.GetBool("undirected")) in.graph.entries *= 2;
    const std::string law = f.Get("degrees");
    const double n = static_cast<double>(in.graph.vertices);
    if (law == "poisson") {
      in.graph.in_degrees = plan::PoissonDegrees(in.graph.vertices, static_cast<double>(in.graph.entries) / n);
    } else if (law.rfind("powerlaw:", 0) == 0) {
      char* end = nullptr;
      const double alpha = std::strtod(law.c_str() + 9, &end);
      if (*end != '\0' || !(alpha > 2.0)) return absl::InvalidArgumentError(absl::StrCat("--degrees ", law, ": powerlaw:ALPHA needs ALPHA > 2"));
      in.graph.in_degrees = plan::PowerLawDegrees(in.graph.vertices, in.graph.entries, alpha);
    } else {
      return absl::InvalidArgumentError(absl::StrCat("--degrees ", law, ": expected poisson or powerlaw:ALPHA"));
    }
    in.graph.out_degrees = in.graph.in_degrees;  // a symmetric adjacency
  }
  FG_ASSIGN_OR_RETURN(in.device, plan::DeviceByName(f.Get("device")));
  if (f.IsSet("ceilings_json")) {
    if (in.device.name != "cpu") return absl::InvalidArgumentError("--ceilings_json applies to --device cpu");
    FG_ASSIGN_OR_RETURN(const std::string json, graph::io::ReadFileToString(f.Get("ceilings_json")));
    FG_ASSIGN_OR_RETURN(in.device, plan::DeviceFromCeilingsJson(json, in.device.memory_bytes));
  }
  FG_ASSIGN_OR_RETURN(const int64_t sharing, Count(f, "workers_per_device"));
  if (sharing > in.workers) {
    return absl::InvalidArgumentError(absl::StrCat("--workers_per_device ", sharing, " exceeds --workers ", in.workers));
  }
  in.device.gemm_flops_per_s /= static_cast<double>(sharing);
  in.device.memory_bytes_per_s /= static_cast<double>(sharing);
  in.device.memory_bytes /= static_cast<double>(sharing);
  if (sharing > 1) absl::StrAppend(&in.device.source, ", shared by ", sharing, " workers");
  if (f.IsSet("memory_gib")) {
    FG_ASSIGN_OR_RETURN(const double gib, Positive(f, "memory_gib"));
    in.device.memory_bytes = gib * 1073741824.0;
  }
  FG_ASSIGN_OR_RETURN(const double gbps, Positive(f, "bandwidth_gbps"));
  in.link.bytes_per_s = gbps * 1e9 / 8;
  FG_ASSIGN_OR_RETURN(const double latency, f.GetDouble("latency_us"));
  if (!(latency >= 0)) return absl::InvalidArgumentError(absl::StrCat("--latency_us must not be negative, got ", f.Get("latency_us")));
  in.link.latency_s = latency * 1e-6;
  FG_ASSIGN_OR_RETURN(const int64_t evals, f.GetInt("evaluations_per_epoch"));
  if (evals < 0) return absl::InvalidArgumentError("--evaluations_per_epoch must not be negative");
  in.evaluations_per_epoch = static_cast<int>(evals);
  return in;
}

double Number(const google::protobuf::Struct& s, const std::string& key) {
  auto it = s.fields().find(key);
  return it == s.fields().end() || !it->second.has_number_value() ? std::nan("") : it->second.number_value();
}

// --explain: the run's measured traffic and time against the prediction of the scheme it ran, from
// the same partition. Bytes per worker and epoch are the workers' mean, evaluation passes included
// (the run's count of them, from its history). Errors name the file and the field.
absl::Status Explain(const FlagSet& f, const plan::PlanInput& in) {
  const std::string path = f.Get("explain");
  FG_ASSIGN_OR_RETURN(const std::string json, graph::io::ReadFileToString(path));
  FG_ASSIGN_OR_RETURN(const google::protobuf::Struct run, runtime::StructFromJson(json, path));
  const double world = Number(run, "world_size"), epochs = Number(run, "epochs");
  if (!(world >= 1) || !(epochs >= 1)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": no world_size or epochs: not a run summary"));
  }
  if (static_cast<int>(world) != in.workers) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": the run had ", world, " workers, --workers is ", in.workers));
  }
  if (const auto m = run.fields().find("model"); m != run.fields().end() && m->second.string_value() != f.Get("model")) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": the run trained ", m->second.string_value(), ", --model is ",
                                                   f.Get("model")));
  }
  if (const auto d = run.fields().find("dataset");
      f.IsSet("dataset") && d != run.fields().end() && d->second.string_value() != f.Get("dataset")) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": the run trained on ", d->second.string_value(),
                                                   ", --dataset is ", f.Get("dataset")));
  }
  // The run's partition is seeded with its train seed: the plan's must be too.
  if (const double seed = Number(run, "seed"); std::isfinite(seed) && f.Get("seed") != absl::StrCat(seed)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": the run's partition used seed ", seed, ", --seed is ",
                                                   f.Get("seed"), ": give --seed ", seed));
  }
  const std::string exchange = f.Get("explain_exchange");
  if (exchange != "auto" && exchange != "rows") {
    return absl::InvalidArgumentError(absl::StrCat("--explain_exchange ", exchange, ": auto or rows"));
  }
  if (in.cuts.empty()) return absl::InvalidArgumentError("--explain needs the run's partition in --partitions");
  const auto& [cut_name, cut] = in.cuts.front();
  plan::StrategySpec spec;
  spec.mode = exchange == "rows" ? plan::OneDMode::kRows : plan::OneDMode::kPartial;
  spec.partition = cut_name;
  // Evaluation passes per epoch: the epochs whose history holds validation figures.
  double evaluations = 0;
  if (const auto h = run.fields().find("history"); h != run.fields().end()) {
    for (const auto& e : h->second.list_value().values()) {
      const auto& fields = e.struct_value().fields();
      if (fields.contains("valid_accuracy") || fields.contains("valid_auc")) ++evaluations;
    }
  }
  plan::PlanInput train_only = in, eval_only = in;
  train_only.evaluations_per_epoch = 0;
  eval_only.evaluations_per_epoch = 1;
  const plan::Prediction t = plan::Predict(train_only, spec, &cut), e = plan::Predict(eval_only, spec, &cut);
  const double eval_share = evaluations / epochs;
  const double predicted = (t.bytes_sent - t.allreduce_bytes) + eval_share * (e.bytes_sent - t.bytes_sent);
  double measured = 0, allreduce = 0;
  const auto w = run.fields().find("workers");
  if (w == run.fields().end() || w->second.list_value().values_size() != in.workers) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": field workers does not list ", in.workers, " workers"));
  }
  for (const auto& v : w->second.list_value().values()) {
    const google::protobuf::Struct& ws = v.struct_value();
    measured += Number(ws, "bytes_features_per_epoch") + Number(ws, "bytes_partials_per_epoch") +
                Number(ws, "bytes_gradients_per_epoch");
    allreduce += Number(ws, "bytes_allreduce_per_epoch");
  }
  measured /= in.workers;
  allreduce /= in.workers;
  const double seconds = Number(run, "epoch_seconds_median");
  std::printf("explain %s (%s, %g epochs, %g evaluation passes):\n", path.c_str(), t.name.c_str(), epochs, evaluations);
  std::printf("  exchange bytes per worker and epoch: predicted %.0f, measured %.0f (%.4fx)\n", predicted, measured,
              measured / predicted);
  std::printf("  gradient all-reduce per worker and epoch: predicted %.0f, measured %.0f (%.4fx)\n", t.allreduce_bytes,
              allreduce, allreduce / t.allreduce_bytes);
  std::printf("  epoch seconds (training step, median): predicted %.4g (compute %.4g, link %.4g), measured %.4g (%.3fx)\n",
              t.epoch_s, t.compute_s, t.comm_s, seconds, seconds / t.epoch_s);
  return absl::OkStatus();
}

int Plan(const std::vector<std::string>& args) {
  FlagSet f("plan", "predict bytes, memory and epoch time per training scheme, and pick one");
  AddFlags(&f);
  if (absl::Status s = f.Parse(args); !s.ok()) {
    std::fprintf(stderr, "%s\n%s", std::string(s.message()).c_str(), f.Usage().c_str());
    return 2;
  }
  if (f.help_requested()) {
    std::printf("%s", f.Usage().c_str());
    return 0;
  }
  absl::StatusOr<plan::PlanInput> in = FromFlags(f);
  if (!in.ok()) {
    std::fprintf(stderr, "plan: %s\n", std::string(in.status().message()).c_str());
    return 2;
  }
  absl::StatusOr<plan::Plan> p = plan::MakePlan(*in);
  if (!p.ok()) {
    std::fprintf(stderr, "plan: %s\n", std::string(p.status().message()).c_str());
    return 2;
  }
  std::printf("%s", plan::FormatPlan(*in, *p).c_str());
  if (f.IsSet("explain")) {
    if (absl::Status s = Explain(f, *in); !s.ok()) {
      std::fprintf(stderr, "plan: %s\n", std::string(s.message()).c_str());
      return 2;
    }
  }
  if (const std::string path = f.Get("summary_json"); !path.empty()) {
    if (absl::Status s = graph::io::WriteFileAtomically(path, plan::PlanJson(*in, *p)); !s.ok()) {
      std::fprintf(stderr, "plan: %s\n", std::string(s.message()).c_str());
      return 1;
    }
  }
  return p->best >= 0 ? 0 : 1;
}

}  // namespace

CommandRegistrar plan_command("plan", "predict bytes, memory and epoch time per training scheme at P workers", Plan);

}  // namespace fg::cli
