// The `bytes` codec (Zarr v3 core; also what a Zarr v2 dtype's byte order maps to): the
// array's elements in C order, each in the configured byte order ("little" or "big"; may be
// omitted for 1-byte types).
#include "codec/array_to_bytes/bytes.hpp"

#include <algorithm>
#include <cstring>

#include "codec/decode_check.hpp"
#include "codec/factories.hpp"
#include "core/byte_swap.hpp"
#include "cubestream/error.hpp"

namespace cubestream::codec {

BytesCodec::BytesCodec(ByteOrder endian) : endian_(endian) {}

nlohmann::json BytesCodec::configuration() const {
  if (endian_ == ByteOrder::kNotApplicable) return nlohmann::json::object();
  return {{"endian", endian_ == ByteOrder::kBig ? "big" : "little"}};
}

// A multi-byte type without "endian" is not a copy: decode() refuses it, and a caller that
// skips decode() for a copy (CodecChain::decode_blocks) must not read it either.
bool BytesCodec::is_identity_on_host(const ChunkSpec& spec) const {
  return spec.dtype.size == 1 || endian_ == native_byte_order();
}

void BytesCodec::decode(ByteView encoded, const ChunkSpec& decoded, MutableByteView out) const {
  CS_DECODE_CHECK(encoded.size() == decoded.num_bytes(), kSizeMismatch, "bytes",
                  "chunk holds " + std::to_string(encoded.size()) + " bytes, expected " +
                      std::to_string(decoded.num_bytes()),
                  0);
  if (decoded.dtype.size > 1 && endian_ == ByteOrder::kNotApplicable) {
    throw Error(ErrorCode::kInvalidMetadata, "bytes codec needs \"endian\" for multi-byte type " + decoded.dtype.name());
  }
  if (out.data() != encoded.data()) std::memcpy(out.data(), encoded.data(), encoded.size());
  if (!is_identity_on_host(decoded)) byte_swap_inplace(out.data(), out.size(), decoded.dtype.swap_unit());
}

Bytes BytesCodec::encode(ByteView decoded, const ChunkSpec& spec) const {
  if (decoded.size() != spec.num_bytes()) throw Error(ErrorCode::kInternal, "bytes: input size does not match the chunk");
  if (spec.dtype.size > 1 && endian_ == ByteOrder::kNotApplicable) {
    throw Error(ErrorCode::kInvalidMetadata, "bytes codec needs \"endian\" for multi-byte type " + spec.dtype.name());
  }
  Bytes out(decoded.begin(), decoded.end());
  if (!is_identity_on_host(spec)) byte_swap_inplace(out.data(), out.size(), spec.dtype.swap_unit());
  return out;
}

CodecPtr make_bytes_codec(const nlohmann::json& configuration) {
  ByteOrder order = ByteOrder::kNotApplicable;
  if (configuration.contains("endian") && !configuration["endian"].is_null()) {
    const auto& e = configuration["endian"];
    if (!e.is_string()) throw Error(ErrorCode::kInvalidMetadata, "bytes codec: \"endian\" must be a string");
    if (e == "little") order = ByteOrder::kLittle;
    else if (e == "big") order = ByteOrder::kBig;
    else throw Error(ErrorCode::kInvalidMetadata, "bytes codec: \"endian\" must be \"little\" or \"big\", got " + e.dump());
  }
  return std::make_shared<BytesCodec>(order);
}

}  // namespace cubestream::codec
