#include "flexgraph/graph/io/npy.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "flexgraph/base/status.h"
#include "flexgraph/graph/io/file.h"

namespace fg::graph::io {

namespace {

constexpr char kMagic[] = "\x93NUMPY";

absl::Status Bad(const std::string& name, const std::string& msg) {
  return absl::InvalidArgumentError(absl::StrCat(name, ": ", msg));
}

// Value text of `'key': value` in the header dict (up to the next top-level ',' or '}').
bool FindValue(std::string_view header, std::string_view key, std::string_view* value) {
  for (char q : {'\'', '"'}) {
    const std::string k = std::string(1, q) + std::string(key) + std::string(1, q);
    size_t p = header.find(k);
    if (p == std::string_view::npos) continue;
    p = header.find(':', p + k.size());
    if (p == std::string_view::npos) return false;
    ++p;
    while (p < header.size() && header[p] == ' ') ++p;
    size_t e = p;
    int depth = 0;
    while (e < header.size()) {
      const char c = header[e];
      if (c == '(') ++depth;
      if (c == ')') --depth;
      if (depth == 0 && (c == ',' || c == '}')) break;
      if (depth < 0) return false;
      ++e;
    }
    *value = header.substr(p, e - p);
    while (!value->empty() && value->back() == ' ') value->remove_suffix(1);
    return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<Tensor> ParseNpy(std::string_view data, const std::string& name) {
  if (data.size() < 10 || std::memcmp(data.data(), kMagic, 6) != 0) {
    return Bad(name, "not a .npy file (bad magic)");
  }
  const uint8_t major = static_cast<uint8_t>(data[6]);
  size_t header_len, header_start;
  if (major == 1) {
    header_len = static_cast<uint8_t>(data[8]) | (static_cast<uint8_t>(data[9]) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (data.size() < 12) return Bad(name, "truncated header");
    header_len = 0;
    for (int i = 0; i < 4; ++i) header_len |= static_cast<size_t>(static_cast<uint8_t>(data[8 + i])) << (8 * i);
    header_start = 12;
  } else {
    return Bad(name, absl::StrCat("unsupported .npy version ", major));
  }
  if (header_start + header_len > data.size()) return Bad(name, "truncated header");
  const std::string_view header = data.substr(header_start, header_len);
  std::string_view descr, order, shape_text;
  if (!FindValue(header, "descr", &descr) || !FindValue(header, "fortran_order", &order) ||
      !FindValue(header, "shape", &shape_text)) {
    return Bad(name, absl::StrCat("header lacks descr, fortran_order or shape: ", std::string(header.substr(0, 120))));
  }
  if (descr.size() >= 2 && (descr.front() == '\'' || descr.front() == '"')) {
    descr = descr.substr(1, descr.size() - 2);
  }
  DType dtype;
  if (descr == "<f4") {
    dtype = DType::kFloat32;
  } else if (descr == "<i4") {
    dtype = DType::kInt32;
  } else if (descr == "<i8") {
    dtype = DType::kInt64;
  } else {
    return Bad(name, absl::StrCat("unsupported dtype '", std::string(descr),
                                  "' (supported: '<f4' float32, '<i4' int32, '<i8' int64, little "
                                  "endian)"));
  }
  if (order != "False") return Bad(name, "Fortran-order arrays are not supported (use C order)");
  if (shape_text.size() < 2 || shape_text.front() != '(' || shape_text.back() != ')') {
    return Bad(name, absl::StrCat("bad shape '", std::string(shape_text), "'"));
  }
  Shape shape;
  std::string_view inner = shape_text.substr(1, shape_text.size() - 2);
  while (!inner.empty()) {
    const size_t comma = inner.find(',');
    std::string_view tok = inner.substr(0, comma);
    while (!tok.empty() && tok.front() == ' ') tok.remove_prefix(1);
    while (!tok.empty() && (tok.back() == ' ' || tok.back() == 'L')) tok.remove_suffix(1);
    if (!tok.empty()) {
      int64_t d;
      if (!absl::SimpleAtoi(std::string(tok), &d) || d < 0 || d > (int64_t{1} << 40)) {
        return Bad(name, absl::StrCat("bad shape '", std::string(shape_text), "'"));
      }
      shape.push_back(d);
    }
    if (comma == std::string_view::npos) break;
    inner.remove_prefix(comma + 1);
  }
  if (shape.empty()) shape.push_back(1);
  if (shape.size() > 3) return Bad(name, absl::StrCat("rank ", shape.size(), " > 3 is not supported"));
  // Element count: 0 with any zero dimension; otherwise the product, saturated (a product past
  // 2^64 can never match the data size).
  const bool empty = std::find(shape.begin(), shape.end(), 0) != shape.end();
  unsigned __int128 numel = empty ? 0 : 1;
  for (int64_t d : shape) {
    if (!empty) numel = std::min<unsigned __int128>(numel * static_cast<uint64_t>(d), UINT64_MAX);
  }
  const unsigned __int128 bytes = numel * DTypeSize(dtype);
  const size_t data_start = header_start + header_len;
  if (bytes != data.size() - data_start) {
    return Bad(name, absl::StrCat("shape ", ShapeToString(shape), " needs ",
                                  static_cast<uint64_t>(std::min<unsigned __int128>(bytes, UINT64_MAX)),
                                  " data bytes but the file has ", data.size() - data_start));
  }
  Tensor t = Tensor::Empty(shape, dtype);
  if (t.nbytes() > 0) std::memcpy(t.raw(), data.data() + data_start, t.nbytes());
  return t;
}

absl::StatusOr<Tensor> ReadNpy(const std::string& path) {
  FG_ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(path));
  return ParseNpy(file.data(), path);
}

namespace {
std::string NpyHeader(const Tensor& t) {
  const char* descr = t.dtype() == DType::kFloat32 ? "<f4" : t.dtype() == DType::kInt32 ? "<i4" : "<i8";
  std::string shape;
  if (t.rank() == 1) {
    shape = absl::StrCat("(", t.dim(0), ",)");
  } else {
    shape = absl::StrCat("(", absl::StrJoin(t.shape(), ", "), ")");
  }
  std::string header = absl::StrCat("{'descr': '", descr, "', 'fortran_order': False, 'shape': ",
                                    shape, ", }");
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  std::string out(kMagic, 6);
  out.push_back('\x01');
  out.push_back('\x00');
  out.push_back(static_cast<char>(header.size() & 0xff));
  out.push_back(static_cast<char>(header.size() >> 8));
  return out + header;
}
}  // namespace

std::string EncodeNpy(const Tensor& t) {
  std::string out = NpyHeader(t);
  const size_t start = out.size();
  out.resize(start + t.nbytes());
  if (t.nbytes() > 0) std::memcpy(out.data() + start, t.raw(), t.nbytes());
  return out;
}

absl::Status WriteNpy(const std::string& path, const Tensor& t) {
  const std::string header = NpyHeader(t);
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    return absl::PermissionDeniedError(absl::StrCat(path, ": cannot create: ", std::strerror(errno)));
  }
  bool ok = std::fwrite(header.data(), 1, header.size(), f) == header.size();
  if (t.nbytes() > 0) ok = ok && std::fwrite(t.raw(), 1, t.nbytes(), f) == t.nbytes();
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) return absl::DataLossError(absl::StrCat(path, ": write failed"));
  return absl::OkStatus();
}

}  // namespace fg::graph::io
