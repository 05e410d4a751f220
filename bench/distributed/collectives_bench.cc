// Collectives of FlexGraph's communicator backends on this machine: all-reduce (a float buffer
// summed across workers) and the exchange's planned all-to-all (each worker sends buffer/P bytes
// to every other), per buffer size, median seconds per call and bus bandwidth (all-reduce: bytes x
// 2(P-1)/P per second) as a fraction of a STREAM triad measured here. Under MPI it also times MPI_Allreduce and
// MPI_Alltoallv called directly on the same buffers, and prints FlexGraph's ratio to them.
//
//   gRPC: P processes  collectives_bench --backend grpc --world P --rank R --rendezvous DIR [flags]
//   MPI:  mpirun -np P collectives_bench --backend mpi [flags]
//   flags: --sizes_mib 1,16,64  --iters 10  --summary_json FILE (rank 0 writes it)
// bench/distributed/collectives.sh runs both for P = 2 and 4 next to torch.distributed's gloo.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "bench/ceilings.h"
#include "flexgraph/base/progress.h"
#include "flexgraph/base/timer.h"
#include "runtime/comm/grpc_communicator.h"
#include "runtime/comm/mpi_communicator.h"
#include "runtime/train/summary.h"

#ifdef FG_BENCH_HAVE_MPI
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace {

using namespace fg;

struct Options {
  std::string backend, rendezvous, summary_json;
  int world = 1, rank = 0, iters = 10;
  std::vector<int64_t> sizes_mib = {1, 16, 64};
};

int Fail(const std::string& message) {
  std::fprintf(stderr, "collectives_bench: %s\n", message.c_str());
  return 1;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// gRPC workers find each other through files DIR/rank-<r> holding "host:port".
absl::StatusOr<std::unique_ptr<runtime::Communicator>> GrpcGroup(const Options& o,
                                                                 std::unique_ptr<runtime::WorkerServer>* server) {
  const std::string token = "collectives-bench";
  auto started = runtime::WorkerServer::Start("127.0.0.1", 0, token, runtime::Tls{});
  if (!started.ok()) return started.status();
  *server = std::move(*started);
  const std::string mine = absl::StrCat(o.rendezvous, "/rank-", o.rank);
  { std::ofstream(mine + ".tmp") << "127.0.0.1:" << (*server)->port() << "\n"; }
  std::filesystem::rename(mine + ".tmp", mine);
  std::vector<std::string> peers(o.world);
  for (int r = 0; r < o.world; ++r) {
    for (int wait = 0; peers[r].empty(); ++wait) {
      std::ifstream in(absl::StrCat(o.rendezvous, "/rank-", r));
      std::getline(in, peers[r]);
      if (peers[r].empty()) {
        if (wait > 600) return absl::DeadlineExceededError(absl::StrCat("rank ", r, " did not appear in ", o.rendezvous));
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
  }
  return runtime::MakeGrpcCommunicator(o.rank, peers, token, runtime::Tls{}, server->get());
}

// Median seconds of `iters` calls of `op(i)`, after two warm-ups; every call starts after
// `prepare()` (not timed) and a barrier.
template <typename Op, typename Prepare>
double Time(runtime::Communicator& comm, int iters, int* epoch, Op op, Prepare prepare) {
  std::vector<double> t;
  for (int i = -2; i < iters; ++i) {
    prepare();
    if (!comm.Barrier(++*epoch, 1).ok()) std::exit(Fail("barrier failed"));
    Stopwatch w;
    op(++*epoch);
    if (i >= 0) t.push_back(w.Seconds());
  }
  return Median(t);
}
template <typename Op>
double Time(runtime::Communicator& comm, int iters, int* epoch, Op op) {
  return Time(comm, iters, epoch, op, [] {});
}

}  // namespace

int main(int argc, char** argv) {
  ReuseFreedMemory();  // as workers do
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    bool ok = true;
    if (flag == "--backend") o.backend = value;
    else if (flag == "--rendezvous") o.rendezvous = value;
    else if (flag == "--summary_json") o.summary_json = value;
    else if (flag == "--world") ok = absl::SimpleAtoi(value, &o.world) && o.world >= 1;
    else if (flag == "--rank") ok = absl::SimpleAtoi(value, &o.rank) && o.rank >= 0;
    else if (flag == "--iters") ok = absl::SimpleAtoi(value, &o.iters) && o.iters >= 1;
    else if (flag == "--sizes_mib") {
      o.sizes_mib.clear();
      for (absl::string_view s : absl::StrSplit(value, ',')) {
        int64_t m = 0;
        ok = ok && absl::SimpleAtoi(s, &m) && m >= 1;
        o.sizes_mib.push_back(m);
      }
    } else return Fail("unknown flag " + flag);
    if (!ok) return Fail("bad value for " + flag + ": " + value);
  }
  if ((argc - 1) % 2 != 0) return Fail("flags take values: --backend grpc|mpi ...");
  std::unique_ptr<runtime::WorkerServer> server;
  absl::StatusOr<std::unique_ptr<runtime::Communicator>> group;
  if (o.backend == "grpc") {
    if (o.rendezvous.empty() || o.rank >= o.world) return Fail("--backend grpc needs --world, --rank and --rendezvous");
    group = GrpcGroup(o, &server);
  } else if (o.backend == "mpi") {
    group = runtime::MakeMpiCommunicator();
  } else {
    return Fail("--backend takes grpc or mpi");
  }
  if (!group.ok()) return Fail(std::string(group.status().message()));
  runtime::Communicator& comm = **group;
  const int P = comm.size(), me = comm.rank();
  const double triad = me == 0 ? bench::TriadBytesPerSecond() : 0;
  if (me == 0) {
    std::printf("%s backend, %d workers; STREAM triad %.1f GB/s\n", o.backend.c_str(), P, triad / 1e9);
    std::printf("%10s %14s %10s %9s %14s %10s", "MiB", "allreduce s", "busbw GB/s", "of triad", "alltoallv s", "GB/s");
#ifdef FG_BENCH_HAVE_MPI
    if (o.backend == "mpi") std::printf(" %12s %12s", "vs MPI_Allr", "vs MPI_A2Av");
#endif
    std::printf("\n");
  }
  google::protobuf::Struct summary;
  auto& fields = *summary.mutable_fields();
  fields["backend"].set_string_value(o.backend);
  fields["world"] = runtime::NumberValue(P);
  fields["triad_bytes_per_second"] = runtime::NumberValue(triad);
  auto* rows = fields["sizes"].mutable_list_value();
  int epoch = 0;
  for (const int64_t mib : o.sizes_mib) {
    const int64_t n = mib << 18;  // floats
    std::vector<float> buf(n, 1.0f);
    const double allreduce = Time(comm, o.iters, &epoch, [&](int e) {
      if (!comm.AllReduce(buf.data(), n, e, 2).ok()) std::exit(Fail("all-reduce failed"));
    });
    // The exchange's planned all-to-all: `chunk` bytes to and from every peer.
    const int64_t chunk = n * 4 / P;
    std::vector<int64_t> planned(P, chunk);
    planned[me] = 0;
    std::vector<std::string> send;
    const double alltoall = Time(
        comm, o.iters, &epoch,
        [&](int e) {
          auto pending = comm.StartAllToAllV([&](int q) { return std::move(send[q]); }, planned,
                                             runtime::MakeTag(e, 0, 0, runtime::TrafficKind::kFeatures));
          if (!pending->Finish().ok()) std::exit(Fail("all-to-all failed"));
        },
        [&] {
          send.assign(P, std::string(chunk, 'x'));
          send[me].clear();
        });
    const double bytes = 4.0 * n;
    const double busbw = bytes * 2 * (P - 1) / P / allreduce;
    auto& row = *rows->add_values()->mutable_struct_value()->mutable_fields();
    row["bytes"] = runtime::NumberValue(bytes);
    row["allreduce_seconds"] = runtime::NumberValue(allreduce);
    row["allreduce_busbw_bytes_per_second"] = runtime::NumberValue(busbw);
    row["alltoallv_seconds"] = runtime::NumberValue(alltoall);
    if (me == 0) {
      std::printf("%10lld %14.5f %10.2f %8.1f%% %14.5f %10.2f", static_cast<long long>(mib), allreduce, busbw / 1e9,
                  100 * busbw / triad, alltoall, bytes * (P - 1) / P / alltoall / 1e9);
    }
#ifdef FG_BENCH_HAVE_MPI
    if (o.backend == "mpi") {
      // Interleaved with FlexGraph's own calls, so that drift in the machine's load hits both alike.
      std::vector<double> ours, direct;
      for (int i = -2; i < o.iters; ++i) {
        const double a = Time(comm, 1, &epoch, [&](int e) { (void)comm.AllReduce(buf.data(), n, e, 2); });
        const double b = Time(comm, 1, &epoch, [&](int) {
          MPI_Allreduce(MPI_IN_PLACE, buf.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        });
        if (i >= 0) ours.push_back(a), direct.push_back(b);
      }
      const double direct_allreduce = Median(direct);
      row["allreduce_interleaved_seconds"] = runtime::NumberValue(Median(ours));
      std::vector<char> out(bytes), in(bytes);
      std::vector<int> counts(P, static_cast<int>(chunk)), at(P);
      for (int q = 0; q < P; ++q) at[q] = static_cast<int>(q * chunk);
      const double direct_alltoall = Time(comm, o.iters, &epoch, [&](int) {
        MPI_Alltoallv(out.data(), counts.data(), at.data(), MPI_BYTE, in.data(), counts.data(), at.data(), MPI_BYTE,
                      MPI_COMM_WORLD);
      });
      row["direct_allreduce_seconds"] = runtime::NumberValue(direct_allreduce);
      row["direct_alltoallv_seconds"] = runtime::NumberValue(direct_alltoall);
      if (me == 0) std::printf(" %11.2fx %11.2fx", Median(ours) / direct_allreduce, alltoall / direct_alltoall);
    }
#endif
    if (me == 0) std::printf("\n");
  }
  if (me == 0 && !o.summary_json.empty()) {
    std::ofstream(o.summary_json) << runtime::StructToJson(summary) << "\n";
  }
  if (o.backend == "mpi") {
    if (auto s = runtime::FinishMpi(std::move(*group)); !s.ok()) return Fail(std::string(s.message()));
  } else {
    (void)comm.Barrier(++epoch, 1);  // nobody leaves while a peer still sends
  }
  return 0;
}
