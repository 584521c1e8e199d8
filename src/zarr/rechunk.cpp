// The rechunk engine (see rechunk.hpp for the plan and its reasons).
#include "zarr/rechunk.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <numeric>
#include <thread>

#include "core/strided_copy.hpp"
#include "core/thread_pool.hpp"
#include "cubestream/array.hpp"
#include "cubestream/error.hpp"
#include "cubestream/group.hpp"

namespace cubestream::zarr {

namespace {

[[noreturn]] void bad(const std::string& why) { throw Error(ErrorCode::kInvalidArgument, why); }

using Shape = std::vector<std::int64_t>;

std::int64_t prod(const Shape& s) {
  std::int64_t n = 1;
  for (auto v : s) n *= v;
  return n;
}

std::string shape_str(const Shape& s) {
  std::string o = "(";
  for (std::size_t i = 0; i < s.size(); ++i) o += (i ? ", " : "") + std::to_string(s[i]);
  return o + (s.size() == 1 ? ",)" : ")");
}

// base64 (RFC 4648) of bytes: xarray stores a float _FillValue attribute in Zarr v3 this way.
std::string base64(const std::uint8_t* p, std::size_t n) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string o;
  for (std::size_t i = 0; i < n; i += 3) {
    std::uint32_t v = static_cast<std::uint32_t>(p[i]) << 16;
    if (i + 1 < n) v |= static_cast<std::uint32_t>(p[i + 1]) << 8;
    if (i + 2 < n) v |= p[i + 2];
    o += k[(v >> 18) & 63];
    o += k[(v >> 12) & 63];
    o += i + 1 < n ? k[(v >> 6) & 63] : '=';
    o += i + 2 < n ? k[v & 63] : '=';
  }
  return o;
}

// CF attributes when the format changes. Zarr v2 (xarray) keeps a variable's _FillValue in the
// array's fill_value and its dimension names in "_ARRAY_DIMENSIONS"; Zarr v3 keeps names in
// dimension_names and (xarray) _FillValue as an attribute: a number for integers, base64 of
// the little-endian float64 for floats.
nlohmann::json target_attributes(const ArrayMetadata& src, int target_format) {
  nlohmann::json a = src.attributes.is_object() ? src.attributes : nlohmann::json::object();
  a.erase("_ARRAY_DIMENSIONS");  // the writer adds it again for v2 from dimension_names
  if (src.zarr_format == 2 && target_format == 3 && !src.fill_value_is_null && !a.contains("_FillValue")) {
    const DataType& dt = src.dtype;
    const std::uint8_t* p = src.fill_value.data();
    if (dt.kind == DTypeKind::kFloat) {
      double d = 0;
      if (dt.size == 4) {
        float f;
        std::memcpy(&f, p, 4);
        d = f;
      } else if (dt.size == 8) {
        std::memcpy(&d, p, 8);
      }
      if (dt.size != 2) a["_FillValue"] = base64(reinterpret_cast<const std::uint8_t*>(&d), 8);
    } else if (dt.kind == DTypeKind::kInt || dt.kind == DTypeKind::kUInt) {
      a["_FillValue"] = fill_value_json_v2(src.fill_value, dt);
    }
  }
  return a;
}

std::int64_t lookup(const std::map<std::string, std::int64_t>& m, const std::string& dim, std::size_t axis, bool* found) {
  auto it = m.find(dim);
  if (dim.empty() || it == m.end()) it = m.find(std::to_string(axis));
  *found = it != m.end();
  return *found ? it->second : 0;
}

struct ArrayPlan {
  std::string path;
  SourceArray src;
  ArrayMetadata meta;      // the target's
  Shape chunks;            // (inner) chunk shape
  bool sharded = false;
  Shape grid;              // outer chunk grid
  Shape item;              // outer chunks per work item, per axis
  bool stream = false;     // shards written inner box by inner box
  Shape inner_box;         // inner chunks per streamed read, per axis
  int workers = 1;
};

std::vector<std::string> dims_of(const SourceArray& a) {
  std::vector<std::string> d = a.meta.dimension_names;
  if (d.empty()) d.assign(a.meta.shape.size(), "");
  return d;
}

ArrayMetadata target_metadata(const SourceArray& a, const RechunkOptions& o, Shape* chunks_out, bool* sharded) {
  const ArrayMetadata& s = a.meta;
  const std::size_t rank = s.shape.size();
  const auto dims = dims_of(a);
  // The source's chunk per axis: the unit it reads (inner chunk when sharded).
  Shape chunks = s.chunk_shape, shards;
  const std::string base = a.path.substr(a.path.rfind('/') + 1);
  const bool dim_coord = rank == 1 && !dims[0].empty() && base == dims[0];
  for (std::size_t d = 0; d < rank; ++d) {
    bool found = false;
    const std::int64_t v = lookup(o.chunks, dims[d], d, &found);
    if (found) {
      if (v == -1) chunks[d] = s.shape[d];
      else if (v >= 1) chunks[d] = v;
      else bad("--chunks: size " + std::to_string(v) + " for '" + (dims[d].empty() ? std::to_string(d) : dims[d]) + "' (use >= 1, or -1 for the whole axis)");
    }
    chunks[d] = std::max<std::int64_t>(1, std::min(chunks[d], std::max<std::int64_t>(s.shape[d], 1)));
  }
  // Coordinates are read whole by every reader: one chunk, no shards.
  if (dim_coord) chunks[0] = std::max<std::int64_t>(s.shape[0], 1);
  bool any_shard = false;
  shards = chunks;
  if (!dim_coord) {
    for (std::size_t d = 0; d < rank; ++d) {
      bool found = false;
      std::int64_t v = lookup(o.shards, dims[d], d, &found);
      if (!found) continue;
      any_shard = true;
      if (v == -1) v = (std::max<std::int64_t>(s.shape[d], 1) + chunks[d] - 1) / chunks[d] * chunks[d];
      if (v < 1 || v % chunks[d] != 0)
        bad("--shards: " + std::to_string(v) + " along '" + (dims[d].empty() ? std::to_string(d) : dims[d]) + "' of array '" + a.path +
            "' is not a multiple of its chunk size " + std::to_string(chunks[d]));
      shards[d] = v;
    }
  }
  if (any_shard && o.zarr_format != 3) bad("shards need Zarr v3 (--format 3)");
  ArrayMetadata m;
  m.zarr_format = o.zarr_format;
  m.shape = s.shape;
  m.dtype = s.dtype;
  m.fill_value = s.fill_value;
  m.fill_value_is_null = o.zarr_format == 2 && s.zarr_format == 2 && s.fill_value_is_null;
  m.dimension_names = s.dimension_names;
  m.attributes = target_attributes(s, o.zarr_format);
  CodecChoice c = o.codec;
  if (any_shard) c.inner_chunks = chunks;
  m.chunk_shape = any_shard ? shards : chunks;
  m.codecs = o.zarr_format == 3 ? v3_codecs(c, s.dtype) : v2_codecs(c, s.dtype);
  if (o.zarr_format == 2) {
    m.chunk_key_encoding = "v2";
    m.chunk_key_separator = '/';  // nested directories: fewer files per directory
  }
  *chunks_out = chunks;
  *sharded = any_shard;
  return m;
}

// Sizes the work items to the memory budget (see rechunk.hpp).
void size_items(ArrayPlan& p, const RechunkOptions& o) {
  const std::size_t rank = p.meta.shape.size();
  const std::uint64_t elem = p.meta.dtype.size;
  const Shape& outer = p.meta.chunk_shape;
  const Shape src_chunk = p.src.meta.chunk_shape;
  p.grid.resize(rank);
  for (std::size_t d = 0; d < rank; ++d) p.grid[d] = (p.meta.shape[d] + outer[d] - 1) / outer[d];
  // Item bytes: the region a box of `count` outer chunks covers, clipped to the array.
  auto box_bytes = [&](const Shape& count, const Shape& unit) {
    std::uint64_t n = elem;
    for (std::size_t d = 0; d < rank; ++d) n *= static_cast<std::uint64_t>(std::min(count[d] * unit[d], std::max<std::int64_t>(p.meta.shape[d], 1)));
    return n;
  };
  // Halves the box along its outermost axis until it fits; where the box still spans whole
  // source chunks, it is rounded down to a multiple of them so that reads stay aligned.
  auto shrink = [&](Shape& count, const Shape& unit, std::uint64_t budget) {
    while (box_bytes(count, unit) > budget) {
      std::size_t d = 0;
      while (d < rank && count[d] <= 1) ++d;
      if (d == rank) return false;
      std::int64_t next = (count[d] + 1) / 2;
      const std::int64_t sc = p.src.meta.chunk_shape[d];
      if (sc % unit[d] == 0 && next * unit[d] >= sc) next = next * unit[d] / sc * sc / unit[d];
      count[d] = std::max<std::int64_t>(1, next);
    }
    return true;
  };
  Shape lcm_count(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    const std::int64_t l = std::lcm(outer[d], src_chunk[d]);
    lcm_count[d] = std::max<std::int64_t>(1, std::min(p.grid[d], l / outer[d]));
  }
  const std::uint64_t src_scratch = p.src.read_scratch_bytes;
  const std::uint64_t chunk_bytes = static_cast<std::uint64_t>(prod(p.chunks)) * elem;
  int threads = o.threads > 0 ? o.threads : ThreadPool::default_threads();
  std::int64_t items_total = 1;
  for (std::size_t d = 0; d < rank; ++d) items_total *= p.grid[d];
  threads = static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(threads, items_total)));
  // Per worker beside its item: the whole (padded) chunk or inner chunk and its encoding.
  const std::uint64_t beside = src_scratch + 2 * chunk_bytes;
  // Most workers first; for each count, whole outer chunks per read, else (sharded) shards
  // streamed in boxes of inner chunks.
  for (int w = threads; w >= 1; --w) {
    const std::uint64_t per = o.memory_bytes / static_cast<std::uint64_t>(w);
    if (per <= beside) continue;
    const std::uint64_t budget = per - beside;
    Shape count = lcm_count;
    if (shrink(count, outer, budget)) {
      p.item = count;
      p.workers = w;
      p.stream = false;
      return;
    }
    if (!p.sharded) continue;
    Shape inner_grid(rank);
    for (std::size_t d = 0; d < rank; ++d) inner_grid[d] = outer[d] / p.chunks[d];
    count = inner_grid;
    if (!shrink(count, p.chunks, budget)) continue;
    p.item.assign(rank, 1);
    p.inner_box = count;
    p.workers = w;
    p.stream = true;
    return;
  }
  auto mib = [](std::uint64_t b) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(b) / (1 << 20));
    return std::string(buf);
  };
  throw Error(ErrorCode::kResourceExhausted,
              "array '" + p.path + "': one " + (p.sharded ? "inner chunk " : "chunk ") + shape_str(p.chunks) + " of " + mib(chunk_bytes) +
                  " (plus its encoding, and the reader's scratch of " + mib(src_scratch) + ") does not fit --memory " +
                  mib(o.memory_bytes) + "; raise --memory or choose smaller chunks");
}

// Copies the part of `slab` (region slab_start/slab_shape of the array) that lies in the box
// at box_start of extent box_shape into `out`, a whole box-shaped buffer pre-filled with fill.
void cut(const Bytes& slab, const Shape& slab_start, const Shape& slab_shape, const Shape& array_shape, const Shape& box_start,
         const Shape& box_shape, const Bytes& fill, std::size_t elem, Bytes& out) {
  const std::size_t rank = box_shape.size();
  out.resize(static_cast<std::size_t>(prod(box_shape)) * elem);
  Shape inside(rank), src_at(rank), zeros(rank, 0);
  bool clipped = false;
  for (std::size_t d = 0; d < rank; ++d) {
    inside[d] = std::min(box_shape[d], array_shape[d] - box_start[d]);
    clipped |= inside[d] != box_shape[d];
    src_at[d] = box_start[d] - slab_start[d];
  }
  if (clipped) fill_box(out.data(), box_shape, zeros, box_shape, fill.data(), elem);
  copy_box(slab.data(), slab_shape, src_at, out.data(), box_shape, zeros, inside, elem);
}

struct Runner {
  Runner(const std::shared_ptr<WritableStore>& d, const RechunkOptions& o, RechunkProgress& p) : dst(d), opt(o), progress(p) {}
  const std::shared_ptr<WritableStore>& dst;
  const RechunkOptions& opt;
  RechunkProgress& progress;
  std::mutex mu;
  std::exception_ptr error;
  std::atomic<bool> stop{false};

  void fail(std::exception_ptr e) {
    std::lock_guard lock(mu);
    if (!error) error = e;
    stop = true;
  }
};

std::vector<std::int64_t> unflatten(std::int64_t flat, const Shape& grid) {
  Shape idx(grid.size());
  for (std::size_t d = grid.size(); d-- > 0;) {
    idx[d] = flat % grid[d];
    flat /= grid[d];
  }
  return idx;
}

std::int64_t flatten(const Shape& idx, const Shape& grid) {
  std::int64_t f = 0;
  for (std::size_t d = 0; d < grid.size(); ++d) f = f * grid[d] + idx[d];
  return f;
}

// Whether the target value of outer chunk `idx` decodes completely with the target's codecs.
bool verified(const Array& target, const ArrayPlan& p, const Shape& idx) {
  const std::size_t rank = idx.size();
  const Shape& unit = target.unit_shape();
  Shape per(rank), unit_grid(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    per[d] = p.meta.chunk_shape[d] / unit[d];
    unit_grid[d] = (p.meta.shape[d] + unit[d] - 1) / unit[d];
  }
  Bytes buf(target.unit_bytes());
  try {
    for (std::int64_t k = 0; k < prod(per); ++k) {
      Shape u = unflatten(k, per);
      bool inside = true;
      for (std::size_t d = 0; d < rank; ++d) {
        u[d] += idx[d] * per[d];
        inside &= u[d] < unit_grid[d];
      }
      if (!inside) continue;
      auto enc = target.fetch_unit(u);
      if (enc.missing && !p.sharded) return false;
      target.decode_unit(enc, buf.data(), buf.size());
    }
  } catch (const Error&) {
    return false;
  }
  return true;
}

void run_array(Runner& r, ArrayPlan& p) {
  const std::size_t rank = p.meta.shape.size(), elem = p.meta.dtype.size;
  ArrayWriter writer = ArrayWriter::open(r.dst, p.path);
  const bool resume = r.opt.existing == ExistingTarget::kResume || r.opt.parts > 1;
  std::optional<Array> target;
  if (resume) target = Array::open(r.dst, p.path);
  const std::int64_t n_outer = prod(p.grid);
  const std::int64_t lo = n_outer * r.opt.part / r.opt.parts, hi = n_outer * (r.opt.part + 1) / r.opt.parts;
  Shape item_grid(rank);
  for (std::size_t d = 0; d < rank; ++d) item_grid[d] = (p.grid[d] + p.item[d] - 1) / p.item[d];
  const std::int64_t n_items = prod(item_grid);
  std::atomic<std::int64_t> next{0};
  const Bytes& fill = p.meta.fill_value;
  const Shape& outer = p.meta.chunk_shape;

  auto chunk_bytes_in_array = [&](const Shape& idx) {
    return static_cast<std::uint64_t>(writer.chunk_region(idx).num_elements()) * elem;
  };
  auto read_source = [&](const Region& region, Bytes& buf) {
    buf.resize(static_cast<std::size_t>(region.num_elements()) * elem);
    try {
      p.src.read(region, buf.data());
    } catch (const Error& e) {
      throw Error(e.code(), "reading source array '" + p.path + "' at " + shape_str(region.start) + " + " + shape_str(region.shape) + ": " + e.message(),
                  e.context());
    }
  };

  auto worker = [&]() {
    Bytes slab, piece;
    try {
      for (std::int64_t it = next++; it < n_items && !r.stop; it = next++) {
        const Shape item_idx = unflatten(it, item_grid);
        // The outer chunks of this item that this part writes and that are not done yet.
        std::vector<Shape> todo;
        Shape first(rank), count(rank);
        for (std::size_t d = 0; d < rank; ++d) {
          first[d] = item_idx[d] * p.item[d];
          count[d] = std::min(p.item[d], p.grid[d] - first[d]);
        }
        for (std::int64_t k = 0; k < prod(count); ++k) {
          Shape idx = unflatten(k, count);
          for (std::size_t d = 0; d < rank; ++d) idx[d] += first[d];
          const std::int64_t f = flatten(idx, p.grid);
          if (f < lo || f >= hi) continue;
          if (resume && r.dst->exists(writer.chunk_key(idx))) {
            if (verified(*target, p, idx)) {
              ++r.progress.chunks_skipped;
              r.progress.done_bytes += chunk_bytes_in_array(idx);
              continue;
            }
            ++r.progress.chunks_rewritten;
          }
          todo.push_back(idx);
        }
        if (todo.empty()) continue;
        if (p.stream) {
          for (const Shape& idx : todo) {
            if (r.stop) break;
            auto shard = writer.begin_shard(idx);
            Shape per(rank);
            for (std::size_t d = 0; d < rank; ++d) per[d] = outer[d] / p.chunks[d];
            Shape boxes(rank);
            for (std::size_t d = 0; d < rank; ++d) boxes[d] = (per[d] + p.inner_box[d] - 1) / p.inner_box[d];
            for (std::int64_t b = 0; b < prod(boxes) && !r.stop; ++b) {
              const Shape bi = unflatten(b, boxes);
              Region reg;
              Shape inner_first(rank), inner_count(rank);
              bool empty = false;
              for (std::size_t d = 0; d < rank; ++d) {
                inner_first[d] = bi[d] * p.inner_box[d];
                inner_count[d] = std::min(p.inner_box[d], per[d] - inner_first[d]);
                const std::int64_t s = idx[d] * outer[d] + inner_first[d] * p.chunks[d];
                const std::int64_t e = std::min(s + inner_count[d] * p.chunks[d], p.meta.shape[d]);
                if (e <= s) empty = true;
                reg.start.push_back(s);
                reg.shape.push_back(std::max<std::int64_t>(0, e - s));
              }
              if (empty) continue;  // past the array's edge: left empty in the index
              read_source(reg, slab);
              for (std::int64_t k = 0; k < prod(inner_count); ++k) {
                Shape in = unflatten(k, inner_count), at(rank);
                bool outside = false;
                for (std::size_t d = 0; d < rank; ++d) {
                  in[d] += inner_first[d];
                  at[d] = idx[d] * outer[d] + in[d] * p.chunks[d];
                  outside |= at[d] >= p.meta.shape[d];
                }
                if (outside) continue;
                cut(slab, reg.start, reg.shape, p.meta.shape, at, p.chunks, fill, elem, piece);
                shard.add(in, ByteView(piece.data(), piece.size()));
              }
              r.progress.done_bytes += static_cast<std::uint64_t>(reg.num_elements()) * elem;
            }
            if (r.stop) break;
            shard.commit();
            r.progress.stored_bytes += shard.bytes_written();
            ++r.progress.chunks_written;
          }
          continue;
        }
        // Read the bounding box of the chunks to write in one go.
        Region reg;
        for (std::size_t d = 0; d < rank; ++d) {
          std::int64_t a = todo[0][d], b = todo[0][d];
          for (const auto& idx : todo) a = std::min(a, idx[d]), b = std::max(b, idx[d]);
          const std::int64_t s = a * outer[d];
          reg.start.push_back(s);
          reg.shape.push_back(std::min((b + 1) * outer[d], p.meta.shape[d]) - s);
        }
        read_source(reg, slab);
        for (const Shape& idx : todo) {
          if (r.stop) break;
          Shape at(rank);
          for (std::size_t d = 0; d < rank; ++d) at[d] = idx[d] * outer[d];
          if (!p.sharded) {
            cut(slab, reg.start, reg.shape, p.meta.shape, at, outer, fill, elem, piece);
            const Region cr = writer.chunk_region(idx);
            // write_chunk takes the clipped region; the padded buffer is passed as a whole
            // chunk when nothing is clipped, else re-cut to the clipped shape.
            if (cr.shape == outer) {
              r.progress.stored_bytes += writer.write_chunk(idx, ByteView(piece.data(), piece.size()));
            } else {
              Bytes clipped(static_cast<std::size_t>(cr.num_elements()) * elem);
              const Shape zeros(rank, 0);
              copy_box(piece.data(), outer, zeros, clipped.data(), cr.shape, zeros, cr.shape, elem);
              r.progress.stored_bytes += writer.write_chunk(idx, ByteView(clipped.data(), clipped.size()));
            }
          } else {
            auto shard = writer.begin_shard(idx);
            Shape per(rank);
            for (std::size_t d = 0; d < rank; ++d) per[d] = outer[d] / p.chunks[d];
            for (std::int64_t k = 0; k < prod(per); ++k) {
              Shape in = unflatten(k, per), iat(rank);
              bool outside = false;
              for (std::size_t d = 0; d < rank; ++d) {
                iat[d] = at[d] + in[d] * p.chunks[d];
                outside |= iat[d] >= p.meta.shape[d];
              }
              if (outside) continue;
              cut(slab, reg.start, reg.shape, p.meta.shape, iat, p.chunks, fill, elem, piece);
              shard.add(in, ByteView(piece.data(), piece.size()));
            }
            shard.commit();
            r.progress.stored_bytes += shard.bytes_written();
          }
          ++r.progress.chunks_written;
          r.progress.done_bytes += chunk_bytes_in_array(idx);
        }
      }
    } catch (...) {
      r.fail(std::current_exception());
    }
  };
  std::vector<std::thread> threads;
  for (int w = 1; w < p.workers; ++w) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
}

bool target_exists(const Store& dst) {
  for (const char* k : {"zarr.json", ".zgroup", ".zarray"})
    if (dst.exists(k)) return true;
  return false;
}

void copy_groups(const Group& g, const std::shared_ptr<WritableStore>& dst, int format) {
  write_group(dst, g.path(), format, g.attributes());
  for (const auto& name : g.group_names()) copy_groups(g.open_group(name), dst, format);
}

}  // namespace

void write_arrays(const std::vector<SourceArray>& sources, const std::shared_ptr<WritableStore>& dst,
                  const nlohmann::json& group_attributes, const std::function<void()>& write_groups, const RechunkOptions& o,
                  RechunkProgress& progress, const std::function<void(const RechunkPlanInfo&)>& on_plan) {
  if (o.zarr_format != 2 && o.zarr_format != 3) bad("--format must be 2 or 3");
  if (o.parts < 1 || o.part < 0 || o.part >= o.parts) bad("--part i/n needs 0 <= i < n");
  if (o.parts > 1 && o.existing == ExistingTarget::kOverwrite)
    bad("--overwrite cannot be combined with --part (one part would delete the others' work); remove the target first");
  if (sources.empty()) bad("the source holds no arrays");
  const bool has_group = !group_attributes.is_null();

  const bool exists = target_exists(*dst);
  if (exists && o.existing == ExistingTarget::kRefuse && o.parts == 1)
    throw Error(ErrorCode::kInvalidArgument, "the target exists (use --overwrite to replace it or --resume to finish it)",
                ErrorContext{dst->describe(), {}, std::nullopt});
  if (exists && o.existing == ExistingTarget::kOverwrite) dst->erase_prefix("");
  const bool resume = exists && (o.existing == ExistingTarget::kResume || o.parts > 1);
  if (resume) dst->remove_temporaries();

  // Plans and metadata first, so that a resumed run checks it continues the same rechunk.
  std::vector<ArrayPlan> plans;
  for (const auto& src : sources) {
    ArrayPlan p{src.path, src, {}, {}, false, {}, {}, false, {}, 1};
    p.meta = target_metadata(p.src, o, &p.chunks, &p.sharded);
    size_items(p, o);
    plans.push_back(std::move(p));
  }
  if (has_group && !(resume && target_exists(*dst))) {
    if (write_groups) write_groups();
    else write_group(dst, "", o.zarr_format, group_attributes);
  }
  for (auto& p : plans) {
    auto probe = std::make_shared<MemoryStore>("probe");
    const nlohmann::json want = ArrayWriter::create(probe, p.path, p.meta).metadata_documents();
    bool have = false;
    try {
      have = ArrayWriter::open(dst, p.path).metadata_documents() == want;
      if (!have && resume)
        throw Error(ErrorCode::kInvalidArgument, "array '" + p.path + "' in the target was written with other settings; use --overwrite",
                    ErrorContext{dst->describe(), join_key(p.path, o.zarr_format == 3 ? "zarr.json" : ".zarray"), std::nullopt});
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kNotFound) throw;
    }
    if (!have) ArrayWriter::create(dst, p.path, p.meta);
  }
  if (has_group) consolidate_metadata(dst, "", o.zarr_format);

  // Totals for the progress bar: the bytes of this part's chunks.
  for (auto& p : plans) {
    const std::int64_t n = prod(p.grid);
    const std::int64_t lo = n * o.part / o.parts, hi = n * (o.part + 1) / o.parts;
    std::uint64_t total = 0;
    ArrayWriter w = ArrayWriter::open(dst, p.path);
    for (std::int64_t f = lo; f < hi; ++f)
      total += static_cast<std::uint64_t>(w.chunk_region(unflatten(f, p.grid)).num_elements()) * p.meta.dtype.size;
    progress.total_bytes += total;
  }
  Runner r(dst, o, progress);
  for (auto& p : plans) {
    if (on_plan) {
      RechunkPlanInfo info{p.path, p.meta.shape, p.chunks, p.sharded ? p.meta.chunk_shape : Shape{}, p.item, p.stream, p.workers};
      on_plan(info);
    }
    run_array(r, p);
    if (r.error) std::rethrow_exception(r.error);
  }
}

void rechunk(const std::shared_ptr<Store>& src, const std::shared_ptr<WritableStore>& dst, const RechunkOptions& o,
             RechunkProgress& progress, const std::function<void(const RechunkPlanInfo&)>& on_plan) {
  // What to copy: every array of the source's root group (with the group tree), or one array.
  std::optional<Group> root;
  try {
    root = Group::open(src, "");
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kNotFound) throw;
  }
  std::vector<std::string> paths;
  if (!o.array.empty()) paths.push_back(o.array);
  else if (root) paths = root->all_array_paths();
  else paths.push_back("");
  std::vector<SourceArray> sources;
  for (const auto& path : paths) {
    Array a = Array::open(src, path);  // fails early, naming the array
    SourceArray s;
    s.path = path;
    s.meta = a.metadata();
    s.meta.chunk_shape = a.unit_shape();
    // The reader decodes a chunk into per-thread scratch (a few buffers of one unit).
    s.read_scratch_bytes = 3 * static_cast<std::uint64_t>(a.unit_bytes());
    s.read = [a](const Region& region, std::uint8_t* out) {
      a.read(region, out, static_cast<std::size_t>(region.num_elements()) * a.dtype().size, ReadOptions{1});
    };
    sources.push_back(std::move(s));
  }
  nlohmann::json attrs;  // null: the target is the single array at the root
  std::function<void()> groups;
  if (root && !(paths.size() == 1 && paths[0].empty())) {
    attrs = root->attributes();
    if (o.array.empty()) groups = [&] { copy_groups(*root, dst, o.zarr_format); };
  }
  write_arrays(sources, dst, attrs, groups, o, progress, on_plan);
}

}  // namespace cubestream::zarr
