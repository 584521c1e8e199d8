// The numcodecs `zlib` codec: one zlib stream (RFC 1950), as Python's zlib.compress writes it.
// Configuration {"level": int}, irrelevant for decoding. Bytes after the end of the stream are
// ignored, like numcodecs' zlib.decompress does.
#include <zlib.h>

#include "codec/bytes_to_bytes/config.hpp"
#include "codec/bytes_to_bytes/inflate.hpp"
#include "codec/factories.hpp"

namespace cubestream::codec {

namespace {

class ZlibCodec final : public BytesToBytesCodec {
 public:
  explicit ZlibCodec(nlohmann::json cfg) : cfg_(std::move(cfg)) {}
  std::string name() const override { return "zlib"; }
  nlohmann::json configuration() const override { return cfg_; }
  SizeBound encoded_size(SizeBound decoded) const override {
    return {compressBound(static_cast<uLong>(decoded.bytes)), false};
  }
  std::size_t decode(ByteView in, MutableByteView out) const override {
    return inflate_decode(in, out, InflateContainer::kZlib, "zlib", 0);
  }
  bool can_encode() const override { return true; }
  Bytes encode(ByteView in) const override {
    const auto level = config::get_int(cfg_, "zlib", "level").value_or(-1);
    return deflate_encode(in, InflateContainer::kZlib, static_cast<int>(level));
  }

 private:
  nlohmann::json cfg_;
};

}  // namespace

CodecPtr make_zlib_codec(const nlohmann::json& configuration) {
  config::require_object(configuration, "zlib");
  config::get_int(configuration, "zlib", "level");
  return std::make_shared<ZlibCodec>(configuration);
}

}  // namespace cubestream::codec
