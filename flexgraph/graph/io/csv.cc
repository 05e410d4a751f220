#include "flexgraph/graph/io/csv.h"

#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/parallel.h"
#include "flexgraph/base/status.h"
#include "flexgraph/graph/io/csv_tokens.h"
#include "flexgraph/graph/io/file.h"

namespace fg::graph::io {

namespace {

using csv_tokens::IsBlank;
using csv_tokens::IsDigit;
using csv_tokens::IsTerminator;
using csv_tokens::ParseFloat;
using csv_tokens::ParseInt;

std::string_view TokenAt(const char* p, const char* end) {
  const char* t = p;
  while (t < end && !IsTerminator(*t) && t - p < 40) ++t;
  return std::string_view(p, t - p);
}

const char* LineEnd(const char* p, const char* end) {
  const void* nl = std::memchr(p, '\n', end - p);
  return nl == nullptr ? end : static_cast<const char*>(nl);
}

// Number of fields on the line starting at p.
int64_t CountFields(const char* p, const char* end, bool whitespace) {
  const char* e = LineEnd(p, end);
  while (e > p && (e[-1] == '\r' || IsBlank(e[-1]))) --e;
  while (p < e && IsBlank(*p)) ++p;
  if (p == e) return 0;
  int64_t n = 1;
  if (whitespace) {
    for (; p < e; ++p) {
      if (IsBlank(*p) && p + 1 < e && !IsBlank(p[1])) ++n;
    }
  } else {
    n += std::count(p, e, ',');
  }
  return n;
}

struct ChunkError {
  int64_t line = -1;  // global line of the first error, -1 when none
  std::string message;
};

template <typename T>
struct ChunkResult {
  std::vector<T> values;
  int64_t rows = 0;
  int64_t cols = -1;        // field count of this chunk's first data line (-1: no data line)
  int64_t first_data_line = -1;
  ChunkError error;
};

struct ParseContext {
  std::string name;
  CsvOptions options;
};

template <typename T>
void ParseChunk(const char* p, const char* end, int64_t line, const ParseContext& ctx,
                ChunkResult<T>* r) {
  const CsvOptions& o = ctx.options;
  const bool ws = o.whitespace;
  const bool has_bounds = !o.bounds.empty();
  int64_t cols = o.columns;
  auto fail = [&](std::string msg) {
    r->error.line = line;
    r->error.message = absl::StrCat(ctx.name, ":", line, ": ", msg);
  };
  r->values.reserve(static_cast<size_t>(end - p) / 4);
  while (p < end) {
    while (p < end && IsBlank(*p)) ++p;
    if (p == end) break;
    if (*p == '\n' || (*p == '\r' && (p + 1 == end || p[1] == '\n'))) {
      p += (*p == '\r' && p + 1 < end) ? 2 : 1;
      ++line;
      continue;
    }
    if (o.comment != '\0' && *p == o.comment) {
      p = LineEnd(p, end) + 1;
      ++line;
      continue;
    }
    if (cols < 0) {
      cols = CountFields(p, end, ws);
      if (cols < o.min_columns || cols > o.max_columns) {
        return fail(o.min_columns == o.max_columns
                        ? absl::StrCat("expected ", o.min_columns, " columns, found ", cols)
                        : absl::StrCat("expected ", o.min_columns, " to ", o.max_columns,
                                       " columns, found ", cols));
      }
    }
    if (r->cols < 0) {
      r->cols = cols;
      r->first_data_line = line;
    }
    const char* line_start = p;
    for (int64_t c = 0; c < cols; ++c) {
      if (c > 0) {
        while (p < end && IsBlank(*p)) ++p;
        if (!ws) {
          if (p < end && *p == ',') {
            ++p;
            while (p < end && IsBlank(*p)) ++p;
          } else {
            return fail(absl::StrCat("expected ", cols, " columns, found ",
                                     CountFields(line_start, end, ws)));
          }
        }
        if (p == end || *p == '\n' || *p == '\r' || (!ws && *p == ',')) {
          if (p < end && *p == ',') return fail(absl::StrCat("column ", c + 1, ": empty field"));
          return fail(absl::StrCat("expected ", cols, " columns, found ",
                                   CountFields(line_start, end, ws)));
        }
      }
      T v;
      bool ok;
      if constexpr (std::is_same_v<T, float>) {
        ok = ParseFloat(p, end, &v);
      } else {
        ok = ParseInt(p, end, o.nan_as_minus_one, &v);
      }
      if (!ok) {
        const std::string_view tok = TokenAt(p, end);
        if (tok.empty()) return fail(absl::StrCat("column ", c + 1, ": empty field"));
        return fail(absl::StrCat("column ", c + 1, ": '", std::string(tok), "' is not ",
                                 std::is_same_v<T, float> ? "a number" : "an integer"));
      }
      if constexpr (!std::is_same_v<T, float>) {
        if (has_bounds) {
          const ColumnBounds& b = o.bounds[o.bounds.size() == 1 ? 0 : std::min<size_t>(c, o.bounds.size() - 1)];
          if (v < b.lo || v >= b.hi) {
            if (v < 0 && b.lo == 0) return fail(absl::StrCat("column ", c + 1, ": negative ", b.what, " ", v));
            return fail(absl::StrCat("column ", c + 1, ": ", b.what, " ", v, " out of range [", b.lo,
                                     ", ", b.hi, ")"));
          }
        }
      }
      r->values.push_back(v);
    }
    while (p < end && (IsBlank(*p) || *p == '\r')) ++p;
    if (p < end && *p != '\n') {
      if (*p == ',' || ws) {
        return fail(absl::StrCat("expected ", cols, " columns, found ",
                                 CountFields(line_start, end, ws)));
      }
      return fail(absl::StrCat("unexpected '", std::string(TokenAt(p, end)), "' after column ", cols));
    }
    ++p;
    ++line;
    ++r->rows;
  }
}

// A growable byte buffer without zero-filling.
struct Buffer {
  std::unique_ptr<char[]> data;
  size_t size = 0, capacity = 0;
  void Reserve(size_t n) {
    if (n <= capacity) return;
    std::unique_ptr<char[]> d(new char[n]);
    if (size > 0) std::memcpy(d.get(), data.get(), size);
    data = std::move(d);
    capacity = n;
  }
};

// Cuts a byte stream into chunks of whole lines.
class Chunker {
 public:
  Chunker(ByteSource* src, size_t chunk_bytes) : src_(src), chunk_bytes_(chunk_bytes) {}
  // Next chunk (empty at the end); first_line is the 1-based line its first byte is on.
  absl::StatusOr<bool> Next(Buffer* out, int64_t* first_line) {
    out->size = 0;
    size_t target = std::max(chunk_bytes_, carry_.size + 1);
    out->Reserve(target);
    if (carry_.size > 0) {
      std::memcpy(out->data.get(), carry_.data.get(), carry_.size);
      out->size = carry_.size;
      carry_.size = 0;
    }
    size_t scanned = 0;  // out[0, scanned) holds no newline
    while (true) {
      while (!eof_ && out->size < target) {
        FG_ASSIGN_OR_RETURN(size_t got,
                            src_->Read(out->data.get() + out->size, target - out->size));
        if (got == 0) eof_ = true;
        out->size += got;
        total_ += got;
      }
      if (eof_) break;
      // Cut after the last newline; with no newline yet, read more.
      const char* b = out->data.get();
      size_t cut = out->size;
      while (cut > scanned && b[cut - 1] != '\n') --cut;
      if (cut > scanned) {
        carry_.Reserve(out->size - cut + 1);
        std::memcpy(carry_.data.get(), b + cut, out->size - cut);
        carry_.size = out->size - cut;
        out->size = cut;
        break;
      }
      scanned = out->size;
      target *= 2;
      out->Reserve(target);
    }
    *first_line = line_;
    const char* b = out->data.get();
    for (const char* p = b; p < b + out->size;) {
      const void* nl = std::memchr(p, '\n', b + out->size - p);
      if (nl == nullptr) break;
      ++line_;
      p = static_cast<const char*>(nl) + 1;
    }
    return out->size > 0;
  }
  int64_t line() const { return line_; }
  int64_t total() const { return total_; }

 private:
  ByteSource* src_;
  size_t chunk_bytes_;
  Buffer carry_;
  bool eof_ = false;
  int64_t line_ = 1;
  int64_t total_ = 0;
};

template <typename T>
absl::StatusOr<CsvTable> RunParse(ByteSource* src, CsvType type, const CsvOptions& options) {
  ParseContext ctx{src->name(), options};
  if (ctx.options.columns > 0) {
    ctx.options.min_columns = ctx.options.max_columns = ctx.options.columns;
    ctx.options.columns = -1;  // each chunk checks its first line, then all chunks must agree
  }
  const int threads = std::max(1, options.threads > 0 ? options.threads : NumThreads());
  const size_t chunk_bytes = std::max<size_t>(options.chunk_bytes, 64);
  Chunker chunker(src, chunk_bytes);
  std::vector<std::unique_ptr<ChunkResult<T>>> results;
  absl::Status read_status;
  int64_t read_error_line = -1;

  Buffer first;
  int64_t first_line = 1;
  {
    absl::StatusOr<bool> more = chunker.Next(&first, &first_line);
    if (!more.ok()) {
      read_status = more.status();
      read_error_line = chunker.line();
    }
  }
  auto second_pending = [&] { return read_status.ok() && first.size > 0; };
  if (second_pending()) {
    results.push_back(std::make_unique<ChunkResult<T>>());
    Buffer next;
    int64_t next_line = 0;
    absl::StatusOr<bool> more = chunker.Next(&next, &next_line);
    if (!more.ok()) {
      read_status = more.status();
      read_error_line = chunker.line();
      ParseChunk(first.data.get(), first.data.get() + first.size, first_line, ctx, results[0].get());
    } else if (!*more || threads == 1) {
      // Small input (or one thread): parse inline, chunk by chunk.
      ParseChunk(first.data.get(), first.data.get() + first.size, first_line, ctx, results[0].get());
      while (*more && results.back()->error.line < 0) {
        results.push_back(std::make_unique<ChunkResult<T>>());
        ParseChunk(next.data.get(), next.data.get() + next.size, next_line, ctx,
                   results.back().get());
        more = chunker.Next(&next, &next_line);
        if (!more.ok()) {
          read_status = more.status();
          read_error_line = chunker.line();
          break;
        }
      }
    } else {
      // Pipeline: this thread inflates and cuts; `threads` workers parse.
      struct Job {
        Buffer buf;
        int64_t line;
        ChunkResult<T>* result;
      };
      std::mutex mu;
      std::condition_variable not_empty, not_full;
      std::deque<Job> queue;
      bool done = false;
      std::atomic<bool> failed{false};
      const size_t capacity = static_cast<size_t>(threads) + 1;
      auto worker = [&] {
        while (true) {
          Job job;
          {
            std::unique_lock<std::mutex> lock(mu);
            not_empty.wait(lock, [&] { return !queue.empty() || done; });
            if (queue.empty()) return;
            job = std::move(queue.front());
            queue.pop_front();
          }
          not_full.notify_one();
          ParseChunk(job.buf.data.get(), job.buf.data.get() + job.buf.size, job.line, ctx,
                     job.result);
          if (job.result->error.line >= 0) failed = true;
        }
      };
      auto push = [&](Buffer&& b, int64_t line, ChunkResult<T>* r) {
        std::unique_lock<std::mutex> lock(mu);
        not_full.wait(lock, [&] { return queue.size() < capacity; });
        queue.push_back(Job{std::move(b), line, r});
        lock.unlock();
        not_empty.notify_one();
      };
      std::vector<std::thread> pool;
      for (int t = 0; t < threads; ++t) pool.emplace_back(worker);
      push(std::move(first), first_line, results[0].get());
      results.push_back(std::make_unique<ChunkResult<T>>());
      push(std::move(next), next_line, results.back().get());
      while (!failed) {
        Buffer b;
        int64_t line = 0;
        absl::StatusOr<bool> got = chunker.Next(&b, &line);
        if (!got.ok()) {
          read_status = got.status();
          read_error_line = chunker.line();
          break;
        }
        if (!*got) break;
        results.push_back(std::make_unique<ChunkResult<T>>());
        push(std::move(b), line, results.back().get());
      }
      {
        std::lock_guard<std::mutex> lock(mu);
        done = true;
      }
      not_empty.notify_all();
      for (std::thread& t : pool) t.join();
    }
  }

  // The first error by line: parse errors, column disagreements between chunks, read errors.
  int64_t cols = -1, cols_line = -1;
  ChunkError first_error;
  for (const auto& r : results) {
    if (r->error.line >= 0) {
      if (first_error.line < 0 || r->error.line < first_error.line) first_error = r->error;
      break;
    }
    if (r->cols < 0) continue;
    if (cols < 0) {
      cols = r->cols;
      cols_line = r->first_data_line;
    } else if (r->cols != cols) {
      ChunkError e{r->first_data_line,
                   absl::StrCat(src->name(), ":", r->first_data_line, ": expected ", cols,
                                " columns (as on line ", cols_line, "), found ", r->cols)};
      if (first_error.line < 0 || e.line < first_error.line) first_error = e;
      break;
    }
  }
  if (first_error.line >= 0 && (read_status.ok() || first_error.line <= read_error_line)) {
    return absl::InvalidArgumentError(first_error.message);
  }
  if (!read_status.ok()) {
    return absl::Status(read_status.code(),
                        absl::StrCat(read_status.message(), " near line ", read_error_line));
  }
  int64_t rows = 0;
  for (const auto& r : results) rows += r->rows;
  if (cols < 0) cols = options.columns > 0 ? options.columns : 0;
  if (rows == 0 && !options.allow_empty) {
    return absl::InvalidArgumentError(absl::StrCat(
        src->name(), ":1: empty file (no data lines", chunker.total() > 0 ? "" : ", 0 bytes", ")"));
  }
  CsvTable table;
  table.rows = rows;
  table.cols = cols;
  table.bytes = chunker.total();
  table.values = Tensor::Empty({rows, cols}, type == CsvType::kInt64 ? DType::kInt64 : DType::kFloat32);
  std::vector<int64_t> starts(results.size() + 1, 0);
  for (size_t i = 0; i < results.size(); ++i) starts[i + 1] = starts[i] + results[i]->values.size();
  T* out = table.values.template data<T>();
  ParallelForDynamic(0, static_cast<int64_t>(results.size()), 1, [&](int64_t i) {
    if (!results[i]->values.empty()) {
      std::memcpy(out + starts[i], results[i]->values.data(), results[i]->values.size() * sizeof(T));
    }
    std::vector<T>().swap(results[i]->values);
  });
  return table;
}

absl::StatusOr<CsvTable> Dispatch(ByteSource* src, CsvType type, const CsvOptions& options) {
  if (type == CsvType::kInt64) return RunParse<int64_t>(src, type, options);
  return RunParse<float>(src, type, options);
}

}  // namespace

absl::StatusOr<CsvTable> ReadCsv(const std::string& path, CsvType type, const CsvOptions& options) {
  FG_ASSIGN_OR_RETURN(std::unique_ptr<ByteSource> src, ByteSource::Open(path));
  return Dispatch(src.get(), type, options);
}

absl::StatusOr<CsvTable> ParseCsv(std::string_view text, const std::string& name, CsvType type,
                                  const CsvOptions& options) {
  std::unique_ptr<ByteSource> src = ByteSource::FromMemory(text, name);
  return Dispatch(src.get(), type, options);
}

std::vector<std::vector<std::string>> SplitCsvText(std::string_view text,
                                                   std::vector<int64_t>* line_numbers) {
  std::vector<std::vector<std::string>> rows;
  int64_t line = 0;
  size_t pos = 0;
  auto trim = [](std::string_view s) {
    while (!s.empty() && (IsBlank(s.front()) || s.front() == '\r')) s.remove_prefix(1);
    while (!s.empty() && (IsBlank(s.back()) || s.back() == '\r')) s.remove_suffix(1);
    return s;
  };
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view l = trim(text.substr(pos, nl - pos));
    pos = nl + 1;
    ++line;
    if (l.empty()) continue;
    std::vector<std::string> fields;
    size_t f = 0;
    while (true) {
      size_t comma = l.find(',', f);
      if (comma == std::string_view::npos) comma = l.size();
      fields.emplace_back(trim(l.substr(f, comma - f)));
      if (comma == l.size()) break;
      f = comma + 1;
    }
    rows.push_back(std::move(fields));
    if (line_numbers != nullptr) line_numbers->push_back(line);
  }
  return rows;
}

}  // namespace fg::graph::io
