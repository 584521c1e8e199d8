// `cubestream synth DST [options]`: writes a synthetic ERA5-like store of a chosen size (a few
// MB for tests, 100+ GB for benchmarks) in WeatherBench2's layout, through the same write
// engine as `cubestream rechunk` (chunks, shards, codecs, memory bound, threads, resume,
// parts), and prints the compression ratio each variable reached.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cli/format.hpp"
#include "cli/write_options.hpp"
#include "cubestream/error.hpp"
#include "synth/era5_sources.hpp"

namespace cubestream::cli {
namespace {

const char* kSynthUsage =
    "usage: cubestream synth DST [--grid 0.25|1.5|NLATxNLON] [--times N | --size 10G]\n"
    "         [--variables all|surface|a,b] [--levels 50,...,1000] [--step-hours 6] [--start-year 1979]\n"
    "         [--seed 0] [--format 2|3] [--codec blosc-lz4:5|zstd:3|...] [--shuffle | --no-shuffle]\n"
    "         [--chunks time=1,level=1] [--shards time=16|none] [--checksum] [--index-location end|start]\n"
    "         [--memory 2G] [--threads N] [--overwrite | --resume] [--part i/n] [--progress | --no-progress]\n"
    "  Writes an ERA5-like dataset: time, level, latitude (90..-90), longitude (0..360) and the\n"
    "  WeatherBench2 variables 2m_temperature, 10m_u/v_component_of_wind, mean_sea_level_pressure\n"
    "  (surface) and geopotential, temperature, u/v_component_of_wind, specific_humidity on the\n"
    "  13 WeatherBench2 pressure levels; float32, GRIB-16-bit-quantised; deterministic by seed.\n"
    "  --grid      0.25 = 721x1440 (default), 1.5 = 121x240, or any NLATxNLON\n"
    "  --times     time steps (6-hourly by default); or --size: as many steps as fit in SIZE\n"
    "              decoded bytes (K/M/G/T suffixes; default 1G)\n"
    "  --format 2  (default) WeatherBench2 style: Zarr v2, chunks of one time step with every\n"
    "              level, blosc lz4 clevel 5 with byte shuffle, consolidated .zmetadata\n"
    "  --format 3  Zarr v3: chunks of one time step and one level, zstd level 3, shards of 16\n"
    "              time steps (--shards none: unsharded), consolidated metadata\n"
    "  Other options as in `cubestream rechunk` (they override the format's defaults).\n";

// Bytes stored below `prefix`, metadata documents excluded (file stores list directories as
// names whose size() is empty).
std::uint64_t stored_bytes_below(const Store& store, const std::string& prefix) {
  std::uint64_t total = 0;
  for (const auto& name : store.list_dir(prefix)) {
    if (name == "zarr.json" || name == ".zarray" || name == ".zattrs" || name == ".zgroup" || name == ".zmetadata") continue;
    const std::string key = prefix.empty() ? name : prefix + "/" + name;
    if (auto n = store.size(key)) total += *n;
    else total += stored_bytes_below(store, key);
  }
  return total;
}

}  // namespace

int run_synth(int argc, char** argv) {
  for (int i = 2; i < argc; ++i) {
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::fputs(kSynthUsage, stdout);
      return 0;
    }
  }
  const std::set<std::string> flags = {"shuffle", "no-shuffle", "checksum", "overwrite", "resume", "progress", "no-progress"};
  const Args args(argc, argv, 2, flags);
  if (auto u = args.unknown({"grid", "times", "size", "variables", "levels", "step-hours", "start-year", "seed", "format", "codec",
                             "shuffle", "no-shuffle", "chunks", "shards", "checksum", "index-location", "memory", "threads",
                             "overwrite", "resume", "part", "progress", "no-progress"});
      !u.empty())
    throw std::invalid_argument("synth: unknown option --" + u.front() + "\n" + kSynthUsage);
  if (args.positionals().size() != 1) throw std::invalid_argument(kSynthUsage);
  if (args.has("times") && args.has("size")) throw std::invalid_argument("synth: give --times or --size, not both");
  if (args.has("shuffle") && args.has("no-shuffle")) throw std::invalid_argument("synth: --shuffle and --no-shuffle exclude each other");

  synth::DatasetSpec spec;
  synth::ModelSpec& m = spec.model;
  m.grid = synth::parse_grid(args.get("grid", "0.25"));
  const std::string vars = args.get("variables", "all");
  for (const auto& v : synth::era5_variables())
    if (vars == "all" || (vars == "surface" && !v.on_levels)) m.variables.push_back(v.name);
  if (vars != "all" && vars != "surface") {
    for (const auto& name : comma_list(vars)) m.variables.push_back(synth::era5_variable(name).name);
  }
  if (m.variables.empty()) throw std::invalid_argument("synth: --variables names no variable");
  if (args.has("levels")) {
    for (const auto& s : comma_list(args.get("levels", ""))) m.levels.push_back(static_cast<int>(parse_int(s, "--levels")));
    if (m.levels.empty()) throw std::invalid_argument("synth: --levels lists no level");
  } else {
    m.levels = synth::wb2_levels();
  }
  m.step_hours = static_cast<int>(args.get_int("step-hours", 6));
  m.seed = static_cast<std::uint64_t>(args.get_int("seed", 0));
  spec.start_year = static_cast<int>(args.get_int("start-year", 1979));
  if (spec.start_year < 1 || spec.start_year > 9999) throw std::invalid_argument("synth: --start-year must be in 1..9999");

  zarr::RechunkOptions o;
  o.zarr_format = static_cast<int>(args.get_int("format", 2));
  if (o.zarr_format != 2 && o.zarr_format != 3) throw std::invalid_argument("synth: --format must be 2 or 3");
  const bool v3 = o.zarr_format == 3;
  parse_codec(args.get("codec", v3 ? "zstd:3" : "blosc-lz4:5"), o.codec);
  o.codec.shuffle = args.has("shuffle") || (!v3 && !args.has("no-shuffle") && o.codec.compressor.rfind("blosc", 0) == 0);
  o.codec.checksum = args.has("checksum");
  const std::string loc = args.get("index-location", "end");
  if (loc != "end" && loc != "start") throw std::invalid_argument("--index-location must be end or start");
  o.codec.index_at_start = loc == "start";
  o.chunks = parse_sizes(args.get("chunks", v3 ? "level=1" : ""), "--chunks");
  const std::string shards = args.get("shards", v3 ? "time=16" : "none");
  if (shards != "none") o.shards = parse_sizes(shards, "--shards");
  o.memory_bytes = parse_bytes(args.get("memory", "2G"), "--memory");
  o.threads = static_cast<int>(args.get_int("threads", 0));
  if (args.has("overwrite") && args.has("resume")) throw std::invalid_argument("--overwrite and --resume exclude each other");
  if (args.has("overwrite")) o.existing = zarr::ExistingTarget::kOverwrite;
  if (args.has("resume")) o.existing = zarr::ExistingTarget::kResume;
  if (args.has("part")) parse_part(args.get("part", ""), &o.part, &o.parts);

  if (args.has("times")) {
    spec.times = args.get_int("times", 0);
    if (spec.times < 1) throw std::invalid_argument("synth: --times must be at least 1");
  } else {
    spec.times = synth::times_for_bytes(m, parse_bytes(args.get("size", "1G"), "--size"));
  }

  const std::string dst_path = args.positionals()[0];
  if (dst_path.find("://") != std::string::npos && dst_path.rfind("file://", 0) != 0)
    throw std::invalid_argument("synth: the target must be a local directory");
  const std::string local = dst_path.rfind("file://", 0) == 0 ? dst_path.substr(7) : dst_path;

  const auto t0 = std::chrono::steady_clock::now();
  auto model = std::make_shared<const synth::Era5Model>(m, o.threads);
  const double t_model = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  bool any_levels = false;
  for (const auto& name : m.variables) any_levels = any_levels || synth::era5_variable(name).on_levels;
  const std::string levels_text = any_levels ? ", " + std::to_string(m.levels.size()) + " levels" : "";
  std::printf("synth: %zu variables, %lld time steps of %d h, grid %dx%d%s: %s decoded (model patterns: %s, %.1f s)\n",
              m.variables.size(), static_cast<long long>(spec.times), m.step_hours, m.grid.nlat, m.grid.nlon, levels_text.c_str(),
              human_bytes(static_cast<double>(synth::data_bytes(m, spec.times))).c_str(),
              human_bytes(static_cast<double>(model->memory_bytes())).c_str(), t_model);
  std::fflush(stdout);

  auto dst = open_writable_file_store(local);
  const auto sources = synth::era5_sources(model, spec);
  zarr::RechunkProgress progress;
  const bool show = args.has("progress") || (::isatty(2) && !args.has("no-progress"));
  const auto t1 = std::chrono::steady_clock::now();
  std::vector<zarr::RechunkPlanInfo> plans;
  {
    ProgressBar bar(progress.done_bytes, progress.total_bytes, show);
    bool started = false;
    try {
      zarr::write_arrays(sources, dst, synth::era5_group_attributes(spec), {}, o, progress,
                         [&](const zarr::RechunkPlanInfo& p) {
                           started = true;
                           plans.push_back(p);
                         });
    } catch (...) {
      bar.finish();
      if (started) std::fprintf(stderr, "cubestream synth: stopped; chunks written so far are complete: run again with --resume to finish\n");
      throw;
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();

  // The compression each variable reached, from what is on disk (this part's share when
  // --part splits the work).
  std::printf("\n%-26s %-20s %-38s %10s %10s %7s\n", "variable", "shape", o.shards.empty() ? "chunks" : "chunks in shards", "decoded",
              "stored", "ratio");
  double all_decoded = 0, all_stored = 0;
  for (const auto& p : plans) {
    std::uint64_t elements = 1;
    for (auto s : p.shape) elements *= static_cast<std::uint64_t>(s);
    const auto src = std::find_if(sources.begin(), sources.end(), [&](const zarr::SourceArray& a) { return a.path == p.path; });
    const double decoded = static_cast<double>(elements) * (src == sources.end() ? 0.0 : src->meta.dtype.size);
    const bool coord = p.shape.size() == 1;  // time, level, latitude, longitude
    const double stored = static_cast<double>(stored_bytes_below(*dst, p.path));
    if (!coord) {
      all_decoded += decoded;
      all_stored += stored;
    }
    const std::string chunks = shape_text(p.chunks) + (p.shards.empty() ? "" : " in " + shape_text(p.shards));
    std::printf("%-26s %-20s %-38s %10s %10s %6.2fx\n", p.path.c_str(), shape_text(p.shape).c_str(), chunks.c_str(),
                human_bytes(decoded).c_str(), human_bytes(stored).c_str(), stored > 0 ? decoded / stored : 0.0);
  }
  std::string codec = o.codec.compressor + (o.codec.level >= 0 ? ":" + std::to_string(o.codec.level) : "") +
                      (o.codec.shuffle ? " + shuffle" : "");
  std::printf("\nsynth: wrote %s (Zarr v%d, %s): data %s decoded, %s stored, ratio %.2fx; %llu chunks in %.1f s (%s/s decoded)\n",
              local.c_str(), o.zarr_format, codec.c_str(), human_bytes(all_decoded).c_str(), human_bytes(all_stored).c_str(),
              all_stored > 0 ? all_decoded / all_stored : 0.0,
              static_cast<unsigned long long>(progress.chunks_written.load() + progress.chunks_skipped.load()), secs,
              human_bytes(secs > 0 ? static_cast<double>(progress.done_bytes.load()) / secs : 0).c_str());
  return 0;
}

}  // namespace cubestream::cli
