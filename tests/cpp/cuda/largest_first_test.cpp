// The size classes that order the GPU batch queues largest first (cuda/largest_first.hpp):
// monotone, bounded, and fine enough that sizes 12.5 % apart fall in different classes.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "cuda/largest_first.hpp"

namespace {

using cubestream::cuda::kSizeClasses;
using cubestream::cuda::work_size_class;

TEST(LargestFirst, ClassesAreMonotoneAndBounded) {
  EXPECT_EQ(work_size_class(0), 0u);
  EXPECT_EQ(work_size_class(7), 7u);
  EXPECT_LT(work_size_class(UINT64_MAX), kSizeClasses);
  EXPECT_EQ(work_size_class(UINT64_MAX), kSizeClasses - 1);
  // every size up to 64 Ki, then random pairs over the whole range
  for (std::uint64_t b = 1; b < (1u << 16); ++b) ASSERT_LE(work_size_class(b - 1), work_size_class(b)) << b;
  std::mt19937_64 rng(5);
  for (int k = 0; k < 100000; ++k) {
    std::uint64_t a = rng() >> (rng() % 64), c = rng() >> (rng() % 64);
    if (a > c) std::swap(a, c);
    ASSERT_LE(work_size_class(a), work_size_class(c)) << a << " " << c;
  }
}

TEST(LargestFirst, EightClassesPerOctave) {
  for (unsigned top = 3; top < 63; ++top) {
    const std::uint64_t p = std::uint64_t{1} << top;
    EXPECT_EQ(work_size_class(2 * p) - work_size_class(p), 8u) << top;
    // a size 12.5 % above a power of two is in the next class, one just below it in the same
    EXPECT_EQ(work_size_class(p + p / 8), work_size_class(p) + 1) << top;
    EXPECT_EQ(work_size_class(p + p / 8 - 1), work_size_class(p)) << top;
  }
  // the bench's chunk sizes: 64 KiB and 1 MiB are 32 classes apart
  EXPECT_EQ(work_size_class(1u << 20) - work_size_class(64u << 10), 32u);
}

}  // namespace
