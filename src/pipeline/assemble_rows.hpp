// The per-element step of the CPU assemble stage as one fused pass over a contiguous row:
// load the stored type, CF decode (mask to NaN, scale_factor / add_offset), normalise, round
// to float32, NaN fill, cast to the output dtype. The per-variable constants are chosen once
// (RowConverter's constructor) and the inner loop is a template per (stored type, output
// dtype, normalisation mode) without per-element branches, so that the compiler vectorises
// it; on x86-64 each loop is also compiled for AVX2 and AVX-512 and the widest the CPU runs
// is picked at run time.
//
// The arithmetic is decode_normalise's (Selection::read) bit for bit, which the GPU kernel
// (src/cuda/assemble/assemble.cu) also follows: the stored value as float64, masking with the
// missing values compared in float64, v * scale + offset and (v - mean) / std each rounded in
// float64 (no fused multiply-add: the file is compiled with -ffp-contract=off and the ISA
// levels leave FMA out), one rounding to float32, then the NaN fill and the
// round-to-nearest-even cast of core/float16_bits.hpp. Where a CF step is absent it runs
// with constants that make it the identity on every float64 including -0 and NaN (scale 1,
// offset -0, missing values NaN), so one loop serves every encoding.
//
// The AVX-512 loops multiply by 1/std instead of dividing, which gives the same float32 except
// where the float64 quotient lies within a few float64 ulps of a point halfway between two
// float32s (or in the float32 subnormal range); they flag such elements and the row is then
// converted again with the division (see recip_needs_division in the .cpp for the bound).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "cubestream/dataset.hpp"
#include "cubestream/dtype.hpp"
#include "cubestream/loader.hpp"
#include "cubestream/selection.hpp"

namespace cubestream::pipeline {

// Missing values the fused loop compares with (the GPU kernel's limit too); a variable with
// more non-NaN missing values takes decode_normalise in blocks instead.
inline constexpr int kRowMaxMissing = 4;

struct RowConstants {
  double missing[kRowMaxMissing];  // unused entries NaN: NaN compares unequal to everything
  double scale = 1.0;
  double offset = -0.0;            // x + -0.0 == x for every x, -0.0 included (+0.0 is not)
  double mean = 0.0;
  double std = 1.0;
  double inv_std = 1.0;            // 1 / std rounded, for the multiplying loops
  float fill = 0.0f;
  bool has_fill = false;
};

// Returns true when the row must be converted again with the dividing loop.
using RowFn = bool (*)(const std::uint8_t* src, std::size_t n, void* dst, const RowConstants& k);

// Instruction set levels the loops are compiled for; kBase is the build's own (x86-64: SSE2).
enum class RowIsa { kBase, kAvx2, kAvx512 };

// The levels this CPU runs, kBase first, the widest last.
const std::vector<RowIsa>& supported_row_isas();

class RowConverter {
 public:
  // Error(kUnsupported) for element types CF decoding does not take (complex, datetime of a
  // size other than 8), as decode_normalise.
  // `dtype` and `enc` must outlive the converter. `isa` must be one of supported_row_isas()
  // (tests compare the levels); by default the widest.
  RowConverter(const DataType& dtype, const CFEncoding& enc, const Normalisation& norm, std::optional<float> nan_fill,
               OutputDType out);
  RowConverter(const DataType& dtype, const CFEncoding& enc, const Normalisation& norm, std::optional<float> nan_fill,
               OutputDType out, RowIsa isa);

  // Converts n consecutive stored elements at src (native byte order, any alignment) into n
  // consecutive output elements at dst.
  void convert(const std::uint8_t* src, std::size_t n, void* dst) const;

  std::size_t in_size() const { return in_size_; }
  std::size_t out_size() const { return out_size_; }

 private:
  RowFn fn_ = nullptr;     // null: the block fallback through decode_normalise
  RowFn exact_ = nullptr;  // the dividing loop, where fn_ may ask for it
  RowConstants k_;
  std::size_t in_size_, out_size_;
  OutputDType out_;
  // For the fallback only.
  const DataType* dtype_;
  const CFEncoding* enc_;
  Normalisation norm_;
  std::optional<float> nan_fill_;
};

}  // namespace cubestream::pipeline
