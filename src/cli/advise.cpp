// `cubestream advise STORE --patch latitude=128,longitude=128 [--window -1,0,+1]
//  [--variables a,b] [--time-dim time] [--json]`: chunk, shard and codec advice for an
// access pattern, with the numbers behind it.
//
// The pattern: one training sample reads, for each variable in --variables (default: every
// data variable),
//   - along each dimension named in --patch: a window of that many consecutive elements at a
//     uniformly random position;
//   - along the time dimension (--time-dim, default "time"): the steps t + w for each offset w
//     in --window (default 0: one step), t uniformly random;
//   - along every other dimension: all of it (e.g. every pressure level), unless --patch names
//     it.
// For a chunk size c and a window of s consecutive elements, the number of chunks touched is
// averaged exactly over the c possible alignments of the window to the chunk grid:
// E = mean over r in [0, c) of (floor((r + s - 1) / c) + 1); for a set of offsets it is the
// mean number of distinct chunks floor((r + w) / c). Chunks per sample multiply over the
// dimensions; bytes read per sample = chunks per sample * decoded chunk bytes; read
// amplification = bytes read / bytes the sample uses.
//
// Recommendation: among chunk shapes built from powers of two (and the window and the whole
// axis) along the patch dimensions, 1..span along time and the whole axis elsewhere, the one
// with the least cost = bytes read + 256 KiB per chunk read (what one more request and decode
// launch costs, in bytes at GPU-decode speed), preferring chunks of 1-100 MB decoded (the
// usual rule: smaller chunks drown in per-object overhead, larger ones waste reads). Shards
// group chunks along time to about 256 MB objects. Codecs are measured on a chunk of the data.
#include <algorithm>
#include <chrono>
#include <functional>
#include <cmath>
#include <cstdio>
#include <set>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cli/format.hpp"
#include "cli/write_options.hpp"
#include "codec/chain.hpp"
#include "cubestream/dataset.hpp"
#include "cubestream/error.hpp"
#include "cubestream/writer.hpp"

namespace cubestream::cli {

namespace {

using Shape = std::vector<std::int64_t>;

// Expected distinct chunks of size c touched by offsets (relative to a random start).
double expected_chunks(std::int64_t c, const std::vector<std::int64_t>& offsets) {
  const std::int64_t lo = *std::min_element(offsets.begin(), offsets.end());
  double sum = 0;
  for (std::int64_t r = 0; r < c; ++r) {
    std::set<std::int64_t> hit;
    for (auto w : offsets) hit.insert((r + w - lo) / c);
    sum += static_cast<double>(hit.size());
  }
  return sum / static_cast<double>(c);
}

std::vector<std::int64_t> window_offsets(std::int64_t s) {
  std::vector<std::int64_t> o(static_cast<std::size_t>(std::max<std::int64_t>(s, 1)));
  for (std::size_t i = 0; i < o.size(); ++i) o[i] = static_cast<std::int64_t>(i);
  return o;
}

struct Access {
  std::vector<std::vector<std::int64_t>> offsets;  // per axis: the elements a sample reads
  double used_elements = 1;
};

Access access_of(const Variable& v, const Shape& shape, const std::map<std::string, std::int64_t>& patch,
                 const std::vector<std::int64_t>& window, const std::string& time_dim) {
  Access a;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    const std::string& dim = v.dims[d];
    std::vector<std::int64_t> o;
    if (auto it = patch.find(dim); it != patch.end()) o = window_offsets(std::min(it->second, shape[d]));
    else if (dim == time_dim) o = window;
    else o = window_offsets(shape[d]);
    a.used_elements *= static_cast<double>(o.size());
    a.offsets.push_back(std::move(o));
  }
  return a;
}

struct Numbers {
  double chunks_per_sample = 1, bytes_read = 0, amplification = 0, chunk_bytes = 0;
};

Numbers numbers(const Access& a, const Shape& chunk, std::size_t elem) {
  Numbers n;
  n.chunk_bytes = static_cast<double>(elem);
  for (std::size_t d = 0; d < chunk.size(); ++d) {
    n.chunks_per_sample *= expected_chunks(chunk[d], a.offsets[d]);
    n.chunk_bytes *= static_cast<double>(chunk[d]);
  }
  n.bytes_read = n.chunks_per_sample * n.chunk_bytes;
  n.amplification = n.bytes_read / (a.used_elements * static_cast<double>(elem));
  return n;
}

std::string rule_text(double bytes) {
  if (bytes < 1e6) return "below 1 MB: per-object overhead dominates";
  if (bytes > 100e6) return "above 100 MB: reads waste data, memory per chunk grows";
  return "within 1-100 MB";
}

struct CodecResult {
  std::string name, flags;
  double ratio = 0, encode_mbs = 0, decode_mbs = 0;
};

CodecResult measure(const std::string& label, const std::string& flags, const CodecChoice& choice, const DataType& dt, const Bytes& data,
                    const Shape& shape) {
  auto chain = codec::CodecChain::from_json(v3_codecs(choice, dt));
  codec::ChunkSpec spec{dt, shape, std::vector<std::uint8_t>(dt.size, 0)};
  using clock = std::chrono::steady_clock;
  // Best of three after a warm-up run (contexts allocated, pages touched).
  Bytes enc = chain.encode(ByteView(data.data(), data.size()), spec);
  Bytes out(data.size());
  chain.decode(ByteView(enc.data(), enc.size()), spec, MutableByteView(out.data(), out.size()));
  double enc_s = 1e30, dec_s = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    auto t0 = clock::now();
    enc = chain.encode(ByteView(data.data(), data.size()), spec);
    auto t1 = clock::now();
    chain.decode(ByteView(enc.data(), enc.size()), spec, MutableByteView(out.data(), out.size()));
    auto t2 = clock::now();
    enc_s = std::min(enc_s, std::chrono::duration<double>(t1 - t0).count());
    dec_s = std::min(dec_s, std::chrono::duration<double>(t2 - t1).count());
  }
  const double mb = static_cast<double>(data.size()) / 1e6;
  return {label, flags, static_cast<double>(data.size()) / static_cast<double>(std::max<std::size_t>(enc.size(), 1)),
          mb / std::max(1e-9, enc_s), mb / std::max(1e-9, dec_s)};
}

}  // namespace

const char* kAdviseUsage =
    "usage: cubestream advise STORE --patch DIM=N[,DIM=N...] [--window W[,W...]] [--variables a,b]\n"
    "         [--time-dim time] [--json]\n"
    "  the access pattern of one sample, per variable read:\n"
    "  --patch      window of N consecutive elements along each named dimension, at a random\n"
    "               position (e.g. latitude=128,longitude=128)\n"
    "  --window     time offsets read around a random step t along --time-dim, e.g. -1,0,+1\n"
    "               (default 0: one step); dimensions named in neither are read whole\n"
    "  --variables  variables read per sample (default: every data variable)\n"
    "  prints per variable: chunks touched per sample (averaged over window alignments), bytes\n"
    "  read per sample, read amplification, chunk size against the 1-100 MB rule, for the\n"
    "  current and the recommended chunks; shards of ~256 MB; codecs measured on the data; and\n"
    "  the `cubestream rechunk` command that applies the advice\n";

int run_advise(int argc, char** argv) {
  for (int i = 2; i < argc; ++i)
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::fputs(kAdviseUsage, stdout);
      return 0;
    }
  const Args args(argc, argv, 2, {"json"});
  if (auto u = args.unknown({"patch", "window", "variables", "time-dim", "json"}); !u.empty())
    throw std::invalid_argument("advise: unknown option --" + u.front());
  if (args.positionals().size() != 1) throw std::invalid_argument(kAdviseUsage);
  const auto patch = parse_sizes(args.get("patch", ""), "--patch");
  std::vector<std::int64_t> window;
  {
    for (const auto& w : comma_list(args.get("window", "0"))) window.push_back(parse_int(w[0] == '+' ? w.substr(1) : w, "--window"));
    if (window.empty()) window = {0};
  }
  const std::string time_dim = args.get("time-dim", "time");
  auto ds = Dataset::open(open_store(args.positionals()[0]));
  std::vector<std::string> vars;
  if (args.has("variables")) {
    vars = comma_list(args.get("variables", ""));
  } else {
    vars = ds.data_variable_names();
  }
  for (const auto& [dim, size] : patch)
    if (size < 1) throw std::invalid_argument("--patch: size for '" + dim + "' must be >= 1");
  const std::int64_t span = *std::max_element(window.begin(), window.end()) - *std::min_element(window.begin(), window.end()) + 1;

  nlohmann::json report = {{"pattern", {{"patch", patch}, {"window", window}, {"time_dim", time_dim}, {"variables", vars}}},
                           {"variables", nlohmann::json::array()}};
  double total_now = 0, total_best = 0, used_total = 0;
  Shape best_chunk_first, best_shard_first;
  std::vector<std::string> best_dims;
  for (const auto& name : vars) {
    const Variable& v = ds.variable(name);
    const Array& a = v.array;
    const Shape& shape = a.shape();
    const std::size_t elem = a.dtype().size;
    const Access acc = access_of(v, shape, patch, window, time_dim);
    const Shape now_chunk = a.unit_shape();
    const Numbers now = numbers(acc, now_chunk, elem);
    // Candidates per axis.
    std::vector<std::vector<std::int64_t>> cand(shape.size());
    for (std::size_t d = 0; d < shape.size(); ++d) {
      std::set<std::int64_t> c;
      const std::string& dim = v.dims[d];
      if (patch.count(dim)) {
        for (std::int64_t p = 8; p < shape[d]; p *= 2) c.insert(p);
        c.insert(std::min(patch.at(dim), shape[d]));
        c.insert(shape[d]);
      } else if (dim == time_dim) {
        for (std::int64_t p = 1; p <= std::max<std::int64_t>(span, 1) * 4 && p <= shape[d]; p *= 2) c.insert(p);
        c.insert(std::min(span, shape[d]));
      } else {
        c.insert(shape[d]);
        c.insert(1);
      }
      cand[d].assign(c.begin(), c.end());
    }
    constexpr double kPerChunk = 256 * 1024;
    Shape best;
    double best_cost = 0;
    bool best_in_rule = false;
    Shape cur(shape.size());
    std::function<void(std::size_t)> walk = [&](std::size_t d) {
      if (d == shape.size()) {
        const Numbers n = numbers(acc, cur, elem);
        const bool in_rule = n.chunk_bytes >= 1e6 && n.chunk_bytes <= 100e6;
        const double cost = n.bytes_read + kPerChunk * n.chunks_per_sample;
        if (best.empty() || (in_rule && !best_in_rule) || (in_rule == best_in_rule && cost < best_cost)) {
          best = cur;
          best_cost = cost;
          best_in_rule = in_rule;
        }
        return;
      }
      for (auto c : cand[d]) {
        cur[d] = c;
        walk(d + 1);
      }
    };
    walk(0);
    const Numbers rec = numbers(acc, best, elem);
    // Shards: whole chunks grouped along time to about 256 MB.
    Shape shard = best;
    for (std::size_t d = 0; d < shape.size(); ++d) {
      if (v.dims[d] != time_dim) continue;
      while (rec.chunk_bytes * static_cast<double>(shard[d] * 2 / best[d]) <= 256e6 && shard[d] * 2 <= shape[d]) shard[d] *= 2;
    }
    double shard_bytes = rec.chunk_bytes;
    for (std::size_t d = 0; d < shape.size(); ++d) shard_bytes *= static_cast<double>(shard[d] / best[d]);
    total_now += now.bytes_read;
    total_best += rec.bytes_read;
    used_total += acc.used_elements * static_cast<double>(elem);
    if (best_chunk_first.empty()) {
      best_chunk_first = best;
      best_shard_first = shard;
      best_dims = v.dims;
    }
    report["variables"].push_back(
        {{"name", name},
         {"dims", v.dims},
         {"shape", shape},
         {"bytes_used_per_sample", acc.used_elements * static_cast<double>(elem)},
         {"current", {{"chunks", now_chunk}, {"chunk_bytes", now.chunk_bytes}, {"chunks_per_sample", now.chunks_per_sample},
                      {"bytes_read_per_sample", now.bytes_read}, {"read_amplification", now.amplification}, {"rule", rule_text(now.chunk_bytes)}}},
         {"recommended", {{"chunks", best}, {"shards", shard}, {"shard_bytes", shard_bytes}, {"chunk_bytes", rec.chunk_bytes}, {"chunks_per_sample", rec.chunks_per_sample},
                          {"bytes_read_per_sample", rec.bytes_read}, {"read_amplification", rec.amplification}, {"rule", rule_text(rec.chunk_bytes)}}}});
  }

  // Codecs, measured on one recommended chunk of the first variable (read from the store).
  nlohmann::json codecs = nlohmann::json::array();
  if (!vars.empty()) {
    const Variable& v = ds.variable(vars[0]);
    Region r;
    for (std::size_t d = 0; d < best_chunk_first.size(); ++d) {
      r.start.push_back(0);
      r.shape.push_back(std::min(best_chunk_first[d], v.array.shape()[d]));
    }
    Bytes data(static_cast<std::size_t>(r.num_elements()) * v.array.dtype().size);
    v.array.read(r, data.data(), data.size());
    struct Try {
      const char* label;
      const char* flags;
      CodecChoice c;
    };
    std::vector<Try> tries;
    auto add = [&](const char* label, const char* flags, const char* comp, int level, bool shuffle) {
      CodecChoice c;
      c.compressor = comp;
      c.level = level;
      c.shuffle = shuffle;
      tries.push_back({label, flags, c});
    };
    add("zstd level 3", "--codec zstd:3", "zstd", 3, false);
    add("zstd level 3 + byte shuffle", "--codec zstd:3 --shuffle", "zstd", 3, true);
    add("blosc lz4 + byte shuffle", "--codec blosc-lz4:5 --shuffle", "blosc-lz4", 5, true);
    add("gzip level 6", "--codec gzip:6", "gzip", 6, false);
    for (const auto& t : tries) {
      auto m = measure(t.label, t.flags, t.c, v.array.dtype(), data, r.shape);
      codecs.push_back({{"codec", m.name}, {"flags", m.flags}, {"ratio", m.ratio}, {"encode_MBps", m.encode_mbs}, {"decode_MBps", m.decode_mbs}});
    }
  }
  report["codecs"] = codecs;
  // The codec advice: the best ratio among codecs that decode at >= 500 MB/s on one core here
  // (GPU and multi-core decoding scale from that), else the fastest.
  std::string codec_flags = "--codec zstd:3 --shuffle";
  double best_ratio = 0;
  for (const auto& c : codecs)
    if (c["decode_MBps"].get<double>() >= 500 && c["ratio"].get<double>() > best_ratio) {
      best_ratio = c["ratio"].get<double>();
      codec_flags = c["flags"].get<std::string>();
    }
  std::string chunks_arg, shards_arg;
  for (std::size_t d = 0; d < best_dims.size(); ++d) {
    chunks_arg += (chunks_arg.empty() ? "" : ",") + best_dims[d] + "=" + std::to_string(best_chunk_first[d]);
    if (best_shard_first[d] != best_chunk_first[d])
      shards_arg += (shards_arg.empty() ? "" : ",") + best_dims[d] + "=" + std::to_string(best_shard_first[d]);
  }
  const std::string command = "cubestream rechunk " + args.positionals()[0] + " OUT.zarr --chunks " + chunks_arg +
                              (shards_arg.empty() ? "" : " --shards " + shards_arg) + " " + codec_flags;
  report["command"] = command;
  report["bytes_read_per_sample"] = {{"current", total_now}, {"recommended", total_best}, {"used", used_total}};

  if (args.has("json")) {
    std::printf("%s\n", report.dump(2).c_str());
    return 0;
  }
  std::printf("pattern: patch %s, time offsets %s along '%s', %zu variable(s); a sample uses %s\n\n", nlohmann::json(patch).dump().c_str(),
              nlohmann::json(window).dump().c_str(), time_dim.c_str(), vars.size(), human_bytes(used_total).c_str());
  for (const auto& v : report["variables"]) {
    std::printf("%s %s %s\n", v["name"].get<std::string>().c_str(), shape_text(v["shape"].get<Shape>()).c_str(),
                nlohmann::json(v["dims"]).dump().c_str());
    for (const char* which : {"current", "recommended"}) {
      const auto& n = v[which];
      std::printf("  %-11s chunks %-22s %9s/chunk (%s)\n", which, shape_text(n["chunks"].get<Shape>()).c_str(),
                  human_bytes(n["chunk_bytes"].get<double>()).c_str(), n["rule"].get<std::string>().c_str());
      std::printf("  %-11s %.2f chunks/sample, %s read/sample, read amplification %.2fx\n", "",
                  n["chunks_per_sample"].get<double>(), human_bytes(n["bytes_read_per_sample"].get<double>()).c_str(),
                  n["read_amplification"].get<double>());
    }
    std::printf("  shards      %s (about %s per object)\n\n", shape_text(v["recommended"]["shards"].get<Shape>()).c_str(),
                human_bytes(v["recommended"]["shard_bytes"].get<double>()).c_str());
  }
  std::printf("codecs on one recommended chunk of '%s' (one core):\n", vars.empty() ? "" : vars[0].c_str());
  for (const auto& c : codecs)
    std::printf("  %-30s ratio %5.2f  encode %7.0f MB/s  decode %7.0f MB/s\n", c["codec"].get<std::string>().c_str(), c["ratio"].get<double>(),
                c["encode_MBps"].get<double>(), c["decode_MBps"].get<double>());
  std::printf("\nbytes read per sample: %s now, %s with the recommended chunks (the sample uses %s)\n", human_bytes(total_now).c_str(),
              human_bytes(total_best).c_str(), human_bytes(used_total).c_str());
  std::printf("to apply:\n  %s\n", command.c_str());
  return 0;
}

}  // namespace cubestream::cli
