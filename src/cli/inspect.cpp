// `cubestream inspect STORE`: the tree of groups and arrays with dims, shape, dtype, chunk
// and shard shape, codec chain, stored vs decoded size, and advice where chunks fall outside
// the 1-100 MB (compressed) range that suits streaming reads.
#include <cinttypes>
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

namespace cubestream::cli {

namespace {

struct SizeSurvey {
  std::uint64_t chunks_total = 0;    // grid positions of the outer grid
  std::uint64_t chunks_present = 0;  // of those, with a stored value
  std::uint64_t stored_bytes = 0;
  bool estimated = false;            // surveyed a sample of the grid
};

// Stats every chunk key (or, past 20000 chunks, an even sample of them).
SizeSurvey survey(const Array& a) {
  const auto& m = a.metadata();
  SizeSurvey s;
  const ChunkGrid grid = ChunkGrid::of(m);
  s.chunks_total = grid.count;
  if (s.chunks_total == 0) return s;
  constexpr std::uint64_t kMaxStat = 20000;
  const std::uint64_t step = s.chunks_total > kMaxStat ? s.chunks_total / kMaxStat : 1;
  s.estimated = step > 1;
  std::uint64_t visited = 0;
  for (std::uint64_t flat = 0; flat < s.chunks_total; flat += step, ++visited) {
    const auto idx = grid.position(flat);
    if (auto size = a.store().size(a.chunk_key(idx))) {
      ++s.chunks_present;
      s.stored_bytes += *size;
    }
  }
  if (s.estimated && visited > 0) {
    s.stored_bytes = s.stored_bytes * s.chunks_total / visited;
    s.chunks_present = s.chunks_present * s.chunks_total / visited;
  }
  return s;
}

std::string codec_chain_text(const nlohmann::json& codecs) {
  std::string out;
  for (const auto& c : codecs) {
    if (!out.empty()) out += " -> ";
    out += c.value("name", "?");
    const auto& cfg = c.value("configuration", nlohmann::json::object());
    if (c.value("name", "") == "sharding_indexed") {
      out += "[inner: " + codec_chain_text(cfg.value("codecs", nlohmann::json::array())) + "; index " +
             cfg.value("index_location", std::string("end")) + "]";
      continue;
    }
    std::string args;
    for (auto it = cfg.begin(); it != cfg.end(); ++it) {
      if (!args.empty()) args += ", ";
      args += it.key() + "=" + (it.value().is_string() ? it.value().get<std::string>() : it.value().dump());
    }
    if (!args.empty()) out += "(" + args + ")";
  }
  return out;
}

struct ArrayReport {
  nlohmann::json json;
  std::vector<std::string> lines;
};

ArrayReport report_array(const Array& a, const std::string& name) {
  const auto& m = a.metadata();
  ArrayReport r;
  const std::size_t rank = m.shape.size();
  std::string dims = "(";
  for (std::size_t d = 0; d < rank; ++d) {
    if (d) dims += ", ";
    std::string dn = d < m.dimension_names.size() && !m.dimension_names[d].empty() ? m.dimension_names[d] : "dim_" + std::to_string(d);
    dims += dn + ": " + std::to_string(m.shape[d]);
  }
  dims += ")";
  const SizeSurvey s = survey(a);
  std::uint64_t elems = 1;
  for (auto x : m.shape) elems *= static_cast<std::uint64_t>(x);
  const std::uint64_t decoded = elems * m.dtype.size;
  // One "read unit" is what a reader fetches and decodes at once: an inner chunk if sharded.
  std::vector<std::int64_t> unit = m.inner_chunk_shape ? *m.inner_chunk_shape : m.chunk_shape;
  std::uint64_t units_per_chunk = 1, unit_elems = 1;
  for (std::size_t d = 0; d < rank; ++d) {
    units_per_chunk *= static_cast<std::uint64_t>(m.chunk_shape[d] / unit[d]);
    unit_elems *= static_cast<std::uint64_t>(unit[d]);
  }
  const std::uint64_t unit_decoded = unit_elems * m.dtype.size;
  const double ratio = s.stored_bytes ? static_cast<double>(decoded) / static_cast<double>(s.stored_bytes) : 0.0;
  const double unit_stored = s.chunks_present ? static_cast<double>(s.stored_bytes) / static_cast<double>(s.chunks_present * units_per_chunk) : 0.0;

  r.lines.push_back(name + "  " + m.dtype.name() + " " + dims);
  r.lines.push_back("  chunks " + shape_text(m.chunk_shape) +
                    (m.inner_chunk_shape ? " (shards) of inner chunks " + shape_text(*m.inner_chunk_shape) : std::string()) +
                    "  fill " + fill_text(m));
  r.lines.push_back("  codecs " + codec_chain_text(m.codecs));
  r.lines.push_back("  stored " + human_bytes(static_cast<double>(s.stored_bytes)) + " of " + human_bytes(static_cast<double>(decoded)) +
                    " decoded (ratio " + fixed(ratio, 2) + "x); " + std::to_string(s.chunks_present) + "/" +
                    std::to_string(s.chunks_total) + (m.inner_chunk_shape ? " shards" : " chunks") + " stored" +
                    (s.estimated ? " (estimated from a sample)" : ""));
  std::string advice;
  constexpr double kMB = 1e6;
  if (s.chunks_present == 0) {
    advice = "no chunk is stored: every read returns the fill value";
  } else if (static_cast<double>(s.stored_bytes) < kMB) {
    advice = "";  // the whole array is under 1 MB: chunk size does not matter
  } else if (unit_stored < kMB) {
    advice = "chunks average " + human_bytes(unit_stored) +
             " compressed, under 1 MB: per-chunk costs (requests, decoder calls) dominate; use larger chunks" +
             (m.inner_chunk_shape ? std::string() : std::string(" or shard them"));
  } else if (unit_stored > 100 * kMB) {
    advice = "chunks average " + human_bytes(unit_stored) +
             " compressed, over 100 MB: a small patch decodes far more than it needs; use smaller (inner) chunks";
  }
  if (!advice.empty()) r.lines.push_back("  advice: " + advice);

  r.json = {{"path", a.path()},
            {"dtype", m.dtype.name()},
            {"shape", m.shape},
            {"dims", m.dimension_names},
            {"chunk_shape", m.chunk_shape},
            {"zarr_format", m.zarr_format},
            {"codecs", m.codecs},
            {"stored_bytes", s.stored_bytes},
            {"decoded_bytes", decoded},
            {"ratio", ratio},
            {"chunks_total", s.chunks_total},
            {"chunks_stored", s.chunks_present},
            {"read_unit_decoded_bytes", unit_decoded},
            {"read_unit_stored_bytes_avg", unit_stored},
            {"estimated", s.estimated},
            {"advice", advice}};
  if (m.inner_chunk_shape) r.json["inner_chunk_shape"] = *m.inner_chunk_shape;
  return r;
}

void walk(const Group& g, const std::string& indent, std::vector<std::string>& lines, nlohmann::json& node) {
  node["path"] = g.path();
  node["attributes"] = g.attributes();
  node["arrays"] = nlohmann::json::array();
  node["groups"] = nlohmann::json::array();
  for (const auto& name : g.array_names()) {
    auto r = report_array(g.open_array(name), name);
    for (std::size_t i = 0; i < r.lines.size(); ++i) lines.push_back(indent + (i == 0 ? "* " : "  ") + r.lines[i]);
    node["arrays"].push_back(r.json);
  }
  for (const auto& name : g.group_names()) {
    Group child = g.open_group(name);
    lines.push_back(indent + "+ " + name + "/ (group, " + std::to_string(child.attributes().size()) + " attributes)");
    nlohmann::json sub;
    walk(child, indent + "    ", lines, sub);
    node["groups"].push_back(sub);
  }
}

}  // namespace

int run_inspect(int argc, char** argv) {
  Args args(argc, argv, 2, {"json"});
  if (args.positionals().size() != 1) throw std::invalid_argument("usage: cubestream inspect STORE [--json]");
  for (const auto& u : args.unknown({"json"})) throw std::invalid_argument("inspect: unknown option --" + u);
  auto store = open_store(args.positionals()[0]);
  std::vector<std::string> lines;
  nlohmann::json root;
  try {
    Group g = Group::open(store, "");
    lines.push_back(store->describe() + "  (Zarr v" + std::to_string(g.zarr_format()) + " group" +
                    (g.consolidated() ? ", consolidated metadata" : "") + ", " + std::to_string(g.attributes().size()) +
                    " attributes)");
    root["zarr_format"] = g.zarr_format();
    root["consolidated"] = g.consolidated();
    walk(g, "", lines, root);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kNotFound) throw;
    Array a = Array::open(store, "");  // the store root may be a single array
    auto r = report_array(a, "/");
    lines.push_back(store->describe() + "  (Zarr v" + std::to_string(a.metadata().zarr_format) + " array)");
    for (auto& l : r.lines) lines.push_back(l);
    root = r.json;
  }
  if (args.has("json")) {
    root["store"] = store->describe();
    std::printf("%s\n", root.dump(2).c_str());
  } else {
    for (const auto& l : lines) std::printf("%s\n", l.c_str());
  }
  return 0;
}

}  // namespace cubestream::cli
