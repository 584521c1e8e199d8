#include "zarr/grid.hpp"

#include <algorithm>

namespace cubestream::zarr {

std::size_t GridBox::count() const {
  std::size_t n = 1;
  for (std::size_t d = 0; d < lo.size(); ++d) n *= static_cast<std::size_t>(hi[d] - lo[d]);
  return n;
}

std::vector<std::int64_t> GridBox::at(std::size_t flat) const {
  std::vector<std::int64_t> idx(lo.size());
  for (std::size_t d = lo.size(); d-- > 0;) {
    auto ext = static_cast<std::size_t>(hi[d] - lo[d]);
    idx[d] = lo[d] + static_cast<std::int64_t>(flat % ext);
    flat /= ext;
  }
  return idx;
}

GridBox grid_box(const std::vector<std::int64_t>& start, const std::vector<std::int64_t>& shape,
                 const std::vector<std::int64_t>& chunk) {
  GridBox b;
  for (std::size_t d = 0; d < start.size(); ++d) {
    b.lo.push_back(start[d] / chunk[d]);
    b.hi.push_back(shape[d] == 0 ? b.lo.back() : (start[d] + shape[d] - 1) / chunk[d] + 1);
  }
  return b;
}

bool Overlap::empty() const {
  for (auto e : extent)
    if (e <= 0) return true;
  return false;
}

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

bool contiguous_in(const std::vector<std::int64_t>& extent, const std::vector<std::int64_t>& shape) {
  std::size_t d = 0;
  while (d < extent.size() && extent[d] == 1) ++d;
  for (std::size_t k = d + 1; k < extent.size(); ++k)
    if (extent[k] != shape[k]) return false;
  return true;
}

}  // namespace cubestream::zarr
