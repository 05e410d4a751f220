// A generated graph-classification set in the OGB graph-property layout, for tests: paths (class
// 0) against paths with extra chords (class 1), told apart by their degrees.
#pragma once

#include <random>
#include <string>

#include "tests/graph/test_util.h"

namespace fg::testing {

// 160 graphs of 8-20 vertices, alternately a path and a path with as many chords as half its
// vertices; 112 train, 24 valid, 24 test. One constant feature per vertex.
inline std::string WriteChordedPaths(const graph::testing::TempDir& d) {
  std::mt19937 rng(7);
  std::string nodes, edges, counts, feats, labels, train, valid, test;
  for (int g = 0; g < 160; ++g) {
    const int n = 8 + static_cast<int>(rng() % 13), label = g % 2;
    int m = 0;
    for (int v = 0; v + 1 < n; ++v, ++m) edges += std::to_string(v) + "," + std::to_string(v + 1) + "\n";
    for (int c = 0; label == 1 && c < n / 2; ++c, ++m) {
      const int a = static_cast<int>(rng() % n), b = (a + 2 + static_cast<int>(rng() % (n - 3))) % n;
      edges += std::to_string(a) + "," + std::to_string(b) + "\n";
    }
    nodes += std::to_string(n) + "\n";
    counts += std::to_string(m) + "\n";
    for (int v = 0; v < n; ++v) feats += "1\n";
    labels += std::to_string(label) + "\n";
    (g < 112 ? train : g < 136 ? valid : test) += std::to_string(g) + "\n";
  }
  d.Write("raw/num-node-list.csv.gz", nodes);
  d.Write("raw/num-edge-list.csv.gz", counts);
  d.Write("raw/edge.csv.gz", edges);
  d.Write("raw/node-feat.csv.gz", feats);
  d.Write("raw/graph-label.csv.gz", labels);
  d.Write("split/random/train.csv.gz", train);
  d.Write("split/random/valid.csv.gz", valid);
  d.Write("split/random/test.csv.gz", test);
  return d.path();
}

}  // namespace fg::testing
