// The loader's one memory bound: every host buffer the pipeline holds is charged here first.
//
// acquire() blocks while the bytes do not fit (back-pressure); before it blocks it asks the
// reclaimer (the decoded-unit cache) to give memory back. Charges are released by whoever
// frees the memory, possibly on another thread. cancel() wakes every waiter with
// Error(kCancelled) so that the producer can be stopped while tasks wait.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>

namespace cubestream::pipeline {

class MemoryBudget {
 public:
  explicit MemoryBudget(std::uint64_t limit) : limit_(limit) {}

  // Called (without the budget's lock) with the number of bytes wanted; returns bytes freed.
  void set_reclaimer(std::function<std::uint64_t(std::uint64_t)> reclaim) { reclaim_ = std::move(reclaim); }

  void acquire(std::uint64_t bytes);
  // Charges `bytes` if they fit under the limit (after asking the reclaimer once); never
  // waits. For memory that only speeds things up, such as another batch in flight.
  bool try_acquire(std::uint64_t bytes);
  // Charges without waiting. For the rare buffer larger than its reservation (an encoded
  // chunk bigger than the estimate): the overshoot is bounded by those differences.
  void force(std::uint64_t bytes);
  void release(std::uint64_t bytes);
  void cancel();
  void reset_cancel();

  std::uint64_t limit() const { return limit_; }
  std::uint64_t in_use() const;
  std::uint64_t peak() const;
  void reset_peak();

 private:
  const std::uint64_t limit_;
  std::function<std::uint64_t(std::uint64_t)> reclaim_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::uint64_t used_ = 0;
  std::uint64_t peak_ = 0;
  bool cancelled_ = false;
};

}  // namespace cubestream::pipeline
