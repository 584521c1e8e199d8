// The numcodecs `shuffle` codec: byte shuffle of elements of `elementsize` bytes (default 4)
// over the whole buffer: encoded[j * n + i] = decoded[i * elementsize + j] for n elements.
// elementsize <= 1 is a plain copy. numcodecs 0.11 refuses buffers that are not a whole
// number of elements, so such input is corrupt here too.
#include <cstring>
#include <string>

#include "codec/bytes_to_bytes/config.hpp"
#include "codec/bytes_to_bytes/unshuffle_host.hpp"
#include "codec/decode_check.hpp"
#include "codec/factories.hpp"
#include "codec/logic/byte_shuffle.hpp"

namespace cubestream::codec {

namespace {

class ShuffleCodec final : public BytesToBytesCodec {
 public:
  ShuffleCodec(std::size_t elementsize, nlohmann::json cfg) : elementsize_(elementsize), cfg_(std::move(cfg)) {}
  std::string name() const override { return "shuffle"; }
  nlohmann::json configuration() const override { return cfg_; }
  SizeBound encoded_size(SizeBound decoded) const override { return decoded; }

  std::size_t decode(ByteView in, MutableByteView out) const override {
    CS_DECODE_CHECK(in.size() <= out.size(), kSizeMismatch, "shuffle",
                    std::to_string(in.size()) + " bytes do not fit the " + std::to_string(out.size()) +
                        " bytes expected",
                    0);
    if (elementsize_ <= 1) {
      if (!in.empty()) std::memcpy(out.data(), in.data(), in.size());
      return in.size();
    }
    CS_DECODE_CHECK(in.size() % elementsize_ == 0, kCorruptData, "shuffle",
                    std::to_string(in.size()) + " bytes are not a whole number of " +
                        std::to_string(elementsize_) + "-byte elements",
                    0);
    unshuffle_host(in.data(), out.data(), in.size(), elementsize_);
    return in.size();
  }

  bool can_encode() const override { return true; }
  Bytes encode(ByteView in) const override {
    if (elementsize_ > 1 && in.size() % elementsize_ != 0)
      throw Error(ErrorCode::kInvalidArgument, "shuffle: " + std::to_string(in.size()) +
                                                   " bytes are not a whole number of " + std::to_string(elementsize_) +
                                                   "-byte elements");
    Bytes out(in.size());
    logic::shuffle_block(in.data(), out.data(), in.size(), elementsize_);
    return out;
  }

 private:
  std::size_t elementsize_;
  nlohmann::json cfg_;
};

}  // namespace

CodecPtr make_shuffle_codec(const nlohmann::json& configuration) {
  config::require_object(configuration, "shuffle");
  const std::int64_t es = config::get_int(configuration, "shuffle", "elementsize").value_or(4);
  if (es < 0 || es > (std::int64_t{1} << 30)) config::fail("shuffle", "elementsize", "is out of range");
  return std::make_shared<ShuffleCodec>(static_cast<std::size_t>(es), configuration);
}

}  // namespace cubestream::codec
