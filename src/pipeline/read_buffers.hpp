// Buffers for fetched (encoded) units, kept for reuse by the threads that fetch unit after unit.
//
// A fresh buffer for each unit can cost as much as the read it receives: a multi-megabyte
// allocation may be served by mmap, so that every page of it faults in, zeroed by the kernel,
// and is unmapped again after the decode. On the 64-core four-GPU machine the loader's host
// path, then allocating, fetched at 0.9 GB/s a thread, the GPU stage, reusing, at 1.9
// (docs/benchmarks.md, session 25). At most one buffer per fetching thread is out at a time,
// so the pool grows to the number of threads, each buffer to the largest unit it took: the
// memory the loader reserves for its running tasks (two units' worth each) covers it.
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
  void give(Array::EncodedUnit enc) {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(std::move(enc));
  }

 private:
  std::mutex mu_;
  std::vector<Array::EncodedUnit> free_;
};

}  // namespace cubestream::pipeline
