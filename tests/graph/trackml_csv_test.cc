// The TrackML event CSV reader: generated events written in exactly the public files' format
// (with end-cap hits and a cells file the reader must skip) load into the same graphs as the
// generator's, and malformed files are named by file, line and column.
#include "flexgraph/graph/io/trackml_csv.h"

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/rng.h"
#include "flexgraph/graph/dataset.h"
#include "flexgraph/graph/gen/trackml.h"
#include "flexgraph/graph/graph_set.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/graph/test_util.h"

namespace fg::graph::io {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

std::string Num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

struct EventFiles {
  std::string hits, truth, particles, cells;
};

// The event in TrackML's format: barrel layer l as (volume, layer_id), particle ids offset to look
// like TrackML's large ids, plus two end-cap hits (volume 7) of particle 0.
EventFiles Format(const TrackingEvent& ev) {
  EventFiles f;
  f.hits = "hit_id,x,y,z,volume_id,layer_id,module_id\n";
  f.truth = "hit_id,particle_id,tx,ty,tz,tpx,tpy,tpz,weight\n";
  f.particles = "particle_id,vx,vy,vz,px,py,pz,q,nhits\n";
  f.cells = "hit_id,ch0,ch1,value\n";
  auto pid = [](int64_t p) { return p < 0 ? int64_t{0} : 4503599644147712 + 1000 * p; };
  int64_t id = 1;
  for (const TrackingHit& h : ev.hits) {
    const int volume = h.layer < 4 ? 8 : h.layer < 8 ? 13 : 17;
    const int layer_id = 2 * (h.layer < 4 ? h.layer + 1 : h.layer < 8 ? h.layer - 3 : h.layer - 7);
    f.hits += absl::StrCat(id, ",", Num(h.x), ",", Num(h.y), ",", Num(h.z), ",", volume, ",",
                           layer_id, ",", 17 + id % 5, "\n");
    f.truth += absl::StrCat(id, ",", pid(h.particle), ",", Num(h.x), ",", Num(h.y), ",", Num(h.z),
                            ",0.5,0.5,0.1,1e-05\n");
    f.cells += absl::StrCat(id, ",1,2,0.3\n");
    ++id;
  }
  for (int k = 0; k < 2; ++k, ++id) {
    f.hits += absl::StrCat(id, ",10,20,-1500,7,", 2 + 2 * k, ",3\n");
    f.truth += absl::StrCat(id, ",", pid(0), ",10,20,-1500,0.1,0.1,-1,1e-05\n");
  }
  for (size_t p = 0; p < ev.particles.size(); ++p) {
    const TrackingParticle& t = ev.particles[p];
    f.particles += absl::StrCat(pid(static_cast<int64_t>(p)), ",0.01,-0.02,", Num(t.vz), ",",
                                Num(t.pt * std::cos(t.phi)), ",", Num(t.pt * std::sin(t.phi)), ",",
                                Num(t.pt * std::sinh(t.eta)), ",", p % 2 ? 1 : -1, ",7\n");
  }
  return f;
}

void WriteEvent(const TempDir& d, const std::string& prefix, const EventFiles& f, bool gz = false) {
  const std::string ext = gz ? ".csv.gz" : ".csv";
  d.Write(prefix + "-hits" + ext, f.hits);
  d.Write(prefix + "-truth" + ext, f.truth);
  d.Write(prefix + "-particles" + ext, f.particles);
  d.Write(prefix + "-cells" + ext, f.cells);
}

TrackmlOptions SmallRun() {
  TrackmlOptions o;
  o.events = 3;
  o.particles = 40;
  o.noise = 0.2;
  o.seed = 5;
  return o;
}

TEST(TrackmlCsvTest, ReadsEventsIntoTheGeneratorsGraphs) {
  const TrackmlOptions o = SmallRun();
  std::vector<TrackingEvent> events;
  TempDir d;
  for (int64_t e = 0; e < o.events; ++e) {
    events.push_back(SimulateTrackmlEvent(o, e));
    WriteEvent(d, absl::StrCat("event00000100", e), Format(events.back()), /*gz=*/e == 1);
  }
  ASSERT_TRUE(IsTrackmlDirectory(d.path()));
  auto ds = LoadDataset(d.path(), LoadOptions());
  ASSERT_TRUE(ds.ok()) << ds.status();
  TrackingGraphOptions go;
  auto want = BuildTrackingDataset(events, go);
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_TRUE(ds->IsGraphSet());
  ASSERT_TRUE(ValidateGraphSet(*ds).ok()) << ValidateGraphSet(*ds);
  const GraphSet& got = *ds->graphs;
  const GraphSet& exp = *want->graphs;
  EXPECT_EQ(got.num_graphs(), 3);
  EXPECT_EQ(got.node_offsets.ToVector<int64_t>(), exp.node_offsets.ToVector<int64_t>());
  EXPECT_EQ(got.edges.ToVector<int64_t>(), exp.edges.ToVector<int64_t>());
  EXPECT_EQ(got.edge_labels.ToVector<int64_t>(), exp.edge_labels.ToVector<int64_t>());
  EXPECT_EQ(got.node_info.at(kHitParticle).ToVector<int64_t>(),
            exp.node_info.at(kHitParticle).ToVector<int64_t>());
  EXPECT_EQ(got.node_info.at(kHitLayer).ToVector<int64_t>(),
            exp.node_info.at(kHitLayer).ToVector<int64_t>());
  EXPECT_EQ(got.particles.at(kParticleHits).ToVector<int64_t>(),
            exp.particles.at(kParticleHits).ToVector<int64_t>());
  EXPECT_EQ(got.particles.at(kParticleId).i64()[1], 4503599644147712 + 1000);
  const std::vector<float> gpt = got.particles.at(kParticlePt).ToVector<float>();
  const std::vector<float> ept = exp.particles.at(kParticlePt).ToVector<float>();
  const std::vector<float> geta = got.particles.at(kParticleEta).ToVector<float>();
  const std::vector<float> eeta = exp.particles.at(kParticleEta).ToVector<float>();
  ASSERT_EQ(gpt.size(), ept.size());
  for (size_t i = 0; i < gpt.size(); ++i) {
    EXPECT_NEAR(gpt[i], ept[i], 1e-5 * ept[i]);
    EXPECT_NEAR(geta[i], eeta[i], 1e-5);
  }
  const std::vector<float> gf = ds->features.at("node").ToVector<float>();
  const std::vector<float> ef = want->features.at("node").ToVector<float>();
  ASSERT_EQ(gf.size(), ef.size());
  for (size_t i = 0; i < gf.size(); ++i) EXPECT_NEAR(gf[i], ef[i], 1e-6);
  const std::string base = d.path().substr(d.path().rfind('/') + 1);
  EXPECT_EQ(ds->name, base);
  auto q = MeasureConstruction(*ds);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->found_segments, MeasureConstruction(*want)->found_segments);
}

// One tiny event: two barrel hits of particle 7, one noise hit, one end-cap hit.
EventFiles Tiny() {
  EventFiles f;
  f.hits =
      "hit_id,x,y,z,volume_id,layer_id,module_id\n1,32,0,1,8,2,1\n2,72,0.5,2,8,4,1\n"
      "3,0,116,5,8,6,2\n4,50,50,-1600,7,2,9\n";
  f.truth =
      "hit_id,particle_id,tx,ty,tz,tpx,tpy,tpz,weight\n1,7,0,0,0,0,0,0,0\n2,7,0,0,0,0,0,0,0\n"
      "3,0,0,0,0,0,0,0,0\n4,7,0,0,0,0,0,0,0\n";
  f.particles = "particle_id,vx,vy,vz,px,py,pz,q,nhits\n7,0,0,0,2,0,0.5,1,3\n";
  return f;
}

std::string ParseError(const EventFiles& f) {
  auto ev = ParseTrackmlEvent(f.hits, f.truth, f.particles, "h.csv", "t.csv", "p.csv");
  EXPECT_FALSE(ev.ok());
  return ev.ok() ? "" : std::string(ev.status().message());
}

TEST(TrackmlCsvTest, ParsesATinyEvent) {
  const EventFiles f = Tiny();
  auto ev = ParseTrackmlEvent(f.hits, f.truth, f.particles, "h.csv", "t.csv", "p.csv");
  ASSERT_TRUE(ev.ok()) << ev.status();
  ASSERT_EQ(ev->hits.size(), 3u);  // the end-cap hit is left out
  EXPECT_EQ(ev->hits[1].layer, 1);
  EXPECT_EQ(ev->hits[2].layer, 2);
  EXPECT_EQ(ev->hits[0].particle, 0);
  EXPECT_EQ(ev->hits[2].particle, -1);
  ASSERT_EQ(ev->particles.size(), 1u);
  EXPECT_EQ(ev->particles[0].id, 7);
  EXPECT_DOUBLE_EQ(ev->particles[0].pt, 2);
  EXPECT_DOUBLE_EQ(ev->particles[0].eta, std::asinh(0.25));
  // Columns in another order, extra columns, CRLF line ends.
  EventFiles g = f;
  g.particles = "q,pz,py,px,vz,vy,vx,particle_id,nhits,extra\r\n1,0.5,0,2,0,0,0,7,3,x\r\n";
  auto ev2 = ParseTrackmlEvent(g.hits, g.truth, g.particles, "h.csv", "t.csv", "p.csv");
  ASSERT_TRUE(ev2.ok()) << ev2.status();
  EXPECT_DOUBLE_EQ(ev2->particles[0].pt, 2);
}

TEST(TrackmlCsvTest, BadFilesAreNamedByFileLineAndColumn) {
  EventFiles f = Tiny();
  f.hits = "hit_id,x,y,volume_id,layer_id\n1,2,3,8,2\n";
  EXPECT_THAT(ParseError(f), HasSubstr("h.csv:1: no column 'z'"));
  f = Tiny();
  f.hits.replace(f.hits.find("72,"), 3, "7x,");
  EXPECT_THAT(ParseError(f), HasSubstr("h.csv:3: column 2: expected a finite number, found '7x'"));
  f = Tiny();
  f.hits += "5,1,2,3,8,5,1\n";
  EXPECT_THAT(ParseError(f), HasSubstr("h.csv:6: layer_id 5 is not a layer of barrel volume 8"));
  f = Tiny();
  f.hits += "2,1,2,3,8,2,1\n";
  EXPECT_THAT(ParseError(f), HasSubstr("h.csv:6: duplicate hit_id 2"));
  f = Tiny();
  f.hits += "6,1,2\n";
  EXPECT_THAT(ParseError(f), HasSubstr("h.csv:6: expected 7 columns, found 3"));
  f = Tiny();
  f.truth += "9,7,0,0,0,0,0,0,0\n";
  EXPECT_THAT(ParseError(f), HasSubstr("t.csv:6: hit_id 9 is not in h.csv"));
  f = Tiny();
  f.truth.replace(f.truth.find("\n2,7"), 4, "\n2,8");
  EXPECT_THAT(ParseError(f), HasSubstr("t.csv:3: particle_id 8 is not in p.csv"));
  f = Tiny();
  f.truth.erase(f.truth.find("3,0,0"), f.truth.find("4,7") - f.truth.find("3,0,0"));
  EXPECT_THAT(ParseError(f), HasSubstr("t.csv: no truth row for hit_id 3 of h.csv"));
  f = Tiny();
  f.truth += "1,0,0,0,0,0,0,0,0\n";
  EXPECT_THAT(ParseError(f), HasSubstr("t.csv:6: second truth row for hit_id 1"));
  f = Tiny();
  f.particles += "7,0,0,0,1,1,1,1,1\n";
  EXPECT_THAT(ParseError(f), HasSubstr("p.csv:3: duplicate particle_id 7"));
  f = Tiny();
  f.particles = "";
  EXPECT_THAT(ParseError(f), HasSubstr("p.csv:1: empty file"));
  // A directory missing an event's truth file.
  TempDir d;
  const EventFiles t = Tiny();
  d.Write("event000000001-hits.csv", t.hits);
  d.Write("event000000001-particles.csv", t.particles);
  auto ds = LoadDataset(d.path(), LoadOptions());
  ASSERT_FALSE(ds.ok());
  EXPECT_THAT(std::string(ds.status().message()),
              HasSubstr("event000000001-truth.csv.gz: file not found"));
}

// A short in-process stand-in for fuzz_trackml_csv: byte mutations of a valid event either fail
// with a status or build a graph set that satisfies every invariant.
TEST(TrackmlCsvTest, MutatedFilesFailCleanly) {
  const EventFiles base = Tiny();
  RandomStream rng(9, 1);
  const char alphabet[] = "0123456789,.-e\n x";
  int parsed = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    EventFiles f = base;
    std::string* file = trial % 3 == 0 ? &f.hits : trial % 3 == 1 ? &f.truth : &f.particles;
    for (int k = 0; k < 1 + trial % 4; ++k) {
      const size_t at = rng.Below(file->size() + 1);
      switch (rng.Below(3)) {
        case 0:
          file->insert(at, 1, alphabet[rng.Below(sizeof(alphabet) - 1)]);
          break;
        case 1:
          if (at < file->size()) file->erase(at, 1);
          break;
        default:
          if (at < file->size()) (*file)[at] = alphabet[rng.Below(sizeof(alphabet) - 1)];
      }
    }
    auto ev = ParseTrackmlEvent(f.hits, f.truth, f.particles, "h.csv", "t.csv", "p.csv");
    if (!ev.ok()) continue;
    ++parsed;
    auto ds = BuildTrackingDataset({*ev}, TrackingGraphOptions());
    if (!ds.ok()) continue;
    ASSERT_TRUE(ValidateGraphSet(*ds).ok()) << ValidateGraphSet(*ds) << "\n" << f.hits;
    ASSERT_TRUE(MeasureConstruction(*ds).ok());
  }
  EXPECT_GT(parsed, 100);
}

}  // namespace
}  // namespace fg::graph::io
