// S3Store against moto's S3 API server on loopback, with signature checks on (s3_server.py):
// the shared store conformance suite, real Zarr arrays compared with the file store, listing
// with pagination, and failures whose messages must never carry a credential.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "cubestream/error.hpp"
#include "cubestream/group.hpp"
#include "store/http/object_store.hpp"
#include "store/s3/s3_store.hpp"
#include "store/store_conformance.hpp"
#include "store/test_servers.hpp"
#include "store/zarr_compare.hpp"

namespace cubestream {
namespace {

using namespace test;

constexpr const char* kBucket = "cubestream-test";

http::Settings quick_settings() {
  http::Settings s;
  s.retries = 2;
  s.backoff_ms = 2;
  s.backoff_max_ms = 20;
  s.max_in_flight = 4;
  return s;
}

// One moto per test process, with one bucket.
struct S3Server {
  Moto moto;
  std::string error;
  std::shared_ptr<http::Transport> transport = http::make_curl_transport(quick_settings());

  S3Server() {
    error = moto.start();
    if (!error.empty()) return;
    auto r = send("PUT", "", {});
    if (r.status != 200) error = "CreateBucket failed: HTTP " + std::to_string(r.status) + " " + r.transport_error;
  }

  // A request signed with our own SigV4 code, as the store signs its reads.
  http::Response send(const char* method, const std::string& key, Bytes body) {
    return transport->perform(
        s3::make_request(moto.config(), method, kBucket, key, "", {}, std::move(body), s3::amz_date_now()));
  }

  void put(const std::string& key, const std::string& value) {
    auto r = send("PUT", key, Bytes(value.begin(), value.end()));
    if (r.status != 200) throw std::runtime_error("PUT " + key + ": HTTP " + std::to_string(r.status) + " " + r.transport_error);
  }

  // Uploads every file below `dir` as `prefix`/relative path, in parallel.
  void put_tree(const fs::path& dir, const std::string& prefix) {
    std::vector<fs::path> files;
    for (const auto& e : fs::recursive_directory_iterator(dir))
      if (e.is_regular_file()) files.push_back(e.path());
    http::run_parallel(files.size(), 4, [&](std::size_t i) {
      std::ifstream f(files[i], std::ios::binary);
      std::string v((std::istreambuf_iterator<char>(f)), {});
      put(prefix + "/" + fs::relative(files[i], dir).generic_string(), v);
    });
  }

  std::shared_ptr<Store> open(const std::string& prefix, s3::Config config) {
    return s3::open_s3_store(std::string("s3://") + kBucket + (prefix.empty() ? "" : "/" + prefix), config,
                             quick_settings());
  }
  std::shared_ptr<Store> open(const std::string& prefix) { return open(prefix, moto.config()); }
};

S3Server& server() {
  static S3Server s;
  return s;
}

#define REQUIRE_MOTO()                                                        \
  do {                                                                        \
    auto& e = server().error;                                                 \
    if (e.rfind("skip:", 0) == 0) GTEST_SKIP() << e << " (S3 tests skipped)"; \
    ASSERT_EQ(e, "");                                                         \
  } while (0)

std::vector<StoreFactory> moto_factories() {
  return {{"moto",
           [](const auto& values) {
             static int n = 0;
             auto& s = server();
             if (s.error.rfind("skip:", 0) == 0) throw StoreUnavailable(s.error);
             if (!s.error.empty()) throw std::runtime_error(s.error);
             const std::string prefix = "conformance_" + std::to_string(n++);
             for (const auto& [k, v] : values) s.put(prefix + "/" + k, v);
             return s.open(prefix);
           },
           /*lists=*/true}};
}

INSTANTIATE_TEST_SUITE_P(S3, StoreConformance, ::testing::ValuesIn(moto_factories()),
                         [](const auto& info) { return info.param.name; });

TEST(S3StoreServers, MotoIsAvailable) { REQUIRE_MOTO(); }

TEST(S3Store, ReadsAndListsTheFixtureStoresLikeTheFileStore) {
  REQUIRE_MOTO();
  auto& s = server();
  s.put_tree(tensorstore_dir(), "tensorstore");
  s.put_tree(cmip5_dir(), "cmip5_2005.zarr");
  // Through open_store("s3://..."), configured the way users configure it: the environment.
  auto c = s.moto.config();
  ::setenv("CUBESTREAM_S3_ENDPOINT", c.endpoint.c_str(), 1);
  ::setenv("AWS_ACCESS_KEY_ID", c.credentials.access_key_id.c_str(), 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", c.credentials.secret_access_key.c_str(), 1);
  ::setenv("AWS_REGION", "us-east-1", 1);
  expect_fixture_stores_match(std::string("s3://") + kBucket, 4);

  // Listing (ListObjectsV2) finds what the file store finds, over many small pages too.
  auto local = open_store((tensorstore_dir() / "sharded.zarr").string());
  auto remote = open_store(std::string("s3://") + kBucket + "/tensorstore/sharded.zarr");
  EXPECT_EQ(remote->list_dir(""), local->list_dir(""));
  EXPECT_EQ(remote->list_dir("f4_end_zstd/c"), local->list_dir("f4_end_zstd/c"));
  auto paged_config = c;
  paged_config.list_page_size = 3;
  auto paged = s.open("tensorstore/sharded.zarr", paged_config);
  EXPECT_EQ(paged->list_dir(""), local->list_dir(""));
  EXPECT_GE(local->list_dir("").size(), 20u) << "enough names for several pages";
  // A group without consolidated metadata lists its arrays through the store.
  EXPECT_EQ(Group::open(remote).array_names(), Group::open(local).array_names());
  for (const char* v : {"CUBESTREAM_S3_ENDPOINT", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"}) ::unsetenv(v);
}

// Signed requests receive into the caller's buffer like plain HTTP ones (the shared
// ObjectStore::read_into): the array reader reuses one buffer per thread for every chunk.
TEST(S3Store, ReadIntoReceivesIntoTheCallersBuffer) {
  REQUIRE_MOTO();
  auto& s = server();
  std::string value(200000, '\0');
  for (std::size_t i = 0; i < value.size(); ++i) value[i] = static_cast<char>(i * 131 % 251);
  s.put("reuse/blob", value);
  auto store = s.open("reuse");
  Bytes buf;
  buf.reserve(value.size());
  const std::uint8_t* memory = buf.data();
  ASSERT_TRUE(store->read_into("blob", ByteRange::all(), buf));
  EXPECT_EQ(std::string(buf.begin(), buf.end()), value);
  EXPECT_EQ(buf.data(), memory);
  ASSERT_TRUE(store->read_into("blob", {777, 5000}, buf));
  EXPECT_EQ(std::string(buf.begin(), buf.end()), value.substr(777, 5000));
  EXPECT_EQ(buf.data(), memory);
  EXPECT_FALSE(store->read_into("missing", {0, 10}, buf));
  EXPECT_EQ(buf.data(), memory) << "a NoSuchKey answer took the caller's buffer away";
}

TEST(S3Store, CredentialsNeverAppearInErrors) {
  REQUIRE_MOTO();
  auto& s = server();
  s.put("secret-test/value", "0123456789");
  const std::string wrong_secret = "WrongSecret/ab12CD34ef56GH78ij90KL12mn34OP56";
  const std::string token = "SessionTokenThatMustStayHidden";
  auto check = [&](const std::function<void()>& f, const char* expect) {
    try {
      f();
      FAIL() << "a request with wrong credentials must be refused";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_EQ(e.code(), ErrorCode::kIo) << what;
      EXPECT_NE(what.find(expect), std::string::npos) << what;
      for (const std::string& secret : {wrong_secret, s.moto.secret_key(), s.moto.access_key(), token})
        EXPECT_EQ(what.find(secret), std::string::npos) << "a credential leaked into: " << what;
    }
  };
  // A wrong secret: SignatureDoesNotMatch (whose full S3 error document also carries the
  // access key id and the string to sign; only Code and Message may be quoted).
  auto config = s.moto.config();
  config.credentials.secret_access_key = wrong_secret;
  auto store = s.open("secret-test", config);
  check([&] { store->get("value"); }, "SignatureDoesNotMatch");
  check([&] { store->get_range("value", {2, 3}); }, "403");
  check([&] { store->size("value"); }, "403");
  check([&] { store->list_dir(""); }, "403");
  EXPECT_EQ(store->describe(), std::string("s3://") + kBucket + "/secret-test");
  // A session token the server does not know.
  auto with_token = s.moto.config();
  with_token.credentials.session_token = token;
  auto token_store = s.open("secret-test", with_token);
  check([&] { token_store->get("value"); }, "HTTP 4");
  check([&] { token_store->list_dir(""); }, "HTTP 4");
  // The right key reads it; anonymous requests are refused by this (authenticated) server.
  EXPECT_EQ(s.open("secret-test")->get_range("value", {2, 3}).value(), (Bytes{'2', '3', '4'}));
  auto anonymous = s.moto.config();
  anonymous.credentials = {};
  EXPECT_THROW(s.open("secret-test", anonymous)->get("value"), Error);
}

TEST(S3Store, MissingBucketIsNotFoundMissingKeyIsNullopt) {
  REQUIRE_MOTO();
  auto& s = server();
  EXPECT_FALSE(s.open("")->get("no/such/key").has_value());
  auto other = s3::open_s3_store("s3://no-such-bucket-here/x", s.moto.config(), quick_settings());
  try {
    other->get("zarr.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound) << e.what();
    EXPECT_NE(std::string(e.what()).find("no-such-bucket-here"), std::string::npos) << e.what();
  }
  EXPECT_THROW(s3::open_s3_store("s3://Bad_Bucket/x", s.moto.config(), quick_settings()), Error);
  EXPECT_THROW(s3::open_s3_store("s3://bucket/../x", s.moto.config(), quick_settings()), Error);
}

}  // namespace
}  // namespace cubestream
