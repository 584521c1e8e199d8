// Byte unshuffle on the host, vectorised: the inverse of blosc's byte shuffle (flag bit 0) and
// of numcodecs' Shuffle codec, for the host decoders (blosc.cpp, shuffle.cpp).
//
// Contract: unshuffle_host(src, dst, size, typesize) writes exactly what the scalar reference
// logic::unshuffle_block(src, dst, size, typesize) (logic/byte_shuffle.hpp, shared with the
// GPU build) writes, for every size and typesize:
//   - n = size / typesize elements; `src` holds typesize planes of n bytes, plane j holding
//     byte j of every element: shuffled[j * n + i] = original[i * typesize + j];
//   - the trailing size % typesize bytes are copied as-is (blosc stores them unshuffled);
//   - typesize 0 or 1 is a plain copy.
// It writes dst[0, size) and nothing else, reads src[0, size) and nothing else, and needs no
// alignment of either. `src` and `dst` must not overlap.
//
// Typesizes 2, 4 and 8 (int16/float16, int32/float32, int64/float64) take SSE2 paths on x86-64
// (SSE2 is part of the x86-64 baseline, so there is no run-time dispatch); the elements left
// over after the last whole vector, other typesizes and other architectures use the scalar
// reference. The scalar header stays free of intrinsics because nvcc compiles it for the GPU.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cubestream::codec {

void unshuffle_host(const std::uint8_t* src, std::uint8_t* dst, std::size_t size, std::size_t typesize);

}  // namespace cubestream::codec
