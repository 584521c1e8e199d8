#include "core/thread_pool.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <map>

#include "cubestream/error.hpp"

namespace cubestream {

namespace {
// Set on pool worker threads: a parallel_for issued from inside an item runs inline, since
// the workers it would wait for may all be busy waiting themselves.
thread_local bool t_inside_pool_worker = false;
}  // namespace

ThreadPool::ThreadPool(int workers) {
  try {
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this] {
      t_inside_pool_worker = true;
      worker_loop();
    });
  } catch (const std::system_error& e) {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
    throw Error(ErrorCode::kResourceExhausted, "cannot start " + std::to_string(workers) + " threads: " + e.what());
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::worker_loop() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop_ and nothing left
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

void ThreadPool::parallel_for(std::size_t n, const std::function<void(std::size_t)>& fn) {
  if (n == 0) return;
  if (t_inside_pool_worker) {
    for (std::size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  // Shared state of one call: items are claimed from an atomic counter by every participant,
  // so the split adapts to uneven item costs (chunks of different compressibility).
  struct State {
    std::atomic<std::size_t> next{0};
    std::atomic<bool> failed{false};
    std::exception_ptr error;
    std::mutex mu;
    std::condition_variable done_cv;
    std::size_t active_helpers = 0;
  };
  auto state = std::make_shared<State>();
  auto run = [state, n, &fn] {
    for (;;) {
      std::size_t i = state->next.fetch_add(1, std::memory_order_relaxed);
      if (i >= n || state->failed.load(std::memory_order_relaxed)) return;
      try {
        fn(i);
      } catch (...) {
        std::lock_guard lock(state->mu);
        if (!state->error) state->error = std::current_exception();
        state->failed.store(true);
      }
    }
  };
  std::size_t helpers = std::min<std::size_t>(threads_.size(), n - 1);
  if (helpers > 0) {
    {
      std::lock_guard lock(state->mu);
      state->active_helpers = helpers;
    }
    std::size_t queued = 0;
    try {
      std::lock_guard lock(mu_);
      for (; queued < helpers; ++queued) {
        queue_.emplace_back([state, run] {
          run();
          std::lock_guard lock(state->mu);
          if (--state->active_helpers == 0) state->done_cv.notify_all();
        });
      }
    } catch (...) {
      // Helpers already queued must not touch `fn` after we return: let them find no work.
      state->next.store(n);
      std::unique_lock lock(state->mu);
      state->active_helpers -= helpers - queued;
      cv_.notify_all();
      state->done_cv.wait(lock, [&] { return state->active_helpers == 0; });
      throw;
    }
    cv_.notify_all();
  }
  run();
  if (helpers > 0) {
    std::unique_lock lock(state->mu);
    state->done_cv.wait(lock, [&] { return state->active_helpers == 0; });
  }
  if (state->error) std::rethrow_exception(state->error);
}

int ThreadPool::default_threads() {
  if (const char* env = std::getenv("CUBESTREAM_THREADS")) {
    char* end = nullptr;
    long v = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && v > 0 && v <= kMaxThreads) return static_cast<int>(v);
  }
  unsigned hc = std::thread::hardware_concurrency();
  return hc == 0 ? 1 : static_cast<int>(hc);
}

ThreadPool& ThreadPool::shared(int threads) {
  if (threads <= 0) threads = default_threads();
  threads = std::min(threads, kMaxThreads);
  static std::mutex mu;
  static std::map<int, std::unique_ptr<ThreadPool>> pools;
  static pid_t owner = ::getpid();
  std::lock_guard lock(mu);
  if (::getpid() != owner) {
    // A forked child (a torch DataLoader worker) inherits the pool objects but not their
    // threads. The old pools are abandoned, never joined (their locks may be held by threads
    // that no longer exist), and fresh ones are made.
    for (auto& [k, pool] : pools) (void)pool.release();
    pools.clear();
    owner = ::getpid();
  }
  auto& p = pools[threads];
  if (!p) p = std::make_unique<ThreadPool>(threads - 1);
  return *p;
}

}  // namespace cubestream
