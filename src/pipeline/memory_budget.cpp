#include "pipeline/memory_budget.hpp"

#include <algorithm>
#include <chrono>

#include "cubestream/error.hpp"

namespace cubestream::pipeline {

void MemoryBudget::acquire(std::uint64_t bytes) {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (cancelled_) throw Error(ErrorCode::kCancelled, "loader stopped while waiting for memory");
    if (used_ + bytes <= limit_ || (used_ == 0)) {
      // A request larger than the whole limit still proceeds when nothing else is held, so
      // that a limit checked at construction can never deadlock.
      used_ += bytes;
      peak_ = std::max(peak_, used_);
      return;
    }
    const std::uint64_t want = used_ + bytes - limit_;
    if (reclaim_) {
      lock.unlock();
      const std::uint64_t freed = reclaim_(want);
      lock.lock();
      if (freed > 0) continue;
    }
    // Nothing to evict: wait for a task or a batch to give memory back. The timeout re-asks
    // the reclaimer, whose entries may have become evictable meanwhile.
    cv_.wait_for(lock, std::chrono::milliseconds(50));
  }
}

bool MemoryBudget::try_acquire(std::uint64_t bytes) {
  std::unique_lock<std::mutex> lock(mu_);
  for (int attempt = 0;; ++attempt) {
    if (used_ + bytes <= limit_) {
      used_ += bytes;
      peak_ = std::max(peak_, used_);
      return true;
    }
    if (attempt > 0 || !reclaim_) return false;
    const std::uint64_t want = used_ + bytes - limit_;
    lock.unlock();
    const std::uint64_t freed = reclaim_(want);
    lock.lock();
    if (freed == 0) return false;
  }
}

void MemoryBudget::force(std::uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  used_ += bytes;
  peak_ = std::max(peak_, used_);
}

void MemoryBudget::release(std::uint64_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    used_ -= std::min(used_, bytes);
  }
  cv_.notify_all();
}

void MemoryBudget::cancel() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
  }
  cv_.notify_all();
}

void MemoryBudget::reset_cancel() {
  std::lock_guard<std::mutex> lock(mu_);
  cancelled_ = false;
}

std::uint64_t MemoryBudget::in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return used_;
}

std::uint64_t MemoryBudget::peak() const {
  std::lock_guard<std::mutex> lock(mu_);
  return peak_;
}

void MemoryBudget::reset_peak() {
  std::lock_guard<std::mutex> lock(mu_);
  peak_ = used_;
}

}  // namespace cubestream::pipeline
