// Host walk of blosc's LZ4 streams: which sequences the GPU blosc unit kernel's fast paths
// take (src/cuda/decode/warp_ring_lz4.cuh). "v2 fast": no length bytes and offset <= 2 KiB
// (version 2's only fast path); "new fast": version 4's paths together (one length byte each
// at most, below 255; source still in the 4 KiB ring, offset + length <= 4096, or already
// flushed to global memory, emulating the ring's flushes). Data: the six synth surface
// variables (two time steps) in the writer's layout with lz4 and lz4hc 9 and in numcodecs'
// layout (512 KiB blocks split into byte planes), and four 1 Mi-float era5-like chunks of
// gpu_decode_bench in numcodecs' layout and the writer's; sequences per KiB of output for
// each, and per byte plane for the synth fields' split streams. Used for docs/gpu_decoders.md,
// versions 4 and 6.
// Build (one line): g++ -std=c++20 -O2 -Isrc -Iinclude bench/micro/lz4_fast_path.cpp
//   build/libcubestream.a -llz4 -lpthread -o lz4_fast_path && ./lz4_fast_path
#include <lz4.h>
#include <lz4hc.h>
#include <cstdio>
#include <cstring>
#include <vector>
#include "codec/logic/byte_shuffle.hpp"
#include "codec/logic/lz4_block.hpp"
#include "synth/era5_model.hpp"
#include "../era5_chunk.hpp"
using Bytes = std::vector<std::uint8_t>;
namespace logic = cubestream::codec::logic;
struct Acc { double bytes=0, seqs=0, len1=0, len32=0, v2_fast=0, new_fast=0, lenbytes=0, far_unflushed=0, ring4k=0, flushed_far=0; };
// emulate WarpRingLz4's flush state: flush(false) when op - flushed + len > 4096, sets flushed to op rounded down to 16 (assume out aligned)
static void walk(const std::uint8_t* enc, int n, std::size_t out_size, Acc* a) {
  a->bytes += static_cast<double>(out_size);
  std::size_t ip = 0, op = 0, flushed = 0; bool last = false;
  while (!last) {
    logic::Lz4Sequence s;
    if (logic::lz4_read_sequence(enc, (std::size_t)n, &ip, op, out_size, &s, &last) != logic::DecodeStatus::kOk) { std::printf("bad\n"); return; }
    a->seqs++;
    bool nolen = s.lit_len < 15 && s.match_len < 19 && !last;
    std::size_t mp = op + s.lit_len;
    if (!nolen) a->lenbytes++;
    if (!nolen && !last && s.lit_len < 15+255 && s.match_len < 19+255) a->len1++;
    if (!nolen && !last && s.lit_len <= 32 && s.match_len <= 32) a->len32++;
    if (nolen && s.match_offset <= 2048) { a->v2_fast++; }
    bool in4k = s.match_offset + s.match_len <= 4096;
    if (op - flushed + s.lit_len + s.match_len > 4096) flushed = op & ~std::size_t{15};
    bool flushed_src = mp - s.match_offset + s.match_len <= flushed;
    if (nolen && (in4k || flushed_src)) a->new_fast++;
    if (nolen && !in4k && !flushed_src) a->far_unflushed++;
    if (nolen && s.match_offset > 2048 && in4k) a->ring4k++;
    if (nolen && !in4k && flushed_src) a->flushed_far++;
    op += s.lit_len + s.match_len;
    if (!nolen) { // general path: literals make_room; match far -> flush
      if (s.match_offset > 2048) flushed = op & ~std::size_t{15};
    }
  }
}
// planes (optional, 4 entries): each split stream also counted for its byte plane
static void add_blocks(const Bytes& raw, std::size_t B, bool split, bool hc, Acc* a, Acc* planes = nullptr) {
  for (std::size_t b = 0; b < raw.size(); b += B) {
    const std::size_t nb = std::min(B, raw.size() - b);
    Bytes sh(nb); logic::shuffle_block(raw.data() + b, sh.data(), nb, 4);
    const int parts = split && nb % 4 == 0 ? 4 : 1; const std::size_t pn = nb / parts;
    for (int p = 0; p < parts; ++p) {
      Bytes enc(LZ4_compressBound((int)pn));
      const char* src = (const char*)sh.data() + p * pn;
      int c = hc ? LZ4_compress_HC(src, (char*)enc.data(), (int)pn, (int)enc.size(), 9) : LZ4_compress_fast(src, (char*)enc.data(), (int)pn, (int)enc.size(), 1);
      walk(enc.data(), c, pn, a);
      if (planes && parts == 4) walk(enc.data(), c, pn, &planes[p]);
    }
  }
}
static void pr(const char* name, const Acc& a) {
  std::printf("%-34s seqs %.0f (%.1f per KiB)  lenbytes %.1f%%  v2 fast %.1f%%  new fast %.1f%% (ring 2-4K %.1f%%, flushed far %.1f%%, far unflushed %.1f%%) 1-byte lens %.1f%% <=32 %.1f%%\n", name, a.seqs, a.seqs / (a.bytes / 1024), 100*a.lenbytes/a.seqs, 100*a.v2_fast/a.seqs, 100*a.new_fast/a.seqs, 100*a.ring4k/a.seqs, 100*a.flushed_far/a.seqs, 100*a.far_unflushed/a.seqs, 100*a.len1/a.seqs, 100*a.len32/a.seqs);
}
int main() {
  cubestream::synth::ModelSpec spec;
  spec.variables = {"2m_temperature", "10m_u_component_of_wind", "10m_v_component_of_wind", "mean_sea_level_pressure", "surface_pressure", "total_column_water_vapour"};
  cubestream::synth::Era5Model model(spec, 2);
  Acc w, wh, e_num, e_w, s_num, s_planes[4];
  for (std::size_t v = 0; v < spec.variables.size(); ++v) for (int t = 0; t < 2; ++t) {
    Bytes raw(model.field_elements() * 4);
    model.field(v, t, 3, reinterpret_cast<float*>(raw.data()));
    add_blocks(raw, 256 << 10, false, false, &w);
    add_blocks(raw, 256 << 10, false, true, &wh);
    add_blocks(raw, 512 << 10, true, false, &s_num, s_planes);  // numcodecs' layout (splits the leftover too)
  }
  for (int i = 0; i < 4; ++i) { Bytes raw = cubestream_bench::era5_chunk(1 << 20, i * 7919 + 256);
    add_blocks(raw, 512 << 10, true, false, &e_num); add_blocks(raw, 256 << 10, false, false, &e_w); }
  pr("synth numcodecs layout lz4", s_num);
  // a split stream's cost per plane (the unit kernel's cost is per sequence): plane 0 holds
  // the floats' lowest bytes, plane 3 sign and exponent
  for (int p = 0; p < 4; ++p) {
    char name[64];
    std::snprintf(name, sizeof name, "  synth numcodecs, byte plane %d", p);
    pr(name, s_planes[p]);
  }
  pr("synth writer lz4", w); pr("synth writer lz4hc9", wh); pr("era5 numcodecs layout", e_num); pr("era5 writer layout", e_w);
}
