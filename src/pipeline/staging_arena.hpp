// Staging memory for the GPU decode path: where a batch's fetched bytes wait for their copy
// to the GPU.
//
// StagingArena is one grow-only buffer (pinned host memory in the loader) that the fetch
// threads fill concurrently: each claims room for one unit with an atomic bump of the fill
// mark and writes its bytes straight in, so no second pass copies the batch into staging.
// A claim that does not fit the buffer as it is gets its place anyway (offsets are final
// when claimed) and its bytes are written after settle() has grown the buffer. The buffer's
// bytes are charged to the loader's MemoryBudget.
//
// StagingSlots keeps the arenas of the batches in flight: one batch per arena, at most
// `max_slots` of them. A slot beyond the first is created only when the budget has room for
// another arena as large as the largest so far, so a tight memory limit gives fewer batches
// in flight, never more memory.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "pipeline/memory_budget.hpp"

namespace cubestream::pipeline {

// How an arena gets and returns its buffer (pinned memory in the loader, plain memory in tests).
struct StagingMemory {
  std::function<void*(std::size_t)> alloc;
  std::function<void(void*)> free;
};

class StagingArena {
 public:
  static constexpr std::size_t kAlign = 256;

  StagingArena(MemoryBudget& budget, StagingMemory memory);
  ~StagingArena();
  StagingArena(const StagingArena&) = delete;
  StagingArena& operator=(const StagingArena&) = delete;

  // Starts a batch: nothing claimed. The caller makes sure the last batch's bytes are no
  // longer read (its copy to the GPU has finished).
  void begin();
  struct Claim {
    std::size_t offset = 0;
    std::uint8_t* ptr = nullptr;  // where to write now; nullptr: write at `offset` after settle()
  };
  // Thread-safe. Room for `bytes` at an aligned offset of its own.
  Claim claim(std::size_t bytes);
  // One thread, after every claim of the batch: grows the buffer to hold them all, keeping
  // what was written; returns the base the offsets refer to.
  std::uint8_t* settle();

  std::uint8_t* data() const { return data_; }
  std::size_t used() const { return used_.load(std::memory_order_relaxed); }
  std::size_t capacity() const { return cap_; }
  // Grows the buffer to at least `bytes` before a batch (no claims outstanding). `charged`:
  // the caller has already charged those bytes to the budget (they become the arena's).
  void reserve(std::size_t bytes, bool charged = false);

 private:
  void grow(std::size_t bytes, std::size_t keep, bool charged);
  MemoryBudget& budget_;
  StagingMemory memory_;
  std::uint8_t* data_ = nullptr;
  std::size_t cap_ = 0;
  std::atomic<std::size_t> used_{0};
};

class StagingSlots {
 public:
  StagingSlots(MemoryBudget& budget, StagingMemory memory, std::size_t max_slots);

  // An idle slot, marked busy: an existing idle one, else a new one when fewer than
  // max_slots exist and the budget has room for an arena as large as the largest so far
  // (the first slot is always made; its growth is charged as it happens). nullopt: every
  // slot is busy and no other fits; finish a batch in flight and ask again.
  std::optional<std::size_t> acquire();
  // A new idle slot whose arena holds `bytes` already, when fewer than max_slots exist and the
  // budget has room; false otherwise. For making every slot at once, at the start of a run,
  // rather than when a later batch first finds the others busy.
  bool add_idle(std::size_t bytes);
  void release(std::size_t slot);

  StagingArena& arena(std::size_t slot) { return *slots_[slot].arena; }
  std::size_t size() const { return slots_.size(); }
  std::size_t busy() const;
  std::size_t max_slots() const { return max_slots_; }

 private:
  struct Slot {
    std::unique_ptr<StagingArena> arena;
    bool busy = false;
  };
  MemoryBudget& budget_;
  StagingMemory memory_;
  const std::size_t max_slots_;
  std::vector<Slot> slots_;
};

}  // namespace cubestream::pipeline
