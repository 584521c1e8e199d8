// `cubestream bench read STORE`: reads whole arrays into host memory with N threads and
// reports GB/s of decoded data (median of repeats, after one warm-up read that also fills
// the page cache), beside the single-thread speed of the codec library itself on the same
// chunks (libzstd for zstd chunks; liblz4 on the same decoded data for blosc-lz4 / lz4).
// --decode cpu|gpu|auto picks where the chunks are decoded (ReadOptions::decode; default auto).
#include <lz4.h>
#include <zstd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/args.hpp"
#include "cli/chunk_grid.hpp"
#include "cli/commands.hpp"
#include "cli/format.hpp"
#include "cubestream/array.hpp"
#include "cubestream/error.hpp"
#include "cubestream/group.hpp"
#include "zarr/gpu_read_pool.hpp"

namespace cubestream::cli {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0.0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

// Single-thread speed of the codec library on (up to `budget` decoded bytes of) the array's
// chunks: a reference for what one core of the plain library does.
nlohmann::json codec_baseline(const Array& a, std::uint64_t budget) {
  const auto& m = a.metadata();
  if (m.inner_chunk_shape) return nullptr;  // sharded: chunk values are shards
  std::string last;
  for (const auto& c : m.codecs) last = c.value("name", "");
  std::uint64_t chunk_bytes = m.dtype.size;
  for (auto c : m.chunk_shape) chunk_bytes *= static_cast<std::uint64_t>(c);
  const ChunkGrid grid = ChunkGrid::of(m);
  const std::uint64_t n =
      std::min<std::uint64_t>(grid.count, std::max<std::uint64_t>(1, budget / std::max<std::uint64_t>(1, chunk_bytes)));
  std::vector<Bytes> chunks;
  for (std::uint64_t flat = 0; flat < n; ++flat) {
    const auto idx = grid.position(flat);
    if (auto v = a.store().get(a.chunk_key(idx))) chunks.push_back(std::move(*v));
  }
  if (chunks.empty()) return nullptr;
  Bytes out(chunk_bytes);
  if (last == "zstd") {
    ZSTD_DCtx* dctx = ZSTD_createDCtx();
    auto t0 = Clock::now();
    for (const auto& c : chunks) {
      std::size_t r = ZSTD_decompressDCtx(dctx, out.data(), out.size(), c.data(), c.size());
      if (ZSTD_isError(r)) {
        ZSTD_freeDCtx(dctx);
        return nullptr;
      }
    }
    double s = seconds_since(t0);
    ZSTD_freeDCtx(dctx);
    return {{"name", "libzstd " + std::string(ZSTD_versionString())}, {"gbps", chunks.size() * chunk_bytes / s / 1e9}};
  }
  if (last == "blosc" || last == "lz4") {
    // The same decoded data, compressed with plain LZ4 here, decoded with liblz4.
    std::vector<Bytes> lz;
    Bytes decoded = a.read_all({});
    const std::uint64_t total = std::min<std::uint64_t>(decoded.size(), chunks.size() * chunk_bytes);
    for (std::uint64_t off = 0; off < total; off += chunk_bytes) {
      const int len = static_cast<int>(std::min<std::uint64_t>(chunk_bytes, total - off));
      Bytes c(static_cast<std::size_t>(LZ4_compressBound(len)));
      int cs = LZ4_compress_default(reinterpret_cast<const char*>(decoded.data() + off), reinterpret_cast<char*>(c.data()), len,
                                    static_cast<int>(c.size()));
      c.resize(static_cast<std::size_t>(cs));
      lz.push_back(std::move(c));
    }
    auto t0 = Clock::now();
    std::uint64_t bytes = 0;
    for (const auto& c : lz) {
      int r = LZ4_decompress_safe(reinterpret_cast<const char*>(c.data()), reinterpret_cast<char*>(out.data()),
                                  static_cast<int>(c.size()), static_cast<int>(out.size()));
      if (r < 0) return nullptr;
      bytes += static_cast<std::uint64_t>(r);
    }
    double s = seconds_since(t0);
    return {{"name", "liblz4 " + std::string(LZ4_versionString()) + " (plain LZ4 of the same data)"}, {"gbps", bytes / s / 1e9}};
  }
  return nullptr;
}

nlohmann::json bench_array(const Array& a, int threads, int repeat, bool baseline, DecodeBackend decode,
                           const std::string& decode_name) {
  Region all;
  all.start.assign(a.rank(), 0);
  all.shape = a.shape();
  Bytes out(static_cast<std::size_t>(all.num_elements()) * a.dtype().size);
  ReadOptions opts;
  opts.threads = threads;
  opts.decode = decode;
  a.read(all, out.data(), out.size(), opts);  // warm-up: page cache, thread pool, allocator
  std::vector<double> secs;
  ReadStats stats;
  for (int r = 0; r < repeat; ++r) {
    auto t0 = Clock::now();
    stats = a.read(all, out.data(), out.size(), opts);
    secs.push_back(seconds_since(t0));
  }
  const double med = median(secs);
  nlohmann::json j = {{"store", a.store().describe()},
                      {"array", a.path()},
                      {"bytes_decoded", out.size()},
                      {"bytes_stored", stats.bytes_fetched},
                      {"chunks", stats.chunks_read},
                      {"threads", threads > 0 ? threads : 0},
                      {"decode", decode_name},
                      {"chunks_decoded_on_gpu", stats.chunks_decoded_on_gpu},
                      {"seconds", secs},
                      {"gbps_median", out.size() / med / 1e9},
                      {"gbps_stored_median", stats.bytes_fetched / med / 1e9}};
  if (stats.chunks_decoded_on_gpu > 0) {
    // what the GPU read keeps for the next reads (pinned host memory, device memory)
    const auto held = zarr::GpuStagingLease::idle_bytes(opts.gpu_device);
    j["gpu_staging_bytes"] = {{"pinned_host", held.first}, {"device", held.second}};
  }
  if (baseline) j["codec_single_thread"] = codec_baseline(a, 1ull << 30);
  return j;
}

}  // namespace

int run_bench(int argc, char** argv) {
  const std::set<std::string> known = {"array", "threads", "repeat", "json", "no-baseline", "decode"};
  Args args(argc, argv, 2, {"json", "no-baseline"});
  for (const auto& u : args.unknown(known)) throw std::invalid_argument("bench: unknown option --" + u);
  if (args.positionals().size() != 2 || args.positionals()[0] != "read")
    throw std::invalid_argument("usage: cubestream bench read STORE [--array PATH] [--threads N] [--repeat R] [--decode cpu|gpu|auto] [--json] "
        "[--no-baseline]");
  auto store = open_store(args.positionals()[1]);
  const int threads = static_cast<int>(args.get_int("threads", 0));
  const int repeat = static_cast<int>(args.get_int("repeat", 5));
  if (repeat < 1 || threads < 0) throw std::invalid_argument("bench: --repeat must be >= 1 and --threads >= 0");
  const std::string decode_name = args.get("decode", "auto");
  const DecodeBackend decode = [&] {
    try {
      return decode_backend_from_name(decode_name);
    } catch (const Error& e) {
      throw std::invalid_argument("bench: --decode: " + e.message());
    }
  }();
  std::vector<Array> arrays;
  if (args.has("array")) {
    arrays.push_back(Array::open(store, args.get("array", "")));
  } else {
    try {
      Group g = Group::open(store, "");
      for (const auto& p : g.all_array_paths()) arrays.push_back(g.open_array(p));
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kNotFound) throw;
      arrays.push_back(Array::open(store, ""));
    }
  }
  nlohmann::json results = nlohmann::json::array();
  for (const auto& a : arrays) {
    auto j = bench_array(a, threads, repeat, !args.has("no-baseline"), decode, decode_name);
    if (!args.has("json")) {
      std::printf("%-24s %10s decoded in %8.4f s (median of %d) = %7.3f GB/s decoded, %7.3f GB/s stored",
                  a.path().c_str(), human_bytes(j["bytes_decoded"].get<double>()).c_str(), median(j["seconds"].get<std::vector<double>>()),
                  repeat, j["gbps_median"].get<double>(), j["gbps_stored_median"].get<double>());
      if (j["chunks_decoded_on_gpu"].get<std::uint64_t>() > 0)
        std::printf("  | %llu of %llu chunks decoded on the GPU",
                    static_cast<unsigned long long>(j["chunks_decoded_on_gpu"].get<std::uint64_t>()),
                    static_cast<unsigned long long>(j["chunks"].get<std::uint64_t>()));
      if (j.contains("codec_single_thread") && !j["codec_single_thread"].is_null())
        std::printf("  | %s, 1 thread: %.3f GB/s", j["codec_single_thread"]["name"].get<std::string>().c_str(),
                    j["codec_single_thread"]["gbps"].get<double>());
      std::printf("\n");
    }
    results.push_back(std::move(j));
  }
  if (args.has("json")) std::printf("%s\n", (results.size() == 1 ? results[0] : results).dump(2).c_str());
  return 0;
}

}  // namespace cubestream::cli
