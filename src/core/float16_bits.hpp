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

}  // namespace cubestream::core
