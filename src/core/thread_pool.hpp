// A fixed-size pool of worker threads with one primitive: parallel_for.
//
// The calling thread takes part in the work, so a pool of N threads runs N+1 items at a time
// and threads=1 means "no pool at all". A parallel_for issued from inside an item runs inline
// on that item's thread (no deadlock when every worker waits on a nested call). Shared pools
// survive fork(): a child process gets fresh ones. The first exception thrown by an item is re-thrown
// to the caller after every started item has finished; items not yet started are skipped.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace cubestream {

class ThreadPool {
 public:
  // Requests for more concurrent items than this are clamped.
  static constexpr int kMaxThreads = 1024;

  explicit ThreadPool(int workers);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int workers() const { return static_cast<int>(threads_.size()); }

  // Runs fn(i) for i in [0, n) on the workers and the calling thread; returns when all are done.
  void parallel_for(std::size_t n, const std::function<void(std::size_t)>& fn);

  // A process-wide pool for `threads` concurrent items (threads - 1 workers), created on first
  // use and kept. threads <= 0 resolves through default_threads().
  static ThreadPool& shared(int threads);

  // CUBESTREAM_THREADS if set to a positive integer, else std::thread::hardware_concurrency().
  static int default_threads();

 private:
  void worker_loop();
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stop_ = false;
};

}  // namespace cubestream
