// The `cubestream` command: dispatches to a subcommand and turns errors into messages and
// exit codes (1: a cubestream error, 2: a usage error).
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

#include "cli/commands.hpp"
#include "cubestream/error.hpp"

namespace {

void usage(std::FILE* to) {
  std::fprintf(to,
               "usage: cubestream <command> [options]\n\n"
               "commands:\n"
               "  inspect STORE [--json]      tree of groups and arrays: dims, shape, dtype, chunks,\n"
               "                              shards, codecs, stored vs decoded size, chunk-size advice\n"
               "  bench read STORE [--array PATH] [--threads N] [--repeat R] [--json]\n"
               "        [--decode cpu|gpu|auto]  read whole arrays into host memory and report GB/s\n"
               "                              (chunks decoded on the host or on a GPU)\n"
               "  stats STORE [STORE...] [--variables a,b] [--threads N] [--output PATH] [--print]\n"
               "                              mean/std per variable and channel for the loader's\n"
               "                              normalisation, stored as STORE/cubestream_stats.json\n"
               "  rechunk SRC DST [--chunks time=1] [--shards time=64] [--codec zstd:3] [--shuffle]\n"
               "          [--format 3|2] [--memory 2G] [--threads N] [--overwrite|--resume] [--part i/n]\n"
               "                              copy a store into new chunks, shards and codecs, out of\n"
               "                              core (cubestream rechunk --help for every option)\n"
               "  convert FILE.nc [FILE.nc...] DST [--chunks ...] [--codec ...] [--format 3|2]\n"
               "                              netCDF-4/HDF5 (and netCDF-3) files into one Zarr store,\n"
               "                              joined along the record (time) dimension\n"
               "  advise STORE --patch lat=128,lon=128 [--window -1,0,+1] [--variables a,b]\n"
               "                              chunk, shard and codec advice for an access pattern\n"
               "  synth DST [--grid 0.25|1.5] [--times N | --size 10G] [--format 2|3] [--seed 0]\n"
               "                              write a synthetic ERA5-like store (WeatherBench2 layout,\n"
               "                              GRIB-quantised float32; cubestream synth --help)\n"
               "  info [PATH]                 version, build features, visible GPUs, and how files\n"
               "                              under PATH are read (engine, depth, pieces and why)\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "help")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  try {
    if (cmd == "inspect") return cubestream::cli::run_inspect(argc, argv);
    if (cmd == "bench") return cubestream::cli::run_bench(argc, argv);
    if (cmd == "info") return cubestream::cli::run_info(argc, argv);
    if (cmd == "stats") return cubestream::cli::run_stats(argc, argv);
    if (cmd == "rechunk") return cubestream::cli::run_rechunk(argc, argv);
    if (cmd == "convert") return cubestream::cli::run_convert(argc, argv);
    if (cmd == "advise") return cubestream::cli::run_advise(argc, argv);
    if (cmd == "synth") return cubestream::cli::run_synth(argc, argv);
    std::fprintf(stderr, "cubestream: unknown command '%s'\n\n", cmd.c_str());
    usage(stderr);
    return 2;
  } catch (const cubestream::Error& e) {
    std::fprintf(stderr, "cubestream: error: %s\n", e.what());
    return 1;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "cubestream: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cubestream: unexpected error: %s\n", e.what());
    return 1;
  }
}
