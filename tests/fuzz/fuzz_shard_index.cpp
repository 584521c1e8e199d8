// libFuzzer target: arbitrary bytes as one shard of a small sharded Zarr v3 array (index at
// the end, or at the start when the first input byte is odd), read whole and in a corner.
// The reader must reject every inconsistent index with a cubestream::Error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "cubestream/array.hpp"
#include "cubestream/error.hpp"

using namespace cubestream;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const bool at_start = data[0] & 1;
  const bool with_crc = data[0] & 2;
  const bool inner_zstd = data[0] & 4;
  std::string index_codecs = with_crc ? R"([{"name":"bytes","configuration":{"endian":"little"}},{"name":"crc32c"}])"
                                      : R"([{"name":"bytes","configuration":{"endian":"little"}}])";
  std::string inner = inner_zstd ? R"([{"name":"bytes","configuration":{"endian":"little"}},{"name":"zstd","configuration":{"level":1}}])"
                                 : R"([{"name":"bytes","configuration":{"endian":"little"}}])";
  std::string meta = R"({"zarr_format":3,"node_type":"array","shape":[6,8],"data_type":"int16",
    "chunk_grid":{"name":"regular","configuration":{"chunk_shape":[6,8]}},
    "chunk_key_encoding":{"name":"default"},"fill_value":-1,
    "codecs":[{"name":"sharding_indexed","configuration":{"chunk_shape":[3,4],"codecs":)" +
                     inner + R"(,"index_codecs":)" + index_codecs + R"(,"index_location":")" + (at_start ? "start" : "end") +
                     R"("}}]})";
  auto store = std::make_shared<MemoryStore>("fuzz");
  store->set("zarr.json", meta);
  store->set("c/0/0", Bytes(data + 1, data + size));
  try {
    Array a = Array::open(store, "");
    std::int16_t out[48];
    a.read(Region{{0, 0}, {6, 8}}, out, sizeof out, ReadOptions{1});
    a.read(Region{{2, 3}, {3, 2}}, out, 12, ReadOptions{1});
  } catch (const Error&) {
  }
  return 0;
}
