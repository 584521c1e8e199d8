// Micro-benchmark: does it matter where libzstd writes? Decodes every chunk of a Zarr v3
// zstd store (chunks c/<t>/0/0, already in memory) with N threads, (a) straight into one
// large output array, (b) into a per-thread scratch buffer then memcpy into the array,
// (c) into the scratch buffer only (the in-cache ceiling), (d) as (a) with the array
// madvise(MADV_HUGEPAGE). Used to decide how Array::read should place zstd output.
//   g++ -O2 -pthread zstd_dest.cpp -lzstd -o zstd_dest && ./zstd_dest STORE/ARRAY T CHUNK_BYTES
#include <sys/mman.h>
#include <zstd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 4) return 2;
  const std::string dir = argv[1];
  const int T = std::atoi(argv[2]);
  const size_t cb = std::strtoull(argv[3], nullptr, 10);
  std::vector<std::vector<char>> chunks(T);
  for (int t = 0; t < T; ++t) {
    std::ifstream f(dir + "/c/" + std::to_string(t) + "/0/0", std::ios::binary);
    chunks[t].assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  char* big = static_cast<char*>(std::aligned_alloc(1 << 21, ((cb * T + (1 << 21) - 1) >> 21) << 21));
  std::memset(big, 1, cb * T);
  char* big_huge = static_cast<char*>(std::aligned_alloc(1 << 21, ((cb * T + (1 << 21) - 1) >> 21) << 21));
  madvise(big_huge, cb * T, MADV_HUGEPAGE);
  std::memset(big_huge, 1, cb * T);
  for (int threads : {1, 4, 16}) {
    for (int mode = 0; mode < 4; ++mode) {
      double best = 0;
      for (int rep = 0; rep < 3; ++rep) {
        std::atomic<int> next{0};
        auto t0 = std::chrono::steady_clock::now();
        std::vector<std::thread> ts;
        for (int w = 0; w < threads; ++w)
          ts.emplace_back([&] {
            ZSTD_DCtx* d = ZSTD_createDCtx();
            std::vector<char> scratch(cb);
            for (int i; (i = next++) < T;) {
              char* dst = (mode == 3 ? big_huge : big) + size_t(i) * cb;
              if (mode == 0 || mode == 3) ZSTD_decompressDCtx(d, dst, cb, chunks[i].data(), chunks[i].size());
              else {
                ZSTD_decompressDCtx(d, scratch.data(), cb, chunks[i].data(), chunks[i].size());
                if (mode == 1) std::memcpy(dst, scratch.data(), cb);
              }
            }
            ZSTD_freeDCtx(d);
          });
        for (auto& t : ts) t.join();
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        best = std::max(best, cb * double(T) / s / 1e9);
      }
      const char* names[] = {"direct", "scratch+memcpy", "scratch only", "direct, THP"};
      std::printf("threads %2d  %-16s %6.3f GB/s (best of 3)\n", threads, names[mode], best);
    }
  }
}
