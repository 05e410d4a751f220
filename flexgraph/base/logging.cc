#include "flexgraph/base/logging.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace fg {
namespace {
LogLevel InitialLevel() {
  const char* env = std::getenv("FG_LOG_LEVEL");
  if (env == nullptr) return LogLevel::kInfo;
  if (std::strcmp(env, "debug") == 0) return LogLevel::kDebug;
  if (std::strcmp(env, "warning") == 0) return LogLevel::kWarning;
  if (std::strcmp(env, "error") == 0) return LogLevel::kError;
  return LogLevel::kInfo;
}
std::atomic<LogLevel> g_level{InitialLevel()};
}  // namespace

void SetLogLevel(LogLevel level) { g_level = level; }
LogLevel GetLogLevel() { return g_level; }

namespace internal {
LogMessage::LogMessage(LogLevel level, const char* file, int line, bool fatal)
    : fatal_(fatal) {
  static const char* kNames[] = {"D", "I", "W", "E"};
  const char* base = std::strrchr(file, '/');
  stream_ << kNames[static_cast<int>(level)] << " " << (base ? base + 1 : file) << ":" << line
          << "] ";
}
LogMessage::~LogMessage() {
  stream_ << "\n";
  std::string s = stream_.str();
  std::fwrite(s.data(), 1, s.size(), stderr);
  std::fflush(stderr);
  if (fatal_) std::abort();
}
}  // namespace internal
}  // namespace fg
