// The numcodecs `lz4` codec: a 4-byte little-endian decoded size, then one LZ4 block
// (the raw block format, not the LZ4 frame format). Configuration {"acceleration": int},
// irrelevant for decoding.
//
// The size header is checked against the output before anything is decoded, so a small
// chunk claiming gigabytes fails at once (kSizeMismatch) instead of allocating or writing.
#include <climits>
#include <string>

#include <lz4.h>

#include "codec/bytes_to_bytes/config.hpp"
#include "codec/decode_check.hpp"
#include "codec/factories.hpp"

namespace cubestream::codec {

namespace {

constexpr std::size_t kHeaderBytes = 4;

class Lz4Codec final : public BytesToBytesCodec {
 public:
  explicit Lz4Codec(nlohmann::json cfg) : cfg_(std::move(cfg)) {}
  std::string name() const override { return "lz4"; }
  nlohmann::json configuration() const override { return cfg_; }
  SizeBound encoded_size(SizeBound decoded) const override {
    const int n = decoded.bytes > static_cast<std::size_t>(LZ4_MAX_INPUT_SIZE)
                      ? 0
                      : LZ4_compressBound(static_cast<int>(decoded.bytes));
    return {kHeaderBytes + (n > 0 ? static_cast<std::size_t>(n) : decoded.bytes + decoded.bytes / 255 + 16),
            false};
  }

  std::size_t decode(ByteView in, MutableByteView out) const override {
    CS_DECODE_CHECK(in.size() >= kHeaderBytes, kCorruptData, "lz4",
                    "input of " + std::to_string(in.size()) + " bytes is shorter than the 4-byte size header", 0);
    const std::uint32_t size = static_cast<std::uint32_t>(in[0]) | (static_cast<std::uint32_t>(in[1]) << 8) |
                               (static_cast<std::uint32_t>(in[2]) << 16) |
                               (static_cast<std::uint32_t>(in[3]) << 24);
    CS_DECODE_CHECK(size <= out.size(), kSizeMismatch, "lz4",
                    "size header says " + std::to_string(size) + " bytes but only " +
                        std::to_string(out.size()) + " are expected",
                    0);
    CS_DECODE_CHECK(size <= static_cast<std::uint32_t>(INT_MAX) && in.size() - kHeaderBytes <= INT_MAX,
                    kCorruptData, "lz4", "block larger than LZ4 allows (2 GiB)", 0);
    const int n = LZ4_decompress_safe(reinterpret_cast<const char*>(in.data() + kHeaderBytes),
                                      reinterpret_cast<char*>(out.data()),
                                      static_cast<int>(in.size() - kHeaderBytes), static_cast<int>(size));
    CS_DECODE_CHECK(n >= 0, kCorruptData, "lz4",
                    "invalid LZ4 block",
                    kHeaderBytes);
    CS_DECODE_CHECK(static_cast<std::uint32_t>(n) == size, kCorruptData, "lz4",
                    "block decodes to " + std::to_string(n) + " bytes but the header says " +
                        std::to_string(size),
                    kHeaderBytes);
    return size;
  }

  bool can_encode() const override { return true; }
  // numcodecs' layout: the decoded size as a little-endian u32, then one LZ4 block compressed
  // with LZ4_compress_fast at "acceleration" (numcodecs' default 1).
  Bytes encode(ByteView in) const override {
    if (in.size() > static_cast<std::size_t>(LZ4_MAX_INPUT_SIZE))
      throw Error(ErrorCode::kInvalidArgument, "lz4: a chunk of " + std::to_string(in.size()) +
                                                   " bytes is larger than one LZ4 block may be (" +
                                                   std::to_string(LZ4_MAX_INPUT_SIZE) + ")");
    const int accel = static_cast<int>(config::get_int(cfg_, "lz4", "acceleration").value_or(1));
    const int bound = LZ4_compressBound(static_cast<int>(in.size()));
    Bytes out(kHeaderBytes + static_cast<std::size_t>(bound));
    const auto n32 = static_cast<std::uint32_t>(in.size());
    for (int i = 0; i < 4; ++i) out[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(n32 >> (8 * i));
    const int n = LZ4_compress_fast(reinterpret_cast<const char*>(in.data()), reinterpret_cast<char*>(out.data() + kHeaderBytes),
                                    static_cast<int>(in.size()), bound, accel < 1 ? 1 : accel);
    if (n <= 0 && !in.empty()) throw Error(ErrorCode::kInternal, "lz4: compression failed");
    out.resize(kHeaderBytes + static_cast<std::size_t>(n));
    return out;
  }

 private:
  nlohmann::json cfg_;
};

}  // namespace

CodecPtr make_lz4_codec(const nlohmann::json& configuration) {
  config::require_object(configuration, "lz4");
  config::get_int(configuration, "lz4", "acceleration");
  return std::make_shared<Lz4Codec>(configuration);
}

}  // namespace cubestream::codec
