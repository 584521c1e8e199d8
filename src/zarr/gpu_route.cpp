#include "zarr/gpu_route.hpp"

#include <nlohmann/json.hpp>

#include "cubestream/error.hpp"

namespace cubestream::zarr {

ChainRoute chain_route(const ArrayMetadata& meta) {
  ChainRoute r;
  nlohmann::json codecs = meta.codecs;
  if (codecs.size() == 1 && codecs[0].value("name", "") == "sharding_indexed") {
    codecs = codecs[0].value("configuration", nlohmann::json::object()).value("codecs", nlohmann::json::array());
  }
  auto host = [&](std::string why) {
    r.route = UnitRoute::kHostDecode;
    r.why = std::move(why);
    return r;
  };
  if (codecs.empty() || codecs[0].value("name", "") != "bytes") {
    return host("its codec chain does not start with \"bytes\" (" + codecs.dump() + ")");
  }
  const auto cfg = codecs[0].value("configuration", nlohmann::json::object());
  if (cfg.value("endian", "little") == "big" && meta.dtype.size > 1) {
    return host("big-endian values");
  }
  if (codecs.size() == 1) {
    r.route = UnitRoute::kRaw;
    return r;
  }
  if (codecs.size() > 2) return host("a chain of " + std::to_string(codecs.size()) + " codecs");
  const std::string id = codecs[1].value("name", "");
  try {
    r.codec = cuda::batch_codec_for_id(id);
  } catch (const Error&) {
    return host("codec \"" + id + "\" has no GPU decoder");
  }
  r.route = UnitRoute::kGpuDecode;
  r.codec_config = codecs[1].dump();
  return r;
}

}  // namespace cubestream::zarr
