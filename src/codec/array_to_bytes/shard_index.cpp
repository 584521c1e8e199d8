#include "codec/array_to_bytes/shard_index.hpp"

#include <cstring>

#include "codec/decode_check.hpp"

namespace cubestream::codec {

ShardIndex ShardIndex::parse(ByteView decoded, std::vector<std::int64_t> grid, std::uint64_t data_limit) {
  std::size_t n = 1;
  for (auto g : grid) n *= static_cast<std::size_t>(g);
  CS_DECODE_CHECK(decoded.size() == n * 16, kSizeMismatch, "sharding_indexed",
                  "shard index holds " + std::to_string(decoded.size()) + " bytes, expected " + std::to_string(n * 16), 0);
  ShardIndex idx;
  idx.grid_ = std::move(grid);
  idx.entries_.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    ShardIndexEntry e;
    std::memcpy(&e.offset, decoded.data() + 16 * i, 8);
    std::memcpy(&e.nbytes, decoded.data() + 16 * i + 8, 8);
    if (!e.empty()) {
      CS_DECODE_CHECK(e.offset != ~std::uint64_t{0} && e.nbytes != ~std::uint64_t{0}, kCorruptData, "sharding_indexed",
                      "shard index entry " + std::to_string(i) + " is half empty", 16 * i);
      CS_DECODE_CHECK(e.offset <= data_limit && e.nbytes <= data_limit - e.offset, kOutOfRange, "sharding_indexed",
                      "shard index entry " + std::to_string(i) + " (offset " + std::to_string(e.offset) + ", " +
                          std::to_string(e.nbytes) + " bytes) points outside the shard of " +
                          std::to_string(data_limit) + " bytes",
                      16 * i);
    }
    idx.entries_[i] = e;
  }
  return idx;
}

bool ShardIndex::all_empty() const {
  for (const auto& e : entries_)
    if (!e.empty()) return false;
  return true;
}

}  // namespace cubestream::codec
