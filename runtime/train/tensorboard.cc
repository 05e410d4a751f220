#include "runtime/train/tensorboard.h"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/status.h"
#include "flexgraph/graph/io/file.h"
#include "proto/tensorboard.pb.h"

namespace fg::runtime {
namespace {

// The reflected CRC32C table (polynomial 0x82F63B78).
constexpr std::array<uint32_t, 256> MakeTable() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr std::array<uint32_t, 256> kCrcTable = MakeTable();

double WallTime() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

uint32_t Crc32c(std::string_view data) {
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : data) c = kCrcTable[(c ^ b) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t MaskedCrc32c(std::string_view data) {
  const uint32_t c = Crc32c(data);
  return ((c >> 15) | (c << 17)) + 0xA282EAD8u;
}

absl::StatusOr<std::unique_ptr<EventWriter>> EventWriter::Open(const std::string& dir) {
  if (absl::Status s = graph::io::MakeDirectories(dir); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("--tensorboard ", dir, ": ", s.message()));
  }
  char host[256] = "localhost";
  (void)::gethostname(host, sizeof(host) - 1);
  host[sizeof(host) - 1] = '\0';
  const double now = WallTime();
  // The pid keeps two runs started in the same second apart.
  const std::string path = absl::StrCat(dir, "/events.out.tfevents.", static_cast<int64_t>(now), ".",
                                        host, ".", ::getpid());
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    return absl::PermissionDeniedError(
        absl::StrCat("--tensorboard: cannot create ", path, ": ", std::strerror(errno)));
  }
  std::unique_ptr<EventWriter> w(new EventWriter(path, f));
  flexgraph::tensorboard::Event e;
  e.set_wall_time(now);
  e.set_file_version("brain.Event:2");
  FG_RETURN_IF_ERROR(w->WriteRecord(e.SerializeAsString()));
  return w;
}

EventWriter::~EventWriter() { std::fclose(file_); }

absl::Status EventWriter::WriteRecord(const std::string& data) {
  char header[12];
  const uint64_t length = data.size();
  for (int i = 0; i < 8; ++i) header[i] = static_cast<char>((length >> (8 * i)) & 0xFF);
  const uint32_t length_crc = MaskedCrc32c(std::string_view(header, 8));
  const uint32_t data_crc = MaskedCrc32c(data);
  for (int i = 0; i < 4; ++i) header[8 + i] = static_cast<char>((length_crc >> (8 * i)) & 0xFF);
  char footer[4];
  for (int i = 0; i < 4; ++i) footer[i] = static_cast<char>((data_crc >> (8 * i)) & 0xFF);
  if (std::fwrite(header, 1, sizeof(header), file_) != sizeof(header) ||
      std::fwrite(data.data(), 1, data.size(), file_) != data.size() ||
      std::fwrite(footer, 1, sizeof(footer), file_) != sizeof(footer) || std::fflush(file_) != 0) {
    return absl::InternalError(absl::StrCat("--tensorboard: cannot write ", path_, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status EventWriter::AddScalars(int64_t step,
                                     const std::vector<std::pair<std::string, double>>& scalars) {
  flexgraph::tensorboard::Event e;
  e.set_wall_time(WallTime());
  e.set_step(step);
  auto* summary = e.mutable_summary();
  for (const auto& [tag, value] : scalars) {
    if (!std::isfinite(value)) continue;
    auto* v = summary->add_value();
    v->set_tag(tag);
    v->set_simple_value(static_cast<float>(value));
  }
  return WriteRecord(e.SerializeAsString());
}

}  // namespace fg::runtime
