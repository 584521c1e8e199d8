// S3Store: see s3_store.hpp.
#include "store/s3/s3_store.hpp"

#include <algorithm>
#include <set>

#include "cubestream/error.hpp"
#include "store/http/object_store.hpp"
#include "store/s3/xml.hpp"

namespace cubestream::s3 {

namespace {

class S3Store final : public http::ObjectStore {
 public:
  S3Store(std::string bucket, std::string prefix, Config config, std::shared_ptr<http::Transport> transport,
          const http::Settings& settings)
      : ObjectStore(std::move(transport), settings),
        bucket_(std::move(bucket)),
        prefix_(std::move(prefix)),
        config_(std::move(config)) {}

  // Names the bucket and prefix only: never the endpoint's user part nor any credential.
  std::string describe() const override { return "s3://" + join_key(bucket_, prefix_); }

  std::vector<std::string> list_dir(std::string_view prefix) const override {
    std::string p(prefix);
    while (!p.empty() && p.back() == '/') p.pop_back();
    if (!p.empty()) validate_key(p, describe());
    std::string full = join_key(prefix_, p);
    if (!full.empty()) full += "/";
    std::set<std::string> names;
    std::string token;
    // ListObjectsV2 (Amazon S3 API Reference): delimiter "/" rolls everything below the next
    // "/" into one CommonPrefixes entry; a truncated page carries NextContinuationToken, sent
    // back as continuation-token until IsTruncated is false.
    for (int page_no = 0;; ++page_no) {
      QueryList q = {{"list-type", "2"},
                     {"prefix", full},
                     {"delimiter", "/"},
                     {"max-keys", std::to_string(config_.list_page_size)}};
      if (!token.empty()) q.emplace_back("continuation-token", token);
      const std::string cq = canonical_query(q);
      http::Response r = execute("GET", "", {}, cq, [&](http::Response& resp) -> std::string {
        if (resp.status == 200) return "";
        if (resp.status == 404) on_not_found(resp, prefix);
        throw status_error(resp, "LIST", prefix);
      });
      ListPage page;
      try {
        page = parse_list_page(std::string_view(reinterpret_cast<const char*>(r.body.data()), r.body.size()));
      } catch (const Error& e) {
        throw e.with_context(ErrorContext{describe(), std::string(prefix), std::nullopt});
      }
      for (const auto& k : page.keys)
        if (k.size() > full.size() && k.compare(0, full.size(), full) == 0) names.insert(k.substr(full.size()));
      for (auto cp : page.prefixes) {
        if (cp.size() <= full.size() || cp.compare(0, full.size(), full) != 0) continue;
        cp = cp.substr(full.size());
        while (!cp.empty() && cp.back() == '/') cp.pop_back();
        if (!cp.empty()) names.insert(cp);
      }
      if (!page.truncated) break;
      if (page.next_token.empty() || page.next_token == token)
        throw Error(ErrorCode::kIo, "ListObjectsV2 page is truncated but carries no new continuation token",
                    ErrorContext{describe(), std::string(prefix), std::nullopt});
      token = page.next_token;
    }
    return {names.begin(), names.end()};
  }

 protected:
  http::Request build_request(std::string_view method, std::string_view key, const http::HeaderList& extra,
                              std::string_view query) const override {
    // An empty key addresses the bucket itself (listing); anything else is below the prefix.
    const std::string object = key.empty() ? std::string() : join_key(prefix_, key);
    return make_request(config_, method, bucket_, object, query, extra, Bytes{}, amz_date_now());
  }

  // S3 error documents carry <Code> and <Message>; only those two are quoted (other fields, such
  // as SignatureDoesNotMatch's <StringToSign> or <AWSAccessKeyId>, are left out), and anything
  // that equals a credential is masked as well.
  std::string explain(const http::Response& r) const override {
    std::string msg = ObjectStore::explain(r);
    std::string_view body(reinterpret_cast<const char*>(r.body.data()), r.body.size());
    if (auto code = xml_text(body, "Code")) msg += ": " + *code;
    if (auto m = xml_text(body, "Message")) msg += ": " + *m;
    return redact(msg);
  }

  void on_not_found(const http::Response& r, std::string_view key) const override {
    std::string_view body(reinterpret_cast<const char*>(r.body.data()), r.body.size());
    if (xml_text(body, "Code").value_or("") == "NoSuchBucket")
      throw Error(ErrorCode::kNotFound, "bucket '" + bucket_ + "' does not exist",
                  ErrorContext{describe(), std::string(key), std::nullopt});
  }

 private:
  std::string redact(std::string msg) const {
    for (const std::string* secret :
         {&config_.credentials.secret_access_key, &config_.credentials.session_token, &config_.credentials.access_key_id}) {
      if (secret->size() < 4) continue;
      for (std::size_t at; (at = msg.find(*secret)) != std::string::npos;) msg.replace(at, secret->size(), "[redacted]");
    }
    return msg;
  }

  std::string bucket_;
  std::string prefix_;
  Config config_;
};

}  // namespace

std::shared_ptr<Store> open_s3_store(const std::string& url, const Config& config, const http::Settings& settings,
                                     std::shared_ptr<http::Transport> transport) {
  constexpr std::string_view kScheme = "s3://";
  if (url.rfind(kScheme, 0) != 0)
    throw Error(ErrorCode::kInvalidArgument, "not an s3:// URL", ErrorContext{url, {}, std::nullopt});
  std::string rest = url.substr(kScheme.size());
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  auto slash = rest.find('/');
  std::string bucket = rest.substr(0, slash);
  std::string prefix = slash == std::string::npos ? std::string() : rest.substr(slash + 1);
  // Bucket names: 3-63 characters of lower-case letters, digits, '.' and '-' (Amazon S3 User
  // Guide, "Bucket naming rules"); checked so that a name can never alter the URL's host.
  const bool bucket_ok = bucket.size() >= 3 && bucket.size() <= 63 &&
                         std::all_of(bucket.begin(), bucket.end(), [](char c) {
                           return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-';
                         });
  if (!bucket_ok)
    throw Error(ErrorCode::kInvalidArgument, "'" + bucket + "' is not a valid S3 bucket name", ErrorContext{url, {}, std::nullopt});
  if (!prefix.empty()) validate_key(prefix, url);
  if (!transport) transport = http::make_curl_transport(settings);
  return std::make_shared<S3Store>(std::move(bucket), std::move(prefix), config, std::move(transport), settings);
}

}  // namespace cubestream::s3
