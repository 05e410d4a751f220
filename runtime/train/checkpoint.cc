#include "runtime/train/checkpoint.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>
#include <vector>

#include <zlib.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "flexgraph/base/status.h"
#include "flexgraph/graph/io/file.h"
#include "flexgraph/graph/io/npy.h"
#include "proto/checkpoint.pb.h"
#include "runtime/train/config.h"

namespace fg::runtime {
namespace {

// File framing: magic, format version, payload length and CRC-32, then the serialized Checkpoint.
constexpr char kMagic[8] = {'F', 'G', 'C', 'K', 'P', 'T', '\r', '\n'};
// Version 3: the dataset's files, the selection value and the task's metrics at the best epoch.
constexpr uint32_t kFormatVersion = 3;
constexpr size_t kHeaderBytes = sizeof(kMagic) + 4 + 8 + 4;

std::string CheckpointPath(const std::string& dir) { return absl::StrCat(dir, "/checkpoint.pb"); }
std::string PreviousPath(const std::string& dir) {
  return absl::StrCat(dir, "/checkpoint.previous.pb");
}

absl::StatusOr<int> LoadFile(const std::string& path, const RunIdentity& run,
                             nn::Optimizer& optimizer, TrainResult* progress) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": no checkpoint to resume from"));
  std::stringstream bytes;
  bytes << in.rdbuf();
  return DecodeCheckpoint(bytes.str(), path, run, optimizer, progress);
}

template <typename T>
void PutLittleEndian(T v, std::string* out) {
  for (size_t b = 0; b < sizeof(T); ++b) out->push_back(static_cast<char>((v >> (8 * b)) & 0xFF));
}

template <typename T>
T GetLittleEndian(const char* p) {
  T v = 0;
  for (size_t b = 0; b < sizeof(T); ++b) v |= static_cast<T>(static_cast<unsigned char>(p[b])) << (8 * b);
  return v;
}

uint32_t Crc32(std::string_view data) {
  return static_cast<uint32_t>(
      crc32(0L, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size())));
}

void ToProto(const Tensor& t, const std::string& name, flexgraph::TensorProto* p) {
  p->set_name(name);
  for (int64_t d : t.shape()) p->add_shape(d);
  const Tensor host = t.To(Device::kCpu);  // parameters and moments may live on a GPU
  p->set_data(std::string(reinterpret_cast<const char*>(host.f32()), host.nbytes()));
}

// Checks that `p` holds parameter `name` with the shape of `t`.
absl::Status CheckTensor(const flexgraph::TensorProto& p, const std::string& name, const Tensor& t,
                         const std::string& where) {
  if (p.name() != name) {
    return absl::FailedPreconditionError(
        absl::StrCat(where, ": holds parameter '", p.name(), "' where the model has '", name, "'"));
  }
  const std::vector<int64_t> shape(p.shape().begin(), p.shape().end());
  if (shape != t.shape() || p.data().size() != t.nbytes()) {
    return absl::FailedPreconditionError(absl::StrCat(
        where, ": parameter '", name, "' is [", absl::StrJoin(shape, ","), "] (", p.data().size(),
        " bytes), the model's is [", absl::StrJoin(t.shape(), ","), "]"));
  }
  return absl::OkStatus();
}

void Copy(const flexgraph::TensorProto& p, Tensor* t) {
  CopyBytes(t->raw(), t->device(), p.data().data(), Device::kCpu, t->nbytes());
}

// "feat.npy: contents differ; test_idx.npy: missing" (checkpoint -> this run); "" when the same.
std::string DatasetDifferences(
    const google::protobuf::RepeatedPtrField<flexgraph::DatasetFile>& saved,
    const std::vector<flexgraph::DatasetFile>& now) {
  std::map<std::string, const flexgraph::DatasetFile*> before, after;
  for (const auto& f : saved) before[f.path()] = &f;
  for (const auto& f : now) after[f.path()] = &f;
  auto name = [](const std::string& p) { return p.empty() ? std::string("the file") : p; };
  std::vector<std::string> diffs;
  for (const auto& [path, f] : before) {
    auto it = after.find(path);
    if (it == after.end()) {
      diffs.push_back(absl::StrCat(name(path), ": missing"));
    } else if (it->second->size() != f->size()) {
      diffs.push_back(
          absl::StrCat(name(path), ": ", f->size(), " -> ", it->second->size(), " bytes"));
    } else if (it->second->crc32() != f->crc32()) {
      diffs.push_back(absl::StrCat(name(path), ": contents differ (same size)"));
    }
  }
  for (const auto& [path, f] : after) {
    if (!before.count(path)) diffs.push_back(absl::StrCat(name(path), ": new"));
  }
  if (diffs.size() > 8) {
    const size_t more = diffs.size() - 8;
    diffs.resize(8);
    diffs.push_back(absl::StrCat("and ", more, " more"));
  }
  return absl::StrJoin(diffs, "; ");
}

// CRC-32 of a file's contents: all of it up to kWholeFileBytes, else kSamples evenly spaced
// samples of kSampleBytes (the first and the last included).
constexpr int64_t kWholeFileBytes = int64_t{64} << 20, kSampleBytes = int64_t{256} << 10;
constexpr int kSamples = 64;

absl::StatusOr<uint32_t> ContentCrc(const std::string& path, int64_t size) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot read (dataset fingerprint)"));
  uLong crc = crc32(0L, Z_NULL, 0);
  std::vector<char> buf(1 << 20);
  auto add = [&](int64_t offset, int64_t n) -> absl::Status {
    in.seekg(offset);
    while (n > 0) {
      const int64_t chunk = std::min<int64_t>(n, static_cast<int64_t>(buf.size()));
      if (!in.read(buf.data(), chunk))
        return absl::DataLossError(absl::StrCat(path, ": read failed (dataset fingerprint)"));
      crc = crc32(crc, reinterpret_cast<const Bytef*>(buf.data()), static_cast<uInt>(chunk));
      n -= chunk;
    }
    return absl::OkStatus();
  };
  if (size <= kWholeFileBytes) {
    FG_RETURN_IF_ERROR(add(0, size));
  } else {
    for (int k = 0; k < kSamples; ++k)
      FG_RETURN_IF_ERROR(add((size - kSampleBytes) * k / (kSamples - 1), kSampleBytes));
  }
  return static_cast<uint32_t>(crc);
}

}  // namespace

absl::StatusOr<std::vector<flexgraph::DatasetFile>> DatasetFingerprint(
    const std::string& path, const std::vector<std::string>& skip) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<flexgraph::DatasetFile> files;
  if (!fs::exists(path, ec)) return files;  // a generator spec
  auto add = [&](const fs::path& file, const std::string& relative) -> absl::Status {
    const int64_t size = static_cast<int64_t>(fs::file_size(file, ec));
    if (ec)
      return absl::NotFoundError(
          absl::StrCat(file.string(), ": ", ec.message(), " (dataset fingerprint)"));
    FG_ASSIGN_OR_RETURN(const uint32_t crc, ContentCrc(file.string(), size));
    flexgraph::DatasetFile f;
    f.set_path(relative);
    f.set_size(size);
    f.set_crc32(crc);
    files.push_back(std::move(f));
    return absl::OkStatus();
  };
  if (!fs::is_directory(path, ec)) {
    FG_RETURN_IF_ERROR(add(path, ""));
    return files;
  }
  const fs::path root = fs::weakly_canonical(fs::absolute(path), ec);
  std::vector<fs::path> skipped;
  for (const std::string& s : skip) {
    if (!s.empty()) skipped.push_back(fs::weakly_canonical(fs::absolute(s), ec));
  }
  auto is_skipped = [&](const fs::path& p) {
    for (const fs::path& s : skipped) {
      auto [a, b] = std::mismatch(s.begin(), s.end(), p.begin(), p.end());
      if (a == s.end()) return true;  // p is s or under it
    }
    return false;
  };
  for (auto it = fs::recursive_directory_iterator(
           root, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::path p = it->path();
    if (is_skipped(p)) {
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    const std::string name = p.filename().string();
    if (!it->is_regular_file(ec) || name.find(".tmp.") != std::string::npos) continue;
    FG_RETURN_IF_ERROR(add(p, p.lexically_relative(root).string()));
  }
  if (ec)
    return absl::InternalError(
        absl::StrCat(path, ": cannot list the dataset's files: ", ec.message()));
  std::sort(files.begin(), files.end(),
            [](const auto& a, const auto& b) { return a.path() < b.path(); });
  return files;
}

absl::StatusOr<std::unique_ptr<graph::io::DirectoryLock>> LockCheckpointDirectory(
    const std::string& dir) {
  return graph::io::DirectoryLock::Acquire(dir, "checkpoint.lock", "--checkpoint_dir");
}

absl::Status AwaitCheckpointDirectory(const std::string& dir, double timeout_seconds) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(std::max(0.0, timeout_seconds));
  while (true) {
    auto lock = LockCheckpointDirectory(dir);  // released at once
    if (lock.ok() || lock.status().code() != absl::StatusCode::kFailedPrecondition ||
        std::chrono::steady_clock::now() >= deadline) {
      return lock.status();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

RunIdentity IdentityOf(const flexgraph::RunConfig& resolved, int world_size) {
  RunIdentity id;
  id.config = SharedSettings(resolved);
  flexgraph::TrainConfig* t = id.config.mutable_train();
  t->clear_epochs();
  t->clear_max_steps();  // like epochs: how long this run trains
  t->clear_checkpoint_every();
  t->clear_checkpoint_dir();
  t->clear_resume();
  t->clear_stop_after();
  id.world_size = world_size;
  return id;
}

bool HasCheckpoint(const std::string& dir) {
  return std::filesystem::exists(CheckpointPath(dir)) || std::filesystem::exists(PreviousPath(dir));
}

std::string EncodeCheckpoint(const RunIdentity& run, int epochs_done, nn::Optimizer& optimizer,
                             const TrainResult& progress) {
  flexgraph::Checkpoint ck;
  ck.set_model(run.config.model().name());
  ck.set_dataset(run.config.dataset().path());
  ck.set_seed(run.config.train().seed());
  ck.set_identity(run.config.SerializeAsString());
  ck.set_world_size(run.world_size);
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
  ck.set_best_valid_macro_f1(progress.valid_macro_f1);
  ck.set_best_epoch(progress.best_epoch);
  ck.set_best_test_accuracy(progress.test_accuracy);
  ck.set_best_test_macro_f1(progress.test_macro_f1);
  ck.set_best_test_micro_f1(progress.test_micro_f1);
  ck.set_best_selection(progress.best_selection);
  for (const auto& [key, value] : progress.extra) (*ck.mutable_best_extra())[key] = value;
  for (const flexgraph::DatasetFile& f : run.dataset_files) *ck.add_dataset_files() = f;
  for (double l : progress.losses) ck.add_losses(l);
  for (double s : progress.epoch_seconds) ck.add_epoch_seconds(s);
  const std::string payload = ck.SerializeAsString();
  std::string file(kMagic, sizeof(kMagic));
  PutLittleEndian<uint32_t>(kFormatVersion, &file);
  PutLittleEndian<uint64_t>(payload.size(), &file);
  PutLittleEndian<uint32_t>(Crc32(payload), &file);
  file += payload;
  return file;
}

absl::Status SaveCheckpoint(const std::string& dir, const RunIdentity& run, int epochs_done,
                            nn::Optimizer& optimizer, const TrainResult& progress) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat(dir, ": cannot create checkpoint directory: ", ec.message()));
  }
  // The checkpoint replaced stays as the previous one: a second name for its file (a hard link,
  // renamed into place), so that no moment lacks <dir>/checkpoint.pb.
  const std::string path = CheckpointPath(dir);
  if (std::filesystem::exists(path)) {
    const std::string link = PreviousPath(dir) + ".tmp.link";
    std::filesystem::remove(link, ec);
    if (::link(path.c_str(), link.c_str()) != 0) {
      return absl::InternalError(
          absl::StrCat(link, ": cannot link to ", path, ": ", std::strerror(errno)));
    }
    std::filesystem::rename(link, PreviousPath(dir), ec);
    if (ec) {
      return absl::InternalError(
          absl::StrCat(link, ": cannot rename to ", PreviousPath(dir), ": ", ec.message()));
    }
    // A rename onto another name of the same file (a save cut short after this point) does
    // nothing and leaves `link`.
    std::filesystem::remove(link, ec);
  }
  return graph::io::WriteFileAtomically(path, EncodeCheckpoint(run, epochs_done, optimizer, progress));
}

absl::StatusOr<int> LoadCheckpoint(const std::string& dir, const RunIdentity& run,
                                   nn::Optimizer& optimizer, TrainResult* progress,
                                   std::string* passed_over) {
  absl::StatusOr<int> newest = LoadFile(CheckpointPath(dir), run, optimizer, progress);
  // Only a lost or damaged file falls back: another run's checkpoint is refused as it is.
  const bool lost = absl::IsNotFound(newest.status()) || absl::IsDataLoss(newest.status());
  if (newest.ok() || !lost || !std::filesystem::exists(PreviousPath(dir))) return newest;
  absl::StatusOr<int> previous = LoadFile(PreviousPath(dir), run, optimizer, progress);
  if (!previous.ok()) {
    return absl::Status(previous.status().code(),
                        absl::StrCat(newest.status().message(), "; and the previous checkpoint: ",
                                     previous.status().message()));
  }
  if (passed_over != nullptr) *passed_over = std::string(newest.status().message());
  return previous;
}

absl::StatusOr<int> DecodeCheckpoint(const std::string& file, const std::string& path,
                                     const RunIdentity& run, nn::Optimizer& optimizer,
                                     TrainResult* progress) {
  if (file.size() < sizeof(kMagic) || std::memcmp(file.data(), kMagic, sizeof(kMagic)) != 0) {
    return absl::DataLossError(absl::StrCat(path, ": not a FlexGraph checkpoint"));
  }
  if (file.size() < kHeaderBytes) {
    return absl::DataLossError(absl::StrCat(path, ": truncated checkpoint (", file.size(), " bytes)"));
  }
  const uint32_t version = GetLittleEndian<uint32_t>(file.data() + sizeof(kMagic));
  const uint64_t length = GetLittleEndian<uint64_t>(file.data() + sizeof(kMagic) + 4);
  const uint32_t crc = GetLittleEndian<uint32_t>(file.data() + sizeof(kMagic) + 12);
  if (version != kFormatVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": checkpoint format version ", version, ", this build reads version ", kFormatVersion));
  }
  const std::string_view payload(file.data() + kHeaderBytes, file.size() - kHeaderBytes);
  if (payload.size() > length) {
    return absl::DataLossError(absl::StrCat(
        path, ": ", payload.size() - length,
        " trailing bytes after the checkpoint (its header says ", length, " bytes of payload)"));
  }
  if (payload.size() != length) {
    return absl::DataLossError(
        absl::StrCat(path, ": truncated checkpoint (", payload.size(), " of ", length, " bytes)"));
  }
  if (Crc32(payload) != crc) {
    return absl::DataLossError(absl::StrCat(path, ": damaged checkpoint (checksum mismatch)"));
  }
  flexgraph::Checkpoint ck;
  flexgraph::RunConfig saved;
  if (!ck.ParseFromArray(payload.data(), static_cast<int>(payload.size())) ||
      !saved.ParseFromString(ck.identity())) {
    return absl::DataLossError(absl::StrCat(path, ": corrupt checkpoint"));
  }
  if (const std::string diff = ConfigDifferences(saved, run.config); !diff.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": checkpoint of another run (checkpoint -> this run): ", diff));
  }
  if (const std::string diff = DatasetDifferences(ck.dataset_files(), run.dataset_files);
      !diff.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": the dataset changed since the checkpoint (", run.config.dataset().path(),
        "): ", diff,
        "; resume over the data it was written with, or start afresh in another --checkpoint_dir"));
  }
  if (ck.world_size() != run.world_size) {
    return absl::FailedPreconditionError(absl::StrCat(path, ": checkpoint of a run on ",
                                                      ck.world_size(), " workers, this run has ",
                                                      run.world_size));
  }
  // Everything is checked before anything is restored.
  const auto& params = optimizer.params();
  const bool has_second = !optimizer.second_moments().empty() && optimizer.second_moments()[0].defined();
  if (ck.params_size() != static_cast<int>(params.size()) ||
      ck.first_moments_size() != ck.params_size() ||
      ck.second_moments_size() != (has_second ? ck.params_size() : 0)) {
    return absl::FailedPreconditionError(absl::StrCat(path, ": ", ck.params_size(),
                                                      " parameters, the model has ", params.size()));
  }
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& value = params[i].var.value();
    FG_RETURN_IF_ERROR(CheckTensor(ck.params(i), params[i].name, value, path));
    FG_RETURN_IF_ERROR(CheckTensor(ck.first_moments(i), params[i].name, value, path));
    if (has_second) FG_RETURN_IF_ERROR(CheckTensor(ck.second_moments(i), params[i].name, value, path));
  }
  if (ck.epoch() < 0 || ck.losses_size() != ck.epoch() || ck.epoch_seconds_size() != ck.epoch()) {
    return absl::DataLossError(absl::StrCat(path, ": checkpoint at epoch ", ck.epoch(), " holds ",
                                            ck.losses_size(), " losses"));
  }
  for (size_t i = 0; i < params.size(); ++i) {
    Copy(ck.params(i), &params[i].var.mutable_value());
    Copy(ck.first_moments(i), &optimizer.first_moments()[i]);
    if (has_second) Copy(ck.second_moments(i), &optimizer.second_moments()[i]);
  }
  optimizer.set_step_count(ck.optimizer_steps());
  progress->valid_accuracy = ck.best_valid_accuracy();
  progress->valid_macro_f1 = ck.best_valid_macro_f1();
  progress->best_epoch = ck.best_epoch();
  progress->test_accuracy = ck.best_test_accuracy();
  progress->test_macro_f1 = ck.best_test_macro_f1();
  progress->test_micro_f1 = ck.best_test_micro_f1();
  progress->best_selection = ck.best_selection();
  progress->extra.clear();
  for (const auto& [key, value] : ck.best_extra()) progress->extra[key] = value;
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
    CopyBytes(value.raw(), value.device(), t.raw(), Device::kCpu, value.nbytes());
  }
  return absl::OkStatus();
}

}  // namespace fg::runtime
