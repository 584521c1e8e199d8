#include "pipeline/staging_arena.hpp"

#include <algorithm>
#include <cstring>

#include "cubestream/error.hpp"

namespace cubestream::pipeline {

StagingArena::StagingArena(MemoryBudget& budget, StagingMemory memory) : budget_(budget), memory_(std::move(memory)) {}

StagingArena::~StagingArena() {
  if (data_) memory_.free(data_);
  budget_.release(cap_);
}

void StagingArena::begin() { used_.store(0, std::memory_order_relaxed); }

StagingArena::Claim StagingArena::claim(std::size_t bytes) {
  const std::size_t room = (bytes + kAlign - 1) / kAlign * kAlign;
  Claim c;
  c.offset = used_.fetch_add(room, std::memory_order_relaxed);
  // The buffer does not move while claims are made (only settle() and reserve() grow it).
  if (c.offset + bytes <= cap_) c.ptr = data_ + c.offset;
  return c;
}

std::uint8_t* StagingArena::settle() {
  const std::size_t need = used();
  // An eighth of headroom: the next batch of a similar size then fits without growing.
  if (need > cap_) grow(need + need / 8, cap_, false);
  return data_;
}

void StagingArena::reserve(std::size_t bytes, bool charged) {
  if (bytes > cap_) {
    grow(bytes, 0, charged);
  } else if (charged) {
    budget_.release(bytes);
  }
}

void StagingArena::grow(std::size_t bytes, std::size_t keep, bool charged) {
  if (!charged) budget_.force(bytes);
  void* p = nullptr;
  try {
    p = memory_.alloc(bytes);
  } catch (...) {
    budget_.release(bytes);
    throw;
  }
  if (!p) {
    budget_.release(bytes);
    throw Error(ErrorCode::kResourceExhausted, "cannot allocate " + std::to_string(bytes) + " bytes of staging memory");
  }
  auto* fresh = static_cast<std::uint8_t*>(p);
  if (keep && data_) std::memcpy(fresh, data_, std::min(keep, cap_));
  if (data_) memory_.free(data_);
  budget_.release(cap_);
  data_ = fresh;
  cap_ = bytes;
}

StagingSlots::StagingSlots(MemoryBudget& budget, StagingMemory memory, std::size_t max_slots)
    : budget_(budget), memory_(std::move(memory)), max_slots_(std::max<std::size_t>(max_slots, 1)) {}

std::optional<std::size_t> StagingSlots::acquire() {
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (!slots_[i].busy) {
      slots_[i].busy = true;
      return i;
    }
  }
  if (slots_.size() >= max_slots_) return std::nullopt;
  std::size_t largest = 0;
  for (const auto& s : slots_) largest = std::max(largest, s.arena->capacity());
  const bool first = slots_.empty();
  if (!first && !budget_.try_acquire(largest)) return std::nullopt;
  Slot s;
  s.arena = std::make_unique<StagingArena>(budget_, memory_);
  if (!first) s.arena->reserve(largest, /*charged=*/true);
  s.busy = true;
  slots_.push_back(std::move(s));
  return slots_.size() - 1;
}

bool StagingSlots::add_idle(std::size_t bytes) {
  if (slots_.size() >= max_slots_ || !budget_.try_acquire(bytes)) return false;
  Slot s;
  s.arena = std::make_unique<StagingArena>(budget_, memory_);
  try {
    s.arena->reserve(bytes, /*charged=*/true);  // on failure grow() has released the charge
  } catch (const std::exception&) {
    return false;  // slots made ahead are optional: acquire() makes one when it is needed
  }
  slots_.push_back(std::move(s));
  return true;
}

void StagingSlots::release(std::size_t slot) { slots_.at(slot).busy = false; }

std::size_t StagingSlots::busy() const {
  std::size_t n = 0;
  for (const auto& s : slots_) n += s.busy;
  return n;
}

}  // namespace cubestream::pipeline
