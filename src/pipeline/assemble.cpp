#include "pipeline/assemble.hpp"

#include <algorithm>
#include <cstring>
#include <vector>


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

}  // namespace

void assemble_piece(const Piece& piece, const std::uint8_t* unit, const UnitSource& source,
                    const Normalisation& norm, std::optional<float> nan_fill, OutputDType dtype, void* tensor) {
  assemble_piece(piece, unit, source, norm, nan_fill, dtype, tensor, supported_row_isas().back());
}

void assemble_piece(const Piece& piece, const std::uint8_t* unit, const UnitSource& source,
                    const Normalisation& norm, std::optional<float> nan_fill, OutputDType dtype, void* tensor,
                    RowIsa isa) {
  for (auto c : piece.count)
    if (c <= 0) return;
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
  std::vector<std::int64_t> idx(nd - 1, 0);
  std::int64_t so = piece.src_offset, dofs = piece.dst_offset;
  for (;;) {
    if (run_src == 1) {
      conv.convert(unit + static_cast<std::size_t>(so) * isz, static_cast<std::size_t>(run),
                   out + static_cast<std::size_t>(dofs) * osz);
    } else {
      gathered.resize(kGatherBlock * isz);
      for (std::int64_t done = 0; done < run;) {
        const auto n = static_cast<std::size_t>(std::min<std::int64_t>(run - done, kGatherBlock));
        const std::uint8_t* s = unit + static_cast<std::size_t>(so + done * run_src) * isz;
        const std::size_t step = static_cast<std::size_t>(run_src) * isz;
        for (std::size_t i = 0; i < n; ++i) std::memcpy(gathered.data() + i * isz, s + i * step, isz);
        conv.convert(gathered.data(), n, out + static_cast<std::size_t>(dofs + done) * osz);
        done += static_cast<std::int64_t>(n);
      }
    }
    // Next row: odometer over the outer dims, offsets kept incrementally.
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

}  // namespace cubestream::pipeline
