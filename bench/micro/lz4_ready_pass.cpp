// Host count behind the ready pass of the segmented LZ4 decoder (codec/logic/lz4_match_bits.hpp):
// for the GPU benchmark's numcodecs-lz4 blocks (the era5-like chunks, one field per synth
// variable), how many matches a segment's ready pass finds final before the segment before it is
// done (copied off the chain), and how many groups the chained pass then still runs one after
// another, against the chained pass alone (every match after the segment before, no own pass:
// Lz4Matches::kChain), with the table
// walk's segments and the split walk's. The workers are stepped in a random order (the host run
// of lz4_ready_first_matches_host); on the GPU they run as the queue hands segments out.
//   g++ -std=c++20 -O2 -Isrc -Iinclude -Ibench bench/micro/lz4_ready_pass.cpp \
//       build/libcubestream.a -llz4 -lpthread -o lz4_ready_pass && ./lz4_ready_pass
#include <lz4.h>

#include <cstdio>
#include <vector>

#include "codec/logic/lz4_segments_host.hpp"
#include "era5_chunk.hpp"
#include "synth/era5_model.hpp"

namespace logic = cubestream::codec::logic;

static void count(const char* name, const std::vector<std::uint8_t>& raw) {
  std::vector<std::uint8_t> enc(static_cast<std::size_t>(LZ4_compressBound(static_cast<int>(raw.size()))));
  const int n = LZ4_compress_default(reinterpret_cast<const char*>(raw.data()), reinterpret_cast<char*>(enc.data()),
                                     static_cast<int>(raw.size()), static_cast<int>(enc.size()));
  std::vector<std::uint8_t> out(raw.size());
  std::uint64_t chain = 0, rest = 0, rest_split = 0;
  logic::lz4_segments_decode_host(enc.data(), static_cast<std::size_t>(n), out.data(), raw.size(), 8192, &chain,
                                  logic::Lz4Walk::kTable, 0, nullptr, logic::Lz4Matches::kChain);
  bool ok = out == raw;
  logic::lz4_segments_decode_host(enc.data(), static_cast<std::size_t>(n), out.data(), raw.size(), 8192, &rest,
                                  logic::Lz4Walk::kTable, 0, nullptr, logic::Lz4Matches::kReadyFirst, 3);
  ok = ok && out == raw;
  bool split = false;
  logic::lz4_segments_decode_host(enc.data(), static_cast<std::size_t>(n), out.data(), raw.size(), 8192, &rest_split,
                                  logic::Lz4Walk::kTable, 32768, &split, logic::Lz4Matches::kReadyFirst, 4);
  ok = ok && out == raw;
  std::printf("%-28s ratio %.3f  chained groups: alone %6llu, after the ready pass %6llu (%.0f %%), split walk%s %6llu%s\n",
              name, double(raw.size()) / n, static_cast<unsigned long long>(chain),
              static_cast<unsigned long long>(rest), 100.0 * double(rest) / double(chain), split ? "" : " (declined)",
              static_cast<unsigned long long>(rest_split), ok ? "" : "  WRONG BYTES");
}

int main() {
  count("era5-like 4 MiB", cubestream_bench::era5_chunk(std::size_t{1} << 20, 7919 + 256));
  count("era5-like 512 KiB", cubestream_bench::era5_chunk(std::size_t{1} << 17, 7919 + 3));
  cubestream::synth::ModelSpec spec;
  spec.variables = {"2m_temperature", "10m_u_component_of_wind", "10m_v_component_of_wind",
                    "mean_sea_level_pressure", "surface_pressure", "total_column_water_vapour"};
  cubestream::synth::Era5Model model(spec, 2);
  for (std::size_t v = 0; v < spec.variables.size(); ++v) {
    std::vector<std::uint8_t> raw(model.field_elements() * 4);
    model.field(v, 0, 3, reinterpret_cast<float*>(raw.data()));
    count(spec.variables[v].c_str(), raw);
  }
  return 0;
}
