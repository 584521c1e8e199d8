// The sharding_indexed array->bytes codec (Zarr v3 extension): a shard is a grid of inner
// chunks, each encoded with the inner `codecs`, plus a shard index (see shard_index.hpp).
//
// decode() turns a whole shard into its array (used for nested sharding and for chains where
// other codecs wrap the shard). The array reader instead reads the index and only the inner
// chunks a region needs, through index_size()/decode_index()/inner_chain().
#pragma once

#include <vector>

#include "codec/array_to_bytes/shard_index.hpp"
#include "codec/chain.hpp"
#include "codec/codec.hpp"

namespace cubestream::codec {

class ShardingCodec final : public ArrayToBytesCodec {
 public:
  enum class IndexLocation { kStart, kEnd };
  ShardingCodec(std::vector<std::int64_t> chunk_shape, CodecChain inner, CodecChain index, IndexLocation where,
                nlohmann::json config);

  std::string name() const override { return "sharding_indexed"; }
  nlohmann::json configuration() const override { return config_; }
  SizeBound encoded_size(const ChunkSpec& decoded) const override;
  void decode(ByteView encoded, const ChunkSpec& decoded, MutableByteView out) const override;
  bool can_encode() const override { return inner_.can_encode() && index_.can_encode(); }
  // Encodes a whole shard held in memory: every inner chunk in C order of the inner grid, then
  // the index at the configured end. (The writer streams large shards through encode_index
  // instead, one inner chunk at a time.)
  Bytes encode(ByteView decoded, const ChunkSpec& spec) const override;

  const std::vector<std::int64_t>& inner_chunk_shape() const { return chunk_shape_; }
  const CodecChain& inner_chain() const { return inner_; }
  IndexLocation index_location() const { return where_; }

  // Inner-chunk grid of a shard of `shard_shape` (which the inner chunk shape must divide).
  std::vector<std::int64_t> inner_grid(const std::vector<std::int64_t>& shard_shape) const;
  // Spec of one inner chunk of a shard whose decoded spec is `shard`.
  ChunkSpec inner_spec(const ChunkSpec& shard) const;
  // Encoded size of the index of a shard of `shard_shape`: the index codecs must fix it.
  std::uint64_t index_size(const std::vector<std::int64_t>& shard_shape) const;
  // Decodes the encoded index bytes; `shard_size` is the whole shard's size, used to check
  // that every entry stays inside the shard's data.
  ShardIndex decode_index(ByteView encoded_index, const std::vector<std::int64_t>& shard_shape,
                          std::uint64_t shard_size) const;
  // Encodes an index: `entries` holds one (offset, nbytes) per inner chunk in C order of the
  // inner grid (ShardIndexEntry{~0, ~0} for an empty one). With the index at the start, the
  // offsets must already count the index's index_size() bytes.
  Bytes encode_index(const std::vector<ShardIndexEntry>& entries, const std::vector<std::int64_t>& shard_shape) const;

 private:
  std::vector<std::int64_t> chunk_shape_;
  CodecChain inner_;
  CodecChain index_;
  IndexLocation where_;
  nlohmann::json config_;
};

}  // namespace cubestream::codec
