// The sharding_indexed shard index, as a pure format (no I/O, no codecs).
//
// A shard holds the encoded inner chunks back to back plus an index: for every inner chunk,
// in C order of the inner-chunk grid, two little-endian uint64 values (offset, nbytes) into
// the shard. offset = nbytes = 2^64-1 marks an empty inner chunk (it reads as fill_value).
// The index itself is encoded with `index_codecs` (usually bytes + crc32c) and stored at the
// start or the end of the shard (Zarr v3 sharding_indexed spec, "Binary shard format").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cubestream/bytes.hpp"

namespace cubestream::codec {

struct ShardIndexEntry {
  std::uint64_t offset = 0;
  std::uint64_t nbytes = 0;
  bool empty() const { return offset == ~std::uint64_t{0} && nbytes == ~std::uint64_t{0}; }
};

class ShardIndex {
 public:
  // `decoded` is the index after its codecs: grid-size * 2 uint64 values in native byte
  // order. Every non-empty entry must lie inside [0, data_limit) of the shard; an entry that
  // does not is Error(kOutOfRange) with the entry's byte offset inside the decoded index.
  static ShardIndex parse(ByteView decoded, std::vector<std::int64_t> grid, std::uint64_t data_limit);

  const std::vector<std::int64_t>& grid() const { return grid_; }
  std::size_t size() const { return entries_.size(); }
  const ShardIndexEntry& operator[](std::size_t flat) const { return entries_[flat]; }
  bool all_empty() const;

 private:
  std::vector<std::int64_t> grid_;
  std::vector<ShardIndexEntry> entries_;
};

}  // namespace cubestream::codec
