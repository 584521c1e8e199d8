// Copying and filling boxes of N-dimensional C-order arrays of fixed-size elements.
//
// These are the inner loops of region reads: a chunk's intersection with the requested region
// is copied from the decoded chunk into the output, and a missing chunk's intersection is
// filled with the fill value. Runs that are contiguous in both arrays are merged so that the
// common case (full rows or full planes) becomes a few large memcpy calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace cubestream {

using Shape = std::span<const std::int64_t>;

// Copies the box of extent `box` at `src_start` in `src` (shape src_shape) to `dst_start` in
// `dst` (shape dst_shape). All spans have the array rank; the caller guarantees bounds.
void copy_box(const std::uint8_t* src, Shape src_shape, Shape src_start, std::uint8_t* dst,
              Shape dst_shape, Shape dst_start, Shape box, std::size_t elem_size);

// Writes `value` (one element) into every element of the box at `dst_start` in `dst`.
void fill_box(std::uint8_t* dst, Shape dst_shape, Shape dst_start, Shape box,
              const std::uint8_t* value, std::size_t elem_size);

// Writes the array `src` of shape `src_shape` into `dst` as its axis permutation: the
// element at index e of src goes to index d of dst with d[perm[i]] = e[i] (so dst has shape
// dst_shape[perm[i]] = src_shape[i]). This is the decode direction of the transpose codec.
void permute_axes(const std::uint8_t* src, Shape src_shape, std::span<const int> perm,
                  std::uint8_t* dst, std::size_t elem_size);

// Byte offset of C-order index `index` in an array of `shape`.
std::size_t c_order_offset(Shape shape, Shape index, std::size_t elem_size);

}  // namespace cubestream
