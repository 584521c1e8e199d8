#include "codec/registry.hpp"

#include "codec/factories.hpp"
#include "cubestream/error.hpp"

namespace cubestream::codec {

namespace {

struct Entry {
  std::string_view name;
  CodecPtr (*make)(const nlohmann::json& configuration);
};

// Zarr v3 names first, then numcodecs ids. A v3 store may also spell any numcodecs id as
// "numcodecs.<id>"; make_codec strips that prefix before looking here.
constexpr Entry kCodecs[] = {
    {"bytes", make_bytes_codec},
    {"transpose", make_transpose_codec},
    {"sharding_indexed", make_sharding_codec},
    {"zstd", make_zstd_codec},
    {"gzip", make_gzip_codec},
    {"zlib", make_zlib_codec},
    {"lz4", make_lz4_codec},
    {"blosc", make_blosc_codec},
    {"crc32c", make_crc32c_codec},
    {"crc32", make_crc32_codec},
    {"adler32", make_adler32_codec},
    {"shuffle", make_shuffle_codec},
    {"delta", make_delta_codec},
    {"fixedscaleoffset", make_fixedscaleoffset_codec},
    {"bitround", make_bitround_codec},
    {"quantize", make_quantize_codec},
};

}  // namespace

CodecPtr make_codec(std::string_view name, const nlohmann::json& configuration) {
  std::string_view id = name;
  constexpr std::string_view kPrefix = "numcodecs.";
  if (id.starts_with(kPrefix)) id.remove_prefix(kPrefix.size());
  for (const auto& e : kCodecs) {
    if (e.name == id) {
      try {
        return e.make(configuration.is_null() ? nlohmann::json::object() : configuration);
      } catch (const nlohmann::json::exception& ex) {
        throw Error(ErrorCode::kInvalidMetadata,
                    "codec '" + std::string(name) + "' has a malformed configuration: " + ex.what());
      }
    }
  }
  std::string known;
  for (const auto& e : kCodecs) known += (known.empty() ? "" : ", ") + std::string(e.name);
  throw Error(ErrorCode::kUnsupported,
              "codec '" + std::string(name) + "' is not supported (supported: " + known + ")");
}

std::vector<std::string> known_codec_names() {
  std::vector<std::string> out;
  for (const auto& e : kCodecs) out.emplace_back(e.name);
  return out;
}

}  // namespace cubestream::codec
