#include "pipeline/assemble.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "cubestream/error.hpp"

namespace cubestream::pipeline {

namespace {

// Elements gathered at a time when the innermost dim is not contiguous in the unit.
constexpr std::size_t kGatherBlock = 4096;

// A piece's box with dims of count 1 dropped and neighbouring dims merged where they are
// contiguous in both the unit and the tensor, so that rows are as long as the layout allows
// (a whole plane when a patch spans whole unit rows) and the odometer turns rarely.
struct Box {
  std::vector<std::int64_t> count, src_stride, dst_stride;
};

Box collapse(const Piece& piece) {
  Box b;
  for (std::size_t l = 0; l < piece.count.size(); ++l) {
    if (piece.count[l] == 1) continue;
    const std::int64_t c = piece.count[l], ss = piece.src_stride[l], ds = piece.dst_stride[l];
    if (!b.count.empty() && b.src_stride.back() == c * ss && b.dst_stride.back() == c * ds) {
      b.count.back() *= c;
      b.src_stride.back() = ss;
      b.dst_stride.back() = ds;
      continue;
    }
    b.count.push_back(c);
    b.src_stride.push_back(ss);
    b.dst_stride.push_back(ds);
  }
  // Rows are contiguous in the tensor. The planner's innermost layout dim always is (C order),
  // but when its count is 1 it was dropped above: then rows are single elements.
  if (b.count.empty() || b.dst_stride.back() != 1) {
    b.count.push_back(1);
    b.src_stride.push_back(1);
    b.dst_stride.push_back(1);
  }
  return b;
}

// Calls row(src, dst) with the first element of each row of the box, in the unit and in the
// tensor: an odometer over the outer dims with the offsets kept incrementally.
template <class Row>
void for_each_row(const Box& b, std::int64_t so, std::int64_t dofs, Row&& row) {
  const std::size_t nd = b.count.size();
  std::vector<std::int64_t> idx(nd - 1, 0);
  for (;;) {
    row(so, dofs);
    std::size_t l = nd - 1;
    for (; l > 0; --l) {
      if (++idx[l - 1] < b.count[l - 1]) {
        so += b.src_stride[l - 1];
        dofs += b.dst_stride[l - 1];
        break;
      }
      idx[l - 1] = 0;
      so -= (b.count[l - 1] - 1) * b.src_stride[l - 1];
      dofs -= (b.count[l - 1] - 1) * b.dst_stride[l - 1];
    }
    if (l == 0) return;
  }
}

bool empty_piece(const Piece& piece) {
  for (auto c : piece.count)
    if (c <= 0) return true;
  return false;
}

}  // namespace

void assemble_piece(const Piece& piece, const std::uint8_t* unit, const UnitSource& source,
                    const Normalisation& norm, std::optional<float> nan_fill, OutputDType dtype, void* tensor) {
  assemble_piece(piece, unit, source, norm, nan_fill, dtype, tensor, supported_row_isas().back());
}

void assemble_piece(const Piece& piece, const std::uint8_t* unit, const UnitSource& source,
                    const Normalisation& norm, std::optional<float> nan_fill, OutputDType dtype, void* tensor,
                    RowIsa isa) {
  if (empty_piece(piece)) return;
  const RowConverter conv(source.array.dtype(), source.encoding, norm, nan_fill, dtype, isa);
  const Box b = collapse(piece);
  const std::size_t nd = b.count.size();
  // The innermost dim is a row: contiguous in the tensor; in the unit too unless it
  // broadcasts (stride 0) or the variable's axes are ordered otherwise than the layout, and
  // then it is gathered first.
  const std::int64_t run = b.count[nd - 1];
  const std::int64_t run_src = b.src_stride[nd - 1];
  const std::size_t isz = conv.in_size(), osz = conv.out_size();
  auto* out = static_cast<std::uint8_t*>(tensor);
  thread_local std::vector<std::uint8_t> gathered;
  for_each_row(b, piece.src_offset, piece.dst_offset, [&](std::int64_t so, std::int64_t dofs) {
    if (run_src == 1) {
      conv.convert(unit + static_cast<std::size_t>(so) * isz, static_cast<std::size_t>(run),
                   out + static_cast<std::size_t>(dofs) * osz);
      return;
    }
    gathered.resize(kGatherBlock * isz);
    for (std::int64_t done = 0; done < run;) {
      const auto n = static_cast<std::size_t>(std::min<std::int64_t>(run - done, kGatherBlock));
      const std::uint8_t* s = unit + static_cast<std::size_t>(so + done * run_src) * isz;
      const std::size_t step = static_cast<std::size_t>(run_src) * isz;
      for (std::size_t i = 0; i < n; ++i) std::memcpy(gathered.data() + i * isz, s + i * step, isz);
      conv.convert(gathered.data(), n, out + static_cast<std::size_t>(dofs + done) * osz);
      done += static_cast<std::int64_t>(n);
    }
  });
}

bool piece_rows_contiguous(const Piece& piece, std::int64_t min_run) {
  if (empty_piece(piece)) return true;
  const Box b = collapse(piece);
  return b.src_stride.back() == 1 && b.count.back() >= min_run;
}

void assemble_piece_band(const Piece& piece, const std::uint8_t* band, std::int64_t first, std::int64_t count,
                         const UnitSource& source, const Normalisation& norm, std::optional<float> nan_fill,
                         OutputDType dtype, void* tensor) {
  assemble_piece_band(piece, band, first, count, source, norm, nan_fill, dtype, tensor, supported_row_isas().back());
}

void assemble_piece_band(const Piece& piece, const std::uint8_t* band, std::int64_t first, std::int64_t count,
                         const UnitSource& source, const Normalisation& norm, std::optional<float> nan_fill,
                         OutputDType dtype, void* tensor, RowIsa isa) {
  if (empty_piece(piece) || count <= 0) return;
  const Box b = collapse(piece);
  if (b.src_stride.back() != 1) {
    throw Error(ErrorCode::kInternal, "assemble_piece_band: the piece's rows are not contiguous in the unit");
  }
  const std::int64_t run = b.count.back();
  const std::int64_t last = first + count;
  // The piece's extent in the unit: most pieces of a unit miss most of its blocks.
  std::int64_t lo = piece.src_offset, hi = piece.src_offset + run;
  for (std::size_t l = 0; l + 1 < b.count.size(); ++l) {
    const std::int64_t span = (b.count[l] - 1) * b.src_stride[l];
    (span < 0 ? lo : hi) += span;
  }
  if (hi <= first || lo >= last) return;
  const RowConverter conv(source.array.dtype(), source.encoding, norm, nan_fill, dtype, isa);
  const std::size_t isz = conv.in_size(), osz = conv.out_size();
  auto* out = static_cast<std::uint8_t*>(tensor);
  // Every row of a piece that reaches the band is visited; a piece has at most a few thousand
  // rows and a unit a few dozen blocks, against the conversion of the block's elements.
  for_each_row(b, piece.src_offset, piece.dst_offset, [&](std::int64_t so, std::int64_t dofs) {
    const std::int64_t lo = std::max(so, first), hi = std::min(so + run, last);
    if (lo >= hi) return;
    conv.convert(band + static_cast<std::size_t>(lo - first) * isz, static_cast<std::size_t>(hi - lo),
                 out + static_cast<std::size_t>(dofs + lo - so) * osz);
  });
}

}  // namespace cubestream::pipeline
