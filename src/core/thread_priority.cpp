#include "core/thread_priority.hpp"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace cubestream {

namespace {

// setpriority(PRIO_PROCESS, tid) names one thread on Linux (nice values are per thread there).
int tid() { return static_cast<int>(::syscall(SYS_gettid)); }

int nice_of(int id, int fallback) {
  errno = 0;
  const int v = ::getpriority(PRIO_PROCESS, static_cast<id_t>(id));
  return errno == 0 ? v : fallback;
}

// The process's nice value when first asked: the base every increment counts from, so that a
// process started with `nice -n 5` gets 5 + increment, not the increment alone.
int base_nice() {
  static const int base = nice_of(static_cast<int>(::getpid()), 0);
  return base;
}

thread_local int t_applied = 0;  // the largest increment this thread already has

}  // namespace

void lower_thread_priority(int increment) noexcept {
  if (increment <= t_applied) return;
  const int want = std::min(19, base_nice() + increment);
  const int id = tid();
  if (nice_of(id, want) < want) ::setpriority(PRIO_PROCESS, static_cast<id_t>(id), want);
  t_applied = increment;  // also after a refusal: do not retry on every call
}

int thread_nice() noexcept { return nice_of(tid(), 0); }

}  // namespace cubestream
