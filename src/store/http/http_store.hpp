// A Zarr store over plain HTTP(S): keys are paths below a base URL, read with ranged GETs
// (RFC 7233) and sized with HEAD. HTTP has no listing, so list_dir is Error(kUnsupported);
// groups open through their metadata documents and consolidated metadata instead.
#pragma once

#include <memory>
#include <string>

#include "cubestream/store.hpp"
#include "store/http/transport.hpp"

namespace cubestream::http {

// `url` is http://host[:port]/path or https://...; user:password@ in it is used for the
// requests and left out of describe() and every message. A null transport means libcurl's.
std::shared_ptr<Store> open_http_store(const std::string& url, const Settings& settings,
                                       std::shared_ptr<Transport> transport = nullptr);

}  // namespace cubestream::http
