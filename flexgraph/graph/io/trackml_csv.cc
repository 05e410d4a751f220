#include "flexgraph/graph/io/trackml_csv.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <unordered_map>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "flexgraph/base/parallel.h"
#include "flexgraph/base/status.h"
#include "flexgraph/graph/io/file.h"

namespace fg::graph::io {

namespace {

// A CSV text with a header row; Next() walks its data rows.
class CsvReader {
 public:
  CsvReader(std::string_view text, std::string name) : text_(text), name_(std::move(name)) {}

  // Reads the header and finds `columns` (by name, in any order).
  absl::Status Header(const std::vector<std::string>& columns) {
    if (!NextLine()) return absl::InvalidArgumentError(absl::StrCat(name_, ":1: empty file"));
    const int64_t header_line = line_;
    std::vector<std::string> names;
    for (std::string_view f : fields_) names.emplace_back(f);
    for (const std::string& c : columns) {
      auto it = std::find(names.begin(), names.end(), c);
      if (it == names.end()) {
        return absl::InvalidArgumentError(absl::StrCat(name_, ":", header_line, ": no column '", c,
                                                       "' in the header (",
                                                       absl::StrJoin(names, ","), ")"));
      }
      index_.push_back(it - names.begin());
    }
    width_ = names.size();
    return absl::OkStatus();
  }
  // Moves to the next data row; false at the end.
  absl::StatusOr<bool> Next() {
    if (!NextLine()) return false;
    if (fields_.size() != width_) {
      return absl::InvalidArgumentError(absl::StrCat(name_, ":", line_, ": expected ", width_,
                                                     " columns, found ", fields_.size()));
    }
    return true;
  }
  // Field `c` (an index into the Header columns) of the current row.
  absl::StatusOr<int64_t> Int(size_t c) const {
    int64_t v;
    if (!absl::SimpleAtoi(absl::string_view(Field(c).data(), Field(c).size()), &v))
      return Bad(c, "integer");
    return v;
  }
  absl::StatusOr<double> Real(size_t c) const {
    double v;
    if (!absl::SimpleAtod(absl::string_view(Field(c).data(), Field(c).size()), &v) ||
        !std::isfinite(v)) {
      return Bad(c, "finite number");
    }
    return v;
  }
  // "<file>:<line>: <msg>".
  absl::Status Error(const std::string& msg) const {
    return absl::InvalidArgumentError(absl::StrCat(name_, ":", line_, ": ", msg));
  }

 private:
  std::string_view Field(size_t c) const { return fields_[index_[c]]; }
  absl::Status Bad(size_t c, const std::string& what) const {
    return Error(absl::StrCat("column ", index_[c] + 1, ": expected a ", what, ", found '",
                              std::string(Field(c).substr(0, 40)), "'"));
  }
  // Splits the next non-blank line into trimmed fields.
  bool NextLine() {
    while (pos_ < text_.size()) {
      const size_t end = std::min(text_.find('\n', pos_), text_.size());
      std::string_view line = text_.substr(pos_, end - pos_);
      pos_ = end + 1;
      ++line_;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (absl::StripAsciiWhitespace(absl::string_view(line.data(), line.size())).empty()) continue;
      fields_.clear();
      size_t start = 0;
      while (true) {
        const size_t comma = line.find(',', start);
        std::string_view f =
            line.substr(start, comma == std::string_view::npos ? line.npos : comma - start);
        absl::string_view t = absl::StripAsciiWhitespace(absl::string_view(f.data(), f.size()));
        fields_.emplace_back(t.data(), t.size());
        if (comma == std::string_view::npos) break;
        start = comma + 1;
      }
      return true;
    }
    return false;
  }

  std::string_view text_;
  std::string name_;
  size_t pos_ = 0;
  int64_t line_ = 0;
  size_t width_ = 0;
  std::vector<std::string_view> fields_;
  std::vector<size_t> index_;
};

// The barrel layer (0..9) of a TrackML (volume_id, layer_id), -1 for end caps, -2 for a barrel
// volume with an unknown layer id.
int BarrelLayer(int64_t volume, int64_t layer) {
  int base, count;
  switch (volume) {
    case 8:
      base = 0;
      count = 4;
      break;
    case 13:
      base = 4;
      count = 4;
      break;
    case 17:
      base = 8;
      count = 2;
      break;
    default:
      return -1;
  }
  if (layer < 2 || layer > 2 * count || layer % 2 != 0) return -2;
  return base + static_cast<int>(layer / 2) - 1;
}

// The decompressed text when `data` is gzip, else `data` itself (viewed through `storage`).
absl::StatusOr<std::string_view> Text(std::string_view data, const std::string& name,
                                      std::string* storage) {
  if (data.size() < 2 || static_cast<unsigned char>(data[0]) != 0x1f ||
      static_cast<unsigned char>(data[1]) != 0x8b) {
    return data;
  }
  std::unique_ptr<ByteSource> src = ByteSource::FromMemory(data, name);
  char buf[1 << 16];
  while (true) {
    FG_ASSIGN_OR_RETURN(size_t got, src->Read(buf, sizeof(buf)));
    if (got == 0) break;
    storage->append(buf, got);
    if (storage->size() > (size_t{1} << 33))
      return absl::InvalidArgumentError(absl::StrCat(name, ": too large"));
  }
  return std::string_view(*storage);
}

}  // namespace

absl::StatusOr<TrackingEvent> ParseTrackmlEvent(std::string_view hits_data,
                                                std::string_view truth_data,
                                                std::string_view particles_data,
                                                const std::string& hits_name,
                                                const std::string& truth_name,
                                                const std::string& particles_name) {
  TrackingEvent ev;
  std::string s1, s2, s3;
  FG_ASSIGN_OR_RETURN(std::string_view hits_text, Text(hits_data, hits_name, &s1));
  FG_ASSIGN_OR_RETURN(std::string_view truth_text, Text(truth_data, truth_name, &s2));
  FG_ASSIGN_OR_RETURN(std::string_view particles_text, Text(particles_data, particles_name, &s3));
  // Particles.
  std::unordered_map<int64_t, int64_t> particle_row;
  {
    CsvReader r(particles_text, particles_name);
    FG_RETURN_IF_ERROR(r.Header({"particle_id", "vz", "px", "py", "pz"}));
    while (true) {
      FG_ASSIGN_OR_RETURN(bool more, r.Next());
      if (!more) break;
      TrackingParticle p;
      FG_ASSIGN_OR_RETURN(p.id, r.Int(0));
      FG_ASSIGN_OR_RETURN(p.vz, r.Real(1));
      FG_ASSIGN_OR_RETURN(double px, r.Real(2));
      FG_ASSIGN_OR_RETURN(double py, r.Real(3));
      FG_ASSIGN_OR_RETURN(double pz, r.Real(4));
      if (p.id == 0) return r.Error("particle_id 0 is reserved for noise");
      if (!particle_row.emplace(p.id, static_cast<int64_t>(ev.particles.size())).second) {
        return r.Error(absl::StrCat("duplicate particle_id ", p.id));
      }
      p.pt = std::hypot(px, py);
      p.eta = p.pt > 0 ? std::asinh(pz / p.pt) : (pz >= 0 ? 1e9 : -1e9);
      p.phi = std::atan2(py, px);
      ev.particles.push_back(p);
    }
  }
  // Hits: every hit id is remembered; barrel hits are kept.
  std::unordered_map<int64_t, int64_t> hit_row;  // hit_id -> row of ev.hits, -1 for end caps
  {
    CsvReader r(hits_text, hits_name);
    FG_RETURN_IF_ERROR(r.Header({"hit_id", "x", "y", "z", "volume_id", "layer_id"}));
    while (true) {
      FG_ASSIGN_OR_RETURN(bool more, r.Next());
      if (!more) break;
      FG_ASSIGN_OR_RETURN(int64_t id, r.Int(0));
      FG_ASSIGN_OR_RETURN(int64_t volume, r.Int(4));
      FG_ASSIGN_OR_RETURN(int64_t layer_id, r.Int(5));
      const int layer = BarrelLayer(volume, layer_id);
      if (layer == -2) {
        return r.Error(
            absl::StrCat("layer_id ", layer_id, " is not a layer of barrel volume ", volume));
      }
      if (!hit_row.emplace(id, layer < 0 ? -1 : static_cast<int64_t>(ev.hits.size())).second) {
        return r.Error(absl::StrCat("duplicate hit_id ", id));
      }
      if (layer < 0) continue;
      TrackingHit h;
      FG_ASSIGN_OR_RETURN(h.x, r.Real(1));
      FG_ASSIGN_OR_RETURN(h.y, r.Real(2));
      FG_ASSIGN_OR_RETURN(h.z, r.Real(3));
      h.layer = layer;
      h.particle = -2;  // until its truth row
      ev.hits.push_back(h);
    }
  }
  // Truth: the particle behind each hit.
  {
    CsvReader r(truth_text, truth_name);
    FG_RETURN_IF_ERROR(r.Header({"hit_id", "particle_id"}));
    while (true) {
      FG_ASSIGN_OR_RETURN(bool more, r.Next());
      if (!more) break;
      FG_ASSIGN_OR_RETURN(int64_t id, r.Int(0));
      FG_ASSIGN_OR_RETURN(int64_t pid, r.Int(1));
      auto h = hit_row.find(id);
      if (h == hit_row.end()) return r.Error(absl::StrCat("hit_id ", id, " is not in ", hits_name));
      int64_t particle = -1;
      if (pid != 0) {
        auto p = particle_row.find(pid);
        if (p == particle_row.end()) {
          return r.Error(absl::StrCat("particle_id ", pid, " is not in ", particles_name));
        }
        particle = p->second;
      }
      if (h->second < 0) continue;  // an end-cap hit
      TrackingHit& hit = ev.hits[h->second];
      if (hit.particle != -2) return r.Error(absl::StrCat("second truth row for hit_id ", id));
      hit.particle = particle;
    }
  }
  for (const auto& [id, row] : hit_row) {
    if (row >= 0 && ev.hits[row].particle == -2) {
      return absl::InvalidArgumentError(
          absl::StrCat(truth_name, ": no truth row for hit_id ", id, " of ", hits_name));
    }
  }
  return ev;
}

bool IsTrackmlDirectory(const std::string& dir) {
  for (const std::string& f : ListDirectory(dir)) {
    if (f.rfind("event", 0) == 0 &&
        (f.size() > 9 && (f.compare(f.size() - 9, 9, "-hits.csv") == 0 ||
                          (f.size() > 12 && f.compare(f.size() - 12, 12, "-hits.csv.gz") == 0)))) {
      return true;
    }
  }
  return false;
}

absl::StatusOr<Dataset> LoadTrackmlDirectory(const std::string& dir,
                                             const TrackingGraphOptions& options) {
  std::vector<std::string> prefixes;
  for (const std::string& f : ListDirectory(dir)) {
    if (f.rfind("event", 0) != 0) continue;
    for (const char* suffix : {"-hits.csv", "-hits.csv.gz"}) {
      const std::string s = suffix;
      if (f.size() > s.size() && f.compare(f.size() - s.size(), s.size(), s) == 0) {
        prefixes.push_back(f.substr(0, f.size() - s.size()));
      }
    }
  }
  if (prefixes.empty()) {
    return absl::NotFoundError(absl::StrCat(dir, ": no TrackML events (event*-hits.csv)"));
  }
  std::sort(prefixes.begin(), prefixes.end());
  prefixes.erase(std::unique(prefixes.begin(), prefixes.end()), prefixes.end());
  const int64_t count = static_cast<int64_t>(prefixes.size());
  std::vector<TrackingEvent> events(count);
  std::vector<absl::Status> status(count);
  ParallelForDynamic(0, count, 1, [&](int64_t e) {
    auto read = [&](const std::string& kind, std::string* path) -> absl::StatusOr<std::string> {
      *path = ResolveCompressed(JoinPath(dir, prefixes[e] + "-" + kind + ".csv"));
      if (!PathExists(*path)) return absl::NotFoundError(absl::StrCat(*path, ": file not found"));
      return ReadFileToString(*path);
    };
    std::string hp, tp, pp;
    absl::StatusOr<std::string> hits = read("hits", &hp);
    absl::StatusOr<std::string> truth = hits.ok() ? read("truth", &tp) : hits;
    absl::StatusOr<std::string> particles = truth.ok() ? read("particles", &pp) : truth;
    if (!particles.ok()) {
      status[e] = particles.status();
      return;
    }
    absl::StatusOr<TrackingEvent> ev = ParseTrackmlEvent(*hits, *truth, *particles, hp, tp, pp);
    if (!ev.ok()) {
      status[e] = ev.status();
      return;
    }
    events[e] = std::move(*ev);
  });
  for (const absl::Status& s : status) FG_RETURN_IF_ERROR(s);
  TrackingGraphOptions o = options;
  std::string base = dir;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  o.name = base.substr(base.rfind('/') == std::string::npos ? 0 : base.rfind('/') + 1);
  return BuildTrackingDataset(events, o);
}

}  // namespace fg::graph::io
