// TensorBoard event files: a run's per-epoch scalars in the format TensorBoard reads
// (events.out.tfevents.<seconds>.<host>: TFRecord framing of Event protos, proto/tensorboard.proto).
//
//   FG_ASSIGN_OR_RETURN(auto writer, EventWriter::Open(dir));
//   writer->AddScalars(epoch, {{"loss/train", 0.7}, {"accuracy/valid", 0.8}});
//
// Each record is: uint64 length, masked CRC32C of the length, the Event bytes, masked CRC32C of
// the bytes (little-endian). Every AddScalars flushes, so a run that stops keeps its epochs.
// Thread-compatible.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace fg::runtime {

// CRC32C (Castagnoli) of `data`, and TFRecord's masked form of it.
uint32_t Crc32c(std::string_view data);
uint32_t MaskedCrc32c(std::string_view data);

class EventWriter {
 public:
  // Creates `dir` when missing and a new event file in it; errors name the directory.
  static absl::StatusOr<std::unique_ptr<EventWriter>> Open(const std::string& dir);
  ~EventWriter();

  // One Event at `step` with a scalar Summary value per (tag, value); non-finite values are left
  // out. Errors name the file.
  absl::Status AddScalars(int64_t step, const std::vector<std::pair<std::string, double>>& scalars);
  const std::string& path() const { return path_; }

 private:
  EventWriter(std::string path, std::FILE* file) : path_(std::move(path)), file_(file) {}
  absl::Status WriteRecord(const std::string& data);

  std::string path_;
  std::FILE* file_;
};

}  // namespace fg::runtime
