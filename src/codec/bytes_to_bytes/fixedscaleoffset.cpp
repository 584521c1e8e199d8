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
#include "codec/bytes_to_bytes/filter_params.hpp"
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
  FixedScaleOffsetCodec(logic::FixedScaleOffsetParams p, nlohmann::json cfg) : p_(p), cfg_(std::move(cfg)) {}
  std::string name() const override { return "fixedscaleoffset"; }
  nlohmann::json configuration() const override { return cfg_; }
  SizeBound encoded_size(SizeBound decoded) const override {
    return {decoded.bytes / p_.dtype.size * p_.astype.size, decoded.exact};
  }

  std::size_t decode(ByteView in, MutableByteView out) const override {
    const std::size_t n = filter_element_count("fixedscaleoffset", in.size(), out.size(), p_.astype, p_.dtype);
    for (std::size_t i = 0; i < n; ++i) logic::fixedscaleoffset_element(p_, in.data(), out.data(), i);
    return n * p_.dtype.size;
  }

 private:
  logic::FixedScaleOffsetParams p_;
  nlohmann::json cfg_;
};

}  // namespace

logic::FixedScaleOffsetParams fixedscaleoffset_params(const nlohmann::json& configuration) {
  constexpr const char* kName = "fixedscaleoffset";
  config::require_object(configuration, kName);
  const auto scale = config::get_number(configuration, kName, "scale");
  const auto offset = config::get_number(configuration, kName, "offset");
  if (!scale) config::fail(kName, "scale", "is required");
  if (!offset) config::fail(kName, "offset", "is required");
  if (scale->value == 0.0) config::fail(kName, "scale", "must not be 0");
  logic::FixedScaleOffsetParams p;
  p.dtype = filter_dtype(configuration, kName, "dtype");
  p.astype = config::find(configuration, "astype") ? filter_dtype(configuration, kName, "astype") : p.dtype;
  if (p.astype.kind == NumKind::kFloat) {
    p.div_type = logic::promote_types(p.astype, min_scalar_type(*scale));
    p.add_type = logic::promote_types(p.div_type, min_scalar_type(*offset));
  } else {
    p.div_type = p.add_type = NumType{NumKind::kFloat, 8, false};
  }
  // the scalars as numpy converts them to the operation's type
  p.scale = logic::round_to_float_type(scale->value, p.div_type.size);
  p.offset = logic::round_to_float_type(offset->value, p.add_type.size);
  return p;
}

CodecPtr make_fixedscaleoffset_codec(const nlohmann::json& configuration) {
  return std::make_shared<FixedScaleOffsetCodec>(fixedscaleoffset_params(configuration), configuration);
}

}  // namespace cubestream::codec
