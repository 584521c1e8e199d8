// Shared pieces of the Zstandard decoder (RFC 8878) that runs on the host and on the GPU:
// the one bounds-check pattern, little-endian loads, the forward and backward bit readers,
// and the "team" abstraction that lets the same code run on one host thread or on a warp.
//
// Every length, count and offset that comes from the input is checked through
// CS_ZSTD_REQUIRE before it is used to index memory; a failed check returns a DecodeStatus
// (no exceptions, no std containers, no host-only calls: see core/host_device.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "codec/logic/decode_status.hpp"
#include "core/host_device.hpp"

// Returns `status` from the enclosing function unless `cond` holds.
#define CS_ZSTD_REQUIRE(cond, status)                                \
  do {                                                               \
    if (!(cond)) return ::cubestream::codec::logic::DecodeStatus::status; \
  } while (0)

// Evaluates an expression yielding a DecodeStatus and returns it unless it is kOk.
#define CS_ZSTD_TRY(expr)                                                        \
  do {                                                                           \
    const ::cubestream::codec::logic::DecodeStatus cs_zstd_st_ = (expr);         \
    if (cs_zstd_st_ != ::cubestream::codec::logic::DecodeStatus::kOk) return cs_zstd_st_; \
  } while (0)

namespace cubestream::codec::logic::zstd {

using u8 = std::uint8_t;
using u16 = std::uint16_t;
using u32 = std::uint32_t;
using u64 = std::uint64_t;

CS_HD inline u32 load_le16(const u8* p) { return u32(p[0]) | (u32(p[1]) << 8); }
CS_HD inline u32 load_le24(const u8* p) { return u32(p[0]) | (u32(p[1]) << 8) | (u32(p[2]) << 16); }
CS_HD inline u32 load_le32(const u8* p) { return load_le24(p) | (u32(p[3]) << 24); }
CS_HD inline u64 load_le64(const u8* p) { return u64(load_le32(p)) | (u64(load_le32(p + 4)) << 32); }
// load_le64(p) where [lo, hi) is readable and holds [p, p + 8). On the GPU, eight byte loads
// become one aligned 8-byte load, or two and a funnel shift when both aligned words lie inside
// [lo, hi) (never a byte outside it); the GPU is little-endian like the format.
CS_HD inline u64 load_le64_in(const u8* p, const u8* lo, const u8* hi) {
#if CS_DEVICE_PASS
  const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t a0 = a & ~std::uintptr_t(7);
  if (a == a0) return *reinterpret_cast<const u64*>(p);
  if (a0 >= reinterpret_cast<std::uintptr_t>(lo) && a0 + 16 <= reinterpret_cast<std::uintptr_t>(hi)) {
    const u64* q = reinterpret_cast<const u64*>(a0);
    const u64 x = q[0], y = q[1];
    const unsigned sh = static_cast<unsigned>(a - a0) * 8;
    return (x >> sh) | (y << (64 - sh));
  }
#endif
  (void)lo;
  (void)hi;
  return load_le64(p);
}

// Bytes [at, at + 8) of p[0, size) as a little-endian number, the bytes past size read as zero
// (the bit readers' window at a stream's end).
CS_HD inline u64 load_le64_or_zero(const u8* p, std::size_t size, u64 at) {
  if (at + 8 <= size) return load_le64_in(p + at, p, p + size);
  u64 v = 0;
  for (u32 i = 0; i < 8; ++i) {
    if (at + i < size) v |= u64(p[at + i]) << (8 * i);
  }
  return v;
}

// Index of the highest set bit (v != 0).
CS_HD inline u32 highbit32(u32 v) {
#if CS_DEVICE_PASS
  return 31u - static_cast<u32>(__clz(v));
#else
  return 31u - static_cast<u32>(__builtin_clz(v));
#endif
}

// The n lowest bits set, 0 <= n <= 32 (on the GPU one funnel shift, which clamps its count at
// 32: (0 : ~0) << n keeps ~0 >> (32 - n) in its high word).
CS_HD inline u32 low_mask(u32 n) {
#if CS_DEVICE_PASS
  return __funnelshift_lc(0xFFFFFFFFu, 0u, n);
#else
  return n >= 32 ? 0xFFFFFFFFu : (1u << n) - 1;
#endif
}

CS_HD inline std::size_t min_size(std::size_t a, std::size_t b) { return a < b ? a : b; }

// ---- teams -------------------------------------------------------------------------------
// The decoder is written for a "team" of cooperating threads: every member runs the same
// serial control flow on the same data (so every branch is uniform and every scalar result
// identical), and the members split the data-parallel loops (copies, table fills, the four
// Huffman streams) by rank. SerialTeam is the host's team of one; the CUDA build adds a warp
// team (src/cuda/zstd/zstd_batch.cu). A member must call sync() after writing memory that
// other members read next.
//
// The sequence execution of split.hpp also needs the team's collective operations: an
// inclusive prefix sum over the members in rank order (scan_add), a bit mask of the members
// for which a condition holds (ballot; bit r for rank r), the lowest rank in such a mask, and
// a value of another member (shfl). For the team of one they are the identity.
struct SerialTeam {
  CS_HD unsigned rank() const { return 0; }
  CS_HD unsigned size() const { return 1; }
  CS_HD void sync() const {}
  CS_HD bool any(bool b) const { return b; }
  CS_HD u64 scan_add(u64 v) const { return v; }
  CS_HD u32 ballot(bool b) const { return b ? 1u : 0u; }
  CS_HD u32 lowest(u32) const { return 0; }
  CS_HD u32 shfl(u32 v, u32) const { return v; }
  CS_HD u64 shfl(u64 v, u32) const { return v; }
};

// ---- forward bit reader --------------------------------------------------------------------
// Reads a little-endian bit stream from its first bit upwards: the FSE table description
// (RFC 8878 section 4.1.1) is written this way. Bits past the end read as zero; the caller
// checks with bytes_used() that no bit past the end was used. Reads come from an 8-byte window
// reloaded only when a field leaves it: the plan and table passes parse every block's
// descriptions one field at a time, and on the GPU each reload is a dependent trip to memory
// (five byte loads per field before; the plan pass took ~4 ms of a 1 GB batch).
struct ForwardBits {
  const u8* p;
  std::size_t size;
  u64 bitpos;
  u64 win = 0;              // bytes [win_byte, win_byte + 8) of the stream, zero past its end
  u64 win_byte = ~u64(0);

  CS_HD u32 peek(u32 n) {  // n <= 32
    const u64 byte = bitpos >> 3;
    if (win_byte == ~u64(0) || byte < win_byte || byte + 5 > win_byte + 8) {
      win_byte = byte;
      win = load_le64_or_zero(p, size, byte);
    }
    // byte - win_byte <= 3, so the shift is <= 31 and the field's <= 32 bits are in the window.
    const u32 shift = static_cast<u32>(8 * (byte - win_byte) + (bitpos & 7));
    return static_cast<u32>((win >> shift) & ((u64(1) << n) - 1));
  }
  CS_HD void skip(u32 n) { bitpos += n; }
  CS_HD u32 read(u32 n) {
    const u32 v = peek(n);
    skip(n);
    return v;
  }
  CS_HD u64 bytes_used() const { return (bitpos + 7) >> 3; }
};

// ---- 16-byte stores from a thread that writes 4-byte words one at a time -------------------
// Word j of an array (`base` 16-byte aligned) goes into slot j % 4 of registers (selects, no
// indexed array, so nothing spills to local memory); when slot 3 fills, the four words go out
// as one aligned 16-byte store. On the GPU, where each lane of a warp writes its own stream of
// words, a 4-byte store per word is one partial L2 sector per lane; a 16-byte store covers
// four words (ncu, H100: the sequence kernel's L2 was 60 % busy with 81 % of its sectors from
// such accesses, docs/gpu_zstd.md v3.9). Words before `first` (where the writer began) are
// not touched; finish(end) stores the words of an incomplete last quad one by one. The
// caller puts words j = first, first + 1, ... in order.
struct QuadStore {
  u32* base;
  u32 first;
  u32 w[4];

  CS_HD void put(u32 j, u32 v) {
    const u32 k = j & 3;
#pragma unroll
    for (u32 m = 0; m < 4; ++m) w[m] = k == m ? v : w[m];
    if (k == 3) {
      const u32 q = j - 3;
      if (q >= first) {
#if CS_DEVICE_PASS
        *reinterpret_cast<uint4*>(base + q) = make_uint4(w[0], w[1], w[2], w[3]);
#else
        // The GPU's 16-byte store needs base + q 16-byte aligned; the host checks it, so that
        // the host tests catch a caller whose base is not (a misaligned store faults there).
        if ((reinterpret_cast<std::uintptr_t>(base + q) & 15) != 0) std::abort();
        for (u32 m = 0; m < 4; ++m) base[q + m] = w[m];
#endif
      } else {
        store_from(q, j + 1);
      }
    }
  }
  // Words [max(first, q), to) of the quad starting at q, one by one.
  CS_HD void store_from(u32 q, u32 to) {
#pragma unroll
    for (u32 m = 0; m < 4; ++m) {
      if (q + m >= first && q + m < to) base[q + m] = w[m];
    }
  }
  // After the last word, end - 1.
  CS_HD void finish(u32 end) {
    if ((end & 3) != 0) store_from(end & ~3u, end);
  }
};

// ---- backward bit reader -------------------------------------------------------------------
// Huffman streams, the Huffman-weight FSE stream and the sequence stream are read backwards
// (RFC 8878 section 4.1 and 4.2.2): the stream is one little-endian number whose highest set
// bit (in the last byte) is a marker; fields are read from just below the marker downwards.
// `pos` counts the bits not yet read: bits [0, pos) of that number. Reading more bits than
// remain yields zeros for the missing low bits and sets `overflow`, which is how the format
// defines the end of the Huffman-weight stream (section 4.2.1.2); elsewhere it is an error.
struct BackwardBits {
  const u8* p = nullptr;
  std::size_t size = 0;
  u64 pos = 0;
  u64 win = 0;          // bytes [win_byte, win_byte + 8) of the stream, little-endian
  u64 win_byte = ~u64(0);
  bool overflow = false;

  // RFC 8878 section 4.1: the last byte holds the marker bit, so it cannot be zero.
  CS_HD DecodeStatus init(const u8* src, std::size_t n) {
    p = src;
    size = n;
    CS_ZSTD_REQUIRE(n > 0, kCorrupt);
    const u8 last = src[n - 1];
    CS_ZSTD_REQUIRE(last != 0, kCorrupt);
    pos = u64(n - 1) * 8 + highbit32(last);
    win_byte = ~u64(0);
    overflow = false;
    return DecodeStatus::kOk;
  }

  // Bits [at, at + n) of the stream, n <= 56.
  CS_HD u64 bits(u64 at, u32 n) {
    if (win_byte == ~u64(0) || at < win_byte * 8 || at + n > win_byte * 8 + 64) {
      const u64 end_byte = (at + n + 7) >> 3;
      win_byte = end_byte >= 8 ? end_byte - 8 : 0;
      win = load_le64_or_zero(p, size, win_byte);
    }
    return (win >> (at - win_byte * 8)) & ((u64(1) << n) - 1);
  }

  CS_HD u64 peek(u32 n) {
    if (n == 0) return 0;
    if (n <= pos) return bits(pos - n, n);
    return pos == 0 ? 0 : bits(0, static_cast<u32>(pos)) << (n - pos);
  }
  CS_HD void consume(u32 n) {
    if (n > pos) {
      overflow = true;
      pos = 0;
    } else {
      pos -= n;
    }
  }
  CS_HD u64 read(u32 n) {
    const u64 v = peek(n);
    consume(n);
    return v;
  }
  // True once every bit has been read, exactly: the condition every stream must end in.
  CS_HD bool finished_exactly() const { return pos == 0 && !overflow; }
};

// A faster reader of the same backward stream for stretches where plenty of bits remain (the
// caller guarantees pos >= 57 + the bits it reads before the next check): a 64-bit window of
// the 8 bytes ending with the byte that holds bit pos - 1, refilled by one load when fewer
// bits than asked for are left in it; no end-of-stream or overflow checks. read(n) returns
// bits [pos - n, pos) like BackwardBits::read. Positions fit 32 bits: a block is <= 128 KiB.
struct FastBackwardBits {
  const u8* p;
  std::size_t size;
  u32 pos;
  u32 base;  // the window holds bits [base, base + 64)
  u64 w;
  CS_HD FastBackwardBits(const BackwardBits& b)
      : p(b.p), size(b.size), pos(static_cast<u32>(b.pos)), base(static_cast<u32>(b.pos)), w(0) {}
  CS_HD void refill() {
    const u32 byte = ((pos + 7) >> 3) - 8;  // pos >= 57: byte >= 0, and byte + 8 <= size
    w = load_le64_in(p + byte, p, p + size);
    base = 8 * byte;  // now 57 <= pos - base <= 64
  }
  CS_HD u32 read(u32 n) {  // n <= 31
    if (n == 0) return 0;
    if (pos - base < n) refill();
    pos -= n;
    return static_cast<u32>(w >> (pos - base)) & ((1u << n) - 1);
  }
};


// Aligned 8-byte word k of a stream's words from `a` (8-byte aligned): one load on the GPU.
CS_HD inline u64 stream_word(const u8* a, u32 k) {
#if CS_DEVICE_PASS
  return reinterpret_cast<const u64*>(a)[k];
#else
  return load_le64(a + 8 * std::size_t(k));
#endif
}

// Rings of stream words in shared memory, filled ahead of their use by asynchronous copies
// (cp.async, 8 bytes each, cached in L1; plain loads on the host), which the GPU's sequence
// readers (BackwardWordQueue below, TraceWindow in sequence_trace.hpp) wait for in groups: a
// reader commits one group per step and waits until at most `kPending` of its latest groups
// are still in flight, so that no register load is waited on inside a step.
template <u32 kRingWords>
CS_HD inline void ring_copy_word(u64* ring, const u8* a, u32 k) {
#if CS_DEVICE_PASS
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(ring + (k & (kRingWords - 1))));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(dst), "l"(a + 8 * std::size_t(k)) : "memory");
#else
  ring[k & (kRingWords - 1)] = stream_word(a, k);
#endif
}
CS_HD inline void ring_commit() {
#if CS_DEVICE_PASS
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
template <int kPending>
CS_HD inline void ring_wait() {
#if CS_DEVICE_PASS
  asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory");
#endif
}
// Waits for every copy (before a ring is reused for another stream).
CS_HD inline void ring_drain() {
#if CS_DEVICE_PASS
  asm volatile("cp.async.wait_all;" ::: "memory");
#endif
}

// A third reader of the same backward stream, for the GPU's sequence pass (pass 2b): a
// 128-bit window of two aligned 8-byte words (`hi` = word j, `lo` = word j - 1, counting
// words from `a`, the stream's start rounded down to 8 bytes) and the next two words below
// them (`n1`, `n2`). extract() cuts n <= 32 bits out of the window at a bit offset the caller
// computes from the field widths, and advance() moves the window down to the caller's new
// position, by selects and without a load; the caller reads at most 63 bits between advances
// and advances at most twice between refill()s, which load the two words below the window.
// So on the GPU no load waits inside a sequence: refill() at the end of one sequence is in
// flight together with the next sequence's table lookups (an ncu profile showed the
// sequence loop waiting on a word loaded one advance earlier for a quarter of its stalls).
// The caller keeps positions (`abit`: bits not yet read, counted from `a`) and guarantees
// abit >= 3 * 64 + the bits it reads before the next check, so that every word loaded lies
// inside [a, end of the stream). Word j (the top one) may reach past the stream's end: it is
// loaded once, with those bytes read as zero.
struct BackwardWordWindow {
  const u8* a;
  u32 j;
  u64 hi, lo, n1, n2;

  CS_HD u64 word(u32 k) const { return stream_word(a, k); }
  // The window for `pos` bits left of the stream p[0, size) (p - 8 still inside the caller's
  // buffer: the first word may start up to 7 bytes before p). Returns abit.
  CS_HD u32 init(const u8* p, std::size_t size, u32 pos) {
    const u32 m = static_cast<u32>(reinterpret_cast<std::uintptr_t>(p) & 7);
    a = p - m;
    const u32 abit = pos + 8 * m;
    j = (abit - 1) >> 6;
    hi = load_le64_or_zero(a, m + size, u64(8) * j);  // word j, without the bytes past the stream's end
    lo = word(j - 1);
    refill();
    return abit;
  }
  // The two words below the window (j >= 3). (A prefetch of the line 128 bytes further down,
  // tried on the H100, made the sequences kernel slower: 9.95 -> 10.4 ms with its tables in
  // shared memory, 18.8 -> 35.9 ms with them in the scratch, whose lines it evicted.)
  CS_HD void refill() {
    n1 = word(j - 2);
    n2 = word(j - 3);
  }
  // Bits [bit, bit + n) of the stream (bit counted from a, inside the window), n <= 32.
  CS_HD u32 extract(u32 bit, u32 n) const {
    const u32 off = bit - 64 * (j - 1);  // 0 <= off < 128
    const bool upper = off >= 64;
    const u64 x = upper ? hi : lo, y = upper ? 0 : hi;
    const u32 s = off & 63;
    const u64 v = (x >> s) | ((y << 1) << (63 - s));
    return static_cast<u32>(v) & low_mask(n);
  }
  // The 64 bits below abit, bits [abit - 64, abit) of the stream from a, as one word (bit 63 =
  // the bit just below abit), for abit inside the window's top word (after advance(abit)).
  CS_HD u64 below(u32 abit) const {
    const u32 s = abit - 64 * j;  // 1 <= s <= 64: the bits of word j below abit
    return s == 64 ? hi : (lo >> s) | ((hi << 1) << (63 - s));
  }
  // Moves the window to abit (at most 63 bits below the last position): down by one word or
  // not at all.
  CS_HD void advance(u32 abit) {
    const u32 jn = (abit - 1) >> 6;
    const bool down = jn != j;
    hi = down ? lo : hi;
    lo = down ? n1 : lo;
    n1 = down ? n2 : n1;
    j = jn;
  }
};

// The window of the sequence pass (pass 2b), fed through a small ring of words in shared
// memory that asynchronous copies fill a sequence ahead. With BackwardWordWindow's refill(),
// the two words below the window are loaded into registers at the end of a sequence for the
// next one, and ncu (H100, v3.8) put half of the sequence kernel's stall samples on the first
// instruction of the loop waiting for those loads: the compiler waits for a loop's register
// loads before its next iteration, wherever their values are used, and with 16 streams per
// warp some lane starts a new 32-byte sector, from L2, nearly every sequence. A copy into
// shared memory (cp.async) has no register to wait for: step_end() starts the copies of the
// words that have come within five words of the window (j - 4 and j - 5 at most; each word is
// copied once, so a step copies as many words as the window moved down in it: 0-2, ~0.6 on
// average for ERA5-like sequences), then waits only for the copies started a step earlier,
// which hold words j - 2 and j - 3 (the window moves at most two words a step), and reads
// those two into `n1`, `n2` (copies two steps ahead, tried on the H100, were no faster).
// advance() reads nothing else. On the host the copies are plain loads. `ring` is kRingWords
// words of the caller's (one ring per stream). The caller keeps abit >= 5 * 64 + 1 + the bits
// of a step before each one, so that every word loaded lies inside [a, end of the stream); at
// most 63 bits between advances, two advances a step. Used by the sequence pass (a step is a
// sequence) and by the Huffman streams of pass 2a (a step is four symbols, one advance).
struct BackwardWordQueue : BackwardWordWindow {
  static constexpr u32 kRingWords = 8;  // words j - 2 .. j - 5, and two copies in flight
  u64* ring;
  u32 crossed;  // words the window moved down since the last step_end (0-2)
  u32 lowest;   // the lowest word copied (or loaded) into the ring so far

  CS_HD void copy_to_ring(u32 k) { ring_copy_word<kRingWords>(ring, a, k); }
  CS_HD u64 from_ring(u32 k) const { return ring[k & (kRingWords - 1)]; }
  // Waits for every copy (before the ring is reused for another stream).
  CS_HD static void drain() { ring_drain(); }

  CS_HD u32 init(const u8* p, std::size_t size, u32 pos, u64* ring_words) {
    const u32 abit = BackwardWordWindow::init(p, size, pos);
    ring = ring_words;
    for (u32 k = 2; k <= 5; ++k) ring[(j - k) & (kRingWords - 1)] = word(j - k);
    crossed = 0;
    lowest = j - 5;
    return abit;
  }
  // Moves the window to abit (at most 63 bits below the last position): down by one word or
  // not at all, the new low word being n1 or, at the second move of a sequence, n2.
  CS_HD void advance(u32 abit) {
    const u32 jn = (abit - 1) >> 6;
    const bool down = jn != j;
    const u64 next = crossed != 0 ? n2 : n1;
    hi = down ? lo : hi;
    lo = down ? next : lo;
    crossed += down ? 1u : 0u;
    j = jn;
  }
  // After a step: starts the copies of the words down to j - 5 not copied yet (as many as the
  // window moved down in the step, at most two: each word is copied when it comes 4 or 5 below
  // the window, so at least one step before it is 2 or 3 below), waits for the earlier ones,
  // and reads words j - 2 and j - 3. A step that copies nothing commits an empty group, so
  // that "all groups but the latest" keeps meaning "every copy of the steps before".
  CS_HD void step_end() {
    const u32 want = j - 5;
    if (want < lowest) copy_to_ring(lowest - 1);
    if (want + 1 < lowest) copy_to_ring(lowest - 2);
    lowest = want;
    ring_commit();
    ring_wait<1>();  // every copy but those of this step_end
    n1 = from_ring(j - 2);
    n2 = from_ring(j - 3);
    crossed = 0;
  }
};

}  // namespace cubestream::codec::logic::zstd
