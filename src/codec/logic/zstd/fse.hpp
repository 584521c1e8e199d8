// Finite State Entropy tables (RFC 8878 section 4.1): reading a table description
// (normalised counts) and building the decoding table from it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "codec/logic/zstd/common.hpp"

namespace cubestream::codec::logic::zstd {

// One state of an FSE decoding table: the symbol it emits and how to reach the next state,
// next = base + (nbits bits read from the stream).
// 4-byte aligned, so that the GPU reads an entry with one load (the sequence pass looks up
// three per sequence, each in its dependent chain).
struct alignas(4) FseEntry {
  u16 base;
  u8 nbits;
  u8 symbol;
};

// Largest symbol the normalised-count arrays hold (Huffman weights use up to 255).
inline constexpr u32 kFseMaxSymbols = 256;

// Reads an FSE table description (section 4.1.1) from src[0, n): the accuracy log (4 bits +
// 5, at most `max_log`) then one probability per symbol, each written with just enough bits
// for the probability mass still to be assigned; a probability of 0 is followed by 2-bit
// repeat flags for further zeros, and -1 means "less than 1" (one cell, full reset). The
// probabilities must add up to exactly 2^log. On success `norm[0..*symbol_count)` holds them
// and `*used` the bytes the description took (it ends on a byte boundary).
CS_HD inline DecodeStatus read_fse_description(const u8* src, std::size_t n, u32 max_symbol, u32 max_log,
                                               short* norm, u32* symbol_count, u32* log, std::size_t* used) {
  CS_ZSTD_REQUIRE(n > 0, kCorrupt);
  ForwardBits in{src, n, 0};
  const u32 al = in.read(4) + 5;
  CS_ZSTD_REQUIRE(al <= max_log, kCorrupt);
  int remaining = (1 << al) + 1;  // probability mass left, plus one
  int threshold = 1 << al;
  u32 nbits = al + 1;
  u32 sym = 0;
  while (remaining > 1) {
    CS_ZSTD_REQUIRE(sym <= max_symbol, kCorrupt);
    CS_ZSTD_REQUIRE(in.bitpos <= u64(n) * 8, kCorrupt);  // ran off the end: stop early
    // Values below `max` fit in nbits-1 bits; the others need nbits, folded around `max`.
    const int max = (2 * threshold - 1) - remaining;
    const u32 low = in.peek(nbits - 1);
    int value;
    if (static_cast<int>(low) < max) {
      value = static_cast<int>(low);
      in.skip(nbits - 1);
    } else {
      value = static_cast<int>(in.peek(nbits));
      if (value >= threshold) value -= max;
      in.skip(nbits);
    }
    const int proba = value - 1;
    remaining -= proba < 0 ? -proba : proba;
    CS_ZSTD_REQUIRE(remaining >= 1, kCorrupt);
    norm[sym++] = static_cast<short>(proba);
    if (proba == 0) {
      // 2-bit repeat flags: each adds 0-3 more zero probabilities; 3 means another follows.
      u32 rep;
      do {
        CS_ZSTD_REQUIRE(in.bitpos <= u64(n) * 8, kCorrupt);
        rep = in.read(2);
        CS_ZSTD_REQUIRE(sym + rep <= max_symbol + 1, kCorrupt);
        for (u32 i = 0; i < rep; ++i) norm[sym++] = 0;
      } while (rep == 3);
    }
    while (remaining < threshold) {
      --nbits;
      threshold >>= 1;
    }
  }
  CS_ZSTD_REQUIRE(remaining == 1, kCorrupt);
  CS_ZSTD_REQUIRE(in.bytes_used() <= n, kCorrupt);
  *symbol_count = sym;
  *log = al;
  *used = static_cast<std::size_t>(in.bytes_used());
  return DecodeStatus::kOk;
}

// Builds the decoding table of 2^log states from normalised counts (section 4.1.1,
// "FSE Decoding: Building the decoding table"). "Less than 1" symbols take the last cells,
// one each; the others are spread with the step (size/2 + size/8 + 3), skipping those last
// cells. Then, in state order, the k-th state of a symbol with probability p gets
// nbits = log - highbit(p + k) and base = ((p + k) << nbits) - size, so the states of one
// symbol partition [0, size). `next` is scratch for kFseMaxSymbols counters.
CS_HD inline DecodeStatus build_fse_table(const short* norm, u32 symbol_count, u32 log, FseEntry* table,
                                          u16* next) {
  const u32 size = 1u << log;
  int high = static_cast<int>(size) - 1;  // the last cell not taken by a "less than 1" symbol
  for (u32 s = 0; s < symbol_count; ++s) {
    if (norm[s] == -1) {
      CS_ZSTD_REQUIRE(high >= 0, kCorrupt);
      table[high--].symbol = static_cast<u8>(s);
      next[s] = 1;
    } else {
      next[s] = static_cast<u16>(norm[s]);
    }
  }
  const u32 step = (size >> 1) + (size >> 3) + 3;
  const u32 mask = size - 1;
  u32 position = 0;
  for (u32 s = 0; s < symbol_count; ++s) {
    for (int i = 0; i < norm[s]; ++i) {
      table[position].symbol = static_cast<u8>(s);
      do {
        position = (position + step) & mask;
      } while (static_cast<int>(position) > high);
    }
  }
  CS_ZSTD_REQUIRE(position == 0, kCorrupt);
  for (u32 st = 0; st < size; ++st) {
    const u32 s = table[st].symbol;
    const u32 k = next[s]++;
    const u32 nb = log - highbit32(k);
    table[st].nbits = static_cast<u8>(nb);
    table[st].base = static_cast<u16>((k << nb) - size);
  }
  return DecodeStatus::kOk;
}

// A one-state table that always yields `symbol` and reads no bits: RLE mode (section
// 3.1.1.3.2.1) of the sequence codes.
CS_HD inline void build_rle_table(u8 symbol, FseEntry* table) {
  table[0].symbol = symbol;
  table[0].nbits = 0;
  table[0].base = 0;
}

// Predefined distributions (section 3.1.1.3.2.2), used in Predefined_Mode.
inline constexpr u32 kLlDefaultLog = 6;
inline constexpr u32 kMlDefaultLog = 6;
inline constexpr u32 kOfDefaultLog = 5;
CS_HD inline const short* ll_default_norm() {
  static constexpr short k[36] = {4, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 2, 2,
                                  2, 2, 2, 2, 2, 2, 2, 3, 2, 1, 1, 1, 1, 1, -1, -1, -1, -1};
  return k;
}
CS_HD inline const short* ml_default_norm() {
  static constexpr short k[53] = {1, 4, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                  1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                  1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, -1};
  return k;
}
CS_HD inline const short* of_default_norm() {
  static constexpr short k[29] = {1, 1, 1, 1, 1, 1, 2, 2, 2, 1, 1, 1, 1, 1, 1,
                                  1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1};
  return k;
}

}  // namespace cubestream::codec::logic::zstd
