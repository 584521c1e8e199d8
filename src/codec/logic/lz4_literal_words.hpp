// An LZ4 literal copied in aligned 4-byte words, a destination word a lane, written once for the
// host and the device.
//
// Why. The segment workers copy each literal with a group of kLitLanes lanes (8 by default,
// cuda/decode/lz4_segments_config.cuh), a byte a lane per load and per store: a literal of the
// era5-like chunks (~52 bytes) is ~7 byte loads and 7 byte stores a lane, and the literals were a
// third of the workers' cycles on the H200 (session 36's clocks), beside the chain's matches on
// the same SMs. In words the same literal is ~2 destination words a lane: at most 2 word loads
// and one word store each.
//
// The copy. Positions are relative to 4-byte aligned bases (the caller adds the pointers'
// misalignment: a position's alignment here is its address's). For a literal of n bytes from
// source position src to destination position dst, with t = dst & 3, destination word j
// (0 <= j < lz4_literal_word_count) holds destination positions (dst & ~3) + 4 j + [0, 4), and
// of them the literal's bytes [lo, hi) with lo = max(4 j - t, 0) and hi = min(4 j + 4 - t, n).
//  - the loads: the aligned source words that hold source bytes [src + lo, src + hi), one or
//    two, and no other (every word loaded holds a byte of the literal, so it lies within 3 bytes
//    of the literal's source range). At the end of the caller's buffer the last word could pass
//    it: the caller copies in words only the literal's first lz4_literal_words_head bytes, whose
//    words all end inside it, and the rest (at most 3 bytes) by bytes. Before the literal the
//    first word starts at most 3 bytes early: the caller's buffer must hold those (on the device
//    the numcodecs header does);
//  - the word: the 8 bytes of the two words shifted so that source byte src + lo lands on
//    destination byte (dst + lo) & 3;
//  - the stores: the whole word where it is all literal (every word but the first and the last),
//    else its literal bytes one by one.
#pragma once

#include <cstdint>

#include "core/host_device.hpp"

namespace cubestream::codec::logic {

// Destination words of a literal of n bytes at destination position dst (0 for n == 0).
CS_HD inline std::uint32_t lz4_literal_word_count(std::uint32_t dst, std::uint32_t n) {
  return n == 0 ? 0u : ((dst & 3u) + n + 3) >> 2;
}

// How many of a literal's n bytes from source position src a word copy takes so that every
// source word it loads ends at or before `end` (the buffer's end): all n where src + n is at or
// below the last aligned position <= end, else up to that position (the rest, at most 3 bytes,
// go by bytes). The words of a copy of m >= 1 bytes end at (src + m + 3) & ~3.
CS_HD inline std::uint32_t lz4_literal_words_head(std::uint32_t src, std::uint32_t n, std::uint32_t end) {
  const std::uint32_t lim = end & ~3u;
  return src + n <= lim ? n : lim > src ? lim - src : 0u;
}

// The loaded half of destination word j: its value (the literal's bytes at their destination
// byte positions, the others anything) and which of its bytes are the literal's.
struct Lz4LiteralWord {
  std::uint32_t value;
  std::uint32_t first;  // first literal byte of the word (0..3)
  std::uint32_t count;  // literal bytes from there (1..4)
};

// Loads destination word j of the literal (src, dst, n): load(w) returns the aligned source word
// of positions [4 w, 4 w + 4) (little-endian).
CS_HD_TEMPLATE
template <class Load>
CS_HD inline Lz4LiteralWord lz4_literal_word_load(std::uint32_t src, std::uint32_t dst, std::uint32_t n,
                                                   std::uint32_t j, Load&& load) {
  const std::uint32_t t = dst & 3u;
  const std::uint32_t lo = 4 * j > t ? 4 * j - t : 0u;
  const std::uint32_t hi = 4 * j + 4 - t < n ? 4 * j + 4 - t : n;
  const std::uint32_t a = src + lo, w0 = a >> 2, w1 = (src + hi - 1) >> 2;
  const std::uint32_t x0 = load(w0), x1 = w1 != w0 ? load(w1) : 0u;
  const std::uint64_t x = (std::uint64_t{x1} << 32) | x0;
  // source byte a sits at byte a & 3 of x; it goes to destination byte k0 = (dst + lo) & 3
  const std::uint32_t s0 = a & 3u, k0 = (dst + lo) & 3u;
  const std::uint64_t y = s0 >= k0 ? x >> (8 * (s0 - k0)) : x << (8 * (k0 - s0));
  return Lz4LiteralWord{static_cast<std::uint32_t>(y), k0, hi - lo};
}

// Stores destination word j from its loaded half: st.u32(p, x) at a multiple of 4 where the word
// is all literal, else st.u8(p, x) for each literal byte. Straight-line stores under conditions.
CS_HD_TEMPLATE
template <class Store>
CS_HD inline void lz4_literal_word_store(std::uint32_t dst, std::uint32_t j, const Lz4LiteralWord& w, Store&& st) {
  const std::uint32_t at = (dst & ~3u) + 4 * j;
  if (w.count == 4) {
    st.u32(at, w.value);
  } else {
#pragma unroll
    for (std::uint32_t b = 0; b < 4; ++b)
      if (b >= w.first && b < w.first + w.count) st.u8(at + b, static_cast<std::uint8_t>(w.value >> (8 * b)));
  }
}

}  // namespace cubestream::codec::logic
