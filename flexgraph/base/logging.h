// Minimal logging and invariant checks. FG_CHECK aborts with file:line and a message: use it for
// programmer errors only; user-caused errors return absl::Status. Thread-safe (one write per line).
#pragma once

#include <sstream>
#include <string>

namespace fg {

enum class LogLevel { kDebug, kInfo, kWarning, kError };

// Sets the minimum level printed (default kInfo; FG_LOG_LEVEL=debug|info|warning|error overrides).
void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();

namespace internal {
class LogMessage {
 public:
  LogMessage(LogLevel level, const char* file, int line, bool fatal = false);
  ~LogMessage();
  std::ostream& stream() { return stream_; }

 private:
  bool fatal_;
  std::ostringstream stream_;
};
struct Voidify {
  void operator&(std::ostream&) {}
};
}  // namespace internal
}  // namespace fg

#define FG_LOG(level)                                                                      \
  (::fg::LogLevel::k##level < ::fg::GetLogLevel())                                          \
      ? (void)0                                                                             \
      : ::fg::internal::Voidify() &                                                         \
            ::fg::internal::LogMessage(::fg::LogLevel::k##level, __FILE__, __LINE__).stream()

#define FG_CHECK(cond)                                                                      \
  (cond) ? (void)0                                                                          \
         : ::fg::internal::Voidify() &                                                      \
               ::fg::internal::LogMessage(::fg::LogLevel::kError, __FILE__, __LINE__, true) \
                       .stream()                                                            \
                   << "Check failed: " #cond " "
