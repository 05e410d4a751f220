// NumPy .npy arrays (format versions 1.0, 2.0 and 3.0): float32, int32 and int64, C order, little
// endian, rank 1 to 3 (rank 0 reads as shape [1]). Errors name the file and the problem (bad magic,
// unsupported dtype or order, size mismatch). Thread-safe: no shared state.
//
//   FG_RETURN_IF_ERROR(io::WriteNpy("/tmp/feat.npy", features));
//   FG_ASSIGN_OR_RETURN(Tensor back, io::ReadNpy("/tmp/feat.npy"));
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "flexgraph/tensor/tensor.h"

namespace fg::graph::io {

absl::StatusOr<Tensor> ReadNpy(const std::string& path);
// Parses an in-memory .npy image; `name` stands for the file in errors.
absl::StatusOr<Tensor> ParseNpy(std::string_view data, const std::string& name);
// Writes a CPU tensor as a version 1.0 .npy file.
absl::Status WriteNpy(const std::string& path, const Tensor& t);
// The .npy image of a tensor.
std::string EncodeNpy(const Tensor& t);

}  // namespace fg::graph::io
