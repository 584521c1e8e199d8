// Host count of numcodecs lz4 match offsets on the GPU benchmark's data: the share of sequences
// whose match reads more than 16, 32 or 48 KiB back. A ring of recent output smaller than 64 KiB
// in the numcodecs lz4 kernel (more thread blocks per SM) would have to read those from global
// memory. Data: eight 4 MiB era5-like chunks, 64 chunks of the mixed batch's sizes (64 KiB-1 MiB),
// the six synth surface fields; liblz4 default acceleration (numcodecs' lz4). Used for
// docs/gpu_decoders.md ("Which warp sets the pace").
// Build (one line): g++ -std=c++20 -O2 -Isrc -Iinclude bench/micro/lz4_far_offsets.cpp
//   build/libcubestream.a -llz4 -lpthread -o lz4_far_offsets && ./lz4_far_offsets
#include <lz4.h>
#include <cstdio>
#include <vector>
#include "codec/logic/lz4_block.hpp"
#include "synth/era5_model.hpp"
#include "../era5_chunk.hpp"
namespace logic = cubestream::codec::logic;
struct Acc { double seqs=0, f16=0, f32=0, f48=0, b32=0, bytes=0; };
static void walk(const std::vector<std::uint8_t>& raw, Acc* a) {
  std::vector<char> enc(LZ4_compressBound(raw.size()));
  int n = LZ4_compress_default((const char*)raw.data(), enc.data(), raw.size(), enc.size());
  std::size_t ip = 0, op = 0; bool last = false;
  while (!last) {
    logic::Lz4Sequence s;
    const std::uint8_t* rd = (const std::uint8_t*)enc.data();
    if (logic::lz4_read_sequence(rd, (std::size_t)n, &ip, op, raw.size(), &s, &last) != logic::DecodeStatus::kOk) { std::printf("bad\n"); return; }
    a->seqs++;
    if (!last) { if (s.match_offset > 16384) a->f16++; if (s.match_offset > 32768) { a->f32++; a->b32 += s.match_len; } if (s.match_offset > 49152) a->f48++; }
    op += s.lit_len + s.match_len;
  }
  a->bytes += raw.size();
}
int main() {
  Acc e, m, sy;
  for (int i = 0; i < 8; ++i) walk(cubestream_bench::era5_chunk(1 << 20, 1000 + i), &e);
  std::mt19937 rng(42);
  for (int i = 0; i < 64; ++i) { std::size_t b = (64u << 10) + (rng() % ((960u << 10) / 4)) * 4; walk(cubestream_bench::era5_chunk(b / 4, 2000 + i), &m); }
  cubestream::synth::ModelSpec spec;
  spec.variables = {"2m_temperature", "10m_u_component_of_wind", "10m_v_component_of_wind", "mean_sea_level_pressure", "surface_pressure", "total_column_water_vapour"};
  cubestream::synth::Era5Model model(spec, 2);
  for (std::size_t v = 0; v < spec.variables.size(); ++v) {
    std::vector<std::uint8_t> raw(721 * 1440 * 4);
    model.field(v, 1, 3, reinterpret_cast<float*>(raw.data()));
    walk(raw, &sy);
  }
  for (auto [name, a] : {std::pair{"era5 4MiB", e}, {"mixed", m}, {"synth", sy}})
    std::printf("%-10s seqs %.0f  off>16K %.2f%%  >32K %.2f%% (%.2f%% of bytes)  >48K %.2f%%\n", name, a.seqs, 100*a.f16/a.seqs, 100*a.f32/a.seqs, 100*a.b32/a.bytes, 100*a.f48/a.seqs);
}
