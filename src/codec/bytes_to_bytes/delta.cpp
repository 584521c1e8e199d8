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
#include "codec/decode_check.hpp"
#include "codec/factories.hpp"

namespace cubestream::codec {

namespace {

using logic::NumKind;
using logic::NumType;

class DeltaCodec final : public BytesToBytesCodec {
 public:
  bool is_elementwise_filter() const override { return true; }
  DeltaCodec(NumType dtype, NumType astype, nlohmann::json cfg)
      : dtype_(dtype), astype_(astype), loop_(logic::promote_types(astype, dtype)), cfg_(std::move(cfg)) {}
  std::string name() const override { return "delta"; }
  nlohmann::json configuration() const override { return cfg_; }
  SizeBound encoded_size(SizeBound decoded) const override {
    return {decoded.bytes / dtype_.size * astype_.size, decoded.exact};
  }

  std::size_t decode(ByteView in, MutableByteView out) const override {
    const std::size_t n = filter_element_count("delta", in.size(), out.size(), astype_, dtype_);
    if (loop_.kind == NumKind::kFloat) {
      decode_float(in.data(), out.data(), n);
    } else {
      decode_integer(in.data(), out.data(), n);
    }
    return n * dtype_.size;
  }

 private:
  std::uint64_t load(const std::uint8_t* in, std::size_t i) const {
    return logic::load_bits(in + i * astype_.size, astype_.size, astype_.big_endian);
  }
  void store(std::uint8_t* out, std::size_t i, std::uint64_t bits) const {
    logic::store_bits(out + i * dtype_.size, bits, dtype_.size, dtype_.big_endian);
  }

  void decode_float(const std::uint8_t* in, std::uint8_t* out, std::size_t n) const {
    double acc = 0;
    for (std::size_t i = 0; i < n; ++i) {
      // the element cast to L (exact for floats, since L is at least as wide as astype)
      const double x = logic::round_to_float_type(logic::bits_to_double(load(in, i), astype_), loop_.size);
      acc = i == 0 ? x : logic::round_to_float_type(acc + x, loop_.size);
      store(out, i, logic::double_to_bits(acc, dtype_));
    }
  }

  // Integer (or bool) L: L is at least as wide as dtype, so modular 64-bit sums truncated to
  // dtype's width give what numpy gives; bool + bool is logical or.
  void decode_integer(const std::uint8_t* in, std::uint8_t* out, std::size_t n) const {
    std::uint64_t acc = 0;
    const bool boolean = loop_.kind == NumKind::kBool;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t x = logic::bits_to_u64(load(in, i), astype_);
      if (boolean) {
        acc = (acc | x) != 0 ? 1u : 0u;
      } else {
        acc = logic::truncate_bits(i == 0 ? x : acc + x, loop_.size);
      }
      store(out, i, logic::int_to_bits(acc, loop_.kind == NumKind::kInt, dtype_));
    }
  }

  NumType dtype_, astype_, loop_;
  nlohmann::json cfg_;
};

}  // namespace

CodecPtr make_delta_codec(const nlohmann::json& configuration) {
  config::require_object(configuration, "delta");
  const NumType dtype = filter_dtype(configuration, "delta", "dtype");
  const NumType astype =
      config::find(configuration, "astype") ? filter_dtype(configuration, "delta", "astype") : dtype;
  return std::make_shared<DeltaCodec>(dtype, astype, configuration);
}

}  // namespace cubestream::codec
