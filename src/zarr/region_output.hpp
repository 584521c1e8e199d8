// Where the decode units of a region read go in the caller's output, shared by the host read
// (zarr/array.cpp) and the GPU read (zarr/gpu_read.cpp): a unit lying wholly inside the region
// as one contiguous run of the output is decoded (or copied) straight there; any other unit's
// part of the region is copied out of the whole decoded unit; a missing unit's part is filled.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>

#include "cubestream/bytes.hpp"
#include "zarr/array_impl.hpp"
#include "zarr/grid.hpp"
#include "zarr/read_plan.hpp"

namespace cubestream::zarr {

// Per-thread buffers of a read (encoded bytes, a decoded unit) keep their memory from unit to
// unit, up to 256 MiB; a larger one is freed when the unit is done.
struct TrimOnExit {
  Bytes& b;
  ~TrimOnExit() {
    constexpr std::size_t kKeepBytes = std::size_t{256} << 20;
    if (b.capacity() > kKeepBytes) Bytes().swap(b);
  }
};

class RegionOutput {
 public:
  // `out` holds the region in C order (region.num_elements() * elem_size bytes).
  RegionOutput(const ReadPlan& plan, const Region& region, std::uint8_t* out, std::size_t elem_size);

  // The part of the region a unit covers; empty for an inner chunk beyond the array's edge.
  Overlap overlap_of(const PlannedChunk& unit) const;
  // Where a unit's decoded bytes start in the output when they are one contiguous run of it
  // (the unit lies wholly inside the region), else null.
  std::uint8_t* run_of(const Overlap& o) const;

  // Writes one element `value` over the overlap.
  void fill(const Overlap& o, const std::uint8_t* value) const;
  // Copies the overlap's part of a whole decoded unit (plan.unit_spec bytes) into place.
  void copy_from_unit(const Overlap& o, const std::uint8_t* unit) const;
  // Decodes `encoded` through the plan's unit chain into place: straight into the output for a
  // run, else through a buffer of the calling thread. Returns whether it went straight.
  bool decode_into(const Overlap& o, ByteView encoded) const;

 private:
  const ReadPlan& plan_;
  const Region& region_;
  std::uint8_t* out_;
  std::size_t elem_;
};

// Runs `fn`, adding the store and key to any cubestream::Error it throws (bad_alloc and
// length_error become kResourceExhausted there). With `value_offset`, where the unit's bytes
// start inside the key's value (an inner chunk of a shard), an error's byte offset, which is
// relative to the unit's bytes, becomes an offset inside the value.
template <class Fn>
auto with_unit_context(const Array::Impl& a, const std::string& key, std::optional<std::uint64_t> value_offset,
                       Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const Error& e) {
    if (value_offset && e.context().offset) {
      ErrorContext ctx = e.context();
      ctx.offset = *ctx.offset + *value_offset;
      throw Error(e.code(), e.message(), ctx).with_context(a.where(key));
    }
    throw e.with_context(a.where(key));
  } catch (const std::bad_alloc&) {
    throw Error(ErrorCode::kResourceExhausted, "out of memory while reading this chunk", a.where(key));
  } catch (const std::length_error& e) {
    throw Error(ErrorCode::kResourceExhausted, std::string("buffer too large for this chunk: ") + e.what(),
                a.where(key));
  }
}

}  // namespace cubestream::zarr
