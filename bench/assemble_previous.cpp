// The CPU assemble stage as it was before the fused row loops (src/pipeline/assemble.cpp at
// main b05e120), kept only so that bench/assemble_bench.cpp times the old and the new code in
// the same run: decode_normalise into float32 per block of a row, then a separate cast pass.
#include "assemble_previous.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

namespace cubestream::bench {

namespace {

constexpr std::size_t kRunBlock = 8192;

// Writes n floats to the output at dst (element index `at` of the tensor) in the output dtype.
void store(const float* v, std::size_t n, OutputDType dtype, void* tensor, std::int64_t at) {
  switch (dtype) {
    case OutputDType::kFloat32:
      std::memcpy(static_cast<float*>(tensor) + at, v, n * sizeof(float));
      break;
    case OutputDType::kBFloat16:
      float_to_bfloat16(v, static_cast<std::uint16_t*>(tensor) + at, n);
      break;
    case OutputDType::kFloat16:
      float_to_float16(v, static_cast<std::uint16_t*>(tensor) + at, n);
      break;
  }
}

}  // namespace

void assemble_piece_previous(const pipeline::Piece& piece, const std::uint8_t* unit, const pipeline::UnitSource& source,
                             const Normalisation& norm, std::optional<float> nan_fill, OutputDType dtype, void* tensor) {
  const std::size_t nl = piece.count.size();
  for (auto c : piece.count)
    if (c <= 0) return;
  const DataType& dt = source.array.dtype();
  const std::size_t esize = dt.size;
  // The innermost layout dim is a run: contiguous in the tensor (its dst stride is 1);
  // contiguous in the unit unless it broadcasts (stride 0) or the variable's axes are
  // ordered otherwise than the layout (then it is gathered first).
  const std::int64_t run = nl ? piece.count[nl - 1] : 1;
  const std::int64_t run_src = nl ? piece.src_stride[nl - 1] : 0;
  thread_local std::vector<float> vals;
  thread_local std::vector<std::uint8_t> gathered;
  vals.resize(kRunBlock);
  std::vector<std::int64_t> idx(nl > 0 ? nl - 1 : 0, 0);
  for (;;) {
    std::int64_t so = piece.src_offset, dofs = piece.dst_offset;
    for (std::size_t l = 0; l + 1 < nl; ++l) {
      so += idx[l] * piece.src_stride[l];
      dofs += idx[l] * piece.dst_stride[l];
    }
    for (std::int64_t done = 0; done < run;) {
      const auto n = static_cast<std::size_t>(std::min<std::int64_t>(run - done, kRunBlock));
      const std::uint8_t* raw;
      if (run_src == 1) {
        raw = unit + static_cast<std::size_t>(so + done) * esize;
      } else {
        gathered.resize(n * esize);
        for (std::size_t i = 0; i < n; ++i) {
          std::memcpy(gathered.data() + i * esize,
                      unit + static_cast<std::size_t>(so + (done + static_cast<std::int64_t>(i)) * run_src) * esize, esize);
        }
        raw = gathered.data();
      }
      if (dtype == OutputDType::kFloat32) {
        decode_normalise(raw, dt, n, source.encoding, norm, nan_fill, static_cast<float*>(tensor) + dofs + done);
      } else {
        decode_normalise(raw, dt, n, source.encoding, norm, nan_fill, vals.data());
        store(vals.data(), n, dtype, tensor, dofs + done);
      }
      done += static_cast<std::int64_t>(n);
    }
    std::size_t l = nl > 0 ? nl - 1 : 0;
    while (l > 0 && ++idx[l - 1] == piece.count[l - 1]) {
      idx[l - 1] = 0;
      --l;
    }
    if (l == 0) break;
  }
}

}  // namespace cubestream::bench
