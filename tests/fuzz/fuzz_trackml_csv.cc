// libFuzzer target: the TrackML event CSV reader and graph construction. The input is the three
// files (hits, truth, particles) separated by NUL bytes; a parsed event is built into a graph set
// that must satisfy every graph-set invariant.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "flexgraph/graph/graph_set.h"
#include "flexgraph/graph/io/trackml_csv.h"
#include "flexgraph/graph/tracking.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string_view parts[3];
  for (int i = 0; i < 3; ++i) {
    const size_t nul = input.find('\0');
    parts[i] = input.substr(0, nul);
    input = nul == std::string_view::npos ? std::string_view() : input.substr(nul + 1);
  }
  auto ev = fg::graph::io::ParseTrackmlEvent(parts[0], parts[1], parts[2], "hits.csv", "truth.csv",
                                             "particles.csv");
  if (!ev.ok()) return 0;
  fg::graph::TrackingGraphOptions options;
  options.cuts.phi_slope_max = 0.01;  // many candidates from few hits
  auto ds = fg::graph::BuildTrackingDataset({*ev}, options);
  if (!ds.ok()) return 0;  // e.g. a hit at the origin's non-finite coordinates
  if (!fg::graph::ValidateGraphSet(*ds).ok()) __builtin_trap();
  if (!fg::graph::MeasureConstruction(*ds).ok()) __builtin_trap();
  return 0;
}
