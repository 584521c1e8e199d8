// The literals section of a compressed block (RFC 8878 section 3.1.1.3.1).
#pragma once

#include <cstddef>
#include <cstdint>

#include "codec/logic/zstd/common.hpp"
#include "codec/logic/zstd/huffman.hpp"
#include "codec/logic/zstd/workspace.hpp"

namespace cubestream::codec::logic::zstd {

// Where a block's literals are once the section is decoded: in the input (raw) or in
// lit_buf (RLE, Huffman; kBlockSizeMax bytes).
struct Literals {
  const u8* data;
  std::size_t size;
};

// What a Literals_Section_Header says (section 3.1.1.3.1.1).
struct LiteralsHeader {
  u32 type;             // 0 raw, 1 RLE, 2 compressed, 3 treeless
  bool one_stream;      // compressed/treeless: one Huffman stream instead of four
  std::size_t header;   // bytes of the header
  std::size_t regen;    // Regenerated_Size
  std::size_t csize;    // compressed/treeless: Compressed_Size (tree description included)
  // Bytes of the whole section: header + regen (raw), header + 1 (RLE), header + csize.
  CS_HD std::size_t section_bytes() const { return type == 0 ? header + regen : type == 1 ? header + 1 : header + csize; }
};

// Parses the header of the literals section at the start of block content src[0, n) and
// checks that the section fits in it.
CS_HD inline DecodeStatus parse_literals_header(const u8* src, std::size_t n, LiteralsHeader* h) {
  CS_ZSTD_REQUIRE(n >= 1, kCorrupt);
  const u32 type = src[0] & 3;
  const u32 size_format = (src[0] >> 2) & 3;
  h->type = type;
  h->one_stream = false;
  h->csize = 0;
  if (type == 0 || type == 1) {
    // Size_Format 00/10 -> 1-byte header, 5-bit size; 01 -> 2 bytes, 12 bits; 11 -> 3
    // bytes, 20 bits. Only Regenerated_Size is stored.
    if ((size_format & 1) == 0) {
      h->header = 1;
      h->regen = src[0] >> 3;
    } else if (size_format == 1) {
      CS_ZSTD_REQUIRE(n >= 2, kCorrupt);
      h->header = 2;
      h->regen = load_le16(src) >> 4;
    } else {
      CS_ZSTD_REQUIRE(n >= 3, kCorrupt);
      h->header = 3;
      h->regen = load_le24(src) >> 4;
    }
    CS_ZSTD_REQUIRE(h->regen <= kBlockSizeMax, kCorrupt);
    CS_ZSTD_REQUIRE(h->section_bytes() <= n, kCorrupt);
    return DecodeStatus::kOk;
  }
  // Compressed (with a tree) or treeless (reusing the previous tree). Size_Format 00: one
  // stream, 3-byte header, 10-bit sizes; 01: four streams, same header; 10: four streams,
  // 4 bytes, 14-bit sizes; 11: four streams, 5 bytes, 18-bit sizes.
  h->one_stream = size_format == 0;
  if (size_format <= 1) {
    CS_ZSTD_REQUIRE(n >= 3, kCorrupt);
    const u32 v = load_le24(src);
    h->header = 3;
    h->regen = (v >> 4) & 0x3FF;
    h->csize = (v >> 14) & 0x3FF;
  } else if (size_format == 2) {
    CS_ZSTD_REQUIRE(n >= 4, kCorrupt);
    const u32 v = load_le32(src);
    h->header = 4;
    h->regen = (v >> 4) & 0x3FFF;
    h->csize = (v >> 18) & 0x3FFF;
  } else {
    CS_ZSTD_REQUIRE(n >= 5, kCorrupt);
    const u64 v = u64(load_le32(src)) | (u64(src[4]) << 32);
    h->header = 5;
    h->regen = static_cast<std::size_t>((v >> 4) & 0x3FFFF);
    h->csize = static_cast<std::size_t>((v >> 22) & 0x3FFFF);
  }
  CS_ZSTD_REQUIRE(h->regen <= kBlockSizeMax, kCorrupt);
  CS_ZSTD_REQUIRE(h->header + h->csize <= n, kCorrupt);
  return DecodeStatus::kOk;
}

// Decodes the literals section at the start of block content src[0, n); *used is its size.
template <class Team>
CS_HD DecodeStatus decode_literals(const Team& team, const u8* src, std::size_t n, ZstdTables* ws, u8* lit_buf,
                                   Literals* lits, std::size_t* used) {
  LiteralsHeader lh;
  CS_ZSTD_TRY(parse_literals_header(src, n, &lh));
  const std::size_t header = lh.header, regen = lh.regen, csize = lh.csize;
  const u32 type = lh.type;
  const bool one_stream = lh.one_stream;
  *used = lh.section_bytes();
  if (type == 0) {
    lits->data = src + header;
    lits->size = regen;
    return DecodeStatus::kOk;
  }
  if (type == 1) {
    const u8 v = src[header];
    for (std::size_t i = team.rank(); i < regen; i += team.size()) lit_buf[i] = v;
    team.sync();
    lits->data = lit_buf;
    lits->size = regen;
    return DecodeStatus::kOk;
  }
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
    if (team.rank() == 0) bad = decode_huffman_stream(ws, p, left, lit_buf, regen) != DecodeStatus::kOk;
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
      if (decode_huffman_stream(ws, sp[k], sn[k], lit_buf + k * seg, count) != DecodeStatus::kOk) bad = true;
    }
  }
  team.sync();
  if (team.any(bad)) return DecodeStatus::kCorrupt;
  lits->data = lit_buf;
  lits->size = regen;
  return DecodeStatus::kOk;
}

}  // namespace cubestream::codec::logic::zstd
