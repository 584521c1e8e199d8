// The device copier of the shared decoders (codec/logic/lz4_block.hpp, blosc_decode.hpp): all
// 32 lanes of a warp run the same serial parse (they read the same bytes, which the memory
// system broadcasts) and share each copy, lane l moving bytes l, l + 32, l + 64, ...
//
// Overlapping LZ4 matches (offset < length) repeat the last `offset` bytes: byte k of the
// match equals byte (k mod offset) of its source, which lies before the match, so every lane
// reads only bytes written by earlier sequences and no lane waits for another inside a copy.
// A __syncwarp after each copy makes the warp's writes visible to all its lanes before the
// next sequence reads them.
//
// Copies of >= kWideCopyMin bytes whose source and destination share their alignment modulo 4
// move 4-byte words (a head and tail byte-wise); that is the common case for literals of
// shuffled float data and for long matches at offsets that are multiples of 4.
#pragma once

#include <cstddef>
#include <cstdint>

#include "codec/logic/blosclz.hpp"

namespace cubestream::cuda::detail {

inline constexpr unsigned kFullMask = 0xFFFFFFFFu;
inline constexpr std::size_t kWideCopyMin = 256;

struct WarpCopier {
  unsigned lane;

  // dst[k] = src[k], src and dst not overlapping (or src at least n bytes before dst).
  __device__ void literals(std::uint8_t* dst, const std::uint8_t* src, std::size_t n) {
    copy_forward(dst, src, n);
    __syncwarp();
  }

  __device__ void match(std::uint8_t* dst, std::size_t offset, std::size_t n) {
    const std::uint8_t* src = dst - offset;
    if (offset >= n) {
      copy_forward(dst, src, n);
    } else if (offset >= 32 && offset % 4 == 0 && n >= kWideCopyMin) {
      // rounds of `offset` bytes: round r reads what rounds before it wrote
      for (std::size_t done = 0; done < n; done += offset) {
        const std::size_t len = n - done < offset ? n - done : offset;
        copy_forward(dst + done, src + done, len);
        __syncwarp();
      }
    } else {
      for (std::size_t k = lane; k < n; k += 32) dst[k] = src[k % offset];
    }
    __syncwarp();
  }

  __device__ void sync() { __syncwarp(); }
  __device__ codec::logic::BlosclzStatus broadcast_status(codec::logic::BlosclzStatus s) {
    return static_cast<codec::logic::BlosclzStatus>(__shfl_sync(kFullMask, static_cast<int>(s), 0));
  }
  __device__ std::size_t broadcast_size(std::size_t n) {
    return static_cast<std::size_t>(__shfl_sync(kFullMask, static_cast<unsigned long long>(n), 0));
  }

 private:
  __device__ void copy_forward(std::uint8_t* dst, const std::uint8_t* src, std::size_t n) {
    const std::size_t mis_d = reinterpret_cast<std::uintptr_t>(dst) & 3u;
    const std::size_t mis_s = reinterpret_cast<std::uintptr_t>(src) & 3u;
    if (n >= kWideCopyMin && mis_d == mis_s) {
      const std::size_t head = (4 - mis_d) & 3u;
      if (lane < head) dst[lane] = src[lane];
      const std::size_t words = (n - head) / 4;
      auto* d4 = reinterpret_cast<std::uint32_t*>(dst + head);
      const auto* s4 = reinterpret_cast<const std::uint32_t*>(src + head);
      for (std::size_t w = lane; w < words; w += 32) d4[w] = s4[w];
      for (std::size_t k = head + 4 * words + lane; k < n; k += 32) dst[k] = src[k];
      return;
    }
    for (std::size_t k = lane; k < n; k += 32) dst[k] = src[k];
  }
};

}  // namespace cubestream::cuda::detail
