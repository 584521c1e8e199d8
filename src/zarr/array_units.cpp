// Decode units: one chunk (or inner chunk) fetched and decoded in separate steps, for the
// loader's pipeline. Planning reuses read_plan: the region of one unit yields exactly one
// fetch task holding one planned chunk (or a missing one).
#include <algorithm>
#include <cstring>
#include <string>

#include "cubestream/array.hpp"
#include "cubestream/error.hpp"
#include "zarr/array_impl.hpp"
#include "zarr/read_plan.hpp"

namespace cubestream {

namespace {

const zarr::ForEach kSerial = [](std::size_t n, const std::function<void(std::size_t)>& fn) {
  for (std::size_t i = 0; i < n; ++i) fn(i);
};

}  // namespace

const std::vector<std::int64_t>& Array::unit_shape() const {
  return impl_->sharding ? impl_->sharding->inner_chunk_shape() : impl_->meta.chunk_shape;
}

std::size_t Array::unit_bytes() const {
  std::size_t n = impl_->meta.dtype.size;
  for (auto e : unit_shape()) n *= static_cast<std::size_t>(e);
  return n;
}

Array::EncodedUnit Array::fetch_unit(const std::vector<std::int64_t>& unit) const {
  EncodedUnit out;
  fetch_unit(unit, out);
  return out;
}

void Array::fetch_unit(const std::vector<std::int64_t>& unit, EncodedUnit& out) const {
  const Impl& a = *impl_;
  const auto& us = unit_shape();
  Region r;
  for (std::size_t d = 0; d < unit.size() && d < us.size(); ++d) {
    const std::int64_t lo = unit[d] * us[d];
    if (unit[d] < 0 || lo >= a.meta.shape[d]) break;
    r.start.push_back(lo);
    r.shape.push_back(std::min(us[d], a.meta.shape[d] - lo));
  }
  if (unit.size() != us.size() || r.start.size() != us.size()) {
    std::string idx;
    for (auto i : unit) idx += (idx.empty() ? "" : ",") + std::to_string(i);
    throw Error(ErrorCode::kInvalidArgument, "decode unit (" + idx + ") is outside the unit grid",
                ErrorContext{a.store->describe(), a.path, std::nullopt});
  }
  const zarr::ReadPlan plan = zarr::plan_read(a, r, kSerial);
  out.key.clear();
  out.offset = 0;
  out.missing = false;
  out.bytes.clear();  // keeps the capacity
  out.bytes_fetched = plan.index_bytes_fetched;
  if (plan.tasks.size() != 1 || plan.tasks[0].chunks.size() != 1) {
    throw Error(ErrorCode::kInternal, "a decode unit planned as " + std::to_string(plan.tasks.size()) + " fetches",
                ErrorContext{a.store->describe(), a.path, std::nullopt});
  }
  const zarr::FetchTask& t = plan.tasks[0];
  out.key = t.key;
  if (t.missing) {
    out.missing = true;
    return;
  }
  const ByteRange range = t.whole_value ? ByteRange::all()
                                        : ByteRange{static_cast<std::int64_t>(t.offset), static_cast<std::int64_t>(t.length)};
  try {
    if (!a.store->read_into(t.key, range, out.bytes)) {
      out.missing = true;
      out.bytes.clear();
      return;
    }
  } catch (const Error& e) {
    throw e.with_context(a.where(t.key));
  }
  if (!t.whole_value && out.bytes.size() != t.length) {
    throw Error(ErrorCode::kIo, "store returned " + std::to_string(out.bytes.size()) + " bytes for a range of " +
                                    std::to_string(t.length),
                ErrorContext{a.store->describe(), t.key, t.offset});
  }
  out.offset = t.whole_value ? 0 : t.offset;
  out.bytes_fetched += out.bytes.size();
}

bool Array::will_need_unit(const std::vector<std::int64_t>& unit) const noexcept {
  try {
    const Impl& a = *impl_;
    const auto& us = unit_shape();
    const std::size_t rank = a.meta.shape.size();
    if (unit.size() != rank || us.size() != rank) return false;
    for (std::size_t d = 0; d < rank; ++d) {
      if (unit[d] < 0 || unit[d] * us[d] >= a.meta.shape[d]) return false;
    }
    if (!a.sharding) {
      // The unit is a chunk: its whole value is what fetch_unit reads.
      a.store->will_need(a.key_of(unit), ByteRange::all());
      return true;
    }
    // An inner chunk: its shard, and its place in the shard's inner grid (C order).
    std::vector<std::int64_t> shard(rank);
    std::size_t flat = 0;
    for (std::size_t d = 0; d < rank; ++d) {
      const std::int64_t per_shard = a.meta.chunk_shape[d] / us[d];
      shard[d] = unit[d] / per_shard;
      flat = flat * static_cast<std::size_t>(per_shard) + static_cast<std::size_t>(unit[d] % per_shard);
    }
    const std::string key = a.key_of(shard);
    const auto index = a.shard_indexes.peek(key);
    if (!index || flat >= index->size() || (*index)[flat].empty()) return false;
    const codec::ShardIndexEntry& e = (*index)[flat];
    a.store->will_need(key, ByteRange{static_cast<std::int64_t>(e.offset), static_cast<std::int64_t>(e.nbytes)});
    return true;
  } catch (...) {
    return false;  // a hint never fails (allocation failures included)
  }
}

namespace {

// Runs a decode of `encoded`, giving its errors the store, the key and the offset inside the
// key's value (a codec knows only the offset inside the bytes it was given).
template <class Fn>
void with_unit_context(const Array::Impl& a, const Array::EncodedUnit& encoded, Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    ErrorContext ctx = e.context();
    ctx.store = a.store->describe();
    ctx.key = encoded.key;
    if (ctx.offset) ctx.offset = *ctx.offset + encoded.offset;
    throw Error(e.code(), e.message(), ctx);
  } catch (const std::bad_alloc&) {
    throw Error(ErrorCode::kResourceExhausted, "out of memory while decoding this chunk", a.where(encoded.key));
  }
}

}  // namespace

void Array::decode_unit(const EncodedUnit& encoded, void* out, std::size_t out_bytes) const {
  const Impl& a = *impl_;
  const std::size_t n = unit_bytes();
  if (out_bytes != n || out == nullptr) {
    throw Error(ErrorCode::kInvalidArgument,
                "decode unit output holds " + std::to_string(out_bytes) + " bytes, a unit has " + std::to_string(n),
                ErrorContext{a.store->describe(), encoded.key, std::nullopt});
  }
  auto* dst = static_cast<std::uint8_t*>(out);
  const auto& fill = a.meta.fill_value;
  if (encoded.missing) {
    const std::size_t e = a.meta.dtype.size;
    for (std::size_t i = 0; i < n; i += e) std::memcpy(dst + i, fill.data(), e);
    return;
  }
  const codec::CodecChain& chain = a.sharding ? a.sharding->inner_chain() : a.chain;
  const codec::ChunkSpec spec = a.sharding ? a.sharding->inner_spec(a.chunk_spec) : a.chunk_spec;
  with_unit_context(a, encoded, [&] {
    chain.decode(ByteView(encoded.bytes.data(), encoded.bytes.size()), spec, MutableByteView(dst, n));
  });
}

bool Array::decode_unit_blocks(const EncodedUnit& encoded, const BlockSink& sink) const {
  const Impl& a = *impl_;
  if (encoded.missing) return false;
  const codec::CodecChain& chain = a.sharding ? a.sharding->inner_chain() : a.chain;
  const codec::ChunkSpec spec = a.sharding ? a.sharding->inner_spec(a.chunk_spec) : a.chunk_spec;
  bool done = false;
  with_unit_context(a, encoded, [&] {
    done = chain.decode_blocks(ByteView(encoded.bytes.data(), encoded.bytes.size()), spec, sink);
  });
  return done;
}

}  // namespace cubestream
