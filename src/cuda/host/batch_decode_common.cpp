// The parts of the batch API (cuda/decode/batch_decode.hpp) that need no GPU: names, and the
// mapping from codec ids. Compiled in every build.
#include <string>

#include "cubestream/error.hpp"
#include "cuda/decode/batch_decode.hpp"

namespace cubestream::cuda {

const char* batch_codec_name(BatchCodec c) {
  switch (c) {
    case BatchCodec::kLz4: return "lz4";
    case BatchCodec::kBlosc: return "blosc";
    case BatchCodec::kZstd: return "zstd";
  }
  return "unknown";
}

BatchCodec batch_codec_for_id(const std::string& codec_id) {
  std::string id = codec_id;
  if (id.rfind("numcodecs.", 0) == 0) id = id.substr(10);
  if (id == "lz4") return BatchCodec::kLz4;
  if (id == "blosc") return BatchCodec::kBlosc;
  if (id == "zstd") return BatchCodec::kZstd;
  throw Error(ErrorCode::kUnsupported,
              "codec '" + codec_id + "' has no batched GPU decoder (lz4, blosc and zstd have; use the CPU path)");
}

}  // namespace cubestream::cuda
