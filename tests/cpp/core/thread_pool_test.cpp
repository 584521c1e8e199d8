// The thread pool: every item runs once, the first exception reaches the caller, nested calls
// run inline instead of deadlocking, and a forked child gets working pools.
#include "core/thread_pool.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <stdexcept>
#include <vector>

namespace cubestream {
namespace {

TEST(ThreadPool, RunsEveryItemOnce) {
  ThreadPool& pool = ThreadPool::shared(4);
  std::vector<std::atomic<int>> hits(1000);
  pool.parallel_for(hits.size(), [&](std::size_t i) { hits[i]++; });
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
}

TEST(ThreadPool, FirstExceptionReachesTheCaller) {
  ThreadPool& pool = ThreadPool::shared(3);
  std::atomic<int> ran{0};
  EXPECT_THROW(pool.parallel_for(100,
                                 [&](std::size_t i) {
                                   ran++;
                                   if (i == 5) throw std::runtime_error("boom");
                                 }),
               std::runtime_error);
  // The pool still works afterwards.
  std::atomic<int> n{0};
  pool.parallel_for(10, [&](std::size_t) { n++; });
  EXPECT_EQ(n.load(), 10);
}

TEST(ThreadPool, NestedCallsDoNotDeadlock) {
  ThreadPool& pool = ThreadPool::shared(3);
  std::atomic<int> n{0};
  pool.parallel_for(8, [&](std::size_t) { pool.parallel_for(8, [&](std::size_t) { n++; }); });
  EXPECT_EQ(n.load(), 64);
}

TEST(ThreadPool, WorksInAForkedChild) {
  ThreadPool& pool = ThreadPool::shared(4);
  std::atomic<int> n{0};
  pool.parallel_for(16, [&](std::size_t) { n++; });  // the parent's workers exist
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(20);  // a hang fails the test instead of stalling the suite
    std::atomic<int> m{0};
    ThreadPool::shared(4).parallel_for(64, [&](std::size_t) { m++; });
    _exit(m.load() == 64 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "child did not exit normally (hung or crashed)";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace cubestream
