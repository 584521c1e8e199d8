// Chunk-grid arithmetic of region reads: which chunks a region touches, where a chunk meets
// the region, and whether that meeting is one contiguous run of the output.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cubestream/array.hpp"

namespace cubestream::zarr {

// The grid positions [lo, hi) per dim of the chunks that intersect a region.
struct GridBox {
  std::vector<std::int64_t> lo, hi;
  std::size_t count() const;
  std::vector<std::int64_t> at(std::size_t flat) const;  // C order over the box
};

// Chunks of extent `chunk` that intersect [start, start + shape).
GridBox grid_box(const std::vector<std::int64_t>& start, const std::vector<std::int64_t>& shape,
                 const std::vector<std::int64_t>& chunk);

// Where a chunk (first element at `origin`, extent `chunk`) meets `region`: the box in chunk
// coordinates, in output coordinates, and its extent.
struct Overlap {
  std::vector<std::int64_t> in_chunk, in_out, extent;
  bool whole_chunk = true;  // the chunk lies wholly inside the region
  bool empty() const;
};
Overlap overlap(const std::vector<std::int64_t>& origin, const std::vector<std::int64_t>& chunk, const Region& region);

// True when a box of `extent` is one contiguous run in a C-order array of `shape`: leading
// dims of extent 1, then the first dim of larger extent, then dims spanned fully.
bool contiguous_in(const std::vector<std::int64_t>& extent, const std::vector<std::int64_t>& shape);

}  // namespace cubestream::zarr
