#include "core/strided_copy.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

namespace cubestream {

std::size_t c_order_offset(Shape shape, Shape index, std::size_t elem_size) {
  std::size_t off = 0;
  for (std::size_t d = 0; d < shape.size(); ++d) off = off * static_cast<std::size_t>(shape[d]) + static_cast<std::size_t>(index[d]);
  return off * elem_size;
}

namespace {

// Describes a box walk: `outer` dims iterated with an odometer, then one contiguous run.
struct Walk {
  std::size_t run_bytes = 0;          // bytes of one contiguous run (in both arrays)
  int outer_rank = 0;                 // dims [0, outer_rank) are iterated
  std::vector<std::int64_t> extent;   // box extent of each outer dim
  std::vector<std::size_t> sstride;   // byte strides of outer dims in src
  std::vector<std::size_t> dstride;   // byte strides of outer dims in dst
};

Walk plan(Shape src_shape, Shape dst_shape, Shape box, std::size_t elem) {
  const int rank = static_cast<int>(box.size());
  Walk w;
  std::vector<std::size_t> ss(rank), ds(rank);
  std::size_t s = elem, d = elem;
  for (int i = rank - 1; i >= 0; --i) {
    ss[i] = s;
    ds[i] = d;
    s *= static_cast<std::size_t>(src_shape[i]);
    d *= static_cast<std::size_t>(dst_shape[i]);
  }
  // Merge trailing dims while the box spans them fully in both arrays.
  int k = rank - 1;
  std::size_t run = elem;
  while (k >= 0) {
    run *= static_cast<std::size_t>(box[k]);
    if (box[k] == src_shape[k] && box[k] == dst_shape[k] && k > 0) {
      --k;
      continue;
    }
    break;
  }
  w.run_bytes = rank == 0 ? elem : run;
  w.outer_rank = rank == 0 ? 0 : k;
  for (int i = 0; i < w.outer_rank; ++i) {
    w.extent.push_back(box[i]);
    w.sstride.push_back(ss[i]);
    w.dstride.push_back(ds[i]);
  }
  return w;
}

template <class Fn>
void walk(const Walk& w, std::size_t src_base, std::size_t dst_base, Fn&& run) {
  if (w.outer_rank == 0) {
    run(src_base, dst_base);
    return;
  }
  for (auto e : w.extent)
    if (e == 0) return;
  std::vector<std::int64_t> idx(w.outer_rank, 0);
  std::size_t so = src_base, dso = dst_base;
  for (;;) {
    run(so, dso);
    int i = w.outer_rank - 1;
    for (; i >= 0; --i) {
      if (++idx[i] < w.extent[i]) {
        so += w.sstride[i];
        dso += w.dstride[i];
        break;
      }
      so -= w.sstride[i] * static_cast<std::size_t>(w.extent[i] - 1);
      dso -= w.dstride[i] * static_cast<std::size_t>(w.extent[i] - 1);
      idx[i] = 0;
    }
    if (i < 0) return;
  }
}

}  // namespace

void copy_box(const std::uint8_t* src, Shape src_shape, Shape src_start, std::uint8_t* dst,
              Shape dst_shape, Shape dst_start, Shape box, std::size_t elem_size) {
  for (auto e : box)
    if (e == 0) return;
  Walk w = plan(src_shape, dst_shape, box, elem_size);
  walk(w, c_order_offset(src_shape, src_start, elem_size), c_order_offset(dst_shape, dst_start, elem_size),
       [&](std::size_t s, std::size_t d) { std::memcpy(dst + d, src + s, w.run_bytes); });
}

void fill_box(std::uint8_t* dst, Shape dst_shape, Shape dst_start, Shape box, const std::uint8_t* value,
              std::size_t elem_size) {
  for (auto e : box)
    if (e == 0) return;
  bool zero = true;
  for (std::size_t i = 0; i < elem_size; ++i) zero = zero && value[i] == 0;
  Walk w = plan(box, dst_shape, box, elem_size);  // src unused; box as its own shape
  walk(w, 0, c_order_offset(dst_shape, dst_start, elem_size), [&](std::size_t, std::size_t d) {
    if (zero) {
      std::memset(dst + d, 0, w.run_bytes);
    } else {
      // One element, then double the filled prefix: log2(run) memcpy calls per run.
      std::memcpy(dst + d, value, elem_size);
      std::size_t filled = elem_size;
      while (filled < w.run_bytes) {
        const std::size_t n = std::min(filled, w.run_bytes - filled);
        std::memcpy(dst + d + filled, dst + d, n);
        filled += n;
      }
    }
  });
}

void permute_axes(const std::uint8_t* src, Shape src_shape, std::span<const int> perm, std::uint8_t* dst,
                  std::size_t elem_size) {
  const int rank = static_cast<int>(src_shape.size());
  std::vector<std::int64_t> dst_shape(rank);
  for (int i = 0; i < rank; ++i) dst_shape[perm[i]] = src_shape[i];
  std::vector<std::size_t> dst_stride(rank);
  std::size_t s = elem_size;
  for (int i = rank - 1; i >= 0; --i) {
    dst_stride[i] = s;
    s *= static_cast<std::size_t>(dst_shape[i]);
  }
  // Walk src in C order; the destination stride of src axis i is dst_stride[perm[i]].
  std::vector<std::size_t> step(rank);
  for (int i = 0; i < rank; ++i) step[i] = dst_stride[perm[i]];
  std::int64_t n = 1;
  for (auto e : src_shape) n *= e;
  if (n == 0) return;
  if (rank == 0) {
    std::memcpy(dst, src, elem_size);
    return;
  }
  std::vector<std::int64_t> idx(rank, 0);
  std::size_t doff = 0;
  const std::int64_t inner = src_shape[rank - 1];
  const std::size_t inner_step = step[rank - 1];
  for (std::int64_t e = 0; e < n; e += inner) {
    const std::uint8_t* sp = src + static_cast<std::size_t>(e) * elem_size;
    std::size_t d = doff;
    switch (elem_size) {
      case 1: for (std::int64_t j = 0; j < inner; ++j, d += inner_step) dst[d] = sp[j]; break;
      case 2: for (std::int64_t j = 0; j < inner; ++j, d += inner_step) std::memcpy(dst + d, sp + 2 * j, 2); break;
      case 4: for (std::int64_t j = 0; j < inner; ++j, d += inner_step) std::memcpy(dst + d, sp + 4 * j, 4); break;
      case 8: for (std::int64_t j = 0; j < inner; ++j, d += inner_step) std::memcpy(dst + d, sp + 8 * j, 8); break;
      default:
        for (std::int64_t j = 0; j < inner; ++j, d += inner_step) std::memcpy(dst + d, sp + elem_size * j, elem_size);
    }
    for (int i = rank - 2; i >= 0; --i) {
      if (++idx[i] < src_shape[i]) {
        doff += step[i];
        break;
      }
      doff -= step[i] * static_cast<std::size_t>(src_shape[i] - 1);
      idx[i] = 0;
    }
  }
}

}  // namespace cubestream
