// Huffman-coded literals (RFC 8878 section 4.2): the tree description (weights, either
// FSE-compressed or as direct 4-bit values), the decoding table, and stream decoding.
#pragma once

#include <cstddef>
#include <cstdint>

#include "codec/logic/zstd/common.hpp"
#include "codec/logic/zstd/fse.hpp"
#include "codec/logic/zstd/workspace.hpp"

namespace cubestream::codec::logic::zstd {

// Decodes the FSE-compressed weights (section 4.2.1.2): a table description, then a backward
// stream read by two interleaved states. Decoding alternates state 1, state 2, ...; when an
// update needs more bits than remain (the missing bits read as zero), the other state's
// symbol is the last weight. At most 255 weights are written (the last symbol's is implied).
// Serial: one member of a team runs it (see decode_team_weights).
CS_HD inline DecodeStatus decode_fse_weights(const u8* src, std::size_t n, ZstdTables* ws, u32* num_weights) {
  u32 symbols = 0, log = 0;
  std::size_t used = 0;
  CS_ZSTD_TRY(read_fse_description(src, n, 255, kHufWeightMaxLog, ws->norm, &symbols, &log, &used));
  CS_ZSTD_TRY(build_fse_table(ws->norm, symbols, log, ws->weights_fse, ws->next));
  CS_ZSTD_REQUIRE(used < n, kCorrupt);
  BackwardBits bits;
  CS_ZSTD_TRY(bits.init(src + used, n - used));
  const FseEntry* t = ws->weights_fse;
  u32 s1 = static_cast<u32>(bits.read(log));
  u32 s2 = static_cast<u32>(bits.read(log));
  constexpr u32 kCap = 255;
  u32 count = 0;
  for (;;) {
    CS_ZSTD_REQUIRE(count + 2 <= kCap, kCorrupt);
    ws->weights[count++] = t[s1].symbol;
    s1 = t[s1].base + static_cast<u32>(bits.read(t[s1].nbits));
    if (bits.overflow) {
      ws->weights[count++] = t[s2].symbol;
      break;
    }
    CS_ZSTD_REQUIRE(count + 2 <= kCap, kCorrupt);
    ws->weights[count++] = t[s2].symbol;
    s2 = t[s2].base + static_cast<u32>(bits.read(t[s2].nbits));
    if (bits.overflow) {
      ws->weights[count++] = t[s1].symbol;
      break;
    }
  }
  *num_weights = count;
  return DecodeStatus::kOk;
}

// The weights of a Huffman tree description with header byte `header` < 128 (FSE-compressed)
// or >= 128 (4-bit values, high nibble first) into ws->weights. Member 0 of the team decodes
// them alone (the work is one serial stream) and the team learns the status and the count
// from it; the other members only wait. Every member writing the same shared bytes would be
// a data race, however equal the values.
template <class Team>
CS_HD DecodeStatus decode_team_weights(const Team& team, const u8* src, std::size_t n, u32 header, ZstdTables* ws,
                                       u32* num_weights) {
  DecodeStatus st = DecodeStatus::kOk;
  u32 nw = 0;
  if (team.rank() == 0) {
    if (header < 128) {
      st = decode_fse_weights(src, n, ws, &nw);
    } else {
      nw = header - 127;
      for (u32 i = 0; i < nw; ++i) {
        const u8 b = src[i / 2];
        ws->weights[i] = static_cast<u8>((i & 1) ? (b & 15) : (b >> 4));
      }
    }
  }
  team.sync();  // the weights are in shared memory for every member
  st = static_cast<DecodeStatus>(team.shfl(static_cast<u32>(st), 0));
  *num_weights = team.shfl(nw, 0);
  return st;
}

// Reads a Huffman tree description (section 4.2.1) from src[0, n) and builds ws->huf.
// Header byte < 128: that many bytes of FSE-compressed weights follow; >= 128: (byte - 127)
// weights follow as 4-bit values, high nibble first. Weights give each symbol's code length
// nbits = log + 1 - weight (weight 0: symbol absent). The last symbol's weight is implied:
// the one that makes the sum of 2^(weight-1) a power of two, 2^log.
template <class Team>
CS_HD DecodeStatus read_huffman_tree(const Team& team, const u8* src, std::size_t n, ZstdTables* ws,
                                     std::size_t* used) {
  CS_ZSTD_REQUIRE(n >= 1, kCorrupt);
  const u32 header = src[0];
  u32 nw = 0;
  if (header < 128) {
    CS_ZSTD_REQUIRE(header >= 1 && 1 + std::size_t(header) <= n, kCorrupt);
    CS_ZSTD_TRY(decode_team_weights(team, src + 1, header, header, ws, &nw));
    *used = 1 + std::size_t(header);
  } else {
    const std::size_t bytes = (header - 127 + 1) / 2;
    CS_ZSTD_REQUIRE(1 + bytes <= n, kCorrupt);
    CS_ZSTD_TRY(decode_team_weights(team, src + 1, bytes, header, ws, &nw));
    *used = 1 + bytes;
  }
  // Weight statistics (every member computes them; they are small and local).
  u32 rank_count[kHufMaxLog + 2] = {};
  u32 total = 0;
  for (u32 i = 0; i < nw; ++i) {
    const u32 w = ws->weights[i];
    CS_ZSTD_REQUIRE(w <= kHufMaxLog, kCorrupt);
    ++rank_count[w];
    total += w ? (1u << (w - 1)) : 0u;
  }
  CS_ZSTD_REQUIRE(total != 0, kCorrupt);
  const u32 log = highbit32(total) + 1;
  CS_ZSTD_REQUIRE(log <= kHufMaxLog, kCorrupt);
  const u32 rest = (1u << log) - total;
  CS_ZSTD_REQUIRE((rest & (rest - 1)) == 0, kCorrupt);  // must be a power of two
  const u32 last_weight = highbit32(rest) + 1;
  ++rank_count[last_weight];
  // A complete prefix code has an even number (at least two) of the longest codes.
  CS_ZSTD_REQUIRE(rank_count[1] >= 2 && (rank_count[1] & 1) == 0, kCorrupt);
  const u32 num_symbols = nw + 1;
  // Canonical layout (section 4.2.1.3 example): in table order come the symbols of weight 1,
  // then weight 2, ...; within one weight in symbol order; a weight-w symbol fills 2^(w-1)
  // consecutive entries.
  u32 start[kHufMaxLog + 2];
  u32 acc = 0;
  for (u32 w = 1; w <= kHufMaxLog; ++w) {
    start[w] = acc;
    acc += rank_count[w] << (w - 1);
  }
  for (u32 s = 0; s < num_symbols; ++s) {
    const u32 w = s < nw ? ws->weights[s] : last_weight;
    if (w == 0) continue;
    const u32 pos = start[w];
    const u32 len = 1u << (w - 1);
    start[w] += len;
    if (s % team.size() != team.rank()) continue;
    const HufEntry e{static_cast<u8>(s), static_cast<u8>(log + 1 - w)};
    for (u32 k = 0; k < len; ++k) ws->huf[pos + k] = e;
  }
  if (team.rank() == 0) {
    ws->huf_log = log;
    ws->huf_valid = 1;
  }
  team.sync();
  return DecodeStatus::kOk;
}

// Decodes one Huffman stream (section 4.2.2) of `count` symbols into out: each step looks
// up the next huf_log bits, emits the symbol and consumes its code length. The stream must
// end exactly on its first bit.
CS_HD inline DecodeStatus decode_huffman_stream(const ZstdTables* ws, const u8* src, std::size_t n, u8* out,
                                                std::size_t count) {
  BackwardBits bits;
  CS_ZSTD_TRY(bits.init(src, n));
  const u32 log = ws->huf_log;
  const HufEntry* table = ws->huf;
  std::size_t i = 0;
  const u64 mask = (u64(1) << log) - 1;
  // Four symbols go out as one 4-byte store where out is 4-byte aligned (the streams of a
  // full block start at multiples of 32 KiB).
  const bool word_out = (reinterpret_cast<std::uintptr_t>(out) & 3) == 0;
  // Four symbols from `word`, whose bits below `avail` are the stream's next ones (avail -
  // log >= 0 for all four: they take at most 4 * kHufMaxLog = 44 bits): stores them at out + i,
  // moves i on and returns the bits of `word` still unread.
  const auto four_from = [&](u64 word, u32 avail) {
    u32 four = 0;
    for (int k = 0; k < 4; ++k) {
      const HufEntry e = table[(word >> (avail - log)) & mask];
      four |= u32(e.symbol) << (8 * k);
      avail -= e.nbits;
    }
    if (word_out) {
#if CS_DEVICE_PASS
      *reinterpret_cast<u32*>(out + i) = four;  // little-endian: symbol k at byte k
#else
      for (int k = 0; k < 4; ++k) out[i + k] = static_cast<u8>(four >> (8 * k));
#endif
    } else {
      for (int k = 0; k < 4; ++k) out[i + k] = static_cast<u8>(four >> (8 * k));
    }
    i += 4;
    return avail;
  };
  // Windowed path, for most of a long stream: four symbols from the 64 bits below the read
  // position, cut out of a BackwardWordWindow whose next words are loaded one step ahead, so
  // that no load waits in the dependent chain (an ncu profile of the entropy kernel had a
  // quarter of its stall samples on the word the loop below loads at the position it has just
  // computed). While abit > 5 * 64 the window's words (index j - 3 >= 1 after a step of at most
  // 44 bits) lie wholly inside src[0, n), none before src.
  if (bits.pos >= 6 * 64 && count - i >= 4) {
    BackwardWordWindow w;
    u32 abit = w.init(src, n, static_cast<u32>(bits.pos));
    const u32 lead = abit - static_cast<u32>(bits.pos);
    while (abit > 5 * 64 && count - i >= 4) {
      abit -= 64 - four_from(w.below(abit), 64);
      w.advance(abit);
      w.refill();
    }
    bits.pos = abit - lead;
  }
  // Fast path, while at least 64 bits are unread: the 8 bytes ending with the byte that holds
  // the next unread bit hold the next 57-64 bits, enough for four codes of at most
  // kHufMaxLog = 11 bits (44), so four symbols need one load and no bounds or overflow checks.
  // The same bits as the general loop below (bits [pos - log, pos), then pos -= nbits).
  {
    u64 pos = bits.pos;
    while (pos >= 64 && count - i >= 4) {
      const u64 b = ((pos + 7) >> 3) - 8;  // 8b + 57 <= pos <= 8b + 64, and b + 8 <= n
      const u64 w = load_le64_in(src + b, src, src + n);
      pos = 8 * b + four_from(w, static_cast<u32>(pos - 8 * b));
    }
    bits.pos = pos;
  }
  for (; i < count; ++i) {
    const HufEntry e = table[bits.peek(log)];
    out[i] = e.symbol;
    bits.consume(e.nbits);
    if (bits.overflow) return DecodeStatus::kCorrupt;
  }
  CS_ZSTD_REQUIRE(bits.finished_exactly(), kCorrupt);
  return DecodeStatus::kOk;
}

}  // namespace cubestream::codec::logic::zstd
