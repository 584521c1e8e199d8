// S3 configuration and addressing: see s3_config.hpp.
#include "store/s3/s3_config.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "cubestream/error.hpp"

namespace cubestream::s3 {

Getenv process_env() {
  return [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    if (!v || !*v) return std::nullopt;
    return std::string(v);
  };
}

namespace {

std::string trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return std::string(s);
}

bool truthy(const std::optional<std::string>& v) {
  if (!v) return false;
  std::string s = *v;
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s == "1" || s == "true" || s == "yes" || s == "on";
}

std::optional<std::string> read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string home_file(const Getenv& env, const char* var, const char* rel) {
  if (auto p = env(var)) return *p;
  if (auto h = env("HOME")) return *h + "/" + rel;
  return "";
}

}  // namespace

std::optional<std::map<std::string, std::string>> ini_section(std::string_view text, std::string_view section) {
  std::optional<std::map<std::string, std::string>> out;
  bool in = false;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string line = trim(text.substr(pos, end - pos));
    pos = end + 1;
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      in = trim(std::string_view(line).substr(1, line.size() - 2)) == section;
      if (in && !out) out.emplace();
      continue;
    }
    if (!in) continue;
    auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    (*out)[trim(std::string_view(line).substr(0, eq))] = trim(std::string_view(line).substr(eq + 1));
  }
  return out;
}

Config config_from_env(const Getenv& env) {
  Config c;
  const std::string profile = env("AWS_PROFILE").value_or("default");
  const bool profile_explicit = env("AWS_PROFILE").has_value();

  // Region: environment first, then the config file's profile section.
  if (auto r = env("AWS_REGION")) c.region = *r;
  else if (auto r2 = env("AWS_DEFAULT_REGION")) c.region = *r2;
  else if (auto cfg = read_text(home_file(env, "AWS_CONFIG_FILE", ".aws/config"))) {
    auto sec = ini_section(*cfg, profile == "default" ? "default" : "profile " + profile);
    if (sec && sec->count("region")) c.region = sec->at("region");
  }

  for (const char* var : {"CUBESTREAM_S3_ENDPOINT", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"}) {
    if (auto e = env(var)) {
      c.endpoint = *e;
      while (!c.endpoint.empty() && c.endpoint.back() == '/') c.endpoint.pop_back();
      if (c.endpoint.rfind("http://", 0) != 0 && c.endpoint.rfind("https://", 0) != 0)
        throw Error(ErrorCode::kInvalidArgument, std::string(var) + " must be an http:// or https:// URL");
      if (c.endpoint.find('/', c.endpoint.find("://") + 3) != std::string::npos ||
          c.endpoint.find_first_of("?#@") != std::string::npos)
        throw Error(ErrorCode::kInvalidArgument, std::string(var) + " must be scheme://host[:port], without a path");
      break;
    }
  }

  if (auto a = env("CUBESTREAM_S3_ADDRESSING_STYLE")) {
    if (*a == "path") c.addressing = Addressing::kPath;
    else if (*a == "virtual") c.addressing = Addressing::kVirtual;
    else if (*a == "auto") c.addressing = Addressing::kAuto;
    else throw Error(ErrorCode::kInvalidArgument, "CUBESTREAM_S3_ADDRESSING_STYLE must be auto, path or virtual");
  }
  if (auto n = env("CUBESTREAM_S3_LIST_PAGE_SIZE")) {
    try {
      std::size_t used = 0;
      int v = std::stoi(*n, &used);
      if (used != n->size() || v < 1 || v > 1000) throw std::out_of_range("");
      c.list_page_size = v;
    } catch (...) {
      throw Error(ErrorCode::kInvalidArgument, "CUBESTREAM_S3_LIST_PAGE_SIZE must be an integer in [1, 1000]");
    }
  }

  if (truthy(env("CUBESTREAM_S3_ANONYMOUS")) || truthy(env("AWS_NO_SIGN_REQUEST"))) return c;

  auto id = env("AWS_ACCESS_KEY_ID");
  auto secret = env("AWS_SECRET_ACCESS_KEY");
  if (id || secret) {
    if (!id || !secret)
      throw Error(ErrorCode::kInvalidArgument,
                  "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set together (only one of them is set)");
    c.credentials = {*id, *secret, env("AWS_SESSION_TOKEN").value_or("")};
    return c;
  }
  const std::string file = home_file(env, "AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials");
  std::optional<std::map<std::string, std::string>> sec;
  if (auto text = read_text(file)) sec = ini_section(*text, profile);
  if (!sec) {
    if (profile_explicit)
      throw Error(ErrorCode::kNotFound, "AWS_PROFILE '" + profile + "' has no section in the credentials file",
                  ErrorContext{file, {}, std::nullopt});
    return c;  // no credentials anywhere: anonymous
  }
  auto get = [&](const char* k) { return sec->count(k) ? sec->at(k) : std::string(); };
  c.credentials = {get("aws_access_key_id"), get("aws_secret_access_key"), get("aws_session_token")};
  if (c.credentials.access_key_id.empty() != c.credentials.secret_access_key.empty())
    throw Error(ErrorCode::kInvalidArgument,
                "profile '" + profile + "' needs both aws_access_key_id and aws_secret_access_key",
                ErrorContext{file, {}, std::nullopt});
  return c;
}

Location locate(const Config& config, std::string_view bucket, std::string_view object_key,
                std::string_view canonical_query_string) {
  const bool aws = config.endpoint.empty();
  const std::string endpoint = aws ? "https://s3." + config.region + ".amazonaws.com" : config.endpoint;
  const auto sep = endpoint.find("://");
  const std::string scheme = endpoint.substr(0, sep), authority = endpoint.substr(sep + 3);
  bool virtual_host = config.addressing == Addressing::kVirtual;
  // Virtual-host style is AWS's preferred form; buckets with dots break TLS wildcard
  // certificates there, and custom endpoints usually serve path style only.
  if (config.addressing == Addressing::kAuto) virtual_host = aws && bucket.find('.') == std::string_view::npos;
  Location loc;
  std::string path = "/";
  if (virtual_host) {
    loc.host = std::string(bucket) + "." + authority;
  } else {
    loc.host = authority;
    path += std::string(bucket);
    if (!object_key.empty()) path += "/";
  }
  // S3 object keys are URI-encoded once with '/' kept, in the URL and in the canonical URI.
  path += http::percent_encode(object_key, /*keep_slash=*/true);
  loc.canonical_uri = path;
  loc.url = scheme + "://" + loc.host + path;
  if (!canonical_query_string.empty()) loc.url += "?" + std::string(canonical_query_string);
  return loc;
}

http::Request make_request(const Config& config, std::string_view method, std::string_view bucket,
                           std::string_view object_key, std::string_view cq, const http::HeaderList& extra,
                           Bytes body, std::string_view amz_date) {
  Location loc = locate(config, bucket, object_key, cq);
  http::Request r;
  r.method = std::string(method);
  r.url = loc.url;
  r.headers.emplace_back("Host", loc.host);
  for (const auto& h : extra) r.headers.push_back(h);
  if (!config.credentials.anonymous()) {
    const std::string payload =
        body.empty() ? std::string(kEmptyPayloadSha256)
                     : sha256_hex(std::string_view(reinterpret_cast<const char*>(body.data()), body.size()));
    sign(r.headers, method, loc.canonical_uri, cq, payload, config.credentials, config.region, "s3", amz_date);
  }
  r.body = std::move(body);
  return r;
}

}  // namespace cubestream::s3
