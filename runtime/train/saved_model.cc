#include "runtime/train/saved_model.h"

#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <filesystem>
#include <map>

#include <google/protobuf/text_format.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "flexgraph/base/status.h"
#include "flexgraph/graph/io/file.h"
#include "flexgraph/graph/io/npy.h"
#include "proto/text_format.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/config.h"

namespace fg::runtime {
namespace {

constexpr char kManifest[] = "model.txtpb";
constexpr char kParams[] = "params";

std::string ShapeString(const google::protobuf::RepeatedField<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ","), "]");
}

// CRC-32 of a host tensor's bytes.
uint32_t DataCrc(const Tensor& t) {
  return static_cast<uint32_t>(
      crc32(0L, reinterpret_cast<const Bytef*>(t.raw()), static_cast<uInt>(t.nbytes())));
}

}  // namespace

absl::Status PrepareModelDir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    const fs::path parent = fs::absolute(dir, ec).parent_path();
    if (::access(parent.c_str(), W_OK) != 0) {
      return absl::PermissionDeniedError(
          absl::StrCat("--save_model: cannot create ", dir, " (", parent.string(), " is not writable)"));
    }
    return absl::OkStatus();
  }
  if (!fs::is_directory(dir, ec)) {
    return absl::AlreadyExistsError(
        absl::StrCat("--save_model: ", dir, " exists and is not a directory; not overwritten"));
  }
  if (!fs::is_empty(dir, ec) && !fs::exists(fs::path(dir) / kManifest, ec)) {
    return absl::AlreadyExistsError(absl::StrCat(
        "--save_model: ", dir, " holds files but no saved model (", kManifest,
        "); not overwritten: name a new or empty directory"));
  }
  return absl::OkStatus();
}

absl::Status SaveModel(const std::string& dir, const flexgraph::SavedModel& model,
                       const std::vector<std::pair<std::string, Tensor>>& params) {
  namespace fs = std::filesystem;
  FG_RETURN_IF_ERROR(PrepareModelDir(dir));
  const fs::path target = fs::absolute(dir);
  const fs::path staging = target.string() + ".partial";
  const fs::path previous = target.string() + ".previous";
  std::error_code ec;
  fs::remove_all(staging, ec);
  fs::create_directories(staging / kParams, ec);
  if (ec) return absl::InternalError(absl::StrCat("--save_model: cannot create ", staging.string(), ": ", ec.message()));
  for (const auto& [name, value] : params) {
    FG_RETURN_IF_ERROR(graph::io::WriteNpy((staging / kParams / (name + ".npy")).string(), value));
  }
  // Each parameter's checksum, of the data just written.
  flexgraph::SavedModel manifest = model;
  std::map<std::string, uint32_t> crcs;
  for (const auto& [name, value] : params) crcs[name] = DataCrc(value.To(Device::kCpu));
  for (auto& p : *manifest.mutable_params()) {
    if (auto it = crcs.find(p.name()); it != crcs.end()) p.set_crc32(it->second);
  }
  std::string text;
  google::protobuf::TextFormat::PrintToString(manifest, &text);
  FG_RETURN_IF_ERROR(graph::io::WriteFileAtomically((staging / kManifest).string(), text));
  // The new model is complete: swap it in, then drop the old one.
  fs::remove_all(previous, ec);
  if (fs::exists(target)) {
    fs::rename(target, previous, ec);
    if (ec) return absl::InternalError(absl::StrCat("--save_model: cannot replace ", dir, ": ", ec.message()));
  }
  fs::rename(staging, target, ec);
  if (ec) return absl::InternalError(absl::StrCat("--save_model: cannot rename ", staging.string(), " to ", dir, ": ", ec.message()));
  fs::remove_all(previous, ec);
  return absl::OkStatus();
}

absl::StatusOr<flexgraph::SavedModel> ReadSavedModel(const std::string& dir) {
  const std::string path = graph::io::JoinPath(dir, kManifest);
  if (!graph::io::PathExists(path)) {
    return absl::NotFoundError(absl::StrCat("--model_dir: ", dir, " holds no saved model (no ",
                                            kManifest, "; flexgraph train --save_model writes one)"));
  }
  FG_ASSIGN_OR_RETURN(std::string text, graph::io::ReadFileToString(path));
  return ParseSavedModel(text, path);
}

absl::StatusOr<flexgraph::SavedModel> ParseSavedModel(const std::string& text, const std::string& path) {
  flexgraph::SavedModel model;
  FG_RETURN_IF_ERROR(proto::ParseTextProto(text, path, &model));
  if (model.format_version() != kSavedModelVersion) {
    return absl::FailedPreconditionError(absl::StrCat(path, ": saved-model format version ",
                                                      model.format_version(), ", this build reads ",
                                                      kSavedModelVersion));
  }
  if (!model.has_config() || model.config().model().name().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": no config.model.name"));
  }
  if (model.epoch() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": epoch ", model.epoch(), " is negative"));
  }
  for (const auto& p : model.params()) {
    if (!p.has_crc32()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": parameter ", p.name(), " has no crc32"));
    }
    for (int64_t d : p.shape()) {
      if (d < 0) return absl::InvalidArgumentError(absl::StrCat(path, ": parameter ", p.name(), " has a negative dimension"));
    }
  }
  return model;
}

flexgraph::RunConfig ModelSettings(const flexgraph::RunConfig& resolved) {
  flexgraph::RunConfig s;
  *s.mutable_model() = resolved.model();
  *s.mutable_dataset() = resolved.dataset();
  s.mutable_dataset()->clear_path();
  s.mutable_dataset()->clear_split();
  s.mutable_dataset()->clear_cache_dir();
  s.mutable_train()->set_seed(resolved.train().seed());
  return s;
}

absl::Status CheckCompatible(const std::string& dir, const flexgraph::SavedModel& saved,
                             const flexgraph::SavedModel& now) {
  std::vector<std::string> diffs;
  if (std::string d = ConfigDifferences(ModelSettings(saved.config()), ModelSettings(now.config()));
      !d.empty()) {
    diffs.push_back(absl::StrCat("settings: ", d));
  }
  std::map<std::string, int64_t> saved_types, now_types;
  for (const auto& t : saved.node_types()) saved_types[t.name()] = t.feature_dim();
  for (const auto& t : now.node_types()) now_types[t.name()] = t.feature_dim();
  for (const auto& [name, dim] : saved_types) {
    auto it = now_types.find(name);
    if (it == now_types.end()) {
      diffs.push_back(absl::StrCat("node type '", name, "' is missing"));
    } else if (it->second != dim) {
      diffs.push_back(absl::StrCat("features of '", name, "': ", dim, " -> ", it->second, " columns"));
    }
  }
  for (const auto& [name, dim] : now_types) {
    if (!saved_types.count(name)) diffs.push_back(absl::StrCat("node type '", name, "' is new"));
  }
  if (saved.target_type() != now.target_type()) {
    diffs.push_back(absl::StrCat("target type: ", saved.target_type(), " -> ", now.target_type()));
  }
  if (saved.num_classes() != now.num_classes()) {
    diffs.push_back(absl::StrCat("classes: ", saved.num_classes(), " -> ", now.num_classes()));
  }
  std::map<std::string, std::string> saved_params, now_params;
  for (const auto& p : saved.params()) saved_params[p.name()] = ShapeString(p.shape());
  for (const auto& p : now.params()) now_params[p.name()] = ShapeString(p.shape());
  for (const auto& [name, shape] : saved_params) {
    auto it = now_params.find(name);
    if (it == now_params.end()) {
      diffs.push_back(absl::StrCat("parameter ", name, " ", shape, " is not in this model"));
    } else if (it->second != shape) {
      diffs.push_back(absl::StrCat("parameter ", name, ": ", shape, " -> ", it->second));
    }
  }
  for (const auto& [name, shape] : now_params) {
    if (!saved_params.count(name)) diffs.push_back(absl::StrCat("parameter ", name, " ", shape, " is not saved"));
  }
  if (diffs.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "--model_dir ", dir, ": this run differs from the saved model (saved -> this run): ",
      absl::StrJoin(diffs, "; ")));
}

absl::Status LoadSavedParameters(const std::string& dir, const flexgraph::SavedModel& saved,
                                 const std::vector<nn::NamedParameter>& params) {
  std::map<std::string, uint32_t> crcs;
  for (const auto& p : saved.params()) crcs[p.name()] = p.crc32();
  std::vector<Tensor> values;  // every file is checked before any parameter is set
  for (const nn::NamedParameter& p : params) {
    const std::string path =
        graph::io::JoinPath(graph::io::JoinPath(dir, kParams), p.name + ".npy");
    if (!graph::io::PathExists(path)) {
      return absl::NotFoundError(
          absl::StrCat("--model_dir ", dir, ": no file for parameter ", p.name, " (", path, ")"));
    }
    FG_ASSIGN_OR_RETURN(Tensor t, graph::io::ReadNpy(path));
    const Tensor& value = p.var.value();
    if (t.dtype() != DType::kFloat32 || t.shape() != value.shape()) {
      return absl::FailedPreconditionError(absl::StrCat(
          path, ": shape [", absl::StrJoin(t.shape(), ","), "]",
          t.dtype() != DType::kFloat32 ? " (not float32)" : "", " does not match parameter ",
          p.name, " of shape [", absl::StrJoin(value.shape(), ","), "]"));
    }
    auto crc = crcs.find(p.name);
    if (crc == crcs.end()) {
      return absl::FailedPreconditionError(
          absl::StrCat(path, ": parameter ", p.name, " is not in ", kManifest));
    }
    if (DataCrc(t) != crc->second) {
      return absl::DataLossError(
          absl::StrCat(path, ": checksum mismatch (changed or damaged after it was saved; ",
                       kManifest, " says ", crc->second, ")"));
    }
    const float* x = t.f32();
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (!std::isfinite(x[i])) {
        return absl::FailedPreconditionError(
            absl::StrCat(path, ": parameter ", p.name, " holds ",
                         std::isnan(x[i]) ? "NaN" : (x[i] > 0 ? "inf" : "-inf"), " at element ", i,
                         "; a model with values that are not finite is not used"));
      }
    }
    values.push_back(std::move(t));
  }
  for (size_t k = 0; k < params.size(); ++k) {
    Tensor& value = params[k].var.mutable_value();
    CopyBytes(value.raw(), value.device(), values[k].raw(), Device::kCpu, value.nbytes());
  }
  return absl::OkStatus();
}

}  // namespace fg::runtime
