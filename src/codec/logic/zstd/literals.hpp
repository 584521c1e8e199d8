// The literals section of a compressed block (RFC 8878 section 3.1.1.3.1).
#pragma once

#include <cstddef>
#include <cstdint>

#include "codec/logic/zstd/common.hpp"
#include "codec/logic/zstd/huffman.hpp"
#include "codec/logic/zstd/workspace.hpp"

namespace cubestream::codec::logic::zstd {

// Where a block's literals are once the section is decoded: in the input (raw) or in
// ws->literals (RLE, Huffman).
struct Literals {
  const u8* data;
  std::size_t size;
};

// Decodes the literals section at the start of block content src[0, n); *used is its size.
template <class Team>
CS_HD DecodeStatus decode_literals(const Team& team, const u8* src, std::size_t n, ZstdWorkspace* ws,
                                   Literals* lits, std::size_t* used) {
  CS_ZSTD_REQUIRE(n >= 1, kCorrupt);
  const u32 type = src[0] & 3;         // 0 raw, 1 RLE, 2 compressed, 3 treeless
  const u32 size_format = (src[0] >> 2) & 3;
  if (type == 0 || type == 1) {
    // Section 3.1.1.3.1.1: Size_Format 00/10 -> 1-byte header, 5-bit size; 01 -> 2 bytes,
    // 12 bits; 11 -> 3 bytes, 20 bits. Only Regenerated_Size is stored.
    std::size_t header, size;
    if ((size_format & 1) == 0) {
      header = 1;
      size = src[0] >> 3;
    } else if (size_format == 1) {
      CS_ZSTD_REQUIRE(n >= 2, kCorrupt);
      header = 2;
      size = load_le16(src) >> 4;
    } else {
      CS_ZSTD_REQUIRE(n >= 3, kCorrupt);
      header = 3;
      size = load_le24(src) >> 4;
    }
    CS_ZSTD_REQUIRE(size <= kBlockSizeMax, kCorrupt);
    if (type == 0) {
      CS_ZSTD_REQUIRE(header + size <= n, kCorrupt);
      lits->data = src + header;
      lits->size = size;
      *used = header + size;
    } else {
      CS_ZSTD_REQUIRE(header + 1 <= n, kCorrupt);
      const u8 v = src[header];
      for (std::size_t i = team.rank(); i < size; i += team.size()) ws->literals[i] = v;
      team.sync();
      lits->data = ws->literals;
      lits->size = size;
      *used = header + 1;
    }
    return DecodeStatus::kOk;
  }
  // Compressed (with a tree) or treeless (reusing the previous tree). Size_Format 00: one
  // stream, 3-byte header, 10-bit sizes; 01: four streams, same header; 10: four streams,
  // 4 bytes, 14-bit sizes; 11: four streams, 5 bytes, 18-bit sizes.
  std::size_t header, regen, csize;
  const bool one_stream = size_format == 0;
  if (size_format <= 1) {
    CS_ZSTD_REQUIRE(n >= 3, kCorrupt);
    const u32 h = load_le24(src);
    header = 3;
    regen = (h >> 4) & 0x3FF;
    csize = (h >> 14) & 0x3FF;
  } else if (size_format == 2) {
    CS_ZSTD_REQUIRE(n >= 4, kCorrupt);
    const u32 h = load_le32(src);
    header = 4;
    regen = (h >> 4) & 0x3FFF;
    csize = (h >> 18) & 0x3FFF;
  } else {
    CS_ZSTD_REQUIRE(n >= 5, kCorrupt);
    const u64 h = u64(load_le32(src)) | (u64(src[4]) << 32);
    header = 5;
    regen = static_cast<std::size_t>((h >> 4) & 0x3FFFF);
    csize = static_cast<std::size_t>((h >> 22) & 0x3FFFF);
  }
  CS_ZSTD_REQUIRE(regen <= kBlockSizeMax, kCorrupt);
  CS_ZSTD_REQUIRE(header + csize <= n, kCorrupt);
  const u8* p = src + header;
  std::size_t left = csize;
  if (type == 2) {
    std::size_t tree = 0;
    CS_ZSTD_TRY(read_huffman_tree(team, p, left, ws, &tree));
    p += tree;
    left -= tree;
  } else {
    CS_ZSTD_REQUIRE(ws->huf_valid != 0, kCorrupt);  // treeless needs an earlier tree in this frame
  }
  bool bad = false;
  if (one_stream) {
    if (team.rank() == 0) bad = decode_huffman_stream(ws, p, left, ws->literals, regen) != DecodeStatus::kOk;
  } else {
    // Section 3.1.1.3.1.6: a 6-byte jump table gives the sizes of streams 1-3; stream 4
    // takes the rest. Streams 1-3 decode (regen + 3) / 4 literals each, stream 4 the rest.
    CS_ZSTD_REQUIRE(left >= 6, kCorrupt);
    const std::size_t s1 = load_le16(p), s2 = load_le16(p + 2), s3 = load_le16(p + 4);
    CS_ZSTD_REQUIRE(6 + s1 + s2 + s3 <= left, kCorrupt);
    const std::size_t s4 = left - 6 - s1 - s2 - s3;
    const std::size_t seg = (regen + 3) / 4;
    CS_ZSTD_REQUIRE(3 * seg <= regen, kCorrupt);
    const u8* sp[4] = {p + 6, p + 6 + s1, p + 6 + s1 + s2, p + 6 + s1 + s2 + s3};
    const std::size_t sn[4] = {s1, s2, s3, s4};
    for (u32 k = team.rank(); k < 4; k += team.size()) {
      const std::size_t count = k < 3 ? seg : regen - 3 * seg;
      if (decode_huffman_stream(ws, sp[k], sn[k], ws->literals + k * seg, count) != DecodeStatus::kOk) bad = true;
    }
  }
  team.sync();
  if (team.any(bad)) return DecodeStatus::kCorrupt;
  lits->data = ws->literals;
  lits->size = regen;
  *used = header + csize;
  return DecodeStatus::kOk;
}

}  // namespace cubestream::codec::logic::zstd
