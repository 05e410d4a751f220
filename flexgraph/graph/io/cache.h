// The binary dataset cache (.fgc): one file that reloads a dataset at memory speed.
//
// Layout (little endian): a 64-byte header {magic "FGCACHE\n", u32 version, u32 section count,
// u64 table offset, u64 file size, u32 table CRC-32, u32 header CRC-32}, a table of fixed-size
// section entries {name, dtype, rank, shape[3], offset, byte count, CRC-32}, then the sections,
// each starting at a 64-byte aligned offset so the file can be mmap'ed and its arrays used in
// place. Section "meta" is text (dataset name, node types with counts, relations, classes,
// split name); the other sections are the arrays: per relation r "r<r>.src.{off,idx,val}",
// "r<r>.dst.{off,idx,val}" (absent when symmetric), "r<r>.efeat", "r<r>.{train,valid,test}" (edge
// splits); per node type t "t<t>.{feat,label,train,valid,test}". Version 2 adds graph sets
// (graph_set.h): meta lines "graphs", "edge_classes", "graph_classes" and sections
// "g.{noff,eoff,edges,entry,efeat,elabel,glabel,train,valid,test,poff}", "g.node.<column>",
// "g.ptcl.<column>". Version 1 files (no graph sets) still load; other versions are refused with a
// message asking to rebuild. Readers check the magic, the version, every CRC, every bound and every
// Csr (and a graph set's every invariant), and name the file and section in errors.
// Thread-safe: no shared state.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "flexgraph/graph/dataset.h"

namespace fg::graph::io {

inline constexpr uint32_t kCacheVersion = 2;
inline constexpr uint32_t kOldestCacheVersion = 1;  // the oldest version ReadCache accepts

// Writes atomically (a temporary file renamed into place).
absl::Status WriteCache(const Dataset& ds, const std::string& path);
// Maps the file, verifies it and copies the arrays into tensors.
absl::StatusOr<Dataset> ReadCache(const std::string& path);
// Parses an in-memory cache image; `name` stands for the file in errors. Skipping the checksums
// (fuzzing) leaves every structural check in place.
absl::StatusOr<Dataset> ParseCache(std::string_view image, const std::string& name,
                                   bool verify_checksums = true);
// The cache image of a dataset (tests and the fuzz seed corpus).
std::string EncodeCache(const Dataset& ds);

}  // namespace fg::graph::io
