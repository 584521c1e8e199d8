// A whole LZ4 block decoded by one thread block through a 64 KiB ring of recent output
// (numcodecs lz4: one block per chunk), written once for the host and the device.
//
// Why the copies are not spread over many thread blocks: LZ4 matches copy earlier OUTPUT, and
// on float fields nearly every match reads far back, often bytes an earlier match wrote
// (bench/micro/lz4_match_deps.cpp, docs/gpu_decoders.md "numcodecs lz4, version 3": with
// segments of 32 sequences 85-93 % of matches read an earlier segment, and even with free
// signalling such a split gains at most 3-7.5x). Other blocks would wait on flags written by
// other SMs on a critical path of 10k-100k steps per chunk. So a block's order stays in one
// thread block, which takes the parallelism it has:
//  - a walker warp (Lz4RingWalker) parses and checks: a lean 32-bit fast path over the staged
//    input window (the window is checked once per sequence, not per byte); any sequence the
//    fast path does not take (length runs of 255, the end of the block, any failed check) goes
//    through the shared `lz4_read_sequence`, so statuses are exactly those of the serial
//    decoder. It hands out batches of up to 32 sequences and walks on while they are copied;
//  - copier warps (Lz4RingCopier) copy a batch: literals (from the input) and independent
//    matches (whose source ends before the batch) shared among them in any order, then the
//    other matches in order in one warp;
//  - output is kept in a 64 KiB ring (LZ4 offsets are < 64 KiB, so every match source is in
//    it) and leaves it in 16-byte stores; match sources never go to global memory.
//
// Ring rules (positions p are output offsets; slot(p) = (p + mis) mod 64 Ki, mis = the output
// pointer's address mod 16, so that a ring slot and its output byte share their 16-byte
// alignment and the flush can move 16-byte vectors):
//  - writing p overwrites p - 64 Ki, so before writing up to `end` every position below
//    end - 64 Ki must be flushed (end - flushed <= 64 Ki) and no pending match may read there;
//  - a batch (literals first) writes [b0, end) before its matches read: it is admitted only if
//    end - b0 <= 32 KiB and every match source of the batch is >= end - 64 Ki; a sequence that
//    cannot join any batch on its own ("lone": long literals or matches) is copied in order in
//    pieces that keep both rules.
// The lanes of a warp share each copy (lane l moves bytes l, l + 32, ...). `Lanes` runs the
// per-lane parts: on the device each lane runs its part and the warp meets at __syncwarp; on
// the host (tests, fuzzing) the 32 lanes, and the copier warps' shares, run one after another
// in the order the device's barriers impose (lz4_ring_decode_host), so the host checks the
// device's order of reads and writes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "codec/logic/decode_status.hpp"
#include "codec/logic/lz4_block.hpp"
#include "core/host_device.hpp"

namespace cubestream::codec::logic {

inline constexpr std::uint32_t kLz4RingBytes = 65536;
inline constexpr std::uint32_t kLz4RingMask = kLz4RingBytes - 1;
inline constexpr std::uint32_t kLz4BatchMax = 32;          // sequences walked per batch
inline constexpr std::uint32_t kLz4BatchBytes = 32768;     // output of a batch (literals-first)
inline constexpr std::uint32_t kLz4RingLanes = 32;
// The fast walk reads at most token + 1 length byte + 269 literals + 2 offset bytes + 1 length
// byte past a sequence's start: it runs when that many bytes are in the window.
inline constexpr std::uint32_t kLz4FastSpan = 280;
// A burst (Lz4RingWalker::burst) looks this many input positions ahead of the walk at once.
inline constexpr std::uint32_t kLz4BurstBytes = 512;

// When the walker tries a burst. A burst pays for its whole table (kLz4BurstBytes positions,
// 16 per lane) whatever it then finds, so where it yields few sequences (sparse tokens, or a
// sequence the fast path declines early in the table) walking them one by one is cheaper. A
// burst that takes fewer than `min_take` sequences while the batch had room for more is a
// miss, and after a miss the walker walks 1, 2, 4, ... up to `max_wait` sequences one by one
// before it tries again; a burst that takes enough resets the wait. On the H100 (session 13)
// the rule changed little next to making the table cheap (docs/gpu_decoders.md, "Bursts in
// the walker"). Any rule gives the same batches (only the work differs), which the tests check
// for several rules.
struct Lz4BurstRule {
  std::uint32_t min_take = 8;
  std::uint32_t max_wait = 64;
};
// Blocks whose input or output reach this size take the general decoder (positions are 32-bit).
inline constexpr std::size_t kLz4RingMaxBytes = std::size_t{0xFFFF0000u};

struct Lz4BatchSeq {
  std::uint32_t lit_src;  // input position of the literals
  std::uint32_t lit_len;
  std::uint32_t op;       // output position of the literals
  std::uint32_t off;      // match offset (0: no match, the last sequence)
  std::uint32_t mlen;     // match length
};

// The fast path of one sequence (see lz4_read_sequence for the format): only sequences whose
// header, literals and offset lie in the window, with at most one length byte each, not the
// last one, and passing every check. Two parts: the shape, which needs only the input bytes at
// the token (a burst computes it for every position of a stretch of input before it knows which
// are tokens), and the checks against the output position.
struct Lz4FastShape {
  std::uint32_t head;  // token and literal length byte: the literals start at ip + head
  std::uint32_t lit;
  std::uint32_t off;
  std::uint32_t mlen;  // with kLz4MinMatch
  std::uint32_t size;  // bytes of input the sequence takes: the next token is at ip + size
};

// Returns false (nothing read past w[kLz4FastSpan - 1]) where the fast path does not apply.
CS_HD inline bool lz4_fast_shape(const std::uint8_t* w, std::uint32_t ip, std::uint32_t in_size, Lz4FastShape* f) {
  const std::uint32_t t = w[0];
  std::uint32_t lit = t >> 4, h = 1;
  if (lit == 15) {
    const std::uint32_t e = w[1];
    if (e == 255) return false;
    lit += e;
    h = 2;
  }
  const std::uint32_t q = h + lit;  // offset position, relative to ip
  // offset and a possible match length byte inside the input, and the block not ending after
  // these literals (the last sequence goes through the general parse)
  if (in_size - ip < q + 3) return false;
  const std::uint32_t off = static_cast<std::uint32_t>(w[q]) | (static_cast<std::uint32_t>(w[q + 1]) << 8);
  std::uint32_t m = t & 15u, mh = 0;
  if (m == 15) {
    const std::uint32_t e = w[q + 2];
    if (e == 255) return false;
    m += e;
    mh = 1;
  }
  *f = Lz4FastShape{h, lit, off, m + static_cast<std::uint32_t>(kLz4MinMatch), q + 2 + mh};
  return true;
}

// lz4_fast_shape's answer for a burst's table: the input the sequence at w takes (`size`), or
// 0 where the fast path does not apply; `left` is in_size - ip. The same result, written without
// branches so that a lane's table positions overlap: w[0] and w[1] are read together, then
// w[q + 2] (q <= 271, so within kLz4FastSpan; the offset bytes are not needed for the size),
// where lz4_fast_shape waits for each length byte before the next read.
// The parts of that rule, from a sequence's token t, its first byte after the token (e1) and
// the first byte after its offset (e2), for the callers that read several sequences' bytes in
// rounds (lz4_table_fill, lz4_table_token_sum): where the offset is (from the token), whether a
// length byte follows the offset (1 or 0), and whether either length runs on past its first
// length byte (a 255), which this rule leaves to lz4_fast_shape's loop.
CS_HD inline std::uint32_t lz4_fast_offset_pos(std::uint32_t t, std::uint32_t e1) {
  const std::uint32_t lit_ext = (t >> 4) == 15u ? 1u : 0u;
  return 1u + lit_ext + (t >> 4) + (lit_ext ? e1 : 0u);
}
CS_HD inline std::uint32_t lz4_fast_match_ext(std::uint32_t t) { return (t & 15u) == 15u ? 1u : 0u; }
CS_HD inline bool lz4_fast_runs_on(std::uint32_t t, std::uint32_t e1, std::uint32_t e2) {
  return ((t >> 4) == 15u && e1 == 255u) || (lz4_fast_match_ext(t) != 0 && e2 == 255u);
}
CS_HD inline std::uint32_t lz4_fast_next(const std::uint8_t* w, std::uint32_t left) {
  const std::uint32_t t = w[0], e1 = w[1];
  const std::uint32_t q = lz4_fast_offset_pos(t, e1);
  const std::uint32_t e2 = w[q + 2];
  const bool ok = !lz4_fast_runs_on(t, e1, e2) && left >= q + 3u;
  return ok ? q + 2u + lz4_fast_match_ext(t) : 0u;
}

// The checks of lz4_read_sequence that need the output position op: literals and match inside
// the output, an offset that is not 0 and not before the output's start.
CS_HD inline bool lz4_fast_checks(std::uint32_t lit, std::uint32_t off, std::uint32_t mlen, std::uint32_t op,
                                  std::uint32_t out_size) {
  const std::uint32_t op_l = op + lit;
  return !(lit > out_size - op || off == 0 || off > op_l || mlen > out_size - op_l);
}

CS_HD inline bool lz4_fast_step(const std::uint8_t* w, std::uint32_t ip, std::uint32_t in_size, std::uint32_t op,
                                std::uint32_t out_size, Lz4BatchSeq* s, std::uint32_t* next_ip) {
  Lz4FastShape f;
  if (!lz4_fast_shape(w, ip, in_size, &f) || !lz4_fast_checks(f.lit, f.off, f.mlen, op, out_size)) return false;
  s->lit_src = ip + f.head;
  s->lit_len = f.lit;
  s->op = op;
  s->off = f.off;
  s->mlen = f.mlen;
  *next_ip = ip + f.size;
  return true;
}

// A batch as the walker hands it to the copiers.
struct Lz4BatchHead {
  std::uint32_t n;       // sequences in seqs[0, n)
  std::uint32_t b0;      // output position of the first
  std::uint32_t end;     // output position after the last
  std::uint32_t flags;   // kLz4Batch* below
};
inline constexpr std::uint32_t kLz4BatchDone = 1;   // no batch follows (end of block or error)
inline constexpr std::uint32_t kLz4BatchLone = 2;   // seqs[0] alone, copied in order in pieces
inline constexpr std::uint32_t kLz4BatchError = 4;  // the walk failed: nothing to copy
// Set in Lz4BatchSeq::off for a match whose source ends before the batch starts: it reads only
// bytes of earlier batches, so it is copied beside the literals, in any order.
inline constexpr std::uint32_t kLz4Independent = 0x80000000u;

// The serial part: walks the token stream, checks every sequence and hands out batches. Run by
// one warp (all lanes run the same walk; leader() writes the batch). Lanes: leader(), and the
// Fill of the staged reader; for bursts also each(), set(), get(), scan_add(), scan_min() and
// first() over PerLane values (Lz4HostLanes says what each does).
//
// Bursts. Walking one sequence after another costs a chain of dependent steps per sequence
// (find the token, read the lengths, check, admit to the batch, store the record), and on the
// GPU the walker warp sets the pace of the whole block (docs/gpu_decoders.md, "Which warp sets
// the pace"). Where the next kLz4BurstBytes + kLz4FastSpan input bytes are staged, a burst
// takes up to a batch's worth of sequences at once: the lanes compute, for every position of
// the next kLz4BurstBytes, where the next token would be if a token stood there
// (lz4_fast_next; 0 where the fast path does not apply) into `burst_table`; one walk along
// that table finds the tokens (one load per sequence); lane i then reads sequence i, a prefix
// sum gives the output positions, and the checks and the batch rules run per lane, the first
// lane that fails a check or a rule ending the burst. The records and batches are those the
// walk one by one makes (tested: Lz4Ring.BurstsMakeTheSameBatches), and a sequence the fast
// path declines goes through next() as before, so statuses do not change either.
//
// Bursts = false compiles them out (the device kernel without bursts keeps the walk's registers).
template <class Fill, class Lanes, bool Bursts = true>
struct Lz4RingWalker {
  std::uint32_t in_size;
  std::uint32_t size;
  Lz4StagedReader<Fill> rd;  // the staged input window (its `window` 16-byte aligned)
  Lanes lanes;
  std::uint32_t ip = 0, op = 0;
  bool last = false, have_pending = false;
  Lz4BatchSeq pending{};
  DecodeStatus status = DecodeStatus::kOk;
  std::uint16_t* burst_table = nullptr;  // kLz4BurstBytes entries (nullptr: no bursts)
  Lz4BurstRule burst_rule{};
  std::uint32_t burst_wait = 0;     // sequences to walk one by one before the next burst
  std::uint32_t burst_backoff = 0;  // the wait after the next miss is twice this (at least 1)

  // The next sequence at (ip, op): fast path from the window, else the general parse.
  CS_HD_TEMPLATE CS_HD DecodeStatus next(Lz4BatchSeq* s) {
    const std::uint32_t left = in_size - ip;
    if (left >= kLz4FastSpan + 3) {
      // (len = 0 makes the next read refill at ip, 16-byte aligned: with a window of at least
      // span + 16 bytes and span + 3 bytes left the new window holds the span)
      if (ip - rd.base + kLz4FastSpan > rd.len) {  // also when ip < base: wraps around
        rd.len = 0;
        static_cast<void>(rd[ip]);
      }
      std::uint32_t nip = 0;
      if (ip - rd.base + kLz4FastSpan <= rd.len && lz4_fast_step(rd.window + (ip - rd.base), ip, in_size, op, size, s, &nip)) {
        ip = nip;
        return DecodeStatus::kOk;
      }
    }
    std::size_t ip64 = ip;
    Lz4Sequence g;
    const DecodeStatus st = lz4_read_sequence(rd, in_size, &ip64, op, size, &g, &last);
    if (st != DecodeStatus::kOk) return st;
    ip = static_cast<std::uint32_t>(ip64);
    s->lit_src = static_cast<std::uint32_t>(g.lit_src);
    s->lit_len = static_cast<std::uint32_t>(g.lit_len);
    s->op = op;
    s->off = static_cast<std::uint32_t>(g.match_offset);
    s->mlen = static_cast<std::uint32_t>(g.match_len);
    return DecodeStatus::kOk;
  }

  CS_HD_TEMPLATE CS_HD void put(Lz4BatchSeq* seqs, std::uint32_t j, const Lz4BatchSeq& s) {
    if (lanes.leader()) seqs[j] = s;
  }

  // What a burst did: took nothing (walk on one by one), took sequences and the batch goes on,
  // or took sequences and ended the batch (a lone sequence, or one left pending).
  enum class Burst { kNone, kMore, kEnded };

  // A burst at (ip, op) into the batch being walked (walk's n, b0, end, min_src, flags; see the
  // comment above the struct). Needs no pending sequence and room in the batch.
  CS_HD_TEMPLATE CS_HD Burst burst(Lz4BatchSeq* seqs, std::uint32_t& n, std::uint32_t b0, std::uint32_t& end,
                                   std::uint32_t& min_src, std::uint32_t& flags) {
    constexpr std::uint32_t kSpan = kLz4BurstBytes + kLz4FastSpan;
    // every table position has the fast path's span of input after it
    if (burst_table == nullptr || rd.cap < kSpan + 16 || in_size - ip < kSpan + 3) return Burst::kNone;
    if (ip - rd.base + kSpan > rd.len) {  // also when ip < base: wraps around
      rd.len = 0;
      static_cast<void>(rd[ip]);
    }
    if (ip - rd.base + kSpan > rd.len) return Burst::kNone;
    const std::uint8_t* const w = rd.window + (ip - rd.base);
    std::uint16_t* const tbl = burst_table;
    const std::uint32_t ip0 = ip, in_n = in_size;
    // the sequence at ip first, by every lane alike: where the fast path declines it, next()
    // reads it anyway and the table would find nothing before it (a miss, like an empty table)
    if (lz4_fast_next(w, in_n - ip0) == 0) return burst_missed();
    lanes.each([&](unsigned lane) {
#if defined(__CUDA_ARCH__)
#pragma unroll 4
#endif
      for (std::uint32_t r = lane; r < kLz4BurstBytes; r += kLz4RingLanes) {
        const std::uint32_t size = lz4_fast_next(w + r, in_n - (ip0 + r));
        tbl[r] = size != 0 ? static_cast<std::uint16_t>(r + size) : std::uint16_t{0};
      }
    });
    // the tokens: lane i gets the i-th one's position relative to ip
    typename Lanes::template PerLane<std::uint32_t> tok;
    const std::uint32_t want = kLz4BatchMax - n;
    std::uint32_t cnt = 0;
    for (std::uint32_t r = 0; cnt < want && r < kLz4BurstBytes;) {
      const std::uint32_t next = tbl[r];
      if (next == 0) break;
      lanes.set(tok, cnt, r);
      ++cnt;
      r = next;
    }
    if (cnt == 0) return burst_missed();
    // lane i reads sequence i; a prefix sum of the output lengths places them
    typename Lanes::template PerLane<Lz4FastShape> shape;
    typename Lanes::template PerLane<std::uint32_t> len, adv;  // adv: input after it, from ip
    lanes.each([&](unsigned lane) {
      len[lane] = 0;
      adv[lane] = 0;
      if (lane < cnt) {
        static_cast<void>(lz4_fast_shape(w + tok[lane], ip0 + tok[lane], in_n, &shape[lane]));
        len[lane] = shape[lane].lit + shape[lane].mlen;
        adv[lane] = tok[lane] + shape[lane].size;
      }
    });
    lanes.scan_add(len);  // now each lane's output end, relative to op
    // the checks (the first lane that fails stops the burst: next() then reads that sequence
    // and gives its status), the batch rules and the independence of each match
    typename Lanes::template PerLane<std::uint32_t> src;
    typename Lanes::template PerLane<bool> bad;
    const std::uint32_t op0 = op, out_n = size;
    lanes.each([&](unsigned lane) {
      bad[lane] = false;
      src[lane] = 0xFFFFFFFFu;
      if (lane < cnt) {
        const Lz4FastShape& f = shape[lane];
        const std::uint32_t at = op0 + len[lane] - f.lit - f.mlen;
        bad[lane] = !lz4_fast_checks(f.lit, f.off, f.mlen, at, out_n);
        src[lane] = at + f.lit - f.off;
      }
    });
    const std::uint32_t found = cnt;
    cnt = lanes.first(bad, cnt);
    if (cnt == 0) return burst_missed();
    lanes.scan_min(src);  // the lowest match source up to each lane
    typename Lanes::template PerLane<bool> over;
    const std::uint32_t ms0 = min_src;
    lanes.each([&](unsigned lane) {
      over[lane] = false;
      if (lane < cnt) {
        const std::uint32_t e = op0 + len[lane];
        const std::uint32_t ms = src[lane] < ms0 ? src[lane] : ms0;
        over[lane] = e - b0 > kLz4BatchBytes || e - ms > kLz4RingBytes;
      }
    });
    const std::uint32_t ok = lanes.first(over, cnt);  // sequences admitted
    // the admitted ones' records, each lane its own
    const std::uint32_t n0 = n;
    lanes.each([&](unsigned lane) {
      if (lane < ok) {
        const Lz4FastShape& f = shape[lane];
        Lz4BatchSeq q{ip0 + tok[lane] + f.head, f.lit, op0 + len[lane] - f.lit - f.mlen, f.off, f.mlen};
        if (q.op + q.lit_len - q.off + q.mlen <= b0) q.off |= kLz4Independent;
        seqs[n0 + lane] = q;
      }
    });
    const std::uint32_t took = ok < cnt ? ok + 1 : cnt;  // sequences consumed from the input
    // a miss: few sequences although the batch had room and none of its rules stopped the burst
    if (took < burst_rule.min_take && found < want && ok == cnt && cnt == found) {
      static_cast<void>(burst_missed());
    } else {
      burst_backoff = 0;
    }
    ip = ip0 + lanes.get(adv, took - 1);
    op = op0 + lanes.get(len, took - 1);
    if (ok < cnt) {
      // the refused one, read again by every lane (the walker's state is the same in all): the
      // batch's only, copied alone, or the next batch's first
      const std::uint32_t r = lanes.get(tok, ok);
      Lz4FastShape f;
      static_cast<void>(lz4_fast_shape(w + r, ip0 + r, in_n, &f));
      const Lz4BatchSeq q{ip0 + r + f.head, f.lit, op - f.lit - f.mlen, f.off, f.mlen};
      if (ok == 0 && n == 0) {
        flags = kLz4BatchLone;
        put(seqs, 0, q);
        n = 1;
        end = op;
        return Burst::kEnded;
      }
      pending = q;
    }
    if (ok > 0) {
      n += ok;
      end = op0 + lanes.get(len, ok - 1);
      const std::uint32_t ms = lanes.get(src, ok - 1);
      min_src = ms < ms0 ? ms : ms0;
    }
    if (ok < cnt) {
      have_pending = true;
      return Burst::kEnded;
    }
    return Burst::kMore;
  }

  // After a burst that took too little (Lz4BurstRule): wait 1, 2, 4, ... up to max_wait
  // sequences before the next try.
  CS_HD Burst burst_missed() {
    const std::uint32_t twice = burst_backoff == 0 ? 1u : 2u * burst_backoff;
    burst_backoff = twice < burst_rule.max_wait ? twice : burst_rule.max_wait;
    burst_wait = burst_backoff;
    return Burst::kNone;
  }

  // Walks the next batch into *h and seqs; returns true when it is the last one (the block
  // ended or a sequence failed: then `status` says why and the batch holds nothing).
  CS_HD_TEMPLATE CS_HD bool walk(Lz4BatchHead* h, Lz4BatchSeq* seqs) {
    std::uint32_t n = 0, b0 = op, end = op, min_src = 0xFFFFFFFFu, flags = 0;
    for (;;) {
      Lz4BatchSeq s;
      if (have_pending) {
        s = pending;
        have_pending = false;
        b0 = s.op;
      } else {
        if (last || n == kLz4BatchMax) break;
        if constexpr (Bursts) {
          if (burst_wait == 0) {
            const Burst b = burst(seqs, n, b0, end, min_src, flags);
            if (b == Burst::kEnded) break;
            if (b == Burst::kMore) continue;
          } else {
            --burst_wait;
          }
        }
        const DecodeStatus st = next(&s);
        if (st != DecodeStatus::kOk) {
          status = st;
          flags = kLz4BatchError | kLz4BatchDone;
          n = 0;
          break;
        }
        op = s.op + s.lit_len + s.mlen;
      }
      const std::uint32_t e = s.op + s.lit_len + s.mlen;
      const std::uint32_t src = s.off != 0 ? s.op + s.lit_len - s.off : e;
      const std::uint32_t ms = src < min_src ? src : min_src;
      if (e - b0 > kLz4BatchBytes || e - ms > kLz4RingBytes) {
        if (n == 0) {  // too large for any batch: copied on its own, in order
          flags = kLz4BatchLone;
          put(seqs, 0, s);
          n = 1;
          end = e;
        } else {  // starts the next batch
          pending = s;
          have_pending = true;
        }
        break;
      }
      if (s.off != 0 && src + s.mlen <= b0) s.off |= kLz4Independent;
      put(seqs, n, s);
      ++n;
      end = e;
      min_src = ms;
    }
    if (last && !have_pending) {
      flags |= kLz4BatchDone;
      // short of the size its container promised: the block is damaged
      if (!(flags & kLz4BatchError) && op != size) status = DecodeStatus::kCorrupt;
    }
    if (lanes.leader()) *h = Lz4BatchHead{n, b0, end, flags};
    return (flags & kLz4BatchDone) != 0;
  }
};

// How a match is cut into pieces (Lz4RingCopier::match, lz4_ring_match_phases). A piece of
// len bytes at output p reads [p - off, p - off + len) and writes [p, p + len) while lanes run
// in no fixed order, so:
//  - overlap: with off >= 32 a piece reads only bytes written before it, len <= off (with
//    off < 32 the lanes repeat the period instead: len is a multiple of off);
//  - ring aliasing: writing p + k overwrites slot of p + k - 64 Ki, which is source byte
//    k - (64 Ki - off) of the same piece. A direct piece (each lane reads then writes its bytes)
//    must end before that: len <= 64 Ki - off. A staged piece (every lane loads its bytes into
//    registers, the warp meets, then every lane stores) reads all before it writes any, so only
//    the overlap rule and the registers (kLz4StageBytes) bound it;
//  - at most kLz4BatchBytes, so that room() can make space for it.
// Staging costs a second meeting per piece, so it is taken only where the aliasing bound is
// narrower than a staged piece: offsets above 64 Ki - 512 with more than 64 Ki - off bytes
// left. Before staging, a match at offset 65535 moved one byte per phase.
inline constexpr std::uint32_t kLz4StageBytesPerLane = 16;  // 4 registers per lane
inline constexpr std::uint32_t kLz4StageBytes = kLz4RingLanes * kLz4StageBytesPerLane;

struct Lz4StagedBytes {
  std::uint32_t w[kLz4StageBytesPerLane / 4];
};

struct Lz4MatchPiece {
  std::uint32_t len;  // bytes of the next piece (>= 1 when left >= 1)
  bool staged;        // loaded into registers before any store
};

// The next piece of a match at offset off (1..65535) with `left` bytes to copy.
CS_HD inline Lz4MatchPiece lz4_ring_match_piece(std::uint32_t off, std::uint32_t left) {
  if (off < kLz4RingLanes) {
    const std::uint32_t cap = kLz4BatchBytes / off * off;
    return {left < cap ? left : cap, false};
  }
  const std::uint32_t over = off < kLz4BatchBytes ? off : kLz4BatchBytes;  // overlap bound
  const std::uint32_t gap = kLz4RingBytes - off;                          // aliasing bound (direct)
  const std::uint32_t direct = gap < over ? gap : over;
  const std::uint32_t staged = over < kLz4StageBytes ? over : kLz4StageBytes;
  // one direct phase takes what is left, or direct pieces are at least as wide as staged ones
  if (left <= direct || direct >= staged) return {left < direct ? left : direct, false};
  return {left < staged ? left : staged, true};
}

// Warp meetings (lane phases) of the copier warp that Lz4RingCopier::match spends on a match of
// n bytes at offset off, not counting flushes: one per direct piece, two per staged piece.
CS_HD inline std::uint64_t lz4_ring_match_phases(std::uint32_t off, std::uint64_t n) {
  std::uint64_t phases = 0;
  while (n != 0) {
    const std::uint32_t left = n > 0xFFFFFFFFu ? 0xFFFFFFFFu : static_cast<std::uint32_t>(n);
    const Lz4MatchPiece piece = lz4_ring_match_piece(off, left);
    phases += piece.staged ? 2 : 1;
    n -= piece.len;
  }
  return phases;
}

// The parallel part: copies batches into the ring and flushes the ring to the output. The
// literals of a batch and its independent matches ("phase 1") may be shared among several
// warps (warp w of nw takes sequences w, w + nw, ...); the other matches ("phase 2") and any
// flush run in one warp, in order. Lanes: each(f) runs f(lane) for lanes 0..31 and makes their
// writes visible to the warp (device: every lane runs its own f, then __syncwarp);
// each_nosync(f) the same without the meeting; PerLane<T> is a T per lane (device: one T held
// in each lane's registers; host: an array indexed by lane).
template <class Lanes>
struct Lz4RingCopier {
  const std::uint8_t* in;
  std::uint8_t* out;
  std::uint8_t* ring;  // kLz4RingBytes, 16-byte aligned
  Lanes lanes;
  std::uint32_t mis = 0;      // out's address mod 16
  std::uint32_t flushed = 0;  // output [0, flushed) is in `out` (tracked by the phase-2 warp)

  CS_HD void init() { mis = static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(out) & 15u); }

  // Output [flushed, end) from the ring to `out`: bytes up to 16-byte alignment of the
  // destination, then 16-byte vectors (a vector never wraps: the ring size is a multiple of 16
  // and slot and destination share their alignment), then the tail.
  CS_HD_TEMPLATE CS_HD void flush(std::uint32_t end) {
    const std::uint32_t from = flushed;
    if (end == from) return;
    std::uint32_t head = (16u - ((from + mis) & 15u)) & 15u;
    if (head > end - from) head = end - from;
    const std::uint32_t vecs = (end - from - head) / 16;
    const std::uint32_t body = from + head;
    const std::uint32_t tail = body + vecs * 16;
    std::uint8_t* const o = out;
    std::uint8_t* const r = ring;
    const std::uint32_t m = mis;
    lanes.each([&](unsigned lane) {
      if (lane < head) o[from + lane] = r[(from + lane + m) & kLz4RingMask];
      for (std::uint32_t v = lane; v < vecs; v += kLz4RingLanes) {
        const std::uint32_t p = body + 16 * v;
        copy16(o + p, r + ((p + m) & kLz4RingMask));
      }
      for (std::uint32_t p = tail + lane; p < end; p += kLz4RingLanes) o[p] = r[(p + m) & kLz4RingMask];
    });
    flushed = end;
  }

  CS_HD static void copy16(std::uint8_t* dst, const std::uint8_t* src) {
#ifdef __CUDA_ARCH__
    *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
#else
    std::memcpy(dst, src, 16);
#endif
  }

  CS_HD static std::uint8_t load_in(const std::uint8_t* p) {
#ifdef __CUDA_ARCH__
    return __ldg(p);
#else
    return *p;
#endif
  }

  // Makes room for writing up to `end`: the ring holds at most 64 Ki unflushed bytes.
  CS_HD_TEMPLATE CS_HD void room(std::uint32_t upto_now, std::uint32_t end) {
    if (end - flushed > kLz4RingBytes) flush(upto_now);
  }

  // n literal bytes from input position src to output position p; the caller meets the warp.
  CS_HD_TEMPLATE CS_HD void literals_nosync(std::uint32_t src, std::uint32_t p, std::uint32_t n) {
    const std::uint8_t* s = in + src;
    std::uint8_t* const r = ring;
    const std::uint32_t base = p + mis;
    lanes.each_nosync([&](unsigned lane) {
      for (std::uint32_t k = lane; k < n; k += kLz4RingLanes) r[(base + k) & kLz4RingMask] = load_in(s + k);
    });
  }

  // A match whose source ends before its destination starts (one phase); the caller meets the
  // warp.
  CS_HD_TEMPLATE CS_HD void match_flat_nosync(std::uint32_t m0, std::uint32_t off, std::uint32_t n) {
    std::uint8_t* const r = ring;
    const std::uint32_t d = m0 + mis, s = m0 - off + mis;
    lanes.each_nosync([&](unsigned lane) {
      for (std::uint32_t k = lane; k < n; k += kLz4RingLanes) r[(d + k) & kLz4RingMask] = r[(s + k) & kLz4RingMask];
    });
  }

  // The match of n bytes at output position m0 from `off` back, in pieces cut by
  // lz4_ring_match_piece (which says why each bound holds). With off < 32 a piece starts at a
  // multiple of off and byte k of it repeats byte k mod off of the `off` bytes before it; a
  // direct piece is one lane phase (each lane copies its bytes, the warp meets); a staged piece
  // is two (each lane loads its bytes into registers, the warp meets, each lane stores, the
  // warp meets). Room is made before each piece.
  CS_HD_TEMPLATE CS_HD void match(std::uint32_t m0, std::uint32_t off, std::uint32_t n) {
    std::uint8_t* const r = ring;
    std::uint32_t q = 0;
    while (q < n) {
      const Lz4MatchPiece piece = lz4_ring_match_piece(off, n - q);
      const std::uint32_t len = piece.len;
      const std::uint32_t p = m0 + q;
      room(p, p + len);
      const std::uint32_t d = p + mis;
      const std::uint32_t s = p - off + mis;
      if (off < kLz4RingLanes) {
        const std::uint32_t step = kLz4RingLanes % off;
        lanes.each([&](unsigned lane) {
          std::uint32_t rr = lane % off;
          for (std::uint32_t k = lane; k < len; k += kLz4RingLanes) {
            r[(d + k) & kLz4RingMask] = r[(s + rr) & kLz4RingMask];
            rr += step;
            if (rr >= off) rr -= off;
          }
        });
      } else if (piece.staged) {
        match_staged(d, s, len);
      } else {
        lanes.each([&](unsigned lane) {
          for (std::uint32_t k = lane; k < len; k += kLz4RingLanes)
            r[(d + k) & kLz4RingMask] = r[(s + k) & kLz4RingMask];
        });
      }
      q += len;
    }
  }

  // A staged piece of len <= kLz4StageBytes bytes from ring slot s to ring slot d: lane l holds
  // bytes l, l + 32, ... (at most kLz4StageBytesPerLane, packed in 4-byte words) between a phase
  // of loads and a phase of stores. The meeting between them is what lets the piece overwrite
  // slots it reads (far matches: the destination wraps onto the source 64 Ki - off bytes on).
  // Lane l reads bytes l, l + 32, ... of the source: consecutive lanes read consecutive bytes.
  CS_HD_TEMPLATE CS_HD void match_staged(std::uint32_t d, std::uint32_t s, std::uint32_t len) {
    std::uint8_t* const r = ring;
    typename Lanes::template PerLane<Lz4StagedBytes> held;
    lanes.each([&](unsigned lane) {
      Lz4StagedBytes& h = held[lane];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
      for (std::uint32_t i = 0; i < kLz4StageBytesPerLane; ++i) {
        const std::uint32_t k = lane + i * kLz4RingLanes;
        const std::uint32_t b = k < len ? r[(s + k) & kLz4RingMask] : 0u;
        if (i % 4 == 0) h.w[i / 4] = 0;
        h.w[i / 4] |= b << (8 * (i % 4));
      }
    });
    lanes.each([&](unsigned lane) {
      const Lz4StagedBytes& h = held[lane];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
      for (std::uint32_t i = 0; i < kLz4StageBytesPerLane; ++i) {
        const std::uint32_t k = lane + i * kLz4RingLanes;
        if (k < len) r[(d + k) & kLz4RingMask] = static_cast<std::uint8_t>(h.w[i / 4] >> (8 * (i % 4)));
      }
    });
  }

  // One sequence that cannot be batched: literals in pieces, then the match (one warp).
  CS_HD_TEMPLATE CS_HD void lone(const Lz4BatchSeq& s) {
    for (std::uint32_t q = 0; q < s.lit_len;) {
      const std::uint32_t len = s.lit_len - q < kLz4BatchBytes ? s.lit_len - q : kLz4BatchBytes;
      room(s.op + q, s.op + q + len);
      literals_nosync(s.lit_src + q, s.op + q, len);
      lanes.sync();
      q += len;
    }
    if (s.off != 0) match(s.op + s.lit_len, s.off, s.mlen);
  }

  // Phase 1 of a batch for warp w of nw: literals and independent matches. No lane reads what
  // another writes in this phase: literals come from the input, independent matches read
  // output before the batch, and every destination is distinct.
  CS_HD_TEMPLATE CS_HD void phase1(const Lz4BatchHead& h, const Lz4BatchSeq* seqs, unsigned w, unsigned nw) {
    for (std::uint32_t j = w; j < h.n; j += nw) {
      const Lz4BatchSeq s = seqs[j];
      if (s.lit_len != 0) literals_nosync(s.lit_src, s.op, s.lit_len);
      if (s.off & kLz4Independent) match_flat_nosync(s.op + s.lit_len, s.off & ~kLz4Independent, s.mlen);
    }
  }

  // Phase 2 (one warp, after every warp's phase 1): the other matches, in order.
  CS_HD_TEMPLATE CS_HD void phase2(const Lz4BatchHead& h, const Lz4BatchSeq* seqs) {
    for (std::uint32_t j = 0; j < h.n; ++j) {
      const Lz4BatchSeq s = seqs[j];
      if (s.off != 0 && !(s.off & kLz4Independent)) match(s.op + s.lit_len, s.off, s.mlen);
    }
  }
};

// The host's lanes: one after another.
// PerLane<T>: a T for each lane (the device's lanes hold their own T in registers). meetings:
// the warp meetings (each, sync) so far, for tests that count phases.
struct Lz4HostLanes {
  std::uint64_t meetings = 0;
  template <class T>
  struct PerLane {
    T v[kLz4RingLanes];
    // CS_HD: called inside the copier's CS_HD lambdas, which nvcc also compiles for the device
    CS_HD T& operator[](unsigned lane) { return v[lane]; }
  };
  // CS_HD: the walker's CS_HD members call these (nvcc compiles them for the device too)
  CS_HD_TEMPLATE template <class F>
  CS_HD void each(F&& f) {
    each_nosync(f);
    ++meetings;
  }
  CS_HD_TEMPLATE template <class F>
  CS_HD void each_nosync(F&& f) {
    for (unsigned l = 0; l < kLz4RingLanes; ++l) f(l);
  }
  CS_HD void sync() { ++meetings; }
  CS_HD bool leader() const { return true; }
  // The walker's collectives (the device's are warp shuffles and a ballot):
  // set: lane `at` takes value v; get: every lane reads lane `from`'s value;
  // scan_add / scan_min: each lane gets the sum / minimum of lanes 0..itself (inclusive);
  // first: the lowest lane below `limit` whose flag is set, else `limit`.
  template <class T>
  CS_HD void set(PerLane<T>& p, unsigned at, const T& v) {
    p[at] = v;
  }
  template <class T>
  CS_HD T get(PerLane<T>& p, unsigned from) {
    return p[from];
  }
  CS_HD void scan_add(PerLane<std::uint32_t>& p) {
    for (unsigned l = 1; l < kLz4RingLanes; ++l) p[l] += p[l - 1];
  }
  CS_HD void scan_min(PerLane<std::uint32_t>& p) {
    for (unsigned l = 1; l < kLz4RingLanes; ++l) p[l] = p[l] < p[l - 1] ? p[l] : p[l - 1];
  }
  CS_HD std::uint32_t first(PerLane<bool>& p, std::uint32_t limit) {
    for (std::uint32_t l = 0; l < limit; ++l)
      if (p[l]) return l;
    return limit;
  }
};

// Copier warps of the device kernel (phase 1 is shared among them; the host runs the same
// split, warp after warp).
inline constexpr unsigned kLz4CopyWarps = 3;

// Host run of the device's ring decoder (tests and fuzzing): one block of in_size bytes that
// must decode to exactly `size` bytes, with a staging window of window_cap (>= kLz4FastSpan + 16)
// bytes (bursts need kLz4BurstBytes + kLz4FastSpan + 16: a smaller window walks one sequence
// at a time; `burst_rule` says when bursts are tried). The walker and the copiers take turns
// batch by batch, in the order the device's barriers impose. Blocks at or over kLz4RingMaxBytes take lz4_decode_exact_with, as on the
// device. *copier_meetings (when given) receives the warp meetings the copiers' each() and
// sync() made (phase 2, lone sequences, flushes; phase 1's shared copies meet once per batch
// on the device and are not counted).
inline DecodeStatus lz4_ring_decode_host(const std::uint8_t* in, std::size_t in_size, std::uint8_t* out,
                                         std::size_t size, std::size_t window_cap = 4096,
                                         std::uint64_t* copier_meetings = nullptr, Lz4BurstRule burst_rule = {}) {
  if (in_size >= kLz4RingMaxBytes || size >= kLz4RingMaxBytes) {
    Lz4SerialCopier copy;
    return lz4_decode_exact_with(in, in_size, out, size, copy);
  }
  if (in_size == 0) return DecodeStatus::kCorrupt;
  struct Buffers {
    alignas(16) std::uint8_t ring[kLz4RingBytes];
    Lz4BatchSeq seqs[kLz4BatchMax];
    Lz4BatchHead head;
    std::uint16_t burst[kLz4BurstBytes];
  };
  auto* b = new Buffers;
  auto* window = new std::uint8_t[window_cap];
  Lz4RingWalker<Lz4MemcpyFill, Lz4HostLanes> walker{static_cast<std::uint32_t>(in_size), static_cast<std::uint32_t>(size),
                                                   Lz4StagedReader<Lz4MemcpyFill>{in, in_size, window, window_cap, {}},
                                                   {}};
  walker.burst_table = b->burst;
  walker.burst_rule = burst_rule;
  Lz4RingCopier<Lz4HostLanes> copier{in, out, b->ring, {}};
  copier.init();
  for (;;) {
    const bool done = walker.walk(&b->head, b->seqs);
    const Lz4BatchHead h = b->head;
    if (h.flags & kLz4BatchError) break;
    if (h.flags & kLz4BatchLone) {
      copier.lone(b->seqs[0]);
    } else if (h.n != 0) {
      copier.room(h.b0, h.end);
      for (unsigned w = 0; w < kLz4CopyWarps; ++w) copier.phase1(h, b->seqs, w, kLz4CopyWarps);
      copier.phase2(h, b->seqs);
    }
    if (done) {
      copier.flush(h.end);
      break;
    }
  }
  if (copier_meetings != nullptr) *copier_meetings = copier.lanes.meetings;
  delete[] window;
  delete b;
  return walker.status;
}

}  // namespace cubestream::codec::logic
