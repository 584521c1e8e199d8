// Lowering a thread's priority: only the calling thread changes, by the increment over the
// process's nice value, never below what it already has, and repeated calls change nothing.
#include "core/thread_priority.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

namespace cubestream {
namespace {

int process_nice() { return getpriority(PRIO_PROCESS, static_cast<id_t>(getpid())); }

TEST(ThreadPriority, RaisesTheCallingThreadsNiceOnly) {
  const int base = process_nice();
  if (base >= 16) GTEST_SKIP() << "the process already runs at nice " << base;
  int inside = -100, after_smaller = -100, after_same = -100;
  std::thread t([&] {
    lower_thread_priority(3);
    inside = thread_nice();
    lower_thread_priority(1);  // smaller: no change, never back up
    after_smaller = thread_nice();
    lower_thread_priority(3);  // the same again: nothing to do
    after_same = thread_nice();
  });
  t.join();
  EXPECT_EQ(inside, std::min(19, base + 3));
  EXPECT_EQ(after_smaller, inside);
  EXPECT_EQ(after_same, inside);
  EXPECT_EQ(thread_nice(), base) << "the calling thread of the test is untouched";
}

TEST(ThreadPriority, ALargerIncrementLowersFurtherAndZeroDoesNothing) {
  const int base = process_nice();
  if (base >= 14) GTEST_SKIP() << "the process already runs at nice " << base;
  int zero = -100, two = -100, five = -100;
  std::thread t([&] {
    lower_thread_priority(0);
    zero = thread_nice();
    lower_thread_priority(2);
    two = thread_nice();
    lower_thread_priority(5);
    five = thread_nice();
  });
  t.join();
  EXPECT_EQ(zero, base);
  EXPECT_EQ(two, base + 2);
  EXPECT_EQ(five, base + 5);
}

}  // namespace
}  // namespace cubestream
