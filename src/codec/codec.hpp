// Codec interfaces of the codec layer.
//
// Zarr v3 sorts codecs into three kinds, and so do we (TensorStore does the same):
//   array -> array   (transpose): rearranges or retypes the elements of a chunk,
//   array -> bytes   (bytes, sharding_indexed): exactly one per chain, serialises the array,
//   bytes -> bytes   (zstd, gzip, blosc, crc32c, numcodecs filters): transforms a byte stream.
// A Zarr v2 array maps onto the same chain: order "F" becomes a transpose, the dtype's byte
// order becomes the `bytes` codec, filters and the compressor become bytes->bytes codecs.
//
// Decoding is what the reader uses. Encoding (the writer: `cubestream rechunk`, `convert`) is
// offered by the codecs that have an encoder here or in a library of the distribution; the
// others answer can_encode() false and throw Error(kUnsupported) from encode(). Every encode
// is the exact inverse of decode: decode(encode(x)) == x bit for bit. Every decode is bounded: a codec never
// writes more than the output span it is given, and a stream that would decode to more is an
// Error(kSizeMismatch), so a malicious chunk cannot make us allocate without bound.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cubestream/bytes.hpp"
#include "cubestream/dtype.hpp"

namespace cubestream::codec {

// What a codec knows about the (decoded side of the) chunk it works on.
struct ChunkSpec {
  DataType dtype;
  std::vector<std::int64_t> shape;
  // One element in native byte order: what a missing inner chunk of a shard reads as.
  std::vector<std::uint8_t> fill_value;

  std::int64_t num_elements() const {
    std::int64_t n = 1;
    for (auto s : shape) n *= s;
    return n;
  }
  std::size_t num_bytes() const { return static_cast<std::size_t>(num_elements()) * dtype.size; }
};

// A size on the encoded side of a bytes->bytes codec: exact where the format fixes it
// (a checksum adds 4 bytes), an upper bound where it does not (a compressor).
struct SizeBound {
  std::size_t bytes = 0;
  bool exact = true;
};

enum class CodecKind { kArrayToArray, kArrayToBytes, kBytesToBytes };

class Codec {
 public:
  virtual ~Codec() = default;
  virtual CodecKind kind() const = 0;
  // The codec's id as metadata names it, without a "numcodecs." prefix ("zstd", "delta").
  virtual std::string name() const = 0;
  // The codec's configuration, for `cubestream inspect` and error messages.
  virtual nlohmann::json configuration() const = 0;
  // Whether encode() is implemented (the writer checks a whole chain before writing anything).
  virtual bool can_encode() const { return false; }

 protected:
  [[noreturn]] void no_encoder() const;
};

class ArrayToArrayCodec : public Codec {
 public:
  CodecKind kind() const final { return CodecKind::kArrayToArray; }
  // The spec of the encoded array given the decoded one (transpose permutes the shape).
  virtual ChunkSpec encoded_spec(const ChunkSpec& decoded) const = 0;
  // `encoded` holds an array of `encoded_spec(decoded)` in native byte order, C order;
  // `out` receives the decoded array (exactly decoded.num_bytes()).
  virtual void decode(ByteView encoded, const ChunkSpec& decoded, MutableByteView out) const = 0;
  // The inverse: `decoded` holds decoded.num_bytes() bytes (native order, C order); `out`
  // receives the encoded array of encoded_spec(decoded) (same size).
  virtual void encode(ByteView decoded, const ChunkSpec& decoded_spec, MutableByteView out) const {
    no_encoder();
  }
};

class ArrayToBytesCodec : public Codec {
 public:
  CodecKind kind() const final { return CodecKind::kArrayToBytes; }
  // Size of the serialised array when it is fixed (the `bytes` codec); inexact otherwise.
  virtual SizeBound encoded_size(const ChunkSpec& decoded) const = 0;
  // Deserialises `encoded` into `out` (exactly decoded.num_bytes(), native byte order, C order).
  virtual void decode(ByteView encoded, const ChunkSpec& decoded, MutableByteView out) const = 0;
  // True when decode() is a plain copy on this host (no byte swap), so that the stage before
  // may write straight into the output.
  virtual bool is_identity_on_host(const ChunkSpec&) const { return false; }
  // Serialises `decoded` (exactly spec.num_bytes(), native byte order, C order).
  virtual Bytes encode(ByteView decoded, const ChunkSpec& spec) const { no_encoder(); }
};

// Receives a decoded stream in consecutive pieces, in order: `bytes` bytes that belong at
// `offset` of the decoded stream. `data` is valid only during the call.
using BlockSink = std::function<void(std::size_t offset, const std::uint8_t* data, std::size_t bytes)>;

class BytesToBytesCodec : public Codec {
 public:
  CodecKind kind() const final { return CodecKind::kBytesToBytes; }
  // Size of the encoded stream given the size of the decoded one.
  virtual SizeBound encoded_size(SizeBound decoded) const = 0;
  // Decodes `in` into `out` and returns the number of bytes written. Writing past out.size()
  // is never done: a stream that decodes to more throws Error(kSizeMismatch).
  virtual std::size_t decode(ByteView in, MutableByteView out) const = 0;
  // True for numcodecs filters that map each element to one element of their own declared
  // dtypes (delta, fixedscaleoffset, quantize, bitround): these may also stand before the
  // array->bytes codec, where Zarr v3 writers put them.
  virtual bool is_elementwise_filter() const { return false; }
  // Encodes `in`; the result decodes back to exactly `in`.
  virtual Bytes encode(ByteView in) const { no_encoder(); }
  // Decodes `in`, which must decode to exactly `out_size` bytes, piece by piece into `sink`
  // (pieces cover the output once, in order, each a multiple of `align` bytes long), so that a
  // caller that only converts the bytes onwards never holds the whole decoded stream: each
  // piece is a block the codec decodes on its own (blosc), small enough to stay in cache.
  // Returns false, before calling `sink`, when the codec has no such blocks or the stream's
  // blocks are not multiples of `align`; the caller then uses decode(). Errors as decode(),
  // also after some pieces went to `sink`.
  virtual bool decode_blocks(ByteView in, std::size_t out_size, std::size_t align, const BlockSink& sink) const {
    return false;
  }
};

using CodecPtr = std::shared_ptr<const Codec>;

}  // namespace cubestream::codec
