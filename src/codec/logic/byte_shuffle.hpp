// Byte unshuffle: the inverse of the byte-transpose filter used by blosc (flag bit 0) and by
// numcodecs' Shuffle codec. Shared by host and device.
//
// Layout: a buffer of `n` elements of `typesize` bytes is shuffled into `typesize` planes of
// `n` bytes; plane j holds byte j of every element:
//     shuffled[j * n + i] = original[i * typesize + j]
// Blosc shuffles each block separately; bytes past the last whole element of a block
// (blocksize % typesize of them) are stored unshuffled after the planes and copied as-is.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/host_device.hpp"

namespace cubestream::codec::logic {

// Unshuffles elements [begin, end) of a shuffled buffer of `n` elements. Splitting the element
// range lets GPU threads share one buffer.
CS_HD inline void unshuffle_elements(const std::uint8_t* src, std::uint8_t* dst, std::size_t n,
                                     std::size_t typesize, std::size_t begin, std::size_t end) {
  for (std::size_t i = begin; i < end; ++i) {
    std::uint8_t* d = dst + i * typesize;
    for (std::size_t j = 0; j < typesize; ++j) d[j] = src[j * n + i];
  }
}

// Typesize known at compile time: the inner loop unrolls into straight stores.
template <std::size_t TS>
CS_HD inline void unshuffle_elements_fixed(const std::uint8_t* src, std::uint8_t* dst,
                                           std::size_t n, std::size_t begin, std::size_t end) {
  for (std::size_t i = begin; i < end; ++i) {
    std::uint8_t* d = dst + i * TS;
    for (std::size_t j = 0; j < TS; ++j) d[j] = src[j * n + i];
  }
}

// Unshuffles a whole block of `size` bytes (blosc's rule: trailing partial element copied).
// `src` and `dst` must not overlap.
CS_HD inline void unshuffle_block(const std::uint8_t* src, std::uint8_t* dst, std::size_t size,
                                  std::size_t typesize) {
  if (typesize <= 1) {
    for (std::size_t k = 0; k < size; ++k) dst[k] = src[k];
    return;
  }
  const std::size_t n = size / typesize;
  switch (typesize) {
    case 2: unshuffle_elements_fixed<2>(src, dst, n, 0, n); break;
    case 4: unshuffle_elements_fixed<4>(src, dst, n, 0, n); break;
    case 8: unshuffle_elements_fixed<8>(src, dst, n, 0, n); break;
    default: unshuffle_elements(src, dst, n, typesize, 0, n); break;
  }
  for (std::size_t k = n * typesize; k < size; ++k) dst[k] = src[k];
}

// The forward filter (encoding): shuffled[j * n + i] = original[i * typesize + j], the
// trailing size % typesize bytes copied as-is, so that unshuffle_block restores the block.
inline void shuffle_block(const std::uint8_t* src, std::uint8_t* dst, std::size_t size, std::size_t typesize) {
  if (typesize <= 1) {
    for (std::size_t k = 0; k < size; ++k) dst[k] = src[k];
    return;
  }
  const std::size_t n = size / typesize;
  for (std::size_t j = 0; j < typesize; ++j) {
    std::uint8_t* plane = dst + j * n;
    const std::uint8_t* s = src + j;
    for (std::size_t i = 0; i < n; ++i) plane[i] = s[i * typesize];
  }
  for (std::size_t k = n * typesize; k < size; ++k) dst[k] = src[k];
}

}  // namespace cubestream::codec::logic
