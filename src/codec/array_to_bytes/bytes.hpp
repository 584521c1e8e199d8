// The `bytes` array->bytes codec. Exposed because the Zarr v2 mapping builds it directly.
#pragma once

#include "codec/codec.hpp"

namespace cubestream::codec {

class BytesCodec final : public ArrayToBytesCodec {
 public:
  explicit BytesCodec(ByteOrder endian);
  std::string name() const override { return "bytes"; }
  nlohmann::json configuration() const override;
  SizeBound encoded_size(const ChunkSpec& decoded) const override { return {decoded.num_bytes(), true}; }
  void decode(ByteView encoded, const ChunkSpec& decoded, MutableByteView out) const override;
  bool is_identity_on_host(const ChunkSpec& spec) const override;
  bool can_encode() const override { return true; }
  Bytes encode(ByteView decoded, const ChunkSpec& spec) const override;
  ByteOrder endian() const { return endian_; }

 private:
  ByteOrder endian_;
};

}  // namespace cubestream::codec
