// libFuzzer harness for the host build of the shared Zstandard decoder
// (src/codec/logic/zstd/decoder.hpp, the logic the GPU kernels run).
//
// Input layout (the 3-byte prefix of the codec harnesses, tests/fuzz/seed_corpus.py):
// bytes 0-1 an output size / 16 (little-endian), byte 2 flags: bit 0 verify the checksum,
// bit 1 take the output size from the frames' content sizes instead (when they all have
// one, up to 4 MiB) so that valid seeds decode fully. The rest is the input. Output and
// input are heap buffers of exactly their size, so AddressSanitizer reports any access past
// them. When both the shared decoder and libzstd succeed, their bytes must be equal. The same
// input also goes through the GPU's split passes (split.hpp: plan, literals and tables, the
// sequence streams traced as pass 2b runs by default (sequence_trace.hpp) or, for inputs of
// even size, through the word-window reader, then execution), run here by one thread in the
// GPU's order; they must give the one-pass decoder's status and
// bytes. Pass 3 also runs as the GPU's several-warp execution (execute_groups.hpp), emulated
// by 1-16 teams in an order drawn from the input: the same status and bytes again.
#include <zstd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "codec/logic/zstd/decoder.hpp"
#include "codec/logic/zstd/execute_groups.hpp"
#include "codec/logic/zstd/sequence_trace.hpp"
#include "codec/logic/zstd/split.hpp"

namespace zl = cubestream::codec::logic::zstd;
using cubestream::codec::logic::DecodeStatus;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return 0;
  std::size_t out_size = (std::size_t(data[0]) | (std::size_t(data[1]) << 8)) * 16;
  const bool verify = data[2] & 1;
  const std::uint8_t* in = data + 3;
  const std::size_t n = size - 3;
  if (data[2] & 2) {
    // the sum of the frames' content sizes, when every frame states one
    unsigned long long total = 0;
    std::size_t pos = 0;
    bool known = true;
    while (known && pos < n) {
      const std::size_t f = ZSTD_findFrameCompressedSize(in + pos, n - pos);
      if (ZSTD_isError(f)) break;
      const bool skippable = f >= 4 && in[pos + 3] == 0x18 && in[pos + 2] == 0x4D && in[pos + 1] == 0x2A &&
                             (in[pos] & 0xF0) == 0x50;  // magic 0x184D2A5?
      if (skippable) {
        pos += f;  // skippable: no content
        continue;
      }
      const unsigned long long c = ZSTD_getFrameContentSize(in + pos, f);
      if (c == ZSTD_CONTENTSIZE_ERROR || c == ZSTD_CONTENTSIZE_UNKNOWN) known = false;
      else total += c;
      pos += f;
    }
    if (known && total <= (4u << 20)) out_size = static_cast<std::size_t>(total);
  }
  static zl::ZstdWorkspace* ws = new zl::ZstdWorkspace;
  std::unique_ptr<std::uint8_t[]> src(new std::uint8_t[n]);
  if (n) std::memcpy(src.get(), in, n);
  std::unique_ptr<std::uint8_t[]> out(new std::uint8_t[out_size]);
  const DecodeStatus s = zl::zstd_decompress(zl::SerialTeam{}, src.get(), n, out.get(), out_size, ws, verify);
  {
    short norm[zl::kFseMaxSymbols];
    zl::PlanTotals count{}, wrote{}, bound{};
    zl::plan_buffer(src.get(), n, nullptr, 0, norm, &count);
    zl::plan_buffer_bound(src.get(), n, norm, &bound);  // what the GPU reserves
    if (bound.steps < count.steps || bound.scratch < count.scratch) std::abort();
    if (count.scratch <= (64u << 20)) {
      std::vector<zl::BlockStep> steps(count.steps);
      zl::plan_buffer(src.get(), n, steps.data(), 0, norm, &wrote);
      std::unique_ptr<std::uint8_t[]> scratch(new std::uint8_t[count.scratch ? count.scratch : 1]);
      static zl::ZstdTables* tables = new zl::ZstdTables;
      for (std::size_t k = steps.size(); k-- > 0;) {  // pass 2a, last block first
        if (steps[k].kind == zl::kStepCompressed) {
          zl::decode_block_literals(zl::SerialTeam{}, src.get(), &steps[k], tables, scratch.get() + steps[k].scratch);
        }
      }
      zl::u64 ring[zl::TraceWindow::kRingWords];  // the GPU lane's stream ring (the larger of the two)
      for (auto& st : steps) {  // pass 2b
        if (!zl::needs_sequences(st)) continue;
        std::uint8_t* blk = scratch.get() + st.scratch;
        if (size % 2 == 1) {
          zl::decode_block_sequences_traced(src.get(), &st, zl::step_chain_tables(st, blk), zl::step_seq_tables(st, blk),
                                            zl::seq_code_words(), blk, ring);
        } else {
          zl::decode_block_sequences(src.get(), &st, zl::step_seq_tables(st, blk), blk, zl::SeqReader::kWindow,
                                     zl::seq_code_words(), ring);
        }
      }
      std::unique_ptr<std::uint8_t[]> out2(new std::uint8_t[out_size]);
      std::uint64_t acc[4];
      const DecodeStatus s2 = zl::execute_steps(zl::SerialTeam{}, src.get(), steps.data(), steps.size(), scratch.get(),
                                                out2.get(), out_size, verify, acc);
      if (s2 != s) std::abort();
      if (s == DecodeStatus::kOk && out_size && std::memcmp(out.get(), out2.get(), out_size) != 0) std::abort();
      // Several teams in a random order that the input picks (its first bytes and size).
      std::uint64_t seed = size;
      for (std::size_t i = 0; i < n && i < 8; ++i) seed = seed * 131 + in[i];
      const std::uint32_t teams = 1 + static_cast<std::uint32_t>(seed % 16);
      zl::UnitEmulationStats stats;
      std::unique_ptr<std::uint8_t[]> out3(new std::uint8_t[out_size]);
      for (std::size_t i = 0; i < out_size; ++i) out3[i] = static_cast<std::uint8_t>(~out[i]);  // every byte wrong
      const DecodeStatus s3 = zl::execute_units_emulated(src.get(), steps.data(), steps.size(), scratch.get(),
                                                         out3.get(), out_size, verify, teams, seed | 1, &stats);
      if (stats.stalls != 0 || s3 != s) std::abort();
      if (s == DecodeStatus::kOk && out_size && std::memcmp(out.get(), out3.get(), out_size) != 0) std::abort();
    }
  }
  if (s != DecodeStatus::kOk) return 0;
  // libzstd, frame by frame, into the same size
  std::unique_ptr<std::uint8_t[]> ref(new std::uint8_t[out_size]);
  std::size_t pos = 0, written = 0;
  while (pos < n) {
    const std::size_t f = ZSTD_findFrameCompressedSize(in + pos, n - pos);
    if (ZSTD_isError(f)) return 0;
    const std::size_t r = ZSTD_decompress(ref.get() + written, out_size - written, in + pos, f);
    if (ZSTD_isError(r)) return 0;
    written += r;
    pos += f;
  }
  if (written != out_size || (out_size && std::memcmp(ref.get(), out.get(), out_size) != 0)) std::abort();
  return 0;
}
