// The c-blosc 1.x container format (the "blosc" codec of Zarr v2 and v3), shared by host and
// device: header parsing and the bounds-checked reads of the block table and stream sizes.
// Decompressing the streams and unshuffling are left to the caller.
//
// Layout (all integers little-endian):
//   header, 16 bytes:
//     0  u8  version       container format version (c-blosc 1.x writes 2)
//     1  u8  versionlz     format version of the compressor (1 for every compressor)
//     2  u8  flags         bit 0 byte-shuffle, bit 1 memcpyed (stored raw), bit 2 bit-shuffle,
//                          bit 3 reserved (must be 0), bit 4 don't-split,
//                          bits 5-7 compressor: 0 blosclz, 1 lz4 (and lz4hc), 2 snappy,
//                          3 zlib, 4 zstd
//     3  u8  typesize      element size used by the shuffles (1..255)
//     4  u32 nbytes        decoded size
//     8  u32 blocksize     decoded size of each block except the last
//     12 u32 cbytes        size of the whole encoded buffer, header included
//   memcpyed: the nbytes decoded bytes follow the header (cbytes == nbytes + 16); no shuffle.
//   otherwise: nblocks = ceil(nbytes / blocksize) int32 block starts ("bstarts", offsets from
//   the start of the buffer), then the blocks. The last block holds nbytes % blocksize bytes
//   when that is not 0 (the "leftover" block). A block is stored as `nsplits` streams, each
//   `int32 csize` followed by csize bytes; a stream decodes to blocksize / nsplits bytes and
//   is stored raw when csize equals that size. nsplits is typesize when the block is split,
//   else 1 (see blosc_block_is_split). The decoded streams, concatenated, are the block after
//   its shuffle filter; unshuffling gives the data.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/host_device.hpp"

namespace cubestream::codec::logic {

inline constexpr std::size_t kBloscHeaderSize = 16;
inline constexpr std::uint8_t kBloscFlagShuffle = 0x01;
inline constexpr std::uint8_t kBloscFlagMemcpyed = 0x02;
inline constexpr std::uint8_t kBloscFlagBitShuffle = 0x04;
inline constexpr std::uint8_t kBloscFlagReserved = 0x08;
inline constexpr std::uint8_t kBloscFlagDontSplit = 0x10;
// c-blosc 1.x splits a block only when typesize <= 16 and the block has >= 128 elements.
inline constexpr std::size_t kBloscMaxSplits = 16;
inline constexpr std::size_t kBloscMinSplitElements = 128;
// Sizes are int32 in c-blosc.
inline constexpr std::uint32_t kBloscMaxSize = 0x7FFFFFFFu;

enum class BloscCompressor : std::uint8_t { kBlosclz = 0, kLz4 = 1, kSnappy = 2, kZlib = 3, kZstd = 4 };

struct BloscHeader {
  std::uint8_t version = 0;
  std::uint8_t versionlz = 0;
  std::uint8_t flags = 0;
  std::uint8_t typesize = 0;
  std::uint32_t nbytes = 0;
  std::uint32_t blocksize = 0;
  std::uint32_t cbytes = 0;

  CS_HD bool memcpyed() const { return (flags & kBloscFlagMemcpyed) != 0; }
  CS_HD std::uint8_t compressor_format() const { return static_cast<std::uint8_t>(flags >> 5); }
  // c-blosc: byte-shuffle only when typesize > 1; it takes precedence over bit-shuffle.
  CS_HD bool byte_shuffled() const { return (flags & kBloscFlagShuffle) != 0 && typesize > 1; }
  CS_HD bool bit_shuffled(std::size_t block_bytes) const {
    return !byte_shuffled() && (flags & kBloscFlagBitShuffle) != 0 && block_bytes >= typesize;
  }
  CS_HD std::uint32_t nblocks() const {
    return blocksize == 0 ? 0 : nbytes / blocksize + (nbytes % blocksize != 0 ? 1u : 0u);
  }
  // Decoded size of block j (the last one may be the shorter leftover block).
  CS_HD std::uint32_t block_bytes(std::uint32_t j) const {
    const std::uint32_t left = nbytes % blocksize;
    return (j + 1 == nblocks() && left != 0) ? left : blocksize;
  }
  CS_HD bool is_leftover_block(std::uint32_t j) const {
    return j + 1 == nblocks() && nbytes % blocksize != 0;
  }
};

enum class BloscStatus : std::uint8_t {
  kOk,
  kTruncatedHeader,            // fewer than 16 bytes
  kUnsupportedVersion,         // container version other than 1 or 2 (c-blosc2 and newer)
  kReservedFlag,               // flag bit 3 set ("flags from the future")
  kBadTypesize,                // typesize 0
  kBadBlocksize,               // blocksize 0 or above int32
  kBadNbytes,                  // nbytes above int32
  kBadCbytes,                  // cbytes below the header size
  kTruncated,                  // cbytes larger than the buffer
  kMemcpyedSize,               // memcpyed buffer whose cbytes is not nbytes + 16
  kUnknownCompressor,          // compressor format 5..7
  kUnsupportedCompressorVersion,  // versionlz other than 1
  kBlockTableTruncated,        // the block starts do not fit in cbytes
  kBlockStartOutOfRange,       // a block start outside the buffer
  kStreamSizeOutOfRange,       // a stream's csize runs past the buffer
  kSplitBlockNotWhole,         // a split block whose size is not a multiple of typesize
};

struct BloscCheck {
  BloscStatus status = BloscStatus::kOk;
  std::uint64_t offset = 0;  // byte offset of the offending field in the buffer
  CS_HD bool ok() const { return status == BloscStatus::kOk; }
};

CS_HD inline const char* blosc_status_message(BloscStatus s) {
  switch (s) {
    case BloscStatus::kOk: return "ok";
    case BloscStatus::kTruncatedHeader: return "buffer shorter than the 16-byte header";
    case BloscStatus::kUnsupportedVersion: return "unsupported container format version (only c-blosc 1.x format 1-2 is read)";
    case BloscStatus::kReservedFlag: return "reserved flag bit 3 is set";
    case BloscStatus::kBadTypesize: return "typesize is 0";
    case BloscStatus::kBadBlocksize: return "blocksize is 0 or larger than 2^31-1";
    case BloscStatus::kBadNbytes: return "nbytes is larger than 2^31-1";
    case BloscStatus::kBadCbytes: return "cbytes is smaller than the header";
    case BloscStatus::kTruncated: return "buffer is shorter than its header's cbytes (truncated)";
    case BloscStatus::kMemcpyedSize: return "memcpyed buffer whose cbytes is not nbytes + 16";
    case BloscStatus::kUnknownCompressor: return "unknown compressor format in flags";
    case BloscStatus::kUnsupportedCompressorVersion: return "unsupported compressor format version";
    case BloscStatus::kBlockTableTruncated: return "block start table does not fit in the buffer";
    case BloscStatus::kBlockStartOutOfRange: return "block start points outside the buffer";
    case BloscStatus::kStreamSizeOutOfRange: return "stream size runs past the end of the buffer";
    case BloscStatus::kSplitBlockNotWhole: return "split block size is not a multiple of typesize";
  }
  return "unknown status";
}

CS_HD inline std::uint32_t blosc_load_le32(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
         (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}

// Parses and validates the header of a buffer of `size` bytes. On success every later read
// of the block table stays inside [0, cbytes), and cbytes <= size. A buffer with nbytes == 0
// decodes to nothing whatever follows (c-blosc returns before reading further), so its other
// fields are checked only as far as the header goes.
CS_HD inline BloscCheck blosc_parse_header(const std::uint8_t* p, std::size_t size, BloscHeader* h) {
  if (size < kBloscHeaderSize) return {BloscStatus::kTruncatedHeader, 0};
  h->version = p[0];
  h->versionlz = p[1];
  h->flags = p[2];
  h->typesize = p[3];
  h->nbytes = blosc_load_le32(p + 4);
  h->blocksize = blosc_load_le32(p + 8);
  h->cbytes = blosc_load_le32(p + 12);
  if (h->version != 1 && h->version != 2) return {BloscStatus::kUnsupportedVersion, 0};
  if (h->nbytes > kBloscMaxSize) return {BloscStatus::kBadNbytes, 4};
  if (h->cbytes < kBloscHeaderSize) return {BloscStatus::kBadCbytes, 12};
  if (h->cbytes > size) return {BloscStatus::kTruncated, 12};
  if (h->nbytes == 0) return {};
  if (h->flags & kBloscFlagReserved) return {BloscStatus::kReservedFlag, 2};
  if (h->typesize == 0) return {BloscStatus::kBadTypesize, 3};
  if (h->blocksize == 0 || h->blocksize > kBloscMaxSize) return {BloscStatus::kBadBlocksize, 8};
  if (h->memcpyed()) {
    if (static_cast<std::uint64_t>(h->nbytes) + kBloscHeaderSize != h->cbytes)
      return {BloscStatus::kMemcpyedSize, 12};
    return {};
  }
  if (h->compressor_format() > static_cast<std::uint8_t>(BloscCompressor::kZstd))
    return {BloscStatus::kUnknownCompressor, 2};
  if (h->versionlz != 1) return {BloscStatus::kUnsupportedCompressorVersion, 1};
  if (static_cast<std::uint64_t>(h->nblocks()) * 4 > h->cbytes - kBloscHeaderSize)
    return {BloscStatus::kBlockTableTruncated, kBloscHeaderSize};
  return {};
}

// Whether block `j` of `block_bytes` bytes is stored as typesize streams. The don't-split flag
// (bit 4) came with c-blosc 1.7; buffers from before it never set the bit, so c-blosc also
// requires the old split conditions, which a newer writer's split decision always meets.
CS_HD inline bool blosc_block_is_split(const BloscHeader& h, std::size_t block_bytes,
                                       bool leftover_block) {
  return (h.flags & kBloscFlagDontSplit) == 0 && !leftover_block &&
         h.typesize <= kBloscMaxSplits && block_bytes / h.typesize >= kBloscMinSplitElements;
}

// Reads the start offset of block j (header must have parsed). The start must leave room for
// a stream's 4-byte size inside cbytes.
CS_HD inline BloscCheck blosc_block_start(const std::uint8_t* p, const BloscHeader& h,
                                          std::uint32_t j, std::size_t* start) {
  const std::size_t at = kBloscHeaderSize + 4 * static_cast<std::size_t>(j);
  const std::uint32_t v = blosc_load_le32(p + at);
  if (v > kBloscMaxSize || static_cast<std::uint64_t>(v) + 4 > h.cbytes)
    return {BloscStatus::kBlockStartOutOfRange, at};
  *start = v;
  return {};
}

// One stream of a block: where its bytes are and whether they are stored raw.
struct BloscStream {
  std::size_t data_offset = 0;
  std::size_t csize = 0;
  bool raw = false;
};

// Reads the stream header at `offset` for a stream that decodes to `stream_bytes` bytes.
CS_HD inline BloscCheck blosc_read_stream(const std::uint8_t* p, const BloscHeader& h,
                                          std::size_t offset, std::size_t stream_bytes,
                                          BloscStream* s) {
  if (offset > h.cbytes || h.cbytes - offset < 4) return {BloscStatus::kBlockStartOutOfRange, offset};
  const std::uint32_t csize = blosc_load_le32(p + offset);
  if (csize > kBloscMaxSize || csize > h.cbytes - offset - 4)
    return {BloscStatus::kStreamSizeOutOfRange, offset};
  s->data_offset = offset + 4;
  s->csize = csize;
  s->raw = csize == stream_bytes;
  return {};
}

}  // namespace cubestream::codec::logic
