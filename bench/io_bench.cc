// Dataset I/O throughput: generates gzip CSV files of at least 500 MB (decompressed) in /tmp, as
// OGB ships them (an integer edge list and a float feature matrix), parses them with the
// multi-threaded CSV reader and prints MB/s of decompressed CSV against the 100 MB/s target on
// 2 cores; then writes and reloads a binary cache (.fgc) of a large SBM dataset.
//
//   io_bench [--mb 500] [--dir /tmp/fg_io_bench] [--cache_nodes 2000000] [--keep]
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "flexgraph/base/parallel.h"
#include "flexgraph/base/rng.h"
#include "flexgraph/base/timer.h"
#include "flexgraph/graph/dataset.h"
#include "flexgraph/graph/io/cache.h"
#include "flexgraph/graph/io/csv.h"
#include "flexgraph/graph/io/file.h"

namespace {

using namespace fg;
using namespace fg::graph;

constexpr double kTargetMBps = 100.0;

double CpuSeconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// Writes a gzip CSV of about `mb` decompressed megabytes, one member per block of rows
// (compressed in parallel), unless a file of that name exists already. Returns decompressed bytes.
int64_t MakeCsv(const std::string& path, int64_t mb, bool floats) {
  if (std::filesystem::exists(path)) return -1;
  const int64_t target = mb * 1000000;
  const int64_t rows_per_block = floats ? 2000 : 400000;
  const int64_t cols = floats ? 100 : 2;
  FILE* f = std::fopen((path + ".tmp").c_str(), "wb");
  int64_t written = 0;
  for (int64_t batch = 0; written < target; ++batch) {
    const int blocks = NumThreads() * 2;
    std::vector<std::string> text(blocks), gz(blocks);
    ParallelForDynamic(0, blocks, 1, [&](int64_t b) {
      RandomStream rng(7, MixKey(batch, b));
      std::string& s = text[b];
      for (int64_t r = 0; r < rows_per_block; ++r) {
        for (int64_t c = 0; c < cols; ++c) {
          if (c > 0) s.push_back(',');
          if (floats) {
            io::AppendFloat(&s, rng.Normal());
          } else {
            io::AppendInt(&s, static_cast<int64_t>(rng.Below(int64_t{1} << 26)));
          }
        }
        s.push_back('\n');
      }
      gz[b] = io::GzipCompress(s, 6);
    });
    for (int b = 0; b < blocks; ++b) {
      std::fwrite(gz[b].data(), 1, gz[b].size(), f);
      written += static_cast<int64_t>(text[b].size());
    }
  }
  std::fclose(f);
  std::filesystem::rename(path + ".tmp", path);
  return written;
}

void ParseAndReport(const std::string& path, io::CsvType type, int64_t cols) {
  for (int threads : {NumThreads(), 1}) {
    io::CsvOptions o;
    o.columns = cols;
    o.threads = threads;
    Stopwatch w;
    const double cpu0 = CpuSeconds();
    auto t = io::ReadCsv(path, type, o);
    const double s = w.Seconds(), cpu = CpuSeconds() - cpu0;
    if (!t.ok()) {
      std::printf("  %s: %s\n", path.c_str(), std::string(t.status().message()).c_str());
      std::exit(1);
    }
    const double mbps = t->bytes / 1e6 / s;
    // CPU seconds tell how busy the machine was: on an idle machine wall time ~ CPU time / cores.
    std::printf("  %-24s %d parser thread(s) + inflater: %6.1f MB in %5.2f s = %6.1f MB/s (%.2fx the %.0f MB/s "
                "target); %.2f CPU s, %lld rows\n",
                std::filesystem::path(path).filename().c_str(), threads, t->bytes / 1e6, s, mbps,
                mbps / kTargetMBps, kTargetMBps, cpu, static_cast<long long>(t->rows));
  }
}

}  // namespace

int main(int argc, char** argv) {
  int64_t mb = 500, cache_nodes = 2000000;
  std::string dir = "/tmp/fg_io_bench";
  bool keep = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--mb" && i + 1 < argc) mb = std::atoll(argv[++i]);
    else if (a == "--dir" && i + 1 < argc) dir = argv[++i];
    else if (a == "--cache_nodes" && i + 1 < argc) cache_nodes = std::atoll(argv[++i]);
    else if (a == "--keep") keep = true;
    else {
      std::fprintf(stderr, "usage: io_bench [--mb 500] [--dir DIR] [--cache_nodes N] [--keep]\n");
      return 2;
    }
  }
  std::filesystem::create_directories(dir);
  std::printf("io_bench: %d threads, files of >= %lld MB decompressed in %s\n", NumThreads(),
              static_cast<long long>(mb), dir.c_str());
  const std::string edges = dir + "/edge-" + std::to_string(mb) + ".csv.gz";
  const std::string feats = dir + "/node-feat-" + std::to_string(mb) + ".csv.gz";
  Stopwatch gen;
  MakeCsv(edges, mb, false);
  MakeCsv(feats, mb, true);
  std::printf("  generated (or reused) the CSV files in %.1f s\n", gen.Seconds());
  ParseAndReport(edges, io::CsvType::kInt64, 2);
  ParseAndReport(feats, io::CsvType::kFloat32, 100);

  if (cache_nodes > 0) {
    const std::string spec = "sbm:nodes=" + std::to_string(cache_nodes) + ",features=64";
    Stopwatch g;
    auto ds = LoadDataset(spec, LoadOptions());
    if (!ds.ok()) return 1;
    const double gen_s = g.Seconds();
    const std::string cache = dir + "/sbm.fgc";
    Stopwatch w;
    if (!io::WriteCache(*ds, cache).ok()) return 1;
    const double write_s = w.Seconds();
    Stopwatch r;
    auto back = io::ReadCache(cache);
    const double read_s = r.Seconds();
    if (!back.ok()) return 1;
    const double mb_cache = std::filesystem::file_size(cache) / 1e6;
    std::printf("  cache %s: generate %.2f s, write %.1f MB in %.2f s, reload (checksums verified) in %.2f s = %.0f MB/s\n",
                spec.c_str(), gen_s, mb_cache, write_s, read_s, mb_cache / read_s);
    std::filesystem::remove(cache);
  }
  if (!keep) {
    std::filesystem::remove(edges);
    std::filesystem::remove(feats);
  }
  return 0;
}
