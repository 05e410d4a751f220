#include "flexgraph/graph/io/file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "flexgraph/base/fault.h"
#include "flexgraph/base/parallel.h"
#include "flexgraph/base/status.h"

namespace fg::graph::io {

namespace {
constexpr size_t kInputBuffer = 1 << 20;
}  // namespace

struct ByteSource::Inflater {
  z_stream zs{};
  std::unique_ptr<char[]> in{new char[kInputBuffer]};
  bool input_eof = false;
  bool stream_end = false;  // the last member ended and no input follows
  bool in_member = false;   // inside a member (bytes consumed since its header)
  int64_t members = 0;
  ~Inflater() { inflateEnd(&zs); }
};

ByteSource::~ByteSource() {
  if (file_ != nullptr) std::fclose(file_);
}

static bool HasGzipMagic(const unsigned char* p, size_t n) {
  return n >= 2 && p[0] == 0x1f && p[1] == 0x8b;
}

absl::StatusOr<std::unique_ptr<ByteSource>> ByteSource::Open(const std::string& path) {
  std::unique_ptr<ByteSource> s(new ByteSource());
  s->name_ = path;
  if (IsDirectory(path)) return absl::InvalidArgumentError(absl::StrCat(path, ": is a directory"));
  s->file_ = std::fopen(path.c_str(), "rb");
  if (s->file_ == nullptr) {
    const int err = errno;
    if (err == ENOENT) return absl::NotFoundError(absl::StrCat(path, ": file not found"));
    return absl::PermissionDeniedError(absl::StrCat(path, ": cannot open: ", std::strerror(err)));
  }
  unsigned char magic[2];
  const size_t got = std::fread(magic, 1, 2, s->file_);
  std::rewind(s->file_);
  if (HasGzipMagic(magic, got)) {
    s->gzip_ = true;
    s->inflater_ = std::make_unique<Inflater>();
    if (inflateInit2(&s->inflater_->zs, 15 + 16) != Z_OK) {
      return absl::InternalError(absl::StrCat(path, ": inflateInit failed"));
    }
  }
  return s;
}

std::unique_ptr<ByteSource> ByteSource::FromMemory(std::string_view data, std::string name) {
  std::unique_ptr<ByteSource> s(new ByteSource());
  s->name_ = std::move(name);
  s->memory_ = data;
  if (HasGzipMagic(reinterpret_cast<const unsigned char*>(data.data()), data.size())) {
    s->gzip_ = true;
    s->inflater_ = std::make_unique<Inflater>();
    inflateInit2(&s->inflater_->zs, 15 + 16);
  }
  return s;
}

absl::StatusOr<size_t> ByteSource::ReadRaw(char* buf, size_t n) {
  if (file_ == nullptr) {
    const size_t k = std::min(n, memory_.size() - memory_pos_);
    std::memcpy(buf, memory_.data() + memory_pos_, k);
    memory_pos_ += k;
    raw_read_ += k;
    return k;
  }
  const size_t k = std::fread(buf, 1, n, file_);
  if (k < n && std::ferror(file_)) {
    return absl::DataLossError(absl::StrCat(name_, ": read error: ", std::strerror(errno)));
  }
  raw_read_ += k;
  return k;
}

absl::StatusOr<size_t> ByteSource::Read(char* buf, size_t n) {
  if (!gzip_) return ReadRaw(buf, n);
  Inflater& z = *inflater_;
  if (z.stream_end || n == 0) return 0;
  z.zs.next_out = reinterpret_cast<Bytef*>(buf);
  z.zs.avail_out = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
  while (z.zs.avail_out > 0) {
    if (z.zs.avail_in == 0 && !z.input_eof) {
      FG_ASSIGN_OR_RETURN(size_t got, ReadRaw(z.in.get(), kInputBuffer));
      if (got == 0) z.input_eof = true;
      z.zs.next_in = reinterpret_cast<Bytef*>(z.in.get());
      z.zs.avail_in = static_cast<uInt>(got);
    }
    if (z.zs.avail_in == 0 && z.input_eof) {
      if (z.in_member || z.members == 0) {
        return absl::DataLossError(absl::StrCat(
            name_, ": truncated gzip stream (ends after ", z.zs.total_out, " bytes of its ",
            z.members == 0 ? "first" : "last", " member)"));
      }
      z.stream_end = true;
      break;
    }
    z.in_member = true;
    const int rc = inflate(&z.zs, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) {
      ++z.members;
      z.in_member = false;
      inflateReset(&z.zs);
      continue;  // another member may follow
    }
    if (rc == Z_BUF_ERROR) continue;  // needs more input
    if (rc != Z_OK) {
      return absl::DataLossError(absl::StrCat(name_, ": corrupt gzip data: ",
                                              z.zs.msg != nullptr ? z.zs.msg : "inflate failed"));
    }
  }
  return n - z.zs.avail_out;
}

absl::StatusOr<MappedFile> MappedFile::Open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) {
    if (errno == ENOENT) return absl::NotFoundError(absl::StrCat(path, ": file not found"));
    return absl::PermissionDeniedError(absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  }
  const size_t size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, ": empty file"));
  }
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return absl::InternalError(absl::StrCat(path, ": mmap failed"));
  return MappedFile(map, size);
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

absl::StatusOr<std::string> ReadFileToString(const std::string& path) {
  FG_ASSIGN_OR_RETURN(std::unique_ptr<ByteSource> src, ByteSource::Open(path));
  std::string out;
  size_t len = 0;
  out.resize(1 << 16);
  while (true) {
    if (len == out.size()) out.resize(out.size() * 2);
    FG_ASSIGN_OR_RETURN(size_t got, src->Read(out.data() + len, out.size() - len));
    if (got == 0) break;
    len += got;
  }
  out.resize(len);
  return out;
}

absl::Status WriteStringToFile(const std::string& path, std::string_view data) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    return absl::PermissionDeniedError(
        absl::StrCat(path, ": cannot create: ", std::strerror(errno)));
  }
  const size_t put = std::fwrite(data.data(), 1, data.size(), f);
  const bool ok = put == data.size() && std::fclose(f) == 0;
  if (!ok) return absl::DataLossError(absl::StrCat(path, ": write failed: ", std::strerror(errno)));
  return absl::OkStatus();
}

namespace {

// Removes `path`'s temporaries left by writers that died before their rename (their pid is gone).
void RemoveStaleTemporaries(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path p(path);
  const std::string prefix = p.filename().string() + ".tmp.";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(p.has_parent_path() ? p.parent_path() : ".", ec)) {
    const std::string name = entry.path().filename().string();
    int pid = 0;
    if (!absl::StartsWith(name, prefix) || !absl::SimpleAtoi(name.substr(prefix.size()), &pid) ||
        pid <= 0 || pid == getpid()) {
      continue;
    }
    if (::kill(pid, 0) != 0 && errno == ESRCH) fs::remove(entry.path(), ec);
  }
}

}  // namespace

absl::Status WriteFileAtomically(const std::string& path, std::string_view data) {
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::PermissionDeniedError(absl::StrCat(path, ": cannot write: ", std::strerror(errno)));
  }
  size_t done = 0;
  auto write_until = [&](size_t end) {
    while (done < end) {
      const ssize_t n = ::write(fd, data.data() + done, end - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      done += static_cast<size_t>(n);
    }
  };
  write_until(data.size() / 2);
  FaultPoint("file.partial_write");
  write_until(data.size());
  const bool written = done == data.size() && ::fsync(fd) == 0;
  const int err = errno;
  const bool closed = ::close(fd) == 0;
  if (!written || !closed) {
    ::unlink(tmp.c_str());
    return absl::DataLossError(absl::StrCat(path, ": write failed: ", std::strerror(written ? errno : err)));
  }
  FaultPoint("file.before_rename");
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return absl::PermissionDeniedError(absl::StrCat(path, ": cannot rename into place: ", why));
  }
  FaultPoint("file.after_rename");
  RemoveStaleTemporaries(path);
  // The rename itself is durable once the directory is.
  const std::string parent = std::filesystem::path(path).parent_path().string();
  const int dir = ::open(parent.empty() ? "." : parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return absl::OkStatus();
}

std::string GzipCompress(std::string_view data, int level) {
  z_stream zs{};
  deflateInit2(&zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out;
  out.resize(deflateBound(&zs, data.size()) + 32);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

absl::Status WriteGzipFile(const std::string& path, std::string_view data, int level) {
  constexpr size_t kMember = 4 << 20;
  const int64_t members = std::max<int64_t>(1, (data.size() + kMember - 1) / kMember);
  std::vector<std::string> parts(members);
  ParallelForDynamic(0, members, 1, [&](int64_t i) {
    const size_t lo = i * kMember, hi = std::min(data.size(), lo + kMember);
    parts[i] = GzipCompress(data.substr(lo, hi - lo), level);
  });
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    return absl::PermissionDeniedError(
        absl::StrCat(path, ": cannot create: ", std::strerror(errno)));
  }
  bool ok = true;
  for (const std::string& p : parts) ok = ok && std::fwrite(p.data(), 1, p.size(), f) == p.size();
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) return absl::DataLossError(absl::StrCat(path, ": write failed: ", std::strerror(errno)));
  return absl::OkStatus();
}

bool PathExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

absl::Status MakeDirectories(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec && !IsDirectory(path)) {
    return absl::PermissionDeniedError(
        absl::StrCat(path, ": cannot create directory: ", ec.message()));
  }
  return absl::OkStatus();
}

std::string JoinPath(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (a.back() == '/') return a + b;
  return a + "/" + b;
}

std::vector<std::string> ListDirectory(const std::string& path) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(path, ec)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

absl::Status RequireNewOrEmptyDirectory(const std::string& flag, const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) return absl::OkStatus();
  if (!std::filesystem::is_directory(dir, ec)) {
    return absl::AlreadyExistsError(
        absl::StrCat(flag, " ", dir, ": exists and is not a directory (choose a new directory)"));
  }
  if (!std::filesystem::is_empty(dir, ec) || ec) {
    return absl::AlreadyExistsError(absl::StrCat(
        flag, " ", dir, ": exists and is not empty (choose a new directory or remove it)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<DirectoryLock>> DirectoryLock::Acquire(const std::string& dir,
                                                                      const std::string& name,
                                                                      const std::string& what) {
  FG_RETURN_IF_ERROR(MakeDirectories(dir));
  const std::string path = JoinPath(dir, name);
  const int fd = ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::PermissionDeniedError(
        absl::StrCat(what, " ", dir, ": cannot open ", path, ": ", std::strerror(errno)));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    std::string holder(512, '\0');
    const ssize_t n = ::pread(fd, holder.data(), holder.size(), 0);
    holder.resize(n > 0 ? static_cast<size_t>(n) : 0);
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    ::close(fd);
    return absl::FailedPreconditionError(absl::StrCat(
        what, " ", dir, " is in use by another run (",
        holder.empty() ? "its holder has not said who it is" : holder,
        "); runs cannot share it: choose another directory, or wait for that run to end"));
  }
  // Who holds it: pid, host and command line.
  char host[256] = "";
  ::gethostname(host, sizeof(host) - 1);
  std::string command;
  if (auto cmdline = ReadFileToString("/proc/self/cmdline"); cmdline.ok()) {
    command = *cmdline;
    std::replace(command.begin(), command.end(), '\0', ' ');
    while (!command.empty() && command.back() == ' ') command.pop_back();
    if (command.size() > 300) command = command.substr(0, 300) + "...";
  }
  const std::string me =
      absl::StrCat("pid ", ::getpid(), " on ", host, command.empty() ? "" : ": ", command, "\n");
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, me.data(), me.size(), 0) != static_cast<ssize_t>(me.size())) {
    // The lock holds regardless; only the holder's description is missing.
  }
  return std::unique_ptr<DirectoryLock>(new DirectoryLock(fd));
}

DirectoryLock::~DirectoryLock() {
  if (fd_ >= 0) ::close(fd_);
}

std::string ResolveCompressed(const std::string& base) {
  const std::string gz = base + ".gz";
  if (PathExists(gz)) return gz;
  if (PathExists(base)) return base;
  return gz;
}

}  // namespace fg::graph::io
