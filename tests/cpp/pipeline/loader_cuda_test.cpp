// The loader's CUDA hand-over: batches on the GPU equal the CPU loader's bit for bit, for a
// few configs (dtypes, windows, statics, prefetch), and buffers recycled through the pool are
// never overwritten while the consumer still reads them (the pool waits on the consumer's
// stream). Skipped where no CUDA device is visible; built everywhere.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "cubestream/loader.hpp"
#include "cuda/memory.hpp"
#include "sample/selection_test_stores.hpp"

namespace cubestream {
namespace {

using namespace test_stores;

std::vector<std::uint8_t> host_bytes(const Tensor& t) {
  std::vector<std::uint8_t> out(t.num_bytes());
  if (t.device == DeviceKind::kCuda) {
    cuda::copy_to_host(out.data(), t.data, out.size(), t.device_index);
  } else {
    std::memcpy(out.data(), t.data, out.size());
  }
  return out;
}

TEST(LoaderCuda, BatchesEqualTheCpuLoaderBitForBit) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const auto years = three_years();
  const std::optional<Dataset> statics = Dataset::open(static_store());
  std::mt19937_64 rng(21);
  int batches = 0;
  for (int round = 0; round < 12; ++round) {
    LoaderConfig c;
    c.selection.variables = {"t2m", "temperature", "vt"};
    if (round % 2) c.selection.static_variables = {"orography", "soil"};
    if (round % 3 == 0) c.selection.select = {{"level", {850}}};
    c.sampler.window = ForecastWindow{"time", {-static_cast<std::int64_t>(round % 3), 0}, {1 + round % 2}};
    if (round % 4 == 1) c.sampler.patch = {{"latitude", 3}, {"longitude", 4}};
    c.sampler.shuffle = static_cast<ShuffleMode>(round % 3);
    c.sampler.seed = rng();
    c.sampler.batch_size = 1 + round % 4;
    c.dtype = static_cast<OutputDType>(round % 3);
    c.prefetch = 1 + round % 3;
    c.threads = 2;
    c.memory_limit = std::uint64_t{64} << 20;
    LoaderConfig g = c;
    g.device = DeviceKind::kCuda;
    // Odd rounds: decode and assemble on the host, copy the batch; even rounds: the GPU path
    // (these stores are uncompressed: the units go over raw and the GPU assembles them).
    g.decode = round % 2 ? DecodeBackend::kCpu : DecodeBackend::kAuto;
    Loader cpu(ConcatenatedTime(years), c, statics);
    Loader gpu(ConcatenatedTime(years), g, statics);
    for (int e = 0; e < 2; ++e) {
      for (;;) {
        auto a = cpu.next();
        auto b = gpu.next();
        ASSERT_EQ(a.has_value(), b.has_value());
        if (!a) break;
        ASSERT_EQ(b->inputs.device, DeviceKind::kCuda);
        b->synchronize();
        ASSERT_EQ(a->samples, b->samples);
        ASSERT_EQ(host_bytes(a->inputs), host_bytes(b->inputs)) << "round " << round;
        ASSERT_EQ(a->targets.has_value(), b->targets.has_value());
        if (a->targets) ASSERT_EQ(host_bytes(*a->targets), host_bytes(*b->targets)) << "round " << round;
        ++batches;
      }
    }
    if (g.decode == DecodeBackend::kCpu) {
      EXPECT_GT(gpu.stats().transfer_s, 0.0);
      EXPECT_EQ(gpu.stats().decode_path, "cpu");
    } else {
      EXPECT_EQ(gpu.stats().decode_path, "gpu");
    }
  }
  EXPECT_GT(batches, 50);
}

TEST(LoaderCuda, ConsumerStreamOrderingKeepsHeldBatchesIntact) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  for (DecodeBackend decode : {DecodeBackend::kCpu, DecodeBackend::kAuto}) {
  LoaderConfig c;
  c.decode = decode;
  c.selection.variables = {"t2m"};
  c.sampler.window = ForecastWindow{"time", {0}, {1}};
  c.sampler.batch_size = 1;
  c.prefetch = 1;
  c.threads = 1;
  c.device = DeviceKind::kCuda;
  Loader l(ConcatenatedTime(three_years()), c);
  LoaderConfig cc = c;
  cc.device = DeviceKind::kCpu;
  Loader ref(ConcatenatedTime(three_years()), cc);
  // Hold every batch of the epoch (more than the pool keeps) and check them all at the end:
  // a recycled buffer overwritten too early would show another batch's data.
  std::vector<Batch> held;
  std::vector<std::vector<std::uint8_t>> want;
  void* stream = cuda::create_stream(0);
  while (auto b = l.next()) {
    b->wait_on(stream);
    held.push_back(std::move(*b));
    want.push_back(host_bytes(ref.next()->inputs));
  }
  ASSERT_EQ(held.size(), 11u);
  for (std::size_t i = 0; i < held.size(); ++i) {
    held[i].synchronize();
    EXPECT_EQ(host_bytes(held[i].inputs), want[i]) << i;
  }
  // The consumer's stream must outlive the batches handed to it (their buffers go back to
  // the pool ordered after it): release them first.
  held.clear();
  cuda::destroy_stream(stream, 0);
  }
}

}  // namespace
}  // namespace cubestream

namespace cubestream {
namespace {

// GPU decode + GPU assembly against the host path, on the shipped CMIP5 store (blosc-lz4 with
// shuffle, Zarr v2): the same bits, every unit decoded by the GPU decoders.
TEST(LoaderCuda, GpuDecodeEqualsHostDecodeOnBloscStore) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const std::string demo = std::string(CUBESTREAM_SOURCE_DIR) + "/data/demo/cmip5_2005.zarr";
  for (int round = 0; round < 6; ++round) {
    LoaderConfig c;
    c.selection.variables = {"tas", "uas", "vas"};
    c.sampler.window = ForecastWindow{"time", {0}, {1}};
    if (round % 2) c.sampler.patch = {{"lat", 40}, {"lon", 64}};
    c.sampler.shuffle = static_cast<ShuffleMode>(round % 3);
    c.sampler.batch_size = 1 + round;
    c.dtype = static_cast<OutputDType>(round % 3);
    if (round == 4) c.selection.normalisation = {{"tas", {280.0, 20.0}}};
    c.device = DeviceKind::kCuda;
    LoaderConfig h = c;
    h.decode = DecodeBackend::kCpu;
    c.decode = DecodeBackend::kGpu;
    Loader gpu(ConcatenatedTime(Dataset::open(open_store(demo))), c);
    Loader host(ConcatenatedTime(Dataset::open(open_store(demo))), h);
    std::int64_t n = 0;
    for (;;) {
      auto a = host.next();
      auto b = gpu.next();
      ASSERT_EQ(a.has_value(), b.has_value());
      if (!a) break;
      b->synchronize();
      a->synchronize();
      ASSERT_EQ(host_bytes(a->inputs), host_bytes(b->inputs)) << "round " << round << " batch " << n;
      ASSERT_EQ(host_bytes(*a->targets), host_bytes(*b->targets)) << "round " << round << " batch " << n;
      ++n;
    }
    const LoaderStats st = gpu.stats();
    EXPECT_EQ(st.decode_path, "gpu");
    EXPECT_GT(st.units_gpu_decoded, 0u);
    EXPECT_EQ(st.units_gpu_fallback, 0u);
    EXPECT_EQ(host.stats().decode_path, "cpu");
  }
}

}  // namespace
}  // namespace cubestream

#include <lz4.h>
#include <zstd.h>

namespace cubestream {
namespace {

// A (time, lat, lon) float32 variable compressed with `codec` ("zstd": Zarr v3 bytes + zstd
// level 3; "lz4": Zarr v2 numcodecs lz4, a 4-byte size then one LZ4 block), written chunk by
// chunk into `s` with the libraries themselves.
void put_compressed(MemoryStore& s, const std::string& name, const std::string& codec, std::int64_t nt,
                    std::int64_t ny, std::int64_t nx, std::int64_t ct, std::int64_t cy, std::int64_t cx, int seed) {
  using nlohmann::json;
  if (codec == "zstd") {
    json z = {{"zarr_format", 3}, {"node_type", "array"}, {"shape", {nt, ny, nx}}, {"data_type", "float32"},
              {"chunk_grid", {{"name", "regular"}, {"configuration", {{"chunk_shape", {ct, cy, cx}}}}}},
              {"chunk_key_encoding", {{"name", "default"}}}, {"fill_value", "NaN"},
              {"codecs", json::array({{{"name", "bytes"}, {"configuration", {{"endian", "little"}}}},
                                      {{"name", "zstd"}, {"configuration", {{"level", 3}, {"checksum", false}}}}})},
              {"dimension_names", {"time", "lat", "lon"}}};
    s.set(name + "/zarr.json", z.dump());
  } else {
    json z = {{"zarr_format", 2}, {"shape", {nt, ny, nx}}, {"chunks", {ct, cy, cx}}, {"dtype", "<f4"},
              {"compressor", {{"id", "lz4"}, {"acceleration", 1}}}, {"fill_value", "NaN"}, {"filters", nullptr},
              {"order", "C"}};
    s.set(name + "/.zarray", z.dump());
    s.set(name + "/.zattrs", json{{"_ARRAY_DIMENSIONS", {"time", "lat", "lon"}}}.dump());
  }
  for (std::int64_t t = 0; t < nt / ct; ++t)
    for (std::int64_t y = 0; y < ny / cy; ++y)
      for (std::int64_t x = 0; x < nx / cx; ++x) {
        std::vector<float> v(static_cast<std::size_t>(ct * cy * cx));
        for (std::size_t i = 0; i < v.size(); ++i) {
          // Smooth plus a little noise, quantised: compresses like climate data.
          v[i] = std::round(static_cast<float>(250 + 20 * std::sin(0.01 * static_cast<double>(i + t * 7 + seed)) +
                                               noise(seed, 1, static_cast<std::int64_t>(i)) / 50) * 64) / 64;
        }
        Bytes enc;
        const std::size_t raw = v.size() * 4;
        if (codec == "zstd") {
          enc.resize(ZSTD_compressBound(raw));
          enc.resize(ZSTD_compress(enc.data(), enc.size(), v.data(), raw, 3));
        } else {
          enc.resize(4 + static_cast<std::size_t>(LZ4_compressBound(static_cast<int>(raw))));
          const auto n = static_cast<std::uint32_t>(raw);
          std::memcpy(enc.data(), &n, 4);  // little-endian host
          const int c = LZ4_compress_default(reinterpret_cast<const char*>(v.data()), reinterpret_cast<char*>(enc.data() + 4),
                                             static_cast<int>(raw), static_cast<int>(enc.size() - 4));
          enc.resize(4 + static_cast<std::size_t>(c));
        }
        const std::string key = codec == "zstd" ? name + "/c/" + std::to_string(t) + "/" + std::to_string(y) + "/" +
                                                      std::to_string(x)
                                                : name + "/" + std::to_string(t) + "." + std::to_string(y) + "." +
                                                      std::to_string(x);
        s.set(key, std::move(enc));
      }
}

// zstd (v3) and lz4 (v2) variables decoded by the GPU decoders (decode=gpu) against the host.
TEST(LoaderCuda, GpuZstdAndLz4DecodeEqualHostDecode) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto s = std::make_shared<MemoryStore>("zstd_lz4");
  s->set("zarr.json", R"({"zarr_format": 3, "node_type": "group"})");
  put_compressed(*s, "a", "zstd", 12, 32, 48, 1, 32, 48, 1);
  put_compressed(*s, "b", "zstd", 12, 32, 48, 2, 16, 24, 2);
  auto s2 = std::make_shared<MemoryStore>("lz4");
  s2->set(".zgroup", R"({"zarr_format": 2})");
  put_compressed(*s2, "c", "lz4", 12, 32, 48, 1, 32, 48, 3);
  put_compressed(*s2, "d", "lz4", 12, 32, 48, 3, 8, 16, 4);
  struct Case { std::shared_ptr<MemoryStore> store; std::vector<std::string> vars; };
  for (const Case& k : {Case{s, {"a", "b"}}, Case{s2, {"c", "d"}}}) {
    for (int round = 0; round < 3; ++round) {
      LoaderConfig c;
      c.selection.variables = k.vars;
      c.sampler.window = ForecastWindow{"time", {0}, {1}};
      if (round == 1) c.sampler.patch = {{"lat", 16}, {"lon", 20}};
      c.sampler.shuffle = round == 2 ? ShuffleMode::kSample : ShuffleMode::kNone;
      c.sampler.batch_size = 3;
      c.dtype = static_cast<OutputDType>(round);
      c.device = DeviceKind::kCuda;
      LoaderConfig h = c;
      h.decode = DecodeBackend::kCpu;
      c.decode = DecodeBackend::kGpu;
      Loader gpu(ConcatenatedTime(Dataset::open(k.store)), c);
      Loader host(ConcatenatedTime(Dataset::open(k.store)), h);
      for (std::int64_t n = 0;; ++n) {
        auto a = host.next();
        auto b = gpu.next();
        ASSERT_EQ(a.has_value(), b.has_value());
        if (!a) break;
        a->synchronize();
        b->synchronize();
        ASSERT_EQ(host_bytes(a->inputs), host_bytes(b->inputs)) << k.vars[0] << " round " << round << " batch " << n;
        ASSERT_EQ(host_bytes(*a->targets), host_bytes(*b->targets)) << k.vars[0] << " round " << round;
      }
      const LoaderStats st = gpu.stats();
      EXPECT_EQ(st.decode_path, "gpu");
      EXPECT_GT(st.units_gpu_decoded, 0u) << k.vars[0];
      EXPECT_EQ(st.units_gpu_fallback, 0u);
    }
    // decode=auto takes both on the GPU.
    LoaderConfig a;
    a.selection.variables = k.vars;
    a.sampler.window = ForecastWindow{"time", {0}, {1}};
    a.device = DeviceKind::kCuda;
    Loader autol(ConcatenatedTime(Dataset::open(k.store)), a);
    ASSERT_TRUE(autol.next());
    EXPECT_GT(autol.stats().units_gpu_decoded, 0u) << autol.stats().decode_path;
  }
}

}  // namespace
}  // namespace cubestream
