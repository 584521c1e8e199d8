// The sequences section of a compressed block (RFC 8878 section 3.1.1.3.2) and sequence
// execution (section 3.1.2): decoded one sequence at a time and executed at once, so no
// sequence buffer is needed.
#pragma once

#include <cstddef>
#include <cstdint>

#include "codec/logic/zstd/common.hpp"
#include "codec/logic/zstd/fse.hpp"
#include "codec/logic/zstd/literals.hpp"
#include "codec/logic/zstd/workspace.hpp"

namespace cubestream::codec::logic::zstd {

// Section 3.1.1.3.2.1.1: literal-length codes 0-15 are the length itself; above, a baseline
// plus extra bits.
CS_HD inline u32 ll_base(u32 code) {
  static constexpr u32 k[36] = {0,  1,  2,  3,  4,  5,  6,  7,   8,   9,   10,  11,   12,   13,   14,   15,   16,    18,
                         20, 22, 24, 28, 32, 40, 48, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536};
  return k[code];
}
CS_HD inline u32 ll_bits(u32 code) {
  static constexpr u8 k[36] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1,
                        1, 1, 2, 2, 3, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  return k[code];
}
// Section 3.1.1.3.2.1.1: match-length codes 0-31 are length - 3; above, baseline + bits.
CS_HD inline u32 ml_base(u32 code) {
  static constexpr u32 k[53] = {3,   4,   5,   6,    7,    8,    9,    10,    11,    12,    13,    14,   15,  16,
                         17,  18,  19,  20,   21,   22,   23,   24,    25,    26,    27,    28,   29,  30,
                         31,  32,  33,  34,   35,   37,   39,   41,    43,    47,    51,    59,   67,  83,
                         99,  131, 259, 515,  1027, 2051, 4099, 8195,  16387, 32771, 65539};
  return k[code];
}
CS_HD inline u32 ml_bits(u32 code) {
  static constexpr u8 k[53] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                        0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  return k[code];
}

// The baseline and extra-bit count of a code as one word, base | bits << 24 (baselines are
// < 2^17): literal-length codes at 0-35, match-length codes at kMlCodeWordAt + 0-52. Pass 2b's
// window loop looks them up in a copy in shared memory (one load per code): computed from the
// code instead, as selects, the GPU compiler made branches of them, and with each lane of a
// warp on another block's stream those branches diverged (v3.7's SASS: ~45 instructions per
// sequence for the two codes).
inline constexpr u32 kMlCodeWordAt = 36;
inline constexpr u32 kSeqCodeWords = 36 + 53;
CS_HD inline u32 seq_code_word(u32 i) {  // i < kSeqCodeWords
  return i < kMlCodeWordAt ? ll_base(i) | ll_bits(i) << 24
                           : ml_base(i - kMlCodeWordAt) | ml_bits(i - kMlCodeWordAt) << 24;
}

// Builds (or, in Repeat_Mode, keeps) the decoding table of one sequence code (section
// 3.1.1.3.2.1): Predefined_Mode (0) the default distribution, RLE_Mode (1) one symbol
// byte, FSE_Compressed_Mode (2) a table description, Repeat_Mode (3) the table of the
// previous block of this frame. *used is the bytes of src it took.
template <class Team>
CS_HD DecodeStatus build_sequence_table(const Team& team, u32 mode, const u8* src, std::size_t n, u32 max_symbol,
                                        u32 max_log, const short* default_norm, u32 default_count,
                                        u32 default_log, ZstdTables* ws, FseEntry* table, u32* log, u32* valid,
                                        std::size_t* used) {
  *used = 0;
  if (mode == 3) {
    CS_ZSTD_REQUIRE(*valid != 0, kCorrupt);
    return DecodeStatus::kOk;
  }
  const short* norm = default_norm;
  u32 count = default_count, al = default_log;
  if (mode == 1) {
    CS_ZSTD_REQUIRE(n >= 1, kCorrupt);
    CS_ZSTD_REQUIRE(src[0] <= max_symbol, kCorrupt);
    team.sync();  // no member may still read the old table
    if (team.rank() == 0) {
      build_rle_table(src[0], table);
      *log = 0;
      *valid = 1;
    }
    team.sync();
    *used = 1;
    return DecodeStatus::kOk;
  }
  // Member 0 reads the description and builds the table (shared memory on the GPU: one
  // writer); the team learns the outcome from it.
  team.sync();  // no member may still read the old table
  DecodeStatus st = DecodeStatus::kOk;
  std::size_t took = 0;
  if (team.rank() == 0) {
    if (mode == 2) {
      st = read_fse_description(src, n, max_symbol, max_log, ws->norm, &count, &al, &took);
      norm = ws->norm;
    }
    if (st == DecodeStatus::kOk) st = build_fse_table(norm, count, al, table, ws->next);
    if (st == DecodeStatus::kOk) {
      *log = al;
      *valid = 1;
    }
  }
  team.sync();
  st = static_cast<DecodeStatus>(team.shfl(static_cast<u32>(st), 0));
  *used = static_cast<std::size_t>(team.shfl(static_cast<u64>(took), 0));
  return st;
}

// Which of the three sequence codes a table is for, with its limits and default
// distribution (section 3.1.1.3.2.1 and 3.1.1.3.2.2).
enum class SeqCode : u32 { kLiteralLength = 0, kOffset = 1, kMatchLength = 2 };

// Builds the table of one code in `mode` (0-3) from src[0, n); see build_sequence_table.
template <class Team>
CS_HD DecodeStatus build_code_table(const Team& team, SeqCode code, u32 mode, const u8* src, std::size_t n,
                                    ZstdTables* ws, std::size_t* used) {
  if (code == SeqCode::kLiteralLength) {
    return build_sequence_table(team, mode, src, n, kLlMaxSymbol, kLlMaxLog, ll_default_norm(), 36, kLlDefaultLog, ws,
                                ws->ll, &ws->ll_log, &ws->ll_valid, used);
  }
  if (code == SeqCode::kOffset) {
    return build_sequence_table(team, mode, src, n, kOfMaxSymbol, kOfMaxLog, of_default_norm(), 29, kOfDefaultLog, ws,
                                ws->of, &ws->of_log, &ws->of_valid, used);
  }
  return build_sequence_table(team, mode, src, n, kMlMaxSymbol, kMlMaxLog, ml_default_norm(), 53, kMlDefaultLog, ws,
                              ws->ml, &ws->ml_log, &ws->ml_valid, used);
}

// Section 3.1.1.3.2.1: Number_of_Sequences in 1-3 bytes at the start of the sequences
// section src[0, n); byte0 < 128: byte0; < 255: ((byte0 - 128) << 8) + byte1; 255: byte1 +
// (byte2 << 8) + 0x7F00.
CS_HD inline DecodeStatus read_sequence_count(const u8* src, std::size_t n, u32* nb_seq, std::size_t* used) {
  CS_ZSTD_REQUIRE(n >= 1, kCorrupt);
  u32 v = src[0];
  if (v < 128) {
    *used = 1;
  } else if (v < 255) {
    CS_ZSTD_REQUIRE(n >= 2, kCorrupt);
    v = ((v - 128) << 8) + src[1];
    *used = 2;
  } else {
    CS_ZSTD_REQUIRE(n >= 3, kCorrupt);
    v = load_le16(src + 1) + 0x7F00;
    *used = 3;
  }
  *nb_seq = v;
  return DecodeStatus::kOk;
}

// State s's entry of each code in a team's ZstdTables, as built. The readers below call these
// unqualified, so that other table sets (split.hpp's packed SeqTables) bring their own.
CS_HD inline FseEntry ll_entry(const ZstdTables* t, u32 s) { return t->ll[s]; }
CS_HD inline FseEntry ml_entry(const ZstdTables* t, u32 s) { return t->ml[s]; }
CS_HD inline FseEntry of_entry(const ZstdTables* t, u32 s) { return t->of[s]; }

// The backward sequence stream (section 3.1.1.3.2.2) read with the three tables of `ws`
// (a ZstdTables, or the packed SeqTables of split.hpp: anything with ll_entry, ml_entry,
// of_entry and the three logs).
struct SequenceStream {
  BackwardBits bits;
  u32 ll_state, of_state, ml_state;

  // Initial states in the order LL, OF, ML.
  template <class Tables>
  CS_HD DecodeStatus init(const Tables* ws, const u8* src, std::size_t n) {
    CS_ZSTD_TRY(bits.init(src, n));
    ll_state = static_cast<u32>(bits.read(ws->ll_log));
    of_state = static_cast<u32>(bits.read(ws->of_log));
    ml_state = static_cast<u32>(bits.read(ws->ml_log));
    return DecodeStatus::kOk;
  }

  // Decodes the next sequence: literal length, match length and Offset_Value (section
  // 3.1.1.3.2.1.1: offset codes carry `code` extra bits on top of 1 << code). The states
  // advance unless this is the last sequence.
  template <class Tables>
  CS_HD DecodeStatus next(const Tables* ws, bool last, u32* ll, u32* ml, u64* of_value) {
    const FseEntry lle = ll_entry(ws, ll_state), ofe = of_entry(ws, of_state), mle = ml_entry(ws, ml_state);
    // Extra bits in the order offset, match length, literal length.
    const u32 of_code = ofe.symbol;
    *of_value = (u64(1) << of_code) + bits.read(of_code);
    *ml = ml_base(mle.symbol) + static_cast<u32>(bits.read(ml_bits(mle.symbol)));
    *ll = ll_base(lle.symbol) + static_cast<u32>(bits.read(ll_bits(lle.symbol)));
    if (!last) {  // state updates in the order LL, ML, OF; none after the last
      ll_state = lle.base + static_cast<u32>(bits.read(lle.nbits));
      ml_state = mle.base + static_cast<u32>(bits.read(mle.nbits));
      of_state = ofe.base + static_cast<u32>(bits.read(ofe.nbits));
    }
    CS_ZSTD_REQUIRE(!bits.overflow, kCorrupt);
    return DecodeStatus::kOk;
  }

  // A sequence takes at most 31 + 16 + 16 extra bits and 9 + 9 + 8 state bits.
  static constexpr u32 kMaxSequenceBits = 89;
  // next() for a sequence that is not the last, reading through `fb` (which stands in for
  // `bits` until the caller hands its position back), while fb.pos >= 57 + kMaxSequenceBits:
  // then no field can run past the stream's start, so there is nothing to check. The same
  // fields in the same order as next().
  template <class Tables>
  CS_HD void next_fast(const Tables* ws, FastBackwardBits* fb, u32* ll, u32* ml, u64* of_value) {
    const FseEntry lle = ll_entry(ws, ll_state), ofe = of_entry(ws, of_state), mle = ml_entry(ws, ml_state);
    const u32 of_code = ofe.symbol;
    *of_value = (u64(1) << of_code) + fb->read(of_code);
    *ml = ml_base(mle.symbol) + fb->read(ml_bits(mle.symbol));
    *ll = ll_base(lle.symbol) + fb->read(ll_bits(lle.symbol));
    ll_state = lle.base + fb->read(lle.nbits);
    ml_state = mle.base + fb->read(mle.nbits);
    of_state = ofe.base + fb->read(ofe.nbits);
  }
};

// Repeat offsets (section 3.1.2.5), carried from block to block within a frame.
struct RepeatOffsets {
  u64 rep[3];
};

// What a window step (next_from_window) needs from the tables for the current states: their
// three entries and the two length codes' words (seq_code_word: `codes` holds that table).
// Pass 2b looks them up as soon as a step has the next states, so that these loads (a table
// entry, then the code word it names) are in flight while the step stores its record.
struct WindowLookup {
  FseEntry ll, ml, of;
  u32 llw, mlw;
};
template <class Tables>
CS_HD inline WindowLookup window_lookup(const Tables* t, const u32* codes, u32 ll_state, u32 ml_state,
                                        u32 of_state) {
  WindowLookup e;
  e.ll = ll_entry(t, ll_state);
  e.ml = ml_entry(t, ml_state);
  e.of = of_entry(t, of_state);
  e.llw = codes[e.ll.symbol];
  e.mlw = codes[kMlCodeWordAt + e.ml.symbol];
  return e;
}

// One sequence (not the last) through a BackwardWordQueue, for pass 2b on the GPU, from the
// lookups of its states: the same fields in the same order as SequenceStream::next, without a
// branch. The extra bits of offset, match length and literal length (<= 31 + 16 + 16 = 63
// bits) come out of one window position and the three state updates (<= 9 + 9 + 8) out of the
// next, so each half reads at most 63 bits, as the window requires. Fields read one after
// another lie side by side below the position, the first read highest, so the match- and
// literal-length bits are cut out as one field of <= 32 bits and the three state updates as
// one of <= 26, then split with shifts: three window cuts a sequence, not six. *abit moves
// down by the bits read.
CS_HD inline void next_from_window(const WindowLookup& e, BackwardWordQueue* w, u32* abit, u32* ll_state,
                                   u32* ml_state, u32* of_state, u32* ll, u32* ml, u32* of_value) {
  const u32 of_n = e.of.symbol, ml_n = e.mlw >> 24, ll_n = e.llw >> 24;
  const u32 b0 = *abit - of_n, b2 = b0 - ml_n - ll_n;
  *of_value = (1u << of_n) + w->extract(b0, of_n);
  const u32 lengths = w->extract(b2, ml_n + ll_n);  // [b2, b0): the match length's bits above
  *ml = (e.mlw & 0xFFFFFFu) + (lengths >> ll_n);
  *ll = (e.llw & 0xFFFFFFu) + (lengths & low_mask(ll_n));
  w->advance(b2);
  const u32 n_ll = e.ll.nbits, n_ml = e.ml.nbits, n_of = e.of.nbits;
  const u32 b5 = b2 - n_ll - n_ml - n_of;
  const u32 states = w->extract(b5, n_ll + n_ml + n_of);  // LL's bits highest, OF's lowest
  *ll_state = e.ll.base + (states >> (n_ml + n_of));
  *ml_state = e.ml.base + ((states >> n_of) & low_mask(n_ml));
  *of_state = e.of.base + (states & low_mask(n_of));
  w->advance(b5);
  w->step_end();
  *abit = b5;
}

// Section 3.1.2.5: Offset_Value 1-3 names a repeat offset (shifted by one when the literal
// length is 0, where the value 3 means rep[0] - 1); larger values are offset + 3. The used
// offset moves to the front of the list. Written on plain u64 arithmetic so that it works on
// the symbolic entries of split.hpp too (there "rep[0] - 1" decrements an encoded count, and
// the zero check is left to execution).
CS_HD inline DecodeStatus update_repeat_offsets(RepeatOffsets* reps, u64 of_value, u32 ll, u64* offset) {
  if (of_value > 3) {
    *offset = of_value - 3;
    reps->rep[2] = reps->rep[1];
    reps->rep[1] = reps->rep[0];
    reps->rep[0] = *offset;
    return DecodeStatus::kOk;
  }
  const u32 idx = static_cast<u32>(of_value) - 1 + (ll == 0 ? 1 : 0);
  if (idx == 0) {
    *offset = reps->rep[0];
  } else if (idx == 1) {
    *offset = reps->rep[1];
    reps->rep[1] = reps->rep[0];
    reps->rep[0] = *offset;
  } else {
    *offset = idx == 2 ? reps->rep[2] : reps->rep[0] - 1;
    CS_ZSTD_REQUIRE(*offset != 0, kCorrupt);
    reps->rep[2] = reps->rep[1];
    reps->rep[1] = reps->rep[0];
    reps->rep[0] = *offset;
  }
  return DecodeStatus::kOk;
}

// update_repeat_offsets without a branch and on 32-bit entries, for pass 2b's window loop
// (split.hpp keeps its symbolic entries in 32 bits there, so that each select is one
// instruction, not two): the used offset always moves to the front; rep[1] keeps its place
// only for the first repeat offset, rep[2] for the first two. Returns false where the format's
// "rep[0] - 1" is zero (the caller stops there, as update_repeat_offsets does with kCorrupt,
// the list unchanged). of_value > 3 must leave of_value - 3 < 2^31 (the caller's encoding).
CS_HD inline bool update_repeat_offsets_flat(u32* reps, u32 of_value, u32 ll, u32* offset) {
  const bool repeat = of_value <= 3;
  const u32 idx = of_value - 1 + (ll == 0 ? 1 : 0);  // meaningful when repeat
  const u32 r0 = reps[0], r1 = reps[1], r2 = reps[2];
  const u32 picked = idx == 0 ? r0 : idx == 1 ? r1 : idx == 2 ? r2 : r0 - 1;
  const u32 off = repeat ? picked : of_value - 3;
  const bool ok = off != 0;  // else, as update_repeat_offsets, the list stays as it was
  const bool keep1 = !ok || (repeat && idx == 0), keep2 = !ok || (repeat && idx <= 1);
  reps[2] = keep2 ? r2 : r1;
  reps[1] = keep1 ? r1 : r0;
  reps[0] = ok ? off : r0;
  *offset = off;
  return ok;
}

// Copies n bytes between non-overlapping ranges, split over the team.
template <class Team>
CS_HD void team_copy(const Team& team, u8* d, const u8* s, std::size_t n) {
#if !CS_DEVICE_PASS
  if (team.size() == 1) {
    if (n) __builtin_memcpy(d, s, n);
    return;
  }
#endif
#if CS_DEVICE_PASS
  // Same offset modulo 16 (literal runs and raw blocks that start on a block boundary): bytes
  // up to the next 16-byte boundary of d, then one 16-byte load and store per member and
  // step, four steps in flight, then the tail.
  if (((reinterpret_cast<std::uintptr_t>(d) ^ reinterpret_cast<std::uintptr_t>(s)) & 15) == 0 && n >= 64) {
    const std::size_t head = (16 - (reinterpret_cast<std::uintptr_t>(d) & 15)) & 15;
    if (team.rank() < head) d[team.rank()] = s[team.rank()];
    uint4* dv = reinterpret_cast<uint4*>(d + head);
    const uint4* sv = reinterpret_cast<const uint4*>(s + head);
    const std::size_t nv = (n - head) / 16;
    const std::size_t step = team.size();
    std::size_t i = team.rank();
    for (; i + 3 * step < nv; i += 4 * step) {
      const uint4 a = sv[i], b = sv[i + step], c = sv[i + 2 * step], e = sv[i + 3 * step];
      dv[i] = a;
      dv[i + step] = b;
      dv[i + 2 * step] = c;
      dv[i + 3 * step] = e;
    }
    for (; i < nv; i += step) dv[i] = sv[i];
    for (std::size_t t = head + nv * 16 + team.rank(); t < n; t += step) d[t] = s[t];
    return;
  }
  // Otherwise bytes, four loads in flight per member.
  {
    const std::size_t step = team.size();
    std::size_t i = team.rank();
    for (; i + 3 * step < n; i += 4 * step) {
      const u8 a = s[i], b = s[i + step], c = s[i + 2 * step], e = s[i + 3 * step];
      d[i] = a;
      d[i + step] = b;
      d[i + 2 * step] = c;
      d[i + 3 * step] = e;
    }
    for (; i < n; i += step) d[i] = s[i];
  }
#else
  for (std::size_t i = team.rank(); i < n; i += team.size()) d[i] = s[i];
#endif
}

// The match copy of section 3.1.2: n bytes from `off` bytes back, where the source may
// overlap the destination (off < n repeats the last `off` bytes). Byte i of the match equals
// byte (i mod off) of the source, which lies wholly before d, so members need not wait on one
// another within one match.
template <class Team>
CS_HD void team_match_copy(const Team& team, u8* d, std::size_t off, std::size_t n) {
  const u8* s = d - off;
  if (team.size() == 1) {
#if !CS_DEVICE_PASS
    if (off >= n) {
      if (n) __builtin_memcpy(d, s, n);
      return;
    }
#endif
    for (std::size_t i = 0; i < n; ++i) d[i] = s[i];  // forward byte copy repeats the period
    return;
  }
  if (off >= n) {
    for (std::size_t i = team.rank(); i < n; i += team.size()) d[i] = s[i];
  } else {
    for (std::size_t i = team.rank(); i < n; i += team.size()) d[i] = s[i % off];
  }
}

// Decodes the sequences section src[0, n) (the rest of the block after the literals) and
// executes every sequence into out (the frame's output; *pos bytes of it are written and
// `cap` are available). A block produces at most kBlockSizeMax bytes.
template <class Team>
CS_HD DecodeStatus decode_and_execute_sequences(const Team& team, const u8* src, std::size_t n, const Literals& lits,
                                                ZstdTables* ws, RepeatOffsets* reps, u8* out, std::size_t cap,
                                                std::size_t* pos) {
  std::size_t p = 0;
  u32 nb_seq = 0;
  CS_ZSTD_TRY(read_sequence_count(src, n, &nb_seq, &p));
  const std::size_t block_start = *pos;
  std::size_t o = *pos;
  std::size_t lit_pos = 0;
  if (nb_seq == 0) {
    // No sequences: the section ends here and the block is its literals.
    CS_ZSTD_REQUIRE(p == n, kCorrupt);
  } else {
    CS_ZSTD_REQUIRE(p < n, kCorrupt);
    const u32 modes = src[p++];
    CS_ZSTD_REQUIRE((modes & 3) == 0, kCorrupt);  // reserved bits
    // The table descriptions follow in the order literal lengths, offsets, match lengths.
    for (u32 c = 0; c < 3; ++c) {
      std::size_t used = 0;
      CS_ZSTD_TRY(build_code_table(team, static_cast<SeqCode>(c), (modes >> (6 - 2 * c)) & 3, src + p, n - p, ws, &used));
      p += used;
    }
    CS_ZSTD_REQUIRE(p < n, kCorrupt);
    SequenceStream stream;
    CS_ZSTD_TRY(stream.init(ws, src + p, n - p));
    std::size_t visible = o;  // every member sees out[0, visible)
    for (u32 i = 0; i < nb_seq; ++i) {
      u32 ll32 = 0, ml32 = 0;
      u64 of_value = 0, offset = 0;
      CS_ZSTD_TRY(stream.next(ws, i + 1 == nb_seq, &ll32, &ml32, &of_value));
      CS_ZSTD_TRY(update_repeat_offsets(reps, of_value, ll32, &offset));
      const std::size_t ll = ll32, ml = ml32;
      // Execution: ll literals, then ml bytes from `offset` back, within this frame.
      CS_ZSTD_REQUIRE(ll <= lits.size - lit_pos, kCorrupt);
      CS_ZSTD_REQUIRE(o - block_start + ll + ml <= kBlockSizeMax, kCorrupt);
      CS_ZSTD_REQUIRE(ll + ml <= cap - o, kWrongSize);
      team_copy(team, out + o, lits.data + lit_pos, ll);
      lit_pos += ll;
      o += ll;
      CS_ZSTD_REQUIRE(offset <= o, kCorrupt);
      const std::size_t off = static_cast<std::size_t>(offset);
      // The match reads out[o - off, o - off + min(ml, off)); wait for the team if any of
      // that was written since the last barrier.
      if (o - off + (ml < off ? ml : off) > visible) {
        team.sync();
        visible = o;
      }
      team_match_copy(team, out + o, off, ml);
      o += ml;
    }
    CS_ZSTD_REQUIRE(stream.bits.finished_exactly(), kCorrupt);
  }
  // The literals left after the last sequence end the block.
  const std::size_t rest = lits.size - lit_pos;
  CS_ZSTD_REQUIRE(o - block_start + rest <= kBlockSizeMax, kCorrupt);
  CS_ZSTD_REQUIRE(rest <= cap - o, kWrongSize);
  team_copy(team, out + o, lits.data + lit_pos, rest);
  o += rest;
  team.sync();
  *pos = o;
  return DecodeStatus::kOk;
}

}  // namespace cubestream::codec::logic::zstd
