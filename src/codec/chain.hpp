// A codec chain: zero or more array->array codecs, exactly one array->bytes codec, zero or
// more bytes->bytes codecs, listed in encoding order as in Zarr v3 metadata. Decoding runs
// the list backwards.
//
// A chain does not depend on the chunk it decodes: the chunk spec is passed to decode(), and
// the sizes of every intermediate stream are derived from it then (exact where the formats
// fix them, so that a compressor stream that decodes to the wrong size is caught).
#pragma once

#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "codec/codec.hpp"

namespace cubestream::codec {

class ShardingCodec;

class CodecChain {
 public:
  CodecChain() = default;
  // Throws Error(kInvalidMetadata) when the kinds are out of order or the array->bytes codec
  // is missing or repeated.
  explicit CodecChain(std::vector<CodecPtr> codecs);

  // Parses a Zarr v3 "codecs" list: entries are {"name": ..., "configuration": {...}} objects
  // (or bare name strings).
  static CodecChain from_json(const nlohmann::json& codecs);

  // Decodes one encoded chunk into `out`, which holds exactly spec.num_bytes() bytes: the
  // chunk's elements in native byte order, C order.
  void decode(ByteView encoded, const ChunkSpec& spec, MutableByteView out) const;

  // Decodes one encoded chunk block by block into `sink` (offsets and sizes in bytes of the
  // decoded chunk, whole elements, native byte order, C order; see
  // BytesToBytesCodec::decode_blocks) where the chain's decoded bytes are its one
  // bytes->bytes codec's output as they are: no array->array codec, an array->bytes codec that
  // is a plain copy on this host, and a codec with independent blocks (blosc). Returns false,
  // having called nothing, otherwise; decode() then serves.
  bool decode_blocks(ByteView encoded, const ChunkSpec& spec, const BlockSink& sink) const;

  // Encodes one chunk: `decoded` holds exactly spec.num_bytes() bytes (native byte order, C
  // order; edge chunks are passed whole, padded with the fill value, as Zarr stores them).
  // Runs the codecs in list order. Error(kUnsupported) naming the codec when one has no
  // encoder (check can_encode() first to fail before any write).
  Bytes encode(ByteView decoded, const ChunkSpec& spec) const;
  // Whether every codec of the chain (and of nested chains) can encode.
  bool can_encode() const;
  // The first codec without an encoder, for messages ("" when all have one).
  std::string first_without_encoder() const;

  // Size of the encoded chunk: exact when every codec fixes it (used for shard indexes).
  SizeBound encoded_size(const ChunkSpec& spec) const;

  // The spec the array->bytes codec sees: `spec` after every array->array codec.
  ChunkSpec array_to_bytes_spec(const ChunkSpec& spec) const;

  // The chain is exactly one sharding_indexed codec: shards can be read partially.
  const ShardingCodec* sole_sharding_codec() const;

  const ArrayToBytesCodec& array_to_bytes() const { return *a2b_; }
  const std::vector<CodecPtr>& codecs() const { return all_; }
  nlohmann::json to_json() const;

 private:
  std::vector<CodecPtr> all_;
  std::vector<const ArrayToArrayCodec*> a2a_;
  const ArrayToBytesCodec* a2b_ = nullptr;
  std::vector<const BytesToBytesCodec*> b2b_;
};

}  // namespace cubestream::codec
