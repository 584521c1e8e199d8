// The `transpose` array->array codec. Exposed because the Zarr v2 mapping (order "F") builds it.
#pragma once

#include <vector>

#include "codec/codec.hpp"

namespace cubestream::codec {

class TransposeCodec final : public ArrayToArrayCodec {
 public:
  // `reverse_all`: the permutation reverses every axis (Zarr v2 order "F"), whatever the rank.
  TransposeCodec(std::vector<int> order, bool reverse_all);
  std::string name() const override { return "transpose"; }
  nlohmann::json configuration() const override;
  ChunkSpec encoded_spec(const ChunkSpec& decoded) const override;
  void decode(ByteView encoded, const ChunkSpec& decoded, MutableByteView out) const override;
  bool can_encode() const override { return true; }
  void encode(ByteView decoded, const ChunkSpec& decoded_spec, MutableByteView out) const override;

 private:
  std::vector<int> order_for(std::size_t rank) const;
  std::vector<int> order_;
  bool reverse_all_;
};

}  // namespace cubestream::codec
