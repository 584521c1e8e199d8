// libFuzzer harness for the decoder logic the GPU kernels run (host build of the same CS_HD
// code), compiled once per entry point with -DCS_FUZZ_GPU_LOGIC="<name>":
//   lz4_block    codec/logic/lz4_block.hpp: a raw block and the numcodecs framing, and the
//                numcodecs kernel's ring decoder (codec/logic/lz4_ring.hpp) run lane by lane,
//                the segmented decoder (codec/logic/lz4_segments.hpp) and the blosc warp's
//                groups (codec/logic/lz4_group.hpp)
//   blosc_units  codec/logic/blosc_decode.hpp: plan, every work unit, every block's unshuffle
//
// Input layout as in fuzz_codec.cpp: bytes 0-1 pick the output size (little-endian, times 16),
// the rest is the encoded data. Input, output and staging are exact-size heap allocations, so
// AddressSanitizer reports any access outside them; a status is the expected answer to bad
// data, and a decoder that claims more output than its buffer, or a unit outside its buffer,
// is a bug.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "codec/logic/blosc_decode.hpp"
#include "codec/logic/lz4_block.hpp"
#include "codec/logic/lz4_group.hpp"
#include "codec/logic/lz4_ring.hpp"
#include "codec/logic/lz4_rounds_host.hpp"
#include "codec/logic/lz4_segments_host.hpp"

#ifndef CS_FUZZ_GPU_LOGIC
#error "compile with -DCS_FUZZ_GPU_LOGIC=\"lz4_block\" or \"blosc_units\""
#endif

namespace {

namespace logic = cubestream::codec::logic;

[[noreturn]] void bug(const char* what, std::size_t a, std::size_t b) {
  std::fprintf(stderr, "fuzz_gpu_logic(%s): %s (%zu, %zu)\n", CS_FUZZ_GPU_LOGIC, what, a, b);
  std::abort();
}

// The GPU parse reads through a staging window (Lz4StagedReader); here the window is a small
// heap buffer, so that refills happen often and ASan sees any access outside it.
struct MemcpyFill {
  void operator()(std::uint8_t* win, const std::uint8_t* src, std::size_t n) const { std::memcpy(win, src, n); }
};
struct StagedCopier : logic::Lz4SerialCopier {
  std::uint8_t* window;
  std::size_t cap;
  logic::Lz4StagedReader<MemcpyFill> reader(const std::uint8_t* in, std::size_t size) {
    return logic::Lz4StagedReader<MemcpyFill>{in, size, window, cap, MemcpyFill{}};
  }
};

void fuzz_lz4(const std::uint8_t* in, std::size_t size, std::size_t out_size) {
  std::unique_ptr<std::uint8_t[]> out(new std::uint8_t[out_size == 0 ? 1 : out_size]);
  std::size_t produced = 0;
  const logic::DecodeStatus st = logic::lz4_decode_block(in, size, out.get(), out_size, &produced);
  if (produced > out_size) bug("block decode claims more than its output", produced, out_size);
  if (st == logic::DecodeStatus::kOk) {
    // decoding again into exactly the produced size must give the same status and bytes
    std::unique_ptr<std::uint8_t[]> again(new std::uint8_t[produced == 0 ? 1 : produced]);
    logic::Lz4SerialCopier copy;
    if (logic::lz4_decode_exact_with(in, size, again.get(), produced, copy) != logic::DecodeStatus::kOk ||
        std::memcmp(again.get(), out.get(), produced) != 0)
      bug("exact-size decode differs from the first decode", produced, size);
  }
  logic::lz4_numcodecs_decode(in, size, out.get(), out_size);
  // staged through a 37-byte window: the same status and bytes as the direct parse
  std::unique_ptr<std::uint8_t[]> window(new std::uint8_t[37]);
  std::unique_ptr<std::uint8_t[]> staged(new std::uint8_t[out_size == 0 ? 1 : out_size]);
  StagedCopier copy;
  copy.window = window.get();
  copy.cap = 37;
  std::size_t produced2 = 0;
  const logic::DecodeStatus st2 = logic::lz4_decode_block_with(in, size, staged.get(), out_size, &produced2, copy);
  std::size_t produced1 = 0;
  const logic::DecodeStatus st1 = logic::lz4_decode_block(in, size, out.get(), out_size, &produced1);
  if (st1 != st2 || produced1 != produced2 || std::memcmp(out.get(), staged.get(), produced1) != 0)
    bug("staged parse differs from the direct parse", produced1, produced2);
  // the GPU's ring decoder (a small window: refills and the general parse happen often), into
  // an exact-size output: the serial decoder's status, and its bytes when it succeeds
  std::unique_ptr<std::uint8_t[]> ringed(new std::uint8_t[out_size == 0 ? 1 : out_size]);
  const logic::DecodeStatus st3 = logic::lz4_ring_decode_host(in, size, ringed.get(), out_size, 296);
  logic::Lz4SerialCopier serial;
  const logic::DecodeStatus st4 = logic::lz4_decode_exact_with(in, size, staged.get(), out_size, serial);
  if (st3 != st4) bug("ring decoder status differs from the serial decoder", static_cast<std::size_t>(st3),
                      static_cast<std::size_t>(st4));
  if (st3 == logic::DecodeStatus::kOk && std::memcmp(ringed.get(), staged.get(), out_size) != 0)
    bug("ring decoder bytes differ from the serial decoder", out_size, size);
  // with the device's 4 KiB window, where the walker takes bursts of sequences at once (tried
  // always, or after the default rule's waits)
  const logic::Lz4BurstRule rule = size % 2 ? logic::Lz4BurstRule{} : logic::Lz4BurstRule{0, 0};
  const logic::DecodeStatus st5 = logic::lz4_ring_decode_host(in, size, ringed.get(), out_size, 4096, nullptr, rule);
  if (st5 != st4) bug("ring decoder with bursts: status differs from the serial decoder", static_cast<std::size_t>(st5),
                      static_cast<std::size_t>(st4));
  if (st5 == logic::DecodeStatus::kOk && std::memcmp(ringed.get(), staged.get(), out_size) != 0)
    bug("ring decoder with bursts: bytes differ from the serial decoder", out_size, size);
  // the segmented decoder (walk, literals, matches): the table walk with the device's
  // 8 KiB window or the smallest it takes, or the serial walk with a small window; the table
  // walks with the next window filled ahead or not, and the pipelined walk; the matches after
  // the own passes, then levels (the device's default) or groups, or the chained passes alone
  const std::size_t walk_window = size % 3 == 0 ? 296 : size % 3 == 1 ? logic::kLz4TableWindowMin : 8192;
  const logic::DecodeStatus st6 = logic::lz4_segments_decode_host(
      in, size, ringed.get(), out_size, walk_window, nullptr,
      size % 4 == 1   ? logic::Lz4Walk::kTableAhead
      : size % 4 == 3 ? logic::Lz4Walk::kTablePipeline
                      : logic::Lz4Walk::kTable,
      0, nullptr,
      size % 5 == 0   ? logic::Lz4Matches::kChain
      : size % 5 == 1 ? logic::Lz4Matches::kOwnThenChain
                      : logic::Lz4Matches::kOwnThenLevels);
  if (st6 != st4) bug("segmented decoder status differs from the serial decoder", static_cast<std::size_t>(st6),
                      static_cast<std::size_t>(st4));
  if (st6 == logic::DecodeStatus::kOk && std::memcmp(ringed.get(), staged.get(), out_size) != 0)
    bug("segmented decoder bytes differ from the serial decoder", out_size, size);
  // runs notes that disagree with the bytes (as if the input changed after the walk): a segment
  // parsed from them fails, or, the runs having to meet exactly where the next one starts, is
  // exactly its serial parse (records and literal bytes)
  if (st4 == logic::DecodeStatus::kOk && size != 0 && size < logic::kLz4RingMaxBytes &&
      out_size < logic::kLz4RingMaxBytes) {
    const auto n_in = static_cast<std::uint32_t>(size), n_out = static_cast<std::uint32_t>(out_size);
    std::vector<logic::Lz4Segment> segs(logic::lz4_segment_bound(size, out_size));
    std::vector<logic::Lz4Runs> runs(segs.size(), logic::Lz4Runs{});
    std::vector<std::uint8_t> win(8192), seg_window(logic::kLz4SegmentWindow);
    logic::Lz4StagedReader<logic::Lz4MemcpyFill> rd{in, size, win.data(), win.size(), {}};
    std::uint32_t count = 0;
    if (logic::lz4_segment_walk(rd, n_in, n_out, segs.size(), logic::Lz4HostMarks{segs.data(), runs.data()}, &count) !=
            logic::DecodeStatus::kOk ||
        count == 0)
      bug("the serial walk refuses a block the serial decoder accepts", count, size);
    const std::uint32_t k = static_cast<std::uint32_t>(size * 7u) % count;
    std::unique_ptr<std::uint8_t[]> truth_out(new std::uint8_t[n_out == 0 ? 1 : n_out]);
    std::unique_ptr<std::uint8_t[]> lie_out(new std::uint8_t[n_out == 0 ? 1 : n_out]);
    std::memset(truth_out.get(), 0x77, n_out == 0 ? 1 : n_out);
    std::vector<logic::Lz4MatchRecord> truth;
    if (logic::lz4_segment_literals_host(in, n_in, truth_out.get(), n_out, segs.data(), count, k, seg_window, &truth) !=
        logic::DecodeStatus::kOk)
      bug("an accepted segment's serial parse fails", k, count);
    // six lies, one at a time: a sequence fewer or more, the first or last run's start a byte off,
    // a count and a start from the input's bytes
    const std::uint32_t h = static_cast<std::uint32_t>(in[0]) * 65599u + in[size - 1] * 257u + in[size / 2];
    const std::uint32_t seqs = runs[k].seqs, runs_n = logic::lz4_run_count(seqs);
    const std::uint32_t last_at = runs_n >= 2 ? runs_n - 2 : 0;  // the last run's start (at[0] for one run)
    for (int how = 0; how < 6; ++how) {
      std::vector<logic::Lz4Runs> lie(runs);
      logic::Lz4Runs& r = lie[k];
      switch (how) {
        case 0: r.seqs = static_cast<std::uint16_t>(seqs - 1); break;
        case 1: r.seqs = static_cast<std::uint16_t>(seqs + 1); break;
        case 2: r.at[0] = static_cast<std::uint16_t>(r.at[0] + 1); break;
        case 3: r.at[last_at] = static_cast<std::uint16_t>(r.at[last_at] - 1); break;
        case 4: r.seqs = static_cast<std::uint16_t>(h % (logic::kLz4SegmentSeqs + 2)); break;
        default: r.at[(h >> 2) % (logic::kLz4SegmentRuns - 1)] = static_cast<std::uint16_t>(h >> 12); break;
      }
      std::memset(lie_out.get(), 0x77, n_out == 0 ? 1 : n_out);
      std::vector<logic::Lz4MatchRecord> told;
      if (logic::lz4_segment_literals_host(in, n_in, lie_out.get(), n_out, segs.data(), count, k, seg_window, &told,
                                           lie.data()) != logic::DecodeStatus::kOk)
        continue;
      if (told.size() != truth.size() || std::memcmp(lie_out.get(), truth_out.get(), n_out) != 0)
        bug("a segment parsed from wrong runs notes differs from its serial parse", told.size(), truth.size());
      for (std::size_t i = 0; i < told.size(); ++i)
        if (told[i].dst != truth[i].dst || told[i].off != truth[i].off || told[i].len != truth[i].len)
          bug("a segment parsed from wrong runs notes has other records", i, told[i].dst);
    }
  }
  // the split walk first (regions walked side by side; the table walk where it declines), with
  // regions of a few bytes so that short inputs are cut into many
  const auto region = static_cast<std::uint32_t>(1 + size % 61);
  std::memset(ringed.get(), 0xA5, out_size == 0 ? 1 : out_size);
  bool split = false;
  const logic::DecodeStatus st6s = logic::lz4_segments_decode_host(in, size, ringed.get(), out_size, 8192, nullptr,
                                                                   logic::Lz4Walk::kTable, region, &split);
  if (st6s != st4) bug("split walk: status differs from the serial decoder", static_cast<std::size_t>(st6s),
                       static_cast<std::size_t>(st4));
  // (the segment pass would refuse some wrongly accepted blocks itself and hide the walk's error)
  if (split && st4 != logic::DecodeStatus::kOk)
    bug("split walk accepted a block the serial decoder refuses", static_cast<std::size_t>(st4), size);
  if (st6s == logic::DecodeStatus::kOk && std::memcmp(ringed.get(), staged.get(), out_size) != 0)
    bug("split walk: bytes differ from the serial decoder", out_size, size);
  // the ready pass with pending bits (lz4_match_bits.hpp), the segments stepped in an order
  // seeded by the input, into an output that holds no earlier decoder's bytes
  std::memset(ringed.get(), 0x3C, out_size == 0 ? 1 : out_size);
  const logic::DecodeStatus st6r = logic::lz4_segments_decode_host(
      in, size, ringed.get(), out_size, 8192, nullptr, logic::Lz4Walk::kTable, size % 2 ? region : 0, nullptr,
      logic::Lz4Matches::kReadyFirst, size * 2654435761u + 1);
  if (st6r != st4) bug("ready pass: status differs from the serial decoder", static_cast<std::size_t>(st6r),
                       static_cast<std::size_t>(st4));
  if (st6r == logic::DecodeStatus::kOk && std::memcmp(ringed.get(), staged.get(), out_size) != 0)
    bug("ready pass: bytes differ from the serial decoder", out_size, size);
  // the rounds (lz4_rounds.hpp): the split walk, the emit walks and rounds of readiness, with
  // regions of a few bytes and, for odd sizes, the regions of a round last to first (each sees
  // only its own copies of the round), and for every fourth size the emit from the walks'
  // sequence records; what they take must be the serial decoder's bytes
  if (size <= 0xFFFFFFF0u && out_size <= 0xFFFFFFF0u) {
    std::memset(ringed.get(), 0x69, out_size == 0 ? 1 : out_size);
    const logic::Lz4RoundsRun rr =
        logic::lz4_rounds_decode_host(in, static_cast<std::uint32_t>(size), ringed.get(),
                                      static_cast<std::uint32_t>(out_size), region, size % 2 == 1, size % 4 >= 2);
    if (rr.accepted && st4 != logic::DecodeStatus::kOk)
      bug("rounds accepted a block the serial decoder refuses", static_cast<std::size_t>(st4), size);
    if (rr.accepted && std::memcmp(ringed.get(), staged.get(), out_size) != 0)
      bug("rounds: bytes differ from the serial decoder", out_size, size);
  }
  // the blosc warp's groups of short sequences through the device's ring: the device's window
  // and offset bound, or a small window and a small bound (groups end often); into an output
  // that holds no earlier decoder's bytes, so that a group reading too early shows
  const bool device_like = size % 2 == 0;
  std::unique_ptr<std::uint8_t[]> grouped(new std::uint8_t[out_size == 0 ? 1 : out_size]);
  std::memset(grouped.get(), 0x5A, out_size == 0 ? 1 : out_size);
  const logic::DecodeStatus st7 =
      logic::lz4_grouped_decode_host(in, size, grouped.get(), out_size, device_like ? 2048 : 40,
                                     device_like ? logic::kLz4GroupRingBytes - logic::kLz4GroupMaxOut : 9,
                                     static_cast<std::uint32_t>(size % 16));
  if (st7 != st4) bug("grouped decoder status differs from the serial decoder", static_cast<std::size_t>(st7),
                      static_cast<std::size_t>(st4));
  if (st7 == logic::DecodeStatus::kOk && std::memcmp(grouped.get(), staged.get(), out_size) != 0)
    bug("grouped decoder bytes differ from the serial decoder", out_size, size);
}

void fuzz_blosc(const std::uint8_t* in, std::size_t size, std::size_t cap) {
  // the header's decoded size when it fits the cap (so that seeds reach the units), else the
  // cap itself (exercising the size check)
  std::size_t out_size = cap;
  if (size >= 8 && logic::blosc_load_le32(in + 4) <= cap) out_size = logic::blosc_load_le32(in + 4);
  std::unique_ptr<std::uint8_t[]> out(new std::uint8_t[out_size == 0 ? 1 : out_size]);
  std::unique_ptr<std::uint8_t[]> stage(new std::uint8_t[out_size == 0 ? 1 : out_size]);
  logic::BloscPlan plan;
  if (logic::blosc_plan(in, size, out_size, &plan) == logic::DecodeStatus::kOk && !plan.h.memcpyed() &&
      plan.units != 0) {
    if (plan.units > logic::blosc_max_units(plan.h.nbytes)) bug("more units than the bound", plan.units, plan.h.nbytes);
    for (std::uint64_t u = 0; u < plan.units; ++u) {
      const logic::BloscUnit un = logic::blosc_unit_at(plan, u);
      const std::size_t end = static_cast<std::size_t>(un.block) * plan.h.blocksize +
                              static_cast<std::size_t>(un.stream + 1) * un.stream_bytes;
      if (un.block >= plan.nblocks || end > plan.h.nbytes) bug("unit outside the buffer", u, end);
    }
  }
  logic::blosc_decode_serial(in, size, out.get(), out_size, stage.get());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::size_t out_size = (static_cast<std::size_t>(data[0]) | (static_cast<std::size_t>(data[1]) << 8)) * 16;
  // the encoded bytes in their own exact-size allocation
  const std::size_t n = size - 2;
  std::unique_ptr<std::uint8_t[]> in(new std::uint8_t[n == 0 ? 1 : n]);
  if (n != 0) std::memcpy(in.get(), data + 2, n);
  if (std::strcmp(CS_FUZZ_GPU_LOGIC, "lz4_block") == 0) {
    fuzz_lz4(in.get(), n, out_size);
  } else if (std::strcmp(CS_FUZZ_GPU_LOGIC, "blosc_units") == 0) {
    fuzz_blosc(in.get(), n, out_size);
  } else {
    bug("unknown entry point", 0, 0);
  }
  return 0;
}
