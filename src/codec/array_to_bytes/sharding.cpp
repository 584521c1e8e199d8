#include "codec/array_to_bytes/sharding.hpp"

#include <cstring>

#include "codec/decode_check.hpp"
#include "codec/factories.hpp"
#include "core/strided_copy.hpp"
#include "cubestream/error.hpp"

namespace cubestream::codec {

ShardingCodec::ShardingCodec(std::vector<std::int64_t> chunk_shape, CodecChain inner, CodecChain index,
                             IndexLocation where, nlohmann::json config)
    : chunk_shape_(std::move(chunk_shape)),
      inner_(std::move(inner)),
      index_(std::move(index)),
      where_(where),
      config_(std::move(config)) {}

std::vector<std::int64_t> ShardingCodec::inner_grid(const std::vector<std::int64_t>& shard_shape) const {
  if (shard_shape.size() != chunk_shape_.size()) {
    throw Error(ErrorCode::kInvalidMetadata, "sharding_indexed: chunk_shape has rank " + std::to_string(chunk_shape_.size()) +
                                                 " but the shard has rank " + std::to_string(shard_shape.size()));
  }
  std::vector<std::int64_t> grid(shard_shape.size());
  for (std::size_t i = 0; i < grid.size(); ++i) {
    if (shard_shape[i] % chunk_shape_[i] != 0) {
      throw Error(ErrorCode::kInvalidMetadata, "sharding_indexed: inner chunk_shape does not divide the shard shape");
    }
    grid[i] = shard_shape[i] / chunk_shape_[i];
  }
  return grid;
}

ChunkSpec ShardingCodec::inner_spec(const ChunkSpec& shard) const {
  ChunkSpec s = shard;
  s.shape = chunk_shape_;
  return s;
}

namespace {
ChunkSpec index_spec(const std::vector<std::int64_t>& grid) {
  ChunkSpec s;
  s.dtype = DataType::uint_(8);
  s.shape = grid;
  s.shape.push_back(2);
  s.fill_value.assign(8, 0xff);
  return s;
}
}  // namespace

std::uint64_t ShardingCodec::index_size(const std::vector<std::int64_t>& shard_shape) const {
  SizeBound s = index_.encoded_size(index_spec(inner_grid(shard_shape)));
  if (!s.exact) throw Error(ErrorCode::kUnsupported, "sharding_indexed: index_codecs must have a fixed encoded size");
  return s.bytes;
}

SizeBound ShardingCodec::encoded_size(const ChunkSpec& decoded) const {
  auto grid = inner_grid(decoded.shape);
  std::size_t n = 1;
  for (auto g : grid) n *= static_cast<std::size_t>(g);
  SizeBound inner = inner_.encoded_size(inner_spec(decoded));
  return {n * inner.bytes + index_size(decoded.shape), false};
}

ShardIndex ShardingCodec::decode_index(ByteView encoded_index, const std::vector<std::int64_t>& shard_shape,
                                       std::uint64_t shard_size) const {
  auto grid = inner_grid(shard_shape);
  ChunkSpec spec = index_spec(grid);
  Bytes decoded(spec.num_bytes());
  index_.decode(encoded_index, spec, MutableByteView(decoded.data(), decoded.size()));
  return ShardIndex::parse(ByteView(decoded.data(), decoded.size()), std::move(grid), shard_size);
}

void ShardingCodec::decode(ByteView encoded, const ChunkSpec& decoded, MutableByteView out) const {
  const std::uint64_t isize = index_size(decoded.shape);
  CS_DECODE_CHECK(encoded.size() >= isize, kCorruptData, "sharding_indexed",
                  "shard of " + std::to_string(encoded.size()) + " bytes is smaller than its index (" +
                      std::to_string(isize) + " bytes)",
                  0);
  const std::size_t index_at = where_ == IndexLocation::kEnd ? encoded.size() - isize : 0;
  ShardIndex index = decode_index(encoded.subspan(index_at, isize), decoded.shape, encoded.size());
  const ChunkSpec inner = inner_spec(decoded);
  const std::size_t elem = decoded.dtype.size;
  const auto& grid = index.grid();
  const std::size_t rank = grid.size();
  Bytes chunk(inner.num_bytes());
  std::vector<std::int64_t> pos(rank, 0), start(rank), zeros(rank, 0);
  for (std::size_t flat = 0; flat < index.size(); ++flat) {
    // grid position of inner chunk `flat` (C order)
    std::size_t rem = flat;
    for (std::size_t d = rank; d-- > 0;) {
      pos[d] = static_cast<std::int64_t>(rem % static_cast<std::size_t>(grid[d]));
      rem /= static_cast<std::size_t>(grid[d]);
      start[d] = pos[d] * chunk_shape_[d];
    }
    const ShardIndexEntry& e = index[flat];
    if (e.empty()) {
      fill_box(out.data(), decoded.shape, start, chunk_shape_, inner.fill_value.data(), elem);
      continue;
    }
    try {
      inner_.decode(encoded.subspan(e.offset, e.nbytes), inner, MutableByteView(chunk.data(), chunk.size()));
    } catch (const Error& err) {
      // Offsets inside an inner chunk are relative to it; report them relative to the shard.
      ErrorContext ctx;
      ctx.offset = e.offset + err.context().offset.value_or(0);
      throw Error(err.code(), err.message() + " (inner chunk " + std::to_string(flat) + ")", ctx);
    }
    copy_box(chunk.data(), chunk_shape_, zeros, out.data(), decoded.shape, start, chunk_shape_, elem);
  }
}

Bytes ShardingCodec::encode_index(const std::vector<ShardIndexEntry>& entries,
                                  const std::vector<std::int64_t>& shard_shape) const {
  auto grid = inner_grid(shard_shape);
  ChunkSpec spec = index_spec(grid);
  if (entries.size() * 16 != spec.num_bytes()) throw Error(ErrorCode::kInternal, "sharding_indexed: index has the wrong number of entries");
  // The decoded index is a uint64 array of shape grid + [2] in native byte order; its codecs
  // (bytes little-endian + crc32c by default) serialise it.
  Bytes raw(spec.num_bytes());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    std::memcpy(raw.data() + 16 * i, &entries[i].offset, 8);
    std::memcpy(raw.data() + 16 * i + 8, &entries[i].nbytes, 8);
  }
  return index_.encode(ByteView(raw.data(), raw.size()), spec);
}

Bytes ShardingCodec::encode(ByteView decoded, const ChunkSpec& spec) const {
  if (decoded.size() != spec.num_bytes()) throw Error(ErrorCode::kInternal, "sharding_indexed: input size does not match the shard");
  const auto grid = inner_grid(spec.shape);
  const ChunkSpec inner = inner_spec(spec);
  const std::size_t rank = grid.size(), elem = spec.dtype.size;
  std::size_t count = 1;
  for (auto g : grid) count *= static_cast<std::size_t>(g);
  const std::uint64_t isize = index_size(spec.shape);
  const std::uint64_t base = where_ == IndexLocation::kStart ? isize : 0;
  std::vector<ShardIndexEntry> entries(count);
  Bytes data, chunk(inner.num_bytes());
  std::vector<std::int64_t> start(rank), zeros(rank, 0);
  for (std::size_t flat = 0; flat < count; ++flat) {
    std::size_t rem = flat;
    for (std::size_t d = rank; d-- > 0;) {
      start[d] = static_cast<std::int64_t>(rem % static_cast<std::size_t>(grid[d])) * chunk_shape_[d];
      rem /= static_cast<std::size_t>(grid[d]);
    }
    copy_box(decoded.data(), spec.shape, start, chunk.data(), chunk_shape_, zeros, chunk_shape_, elem);
    Bytes enc = inner_.encode(ByteView(chunk.data(), chunk.size()), inner);
    entries[flat] = {base + data.size(), enc.size()};
    data.insert(data.end(), enc.begin(), enc.end());
  }
  Bytes index = encode_index(entries, spec.shape);
  if (where_ == IndexLocation::kStart) {
    index.insert(index.end(), data.begin(), data.end());
    return index;
  }
  data.insert(data.end(), index.begin(), index.end());
  return data;
}

CodecPtr make_sharding_codec(const nlohmann::json& configuration) {
  auto bad = [](const std::string& why) { return Error(ErrorCode::kInvalidMetadata, "sharding_indexed: " + why); };
  if (!configuration.contains("chunk_shape") || !configuration["chunk_shape"].is_array())
    throw bad("missing \"chunk_shape\" array");
  std::vector<std::int64_t> shape;
  for (const auto& v : configuration["chunk_shape"]) {
    if (!v.is_number_integer() || v.get<std::int64_t>() <= 0) throw bad("\"chunk_shape\" must hold positive integers");
    shape.push_back(v.get<std::int64_t>());
  }
  if (!configuration.contains("codecs")) throw bad("missing \"codecs\"");
  CodecChain inner = CodecChain::from_json(configuration["codecs"]);
  nlohmann::json index_codecs = configuration.value(
      "index_codecs", nlohmann::json::array({{{"name", "bytes"}, {"configuration", {{"endian", "little"}}}},
                                             {{"name", "crc32c"}}}));
  CodecChain index = CodecChain::from_json(index_codecs);
  auto where = ShardingCodec::IndexLocation::kEnd;
  if (configuration.contains("index_location")) {
    const auto& loc = configuration["index_location"];
    if (loc == "start") where = ShardingCodec::IndexLocation::kStart;
    else if (loc != "end") throw bad("\"index_location\" must be \"start\" or \"end\"");
  }
  nlohmann::json config = configuration;
  config["index_codecs"] = index_codecs;
  return std::make_shared<ShardingCodec>(std::move(shape), std::move(inner), std::move(index), where, std::move(config));
}

}  // namespace cubestream::codec
