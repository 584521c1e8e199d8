// The `transpose` codec (Zarr v3 core): the encoded array is the decoded one with its axes
// permuted, encoded.shape[i] = decoded.shape[order[i]]. Zarr v2's order "F" maps to the
// reversed permutation. Early v3 drafts also wrote "C"/"F" strings; both are accepted.
#include "codec/array_to_array/transpose.hpp"

#include <algorithm>

#include "codec/factories.hpp"
#include "core/strided_copy.hpp"
#include "cubestream/error.hpp"

namespace cubestream::codec {

TransposeCodec::TransposeCodec(std::vector<int> order, bool reverse_all)
    : order_(std::move(order)), reverse_all_(reverse_all) {}

std::vector<int> TransposeCodec::order_for(std::size_t rank) const {
  if (reverse_all_) {
    std::vector<int> o(rank);
    for (std::size_t i = 0; i < rank; ++i) o[i] = static_cast<int>(rank - 1 - i);
    return o;
  }
  if (order_.empty()) {  // "C": the identity, whatever the rank
    std::vector<int> o(rank);
    for (std::size_t i = 0; i < rank; ++i) o[i] = static_cast<int>(i);
    return o;
  }
  if (order_.size() != rank) {
    throw Error(ErrorCode::kInvalidMetadata, "transpose: order has " + std::to_string(order_.size()) +
                                                 " entries but the array has rank " + std::to_string(rank));
  }
  return order_;
}

nlohmann::json TransposeCodec::configuration() const {
  if (reverse_all_) return {{"order", "F"}};
  return {{"order", order_}};
}

ChunkSpec TransposeCodec::encoded_spec(const ChunkSpec& decoded) const {
  auto order = order_for(decoded.shape.size());
  ChunkSpec enc = decoded;
  for (std::size_t i = 0; i < order.size(); ++i) enc.shape[i] = decoded.shape[order[i]];
  return enc;
}

void TransposeCodec::decode(ByteView encoded, const ChunkSpec& decoded, MutableByteView out) const {
  auto order = order_for(decoded.shape.size());
  ChunkSpec enc = encoded_spec(decoded);
  if (encoded.size() != decoded.num_bytes() || out.size() != decoded.num_bytes()) {
    throw Error(ErrorCode::kInternal, "transpose: buffer sizes do not match the chunk");
  }
  permute_axes(encoded.data(), enc.shape, order, out.data(), decoded.dtype.size);
}

void TransposeCodec::encode(ByteView decoded, const ChunkSpec& decoded_spec, MutableByteView out) const {
  auto order = order_for(decoded_spec.shape.size());
  if (decoded.size() != decoded_spec.num_bytes() || out.size() != decoded_spec.num_bytes()) {
    throw Error(ErrorCode::kInternal, "transpose: buffer sizes do not match the chunk");
  }
  // encoded[e] = decoded[d] with e[i] = d[order[i]]: permute_axes moves decoded index d to
  // the index e with e[inverse[j]] = d[j], where inverse[order[i]] = i.
  std::vector<int> inverse(order.size());
  for (std::size_t i = 0; i < order.size(); ++i) inverse[static_cast<std::size_t>(order[i])] = static_cast<int>(i);
  permute_axes(decoded.data(), decoded_spec.shape, inverse, out.data(), decoded_spec.dtype.size);
}

CodecPtr make_transpose_codec(const nlohmann::json& configuration) {
  if (!configuration.contains("order")) throw Error(ErrorCode::kInvalidMetadata, "transpose: missing \"order\"");
  const auto& o = configuration["order"];
  if (o.is_string()) {
    if (o == "C") return std::make_shared<TransposeCodec>(std::vector<int>{}, false);
    if (o == "F") return std::make_shared<TransposeCodec>(std::vector<int>{}, true);
    throw Error(ErrorCode::kInvalidMetadata, "transpose: order string must be \"C\" or \"F\"");
  }
  if (!o.is_array()) throw Error(ErrorCode::kInvalidMetadata, "transpose: \"order\" must be an array of integers");
  std::vector<int> order;
  for (const auto& v : o) {
    if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() >= 64)
      throw Error(ErrorCode::kInvalidMetadata, "transpose: \"order\" must be an array of axis numbers, got " + o.dump());
    order.push_back(static_cast<int>(v.get<std::int64_t>()));
  }
  std::vector<int> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i] != static_cast<int>(i)) {
      throw Error(ErrorCode::kInvalidMetadata, "transpose: \"order\" " + o.dump() + " is not a permutation");
    }
  }
  return std::make_shared<TransposeCodec>(std::move(order), false);
}

}  // namespace cubestream::codec
