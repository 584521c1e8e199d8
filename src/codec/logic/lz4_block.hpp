// Decoder of the LZ4 block format, shared by host and device.
//
// A block is a series of sequences; each sequence is
//   token      1 byte: high nibble = literal length L, low nibble = match length M - 4
//   [L ext]    if L == 15: more bytes, each added to L, until one that is not 255
//   literals   L bytes, copied to the output
//   offset     2 bytes little-endian, 1..65535: the match starts `offset` bytes back
//   [M ext]    if the low nibble is 15: more bytes as for L
// The match copies M = nibble + 4 (+ extension) bytes from `offset` bytes back, byte by byte in
// effect, so it may overlap what it writes (offset 1 repeats the last byte). The last sequence
// stops after its literals: the block ends exactly where the input ends.
//
// The LZ4 spec also says that a compressor leaves the last 5 bytes as literals and starts the
// last match at least 12 bytes before the end. Those rules exist so that a fast decoder may
// over-copy; this decoder never relies on them: every length read from the input is checked
// against the input and the output before anything is copied, so any input, however damaged,
// only reads [in, in + in_size) and only writes [out, out + out_cap). It accepts a few blocks
// that liblz4 refuses (those breaking only the end-of-block rules), and decodes every block
// liblz4 accepts to the same bytes.
//
// Organisation (for the GPU): the parse (lz4_read_sequence) is serial and touches a few bytes
// per sequence; the copies are where the bytes move. lz4_decode_block_with runs the parse and
// hands each copy to a `Copier`: the host copier below copies serially, the device copier
// (src/cuda/decode/warp_copy.cuh) runs the same parse in all 32 lanes of a warp and lets the
// lanes share each copy. The numcodecs lz4 kernel decodes whole blocks its own way
// (codec/logic/lz4_ring.hpp: a walker warp and copier warps around a 64 KiB output ring), with
// lz4_read_sequence for every sequence its fast path does not take.
//
// The numcodecs `lz4` codec stores a 4-byte little-endian decoded size before one block
// (lz4_numcodecs_decode).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include "codec/logic/decode_status.hpp"
#include "core/host_device.hpp"

namespace cubestream::codec::logic {

inline constexpr std::size_t kLz4MinMatch = 4;
inline constexpr std::size_t kLz4NumcodecsHeader = 4;

// One parsed sequence: literals [lit_src, lit_src + lit_len) of the input go to the output at
// the current position, then match_len bytes are copied from match_offset bytes back.
struct Lz4Sequence {
  std::size_t lit_src = 0;
  std::size_t lit_len = 0;
  std::size_t match_offset = 0;
  std::size_t match_len = 0;  // 0: the last sequence (literals only)
};

// Reads an extended length: bytes are added until one that is not 255. Each byte consumes
// input, so the total stays below 255 * in_size and cannot overflow a size_t.
CS_HD_TEMPLATE
template <class Reader>
CS_HD inline bool lz4_read_length_ext(Reader& in, std::size_t in_size, std::size_t* ip, std::size_t* len) {
  std::uint8_t b;
  do {
    if (*ip >= in_size) return false;
    b = in[(*ip)++];
    *len += b;
  } while (b == 255);
  return true;
}

// Parses the sequence at input position *ip for an output position `op` of `out_cap`, checking
// every length against both buffers and the offset against what has been written. On success
// *ip moves past the sequence; *last says the block ends after its literals. `in` is anything
// with in[i] for i < in_size: the input pointer, or a staging window (Lz4StagedReader).
CS_HD_TEMPLATE
template <class Reader>
CS_HD inline DecodeStatus lz4_read_sequence(Reader& in, std::size_t in_size, std::size_t* ip, std::size_t op,
                                            std::size_t out_cap, Lz4Sequence* s, bool* last) {
  if (*ip >= in_size) return DecodeStatus::kCorrupt;
  const std::uint8_t token = in[(*ip)++];
  std::size_t lit = token >> 4;
  if (lit == 15 && !lz4_read_length_ext(in, in_size, ip, &lit)) return DecodeStatus::kCorrupt;
  if (lit > in_size - *ip) return DecodeStatus::kCorrupt;  // literals run past the input
  if (lit > out_cap - op) return DecodeStatus::kWrongSize;  // more output than expected
  s->lit_src = *ip;
  s->lit_len = lit;
  *ip += lit;
  op += lit;
  if (*ip == in_size) {  // the input ends after the literals: the last sequence
    s->match_offset = 0;
    s->match_len = 0;
    *last = true;
    return DecodeStatus::kOk;
  }
  if (in_size - *ip < 2) return DecodeStatus::kCorrupt;
  const std::size_t offset = static_cast<std::size_t>(in[*ip]) | (static_cast<std::size_t>(in[*ip + 1]) << 8);
  *ip += 2;
  // offset 0 is invalid; an offset before the start of the output needs a dictionary, which a
  // Zarr chunk never has
  if (offset == 0 || offset > op) return DecodeStatus::kCorrupt;
  std::size_t match = token & 15u;
  if (match == 15 && !lz4_read_length_ext(in, in_size, ip, &match)) return DecodeStatus::kCorrupt;
  match += kLz4MinMatch;
  if (match > out_cap - op) return DecodeStatus::kWrongSize;
  s->match_offset = offset;
  s->match_len = match;
  *last = false;
  return DecodeStatus::kOk;
}

// Reads the input through a staging buffer of `cap` bytes (>= 32): a read outside the staged
// window refills it starting at or up to 15 bytes before the byte asked for, so that the
// window's start is 16-byte aligned in memory where the input allows (the GPU fills it with
// 16-byte loads). The GPU keeps the window in shared memory: a refill brings 2 KiB in with a
// few independent loads per lane instead of one dependent cache miss per 128 bytes, and the
// parse then reads shared memory. `Fill` copies n bytes from src to the window.
template <class Fill>
struct Lz4StagedReader {
  const std::uint8_t* src;
  std::size_t size;
  std::uint8_t* window;
  std::size_t cap;
  Fill fill;
  std::size_t base = 0;
  std::size_t len = 0;

  CS_HD std::uint8_t operator[](std::size_t i) {
    if (i - base >= len) stage(i);  // also when i < base: the difference wraps around
    return window[i - base];
  }

  // Where a window that must hold input byte i starts: i, or up to 15 bytes before it where that
  // makes src + start 16-byte aligned.
  CS_HD std::size_t aligned_start(std::size_t i) const {
    const std::size_t back = static_cast<std::size_t>(reinterpret_cast<std::uintptr_t>(src + i) & 15u);
    return back <= i ? i - back : i;
  }

  // Refills the window so that it starts at aligned_start(i) (i < size).
  CS_HD void stage(std::size_t i) {
    base = aligned_start(i);
    len = size - base < cap ? size - base : cap;
    fill(window, src + base, len);
  }
};

// The host's fill of a staged reader's window (host runs of the device decoders).
struct Lz4MemcpyFill {
  void operator()(std::uint8_t* win, const std::uint8_t* src, std::size_t n) const { std::memcpy(win, src, n); }
};

// Copies for the host build, one thread.
struct Lz4SerialCopier {
  // The parse reads the input directly.
  CS_HD const std::uint8_t* reader(const std::uint8_t* in, std::size_t) { return in; }
  CS_HD void literals(std::uint8_t* dst, const std::uint8_t* src, std::size_t n) {
    for (std::size_t k = 0; k < n; ++k) dst[k] = src[k];
  }
  // dst[k] = dst[k - offset] for k in [0, n), in order: with offset < n the match repeats the
  // last `offset` bytes. Runs of min(offset, 8) bytes read only bytes already written.
  CS_HD void match(std::uint8_t* dst, std::size_t offset, std::size_t n) {
    const std::uint8_t* src = dst - offset;
    std::size_t k = 0;
    if (offset >= 8) {
      for (; k + 8 <= n; k += 8) memcpy(dst + k, src + k, 8);
    }
    for (; k < n; ++k) dst[k] = src[k];
  }
};

// Decodes one block of in_size bytes into out (capacity out_cap); *produced receives the bytes
// written (also on error: what was written before the failing sequence). The Copier supplies
// reader(in, size) (what the parse reads through), literals() and match().
// Status: kOk, kCorrupt (bad input), kWrongSize (would write more than out_cap).
CS_HD_TEMPLATE
template <class Copier>
CS_HD inline DecodeStatus lz4_decode_block_with(const std::uint8_t* in, std::size_t in_size, std::uint8_t* out,
                                                std::size_t out_cap, std::size_t* produced, Copier& copy) {
  std::size_t ip = 0, op = 0;
  *produced = 0;
  // an empty input is not a block (the empty block is the single token 0x00)
  if (in_size == 0) return DecodeStatus::kCorrupt;
  // the parse reads through the copier's reader (direct, or staged); literals are copied
  // from the input itself
  auto rd = copy.reader(in, in_size);
  for (;;) {
    Lz4Sequence s;
    bool last = false;
    const DecodeStatus st = lz4_read_sequence(rd, in_size, &ip, op, out_cap, &s, &last);
    if (st != DecodeStatus::kOk) {
      *produced = op;
      return st;
    }
    copy.literals(out + op, in + s.lit_src, s.lit_len);
    op += s.lit_len;
    if (last) break;
    copy.match(out + op, s.match_offset, s.match_len);
    op += s.match_len;
  }
  *produced = op;
  return DecodeStatus::kOk;
}

CS_HD inline DecodeStatus lz4_decode_block(const std::uint8_t* in, std::size_t in_size, std::uint8_t* out,
                                           std::size_t out_cap, std::size_t* produced) {
  Lz4SerialCopier copy;
  return lz4_decode_block_with(in, in_size, out, out_cap, produced, copy);
}

// A block that must decode to exactly `size` bytes (blosc streams, numcodecs lz4).
CS_HD_TEMPLATE
template <class Copier>
CS_HD inline DecodeStatus lz4_decode_exact_with(const std::uint8_t* in, std::size_t in_size, std::uint8_t* out,
                                                std::size_t size, Copier& copy) {
  std::size_t produced = 0;
  const DecodeStatus st = lz4_decode_block_with(in, in_size, out, size, &produced, copy);
  if (st != DecodeStatus::kOk) return st;
  // short of the size its container promised: the block is damaged
  return produced == size ? DecodeStatus::kOk : DecodeStatus::kCorrupt;
}

// A whole block for a container (numcodecs lz4, blosc streams): a copier that has its own
// lz4_block(in, in_size, out, size) decodes blocks its own way (the device copier,
// src/cuda/decode/warp_ring_lz4.cuh); any other runs lz4_decode_exact_with with its copies.
template <class C, class = void>
struct Lz4HasBlock {
  static constexpr bool value = false;
};
template <class C>
struct Lz4HasBlock<C, decltype(static_cast<void>(std::declval<C&>().lz4_block(
                          static_cast<const std::uint8_t*>(nullptr), std::size_t{}, static_cast<std::uint8_t*>(nullptr),
                          std::size_t{})))> {
  static constexpr bool value = true;
};

CS_HD_TEMPLATE
template <class Copier>
CS_HD inline DecodeStatus lz4_container_block(const std::uint8_t* in, std::size_t in_size, std::uint8_t* out,
                                              std::size_t size, Copier& copy) {
  if constexpr (Lz4HasBlock<Copier>::value) {
    return copy.lz4_block(in, in_size, out, size);
  } else {
    return lz4_decode_exact_with(in, in_size, out, size, copy);
  }
}

// numcodecs lz4: u32 little-endian decoded size, then one block. The caller knows the decoded
// size from the array's metadata (`expected`); a header that says otherwise is kWrongSize
// before anything is decoded, a block that decodes to another size than its header kCorrupt.
CS_HD_TEMPLATE
template <class Copier>
CS_HD inline DecodeStatus lz4_numcodecs_decode_with(const std::uint8_t* in, std::size_t in_size, std::uint8_t* out,
                                                    std::size_t expected, Copier& copy) {
  if (in_size < kLz4NumcodecsHeader) return DecodeStatus::kCorrupt;
  const std::size_t size = static_cast<std::size_t>(in[0]) | (static_cast<std::size_t>(in[1]) << 8) |
                           (static_cast<std::size_t>(in[2]) << 16) | (static_cast<std::size_t>(in[3]) << 24);
  if (size != expected) return DecodeStatus::kWrongSize;
  return lz4_container_block(in + kLz4NumcodecsHeader, in_size - kLz4NumcodecsHeader, out, size, copy);
}

CS_HD inline DecodeStatus lz4_numcodecs_decode(const std::uint8_t* in, std::size_t in_size, std::uint8_t* out,
                                               std::size_t expected) {
  Lz4SerialCopier copy;
  return lz4_numcodecs_decode_with(in, in_size, out, expected, copy);
}

}  // namespace cubestream::codec::logic
