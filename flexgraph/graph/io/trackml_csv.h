// Reader of the public TrackML event files (the Kaggle TrackML Particle Tracking Challenge
// layout), producing the tracking graphs of tracking.h, one graph per event:
//
//   event<id>-hits.csv       hit_id,x,y,z,volume_id,layer_id,module_id
//   event<id>-truth.csv      hit_id,particle_id,tx,ty,tz,tpx,tpy,tpz,weight (0 = noise)
//   event<id>-particles.csv  particle_id,vx,vy,vz,px,py,pz,q,nhits
//   event<id>-cells.csv      optional, not read
//
// each with its header row (columns found by name, in any order, extra columns ignored), plain or
// gzip-compressed (.csv.gz). Positions are mm, momenta GeV. Only the barrel is read: volumes 8
// (pixel, layer_id 2, 4, 6, 8), 13 (short strips, 2, 4, 6, 8) and 17 (long strips, 2, 4) become
// layers 0..9 (tracking.h); hits of the end-cap volumes are left out with their truth rows.
// A particle's pT, eta and phi come from (px, py, pz) of the particles file, vz from vz; its
// num_hits counts its barrel hits. Errors name the file, the line and the column: a missing
// column, a bad number, a duplicate or unknown hit or particle id, a barrel layer_id outside the
// list above, a barrel hit without a truth row. Thread-safe: no shared state.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "flexgraph/graph/dataset.h"
#include "flexgraph/graph/tracking.h"

namespace fg::graph::io {

// True when `dir` holds at least one event*-hits.csv or event*-hits.csv.gz file.
bool IsTrackmlDirectory(const std::string& dir);

// Parses one event from the texts of its three files (plain or gzip); the names stand for the
// files in errors.
absl::StatusOr<TrackingEvent> ParseTrackmlEvent(std::string_view hits, std::string_view truth,
                                                std::string_view particles,
                                                const std::string& hits_name,
                                                const std::string& truth_name,
                                                const std::string& particles_name);

// Reads every event of `dir` (sorted by file name; truth and particles files required for each)
// and builds the dataset with `options` (name: the directory's base name). A directory without
// events is a NotFound error.
absl::StatusOr<Dataset> LoadTrackmlDirectory(const std::string& dir,
                                             const TrackingGraphOptions& options = {});

}  // namespace fg::graph::io
