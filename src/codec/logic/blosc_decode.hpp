// Decoding a c-blosc 1.x container as independent work units, shared by host and device.
//
// The GPU decodes a batch of blosc buffers in three passes (src/cuda/decode/blosc_batch.cu):
//   1. plan: one thread per buffer parses the header (blosc_format.hpp) and counts its work
//      units (blosc_plan);
//   2. units: one warp per unit decodes one stream of one block (blosc_decode_unit), into the
//      output or, when the buffer is shuffled, into a staging copy of the same layout;
//   3. unshuffle: each block of a shuffled buffer is unshuffled from staging into the output
//      (blosc_unshuffle_block_range).
// The host build runs the same functions one after another (blosc_decode_serial), which is
// what CI tests against libblosc and fuzzes.
//
// Work units. A block of blocksize bytes is stored as nsplits streams (blosc_format.hpp), and
// every stream decodes on its own, so a unit is one stream: unit u of a buffer is stream
// u % nsplits of block u / nsplits, the last (leftover) block being a single stream. A memcpyed
// buffer is cut into units of kBloscCopyUnitBytes. c-blosc raises a forced block size below 128
// bytes to 128 and then rounds it down to a multiple of typesize when typesize is smaller (so
// a block holds >= 65 bytes for typesize <= 64, >= 128 otherwise), and splits a block only
// into streams of >= 128 bytes. So every unit but a leftover one decodes to >= 64 bytes and a
// buffer of nbytes has at most nbytes / 64 + 1 units: blosc_max_units bounds the work. A buffer
// with more units than that (hand-made, or damaged) is not one c-blosc wrote: it gets
// kUnsupported and the CPU path decides what it is.
//
// Inner compressors decoded here: LZ4 (and LZ4HC, same format) and BloscLZ. Zstandard,
// zlib and snappy streams make the buffer kUnsupported (see blosc_inner_supported), which the
// host API answers by decoding the buffer on the CPU.
#pragma once

#include <cstddef>
#include <cstdint>

#include "codec/logic/bit_shuffle.hpp"
#include "codec/logic/blosc_format.hpp"
#include "codec/logic/blosclz.hpp"
#include "codec/logic/byte_shuffle.hpp"
#include "codec/logic/decode_status.hpp"
#include "codec/logic/lz4_block.hpp"
#include "core/host_device.hpp"

namespace cubestream::codec::logic {

inline constexpr std::size_t kBloscMinUnitBytes = 64;
inline constexpr std::size_t kBloscCopyUnitBytes = 64 * 1024;

// Upper bound of the units of a buffer that decodes to `nbytes` (see above).
CS_HD inline std::size_t blosc_max_units(std::size_t nbytes) { return nbytes / kBloscMinUnitBytes + 1; }

// The inner compressors this decoder handles. The one place that decides which blosc buffers
// the GPU path leaves to the CPU: a Zstandard stream needs the batched Zstandard decoder
// (src/cuda/zstd, dispatched in src/cuda/decode/zstd_dispatch.cu), zlib and snappy are not
// decoded on the GPU.
CS_HD inline bool blosc_inner_supported(std::uint8_t compressor_format) {
  return compressor_format == static_cast<std::uint8_t>(BloscCompressor::kLz4) ||
         compressor_format == static_cast<std::uint8_t>(BloscCompressor::kBlosclz);
}

// What the passes need to know about one buffer, from its header alone.
struct BloscPlan {
  BloscHeader h;
  std::uint32_t nblocks = 0;
  std::uint32_t nsplits = 1;      // streams of each full block (the leftover block has 1)
  std::uint64_t units = 0;        // work units (streams, or copy pieces if memcpyed)
  bool staged = false;            // decoded into staging, then unshuffled into the output
};

CS_HD inline DecodeStatus blosc_check_status(const BloscCheck& c) {
  switch (c.status) {
    case BloscStatus::kOk: return DecodeStatus::kOk;
    case BloscStatus::kUnsupportedVersion:
    case BloscStatus::kReservedFlag:
    case BloscStatus::kUnsupportedCompressorVersion: return DecodeStatus::kUnsupported;
    default: return DecodeStatus::kCorrupt;
  }
}

// Pass 1: parses the buffer's header and plans its units. `expected` is the decoded size the
// caller knows from metadata; a header that says otherwise is kWrongSize.
CS_HD inline DecodeStatus blosc_plan(const std::uint8_t* p, std::size_t size, std::size_t expected, BloscPlan* plan) {
  *plan = BloscPlan{};
  const DecodeStatus st = blosc_check_status(blosc_parse_header(p, size, &plan->h));
  if (st != DecodeStatus::kOk) return st;
  const BloscHeader& h = plan->h;
  if (h.nbytes != expected) return DecodeStatus::kWrongSize;
  if (h.nbytes == 0) return DecodeStatus::kOk;  // nothing to decode, whatever follows
  if (h.memcpyed()) {
    plan->units = (h.nbytes + kBloscCopyUnitBytes - 1) / kBloscCopyUnitBytes;
    return DecodeStatus::kOk;
  }
  if (!blosc_inner_supported(h.compressor_format())) return DecodeStatus::kUnsupported;
  plan->nblocks = h.nblocks();
  // every full block has blocksize bytes and the same split decision
  const bool has_full = !(plan->nblocks == 1 && h.is_leftover_block(0));
  if (has_full && blosc_block_is_split(h, h.blocksize, false)) {
    if (h.blocksize % h.typesize != 0) return DecodeStatus::kCorrupt;  // kSplitBlockNotWhole
    plan->nsplits = h.typesize;
  }
  const std::uint32_t full = h.nbytes / h.blocksize;
  plan->units = static_cast<std::uint64_t>(full) * plan->nsplits + (h.nbytes % h.blocksize != 0 ? 1u : 0u);
  if (plan->units > blosc_max_units(h.nbytes)) return DecodeStatus::kUnsupported;
  plan->staged = h.byte_shuffled() || (h.flags & kBloscFlagBitShuffle) != 0;
  return DecodeStatus::kOk;
}

// Decoded bytes of a planned buffer's largest unit: a stream of a full block or the leftover
// block, or a copy piece of a memcpyed buffer. The GPU queue orders buffers by it.
CS_HD inline std::uint64_t blosc_largest_unit_bytes(const BloscPlan& plan) {
  const BloscHeader& h = plan.h;
  if (h.memcpyed()) return h.nbytes < kBloscCopyUnitBytes ? h.nbytes : kBloscCopyUnitBytes;
  if (h.blocksize == 0) return 0;
  // a split full block's streams can be shorter than the leftover block (one stream)
  const std::uint64_t stream = h.nbytes >= h.blocksize ? h.blocksize / plan.nsplits : 0;
  const std::uint64_t leftover = h.nbytes % h.blocksize;
  return stream > leftover ? stream : leftover;
}

// Whether the buffer's leftover block, its last unit, is longer than a full block's streams.
// c-blosc does not split the leftover block, so a chunk of numcodecs' layout whose size is not
// a multiple of the block size ends in one stream up to four times longer than its others (a
// 721 x 1440 float32 field: 28 streams of 128 KiB and one of 472 KiB). The GPU queue takes these
// units first, before every buffer's other units.
CS_HD inline bool blosc_leftover_leads(const BloscPlan& plan) {
  const BloscHeader& h = plan.h;
  if (h.memcpyed() || h.blocksize == 0 || h.nbytes % h.blocksize == 0 || plan.units < 2) return false;
  return h.nbytes % h.blocksize > h.blocksize / plan.nsplits;
}

// Where unit u of a planned (non-memcpyed) buffer lies: block j, stream k of `streams`, and
// the decoded size of each of that block's streams.
struct BloscUnit {
  std::uint32_t block = 0;
  std::uint32_t stream = 0;
  std::uint32_t streams = 1;
  std::size_t stream_bytes = 0;
};

CS_HD inline BloscUnit blosc_unit_at(const BloscPlan& plan, std::uint64_t u) {
  BloscUnit r;
  const std::uint64_t full_units = static_cast<std::uint64_t>(plan.h.nbytes / plan.h.blocksize) * plan.nsplits;
  if (u < full_units) {
    r.block = static_cast<std::uint32_t>(u / plan.nsplits);
    r.stream = static_cast<std::uint32_t>(u % plan.nsplits);
    r.streams = plan.nsplits;
    r.stream_bytes = plan.h.blocksize / plan.nsplits;
  } else {  // the leftover block: one stream
    r.block = plan.nblocks - 1;
    r.stream = 0;
    r.streams = 1;
    r.stream_bytes = plan.h.block_bytes(r.block);
  }
  return r;
}

// Decodes one stream of `format` to exactly `size` bytes at dst. The Copier moves the bytes
// (serially on the host, shared by a warp's lanes on the GPU); BloscLZ is decoded by one
// thread (the caller picks which: `serial_lane`).
CS_HD_TEMPLATE
template <class Copier>
CS_HD inline DecodeStatus blosc_decode_stream(std::uint8_t format, const std::uint8_t* src, std::size_t csize,
                                              bool raw, std::uint8_t* dst, std::size_t size, Copier& copy,
                                              bool serial_lane) {
  if (raw) {
    copy.literals(dst, src, size);
    return DecodeStatus::kOk;
  }
  if (format == static_cast<std::uint8_t>(BloscCompressor::kLz4)) {
    return lz4_container_block(src, csize, dst, size, copy);
  }
  if (format == static_cast<std::uint8_t>(BloscCompressor::kBlosclz)) {
    BlosclzResult r;
    if (serial_lane) r = blosclz_decode(src, csize, dst, size);
    copy.sync();
    r.status = copy.broadcast_status(r.status);
    r.produced = copy.broadcast_size(r.produced);
    if (r.status == BlosclzStatus::kOutputFull) return DecodeStatus::kWrongSize;
    if (r.status != BlosclzStatus::kOk) return DecodeStatus::kCorrupt;
    return r.produced == size ? DecodeStatus::kOk : DecodeStatus::kCorrupt;
  }
  return DecodeStatus::kUnsupported;  // excluded by blosc_plan
}

// Pass 2: decodes unit u of buffer p (size bytes) planned as `plan`. Output goes to `dst`
// (the buffer's output) or, for a staged buffer, to `stage` (same layout, nbytes bytes).
CS_HD_TEMPLATE
template <class Copier>
CS_HD inline DecodeStatus blosc_decode_unit(const std::uint8_t* p, const BloscPlan& plan, std::uint64_t u,
                                            std::uint8_t* dst, std::uint8_t* stage, Copier& copy,
                                            bool serial_lane) {
  const BloscHeader& h = plan.h;
  if (h.memcpyed()) {
    const std::size_t begin = static_cast<std::size_t>(u) * kBloscCopyUnitBytes;
    const std::size_t n = h.nbytes - begin < kBloscCopyUnitBytes ? h.nbytes - begin : kBloscCopyUnitBytes;
    copy.literals(dst + begin, p + kBloscHeaderSize + begin, n);
    return DecodeStatus::kOk;
  }
  const BloscUnit un = blosc_unit_at(plan, u);
  std::size_t offset = 0;
  DecodeStatus st = blosc_check_status(blosc_block_start(p, h, un.block, &offset));
  if (st != DecodeStatus::kOk) return st;
  // the streams of a block follow each other: walk to stream k through the sizes before it
  BloscStream s;
  for (std::uint32_t k = 0;; ++k) {
    st = blosc_check_status(blosc_read_stream(p, h, offset, un.stream_bytes, &s));
    if (st != DecodeStatus::kOk) return st;
    if (k == un.stream) break;
    offset = s.data_offset + s.csize;
  }
  std::uint8_t* base = plan.staged ? stage : dst;
  std::uint8_t* target =
      base + static_cast<std::size_t>(un.block) * h.blocksize + static_cast<std::size_t>(un.stream) * un.stream_bytes;
  return blosc_decode_stream(h.compressor_format(), p + s.data_offset, s.csize, s.raw, target, un.stream_bytes,
                             copy, serial_lane);
}

// Pass 3: elements [begin, end) of block j of a staged buffer go from staging to the output,
// with c-blosc's per-block rules (byte shuffle; bit shuffle only of a whole number of groups
// of 8 elements; trailing bytes copied). Work is cut by element (byte shuffle), by group of 8
// elements (bit shuffle) or by byte (plain copy); blosc_unshuffle_items says how many there
// are, so that GPU threads can share a block.
enum class BloscUnshuffleKind : std::uint8_t { kCopy, kByte, kBit };

struct BloscBlockShuffle {
  BloscUnshuffleKind kind = BloscUnshuffleKind::kCopy;
  std::size_t bytes = 0;   // the block's decoded size
  std::size_t n = 0;       // elements (byte and bit shuffle)
  std::size_t items = 0;   // units of work: elements, groups of 8 elements, or bytes
  std::size_t tail = 0;    // bytes after the shuffled part, copied as they are
};

CS_HD inline BloscBlockShuffle blosc_block_shuffle(const BloscHeader& h, std::uint32_t j) {
  BloscBlockShuffle b;
  b.bytes = h.block_bytes(j);
  const std::size_t ts = h.typesize;
  if (h.byte_shuffled()) {
    b.kind = BloscUnshuffleKind::kByte;
    b.n = b.bytes / ts;
    b.items = b.n;
    b.tail = b.bytes - b.n * ts;
  } else if (h.bit_shuffled(b.bytes) && (b.bytes / ts) % 8 == 0) {
    b.kind = BloscUnshuffleKind::kBit;
    b.n = b.bytes / ts;
    b.items = b.n / 8;
    b.tail = b.bytes - b.n * ts;
  } else {
    b.kind = BloscUnshuffleKind::kCopy;
    b.items = b.bytes;
  }
  return b;
}

// Unshuffles items [begin, end) of block j; the thread that takes item 0 also copies the tail.
CS_HD inline void blosc_unshuffle_block_range(const BloscHeader& h, std::uint32_t j, const BloscBlockShuffle& b,
                                              const std::uint8_t* stage, std::uint8_t* dst, std::size_t begin,
                                              std::size_t end) {
  const std::size_t at = static_cast<std::size_t>(j) * h.blocksize;
  const std::uint8_t* s = stage + at;
  std::uint8_t* d = dst + at;
  switch (b.kind) {
    case BloscUnshuffleKind::kByte:
      switch (h.typesize) {
        case 2: unshuffle_elements_fixed<2>(s, d, b.n, begin, end); break;
        case 4: unshuffle_elements_fixed<4>(s, d, b.n, begin, end); break;
        case 8: unshuffle_elements_fixed<8>(s, d, b.n, begin, end); break;
        default: unshuffle_elements(s, d, b.n, h.typesize, begin, end); break;
      }
      break;
    case BloscUnshuffleKind::kBit:
      for (std::size_t g = begin; g < end; ++g) bitunshuffle_group(s, d, b.n, h.typesize, g);
      break;
    case BloscUnshuffleKind::kCopy:
      for (std::size_t k = begin; k < end; ++k) d[k] = s[k];
      return;
  }
  if (begin == 0) {
    for (std::size_t k = b.bytes - b.tail; k < b.bytes; ++k) d[k] = s[k];
  }
}

// The host build's copier: the serial copies of lz4_block.hpp, and no lanes to share with.
struct BloscSerialCopier : Lz4SerialCopier {
  CS_HD void sync() {}
  CS_HD BlosclzStatus broadcast_status(BlosclzStatus s) { return s; }
  CS_HD std::size_t broadcast_size(std::size_t n) { return n; }
};

// All three passes for one buffer, one after another: what a GPU batch computes for it.
// `stage` must hold nbytes bytes when the buffer is shuffled (plan.staged).
CS_HD inline DecodeStatus blosc_decode_serial(const std::uint8_t* p, std::size_t size, std::uint8_t* dst,
                                              std::size_t expected, std::uint8_t* stage) {
  BloscPlan plan;
  DecodeStatus st = blosc_plan(p, size, expected, &plan);
  if (st != DecodeStatus::kOk) return st;
  BloscSerialCopier copy;
  for (std::uint64_t u = 0; u < plan.units; ++u) {
    st = blosc_decode_unit(p, plan, u, dst, stage, copy, true);
    if (st != DecodeStatus::kOk) return st;
  }
  if (plan.staged) {
    for (std::uint32_t j = 0; j < plan.nblocks; ++j) {
      const BloscBlockShuffle b = blosc_block_shuffle(plan.h, j);
      blosc_unshuffle_block_range(plan.h, j, b, stage, dst, 0, b.items);
    }
  }
  return DecodeStatus::kOk;
}

}  // namespace cubestream::codec::logic
