// How the 32 lanes of a warp share the copies of an LZ4 sequence, written per lane and per phase
// so that the host build can run every lane of every phase in order and check the result (the
// device copier, src/cuda/decode/warp_copy.cuh, runs the lanes at once with a __syncwarp after
// each phase). Within a phase no lane reads a byte that another lane writes in that phase.
//
// Literal copies and matches whose source ends before they start (offset >= length) are one
// phase. An overlapping match (offset < length) repeats the last `offset` bytes:
//  - offset >= 32: phases of `offset` bytes; phase p reads only bytes written before it;
//  - offset < 32: one phase, byte k = source byte k mod offset (all before the match).
// Copies of >= kLaneWideMin bytes whose source and destination are equally aligned modulo 4
// move 4-byte words, a head and a tail bytewise.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/host_device.hpp"

namespace cubestream::codec::logic {

inline constexpr unsigned kWarpLanes = 32;
inline constexpr std::size_t kLaneWideMin = 256;

// dst[k] = src[k] for the k of lane `lane` (src and dst not overlapping within n bytes).
CS_HD inline void lane_copy_forward(std::uint8_t* dst, const std::uint8_t* src, std::size_t n, unsigned lane) {
  const std::size_t mis_d = reinterpret_cast<std::uintptr_t>(dst) & 3u;
  const std::size_t mis_s = reinterpret_cast<std::uintptr_t>(src) & 3u;
  if (n >= kLaneWideMin && mis_d == mis_s) {
    const std::size_t head = (4 - mis_d) & 3u;
    if (lane < head) dst[lane] = src[lane];
    const std::size_t words = (n - head) / 4;
    auto* d4 = reinterpret_cast<std::uint32_t*>(dst + head);
    const auto* s4 = reinterpret_cast<const std::uint32_t*>(src + head);
    for (std::size_t w = lane; w < words; w += kWarpLanes) d4[w] = s4[w];
    for (std::size_t k = head + 4 * words + lane; k < n; k += kWarpLanes) dst[k] = src[k];
    return;
  }
  for (std::size_t k = lane; k < n; k += kWarpLanes) dst[k] = src[k];
}

// Phases of a match of n bytes at distance `offset`.
CS_HD inline std::size_t lane_match_phases(std::size_t offset, std::size_t n) {
  if (offset >= n || offset < kWarpLanes) return 1;
  return (n + offset - 1) / offset;
}

// Lane `lane`'s part of phase `phase` of the match dst[k] = dst[k - offset], k in [0, n).
CS_HD inline void lane_match(std::uint8_t* dst, std::size_t offset, std::size_t n, unsigned lane,
                             std::size_t phase) {
  const std::uint8_t* src = dst - offset;
  if (offset >= n) {
    lane_copy_forward(dst, src, n, lane);
  } else if (offset >= kWarpLanes) {
    const std::size_t done = phase * offset;
    const std::size_t len = n - done < offset ? n - done : offset;
    lane_copy_forward(dst + done, src + done, len, lane);
  } else {
    // lane l starts at l mod offset and steps by 32 mod offset: no division in the loop
    const std::size_t step = kWarpLanes % offset;
    std::size_t r = lane % offset;
    for (std::size_t k = lane; k < n; k += kWarpLanes) {
      dst[k] = src[r];
      r += step;
      if (r >= offset) r -= offset;
    }
  }
}

}  // namespace cubestream::codec::logic
