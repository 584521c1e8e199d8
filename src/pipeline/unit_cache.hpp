// The bounded cache of decoded units (chunks or inner chunks) shared by the loader's tasks.
//
// Entries are immutable decoded buffers, handed out as shared pointers: a task keeps using a
// unit after it was evicted, and the unit's memory is released (to the MemoryBudget) when the
// last holder drops it, so the budget never undercounts. Eviction is least recently used,
// down to the capacity after each insert and on demand when the budget needs room.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "cubestream/bytes.hpp"
#include "pipeline/memory_budget.hpp"

namespace cubestream::pipeline {

// A decoded unit whose bytes are charged to a MemoryBudget until it is destroyed.
class DecodedUnit {
 public:
  DecodedUnit(MemoryBudget& budget, std::size_t bytes) : budget_(budget), data_(bytes) {}
  ~DecodedUnit() { budget_.release(data_.size()); }
  DecodedUnit(const DecodedUnit&) = delete;
  DecodedUnit& operator=(const DecodedUnit&) = delete;
  std::uint8_t* data() { return data_.data(); }
  const std::uint8_t* data() const { return data_.data(); }
  std::size_t size() const { return data_.size(); }

 private:
  MemoryBudget& budget_;
  Bytes data_;
};

class UnitCache {
 public:
  explicit UnitCache(std::uint64_t capacity) : capacity_(capacity) {}

  std::shared_ptr<const DecodedUnit> find(const std::string& key);
  // Whether `key` is cached, without counting as a use (readahead asks this of units that
  // are not needed yet, and must not keep them from being evicted).
  bool contains(const std::string& key) const;
  // Keeps `unit` (if the capacity allows any) and evicts down to the capacity.
  void insert(const std::string& key, std::shared_ptr<const DecodedUnit> unit);
  // Evicts least recently used entries until at least `bytes` were dropped from the cache
  // (or it is empty); returns the bytes dropped. Entries still held by tasks free their
  // memory when those finish.
  std::uint64_t evict(std::uint64_t bytes);
  void clear();

  std::uint64_t capacity() const { return capacity_; }
  std::uint64_t bytes() const;
  std::uint64_t entries() const;

 private:
  std::uint64_t evict_locked(std::uint64_t bytes);
  using Lru = std::list<std::pair<std::string, std::shared_ptr<const DecodedUnit>>>;
  const std::uint64_t capacity_;
  mutable std::mutex mu_;
  Lru lru_;  // most recent first
  std::unordered_map<std::string, Lru::iterator> index_;
  std::uint64_t bytes_ = 0;
};

}  // namespace cubestream::pipeline
