// XXH64, the hash behind the Zstandard content checksum (RFC 8878 section 3.1.1: the low 32
// bits of XXH64 with seed 0 over the frame's decoded content, stored little-endian after the
// last block). Written from the XXH64 specification (xxhash.com, doc/xxhash_spec.md): four
// 64-bit accumulators consume 32-byte stripes, then the tail is mixed in 8-, 4- and 1-byte
// steps and the result is avalanched.
//
// Check values: XXH64("", 0) = 0xEF46DB3751D8E999, XXH64("a", 0) = 0xD24EC4F1A98C6E5B.
#pragma once

#include <cstddef>
#include <cstdint>

#include "codec/logic/zstd/common.hpp"

namespace cubestream::codec::logic::zstd {

inline constexpr u64 kXxhP1 = 0x9E3779B185EBCA87ull;
inline constexpr u64 kXxhP2 = 0xC2B2AE3D27D4EB4Full;
inline constexpr u64 kXxhP3 = 0x165667B19E3779F9ull;
inline constexpr u64 kXxhP4 = 0x85EBCA77C2B2AE63ull;
inline constexpr u64 kXxhP5 = 0x27D4EB2F165667C5ull;

CS_HD inline u64 xxh_rotl(u64 x, u32 r) { return (x << r) | (x >> (64 - r)); }
CS_HD inline u64 xxh_round(u64 acc, u64 lane) { return xxh_rotl(acc + lane * kXxhP2, 31) * kXxhP1; }
CS_HD inline u64 xxh_merge(u64 h, u64 acc) { return (h ^ xxh_round(0, acc)) * kXxhP1 + kXxhP4; }

// Accumulator `k` (0..3) after all full stripes of `p[0, n)`: accumulator k only ever sees
// the k-th 8-byte lane of each stripe, which is what lets four threads hash one buffer.
CS_HD inline u64 xxh64_accumulator(const u8* p, std::size_t n, unsigned k, u64 seed) {
  u64 acc = k == 0 ? seed + kXxhP1 + kXxhP2 : k == 1 ? seed + kXxhP2 : k == 2 ? seed : seed - kXxhP1;
  const std::size_t stripes = n / 32;
  for (std::size_t s = 0; s < stripes; ++s) acc = xxh_round(acc, load_le64(p + s * 32 + k * 8));
  return acc;
}

// Finishes the hash from the four accumulators (ignored when n < 32) and the tail bytes.
CS_HD inline u64 xxh64_finish(const u8* p, std::size_t n, u64 seed, u64 a0, u64 a1, u64 a2, u64 a3) {
  u64 h;
  if (n >= 32) {
    h = xxh_rotl(a0, 1) + xxh_rotl(a1, 7) + xxh_rotl(a2, 12) + xxh_rotl(a3, 18);
    h = xxh_merge(h, a0);
    h = xxh_merge(h, a1);
    h = xxh_merge(h, a2);
    h = xxh_merge(h, a3);
  } else {
    h = seed + kXxhP5;
  }
  h += static_cast<u64>(n);
  std::size_t i = n & ~std::size_t(31);
  for (; i + 8 <= n; i += 8) h = xxh_rotl(h ^ xxh_round(0, load_le64(p + i)), 27) * kXxhP1 + kXxhP4;
  if (i + 4 <= n) {
    h = xxh_rotl(h ^ (u64(load_le32(p + i)) * kXxhP1), 23) * kXxhP2 + kXxhP3;
    i += 4;
  }
  for (; i < n; ++i) h = xxh_rotl(h ^ (u64(p[i]) * kXxhP5), 11) * kXxhP1;
  h ^= h >> 33;
  h *= kXxhP2;
  h ^= h >> 29;
  h *= kXxhP3;
  h ^= h >> 32;
  return h;
}

CS_HD inline u64 xxh64(const u8* p, std::size_t n, u64 seed) {
  return xxh64_finish(p, n, seed, xxh64_accumulator(p, n, 0, seed), xxh64_accumulator(p, n, 1, seed),
                      xxh64_accumulator(p, n, 2, seed), xxh64_accumulator(p, n, 3, seed));
}

}  // namespace cubestream::codec::logic::zstd
