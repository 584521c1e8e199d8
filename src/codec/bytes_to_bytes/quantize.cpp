// The numcodecs `quantize` codec: encoding rounds floats to `digits` decimal digits and casts
// to `astype`; decoding is `enc.astype(dtype)` (nearest-even rounding when narrowing).
// Configuration {"digits": int, "dtype": "<f8", "astype": "<f4"}; both types are floats.
#include <string>

#include "codec/bytes_to_bytes/config.hpp"
#include "codec/bytes_to_bytes/filter_dtype.hpp"
#include "codec/decode_check.hpp"
#include "codec/factories.hpp"

namespace cubestream::codec {

namespace {

class QuantizeCodec final : public BytesToBytesCodec {
 public:
  bool is_elementwise_filter() const override { return true; }
  QuantizeCodec(logic::NumType dtype, logic::NumType astype, nlohmann::json cfg)
      : dtype_(dtype), astype_(astype), cfg_(std::move(cfg)) {}
  std::string name() const override { return "quantize"; }
  nlohmann::json configuration() const override { return cfg_; }
  SizeBound encoded_size(SizeBound decoded) const override {
    return {decoded.bytes / dtype_.size * astype_.size, decoded.exact};
  }

  std::size_t decode(ByteView in, MutableByteView out) const override {
    const std::size_t n = filter_element_count("quantize", in.size(), out.size(), astype_, dtype_);
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t bits = logic::load_bits(in.data() + i * astype_.size, astype_.size, astype_.big_endian);
      logic::store_bits(out.data() + i * dtype_.size, logic::convert_bits(bits, astype_, dtype_), dtype_.size,
                        dtype_.big_endian);
    }
    return n * dtype_.size;
  }

 private:
  logic::NumType dtype_, astype_;
  nlohmann::json cfg_;
};

}  // namespace

CodecPtr make_quantize_codec(const nlohmann::json& configuration) {
  config::require_object(configuration, "quantize");
  config::get_int(configuration, "quantize", "digits");
  const logic::NumType dtype = filter_dtype(configuration, "quantize", "dtype");
  const logic::NumType astype =
      config::find(configuration, "astype") ? filter_dtype(configuration, "quantize", "astype") : dtype;
  if (dtype.kind != logic::NumKind::kFloat || astype.kind != logic::NumKind::kFloat) {
    throw Error(ErrorCode::kInvalidMetadata, "codec 'quantize': dtype and astype must be float types, got " +
                                                 numpy_str(dtype) + " and " + numpy_str(astype));
  }
  return std::make_shared<QuantizeCodec>(dtype, astype, configuration);
}

}  // namespace cubestream::codec
