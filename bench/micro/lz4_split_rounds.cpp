// Host count behind the split walk of numcodecs lz4 blocks (codec/logic/lz4_split_walk.hpp):
// for the era5-like chunks of gpu_decode_bench (4 MiB, and the mixed batch's 64 KiB - 1 MiB) and
// several smallest region sizes, how many rounds the walk needs before no entry moves, how many
// regions walk in each round after the first, and how many blocks it declines (rounds run out).
// On the GPU a round costs one region walk of latency whatever the number of regions that walk
// in it, so the rounds, not the walks, are what the device pays.
// Build (one line): g++ -std=c++20 -O2 -Ibench -Isrc -Iinclude bench/micro/lz4_split_rounds.cpp
//   -llz4 -o lz4_split_rounds && ./lz4_split_rounds
#include <lz4.h>

#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "codec/logic/lz4_split_walk.hpp"
#include "era5_chunk.hpp"

namespace logic = cubestream::codec::logic;

int main() {
  struct Batch {
    const char* name;
    std::vector<std::size_t> sizes;
  };
  std::vector<Batch> batches{{"era5 4 MiB x16", std::vector<std::size_t>(16, std::size_t{4} << 20)}, {"mixed x64", {}}};
  std::mt19937 rng(42);
  for (int i = 0; i < 64; ++i) batches[1].sizes.push_back((std::size_t{64} << 10) + (rng() % ((std::size_t{960} << 10) / 4)) * 4);
  const std::uint32_t regions[] = {4096, 8192, 16384, 32768};
  for (const Batch& b : batches) {
    std::vector<std::vector<std::uint8_t>> enc;
    for (std::size_t i = 0; i < b.sizes.size(); ++i) {
      const std::vector<std::uint8_t> raw = cubestream_bench::era5_chunk(b.sizes[i] / 4, static_cast<std::uint32_t>(i * 7919 + 3));
      std::vector<std::uint8_t> e(LZ4_compressBound(static_cast<int>(raw.size())));
      const int n = LZ4_compress_default(reinterpret_cast<const char*>(raw.data()), reinterpret_cast<char*>(e.data()),
                                         static_cast<int>(raw.size()), static_cast<int>(e.size()));
      e.resize(static_cast<std::size_t>(n));
      enc.push_back(std::move(e));
    }
    for (std::uint32_t region : regions) {
      std::uint64_t hist[8] = {}, declined = 0, walks = 0, regions_total = 0;
      for (std::size_t i = 0; i < enc.size(); ++i) {
        const auto in_n = static_cast<std::uint32_t>(enc[i].size());
        const logic::Lz4SplitShape shape = logic::lz4_split_shape(in_n, region);
        regions_total += shape.regions;
        std::uint32_t count = 0, rounds = 0;
        const bool ok = logic::lz4_split_walk_host(
            enc[i].data(), in_n, static_cast<std::uint32_t>(b.sizes[i]), region, ~std::size_t{0},
            [](std::uint32_t, std::uint32_t, std::uint32_t) {}, &count, &rounds);
        declined += !ok;
        ++hist[rounds < 7 ? rounds : 7];
        // walks per region: round 0, each walking round, the marking walk
        walks += rounds + 1 + (ok ? 1 : 0);
      }
      std::printf("%-16s region >= %5u B: %6.1f regions a block, declined %llu of %zu; rounds that walked:",
                  b.name, region, static_cast<double>(regions_total) / enc.size(),
                  static_cast<unsigned long long>(declined), enc.size());
      for (int r = 0; r < 8; ++r)
        if (hist[r] != 0) std::printf(" %d%s: %llu", r, r == 7 ? "+" : "", static_cast<unsigned long long>(hist[r]));
      std::printf("; walk latencies a block %.2f\n", static_cast<double>(walks) / enc.size());
    }
  }
}
