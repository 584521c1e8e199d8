// SigV4 signing and S3 configuration, without a network: every signature below is the one the
// AWS documentation publishes for its example request.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "cubestream/error.hpp"
#include "store/s3/s3_config.hpp"
#include "store/s3/sigv4.hpp"
#include "store/s3/xml.hpp"

namespace cubestream::s3 {
namespace {

// The credentials of the S3 API Reference's examples ("Examples: Signature Calculations").
const Credentials kS3Example{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""};
// The credentials of the SigV4 test suite (AWS General Reference).
const char* kSuiteSecret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

std::string signature_of(const http::HeaderList& headers) {
  for (const auto& [n, v] : headers)
    if (n == "Authorization") return v.substr(v.find("Signature=") + 10);
  return "";
}

// get-vanilla: GET / with Host and X-Amz-Date only, signed for service "service".
TEST(SigV4, TestSuiteGetVanilla) {
  http::HeaderList h = {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}};
  std::string signed_headers;
  auto creq = canonical_request("GET", "/", "", h, kEmptyPayloadSha256, &signed_headers);
  EXPECT_EQ(creq,
            "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n"
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(signed_headers, "host;x-amz-date");
  auto scope = credential_scope("20150830", "us-east-1", "service");
  EXPECT_EQ(scope, "20150830/us-east-1/service/aws4_request");
  auto sts = string_to_sign("20150830T123600Z", scope, creq);
  EXPECT_EQ(sts, "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n"
                 "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63");
  EXPECT_EQ(signature(signing_key(kSuiteSecret, "20150830", "us-east-1", "service"), sts),
            "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
}

// get-vanilla-query-order-key-case: the query is sorted by name before signing.
TEST(SigV4, TestSuiteQueryOrder) {
  http::HeaderList h = {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}};
  const std::string cq = canonical_query({{"Param2", "value2"}, {"Param1", "value1"}});
  EXPECT_EQ(cq, "Param1=value1&Param2=value2");
  auto creq = canonical_request("GET", "/", cq, h, kEmptyPayloadSha256, nullptr);
  auto sts = string_to_sign("20150830T123600Z", credential_scope("20150830", "us-east-1", "service"), creq);
  EXPECT_EQ(signature(signing_key(kSuiteSecret, "20150830", "us-east-1", "service"), sts),
            "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500");
}

// S3 example "GET Object": the first 10 bytes of examplebucket/test.txt.
TEST(SigV4, S3ExampleGetObjectWithRange) {
  http::HeaderList h = {{"Host", "examplebucket.s3.amazonaws.com"}, {"Range", "bytes=0-9"}};
  sign(h, "GET", "/test.txt", "", kEmptyPayloadSha256, kS3Example, "us-east-1", "s3", "20130524T000000Z");
  http::HeaderList unsigned_part(h.begin(), h.end() - 1);
  std::string names;
  auto creq = canonical_request("GET", "/test.txt", "", unsigned_part, kEmptyPayloadSha256, &names);
  EXPECT_EQ(names, "host;range;x-amz-content-sha256;x-amz-date");
  EXPECT_EQ(sha256_hex(creq), "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
  EXPECT_EQ(h.back().second,
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

// S3 example "GET Bucket (List Objects)": ?max-keys=2&prefix=J.
TEST(SigV4, S3ExampleListObjects) {
  http::HeaderList h = {{"Host", "examplebucket.s3.amazonaws.com"}};
  const std::string cq = canonical_query({{"prefix", "J"}, {"max-keys", "2"}});
  sign(h, "GET", "/", cq, kEmptyPayloadSha256, kS3Example, "us-east-1", "s3", "20130524T000000Z");
  EXPECT_EQ(signature_of(h), "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

// S3 example "GET Bucket Lifecycle": a parameter without a value signs as "lifecycle=".
TEST(SigV4, S3ExampleGetLifecycle) {
  http::HeaderList h = {{"Host", "examplebucket.s3.amazonaws.com"}};
  const std::string cq = canonical_query({{"lifecycle", ""}});
  EXPECT_EQ(cq, "lifecycle=");
  sign(h, "GET", "/", cq, kEmptyPayloadSha256, kS3Example, "us-east-1", "s3", "20130524T000000Z");
  EXPECT_EQ(signature_of(h), "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
}

// S3 example "PUT Object": a body hash, an encoded '$' in the path, extra signed headers.
TEST(SigV4, S3ExamplePutObject) {
  const std::string body = "Welcome to Amazon S3.";
  EXPECT_EQ(sha256_hex(body), "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
  EXPECT_EQ(http::percent_encode("/test$file.text", true), "/test%24file.text");
  http::HeaderList h = {{"Host", "examplebucket.s3.amazonaws.com"},
                        {"Date", "Fri, 24 May 2013 00:00:00 GMT"},
                        {"x-amz-storage-class", "REDUCED_REDUNDANCY"}};
  sign(h, "PUT", "/test%24file.text", "", sha256_hex(body), kS3Example, "us-east-1", "s3", "20130524T000000Z");
  EXPECT_EQ(signature_of(h), "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
}

TEST(SigV4, SigningKeyAndSessionToken) {
  // The derived-key example of the AWS General Reference ("Derive a signing key"), in hex.
  auto k = signing_key("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "20120215", "us-east-1", "iam");
  EXPECT_EQ(hex(k.data(), k.size()), "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d");
  http::HeaderList h = {{"Host", "b.s3.amazonaws.com"}};
  sign(h, "GET", "/k", "", kEmptyPayloadSha256, {"AKID", "secret", "TOKEN123"}, "us-east-1", "s3",
       "20240101T000000Z");
  bool token = false;
  for (const auto& [n, v] : h) token = token || (n == "x-amz-security-token" && v == "TOKEN123");
  EXPECT_TRUE(token);
  EXPECT_NE(h.back().second.find("SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token"),
            std::string::npos);
  EXPECT_EQ(h.back().second.find("secret"), std::string::npos);
}

TEST(SigV4, CanonicalFormsTrimAndEncode) {
  http::HeaderList h = {{"My-Header", "  a   b  "}, {"host", "x"}, {"my-header", "c"}};
  std::string names;
  auto creq = canonical_request("GET", "/a%20b", canonical_query({{"k", "a b/c"}, {"a", "1"}}), h, "UNSIGNED-PAYLOAD", &names);
  EXPECT_EQ(creq, "GET\n/a%20b\na=1&k=a%20b%2Fc\nhost:x\nmy-header:a b,c\n\nhost;my-header\nUNSIGNED-PAYLOAD");
}

TEST(S3Config, AddressingStyles) {
  Config c;
  c.region = "eu-west-1";
  auto v = locate(c, "bucket", "era5.zarr/t2m/c/0", "");
  EXPECT_EQ(v.url, "https://bucket.s3.eu-west-1.amazonaws.com/era5.zarr/t2m/c/0");
  EXPECT_EQ(v.host, "bucket.s3.eu-west-1.amazonaws.com");
  EXPECT_EQ(v.canonical_uri, "/era5.zarr/t2m/c/0");
  auto dotted = locate(c, "my.bucket", "k", "");
  EXPECT_EQ(dotted.url, "https://s3.eu-west-1.amazonaws.com/my.bucket/k") << "dots break TLS wildcards: path style";
  c.endpoint = "http://127.0.0.1:9000";
  auto p = locate(c, "bucket", "a b/.zarray", "list-type=2");
  EXPECT_EQ(p.url, "http://127.0.0.1:9000/bucket/a%20b/.zarray?list-type=2");
  EXPECT_EQ(p.host, "127.0.0.1:9000");
  EXPECT_EQ(p.canonical_uri, "/bucket/a%20b/.zarray");
  EXPECT_EQ(locate(c, "bucket", "", "").canonical_uri, "/bucket");
  c.addressing = Addressing::kVirtual;
  EXPECT_EQ(locate(c, "bucket", "k", "").url, "http://bucket.127.0.0.1:9000/k");
  c.credentials = {};
  auto anon = make_request(c, "GET", "bucket", "k", "", {}, {}, "20240101T000000Z");
  for (const auto& [n, v2] : anon.headers) EXPECT_NE(n, "Authorization") << "anonymous requests are unsigned";
}

std::map<std::string, std::string> g_env;
Getenv fake_env() {
  return [](const char* n) -> std::optional<std::string> {
    auto it = g_env.find(n);
    if (it == g_env.end()) return std::nullopt;
    return it->second;
  };
}

TEST(S3Config, CredentialsFromEnvironmentAndFiles) {
  namespace fs = std::filesystem;
  auto dir = fs::temp_directory_path() / ("cs_s3cfg_" + std::to_string(::getpid()));
  fs::create_directories(dir / ".aws");
  std::ofstream(dir / ".aws" / "credentials") << "[default]\naws_access_key_id = AKIDDEFAULT\n"
                                                 "aws_secret_access_key = secretdefault\n\n"
                                                 "# comment\n[work]\naws_access_key_id=AKIDWORK\n"
                                                 "aws_secret_access_key=secretwork\naws_session_token=tok\n";
  std::ofstream(dir / ".aws" / "config") << "[default]\nregion = eu-central-1\n[profile work]\nregion = ap-south-1\n";

  g_env = {{"HOME", dir.string()}};
  auto c = config_from_env(fake_env());
  EXPECT_EQ(c.credentials.access_key_id, "AKIDDEFAULT");
  EXPECT_EQ(c.credentials.secret_access_key, "secretdefault");
  EXPECT_EQ(c.region, "eu-central-1");

  g_env["AWS_PROFILE"] = "work";
  c = config_from_env(fake_env());
  EXPECT_EQ(c.credentials.access_key_id, "AKIDWORK");
  EXPECT_EQ(c.credentials.session_token, "tok");
  EXPECT_EQ(c.region, "ap-south-1");

  g_env["AWS_REGION"] = "us-west-2";
  g_env["AWS_ACCESS_KEY_ID"] = "AKIDENV";
  g_env["AWS_SECRET_ACCESS_KEY"] = "secretenv";
  g_env["AWS_ENDPOINT_URL"] = "http://localhost:9000/";
  c = config_from_env(fake_env());
  EXPECT_EQ(c.credentials.access_key_id, "AKIDENV") << "the environment wins over the file";
  EXPECT_EQ(c.region, "us-west-2");
  EXPECT_EQ(c.endpoint, "http://localhost:9000");

  g_env["CUBESTREAM_S3_ANONYMOUS"] = "1";
  EXPECT_TRUE(config_from_env(fake_env()).credentials.anonymous());

  g_env = {{"HOME", dir.string()}, {"AWS_PROFILE", "absent"}};
  EXPECT_THROW(config_from_env(fake_env()), Error);
  g_env = {{"HOME", (dir / "nowhere").string()}};
  EXPECT_TRUE(config_from_env(fake_env()).credentials.anonymous()) << "no credentials anywhere: anonymous";
  g_env = {{"AWS_ACCESS_KEY_ID", "AKIDONLY"}};
  try {
    config_from_env(fake_env());
    FAIL() << "a key id without its secret must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(std::string(e.what()).find("AKIDONLY"), std::string::npos);
  }
  g_env = {{"CUBESTREAM_S3_ENDPOINT", "localhost:9000"}};
  EXPECT_THROW(config_from_env(fake_env()), Error);
  fs::remove_all(dir);
}

TEST(S3Xml, ListObjectsV2Page) {
  const char* doc = R"(<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix>p/</Prefix>
<KeyCount>3</KeyCount><MaxKeys>2</MaxKeys><Delimiter>/</Delimiter><IsTruncated>true</IsTruncated>
<Contents><Key>p/zarr.json</Key><Size>10</Size></Contents>
<Contents><Key>p/a&amp;b &#x263A;&#65;</Key><Size>1</Size></Contents>
<CommonPrefixes><Prefix>p/t2m/</Prefix></CommonPrefixes>
<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken></ListBucketResult>)";
  auto page = parse_list_page(doc);
  EXPECT_EQ(page.keys, (std::vector<std::string>{"p/zarr.json", "p/a&b \xE2\x98\xBA" "A"}));
  EXPECT_EQ(page.prefixes, (std::vector<std::string>{"p/t2m/"}));
  EXPECT_TRUE(page.truncated);
  EXPECT_EQ(page.next_token, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
  EXPECT_THROW(parse_list_page("<Error><Code>AccessDenied</Code></Error>"), Error);
  EXPECT_EQ(xml_unescape("&bogus; &#xZZ; &lt;&gt;"), "&bogus; &#xZZ; <>");
  EXPECT_EQ(xml_text("<Error><Code>NoSuchKey</Code><Message>x</Message></Error>", "Code").value(), "NoSuchKey");
}

}  // namespace
}  // namespace cubestream::s3
