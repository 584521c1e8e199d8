// A short LZ4 match copied by one lane in aligned 4-byte words instead of byte by byte, written
// once for the host and the device.
//
// Why. The segment workers copy a group of up to 32 short matches at once, a match a lane
// (lz4_segments.hpp, lz4_group_size). Byte by byte that is up to 16 loads and 16 stores a lane,
// and since the 32 lanes' matches lie far apart each warp-wide load or store touches up to 32
// different cache lines: ~1 000 cycles of the SM's load/store unit a group before any latency,
// and a segment's ~10 groups are the link of its block's chain that every later segment waits
// for (docs/gpu_decoders.md, session 36: the workers wait on that chain for over half their
// cycles). In words a 16-byte match is at most 5 loads and 6 stores.
//
// Measured (H200, docs/gpu_decoders.md): with wide stores (below), the era5-like batch 7-9 %
// and the mixed one 9-11 % faster, the synth fields 15-16 % slower, whose chain links grew 14 %
// (session 36, an earlier form of the wide stores, and session 37's call 1, this one). In
// session 37, with the own pass, words only for groups without an overlapping
// match (-DCS_LZ4_MATCH_WORDS=2) and the destination stored a byte at a time from the words
// (lz4_match_words_store_bytes, -DCS_LZ4_MATCH_WORD_STORES=0), all three 7 % faster than byte
// copies: that is the device's default (cuda/decode/lz4_segments_config.cuh). The host run of
// the segments (lz4_segments_host.hpp) always takes the word loads and both store forms, which
// keeps them under the decode tests and the fuzz targets; the unit test holds both to the byte
// rule.
//
// The copy. For a match of len <= kLz4LaneMatchMax bytes at output position dst, reading the
// range [a, a + reads) with a = dst - off and reads = min(off, len) (lz4_match_reads):
//  - the source words: the aligned words that hold the read range, at most 5 (3 + 16 bytes), all
//    loaded before anything else, so a lane's loads are one round trip;
//  - the destination words: the aligned words d0 = dst & ~3, d0 + 4, ... that hold
//    [dst, dst + len), at most 5. Without overlap (off >= len) word j is a funnel shift of two
//    source words; with overlap (off < len, the match repeating its first `off` bytes) each byte
//    is picked from the source words, position i taking read byte i mod off;
//  - the stores write exactly [dst, dst + len): whole words, and at the edges a byte or a
//    2-byte half as the alignment allows.
// The loads also read the bytes around the read range that share its words: bytes that other
// lanes may be writing at that moment (the group's or the own pass's other matches, and before
// a segment's first output byte the worker of the segment before). Their values are discarded;
// every byte the copy keeps lies in the read range, which the group rule (or the own pass's,
// lz4_reads_own_literals) keeps final. Positions are relative to an
// output that starts 4-byte aligned (the caller checks). Every word read lies within the output:
// the read range ends at or before dst, so its last word ends at most 3 bytes past dst - 1, and
// dst + 2 < dst + len <= the output's size (a match is at least 4 bytes).
#pragma once

#include <cstdint>

#include "codec/logic/lz4_segments.hpp"
#include "core/host_device.hpp"

namespace cubestream::codec::logic {

// The most source or destination words of a match copied in words: 3 bytes of misalignment and
// 16 bytes.
inline constexpr std::uint32_t kLz4MatchWordsMax = (3 + kLz4LaneMatchMax + 3) / 4;

// Whether match m can be copied in words: any short match (the longer ones go to the whole warp).
CS_HD inline bool lz4_match_words_fit(const Lz4MatchRecord& m) { return m.len <= kLz4LaneMatchMax; }

// Bytes [sh, sh + 4) of the 8 bytes lo, hi (little-endian; sh in 0..3): a funnel shift.
CS_HD inline std::uint32_t lz4_funnel_bytes(std::uint32_t lo, std::uint32_t hi, std::uint32_t sh) {
  return static_cast<std::uint32_t>(((std::uint64_t{hi} << 32) | lo) >> (8 * sh));
}

// Byte q (0..4 x 4 - 1) of the words s, without indexing s by a variable (which would put the
// array in local memory on the device).
CS_HD inline std::uint32_t lz4_word_byte(const std::uint32_t (&s)[kLz4MatchWordsMax], std::uint32_t q) {
  const std::uint32_t k = q >> 2;
  std::uint32_t w = s[0];
#pragma unroll
  for (std::uint32_t i = 1; i < kLz4MatchWordsMax; ++i) w = k == i ? s[i] : w;
  return (w >> (8 * (q & 3u))) & 0xFFu;
}

// The destination words of short match m (lz4_match_words_fit), word j holding output bytes
// [(dst & ~3) + 4 j, + 4) as they will be once m is copied (the bytes outside [dst, dst + len):
// anything). load(w) returns the aligned word of output bytes [4 w, 4 w + 4) (little-endian).
// Returns the number of source words loaded, 1..5.
CS_HD_TEMPLATE
template <class Load>
CS_HD inline std::uint32_t lz4_match_words_load(const Lz4MatchRecord& m, Load&& load,
                                                std::uint32_t (&v)[kLz4MatchWordsMax]) {
  const std::uint32_t a = m.dst - m.off, reads = m.off < m.len ? m.off : m.len;
  const std::uint32_t ns = ((a & 3u) + reads + 3) >> 2;
  std::uint32_t s[kLz4MatchWordsMax];
#pragma unroll
  for (std::uint32_t k = 0; k < kLz4MatchWordsMax; ++k) s[k] = k < ns ? load((a >> 2) + k) : 0u;
  const std::uint32_t t = m.dst & 3u;
  if (m.off >= m.len) {
    // destination word j starts at read byte 4 j - t, which is byte (a & 3) + 4 j - t of the
    // source words: byte e & 3 of word j + (e >> 2) - 1 with e = (a & 3) + 4 - t in 1..7 (word -1:
    // bytes before the read range, taken as 0). Selects, not branches: the lanes stay together.
    const std::uint32_t e = (a & 3u) + 4 - t, sh = e & 3u;
    const bool up = e >= 4;
    // (no unroll pragma: nvcc unrolls this five-step loop by itself, the same ptxas figures, and
    // clang, in the fuzz build, warned that it could not honour one)
    for (std::uint32_t j = 0; j < kLz4MatchWordsMax; ++j) {
      const std::uint32_t below = j == 0 ? 0u : s[j - 1], above = j + 1 < kLz4MatchWordsMax ? s[j + 1] : 0u;
      v[j] = lz4_funnel_bytes(up ? s[j] : below, up ? above : s[j], sh);
    }
    return ns;
  }
  // overlap: destination byte i (i = 4 j + b - t in [0, len)) is read byte i mod off
  std::uint32_t r = 0;
#pragma unroll
  for (std::uint32_t j = 0; j < kLz4MatchWordsMax; ++j) {
    std::uint32_t x = 0;
#pragma unroll
    for (std::uint32_t b = 0; b < 4; ++b) {
      const std::uint32_t p = 4 * j + b;  // byte of the destination words
      if (p >= t && p - t < m.len) {
        x |= lz4_word_byte(s, (a & 3u) + r) << (8 * b);
        r = r + 1 == m.off ? 0 : r + 1;
      }
    }
    v[j] = x;
  }
  return ns;
}

// Stores bytes [dst, dst + len) of match m from its destination words v (lz4_match_words_load):
// st.u32(p, x) at a multiple of 4, st.u16(p, x) at an even p, st.u8(p, x) anywhere.
CS_HD_TEMPLATE
template <class Store>
CS_HD inline void lz4_match_words_store(const Lz4MatchRecord& m, const std::uint32_t (&v)[kLz4MatchWordsMax],
                                        Store&& st) {
  const std::uint32_t d0 = m.dst & ~3u, end = m.dst + m.len;
  // straight-line stores under conditions (no loop that runs a different count on each lane)
#pragma unroll
  for (std::uint32_t j = 0; j < kLz4MatchWordsMax; ++j) {
    const std::uint32_t at = d0 + 4 * j;
    if (at < end) {
      const std::uint32_t lo = m.dst > at ? m.dst : at, hi = end < at + 4 ? end : at + 4;
      if (lo == at && hi == at + 4) {
        st.u32(at, v[j]);
      } else {
        // an edge word, 1-3 bytes: a byte to reach an even position, a half, a last byte
        std::uint32_t x = v[j] >> (8 * (lo - at)), p = lo;
        if ((p & 1u) != 0) {
          st.u8(p, static_cast<std::uint8_t>(x));
          x >>= 8;
          ++p;
        }
        if (p + 2 <= hi) {
          st.u16(p, static_cast<std::uint16_t>(x));
          x >>= 16;
          p += 2;
        }
        if (p < hi) st.u8(p, static_cast<std::uint8_t>(x));
      }
    }
  }
}

// The same bytes as lz4_match_words_store, every destination byte stored by itself: 4 x 5 byte
// stores under conditions, the same instructions on every lane whatever its alignment (where
// the wide form's edge words take a different path per alignment, which a warp of lanes at
// mixed alignments runs one after another). The device's default (-DCS_LZ4_MATCH_WORD_STORES=0)
// since session 37: against the wide form, 14 % less kernel time on the synth fields and 4 %
// more on the mixed batch (both in two calls' runs); on the era5-like batch level with one
// call's wide-form runs and 5 % less than the other's.
CS_HD_TEMPLATE
template <class Store>
CS_HD inline void lz4_match_words_store_bytes(const Lz4MatchRecord& m, const std::uint32_t (&v)[kLz4MatchWordsMax],
                                              Store&& st) {
  const std::uint32_t d0 = m.dst & ~3u, end = m.dst + m.len;
#pragma unroll
  for (std::uint32_t j = 0; j < kLz4MatchWordsMax; ++j)
#pragma unroll
    for (std::uint32_t b = 0; b < 4; ++b) {
      const std::uint32_t p = d0 + 4 * j + b;
      if (p >= m.dst && p < end) st.u8(p, static_cast<std::uint8_t>(v[j] >> (8 * b)));
    }
}

}  // namespace cubestream::codec::logic
