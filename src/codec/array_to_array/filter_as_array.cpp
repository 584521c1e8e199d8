#include "codec/array_to_array/filter_as_array.hpp"

#include "cubestream/error.hpp"

namespace cubestream::codec {

FilterAsArrayCodec::FilterAsArrayCodec(std::shared_ptr<const BytesToBytesCodec> filter) : filter_(std::move(filter)) {}

ChunkSpec FilterAsArrayCodec::encoded_spec(const ChunkSpec& decoded) const {
  const SizeBound enc = filter_->encoded_size({decoded.num_bytes(), true});
  const auto n = static_cast<std::size_t>(decoded.num_elements());
  if (!enc.exact || (n > 0 && enc.bytes % n != 0)) {
    throw Error(ErrorCode::kUnsupported, "codec '" + filter_->name() +
                                             "' cannot stand before the array->bytes codec: its output is not one element per input element");
  }
  ChunkSpec out = decoded;
  const std::size_t elem = n > 0 ? enc.bytes / n : decoded.dtype.size;
  if (elem != decoded.dtype.size) {
    // Only the element size matters past this point (for the bytes codec's byte order).
    out.dtype = DataType::uint_(static_cast<int>(elem));
    out.fill_value.assign(elem, 0);
  }
  return out;
}

void FilterAsArrayCodec::decode(ByteView encoded, const ChunkSpec& decoded, MutableByteView out) const {
  const std::size_t n = filter_->decode(encoded, out);
  if (n != decoded.num_bytes()) {
    throw Error(ErrorCode::kSizeMismatch, filter_->name() + ": decoded to " + std::to_string(n) + " bytes, expected " +
                                              std::to_string(decoded.num_bytes()));
  }
}

}  // namespace cubestream::codec
