// The state behind a cubestream::Array, shared by the files that plan and execute reads.
#pragma once

#include <memory>
#include <string>

#include "codec/array_to_bytes/sharding.hpp"
#include "codec/chain.hpp"
#include "cubestream/array.hpp"
#include "cubestream/error.hpp"
#include "zarr/gpu_route.hpp"
#include "zarr/metadata.hpp"
#include "zarr/shard_index_cache.hpp"

namespace cubestream {

struct Array::Impl {
  std::shared_ptr<Store> store;
  std::string path;
  ArrayMetadata meta;
  codec::CodecChain chain;
  codec::ChunkSpec chunk_spec;                        // spec of one outer chunk
  const codec::ShardingCodec* sharding = nullptr;     // set when shards can be read partially
  zarr::ChainRoute gpu_route;                         // whether the GPU decoders take its units
  mutable zarr::ShardIndexCache shard_indexes;

  std::string key_of(const std::vector<std::int64_t>& index) const {
    return join_key(path, zarr::chunk_key(meta, index));
  }
  ErrorContext where(const std::string& key) const { return ErrorContext{store->describe(), key, std::nullopt}; }
};

}  // namespace cubestream
