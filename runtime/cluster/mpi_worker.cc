#include <cstdio>
#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/fault.h"
#include "flexgraph/base/progress.h"
#include "flexgraph/base/status.h"
#include "runtime/cluster/leader.h"
#include "runtime/comm/mpi_communicator.h"
#include "runtime/cluster/worker.h"

namespace fg::runtime {
namespace {

// Collective steps of the start and the end of an MPI run (epoch 0 of the control phase).
enum Step { kSettings = 1, kOwners, kSettingsAgree, kMetrics };

// Rank 0's settings on every rank; a rank whose own differ names the fields. Collective.
absl::Status CheckSameSettings(Communicator& comm, const flexgraph::RunConfig& train) {
  std::string leader = SharedSettings(train).SerializeAsString();
  FG_RETURN_IF_ERROR(comm.Broadcast(&leader, 0, 0, kSettings));
  flexgraph::RunConfig theirs;
  std::string diff;
  if (!theirs.ParseFromString(leader)) {
    diff = "unreadable settings from rank 0";
  } else {
    diff = ConfigDifferences(theirs, SharedSettings(train));
  }
  std::vector<double> disagreeing = {diff.empty() ? 0.0 : 1.0};
  FG_RETURN_IF_ERROR(comm.AllReduce(&disagreeing, 0, kSettingsAgree));
  if (!diff.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("rank ", comm.rank(), " runs another configuration (rank 0 -> rank ", comm.rank(), "): ", diff));
  }
  if (disagreeing[0] > 0) {
    return absl::FailedPreconditionError(absl::StrCat(static_cast<int>(disagreeing[0]),
                                                      " rank(s) run another configuration than rank 0"));
  }
  return absl::OkStatus();
}

// Rank 0 plans the owners and sends them to every rank: "ok" + int32 owners, or "error" + why.
absl::StatusOr<std::vector<int32_t>> ShareOwners(Communicator& comm, const flexgraph::RunConfig& train,
                                                 const std::string& method, const grid::GridSpec& grid) {
  std::string message;
  if (comm.rank() == 0) {
    auto plan = PlanOwners(train, comm.size(), method, grid);
    if (plan.ok()) {
      std::fprintf(stderr, "rank 0: %s", plan->description.c_str());
      message.resize(1 + plan->owners.size() * sizeof(int32_t));
      message[0] = 'o';
      std::memcpy(message.data() + 1, plan->owners.data(), plan->owners.size() * sizeof(int32_t));
    } else {
      message = absl::StrCat("e", plan.status().message());
    }
  }
  FG_RETURN_IF_ERROR(comm.Broadcast(&message, 0, 0, kOwners));
  if (message.empty() || message[0] != 'o') {
    return absl::FailedPreconditionError(absl::StrCat("rank 0 could not plan the run: ",
                                                      message.empty() ? "" : message.substr(1)));
  }
  std::vector<int32_t> owners((message.size() - 1) / sizeof(int32_t));
  std::memcpy(owners.data(), message.data() + 1, owners.size() * sizeof(int32_t));
  return owners;
}

absl::StatusOr<TrainResult> Train(Communicator& comm, const MpiWorkerOptions& options,
                                  const flexgraph::RunConfig& train) {
  FG_RETURN_IF_ERROR(CheckSameSettings(comm, train));
  FG_ASSIGN_OR_RETURN(std::vector<int32_t> owners, ShareOwners(comm, train, options.partition_method, options.grid));
  try {
    flexgraph::RunConfig t = train;
    if (comm.rank() != 0) t.mutable_output()->set_quiet(true);
    FG_ASSIGN_OR_RETURN(auto trainer,
                        Trainer::Create(t, {&comm, std::move(owners), options.exchange, options.pipeline, options.grid, options.auto_grid}));
    return trainer->Run();
  } catch (const std::bad_alloc& e) {
    return absl::ResourceExhaustedError(absl::StrCat("rank ", comm.rank(), " ran out of memory: ", e.what()));
  }
}

// Every rank's metrics go to rank 0, which writes the run summary. Collective.
absl::StatusOr<TrainResult> Report(Communicator& comm, const flexgraph::RunConfig& train, TrainResult result) {
  FaultPoint("worker.trained");
  std::vector<std::string> send(comm.size());
  send[0] = WorkerMetrics(comm.rank(), result).SerializeAsString();
  FG_ASSIGN_OR_RETURN(std::vector<std::string> got,
                      comm.AllToAllV(std::move(send), MakeTag(0, 0, 0, TrafficKind::kControl, kMetrics)));
  if (comm.rank() != 0) return result;
  std::vector<flexgraph::MetricsRequest> metrics(got.size());
  for (size_t r = 0; r < got.size(); ++r) {
    if (!metrics[r].ParseFromString(got[r])) return absl::DataLossError(absl::StrCat("unreadable metrics from rank ", r));
  }
  FaultPoint("coordinator.finished");
  FG_RETURN_IF_ERROR(WriteRunSummary(train, metrics, PeakRssBytes()));
  FaultPoint("coordinator.summary_written");
  return result;
}

}  // namespace

absl::StatusOr<TrainResult> RunMpiWorker(const MpiWorkerOptions& options, const flexgraph::RunConfig& train) {
  FG_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> comm, MakeMpiCommunicator());
  const int rank = comm->rank();
  SetFaultProcess(absl::StrCat("worker", rank));
  comm->set_timeout(std::chrono::milliseconds(static_cast<int64_t>(options.recv_timeout_seconds * 1000)));
  std::fprintf(stderr, "worker %d of %d (MPI)\n", rank, comm->size());
  absl::StatusOr<TrainResult> result = Train(*comm, options, train);
  if (result.ok()) result = Report(*comm, train, *std::move(result));
  if (!result.ok()) {
    // The other ranks may wait in a collective: end them all, naming this rank's failure.
    std::fprintf(stderr, "flexgraph worker: rank %d: %s\n", rank, std::string(result.status().message()).c_str());
    std::fflush(stderr);
    AbortMpi(1);
  }
  FaultPoint("worker.reported");
  FG_RETURN_IF_ERROR(FinishMpi(std::move(comm)));
  return result;
}

}  // namespace fg::runtime
