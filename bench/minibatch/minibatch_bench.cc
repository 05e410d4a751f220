// Mini-batch sampling throughput: one epoch of batches (the training vertices of the dataset,
// shuffled, cut into --batch_size) sampled in bulks of K = each of --bulk_sizes, on the
// neighbourhood matrices the trainer selects for --model. Prints sampled HDG entries per second,
// the speedup of each K over K = 1, and the fraction of the memory ceiling reached, measured
// against a STREAM triad run here: node-wise, a sampled entry costs at least one random cache line
// (its column id) and one random slot of the batch's vertex map; layer-wise (LADIES), every entry
// of a frontier row is read (its column id and weight, streamed), sampled or not. --sample_on
// device draws the rows on a CUDA device (sampling/device_sampler.h; the blocks are built on the
// host either way). ShaDow (--sampler shadow, --fanouts per hop): the entries are the induced
// subgraphs' edges (layer 0's block), and every row of every subgraph is read whole (its column ids,
// streamed, after a random line for its offsets). Writes the figures as JSON with --summary_json.
//
//   minibatch_bench [--dataset rmat:scale=18,edge_factor=16,features=16,classes=8,seed=1]
//                   [--model sage] [--batch_size 1024] [--fanouts 25,10] [--sampler neighbor]
//                   [--layer_size 512] [--bulk_sizes 1,8,32] [--epochs 3] [--threads 0]
//                   [--sample_on host] [--summary_json FILE]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "bench/ceilings.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "flexgraph/base/parallel.h"
#include "flexgraph/base/timer.h"
#include "runtime/train/config.h"
#include "runtime/train/summary.h"
#include "runtime/train/trainer.h"
#include "sampling/device_sampler.h"
#include "sampling/sampler.h"

namespace {

using namespace fg;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "minibatch_bench: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> flags = {
      {"dataset", "rmat:scale=18,edge_factor=16,features=16,classes=8,seed=1"},
      {"model", "sage"}, {"batch_size", "1024"}, {"fanouts", "25,10"}, {"sampler", "neighbor"},
      {"layer_size", "512"}, {"bulk_sizes", "1,8,32"}, {"epochs", "3"}, {"threads", "0"},
      {"sample_on", "host"}, {"summary_json", ""}};
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k.rfind("--", 0) != 0 || !flags.count(k.substr(2))) return Fail(absl::StrCat("unknown flag ", k));
    flags[k.substr(2)] = argv[i + 1];
  }
  int batch_size = 0, layer_size = 0, epochs = 0, threads = 0;
  if (!absl::SimpleAtoi(flags["batch_size"], &batch_size) || batch_size < 1 ||
      !absl::SimpleAtoi(flags["layer_size"], &layer_size) || layer_size < 1 ||
      !absl::SimpleAtoi(flags["epochs"], &epochs) || epochs < 1 ||
      !absl::SimpleAtoi(flags["threads"], &threads) || threads < 0) {
    return Fail("--batch_size, --layer_size, --epochs must be positive integers, --threads >= 0");
  }
  std::vector<int> bulk_sizes;
  for (absl::string_view s : absl::StrSplit(flags["bulk_sizes"], ',')) {
    int k;
    if (!absl::SimpleAtoi(s, &k) || k < 1) return Fail("--bulk_sizes: positive integers, e.g. 1,8,32");
    bulk_sizes.push_back(k);
  }
  if (threads > 0) SetNumThreads(threads);

  flexgraph::RunConfig o;
  o.mutable_dataset()->set_path(flags["dataset"]);
  o.mutable_model()->set_name(flags["model"]);
  o.mutable_output()->set_quiet(true);
  auto resolved = runtime::ResolveConfig(o);
  if (!resolved.ok()) return Fail(std::string(resolved.status().message()));
  Stopwatch load;
  auto created = runtime::Trainer::Create(*resolved);  // selects every layer's neighbourhoods
  if (!created.ok()) return Fail(std::string(created.status().message()));
  runtime::Trainer& trainer = **created;
  const int layers = trainer.model().num_layers();
  sampling::SamplerOptions options;
  if (!sampling::ParseSamplerKind(flags["sampler"], &options.kind)) {
    return Fail("--sampler: neighbor, ladies or shadow");
  }
  const bool shadow = options.kind == sampling::SamplerKind::kShadow;
  auto fanouts = runtime::ParseFanouts(flags["fanouts"], layers, options.kind);
  if (!fanouts.ok()) return Fail(std::string(fanouts.status().message()));
  options.fanouts = *fanouts;
  options.layer_size = layer_size;
  std::vector<sampling::NeighbourhoodMatrix> owned;
  owned.reserve(layers);
  std::vector<const sampling::NeighbourhoodMatrix*> matrices;
  for (int l = 0; l < layers; ++l) {
    auto h = std::shared_ptr<const hdg::Hdg>(&trainer.layer_hdg(l), [](const hdg::Hdg*) {});
    auto m = sampling::NeighbourhoodMatrix::Create(h, trainer.vertices().size());
    if (!m.ok()) return Fail(std::string(m.status().message()));
    owned.push_back(std::move(*m));
    matrices.push_back(&owned.back());
  }
  if (flags["sample_on"] != "host" && flags["sample_on"] != "device") return Fail("--sample_on: host or device");
  std::unique_ptr<sampling::DeviceSampler> device;
  if (flags["sample_on"] == "device") {
    auto created_sampler = sampling::DeviceSampler::Create(matrices, options);
    if (!created_sampler.ok()) return Fail(std::string(created_sampler.status().message()));
    device = std::move(*created_sampler);
  }
  const runtime::Task& task = trainer.task();
  std::vector<int64_t> item_ids(task.NumTrainingItems());
  if (item_ids.empty()) return Fail(task.Describe() + " has no training items to batch");
  for (size_t i = 0; i < item_ids.size(); ++i) item_ids[i] = static_cast<int64_t>(i);
  const Tensor items = Tensor::FromVector(item_ids);
  std::printf("%s on %s: %lld vertices, %lld edges, %lld training items (loaded in %.1fs), %d threads\n",
              flags["model"].c_str(), flags["dataset"].c_str(),
              static_cast<long long>(trainer.vertices().size()),
              static_cast<long long>(trainer.dataset().graph.TotalEdges()),
              static_cast<long long>(items.numel()), load.Seconds(), NumThreads());
  const double triad = bench::TriadBytesPerSecond();
  std::printf("STREAM triad: %.1f GB/s; %s sampler on the %s, %s, batches of %d\n", triad / 1e9,
              flags["sampler"].c_str(), flags["sample_on"].c_str(),
              options.kind != sampling::SamplerKind::kLayerWise ? ("fanouts " + flags["fanouts"]).c_str()
                                                               : ("layer size " + flags["layer_size"]).c_str(),
              batch_size);
  std::printf("\n%-6s %-10s %-14s %-16s %-10s %s\n", "bulk", "epoch (s)", "entries/epoch",
              "entries/s", "vs bulk 1", "fraction of memory ceiling");
  google::protobuf::Struct summary;
  auto& f = *summary.mutable_fields();
  f["dataset"].set_string_value(flags["dataset"]);
  f["model"].set_string_value(flags["model"]);
  f["sampler"].set_string_value(flags["sampler"]);
  f["sample_on"].set_string_value(flags["sample_on"]);
  f["threads"] = runtime::NumberValue(NumThreads());
  f["triad_bytes_per_second"] = runtime::NumberValue(triad);
  auto* rows = f["bulks"].mutable_list_value();
  double base = 0;
  for (int k : bulk_sizes) {
    std::vector<double> seconds;
    int64_t entries = 0, frontier_rows = 0, entries_read = 0;
    for (int e = 0; e < epochs + 1; ++e) {  // the first epoch warms up
      std::vector<Tensor> batches = sampling::EpochBatches(items, batch_size, options.seed, e);
      for (Tensor& b : batches) b = task.BatchRoots(b, e);
      int64_t epoch_entries = 0, epoch_rows = 0, epoch_read = 0;
      Stopwatch w;
      for (size_t first = 0; first < batches.size(); first += k) {
        std::vector<Tensor> seeds(batches.begin() + first,
                                  batches.begin() + std::min(batches.size(), first + k));
        auto bulk = device != nullptr ? device->SampleBulk(e, static_cast<int64_t>(first), seeds)
                                      : sampling::SampleBulk(matrices, options, e, static_cast<int64_t>(first), seeds);
        if (!bulk.ok()) return Fail(std::string(bulk.status().message()));
        for (const sampling::MiniBatch& b : *bulk) {
          if (shadow) {  // the subgraphs' edges, every row of them read whole
            const sampling::Block& b0 = b.blocks[0];
            epoch_entries += b0.hdg->level(1).csr().nnz();
            epoch_rows += b0.table.numel();
            const int64_t* row_ptr = matrices[0]->csr().row_ptr();
            for (int64_t j = 0; j < b0.table.numel(); ++j) {
              const int64_t row = matrices[0]->RowOf(b0.table.i64()[j]);
              epoch_read += row_ptr[row + 1] - row_ptr[row];
            }
            continue;
          }
          epoch_entries += b.sampled_edges;
          for (size_t l = 0; l < b.blocks.size(); ++l) {
            const int64_t roots = b.blocks[l].hdg->num_roots();
            epoch_rows += roots;
            if (options.kind != sampling::SamplerKind::kLayerWise) continue;
            const int64_t* row_ptr = matrices[l]->csr().row_ptr();
            for (int64_t j = 0; j < roots; ++j) {
              const int64_t row = matrices[l]->RowOf(b.blocks[l].table.i64()[j]);
              epoch_read += row_ptr[row + 1] - row_ptr[row];
            }
          }
        }
      }
      if (e > 0) {
        seconds.push_back(w.Seconds());
        entries = epoch_entries;
        frontier_rows = epoch_rows;
        entries_read = epoch_read;
      }
    }
    const double t = Median(seconds);
    const double rate = entries / t;
    if (base == 0) base = rate;
    // Node-wise, at least: a random 64-byte line per entry (its column id) and per frontier row (its
    // offsets), a random 64-byte slot line per entry in the batch's vertex map, and the entry written
    // (4 B). Layer-wise: every entry of the frontier rows streamed (column id and weight), a random
    // line per frontier row, and the kept entries written.
    const double entry_bytes = matrices[0]->weights() != nullptr ? 8.0 : 4.0;
    const double floor_bytes = shadow ? entries_read * 4.0 + frontier_rows * 64.0 + entries * 4.0
                               : options.kind == sampling::SamplerKind::kLayerWise
                                   ? entries_read * entry_bytes + frontier_rows * 64.0 + entries * 4.0
                                   : entries * (64.0 + 64.0 + 4.0) + frontier_rows * 64.0;
    const double fraction = floor_bytes / t / triad;
    std::printf("%-6d %-10.3f %-14lld %-16.3g %-10.2f %.1f%%\n", k, t, static_cast<long long>(entries),
                rate, rate / base, 100.0 * fraction);
    auto& row = *rows->add_values()->mutable_struct_value()->mutable_fields();
    row["bulk"] = runtime::NumberValue(k);
    row["epoch_seconds"] = runtime::NumberValue(t);
    row["entries_per_epoch"] = runtime::NumberValue(static_cast<double>(entries));
    row["entries_per_second"] = runtime::NumberValue(rate);
    row["speedup_over_bulk_1"] = runtime::NumberValue(rate / base);
    row["fraction_of_memory_ceiling"] = runtime::NumberValue(fraction);
    if (options.kind != sampling::SamplerKind::kNodeWise) {
      row["entries_read_per_epoch"] = runtime::NumberValue(static_cast<double>(entries_read));
    }
  }
  if (!flags["summary_json"].empty()) {
    std::ofstream out(flags["summary_json"]);
    out << runtime::StructToJson(summary) << "\n";
    if (!out) return Fail(absl::StrCat("cannot write ", flags["summary_json"]));
  }
  return 0;
}
