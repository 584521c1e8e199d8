// Host count behind docs/gpu_decoders.md, "Bursts in the walker" (session 13): how the
// era5-like chunks of gpu_decode_bench (plain numcodecs lz4, liblz4 acceleration 1) split into
// sequences. Prints the compression ratio, sequences per KiB of input and of output, and the
// share of sequences and of literal bytes by literal-run length: under 15 (no length byte),
// 15-269 (one length byte: the walker's fast path, lz4_fast_shape), 270-524 (two), longer.
// The fast path also needs a match length below 15 + 255; that share is printed too.
// Build (one line): g++ -std=c++20 -O2 -Ibench bench/micro/lz4_literal_runs.cpp -llz4
//   -o lz4_literal_runs && ./lz4_literal_runs
#include <lz4.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "era5_chunk.hpp"

int main() {
  constexpr int kChunks = 8;
  double seqs = 0, in = 0, out = 0, by_run[5] = {}, lit_bytes[5] = {}, match_bytes[3] = {};
  for (int c = 0; c < kChunks; ++c) {
    const std::vector<std::uint8_t> raw = cubestream_bench::era5_chunk(1 << 20, 7919 * c + 256);
    std::vector<char> enc(LZ4_compressBound(static_cast<int>(raw.size())));
    const int n = LZ4_compress_default(reinterpret_cast<const char*>(raw.data()), enc.data(),
                                       static_cast<int>(raw.size()), static_cast<int>(enc.size()));
    const auto* p = reinterpret_cast<const std::uint8_t*>(enc.data());
    in += n;
    out += static_cast<double>(raw.size());
    // LZ4 block format: token (literal length << 4 | match length - 4), length bytes while 255,
    // literals, 2-byte offset, match length bytes while 255; the last sequence has no match
    std::size_t ip = 0;
    while (ip < static_cast<std::size_t>(n)) {
      const unsigned t = p[ip++];
      std::size_t lit = t >> 4;
      if (lit == 15) {
        unsigned e;
        do {
          e = p[ip++];
          lit += e;
        } while (e == 255);
      }
      const int k = lit < 15 ? 0 : lit < 270 ? 1 : lit < 525 ? 2 : lit < 2000 ? 3 : 4;
      by_run[k] += 1;
      lit_bytes[k] += static_cast<double>(lit);
      ip += lit;
      seqs += 1;
      if (ip >= static_cast<std::size_t>(n)) break;
      ip += 2;
      int extra = 0;
      if ((t & 15) == 15) {
        unsigned e;
        do {
          e = p[ip++];
          ++extra;
        } while (e == 255);
      }
      match_bytes[extra > 2 ? 2 : extra] += 1;
    }
  }
  std::printf("%d era5-like chunks of 4 MiB: ratio %.3f, %.1f sequences per KiB of input, %.1f per KiB of output\n",
              kChunks, out / in, seqs / (in / 1024), seqs / (out / 1024));
  const char* names[] = {"< 15", "15-269", "270-524", "525-1999", ">= 2000"};
  for (int k = 0; k < 5; ++k)
    std::printf("literal runs %-8s: %5.1f %% of sequences, %5.1f %% of the output in literals\n", names[k],
                100 * by_run[k] / seqs, 100 * lit_bytes[k] / out);
  std::printf("match length bytes 0 / 1 / 2+: %.1f / %.1f / %.1f %% of sequences\n", 100 * match_bytes[0] / seqs,
              100 * match_bytes[1] / seqs, 100 * match_bytes[2] / seqs);
}
