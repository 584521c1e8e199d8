// Local read engine and device reads against plain baselines, in one run (bench/io_bench_run.sh
// drives it on the GPU machine; results go to docs/benchmarks.md by hand).
//
//   io_bench --dir DIR [--shards 16] [--chunks 64] [--chunk-bytes 2400000] [--repeat 5]
//            [--threads 16] [--out table.md]
//
// Data: DIR/s<i> are Zarr-v3-style shard files: `chunks` inner chunks of about chunk-bytes
// (a zstd-compressed ERA5 721x1440 float32 field is ~2.4 MB), each size varied by up to
// +-10%, then the shard index (offset, nbytes as little-endian uint64 per chunk, and 4 bytes
// where the crc32c would be) at the end. Written once (random bytes: the disk does not care)
// and reused. A shard is read the way the sharded reader reads it: the index as a suffix
// range, then every inner chunk through get_ranges (adjacent ranges coalesce).
//
// Measurements (each the median of `repeat` rounds; the two sides of a comparison alternate
// within each round, so that a noisy neighbour hits both):
//   (a) cold: every shard read with O_DIRECT by our engine (pread pool and io_uring at a few
//       queue depths and piece sizes, and at the depth and piece size chosen from the data
//       directory's block device, as a store opened with CUBESTREAM_IO_DIRECT=1 would) vs `dd iflag=direct bs=4M` and `bs=64M` over the same files. O_DIRECT reads never
//       come from the page cache. Dropping the page cache (/proc/sys/vm/drop_caches) is tried
//       and reported; where it works, buffered cold reads are measured as well.
//   (b) warm: every shard from the page cache, our engine with depth `threads`, vs a plain
//       loop of `threads` threads calling pread on 4 MiB blocks of the same files.
//   (c) device (CUDA builds with a GPU): whole shards into device memory through
//       gds::DeviceReader (the path CUBESTREAM_GDS=auto picks, and cuFile forced on where it
//       loads) vs one pread into pageable memory + cudaMemcpy, per shard; warm data.
#include <fcntl.h>
#include <malloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cubestream/error.hpp"
#include "cuda/memory.hpp"
#include "store/file/device_tuning.hpp"
#include "store/file/file_store.hpp"
#include "store/gds/device_read.hpp"

#ifdef CUBESTREAM_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

using namespace cubestream;
using store_detail::DirectMode;
using store_detail::IoEngineKind;
using store_detail::IoSettings;

namespace {

struct Options {
  std::string dir;
  int shards = 16;
  int chunks = 64;
  std::uint64_t chunk_bytes = 2400000;
  int repeat = 5;
  int threads = 16;
  std::string out;
};

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

std::string shard_path(const Options& o, int i) { return o.dir + "/s" + std::to_string(i); }

// Writes the shard files that are missing; returns the total bytes of all shards.
std::uint64_t make_shards(const Options& o) {
  std::filesystem::create_directories(o.dir);
  std::uint64_t total = 0;
  std::mt19937_64 rng(1);
  for (int s = 0; s < o.shards; ++s) {
    std::vector<std::uint64_t> sizes(o.chunks);
    for (auto& n : sizes) n = o.chunk_bytes * 9 / 10 + rng() % (o.chunk_bytes / 5);
    std::uint64_t data = 0;
    for (auto n : sizes) data += n;
    const std::uint64_t size = data + 16 * o.chunks + 4;
    total += size;
    struct stat st {};
    if (::stat(shard_path(o, s).c_str(), &st) == 0 && static_cast<std::uint64_t>(st.st_size) == size) continue;
    std::vector<std::uint8_t> buf(size);
    std::mt19937_64 fill(100 + s);
    for (std::uint64_t i = 0; i + 8 <= data; i += 8) {
      std::uint64_t x = fill();
      std::memcpy(&buf[i], &x, 8);
    }
    std::uint64_t off = 0;
    for (int c = 0; c < o.chunks; ++c) {
      std::memcpy(&buf[data + 16 * c], &off, 8);
      std::memcpy(&buf[data + 16 * c + 8], &sizes[c], 8);
      off += sizes[c];
    }
    int fd = ::open(shard_path(o, s).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ::write(fd, buf.data(), size) != static_cast<ssize_t>(size) || ::fsync(fd) != 0) {
      std::perror("writing a shard");
      std::exit(1);
    }
    ::close(fd);
  }
  return total;
}

// Reads every shard as the sharded reader does; returns the bytes delivered.
std::uint64_t read_store(const Store& store, const Options& o) {
  std::uint64_t bytes = 0;
  for (int s = 0; s < o.shards; ++s) {
    std::string key = "s" + std::to_string(s);
    auto index = store.get_range(key, ByteRange::suffix(16 * o.chunks + 4));
    std::vector<ByteRange> ranges(o.chunks);
    for (int c = 0; c < o.chunks; ++c) {
      std::uint64_t off, n;
      std::memcpy(&off, index->data() + 16 * c, 8);
      std::memcpy(&n, index->data() + 16 * c + 8, 8);
      ranges[c] = {static_cast<std::int64_t>(off), static_cast<std::int64_t>(n)};
    }
    auto parts = store.get_ranges(key, ranges);
    for (const auto& p : *parts) bytes += p.size();
    bytes += index->size();
  }
  return bytes;
}

// The warm baseline: `threads` threads, each taking the next 4 MiB block of the next file,
// into a per-thread 4 MiB buffer (stays in the CPU caches) or, with `dest`, into the block's
// own place in a buffer as large as all shards (the memory traffic the store's outputs cause).
std::uint64_t plain_pread_loop(const Options& o, int threads, std::uint8_t* dest = nullptr) {
  constexpr std::uint64_t kBlock = 4 << 20;
  struct Item {
    int fd;
    std::uint64_t off, len;
  };
  std::vector<int> fds;
  std::vector<Item> items;
  for (int s = 0; s < o.shards; ++s) {
    int fd = ::open(shard_path(o, s).c_str(), O_RDONLY);
    struct stat st {};
    ::fstat(fd, &st);
    fds.push_back(fd);
    for (std::uint64_t off = 0; off < static_cast<std::uint64_t>(st.st_size); off += kBlock)
      items.push_back({fd, off, std::min<std::uint64_t>(kBlock, st.st_size - off)});
  }
  std::vector<std::uint64_t> at(items.size() + 1, 0);
  for (std::size_t i = 0; i < items.size(); ++i) at[i + 1] = at[i] + items[i].len;
  std::atomic<std::size_t> next{0};
  std::atomic<std::uint64_t> bytes{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      std::vector<std::uint8_t> buf(kBlock);
      for (std::size_t i; (i = next.fetch_add(1)) < items.size();) {
        std::uint8_t* to = dest ? dest + at[i] : buf.data();
        ssize_t n = ::pread(items[i].fd, to, items[i].len, static_cast<off_t>(items[i].off));
        if (n > 0) bytes += static_cast<std::uint64_t>(n);
      }
    });
  }
  for (auto& t : pool) t.join();
  for (int fd : fds) ::close(fd);
  return bytes;
}

double dd_seconds(const Options& o, const char* bs) {
  std::string cmd = "for f in";
  for (int s = 0; s < o.shards; ++s) cmd += " '" + shard_path(o, s) + "'";
  cmd += std::string("; do dd if=\"$f\" of=/dev/null bs=") + bs + " iflag=direct status=none || exit 1; done";
  double t0 = now();
  if (std::system(cmd.c_str()) != 0) return -1;
  return now() - t0;
}

std::string try_drop_caches() {
  ::sync();
  int fd = ::open("/proc/sys/vm/drop_caches", O_WRONLY);
  if (fd < 0) return std::string("refused: open: ") + std::strerror(errno);
  bool ok = ::write(fd, "3", 1) == 1;
  int err = errno;
  ::close(fd);
  return ok ? "ok" : std::string("refused: write: ") + std::strerror(err);
}

struct Row {
  std::string section, what;
  double gbps;
  std::string note;
};

IoSettings engine_settings(IoEngineKind kind, DirectMode direct, int depth) {
  IoSettings s;
  s.engine = kind;
  s.direct = direct;
  s.depth = depth;
  s.direct_min_bytes = 0;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i], v = argv[i + 1];
    if (a == "--dir") o.dir = v;
    else if (a == "--shards") o.shards = std::stoi(v);
    else if (a == "--chunks") o.chunks = std::stoi(v);
    else if (a == "--chunk-bytes") o.chunk_bytes = std::stoull(v);
    else if (a == "--repeat") o.repeat = std::stoi(v);
    else if (a == "--threads") o.threads = std::stoi(v);
    else if (a == "--out") o.out = v;
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (o.dir.empty()) {
    std::fprintf(stderr, "usage: io_bench --dir DIR [--shards N] [--chunks N] [--chunk-bytes N] [--repeat N] [--threads N] [--out FILE]\n");
    return 2;
  }
  // get_ranges returns fresh buffers. With glibc's defaults, freeing a shard's ~150 MB of
  // chunk buffers trims the heap, so every shard of every round page-faults its outputs in
  // again; that is the allocator, not the read path (a loader keeps its buffers). Keep freed
  // memory for reuse, as a long-running process's heap would be.
  ::mallopt(M_MMAP_THRESHOLD, 256 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 1 << 30);
  try {
    const std::uint64_t total = make_shards(o);
    const double gb = total / 1e9;
    std::printf("data: %d shards x %d chunks, %.2f GB in %s\n", o.shards, o.chunks, gb, o.dir.c_str());
    std::vector<Row> rows;
    auto add = [&](std::string section, std::string what, const std::vector<double>& secs, std::string note = "") {
      double m = median(secs);
      rows.push_back({std::move(section), std::move(what), m > 0 ? gb / m : 0, std::move(note)});
      std::printf("  %-44s %7.2f GB/s (median of %zu)\n", rows.back().what.c_str(), rows.back().gbps, secs.size());
      std::fflush(stdout);
    };
    auto time_it = [](const std::function<void()>& f) {
      double t0 = now();
      f();
      return now() - t0;
    };

    // (a) cold
    const std::string drop = try_drop_caches();
    std::printf("(a) cold; drop_caches: %s\n", drop.c_str());
    {
      // Our engine at a few (depth, block) points: the device's best queue depth and request
      // size are not known in advance (dd keeps one request of bs bytes in flight).
      struct Config {
        IoEngineKind kind;
        int depth;
        std::uint64_t block;
      };
      std::vector<Config> configs = {{IoEngineKind::kPread, 32, 1 << 20}, {IoEngineKind::kIoUring, 32, 1 << 20},
                                     {IoEngineKind::kPread, 16, 4 << 20}, {IoEngineKind::kIoUring, 16, 4 << 20},
                                     {IoEngineKind::kPread, 8, 4 << 20},  {IoEngineKind::kIoUring, 4, 8 << 20}};
      // What a store opened from the environment with O_DIRECT uses on this device
      // (device_tuning.hpp): once with the engine auto picks, once with the pread pool (the
      // engine where containers refuse io_uring). The rows above at depth 32 x 1 MiB are the
      // fixed defaults used before.
      IoSettings chosen = IoSettings::from_env();
      chosen.direct = DirectMode::kOn;
      store_detail::apply_device_tuning(chosen, o.dir);
      std::printf("  device: %s\n  chosen: depth %d, %s pieces (%s)\n",
                  store_detail::describe(store_detail::block_device_facts_for_path(o.dir)).c_str(), chosen.depth,
                  store_detail::format_bytes(chosen.block_bytes).c_str(), chosen.tuning.c_str());
      const std::size_t first_chosen = configs.size();
      configs.push_back({chosen.engine, chosen.depth, chosen.block_bytes});
      configs.push_back({IoEngineKind::kPread, chosen.depth, chosen.block_bytes});
      std::vector<std::shared_ptr<store_detail::LocalFileStore>> stores;
      for (const auto& c : configs) {
        auto s = engine_settings(c.kind, DirectMode::kOn, c.depth);
        s.block_bytes = c.block;
        stores.push_back(store_detail::open_local_file_store(o.dir, s));
      }
      std::vector<std::vector<double>> t(configs.size());
      std::vector<double> t_dd4, t_dd64;
      for (int r = 0; r < o.repeat; ++r) {
        t_dd4.push_back(dd_seconds(o, "4M"));
        // Each round starts at the next config: on a virtio disk whose host may cache or
        // throttle, identical settings measured 1.52 and 1.73 GB/s in neighbouring slots of
        // one run, so no config keeps the same place (and the same neighbour) every round.
        for (std::size_t i = 0; i < configs.size(); ++i) {
          if (i == configs.size() / 2) t_dd64.push_back(dd_seconds(o, "64M"));
          const std::size_t k = (i + static_cast<std::size_t>(r)) % configs.size();
          t[k].push_back(time_it([&] { read_store(*stores[k], o); }));
        }
      }
      add("cold", "dd iflag=direct bs=4M", t_dd4);
      add("cold", "dd iflag=direct bs=64M", t_dd64);
      for (std::size_t k = 0; k < configs.size(); ++k) {
        add("cold", std::string("cubestream ") + stores[k]->engine().name() + ", O_DIRECT, depth " +
                        std::to_string(configs[k].depth) + ", " + store_detail::format_bytes(configs[k].block) +
                        " pieces" + (k >= first_chosen ? " (chosen for this device)" : ""),
            t[k], stores[k]->io_description() + (k >= first_chosen ? "; " + chosen.tuning : ""));
      }
      if (drop == "ok") {
        auto buffered = store_detail::open_local_file_store(o.dir, engine_settings(IoEngineKind::kAuto, DirectMode::kOff, 32));
        std::vector<double> t;
        for (int r = 0; r < o.repeat; ++r) {
          try_drop_caches();
          t.push_back(time_it([&] { read_store(*buffered, o); }));
        }
        add("cold", "cubestream buffered after drop_caches, depth 32", t, buffered->io_description());
      }
    }

    // (b) warm: bring every shard into the page cache first
    std::printf("(b) warm, %d threads\n", o.threads);
    {
      plain_pread_loop(o, o.threads);
      std::vector<std::uint8_t> dest(total);  // touched by the warm-up below: no page faults in rounds
      plain_pread_loop(o, o.threads, dest.data());
      auto pread_store = store_detail::open_local_file_store(o.dir, engine_settings(IoEngineKind::kPread, DirectMode::kOff, o.threads));
      auto uring_store = store_detail::open_local_file_store(o.dir, engine_settings(IoEngineKind::kIoUring, DirectMode::kOff, o.threads));
      std::vector<double> t_plain, t_plain_dest, t_pread, t_uring;
      for (int r = 0; r < o.repeat; ++r) {
        t_plain.push_back(time_it([&] { plain_pread_loop(o, o.threads); }));
        t_plain_dest.push_back(time_it([&] { plain_pread_loop(o, o.threads, dest.data()); }));
        t_pread.push_back(time_it([&] { read_store(*pread_store, o); }));
        t_uring.push_back(time_it([&] { read_store(*uring_store, o); }));
      }
      std::string n = std::to_string(o.threads);
      add("warm", "plain pread loop, " + n + " threads, 4 MiB blocks, cache-resident buffer", t_plain);
      add("warm", "plain pread loop, " + n + " threads, 4 MiB blocks, into a buffer of the data's size", t_plain_dest);
      add("warm", "cubestream pread pool, depth " + n, t_pread, pread_store->io_description());
      add("warm", std::string("cubestream ") + uring_store->engine().name() + ", depth " + n, t_uring,
          uring_store->io_description());
    }

    // (c) device
#ifdef CUBESTREAM_WITH_CUDA
    if (cuda::device_count() > 0) {
      std::printf("(c) into device memory (warm data)\n");
      std::uint64_t biggest = 0;
      for (int s = 0; s < o.shards; ++s) biggest = std::max<std::uint64_t>(biggest, std::filesystem::file_size(shard_path(o, s)));
      void* dev = nullptr;
      if (cudaMalloc(&dev, biggest) != cudaSuccess) throw Error(ErrorCode::kCuda, "cudaMalloc failed");
      auto io = engine_settings(IoEngineKind::kAuto, DirectMode::kOff, 32);
      auto store = store_detail::open_local_file_store(o.dir, io);
      auto through = [&](gds::DeviceReader& reader) {
        for (int s = 0; s < o.shards; ++s) reader.read_to_device("s" + std::to_string(s), ByteRange::all(), dev);
      };
      std::vector<std::uint8_t> pageable(biggest);
      auto plain = [&] {
        for (int s = 0; s < o.shards; ++s) {
          int fd = ::open(shard_path(o, s).c_str(), O_RDONLY);
          std::uint64_t size = std::filesystem::file_size(shard_path(o, s)), done = 0;
          while (done < size) {
            ssize_t n = ::pread(fd, pageable.data() + done, size - done, static_cast<off_t>(done));
            if (n <= 0) break;
            done += static_cast<std::uint64_t>(n);
          }
          ::close(fd);
          cudaMemcpy(dev, pageable.data(), size, cudaMemcpyHostToDevice);
        }
      };
      auto ring_io = io;
      ring_io.gds = store_detail::GdsMode::kAuto;
      gds::DeviceReader auto_reader(store, 0, ring_io);
      std::unique_ptr<gds::DeviceReader> cufile_reader;
      auto on = io;
      on.gds = store_detail::GdsMode::kOn;
      if (gds::choose_device_path(on.gds).path == gds::DevicePath::kCuFile)
        cufile_reader = std::make_unique<gds::DeviceReader>(store, 0, on);
      auto direct_io = engine_settings(IoEngineKind::kAuto, DirectMode::kOn, 32);
      direct_io.gds = store_detail::GdsMode::kOff;
      auto direct_store = store_detail::open_local_file_store(o.dir, direct_io);
      gds::DeviceReader cold_ring(direct_store, 0, direct_io);
      through(auto_reader);  // warm-up: pinned ring, CUDA context
      plain();
      std::vector<double> t_plain, t_auto, t_cufile, t_cold;
      for (int r = 0; r < o.repeat; ++r) {
        t_plain.push_back(time_it(plain));
        t_auto.push_back(time_it([&] { through(auto_reader); }));
        if (cufile_reader) t_cufile.push_back(time_it([&] { through(*cufile_reader); }));
        t_cold.push_back(time_it([&] { through(cold_ring); }));
      }
      add("device", "plain pread + cudaMemcpy from pageable memory", t_plain);
      add("device", "cubestream DeviceReader (CUBESTREAM_GDS=auto)", t_auto, auto_reader.path_description());
      if (cufile_reader) add("device", "cubestream DeviceReader, cuFile (CUBESTREAM_GDS=on)", t_cufile, cufile_reader->path_description());
      add("device", "cubestream DeviceReader, ring + O_DIRECT (cold)", t_cold, cold_ring.path_description());
      cudaFree(dev);
    } else {
      std::printf("(c) skipped: no GPU visible\n");
    }
#else
    std::printf("(c) skipped: built without CUDA\n");
#endif

    std::string md = "| part | what | GB/s | notes |\n|---|---|---:|---|\n";
    for (const auto& r : rows) {
      char g[32];
      std::snprintf(g, sizeof g, "%.2f", r.gbps);
      md += "| " + r.section + " | " + r.what + " | " + g + " | " + r.note + " |\n";
    }
    md += "\ndata: " + std::to_string(o.shards) + " shards x " + std::to_string(o.chunks) + " chunks, " +
          std::to_string(total) + " bytes; medians of " + std::to_string(o.repeat) + " rounds; drop_caches: " + drop + "\n";
    std::printf("\n%s", md.c_str());
    if (!o.out.empty()) {
      FILE* f = std::fopen(o.out.c_str(), "w");
      if (f) {
        std::fputs(md.c_str(), f);
        std::fclose(f);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "io_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
