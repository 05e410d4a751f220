// File helpers for dataset I/O: a streaming source of decompressed bytes (gzip by magic number,
// multi-member streams included, or plain), whole-file reads, and parallel gzip writing. Every
// error names the file. Thread-compatible: one ByteSource per thread; free functions are thread-safe.
//
//   FG_ASSIGN_OR_RETURN(std::string text, io::ReadFileToString("raw/num-node-list.csv.gz"));
//   FG_RETURN_IF_ERROR(io::WriteGzipFile("out.csv.gz", text));
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace fg::graph::io {

// Decompressed bytes of one file, read sequentially.
class ByteSource {
 public:
  // Opens `path`; gzip when it starts with the gzip magic bytes, plain otherwise.
  static absl::StatusOr<std::unique_ptr<ByteSource>> Open(const std::string& path);
  // Opens an in-memory buffer (gzip or plain, detected the same way); `data` must outlive the source.
  static std::unique_ptr<ByteSource> FromMemory(std::string_view data, std::string name);
  ~ByteSource();

  // Reads up to `n` bytes into `buf`; returns the count, 0 only at the end of the data. A truncated
  // or corrupt gzip stream is an error naming the file.
  absl::StatusOr<size_t> Read(char* buf, size_t n);
  const std::string& name() const { return name_; }
  bool gzip() const { return gzip_; }
  // Compressed (or plain) bytes consumed so far.
  int64_t raw_bytes_read() const { return raw_read_; }

 private:
  ByteSource() = default;
  absl::StatusOr<size_t> ReadRaw(char* buf, size_t n);
  std::string name_;
  FILE* file_ = nullptr;
  std::string_view memory_;
  size_t memory_pos_ = 0;
  bool gzip_ = false;
  struct Inflater;
  std::unique_ptr<Inflater> inflater_;
  int64_t raw_read_ = 0;
};

// A file mapped read-only into memory (unmapped at destruction). Move-only.
class MappedFile {
 public:
  // Errors name the file: not found, not a regular file, empty, mmap failure.
  static absl::StatusOr<MappedFile> Open(const std::string& path);
  MappedFile(MappedFile&& o) noexcept : data_(o.data_), size_(o.size_) { o.data_ = nullptr; }
  MappedFile& operator=(MappedFile&&) = delete;
  ~MappedFile();
  std::string_view data() const { return std::string_view(static_cast<const char*>(data_), size_); }

 private:
  MappedFile(void* data, size_t size) : data_(data), size_(size) {}
  void* data_;
  size_t size_;
};

// Whole decompressed contents of a file.
absl::StatusOr<std::string> ReadFileToString(const std::string& path);
// Writes `data` as is (binary), replacing the file.
absl::Status WriteStringToFile(const std::string& path, std::string_view data);
// Writes `data` to a temporary file next to `path`, flushes it to disk and renames it over `path`:
// readers find the old contents or the new, never a part; the temporary file does not outlive a
// failure. Errors name the path.
absl::Status WriteFileAtomically(const std::string& path, std::string_view data);
// Compresses `data` as a multi-member gzip stream (members of ~4 MiB compressed in parallel; any
// gzip reader accepts it) and writes it to `path`.
absl::Status WriteGzipFile(const std::string& path, std::string_view data, int level = 6);
// Compresses `data` into one gzip member (for tests and the fuzz seed corpus).
std::string GzipCompress(std::string_view data, int level = 6);

bool PathExists(const std::string& path);
bool IsDirectory(const std::string& path);
// Creates a directory and its parents.
absl::Status MakeDirectories(const std::string& path);
// "a/b" + "c" -> "a/b/c".
std::string JoinPath(const std::string& a, const std::string& b);
// Names of the entries of a directory, sorted (empty when it does not exist).
std::vector<std::string> ListDirectory(const std::string& path);
// The first of `base + ".gz"` and `base` that exists, or `base + ".gz"` when neither does.
std::string ResolveCompressed(const std::string& base);

// Before a command writes a directory of outputs (a dataset, a partitioned dataset): `dir` must be
// absent or an empty directory, so that nothing already there mixes with the new files or stays
// among them. The error names the flag that chose it: "--out D: exists and is not empty (choose a
// new directory or remove it)".
absl::Status RequireNewOrEmptyDirectory(const std::string& flag, const std::string& dir);

// An exclusive lock (flock) on the file `dir`/`name`, created with `dir` when absent; released at
// destruction or when the process ends, however it ends. The holder writes its pid, host and
// command line into the file, so that a refused process can name it. Move-only.
class DirectoryLock {
 public:
  // Fails when another process holds the lock: "<what> <dir> is in use by another run (pid P on
  // host H: <command line>)".
  static absl::StatusOr<std::unique_ptr<DirectoryLock>> Acquire(const std::string& dir,
                                                                const std::string& name,
                                                                const std::string& what);
  ~DirectoryLock();
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

 private:
  explicit DirectoryLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace fg::graph::io
