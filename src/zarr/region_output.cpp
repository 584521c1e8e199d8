#include "zarr/region_output.hpp"

#include "core/strided_copy.hpp"

namespace cubestream::zarr {

RegionOutput::RegionOutput(const ReadPlan& plan, const Region& region, std::uint8_t* out, std::size_t elem_size)
    : plan_(plan), region_(region), out_(out), elem_(elem_size) {}

Overlap RegionOutput::overlap_of(const PlannedChunk& unit) const { return overlap(unit.origin, plan_.unit_shape, region_); }

std::uint8_t* RegionOutput::run_of(const Overlap& o) const {
  if (!o.whole_chunk || !contiguous_in(o.extent, region_.shape)) return nullptr;
  return out_ + c_order_offset(region_.shape, o.in_out, elem_);
}

void RegionOutput::fill(const Overlap& o, const std::uint8_t* value) const {
  fill_box(out_, region_.shape, o.in_out, o.extent, value, elem_);
}

void RegionOutput::copy_from_unit(const Overlap& o, const std::uint8_t* unit) const {
  copy_box(unit, plan_.unit_shape, o.in_chunk, out_, region_.shape, o.in_out, o.extent, elem_);
}

bool RegionOutput::decode_into(const Overlap& o, ByteView encoded) const {
  const std::size_t unit_bytes = plan_.unit_spec.num_bytes();
  if (std::uint8_t* dst = run_of(o)) {
    plan_.unit_chain->decode(encoded, plan_.unit_spec, MutableByteView(dst, unit_bytes));
    return true;
  }
  thread_local Bytes unit;
  TrimOnExit trim{unit};
  unit.resize(unit_bytes);
  plan_.unit_chain->decode(encoded, plan_.unit_spec, MutableByteView(unit.data(), unit.size()));
  copy_from_unit(o, unit.data());
  return false;
}

}  // namespace cubestream::zarr
