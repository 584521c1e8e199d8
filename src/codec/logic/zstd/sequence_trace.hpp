// Pass 2b in two halves (docs/gpu_zstd.md, v3.11): a serial trace of the sequence stream's
// dependent chain, then its records computed many sequences at a time.
//
// The sequence stream of a block (RFC 8878 section 3.1.1.3.2.2) is one dependent chain: the
// bits a sequence takes depend on the three FSE states, and the next states come from bits
// below those. Everything else about a sequence (its literal length, match length and offset
// values, the repeat-offset list, the running output sizes) follows from where its extra bits
// start and what its states are. So:
//   trace    one thread per block walks only the chain: per sequence three table lookups,
//            the bit count, one field of state bits, and a trace entry (the three states and
//            the stream position before the sequence's extra bits), written where the
//            sequence's match-length and offset records go (the record arrays of split.hpp).
//   records  per block, team.size() sequences at a time: each member reads its sequence's
//            trace entry, looks up its symbols, cuts its extra bits out of the stream, and
//            writes its three records in place of the entry; the repeat offsets (section
//            3.1.2.5) are a composition of maps over the sequences (RepMap), which a warp scans
//            in log2(32) steps; the group table of split.hpp comes from running sums.
// The records, group table, repeat offsets and statuses are those of split.hpp's
// decode_block_sequences with any of its readers (tested on the host against them).
#pragma once

#include <cstddef>
#include <cstdint>

#include "codec/logic/zstd/common.hpp"
#include "codec/logic/zstd/split.hpp"

namespace cubestream::codec::logic::zstd {

// ---- the trace ------------------------------------------------------------------------------

// A trace entry: the states when sequence i starts, LL in bits 17-25, ML in 8-16, OF in 0-7
// (logs <= 9, 9, 8), and the stream position (bits not yet read, BackwardBits::pos) before its
// extra bits. In the record arrays: the states in rec_ml[i], the position in rec_off[i].
CS_HD inline u32 trace_states(u32 ll, u32 ml, u32 of) { return ll << 17 | ml << 8 | of; }
static_assert(kLlMaxLog <= 9 && kMlMaxLog <= 9 && kOfMaxLog <= 8, "a trace entry packs the states in 26 bits");

// A chain entry's next-state pieces (ChainTables, split.hpp): nbits = log - highbit(k) and
// base = (k << nbits) - 2^log (section 4.1.1, as unpack_seq_entry).
struct ChainStep {
  u32 k, nbits;
  CS_HD u32 next(u32 log, u32 bits) const { return (k << nbits) - (1u << log) + bits; }
};
CS_HD inline ChainStep chain_step(u32 packed, u32 log) {
  const u32 k = packed >> 5;
  return ChainStep{k, log - highbit32(k)};
}
CS_HD inline u32 chain_extra(u32 packed) { return packed & 31u; }

// The ChainTables with their logs in registers (the trace stores through u32 pointers, which
// could alias logs kept in memory; see SeqTablesView).
struct ChainTablesView {
  const u16* ll;
  const u16* ml;
  const u16* of;
  u32 ll_log, ml_log, of_log;
};
CS_HD inline ChainTablesView view_of(const ChainTables* t) {
  return {t->ll, t->ml, t->of, t->ll_log, t->ml_log, t->of_log};
}

// Words base[i, i + 4) (i a multiple of 4, base 16-byte aligned): one 16-byte store on the GPU.
CS_HD inline void store_quad(u32* base, u32 i, const u32 (&v)[4]) {
#if CS_DEVICE_PASS
  *reinterpret_cast<uint4*>(base + i) = make_uint4(v[0], v[1], v[2], v[3]);
#else
  // The GPU's 16-byte store needs base + i 16-byte aligned; the host checks it, so that the
  // host tests catch a caller whose base is not (a misaligned store faults there).
  if ((reinterpret_cast<std::uintptr_t>(base + i) & 15) != 0) std::abort();
  for (u32 m = 0; m < 4; ++m) base[i + m] = v[m];
#endif
}

// The trace's view of the sequence stream: two aligned 8-byte words (`lo` = word q, counting
// words from `a`, the stream's start rounded down to 8 bytes, and `hi` = word q + 1) that hold
// the current sequence's state bits, and the two words below them in registers (`n1`, `n2`).
// A step moves the window down to the word holding its field's lowest bit: by 0-2 words, since
// a sequence takes at most 89 bits (SequenceStream::kMaxSequenceBits), chosen by selects. The
// words below come through a ring in shared memory filled by asynchronous copies, so that no
// load is waited on inside a step. Unlike BackwardWordQueue (split.hpp's window loop) the
// extra bits between two state fields are skipped, not read, so a step makes one move and one
// cut, not two of each; and the copies run further ahead: a step copies the words that came
// within kAhead words of the window and waits only for the copies of steps kLag and more
// before. (With BackwardWordQueue's depth, 4 words ahead and a wait on the step before, the
// trace took 2.90 ms of the 64 KiB-1 MiB bench batch at level 3 under ncu on an H100, ~90
// instructions a sequence; with this depth 1.94 ms on an H200, where the window reader's pass
// took 4.10 ms against the H100's 3.95: docs/gpu_zstd.md, v3.11.) The caller keeps abit >=
// kTraceMinBits before each step, so that every word copied lies in [a, end of the stream).
struct TraceWindow {
  static constexpr u32 kRingWords = 16;
  static constexpr u32 kAhead = 8;  // words copied down to q - kAhead
  static constexpr u32 kLag = 3;    // the copies of the last kLag steps may still be in flight
  // Word q - 2 must have come within kAhead of the window kLag steps ago, when q was at most
  // 2 * kLag higher; the ring holds words q - kAhead .. q without reuse.
  static_assert(2 * kLag + 2 <= kAhead && kAhead + 1 <= kRingWords, "ring depth");
  const u8* a;
  u64* ring;
  u32 q, lowest;  // lowest: the lowest word copied into the ring so far
  u64 lo, hi, n1, n2;

  CS_HD u64 word(u32 k) const { return stream_word(a, k); }
  CS_HD void copy_to_ring(u32 k) { ring_copy_word<kRingWords>(ring, a, k); }
  // The window for a stream p[0, size) with `pos` bits left (p - 8 still inside the caller's
  // buffer: the first word may start up to 7 bytes before p); returns abit, the position in
  // the window's count (from a). `ring_words`: kRingWords words of the caller's.
  CS_HD u32 init(const u8* p, std::size_t size, u32 pos, u64* ring_words) {
    const u32 m = static_cast<u32>(reinterpret_cast<std::uintptr_t>(p) & 7);
    a = p - m;
    ring = ring_words;
    const u32 abit = pos + 8 * m;
    q = (abit - 1) >> 6;  // the word of the highest unread bit: it may reach past the stream's end
    hi = load_le64_or_zero(a, m + size, u64(8) * (q + 1));  // bytes past the stream's end read as zero
    lo = load_le64_or_zero(a, m + size, u64(8) * q);
    for (u32 k = 1; k <= kAhead; ++k) ring[(q - k) & (kRingWords - 1)] = word(q - k);
    lowest = q - kAhead;
    n1 = ring[(q - 1) & (kRingWords - 1)];
    n2 = ring[(q - 2) & (kRingWords - 1)];
    return abit;
  }
  // Bits [bit, bit + n) of the stream, n <= 32, after the window moved to bit: down to word
  // bit / 64 (0-2 words below q), then a cut of the 128 bits hi:lo.
  CS_HD u32 move_and_cut(u32 bit, u32 n) {
    const u32 qn = bit >> 6;
    const u32 d = q - qn;
    const u64 l = d == 0 ? lo : d == 1 ? n1 : n2;
    const u64 h = d == 0 ? hi : d == 1 ? lo : n1;
    lo = l;
    hi = h;
    q = qn;
    const u32 off = bit & 63;
#if CS_DEVICE_PASS
    // The 64 bits from bit off & ~31 on, then a 32-bit funnel shift by off & 31.
    const u32 x = off < 32 ? static_cast<u32>(l) : static_cast<u32>(l >> 32);
    const u32 y = off < 32 ? static_cast<u32>(l >> 32) : static_cast<u32>(h);
    return __funnelshift_r(x, y, off) & low_mask(n);
#else
    const u64 v = off == 0 ? l : (l >> off) | (h << (64 - off));
    return static_cast<u32>(v) & low_mask(n);
#endif
  }
  // After a step: copies the words down to q - kAhead not copied yet (0-2), waits for the
  // copies of the steps kLag and more before (which hold every word down to q - 2), and reads
  // words q - 1 and q - 2. Every step commits a group, empty or not, so that "all groups but
  // the last kLag" keeps meaning "the copies of the steps kLag and more before".
  CS_HD void step_end() {
    const u32 want = q - kAhead;
    if (want < lowest) copy_to_ring(lowest - 1);
    if (want + 1 < lowest) copy_to_ring(lowest - 2);
    lowest = want < lowest ? want : lowest;
    ring_commit();
    ring_wait<kLag>();
    n1 = ring[(q - 1) & (kRingWords - 1)];
    n2 = ring[(q - 2) & (kRingWords - 1)];
  }
};

// The trace's window loop takes a sequence only this far from the stream's start (in the
// window's bit count): after it (<= 89 bits) the window's word q is still kAhead or more, so
// that the lowest word copied, q - kAhead, is word 0 or above.
inline constexpr u32 kTraceMinBits = TraceWindow::kAhead * 64 + SequenceStream::kMaxSequenceBits;

// One step of the chain through a TraceWindow: from the states and position before a sequence
// (not the last) to those after it.
CS_HD inline void trace_step(const ChainTablesView& t, TraceWindow* w, u32* abit, u32* lls, u32* mls, u32* ofs) {
  const u32 pl = t.ll[*lls], pm = t.ml[*mls], po = t.of[*ofs];
  const ChainStep cl = chain_step(pl, t.ll_log), cm = chain_step(pm, t.ml_log), co = chain_step(po, t.of_log);
  // The extra bits (offset, match length, literal length: <= 63 together) are skipped; the
  // state bits lie below them (LL highest, OF lowest: <= 26).
  const u32 nst = cl.nbits + cm.nbits + co.nbits;
  const u32 a2 = *abit - (chain_extra(pl) + chain_extra(pm) + chain_extra(po)) - nst;
  const u32 f = w->move_and_cut(a2, nst);
  *lls = cl.next(t.ll_log, f >> (cm.nbits + co.nbits));
  *mls = cm.next(t.ml_log, (f >> co.nbits) & low_mask(cm.nbits));
  *ofs = co.next(t.of_log, f & low_mask(co.nbits));
  w->step_end();
  *abit = a2;
}

// Traces the sequence stream of compressed block `s` (needs_sequences) with its ChainTables
// `t`, into the block's record arrays (blk: its scratch). *n_traced gets the sequences traced
// before an error (all s.seq_cap of them when ok). The status is the bit reader's: a sequence
// that needs more bits than remain, a stream without its end marker, or (when every sequence
// was read, seq_cap == nb_seq) bits left over are kCorrupt; the repeat-offset checks come in
// the records pass. `ring`: TraceWindow::kRingWords words of the thread's (shared memory on the
// GPU), or null for the checked reader alone.
CS_HD inline DecodeStatus trace_sequences(const u8* src, const BlockStep& s, const ChainTablesView& t, u8* blk,
                                          u64* ring, u32* n_traced) {
  *n_traced = 0;
  BackwardBits bits;
  CS_ZSTD_TRY(bits.init(src + s.seq_at, static_cast<std::size_t>(s.seq_avail)));
  // Initial states in the order LL, OF, ML (section 3.1.1.3.2.2).
  u32 lls = static_cast<u32>(bits.read(t.ll_log));
  u32 ofs = static_cast<u32>(bits.read(t.of_log));
  u32 mls = static_cast<u32>(bits.read(t.ml_log));
  u32* rec_states = reinterpret_cast<u32*>(blk + step_lit_bytes(s)) + step_rec_stride(s);
  u32* rec_pos = rec_states + step_rec_stride(s);
  u32 i = 0;
  // The chain through the trace's word window while the stream has room (kTraceMinBits): no
  // branch and no load waited on inside a sequence. The last sequence (no
  // state update) and the ones near the stream's start take the checked reader below.
  if (ring && s.seq_at >= 8 && bits.pos >= kTraceMinBits) {
    TraceWindow w;
    const u32 pos = static_cast<u32>(bits.pos);
    u32 abit = w.init(src + s.seq_at, static_cast<std::size_t>(s.seq_avail), pos, ring);
    const u32 lead = abit - pos;
    const u32 end = s.seq_cap < s.nb_seq - 1 ? s.seq_cap : s.nb_seq - 1;
    // Four sequences a round while four fit (entries in registers, one 16-byte store per
    // array), then one at a time.
    while (i + 4 <= end && abit >= kTraceMinBits + 3 * SequenceStream::kMaxSequenceBits) {
      u32 st[4], ps[4];
#if CS_DEVICE_PASS
#pragma unroll
#endif
      for (u32 r = 0; r < 4; ++r) {
        st[r] = trace_states(lls, mls, ofs);
        ps[r] = abit - lead;
        trace_step(t, &w, &abit, &lls, &mls, &ofs);
      }
      store_quad(rec_states, i, st);
      store_quad(rec_pos, i, ps);
      i += 4;
    }
    while (i < end && abit >= kTraceMinBits) {
      rec_states[i] = trace_states(lls, mls, ofs);
      rec_pos[i] = abit - lead;
      trace_step(t, &w, &abit, &lls, &mls, &ofs);
      ++i;
    }
    ring_drain();
    bits.pos = abit - lead;
    bits.win_byte = ~u64(0);  // the checked reader reloads its window
  }
  for (; i < s.seq_cap; ++i) {
    rec_states[i] = trace_states(lls, mls, ofs);
    rec_pos[i] = static_cast<u32>(bits.pos);
    const u32 pl = t.ll[lls], pm = t.ml[mls], po = t.of[ofs];
    bits.consume(chain_extra(pl) + chain_extra(pm) + chain_extra(po));
    if (i + 1 != s.nb_seq) {  // state updates in the order LL, ML, OF; none after the last
      const ChainStep cl = chain_step(pl, t.ll_log), cm = chain_step(pm, t.ml_log), co = chain_step(po, t.of_log);
      lls = cl.next(t.ll_log, static_cast<u32>(bits.read(cl.nbits)));
      mls = cm.next(t.ml_log, static_cast<u32>(bits.read(cm.nbits)));
      ofs = co.next(t.of_log, static_cast<u32>(bits.read(co.nbits)));
    }
    if (bits.overflow) {
      *n_traced = i;
      return DecodeStatus::kCorrupt;
    }
  }
  *n_traced = s.seq_cap;
  if (s.seq_cap == s.nb_seq) CS_ZSTD_REQUIRE(bits.finished_exactly(), kCorrupt);
  return DecodeStatus::kOk;
}

// Pass 2b's first half for one block with needs_sequences(*s): the trace, into s->trace_n and
// s->trace_status (status, n_ok and reps_end are the records pass's).
CS_HD inline void trace_block_sequences(const u8* src, BlockStep* s, const ChainTablesView& t, u8* blk, u64* ring) {
  u32 n = 0;
  const DecodeStatus st = trace_sequences(src, *s, t, blk, ring, &n);
  s->trace_n = n;
  s->trace_status = static_cast<u32>(st);
}

// ---- a sequence's values from its trace entry ---------------------------------------------

// Where bits [lo, lo + 64) of the stream p[0, size) lie as two aligned 8-byte words: words k and
// k + 1 from p rounded down to 8 bytes, shifted right by `shift`; `whole` when both words lie
// inside the stream or, with `lead_ok` (a stream 8 or more bytes into its buffer), start at most
// 7 bytes before it. Otherwise (the stream's last word, or its first before a stream that starts
// its buffer) the bits take byte loads (stream_bits_bytes).
struct StreamWords {
  const u64* w;
  u32 shift;
  bool whole;
};
CS_HD inline StreamWords stream_words(const u8* p, std::size_t size, u32 lo, bool lead_ok) {
  const u32 m = static_cast<u32>(reinterpret_cast<std::uintptr_t>(p) & 7);
  const u32 b = lo + 8 * m, k = b >> 6;
  StreamWords sw;
  sw.w = reinterpret_cast<const u64*>(p - m) + k;
  sw.shift = b & 63;
  sw.whole = (k > 0 || m == 0 || lead_ok) && u64(8) * (k + 2) <= m + size;
  return sw;
}
// The 64 bits of two such words from `shift` on.
CS_HD inline u64 cut_words(u64 w0, u64 w1, u32 shift) { return shift == 0 ? w0 : (w0 >> shift) | (w1 << (64 - shift)); }

// Bits [lo, lo + n) of the stream p[0, size), n <= 63, all inside it, by byte loads.
CS_HD inline u64 stream_bits_bytes(const u8* p, std::size_t size, u32 lo, u32 n) {
  const u32 byte = lo >> 3, sh = lo & 7;
  u64 v = load_le64_or_zero(p, size, byte) >> sh;
  if (sh + n > 64) v |= u64(p[byte + 8]) << (64 - sh);
  return v & ((u64(1) << n) - 1);
}

// Bits [lo, lo + n) of the stream p[0, size), n <= 63, all inside it: on the GPU two aligned
// 8-byte loads and a funnel shift where stream_words allows, else byte loads.
CS_HD inline u64 stream_bits(const u8* p, std::size_t size, u32 lo, u32 n, bool lead_ok) {
#if CS_DEVICE_PASS
  const StreamWords sw = stream_words(p, size, lo, lead_ok);
  if (sw.whole) return cut_words(sw.w[0], sw.w[1], sw.shift) & ((u64(1) << n) - 1);
#else
  (void)lead_ok;
#endif
  return stream_bits_bytes(p, size, lo, n);
}

// Literal length, match length and Offset_Value of a traced sequence (the fields of
// SequenceStream::next), from its symbols (SeqTables, split.hpp) and `codes`, the seq_code_word
// table, in two steps so that the GPU's records pass can have the stream's words in flight in
// between: traced_codes looks up the two length codes' words and the offset code (which is
// the offset's extra-bit count), values_from_bits takes the sequence's extra bits.
struct TracedCodes {
  u32 llw, mlw, of_n;
  CS_HD u32 extra_bits() const { return of_n + (mlw >> 24) + (llw >> 24); }
};
template <class Tables>
CS_HD inline TracedCodes traced_codes(const Tables& t, const u32* codes, u32 states) {
  const u32 ll_sym = t.ll[states >> 17] & 63u, ml_sym = t.ml[(states >> 8) & 511u] & 63u;
  return TracedCodes{codes[ll_sym], codes[kMlCodeWordAt + ml_sym], t.of[states & 255u] & 63u};
}
struct SequenceValues {
  u32 ll, ml, of_value;
};
// `v`: the sequence's extra bits (offset bits highest, literal length lowest).
CS_HD inline SequenceValues values_from_bits(const TracedCodes& c, u64 v) {
  const u32 ll_n = c.llw >> 24, ml_n = c.mlw >> 24;
  SequenceValues out;
  out.of_value = (1u << c.of_n) + static_cast<u32>(v >> (ml_n + ll_n));  // of_n <= 31: < 2^32
  out.ml = (c.mlw & 0xFFFFFFu) + (static_cast<u32>(v >> ll_n) & low_mask(ml_n));
  out.ll = (c.llw & 0xFFFFFFu) + (static_cast<u32>(v) & low_mask(ll_n));
  return out;
}
// Both steps for the trace entry (states, pos), whose extra bits lie inside the stream as every
// traced sequence's do; `lead_ok` as stream_bits.
template <class Tables>
CS_HD inline SequenceValues traced_values(const u8* p, std::size_t size, bool lead_ok, const Tables& t, const u32* codes,
                                          u32 states, u32 pos) {
  const TracedCodes c = traced_codes(t, codes, states);
  const u32 n = c.extra_bits();
  return values_from_bits(c, stream_bits(p, size, pos - n, n, lead_ok));
}

// ---- repeat offsets as maps -----------------------------------------------------------------
//
// Section 3.1.2.5: each sequence replaces the list (rep[0], rep[1], rep[2]) by a new one whose
// entries are either its literal offset or old entries, rep[0] - 1 at most once changed. A
// RepMap says, for each entry of the list after some sequences, where it comes from relative to
// the list before them: incoming rep[kind] - v (kind 0-2), or the offset v itself (kind 3). Maps
// compose (then()), so a team finds every sequence's list with a prefix scan; and relative to
// the block's incoming list these are split.hpp's symbolic entries (kSymTag), which execution
// resolves.
inline constexpr u32 kRepLiteral = 3;
struct RepMap {
  u32 kind[3];
  u32 v[3];
};
CS_HD inline RepMap rep_identity() { return RepMap{{0, 1, 2}, {0, 0, 0}}; }

// The map of one sequence (update_repeat_offsets, sequences.hpp).
CS_HD inline RepMap rep_of_sequence(u32 of_value, u32 ll) {
  if (of_value > 3) return RepMap{{kRepLiteral, 0, 1}, {of_value - 3, 0, 0}};
  const u32 idx = of_value - 1 + (ll == 0 ? 1u : 0u);
  RepMap m = rep_identity();
  if (idx == 1) {
    m.kind[0] = 1;
    m.kind[1] = 0;
  } else if (idx >= 2) {  // rep[2], or (idx 3) rep[0] - 1, to the front
    m.kind[0] = idx == 2 ? 2u : 0u;
    m.v[0] = idx == 2 ? 0u : 1u;
    m.kind[1] = 0;
    m.kind[2] = 1;
  }
  return m;
}

// `second` after `first`: entry k of the result is entry second.kind[k] of first's list, less
// second.v[k], or second's literal.
CS_HD inline RepMap rep_then(const RepMap& first, const RepMap& second) {
  RepMap r;
#if CS_DEVICE_PASS
#pragma unroll
#endif
  for (int k = 0; k < 3; ++k) {
    const u32 from = second.kind[k];
    const u32 fk = from == 0 ? first.kind[0] : from == 1 ? first.kind[1] : first.kind[2];
    const u32 fv = from == 0 ? first.v[0] : from == 1 ? first.v[1] : first.v[2];
    const bool lit = from == kRepLiteral;
    r.kind[k] = lit ? kRepLiteral : fk;
    // An incoming entry's subtrahend grows; a literal offset shrinks.
    r.v[k] = lit ? second.v[k] : fk == kRepLiteral ? fv - second.v[k] : fv + second.v[k];
  }
  return r;
}

// `b` where `take`, else `a` (selects, not a branch: a warp's scan takes it on some lanes).
CS_HD inline RepMap rep_pick(bool take, const RepMap& a, const RepMap& b) {
  RepMap r;
  for (int k = 0; k < 3; ++k) {
    r.kind[k] = take ? b.kind[k] : a.kind[k];
    r.v[k] = take ? b.v[k] : a.v[k];
  }
  return r;
}

// The list after sequence l of a run whose sequences all name their offsets (Offset_Value >
// 3: each pushes its offset in front, section 3.1.2.5): its own offset, then those of the two
// sequences before it, the list the run starts with (`carry`) supplying what lies before the
// run. `off_1`, `off_2`: the offsets of sequences l - 1 and l - 2 (unused below the run's
// start). On ERA5-like fields ~0.1 % of sequences use a repeat offset, so the GPU's records
// pass takes this instead of the scan for the ~96 % of its 32-sequence chunks without one.
CS_HD inline RepMap rep_after_literals(const RepMap& carry, u32 l, u32 off, u32 off_1, u32 off_2) {
  RepMap r;
  r.kind[0] = kRepLiteral;
  r.v[0] = off;
  r.kind[1] = l >= 1 ? kRepLiteral : carry.kind[0];
  r.v[1] = l >= 1 ? off_1 : carry.v[0];
  r.kind[2] = l >= 2 ? kRepLiteral : l == 1 ? carry.kind[0] : carry.kind[1];
  r.v[2] = l >= 2 ? off_2 : l == 1 ? carry.v[0] : carry.v[1];
  return r;
}

// A sequence's offset is entry 0 of its list; a literal 0 is the format's "rep[0] - 1" of a
// repeat offset of 1, an error (update_repeat_offsets' kCorrupt).
CS_HD inline bool rep_offset_ok(const RepMap& list) { return !(list.kind[0] == kRepLiteral && list.v[0] == 0); }

// Entry k of a list in split.hpp's 64-bit form (literal, or kSymTag with index and subtrahend).
CS_HD inline u64 rep_entry64(const RepMap& list, int k) {
  if (list.kind[k] == kRepLiteral) return list.v[k];
  return kSymTag | (u64(list.kind[k]) << 40) | (kSymBase - list.v[k]);
}

// A sequence's three record words (split.hpp: literal length with a symbolic offset's tag and
// index, match length, offset or subtrahend), from its values and its list.
CS_HD inline void traced_record(const SequenceValues& sv, const RepMap& list, u32* w_ll, u32* w_ml, u32* w_off) {
  const bool sym = list.kind[0] != kRepLiteral;
  *w_ll = sv.ll | (sym ? kRecSym | (list.kind[0] << 29) : 0u);
  *w_ml = sv.ml;
  *w_off = list.v[0];
}

// ---- the records pass, one thread -------------------------------------------------------------

// Pass 2b's second half for one block after trace_block_sequences, by one thread (the host's
// reference for the GPU's warp; same results): records in place of the trace entries, the group
// table, s->status, s->n_ok and s->reps_end as decode_block_sequences writes them. `t`: the
// block's SeqTables; `codes`: the seq_code_word table.
template <class Tables>
CS_HD inline void records_from_trace(const u8* src, BlockStep* s, const Tables& t, const u32* codes, u8* blk) {
  const u8* p = src + s->seq_at;
  const std::size_t size = static_cast<std::size_t>(s->seq_avail);
  u32* rec_ll = reinterpret_cast<u32*>(blk + step_lit_bytes(*s));
  u32* rec_ml = rec_ll + step_rec_stride(*s);
  u32* rec_off = rec_ml + step_rec_stride(*s);
  detail::GroupSums sums{reinterpret_cast<GroupStart*>(blk + step_groups_at(*s))};
  RepMap list = rep_identity();
  u32 n = 0;
  bool rep_error = false;
  for (; n < s->trace_n; ++n) {
    const SequenceValues sv = traced_values(p, size, s->seq_at >= 8, t, codes, rec_ml[n], rec_off[n]);
    const RepMap after = rep_then(list, rep_of_sequence(sv.of_value, sv.ll));
    if (!rep_offset_ok(after)) {
      rep_error = true;
      break;
    }
    list = after;
    sums.record(n, sv.ll, sv.ml);
    traced_record(sv, list, &rec_ll[n], &rec_ml[n], &rec_off[n]);
  }
  sums.table[(n + kGroupSeqs - 1) / kGroupSeqs] = sums.now();
  s->status = rep_error ? static_cast<u32>(DecodeStatus::kCorrupt) : s->trace_status;
  s->n_ok = n;
  for (int k = 0; k < 3; ++k) s->reps_end[k] = rep_entry64(list, k);
}

// Pass 2b traced, both halves by one thread: the same results as decode_block_sequences (split.hpp).
// `chain` and `symbols` are the block's two table sets (its scratch copies, or copies of them);
// `codes` the seq_code_word table; `ring` as trace_sequences.
CS_HD inline void decode_block_sequences_traced(const u8* src, BlockStep* s, const ChainTables* chain,
                                                const SeqTables* symbols, const u32* codes, u8* blk, u64* ring) {
  trace_block_sequences(src, s, view_of(chain), blk, ring);
  records_from_trace(src, s, view_of(symbols), codes, blk);
}

CS_HD inline const ChainTables* step_chain_tables(const BlockStep& s, const u8* blk) {
  return reinterpret_cast<const ChainTables*>(blk + step_chain_at(s));
}

}  // namespace cubestream::codec::logic::zstd
