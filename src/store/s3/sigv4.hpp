// AWS Signature Version 4 for S3 requests, as pure functions (no clock, no network), so that
// each step can be checked against the published examples:
//   - AWS General Reference, "Signature Version 4 signing process" and its test suite
//     (get-vanilla, get-vanilla-query-order-key-case);
//   - Amazon S3 API Reference, "Authenticating Requests: Using the Authorization Header (AWS
//     Signature Version 4)" -> "Signature Calculations for the Authorization Header:
//     Transferring Payload in a Single Chunk", section "Examples: Signature Calculations".
//
// The steps (names as in the AWS documentation):
//   1. CanonicalRequest = Method \n CanonicalURI \n CanonicalQueryString \n CanonicalHeaders \n
//                         SignedHeaders \n HexEncode(SHA256(payload))
//   2. StringToSign     = "AWS4-HMAC-SHA256" \n X-Amz-Date \n Scope \n HexEncode(SHA256(CanonicalRequest))
//      with Scope       = yyyymmdd/region/service/aws4_request
//   3. SigningKey       = HMAC(HMAC(HMAC(HMAC("AWS4" + secret, yyyymmdd), region), service), "aws4_request")
//   4. Signature        = HexEncode(HMAC(SigningKey, StringToSign))
//   Authorization: AWS4-HMAC-SHA256 Credential=AKID/Scope, SignedHeaders=..., Signature=...
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "store/http/transport.hpp"

namespace cubestream::s3 {

using Digest = std::array<std::uint8_t, 32>;
using QueryList = std::vector<std::pair<std::string, std::string>>;

std::string hex(const std::uint8_t* data, std::size_t n);
std::string sha256_hex(std::string_view data);
Digest hmac_sha256(std::string_view key, std::string_view data);

// SHA-256 of the empty payload: the x-amz-content-sha256 of a GET or HEAD.
inline constexpr std::string_view kEmptyPayloadSha256 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

// Canonical query string: every name and value URI-encoded (RFC 3986 unreserved characters
// kept, '/' encoded too), pairs sorted by name and then by value, joined with '&'; a parameter
// without a value is "name=".
std::string canonical_query(const QueryList& query);

// The canonical request for `method` on `canonical_uri` (already URI-encoded; S3 encodes each
// path segment once and keeps '/') with `canonical_query_string` (from canonical_query(); the
// same string serves as the URL's query, so what is signed is what is sent). Header names are lower-cased and sorted, values trimmed with
// inner runs of spaces collapsed; `signed_headers` receives "host;range;x-amz-date"-style names.
std::string canonical_request(std::string_view method, std::string_view canonical_uri,
                              std::string_view canonical_query_string, const http::HeaderList& headers, std::string_view payload_hash,
                              std::string* signed_headers);

std::string credential_scope(std::string_view date8, std::string_view region, std::string_view service);

std::string string_to_sign(std::string_view amz_date, std::string_view scope, std::string_view canonical_request);

Digest signing_key(std::string_view secret, std::string_view date8, std::string_view region,
                   std::string_view service);

std::string signature(const Digest& key, std::string_view string_to_sign);

struct Credentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // temporary credentials (STS); sent as x-amz-security-token
  bool anonymous() const { return access_key_id.empty(); }
};

// Signs `headers` in place for an S3 request: adds x-amz-date, x-amz-content-sha256 (the given
// payload hash), x-amz-security-token when there is a session token, and Authorization.
// `headers` must already hold Host and whatever else is to be signed (Range).
// `amz_date` is the request time as yyyymmddThhmmssZ (UTC).
void sign(http::HeaderList& headers, std::string_view method, std::string_view canonical_uri,
          std::string_view canonical_query_string, std::string_view payload_hash, const Credentials& credentials,
          std::string_view region, std::string_view service, std::string_view amz_date);

// The current UTC time as yyyymmddThhmmssZ.
std::string amz_date_now();

}  // namespace cubestream::s3
