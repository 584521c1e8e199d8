// The writer: every encoder is the exact inverse of its decoder (and blosc's container reads
// with libblosc, another implementation), arrays written in v3 (plain and sharded, index at
// start or end) and v2 read back bit for bit through the reader, streamed shards, groups and
// consolidated metadata, atomic values in the file store, and metadata the writer refuses.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>

#include <unistd.h>

#include "codec/chain.hpp"
#include "codec/registry.hpp"
#include "cubestream/array.hpp"
#include "cubestream/dataset.hpp"
#include "cubestream/error.hpp"
#include "cubestream/group.hpp"
#include "cubestream/writer.hpp"
#include "test_util_fixtures.hpp"

#ifdef CUBESTREAM_TEST_HAVE_BLOSC
#include <blosc.h>
#endif

namespace cubestream {
namespace {

using nlohmann::json;

void expect_error(ErrorCode code, const std::function<void()>& fn) { EXPECT_TRUE(test::throws_error(fn, code)); }

std::filesystem::path scratch_dir(const std::string& name) {
  auto p = std::filesystem::temp_directory_path() / ("cubestream_writer_test_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

// Smooth data with noise: compresses somewhat, like a physical field, but not trivially.
Bytes field_bytes(std::size_t n_elems, std::size_t elem, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.f, 0.3f);
  Bytes b(n_elems * elem);
  for (std::size_t i = 0; i < n_elems; ++i) {
    const float v = 280.f + 10.f * std::sin(static_cast<float>(i) * 0.01f) + noise(rng);
    if (elem == 4) std::memcpy(b.data() + 4 * i, &v, 4);
    else if (elem == 8) {
      const double d = v;
      std::memcpy(b.data() + 8 * i, &d, 8);
    } else {
      for (std::size_t k = 0; k < elem; ++k) b[i * elem + k] = static_cast<std::uint8_t>((static_cast<int>(v * 10) >> (4 * k)) + rng() % 3);
    }
  }
  return b;
}

Bytes roundtrip_b2b(const std::string& name, const json& cfg, ByteView in) {
  auto c = codec::make_codec(name, cfg);
  EXPECT_TRUE(c->can_encode()) << name;
  const auto* b = static_cast<const codec::BytesToBytesCodec*>(c.get());
  Bytes enc = b->encode(in);
  Bytes out(in.size());
  const std::size_t n = b->decode(ByteView(enc.data(), enc.size()), MutableByteView(out.data(), out.size()));
  EXPECT_EQ(n, in.size()) << name << " " << cfg.dump();
  return out;
}

TEST(WriterCodecs, EveryEncoderInvertsItsDecoder) {
  const std::vector<std::pair<std::string, json>> codecs = {
      {"zstd", {{"level", 3}}},
      {"zstd", {{"level", 1}, {"checksum", true}}},
      {"gzip", {{"level", 5}}},
      {"zlib", {{"level", 1}}},
      {"lz4", json::object()},
      {"crc32c", json::object()},
      {"crc32", json::object()},
      {"adler32", json::object()},
      {"shuffle", {{"elementsize", 4}}},
      {"blosc", {{"cname", "lz4"}, {"clevel", 5}, {"shuffle", "shuffle"}, {"typesize", 4}}},
      {"blosc", {{"cname", "zstd"}, {"clevel", 3}, {"shuffle", "bitshuffle"}, {"typesize", 4}}},
      {"blosc", {{"cname", "zlib"}, {"clevel", 1}, {"shuffle", 0}, {"typesize", 8}}},
      {"blosc", {{"cname", "lz4"}, {"clevel", 9}, {"shuffle", 2}, {"typesize", 2}, {"blocksize", 1000}}},
      {"blosc", {{"cname", "lz4"}, {"clevel", 0}, {"shuffle", "shuffle"}, {"typesize", 4}}},
      {"blosc", {{"cname", "lz4hc"}, {"clevel", 9}, {"shuffle", "shuffle"}, {"typesize", 4}}},
  };
  // Sizes: empty, tiny, not a multiple of the element or of 8 elements, several blocks plus a
  // leftover block.
  for (std::size_t n : {std::size_t{0}, std::size_t{3}, std::size_t{4 * 1001}, std::size_t{4 * 300000 + 12}}) {
    Bytes in = field_bytes(n / 4, 4, 7);
    in.resize(n, 0x5a);
    for (const auto& [name, cfg] : codecs) {
      if (name == "shuffle" && n % 4 != 0) continue;  // numcodecs' shuffle takes whole elements only
      const Bytes out = roundtrip_b2b(name, cfg, ByteView(in.data(), in.size()));
      EXPECT_TRUE(out == in) << name << " " << cfg.dump() << " n=" << n;
    }
  }
}

TEST(WriterCodecs, BloscEncoderRefusesBlosclz) {
  auto c = codec::make_codec("blosc", {{"cname", "blosclz"}, {"clevel", 5}});
  EXPECT_FALSE(c->can_encode());
  const Bytes in(100, 1);
  expect_error(ErrorCode::kUnsupported, [&] { static_cast<const codec::BytesToBytesCodec*>(c.get())->encode(ByteView(in.data(), in.size())); });
}

TEST(WriterCodecs, BloscContainerShrinksAndStoresIncompressibleDataRaw) {
  const Bytes smooth = field_bytes(100000, 4, 1);
  auto c = codec::make_codec("blosc", {{"cname", "lz4"}, {"clevel", 5}, {"shuffle", "shuffle"}, {"typesize", 4}});
  const Bytes enc = static_cast<const codec::BytesToBytesCodec*>(c.get())->encode(ByteView(smooth.data(), smooth.size()));
  EXPECT_LT(enc.size(), smooth.size());
  EXPECT_EQ(enc[0], 2);                    // container version
  EXPECT_EQ(enc[2] & 0x01, 0x01);          // byte shuffle
  EXPECT_EQ(enc[2] >> 5, 1);               // lz4
  // One block (zstd blocks are 1 MiB): compressed, not stored raw.
  const Bytes one_block = field_bytes(50000, 4, 2);
  auto z = codec::make_codec("blosc", {{"cname", "zstd"}, {"clevel", 3}, {"shuffle", "shuffle"}, {"typesize", 4}});
  const Bytes zenc = static_cast<const codec::BytesToBytesCodec*>(z.get())->encode(ByteView(one_block.data(), one_block.size()));
  EXPECT_LT(zenc.size(), one_block.size() * 3 / 4);
  EXPECT_EQ(zenc[2] & 0x02, 0);  // not memcpyed
  std::mt19937 rng(3);
  Bytes noise(5000);
  for (auto& b : noise) b = static_cast<std::uint8_t>(rng());
  const Bytes raw = static_cast<const codec::BytesToBytesCodec*>(c.get())->encode(ByteView(noise.data(), noise.size()));
  EXPECT_EQ(raw.size(), noise.size() + 16);  // memcpyed: header + data
  EXPECT_EQ(raw[2] & 0x02, 0x02);
}

#ifdef CUBESTREAM_TEST_HAVE_BLOSC
// libblosc (c-blosc 1.x, another implementation) decompresses what we write.
TEST(WriterCodecs, LibbloscReadsOurBloscContainers) {
  const Bytes in = field_bytes(300001, 4, 11);
  for (const json& cfg : {json{{"cname", "lz4"}, {"clevel", 5}, {"shuffle", "shuffle"}, {"typesize", 4}},
                          json{{"cname", "zstd"}, {"clevel", 3}, {"shuffle", "bitshuffle"}, {"typesize", 4}},
                          json{{"cname", "zlib"}, {"clevel", 4}, {"shuffle", "noshuffle"}, {"typesize", 4}},
                          json{{"cname", "lz4"}, {"clevel", 1}, {"shuffle", "bitshuffle"}, {"typesize", 2}, {"blocksize", 4096}},
                          json{{"cname", "lz4hc"}, {"clevel", 9}, {"shuffle", "shuffle"}, {"typesize", 4}}}) {
    auto c = codec::make_codec("blosc", cfg);
    const Bytes enc = static_cast<const codec::BytesToBytesCodec*>(c.get())->encode(ByteView(in.data(), in.size()));
    Bytes out(in.size());
    const int n = blosc_decompress(enc.data(), out.data(), out.size());
    ASSERT_EQ(n, static_cast<int>(in.size())) << cfg.dump();
    EXPECT_TRUE(out == in) << cfg.dump();
  }
}
#endif

TEST(WriterCodecs, ChainWithTransposeRoundTrips) {
  auto chain = codec::CodecChain::from_json(json::array({{{"name", "transpose"}, {"configuration", {{"order", {2, 0, 1}}}}},
                                                         {{"name", "bytes"}, {"configuration", {{"endian", "big"}}}},
                                                         {{"name", "zstd"}, {"configuration", {{"level", 2}}}},
                                                         {{"name", "crc32c"}}}));
  ASSERT_TRUE(chain.can_encode());
  codec::ChunkSpec spec{DataType::float_(4), {3, 5, 7}, {0, 0, 0, 0}};
  const Bytes in = field_bytes(3 * 5 * 7, 4, 5);
  const Bytes enc = chain.encode(ByteView(in.data(), in.size()), spec);
  Bytes out(in.size());
  chain.decode(ByteView(enc.data(), enc.size()), spec, MutableByteView(out.data(), out.size()));
  EXPECT_TRUE(out == in);
}

// ---- arrays ---------------------------------------------------------------------------------

ArrayMetadata float_array(int format, std::vector<std::int64_t> shape, std::vector<std::int64_t> chunks, json codecs) {
  ArrayMetadata m;
  m.zarr_format = format;
  m.shape = std::move(shape);
  m.chunk_shape = std::move(chunks);
  m.dtype = DataType::float_(4);
  const float fill = -9999.f;
  m.fill_value.resize(4);
  std::memcpy(m.fill_value.data(), &fill, 4);
  m.codecs = std::move(codecs);
  if (format == 2) {
    m.chunk_key_encoding = "v2";
    m.chunk_key_separator = '.';
  }
  m.dimension_names = {"time", "latitude", "longitude"};
  m.attributes = {{"units", "K"}, {"long_name", "2 metre temperature"}};
  return m;
}

void expect_reads_back(const std::shared_ptr<Store>& store, const std::string& path, const Bytes& data) {
  Array a = Array::open(store, path);
  const Bytes got = a.read_all();
  ASSERT_EQ(got.size(), data.size());
  EXPECT_TRUE(got == data) << path;
}

struct Case {
  int format;
  CodecChoice choice;
  std::vector<std::int64_t> chunks;
};

TEST(ArrayWriter, WrittenArraysReadBackBitForBit) {
  const std::vector<std::int64_t> shape{7, 19, 23};  // no chunk shape divides it: edge chunks
  const Bytes data = field_bytes(7 * 19 * 23, 4, 42);
  std::vector<Case> cases;
  for (const char* comp : {"zstd", "blosc-lz4", "blosc-zstd", "gzip", "zlib", "lz4", "none"}) {
    for (int shuffle = 0; shuffle < 2; ++shuffle) {
      for (int format : {2, 3}) {
        CodecChoice c;
        c.compressor = comp;
        c.shuffle = shuffle;
        cases.push_back({format, c, {2, 8, 10}});
      }
    }
  }
  CodecChoice sharded;
  sharded.compressor = "zstd";
  sharded.inner_chunks = std::vector<std::int64_t>{1, 8, 5};
  cases.push_back({3, sharded, {4, 16, 10}});
  sharded.index_at_start = true;
  sharded.checksum = true;
  sharded.bitshuffle = true;
  sharded.compressor = "blosc-lz4";
  cases.push_back({3, sharded, {2, 8, 20}});

  int n = 0;
  for (const auto& c : cases) {
    auto store = std::make_shared<MemoryStore>("w" + std::to_string(n));
    const json codecs = c.format == 3 ? v3_codecs(c.choice, DataType::float_(4)) : v2_codecs(c.choice, DataType::float_(4));
    auto w = ArrayWriter::create(store, "t2m", float_array(c.format, shape, c.chunks, codecs));
    w.write_region({{0, 0, 0}, shape}, data.data(), data.size(), n % 2 ? 2 : 1);
    SCOPED_TRACE(codecs.dump() + " format " + std::to_string(c.format));
    expect_reads_back(store, "t2m", data);
    Array a = Array::open(store, "t2m");
    EXPECT_EQ(a.metadata().dimension_names, (std::vector<std::string>{"time", "latitude", "longitude"}));
    EXPECT_EQ(a.metadata().attributes.value("units", ""), "K");
    ++n;
  }
}

TEST(ArrayWriter, ShardStreamsLeaveUnwrittenInnerChunksEmpty) {
  for (bool at_start : {false, true}) {
    auto store = std::make_shared<MemoryStore>("shards");
    CodecChoice c;
    c.inner_chunks = std::vector<std::int64_t>{1, 4, 4};
    c.index_at_start = at_start;
    auto w = ArrayWriter::create(store, "a", float_array(3, {2, 8, 8}, {2, 8, 8}, v3_codecs(c, DataType::float_(4))));
    auto shard = w.begin_shard({0, 0, 0});
    std::vector<float> inner(16);
    for (int i = 0; i < 16; ++i) inner[static_cast<std::size_t>(i)] = static_cast<float>(i);
    shard.add({1, 1, 0}, ByteView(reinterpret_cast<const std::uint8_t*>(inner.data()), 64));
    EXPECT_FALSE(store->exists(w.chunk_key({0, 0, 0})));  // nothing visible before commit
    shard.commit();
    Array a = Array::open(store, "a");
    std::vector<float> all(2 * 8 * 8);
    a.read({{0, 0, 0}, {2, 8, 8}}, all.data(), all.size() * 4);
    for (int t = 0; t < 2; ++t)
      for (int y = 0; y < 8; ++y)
        for (int x = 0; x < 8; ++x) {
          const float v = all[static_cast<std::size_t>(t * 64 + y * 8 + x)];
          if (t == 1 && y >= 4 && x < 4) EXPECT_EQ(v, static_cast<float>((y - 4) * 4 + x));
          else EXPECT_EQ(v, -9999.f);
        }
  }
}

TEST(ArrayWriter, GroupsAndConsolidatedMetadataOpenAsADataset) {
  for (int format : {2, 3}) {
    auto store = std::make_shared<MemoryStore>("ds");
    write_group(store, "", format, {{"title", "test"}, {"Conventions", "CF-1.8"}});
    CodecChoice c;
    const json codecs = format == 3 ? v3_codecs(c, DataType::float_(4)) : v2_codecs(c, DataType::float_(4));
    const Bytes data = field_bytes(2 * 3 * 4, 4, 1);
    auto t = ArrayWriter::create(store, "t2m", float_array(format, {2, 3, 4}, {1, 3, 4}, codecs));
    t.write_region({{0, 0, 0}, {2, 3, 4}}, data.data(), data.size());
    ArrayMetadata lat = float_array(format, {3}, {3}, codecs);
    lat.dimension_names = {"latitude"};
    lat.attributes = {{"units", "degrees_north"}};
    auto l = ArrayWriter::create(store, "latitude", lat);
    const std::vector<float> lats{10.f, 0.f, -10.f};
    l.write_region({{0}, {3}}, lats.data(), 12);
    consolidate_metadata(store, "", format);
    const bool has_consolidated = format == 3 ? store->get("zarr.json").has_value() : store->exists(".zmetadata");
    EXPECT_TRUE(has_consolidated);
    Group g = Group::open(store, "");
    EXPECT_TRUE(g.consolidated());
    EXPECT_EQ(g.attributes().value("title", ""), "test");
    // Reading goes through the consolidated metadata: remove the per-array documents.
    for (const char* k : {"t2m/zarr.json", "t2m/.zarray"}) store->erase(k);
    auto ds = Dataset::open(store, "");
    EXPECT_EQ(ds.dims().at("latitude"), 3);
    EXPECT_TRUE(ds.variable("latitude").is_dimension_coordinate);
    EXPECT_TRUE(ds.variable("t2m").array.read_all() == data);
  }
}

TEST(ArrayWriter, RefusesWhatCannotBeWrittenOrRead) {
  auto store = std::make_shared<MemoryStore>("bad");
  CodecChoice c;
  // an inner chunk shape that does not divide the shard
  c.inner_chunks = std::vector<std::int64_t>{1, 3, 3};
  expect_error(ErrorCode::kInvalidArgument,
                     [&] { ArrayWriter::create(store, "a", float_array(3, {4, 8, 8}, {2, 8, 8}, v3_codecs(c, DataType::float_(4)))); });
  EXPECT_FALSE(store->exists("a/zarr.json"));
  expect_error(ErrorCode::kInvalidArgument, [&] { v2_codecs(c, DataType::float_(4)); });  // no shards in v2
  CodecChoice unknown;
  unknown.compressor = "snappy";
  expect_error(ErrorCode::kInvalidArgument, [&] { v3_codecs(unknown, DataType::float_(4)); });
  // a decode-only codec
  ArrayMetadata m = float_array(3, {4}, {2}, json::array({{{"name", "bytes"}, {"configuration", {{"endian", "little"}}}},
                                                         {{"name", "blosc"}, {"configuration", {{"cname", "blosclz"}, {"clevel", 5}, {"shuffle", "noshuffle"}, {"typesize", 4}, {"blocksize", 0}}}}}));
  m.dimension_names = {"x"};
  expect_error(ErrorCode::kUnsupported, [&] { ArrayWriter::create(store, "b", m); });
  // a region off the chunk grid
  CodecChoice plain;
  auto w = ArrayWriter::create(store, "c", float_array(3, {4, 4, 4}, {2, 2, 2}, v3_codecs(plain, DataType::float_(4))));
  std::vector<float> buf(8);
  expect_error(ErrorCode::kInvalidArgument, [&] { w.write_region({{1, 0, 0}, {2, 2, 2}}, buf.data(), 32); });
}

TEST(ArrayWriter, FillValuesRoundTripThroughMetadata) {
  auto store = std::make_shared<MemoryStore>("fill");
  const float nan_payload_bits_f = [] {
    std::uint32_t b = 0x7fc00001u;
    float f;
    std::memcpy(&f, &b, 4);
    return f;
  }();
  for (float fill : {0.f, -0.f, 1.5e-30f, INFINITY, -INFINITY, NAN, nan_payload_bits_f}) {
    for (int format : {2, 3}) {
      CodecChoice c;
      ArrayMetadata m = float_array(format, {3}, {2}, format == 3 ? v3_codecs(c, DataType::float_(4)) : v2_codecs(c, DataType::float_(4)));
      m.dimension_names = {"x"};
      std::memcpy(m.fill_value.data(), &fill, 4);
      ArrayWriter::create(store, "f", m);
      Array a = Array::open(store, "f");
      std::uint32_t want, got;
      std::memcpy(&want, &fill, 4);
      std::memcpy(&got, a.metadata().fill_value.data(), 4);
      // v2 has no hex form: a NaN payload becomes the canonical NaN there.
      if (format == 2 && std::isnan(fill)) EXPECT_TRUE(std::isnan(*reinterpret_cast<const float*>(a.metadata().fill_value.data())));
      else EXPECT_EQ(got, want) << fill << " v" << format;
      store->erase_prefix("f");
    }
  }
}

// ---- the file store's writes ----------------------------------------------------------------

TEST(WritableFileStore, ValuesAppearAtomicallyAndUncommittedWritesLeaveNothing) {
  const auto dir = scratch_dir("writable_store");
  auto store = open_writable_file_store(dir.string() + "/new/root");
  {
    auto w = store->open_writer("a/b/c/0");
    const Bytes part(1000, 7);
    w->append(ByteView(part.data(), part.size()));
    EXPECT_FALSE(store->exists("a/b/c/0"));
  }  // destroyed without commit
  EXPECT_FALSE(store->exists("a/b/c/0"));
  EXPECT_TRUE(store->list_dir("a/b/c").empty());  // the temporary is gone too
  const std::string v = "hello";
  store->put("a/b/c/0", ByteView(reinterpret_cast<const std::uint8_t*>(v.data()), v.size()));
  EXPECT_EQ(store->size("a/b/c/0"), 5u);
  {
    auto w = store->open_writer("x");
    const Bytes head(4, 0), body(10, 1), patch{9, 9, 9, 9};
    w->append(ByteView(head.data(), head.size()));
    w->append(ByteView(body.data(), body.size()));
    w->write_at(0, ByteView(patch.data(), patch.size()));
    w->commit();
  }
  auto x = store->get("x");
  ASSERT_TRUE(x);
  EXPECT_EQ((*x)[0], 9);
  EXPECT_EQ((*x)[13], 1);
  store->erase_prefix("a");
  EXPECT_FALSE(store->exists("a/b/c/0"));
  expect_error(ErrorCode::kPathEscape, [&] { store->put("../escape", ByteView()); });
}

TEST(WritableFileStore, PermissionDeniedNamesTheKey) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
  const auto dir = scratch_dir("readonly_store");
  auto store = open_writable_file_store(dir.string());
  std::filesystem::permissions(dir, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  try {
    store->put("k", ByteView());
    ADD_FAILURE() << "write into a read-only directory succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_EQ(e.context().key, "k");
  }
  std::filesystem::permissions(dir, std::filesystem::perms::owner_all);
}

}  // namespace
}  // namespace cubestream
