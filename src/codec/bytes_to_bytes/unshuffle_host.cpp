#include "codec/bytes_to_bytes/unshuffle_host.hpp"

#include <cstring>

#include "codec/logic/byte_shuffle.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#define CS_UNSHUFFLE_SSE2 1
#else
#define CS_UNSHUFFLE_SSE2 0
#endif

namespace cubestream::codec {

namespace {

#if CS_UNSHUFFLE_SSE2
// Each step takes 16 consecutive elements i..i+15 (32 for typesize 2): one 16-byte load from
// each plane (plane j holds byte j of those elements, at src + j * n + i), and writes them back
// as whole elements, 16 * TS bytes at dst + i * TS. The loads and stores are unaligned: plane
// starts are n bytes apart, and n is anything.
//
// Interleaving two vectors with unpacklo/unpackhi at width w pairs up their w-byte groups:
// unpacklo_epi8(x, y) = x0 y0 x1 y1 ... x7 y7, unpackhi_epi8 the same for bytes 8..15. So one
// round of byte unpacks of planes (0,1) gives 2-byte groups "byte 0, byte 1" of each element,
// a round of 16-bit unpacks of those with the (2,3) results gives 4-byte groups, a round of
// 32-bit unpacks 8-byte groups: log2(TS) rounds rebuild elements of TS bytes, each round
// doubling the group width and halving the number of elements per vector.
//
// Every step computes all its output vectors before storing any, and stores them in address
// order, 64 bytes or more per step. Both are measured, not cosmetic (GCC 12 -O3, Sapphire
// Rapids, bench/micro/unshuffle_host.cpp): when each store follows its unpack, GCC emits
// the stores out of address order, and the typesize 8 loop ran at half the speed of the
// same instructions stored in order; typesize 2 at 32 bytes per step ran at half the speed
// of 64. (GCC at -O3 vectorises the scalar reference into the first form by itself.)
//
// Each returns the number of elements done; the rest is left to the caller.

// 64 bytes at d from four vectors, in address order (see above for why the order matters).
inline void store64(std::uint8_t* d, __m128i a, __m128i b, __m128i c, __m128i e) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(d), a);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 16), b);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 32), c);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 48), e);
}

std::size_t unshuffle2_sse2(const std::uint8_t* src, std::uint8_t* dst, std::size_t n) {
  const std::uint8_t* p0 = src;
  const std::uint8_t* p1 = src + n;
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m128i a0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p0 + i));
    const __m128i a1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p1 + i));
    const __m128i b0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p0 + i + 16));
    const __m128i b1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p1 + i + 16));
    // elements i..i+7, i+8..i+15, i+16..i+23, i+24..i+31 as (byte 0, byte 1) pairs
    const __m128i o0 = _mm_unpacklo_epi8(a0, a1);
    const __m128i o1 = _mm_unpackhi_epi8(a0, a1);
    const __m128i o2 = _mm_unpacklo_epi8(b0, b1);
    const __m128i o3 = _mm_unpackhi_epi8(b0, b1);
    std::uint8_t* d = dst + i * 2;
    store64(d, o0, o1, o2, o3);
  }
  return i;
}

std::size_t unshuffle4_sse2(const std::uint8_t* src, std::uint8_t* dst, std::size_t n) {
  const std::uint8_t* p0 = src;
  const std::uint8_t* p1 = src + n;
  const std::uint8_t* p2 = src + 2 * n;
  const std::uint8_t* p3 = src + 3 * n;
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i b0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p0 + i));
    const __m128i b1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p1 + i));
    const __m128i b2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p2 + i));
    const __m128i b3 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p3 + i));
    // bytes (0,1) and (2,3) of elements 0..7 (lo) and 8..15 (hi)
    const __m128i b01lo = _mm_unpacklo_epi8(b0, b1);
    const __m128i b01hi = _mm_unpackhi_epi8(b0, b1);
    const __m128i b23lo = _mm_unpacklo_epi8(b2, b3);
    const __m128i b23hi = _mm_unpackhi_epi8(b2, b3);
    // whole elements: 0..3, 4..7, 8..11, 12..15
    const __m128i o0 = _mm_unpacklo_epi16(b01lo, b23lo);
    const __m128i o1 = _mm_unpackhi_epi16(b01lo, b23lo);
    const __m128i o2 = _mm_unpacklo_epi16(b01hi, b23hi);
    const __m128i o3 = _mm_unpackhi_epi16(b01hi, b23hi);
    std::uint8_t* d = dst + i * 4;
    store64(d, o0, o1, o2, o3);
  }
  return i;
}

std::size_t unshuffle8_sse2(const std::uint8_t* src, std::uint8_t* dst, std::size_t n) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const std::uint8_t* s = src + i;
    __m128i b[8];
    for (std::size_t j = 0; j < 8; ++j) b[j] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + j * n));
    // 2-byte groups: bytes (0,1), (2,3), (4,5), (6,7) of elements 0..7 (lo) and 8..15 (hi)
    const __m128i b01lo = _mm_unpacklo_epi8(b[0], b[1]);
    const __m128i b01hi = _mm_unpackhi_epi8(b[0], b[1]);
    const __m128i b23lo = _mm_unpacklo_epi8(b[2], b[3]);
    const __m128i b23hi = _mm_unpackhi_epi8(b[2], b[3]);
    const __m128i b45lo = _mm_unpacklo_epi8(b[4], b[5]);
    const __m128i b45hi = _mm_unpackhi_epi8(b[4], b[5]);
    const __m128i b67lo = _mm_unpacklo_epi8(b[6], b[7]);
    const __m128i b67hi = _mm_unpackhi_epi8(b[6], b[7]);
    // 4-byte groups: bytes 0..3 (lo) and 4..7 (hi) of elements 0..3, 4..7, 8..11, 12..15
    const __m128i lo0 = _mm_unpacklo_epi16(b01lo, b23lo);
    const __m128i lo1 = _mm_unpackhi_epi16(b01lo, b23lo);
    const __m128i lo2 = _mm_unpacklo_epi16(b01hi, b23hi);
    const __m128i lo3 = _mm_unpackhi_epi16(b01hi, b23hi);
    const __m128i hi0 = _mm_unpacklo_epi16(b45lo, b67lo);
    const __m128i hi1 = _mm_unpackhi_epi16(b45lo, b67lo);
    const __m128i hi2 = _mm_unpacklo_epi16(b45hi, b67hi);
    const __m128i hi3 = _mm_unpackhi_epi16(b45hi, b67hi);
    // whole elements, two per vector: 0-1, 2-3, ..., 14-15
    const __m128i o0 = _mm_unpacklo_epi32(lo0, hi0);
    const __m128i o1 = _mm_unpackhi_epi32(lo0, hi0);
    const __m128i o2 = _mm_unpacklo_epi32(lo1, hi1);
    const __m128i o3 = _mm_unpackhi_epi32(lo1, hi1);
    const __m128i o4 = _mm_unpacklo_epi32(lo2, hi2);
    const __m128i o5 = _mm_unpackhi_epi32(lo2, hi2);
    const __m128i o6 = _mm_unpacklo_epi32(lo3, hi3);
    const __m128i o7 = _mm_unpackhi_epi32(lo3, hi3);
    std::uint8_t* d = dst + i * 8;
    store64(d, o0, o1, o2, o3);
    store64(d + 64, o4, o5, o6, o7);
  }
  return i;
}
#endif  // CS_UNSHUFFLE_SSE2

// Vector part for TS (where there is one), then the scalar reference for the elements after
// the last whole vector.
template <std::size_t TS>
void unshuffle_fixed(const std::uint8_t* src, std::uint8_t* dst, std::size_t n) {
  std::size_t done = 0;
#if CS_UNSHUFFLE_SSE2
  if constexpr (TS == 2) done = unshuffle2_sse2(src, dst, n);
  if constexpr (TS == 4) done = unshuffle4_sse2(src, dst, n);
  if constexpr (TS == 8) done = unshuffle8_sse2(src, dst, n);
#endif
  logic::unshuffle_elements_fixed<TS>(src, dst, n, done, n);
}

}  // namespace

void unshuffle_host(const std::uint8_t* src, std::uint8_t* dst, std::size_t size, std::size_t typesize) {
  if (size == 0) return;
  if (typesize <= 1) {
    std::memcpy(dst, src, size);
    return;
  }
  const std::size_t n = size / typesize;
  switch (typesize) {
    case 2: unshuffle_fixed<2>(src, dst, n); break;
    case 4: unshuffle_fixed<4>(src, dst, n); break;
    case 8: unshuffle_fixed<8>(src, dst, n); break;
    default: logic::unshuffle_elements(src, dst, n, typesize, 0, n); break;
  }
  const std::size_t whole = n * typesize;
  if (whole < size) std::memcpy(dst + whole, src + whole, size - whole);
}

}  // namespace cubestream::codec
