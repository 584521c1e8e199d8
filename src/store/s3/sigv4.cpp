// AWS Signature Version 4: see sigv4.hpp for the steps and the documents they follow.
#include "store/s3/sigv4.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <cctype>
#include <ctime>

#include "cubestream/error.hpp"

namespace cubestream::s3 {

std::string hex(const std::uint8_t* data, std::size_t n) {
  static const char* kHex = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (std::size_t i = 0; i < n; ++i) {
    out[2 * i] = kHex[data[i] >> 4];
    out[2 * i + 1] = kHex[data[i] & 15];
  }
  return out;
}

std::string sha256_hex(std::string_view data) {
  Digest d{};
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), d.data(), &len, EVP_sha256(), nullptr) != 1 || len != d.size())
    throw Error(ErrorCode::kInternal, "SHA-256 failed (OpenSSL EVP_Digest)");
  return hex(d.data(), d.size());
}

Digest hmac_sha256(std::string_view key, std::string_view data) {
  Digest d{};
  unsigned int len = 0;
  if (!HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()),
            data.size(), d.data(), &len) ||
      len != d.size())
    throw Error(ErrorCode::kInternal, "HMAC-SHA256 failed (OpenSSL HMAC)");
  return d;
}

namespace {

std::string_view as_view(const Digest& d) { return {reinterpret_cast<const char*>(d.data()), d.size()}; }

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Trim, and collapse inner runs of spaces to one ("Trimall" in the SigV4 documentation).
std::string trimall(std::string_view v) {
  std::string out;
  bool space = false;
  for (char c : v) {
    if (c == ' ' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

}  // namespace

std::string canonical_query(const QueryList& query) {
  std::vector<std::pair<std::string, std::string>> enc;
  enc.reserve(query.size());
  for (const auto& [k, v] : query) enc.emplace_back(http::percent_encode(k, false), http::percent_encode(v, false));
  std::sort(enc.begin(), enc.end());
  std::string out;
  for (const auto& [k, v] : enc) {
    if (!out.empty()) out += '&';
    out += k + "=" + v;
  }
  return out;
}

std::string canonical_request(std::string_view method, std::string_view canonical_uri,
                              std::string_view canonical_query_string, const http::HeaderList& headers, std::string_view payload_hash,
                              std::string* signed_headers) {
  // Group values of repeated names (joined by ','), names sorted by their lower-case form.
  std::vector<std::pair<std::string, std::string>> hs;
  for (const auto& [n, v] : headers) {
    std::string name = lower(n), value = trimall(v);
    auto it = std::find_if(hs.begin(), hs.end(), [&](const auto& p) { return p.first == name; });
    if (it != hs.end()) it->second += "," + value;
    else hs.emplace_back(std::move(name), std::move(value));
  }
  std::sort(hs.begin(), hs.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string canonical_headers, names;
  for (const auto& [n, v] : hs) {
    canonical_headers += n + ":" + v + "\n";
    if (!names.empty()) names += ';';
    names += n;
  }
  if (signed_headers) *signed_headers = names;
  std::string out;
  out.append(method).append("\n");
  out.append(canonical_uri.empty() ? std::string_view("/") : canonical_uri).append("\n");
  out.append(canonical_query_string).append("\n");
  out.append(canonical_headers).append("\n");
  out.append(names).append("\n");
  out.append(payload_hash);
  return out;
}

std::string credential_scope(std::string_view date8, std::string_view region, std::string_view service) {
  return std::string(date8) + "/" + std::string(region) + "/" + std::string(service) + "/aws4_request";
}

std::string string_to_sign(std::string_view amz_date, std::string_view scope, std::string_view canonical_request) {
  return "AWS4-HMAC-SHA256\n" + std::string(amz_date) + "\n" + std::string(scope) + "\n" +
         sha256_hex(canonical_request);
}

Digest signing_key(std::string_view secret, std::string_view date8, std::string_view region,
                   std::string_view service) {
  Digest k_date = hmac_sha256("AWS4" + std::string(secret), date8);
  Digest k_region = hmac_sha256(as_view(k_date), region);
  Digest k_service = hmac_sha256(as_view(k_region), service);
  return hmac_sha256(as_view(k_service), "aws4_request");
}

std::string signature(const Digest& key, std::string_view sts) {
  Digest d = hmac_sha256(as_view(key), sts);
  return hex(d.data(), d.size());
}

void sign(http::HeaderList& headers, std::string_view method, std::string_view canonical_uri,
          std::string_view canonical_query_string, std::string_view payload_hash, const Credentials& credentials,
          std::string_view region, std::string_view service, std::string_view amz_date) {
  headers.emplace_back("x-amz-date", std::string(amz_date));
  headers.emplace_back("x-amz-content-sha256", std::string(payload_hash));
  if (!credentials.session_token.empty()) headers.emplace_back("x-amz-security-token", credentials.session_token);
  std::string signed_headers;
  const std::string creq = canonical_request(method, canonical_uri, canonical_query_string, headers, payload_hash, &signed_headers);
  const std::string date8(amz_date.substr(0, 8));
  const std::string scope = credential_scope(date8, region, service);
  const std::string sig =
      signature(signing_key(credentials.secret_access_key, date8, region, service), string_to_sign(amz_date, scope, creq));
  headers.emplace_back("Authorization", "AWS4-HMAC-SHA256 Credential=" + credentials.access_key_id + "/" + scope +
                                            ", SignedHeaders=" + signed_headers + ", Signature=" + sig);
}

std::string amz_date_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

}  // namespace cubestream::s3
