// Dataset commands of the `flexgraph` binary:
//   flexgraph info DATASET [--summary_json FILE]      counts, degrees, features, labels, splits, memory
//                                                    (a partitioned dataset: parts, sizes, edge cut)
//   flexgraph generate SPEC --out DIR [--format ogb|npy|fgc]
//   flexgraph convert DATASET [--cache FILE.fgc] [--npy_dir DIR] [--ogb_dir DIR]
// DATASET is anything LoadDataset accepts (an OGB raw directory, a .npy workload directory, an edge
// list, a .fgc cache or a generator spec). Errors print the Status (naming file and line) and exit 1.
// generate and convert write a dataset directory only into a new or empty one (exit status 2
// otherwise, before anything is loaded); summaries are written whole (a temporary file renamed).
#include <cstdio>
#include <string>
#include <vector>

#include <google/protobuf/util/json_util.h>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/progress.h"
#include "flexgraph/base/status.h"
#include "flexgraph/base/timer.h"
#include "flexgraph/graph/dataset.h"
#include "flexgraph/graph/gen/spec.h"
#include "flexgraph/graph/io/cache.h"
#include "flexgraph/graph/io/edge_list.h"
#include "flexgraph/graph/io/file.h"
#include "flexgraph/graph/io/ogb.h"
#include "flexgraph/graph/summary.h"
#include "partition/partitioned_dataset.h"
#include "runtime/cli/commands.h"
#include "runtime/cli/flags.h"

namespace fg::cli {
namespace {

void AddLoadFlags(FlagSet* flags) {
  flags->AddString("split", "", "split directory under split/ (default: the only or first one)");
  flags->AddString("cache_dir", "", "binary cache directory (written on first load, read later)");
  flags->AddString("threads", "0", "threads for parsing (0 = all cores)");
  flags->AddBool("reverse_edges", true, "homogeneous graphs: add reverse edges");
  flags->AddBool("self_loops", false, "homogeneous graphs: keep self loops");
}

absl::StatusOr<graph::LoadOptions> LoadOptionsFrom(const FlagSet& flags) {
  graph::LoadOptions o;
  o.split = flags.Get("split");
  o.cache_dir = flags.Get("cache_dir");
  FG_ASSIGN_OR_RETURN(int64_t threads, flags.GetInt("threads"));
  o.threads = static_cast<int>(threads);
  o.add_reverse_edges = flags.GetBool("reverse_edges");
  o.remove_self_loops = !flags.GetBool("self_loops");
  return o;
}

// Parses flags; returns -1 to continue, or the exit code (help, usage errors).
int ParseOrExit(FlagSet& flags, const std::vector<std::string>& args, size_t positional) {
  if (absl::Status s = flags.Parse(args); !s.ok()) {
    std::fprintf(stderr, "flexgraph: %s\n\n%s", std::string(s.message()).c_str(), flags.Usage().c_str());
    return 2;
  }
  if (flags.help_requested()) {
    std::printf("%s", flags.Usage().c_str());
    return 0;
  }
  if (flags.positional().size() != positional) {
    std::fprintf(stderr, "flexgraph: expected %zu argument(s)\n\n%s", positional, flags.Usage().c_str());
    return 2;
  }
  return -1;
}

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "flexgraph: %s\n", std::string(s.message()).c_str());
  return 1;
}

// A refusal before anything is read or written: exit status 2, as for a usage error.
int UsageFail(const absl::Status& s) {
  std::fprintf(stderr, "flexgraph: %s\n", std::string(s.message()).c_str());
  return 2;
}

// A dataset directory (formats ogb and npy) is written only into a new or empty directory, as
// `partition --out` is: files already there would mix with the new ones or outlive them (old
// splits, another layout). A .fgc cache is one file, replaced whole.
absl::Status RefuseFilledOutput(const std::string& flag, const std::string& out,
                                const std::string& format) {
  if (format == "fgc") return absl::OkStatus();
  return graph::io::RequireNewOrEmptyDirectory(flag, out);
}

absl::StatusOr<graph::Dataset> Load(const std::string& what, const graph::LoadOptions& o) {
  Progress progress("load " + what, 0);
  FG_ASSIGN_OR_RETURN(graph::Dataset ds, graph::LoadDataset(what, o));
  progress.Finish();
  return ds;
}

// A partitioned dataset: its metadata (parts, sizes, edge cut), read without loading any part.
int InfoPartitioned(const FlagSet& flags) {
  auto meta = partition::ReadPartitionMeta(flags.positional()[0]);
  if (!meta.ok()) return Fail(meta.status());
  std::printf("%s", partition::DescribePartitioned(*meta).c_str());
  if (!flags.Get("summary_json").empty()) {
    std::string json;
    google::protobuf::util::JsonPrintOptions options;
    options.add_whitespace = true;
    if (!google::protobuf::util::MessageToJsonString(*meta, &json, options).ok()) {
      return Fail(absl::InternalError("cannot print the metadata as JSON"));
    }
    if (absl::Status s = graph::io::WriteFileAtomically(flags.Get("summary_json"), json); !s.ok()) {
      return Fail(s);
    }
  }
  return 0;
}

int Info(const std::vector<std::string>& args) {
  FlagSet flags("info", "Prints a dataset's node and edge counts per type and relation, degree "
                        "statistics, feature dimensions, label counts, splits and memory.");
  flags.AddPositional("DATASET", "dataset directory, partitioned dataset, edge list, .fgc cache or generator spec");
  AddLoadFlags(&flags);
  flags.AddString("summary_json", "", "also write the summary as JSON to this file");
  if (int rc = ParseOrExit(flags, args, 1); rc >= 0) return rc;
  auto o = LoadOptionsFrom(flags);
  if (!o.ok()) return Fail(o.status());
  if (partition::IsPartitionedDataset(flags.positional()[0])) return InfoPartitioned(flags);
  auto ds = Load(flags.positional()[0], *o);
  if (!ds.ok()) return Fail(ds.status());
  const graph::DatasetSummary summary = graph::Summarize(*ds);
  std::printf("%s", summary.ToText().c_str());
  if (!flags.Get("summary_json").empty()) {
    if (absl::Status s =
            graph::io::WriteFileAtomically(flags.Get("summary_json"), summary.ToJson());
        !s.ok()) {
      return Fail(s);
    }
  }
  return 0;
}

absl::Status WriteAs(const graph::Dataset& ds, const std::string& format, const std::string& out,
                     bool normalize) {
  if (format == "ogb") return graph::io::WriteOgb(ds, out);
  if (format == "npy") return graph::io::WriteNpyDirectory(ds, out, normalize);
  if (format == "fgc") return graph::io::WriteCache(ds, out);
  return absl::InvalidArgumentError("--format must be ogb, npy or fgc, got '" + format + "'");
}

int Generate(const std::vector<std::string>& args) {
  FlagSet flags("generate",
                "Generates an RMAT, SBM or TrackML-like dataset, e.g. 'flexgraph generate "
                "sbm:nodes=20000,classes=8,features=64 --out /tmp/sbm', 'flexgraph generate "
                "rmat:scale=16,edge_factor=16 --out /tmp/rmat --format npy' or 'flexgraph generate "
                "trackml:events=100,particles=500,noise=0.1,seed=1 --out /tmp/trackml.fgc --format "
                "fgc' (events as graphs; the .fgc cache keeps the hits' particles that track "
                "metrics need, the OGB layout does not).");
  flags.AddPositional("SPEC", "sbm[:key=value,...], rmat[:key=value,...] or trackml[:key=value,...]");
  flags.AddString("out", "", "output directory (or .fgc file with --format fgc)");
  flags.AddString("format", "ogb", "ogb (raw layout, gzip CSV), npy (baseline workload) or fgc (cache)");
  flags.AddBool("normalize_features", false, "npy: ask the baselines to row-normalise features");
  flags.AddString("threads", "0", "threads (0 = all cores)");
  if (int rc = ParseOrExit(flags, args, 1); rc >= 0) return rc;
  const std::string spec = flags.positional()[0];
  if (flags.Get("out").empty()) return Fail(absl::InvalidArgumentError("generate: --out is required"));
  graph::LoadOptions o;
  auto threads = flags.GetInt("threads");
  if (!threads.ok()) return Fail(threads.status());
  o.threads = static_cast<int>(*threads);
  if (!graph::IsGeneratorSpec(spec)) {
    return Fail(absl::InvalidArgumentError("generate: SPEC must start with sbm, rmat or trackml, got '" +
                                           spec + "'"));
  }
  // A dataset directory is written into a new or empty one only, checked before generating.
  if (absl::Status s = RefuseFilledOutput("--out", flags.Get("out"), flags.Get("format"));
      !s.ok()) {
    return UsageFail(s);
  }
  auto ds = Load(spec, o);
  if (!ds.ok()) return Fail(ds.status());
  Stopwatch watch;
  if (absl::Status s = WriteAs(*ds, flags.Get("format"), flags.Get("out"), flags.GetBool("normalize_features")); !s.ok()) {
    return Fail(s);
  }
  std::fprintf(stderr, "wrote %s (%s) in %.2f s\n", flags.Get("out").c_str(), flags.Get("format").c_str(),
               watch.Seconds());
  return 0;
}

int Convert(const std::vector<std::string>& args) {
  FlagSet flags("convert", "Converts a dataset to the binary cache (.fgc), .npy arrays and/or the "
                           "OGB raw layout.");
  flags.AddPositional("DATASET", "dataset directory, partitioned dataset, edge list, .fgc cache or generator spec");
  AddLoadFlags(&flags);
  flags.AddString("cache", "", "write the binary cache to this .fgc file");
  flags.AddString("npy_dir", "", "write .npy arrays (the baseline workload layout) to this directory");
  flags.AddString("ogb_dir", "", "write the OGB raw layout to this directory");
  flags.AddBool("normalize_features", false, "npy: ask the baselines to row-normalise features");
  if (int rc = ParseOrExit(flags, args, 1); rc >= 0) return rc;
  if (flags.Get("cache").empty() && flags.Get("npy_dir").empty() && flags.Get("ogb_dir").empty()) {
    return Fail(absl::InvalidArgumentError("convert: give --cache, --npy_dir and/or --ogb_dir"));
  }
  auto o = LoadOptionsFrom(flags);
  if (!o.ok()) return Fail(o.status());
  const std::pair<const char*, const char*> outputs[] = {
      {"cache", "fgc"}, {"npy_dir", "npy"}, {"ogb_dir", "ogb"}};
  for (const auto& [flag, format] : outputs) {  // before loading anything
    if (flags.Get(flag).empty()) continue;
    if (absl::Status s = RefuseFilledOutput(absl::StrCat("--", flag), flags.Get(flag), format);
        !s.ok()) {
      return UsageFail(s);
    }
  }
  if (partition::IsPartitionedDataset(flags.positional()[0])) return InfoPartitioned(flags);
  auto ds = Load(flags.positional()[0], *o);
  if (!ds.ok()) return Fail(ds.status());
  for (const auto& [flag, format] : outputs) {
    if (flags.Get(flag).empty()) continue;
    Progress progress("write " + flags.Get(flag), 0);
    if (absl::Status s = WriteAs(*ds, format, flags.Get(flag), flags.GetBool("normalize_features")); !s.ok()) {
      return Fail(s);
    }
  }
  return 0;
}

const CommandRegistrar kInfo("info", "print a dataset's counts, degrees, features, labels and splits", Info);
const CommandRegistrar kGenerate("generate", "write an RMAT, SBM or TrackML-like dataset (OGB raw layout, .npy, .fgc)", Generate);
const CommandRegistrar kConvert("convert", "convert a dataset to the binary cache, .npy arrays or OGB layout", Convert);

}  // namespace
}  // namespace fg::cli
