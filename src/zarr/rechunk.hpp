// Rechunking and recompressing a Zarr store (or one array of it) into a new Zarr v3 or v2
// store, out of core: the engine behind `cubestream rechunk`.
//
// Plan, per array:
//  - Target chunks: an axis named in `chunks` (by dimension name, or by axis number for arrays
//    without names) gets that size (-1: the whole axis); other axes keep the source's chunk
//    size. 1-d dimension coordinates (time, latitude, ...) become one chunk, unsharded: they
//    are small and every reader loads them whole.
//  - Shards (v3): an axis named in `shards` gets a shard of that many elements (a multiple of
//    the chunk; -1: the whole axis, rounded up to a chunk multiple); other axes are one chunk.
//  - Work items are boxes of target outer chunks (shards, or chunks when unsharded). An item's
//    region is read from the source in one read and its chunks are encoded and written from
//    it. Items are as large as the memory budget allows, up to the least common multiple of
//    source and target chunks along each axis, so that a source chunk is decoded once however
//    the two grids relate. A shard that alone does not fit is streamed: read in boxes of its
//    inner chunks, each encoded and appended to the shard's file, so memory never holds a
//    whole shard. A single (inner) chunk that does not fit the budget is an error.
//  - Memory: workers * (item bytes + one target chunk + the reader's per-thread scratch of
//    about two source chunks) stays within `memory_bytes`; workers are fewer when needed.
//
// Resume: chunks (shards) already in the target are decoded with the target's own codecs and
// skipped when they decode (values are written atomically, so a present value is whole unless
// the disk corrupted it); those that fail are written again. Parts (--part i/n): the outer
// chunks of each array, in C order, are split into n contiguous ranges; part i writes range i.
// Every part writes the same metadata, so parts may start in any order and share a target.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "cubestream/store.hpp"
#include "cubestream/writer.hpp"

namespace cubestream::zarr {

enum class ExistingTarget { kRefuse, kOverwrite, kResume };

struct RechunkOptions {
  int zarr_format = 3;
  std::map<std::string, std::int64_t> chunks;  // dimension name (or axis number) -> size
  std::map<std::string, std::int64_t> shards;
  CodecChoice codec;                            // inner_chunks is set per array by the plan
  std::uint64_t memory_bytes = std::uint64_t{2} << 30;
  int threads = 0;                              // 0: all cores
  ExistingTarget existing = ExistingTarget::kRefuse;
  int part = 0, parts = 1;
  std::string array;                            // one array (path in the source); "" = all
};

// Counters the command's progress bar reads while rechunk() runs (from other threads).
struct RechunkProgress {
  std::atomic<std::uint64_t> total_bytes{0};    // decoded bytes this part writes (or skips)
  std::atomic<std::uint64_t> done_bytes{0};
  std::atomic<std::uint64_t> chunks_written{0};
  std::atomic<std::uint64_t> chunks_skipped{0}; // resumed: already there and verified
  std::atomic<std::uint64_t> chunks_rewritten{0};  // resumed: there but failed to decode
  std::atomic<std::uint64_t> stored_bytes{0};   // encoded bytes written
};

struct RechunkPlanInfo {
  std::string path;
  std::vector<std::int64_t> shape, chunks, shards;  // shards empty when unsharded
  std::vector<std::int64_t> item_chunks;            // outer chunks per work item, per axis
  bool streamed_shards = false;
  int workers = 1;
};

// One array to write, whatever it is read from: a Zarr array (rechunk) or netCDF variables
// joined along time (convert).
struct SourceArray {
  std::string path;                 // where it goes in the target (and its name in messages)
  ArrayMetadata meta;               // the source's: shape, dtype, fill value, dimension names,
                                    // attributes, zarr_format (2 for CF conventions as xarray
                                    // writes v2), chunk_shape (its natural read unit)
  std::uint64_t read_scratch_bytes = 0;  // memory a read needs beside its output
  // Reads a region (native byte order, C order) into `out` (already sized). May be called
  // from several threads at once.
  std::function<void(const Region& region, std::uint8_t* out)> read;
};

// Writes `sources` into `dst` under `options` (chunks, shards, codec, memory, threads, parts,
// existing target), with `group_attributes` on the root group (null: no root group, the
// single source is the root array). Used by rechunk() and by `cubestream convert`.
void write_arrays(const std::vector<SourceArray>& sources, const std::shared_ptr<WritableStore>& dst,
                  const nlohmann::json& group_attributes, const std::function<void()>& write_groups, const RechunkOptions& options,
                  RechunkProgress& progress, const std::function<void(const RechunkPlanInfo&)>& on_plan = {});

// Rechunks `src` into `dst`. `on_plan` (optional) is called once per array before it is
// written. Throws Error(kInvalidArgument) for bad options or a target that exists (without
// kOverwrite/kResume), and the first error of any worker (naming the store and key).
void rechunk(const std::shared_ptr<Store>& src, const std::shared_ptr<WritableStore>& dst, const RechunkOptions& options,
             RechunkProgress& progress, const std::function<void(const RechunkPlanInfo&)>& on_plan = {});

}  // namespace cubestream::zarr
