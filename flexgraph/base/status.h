// Status helpers: FG_RETURN_IF_ERROR / FG_ASSIGN_OR_RETURN for absl::Status and absl::StatusOr.
// Errors a user can cause (bad files, configs, peers) travel as Status; CHECK is for invariants.
// Thread-safe: macros only.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

#define FG_CONCAT_INNER_(a, b) a##b
#define FG_CONCAT_(a, b) FG_CONCAT_INNER_(a, b)

// Returns from the enclosing function if `expr` (a Status) is not OK.
#define FG_RETURN_IF_ERROR(expr)                  \
  do {                                            \
    ::absl::Status fg_status_ = (expr);           \
    if (!fg_status_.ok()) return fg_status_;      \
  } while (0)

// `FG_ASSIGN_OR_RETURN(auto x, F());` assigns the value of a StatusOr or returns its error.
#define FG_ASSIGN_OR_RETURN(lhs, expr) \
  FG_ASSIGN_OR_RETURN_IMPL_(FG_CONCAT_(fg_statusor_, __LINE__), lhs, expr)
#define FG_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()

namespace fg {

// Prefixes a non-OK status message with `context` ("file.csv:12: ..."), keeping its code.
inline absl::Status Annotate(const absl::Status& s, const std::string& context) {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(context, ": ", s.message()));
}

}  // namespace fg
