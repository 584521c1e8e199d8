// `cubestream rechunk SRC DST [options]`: copies a Zarr store (every array with its groups and
// attributes, or one array) into a new Zarr v3 or v2 store with other chunks, shards and
// codecs, out of core and in parallel (src/zarr/rechunk.hpp has the plan).
#include <chrono>
#include <cstdio>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cli/write_options.hpp"
#include "cubestream/error.hpp"
#include "zarr/rechunk.hpp"

namespace cubestream::cli {

const char* kRechunkUsage =
    "usage: cubestream rechunk SRC DST [--chunks time=1,level=1] [--shards time=64] [--codec zstd:3]\n"
    "         [--shuffle | --bitshuffle] [--checksum] [--index-location end|start] [--format 3|2]\n"
    "         [--array PATH] [--memory 2G] [--threads N] [--overwrite | --resume] [--part i/n]\n"
    "         [--progress | --no-progress]\n"
    "  --chunks   chunk size per dimension name (or axis number); -1 = whole axis; axes not\n"
    "             named keep the source's chunk size; 1-d coordinates become one chunk\n"
    "  --shards   shard size (elements, a multiple of the chunk) per dimension; v3 only\n"
    "  --codec    zstd[:level] blosc-lz4|blosc-lz4hc|blosc-zstd|blosc-zlib[:clevel] gzip|zlib[:level] lz4 none\n"
    "  --shuffle  byte shuffle before compression (zstd/lz4 then travel in a blosc container)\n"
    "  --memory   bound on the data held in memory (K/M/G suffixes), default 2G\n"
    "  --resume   finish an interrupted run: chunks already written and decoding are skipped\n"
    "  --part i/n write part i of n disjoint parts (for n machines or processes)\n";

int run_rechunk(int argc, char** argv) {
  for (int i = 2; i < argc; ++i) {
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::fputs(kRechunkUsage, stdout);
      return 0;
    }
  }
  const Args args(argc, argv, 2, {"shuffle", "bitshuffle", "checksum", "overwrite", "resume", "progress", "no-progress"});
  if (auto u = args.unknown({"chunks", "shards", "codec", "shuffle", "bitshuffle", "checksum", "index-location", "format", "array",
                             "memory", "threads", "overwrite", "resume", "part", "progress", "no-progress"});
      !u.empty())
    throw std::invalid_argument("rechunk: unknown option --" + u.front() + "\n" + kRechunkUsage);
  if (args.positionals().size() != 2) throw std::invalid_argument(kRechunkUsage);
  zarr::RechunkOptions o;
  o.zarr_format = static_cast<int>(args.get_int("format", 3));
  o.chunks = parse_sizes(args.get("chunks", ""), "--chunks");
  o.shards = parse_sizes(args.get("shards", ""), "--shards");
  parse_codec(args.get("codec", "zstd:3"), o.codec);
  o.codec.shuffle = args.has("shuffle");
  o.codec.bitshuffle = args.has("bitshuffle");
  o.codec.checksum = args.has("checksum");
  const std::string loc = args.get("index-location", "end");
  if (loc != "end" && loc != "start") throw std::invalid_argument("--index-location must be end or start");
  o.codec.index_at_start = loc == "start";
  o.memory_bytes = parse_bytes(args.get("memory", "2G"), "--memory");
  o.threads = static_cast<int>(args.get_int("threads", 0));
  if (args.has("overwrite") && args.has("resume")) throw std::invalid_argument("--overwrite and --resume exclude each other");
  if (args.has("overwrite")) o.existing = zarr::ExistingTarget::kOverwrite;
  if (args.has("resume")) o.existing = zarr::ExistingTarget::kResume;
  if (args.has("part")) parse_part(args.get("part", ""), &o.part, &o.parts);
  o.array = args.get("array", "");

  const std::string dst_path = args.positionals()[1];
  if (dst_path.find("://") != std::string::npos && dst_path.rfind("file://", 0) != 0)
    throw std::invalid_argument("rechunk: the target must be a local directory (object stores are read-only here)");
  auto src = open_store(args.positionals()[0]);
  auto dst = open_writable_file_store(dst_path.rfind("file://", 0) == 0 ? dst_path.substr(7) : dst_path);

  zarr::RechunkProgress progress;
  const bool show = args.has("progress") || (::isatty(2) && !args.has("no-progress"));
  const auto t0 = std::chrono::steady_clock::now();
  {
    ProgressBar bar(progress.done_bytes, progress.total_bytes, show);
    bool started = false;
    try {
      zarr::rechunk(src, dst, o, progress, [&](const zarr::RechunkPlanInfo& p) {
        started = true;
        std::fprintf(stderr, "%s%s: chunks %s%s%s, %d worker%s%s\n", show && ::isatty(2) ? "\r" : "", p.path.empty() ? "(root)" : p.path.c_str(),
                     shape_text(p.chunks).c_str(), p.shards.empty() ? "" : " in shards ", p.shards.empty() ? "" : shape_text(p.shards).c_str(),
                     p.workers, p.workers == 1 ? "" : "s", p.streamed_shards ? ", shards streamed inner box by inner box" : "");
      });
    } catch (...) {
      bar.finish();
      if (started)
        std::fprintf(stderr, "cubestream rechunk: stopped; chunks written so far are complete: run again with --resume to finish\n");
      throw;
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("rechunk: %llu chunks written, %llu already there (verified), %llu rewritten; %s in %.1f s (%s/s); %s stored\n",
              static_cast<unsigned long long>(progress.chunks_written.load()),
              static_cast<unsigned long long>(progress.chunks_skipped.load()),
              static_cast<unsigned long long>(progress.chunks_rewritten.load()),
              human_bytes(static_cast<double>(progress.done_bytes.load())).c_str(), secs,
              human_bytes(secs > 0 ? static_cast<double>(progress.done_bytes.load()) / secs : 0).c_str(),
              human_bytes(static_cast<double>(progress.stored_bytes.load())).c_str());
  return 0;
}

}  // namespace cubestream::cli
