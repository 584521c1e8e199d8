// HttpStore: see http_store.hpp.
#include "store/http/http_store.hpp"

#include "cubestream/error.hpp"
#include "store/http/object_store.hpp"

namespace cubestream::http {

namespace {

class HttpStore final : public ObjectStore {
 public:
  HttpStore(std::string base, std::shared_ptr<Transport> transport, const Settings& settings)
      : ObjectStore(std::move(transport), settings), base_(std::move(base)), description_(redact_url(base_)) {}

  std::string describe() const override { return description_; }

  std::vector<std::string> list_dir(std::string_view prefix) const override {
    throw Error(ErrorCode::kUnsupported,
                "plain HTTP has no directory listing: open groups through their metadata and consolidated "
                "metadata (.zmetadata, or consolidated_metadata in zarr.json), or serve the store over S3",
                ErrorContext{describe(), std::string(prefix), std::nullopt});
  }

 protected:
  Request build_request(std::string_view method, std::string_view key, const HeaderList& extra,
                        std::string_view query) const override {
    Request r;
    r.method = std::string(method);
    r.url = base_;
    if (!key.empty()) r.url += "/" + percent_encode(key, /*keep_slash=*/true);
    if (!query.empty()) r.url += "?" + std::string(query);
    r.headers = extra;
    return r;
  }

 private:
  std::string base_;
  std::string description_;
};

}  // namespace

std::shared_ptr<Store> open_http_store(const std::string& url, const Settings& settings,
                                       std::shared_ptr<Transport> transport) {
  const bool http = url.rfind("http://", 0) == 0, https = url.rfind("https://", 0) == 0;
  if (!http && !https)
    throw Error(ErrorCode::kInvalidArgument, "not an http:// or https:// URL", ErrorContext{redact_url(url), {}, std::nullopt});
  if (url.find_first_of("?#") != std::string::npos)
    throw Error(ErrorCode::kInvalidArgument, "a store URL cannot carry a query or fragment",
                ErrorContext{redact_url(url), {}, std::nullopt});
  std::string base = url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  const auto host_begin = base.find("://") + 3;
  if (host_begin >= base.size() || base[host_begin] == '/')
    throw Error(ErrorCode::kInvalidArgument, "the URL names no host", ErrorContext{redact_url(url), {}, std::nullopt});
  if (!transport) transport = make_curl_transport(settings);
  return std::make_shared<HttpStore>(std::move(base), std::move(transport), settings);
}

}  // namespace cubestream::http
