// Host walk of the synth fields (six surface variables, two time steps each, from
// synth::Era5Model) encoded as blosc would store them (byte shuffle, typesize 4, 256 KiB
// blocks) with each LZ4 encoder the writer can use: ratio, LZ4 sequences per KiB of output
// (the GPU blosc unit kernel's cost is per sequence, docs/gpu_decoders.md) and liblz4's
// single-thread decode speed of the same streams (the host decode share's cost). Split rows
// compress each byte plane of a block on its own, as c-blosc's default for lz4 does.
// Used for docs/gpu_decoders.md, "Encodings of the synth fields".
// Build (one line): g++ -std=c++20 -O2 -Isrc -Iinclude bench/micro/lz4_encodings.cpp
//   build/libcubestream.a -llz4 -lpthread -o lz4_encodings && ./lz4_encodings
#include <lz4.h>
#include <lz4hc.h>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>
#include "codec/logic/byte_shuffle.hpp"
#include "codec/logic/lz4_block.hpp"
#include "synth/era5_model.hpp"
using Bytes = std::vector<std::uint8_t>;
namespace logic = cubestream::codec::logic;
struct Acc { double raw = 0, comp = 0, seqs = 0, dec_s = 0; };
static void count(const std::uint8_t* enc, int n, std::size_t out_size, Acc* a) {
  std::size_t ip = 0, op = 0; bool last = false;
  while (!last) {
    logic::Lz4Sequence s;
    if (logic::lz4_read_sequence(enc, static_cast<std::size_t>(n), &ip, op, out_size, &s, &last) != logic::DecodeStatus::kOk) { std::printf("bad\n"); return; }
    op += s.lit_len + s.match_len; a->seqs += 1;
  }
}
int main() {
  cubestream::synth::ModelSpec spec;
  spec.variables = {"2m_temperature", "10m_u_component_of_wind", "10m_v_component_of_wind",
                    "mean_sea_level_pressure", "surface_pressure", "total_column_water_vapour"};
  cubestream::synth::Era5Model model(spec, 2);
  const std::size_t B = 256 << 10;
  struct Mode { const char* name; int kind; int level; bool split; };
  const Mode modes[] = {{"lz4 accel1 (writer)", 0, 1, false}, {"lz4 accel1 split", 0, 1, true},
                        {"lz4hc 4", 1, 4, false}, {"lz4hc 9", 1, 9, false}, {"lz4hc 12", 1, 12, false},
                        {"lz4hc 9 split", 1, 9, true}};
  for (const Mode& m : modes) {
    Acc a;
    for (std::size_t v = 0; v < spec.variables.size(); ++v) {
      for (int t = 0; t < 2; ++t) {
        Bytes raw(model.field_elements() * 4);
        model.field(v, t, 3, reinterpret_cast<float*>(raw.data()));
        for (std::size_t b = 0; b < raw.size(); b += B) {
          const std::size_t n = std::min(B, raw.size() - b);
          Bytes sh(n); logic::shuffle_block(raw.data() + b, sh.data(), n, 4);
          const int parts = m.split && n % 4 == 0 ? 4 : 1;
          const std::size_t pn = n / parts;
          for (int p = 0; p < parts; ++p) {
            const char* src = reinterpret_cast<const char*>(sh.data() + p * pn);
            Bytes enc(LZ4_compressBound(static_cast<int>(pn)));
            int c = m.kind == 0 ? LZ4_compress_fast(src, (char*)enc.data(), (int)pn, (int)enc.size(), m.level)
                                : LZ4_compress_HC(src, (char*)enc.data(), (int)pn, (int)enc.size(), m.level);
            a.raw += pn; a.comp += c;
            count(enc.data(), c, pn, &a);
            Bytes out(pn);
            auto t0 = std::chrono::steady_clock::now();
            for (int r = 0; r < 3; ++r) LZ4_decompress_safe((const char*)enc.data(), (char*)out.data(), c, (int)pn);
            a.dec_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 3;
            if (std::memcmp(out.data(), src, pn)) std::printf("mismatch\n");
          }
        }
      }
    }
    std::printf("%-22s ratio %.3f  %.1f seq/KiB  liblz4 1-thread decode %.2f GB/s\n", m.name, a.raw / a.comp,
                a.seqs / (a.raw / 1024), a.raw / a.dec_s / 1e9);
  }
}
