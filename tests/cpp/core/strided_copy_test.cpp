// copy_box / fill_box / permute_axes against element-by-element reference loops, on random
// shapes and boxes (including empty extents, rank 0 and full-extent runs that get merged).
#include "core/strided_copy.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

namespace cubestream {
namespace {

std::vector<std::int64_t> unflatten(std::int64_t flat, const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> idx(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  return idx;
}

std::int64_t flatten(const std::vector<std::int64_t>& idx, const std::vector<std::int64_t>& shape) {
  std::int64_t f = 0;
  for (std::size_t d = 0; d < shape.size(); ++d) f = f * shape[d] + idx[d];
  return f;
}

std::int64_t count(const std::vector<std::int64_t>& s) {
  std::int64_t n = 1;
  for (auto x : s) n *= x;
  return n;
}

TEST(StridedCopy, CopyBoxMatchesReference) {
  std::mt19937 rng(7);
  for (int iter = 0; iter < 400; ++iter) {
    const int rank = static_cast<int>(rng() % 5);
    const std::size_t elem = std::vector<std::size_t>{1, 2, 4, 8, 3}[rng() % 5];
    std::vector<std::int64_t> ss(rank), ds(rank), sst(rank), dst(rank), box(rank);
    for (int d = 0; d < rank; ++d) {
      ss[d] = 1 + rng() % 6;
      ds[d] = 1 + rng() % 6;
      box[d] = rng() % (std::min(ss[d], ds[d]) + 1);  // may be 0, may be the full extent
      if (rng() % 3 == 0) box[d] = std::min(ss[d], ds[d]);
      sst[d] = rng() % (ss[d] - box[d] + 1);
      dst[d] = rng() % (ds[d] - box[d] + 1);
    }
    std::vector<std::uint8_t> src(count(ss) * elem), dst_buf(count(ds) * elem, 0xAB), ref(count(ds) * elem, 0xAB);
    for (auto& b : src) b = static_cast<std::uint8_t>(rng());
    copy_box(src.data(), ss, sst, dst_buf.data(), ds, dst, box, elem);
    for (std::int64_t i = 0; i < count(box); ++i) {
      auto b = unflatten(i, box);
      std::vector<std::int64_t> si(rank), di(rank);
      for (int d = 0; d < rank; ++d) {
        si[d] = sst[d] + b[d];
        di[d] = dst[d] + b[d];
      }
      std::memcpy(&ref[flatten(di, ds) * elem], &src[flatten(si, ss) * elem], elem);
    }
    ASSERT_EQ(dst_buf, ref) << "iteration " << iter << " rank " << rank;
  }
}

TEST(StridedCopy, FillBoxWritesOnlyTheBox) {
  std::mt19937 rng(11);
  for (int iter = 0; iter < 200; ++iter) {
    const int rank = 1 + static_cast<int>(rng() % 4);
    const std::size_t elem = std::vector<std::size_t>{1, 2, 4, 8}[rng() % 4];
    std::vector<std::int64_t> ds(rank), st(rank), box(rank);
    for (int d = 0; d < rank; ++d) {
      ds[d] = 1 + rng() % 7;
      box[d] = rng() % (ds[d] + 1);
      st[d] = rng() % (ds[d] - box[d] + 1);
    }
    std::vector<std::uint8_t> value(elem);
    for (auto& b : value) b = static_cast<std::uint8_t>(rng() % 2 ? rng() : 0);
    std::vector<std::uint8_t> buf(count(ds) * elem, 0x5A), ref = buf;
    fill_box(buf.data(), ds, st, box, value.data(), elem);
    for (std::int64_t i = 0; i < count(box); ++i) {
      auto b = unflatten(i, box);
      for (int d = 0; d < rank; ++d) b[d] += st[d];
      std::memcpy(&ref[flatten(b, ds) * elem], value.data(), elem);
    }
    ASSERT_EQ(buf, ref) << "iteration " << iter;
  }
}

TEST(StridedCopy, PermuteAxesMatchesReference) {
  std::mt19937 rng(3);
  for (int iter = 0; iter < 200; ++iter) {
    const int rank = 1 + static_cast<int>(rng() % 4);
    const std::size_t elem = std::vector<std::size_t>{1, 2, 4, 8, 16}[rng() % 5];
    std::vector<std::int64_t> src_shape(rank);
    for (auto& s : src_shape) s = 1 + rng() % 5;
    std::vector<int> perm(rank);
    for (int i = 0; i < rank; ++i) perm[i] = i;
    std::shuffle(perm.begin(), perm.end(), rng);
    std::vector<std::int64_t> dst_shape(rank);
    for (int i = 0; i < rank; ++i) dst_shape[perm[i]] = src_shape[i];
    std::vector<std::uint8_t> src(count(src_shape) * elem), out(src.size()), ref(src.size());
    for (auto& b : src) b = static_cast<std::uint8_t>(rng());
    permute_axes(src.data(), src_shape, perm, out.data(), elem);
    for (std::int64_t i = 0; i < count(src_shape); ++i) {
      auto e = unflatten(i, src_shape);
      std::vector<std::int64_t> d(rank);
      for (int k = 0; k < rank; ++k) d[perm[k]] = e[k];
      std::memcpy(&ref[flatten(d, dst_shape) * elem], &src[i * elem], elem);
    }
    ASSERT_EQ(out, ref) << "iteration " << iter;
  }
}

}  // namespace
}  // namespace cubestream
