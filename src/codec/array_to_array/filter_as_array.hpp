// A numcodecs filter (delta, fixedscaleoffset, quantize, bitround, shuffle, ...) placed
// before the array->bytes codec, as Zarr v3 writers list `numcodecs.<id>` filters. There the
// filter sees the chunk's elements in native byte order, which is what its own dtype string
// ("<i4") describes on a little-endian host. The encoded array keeps the element count; its
// element size follows from the filter's exact encoded size (fixedscaleoffset f8 -> u1).
#pragma once

#include "codec/codec.hpp"

namespace cubestream::codec {

class FilterAsArrayCodec final : public ArrayToArrayCodec {
 public:
  explicit FilterAsArrayCodec(std::shared_ptr<const BytesToBytesCodec> filter);
  std::string name() const override { return filter_->name(); }
  nlohmann::json configuration() const override { return filter_->configuration(); }
  ChunkSpec encoded_spec(const ChunkSpec& decoded) const override;
  void decode(ByteView encoded, const ChunkSpec& decoded, MutableByteView out) const override;

 private:
  std::shared_ptr<const BytesToBytesCodec> filter_;
};

}  // namespace cubestream::codec
