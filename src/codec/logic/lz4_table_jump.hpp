// The table walk's chain by pointer doubling, written once for the host and the device.
//
// lz4_table_chain follows the table one dependent load a token; on the GPU that chain ran on one
// warp while the other seven warps of the walker's block waited at a barrier, and it was half of
// the walk's time (an era5-like window of 8 KiB holds ~145 tokens; ncu with source lines put
// ~72 % of one buffer's walk in warp-0-only phases, ~70 % of those in the chain:
// docs/gpu_decoders.md, "The chain by doubling"). Starting a chain at guessed positions and
// letting the guesses meet the true chain (as the split walk does over 32 KiB regions) does not
// suit 8 KiB: on era5-like blocks a parse begun at a wrong byte took 8 rounds of 512-byte parts
// (median) to meet the true one (host count, 2 165 windows).
//
// Doubling is exact and needs log2(tokens) rounds, each a pass over the window by the whole team:
//   jmp = J_0, the next token the chain would list after p (kLz4JumpStop where the chain would
//         stop there: the next position leaves the table or the table declines it);
//   list: toks[0] = r; in round k, toks[i + 2^k] = J_k(toks[i]) for i < 2^k, so toks[i] is the
//         i-th token for every i < 2^(k+1) (kLz4JumpStop once the chain has stopped: it absorbs);
//   doubling: J_(k+1)(p) = J_k(J_k(p)), computed into jmp in place, a chunk of positions at a
//         time from the lowest: every read of a chunk is at its own positions or above (J moves
//         forward), which the chunk's writes have not touched yet, and a barrier separates the
//         chunk's reads from its writes, so each chunk reads J_k only.
// The result is lz4_table_chain's exactly: the same toks[0, n) and the same end position (the
// table entry of the last listed token, or r when none is listed). Entries are positions below
// 65535 - kLz4FastSpan (lz4_segments.hpp), so 0xFFFF is free for the stop.
#pragma once

#include <cstdint>
#include <vector>

#include "core/host_device.hpp"

namespace cubestream::codec::logic {

inline constexpr std::uint16_t kLz4JumpStop = 0xFFFF;
// Values a thread holds between a doubling chunk's reads and its writes (a chunk is
// threads x kLz4JumpPerThread positions).
inline constexpr std::uint32_t kLz4JumpPerThread = 8;

// Whether the chain lists the token at r at all (the caller's r < end).
CS_HD inline bool lz4_jump_starts(const std::uint16_t* tbl, std::uint32_t r) { return tbl[r] != 0; }

// J_0 over [r, end), thread t of `threads`: the token the chain lists after p, or the stop.
CS_HD inline void lz4_jump_init(const std::uint16_t* tbl, std::uint16_t* jmp, std::uint32_t r, std::uint32_t end,
                                std::uint32_t t, std::uint32_t threads) {
  for (std::uint32_t p = r + t; p < end; p += threads) {
    const std::uint32_t q = tbl[p];
    jmp[p] = q != 0 && q < end && tbl[q] != 0 ? static_cast<std::uint16_t>(q) : kLz4JumpStop;
  }
}

// Round k of the list (jmp holds J_k): toks[i + 2^k] for i < 2^k below cap.
CS_HD inline void lz4_jump_list(const std::uint16_t* jmp, std::uint16_t* toks, std::uint32_t k, std::uint32_t cap,
                                std::uint32_t t, std::uint32_t threads) {
  const std::uint32_t h = 1u << k;
  for (std::uint32_t i = t; i < h && i + h < cap; i += threads) {
    const std::uint16_t a = toks[i];
    toks[i + h] = a == kLz4JumpStop ? kLz4JumpStop : jmp[a];
  }
}

// Chunk c of a doubling round: thread t's positions are first + t + threads * u, u <
// kLz4JumpPerThread, below end, with first = r + c * threads * kLz4JumpPerThread. The reads
// return J_k(J_k(p)) in v; the writes, after a team barrier, store them.
CS_HD inline std::uint32_t lz4_jump_chunk_first(std::uint32_t r, std::uint32_t c, std::uint32_t threads) {
  return r + c * threads * kLz4JumpPerThread;
}
CS_HD inline void lz4_jump_double_read(const std::uint16_t* jmp, std::uint32_t first, std::uint32_t end,
                                       std::uint32_t t, std::uint32_t threads, std::uint16_t* v) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (std::uint32_t u = 0; u < kLz4JumpPerThread; ++u) {
    const std::uint32_t p = first + t + threads * u;
    std::uint16_t x = kLz4JumpStop;
    if (p < end) {
      const std::uint16_t a = jmp[p];
      x = a == kLz4JumpStop ? kLz4JumpStop : jmp[a];
    }
    v[u] = x;
  }
}
CS_HD inline void lz4_jump_double_write(std::uint16_t* jmp, std::uint32_t first, std::uint32_t end, std::uint32_t t,
                                        std::uint32_t threads, const std::uint16_t* v) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (std::uint32_t u = 0; u < kLz4JumpPerThread; ++u) {
    const std::uint32_t p = first + t + threads * u;
    if (p < end) jmp[p] = v[u];
  }
}

// Whether the list needs another round after round k (toks[0, 2^(k+1)) written, below cap).
CS_HD inline bool lz4_jump_more(const std::uint16_t* toks, std::uint32_t k, std::uint32_t cap) {
  const std::uint32_t m = 2u << k;
  return m < cap && toks[m - 1] != kLz4JumpStop;
}

// After the last round k: the listed tokens (toks[0, n), the stops form a suffix of
// toks[0, min(2^(k+1), cap))) and the chain's end position (lz4_table_chain's *r).
CS_HD inline std::uint32_t lz4_jump_count(const std::uint16_t* toks, std::uint32_t k, std::uint32_t cap) {
  std::uint32_t lo = 1, hi = (2u << k) < cap ? (2u << k) : cap;  // toks[0] is never the stop
  while (lo < hi) {
    const std::uint32_t mid = lo + (hi - lo) / 2;
    if (toks[mid] == kLz4JumpStop) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

// The chain on the host, by `threads` emulated threads taking the steps the device's block
// takes between its barriers (tests, fuzzing, and the host's team when it is given a jump table).
// Same contract as lz4_table_chain with writer = true; jmp holds `end` entries.
inline std::uint32_t lz4_table_chain_jump_host(const std::uint16_t* tbl, std::uint16_t* jmp, std::uint32_t* r,
                                               std::uint32_t end, std::uint16_t* toks, std::uint32_t cap,
                                               std::uint32_t threads) {
  const std::uint32_t r0 = *r;
  if (!lz4_jump_starts(tbl, r0)) return 0;
  for (std::uint32_t t = 0; t < threads; ++t) lz4_jump_init(tbl, jmp, r0, end, t, threads);
  toks[0] = static_cast<std::uint16_t>(r0);
  std::uint32_t k = 0;
  for (;; ++k) {
    for (std::uint32_t t = 0; t < threads; ++t) lz4_jump_list(jmp, toks, k, cap, t, threads);
    if (!lz4_jump_more(toks, k, cap)) break;
    std::uint16_t v[kLz4JumpPerThread];
    std::vector<std::uint16_t> held(static_cast<std::size_t>(threads) * kLz4JumpPerThread);
    for (std::uint32_t c = 0; lz4_jump_chunk_first(r0, c, threads) < end; ++c) {
      const std::uint32_t first = lz4_jump_chunk_first(r0, c, threads);
      for (std::uint32_t t = 0; t < threads; ++t) {
        lz4_jump_double_read(jmp, first, end, t, threads, v);
        for (std::uint32_t u = 0; u < kLz4JumpPerThread; ++u) held[t * kLz4JumpPerThread + u] = v[u];
      }
      for (std::uint32_t t = 0; t < threads; ++t)
        lz4_jump_double_write(jmp, first, end, t, threads, held.data() + t * kLz4JumpPerThread);
    }
  }
  const std::uint32_t n = lz4_jump_count(toks, k, cap);
  *r = tbl[toks[n - 1]];
  return n;
}

}  // namespace cubestream::codec::logic
