// The numcodecs `delta` codec. Encoding stores the first element and then the differences of
// neighbours, cast to `astype`; decoding is numpy's `np.cumsum(enc, out=dec)` with `dec` of
// type `dtype`. Configuration {"dtype": "<i4", "astype": "<i2"} (astype defaults to dtype).
//
// What cumsum does, exactly (numpy 1.x and 2.x): the running sum is kept in the promoted type
// L = np.promote_types(astype, dtype), starting from the first element, and each partial sum
// is cast to dtype. So integer sums wrap at L's width (and then at dtype's), float sums round
// once per addition in L's precision, and a float L cast to an integer dtype truncates.
#include <string>

#include "codec/bytes_to_bytes/config.hpp"
#include "codec/bytes_to_bytes/filter_dtype.hpp"
#include "codec/bytes_to_bytes/filter_params.hpp"
#include "codec/decode_check.hpp"
#include "codec/factories.hpp"

namespace cubestream::codec {

namespace {

using logic::NumType;

class DeltaCodec final : public BytesToBytesCodec {
 public:
  bool is_elementwise_filter() const override { return true; }
  DeltaCodec(logic::DeltaParams p, nlohmann::json cfg) : p_(p), cfg_(std::move(cfg)) {}
  std::string name() const override { return "delta"; }
  nlohmann::json configuration() const override { return cfg_; }
  SizeBound encoded_size(SizeBound decoded) const override {
    return {decoded.bytes / p_.dtype.size * p_.astype.size, decoded.exact};
  }

  std::size_t decode(ByteView in, MutableByteView out) const override {
    const std::size_t n = filter_element_count("delta", in.size(), out.size(), p_.astype, p_.dtype);
    // float L: sums rounded once per addition in L's precision, in order; integer (or bool)
    // L: L is at least as wide as dtype, so modular 64-bit sums truncated to dtype's width
    // give what numpy gives; bool + bool is logical or
    if (logic::delta_is_float(p_)) {
      logic::delta_float_decode(p_, in.data(), out.data(), n);
    } else {
      logic::delta_int_decode(p_, in.data(), out.data(), n);
    }
    return n * p_.dtype.size;
  }

 private:
  logic::DeltaParams p_;
  nlohmann::json cfg_;
};

}  // namespace

logic::DeltaParams delta_params(const nlohmann::json& configuration) {
  config::require_object(configuration, "delta");
  const NumType dtype = filter_dtype(configuration, "delta", "dtype");
  const NumType astype =
      config::find(configuration, "astype") ? filter_dtype(configuration, "delta", "astype") : dtype;
  return logic::delta_params(dtype, astype);
}

CodecPtr make_delta_codec(const nlohmann::json& configuration) {
  return std::make_shared<DeltaCodec>(delta_params(configuration), configuration);
}

}  // namespace cubestream::codec
