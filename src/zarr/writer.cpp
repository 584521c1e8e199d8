// Writing Zarr v3 and v2 arrays and groups (see cubestream/writer.hpp).
//
// Format facts this file relies on:
//  - v3 zarr.json of an array (Zarr v3 core spec, "Array metadata"): zarr_format 3, node_type
//    "array", shape, data_type, chunk_grid {"name": "regular", "configuration":
//    {"chunk_shape"}}, chunk_key_encoding, fill_value, codecs; optional attributes and
//    dimension_names (null for an unnamed axis).
//  - Edge chunks are stored whole: the part past the array's edge is encoded like any other
//    element (we write the fill value there, as zarr-python does).
//  - v2 .zarray (Zarr v2 spec): zarr_format 2, shape, chunks, dtype (numpy string with its byte
//    order), compressor (numcodecs config or null), fill_value, order, filters (list or null),
//    dimension_separator; xarray keeps dimension names in .zattrs "_ARRAY_DIMENSIONS".
//  - sharding_indexed (Zarr v3 sharding extension): inner chunks back to back, and an index of
//    (offset, nbytes) uint64 pairs in C order of the inner grid, encoded with index_codecs
//    (bytes little-endian + crc32c), at the start or the end of the shard; 2^64-1 twice marks
//    an empty inner chunk.
#include "cubestream/writer.hpp"

#include <cmath>
#include <functional>
#include <cstring>
#include <limits>

#include "codec/array_to_bytes/bytes.hpp"
#include "codec/array_to_bytes/sharding.hpp"
#include "codec/chain.hpp"
#include "core/strided_copy.hpp"
#include "core/thread_pool.hpp"
#include "cubestream/error.hpp"
#include "zarr/metadata.hpp"

namespace cubestream {

namespace {

[[noreturn]] void bad_argument(const std::string& why) { throw Error(ErrorCode::kInvalidArgument, why); }

std::string node_key(const std::string& path, const char* name) { return join_key(path, name); }

Bytes dump_json(const nlohmann::json& j) {
  const std::string s = j.dump(2) + "\n";
  return Bytes(s.begin(), s.end());
}

// ---- fill values ----------------------------------------------------------------------------

double half_to_double(std::uint16_t h) {
  const int sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v;
  if (exp == 0) v = std::ldexp(mant, -24);
  else if (exp == 31) v = mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else v = std::ldexp(mant + 1024, exp - 25);
  return sign ? -v : v;
}

// One float (2, 4 or 8 bytes, native order) as JSON. NaN: "NaN" when it is the canonical quiet
// NaN the v3 spec means by that word, else (v3 only) the "0x..." hex of its bits, big-endian,
// so that payloads survive; v2 has no hex form and gets "NaN".
nlohmann::json float_json(const std::uint8_t* p, std::size_t size, bool allow_hex) {
  std::uint64_t bits = 0;
  double v = 0;
  bool canonical_nan = false;
  if (size == 2) {
    std::uint16_t h;
    std::memcpy(&h, p, 2);
    bits = h;
    v = half_to_double(h);
    canonical_nan = (h & 0x7fff) == 0x7e00;
  } else if (size == 4) {
    float f;
    std::memcpy(&f, p, 4);
    std::uint32_t b;
    std::memcpy(&b, p, 4);
    bits = b;
    v = f;
    canonical_nan = (b & 0x7fffffffu) == 0x7fc00000u;
  } else {
    std::memcpy(&v, p, 8);
    std::memcpy(&bits, p, 8);
    canonical_nan = (bits & 0x7fffffffffffffffull) == 0x7ff8000000000000ull;
  }
  if (std::isnan(v)) {
    if (canonical_nan || !allow_hex) return "NaN";
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%0*llx", static_cast<int>(2 * size), static_cast<unsigned long long>(bits));
    return buf;
  }
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  // nlohmann writes doubles with the shortest text that reads back to the same double, and a
  // float16/float32 widened to double narrows back exactly.
  return v;
}

nlohmann::json fill_json(const Bytes& fv, const DataType& dt, bool v3) {
  if (fv.size() != dt.size) bad_argument("fill value of " + std::to_string(fv.size()) + " bytes for type " + dt.name());
  const std::uint8_t* p = fv.data();
  switch (dt.kind) {
    case DTypeKind::kBool: return p[0] != 0;
    case DTypeKind::kFloat: return float_json(p, dt.size, v3);
    case DTypeKind::kComplex: {
      const std::size_t half = dt.size / 2;
      return nlohmann::json::array({float_json(p, half, v3), float_json(p + half, half, v3)});
    }
    case DTypeKind::kUInt: {
      std::uint64_t u = 0;
      std::memcpy(&u, p, dt.size);  // little-endian host: the low bytes
      return u;
    }
    default: {  // signed integers, datetime64 and timedelta64 counts
      std::int64_t i = 0;
      std::memcpy(&i, p, dt.size);
      const int shift = 64 - 8 * dt.size;
      if (shift > 0) i = static_cast<std::int64_t>(static_cast<std::uint64_t>(i) << shift) >> shift;  // sign-extend
      return i;
    }
  }
}

// ---- codec chains ---------------------------------------------------------------------------

struct Compressor {
  std::string name;  // v3 codec name
  nlohmann::json config;
};

int level_or(int level, int fallback, int lo, int hi, const std::string& codec) {
  if (level < 0) return fallback;
  if (level < lo || level > hi)
    bad_argument("level " + std::to_string(level) + " is out of range for " + codec + " (" + std::to_string(lo) + ".." +
                 std::to_string(hi) + ")");
  return level;
}

nlohmann::json blosc_config(const std::string& cname, int level, int shuffle, const DataType& dtype) {
  static const char* kShuffle[] = {"noshuffle", "shuffle", "bitshuffle"};
  // v3 blosc: typesize is required when shuffling (Zarr v3 blosc codec spec).
  return {{"cname", cname}, {"clevel", level_or(level, 5, 0, 9, "blosc")}, {"shuffle", kShuffle[shuffle]},
          {"typesize", dtype.size}, {"blocksize", 0}};
}

// The bytes->bytes codecs for a choice, in v3 form (v2 maps them afterwards).
std::vector<Compressor> compressors(const CodecChoice& c, const DataType& dtype, bool v3) {
  const int shuffle = c.bitshuffle ? 2 : (c.shuffle ? 1 : 0);
  std::vector<Compressor> out;
  const std::string& n = c.compressor;
  if (n == "none") {
    if (shuffle) out.push_back({v3 ? "numcodecs.shuffle" : "shuffle", {{"elementsize", dtype.size}}});
  } else if (n.rfind("blosc", 0) == 0) {
    std::string cname = n == "blosc" ? "lz4" : n.substr(6);
    if (n != "blosc" && (n.size() < 7 || n[5] != '-')) bad_argument("unknown codec \"" + n + "\"");
    if (cname != "lz4" && cname != "lz4hc" && cname != "zstd" && cname != "zlib") {
      bad_argument("blosc compressor \"" + cname + "\" cannot be written (lz4, lz4hc, zstd, zlib)");
    }
    out.push_back({"blosc", blosc_config(cname, c.level, shuffle, dtype)});
  } else if (n == "zstd" || n == "lz4") {
    if (shuffle) {
      out.push_back({"blosc", blosc_config(n, c.level < 0 ? (n == "zstd" ? 3 : 5) : c.level, shuffle, dtype)});
    } else if (n == "zstd") {
      out.push_back({"zstd", {{"level", level_or(c.level, 3, 1, 22, "zstd")}, {"checksum", false}}});
    } else {
      out.push_back({v3 ? "numcodecs.lz4" : "lz4", {{"acceleration", level_or(c.level, 1, 1, 65537, "lz4")}}});
    }
  } else if (n == "gzip" || n == "zlib") {
    if (shuffle == 2) bad_argument("bit shuffle needs a blosc codec (--codec blosc-lz4 or blosc-zstd)");
    if (shuffle) out.push_back({v3 ? "numcodecs.shuffle" : "shuffle", {{"elementsize", dtype.size}}});
    const std::string name = n == "zlib" && v3 ? "numcodecs.zlib" : n;
    out.push_back({name, {{"level", level_or(c.level, 6, 0, 9, n)}}});
  } else {
    bad_argument("unknown codec \"" + n + "\" (zstd, blosc-lz4, blosc-lz4hc, blosc-zstd, blosc-zlib, gzip, zlib, lz4, none)");
  }
  return out;
}

nlohmann::json bytes_codec(const DataType& dtype) {
  nlohmann::json b = {{"name", "bytes"}, {"configuration", nlohmann::json::object()}};
  if (dtype.size > 1) b["configuration"]["endian"] = "little";
  return b;
}

}  // namespace

nlohmann::json v3_codecs(const CodecChoice& choice, const DataType& dtype) {
  nlohmann::json chain = nlohmann::json::array({bytes_codec(dtype)});
  for (auto& c : compressors(choice, dtype, true)) chain.push_back({{"name", c.name}, {"configuration", c.config}});
  if (choice.checksum) chain.push_back({{"name", "crc32c"}, {"configuration", nlohmann::json::object()}});
  if (!choice.inner_chunks) return chain;
  // sharding_indexed: the chain above encodes each inner chunk; the index is bytes + crc32c
  // (the spec's recommended index_codecs, which TensorStore and zarr-python write).
  nlohmann::json index = nlohmann::json::array({{{"name", "bytes"}, {"configuration", {{"endian", "little"}}}},
                                                {{"name", "crc32c"}, {"configuration", nlohmann::json::object()}}});
  return nlohmann::json::array({{{"name", "sharding_indexed"},
                                 {"configuration",
                                  {{"chunk_shape", *choice.inner_chunks},
                                   {"codecs", chain},
                                   {"index_codecs", index},
                                   {"index_location", choice.index_at_start ? "start" : "end"}}}}});
}

nlohmann::json v2_codecs(const CodecChoice& choice, const DataType& dtype) {
  if (choice.inner_chunks) bad_argument("Zarr v2 has no sharding (write --format 3 for shards)");
  if (choice.checksum) bad_argument("a crc32c checksum is a Zarr v3 codec (write --format 3)");
  nlohmann::json chain = nlohmann::json::array({bytes_codec(dtype)});
  for (auto& c : compressors(choice, dtype, false)) chain.push_back({{"name", c.name}, {"configuration", c.config}});
  return chain;
}

nlohmann::json fill_value_json_v3(const Bytes& fill_value, const DataType& dtype) { return fill_json(fill_value, dtype, true); }
nlohmann::json fill_value_json_v2(const Bytes& fill_value, const DataType& dtype) { return fill_json(fill_value, dtype, false); }

// ---- metadata documents ---------------------------------------------------------------------

namespace {

nlohmann::json v3_array_document(const ArrayMetadata& m) {
  nlohmann::json j = {{"zarr_format", 3},
                      {"node_type", "array"},
                      {"shape", m.shape},
                      {"data_type", m.dtype.name()},
                      {"chunk_grid", {{"name", "regular"}, {"configuration", {{"chunk_shape", m.chunk_shape}}}}},
                      {"chunk_key_encoding",
                       {{"name", m.chunk_key_encoding}, {"configuration", {{"separator", std::string(1, m.chunk_key_separator)}}}}},
                      {"fill_value", fill_value_json_v3(m.fill_value, m.dtype)},
                      {"codecs", m.codecs},
                      {"attributes", m.attributes.is_null() ? nlohmann::json::object() : m.attributes}};
  if (!m.dimension_names.empty()) {
    nlohmann::json names = nlohmann::json::array();
    for (const auto& n : m.dimension_names) names.push_back(n.empty() ? nlohmann::json() : nlohmann::json(n));
    j["dimension_names"] = names;
  }
  return j;
}

// numcodecs configuration of a bytes->bytes codec given in v3 form.
nlohmann::json numcodecs_config(const nlohmann::json& codec) {
  std::string name = codec.at("name").get<std::string>();
  if (name.rfind("numcodecs.", 0) == 0) name = name.substr(10);
  nlohmann::json c = codec.value("configuration", nlohmann::json::object());
  if (name == "blosc") {
    // numcodecs' Blosc takes shuffle as an integer and typesize from the array itself.
    const nlohmann::json s = c.value("shuffle", nlohmann::json("noshuffle"));
    if (s.is_string()) c["shuffle"] = s == "shuffle" ? 1 : (s == "bitshuffle" ? 2 : 0);
    c.erase("typesize");
  }
  if (name == "zstd") c.erase("checksum");  // numcodecs 0.11's Zstd takes only "level"
  c["id"] = name;
  return c;
}

std::pair<nlohmann::json, nlohmann::json> v2_array_documents(const ArrayMetadata& m) {
  const auto& codecs = m.codecs;
  if (!codecs.is_array() || codecs.empty() || codecs[0].value("name", "") != "bytes")
    bad_argument("a Zarr v2 chain starts with the bytes codec (no transpose, no sharding): " + codecs.dump());
  ByteOrder order = ByteOrder::kLittle;
  const auto& bc = codecs[0].value("configuration", nlohmann::json::object());
  if (bc.value("endian", "little") == "big") order = ByteOrder::kBig;
  static const char* kCompressors[] = {"zstd", "blosc", "gzip", "zlib", "lz4"};
  nlohmann::json filters = nlohmann::json::array(), compressor;
  for (std::size_t i = 1; i < codecs.size(); ++i) {
    nlohmann::json nc = numcodecs_config(codecs[i]);
    bool is_comp = false;
    for (const char* k : kCompressors) is_comp |= nc["id"] == k;
    if (is_comp && i + 1 == codecs.size()) compressor = nc;
    else filters.push_back(nc);
  }
  nlohmann::json zarray = {{"zarr_format", 2},
                           {"shape", m.shape},
                           {"chunks", m.chunk_shape},
                           {"dtype", m.dtype.numpy_str(order)},
                           {"compressor", compressor},
                           {"fill_value", m.fill_value_is_null ? nlohmann::json() : fill_value_json_v2(m.fill_value, m.dtype)},
                           {"order", "C"},
                           {"filters", filters.empty() ? nlohmann::json() : filters},
                           {"dimension_separator", std::string(1, m.chunk_key_separator)}};
  nlohmann::json zattrs = m.attributes.is_null() ? nlohmann::json::object() : m.attributes;
  if (!m.dimension_names.empty()) zattrs["_ARRAY_DIMENSIONS"] = m.dimension_names;
  return {zarray, zattrs};
}

// The chain that encodes: the metadata's, with blosc's typesize filled in where the metadata
// has none (Zarr v2 keeps it out of .zarray; numcodecs takes the array's itemsize).
codec::CodecChain encoding_chain(const ArrayMetadata& m) {
  nlohmann::json codecs = m.codecs;
  std::function<void(nlohmann::json&)> fix = [&](nlohmann::json& list) {
    for (auto& c : list) {
      const std::string name = c.value("name", "");
      if (!c.contains("configuration") || !c["configuration"].is_object()) c["configuration"] = nlohmann::json::object();
      auto& cfg = c["configuration"];
      if ((name == "blosc" || name == "numcodecs.blosc") && (!cfg.contains("typesize") || cfg["typesize"].is_null()))
        cfg["typesize"] = m.dtype.size;
      if (name == "sharding_indexed" && cfg.contains("codecs")) fix(cfg["codecs"]);
    }
  };
  fix(codecs);
  return codec::CodecChain::from_json(codecs);
}

}  // namespace

// ---- ArrayWriter ----------------------------------------------------------------------------

struct ArrayWriter::Impl {
  std::shared_ptr<WritableStore> store;
  std::string path;
  ArrayMetadata meta;
  nlohmann::json documents;
  codec::CodecChain chain;                       // encodes one outer chunk
  const codec::ShardingCodec* sharding = nullptr;  // when the chain is one sharding_indexed codec
};

ArrayWriter::ArrayWriter(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

namespace {

std::shared_ptr<ArrayWriter::Impl> make_impl(std::shared_ptr<WritableStore> store, const std::string& path,
                                             const ArrayMetadata& parsed, nlohmann::json documents) {
  auto impl = std::make_shared<ArrayWriter::Impl>();
  impl->store = std::move(store);
  impl->path = path;
  impl->meta = parsed;
  impl->documents = std::move(documents);
  impl->chain = encoding_chain(parsed);
  if (!impl->chain.can_encode())
    throw Error(ErrorCode::kUnsupported, "cannot write array \"" + path + "\": codec '" + impl->chain.first_without_encoder() +
                                             "' has no encoder in cubestream");
  if (impl->chain.sole_sharding_codec()) impl->sharding = impl->chain.sole_sharding_codec();
  return impl;
}

}  // namespace

ArrayWriter ArrayWriter::create(std::shared_ptr<WritableStore> store, const std::string& path, const ArrayMetadata& meta) {
  if (!store) bad_argument("ArrayWriter::create: no store");
  if (meta.zarr_format != 2 && meta.zarr_format != 3) bad_argument("zarr_format must be 2 or 3");
  if (meta.chunk_shape.size() != meta.shape.size()) bad_argument("chunk shape and shape differ in rank");
  if (!meta.dimension_names.empty() && meta.dimension_names.size() != meta.shape.size())
    bad_argument("dimension_names must name every axis");
  nlohmann::json docs;
  zarr::ParsedArray parsed;
  // Build the documents, then parse them with the reader's own parser: what we write is what
  // we (and therefore the spec as we read it) accept, and the parsed form is what we encode.
  try {
    if (meta.zarr_format == 3) {
      nlohmann::json j = v3_array_document(meta);
      parsed = zarr::parse_v3_array(j);
      docs = {{"zarr.json", j}};
    } else {
      auto [zarray, zattrs] = v2_array_documents(meta);
      parsed = zarr::parse_v2_array(zarray, zattrs);
      docs = {{".zarray", zarray}, {".zattrs", zattrs}};
    }
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kUnsupported) throw;
    throw Error(ErrorCode::kInvalidArgument, "array \"" + path + "\" would have invalid metadata: " + e.message());
  }
  if (meta.zarr_format == 2) parsed.meta.codecs = meta.codecs;  // keep blosc's typesize for encoding
  auto impl = make_impl(store, path, parsed.meta, docs);
  for (auto it = docs.begin(); it != docs.end(); ++it) {
    const Bytes text = dump_json(it.value());
    store->put(node_key(path, it.key().c_str()), ByteView(text.data(), text.size()));
  }
  return ArrayWriter(impl);
}

ArrayWriter ArrayWriter::open(std::shared_ptr<WritableStore> store, const std::string& path) {
  Array a = Array::open(store, path);
  nlohmann::json docs;
  for (const char* k : {"zarr.json", ".zarray", ".zattrs"}) {
    if (auto b = store->get(node_key(path, k))) docs[k] = zarr::parse_json_text(ByteView(b->data(), b->size()), k);
  }
  return ArrayWriter(make_impl(store, path, a.metadata(), docs));
}

const ArrayMetadata& ArrayWriter::metadata() const { return impl_->meta; }
const std::string& ArrayWriter::path() const { return impl_->path; }
const nlohmann::json& ArrayWriter::metadata_documents() const { return impl_->documents; }

std::vector<std::int64_t> ArrayWriter::chunk_grid() const {
  const auto& m = impl_->meta;
  std::vector<std::int64_t> g(m.shape.size());
  for (std::size_t d = 0; d < g.size(); ++d) g[d] = (m.shape[d] + m.chunk_shape[d] - 1) / m.chunk_shape[d];
  return g;
}

std::string ArrayWriter::chunk_key(const std::vector<std::int64_t>& index) const {
  return join_key(impl_->path, zarr::chunk_key(impl_->meta, index));
}

Region ArrayWriter::chunk_region(const std::vector<std::int64_t>& index) const {
  const auto& m = impl_->meta;
  if (index.size() != m.shape.size()) bad_argument("chunk index of rank " + std::to_string(index.size()) + " for an array of rank " + std::to_string(m.shape.size()));
  Region r;
  const auto grid = chunk_grid();
  for (std::size_t d = 0; d < index.size(); ++d) {
    if (index[d] < 0 || index[d] >= grid[d]) bad_argument("chunk index outside the chunk grid");
    r.start.push_back(index[d] * m.chunk_shape[d]);
    r.shape.push_back(std::min(m.chunk_shape[d], m.shape[d] - r.start.back()));
  }
  return r;
}

namespace {

// The whole chunk of `chunk_shape` from the elements of its clipped region: the rest is the
// fill value. Returns a view of `data` itself when nothing is clipped.
ByteView whole_chunk(const ArrayMetadata& m, const Region& r, const std::vector<std::int64_t>& chunk_shape, ByteView data,
                     Bytes& scratch) {
  const std::size_t elem = m.dtype.size;
  if (data.size() != static_cast<std::size_t>(r.num_elements()) * elem)
    bad_argument("chunk data holds " + std::to_string(data.size()) + " bytes, expected " +
                 std::to_string(static_cast<std::size_t>(r.num_elements()) * elem));
  if (r.shape == chunk_shape) return data;
  std::int64_t n = 1;
  for (auto c : chunk_shape) n *= c;
  scratch.resize(static_cast<std::size_t>(n) * elem);
  const std::vector<std::int64_t> zeros(chunk_shape.size(), 0);
  fill_box(scratch.data(), chunk_shape, zeros, chunk_shape, m.fill_value.data(), elem);
  copy_box(data.data(), r.shape, zeros, scratch.data(), chunk_shape, zeros, r.shape, elem);
  return ByteView(scratch.data(), scratch.size());
}

}  // namespace

std::uint64_t ArrayWriter::write_chunk(const std::vector<std::int64_t>& index, ByteView data) const {
  const auto& m = impl_->meta;
  const Region r = chunk_region(index);
  Bytes scratch;
  ByteView whole = whole_chunk(m, r, m.chunk_shape, data, scratch);
  const codec::ChunkSpec spec{m.dtype, m.chunk_shape, std::vector<std::uint8_t>(m.fill_value.begin(), m.fill_value.end())};
  const Bytes encoded = impl_->chain.encode(whole, spec);
  impl_->store->put(chunk_key(index), ByteView(encoded.data(), encoded.size()));
  return encoded.size();
}

void ArrayWriter::write_region(const Region& region, const void* data, std::size_t bytes, int threads) const {
  const auto& m = impl_->meta;
  const std::size_t rank = m.shape.size(), elem = m.dtype.size;
  if (region.start.size() != rank || region.shape.size() != rank) bad_argument("region rank does not match the array");
  if (bytes != static_cast<std::size_t>(region.num_elements()) * elem) bad_argument("region buffer has the wrong size");
  std::vector<std::int64_t> first(rank), count(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    const auto s = region.start[d], e = s + region.shape[d];
    if (s < 0 || e > m.shape[d]) bad_argument("region lies outside the array");
    if (s % m.chunk_shape[d] != 0 || (e % m.chunk_shape[d] != 0 && e != m.shape[d]))
      bad_argument("region is not aligned to the chunk grid along axis " + std::to_string(d));
    first[d] = s / m.chunk_shape[d];
    count[d] = region.shape[d] == 0 ? 0 : (e - s + m.chunk_shape[d] - 1) / m.chunk_shape[d];
  }
  std::size_t total = 1;
  for (auto c : count) total *= static_cast<std::size_t>(c);
  const auto* src = static_cast<const std::uint8_t*>(data);
  auto one = [&](std::size_t flat) {
    std::vector<std::int64_t> idx(rank), src_start(rank);
    for (std::size_t d = rank; d-- > 0;) {
      idx[d] = first[d] + static_cast<std::int64_t>(flat % static_cast<std::size_t>(count[d]));
      flat /= static_cast<std::size_t>(count[d]);
    }
    const Region r = chunk_region(idx);
    for (std::size_t d = 0; d < rank; ++d) src_start[d] = r.start[d] - region.start[d];
    Bytes part(static_cast<std::size_t>(r.num_elements()) * elem);
    const std::vector<std::int64_t> zeros(rank, 0);
    copy_box(src, region.shape, src_start, part.data(), r.shape, zeros, r.shape, elem);
    write_chunk(idx, ByteView(part.data(), part.size()));
  };
  if (threads == 1 || total <= 1) {
    for (std::size_t i = 0; i < total; ++i) one(i);
  } else {
    ThreadPool::shared(threads).parallel_for(total, one);
  }
}

// ---- streaming shards -----------------------------------------------------------------------

struct ArrayWriter::ShardStream::Impl {
  const ArrayWriter::Impl* array = nullptr;
  std::string key;
  std::vector<std::int64_t> shard_shape, grid;
  codec::ChunkSpec inner;
  std::unique_ptr<WritableStore::ValueWriter> out;
  std::vector<codec::ShardIndexEntry> entries;
  std::uint64_t index_bytes = 0;
  bool at_start = false;
  bool committed = false;
};

ArrayWriter::ShardStream::ShardStream(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ArrayWriter::ShardStream::ShardStream(ShardStream&&) noexcept = default;
ArrayWriter::ShardStream& ArrayWriter::ShardStream::operator=(ShardStream&&) noexcept = default;
ArrayWriter::ShardStream::~ShardStream() = default;

ArrayWriter::ShardStream ArrayWriter::begin_shard(const std::vector<std::int64_t>& shard_index) const {
  if (!impl_->sharding) bad_argument("array \"" + impl_->path + "\" is not sharded");
  chunk_region(shard_index);  // validates the index
  auto s = std::make_unique<ShardStream::Impl>();
  const auto& m = impl_->meta;
  s->array = impl_.get();
  s->key = chunk_key(shard_index);
  s->shard_shape = m.chunk_shape;
  s->grid = impl_->sharding->inner_grid(m.chunk_shape);
  s->inner = impl_->sharding->inner_spec(codec::ChunkSpec{m.dtype, m.chunk_shape, {m.fill_value.begin(), m.fill_value.end()}});
  std::size_t n = 1;
  for (auto g : s->grid) n *= static_cast<std::size_t>(g);
  s->entries.assign(n, codec::ShardIndexEntry{~std::uint64_t{0}, ~std::uint64_t{0}});
  s->index_bytes = impl_->sharding->index_size(m.chunk_shape);
  s->at_start = impl_->sharding->index_location() == codec::ShardingCodec::IndexLocation::kStart;
  s->out = impl_->store->open_writer(s->key);
  if (s->at_start) {
    // Reserve the index's bytes; commit() writes the index over them.
    const Bytes zeros(s->index_bytes, 0);
    s->out->append(ByteView(zeros.data(), zeros.size()));
  }
  return ShardStream(std::move(s));
}

void ArrayWriter::ShardStream::add(const std::vector<std::int64_t>& inner, ByteView data) {
  auto& s = *impl_;
  if (s.committed) bad_argument("shard already committed");
  if (inner.size() != s.grid.size()) bad_argument("inner chunk index has the wrong rank");
  std::size_t flat = 0;
  for (std::size_t d = 0; d < inner.size(); ++d) {
    if (inner[d] < 0 || inner[d] >= s.grid[d]) bad_argument("inner chunk index outside the shard");
    flat = flat * static_cast<std::size_t>(s.grid[d]) + static_cast<std::size_t>(inner[d]);
  }
  if (data.size() != s.inner.num_bytes()) bad_argument("inner chunk data has the wrong size");
  const Bytes enc = s.array->sharding->inner_chain().encode(data, s.inner);
  s.entries[flat] = {s.out->size(), enc.size()};
  s.out->append(ByteView(enc.data(), enc.size()));
}

std::uint64_t ArrayWriter::ShardStream::bytes_written() const { return impl_->out->size(); }

void ArrayWriter::ShardStream::commit() {
  auto& s = *impl_;
  if (s.committed) return;
  const Bytes index = s.array->sharding->encode_index(s.entries, s.shard_shape);
  if (index.size() != s.index_bytes) throw Error(ErrorCode::kInternal, "shard index encoded to an unexpected size");
  if (s.at_start) s.out->write_at(0, ByteView(index.data(), index.size()));
  else s.out->append(ByteView(index.data(), index.size()));
  s.out->commit();
  s.committed = true;
}

// ---- groups and consolidated metadata -------------------------------------------------------

void write_group(const std::shared_ptr<WritableStore>& store, const std::string& path, int zarr_format,
                 const nlohmann::json& attributes) {
  if (!attributes.is_object()) bad_argument("group attributes must be a JSON object");
  if (zarr_format == 3) {
    const Bytes t = dump_json({{"zarr_format", 3}, {"node_type", "group"}, {"attributes", attributes}});
    store->put(node_key(path, "zarr.json"), ByteView(t.data(), t.size()));
  } else if (zarr_format == 2) {
    const Bytes g = dump_json({{"zarr_format", 2}});
    store->put(node_key(path, ".zgroup"), ByteView(g.data(), g.size()));
    const Bytes a = dump_json(attributes);
    store->put(node_key(path, ".zattrs"), ByteView(a.data(), a.size()));
  } else {
    bad_argument("zarr_format must be 2 or 3");
  }
}

namespace {

std::optional<nlohmann::json> read_json_key(const Store& store, const std::string& key) {
  auto b = store.get(key);
  if (!b) return std::nullopt;
  return zarr::parse_json_text(ByteView(b->data(), b->size()), key);
}

// Every node below `path`: v3 "rel/path" -> zarr.json; v2 "rel/path/.zarray" etc. -> JSON.
void collect(const Store& store, const std::string& path, const std::string& rel, int zarr_format, nlohmann::json& out) {
  for (const auto& name : store.list_dir(path)) {
    if (name.empty() || name[0] == '.' || name == "zarr.json") continue;
    const std::string child = join_key(path, name), child_rel = join_key(rel, name);
    if (zarr_format == 3) {
      auto j = read_json_key(store, join_key(child, "zarr.json"));
      if (!j) continue;
      j->erase("consolidated_metadata");
      const bool group = j->value("node_type", "") == "group";
      out[child_rel] = *j;
      if (group) collect(store, child, child_rel, zarr_format, out);
    } else {
      bool node = false;
      for (const char* k : {".zarray", ".zgroup", ".zattrs"}) {
        if (auto j = read_json_key(store, join_key(child, k))) {
          out[join_key(child_rel, k)] = *j;
          node = true;
        }
      }
      if (node && store.exists(join_key(child, ".zgroup"))) collect(store, child, child_rel, zarr_format, out);
    }
  }
}

}  // namespace

void consolidate_metadata(const std::shared_ptr<WritableStore>& store, const std::string& path, int zarr_format) {
  nlohmann::json entries = nlohmann::json::object();
  if (zarr_format == 3) {
    auto root = read_json_key(*store, node_key(path, "zarr.json"));
    if (!root || root->value("node_type", "") != "group")
      throw Error(ErrorCode::kNotFound, "no Zarr v3 group to consolidate", ErrorContext{store->describe(), node_key(path, "zarr.json"), std::nullopt});
    collect(*store, path, "", 3, entries);
    (*root)["consolidated_metadata"] = {{"kind", "inline"}, {"must_understand", false}, {"metadata", entries}};
    const Bytes t = dump_json(*root);
    store->put(node_key(path, "zarr.json"), ByteView(t.data(), t.size()));
    return;
  }
  if (zarr_format != 2) bad_argument("zarr_format must be 2 or 3");
  if (!path.empty()) bad_argument("Zarr v2 consolidated metadata lives at the store root");
  for (const char* k : {".zgroup", ".zattrs"})
    if (auto j = read_json_key(*store, k)) entries[k] = *j;
  if (!entries.contains(".zgroup"))
    throw Error(ErrorCode::kNotFound, "no Zarr v2 group to consolidate", ErrorContext{store->describe(), ".zgroup", std::nullopt});
  collect(*store, "", "", 2, entries);
  const Bytes t = dump_json({{"metadata", entries}, {"zarr_consolidated_format", 1}});
  store->put(".zmetadata", ByteView(t.data(), t.size()));
}

}  // namespace cubestream
