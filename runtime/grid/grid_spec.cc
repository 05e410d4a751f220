#include "runtime/grid/grid_spec.h"

#include <cmath>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace fg::grid {
namespace {

constexpr int kMaxSide = 4096;  // no grid dimension or replication exceeds a run's workers
constexpr char kAccepted[] = "1.5d:c=C, 2d, 2d:PRxPC, 3d or 3d:PRxPCxPF, optionally followed by ,oblivious";

absl::Status Bad(const std::string& text, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("--exchange ", text, ": ", why, " (grid schemes: ", kAccepted, ")"));
}

}  // namespace

bool IsGridSpec(const std::string& text) {
  for (const char* s : {"2d", "3d", "1.5d"}) {
    const std::string p = s;
    if (text.compare(0, p.size(), p) == 0 && (text.size() == p.size() || text[p.size()] == ':' || text[p.size()] == ',')) {
      return true;
    }
  }
  return false;
}

absl::StatusOr<GridSpec> ParseGridSpec(const std::string& text) {
  std::vector<std::string> fields = absl::StrSplit(text, absl::ByAnyChar(":,"));
  GridSpec spec;
  const std::string& name = fields[0];
  if (name == "2d") {
    spec.scheme = GridScheme::kTwoD;
  } else if (name == "3d") {
    spec.scheme = GridScheme::kThreeD;
  } else if (name == "1.5d") {
    spec.scheme = GridScheme::kOnePointFiveD;
  } else {
    return Bad(text, absl::StrCat("'", name, "' is not a grid scheme"));
  }
  for (size_t k = 1; k < fields.size(); ++k) {
    const std::string& f = fields[k];
    if (f == "oblivious") {
      spec.aware = false;
    } else if (f == "aware") {
      spec.aware = true;
    } else if (spec.scheme == GridScheme::kOnePointFiveD && f.rfind("c=", 0) == 0) {
      if (!absl::SimpleAtoi(f.substr(2), &spec.c) || spec.c < 1 || spec.c > kMaxSide) {
        return Bad(text, absl::StrCat("replication '", f, "' is not c=<integer in [1, ", kMaxSide, "]>"));
      }
    } else if (spec.scheme != GridScheme::kOnePointFiveD && f.find('x') != std::string::npos) {
      std::vector<std::string> dims = absl::StrSplit(f, 'x');
      const size_t want = spec.scheme == GridScheme::kThreeD ? 3 : 2;
      int d[3] = {1, 1, 1};
      if (dims.size() != want) return Bad(text, absl::StrCat("shape '", f, "' needs ", want, " dimensions"));
      for (size_t i = 0; i < dims.size(); ++i) {
        if (!absl::SimpleAtoi(dims[i], &d[i]) || d[i] < 1 || d[i] > kMaxSide) {
          return Bad(text, absl::StrCat("shape '", f, "' has a dimension that is not an integer in [1, ", kMaxSide, "]"));
        }
      }
      spec.pr = d[0], spec.pc = d[1], spec.pf = spec.scheme == GridScheme::kThreeD ? d[2] : 1;
    } else {
      return Bad(text, absl::StrCat("unknown field '", f, "'"));
    }
  }
  if (spec.scheme == GridScheme::kOnePointFiveD && spec.c == 0) return Bad(text, "1.5d needs its replication, c=C");
  return spec;
}

absl::StatusOr<GridSpec> ResolveGridSpec(GridSpec spec, int workers) {
  const int P = workers;
  switch (spec.scheme) {
    case GridScheme::kNone:
      return spec;
    case GridScheme::kOnePointFiveD:
      if (spec.c < 1 || spec.c > kMaxSide || P % (spec.c * spec.c) != 0) {  // c divides the P / c blocks
        return absl::InvalidArgumentError(absl::StrCat("--exchange ", DescribeGrid(spec), ": c^2 = ", spec.c * spec.c,
                                                       " does not divide the ", P, " workers (c must divide the P / c blocks)"));
      }
      return spec;
    case GridScheme::kTwoD:  // as runtime/plan's NearCubicGrid(P, 2)
      if (spec.pr == 0) {
        for (int a = 1; a * a <= P; ++a) {
          if (P % a == 0) spec.pr = a, spec.pc = P / a;
        }
      }
      spec.pf = 1;
      break;
    case GridScheme::kThreeD:  // as runtime/plan's NearCubicGrid(P, 3): pr <= pc <= pf, pf / pr least
      if (spec.pr == 0) {
        double best = 1e300;
        for (int a = 1; a * a * a <= P; ++a) {
          if (P % a != 0) continue;
          for (int b = a; a * b * b <= P; ++b) {
            if ((P / a) % b != 0) continue;
            const int c = P / a / b;
            if (static_cast<double>(c) / a < best) best = static_cast<double>(c) / a, spec.pr = a, spec.pc = b, spec.pf = c;
          }
        }
      }
      break;
  }
  if (static_cast<int64_t>(spec.pr) * spec.pc * spec.pf != P) {
    return absl::InvalidArgumentError(absl::StrCat("--exchange ", DescribeGrid(spec), ": the grid has ",
                                                   static_cast<int64_t>(spec.pr) * spec.pc * spec.pf, " workers, the run ", P));
  }
  return spec;
}

std::string DescribeGrid(const GridSpec& s) {
  const char* aware = s.aware ? " aware" : " oblivious";
  switch (s.scheme) {
    case GridScheme::kNone:
      return "none";
    case GridScheme::kOnePointFiveD:
      return absl::StrCat("1.5d c=", s.c, aware);
    case GridScheme::kTwoD:
      return absl::StrCat("2d ", s.pr, "x", s.pc, aware);
    case GridScheme::kThreeD:
      return absl::StrCat("3d ", s.pr, "x", s.pc, "x", s.pf, aware);
  }
  return "?";
}

int GridRowBlocks(const GridSpec& resolved, int workers) {
  return resolved.scheme == GridScheme::kOnePointFiveD ? workers / resolved.c : resolved.pr;
}

}  // namespace fg::grid
