#include "zarr/shard_index_cache.hpp"

namespace cubestream::zarr {

namespace {
std::size_t footprint(const codec::ShardIndex& idx) { return idx.size() * sizeof(codec::ShardIndexEntry) + 64; }
}  // namespace

std::shared_ptr<const codec::ShardIndex> ShardIndexCache::find(const std::string& key, std::uint64_t shard_size) {
  std::lock_guard lock(mu_);
  auto it = by_key_.find(key);
  if (it == by_key_.end() || it->second->shard_size != shard_size) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->index;
}

std::shared_ptr<const codec::ShardIndex> ShardIndexCache::peek(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = by_key_.find(key);
  return it == by_key_.end() ? nullptr : it->second->index;
}

void ShardIndexCache::insert(const std::string& key, std::uint64_t shard_size,
                             std::shared_ptr<const codec::ShardIndex> index) {
  const std::size_t size = footprint(*index);
  if (size > budget_) return;
  std::lock_guard lock(mu_);
  if (auto it = by_key_.find(key); it != by_key_.end()) {
    bytes_ -= footprint(*it->second->index);
    lru_.erase(it->second);
    by_key_.erase(it);
  }
  lru_.push_front(Entry{key, shard_size, std::move(index)});
  by_key_[key] = lru_.begin();
  bytes_ += size;
  while (bytes_ > budget_ && !lru_.empty()) {
    bytes_ -= footprint(*lru_.back().index);
    by_key_.erase(lru_.back().key);
    lru_.pop_back();
  }
}

}  // namespace cubestream::zarr
