// partition_bench: edge cut, ghosts and estimated imbalance of hash, METIS and balanced (METIS +
// the cost-model rebalancer) partitions for P = 2, 4, 8, 16, on RMAT, Cora and IMDB, with the cost
// models of GCN, PinSage and MAGNN. Prints one Markdown table (bench/README.md has the results).
//
//   partition_bench [--rmat_scale 16] [--parts 2,4,8,16] [--datasets rmat,cora,imdb]
//                   [--models gcn,pinsage,magnn] [--calibration FILE] [--network_gbps 10]
// GCN needs one node type: on IMDB it runs on the homogeneous view (the union graph of all
// relations, every vertex a root). The cost models are the registered models' own (their
// selections and Layer::Cost); where a model cannot run on a dataset the table says n/a and why.
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "flexgraph/base/timer.h"
#include "flexgraph/graph/dataset.h"
#include "nau/metapath.h"
#include "partition/plan.h"
#include "partition/union_graph.h"
#include "runtime/train/config.h"

namespace fg::partition {
namespace {

struct Args {
  int rmat_scale = 16;
  int edge_factor = 16;
  std::vector<int> parts = {2, 4, 8, 16};
  std::vector<std::string> datasets = {"rmat", "cora", "imdb"};
  std::vector<std::string> models = {"gcn", "pinsage", "magnn"};
  std::string calibration;
  double network_gbps = 0;  // 0: the calibration file's (default 10)
  std::map<std::string, std::string> model_opts;  // model -> key=value[;...]
};

bool ParseArgs(int argc, char** argv, Args* a) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--rmat_scale") {
      if (!absl::SimpleAtoi(v, &a->rmat_scale)) return false;
    } else if (k == "--edge_factor") {
      if (!absl::SimpleAtoi(v, &a->edge_factor)) return false;
    } else if (k == "--parts") {
      a->parts.clear();
      for (absl::string_view p : absl::StrSplit(v, ',')) {
        int x;
        if (!absl::SimpleAtoi(p, &x)) return false;
        a->parts.push_back(x);
      }
    } else if (k == "--datasets") {
      a->datasets = absl::StrSplit(v, ',');
    } else if (k == "--models") {
      a->models = absl::StrSplit(v, ',');
    } else if (k == "--calibration") {
      a->calibration = v;
    } else if (k == "--network_gbps") {
      if (!absl::SimpleAtod(v, &a->network_gbps)) return false;
    } else {
      return false;
    }
  }
  return argc % 2 == 1;
}

// One node type "node" over the union graph; features of width `features` (never touched).
graph::Dataset HomogeneousView(const graph::Dataset& ds, const Csr& union_graph, int64_t features) {
  graph::Dataset h;
  h.name = ds.name + " (homogeneous view)";
  h.graph.node_types = {"node"};
  h.graph.num_nodes = {union_graph.num_rows};
  graph::Relation r;
  r.src_type = r.dst_type = "node";
  r.name = "edge";
  r.by_src = r.by_dst = union_graph;
  r.symmetric = true;
  h.graph.relations.push_back(r);
  h.features["node"] = Tensor::Empty({union_graph.num_rows, features});
  h.labels["node"] = Tensor::Zeros({union_graph.num_rows}, DType::kInt64);
  const std::string t = ds.LabeledType();
  h.num_classes["node"] = ds.num_classes.count(t) ? ds.num_classes.at(t) : 2;
  return h;
}

int Main(int argc, char** argv) {
  Args args;
  if (!ParseArgs(argc, argv, &args)) {
    std::fprintf(stderr,
                 "usage: partition_bench [--rmat_scale S] [--edge_factor F] [--parts 2,4,8,16] "
                 "[--datasets rmat,cora,imdb] [--models gcn,pinsage,magnn] [--calibration FILE] "
                 "[--network_gbps G]\n");
    return 2;
  }
  auto k = LoadOrCalibrate(args.calibration, false, args.network_gbps * 1e9 / 8);
  if (!k.ok()) {
    std::fprintf(stderr, "calibration: %s\n", std::string(k.status().message()).c_str());
    return 1;
  }
  std::printf("cost model: %.3g ns/entry-float, %.3g ns/row-float, %.3g ns/GEMM flop, %.3g ns/gathered "
              "float, %.3g Gbit/s network (fit rms %.2f)\n\n",
              k->entry_float_seconds * 1e9, k->row_float_seconds * 1e9, k->gemm_flop_seconds * 1e9,
              k->gather_float_seconds * 1e9, k->network_bytes_per_second * 8e-9, k->fit_relative_rms);
  std::printf("| dataset | model | P | hash cut | hash ghosts | hash imb. | METIS cut | METIS ghosts "
              "| METIS imb. | balanced cut | balanced ghosts | balanced imb. | balanced s |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::fflush(stdout);
  for (const std::string& name : args.datasets) {
    std::string path = name;
    if (name == "rmat") {
      path = absl::StrCat("rmat:scale=", args.rmat_scale, ",edge_factor=", args.edge_factor,
                          ",features=64,classes=8");
    } else if (name == "cora" || name == "imdb") {
      path = absl::StrCat(FG_SHARED_DATA_DIR, "/", name);
    }
    auto ds = graph::LoadDataset(path, {});
    if (!ds.ok()) {
      std::fprintf(stderr, "%s: %s\n", name.c_str(), std::string(ds.status().message()).c_str());
      continue;
    }
    const std::string label = name == "rmat" ? absl::StrCat("RMAT-", args.rmat_scale) : name;
    for (const std::string& model : args.models) {
      const graph::Dataset* data = &*ds;
      graph::Dataset view;
      std::string shown = label;
      if (model == "gcn" && !ds->graph.IsHomogeneous()) {
        auto g = BuildUnionGraph(ds->graph);
        if (!g.ok()) continue;
        const auto& f = ds->features.begin()->second;
        view = HomogeneousView(*ds, *g, f.defined() ? f.dim(1) : 64);
        data = &view;
        shown = label + " (union)";
      }
      flexgraph::RunConfig config;
      config.mutable_model()->set_name(model);
      // One node type: the metapath N-N-N, whose instances explode on skewed graphs, sampled as
      // MAGNN's minibatch code does.
      if (model == "magnn" && data->graph.IsHomogeneous()) {
        const std::string n = nau::TypeToken(data->graph, 0);
        auto& options = *config.mutable_model()->mutable_options();
        options["metapaths"] = absl::StrCat(n, "-", n, "-", n);
        options["max_instances"] = "32";
      }
      auto resolved = fg::runtime::ResolveConfig(config);
      if (!resolved.ok()) {
        std::fprintf(stderr, "partition_bench: %s\n", std::string(resolved.status().message()).c_str());
        return 1;
      }
      const WorkloadOptions wo = fg::runtime::WorkloadOptionsFrom(*resolved);
      auto cost = CostModel::Create(*data, wo, *k);
      if (!cost.ok()) {
        std::printf("| %s | %s | - | n/a: %s |||||||||\n", shown.c_str(), model.c_str(),
                    std::string(cost.status().message()).c_str());
        std::fflush(stdout);
        continue;
      }
      for (int P : args.parts) {
        std::string row = absl::StrCat("| ", shown, " | ", model, " | ", P);
        double balanced_seconds = 0;
        for (Method m : {Method::kHash, Method::kMetis, Method::kBalanced}) {
          PartitionRequest req;
          req.num_parts = P;
          req.method = m;
          auto plan = Partition(*data, *cost, req);
          if (!plan.ok()) {
            absl::StrAppend(&row, " | n/a | n/a | n/a");
            std::fprintf(stderr, "%s %s P=%d %s: %s\n", shown.c_str(), model.c_str(), P,
                         MethodName(m), std::string(plan.status().message()).c_str());
            continue;
          }
          absl::StrAppend(&row, " | ", plan->stats.edge_cut, " | ", plan->stats.ghosts_total, " | ",
                          absl::StrFormat("%.3f", plan->stats.imbalance));
          if (m == Method::kBalanced) balanced_seconds = plan->seconds;
        }
        absl::StrAppend(&row, absl::StrFormat(" | %.1f |", balanced_seconds));
        std::printf("%s\n", row.c_str());
        std::fflush(stdout);
      }
    }
  }
  return 0;
}

}  // namespace
}  // namespace fg::partition

int main(int argc, char** argv) { return fg::partition::Main(argc, argv); }
