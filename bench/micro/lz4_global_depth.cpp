// Host count for session 41's question (docs/gpu_decoders.md, "The whole block's dependency
// depth"): the segmented numcodecs-lz4 decoder resolves its chained matches segment after
// segment (~830 links a synth chunk at ~11 us a link), but how deep is the block's true
// dependency graph? A match's level is 1 + the highest level among the output bytes it reads
// (a literal byte has level 0; an overlapping match, off < len, reads only the off bytes before
// it: its own copy is periodic and counts as one). If the deepest chunk's depth were a few
// hundred, one thread block per chunk could copy every match of a level at once, a block
// barrier between levels, in depth + matches / (threads a pass) passes instead of the chain.
// Printed per chunk: sequences, matches, the depth, the matches a level (median and 10 % point
// over levels), and the passes a 256-thread block would make (sum over levels of
// ceil(matches / 256)), for the era5-like 4 MiB chunks and the synth fields of the GPU benchmark.
// Then the host run of codec/logic/lz4_rounds.hpp on the same block (taken or declined, its
// split walk's rounds, and whether its bytes are the original's; its rounds run the regions one
// after another, so they are not the device's).
// Build and run from the repository root, after the library's build:
//   g++ -std=c++20 -O2 -Isrc -Ibench -Iinclude bench/micro/lz4_global_depth.cpp build/libcubestream.a
//       -llz4 -lpthread -o lz4_global_depth && ./lz4_global_depth   (one command line)
#include <lz4.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <vector>

#include "codec/logic/lz4_rounds_host.hpp"
#include "era5_chunk.hpp"
#include "synth/era5_model.hpp"

using Bytes = std::vector<std::uint8_t>;

namespace {

struct Depth {
  std::uint64_t sequences = 0, matches = 0, depth = 0, passes256 = 0, median_width = 0, p10_width = 0;
  std::uint64_t level_sum = 0, level1 = 0;  // sum of the matches' levels (checks of a rounds-by-readiness copy), matches at level 1
  std::uint64_t gs_rounds = 0, gs_checks = 0;  // rounds and checks when each of 256 regions takes its matches in order (below)
};

struct Match {
  std::uint32_t op, off, len, region;
};

// Rounds by readiness, each of `regions` threads taking its region's pending matches in output
// order: a match is copied where every byte it reads is done (a literal, a match copied in an
// earlier round, or one of the thread's own copied earlier in this round), else it waits for the
// next round. Counts the rounds until every match is copied and the ready tests made.
void gauss_seidel(const std::vector<Match>& ms, std::size_t n_out, const std::vector<std::uint8_t>& literal,
                  std::uint32_t regions, Depth* d) {
  std::vector<std::uint32_t> done_round(n_out, 0);  // 0: literal or not written; r + 1: done in round r
  std::vector<std::uint8_t> done(n_out, 0);
  for (std::size_t i = 0; i < n_out; ++i) done[i] = literal[i];
  std::vector<std::vector<std::uint32_t>> pending(regions);
  for (std::uint32_t i = 0; i < ms.size(); ++i) pending[ms[i].region].push_back(i);
  std::uint64_t left = ms.size();
  std::uint32_t round = 0;
  std::vector<std::uint32_t> writer_region(n_out, ~0u);
  while (left != 0) {
    ++round;
    for (std::uint32_t r = 0; r < regions; ++r) {
      std::vector<std::uint32_t> keep;
      for (std::uint32_t i : pending[r]) {
        const Match& m = ms[i];
        ++d->gs_checks;
        const std::size_t a = m.op - m.off, e = a + std::min(m.off, m.len);
        bool ready = true;
        for (std::size_t b = a; b < e && ready; ++b)
          ready = done[b] && (done_round[b] < round || writer_region[b] == r);  // another thread's copy of this round is not seen
        if (!ready) {
          keep.push_back(i);
          continue;
        }
        for (std::size_t b = m.op; b < m.op + m.len; ++b) done[b] = 1, done_round[b] = round, writer_region[b] = r;
        --left;
      }
      pending[r].swap(keep);
    }
  }
  d->gs_rounds = round;
}

// Walks the LZ4 block (format: token, literal length bytes, literals, 2-byte LE offset, match
// length bytes; the last sequence has literals only) and assigns levels byte by byte.
Depth depth_of(const Bytes& enc, std::size_t n_out) {
  std::vector<std::uint32_t> level(n_out, 0);
  std::vector<std::uint64_t> width;  // matches a level
  std::vector<std::uint8_t> literal(n_out, 0);
  std::vector<Match> ms;
  const std::size_t region_bytes = (enc.size() + 255) / 256;
  Depth d;
  std::size_t ip = 0, op = 0;
  auto more = [&](std::size_t& len) {
    std::uint8_t b;
    do {
      if (ip >= enc.size()) throw std::runtime_error("truncated length");
      b = enc[ip++];
      len += b;
    } while (b == 255);
  };
  while (ip < enc.size()) {
    const std::uint8_t token = enc[ip++];
    std::size_t lit = token >> 4;
    if (lit == 15) more(lit);
    for (std::size_t i = op; i < op + lit && i < n_out; ++i) literal[i] = 1;
    const std::uint32_t token_at = static_cast<std::uint32_t>(ip - 1);
    op += lit;  // levels of literal bytes stay 0
    ip += lit;
    ++d.sequences;
    if (ip >= enc.size()) break;
    const std::size_t off = enc[ip] | (enc[ip + 1] << 8);
    ip += 2;
    std::size_t len = (token & 15u);
    if (len == 15) more(len);
    len += 4;
    if (off == 0 || off > op || op + len > n_out) throw std::runtime_error("bad match");
    std::uint32_t l = 0;
    const std::size_t a = op - off, e = a + std::min(off, len);
    for (std::size_t i = a; i < e; ++i) l = std::max(l, level[i]);
    ++l;
    for (std::size_t i = op; i < op + len; ++i) level[i] = l;
    ms.push_back({static_cast<std::uint32_t>(op), static_cast<std::uint32_t>(off), static_cast<std::uint32_t>(len),
                  static_cast<std::uint32_t>(token_at / region_bytes)});
    d.level_sum += l;
    d.level1 += l == 1;
    if (l >= width.size()) width.resize(l + 1, 0);
    width[l] += 1;
    ++d.matches;
    op += len;
  }
  if (op != n_out) throw std::runtime_error("size mismatch");
  d.depth = width.empty() ? 0 : width.size() - 1;
  std::vector<std::uint64_t> w(width.begin() + (width.empty() ? 0 : 1), width.end());
  for (std::uint64_t x : w) d.passes256 += (x + 255) / 256;
  std::sort(w.begin(), w.end());
  if (!w.empty()) d.median_width = w[w.size() / 2], d.p10_width = w[w.size() / 10];
  gauss_seidel(ms, n_out, literal, 256, &d);
  return d;
}

void count(const char* name, const std::vector<Bytes>& raws) {
  for (const Bytes& raw : raws) {
    Bytes enc(static_cast<std::size_t>(LZ4_compressBound(static_cast<int>(raw.size()))));
    const int n = LZ4_compress_default(reinterpret_cast<const char*>(raw.data()), reinterpret_cast<char*>(enc.data()),
                                       static_cast<int>(raw.size()), static_cast<int>(enc.size()));
    enc.resize(static_cast<std::size_t>(n));
    const Depth d = depth_of(enc, raw.size());

    std::printf("%-26s ratio %.2f  sequences %7llu  matches %7llu  depth %6llu  matches a level: median %llu, 10 %% %llu"
                "  passes of 256: %llu\n%-26s mean level %.1f, at level 1 %.1f %%; 256 regions in order: %llu rounds, "
                "%.1f ready tests a match\n",
                name, static_cast<double>(raw.size()) / n, static_cast<unsigned long long>(d.sequences),
                static_cast<unsigned long long>(d.matches), static_cast<unsigned long long>(d.depth),
                static_cast<unsigned long long>(d.median_width), static_cast<unsigned long long>(d.p10_width),
                static_cast<unsigned long long>(d.passes256), "", static_cast<double>(d.level_sum) / d.matches,
                100.0 * static_cast<double>(d.level1) / d.matches, static_cast<unsigned long long>(d.gs_rounds),
                static_cast<double>(d.gs_checks) / d.matches);
    for (const bool records : {false, true}) {
      Bytes out(raw.size());
      const auto run = cubestream::codec::logic::lz4_rounds_decode_host(
          enc.data(), static_cast<std::uint32_t>(n), out.data(), static_cast<std::uint32_t>(raw.size()),
          cubestream::codec::logic::kLz4RoundsRegionMin, false, records);
      // parses: sequences parsed by all walks (split walk and emit) over the block's sequences
      std::printf("%-26s lz4_rounds_decode_host (%s): %s, %u regions, %u split-walk rounds, %u rounds, %.1f ready "
                  "tests a match, %.2f parses a sequence%s\n",
                  "", records ? "sequence records" : "emit walk", run.accepted ? "taken" : "declined", run.regions,
                  run.walk_rounds, run.rounds, static_cast<double>(run.tests) / static_cast<double>(d.matches),
                  static_cast<double>(run.parsed) / static_cast<double>(d.sequences),
                  run.accepted && out != raw ? " WRONG BYTES" : "");
    }
  }
}

}  // namespace

int main() {
  std::vector<Bytes> era5;
  for (int c = 0; c < 4; ++c) era5.push_back(cubestream_bench::era5_chunk(std::size_t{1} << 20, 7919 * c + 256));
  count("era5-like 4 MiB", era5);
  cubestream::synth::ModelSpec spec;
  spec.variables = {"2m_temperature", "mean_sea_level_pressure", "total_column_water_vapour"};
  cubestream::synth::Era5Model model(spec, 2);
  for (std::size_t v = 0; v < spec.variables.size(); ++v) {
    Bytes raw(model.field_elements() * 4);
    model.field(v, 0, 3, reinterpret_cast<float*>(raw.data()));
    count(spec.variables[v].c_str(), {raw});
  }
  return 0;
}
