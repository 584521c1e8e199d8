// Where an S3 store's settings come from, and how a bucket and key become a request.
//
// Environment (the names the AWS CLI and SDKs use, plus a few of cubestream's own):
//   AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN   static credentials
//   AWS_PROFILE (default "default"), AWS_SHARED_CREDENTIALS_FILE (default ~/.aws/credentials),
//   AWS_CONFIG_FILE (default ~/.aws/config)                        the usual credentials files
//   AWS_REGION, AWS_DEFAULT_REGION, or region= in the config file  (default us-east-1)
//   CUBESTREAM_S3_ENDPOINT, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL  endpoint override (MinIO, Ceph,
//                                                                  moto, ...), first one set wins
//   CUBESTREAM_S3_ANONYMOUS=1 or AWS_NO_SIGN_REQUEST=true         unsigned requests (public data)
//   CUBESTREAM_S3_ADDRESSING_STYLE=auto|path|virtual               auto: virtual-host style on AWS's
//                                                                  own endpoints for buckets without
//                                                                  dots, path style elsewhere
//   CUBESTREAM_S3_LIST_PAGE_SIZE                                   max-keys per ListObjectsV2 page
// Without any credentials the store is anonymous.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "store/http/transport.hpp"
#include "store/s3/sigv4.hpp"

namespace cubestream::s3 {

enum class Addressing { kAuto, kPath, kVirtual };

struct Config {
  Credentials credentials;
  std::string region = "us-east-1";
  std::string endpoint;  // scheme://host[:port]; empty: https://s3.<region>.amazonaws.com
  Addressing addressing = Addressing::kAuto;
  int list_page_size = 1000;
};

// Looks a variable up; process_env() reads the real environment.
using Getenv = std::function<std::optional<std::string>(const char* name)>;
Getenv process_env();

// The configuration the environment (and the credentials files it points to) describes.
// Errors (kInvalidArgument, kNotFound) never quote a secret.
Config config_from_env(const Getenv& env);

// The key=value pairs of section `section` of an INI-style AWS file ("[default]",
// "[profile x]"); nullopt when the section is absent.
std::optional<std::map<std::string, std::string>> ini_section(std::string_view text, std::string_view section);

// The address of an object (or of the bucket, for an empty key).
struct Location {
  std::string url;            // what is requested
  std::string host;           // the Host header (signed)
  std::string canonical_uri;  // the URL's path as signed
};
Location locate(const Config& config, std::string_view bucket, std::string_view object_key,
                std::string_view canonical_query_string);

// A ready request: addressed, with `extra` headers, and signed (SigV4, payload hash of `body`)
// unless the credentials are anonymous. `canonical_query_string` comes from canonical_query()
// and is both sent and signed. `amz_date` is yyyymmddThhmmssZ.
http::Request make_request(const Config& config, std::string_view method, std::string_view bucket,
                           std::string_view object_key, std::string_view canonical_query_string,
                           const http::HeaderList& extra,
                           Bytes body, std::string_view amz_date);

}  // namespace cubestream::s3
