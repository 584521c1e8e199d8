// Host count, on the GPU Zstandard benchmark's 64 KiB-1 MiB batch (bench/gpu_zstd_bench.cu; one
// chunk in 16 here), of the sequences that use a repeat offset (Offset_Value 1-3, RFC 8878
// section 3.1.2.5) and of the 32- and 16-sequence chunks that have none: the GPU records pass
// (src/cuda/zstd/zstd_batch.cu) takes those chunks without its repeat-offset scan
// (docs/gpu_zstd.md, v3.11). Runs the traced pass 2b's host logic (sequence_trace.hpp).
// Build (one line): g++ -std=c++20 -O2 -Isrc -Iinclude bench/micro/zstd_repeat_offsets.cpp -lzstd
//   -o zstd_repeat_offsets && ./zstd_repeat_offsets 3
#include <zstd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

#include "../era5_row_chunk.hpp"
#include "codec/logic/zstd/sequence_trace.hpp"
namespace zl = cubestream::codec::logic::zstd;

int main(int argc, char** argv) {
  const int level = argc > 1 ? std::atoi(argv[1]) : 3;
  std::mt19937 rng(7);  // the bench's sizes
  std::vector<std::size_t> sizes(1024);
  for (auto& s : sizes) s = (64u << 10) + (rng() % ((1u << 20) - (64u << 10) + 1)) / 4 * 4;
  long seqs = 0, repeats = 0, chunks32 = 0, clean32 = 0, chunks16 = 0, clean16 = 0;
  std::unique_ptr<zl::ZstdTables> tables(new zl::ZstdTables);
  for (int i = 0; i < 1024; i += 16) {
    const auto raw = cubestream_bench::era5_row_chunk(sizes[i], 5000 + static_cast<std::uint32_t>(i));
    std::vector<unsigned char> enc(ZSTD_compressBound(raw.size()));
    enc.resize(ZSTD_compress(enc.data(), enc.size(), raw.data(), raw.size(), level));
    short norm[zl::kFseMaxSymbols];
    zl::PlanTotals count{}, wrote{};
    zl::plan_buffer(enc.data(), enc.size(), nullptr, 0, norm, &count);
    std::vector<zl::BlockStep> steps(count.steps);
    zl::plan_buffer(enc.data(), enc.size(), steps.data(), 0, norm, &wrote);
    std::vector<unsigned char> scratch(count.scratch + 16);
    zl::u64 ring[zl::TraceWindow::kRingWords];
    for (auto& s : steps) {
      if (s.kind != zl::kStepCompressed) continue;
      unsigned char* blk = scratch.data() + s.scratch;
      zl::decode_block_literals(zl::SerialTeam{}, enc.data(), &s, tables.get(), blk);
      if (!zl::needs_sequences(s)) continue;
      zl::trace_block_sequences(enc.data(), &s, zl::view_of(zl::step_chain_tables(s, blk)), blk, ring);
      const auto* rec_states = reinterpret_cast<const zl::u32*>(blk + zl::step_lit_bytes(s)) + zl::step_rec_stride(s);
      const auto* rec_pos = rec_states + zl::step_rec_stride(s);
      const zl::SeqTablesView t = zl::view_of(zl::step_seq_tables(s, blk));
      int in32 = 0, in16 = 0;
      for (zl::u32 k = 0; k < s.trace_n; ++k) {
        const zl::SequenceValues v = zl::traced_values(enc.data() + s.seq_at, static_cast<std::size_t>(s.seq_avail),
                                                       s.seq_at >= 8, t, zl::seq_code_words(), rec_states[k], rec_pos[k]);
        const bool repeat = v.of_value <= 3;
        ++seqs;
        repeats += repeat;
        in32 += repeat;
        in16 += repeat;
        if (k % 32 == 31 || k + 1 == s.trace_n) ++chunks32, clean32 += in32 == 0, in32 = 0;
        if (k % 16 == 15 || k + 1 == s.trace_n) ++chunks16, clean16 += in16 == 0, in16 = 0;
      }
    }
  }
  std::printf("level %d: %ld sequences, %.2f%% with a repeat offset; chunks of 32 without one: %.1f%%, of 16: %.1f%%\n",
              level, seqs, 100.0 * double(repeats) / double(seqs), 100.0 * double(clean32) / double(chunks32),
              100.0 * double(clean16) / double(chunks16));
}
