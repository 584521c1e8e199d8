// Key validation and the parts of the Store interface shared by every implementation.
#include "cubestream/store.hpp"

#include "cubestream/error.hpp"
#include "store/http/http_store.hpp"
#include "store/s3/s3_store.hpp"

namespace cubestream {

void validate_key(std::string_view key, std::string_view store_description) {
  auto refuse = [&](const char* why) {
    throw Error(ErrorCode::kPathEscape, std::string("unsafe key: ") + why,
                ErrorContext{std::string(store_description), std::string(key), std::nullopt});
  };
  if (key.empty()) refuse("empty");
  if (key.front() == '/') refuse("absolute path");
  for (char c : key) {
    if (c == '\0') refuse("contains NUL");
    if (c == '\\') refuse("contains a backslash");
  }
  // Every '/'-separated part must be a plain name: no "", ".", "..".
  std::size_t begin = 0;
  while (begin <= key.size()) {
    std::size_t end = key.find('/', begin);
    if (end == std::string_view::npos) end = key.size();
    std::string_view part = key.substr(begin, end - begin);
    if (part.empty()) refuse("empty path component");
    if (part == "." || part == "..") refuse("'.' or '..' component");
    begin = end + 1;
  }
}

std::string join_key(std::string_view a, std::string_view b) {
  while (!a.empty() && a.back() == '/') a.remove_suffix(1);
  while (!b.empty() && b.front() == '/') b.remove_prefix(1);
  if (a.empty()) return std::string(b);
  if (b.empty()) return std::string(a);
  std::string out;
  out.reserve(a.size() + 1 + b.size());
  out.append(a).append("/").append(b);
  return out;
}

void WritableStore::put(std::string_view key, ByteView value) {
  auto w = open_writer(key);
  w->append(value);
  w->commit();
}

bool Store::read_into(std::string_view key, ByteRange range, Bytes& out) const {
  auto v = get_range(key, range);
  if (!v) return false;
  out = std::move(*v);
  return true;
}

std::optional<std::vector<Bytes>> Store::get_ranges(std::string_view key,
                                                    const std::vector<ByteRange>& ranges) const {
  std::vector<Bytes> out;
  out.reserve(ranges.size());
  for (const auto& r : ranges) {
    auto part = get_range(key, r);
    if (!part) return std::nullopt;
    out.push_back(std::move(*part));
  }
  return out;
}

std::shared_ptr<Store> open_store(const std::string& url) {
  constexpr std::string_view kFile = "file://";
  if (url.rfind(kFile, 0) == 0) return open_file_store(url.substr(kFile.size()));
  // Object stores read their settings (and, for S3, credentials) from the environment here,
  // once per opened store: see store/http/transport.hpp and store/s3/s3_config.hpp.
  if (url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0)
    return http::open_http_store(url, http::Settings::from_env());
  if (url.rfind("s3://", 0) == 0)
    return s3::open_s3_store(url, s3::config_from_env(s3::process_env()), http::Settings::from_env());
  auto scheme_end = url.find("://");
  if (scheme_end != std::string::npos) {
    throw Error(ErrorCode::kUnsupported,
                "store URL scheme '" + url.substr(0, scheme_end) + "' is not supported (file paths, file://, "
                "http://, https:// and s3:// are)",
                ErrorContext{http::redact_url(url), {}, std::nullopt});
  }
  return open_file_store(url);
}

}  // namespace cubestream
