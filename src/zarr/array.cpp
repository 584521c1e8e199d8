// Opening arrays and reading regions of them.
//
// A read plans the chunks (or, for sharded arrays, the inner chunks) that intersect the
// region, then fetches and decodes them in parallel on a thread pool. Each decoded chunk is
// copied into its place in the output; a chunk that lies wholly inside the region, and whose
// rows are contiguous there, is decoded straight into the output without a staging copy.
// Sharded arrays are read in two phases: the indexes of the touched shards, then only the
// inner chunks the region needs, by byte range.
#include <algorithm>
#include <atomic>
#include <cstring>

#include "codec/array_to_bytes/sharding.hpp"
#include "core/strided_copy.hpp"
#include "core/thread_pool.hpp"
#include "cubestream/array.hpp"
#include "cubestream/error.hpp"
#include "zarr/metadata.hpp"

namespace cubestream {

std::int64_t Region::num_elements() const {
  std::int64_t n = 1;
  for (auto s : shape) n *= s;
  return n;
}

struct Array::Impl {
  std::shared_ptr<Store> store;
  std::string path;
  ArrayMetadata meta;
  codec::CodecChain chain;
  codec::ChunkSpec chunk_spec;                        // spec of one outer chunk
  const codec::ShardingCodec* sharding = nullptr;     // set when shards can be read partially

  std::string key_of(const std::vector<std::int64_t>& index) const {
    return join_key(path, zarr::chunk_key(meta, index));
  }
  ErrorContext where(const std::string& key) const { return ErrorContext{store->describe(), key, std::nullopt}; }
};

namespace {

std::shared_ptr<Array::Impl> make_impl(std::shared_ptr<Store> store, const std::string& path, zarr::ParsedArray parsed) {
  auto impl = std::make_shared<Array::Impl>();
  impl->store = std::move(store);
  impl->path = path;
  impl->meta = std::move(parsed.meta);
  impl->chain = std::move(parsed.chain);
  impl->chunk_spec.dtype = impl->meta.dtype;
  impl->chunk_spec.shape = impl->meta.chunk_shape;
  impl->chunk_spec.fill_value.assign(impl->meta.fill_value.begin(), impl->meta.fill_value.end());
  impl->sharding = impl->chain.sole_sharding_codec();
  return impl;
}

// Runs `fn`, adding the store and key to any cubestream::Error it throws.
template <class Fn>
auto with_key_context(const Array::Impl& a, const std::string& key, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const Error& e) {
    throw e.with_context(a.where(key));
  } catch (const std::bad_alloc&) {
    throw Error(ErrorCode::kResourceExhausted, "out of memory while reading this chunk", a.where(key));
  } catch (const std::length_error& e) {
    throw Error(ErrorCode::kResourceExhausted, std::string("buffer too large for this chunk: ") + e.what(), a.where(key));
  }
}

}  // namespace

Array::Array(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

Array Array::from_json(std::shared_ptr<Store> store, const std::string& path, const nlohmann::json& metadata,
                       int zarr_format, const nlohmann::json& v2_attrs) {
  const std::string key = join_key(path, zarr_format == 3 ? "zarr.json" : ".zarray");
  ErrorContext ctx{store->describe(), key, std::nullopt};
  if (!path.empty()) validate_key(path, store->describe());
  try {
    auto parsed = zarr_format == 3 ? zarr::parse_v3_array(metadata) : zarr::parse_v2_array(metadata, v2_attrs);
    return Array(make_impl(std::move(store), path, std::move(parsed)));
  } catch (const Error& e) {
    throw e.with_context(ctx);
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorCode::kInvalidMetadata, std::string("malformed metadata: ") + e.what(), ctx);
  }
}

Array Array::open(std::shared_ptr<Store> store, const std::string& path) {
  const std::string v3_key = join_key(path, "zarr.json");
  if (!path.empty()) validate_key(path, store->describe());
  auto parse = [&](const Bytes& bytes, const std::string& key) {
    try {
      return zarr::parse_json_text(ByteView(bytes.data(), bytes.size()), key);
    } catch (const Error& e) {
      throw e.with_context(ErrorContext{store->describe(), key, std::nullopt});
    }
  };
  if (auto bytes = store->get(v3_key)) {
    auto j = parse(*bytes, v3_key);
    if (j.is_object() && j.contains("node_type") && j["node_type"] == "group") {
      throw Error(ErrorCode::kNotFound, "this node is a group, not an array", ErrorContext{store->describe(), v3_key, std::nullopt});
    }
    return from_json(std::move(store), path, j, 3);
  }
  const std::string v2_key = join_key(path, ".zarray");
  if (auto bytes = store->get(v2_key)) {
    auto j = parse(*bytes, v2_key);
    nlohmann::json attrs = nlohmann::json::object();
    const std::string attrs_key = join_key(path, ".zattrs");
    if (auto a = store->get(attrs_key)) {
      try {
        attrs = zarr::parse_json_text(ByteView(a->data(), a->size()), attrs_key);
      } catch (const Error& e) {
        throw e.with_context(ErrorContext{store->describe(), attrs_key, std::nullopt});
      }
    }
    return from_json(std::move(store), path, j, 2, attrs);
  }
  throw Error(ErrorCode::kNotFound, "no array here (neither zarr.json nor .zarray)",
              ErrorContext{store->describe(), path.empty() ? "/" : path, std::nullopt});
}

const ArrayMetadata& Array::metadata() const { return impl_->meta; }
const std::string& Array::path() const { return impl_->path; }
const Store& Array::store() const { return *impl_->store; }

std::string Array::chunk_key(const std::vector<std::int64_t>& index) const { return impl_->key_of(index); }

namespace {

// The grid positions of the chunks of size `chunk` that intersect [start, start+shape).
struct GridBox {
  std::vector<std::int64_t> lo, hi;  // inclusive-exclusive chunk index range per dim
  std::size_t count() const {
    std::size_t n = 1;
    for (std::size_t d = 0; d < lo.size(); ++d) n *= static_cast<std::size_t>(hi[d] - lo[d]);
    return n;
  }
  std::vector<std::int64_t> at(std::size_t flat) const {
    std::vector<std::int64_t> idx(lo.size());
    for (std::size_t d = lo.size(); d-- > 0;) {
      auto ext = static_cast<std::size_t>(hi[d] - lo[d]);
      idx[d] = lo[d] + static_cast<std::int64_t>(flat % ext);
      flat /= ext;
    }
    return idx;
  }
};

GridBox grid_box(const std::vector<std::int64_t>& start, const std::vector<std::int64_t>& shape,
                 const std::vector<std::int64_t>& chunk) {
  GridBox b;
  for (std::size_t d = 0; d < start.size(); ++d) {
    b.lo.push_back(start[d] / chunk[d]);
    b.hi.push_back(shape[d] == 0 ? b.lo.back() : (start[d] + shape[d] - 1) / chunk[d] + 1);
  }
  return b;
}

// Where a chunk (origin `origin`, extent `chunk`) meets the region: the box in chunk
// coordinates, in output coordinates, and its extent.
struct Overlap {
  std::vector<std::int64_t> in_chunk, in_out, extent;
  bool whole_chunk = true;  // the chunk lies wholly inside the region
};

Overlap overlap(const std::vector<std::int64_t>& origin, const std::vector<std::int64_t>& chunk, const Region& region) {
  Overlap o;
  for (std::size_t d = 0; d < origin.size(); ++d) {
    std::int64_t lo = std::max(origin[d], region.start[d]);
    std::int64_t hi = std::min(origin[d] + chunk[d], region.start[d] + region.shape[d]);
    o.in_chunk.push_back(lo - origin[d]);
    o.in_out.push_back(lo - region.start[d]);
    o.extent.push_back(hi - lo);
    if (lo != origin[d] || hi != origin[d] + chunk[d]) o.whole_chunk = false;
  }
  return o;
}

// True when a box of `extent` is one contiguous run in a C-order array of `shape`: leading
// dims of extent 1, then the first dim of larger extent, then dims spanned fully.
bool contiguous_in(const std::vector<std::int64_t>& extent, const std::vector<std::int64_t>& shape) {
  std::size_t d = 0;
  while (d < extent.size() && extent[d] == 1) ++d;
  for (std::size_t k = d + 1; k < extent.size(); ++k)
    if (extent[k] != shape[k]) return false;
  return true;
}

struct ChunkJob {
  std::string key;
  std::vector<std::int64_t> origin;  // element coordinates of the chunk's first element
  std::int64_t range_offset = -1;    // inner chunk of a shard: byte range inside the shard value
  std::int64_t range_length = -1;
  bool missing = false;              // known missing (empty inner chunk): fill without fetching
};

}  // namespace

ReadStats Array::read(const Region& region, void* out_ptr, std::size_t out_bytes, const ReadOptions& options) const {
  const Impl& a = *impl_;
  const auto& m = a.meta;
  const std::size_t rank = m.shape.size();
  ErrorContext array_ctx{a.store->describe(), a.path, std::nullopt};
  if (region.start.size() != rank || region.shape.size() != rank) {
    throw Error(ErrorCode::kInvalidArgument, "region has rank " + std::to_string(region.start.size()) + "/" +
                                                 std::to_string(region.shape.size()) + " but the array has rank " + std::to_string(rank),
                array_ctx);
  }
  for (std::size_t d = 0; d < rank; ++d) {
    if (region.start[d] < 0 || region.shape[d] < 0 || region.start[d] > m.shape[d] ||
        region.shape[d] > m.shape[d] - region.start[d]) {
      throw Error(ErrorCode::kInvalidArgument, "region [" + std::to_string(region.start[d]) + ", +" +
                                                   std::to_string(region.shape[d]) + ") is outside dimension " + std::to_string(d) +
                                                   " of size " + std::to_string(m.shape[d]),
                  array_ctx);
    }
  }
  const std::size_t elem = m.dtype.size;
  const auto expected = static_cast<std::size_t>(region.num_elements()) * elem;
  if (out_bytes != expected) {
    throw Error(ErrorCode::kInvalidArgument, "output buffer holds " + std::to_string(out_bytes) + " bytes, the region needs " +
                                                 std::to_string(expected),
                array_ctx);
  }
  ReadStats stats;
  if (expected == 0) return stats;
  if (out_ptr == nullptr) throw Error(ErrorCode::kInvalidArgument, "output buffer is null", array_ctx);
  auto* out = static_cast<std::uint8_t*>(out_ptr);
  ThreadPool& pool = ThreadPool::shared(options.threads);
  const int threads = options.threads > 0 ? options.threads : ThreadPool::default_threads();
  auto for_each = [&](std::size_t n, const std::function<void(std::size_t)>& fn) {
    if (threads <= 1 || n <= 1) {
      for (std::size_t i = 0; i < n; ++i) fn(i);
    } else {
      pool.parallel_for(n, fn);
    }
  };

  std::atomic<std::uint64_t> chunks_read{0}, chunks_missing{0}, bytes_fetched{0}, in_place{0};

  // ---- plan: which (inner) chunks to fetch -----------------------------------------------
  std::vector<ChunkJob> jobs;
  std::vector<std::int64_t> unit_shape = m.chunk_shape;  // shape of one job's chunk
  const codec::CodecChain* unit_chain = &a.chain;
  codec::ChunkSpec unit_spec = a.chunk_spec;
  const GridBox outer = grid_box(region.start, region.shape, m.chunk_shape);

  if (!a.sharding) {
    jobs.resize(outer.count());
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      auto idx = outer.at(i);
      jobs[i].key = a.key_of(idx);
      jobs[i].origin.resize(rank);
      for (std::size_t d = 0; d < rank; ++d) jobs[i].origin[d] = idx[d] * m.chunk_shape[d];
    }
  } else {
    const auto& sh = *a.sharding;
    unit_shape = sh.inner_chunk_shape();
    unit_chain = &sh.inner_chain();
    unit_spec = sh.inner_spec(a.chunk_spec);
    const std::uint64_t index_size = sh.index_size(m.chunk_shape);
    std::vector<std::vector<ChunkJob>> per_shard(outer.count());
    // Phase 1: read every touched shard's index and list the inner chunks the region needs.
    for_each(per_shard.size(), [&](std::size_t s) {
      auto sidx = outer.at(s);
      const std::string key = a.key_of(sidx);
      std::vector<std::int64_t> shard_origin(rank);
      for (std::size_t d = 0; d < rank; ++d) shard_origin[d] = sidx[d] * m.chunk_shape[d];
      // Region part inside this shard, and the inner chunks it touches.
      Region local;
      for (std::size_t d = 0; d < rank; ++d) {
        std::int64_t lo = std::max(shard_origin[d], region.start[d]);
        std::int64_t hi = std::min(shard_origin[d] + m.chunk_shape[d], region.start[d] + region.shape[d]);
        local.start.push_back(lo - shard_origin[d]);
        local.shape.push_back(hi - lo);
      }
      const GridBox inner = grid_box(local.start, local.shape, unit_shape);
      auto& list = per_shard[s];
      with_key_context(a, key, [&] {
        auto size = a.store->size(key);
        std::optional<codec::ShardIndex> index;
        if (size) {
          if (*size < index_size) {
            throw Error(ErrorCode::kCorruptData, "shard of " + std::to_string(*size) + " bytes is smaller than its index (" +
                                                     std::to_string(index_size) + " bytes)");
          }
          const std::uint64_t at = sh.index_location() == codec::ShardingCodec::IndexLocation::kEnd ? *size - index_size : 0;
          auto bytes = a.store->get_range(key, ByteRange{static_cast<std::int64_t>(at), static_cast<std::int64_t>(index_size)});
          if (bytes) {
            bytes_fetched += bytes->size();
            try {
              index = sh.decode_index(ByteView(bytes->data(), bytes->size()), m.chunk_shape, *size);
            } catch (const Error& e) {
              // Offsets found while decoding the index are relative to the index: make them absolute.
              ErrorContext c = e.context();
              if (c.offset) c.offset = *c.offset + at;
              throw Error(e.code(), "shard index: " + e.message(), c);
            }
          }
        }
        list.resize(inner.count());
        for (std::size_t i = 0; i < list.size(); ++i) {
          auto iidx = inner.at(i);
          ChunkJob& job = list[i];
          job.key = key;
          job.origin.resize(rank);
          std::size_t flat = 0;
          for (std::size_t d = 0; d < rank; ++d) {
            job.origin[d] = shard_origin[d] + iidx[d] * unit_shape[d];
            flat = flat * static_cast<std::size_t>(m.chunk_shape[d] / unit_shape[d]) + static_cast<std::size_t>(iidx[d]);
          }
          if (!index || (*index)[flat].empty()) {
            job.missing = true;
          } else {
            job.range_offset = static_cast<std::int64_t>((*index)[flat].offset);
            job.range_length = static_cast<std::int64_t>((*index)[flat].nbytes);
          }
        }
      });
    });
    for (auto& l : per_shard)
      for (auto& j : l) jobs.push_back(std::move(j));
  }

  // ---- fetch, decode, place ----------------------------------------------------------------
  const std::size_t unit_bytes = unit_spec.num_bytes();
  for_each(jobs.size(), [&](std::size_t i) {
    const ChunkJob& job = jobs[i];
    const Overlap o = overlap(job.origin, unit_shape, region);
    for (auto e : o.extent)
      if (e <= 0) return;  // an inner chunk outside the array's edge
    with_key_context(a, job.key, [&] {
      // The encoded bytes go into a per-thread buffer that keeps its memory across chunks:
      // a fresh multi-megabyte allocation per chunk costs a page fault per page.
      thread_local Bytes encoded_buffer;
      Bytes* encoded = nullptr;
      if (!job.missing) {
        const ByteRange range = job.range_offset >= 0 ? ByteRange{job.range_offset, job.range_length} : ByteRange::all();
        if (a.store->read_into(job.key, range, encoded_buffer)) encoded = &encoded_buffer;
      }
      if (!encoded) {
        fill_box(out, region.shape, o.in_out, o.extent, a.meta.fill_value.data(), elem);
        ++chunks_missing;
        return;
      }
      bytes_fetched += encoded->size();
      ++chunks_read;
      // Per-thread buffers keep at most this much memory between chunks.
      constexpr std::size_t kKeepBytes = std::size_t{256} << 20;
      struct Trim {
        Bytes& b;
        ~Trim() {
          if (b.capacity() > kKeepBytes) Bytes().swap(b);
        }
      } trim_encoded{*encoded};
      const ByteView enc(encoded->data(), encoded->size());
      try {
        if (o.whole_chunk && contiguous_in(o.extent, region.shape)) {
          // The chunk is one contiguous run of the output: decode into place.
          std::uint8_t* dst = out + c_order_offset(region.shape, o.in_out, elem);
          unit_chain->decode(enc, unit_spec, MutableByteView(dst, unit_bytes));
          ++in_place;
          return;
        }
        thread_local Bytes chunk;
        Trim trim_chunk{chunk};
        chunk.resize(unit_bytes);
        unit_chain->decode(enc, unit_spec, MutableByteView(chunk.data(), chunk.size()));
        copy_box(chunk.data(), unit_shape, o.in_chunk, out, region.shape, o.in_out, o.extent, elem);
      } catch (const Error& e) {
        if (job.range_offset >= 0 && e.context().offset) {
          ErrorContext c = e.context();
          c.offset = *c.offset + static_cast<std::uint64_t>(job.range_offset);  // offset inside the shard
          throw Error(e.code(), e.message(), c);
        }
        throw;
      }
    });
  });
  stats.chunks_read = chunks_read;
  stats.chunks_missing = chunks_missing;
  stats.bytes_fetched = bytes_fetched;
  stats.chunks_decoded_in_place = in_place;
  return stats;
}

Bytes Array::read_all(const ReadOptions& options) const {
  Region r;
  r.start.assign(rank(), 0);
  r.shape = shape();
  Bytes out(static_cast<std::size_t>(r.num_elements()) * dtype().size);
  read(r, out.data(), out.size(), options);
  return out;
}

std::uint64_t Array::stored_bytes() const {
  const Impl& a = *impl_;
  std::uint64_t total = 0;
  GridBox all;
  for (std::size_t d = 0; d < rank(); ++d) {
    all.lo.push_back(0);
    all.hi.push_back((shape()[d] + a.meta.chunk_shape[d] - 1) / a.meta.chunk_shape[d]);
  }
  const std::size_t n = all.count();
  for (std::size_t i = 0; i < n; ++i) {
    if (auto s = a.store->size(a.key_of(all.at(i)))) total += *s;
  }
  return total;
}

}  // namespace cubestream
