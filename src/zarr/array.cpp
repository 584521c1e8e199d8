// Opening arrays and reading regions of them.
//
// A read plans the chunks (or, for sharded arrays, the inner chunks) that intersect the
// region, then fetches and decodes them in parallel on a thread pool. Each decoded chunk is
// copied into its place in the output; a chunk that lies wholly inside the region, and whose
// rows are contiguous there, is decoded straight into the output without a staging copy.
// Sharded arrays are read in two phases: the indexes of the touched shards, then only the
// inner chunks the region needs, by byte range. Where ReadOptions::decode sends a read to a
// GPU, the same plan is fetched, decoded and placed in waves by zarr/gpu_read.cpp instead.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "core/thread_pool.hpp"
#include "cubestream/array.hpp"
#include "cubestream/error.hpp"
#include "cuda/memory.hpp"
#include "zarr/array_impl.hpp"
#include "zarr/gpu_read.hpp"
#include "zarr/gpu_read_pool.hpp"
#include "zarr/gpu_route.hpp"
#include "zarr/grid.hpp"
#include "zarr/metadata.hpp"
#include "zarr/read_backend.hpp"
#include "zarr/read_plan.hpp"
#include "zarr/region_output.hpp"

namespace cubestream {

std::int64_t Region::num_elements() const {
  std::int64_t n = 1;
  for (auto s : shape) n *= s;
  return n;
}


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
  impl->gpu_route = zarr::chain_route(impl->meta);
  return impl;
}

// The GPU part of Array::read (ReadOptions::decode): true when the read was done on a GPU;
// false when it is the host's to do (kAuto chose the host, no staging set was free, or the
// GPU failed: then `stats` is back to the plan's and the host rewrites the whole output).
bool read_on_gpu(const Array::Impl& a, const Region& region, const zarr::ReadPlan& plan, std::uint8_t* out,
                 const ReadOptions& options, const zarr::ForEach& for_each, ReadStats& stats) {
  const ErrorContext array_ctx{a.store->describe(), a.path, std::nullopt};
  const std::size_t expected = static_cast<std::size_t>(region.num_elements()) * a.meta.dtype.size;
  int device = options.gpu_device;
  zarr::ReadBackendChoice choice;
  try {
    choice = zarr::choose_read_backend(
        options.decode, std::getenv("CUBESTREAM_READ_DECODE"), a.gpu_route, expected, plan.unit_spec.num_bytes(), device,
        [&] { return zarr::GpuStagingLease::warm(device >= 0 ? device : zarr::GpuStagingLease::current_device()); },
        [] { return zarr::GpuStagingLease::visible_devices(); });
  } catch (const Error& e) {
    throw e.with_context(array_ctx);
  }
  if (!choice.gpu) return false;
  // The GPU read makes its device current on this thread (the caller's): put the caller's back.
  struct RestoreDevice {
    int device = cuda::current_device();
    ~RestoreDevice() {
      if (device < 0) return;
      try {
        cuda::set_device(device);
      } catch (...) {
      }
    }
  } restore;
  if (device < 0) device = std::max(zarr::GpuStagingLease::current_device(), 0);
  // A device that cannot be had (no memory, a CUDA error, none visible) leaves a kAuto read to
  // the host; the data's own errors are the host path's errors on both paths.
  auto take = [&]() -> std::optional<zarr::GpuStagingLease> {
    try {
      return zarr::GpuStagingLease::take(device, /*wait=*/choice.required);
    } catch (const Error& e) {
      if (choice.required || (e.code() != ErrorCode::kCuda && e.code() != ErrorCode::kUnsupported)) throw;
      return std::nullopt;
    }
  };
  std::optional<zarr::GpuStagingLease> lease = take();
  if (!lease) return false;
  const ReadStats before = stats;
  try {
    zarr::read_on_device(a, region, plan, a.gpu_route, out, for_each, **lease, stats);
    return true;
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kCuda) throw;
    lease->discard();
    if (choice.required) throw;
    stats = before;
    return false;
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
  const zarr::ForEach for_each = [&](std::size_t n, const std::function<void(std::size_t)>& fn) {
    if (threads <= 1 || n <= 1) {
      for (std::size_t i = 0; i < n; ++i) fn(i);
    } else {
      pool.parallel_for(n, fn);
    }
  };

  const zarr::ReadPlan plan = [&] {
    try {
      return zarr::plan_read(a, region, for_each);
    } catch (const std::bad_alloc&) {
      throw Error(ErrorCode::kResourceExhausted, "out of memory while planning the read", array_ctx);
    } catch (const std::length_error& e) {
      throw Error(ErrorCode::kResourceExhausted, std::string("read plan too large: ") + e.what(), array_ctx);
    }
  }();
  stats.bytes_fetched = plan.index_bytes_fetched;
  stats.shard_index_cache_hits = plan.index_cache_hits;

  if (options.decode != DecodeBackend::kCpu && read_on_gpu(a, region, plan, out, options, for_each, stats)) {
    return stats;
  }

  const zarr::RegionOutput ro(plan, region, out, elem);
  std::atomic<std::uint64_t> chunks_read{0}, chunks_missing{0}, bytes_fetched{0}, in_place{0}, requests{0};
  // Fills the part of the region a chunk covers with the fill value.
  auto fill = [&](const zarr::PlannedChunk& c) {
    const zarr::Overlap o = ro.overlap_of(c);
    if (o.empty()) return;
    ro.fill(o, m.fill_value.data());
    ++chunks_missing;
  };

  for_each(plan.tasks.size(), [&](std::size_t i) {
    const zarr::FetchTask& t = plan.tasks[i];
    zarr::with_unit_context(a, t.key, std::nullopt, [&] {
      if (t.missing) {
        for (const auto& c : t.chunks) fill(c);
        return;
      }
      // The encoded bytes go into a per-thread buffer that keeps its memory across fetches:
      // a fresh multi-megabyte allocation per chunk costs a page fault per page.
      thread_local Bytes encoded;
      zarr::TrimOnExit trim_encoded{encoded};
      const ByteRange range = t.whole_value ? ByteRange::all()
                                            : ByteRange{static_cast<std::int64_t>(t.offset), static_cast<std::int64_t>(t.length)};
      ++requests;
      if (!a.store->read_into(t.key, range, encoded)) {
        for (const auto& c : t.chunks) fill(c);
        return;
      }
      // A Store implementation outside cubestream may return fewer bytes than asked for;
      // the chunk offsets below are only valid for the full range.
      if (!t.whole_value && encoded.size() != t.length) {
        throw Error(ErrorCode::kIo, "store returned " + std::to_string(encoded.size()) + " bytes for a range of " +
                                        std::to_string(t.length),
                    ErrorContext{a.store->describe(), t.key, t.offset});
      }
      bytes_fetched += encoded.size();
      for (const auto& c : t.chunks) {
        const zarr::Overlap o = ro.overlap_of(c);
        if (o.empty()) continue;  // an inner chunk beyond the array's edge
        const ByteView enc = t.whole_value ? ByteView(encoded.data(), encoded.size())
                                           : ByteView(encoded.data() + c.offset, c.length);
        ++chunks_read;
        // an error's offset inside the shard, not inside the inner chunk
        const auto value_offset = t.whole_value ? std::nullopt : std::optional<std::uint64_t>(t.offset + c.offset);
        zarr::with_unit_context(a, t.key, value_offset, [&] {
          if (ro.decode_into(o, enc)) ++in_place;
        });
      }
    });
  });
  stats.chunks_read = chunks_read;
  stats.chunks_missing = chunks_missing;
  stats.bytes_fetched += bytes_fetched;
  stats.chunks_decoded_in_place = in_place;
  stats.chunk_requests = requests;
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
  zarr::GridBox all;
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
