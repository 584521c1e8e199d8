// Zstandard decoder (RFC 8878) shared by the host and the GPU: frames, skippable frames,
// blocks; literals and sequences are in literals.hpp and sequences.hpp.
//
//   DecodeStatus s = zstd_decompress(SerialTeam{}, src, src_size, dst, dst_size, &ws, verify);
//
// decodes every frame of src (several may follow one another; skippable frames are skipped)
// straight into dst, which must be exactly as large as the decoded content (else kWrongSize).
// Back-references reach only into the output of the same frame; no window buffer is used
// because the whole output is there. `ws` is a ZstdWorkspace the caller owns.
#pragma once

#include <cstddef>
#include <cstdint>

#include "codec/logic/zstd/common.hpp"
#include "codec/logic/zstd/literals.hpp"
#include "codec/logic/zstd/sequences.hpp"
#include "codec/logic/zstd/workspace.hpp"
#include "codec/logic/zstd/xxhash64.hpp"

namespace cubestream::codec::logic::zstd {

inline constexpr u32 kFrameMagic = 0xFD2FB528u;
inline constexpr u32 kSkippableMagicMask = 0xFFFFFFF0u;
inline constexpr u32 kSkippableMagic = 0x184D2A50u;  // 0x184D2A50 .. 0x184D2A5F
inline constexpr u32 kWindowLogMax = 31;

// What a frame header says (RFC 8878 section 3.1.1.1).
struct FrameHeader {
  std::size_t header_bytes;   // magic included
  u64 window_size;
  u64 content_size;           // valid when has_content_size
  bool has_content_size;
  bool has_checksum;
};

// Parses magic + Frame_Header from src[0, n). Frame_Header_Descriptor: bits 7-6
// Frame_Content_Size_Flag, 5 Single_Segment_Flag, 4 unused, 3 reserved (must be 0), 2
// Content_Checksum_Flag, 1-0 Dictionary_ID_Flag. Then Window_Descriptor (absent for single
// segment), Dictionary_ID (0, 1, 2 or 4 bytes; a non-zero ID needs a dictionary, which Zarr
// never provides) and Frame_Content_Size (0/1, 2, 4 or 8 bytes; the 2-byte form adds 256).
CS_HD inline DecodeStatus parse_frame_header(const u8* src, std::size_t n, FrameHeader* h) {
  CS_ZSTD_REQUIRE(n >= 5, kCorrupt);
  CS_ZSTD_REQUIRE(load_le32(src) == kFrameMagic, kCorrupt);
  const u32 d = src[4];
  const u32 fcs_flag = d >> 6;
  const bool single = (d >> 5) & 1;
  CS_ZSTD_REQUIRE(((d >> 3) & 1) == 0, kCorrupt);
  h->has_checksum = (d >> 2) & 1;
  const u32 did_bytes = (d & 3) == 3 ? 4 : (d & 3);
  const u32 fcs_bytes = fcs_flag == 0 ? (single ? 1 : 0) : (1u << fcs_flag);
  std::size_t p = 5;
  const std::size_t need = p + (single ? 0 : 1) + did_bytes + fcs_bytes;
  CS_ZSTD_REQUIRE(n >= need, kCorrupt);
  u64 window = 0;
  if (!single) {
    // Window_Descriptor (section 3.1.1.1.2): windowLog = 10 + exponent, plus mantissa/8ths.
    const u32 exponent = src[p] >> 3, mantissa = src[p] & 7;
    // The format allows windows up to 2^41 + 7 * 2^38; libzstd (the CPU path) refuses
    // windowLog > 31 on 64-bit hosts, and so do we, so that both paths give one answer.
    if (10 + exponent > kWindowLogMax) return DecodeStatus::kUnsupported;
    const u64 base = u64(1) << (10 + exponent);
    window = base + (base >> 3) * mantissa;
    ++p;
  }
  u32 dict_id = 0;
  if (did_bytes == 1) dict_id = src[p];
  if (did_bytes == 2) dict_id = load_le16(src + p);
  if (did_bytes == 4) dict_id = load_le32(src + p);
  p += did_bytes;
  if (dict_id != 0) return DecodeStatus::kDictionary;  // ID 0 means "no dictionary"
  u64 fcs = 0;
  if (fcs_bytes == 1) fcs = src[p];
  if (fcs_bytes == 2) fcs = load_le16(src + p) + 256;
  if (fcs_bytes == 4) fcs = load_le32(src + p);
  if (fcs_bytes == 8) fcs = load_le64(src + p);
  p += fcs_bytes;
  h->has_content_size = fcs_bytes != 0;
  h->content_size = fcs;
  h->window_size = single ? fcs : window;  // single segment: the window is the whole content
  h->header_bytes = p;
  return DecodeStatus::kOk;
}

// Decodes one frame from src[0, n) into out[0, cap); *consumed and *produced report the
// frame's input and output sizes.
template <class Team>
CS_HD DecodeStatus decode_frame(const Team& team, const u8* src, std::size_t n, u8* out, std::size_t cap,
                                ZstdWorkspace* ws, bool verify_checksum, std::size_t* consumed,
                                std::size_t* produced) {
  FrameHeader h;
  CS_ZSTD_TRY(parse_frame_header(src, n, &h));
  if (h.has_content_size) CS_ZSTD_REQUIRE(h.content_size <= cap, kWrongSize);
  // Section 3.1.1.2.3: Block_Maximum_Size = min(Window_Size, 128 KiB).
  const std::size_t block_max = h.window_size < kBlockSizeMax ? static_cast<std::size_t>(h.window_size) : kBlockSizeMax;
  // Entropy tables and repeat offsets start fresh in every frame (section 3.1.2.5: 1, 4, 8).
  ws->t.huf_valid = ws->t.ll_valid = ws->t.ml_valid = ws->t.of_valid = 0;
  RepeatOffsets reps{{1, 4, 8}};
  std::size_t p = h.header_bytes;
  std::size_t o = 0;
  for (;;) {
    // Block_Header (section 3.1.1.2): 3 bytes little-endian; bit 0 Last_Block, bits 1-2
    // Block_Type (raw, RLE, compressed, reserved), bits 3-23 Block_Size.
    CS_ZSTD_REQUIRE(n - p >= 3, kCorrupt);
    const u32 bh = load_le24(src + p);
    p += 3;
    const bool last = bh & 1;
    const u32 type = (bh >> 1) & 3;
    const std::size_t size = bh >> 3;
    CS_ZSTD_REQUIRE(type != 3, kCorrupt);
    CS_ZSTD_REQUIRE(size <= block_max, kCorrupt);
    if (type == 0) {  // Raw_Block: Block_Size bytes stored as they are
      CS_ZSTD_REQUIRE(size <= n - p, kCorrupt);
      CS_ZSTD_REQUIRE(size <= cap - o, kWrongSize);
      team_copy(team, out + o, src + p, size);
      o += size;
      p += size;
    } else if (type == 1) {  // RLE_Block: one byte, repeated Block_Size times
      CS_ZSTD_REQUIRE(1 <= n - p, kCorrupt);
      CS_ZSTD_REQUIRE(size <= cap - o, kWrongSize);
      const u8 v = src[p];
      for (std::size_t i = team.rank(); i < size; i += team.size()) out[o + i] = v;
      o += size;
      p += 1;
    } else {  // Compressed_Block (section 3.1.1.3): literals section, then sequences section
      CS_ZSTD_REQUIRE(size <= n - p, kCorrupt);
      Literals lits{nullptr, 0};
      std::size_t lit_bytes = 0;
      CS_ZSTD_TRY(decode_literals(team, src + p, size, &ws->t, ws->literals, &lits, &lit_bytes));
      CS_ZSTD_TRY(decode_and_execute_sequences(team, src + p + lit_bytes, size - lit_bytes, lits, &ws->t, &reps, out,
                                               cap, &o));
      p += size;
    }
    team.sync();
    if (last) break;
  }
  if (h.has_content_size) CS_ZSTD_REQUIRE(o == h.content_size, kCorrupt);
  if (h.has_checksum) {
    // Content_Checksum (section 3.1.1): low 32 bits of XXH64(content, seed 0), little-endian.
    CS_ZSTD_REQUIRE(n - p >= 4, kCorrupt);
    if (verify_checksum) {
      for (unsigned k = team.rank(); k < 4; k += team.size()) ws->xxh_acc[k] = xxh64_accumulator(out, o, k, 0);
      team.sync();
      const u64 hash = xxh64_finish(out, o, 0, ws->xxh_acc[0], ws->xxh_acc[1], ws->xxh_acc[2], ws->xxh_acc[3]);
      team.sync();
      CS_ZSTD_REQUIRE(static_cast<u32>(hash) == load_le32(src + p), kChecksumMismatch);
    }
    p += 4;
  }
  *consumed = p;
  *produced = o;
  return DecodeStatus::kOk;
}

// Decodes all frames of src[0, src_size) into dst[0, dst_size); see the top of this file.
template <class Team>
CS_HD DecodeStatus zstd_decompress(const Team& team, const u8* src, std::size_t src_size, u8* dst,
                                   std::size_t dst_size, ZstdWorkspace* ws, bool verify_checksum) {
  std::size_t p = 0, o = 0;
  while (p < src_size) {
    CS_ZSTD_REQUIRE(src_size - p >= 4, kCorrupt);
    const u32 magic = load_le32(src + p);
    if ((magic & kSkippableMagicMask) == kSkippableMagic) {
      // Skippable frame (section 3.1.2): magic, 4-byte little-endian size, that many bytes.
      CS_ZSTD_REQUIRE(src_size - p >= 8, kCorrupt);
      const std::size_t size = load_le32(src + p + 4);
      CS_ZSTD_REQUIRE(size <= src_size - p - 8, kCorrupt);
      p += 8 + size;
      continue;
    }
    CS_ZSTD_REQUIRE(magic == kFrameMagic, kCorrupt);
    std::size_t used = 0, made = 0;
    CS_ZSTD_TRY(decode_frame(team, src + p, src_size - p, dst + o, dst_size - o, ws, verify_checksum, &used, &made));
    p += used;
    o += made;
  }
  CS_ZSTD_REQUIRE(o == dst_size, kWrongSize);
  return DecodeStatus::kOk;
}

}  // namespace cubestream::codec::logic::zstd
