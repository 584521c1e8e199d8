// The numcodecs `bitround` codec: encoding rounds float mantissas to `keepbits` bits; the
// result is still a valid float array, so decoding is a copy. Configuration {"keepbits": int}.
#include <cstring>
#include <string>

#include "codec/bytes_to_bytes/config.hpp"
#include "codec/decode_check.hpp"
#include "codec/factories.hpp"

namespace cubestream::codec {

namespace {

class BitroundCodec final : public BytesToBytesCodec {
 public:
  bool is_elementwise_filter() const override { return true; }
  explicit BitroundCodec(nlohmann::json cfg) : cfg_(std::move(cfg)) {}
  std::string name() const override { return "bitround"; }
  nlohmann::json configuration() const override { return cfg_; }
  SizeBound encoded_size(SizeBound decoded) const override { return decoded; }
  std::size_t decode(ByteView in, MutableByteView out) const override {
    CS_DECODE_CHECK(in.size() <= out.size(), kSizeMismatch, "bitround",
                    std::to_string(in.size()) + " bytes do not fit the " + std::to_string(out.size()) +
                        " bytes expected",
                    0);
    if (!in.empty()) std::memcpy(out.data(), in.data(), in.size());
    return in.size();
  }

 private:
  nlohmann::json cfg_;
};

}  // namespace

CodecPtr make_bitround_codec(const nlohmann::json& configuration) {
  config::require_object(configuration, "bitround");
  if (auto k = config::get_int(configuration, "bitround", "keepbits"); k && *k < 0) {
    config::fail("bitround", "keepbits", "must be zero or positive");
  }
  return std::make_shared<BitroundCodec>(configuration);
}

}  // namespace cubestream::codec
