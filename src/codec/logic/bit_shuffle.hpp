// Bit unshuffle: the inverse of blosc's bit-shuffle filter (flag bit 2), as c-blosc 1.x applies
// it to each block. Shared by host and device.
//
// Layout of a bit-shuffled run of `n` elements of `typesize` bytes (n a multiple of 8): there
// are 8 * typesize rows of n / 8 bytes. Row r = 8 * j + k collects bit k (0 = least
// significant) of byte j of every element; element i sits at bit i % 8 of byte i / 8 of the
// row. Inverting it takes, for each group of 8 elements and each byte j, the 8 bytes of rows
// 8j..8j+7 at the group's column, which form an 8x8 bit matrix; its transpose holds byte j of
// the group's 8 elements.
//
// c-blosc 1.x's rule for a block of `size` bytes: with n = size / typesize elements, if n is a
// multiple of 8 the n elements are bit-shuffled and the size % typesize trailing bytes copied;
// otherwise the whole block is stored as-is. (c-blosc 2 instead bit-shuffles the largest
// multiple of 8 elements; its chunks use a newer format version that we do not read.)
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/host_device.hpp"

namespace cubestream::codec::logic {

// Transposes the 8x8 bit matrix held in `x` (bit 8 * r + c <-> bit 8 * c + r) with three
// rounds of swaps of 1x1, 2x2 and 4x4 sub-blocks.
CS_HD inline std::uint64_t transpose_bits_8x8(std::uint64_t x) {
  std::uint64_t t;
  t = (x ^ (x >> 7)) & 0x00AA00AA00AA00AAull;
  x = x ^ t ^ (t << 7);
  t = (x ^ (x >> 14)) & 0x0000CCCC0000CCCCull;
  x = x ^ t ^ (t << 14);
  t = (x ^ (x >> 28)) & 0x00000000F0F0F0F0ull;
  x = x ^ t ^ (t << 28);
  return x;
}

// Restores the 8 elements of group `g` (elements 8g..8g+7) of a bit-shuffled run of `n`
// elements. Groups are independent, so GPU threads may take one each.
CS_HD inline void bitunshuffle_group(const std::uint8_t* src, std::uint8_t* dst, std::size_t n,
                                     std::size_t typesize, std::size_t g) {
  const std::size_t row_bytes = n / 8;
  for (std::size_t j = 0; j < typesize; ++j) {
    const std::uint8_t* rows = src + (8 * j) * row_bytes + g;
    std::uint64_t x = 0;
    for (int k = 0; k < 8; ++k) x |= static_cast<std::uint64_t>(rows[k * row_bytes]) << (8 * k);
    x = transpose_bits_8x8(x);
    std::uint8_t* out = dst + (8 * g) * typesize + j;
    for (int b = 0; b < 8; ++b) out[b * typesize] = static_cast<std::uint8_t>(x >> (8 * b));
  }
}

// Bit-unshuffles one blosc block of `size` bytes (see the rule above). `src` and `dst` must
// not overlap.
CS_HD inline void bitunshuffle_block(const std::uint8_t* src, std::uint8_t* dst, std::size_t size,
                                     std::size_t typesize) {
  const std::size_t n = typesize == 0 ? 0 : size / typesize;
  std::size_t done = 0;
  if (typesize != 0 && n % 8 == 0) {
    for (std::size_t g = 0; g < n / 8; ++g) bitunshuffle_group(src, dst, n, typesize, g);
    done = n * typesize;
  }
  for (std::size_t k = done; k < size; ++k) dst[k] = src[k];
}

// The forward filter (encoding), with the same rule: when n = size / typesize is a multiple
// of 8, bit k of byte j of element i goes to bit i % 8 of byte i / 8 of row 8 * j + k; the
// size % typesize trailing bytes (or, when n is not a multiple of 8, the whole block) are
// copied. The 8x8 bit transpose is its own inverse, so each group is the mirror of
// bitunshuffle_group.
inline void bitshuffle_block(const std::uint8_t* src, std::uint8_t* dst, std::size_t size, std::size_t typesize) {
  const std::size_t n = typesize == 0 ? 0 : size / typesize;
  std::size_t done = 0;
  if (typesize != 0 && n % 8 == 0) {
    const std::size_t row_bytes = n / 8;
    for (std::size_t g = 0; g < n / 8; ++g) {
      for (std::size_t j = 0; j < typesize; ++j) {
        const std::uint8_t* in = src + (8 * g) * typesize + j;
        std::uint64_t x = 0;
        for (int b = 0; b < 8; ++b) x |= static_cast<std::uint64_t>(in[b * typesize]) << (8 * b);
        x = transpose_bits_8x8(x);
        std::uint8_t* rows = dst + (8 * j) * row_bytes + g;
        for (int k = 0; k < 8; ++k) rows[k * row_bytes] = static_cast<std::uint8_t>(x >> (8 * k));
      }
    }
    done = n * typesize;
  }
  for (std::size_t k = done; k < size; ++k) dst[k] = src[k];
}

}  // namespace cubestream::codec::logic
