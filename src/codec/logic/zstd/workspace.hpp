// The decoder's whole state for one frame at a time, in one struct of compile-time size that
// the caller provides (on the GPU it lives in the scratch memory given to the batch call).
#pragma once

#include <cstddef>
#include <cstdint>

#include "codec/logic/zstd/common.hpp"
#include "codec/logic/zstd/fse.hpp"

namespace cubestream::codec::logic::zstd {

// RFC 8878 section 3.1.1.2.3: a block never decodes to more than 128 KiB.
inline constexpr std::size_t kBlockSizeMax = 128 * 1024;
// Section 4.2.1: Huffman codes are at most 11 bits long.
inline constexpr u32 kHufMaxLog = 11;
// Section 3.1.1.3.2.1: accuracy logs of the sequence code tables, and their largest codes.
inline constexpr u32 kLlMaxLog = 9, kMlMaxLog = 9, kOfMaxLog = 8;
inline constexpr u32 kLlMaxSymbol = 35, kMlMaxSymbol = 52, kOfMaxSymbol = 31;
// Section 4.2.1.2: the FSE table of Huffman weights has an accuracy log of at most 6.
inline constexpr u32 kHufWeightMaxLog = 6;

struct HufEntry {
  u8 symbol;
  u8 nbits;
};

// The entropy tables of one frame, and the scratch used to build them (~11 KiB). Version 2
// of the GPU decoder keeps one of these per warp in shared memory and decodes any block of a
// frame with it, after rebuilding the tables that block uses (see split.hpp).
struct ZstdTables {
  // Huffman decoding table, indexed by the next `huf_log` bits of a stream; kept across
  // blocks because a Treeless literals section reuses it (section 3.1.1.3.1.1).
  HufEntry huf[1u << kHufMaxLog];
  // Sequence code tables; kept across blocks for Repeat_Mode (section 3.1.1.3.2.1).
  FseEntry ll[1u << kLlMaxLog];
  FseEntry ml[1u << kMlMaxLog];
  FseEntry of[1u << kOfMaxLog];
  FseEntry weights_fse[1u << kHufWeightMaxLog];
  short norm[kFseMaxSymbols];
  u16 next[kFseMaxSymbols];
  u8 weights[256];
  u32 huf_log;
  u32 ll_log, ml_log, of_log;
  u32 huf_valid, ll_valid, ml_valid, of_valid;
};

struct ZstdWorkspace {
  // Decoded literals of the current block (a block's literals never exceed 128 KiB).
  u8 literals[kBlockSizeMax];
  ZstdTables t;
  u64 xxh_acc[4];
};

// Size in bytes the caller must provide per frame decoded at once.
inline constexpr std::size_t kZstdWorkspaceBytes = sizeof(ZstdWorkspace);

}  // namespace cubestream::codec::logic::zstd
