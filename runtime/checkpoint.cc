#include "runtime/checkpoint.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "flexgraph/base/status.h"
#include "flexgraph/graph/io/file.h"
#include "flexgraph/graph/io/npy.h"
#include "proto/checkpoint.pb.h"

namespace fg::runtime {
namespace {

std::string CheckpointPath(const std::string& dir) { return absl::StrCat(dir, "/checkpoint.pb"); }

void ToProto(const Tensor& t, const std::string& name, flexgraph::TensorProto* p) {
  p->set_name(name);
  for (int64_t d : t.shape()) p->add_shape(d);
  p->set_data(std::string(reinterpret_cast<const char*>(t.f32()), t.nbytes()));
}

absl::Status FromProto(const flexgraph::TensorProto& p, Tensor* t, const std::string& where) {
  if (p.data().size() != t->nbytes()) {
    return absl::DataLossError(absl::StrCat(where, ": tensor '", p.name(), "' has ",
                                            p.data().size(), " bytes, expected ", t->nbytes()));
  }
  std::memcpy(t->f32(), p.data().data(), t->nbytes());
  return absl::OkStatus();
}

}  // namespace

bool HasCheckpoint(const std::string& dir) {
  return std::filesystem::exists(CheckpointPath(dir));
}

absl::Status SaveCheckpoint(const std::string& dir, const RunIdentity& run, int epochs_done,
                            nn::Optimizer& optimizer, const TrainResult& progress) {
  flexgraph::Checkpoint ck;
  ck.set_model(run.model);
  ck.set_dataset(run.dataset);
  ck.set_seed(run.seed);
  ck.set_epoch(epochs_done);
  const auto& params = optimizer.params();
  for (size_t i = 0; i < params.size(); ++i) {
    ToProto(params[i].var.value(), params[i].name, ck.add_params());
    ToProto(optimizer.first_moments()[i], params[i].name, ck.add_first_moments());
    const Tensor& v = optimizer.second_moments()[i];
    if (v.defined()) ToProto(v, params[i].name, ck.add_second_moments());
  }
  ck.set_optimizer_steps(optimizer.step_count());
  ck.set_best_valid_accuracy(progress.valid_accuracy);
  ck.set_best_epoch(progress.best_epoch);
  ck.set_best_test_accuracy(progress.test_accuracy);
  ck.set_best_test_macro_f1(progress.test_macro_f1);
  ck.set_best_test_micro_f1(progress.test_micro_f1);
  for (double l : progress.losses) ck.add_losses(l);
  for (double s : progress.epoch_seconds) ck.add_epoch_seconds(s);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat(dir, ": cannot create checkpoint directory: ", ec.message()));
  }
  return graph::io::WriteFileAtomically(CheckpointPath(dir), ck.SerializeAsString());
}

absl::StatusOr<int> LoadCheckpoint(const std::string& dir, const RunIdentity& run,
                                   nn::Optimizer& optimizer, TrainResult* progress) {
  const std::string path = CheckpointPath(dir);
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": no checkpoint to resume from"));
  std::stringstream bytes;
  bytes << in.rdbuf();
  flexgraph::Checkpoint ck;
  if (!ck.ParseFromString(bytes.str())) {
    return absl::DataLossError(absl::StrCat(path, ": corrupt checkpoint"));
  }
  if (ck.model() != run.model || ck.seed() != run.seed) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": checkpoint is for model ", ck.model(), " seed ", ck.seed(),
                     ", this run is model ", run.model, " seed ", run.seed));
  }
  auto& params = optimizer.params();
  if (ck.params_size() != static_cast<int>(params.size())) {
    return absl::DataLossError(absl::StrCat(path, ": ", ck.params_size(), " parameters, model has ",
                                            params.size()));
  }
  for (size_t i = 0; i < params.size(); ++i) {
    FG_RETURN_IF_ERROR(FromProto(ck.params(i), &params[i].var.mutable_value(), path));
    FG_RETURN_IF_ERROR(FromProto(ck.first_moments(i), &optimizer.first_moments()[i], path));
    if (i < static_cast<size_t>(ck.second_moments_size())) {
      FG_RETURN_IF_ERROR(FromProto(ck.second_moments(i), &optimizer.second_moments()[i], path));
    }
  }
  optimizer.set_step_count(ck.optimizer_steps());
  progress->valid_accuracy = ck.best_valid_accuracy();
  progress->best_epoch = ck.best_epoch();
  progress->test_accuracy = ck.best_test_accuracy();
  progress->test_macro_f1 = ck.best_test_macro_f1();
  progress->test_micro_f1 = ck.best_test_micro_f1();
  progress->losses.assign(ck.losses().begin(), ck.losses().end());
  progress->epoch_seconds.assign(ck.epoch_seconds().begin(), ck.epoch_seconds().end());
  progress->epochs = ck.epoch();
  return ck.epoch();
}

absl::Status LoadInitialParameters(const std::string& dir,
                                   const std::vector<nn::NamedParameter>& params) {
  for (const nn::NamedParameter& p : params) {
    const std::string path = graph::io::JoinPath(dir, p.name + ".npy");
    if (!graph::io::PathExists(path)) {
      return absl::NotFoundError(
          absl::StrCat("init_weights: no file for parameter ", p.name, " (looked for ", path, ")"));
    }
    FG_ASSIGN_OR_RETURN(Tensor t, graph::io::ReadNpy(path));
    Tensor& value = p.var.mutable_value();
    if (t.dtype() != DType::kFloat32 || t.shape() != value.shape()) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": shape [", absl::StrJoin(t.shape(), ","), "]",
          t.dtype() != DType::kFloat32 ? " (not float32)" : "", " does not match parameter ",
          p.name, " of shape [", absl::StrJoin(value.shape(), ","), "]"));
    }
    if (value.device() == Device::kCpu) {
      std::memcpy(value.f32(), t.f32(), value.nbytes());
    } else {
      value = t.To(value.device());
    }
  }
  return absl::OkStatus();
}

}  // namespace fg::runtime
