// The `gzip` codec (Zarr v3 core codec; numcodecs "gzip"): a gzip file (RFC 1952) as Python's
// gzip module writes it. Configuration {"level": int}, irrelevant for decoding. Several
// members decode one after another and zero padding between or after them is skipped, as
// Python's gzip reader does; numcodecs writes one member.
#include <zlib.h>

#include "codec/bytes_to_bytes/config.hpp"
#include "codec/bytes_to_bytes/inflate.hpp"
#include "codec/factories.hpp"

namespace cubestream::codec {

namespace {

// gzip adds a 10-byte header and an 8-byte trailer around the deflate data.
constexpr std::size_t kGzipWrapperBytes = 18;

class GzipCodec final : public BytesToBytesCodec {
 public:
  explicit GzipCodec(nlohmann::json cfg) : cfg_(std::move(cfg)) {}
  std::string name() const override { return "gzip"; }
  nlohmann::json configuration() const override { return cfg_; }
  SizeBound encoded_size(SizeBound decoded) const override {
    return {compressBound(static_cast<uLong>(decoded.bytes)) + kGzipWrapperBytes, false};
  }
  std::size_t decode(ByteView in, MutableByteView out) const override {
    return inflate_decode(in, out, InflateContainer::kGzip, "gzip", 0);
  }
  bool can_encode() const override { return true; }
  Bytes encode(ByteView in) const override {
    const auto level = config::get_int(cfg_, "gzip", "level").value_or(-1);
    return deflate_encode(in, InflateContainer::kGzip, static_cast<int>(level));
  }

 private:
  nlohmann::json cfg_;
};

}  // namespace

CodecPtr make_gzip_codec(const nlohmann::json& configuration) {
  config::require_object(configuration, "gzip");
  config::get_int(configuration, "gzip", "level");
  return std::make_shared<GzipCodec>(configuration);
}

}  // namespace cubestream::codec
