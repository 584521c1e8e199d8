// Whether the batched GPU decoders (cuda/decode/batch_decode.hpp) can take an array's decode
// units, decided from its codec chain alone: shared by the loader's GPU stage and by array
// reads that decode on the GPU, so that both send the same chains to the GPU.
#pragma once

#include <cstdint>
#include <string>

#include "cubestream/array.hpp"
#include "cuda/decode/batch_decode.hpp"

namespace cubestream::zarr {

// How one array's decode units reach a GPU.
enum class UnitRoute : std::uint8_t {
  kGpuDecode,   // compressed bytes to the GPU, batched decode there
  kRaw,         // stored uncompressed: the bytes are the unit
  kHostDecode,  // decoded on the host
};

struct ChainRoute {
  UnitRoute route = UnitRoute::kHostDecode;
  cuda::BatchCodec codec = cuda::BatchCodec::kBlosc;
  std::string codec_config;   // the bytes->bytes codec's JSON (for the host fallback's messages)
  std::string why;            // why it is not decoded on the GPU (kHostDecode)
};

// GPU decode needs a chain of `bytes` (little-endian or one-byte elements) and at most one of
// blosc / lz4 / zstd, for a sharded array inside sharding_indexed (its inner chain; the index
// is read on the host). A chain of `bytes` alone is kRaw.
ChainRoute chain_route(const ArrayMetadata& meta);
inline ChainRoute chain_route(const Array& array) { return chain_route(array.metadata()); }

}  // namespace cubestream::zarr
