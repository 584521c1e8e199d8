// A bounded cache of decoded shard indexes, one per array.
//
// Sharded reads look up each touched shard's index before fetching inner chunks. Without a
// cache every read of a small patch re-fetches, re-verifies (crc32c) and re-parses the same
// indexes. Entries are keyed by the shard's key and validated by its size: a shard rewritten
// with a different size is read again (one rewritten to the same size is not noticed; Zarr
// data is written once). Least recently used entries go first once the indexes held exceed
// the byte budget.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "codec/array_to_bytes/shard_index.hpp"

namespace cubestream::zarr {

class ShardIndexCache {
 public:
  explicit ShardIndexCache(std::size_t budget_bytes = std::size_t{64} << 20) : budget_(budget_bytes) {}

  // The cached index of `key` if it was stored for a shard of `shard_size` bytes.
  std::shared_ptr<const codec::ShardIndex> find(const std::string& key, std::uint64_t shard_size);
  void insert(const std::string& key, std::uint64_t shard_size, std::shared_ptr<const codec::ShardIndex> index);
  // The cached index of `key` whatever shard size it was stored for, without refreshing its
  // place in the LRU order: for readahead hints, which must not stat the shard (I/O) and may
  // be wrong (a hint for a stale range costs a wasted read, never a wrong value).
  std::shared_ptr<const codec::ShardIndex> peek(const std::string& key);

 private:
  struct Entry {
    std::string key;
    std::uint64_t shard_size;
    std::shared_ptr<const codec::ShardIndex> index;
  };
  std::mutex mu_;
  std::list<Entry> lru_;  // front: most recently used
  std::unordered_map<std::string, std::list<Entry>::iterator> by_key_;
  std::size_t bytes_ = 0;
  std::size_t budget_;
};

}  // namespace cubestream::zarr
