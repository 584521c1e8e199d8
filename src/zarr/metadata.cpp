#include "zarr/metadata.hpp"

#include <limits>
#include <set>

#include "codec/array_to_array/transpose.hpp"
#include "codec/array_to_bytes/bytes.hpp"
#include "codec/array_to_bytes/sharding.hpp"
#include "codec/registry.hpp"
#include "cubestream/error.hpp"
#include "zarr/fill_value.hpp"

namespace cubestream::zarr {

namespace {

[[noreturn]] void invalid(const std::string& why) { throw Error(ErrorCode::kInvalidMetadata, why); }

const nlohmann::json& require(const nlohmann::json& obj, const char* field) {
  auto it = obj.find(field);
  if (it == obj.end()) invalid(std::string("missing field \"") + field + "\"");
  return *it;
}

std::vector<std::int64_t> int_list(const nlohmann::json& v, const char* field, bool positive) {
  if (!v.is_array()) invalid(std::string("\"") + field + "\" must be an array of integers, got " + v.dump());
  std::vector<std::int64_t> out;
  for (const auto& e : v) {
    if (!e.is_number_integer()) invalid(std::string("\"") + field + "\" must be an array of integers, got " + v.dump());
    auto x = e.get<std::int64_t>();
    if (x < 0 || (positive && x == 0)) invalid(std::string("\"") + field + "\" has an invalid entry in " + v.dump());
    out.push_back(x);
  }
  return out;
}

// Largest decoded chunk (or shard) cubestream will allocate for, and the most inner chunks a
// shard may index: far above the 1-100 MB chunks that suit streaming, far below what would
// make a hostile zarr.json exhaust memory or overflow a size computation.
constexpr long double kMaxChunkBytes = 64.0L * (1ull << 30);
constexpr long double kMaxInnerChunksPerShard = 1ull << 28;

// Guards the products used to size buffers: a metadata file claiming 2^62-element chunks
// must fail here, not at allocation.
void check_sizes(const ArrayMetadata& m) {
  if (m.chunk_shape.size() != m.shape.size())
    invalid("chunk shape " + nlohmann::json(m.chunk_shape).dump() + " does not match the rank of shape " + nlohmann::json(m.shape).dump());
  long double chunk_bytes = m.dtype.size;
  for (auto c : m.chunk_shape) chunk_bytes *= static_cast<long double>(c);
  if (chunk_bytes > kMaxChunkBytes)
    invalid("chunk of " + nlohmann::json(m.chunk_shape).dump() + " elements (" + std::to_string(static_cast<double>(chunk_bytes)) +
            " bytes) is larger than cubestream reads (" + std::to_string(static_cast<double>(kMaxChunkBytes)) + " bytes)");
  long double elems = 1;
  for (auto s : m.shape) elems *= static_cast<long double>(s);
  if (elems > static_cast<long double>(std::numeric_limits<std::int64_t>::max() / 16)) invalid("array shape is too large");
}

void check_extensions(const nlohmann::json& j, const std::set<std::string>& known) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (known.count(it.key())) continue;
    const auto& v = it.value();
    if (v.is_object() && v.contains("must_understand") && v["must_understand"] == false) continue;
    throw Error(ErrorCode::kUnsupported, "unknown metadata field \"" + it.key() +
                                             "\" (an extension that is not marked \"must_understand\": false)");
  }
}

}  // namespace

nlohmann::json parse_json_text(ByteView text, const std::string& what) {
  auto j = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded()) throw Error(ErrorCode::kInvalidMetadata, "not valid JSON", ErrorContext{{}, what, std::nullopt});
  return j;
}

void check_v3_group(const nlohmann::json& j) {
  if (!j.is_object()) invalid("zarr.json must hold a JSON object");
  if (require(j, "zarr_format") != 3) invalid("\"zarr_format\" must be 3");
  if (require(j, "node_type") != "group") invalid("\"node_type\" must be \"group\"");
  if (j.contains("attributes") && !j["attributes"].is_object()) invalid("\"attributes\" must be an object");
  check_extensions(j, {"zarr_format", "node_type", "attributes", "consolidated_metadata"});
}

ParsedArray parse_v3_array(const nlohmann::json& j) {
  if (!j.is_object()) invalid("zarr.json must hold a JSON object");
  if (require(j, "zarr_format") != 3) invalid("\"zarr_format\" must be 3");
  if (require(j, "node_type") != "array") invalid("\"node_type\" must be \"array\"");
  check_extensions(j, {"zarr_format", "node_type", "shape", "data_type", "chunk_grid", "chunk_key_encoding",
                       "fill_value", "codecs", "attributes", "dimension_names", "storage_transformers"});
  ParsedArray p;
  ArrayMetadata& m = p.meta;
  m.zarr_format = 3;
  m.shape = int_list(require(j, "shape"), "shape", false);

  const auto& dt = require(j, "data_type");
  if (dt.is_string()) m.dtype = parse_v3_data_type(dt.get<std::string>());
  else if (dt.is_object() && dt.contains("name") && dt["name"].is_string()) m.dtype = parse_v3_data_type(dt["name"].get<std::string>());
  else invalid("\"data_type\" must be a string, got " + dt.dump());

  const auto& grid = require(j, "chunk_grid");
  if (!grid.is_object() || grid.value("name", "") != "regular")
    throw Error(ErrorCode::kUnsupported, "chunk_grid " + grid.dump() + " is not supported (only \"regular\")");
  m.chunk_shape = int_list(require(require(grid, "configuration"), "chunk_shape"), "chunk_shape", true);

  const auto& cke = require(j, "chunk_key_encoding");
  if (!cke.is_object() || !cke.contains("name") || !cke["name"].is_string()) invalid("\"chunk_key_encoding\" must be an object with a \"name\"");
  std::string enc = cke["name"].get<std::string>();
  std::string sep = enc == "v2" ? "." : "/";
  if (cke.contains("configuration") && cke["configuration"].contains("separator")) {
    const auto& s = cke["configuration"]["separator"];
    if (!s.is_string()) invalid("chunk_key_encoding separator must be a string");
    sep = s.get<std::string>();
  }
  if (enc != "default" && enc != "v2") throw Error(ErrorCode::kUnsupported, "chunk_key_encoding \"" + enc + "\" is not supported");
  if (sep != "/" && sep != ".") invalid("chunk_key_encoding separator must be \"/\" or \".\"");
  m.chunk_key_encoding = enc;
  m.chunk_key_separator = sep[0];

  m.fill_value = parse_fill_value_v3(require(j, "fill_value"), m.dtype);
  if (j.contains("attributes")) {
    if (!j["attributes"].is_object()) invalid("\"attributes\" must be an object");
    m.attributes = j["attributes"];
  }
  if (j.contains("dimension_names") && !j["dimension_names"].is_null()) {
    const auto& names = j["dimension_names"];
    if (!names.is_array() || names.size() != m.shape.size()) invalid("\"dimension_names\" must be an array with one entry per dimension");
    for (const auto& n : names) {
      if (n.is_null()) m.dimension_names.emplace_back();
      else if (n.is_string()) m.dimension_names.push_back(n.get<std::string>());
      else invalid("\"dimension_names\" entries must be strings or null");
    }
  }
  if (j.contains("storage_transformers")) {
    const auto& st = j["storage_transformers"];
    if (!st.is_array()) invalid("\"storage_transformers\" must be an array");
    for (const auto& t : st) {
      if (t.is_object() && t.contains("must_understand") && t["must_understand"] == false) continue;
      throw Error(ErrorCode::kUnsupported, "storage transformer " + t.dump() + " is not supported");
    }
  }
  check_sizes(m);
  p.chain = codec::CodecChain::from_json(require(j, "codecs"));
  if (const auto* sh = dynamic_cast<const codec::ShardingCodec*>(&p.chain.array_to_bytes())) {
    // Sharding sees the chunk after any array->array codec (a transpose permutes its shape).
    codec::ChunkSpec outer{m.dtype, m.chunk_shape, {}};
    const auto grid = sh->inner_grid(p.chain.array_to_bytes_spec(outer).shape);  // validates divisibility and rank
    long double inner_count = 1;
    for (auto g : grid) inner_count *= static_cast<long double>(g);
    if (inner_count > kMaxInnerChunksPerShard)
      invalid("a shard of " + nlohmann::json(m.chunk_shape).dump() + " holds too many inner chunks of " +
              nlohmann::json(sh->inner_chunk_shape()).dump());
    if (p.chain.sole_sharding_codec()) m.inner_chunk_shape = sh->inner_chunk_shape();
  }
  // Walk the chain once with the chunk's spec, so that a codec that does not fit the array
  // (a transpose order of the wrong rank) is reported here, against the metadata.
  p.chain.encoded_size(codec::ChunkSpec{m.dtype, m.chunk_shape, {}});
  m.codecs = p.chain.to_json();
  return p;
}

ParsedArray parse_v2_array(const nlohmann::json& j, const nlohmann::json& zattrs) {
  if (!j.is_object()) invalid(".zarray must hold a JSON object");
  if (require(j, "zarr_format") != 2) invalid("\"zarr_format\" must be 2");
  ParsedArray p;
  ArrayMetadata& m = p.meta;
  m.zarr_format = 2;
  m.shape = int_list(require(j, "shape"), "shape", false);
  m.chunk_shape = int_list(require(j, "chunks"), "chunks", true);
  const auto& dt = require(j, "dtype");
  if (dt.is_array()) throw Error(ErrorCode::kUnsupported, "dtype " + dt.dump() + " is not supported (structured dtypes are not)");
  if (!dt.is_string()) invalid("\"dtype\" must be a string, got " + dt.dump());
  ByteOrder stored = ByteOrder::kNotApplicable;
  m.dtype = parse_numpy_dtype(dt.get<std::string>(), &stored);
  m.fill_value = parse_fill_value_v2(require(j, "fill_value"), m.dtype, &m.fill_value_is_null);
  const auto& order = require(j, "order");
  if (order != "C" && order != "F") invalid("\"order\" must be \"C\" or \"F\", got " + order.dump());
  m.chunk_key_encoding = "v2";
  m.chunk_key_separator = '.';
  if (j.contains("dimension_separator") && !j["dimension_separator"].is_null()) {
    const auto& s = j["dimension_separator"];
    if (s == "/") m.chunk_key_separator = '/';
    else if (s != ".") invalid("\"dimension_separator\" must be \".\" or \"/\"");
  }
  if (!zattrs.is_object()) invalid(".zattrs must hold a JSON object");
  m.attributes = zattrs;
  if (zattrs.contains("_ARRAY_DIMENSIONS")) {
    const auto& dims = zattrs["_ARRAY_DIMENSIONS"];
    if (dims.is_array() && dims.size() == m.shape.size()) {
      for (const auto& d : dims) m.dimension_names.push_back(d.is_string() ? d.get<std::string>() : "");
    }
  }
  check_sizes(m);
  // The chain in Zarr v3 terms: [transpose if F] -> bytes(endian of the dtype) -> filters -> compressor.
  std::vector<codec::CodecPtr> codecs;
  if (order == "F" && m.shape.size() > 1) codecs.push_back(std::make_shared<codec::TransposeCodec>(std::vector<int>{}, true));
  codecs.push_back(std::make_shared<codec::BytesCodec>(stored));
  auto add = [&](const nlohmann::json& c, const char* where) {
    if (!c.is_object() || !c.contains("id") || !c["id"].is_string()) invalid(std::string(where) + " entries must be objects with a string \"id\": " + c.dump());
    nlohmann::json config = c;
    config.erase("id");
    codecs.push_back(codec::make_codec(c["id"].get<std::string>(), config));
  };
  if (j.contains("filters") && !j["filters"].is_null()) {
    if (!j["filters"].is_array()) invalid("\"filters\" must be an array or null");
    for (const auto& f : j["filters"]) add(f, "filters");
  }
  const auto& comp = require(j, "compressor");
  if (!comp.is_null()) add(comp, "compressor");
  p.chain = codec::CodecChain(std::move(codecs));
  p.chain.encoded_size(codec::ChunkSpec{m.dtype, m.chunk_shape, {}});
  m.codecs = p.chain.to_json();
  return p;
}

std::string chunk_key(const ArrayMetadata& meta, const std::vector<std::int64_t>& index) {
  const char sep = meta.chunk_key_separator;
  std::string key;
  if (meta.chunk_key_encoding == "default") {
    key = "c";
    for (auto i : index) {
      key += sep;
      key += std::to_string(i);
    }
    return key;
  }
  if (index.empty()) return "0";  // v2 keys of a 0-d array
  for (std::size_t d = 0; d < index.size(); ++d) {
    if (d) key += sep;
    key += std::to_string(index[d]);
  }
  return key;
}

}  // namespace cubestream::zarr
