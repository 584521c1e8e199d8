// Host walk of numcodecs-style LZ4 blocks (the bench's data): how a GPU decoder could split
// one block's work. For the era5-like 4 MiB chunk of gpu_decode_bench and one field of each
// synth variable it prints sequences per KiB and literal share, then, for segments of K
// sequences decoded by separate warps (literals ready at once, each segment's matches in
// order, a match waiting until the bytes it reads are written):
//   - how many matches read bytes of earlier segments, and how many of those read bytes that
//     an earlier segment's MATCH wrote (a wait on another warp's progress);
//   - the makespan in "match steps" with unlimited warps and free signalling, against the
//     serial order (the best speed-up such a split could give), and the longest chain of
//     match-on-match reads (byte level, own overlap excluded).
// Used for docs/gpu_decoders.md, "numcodecs lz4, version 3".
//   g++ -std=c++20 -O2 -Isrc -Iinclude bench/micro/lz4_match_deps.cpp build/libcubestream.a \
//       -llz4 -lpthread -o lz4_match_deps && ./lz4_match_deps
#include <lz4.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "../era5_chunk.hpp"
#include "codec/logic/lz4_block.hpp"
#include "synth/era5_model.hpp"

namespace {

using Bytes = std::vector<std::uint8_t>;
namespace logic = cubestream::codec::logic;

using cubestream_bench::era5_chunk;  // the bytes gpu_decode_bench decodes

struct Seq {
  std::size_t op, lit, off, ml;
};

void analyse(const char* name, const Bytes& raw) {
  Bytes enc(static_cast<std::size_t>(LZ4_compressBound(static_cast<int>(raw.size()))));
  const int n = LZ4_compress_default(reinterpret_cast<const char*>(raw.data()), reinterpret_cast<char*>(enc.data()),
                                     static_cast<int>(raw.size()), static_cast<int>(enc.size()));
  std::vector<Seq> seqs;
  std::size_t ip = 0, op = 0, lit = 0, matches = 0;
  bool last = false;
  const std::uint8_t* rd = enc.data();
  while (!last) {
    logic::Lz4Sequence s;
    if (logic::lz4_read_sequence(rd, static_cast<std::size_t>(n), &ip, op, raw.size(), &s, &last) !=
        logic::DecodeStatus::kOk)
      return;
    seqs.push_back({op, s.lit_len, s.match_offset, s.match_len});
    op += s.lit_len + s.match_len;
    lit += s.lit_len;
    matches += s.match_len != 0;
  }
  std::printf("%s: ratio %.3f, %zu sequences (%.1f / KiB), literal share %.2f\n", name, double(raw.size()) / n,
              seqs.size(), seqs.size() / (raw.size() / 1024.0), double(lit) / raw.size());
  std::vector<std::uint32_t> seg(raw.size());
  std::vector<char> is_match(raw.size());
  std::vector<double> ready(raw.size());
  std::vector<int> depth(raw.size());
  for (std::size_t K : {32, 128, 512}) {
    for (std::size_t j = 0; j < seqs.size(); ++j)
      for (std::size_t b = seqs[j].op; b < seqs[j].op + seqs[j].lit + seqs[j].ml; ++b) {
        seg[b] = static_cast<std::uint32_t>(j / K);
        is_match[b] = b >= seqs[j].op + seqs[j].lit;
        ready[b] = 0;
        depth[b] = 0;
      }
    std::vector<double> seg_t((seqs.size() + K - 1) / K, 0.0);
    std::size_t cross = 0, cross_match = 0;
    double makespan = 0;
    int max_depth = 0;
    for (std::size_t j = 0; j < seqs.size(); ++j) {
      const Seq& s = seqs[j];
      if (s.ml == 0) continue;
      const std::size_t m0 = s.op + s.lit, a = m0 - s.off;
      bool c = false, cm = false;
      double need = 0;
      int d = 0;
      for (std::size_t x = a; x < a + s.ml && x < m0; ++x) {
        need = std::max(need, ready[x]);
        d = std::max(d, depth[x]);
        if (seg[x] != j / K) {
          c = true;
          cm = cm || is_match[x];
        }
      }
      cross += c;
      cross_match += cm;
      const double t = std::max(seg_t[j / K], need) + 1;
      seg_t[j / K] = t;
      makespan = std::max(makespan, t);
      for (std::size_t b = m0; b < m0 + s.ml; ++b) {
        ready[b] = t;
        depth[b] = d + 1;
      }
      max_depth = std::max(max_depth, d + 1);
    }
    std::printf("  K=%zu: %zu matches, %zu read earlier segments, %zu of them bytes an earlier segment's match wrote; "
                "makespan %.0f match steps (serial %zu: %.1fx); longest match-on-match chain %d\n",
                K, matches, cross, cross_match, makespan, matches, matches / makespan, max_depth);
  }
}

}  // namespace

int main() {
  analyse("era5-like 4 MiB", era5_chunk(std::size_t{1} << 20, 7919 + 256));
  cubestream::synth::ModelSpec spec;
  spec.variables = {"2m_temperature", "10m_u_component_of_wind", "10m_v_component_of_wind",
                    "mean_sea_level_pressure", "surface_pressure", "total_column_water_vapour"};
  cubestream::synth::Era5Model model(spec, 2);
  for (std::size_t v = 0; v < spec.variables.size(); ++v) {
    Bytes raw(model.field_elements() * 4);
    model.field(v, 0, 3, reinterpret_cast<float*>(raw.data()));
    analyse(spec.variables[v].c_str(), raw);
  }
  return 0;
}
