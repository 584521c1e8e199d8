#include "pipeline/unit_cache.hpp"

namespace cubestream::pipeline {

std::shared_ptr<const DecodedUnit> UnitCache::find(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

bool UnitCache::contains(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  return index_.count(key) != 0;
}

void UnitCache::insert(const std::string& key, std::shared_ptr<const DecodedUnit> unit) {
  if (!unit || unit->size() > capacity_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (index_.count(key)) return;
  lru_.emplace_front(key, std::move(unit));
  index_[key] = lru_.begin();
  bytes_ += lru_.front().second->size();
  if (bytes_ > capacity_) evict_locked(bytes_ - capacity_);
}

std::uint64_t UnitCache::evict_locked(std::uint64_t bytes) {
  std::uint64_t dropped = 0;
  while (dropped < bytes && !lru_.empty()) {
    auto& back = lru_.back();
    dropped += back.second->size();
    bytes_ -= back.second->size();
    index_.erase(back.first);
    lru_.pop_back();  // frees the unit unless a task still holds it
  }
  return dropped;
}

std::uint64_t UnitCache::evict(std::uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  return evict_locked(bytes);
}

void UnitCache::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  lru_.clear();
  index_.clear();
  bytes_ = 0;
}

std::uint64_t UnitCache::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

std::uint64_t UnitCache::entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lru_.size();
}

}  // namespace cubestream::pipeline
