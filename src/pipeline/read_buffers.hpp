// Buffers for fetched (encoded) units, kept for reuse by the threads that fetch unit after unit.
//
// A fresh buffer for each unit can cost as much as the read it receives: a multi-megabyte
// allocation may be served by mmap, so that every page of it faults in, zeroed by the kernel,
// and is unmapped again after the decode. On the 64-core four-GPU machine the loader's host
// path, then allocating, fetched at 0.9 GB/s a thread, the GPU stage, reusing, at 1.9
// (docs/benchmarks.md, session 25). At most one buffer per fetching thread is out at a time
// (the pool's threads and the thread that waits on them), so the pool grows to that many,
// each buffer to the largest unit it took. Idle buffers are not charged to the memory
// budget: the loader's reserve for running tasks (two units' worth per thread, left out of
// the cache's share) is what they fit in.
#pragma once

#include <mutex>
#include <utility>
#include <vector>

#include "cubestream/array.hpp"

namespace cubestream::pipeline {

class ReadBuffers {
 public:
  // A buffer whose capacity is reused (or a new, empty one), for Array::fetch_unit(unit, out).
  Array::EncodedUnit take() {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.empty()) return {};
    Array::EncodedUnit e = std::move(free_.back());
    free_.pop_back();
    return e;
  }
  // Never throws (it runs in destructors): a buffer that cannot be kept is freed.
  void give(Array::EncodedUnit enc) noexcept {
    try {
      std::lock_guard<std::mutex> lock(mu_);
      free_.push_back(std::move(enc));
    } catch (...) {
    }
  }

 private:
  std::mutex mu_;
  std::vector<Array::EncodedUnit> free_;
};

}  // namespace cubestream::pipeline
