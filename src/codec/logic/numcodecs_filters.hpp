// Per-element decode logic of the numcodecs filters delta and fixedscaleoffset, shared by the
// CPU codecs (bytes_to_bytes/delta.cpp, fixedscaleoffset.cpp) and the GPU kernels
// (src/cuda/decode/byte_filters.cu). The numpy semantics they reproduce are described in those
// codec files and in numpy_cast.hpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "codec/logic/numpy_cast.hpp"
#include "core/host_device.hpp"

namespace cubestream::codec::logic {

// ---- fixedscaleoffset: dec = (enc / scale + offset).astype(dtype) -------------------------

struct FixedScaleOffsetParams {
  NumType dtype, astype;
  NumType div_type, add_type;  // the types numpy computes `/ scale` and `+ offset` in
  double scale = 1, offset = 0;  // already rounded to div_type / add_type
};

// Element i of `in` (astype) decoded into element i of `out` (dtype).
CS_HD inline void fixedscaleoffset_element(const FixedScaleOffsetParams& p, const std::uint8_t* in,
                                           std::uint8_t* out, std::size_t i) {
  const std::uint64_t bits = load_bits(in + i * p.astype.size, p.astype.size, p.astype.big_endian);
  // the element in T1 (exact: T1 holds every astype value, or is float64 for integers)
  const double x = bits_to_double(bits, p.astype);
  const double q = round_to_float_type(x / p.scale, p.div_type.size);
  const double v = round_to_float_type(q + p.offset, p.add_type.size);
  store_bits(out + i * p.dtype.size, double_to_bits(v, p.dtype), p.dtype.size, p.dtype.big_endian);
}

// ---- delta: dec = np.cumsum(enc) with the running sum in promote_types(astype, dtype) --------

struct DeltaParams {
  NumType dtype, astype;
  NumType loop;  // promote_types(astype, dtype): the type the running sum is kept in
};

CS_HD inline DeltaParams delta_params(NumType dtype, NumType astype) {
  return DeltaParams{dtype, astype, promote_types(astype, dtype)};
}

CS_HD inline bool delta_is_float(const DeltaParams& p) { return p.loop.kind == NumKind::kFloat; }

// An integer (or bool) loop type: the element as a 64-bit pattern whose modular sums,
// truncated to the loop's width, are what numpy computes. Modular addition is associative, so
// a parallel prefix sum of these gives numpy's cumsum exactly.
CS_HD inline std::uint64_t delta_int_term(const DeltaParams& p, const std::uint8_t* in, std::size_t i) {
  const std::uint64_t bits = load_bits(in + i * p.astype.size, p.astype.size, p.astype.big_endian);
  return bits_to_u64(bits, p.astype);
}

// Combines two partial sums: bool + bool is logical or; other integers add modulo 2^64 (and
// are truncated to the loop width when stored).
CS_HD inline std::uint64_t delta_int_combine(const DeltaParams& p, std::uint64_t a, std::uint64_t b) {
  if (p.loop.kind == NumKind::kBool) return (a | b) != 0 ? 1u : 0u;
  return a + b;
}

// Stores a running integer sum as element i of the output.
CS_HD inline void delta_int_store(const DeltaParams& p, std::uint8_t* out, std::size_t i, std::uint64_t acc) {
  acc = truncate_bits(acc, p.loop.size);
  store_bits(out + i * p.dtype.size, int_to_bits(acc, p.loop.kind == NumKind::kInt, p.dtype), p.dtype.size,
             p.dtype.big_endian);
}

// A float loop type: numpy adds in order, rounding each partial sum to the loop's precision,
// so this runs element after element (the GPU gives each buffer one thread).
CS_HD inline void delta_float_decode(const DeltaParams& p, const std::uint8_t* in, std::uint8_t* out,
                                     std::size_t n) {
  double acc = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t bits = load_bits(in + i * p.astype.size, p.astype.size, p.astype.big_endian);
    // the element cast to L (exact for floats, since L is at least as wide as astype)
    const double x = round_to_float_type(bits_to_double(bits, p.astype), p.loop.size);
    acc = i == 0 ? x : round_to_float_type(acc + x, p.loop.size);
    store_bits(out + i * p.dtype.size, double_to_bits(acc, p.dtype), p.dtype.size, p.dtype.big_endian);
  }
}

// The whole integer decode, serially (the CPU codec and the reference for the GPU scan).
CS_HD inline void delta_int_decode(const DeltaParams& p, const std::uint8_t* in, std::uint8_t* out, std::size_t n) {
  std::uint64_t acc = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t x = delta_int_term(p, in, i);
    acc = i == 0 ? x : delta_int_combine(p, acc, x);
    delta_int_store(p, out, i, acc);
  }
}

}  // namespace cubestream::codec::logic
