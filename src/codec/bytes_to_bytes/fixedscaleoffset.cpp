// The numcodecs `fixedscaleoffset` codec. Encoding stores round((x - offset) * scale) as
// `astype`; decoding is numpy's `(enc / scale + offset).astype(dtype)`.
// Configuration {"scale": number, "offset": number, "dtype": "<f8", "astype": "|u1"}.
//
// numpy's arithmetic decides the precision. With an integer astype (the usual case) both the
// division and the addition are float64. With a float astype numpy 1.x applies value-based
// casting to the Python scalars: enc / scale computes in
// T1 = promote_types(astype, min_scalar_type(scale)), and + offset in
// T2 = promote_types(T1, min_scalar_type(offset)), where a JSON integer is a Python int and a
// JSON fraction a Python float. (numpy 2 computes in astype there; for float32 and float64
// the two agree unless scale or offset is beyond float32's range.) The result is then cast to
// dtype.
#include <string>

#include "codec/bytes_to_bytes/config.hpp"
#include "codec/bytes_to_bytes/filter_dtype.hpp"
#include "codec/decode_check.hpp"
#include "codec/factories.hpp"

namespace cubestream::codec {

namespace {

using logic::NumKind;
using logic::NumType;

NumType min_scalar_type(const config::Number& v) {
  return v.is_integer ? logic::min_scalar_type_int(v.integer) : logic::min_scalar_type_float(v.value);
}

class FixedScaleOffsetCodec final : public BytesToBytesCodec {
 public:
  bool is_elementwise_filter() const override { return true; }
  FixedScaleOffsetCodec(NumType dtype, NumType astype, config::Number scale, config::Number offset,
                        nlohmann::json cfg)
      : dtype_(dtype), astype_(astype), cfg_(std::move(cfg)) {
    if (astype.kind == NumKind::kFloat) {
      div_type_ = logic::promote_types(astype, min_scalar_type(scale));
      add_type_ = logic::promote_types(div_type_, min_scalar_type(offset));
    } else {
      div_type_ = add_type_ = NumType{NumKind::kFloat, 8, false};
    }
    // the scalars as numpy converts them to the operation's type
    scale_ = logic::round_to_float_type(scale.value, div_type_.size);
    offset_ = logic::round_to_float_type(offset.value, add_type_.size);
  }
  std::string name() const override { return "fixedscaleoffset"; }
  nlohmann::json configuration() const override { return cfg_; }
  SizeBound encoded_size(SizeBound decoded) const override {
    return {decoded.bytes / dtype_.size * astype_.size, decoded.exact};
  }

  std::size_t decode(ByteView in, MutableByteView out) const override {
    const std::size_t n = filter_element_count("fixedscaleoffset", in.size(), out.size(), astype_, dtype_);
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t bits =
          logic::load_bits(in.data() + i * astype_.size, astype_.size, astype_.big_endian);
      // the element in T1 (exact: T1 holds every astype value, or is float64 for integers)
      const double x = logic::bits_to_double(bits, astype_);
      const double q = logic::round_to_float_type(x / scale_, div_type_.size);
      const double v = logic::round_to_float_type(q + offset_, add_type_.size);
      logic::store_bits(out.data() + i * dtype_.size, logic::double_to_bits(v, dtype_), dtype_.size,
                        dtype_.big_endian);
    }
    return n * dtype_.size;
  }

 private:
  NumType dtype_, astype_, div_type_, add_type_;
  double scale_ = 1, offset_ = 0;
  nlohmann::json cfg_;
};

}  // namespace

CodecPtr make_fixedscaleoffset_codec(const nlohmann::json& configuration) {
  constexpr const char* kName = "fixedscaleoffset";
  config::require_object(configuration, kName);
  const auto scale = config::get_number(configuration, kName, "scale");
  const auto offset = config::get_number(configuration, kName, "offset");
  if (!scale) config::fail(kName, "scale", "is required");
  if (!offset) config::fail(kName, "offset", "is required");
  if (scale->value == 0.0) config::fail(kName, "scale", "must not be 0");
  const NumType dtype = filter_dtype(configuration, kName, "dtype");
  const NumType astype = config::find(configuration, "astype") ? filter_dtype(configuration, kName, "astype") : dtype;
  return std::make_shared<FixedScaleOffsetCodec>(dtype, astype, *scale, *offset, configuration);
}

}  // namespace cubestream::codec
