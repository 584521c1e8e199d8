// The Zstandard decoder split into three passes, for decoding many blocks at once (versions
// 2-3 of the GPU decoder, docs/gpu_zstd.md). Same format logic as decoder.hpp, same statuses,
// same bytes; the host tests run these passes with a SerialTeam against zstd_decompress and
// libzstd.
//
//   1. plan_buffer (one thread per buffer): walks the frames and block headers and the
//      literals/sequences section headers of a buffer and writes one BlockStep per frame,
//      block, frame end or error. Records, per compressed block, where the Huffman tree and
//      the three sequence-code tables it uses are described: its own section, or for treeless
//      literals (section 3.1.1.3.1.1) and Repeat_Mode (section 3.1.1.3.2.1) an earlier block
//      of the same frame. Also sizes each block's scratch (literals, sequence records, tables).
//   2. entropy, all blocks of a batch at once, in two halves: 2a decode_block_literals (one
//      team per block) rebuilds the tables, decodes the literals into the block's scratch and
//      copies the three sequence-code tables there; 2b decode_block_sequences (one thread per
//      block) decodes the sequences into records (literal length, match length, offset);
//      decode_block_entropy runs both. Repeat offsets depend on earlier blocks, so offsets
//      that name a repeat offset are stored symbolically, relative to the repeat offsets at
//      the block's start (see kSymTag).
//   3. execute_steps (one team per buffer, blocks in order): resolves the symbolic offsets,
//      and copies literals and matches into the output, a team's worth of sequences at a time,
//      the next group's short copies preloaded while the current one is written. The GPU runs
//      this pass by default with several teams per buffer instead (execute_groups.hpp, from
//      pass 2b's GroupStart tables); execute_steps is its single-warp alternative and the
//      reference its statuses are tested against.
//
// Errors come out in the order the one-pass decoder finds them: a header error becomes an
// error step after the steps before it; an entropy error is reported after executing the
// sequences decoded before it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "codec/logic/zstd/common.hpp"
#include "codec/logic/zstd/decoder.hpp"
#include "codec/logic/zstd/literals.hpp"
#include "codec/logic/zstd/sequences.hpp"
#include "codec/logic/zstd/workspace.hpp"
#include "codec/logic/zstd/xxhash64.hpp"

namespace cubestream::codec::logic::zstd {

enum StepKind : u32 {
  kStepFrame = 0,       // a frame starts: size = Frame_Content_Size, flags
  kStepRaw = 1,         // Raw_Block: size bytes at `at`
  kStepRle = 2,         // RLE_Block: the byte at `at`, size times
  kStepCompressed = 3,  // Compressed_Block: content src[at, at + size)
  kStepFrameEnd = 4,    // the frame's blocks end; checksum at `at` when flagged
  kStepError = 5,       // decoding stops here with `status`
};

inline constexpr u32 kStepHasContentSize = 1, kStepHasChecksum = 2;

// Where a Huffman tree or sequence-code table is described: `mode` as in section
// 3.1.1.3.2.1 (0 predefined, 1 RLE, 2 FSE; never 3, which is resolved to the defining block)
// and the description at src[at, at + avail).
struct TableRef {
  u64 at;
  u32 avail;
  u32 mode;
};

struct BlockStep {
  u32 kind;
  u32 status;      // kStepError: the error; kStepCompressed: written by the entropy pass
  u64 at;
  u64 size;
  u32 flags;       // kStepFrame
  u32 lit_type;    // kStepCompressed from here on: literals type 0-3 (section 3.1.1.3.1.1)
  u64 lit_at;      // raw literals: their offset in src
  u32 lit_regen;   // Regenerated_Size of the literals
  u32 nb_seq;      // Number_of_Sequences
  u32 seq_cap;     // sequence records reserved in the scratch: min(nb_seq, kMaxStoredSeqs)
  u32 n_ok;        // entropy pass: records written before `status` (all of them when ok)
  u64 scratch;     // offset of the block's scratch: literals, then the three record arrays
  u64 seq_at;      // the sequence bit stream: src[seq_at, seq_at + seq_avail)
  u64 seq_avail;
  TableRef huf;    // literals type 2 or 3: the tree description
  TableRef code[3];  // literal lengths, offsets, match lengths
  u64 reps_end[3];   // entropy pass: repeat offsets after the block, symbolic (kSymTag)
  u64 owner;         // free for the caller (the GPU batch stores the buffer's index)
  // Pass 3 by several teams (execute_groups.hpp, resolve_units), for steps up to the first
  // error the walk finds:
  u64 exec_unit;     // the step's first unit of work
  u64 exec_frame;    // offset in the buffer's output of the step's frame
  u64 exec_out;      // offset in the frame of the step's first byte (kStepFrameEnd: the frame's size)
  u64 reps_in[3];    // kStepCompressed: the repeat offsets the block starts with
  // The traced pass 2b (sequence_trace.hpp): the sequences the trace recorded and its status,
  // which the records pass turns into n_ok and status.
  u32 trace_n;
  u32 trace_status;
};

// A block decodes to at most 128 KiB and every sequence has a match of at least 3 bytes, so
// a valid block has at most 43690 sequences plus trailing literals; the execution check
// "block output <= 128 KiB" fails at sequence 43691 at the latest (3 * 43691 > 131072). So
// no more records than this are needed to reproduce any status, whatever Number_of_Sequences
// (up to 0x7F00 + 0xFFFF) a damaged block claims.
inline constexpr u32 kMaxStoredSeqs = 43691;

// Symbolic repeat offsets: the entropy pass starts each block with rep[i] = "the block's
// incoming rep[i]" and runs update_repeat_offsets on them unchanged. An entry with bit 63 set
// stands for "incoming rep[idx] - sub", stored as idx << 40 | (2^32 - sub), so that the
// format's "rep[0] - 1" (section 3.1.2.5) is plain decrement. Real offsets are < 2^32.
inline constexpr u64 kSymTag = u64(1) << 63;
inline constexpr u64 kSymBase = u64(1) << 32;
CS_HD inline u64 sym_rep(u32 idx) { return kSymTag | (u64(idx) << 40) | kSymBase; }
CS_HD inline bool sym_is(u64 e) { return (e & kSymTag) != 0; }
CS_HD inline u32 sym_idx(u64 e) { return static_cast<u32>((e >> 40) & 3); }
CS_HD inline u64 sym_sub(u64 e) { return kSymBase - (e & ((u64(1) << 40) - 1)); }

// The same entries in 32 bits, for pass 2b's window loop: a real offset as itself (< 2^31:
// the loop leaves offset codes above kWindowMaxOfCode to the general reader), a symbolic one
// with bit 31 set, idx in bits 29-30 and 2^29 - 1 - sub below (sub < 2^28 on entry, plus at
// most one per sequence of the block, kMaxStoredSeqs), so that "rep[0] - 1" is again a plain
// decrement and the top three bits are a record's tag and index (kRecSym below).
inline constexpr u32 kSym32Tag = 1u << 31;
inline constexpr u32 kSym32Base = 1u << 29;
inline constexpr u32 kSym32Low = kSym32Base - 1;  // the low 29 bits
inline constexpr u32 kWindowMaxOfCode = 30;
static_assert(kMaxStoredSeqs < kSym32Base / 2, "a block's decrements stay inside 29 bits");
// Whether e has a 32-bit form: real and < 2^31, or symbolic with room for a block's
// decrements.
CS_HD inline bool sym32_fits(u64 e) {
  return sym_is(e) ? sym_sub(e) < kSym32Base / 2 : e < kSym32Tag;
}
CS_HD inline u32 sym32_from(u64 e) {  // sym32_fits(e)
  return sym_is(e) ? kSym32Tag | sym_idx(e) << 29 | (kSym32Low - static_cast<u32>(sym_sub(e)))
                   : static_cast<u32>(e);
}
CS_HD inline u64 sym32_to64(u32 v) {
  if ((v & kSym32Tag) == 0) return v;
  const u32 sub = kSym32Low - (v & kSym32Low);
  return kSymTag | u64((v >> 29) & 3) << 40 | (kSymBase - sub);
}

// Sequence records, three arrays of u32 after the literals, each step_rec_stride(s) long (the
// first seq_cap entries used): the literal length with a symbolic offset's tag (bit 31) and
// index (bits 29-30); the match length; the offset or, when tagged, the amount subtracted.
// Literal lengths are < 2^17 (section 3.1.1.3.2.1.1). The stride is a multiple of 4, so that
// records 4k..4k+3 of each array are one aligned 16-byte word (the GPU's sequence pass stores
// them so: see RecordQuads).
inline constexpr u32 kRecSym = 1u << 31;
CS_HD inline u64 align16(u64 v) { return (v + 15) & ~u64(15); }
CS_HD inline u64 step_lit_bytes(const BlockStep& s) { return s.lit_type == 0 ? 0 : align16(s.lit_regen); }
CS_HD inline u32 step_rec_stride(const BlockStep& s) { return (s.seq_cap + 3) & ~3u; }

// The three sequence-code tables of one block (section 3.1.1.3.2.1), copied out of the team's
// ZstdTables by pass 2a so that pass 2b can decode the block's sequence stream with one
// thread, many blocks side by side, packed to 2 bytes a state so that the GPU holds every
// block of an SM's share of a batch in shared memory at once (2.5 KiB a block; ~62 blocks per
// SM for 256 x 4 MiB on an H100, 155 KiB, where FseEntry's 4 bytes would need 310 KiB).
//
// The packed entry of a state is (k << 6) | symbol, where k is the counter build_fse_table
// gave the state (section 4.1.1: the k-th state of a symbol with probability p has k = p + k'
// for k' = 0 .. p - 1, or k = 1 for a "less than 1" symbol, so 1 <= k < 2^(log + 1) <= 1024:
// 10 bits) and symbols are < 64 (codes <= 52). nbits and base follow from k and the table's
// log: nbits = log - highbit(k), base = (k << nbits) - 2^log (unpack_seq_entry). RLE tables
// (log 0, one state) pack as k = 1.
struct SeqTables {
  u16 ll[1u << kLlMaxLog];
  u16 ml[1u << kMlMaxLog];
  u16 of[1u << kOfMaxLog];
  u32 ll_log, ml_log, of_log, pad;
};
static_assert(kLlMaxLog <= 9 && kMlMaxLog <= 9 && kOfMaxLog <= 9, "k of a packed entry must fit 10 bits");
static_assert(kMlMaxSymbol < 64 && kLlMaxSymbol < 64 && kOfMaxSymbol < 64, "a packed symbol has 6 bits");
// The counter k of a built entry of a table of this log: (base + 2^log) >> nbits.
CS_HD inline u32 fse_counter(const FseEntry& e, u32 log) { return (u32(e.base) + (1u << log)) >> e.nbits; }
CS_HD inline u16 pack_seq_entry(const FseEntry& e, u32 log) {
  return static_cast<u16>((fse_counter(e, log) << 6) | e.symbol);
}
// `packed` must come from pack_seq_entry of an entry of a table of this log (1 <= k and
// highbit(k) <= log: pass 2a packs only tables build_fse_table filled completely, and pass 2b
// reads only blocks whose tables were built); then base + 2^nbits <= 2^log, so every next
// state stays inside the table whatever bits a damaged stream supplies.
CS_HD inline FseEntry unpack_seq_entry(u32 packed, u32 log) {
  const u32 k = packed >> 6;
  const u32 nbits = log - highbit32(k);
  FseEntry e;
  e.base = static_cast<u16>((k << nbits) - (1u << log));
  e.nbits = static_cast<u8>(nbits);
  e.symbol = static_cast<u8>(packed & 63);
  return e;
}
// State s's entry of each code, for SequenceStream and next_from_window (sequences.hpp has
// the ZstdTables overloads).
CS_HD inline FseEntry ll_entry(const SeqTables* t, u32 s) { return unpack_seq_entry(t->ll[s], t->ll_log); }
CS_HD inline FseEntry ml_entry(const SeqTables* t, u32 s) { return unpack_seq_entry(t->ml[s], t->ml_log); }
CS_HD inline FseEntry of_entry(const SeqTables* t, u32 s) { return unpack_seq_entry(t->of[s], t->of_log); }
// The same tables with their logs in registers: pass 2b's loop stores records through u32
// pointers, which may alias the logs of a SeqTables in memory, so the compiler could not keep
// them out of the loop.
struct SeqTablesView {
  const u16* ll;
  const u16* ml;
  const u16* of;
  u32 ll_log, ml_log, of_log;
};
CS_HD inline SeqTablesView view_of(const SeqTables* t) { return {t->ll, t->ml, t->of, t->ll_log, t->ml_log, t->of_log}; }
CS_HD inline FseEntry ll_entry(const SeqTablesView* t, u32 s) { return unpack_seq_entry(t->ll[s], t->ll_log); }
CS_HD inline FseEntry ml_entry(const SeqTablesView* t, u32 s) { return unpack_seq_entry(t->ml[s], t->ml_log); }
CS_HD inline FseEntry of_entry(const SeqTablesView* t, u32 s) { return unpack_seq_entry(t->of[s], t->of_log); }
static_assert(sizeof(SeqTables) % 16 == 0, "SeqTables is copied in 16-byte words");

// The same three tables packed for the traced pass 2b's dependent chain (sequence_trace.hpp),
// which needs of a state only where its next state comes from and how many extra bits its
// sequence carries, not its symbol: (k << 5) | extra, k as in SeqTables (10 bits) and the
// symbol's extra-bit count (literal and match lengths <= 16, offsets = their code <= 31: 5
// bits). With the extra-bit count in the entry, the chain makes one shared-memory load per
// sequence and code, not two (the entry, then its code's word).
struct ChainTables {
  u16 ll[1u << kLlMaxLog];
  u16 ml[1u << kMlMaxLog];
  u16 of[1u << kOfMaxLog];
  u32 ll_log, ml_log, of_log, pad;
};
static_assert(sizeof(ChainTables) % 16 == 0, "ChainTables is copied in 16-byte words");
CS_HD inline u16 pack_chain_entry(const FseEntry& e, u32 log, u32 extra_bits) {
  return static_cast<u16>((fse_counter(e, log) << 5) | extra_bits);
}

// Where each group of kGroupSeqs sequences of a block starts, for executing the groups of a
// frame by several teams at once (execute_groups.hpp): pass 2b, which reads the sequences in
// order anyway, writes entry g = the output and literal offsets, within the block, of record
// kGroupSeqs * g, and entry ceil(n_ok / kGroupSeqs) = the totals over the n_ok records. Both
// saturate at 2^32 - 1: sums that large (a damaged block claiming ~43 K sequences of 2^17-byte
// lengths) pass 128 KiB, so the block fails its size check in a group before any group that
// would read a saturated start.
struct GroupStart {
  u32 out;
  u32 lit;
};
inline constexpr u32 kGroupSeqs = 32;
CS_HD inline u64 step_group_entries(const BlockStep& s) { return (s.seq_cap + kGroupSeqs - 1) / kGroupSeqs + 1; }

// A block's scratch: literals, the three record arrays, then (blocks with sequences) its
// SeqTables, its ChainTables and its GroupStart table, each part 16-byte aligned.
CS_HD inline u64 step_tables_at(const BlockStep& s) { return step_lit_bytes(s) + align16(u64(12) * step_rec_stride(s)); }
CS_HD inline u64 step_chain_at(const BlockStep& s) { return step_tables_at(s) + sizeof(SeqTables); }
CS_HD inline u64 step_groups_at(const BlockStep& s) { return step_chain_at(s) + sizeof(ChainTables); }
CS_HD inline u64 step_scratch_bytes(const BlockStep& s) {
  if (s.nb_seq == 0) return step_tables_at(s);
  return step_groups_at(s) + align16(sizeof(GroupStart) * step_group_entries(s));
}

// ---- pass 1: plan ---------------------------------------------------------------------------

struct PlanTotals {
  u64 steps;    // steps written (or that would be)
  u64 scratch;  // scratch bytes the compressed blocks need, 16-byte aligned each
};

// How pass 2b reads a sequence stream, up to its last few sequences (which always take the
// general reader): kGeneral, BackwardBits with every check; kFastBits, FastBackwardBits
// (SequenceStream::next_fast: a branch and maybe a load per field); kWindow, a
// BackwardWordQueue (next_from_window: no branch, no load in the dependent chain). The same
// records and statuses from each.
enum class SeqReader : u32 { kGeneral = 0, kFastBits = 1, kWindow = 2 };

// A window loop's sequence may start only this far from the stream's start (in the window's
// bit count): after it (<= 89 bits) the window's lowest loaded word is still word 0.
inline constexpr u32 kWindowMinBits = 5 * 64 + 1 + SequenceStream::kMaxSequenceBits;

namespace detail {

struct PlanState {
  BlockStep* out;  // null: count only
  u64 n;
  u64 scratch;
  CS_HD BlockStep* add(u32 kind) {
    BlockStep* s = out ? out + n : nullptr;
    ++n;
    if (s) {
      *s = BlockStep{};
      s->kind = kind;
    }
    return s;
  }
  CS_HD void error(DecodeStatus st) {
    if (BlockStep* s = add(kStepError)) s->status = static_cast<u32>(st);
  }
};

// Refs of the tables a frame has defined so far (mode 0xFF: none yet).
struct FrameTables {
  TableRef huf;
  TableRef code[3];
};

// Parses the sections of a compressed block, content src[at, at + size), into *s.
CS_HD inline DecodeStatus plan_compressed(const u8* src, u64 at, std::size_t size, FrameTables* ft, BlockStep* s,
                                          short* norm, bool bound) {
  const u8* c = src + at;
  LiteralsHeader lh;
  CS_ZSTD_TRY(parse_literals_header(c, size, &lh));
  if (lh.type == 2) ft->huf = TableRef{at + lh.header, static_cast<u32>(lh.csize), 2};
  // Treeless literals need a tree decoded earlier in this frame.
  if (lh.type == 3) CS_ZSTD_REQUIRE(ft->huf.mode != 0xFF, kCorrupt);
  const std::size_t lit_bytes = lh.section_bytes();
  s->lit_type = lh.type;
  s->lit_at = at + lh.header;
  s->lit_regen = static_cast<u32>(lh.regen);
  s->huf = ft->huf;
  const u8* q = c + lit_bytes;
  const std::size_t m = size - lit_bytes;
  u32 nb_seq = 0;
  std::size_t p = 0;
  CS_ZSTD_TRY(read_sequence_count(q, m, &nb_seq, &p));
  s->nb_seq = nb_seq;
  if (nb_seq == 0) {
    CS_ZSTD_REQUIRE(p == m, kCorrupt);  // the block is its literals
    return DecodeStatus::kOk;
  }
  CS_ZSTD_REQUIRE(p < m, kCorrupt);
  if (bound) {  // what the scratch size needs is known; the table descriptions are not parsed
    s->seq_cap = nb_seq < kMaxStoredSeqs ? nb_seq : kMaxStoredSeqs;
    return DecodeStatus::kOk;
  }
  const u32 modes = q[p++];
  CS_ZSTD_REQUIRE((modes & 3) == 0, kCorrupt);  // reserved bits
  // Table descriptions in the order literal lengths, offsets, match lengths.
  const u32 max_symbol[3] = {kLlMaxSymbol, kOfMaxSymbol, kMlMaxSymbol};
  const u32 max_log[3] = {kLlMaxLog, kOfMaxLog, kMlMaxLog};
  for (u32 k = 0; k < 3; ++k) {
    const u32 mode = (modes >> (6 - 2 * k)) & 3;
    const TableRef here{at + lit_bytes + p, static_cast<u32>(m - p), mode};
    if (mode == 3) {
      CS_ZSTD_REQUIRE(ft->code[k].mode != 0xFF, kCorrupt);  // Repeat_Mode needs an earlier table
    } else if (mode == 2) {
      u32 count = 0, log = 0;
      std::size_t used = 0;
      CS_ZSTD_TRY(read_fse_description(q + p, m - p, max_symbol[k], max_log[k], norm, &count, &log, &used));
      p += used;
      ft->code[k] = here;
    } else if (mode == 1) {
      CS_ZSTD_REQUIRE(m - p >= 1, kCorrupt);
      CS_ZSTD_REQUIRE(q[p] <= max_symbol[k], kCorrupt);
      p += 1;
      ft->code[k] = here;
    } else {
      ft->code[k] = here;
    }
    s->code[k] = ft->code[k];
  }
  CS_ZSTD_REQUIRE(p < m, kCorrupt);
  s->seq_at = at + lit_bytes + p;
  s->seq_avail = m - p;
  s->seq_cap = nb_seq < kMaxStoredSeqs ? nb_seq : kMaxStoredSeqs;
  return DecodeStatus::kOk;
}

}  // namespace detail

namespace detail {

// plan_buffer's walk; with `bound`, counting only, without parsing the blocks' table
// descriptions (see plan_buffer_bound).
CS_HD inline void plan_walk(const u8* src, std::size_t n, BlockStep* steps, u64 scratch_base, short* norm,
                            PlanTotals* totals, bool bound) {
  detail::PlanState ps{steps, 0, scratch_base};
  std::size_t p = 0;
  while (p < n) {
    if (n - p < 4) {
      ps.error(DecodeStatus::kCorrupt);
      break;
    }
    const u32 magic = load_le32(src + p);
    if ((magic & kSkippableMagicMask) == kSkippableMagic) {  // section 3.1.2
      if (n - p < 8 || load_le32(src + p + 4) > n - p - 8) {
        ps.error(DecodeStatus::kCorrupt);
        break;
      }
      p += 8 + std::size_t(load_le32(src + p + 4));
      continue;
    }
    FrameHeader h;
    const DecodeStatus hs = magic == kFrameMagic ? parse_frame_header(src + p, n - p, &h) : DecodeStatus::kCorrupt;
    if (hs != DecodeStatus::kOk) {
      ps.error(hs);
      break;
    }
    if (BlockStep* s = ps.add(kStepFrame)) {
      s->size = h.content_size;
      s->flags = (h.has_content_size ? kStepHasContentSize : 0) | (h.has_checksum ? kStepHasChecksum : 0);
    }
    // Section 3.1.1.2.3: Block_Maximum_Size = min(Window_Size, 128 KiB).
    const std::size_t block_max =
        h.window_size < kBlockSizeMax ? static_cast<std::size_t>(h.window_size) : kBlockSizeMax;
    detail::FrameTables ft;
    ft.huf.mode = 0xFF;
    for (auto& c : ft.code) c.mode = 0xFF;
    std::size_t q = p + h.header_bytes;
    DecodeStatus err = DecodeStatus::kOk;
    for (;;) {
      // Block_Header (section 3.1.1.2): bit 0 Last_Block, bits 1-2 Block_Type, 3-23 Block_Size.
      if (n - q < 3) {
        err = DecodeStatus::kCorrupt;
        break;
      }
      const u32 bh = load_le24(src + q);
      q += 3;
      const bool last = bh & 1;
      const u32 type = (bh >> 1) & 3;
      const std::size_t size = bh >> 3;
      if (type == 3 || size > block_max) {
        err = DecodeStatus::kCorrupt;
        break;
      }
      if (type == 0 || type == 2) {
        if (size > n - q) {
          err = DecodeStatus::kCorrupt;
          break;
        }
      } else if (n - q < 1) {
        err = DecodeStatus::kCorrupt;
        break;
      }
      if (type == 2) {
        BlockStep tmp{};
        tmp.kind = kStepCompressed;
        tmp.at = q;
        tmp.size = size;
        err = detail::plan_compressed(src, q, size, &ft, &tmp, norm, bound);
        if (err != DecodeStatus::kOk) break;
        tmp.scratch = ps.scratch;
        ps.scratch += step_scratch_bytes(tmp);
        if (BlockStep* s = ps.add(kStepCompressed)) *s = tmp;
        q += size;
      } else {
        if (BlockStep* s = ps.add(type == 0 ? kStepRaw : kStepRle)) {
          s->at = q;
          s->size = size;
        }
        q += type == 0 ? size : 1;
      }
      if (last) break;
    }
    if (err == DecodeStatus::kOk && h.has_checksum && n - q < 4) err = DecodeStatus::kCorrupt;
    if (err != DecodeStatus::kOk) {
      ps.error(err);
      break;
    }
    if (BlockStep* s = ps.add(kStepFrameEnd)) {
      s->at = q;
      s->size = h.content_size;
      s->flags = (h.has_content_size ? kStepHasContentSize : 0) | (h.has_checksum ? kStepHasChecksum : 0);
    }
    p = q + (h.has_checksum ? 4 : 0);
  }
  totals->steps = ps.n;
  totals->scratch = ps.scratch - scratch_base;
}

}  // namespace detail

// Pass 1 for one buffer src[0, n): writes its steps to `steps` (or, when null, only counts
// them) and gives each compressed block scratch from offset `scratch_base` on. `norm` is
// scratch for kFseMaxSymbols shorts. Always ends with a kStepError or after the last frame.
CS_HD inline void plan_buffer(const u8* src, std::size_t n, BlockStep* steps, u64 scratch_base, short* norm,
                              PlanTotals* totals) {
  detail::plan_walk(src, n, steps, scratch_base, norm, totals, false);
}

// At least the steps and scratch plan_buffer gives src[0, n), found without parsing the
// blocks' table descriptions (the slow part of a plan: a field-by-field bit parse), so that
// the GPU's plan pass parses each description once, when it writes the steps, not twice. Where
// a description is damaged, plan_buffer stops with an error step earlier than this counted;
// the steps reserved past it are never executed.
CS_HD inline void plan_buffer_bound(const u8* src, std::size_t n, short* norm, PlanTotals* totals) {
  detail::plan_walk(src, n, nullptr, 0, norm, totals, true);
}

// ---- pass 2: entropy ------------------------------------------------------------------------
//
// Two halves, so that the serial part (the sequence stream) can run one block per thread:
//   2a decode_block_literals (a team per block): tables, literals; copies the block's three
//      sequence-code tables into its scratch (SeqTables).
//   2b decode_block_sequences (one thread per block): the sequence stream into records.
// decode_block_entropy runs both for one block.

namespace detail {

template <class Team>
CS_HD DecodeStatus entropy_front(const Team& team, const u8* src, const BlockStep& s, ZstdTables* t, u8* blk) {
  if (team.rank() == 0) t->huf_valid = t->ll_valid = t->ml_valid = t->of_valid = 0;
  team.sync();
  std::size_t used = 0;
  // Treeless literals: rebuild the tree of the block that described it.
  if (s.lit_type == 3) CS_ZSTD_TRY(read_huffman_tree(team, src + s.huf.at, s.huf.avail, t, &used));
  Literals lits{nullptr, 0};
  CS_ZSTD_TRY(decode_literals(team, src + s.at, static_cast<std::size_t>(s.size), t, blk, &lits, &used));
  if (s.nb_seq == 0) return DecodeStatus::kOk;
  for (u32 k = 0; k < 3; ++k) {
    CS_ZSTD_TRY(build_code_table(team, static_cast<SeqCode>(k), s.code[k].mode, src + s.code[k].at, s.code[k].avail,
                                 t, &used));
  }
  // The states each table has (RLE: one), packed for pass 2b.
  team.sync();
  SeqTables* out = reinterpret_cast<SeqTables*>(blk + step_tables_at(s));
  const u32 nll = 1u << t->ll_log, nml = 1u << t->ml_log, nof = 1u << t->of_log;
  for (u32 i = team.rank(); i < nll; i += team.size()) out->ll[i] = pack_seq_entry(t->ll[i], t->ll_log);
  for (u32 i = team.rank(); i < nml; i += team.size()) out->ml[i] = pack_seq_entry(t->ml[i], t->ml_log);
  for (u32 i = team.rank(); i < nof; i += team.size()) out->of[i] = pack_seq_entry(t->of[i], t->of_log);
  // And for the traced pass 2b, with each symbol's extra-bit count in place of the symbol.
  ChainTables* chain = reinterpret_cast<ChainTables*>(blk + step_chain_at(s));
  for (u32 i = team.rank(); i < nll; i += team.size()) {
    chain->ll[i] = pack_chain_entry(t->ll[i], t->ll_log, ll_bits(t->ll[i].symbol));
  }
  for (u32 i = team.rank(); i < nml; i += team.size()) {
    chain->ml[i] = pack_chain_entry(t->ml[i], t->ml_log, ml_bits(t->ml[i].symbol));
  }
  for (u32 i = team.rank(); i < nof; i += team.size()) {
    chain->of[i] = pack_chain_entry(t->of[i], t->of_log, t->of[i].symbol);
  }
  if (team.rank() == 0) {
    out->ll_log = chain->ll_log = t->ll_log;
    out->ml_log = chain->ml_log = t->ml_log;
    out->of_log = chain->of_log = t->of_log;
    out->pad = chain->pad = 0;
  }
  return DecodeStatus::kOk;
}

// Record i of a block: ll, ml and the offset, or a symbolic offset's index and amount
// subtracted, tagged in the literal length (see kRecSym). Selects, not a branch: on the GPU
// each lane of a warp stores the records of its own block.
CS_HD inline void store_record(u32* rec_ll, u32* rec_ml, u32* rec_off, u32 i, u32 ll, u32 ml, u64 offset) {
  const bool sym = sym_is(offset);
  rec_ll[i] = ll | (sym ? kRecSym | (sym_idx(offset) << 29) : 0u);
  rec_off[i] = sym ? static_cast<u32>(sym_sub(offset)) : static_cast<u32>(offset);
  rec_ml[i] = ml;
}

// The record words (literal length with tag and index, offset or amount subtracted) of an
// offset in the 32-bit form (sym32_from): its top three bits are the tag and index the record
// keeps.
CS_HD inline void record32_words(u32 ll, u32 offset, u32* w_ll, u32* w_off) {
  const bool sym = (offset & kSym32Tag) != 0;
  static_assert(kRecSym == kSym32Tag, "a record's tag and index are the 32-bit form's top bits");
  *w_ll = ll | (sym ? offset & 0xE0000000u : 0u);
  *w_off = sym ? kSym32Low - (offset & kSym32Low) : offset;
}

// The window loop's records, four at a time per array (QuadStore; the arrays' stride is a
// multiple of 4, so record i of each array is word i from a 16-byte aligned base): on the GPU
// each lane writes its own block's records, three 4-byte stores per sequence before.
struct RecordQuads {
  QuadStore ll, ml, off;
  CS_HD RecordQuads(u32* rec_ll, u32* rec_ml, u32* rec_off, u32 first)
      : ll{rec_ll, first, {}}, ml{rec_ml, first, {}}, off{rec_off, first, {}} {}
  CS_HD void put(u32 i, u32 v_ll, u32 v_ml, u32 v_off) {
    ll.put(i, v_ll);
    ml.put(i, v_ml);
    off.put(i, v_off);
  }
  CS_HD void finish(u32 end) {
    ll.finish(end);
    ml.finish(end);
    off.finish(end);
  }
};

// Running output and literal offsets of a block's records, written to its GroupStart table at
// the first record of every group. Off the per-sequence dependent chain: two adds and, every
// kGroupSeqs records, one store.
struct GroupSums {
  GroupStart* table;
  u64 out = 0, lit = 0;
  CS_HD static u32 saturate(u64 v) { return v < 0xFFFFFFFFu ? static_cast<u32>(v) : 0xFFFFFFFFu; }
  CS_HD GroupStart now() const { return GroupStart{saturate(out), saturate(lit)}; }
  // Record i has literal length ll and match length ml.
  CS_HD void record(u32 i, u32 ll, u32 ml) {
    if (i % kGroupSeqs == 0) table[i / kGroupSeqs] = now();
    lit += ll;
    out += u64(ll) + ml;
  }
};

// The sequence stream of one block, by one thread, with the tables of pass 2a, read as
// `reader` says.
CS_HD inline DecodeStatus entropy_sequences(const u8* src, const BlockStep& s, const SeqTables* t, u8* blk, u32* n_ok,
                                            RepeatOffsets* reps, SeqReader reader, const u32* codes, u64* ring,
                                            GroupSums* sums) {
  SequenceStream stream;
  CS_ZSTD_TRY(stream.init(t, src + s.seq_at, static_cast<std::size_t>(s.seq_avail)));
  u32* rec_ll = reinterpret_cast<u32*>(blk + step_lit_bytes(s));
  u32* rec_ml = rec_ll + step_rec_stride(s);
  u32* rec_off = rec_ml + step_rec_stride(s);
  u32 i = 0;
  if (reader == SeqReader::kFastBits) {
    FastBackwardBits fb(stream.bits);
    while (i < s.seq_cap && i + 1 < s.nb_seq && fb.pos >= 57 + SequenceStream::kMaxSequenceBits) {
      u32 ll = 0, ml = 0;
      u64 of_value = 0, offset = 0;
      stream.next_fast(t, &fb, &ll, &ml, &of_value);
      CS_ZSTD_TRY(update_repeat_offsets(reps, of_value, ll, &offset));
      store_record(rec_ll, rec_ml, rec_off, i, ll, ml, offset);
      sums->record(i, ll, ml);
      *n_ok = ++i;
    }
    stream.bits.pos = fb.pos;
    stream.bits.win_byte = ~u64(0);  // the general reader reloads its window
  } else if (reader == SeqReader::kWindow && codes && ring && s.seq_at >= 8 && stream.bits.pos >= kWindowMinBits &&
             sym32_fits(reps->rep[0]) && sym32_fits(reps->rep[1]) && sym32_fits(reps->rep[2])) {
    // (The window's first word may start up to 7 bytes before the stream: inside src, as
    // seq_at >= 8.)
    BackwardWordQueue w;
    const u32 pos = static_cast<u32>(stream.bits.pos);
    u32 abit = w.init(src + s.seq_at, static_cast<std::size_t>(s.seq_avail), pos, ring);
    const u32 lead = abit - pos;
    u32 lls = stream.ll_state, mls = stream.ml_state, ofs = stream.of_state;
    const SeqTablesView v = view_of(t);
    u32 r32[3] = {sym32_from(reps->rep[0]), sym32_from(reps->rep[1]), sym32_from(reps->rep[2])};
    const u32 end = s.seq_cap < s.nb_seq - 1 ? s.seq_cap : s.nb_seq - 1;  // the last sequence: general reader
    DecodeStatus st = DecodeStatus::kOk;
    // An offset code above kWindowMaxOfCode (offsets of 2^31 - 3 and more, which no real
    // stream of ours has) ends the loop before its sequence; the general reader takes it.
    WindowLookup e = window_lookup(&v, codes, lls, mls, ofs);
    RecordQuads quads(rec_ll, rec_ml, rec_off, i);
    while (i < end && abit >= kWindowMinBits && e.of.symbol <= kWindowMaxOfCode) {
      u32 ll = 0, ml = 0, of_value = 0, offset = 0;
      next_from_window(e, &w, &abit, &lls, &mls, &ofs, &ll, &ml, &of_value);
      e = window_lookup(&v, codes, lls, mls, ofs);  // the next step's, in flight during the rest
      if (!update_repeat_offsets_flat(r32, of_value, ll, &offset)) {
        st = DecodeStatus::kCorrupt;
        break;
      }
      u32 w_ll = 0, w_off = 0;
      record32_words(ll, offset, &w_ll, &w_off);
      quads.put(i, w_ll, ml, w_off);
      sums->record(i, ll, ml);
      *n_ok = ++i;
    }
    quads.finish(i);
    w.drain();
    for (int k = 0; k < 3; ++k) reps->rep[k] = sym32_to64(r32[k]);
    if (st != DecodeStatus::kOk) return st;
    stream.ll_state = lls;
    stream.ml_state = mls;
    stream.of_state = ofs;
    stream.bits.pos = abit - lead;
    stream.bits.win_byte = ~u64(0);
  }
  for (; i < s.seq_cap; ++i) {
    u32 ll = 0, ml = 0;
    u64 of_value = 0, offset = 0;
    CS_ZSTD_TRY(stream.next(t, i + 1 == s.nb_seq, &ll, &ml, &of_value));
    CS_ZSTD_TRY(update_repeat_offsets(reps, of_value, ll, &offset));
    store_record(rec_ll, rec_ml, rec_off, i, ll, ml, offset);
    sums->record(i, ll, ml);
    *n_ok = i + 1;
  }
  if (s.seq_cap == s.nb_seq) CS_ZSTD_REQUIRE(stream.bits.finished_exactly(), kCorrupt);
  return DecodeStatus::kOk;
}

}  // namespace detail

// Whether pass 2b has work for this step (pass 2a left it ok and it has sequences).
CS_HD inline bool needs_sequences(const BlockStep& s) {
  return s.kind == kStepCompressed && s.status == static_cast<u32>(DecodeStatus::kOk) && s.nb_seq > 0;
}
CS_HD inline const SeqTables* step_seq_tables(const BlockStep& s, const u8* blk) {
  return reinterpret_cast<const SeqTables*>(blk + step_tables_at(s));
}

// Pass 2a for one compressed block: `blk` is its scratch (scratch base + s->scratch); writes
// s->status (an error, or ok when the literals and tables are) with n_ok = 0 and the block's
// repeat offsets unchanged. `t` is the team's table space.
template <class Team>
CS_HD void decode_block_literals(const Team& team, const u8* src, BlockStep* s, ZstdTables* t, u8* blk) {
  const DecodeStatus st = detail::entropy_front(team, src, *s, t, blk);
  team.sync();
  if (team.rank() == 0) {
    s->status = static_cast<u32>(st);
    s->n_ok = 0;
    for (u32 k = 0; k < 3; ++k) s->reps_end[k] = sym_rep(k);
  }
}

// The seq_code_word table for host callers of pass 2b (tests, fuzzers, the CPU's emulation).
inline const u32* seq_code_words() {
  static const auto table = [] {
    struct Words {
      u32 w[kSeqCodeWords];
    } t{};
    for (u32 i = 0; i < kSeqCodeWords; ++i) t.w[i] = seq_code_word(i);
    return t;
  }();
  return table.w;
}

// Pass 2b for one block with needs_sequences(*s), by one thread; `t` holds the block's
// SeqTables (its scratch copy, or a copy of that). Writes s->status, s->n_ok, s->reps_end, and
// the block's GroupStart table (entries 0 to ceil(n_ok / kGroupSeqs), also on errors).
// `reader`: see SeqReader (the same results from each); SeqReader::kWindow needs `codes`, the
// seq_code_word table (seq_code_words() on the host; the GPU kernel's copy in shared memory),
// and `ring`, BackwardWordQueue::kRingWords words of the thread's (in shared memory on the
// GPU), and without them reads as kGeneral.
CS_HD inline void decode_block_sequences(const u8* src, BlockStep* s, const SeqTables* t, u8* blk,
                                         SeqReader reader = SeqReader::kGeneral, const u32* codes = nullptr,
                                         u64* ring = nullptr) {
  u32 n_ok = 0;
  // Repeat offsets relative to the block's incoming ones (kSymTag).
  RepeatOffsets reps{{sym_rep(0), sym_rep(1), sym_rep(2)}};
  detail::GroupSums sums{reinterpret_cast<GroupStart*>(blk + step_groups_at(*s))};
  const DecodeStatus st = detail::entropy_sequences(src, *s, t, blk, &n_ok, &reps, reader, codes, ring, &sums);
  sums.table[(n_ok + kGroupSeqs - 1) / kGroupSeqs] = sums.now();
  s->status = static_cast<u32>(st);
  s->n_ok = n_ok;
  for (int k = 0; k < 3; ++k) s->reps_end[k] = reps.rep[k];
}

// Pass 2 for one compressed block: 2a by the team, then 2b by its first member.
template <class Team>
CS_HD void decode_block_entropy(const Team& team, const u8* src, BlockStep* s, ZstdTables* t, u8* blk) {
  decode_block_literals(team, src, s, t, blk);
  team.sync();
  if (team.rank() == 0 && needs_sequences(*s)) decode_block_sequences(src, s, step_seq_tables(*s, blk), blk);
  team.sync();
}

// ---- pass 3: execution ----------------------------------------------------------------------
//
// execute_steps: one warp executes a frame (the GPU's CUBESTREAM_ZSTD_EXEC=warp kernel), 32
// sequences (a "group") at a time, and memory latency bounds it: ERA5-like frames have ~1.2 rounds of dependent matches per group but match
// mostly 4 KiB - 1 MiB back, so literals and match sources come from L2 or DRAM (counts in
// docs/gpu_zstd.md, version 3). So the loop is software-pipelined: each member's records are
// loaded two groups ahead, and while group g is copied the members already load the bytes of
// their group-g+1 sequence (<= 16 literals, and a match of <= 16 bytes whose source was
// final before group g started) into registers ("preloading"); longer or dependent copies
// take the general path, with their sources prefetched into L2.

namespace detail {

// A hint to bring the line holding p into the GPU's L2; nothing on the host. p must lie in
// memory the call may read.
CS_HD inline void prefetch_l2(const void* p) {
#if CS_DEVICE_PASS
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
#else
  (void)p;
#endif
}

// Up to kPreBytes bytes held in registers (constant indices only, so they stay registers).
inline constexpr u32 kPreBytes = 16;
struct Pre16 {
  u32 w[kPreBytes / 4];
};
CS_HD inline Pre16 load_pre(const u8* s, u32 n) {  // n <= kPreBytes; reads s[0, n) only
  Pre16 p{};
  for (u32 k = 0; k < kPreBytes; ++k) {
    if (k < n) p.w[k >> 2] |= u32(s[k]) << (8 * (k & 3));
  }
  return p;
}
CS_HD inline void store_pre(u8* d, u32 n, const Pre16& p) {
  for (u32 k = 0; k < kPreBytes; ++k) {
    if (k < n) d[k] = static_cast<u8>(p.w[k >> 2] >> (8 * (k & 3)));
  }
}

// Copies n bytes, d and s not overlapping, by one member: eight loads issued before their
// stores, so that one copy of a typical sequence waits for memory twice, not once per byte.
CS_HD inline void lane_copy(u8* d, const u8* s, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    u8 v[8];
    for (int k = 0; k < 8; ++k) v[k] = s[i + k];
    for (int k = 0; k < 8; ++k) d[i + k] = v[k];
  }
  // The last 0-7 bytes the same way, all loads before the stores: written as a byte loop, each
  // load waited for the store before it (the compiler cannot rule out that d overlaps s), and
  // ERA5-like sequences are mostly tails (~4 literal and ~6 match bytes): ncu had a quarter of
  // the units kernel's stall samples on byte stores waiting for their loads.
  const std::size_t t = n - i;
  u8 v[7];
  for (std::size_t k = 0; k < 7; ++k) {
    if (k < t) v[k] = s[i + k];
  }
  for (std::size_t k = 0; k < 7; ++k) {
    if (k < t) d[i + k] = v[k];
  }
}
// A match copy by one member. Byte i of the match is byte i - off of the output, so with
// off >= 8 the eight source bytes of a step all lie before it (lane_copy's order is safe);
// with off < 8 it goes byte by byte, forward, which repeats the last off bytes.
CS_HD inline void lane_match(u8* d, std::size_t off, std::size_t n) {
  if (off >= 8) {
    lane_copy(d, d - off, n);
    return;
  }
  const u8* s = d - off;
  for (std::size_t i = 0; i < n; ++i) d[i] = s[i];
}

// Members whose copies are longer than this hand them to the whole team.
inline constexpr u32 kLongCopy = 32;

// The repeat offsets after a block: its entropy pass left them symbolic, relative to the
// offsets the block started with (`reps`, replaced by the result).
CS_HD inline void advance_repeat_offsets(const u64* reps_end, u64* reps) {
  u64 next[3];
  for (int k = 0; k < 3; ++k) {
    const u64 e = reps_end[k];
    next[k] = sym_is(e) ? reps[sym_idx(e)] - sym_sub(e) : e;
  }
  for (int k = 0; k < 3; ++k) reps[k] = next[k];
}

// The checks on a block's trailing literals (the `rest` left after its last sequence), in
// execute_compressed's order: the block's output (seq_out bytes from its sequences, then the
// rest) stays within 128 KiB (section 3.1.1.2.3), and the rest fits the frame's output after
// `end`, where the sequences' output ends, of `cap` bytes.
CS_HD inline DecodeStatus check_trailing_literals(u64 seq_out, u64 rest, u64 end, u64 cap) {
  if (seq_out + rest > kBlockSizeMax) return DecodeStatus::kCorrupt;
  if (end > cap || rest > cap - end) return DecodeStatus::kWrongSize;
  return DecodeStatus::kOk;
}

// The long copies of a group, one after another by the whole team: the literals of each member
// with `mine` set (ll bytes from lits + lit to out + at), or its match (ml bytes at offset off
// before out + at). Every member calls them.
template <class Team>
CS_HD void team_copy_long_literals(const Team& team, bool mine, u8* out, u64 at, const u8* lits, u64 lit, u32 ll) {
  for (u32 m = team.ballot(mine); m; m &= m - 1) {
    const u32 who = team.lowest(m);
    const u64 d = team.shfl(at, who), sl = team.shfl(lit, who);
    const u32 len = team.shfl(ll, who);
    team_copy(team, out + d, lits + sl, len);
  }
}
template <class Team>
CS_HD void team_copy_long_matches(const Team& team, bool mine, u8* out, u64 at, u64 off, u32 ml) {
  for (u32 m = team.ballot(mine); m; m &= m - 1) {
    const u32 who = team.lowest(m);
    const u64 d = team.shfl(at, who), o = team.shfl(off, who);
    const u32 len = team.shfl(ml, who);
    team_match_copy(team, out + d, static_cast<std::size_t>(o), len);
  }
}

// One member's sequence within a group of a block's records: its offset (stored, or "incoming
// rep[idx] - sub", which must not reach 0: section 3.1.2.5), where its literals and its output
// start (one team scan of (ll, ll + ml) over the group from lit_pos and o), and the checks of
// decode_and_execute_sequences, in its order. Every member calls it (the scan is the team's);
// members past the group's end pass act = false and ll = ml = 0. Both pass-3 executors use it
// (execute_compressed, and execute_groups.hpp's sub-batches), so their checks cannot drift.
struct PlacedSequence {
  u64 offset;           // the resolved match offset
  u64 lit, out;         // positions of its literals (in the block's literals) and its output
  u64 incl;             // the inclusive scan: the last member's holds the group's totals
  DecodeStatus status;  // kOk, or the first check it fails
};

template <class Team>
CS_HD PlacedSequence place_sequence(const Team& team, bool act, u32 llw, u32 ll, u32 ml, u32 offw, const u64* reps_in,
                                    u64 lit_pos, u64 o, u64 lits_size, u64 block_start, u64 cap) {
  PlacedSequence p{offw, 0, 0, 0, DecodeStatus::kOk};
  if (act && (llw & kRecSym)) {
    const u64 rep = reps_in[(llw >> 29) & 3];
    if (rep <= offw) p.status = DecodeStatus::kCorrupt;
    p.offset = rep - offw;
  }
  const u64 mine = (u64(ll) << 32) | (u64(ll) + ml);
  p.incl = team.scan_add(mine);
  const u64 excl = p.incl - mine;
  p.lit = lit_pos + (excl >> 32);
  p.out = o + (excl & 0xFFFFFFFFu);
  if (act && p.status == DecodeStatus::kOk) {
    if (p.lit + ll > lits_size) p.status = DecodeStatus::kCorrupt;
    else if (p.out - block_start + ll + ml > kBlockSizeMax) p.status = DecodeStatus::kCorrupt;
    else if (p.out + ll + ml > cap) p.status = DecodeStatus::kWrongSize;
    else if (p.offset > p.out + ll) p.status = DecodeStatus::kCorrupt;
  }
  return p;
}

// The literals and matches of the sequences of one compressed block.
template <class Team>
CS_HD DecodeStatus execute_compressed(const Team& team, const u8* src, const BlockStep& s, const u8* blk, u8* out,
                                      std::size_t cap, std::size_t* pos, RepeatOffsets* reps) {
  const u8* lits = s.lit_type == 0 ? src + s.lit_at : blk;
  const u64 lits_size = s.lit_regen;
  const u32* rec_ll = reinterpret_cast<const u32*>(blk + step_lit_bytes(s));
  const u32* rec_ml = rec_ll + step_rec_stride(s);
  const u32* rec_off = rec_ml + step_rec_stride(s);
  const u64 block_start = *pos;
  u64 o = *pos;
  u64 lit_pos = 0;
  const u32 n = s.n_ok;
  // Records of groups g + 1 (nx_) and g + 2 (af_); the current group's come from nx_.
  u32 nx_llw = 0, nx_ml = 0, nx_off = 0;
  u32 af_llw = 0, af_ml = 0, af_off = 0;
  if (team.rank() < n) {
    nx_llw = rec_ll[team.rank()];
    nx_ml = rec_ml[team.rank()];
    nx_off = rec_off[team.rank()];
  }
  if (team.rank() + team.size() < n) {
    af_llw = rec_ll[team.rank() + team.size()];
    af_ml = rec_ml[team.rank() + team.size()];
    af_off = rec_off[team.rank() + team.size()];
  }
  // This member's preloaded bytes for its sequence of the current group (none for group 0).
  Pre16 pre_lit{}, pre_match{};
  bool have_lit = false, have_match = false;
  for (u32 first = 0; first < n; first += team.size()) {
    const u32 i = first + team.rank();
    const bool act = i < n;
    const u32 llw = nx_llw, ml = act ? nx_ml : 0, offw = nx_off;
    const u32 ll = act ? llw & ((1u << 29) - 1) : 0;
    nx_llw = af_llw;
    nx_ml = af_ml;
    nx_off = af_off;
    const u32 ahead = i + 2 * team.size();
    if (ahead < n) {
      af_llw = rec_ll[ahead];
      af_ml = rec_ml[ahead];
      af_off = rec_off[ahead];
    }
    const PlacedSequence p =
        place_sequence(team, act, llw, ll, ml, offw, reps->rep, lit_pos, o, lits_size, block_start, cap);
    const u64 offset = p.offset, my_lit = p.lit, my_out = p.out, incl = p.incl;
    const u32 bad = team.ballot(act && p.status != DecodeStatus::kOk);
    if (bad) return static_cast<DecodeStatus>(team.shfl(static_cast<u32>(p.status), team.lowest(bad)));
    const u32 last = (n - first < team.size() ? n - first : team.size()) - 1;
    const u64 total = team.shfl(incl, last);
    // The next group: positions from one more scan, then each member preloads its sequence's
    // literals and match source when short and safe to read now (inside the literals and the
    // frame's output; the match source ends before this group's output, so it is final, and
    // does not overlap its destination), else prefetches them into L2. These loads are in
    // flight while this group is copied below.
    Pre16 next_lit{}, next_match{};
    bool next_have_lit = false, next_have_match = false;
    {
      const u32 ni = i + team.size();
      const bool nact = ni < n;
      const u32 nll = nact ? nx_llw & ((1u << 29) - 1) : 0, nml = nact ? nx_ml : 0;
      u64 noff = nx_off;
      if (nact && (nx_llw & kRecSym)) {
        const u64 r = reps->rep[(nx_llw >> 29) & 3];
        noff = r > nx_off ? r - nx_off : ~u64(0);
      }
      const u64 nmine = (u64(nll) << 32) | (u64(nll) + nml);
      const u64 nexcl = team.scan_add(nmine) - nmine;
      const u64 nlit = lit_pos + (total >> 32) + (nexcl >> 32);
      const u64 nmdst = o + (total & 0xFFFFFFFFu) + (nexcl & 0xFFFFFFFFu) + nll;
      if (nll > 0 && nlit + nll <= lits_size) {
        if (nll <= kPreBytes) {
          next_lit = load_pre(lits + nlit, nll);
          next_have_lit = true;
        } else {
          prefetch_l2(lits + nlit);
        }
      }
      if (nml > 0 && noff <= nmdst && nmdst + nml <= cap && nmdst - block_start + nml <= kBlockSizeMax) {
        const u64 from = nmdst - noff;
        if (nml <= kPreBytes && noff >= nml && from + nml <= o) {
          next_match = load_pre(out + from, nml);
          next_have_match = true;
        } else {
          prefetch_l2(out + from);
        }
      }
    }
    // Literals: members copy their own (from registers when preloaded); long runs go to the
    // whole team, one at a time. Preloaded matches read nothing written here: stored now too.
    const bool long_lit = ll > kLongCopy;
    if (act && have_lit) {
      store_pre(out + my_out, ll, pre_lit);
    } else if (!long_lit) {
      lane_copy(out + my_out, lits + my_lit, ll);
    }
    const u64 mdst = my_out + ll;
    if (act && have_match) store_pre(out + mdst, ml, pre_match);
    team_copy_long_literals(team, long_lit, out, my_out, lits, my_lit, ll);
    team.sync();
    // The other matches, in rounds: the lowest pending member can always go (everything
    // before its output is written); another can go with it when the bytes it reads,
    // out[dst - off, dst - off + min(ml, off)), end before the first pending member's output.
    bool pending = act && ml > 0 && !have_match;
    for (u32 pm = team.ballot(pending); pm; pm = team.ballot(pending)) {
      const u32 lead = team.lowest(pm);
      const u64 front = team.shfl(mdst, lead);
      const u64 read_end = mdst - offset + (ml < offset ? ml : offset);
      const bool ready = pending && (team.rank() == lead || read_end <= front);
      const bool long_match = ready && ml > kLongCopy;
      if (ready && !long_match) lane_match(out + mdst, static_cast<std::size_t>(offset), ml);
      team_copy_long_matches(team, long_match, out, mdst, offset, ml);
      team.sync();
      if (ready) pending = false;
    }
    pre_lit = next_lit;
    pre_match = next_match;
    have_lit = next_have_lit;
    have_match = next_have_match;
    lit_pos += total >> 32;
    o += total & 0xFFFFFFFFu;
  }
  if (s.status != static_cast<u32>(DecodeStatus::kOk)) return static_cast<DecodeStatus>(s.status);
  CS_ZSTD_REQUIRE(n == s.nb_seq, kCorrupt);  // records were capped: see kMaxStoredSeqs
  advance_repeat_offsets(s.reps_end, reps->rep);
  // The literals left after the last sequence end the block.
  const u64 rest = lits_size - lit_pos;
  CS_ZSTD_TRY(check_trailing_literals(o - block_start, rest, o, cap));
  team_copy(team, out + o, lits + lit_pos, static_cast<std::size_t>(rest));
  o += rest;
  team.sync();
  *pos = static_cast<std::size_t>(o);
  return DecodeStatus::kOk;
}

}  // namespace detail

// Pass 3 for one buffer: runs its steps (from plan_buffer, compressed ones through pass 2)
// into dst[0, dst_size). `scratch` is the base the steps' scratch offsets refer to;
// `xxh_acc` is 4 u64 the team shares (checksums).
template <class Team>
CS_HD DecodeStatus execute_steps(const Team& team, const u8* src, const BlockStep* steps, u64 count, const u8* scratch,
                                 u8* dst, std::size_t dst_size, bool verify_checksum, u64* xxh_acc) {
  std::size_t done = 0;  // bytes of dst the finished frames produced
  std::size_t o = 0;     // bytes of the current frame
  std::size_t cap = 0;   // bytes available to the current frame
  RepeatOffsets reps{{1, 4, 8}};
  for (u64 k = 0; k < count; ++k) {
    const BlockStep& s = steps[k];
    u8* out = dst + done;
    switch (s.kind) {
      case kStepFrame:
        cap = dst_size - done;
        o = 0;
        if (s.flags & kStepHasContentSize) CS_ZSTD_REQUIRE(s.size <= cap, kWrongSize);
        // Repeat offsets start at 1, 4, 8 in every frame (section 3.1.2.5).
        reps.rep[0] = 1;
        reps.rep[1] = 4;
        reps.rep[2] = 8;
        break;
      case kStepRaw:
        CS_ZSTD_REQUIRE(s.size <= cap - o, kWrongSize);
        team_copy(team, out + o, src + s.at, static_cast<std::size_t>(s.size));
        o += static_cast<std::size_t>(s.size);
        team.sync();
        break;
      case kStepRle: {
        CS_ZSTD_REQUIRE(s.size <= cap - o, kWrongSize);
        const u8 v = src[s.at];
        for (std::size_t i = team.rank(); i < s.size; i += team.size()) out[o + i] = v;
        o += static_cast<std::size_t>(s.size);
        team.sync();
        break;
      }
      case kStepCompressed:
        CS_ZSTD_TRY(detail::execute_compressed(team, src, s, scratch + s.scratch, out, cap, &o, &reps));
        break;
      case kStepFrameEnd:
        if (s.flags & kStepHasContentSize) CS_ZSTD_REQUIRE(o == s.size, kCorrupt);
        if ((s.flags & kStepHasChecksum) && verify_checksum) {
          // Content_Checksum (section 3.1.1): low 32 bits of XXH64(content, seed 0).
          for (unsigned a = team.rank(); a < 4; a += team.size()) xxh_acc[a] = xxh64_accumulator(out, o, a, 0);
          team.sync();
          const u64 hash = xxh64_finish(out, o, 0, xxh_acc[0], xxh_acc[1], xxh_acc[2], xxh_acc[3]);
          team.sync();
          CS_ZSTD_REQUIRE(static_cast<u32>(hash) == load_le32(src + s.at), kChecksumMismatch);
        }
        done += o;
        o = 0;
        break;
      default:
        return static_cast<DecodeStatus>(s.status);
    }
  }
  CS_ZSTD_REQUIRE(done == dst_size, kWrongSize);
  return DecodeStatus::kOk;
}

}  // namespace cubestream::codec::logic::zstd
