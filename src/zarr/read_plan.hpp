// Planning a region read: the fetches it needs and the chunks each fetch holds.
//
// An unsharded array needs one fetch per touched chunk (the whole value). A sharded array
// needs the index of every touched shard (from the array's index cache, or read and cached)
// and then only the inner chunks the region touches; inner chunks that lie close together in
// their shard are fetched as one byte range, so a patch that spans several neighbouring inner
// chunks costs one request rather than one per chunk.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "zarr/array_impl.hpp"

namespace cubestream::zarr {

struct PlannedChunk {
  std::vector<std::int64_t> origin;  // element coordinates of the chunk's first element
  std::uint64_t offset = 0;          // where its encoded bytes start inside the fetched bytes
  std::uint64_t length = 0;          // their length (whole_value fetches: the whole buffer)
};

struct FetchTask {
  std::string key;
  bool whole_value = true;           // fetch the whole value; else [offset, offset + length)
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  bool missing = false;              // known to be absent (empty inner chunks): fill, no fetch
  std::vector<PlannedChunk> chunks;
};

struct ReadPlan {
  std::vector<FetchTask> tasks;
  std::vector<std::int64_t> unit_shape;       // shape of one decoded chunk (inner chunk if sharded)
  const codec::CodecChain* unit_chain = nullptr;
  codec::ChunkSpec unit_spec;
  std::uint64_t index_bytes_fetched = 0;
  std::uint64_t index_cache_hits = 0;
};

// Runs fn(i) for i in [0, n), possibly in parallel.
using ForEach = std::function<void(std::size_t, const std::function<void(std::size_t)>&)>;

// Plans the read of `region` (already validated against the array's shape).
ReadPlan plan_read(const Array::Impl& a, const Region& region, const ForEach& for_each);

}  // namespace cubestream::zarr
