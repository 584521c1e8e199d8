// core::float16_bits_branchless (the vectorisable form the CPU assemble stage uses) against
// core::float16_bits (the form shared with the GPU kernel), bit for bit: every float32 whose
// rounding to a half is in question (every exponent and sign, every half mantissa, the
// dropped 13 bits at and around the tie and at random), every float32 in the subnormal-half
// range and below it, and the specials; plus fixed values of IEEE binary16.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include "core/float16_bits.hpp"

namespace cubestream::core {
namespace {

float from_bits(std::uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

std::uint64_t mismatches(std::uint32_t b, std::uint32_t* first) {
  const float x = from_bits(b);
  if (float16_bits(x) == float16_bits_branchless(x)) return 0;
  if (*first == 0) *first = b;
  return 1;
}

TEST(Float16Bits, BranchlessFormEqualsTheReference) {
  std::mt19937 rng(5);
  std::uint64_t bad = 0, checked = 0;
  std::uint32_t first = 0;
  // Every sign, exponent and kept mantissa, with the 13 dropped bits at the tie, next to it,
  // at the ends and at random.
  for (std::uint32_t top = 0; top < (1u << 19); ++top) {   // sign, 8 exponent bits, 10 kept bits
    const std::uint32_t hi = top << 13;
    const std::uint32_t r1 = static_cast<std::uint32_t>(rng()) & 0x1FFFu, r2 = static_cast<std::uint32_t>(rng()) & 0x1FFFu;
    for (std::uint32_t low : {0x0u, 0x1u, 0xFFFu, 0x1000u, 0x1001u, 0x1FFFu, r1, r2}) {
      bad += mismatches(hi | low, &first);
      ++checked;
    }
  }
  // Every float32 below 2^-13 in magnitude (halves there are subnormal, zero, or the
  // smallest normal after rounding), both signs.
  for (std::uint32_t b = 0; b < 0x39000000u; ++b) {
    bad += mismatches(b, &first);
    bad += mismatches(b | 0x80000000u, &first);
    checked += 2;
  }
  EXPECT_EQ(bad, 0u) << "first differing float32 bits 0x" << std::hex << first;
  EXPECT_GT(checked, 1'900'000'000u);
}

TEST(Float16Bits, KnownValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const struct {
    float x;
    std::uint16_t h;
  } cases[] = {{0.0f, 0x0000},     {-0.0f, 0x8000},   {1.0f, 0x3C00},       {-2.0f, 0xC000},
               {65504.0f, 0x7BFF}, {65519.0f, 0x7BFF}, {65520.0f, 0x7C00},  {inf, 0x7C00},
               {-inf, 0xFC00},     {std::ldexp(1.0f, -14), 0x0400},         {std::ldexp(1.0f, -24), 0x0001},
               {std::ldexp(1.0f, -25), 0x0000},     {std::ldexp(1.5f, -25), 0x0001},
               {1.0f + std::ldexp(1.0f, -11), 0x3C00},  // tie to even (down)
               {1.0f + 3 * std::ldexp(1.0f, -11), 0x3C02}};  // tie to even (up)
  for (const auto& c : cases) {
    EXPECT_EQ(float16_bits_branchless(c.x), c.h) << c.x;
    EXPECT_EQ(float16_bits(c.x), c.h) << c.x;
  }
  EXPECT_EQ(float16_bits_branchless(std::numeric_limits<float>::quiet_NaN()) & 0x7E00u, 0x7E00u);
  EXPECT_EQ(float16_bits_branchless(-std::numeric_limits<float>::quiet_NaN()) & 0x8000u, 0x8000u);
}

}  // namespace
}  // namespace cubestream::core
