// float32 -> bfloat16 / float16 bit patterns with round to nearest, ties to even, written once
// for the host (Selection, the CPU assemble stage) and the GPU (the assemble kernel), so both
// paths give the same bits. NaN stays a quiet NaN of the same sign; overflow gives infinity;
// float16 underflow gives subnormals or zero.
#pragma once

#include <cstdint>
#include <cstring>

#include "core/host_device.hpp"

namespace cubestream::core {

CS_HD inline std::uint32_t float_bits(float x) {
  std::uint32_t b;
  std::memcpy(&b, &x, 4);
  return b;
}

CS_HD inline std::uint16_t bfloat16_bits(float x) {
  const std::uint32_t bits = float_bits(x);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x0040u);  // NaN
  const std::uint32_t rounding = 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>((bits + rounding) >> 16);
}

CS_HD inline std::uint16_t float16_bits(float x) {
  const std::uint32_t bits = float_bits(x);
  const std::uint16_t sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t exp = (bits >> 23) & 0xFFu;
  std::uint32_t mant = bits & 0x7FFFFFu;
  if (exp == 0xFF) {  // inf or NaN
    if (mant == 0) return static_cast<std::uint16_t>(sign | 0x7C00u);
    return static_cast<std::uint16_t>(sign | 0x7E00u | (mant >> 13));
  }
  const int e = static_cast<int>(exp) - 127 + 15;  // biased half exponent
  if (e >= 31) return static_cast<std::uint16_t>(sign | 0x7C00u);  // overflow (rounding cannot help)
  if (e <= 0) {
    // Subnormal half (or zero): value = m * 2^-24 with m = full mantissa >> shift.
    if (e < -10) return sign;  // below half the smallest subnormal
    mant |= 0x800000u;         // implicit bit
    const int shift = 14 - e;  // 14..24
    std::uint32_t h = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1);
    const std::uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u))) ++h;  // may carry into the smallest normal: right
    return static_cast<std::uint16_t>(sign | h);
  }
  std::uint32_t h = (static_cast<std::uint32_t>(e) << 10) | (mant >> 13);
  const std::uint32_t rem = mant & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry may give infinity: right
  return static_cast<std::uint16_t>(sign | h);
}

// The same bits as float16_bits for every float32 (checked over all 2^32 once; the tests take
// every rounding case of every exponent and every value below 2^-13, 1.9 G of them), with
// masks instead of branches so that a compiler vectorises a loop of it (the CPU assemble
// stage's float16 rows). Normal halves round in integer arithmetic: the exponent rebiased
// (127 - 15 = 112, i.e. 0x38000000 off the bits), then 0xFFF plus the kept part's lowest bit
// added below the 13 dropped bits (ties to even; a carry moves into the exponent, up to
// infinity). Subnormal halves round in float arithmetic: |x| + 0.5 has a unit in the last
// place of 2^-24, the half subnormals' step, so the addition (round to nearest even, the
// default mode) leaves the rounded half in the sum's low mantissa bits. |x| >= 65520 (the
// midpoint above the largest half, 65504, whose odd mantissa makes the tie round up) is
// infinity; NaN keeps the quiet bit and the payload's top bits, as float16_bits.
CS_HD inline std::uint16_t float16_bits_branchless(float x) {
  const std::uint32_t bits = float_bits(x);
  const std::uint32_t sign = (bits >> 16) & 0x8000u;
  const std::uint32_t a = bits & 0x7FFFFFFFu;
  const std::uint32_t normal = (a - 0x38000000u + 0xFFFu + ((a >> 13) & 1u)) >> 13;
  float abs_x;
  std::memcpy(&abs_x, &a, 4);
  const std::uint32_t sub = float_bits(abs_x + 0.5f) - 0x3F000000u;
  const std::uint32_t nan = 0x7E00u | ((a & 0x7FFFFFu) >> 13);
  // |x|'s bits fit 31 bits: compared as signed, which AVX2 has (its compares are signed only).
  // The selects are spelled as masks: GCC 12 vectorises these for AVX2 and SSE2, where it
  // leaves ?: as control flow.
  const auto sa = static_cast<std::int32_t>(a);
  const std::uint32_t is_sub = 0u - static_cast<std::uint32_t>(sa < 0x38800000);
  const std::uint32_t is_inf = 0u - static_cast<std::uint32_t>(sa >= 0x477FF000);
  const std::uint32_t is_nan = 0u - static_cast<std::uint32_t>(sa > 0x7F800000);
  std::uint32_t h = (sub & is_sub) | (normal & ~is_sub);
  h = (0x7C00u & is_inf) | (h & ~is_inf);
  h = (nan & is_nan) | (h & ~is_nan);
  return static_cast<std::uint16_t>(sign | h);
}

}  // namespace cubestream::core
