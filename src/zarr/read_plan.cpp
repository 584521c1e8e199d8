#include "zarr/read_plan.hpp"

#include <algorithm>
#include <atomic>

#include "zarr/grid.hpp"

namespace cubestream::zarr {

namespace {

// Inner chunks of one shard are fetched together while the gap between them is at most this
// (reading a little unused data is cheaper than another request) and the fetch stays under
// the size cap (so that large regions still spread over many parallel fetches).
constexpr std::uint64_t kMaxGapBytes = 64 * 1024;
constexpr std::uint64_t kMaxFetchBytes = 16 * 1024 * 1024;

std::vector<std::int64_t> origin_of(const std::vector<std::int64_t>& index, const std::vector<std::int64_t>& chunk) {
  std::vector<std::int64_t> o(index.size());
  for (std::size_t d = 0; d < index.size(); ++d) o[d] = index[d] * chunk[d];
  return o;
}

// The index of the shard at `key`, from the cache or the store; nullptr when the shard is absent.
std::shared_ptr<const codec::ShardIndex> shard_index(const Array::Impl& a, const std::string& key,
                                                     std::atomic<std::uint64_t>& fetched, std::atomic<std::uint64_t>& hits) {
  const auto& sh = *a.sharding;
  auto size = a.store->size(key);
  if (!size) return nullptr;
  if (auto cached = a.shard_indexes.find(key, *size)) {
    ++hits;
    return cached;
  }
  const std::uint64_t index_size = sh.index_size(a.meta.chunk_shape);
  if (*size < index_size) {
    throw Error(ErrorCode::kCorruptData, "shard of " + std::to_string(*size) + " bytes is smaller than its index (" +
                                             std::to_string(index_size) + " bytes)");
  }
  const std::uint64_t at = sh.index_location() == codec::ShardingCodec::IndexLocation::kEnd ? *size - index_size : 0;
  auto bytes = a.store->get_range(key, ByteRange{static_cast<std::int64_t>(at), static_cast<std::int64_t>(index_size)});
  if (!bytes) return nullptr;  // removed between size() and get_range()
  fetched += bytes->size();
  std::shared_ptr<const codec::ShardIndex> index;
  try {
    index = std::make_shared<const codec::ShardIndex>(
        sh.decode_index(ByteView(bytes->data(), bytes->size()), a.meta.chunk_shape, *size));
  } catch (const Error& e) {
    // Offsets found while decoding the index are relative to the index: make them absolute.
    ErrorContext c = e.context();
    if (c.offset) c.offset = *c.offset + at;
    throw Error(e.code(), "shard index: " + e.message(), c);
  }
  a.shard_indexes.insert(key, *size, index);
  return index;
}

}  // namespace

ReadPlan plan_read(const Array::Impl& a, const Region& region, const ForEach& for_each) {
  const auto& m = a.meta;
  const std::size_t rank = m.shape.size();
  ReadPlan plan;
  const GridBox outer = grid_box(region.start, region.shape, m.chunk_shape);

  if (!a.sharding) {
    plan.unit_shape = m.chunk_shape;
    plan.unit_chain = &a.chain;
    plan.unit_spec = a.chunk_spec;
    plan.tasks.resize(outer.count());
    for (std::size_t i = 0; i < plan.tasks.size(); ++i) {
      auto idx = outer.at(i);
      plan.tasks[i].key = a.key_of(idx);
      plan.tasks[i].chunks.push_back(PlannedChunk{origin_of(idx, m.chunk_shape), 0, 0});
    }
    return plan;
  }

  const auto& sh = *a.sharding;
  plan.unit_shape = sh.inner_chunk_shape();
  plan.unit_chain = &sh.inner_chain();
  plan.unit_spec = sh.inner_spec(a.chunk_spec);
  std::vector<std::int64_t> per_shard_grid(rank);
  for (std::size_t d = 0; d < rank; ++d) per_shard_grid[d] = m.chunk_shape[d] / plan.unit_shape[d];

  std::atomic<std::uint64_t> fetched{0}, hits{0};
  std::vector<std::vector<FetchTask>> per_shard(outer.count());
  for_each(per_shard.size(), [&](std::size_t s) {
    const auto sidx = outer.at(s);
    const std::string key = a.key_of(sidx);
    const auto shard_origin = origin_of(sidx, m.chunk_shape);
    // The part of the region inside this shard, and the inner chunks it touches.
    std::vector<std::int64_t> lstart(rank), lshape(rank);
    for (std::size_t d = 0; d < rank; ++d) {
      const std::int64_t lo = std::max(shard_origin[d], region.start[d]);
      const std::int64_t hi = std::min(shard_origin[d] + m.chunk_shape[d], region.start[d] + region.shape[d]);
      lstart[d] = lo - shard_origin[d];
      lshape[d] = hi - lo;
    }
    const GridBox inner = grid_box(lstart, lshape, plan.unit_shape);
    std::shared_ptr<const codec::ShardIndex> index;
    try {
      index = shard_index(a, key, fetched, hits);
    } catch (const Error& e) {
      throw e.with_context(a.where(key));
    }
    struct Present {
      std::vector<std::int64_t> origin;
      codec::ShardIndexEntry entry;
    };
    std::vector<Present> present;
    FetchTask missing{key, false, 0, 0, true, {}};
    for (std::size_t i = 0; i < inner.count(); ++i) {
      const auto iidx = inner.at(i);
      std::vector<std::int64_t> origin(rank);
      std::size_t flat = 0;
      for (std::size_t d = 0; d < rank; ++d) {
        origin[d] = shard_origin[d] + iidx[d] * plan.unit_shape[d];
        flat = flat * static_cast<std::size_t>(per_shard_grid[d]) + static_cast<std::size_t>(iidx[d]);
      }
      if (!index || (*index)[flat].empty()) {
        missing.chunks.push_back(PlannedChunk{std::move(origin), 0, 0});
      } else {
        present.push_back(Present{std::move(origin), (*index)[flat]});
      }
    }
    auto& tasks = per_shard[s];
    if (!missing.chunks.empty()) tasks.push_back(std::move(missing));
    // Group inner chunks that lie close together in the shard into one ranged fetch.
    std::sort(present.begin(), present.end(), [](const Present& x, const Present& y) { return x.entry.offset < y.entry.offset; });
    for (const auto& p : present) {
      const std::uint64_t begin = p.entry.offset, end = p.entry.offset + p.entry.nbytes;
      FetchTask* t = tasks.empty() || tasks.back().missing ? nullptr : &tasks.back();
      if (!t || begin > t->offset + t->length + kMaxGapBytes || end - t->offset > kMaxFetchBytes) {
        tasks.push_back(FetchTask{key, false, begin, 0, false, {}});
        t = &tasks.back();
      }
      t->length = std::max(t->length, end - t->offset);
      t->chunks.push_back(PlannedChunk{p.origin, begin - t->offset, p.entry.nbytes});
    }
  });
  for (auto& l : per_shard)
    for (auto& t : l) plan.tasks.push_back(std::move(t));
  plan.index_bytes_fetched = fetched;
  plan.index_cache_hits = hits;
  return plan;
}

}  // namespace cubestream::zarr
