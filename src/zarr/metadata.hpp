// Parsing array metadata of Zarr v3 (zarr.json) and Zarr v2 (.zarray + .zattrs) into one
// ArrayMetadata plus the codec chain that decodes its chunks.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codec/chain.hpp"
#include "cubestream/array.hpp"

namespace cubestream::zarr {

struct ParsedArray {
  ArrayMetadata meta;
  codec::CodecChain chain;   // decodes one chunk of the outer grid (a whole shard if sharded)
};

// Parses JSON text; Error(kInvalidMetadata) naming `what` (the key) when it is not JSON.
nlohmann::json parse_json_text(ByteView text, const std::string& what);

// Zarr v3 array metadata (node_type "array"). Unknown top-level fields are refused unless
// they are objects carrying "must_understand": false, which are skipped.
ParsedArray parse_v3_array(const nlohmann::json& zarr_json);

// Zarr v2: the .zarray object and the .zattrs object (may be empty).
ParsedArray parse_v2_array(const nlohmann::json& zarray, const nlohmann::json& zattrs);

// Checks a Zarr v3 group's zarr.json (node_type "group") with the same extension rules.
void check_v3_group(const nlohmann::json& zarr_json);

// The key of a chunk relative to the array: "c/1/2" (v3 default), "1.2" or "1/2" (v2).
std::string chunk_key(const ArrayMetadata& meta, const std::vector<std::int64_t>& index);

}  // namespace cubestream::zarr
