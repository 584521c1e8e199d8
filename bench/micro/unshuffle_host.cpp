// Host byte unshuffle alone, one thread: the scalar reference (logic::unshuffle_block, what the
// host blosc and shuffle codecs used before) against the SSE2 unshuffle_host, on 256 KiB blocks
// (blosc's usual block for typesize 4 and up). Two placements:
//   hot     the same source and destination block every time (both stay in L2): the
//           arithmetic's own speed;
//   stream  the source block stays hot (as blosc's per-thread scratch block does) while the
//           destination walks a 64 MiB buffer block by block (as a decoded chunk fills):
//           what the codec sees, bounded by writing to memory.
// A memcpy of the same block to the same place is the reference for moving the bytes at all.
// Every case's output is compared with the reference first. GB/s counts the block's bytes
// once; each figure is the best of 9 trials of ~0.1 s.
//
// What to expect: GCC 12 at -O3 (the Release build) vectorises the scalar reference's loops for
// typesizes 2, 4 and 8 by itself; unshuffle_host's typesize 4 is the same unpack sequence (the
// columns agree), its typesizes 2 and 8 are about 2x faster hot because they store 64 bytes or
// more per step in address order (see unshuffle_host.cpp). At -O2, or with clang 14 at -O3,
// the reference stays byte by byte and unshuffle_host is several times faster. In the stream
// case both are bound by writing the destination (each line is read before it is written),
// below memcpy, whose large copies avoid that read.
// Build and run from the repository root (the flags of a Release build):
//   g++ -std=c++20 -O3 -DNDEBUG -Isrc bench/micro/unshuffle_host.cpp
//       src/codec/bytes_to_bytes/unshuffle_host.cpp -o /tmp/unshuffle_host && /tmp/unshuffle_host
// Typesizes default to 2 4 8; pass others as arguments.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "codec/bytes_to_bytes/unshuffle_host.hpp"
#include "codec/logic/byte_shuffle.hpp"

namespace {

using Bytes = std::vector<std::uint8_t>;
using Fn = void (*)(const std::uint8_t*, std::uint8_t*, std::size_t, std::size_t);

constexpr std::size_t kBlock = 256 * 1024;
constexpr std::size_t kStreamBytes = 64u << 20;

// Out of line so that both sides are called the same way, and the compiler cannot merge
// repeated calls on the same buffers.
__attribute__((noinline)) void scalar(const std::uint8_t* s, std::uint8_t* d, std::size_t size, std::size_t ts) {
  cubestream::codec::logic::unshuffle_block(s, d, size, ts);
}
__attribute__((noinline)) void copy(const std::uint8_t* s, std::uint8_t* d, std::size_t size, std::size_t) {
  std::memcpy(d, s, size);
}
__attribute__((noinline)) void simd(const std::uint8_t* s, std::uint8_t* d, std::size_t size, std::size_t ts) {
  cubestream::codec::unshuffle_host(s, d, size, ts);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Rates {
  double scalar, simd, copy;
};

// Best GB/s of each function over 9 trials, the three taking turns so that a slow spell of
// the machine hits them alike. A trial runs `blocks` blocks, the destination of block k at
// dst + (k % dst_blocks) * kBlock.
Rates measure(const Bytes& src, Bytes& dst, std::size_t ts, std::size_t dst_blocks, std::size_t blocks) {
  const Fn fns[3] = {scalar, simd, copy};
  double best[3] = {0, 0, 0};
  for (int t = 0; t < 9; ++t) {
    for (int f = 0; f < 3; ++f) {
      const auto t0 = std::chrono::steady_clock::now();
      for (std::size_t k = 0; k < blocks; ++k) {
        fns[f](src.data(), dst.data() + (k % dst_blocks) * kBlock, kBlock, ts);
        asm volatile("" ::: "memory");
      }
      const double s = seconds_since(t0);
      best[f] = std::max(best[f], static_cast<double>(blocks * kBlock) / s / 1e9);
    }
  }
  return {best[0], best[1], best[2]};
}

void print(std::size_t ts, const char* what, const Rates& r) {
  std::printf("%-8zu %-7s %6.2f GB/s %6.2f GB/s %7.2fx %6.2f GB/s\n", ts, what, r.scalar, r.simd, r.simd / r.scalar,
              r.copy);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::size_t> typesizes;
  for (int a = 1; a < argc; ++a) typesizes.push_back(static_cast<std::size_t>(std::atoi(argv[a])));
  if (typesizes.empty()) typesizes = {2, 4, 8};

  Bytes src(kBlock);
  std::mt19937_64 rng(42);
  for (auto& b : src) b = static_cast<std::uint8_t>(rng());
  Bytes ref(kBlock), got(kBlock);
  Bytes stream(kStreamBytes);
  std::memset(stream.data(), 0, stream.size());  // fault the pages in before timing
  const std::size_t stream_blocks = kStreamBytes / kBlock;

  std::printf("%-8s %-7s %11s %11s %8s %11s\n", "typesize", "case", "scalar", "simd", "speedup", "memcpy");
  for (std::size_t ts : typesizes) {
    scalar(src.data(), ref.data(), kBlock, ts);
    simd(src.data(), got.data(), kBlock, ts);
    if (ref != got) {
      std::fprintf(stderr, "typesize %zu: unshuffle_host differs from the reference\n", ts);
      return 1;
    }
    // ~0.1 s per trial at a few GB/s
    print(ts, "hot", measure(src, got, ts, 1, 1024));
    print(ts, "stream", measure(src, stream, ts, stream_blocks, 2 * stream_blocks));
  }
  return 0;
}
