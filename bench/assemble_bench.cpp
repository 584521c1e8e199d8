// CPU assemble stage benchmark (issue 6): the previous assemble_piece (bench/assemble_previous.cpp)
// and the fused one (src/pipeline/assemble.cpp) on the same batch, in the same run, on one
// thread and on N threads. Prints a markdown table.
//
//   build/assemble_bench [--threads N] [--reps R] [--out bf16|f32|f16] [--source f32|i16cf] [--no-norm]
//                        [--units K]
//
// The batch is the U-Net benchmark's (docs/benchmarks.md, "U-Net training"): 16 samples x 6
// variables x 2 time steps, each a 640 x 1280 patch at a random place in its own decoded unit
// of 721 x 1440 values (one chunk of one time step, 192 units, ~800 MB for float32: they do not
// fit in any cache, as in the loader, where a unit is mostly assembled right after it was
// decoded but by then has left L2). Defaults: float32 source with a NaN _FillValue (ERA5 from
// ARCO), normalisation on (per-variable mean and std), bf16 output, N = all cores, R = 7.
// --source i16cf: int16 with _FillValue, scale_factor and add_offset (netCDF-packed data).
// --units K: only K distinct units, reused round-robin (K = 1: the source stays in cache, which
// shows the loops' own cost without the memory traffic).
//
// Pieces are spread over the threads through an atomic counter, as the loader's pool runs its
// unit tasks. The output tensor is allocated and touched once, before timing (the loader's
// tensors come from a pool). Old and new alternate within each repetition; reported: the median
// wall time of R repetitions, the output bytes (1e9) per second of it, and the median CPU time
// of the process over the run (thread-seconds, as loader.stats() counts the stage; on a
// shared machine it is steadier than the wall time). Before timing, the two
// outputs are compared byte for byte; a difference ends the run with status 1.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <time.h>

#include <nlohmann/json.hpp>

#include "assemble_previous.hpp"
#include "cubestream/array.hpp"
#include "cubestream/store.hpp"
#include "pipeline/assemble.hpp"

namespace {

using namespace cubestream;

constexpr std::int64_t kLat = 721, kLon = 1440, kPatchLat = 640, kPatchLon = 1280;
constexpr int kSamples = 16, kVars = 6, kSteps = 2;

struct Options {
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int reps = 7;
  OutputDType out = OutputDType::kBFloat16;
  bool int16_cf = false;
  bool norm = true;
  int units = 0;  // 0: one per piece
};

[[noreturn]] void usage() {
  std::fprintf(stderr,
               "usage: assemble_bench [--threads N] [--reps R] [--out bf16|f32|f16] [--source f32|i16cf] [--no-norm] "
               "[--units K]\n");
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage();
      return argv[++i];
    };
    if (a == "--threads") o.threads = std::max(1, std::atoi(value().c_str()));
    else if (a == "--reps") o.reps = std::max(1, std::atoi(value().c_str()));
    else if (a == "--no-norm") o.norm = false;
    else if (a == "--units") o.units = std::max(1, std::atoi(value().c_str()));
    else if (a == "--out") {
      const std::string v = value();
      if (v == "bf16") o.out = OutputDType::kBFloat16;
      else if (v == "f32") o.out = OutputDType::kFloat32;
      else if (v == "f16") o.out = OutputDType::kFloat16;
      else usage();
    } else if (a == "--source") {
      const std::string v = value();
      if (v == "f32") o.int16_cf = false;
      else if (v == "i16cf") o.int16_cf = true;
      else usage();
    } else {
      usage();
    }
  }
  return o;
}

const char* out_name(OutputDType d) {
  return d == OutputDType::kBFloat16 ? "bf16" : d == OutputDType::kFloat16 ? "f16" : "f32";
}

// A UnitSource needs an Array: an empty in-memory store with one v2 array of the right dtype
// (the assemble stage reads only its dtype).
pipeline::UnitSource make_source(bool int16_cf) {
  auto store = std::make_shared<MemoryStore>();
  nlohmann::json meta = {{"zarr_format", 2},
                         {"shape", {kSamples * kSteps, kLat, kLon}},
                         {"chunks", {1, kLat, kLon}},
                         {"dtype", int16_cf ? "<i2" : "<f4"},
                         {"compressor", nullptr},
                         {"fill_value", int16_cf ? nlohmann::json(-32767) : nlohmann::json("NaN")},
                         {"filters", nullptr},
                         {"order", "C"}};
  pipeline::UnitSource s{Array::from_json(store, "t2m", meta, 2), {}, "t2m"};
  if (int16_cf) {
    s.encoding.missing_values = {-32767.0};
    s.encoding.scale_factor = 0.0018;
    s.encoding.add_offset = 265.5;
  } else {
    s.encoding.missing_values = {std::numeric_limits<double>::quiet_NaN()};  // masks nothing
  }
  return s;
}

double process_cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

void parallel_for(std::size_t n, int threads, const std::function<void(std::size_t)>& f) {
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < n;) f(i);
  };
  if (threads == 1) return work();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(work);
  for (auto& t : pool) t.join();
}

}  // namespace

int main(int argc, char** argv) {
  const Options opt = parse(argc, argv);
  const pipeline::UnitSource source = make_source(opt.int16_cf);
  const std::size_t esize = source.array.dtype().size;
  const std::size_t unit_elems = static_cast<std::size_t>(kLat * kLon);
  const int num_units = opt.units > 0 ? std::min(opt.units, kSamples * kVars * kSteps) : kSamples * kVars * kSteps;

  // Units: temperature-like values around 280 K with 0.1% NaN (float32), or their packed int16
  // form with 0.1% fill values.
  std::mt19937_64 rng(42);
  std::normal_distribution<float> temp(280.0f, 20.0f);
  std::uniform_int_distribution<int> rare(0, 999);
  std::vector<std::vector<std::uint8_t>> units(static_cast<std::size_t>(num_units));
  for (auto& u : units) {
    u.resize(unit_elems * esize);
    for (std::size_t i = 0; i < unit_elems; ++i) {
      const float t = temp(rng);
      if (opt.int16_cf) {
        const auto q = static_cast<std::int16_t>(rare(rng) == 0 ? -32767 : std::lround((t - 265.5f) / 0.0018f) % 32000);
        std::memcpy(u.data() + i * 2, &q, 2);
      } else {
        const float v = rare(rng) == 0 ? std::numeric_limits<float>::quiet_NaN() : t;
        std::memcpy(u.data() + i * 4, &v, 4);
      }
    }
  }
  std::vector<Normalisation> norms(kVars);
  for (auto& n : norms) {
    n = opt.norm ? Normalisation{std::uniform_real_distribution<double>(250, 300)(rng),
                                 std::uniform_real_distribution<double>(5, 30)(rng)}
                 : Normalisation{};
  }

  // One piece per (sample, step, variable): a patch at a random place of its unit, into the
  // tensor laid out (sample, step, variable, lat, lon).
  struct Work {
    pipeline::Piece piece;
    int unit;
  };
  std::vector<Work> work;
  std::uniform_int_distribution<std::int64_t> lat0(0, kLat - kPatchLat), lon0(0, kLon - kPatchLon);
  for (int s = 0; s < kSamples; ++s) {
    for (int t = 0; t < kSteps; ++t) {
      for (int v = 0; v < kVars; ++v) {
        pipeline::Piece p;
        p.channel = static_cast<std::uint32_t>(v);
        p.src_offset = lat0(rng) * kLon + lon0(rng);
        p.dst_offset = ((static_cast<std::int64_t>(s) * kSteps + t) * kVars + v) * kPatchLat * kPatchLon;
        p.count = {kPatchLat, kPatchLon};
        p.src_stride = {kLon, 1};
        p.dst_stride = {kPatchLon, 1};
        work.push_back({p, static_cast<int>(work.size()) % num_units});
      }
    }
  }
  const std::size_t out_elems = work.size() * static_cast<std::size_t>(kPatchLat * kPatchLon);
  const std::size_t osize = opt.out == OutputDType::kFloat32 ? 4 : 2;
  const std::size_t out_bytes = out_elems * osize;
  std::vector<std::uint8_t> out_old(out_bytes, 0), out_new(out_bytes, 0);  // touched here

  const std::optional<float> nan_fill = 0.0f;
  struct Times {
    double wall, cpu;
  };
  auto run = [&](bool fused, int threads, std::uint8_t* out) {
    const double c0 = process_cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    parallel_for(work.size(), threads, [&](std::size_t i) {
      const Work& w = work[i];
      const auto* unit = units[static_cast<std::size_t>(w.unit)].data();
      const Normalisation& n = norms[w.piece.channel];
      if (fused) pipeline::assemble_piece(w.piece, unit, source, n, nan_fill, opt.out, out);
      else bench::assemble_piece_previous(w.piece, unit, source, n, nan_fill, opt.out, out);
    });
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return Times{wall, process_cpu_seconds() - c0};
  };

  run(false, opt.threads, out_old.data());
  run(true, opt.threads, out_new.data());
  if (std::memcmp(out_old.data(), out_new.data(), out_bytes) != 0) {
    std::size_t first = 0;
    while (out_old[first] == out_new[first]) ++first;
    std::fprintf(stderr, "assemble_bench: old and new outputs differ (first at byte %zu)\n", first);
    return 1;
  }

  std::printf("batch: %d samples x %d variables x %d steps of %lldx%lld from %d %s %lldx%lld units, "
              "normalisation %s, NaN fill, %s out (%.1f MB); outputs equal byte for byte\n\n",
              kSamples, kVars, kSteps, static_cast<long long>(kPatchLat), static_cast<long long>(kPatchLon), num_units,
              opt.int16_cf ? "int16 CF-packed" : "float32", static_cast<long long>(kLat),
              static_cast<long long>(kLon), opt.norm ? "on" : "off", out_name(opt.out), out_bytes / 1e6);
  std::printf("| threads | previous ms | fused ms | previous GB/s | fused GB/s | speedup (wall) "
              "| previous cpu ms | fused cpu ms | speedup (cpu) |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  std::vector<int> thread_counts = {1};
  if (opt.threads > 1) thread_counts.push_back(opt.threads);
  for (int threads : thread_counts) {
    std::vector<double> t_old, t_new, c_old, c_new;
    for (int r = 0; r < opt.reps; ++r) {
      const Times o = run(false, threads, out_old.data());
      const Times n = run(true, threads, out_new.data());
      t_old.push_back(o.wall);
      c_old.push_back(o.cpu);
      t_new.push_back(n.wall);
      c_new.push_back(n.cpu);
    }
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    const double mo = median(t_old), mn = median(t_new), co = median(c_old), cn = median(c_new);
    std::printf("| %d | %.1f | %.1f | %.2f | %.2f | %.2fx | %.1f | %.1f | %.2fx |\n", threads, mo * 1e3, mn * 1e3,
                out_bytes / mo / 1e9, out_bytes / mn / 1e9, mo / mn, co * 1e3, cn * 1e3, co / cn);
  }
  return 0;
}
