// The batched GPU decoders and filters (cuda/decode/batch_decode.hpp) against the CPU codecs,
// byte for byte: LZ4 and blosc batches of many buffers (every blosc layout, written by the
// test encoder because the GPU machine has no libblosc), damaged buffers (statuses, and no
// write past any output: each output is followed by guard bytes, and the GPU run repeats the
// suite under compute-sanitizer memcheck), the CPU fallback for what the GPU leaves, and each
// byte filter. Without a visible GPU the GPU tests skip; a CPU-only build checks that the API
// says "no GPU".
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <lz4.h>
#include <lz4hc.h>
#include <zstd.h>

#include "../codec/blosc_test_encoder.hpp"
#include "../codec/codec_test_util.hpp"
#include "../codec/lz4_craft.hpp"
#include "codec/bytes_to_bytes/filter_params.hpp"
#include "codec/logic/blosc_decode.hpp"
#include "codec/logic/lz4_block.hpp"
#include "codec/logic/lz4_split_walk.hpp"
#include "core/byte_swap.hpp"
#include "core/strided_copy.hpp"
#include "cuda/decode/batch_decode.hpp"

#ifdef CUBESTREAM_WITH_CUDA
#include <cuda_runtime_api.h>

#include "codec/logic/lz4_rounds_host.hpp"
#include "cuda/decode/lz4_rounds.hpp"
#include "cuda/decode/lz4_segments.hpp"  // (CUDA's runtime header: the CPU-only build has none)
#endif

namespace cs_codec_test {
namespace {

namespace cuda = cubestream::cuda;
namespace logic = cubestream::codec::logic;
using logic::DecodeStatus;

#ifndef CUBESTREAM_WITH_CUDA

TEST(GpuBatchApi, CpuOnlyBuildSaysNoGpu) {
  const std::string msg = expect_error(ErrorCode::kUnsupported, [] {
    cuda::batch_decode_scratch_bytes(cuda::BatchCodec::kBlosc, 1, 1);
  });
  EXPECT_NE(msg.find("without CUDA"), std::string::npos) << msg;
  expect_error(ErrorCode::kUnsupported, [] { cuda::batch_decode(cuda::BatchCodec::kLz4, {}, nullptr, 0, nullptr); });
  expect_error(ErrorCode::kUnsupported,
               [] { cuda::decode_batch_with_fallback(cuda::BatchCodec::kLz4, {}, "{\"id\":\"lz4\"}", nullptr); });
  EXPECT_EQ(cuda::batch_codec_for_id("numcodecs.blosc"), cuda::BatchCodec::kBlosc);
}

#else

constexpr std::uint8_t kGuard = 0xA5;
constexpr std::size_t kGuardBytes = 256;

bool have_gpu() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    cudaGetLastError();
    return false;
  }
  return true;
}

#define REQUIRE_GPU() \
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device visible"

void ok(cudaError_t e) { ASSERT_EQ(e, cudaSuccess) << cudaGetErrorString(e); }

struct DevMem {
  void* p = nullptr;
  explicit DevMem(std::size_t n) { EXPECT_EQ(cudaMalloc(&p, n == 0 ? 1 : n), cudaSuccess); }
  ~DevMem() { cudaFree(p); }
  DevMem(const DevMem&) = delete;
  DevMem& operator=(const DevMem&) = delete;
  std::uint8_t* u8() const { return static_cast<std::uint8_t*>(p); }
};

// A batch on the device: all inputs packed in one allocation, all outputs (each followed by
// guard bytes) in another, the pointer/size/status arrays in their own.
struct Batch {
  std::vector<Buf> inputs;
  std::vector<std::size_t> out_sizes;
  std::unique_ptr<DevMem> in_mem, out_mem, src_arr, src_sz, dst_arr, dst_sz, status;
  std::vector<std::size_t> in_at, out_at;
  cuda::DeviceBatch b;

  Batch(std::vector<Buf> ins, std::vector<std::size_t> outs, std::size_t input_skew = 0, std::size_t output_skew = 0)
      : inputs(std::move(ins)), out_sizes(std::move(outs)) {
    const std::size_t n = inputs.size();
    std::size_t in_total = 0, out_total = 0;
    for (std::size_t i = 0; i < n; ++i) {
      // inputs at odd offsets when skewed: the decoders must not assume alignment
      in_at.push_back(in_total + input_skew);
      in_total += inputs[i].size() + input_skew + 16;
      // outputs at odd offsets when skewed (the lz4 kernel's ring follows the output's alignment)
      out_at.push_back(out_total + output_skew);
      out_total += (out_sizes[i] + output_skew + kGuardBytes + 15) / 16 * 16;
    }
    in_mem = std::make_unique<DevMem>(in_total);
    out_mem = std::make_unique<DevMem>(out_total);
    Buf host_in(in_total, 0);
    for (std::size_t i = 0; i < n; ++i)
      if (!inputs[i].empty()) std::memcpy(host_in.data() + in_at[i], inputs[i].data(), inputs[i].size());
    ok(cudaMemcpy(in_mem->p, host_in.data(), in_total, cudaMemcpyHostToDevice));
    ok(cudaMemset(out_mem->p, kGuard, out_total));
    std::vector<const std::uint8_t*> srcs(n);
    std::vector<std::uint8_t*> dsts(n);
    std::vector<std::size_t> ssz(n);
    for (std::size_t i = 0; i < n; ++i) {
      srcs[i] = in_mem->u8() + in_at[i];
      dsts[i] = out_mem->u8() + out_at[i];
      ssz[i] = inputs[i].size();
    }
    src_arr = std::make_unique<DevMem>(n * sizeof(void*));
    dst_arr = std::make_unique<DevMem>(n * sizeof(void*));
    src_sz = std::make_unique<DevMem>(n * sizeof(std::size_t));
    dst_sz = std::make_unique<DevMem>(n * sizeof(std::size_t));
    status = std::make_unique<DevMem>(n * sizeof(DecodeStatus));
    ok(cudaMemcpy(src_arr->p, srcs.data(), n * sizeof(void*), cudaMemcpyHostToDevice));
    ok(cudaMemcpy(dst_arr->p, dsts.data(), n * sizeof(void*), cudaMemcpyHostToDevice));
    ok(cudaMemcpy(src_sz->p, ssz.data(), n * sizeof(std::size_t), cudaMemcpyHostToDevice));
    ok(cudaMemcpy(dst_sz->p, out_sizes.data(), n * sizeof(std::size_t), cudaMemcpyHostToDevice));
    ok(cudaMemset(status->p, 0xFF, n * sizeof(DecodeStatus)));  // "not written"
    b.src = static_cast<const std::uint8_t* const*>(src_arr->p);
    b.src_bytes = static_cast<const std::size_t*>(src_sz->p);
    b.dst = static_cast<std::uint8_t* const*>(dst_arr->p);
    b.dst_bytes = static_cast<const std::size_t*>(dst_sz->p);
    b.status = static_cast<DecodeStatus*>(status->p);
    b.num_buffers = n;
  }

  std::size_t total_out() const {
    std::size_t t = 0;
    for (auto s : out_sizes) t += s;
    return t;
  }

  // scratch_bytes 0: what batch_decode_scratch_bytes asks for
  void decode(cuda::BatchCodec codec, std::size_t scratch_bytes = 0) {
    const std::size_t scratch =
        scratch_bytes != 0 ? scratch_bytes : cuda::batch_decode_scratch_bytes(codec, b.num_buffers, total_out());
    DevMem s(scratch);
    cuda::batch_decode(codec, b, s.p, scratch, nullptr);
    ok(cudaDeviceSynchronize());
  }

  std::vector<DecodeStatus> statuses() const {
    std::vector<DecodeStatus> st(b.num_buffers);
    EXPECT_EQ(cudaMemcpy(st.data(), status->p, st.size() * sizeof(DecodeStatus), cudaMemcpyDeviceToHost), cudaSuccess);
    return st;
  }

  // Output i; fails the test if its guard bytes changed.
  Buf output(std::size_t i) const {
    Buf o(out_sizes[i] + kGuardBytes);
    EXPECT_EQ(cudaMemcpy(o.data(), out_mem->u8() + out_at[i], o.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    for (std::size_t k = out_sizes[i]; k < o.size(); ++k) {
      if (o[k] != kGuard) {
        ADD_FAILURE() << "buffer " << i << ": write past its output (" << k - out_sizes[i] << " bytes after)";
        break;
      }
    }
    o.resize(out_sizes[i]);
    return o;
  }
};

Buf numcodecs_lz4(const Buf& src, int hc_level) {
  Buf dst(4 + LZ4_compressBound(static_cast<int>(src.size())));
  put_le32(dst.data(), static_cast<std::uint32_t>(src.size()));
  const char* in = reinterpret_cast<const char*>(src.data());
  char* out = reinterpret_cast<char*>(dst.data() + 4);
  const int cap = static_cast<int>(dst.size() - 4);
  const int n = hc_level > 0 ? LZ4_compress_HC(in, out, static_cast<int>(src.size()), cap, hc_level)
                             : LZ4_compress_fast(in, out, static_cast<int>(src.size()), cap, -hc_level + 1);
  dst.resize(4 + static_cast<std::size_t>(n));
  return dst;
}

// A mix of data kinds and sizes, including empty and sub-16-byte buffers.
std::vector<Buf> sample_data(std::size_t count, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Buf> v;
  const std::size_t sizes[] = {0, 1, 13, 1000, 65536, 100003, 262144, 1 << 20};
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t n = sizes[rng() % std::size(sizes)];
    v.push_back(kDataKinds[rng() % std::size(kDataKinds)].make(n));
  }
  return v;
}

TEST(GpuBatch, Lz4ManyBuffersMatchTheCpu) {
  REQUIRE_GPU();
  const std::vector<Buf> data = sample_data(300, 1);
  std::vector<Buf> enc;
  std::vector<std::size_t> sizes;
  for (std::size_t i = 0; i < data.size(); ++i) {
    const int level = static_cast<int>(i % 7) - 3;  // fast accelerations 1..4, HC 1..3
    enc.push_back(numcodecs_lz4(data[i], level));
    sizes.push_back(data[i].size());
  }
  // inputs and outputs aligned, then both 3 bytes past (the word copies of literals and
  // matches take positions relative to the aligned addresses below the buffers)
  for (std::size_t skew : {std::size_t{0}, std::size_t{3}}) {
    Batch b(enc, sizes, skew, skew);
    b.decode(cuda::BatchCodec::kLz4);
    const auto st = b.statuses();
    for (std::size_t i = 0; i < data.size(); ++i) {
      ASSERT_EQ(st[i], DecodeStatus::kOk) << "buffer " << i << ": " << logic::decode_status_name(st[i]);
      ASSERT_TRUE(b.output(i) == data[i]) << "buffer " << i;
    }
  }
}

// A device whose blocks cannot opt in to the ring kernel's ~71 KiB of shared memory (sm_75)
// gets one warp per buffer instead; simulated by lowering the limit. Same bytes and statuses.
TEST(GpuBatch, Lz4OnSmallSharedMemoryDevicesMatchesTheCpu) {
  REQUIRE_GPU();
  ::setenv("CUBESTREAM_GPU_SMEM_OPTIN", "49152", 1);
  struct Unset {
    ~Unset() { ::unsetenv("CUBESTREAM_GPU_SMEM_OPTIN"); }
  } unset;
  const std::vector<Buf> data = sample_data(64, 3);
  std::vector<Buf> enc;
  std::vector<std::size_t> sizes;
  for (std::size_t i = 0; i < data.size(); ++i) {
    enc.push_back(numcodecs_lz4(data[i], static_cast<int>(i % 5) - 2));
    sizes.push_back(data[i].size());
  }
  Buf bad = enc[1];
  bad.resize(bad.size() / 2);
  enc.push_back(bad);
  sizes.push_back(data[1].size());
  Batch b(enc, sizes);
  b.decode(cuda::BatchCodec::kLz4);
  const auto st = b.statuses();
  for (std::size_t i = 0; i < data.size(); ++i) {
    ASSERT_EQ(st[i], DecodeStatus::kOk) << "buffer " << i << ": " << logic::decode_status_name(st[i]);
    ASSERT_TRUE(b.output(i) == data[i]) << "buffer " << i;
  }
  Buf host(sizes.back());
  EXPECT_EQ(st.back(), logic::lz4_numcodecs_decode(bad.data(), bad.size(), host.data(), host.size()));
  EXPECT_NE(st.back(), DecodeStatus::kOk);
}

// `count` damaged copies of numcodecs lz4 buffer `good` (decoding to `size` bytes) appended to
// enc/sizes: every third cut short, the others with 1-4 bytes changed; every fifth expected
// one byte short.
void add_damaged_lz4(const Buf& good, std::size_t size, int count, std::uint32_t seed, std::vector<Buf>* enc,
                     std::vector<std::size_t>* sizes) {
  std::mt19937 rng(seed);
  for (int t = 0; t < count; ++t) {
    Buf bad = good;
    if (t % 3 == 0) {
      bad.resize(rng() % good.size());
    } else {
      for (int f = 0; f < 1 + t % 4; ++f) bad[4 + rng() % (bad.size() - 4)] = static_cast<std::uint8_t>(rng());
    }
    enc->push_back(bad);
    sizes->push_back(t % 5 == 0 ? size - 1 : size);
  }
}

// Every buffer of a decoded lz4 batch has the status, and when good the bytes, that the shared
// logic gives on the host.
void expect_lz4_as_host_logic(const Batch& b) {
  const auto st = b.statuses();
  for (std::size_t i = 0; i < b.inputs.size(); ++i) {
    const std::size_t n = b.out_sizes[i];
    Buf host(n);
    const DecodeStatus want = logic::lz4_numcodecs_decode(b.inputs[i].data(), b.inputs[i].size(), host.data(), n);
    ASSERT_EQ(st[i], want) << "buffer " << i;
    if (want == DecodeStatus::kOk) ASSERT_TRUE(b.output(i) == host) << "buffer " << i;
  }
}

TEST(GpuBatch, Lz4DamagedBuffersGetStatusesAndStayInBounds) {
  REQUIRE_GPU();
  const Buf src = climate_bytes(200000);
  std::vector<Buf> enc;
  std::vector<std::size_t> sizes;
  add_damaged_lz4(numcodecs_lz4(src, 0), src.size(), 512, 5, &enc, &sizes);
  Batch b(enc, sizes);
  b.decode(cuda::BatchCodec::kLz4);
  expect_lz4_as_host_logic(b);  // the GPU says what the shared logic says on the host
}

// The ring kernel's walker bursts (codec/logic/lz4_ring.hpp, Lz4RingWalker::burst) and the
// split of a batch between the walk with bursts and the one without (by compression ratio), on
// the ring kernel (CUBESTREAM_LZ4_PATH=ring): good buffers of every data kind at three levels
// and damaged ones give the host logic's statuses and bytes with bursts for every buffer, for
// none, tried before every sequence, and with the batch split at its median ratio (so both
// walks run, each buffer decoded by exactly one: a skipped buffer would keep its guard bytes).
TEST(GpuBatch, Lz4BurstsAndTheSplitMatchTheHostLogic) {
  REQUIRE_GPU();
  std::vector<Buf> enc;
  std::vector<std::size_t> sizes;
  const std::vector<Buf> data = sample_data(60, 2);
  for (std::size_t i = 0; i < data.size(); ++i) {
    enc.push_back(numcodecs_lz4(data[i], static_cast<int>(i % 3) * 4));  // fast, HC 4, HC 8
    sizes.push_back(data[i].size());
  }
  const Buf src = climate_bytes(300000);
  add_damaged_lz4(numcodecs_lz4(src, 0), src.size(), 128, 17, &enc, &sizes);
  std::vector<double> ratios;
  for (std::size_t i = 0; i < enc.size(); ++i)
    if (!enc[i].empty()) ratios.push_back(static_cast<double>(sizes[i]) / static_cast<double>(enc[i].size()));
  std::sort(ratios.begin(), ratios.end());
  const std::string median = std::to_string(ratios[ratios.size() / 2]);
  const struct {
    const char* what;
    std::vector<std::pair<const char*, std::string>> env;
  } settings[] = {
      {"every buffer", {{"CUBESTREAM_LZ4_BURSTS", "1"}}},
      {"no buffer", {{"CUBESTREAM_LZ4_BURSTS", "0"}}},
      {"always tried", {{"CUBESTREAM_LZ4_BURSTS", "1"}, {"CUBESTREAM_LZ4_BURST_MIN_TAKE", "0"}, {"CUBESTREAM_LZ4_BURST_MAX_WAIT", "0"}}},
      {"split at the median ratio", {{"CUBESTREAM_LZ4_BURST_RATIO", median}}},
      {"the default", {}},
  };
  for (const auto& setting : settings) {
    SCOPED_TRACE(setting.what);
    setenv("CUBESTREAM_LZ4_PATH", "ring", 1);
    for (const auto& [name, value] : setting.env) setenv(name, value.c_str(), 1);
    Batch b(enc, sizes, 3);
    b.decode(cuda::BatchCodec::kLz4);
    for (const auto& [name, value] : setting.env) unsetenv(name);
    unsetenv("CUBESTREAM_LZ4_PATH");
    expect_lz4_as_host_logic(b);
  }
}

Buf ring_paths_data(std::size_t n, std::uint32_t seed);  // below

// The segmented path (codec/logic/lz4_segments.hpp, cuda/decode/lz4_segments.cu), the default
// (walks and segment workers in one kernel; 295 buffers, more than its walker blocks, so walkers
// take several buffers each; blocks decoding to more than 1.4x their size go to the ring kernel
// in the same call), the same taking dense blocks too (CUBESTREAM_LZ4_PATH=segments, as every
// setting below but the ring kernel's), with the split walk first at its measured regions and
// at its smallest (4 KiB: more rounds, more declines; CUBESTREAM_LZ4_SPLIT_REGION=32768, 100),
// the walk kernel and the serial one before the workers (CUBESTREAM_LZ4_WALK=table, serial):
// good buffers of every data
// kind and size at three levels, long literal runs, far, long and overlapping matches, megabytes
// of zeros (one long match after another) and damaged buffers give the host logic's statuses and
// bytes at odd input and output alignments; so does the ring kernel alone
// (CUBESTREAM_LZ4_PATH=ring), and a scratch with room for only a few buffers' segments, where the
// walk hands the others to the ring kernel in the same call. With CUBESTREAM_LZ4_MATCHES=ready
// segments take the ready pass first (pending bits, codec/logic/lz4_match_bits.hpp); a scratch
// sized for half the batch then gives some buffers bits, others the chained pass alone and the
// rest the ring kernel, all in one call.
TEST(GpuBatch, Lz4SegmentsRingAndAShortScratchMatchTheHostLogic) {
  REQUIRE_GPU();
  std::vector<Buf> enc;
  std::vector<std::size_t> sizes;
  std::vector<Buf> data = sample_data(90, 4);
  data.push_back(climate_bytes(4 << 20));
  data.push_back(quantised_bytes(3 << 20));
  data.push_back(Buf(3 << 20, 0));
  for (std::uint32_t seed : {1u, 2u}) data.push_back(ring_paths_data(1 << 20, seed));
  for (std::size_t i = 0; i < data.size(); ++i) {
    enc.push_back(numcodecs_lz4(data[i], static_cast<int>(i % 3) * 4));  // fast, HC 4, HC 8
    sizes.push_back(data[i].size());
  }
  const Buf src = quantised_bytes(500000);
  add_damaged_lz4(numcodecs_lz4(src, 0), src.size(), 200, 23, &enc, &sizes);
  std::size_t total = 0;
  for (std::size_t n : sizes) total += n;
  const std::size_t short_scratch = cuda::batch_decode_scratch_bytes(cuda::BatchCodec::kLz4, enc.size(), 0);
  setenv("CUBESTREAM_LZ4_MATCHES", "ready", 1);  // (the scratch's size follows the switch)
  const std::size_t half_scratch = cuda::batch_decode_scratch_bytes(cuda::BatchCodec::kLz4, enc.size(), total / 2);
  unsetenv("CUBESTREAM_LZ4_MATCHES");
  ASSERT_LT(short_scratch, cuda::batch_decode_scratch_bytes(cuda::BatchCodec::kLz4, enc.size(), total));
  const struct {
    const char* what;
    const char* path;
    std::size_t scratch;
    const char* walk;
    const char* split_region;
    const char* matches;
    const char* rounds_walk = nullptr;
    const char* rounds_min = nullptr;
  } settings[] = {
      {"the default: segments, the walks and the workers in one kernel, dense blocks to the ring kernel", nullptr, 0,
       nullptr, nullptr, nullptr},
      {"segments for every block, the walks and the workers in one kernel", "segments", 0, nullptr, nullptr, nullptr},
      {"segments for every block, the ready pass", "segments", 0, nullptr, nullptr, "ready"},
      {"segments for every block, the split walk first", "segments", 0, nullptr, "32768", nullptr},
      {"segments for every block, the split walk first, the ready pass", "segments", 0, nullptr, "32768", "ready"},
      {"segments for every block, the split walk's smallest regions (more rounds)", "segments", 0, nullptr, "100",
       nullptr},
      {"segments with the walk kernel, the split walk first", "segments", 0, "table", "32768", nullptr},
      {"segments with the table walk kernel", "segments", 0, "table", nullptr, nullptr},
      {"segments with the table walk kernel, the ready pass", "segments", 0, "table", nullptr, "ready"},
      {"segments with the serial walk", "segments", 0, "serial", nullptr, nullptr},
      {"the ring kernel for every buffer", "ring", 0, nullptr, nullptr, nullptr},
      {"segments, the ready pass, scratch for half the batch (bits, chained, ring)", "segments", half_scratch,
       nullptr, nullptr, "ready"},
      {"segments, the ready pass, scratch for half the batch, the split walk first", "segments", half_scratch,
       nullptr, "32768", "ready"},
      {"segments, short scratch (the ring kernel takes the rest)", "segments", short_scratch, nullptr, nullptr,
       nullptr},
      {"segments, short scratch, the serial walk", "segments", short_scratch, "serial", nullptr, nullptr},
      {"the rounds path (what it declines to the ring kernel)", "rounds", 0, nullptr, nullptr, nullptr},
      {"the rounds path, scratch for its fixed part and little more (the ring kernel takes the rest)", "rounds",
       short_scratch, nullptr, nullptr, nullptr},
      {"the rounds path, the emit from the walks' sequence records", "rounds", 0, nullptr, nullptr, nullptr,
       "records"},
      {"the rounds path, sequence records, scratch for its fixed part and little more", "rounds", short_scratch,
       nullptr, nullptr, nullptr, "records"},
      {"the rounds path, sequence records, buffers below 1 MiB to the ring kernel", "rounds", 0, nullptr, nullptr,
       nullptr, "records", "1048576"}};
  for (const auto& setting : settings) {
    SCOPED_TRACE(setting.what);
    if (setting.path != nullptr) setenv("CUBESTREAM_LZ4_PATH", setting.path, 1);
    if (setting.walk != nullptr) setenv("CUBESTREAM_LZ4_WALK", setting.walk, 1);
    if (setting.split_region != nullptr) setenv("CUBESTREAM_LZ4_SPLIT_REGION", setting.split_region, 1);
    if (setting.matches != nullptr) setenv("CUBESTREAM_LZ4_MATCHES", setting.matches, 1);
    if (setting.rounds_walk != nullptr) setenv("CUBESTREAM_LZ4_ROUNDS_WALK", setting.rounds_walk, 1);
    if (setting.rounds_min != nullptr) setenv("CUBESTREAM_LZ4_ROUNDS_MIN", setting.rounds_min, 1);
    Batch b(enc, sizes, 3, 5);
    b.decode(cuda::BatchCodec::kLz4, setting.scratch);
    unsetenv("CUBESTREAM_LZ4_ROUNDS_MIN");
    unsetenv("CUBESTREAM_LZ4_ROUNDS_WALK");
    unsetenv("CUBESTREAM_LZ4_PATH");
    unsetenv("CUBESTREAM_LZ4_WALK");
    unsetenv("CUBESTREAM_LZ4_SPLIT_REGION");
    unsetenv("CUBESTREAM_LZ4_MATCHES");
    expect_lz4_as_host_logic(b);
  }
}

// The rounds path alone (cuda/decode/lz4_rounds.hpp, its kernel enqueued directly): it takes
// exactly the buffers that its host run (codec/logic/lz4_rounds_host.hpp) takes, decodes them to
// liblz4's bytes with no write past an output, and lists every other buffer for the ring kernel
// without touching its status: valid blocks of every kind (4 MiB climate and quantised fields,
// zeros, incompressible data, whose blocks are larger than their output), a header that
// disagrees with the expected size, and damaged blocks; with the emit walking each region again
// and reading the split walk's sequence records, with the path's regions (4 KiB at least) and
// with regions of 200 bytes at least (more split-walk rounds and declines, and with records more
// walks that stop and move their records).
TEST(GpuBatch, Lz4RoundsTakeWhatTheirHostRunTakes) {
  REQUIRE_GPU();
  for (const std::uint32_t region : {logic::kLz4RoundsRegionMin, 200u})
  for (const bool records : {false, true}) {
  SCOPED_TRACE(std::string(records ? "the emit from sequence records" : "the emit walk") + ", regions of " +
               std::to_string(region) + " bytes at least");
  std::vector<Buf> enc, data = sample_data(60, 8);
  std::vector<std::size_t> sizes;
  data.push_back(climate_bytes(4 << 20));
  data.push_back(quantised_bytes(4 << 20));
  data.push_back(Buf(3 << 20, 0));
  data.push_back(random_bytes(1 << 20));
  for (std::size_t i = 0; i < data.size(); ++i) {
    enc.push_back(numcodecs_lz4(data[i], static_cast<int>(i % 3) * 4));
    sizes.push_back(data[i].size());
  }
  enc.push_back(numcodecs_lz4(data.back(), 0));
  sizes.push_back(data.back().size() + 1);  // the header disagrees
  const Buf src = quantised_bytes(500000);
  add_damaged_lz4(numcodecs_lz4(src, 0), src.size(), 200, 29, &enc, &sizes);
  Batch b(enc, sizes, 3, 5);
  const std::size_t n = enc.size();
  const std::size_t bytes = cuda::detail::lz4_rounds_scratch_bytes(n, b.total_out(), records);
  DevMem scratch(bytes), order(n * sizeof(std::uint32_t));
  std::vector<std::uint32_t> ids(n);
  for (std::size_t i = 0; i < n; ++i) ids[i] = static_cast<std::uint32_t>(i);
  ok(cudaMemcpy(order.p, ids.data(), n * sizeof(std::uint32_t), cudaMemcpyHostToDevice));
  bool fits = false;
  auto rs = cuda::detail::lz4_rounds_scratch(scratch.p, bytes, n, records, &fits);
  ASSERT_TRUE(fits);
  rs.region_min = region;  // (the pool bound holds for any region size: at most 256 regions)
  cuda::detail::lz4_rounds_enqueue(b.b, static_cast<const std::uint32_t*>(order.p), rs, nullptr);
  ok(cudaDeviceSynchronize());
  std::uint32_t listed_n = 0;
  ok(cudaMemcpy(&listed_n, rs.ring_count, sizeof listed_n, cudaMemcpyDeviceToHost));
  ASSERT_LE(listed_n, n);
  std::vector<std::uint32_t> listed(listed_n);
  if (listed_n != 0)
    ok(cudaMemcpy(listed.data(), rs.ring_list, listed_n * sizeof(std::uint32_t), cudaMemcpyDeviceToHost));
  std::vector<int> left(n, 0);
  for (std::uint32_t i : listed) left[i] += 1;
  const auto st = b.statuses();
  std::size_t taken = 0;
  for (std::size_t i = 0; i < n; ++i) {
    bool host_takes = false;
    const Buf& in = enc[i];
    if (in.size() > 4 && (in[0] | (in[1] << 8) | (in[2] << 16) | (static_cast<std::size_t>(in[3]) << 24)) == sizes[i]) {
      Buf out(sizes[i]);
      host_takes = logic::lz4_rounds_decode_host(in.data() + 4, static_cast<std::uint32_t>(in.size() - 4), out.data(),
                                                 static_cast<std::uint32_t>(sizes[i]), region, false, records)
                       .accepted;
    }
    ASSERT_EQ(left[i], host_takes ? 0 : 1) << "buffer " << i;
    if (!host_takes) {
      ASSERT_EQ(static_cast<std::uint32_t>(st[i]), 0xFFFFFFFFu) << "buffer " << i << ": a listed buffer's status";
      continue;
    }
    ++taken;
    ASSERT_EQ(st[i], DecodeStatus::kOk) << "buffer " << i;
    Buf want(sizes[i]);
    ASSERT_EQ(logic::lz4_numcodecs_decode(in.data(), in.size(), want.data(), sizes[i]), DecodeStatus::kOk);
    ASSERT_TRUE(b.output(i) == want) << "buffer " << i;
  }
  EXPECT_GT(taken, region == logic::kLz4RoundsRegionMin ? 30u : 5u);
  }
}

// The rounds path's pool bound (host arithmetic): for any mix of decoded sizes, the pool that
// lz4_rounds_scratch_bytes sizes from their total holds every buffer's layout, whatever its
// compressed size (up to its decoded size, the most the path takes) and so its regions.
TEST(GpuBatch, Lz4RoundsPoolHoldsEveryLayout) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 2000; ++trial) {
    const std::size_t n = 1 + rng() % 40;
    const bool records = trial % 2 == 1;  // the slots of sequence records (16 bytes, not 12)
    std::uint64_t total = 0, need = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t size = trial % 3 == 0 ? rng() % 64 : trial % 3 == 1 ? rng() % 100000 : rng() % (8u << 20);
      const std::uint64_t in = size == 0 ? 1 : 1 + rng() % size;
      total += size;
      const logic::Lz4RoundsLayout l =
          logic::lz4_rounds_layout(logic::lz4_split_shape(static_cast<std::uint32_t>(in), 1 + rng() % 8192), size, records);
      ASSERT_LE(l.bytes, logic::lz4_rounds_bytes_bound(size, records)) << trial;
      need += l.bytes;
    }
    ASSERT_LE(need, logic::lz4_rounds_pool_bound(n, total, records)) << trial;
  }
}

// The carving of the segmented path's scratch (host arithmetic, no GPU needed): a scratch of
// lz4_segment_scratch_bytes(n, total, true) bytes gets bits for at least `total` decoded bytes
// (a bit each, a word more per buffer) and as many slots as the same size without bits; a
// smaller one fewer bits, and without the ready pass none at all.
TEST(GpuBatch, Lz4SegmentScratchCarvesBitsForTheTotalItWasSizedFor) {
  for (const std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{256}, std::size_t{1024}}) {
    for (const std::size_t total : {std::size_t{0}, std::size_t{1000}, std::size_t{1} << 20, std::size_t{1} << 30}) {
      const std::size_t with = cuda::detail::lz4_segment_scratch_bytes(n, total, true);
      const std::size_t without = cuda::detail::lz4_segment_scratch_bytes(n, total, false);
      ASSERT_GE(with, without + (total / 32 + n) * 4);
      bool carved = false;
      const auto s = cuda::detail::lz4_segment_scratch(reinterpret_cast<void*>(std::uintptr_t{1} << 40), with, n, true,
                                                       &carved);
      ASSERT_TRUE(carved);
      EXPECT_TRUE(s.ready_first);
      EXPECT_GE(s.bits_words, total / 32 + n) << n << " " << total;
      const auto plain = cuda::detail::lz4_segment_scratch(reinterpret_cast<void*>(std::uintptr_t{1} << 40), without, n,
                                                           false, &carved);
      ASSERT_TRUE(carved);
      EXPECT_FALSE(plain.ready_first);
      EXPECT_EQ(plain.bits_words, 0u);
      EXPECT_EQ(plain.bits, nullptr);
      EXPECT_GE(s.capacity, plain.capacity) << n << " " << total;
      // the slots start past the bits, inside the scratch
      EXPECT_GE(reinterpret_cast<std::uintptr_t>(s.queue),
                reinterpret_cast<std::uintptr_t>(s.bits) + s.bits_words * sizeof(std::uint32_t));
      EXPECT_LE(reinterpret_cast<std::uintptr_t>(s.flags + s.capacity), (std::uintptr_t{1} << 40) + with);
      if (total != 0) {
        const auto half = cuda::detail::lz4_segment_scratch(reinterpret_cast<void*>(std::uintptr_t{1} << 40),
                                                            cuda::detail::lz4_segment_scratch_bytes(n, total / 2, true),
                                                            n, true, &carved);
        EXPECT_LE(half.bits_words, s.bits_words);
        if (total >= (std::size_t{1} << 20)) EXPECT_LT(half.bits_words, s.bits_words);  // (small ones round up alike)
      }
    }
  }
}

// The segmented path run by hand (lz4_segments_enqueue on its own scratch, carved here), so that
// a test can set the scratch's fields and read them back: an identity walk order, every buffer
// on this path (take_dense: these tests run no ring kernel after it).
struct HandRunLz4Segments {
  std::size_t bytes;
  DevMem scratch, order;
  cuda::detail::Lz4SegmentScratch s{};
  bool carved = false;
  HandRunLz4Segments(std::size_t n, std::size_t total, bool ready_pass)
      : bytes(cuda::detail::lz4_segment_scratch_bytes(n, total, ready_pass)),
        scratch(bytes),
        order(n * sizeof(std::uint32_t)) {
    std::vector<std::uint32_t> identity(n);
    for (std::size_t i = 0; i < n; ++i) identity[i] = static_cast<std::uint32_t>(i);
    ok(cudaMemcpy(order.p, identity.data(), n * sizeof(std::uint32_t), cudaMemcpyHostToDevice));
    s = cuda::detail::lz4_segment_scratch(scratch.p, bytes, n, ready_pass, &carved);
    s.take_dense = true;
  }
  void run(const Batch& b) {
    cuda::detail::lz4_segments_enqueue(b.b, static_cast<const std::uint32_t*>(order.p), s,
                                       cuda::detail::Lz4WalkMode::kFused, nullptr);
    ok(cudaDeviceSynchronize());
  }
};

// The ready pass ran: every buffer the segments took got its pending bits
// (Lz4SegmentScratch::bits_base), and after the call no bit is left set, i.e. every match was
// copied and cleared its bits, in the ready pass or the chained one (a match that skipped its
// clear would show). Climate fields, zeros (one long match after another) and short periods
// (matches reading matches), with the table walk and the split walk.
TEST(GpuBatch, Lz4ReadyPassClearsEveryPendingBit) {
  REQUIRE_GPU();
  std::vector<Buf> enc;
  std::vector<std::size_t> sizes;
  std::mt19937 rng(91);
  for (int i = 0; i < 40; ++i) {
    const std::size_t n = 50000 + rng() % 2000000;
    const Buf data = i % 5 == 4 ? lz4_periodic_bytes(n, 1 + rng() % 40, rng) : i % 5 == 3 ? Buf(n, 0) : climate_bytes(n);
    enc.push_back(numcodecs_lz4(data, (i % 3) * 4));
    sizes.push_back(data.size());
  }
  const std::size_t n = enc.size();
  std::size_t total = 0;
  for (std::size_t x : sizes) total += x;
  for (const std::uint32_t region : {0u, logic::kLz4SplitRegionDefault}) {
    SCOPED_TRACE(region == 0 ? "the table walk" : "the split walk");
    Batch b(enc, sizes, 1, 2);
    HandRunLz4Segments run(n, total, true);
    cuda::detail::Lz4SegmentScratch& s = run.s;
    ASSERT_TRUE(run.carved);
    ASSERT_TRUE(s.ready_first);
    ASSERT_GE(s.bits_words, total / 32 + n);
    s.split_region = region;
    // set, so that a bit the pass never clears stays set whoever zeroes it (the enqueue must)
    ok(cudaMemset(s.bits, 0xFF, s.bits_words * sizeof(std::uint32_t)));
    run.run(b);
    std::uint32_t ring = 0;
    ok(cudaMemcpy(&ring, s.ring_count, sizeof ring, cudaMemcpyDeviceToHost));
    ASSERT_EQ(ring, 0u);
    std::vector<unsigned long long> base(n);
    ok(cudaMemcpy(base.data(), s.bits_base, n * sizeof base[0], cudaMemcpyDeviceToHost));
    for (std::size_t i = 0; i < n; ++i) EXPECT_NE(base[i], cuda::detail::kLz4NoBits) << "buffer " << i;
    std::vector<std::uint32_t> bits(s.bits_words);
    ok(cudaMemcpy(bits.data(), s.bits, bits.size() * sizeof bits[0], cudaMemcpyDeviceToHost));
    std::size_t set = 0;
    for (std::uint32_t w : bits) set += w != 0;
    EXPECT_EQ(set, 0u);
    expect_lz4_as_host_logic(b);
  }
}

// Data that drives every path of the device's LZ4 block decoder (cuda/decode/warp_ring_lz4.cuh):
// matches within its 4 KiB shared-memory ring (offsets 1-31, 32-2048, overlapping or not),
// far matches (offsets 2049-65535, overlapping ones longer than their offset), literal runs
// longer than half the ring, and matches longer than the ring.
// The split walk on the GPU takes exactly the buffers the host logic takes, with the same
// number of segments (the walk stores that count per buffer: Lz4SegmentScratch::paced, 0 where
// the table walk took the buffer), and the decode gives the host logic's statuses and bytes:
// climate fields of 100 KB-2 MB in regions of 4 KiB (up to 256 a buffer: several rounds; some
// declined when the rounds run out), random bytes (larger than their output: left to the table
// walk) and damaged buffers (declined).
// Without this count a split walk that declined everything would pass the tests above.
TEST(GpuBatch, Lz4SplitWalkTakesWhatTheHostLogicTakes) {
  REQUIRE_GPU();
  std::vector<Buf> enc;
  std::vector<std::size_t> sizes;
  std::mt19937 rng(77);
  for (int i = 0; i < 48; ++i) {
    const std::size_t n = 100000 + rng() % 1900000;
    const Buf data = i % 8 == 7 ? random_bytes(n) : climate_bytes(n);
    enc.push_back(numcodecs_lz4(data, (i % 3) * 4));
    sizes.push_back(data.size());
  }
  const Buf src = climate_bytes(300000);
  add_damaged_lz4(numcodecs_lz4(src, 0), src.size(), 60, 31, &enc, &sizes);
  const std::size_t n = enc.size();
  std::size_t total = 0;
  for (std::size_t x : sizes) total += x;
  Batch b(enc, sizes, 3, 5);
  HandRunLz4Segments run(n, total, false);
  cuda::detail::Lz4SegmentScratch& s = run.s;
  ASSERT_TRUE(run.carved);
  ASSERT_FALSE(s.ready_first);
  const std::uint32_t region = logic::kLz4SplitRegionFloor;
  s.split_region = region;
  ok(cudaMemset(s.paced, 0xFF, n * sizeof(std::uint32_t)));
  run.run(b);
  std::uint32_t ring = 0;
  ok(cudaMemcpy(&ring, s.ring_count, sizeof ring, cudaMemcpyDeviceToHost));
  ASSERT_EQ(ring, 0u);
  std::vector<std::uint32_t> paced(n);
  ok(cudaMemcpy(paced.data(), s.paced, n * sizeof(std::uint32_t), cudaMemcpyDeviceToHost));
  std::size_t taken = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const Buf& in = enc[i];
    if (in.size() < 4 || (static_cast<std::size_t>(in[0]) | (static_cast<std::size_t>(in[1]) << 8) |
                          (static_cast<std::size_t>(in[2]) << 16) | (static_cast<std::size_t>(in[3]) << 24)) != sizes[i])
      continue;  // refused by the header check before any walk
    const auto in_n = static_cast<std::uint32_t>(in.size() - 4), out_n = static_cast<std::uint32_t>(sizes[i]);
    std::uint32_t count = 0, rounds = 0;
    const std::size_t bound = logic::lz4_segment_bound(in_n, out_n) + logic::lz4_split_extra_slots(in_n, region);
    const bool accepted = logic::lz4_split_walk_host(in.data() + 4, in_n, out_n, region, bound,
                                                     [](std::uint32_t, std::uint32_t, std::uint32_t) {}, &count, &rounds);
    EXPECT_EQ(paced[i], accepted ? count : 0u) << "buffer " << i;
    taken += accepted;
  }
  // the host logic takes 28 of the 37 buffers it tries (it declines 9 climate fields that LZ4
  // barely compresses when the rounds run out, and leaves the random ones alone)
  EXPECT_GE(taken, 20u);
  expect_lz4_as_host_logic(b);
}

Buf ring_paths_data(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  Buf b;
  b.reserve(n + 70000);
  while (b.size() < n) {
    const unsigned kind = rng() % 6;
    if (kind == 0 || b.size() < 16) {  // literals, sometimes a long run
      const std::size_t len = rng() % 4 == 0 ? 2000 + rng() % 6000 : 1 + rng() % 40;
      for (std::size_t k = 0; k < len; ++k) b.push_back(static_cast<std::uint8_t>(rng()));
    } else {
      static const std::size_t offsets[] = {1, 2, 3, 7, 31, 32, 33, 100, 1440, 2047, 2048, 2049, 3001, 4096, 4994, 40000};
      std::size_t off = offsets[rng() % std::size(offsets)];
      if (off > b.size()) off = b.size();
      const std::size_t len = kind == 5 ? 3000 + rng() % 20000 : 4 + rng() % 300;
      for (std::size_t k = 0; k < len; ++k) b.push_back(b[b.size() - off]);
    }
  }
  b.resize(n);
  return b;
}

TEST(GpuBatch, RingDecoderPathsMatchTheCpu) {
  REQUIRE_GPU();
  // numcodecs lz4 (one block per buffer) and the Zarr writer's blosc (256 KiB blocks, one
  // stream each, byte shuffle) with lz4 and with lz4hc (which finds the far matches and the
  // long ones that lz4 skips: the fast path's ring reads up to 4 KiB back, its reads of
  // flushed output and its one-byte length extensions): the same data through each
  // container, at odd input offsets
  auto writer = make_b2b("blosc", nlohmann::json{{"cname", "lz4"}, {"clevel", 5}, {"shuffle", 1}, {"typesize", 4}});
  auto writer_hc = make_b2b("blosc", nlohmann::json{{"cname", "lz4hc"}, {"clevel", 9}, {"shuffle", 1}, {"typesize", 4}});
  std::vector<Buf> data;
  for (std::uint32_t i = 0; i < 24; ++i) {
    const std::size_t n = i % 3 == 0 ? 1000003 : i % 3 == 1 ? 262144 + 13 * i : 5000 + 777 * i;
    data.push_back(i % 4 == 3 ? quantised_bytes(n) : ring_paths_data(n, 100 + i));
    data.back().resize(n);
  }
  for (int codec = 0; codec < 3; ++codec) {
    std::vector<Buf> enc;
    std::vector<std::size_t> sizes;
    for (const Buf& d : data) {
      if (codec == 0) {
        enc.push_back(numcodecs_lz4(d, 0));
      } else {
        const auto e = (codec == 1 ? writer : writer_hc)->encode(cubestream::ByteView(d.data(), d.size()));
        enc.emplace_back(e.begin(), e.end());
      }
      sizes.push_back(d.size());
    }
    for (std::size_t skew : {std::size_t{0}, std::size_t{5}}) {
      Batch b(enc, sizes, skew);
      b.decode(codec == 0 ? cuda::BatchCodec::kLz4 : cuda::BatchCodec::kBlosc);
      const auto st = b.statuses();
      for (std::size_t i = 0; i < data.size(); ++i) {
        ASSERT_EQ(st[i], DecodeStatus::kOk) << "codec " << codec << " buffer " << i << ": " << logic::decode_status_name(st[i]);
        ASSERT_TRUE(b.output(i) == data[i]) << "codec " << codec << " buffer " << i;
      }
    }
  }
}

// numcodecs lz4 through the kernel's 64 KiB ring (codec/logic/lz4_ring.hpp): matches at offsets
// up to 65000 (batch admission near the ring's size), runs far longer than a batch (the lone
// path, flushes in the middle of a match), every short period, at odd input and output offsets.
TEST(GpuBatch, Lz4RingLongRunsAndFarMatchesMatchTheCpu) {
  REQUIRE_GPU();
  std::mt19937 rng(9);
  std::vector<Buf> data;
  for (std::size_t period : {1u, 3u, 7u, 31u, 33u, 100u, 4000u, 40000u, 65000u}) {
    data.push_back(lz4_periodic_bytes(300000 + 1000 * period % 7777, period, rng));
  }
  data.push_back(Buf(2000000, 0));
  data.push_back(Buf(1, 42));
  std::vector<Buf> enc;
  std::vector<std::size_t> sizes;
  for (std::size_t i = 0; i < data.size(); ++i) {
    enc.push_back(numcodecs_lz4(data[i], i % 2 == 0 ? 0 : 9));
    sizes.push_back(data[i].size());
  }
  for (std::size_t skew : {std::size_t{0}, std::size_t{7}}) {
    Batch b(enc, sizes, skew, skew);
    b.decode(cuda::BatchCodec::kLz4);
    const auto st = b.statuses();
    for (std::size_t i = 0; i < data.size(); ++i) {
      ASSERT_EQ(st[i], DecodeStatus::kOk) << "buffer " << i << ": " << logic::decode_status_name(st[i]);
      ASSERT_TRUE(b.output(i) == data[i]) << "buffer " << i << " skew " << skew;
    }
  }
}

// Crafted numcodecs lz4 buffers with matches of up to 3 MiB at offsets near 64 KiB (lone
// sequences whose pieces are staged through the lanes' registers: load, __syncwarp, store;
// codec/logic/lz4_ring.hpp, lz4_ring_match_piece), beside offsets whose direct pieces are wide,
// and one block with every offset 1..65535; against liblz4, at odd input and output offsets.
// Before staging, the 3 MiB match at offset 65535 took 3 Mi warp phases.
TEST(GpuBatch, Lz4RingStagedFarMatchesMatchLiblz4) {
  REQUIRE_GPU();
  std::vector<Buf> blocks;
  std::vector<std::size_t> sizes;
  for (std::size_t off : {65535u, 65534u, 65519u, 65025u, 65024u, 40000u, 32769u, 1000u, 33u, 1u}) {
    for (std::size_t mlen : {16u, 513u, 70001u, 3u * 1024 * 1024 + 7}) {
      blocks.push_back(lz4_far_match_block(off, mlen, off + 3, 5, static_cast<std::uint32_t>(off + mlen)));
      sizes.push_back(off + 3 + mlen + 5);
    }
  }
  {
    std::size_t size = 0;
    blocks.push_back(lz4_every_offset_block(size));
    sizes.push_back(size);
  }
  std::vector<Buf> enc, want;
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    Buf e(4);
    put_le32(e.data(), static_cast<std::uint32_t>(sizes[i]));
    e.insert(e.end(), blocks[i].begin(), blocks[i].end());
    enc.push_back(std::move(e));
    Buf ref(sizes[i]);
    ASSERT_EQ(LZ4_decompress_safe(reinterpret_cast<const char*>(blocks[i].data()), reinterpret_cast<char*>(ref.data()),
                                  static_cast<int>(blocks[i].size()), static_cast<int>(sizes[i])),
              static_cast<int>(sizes[i]))
        << "block " << i;
    want.push_back(std::move(ref));
  }
  for (std::size_t skew : {std::size_t{0}, std::size_t{5}}) {
    Batch b(enc, sizes, skew, skew);
    b.decode(cuda::BatchCodec::kLz4);
    const auto st = b.statuses();
    for (std::size_t i = 0; i < enc.size(); ++i) {
      ASSERT_EQ(st[i], DecodeStatus::kOk) << "buffer " << i << ": " << logic::decode_status_name(st[i]);
      ASSERT_TRUE(b.output(i) == want[i]) << "buffer " << i << " skew " << skew;
    }
  }
}

std::vector<BloscEncodeOptions> blosc_layouts() {
  std::vector<BloscEncodeOptions> v;
  for (int shuffle = 0; shuffle <= 2; ++shuffle)
    for (std::size_t ts : {1, 2, 4, 8, 3})
      for (std::size_t bs : {std::size_t{256}, std::size_t{8192}, std::size_t{131072}})
        for (bool split : {true, false})
          for (int level : {-1, 9}) {
            BloscEncodeOptions o;
            o.shuffle = shuffle;
            o.typesize = ts;
            o.blocksize = bs;
            o.split = split;
            o.level = level;
            v.push_back(o);
          }
  BloscEncodeOptions m;
  m.memcpyed = true;
  v.push_back(m);
  return v;
}

TEST(GpuBatch, BloscEveryLayoutMatchesTheCpu) {
  REQUIRE_GPU();
  auto cpu = make_b2b("blosc");
  const auto layouts = blosc_layouts();
  std::vector<Buf> data, enc;
  std::vector<std::size_t> sizes;
  std::mt19937 rng(11);
  for (std::size_t i = 0; i < layouts.size() * 2; ++i) {
    const std::size_t n = i % 2 ? 300007 : 70000 + rng() % 5000;  // leftover blocks, odd tails
    data.push_back(kDataKinds[i % std::size(kDataKinds)].make(n));
    data.back().resize(n);  // the float kinds round up to whole floats: keep the odd size
    enc.push_back(blosc_test_encode(data.back(), layouts[i / 2]));
    sizes.push_back(n);
    ASSERT_EQ(decode(*cpu, enc.back(), n), data.back()) << "the test encoder disagrees with the CPU codec";
  }
  Batch b(enc, sizes, 1);
  b.decode(cuda::BatchCodec::kBlosc);
  const auto st = b.statuses();
  for (std::size_t i = 0; i < enc.size(); ++i) {
    ASSERT_EQ(st[i], DecodeStatus::kOk) << "buffer " << i << ": " << logic::decode_status_name(st[i]);
    ASSERT_TRUE(b.output(i) == data[i]) << "buffer " << i;
  }
}

// Every buffer of a decoded blosc batch either fails on the GPU and in the host logic
// (blosc_decode_serial) or decodes to the host logic's bytes. Units fail independently on the
// GPU, so a buffer with several bad streams may report another failure than the first one the
// serial decode meets: ok-ness must agree, not the status. *decoded counts the good buffers.
void expect_blosc_as_host_logic(const Batch& b, int* decoded = nullptr) {
  const auto st = b.statuses();
  for (std::size_t i = 0; i < b.inputs.size(); ++i) {
    const std::size_t n = b.out_sizes[i];
    Buf host(n), stage(n);
    const DecodeStatus want = logic::blosc_decode_serial(b.inputs[i].data(), b.inputs[i].size(), host.data(), n, stage.data());
    ASSERT_EQ(st[i] == DecodeStatus::kOk, want == DecodeStatus::kOk) << "buffer " << i;
    if (want == DecodeStatus::kOk) {
      ASSERT_TRUE(b.output(i) == host) << "buffer " << i;
      if (decoded) ++*decoded;
    }
  }
}

TEST(GpuBatch, BloscDamagedBuffersMatchTheHostLogic) {
  REQUIRE_GPU();
  BloscEncodeOptions o;
  o.blocksize = 4096;
  const Buf src = quantised_bytes(50000);
  const Buf good = blosc_test_encode(src, o);
  std::mt19937 rng(17);
  std::vector<Buf> enc;
  std::vector<std::size_t> sizes;
  for (int t = 0; t < 400; ++t) {
    Buf bad = good;
    if (t % 4 == 0) {
      bad.resize(rng() % good.size());
    } else {
      for (int f = 0; f < 1 + t % 3; ++f) bad[rng() % bad.size()] = static_cast<std::uint8_t>(rng());
    }
    enc.push_back(bad);
    sizes.push_back(src.size());
  }
  Batch b(enc, sizes);
  b.decode(cuda::BatchCodec::kBlosc);
  expect_blosc_as_host_logic(b);
}

// Damage in the writer's layout (256 KiB blocks, one LZ4 stream each, lz4hc), where most
// sequences take the unit kernel's fast path: every mutation either fails on both sides or
// decodes to the same bytes as the host logic.
TEST(GpuBatch, BloscWriterStreamsDamagedMatchTheHostLogic) {
  REQUIRE_GPU();
  auto writer_hc = make_b2b("blosc", nlohmann::json{{"cname", "lz4hc"}, {"clevel", 9}, {"shuffle", 1}, {"typesize", 4}});
  const Buf src = ring_paths_data(600000, 7);
  const auto e = writer_hc->encode(cubestream::ByteView(src.data(), src.size()));
  const Buf good(e.begin(), e.end());
  std::mt19937 rng(23);
  std::vector<Buf> enc;
  std::vector<std::size_t> sizes;
  for (int t = 0; t < 200; ++t) {
    Buf bad = good;
    if (t % 5 == 0) {
      bad.resize(16 + rng() % (good.size() - 16));
    } else {
      // past blosc's 16-byte header and block offsets: damage the LZ4 streams themselves
      for (int f = 0; f < 1 + t % 4; ++f) bad[64 + rng() % (bad.size() - 64)] = static_cast<std::uint8_t>(rng());
    }
    enc.push_back(bad);
    sizes.push_back(src.size());
  }
  enc.push_back(good);
  sizes.push_back(src.size());
  Batch b(enc, sizes, 3);
  b.decode(cuda::BatchCodec::kBlosc);
  int ok = 0;
  expect_blosc_as_host_logic(b, &ok);
  if (HasFatalFailure()) return;
  EXPECT_EQ(b.statuses().back(), DecodeStatus::kOk);
  EXPECT_TRUE(b.output(enc.size() - 1) == src);
  EXPECT_GT(ok, 1);  // some mutations only change literal bytes: those must decode the same way
}

TEST(GpuBatch, FallbackDecodesWhatTheGpuLeaves) {
  REQUIRE_GPU();
  // blosc with zstd streams (left to the CPU) beside blosc-lz4 (GPU) in one batch
  std::vector<Buf> data, enc;
  for (int i = 0; i < 8; ++i) {
    BloscEncodeOptions o;
    o.compressor = i % 2 ? 4 : 1;
    o.level = i % 2 ? 3 : -1;
    data.push_back(climate_bytes(100000 + 16 * i));
    enc.push_back(blosc_test_encode(data.back(), o));
  }
  DevMem in(8 << 20), out(8 << 20);
  std::vector<cuda::DeviceBuffer> bufs;
  std::size_t ia = 0, oa = 0;
  for (std::size_t i = 0; i < enc.size(); ++i) {
    ok(cudaMemcpy(in.u8() + ia, enc[i].data(), enc[i].size(), cudaMemcpyHostToDevice));
    bufs.push_back({in.u8() + ia, enc[i].size(), out.u8() + oa, data[i].size()});
    ia += enc[i].size();
    oa += data[i].size();
  }
  cuda::decode_batch_with_fallback(cuda::BatchCodec::kBlosc, bufs, R"({"id": "blosc"})", nullptr);
  for (std::size_t i = 0; i < enc.size(); ++i) {
    Buf got(data[i].size());
    ok(cudaMemcpy(got.data(), bufs[i].dst, got.size(), cudaMemcpyDeviceToHost));
    ASSERT_TRUE(got == data[i]) << "buffer " << i;
  }
  // plain zstd: all through the fallback until the GPU Zstandard decoder is connected
  const Buf z = climate_bytes(50000);
  Buf zc(ZSTD_compressBound(z.size()));
  zc.resize(ZSTD_compress(zc.data(), zc.size(), z.data(), z.size(), 3));
  ok(cudaMemcpy(in.p, zc.data(), zc.size(), cudaMemcpyHostToDevice));
  cuda::decode_batch_with_fallback(cuda::BatchCodec::kZstd, {{in.u8(), zc.size(), out.u8(), z.size()}},
                                   R"({"id": "zstd"})", nullptr);
  Buf got(z.size());
  ok(cudaMemcpy(got.data(), out.p, got.size(), cudaMemcpyDeviceToHost));
  EXPECT_TRUE(got == z);
  // a corrupt buffer is an error that names it
  Buf bad = enc[0];
  bad.resize(bad.size() / 2);
  put_le32(bad.data() + 12, static_cast<std::uint32_t>(bad.size()));
  ok(cudaMemcpy(in.p, bad.data(), bad.size(), cudaMemcpyHostToDevice));
  const std::string msg = expect_error(ErrorCode::kCorruptData, [&] {
    cuda::decode_batch_with_fallback(cuda::BatchCodec::kBlosc, {{in.u8(), bad.size(), out.u8(), data[0].size()}},
                                     R"({"id": "blosc"})", nullptr);
  });
  EXPECT_NE(msg.find("buffer 0"), std::string::npos) << msg;
}

TEST(GpuBatch, ShortScratchIsRefused) {
  REQUIRE_GPU();
  Batch b({Buf(40, 0)}, {100});
  expect_error(ErrorCode::kInvalidArgument, [&] { cuda::batch_decode(cuda::BatchCodec::kBlosc, b.b, nullptr, 0, nullptr); });
  expect_error(ErrorCode::kInvalidArgument, [&] { cuda::batch_decode(cuda::BatchCodec::kLz4, b.b, nullptr, 0, nullptr); });
  // an empty batch needs nothing and enqueues nothing
  cuda::DeviceBatch empty;
  cuda::batch_decode(cuda::BatchCodec::kBlosc, empty, nullptr, 0, nullptr);
}

// ---- filters ----------------------------------------------------------------------------------

// Runs `run` on a batch of `inputs` with outputs of `out_sizes` and compares with the CPU codec.
template <class Run>
void expect_filter_matches_cpu(const nlohmann::json& cfg, const std::vector<Buf>& inputs,
                               const std::vector<std::size_t>& out_sizes, Run run) {
  auto cpu = make_b2b(cfg["id"].get<std::string>(), cfg);
  Batch b(inputs, out_sizes);
  run(b.b);
  ok(cudaDeviceSynchronize());
  const auto st = b.statuses();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    ASSERT_EQ(st[i], DecodeStatus::kOk) << cfg.dump() << " buffer " << i;
    ASSERT_TRUE(b.output(i) == decode(*cpu, inputs[i], out_sizes[i])) << cfg.dump() << " buffer " << i;
  }
}

TEST(GpuBatch, ShuffleMatchesTheCpu) {
  REQUIRE_GPU();
  for (std::size_t es : {1, 2, 3, 4, 8, 16}) {
    std::vector<Buf> in;
    std::vector<std::size_t> sz;
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{1000}, std::size_t{250000}}) {
      in.push_back(random_bytes(n * es, static_cast<std::uint32_t>(n + es)));
      sz.push_back(n * es);
    }
    expect_filter_matches_cpu({{"id", "shuffle"}, {"elementsize", es}}, in, sz,
                              [&](const cuda::DeviceBatch& b) { cuda::batch_unshuffle(b, es, nullptr); });
  }
}

TEST(GpuBatch, DeltaMatchesTheCpu) {
  REQUIRE_GPU();
  const std::vector<std::pair<std::string, std::string>> types = {
      {"<i4", "<i4"}, {"<i2", "|i1"}, {">u8", "<i2"}, {"<f4", "<f8"}, {"<f2", "<f2"}, {"<i4", "<f4"}, {"|b1", "|b1"},
      {"<u8", "<i8"}};
  for (const auto& [dtype, astype] : types) {
    const nlohmann::json cfg = {{"id", "delta"}, {"dtype", dtype}, {"astype", astype}};
    const auto p = cubestream::codec::delta_params(cfg);
    std::vector<Buf> in;
    std::vector<std::size_t> sz;
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2047}, std::size_t{2048}, std::size_t{100001}}) {
      in.push_back(random_bytes(n * p.astype.size, static_cast<std::uint32_t>(n)));
      sz.push_back(n * p.dtype.size);
    }
    expect_filter_matches_cpu(cfg, in, sz,
                              [&](const cuda::DeviceBatch& b) { cuda::batch_delta(b, p.dtype, p.astype, nullptr); });
  }
}

TEST(GpuBatch, FixedScaleOffsetMatchesTheCpu) {
  REQUIRE_GPU();
  const std::vector<nlohmann::json> cfgs = {
      {{"id", "fixedscaleoffset"}, {"scale", 10}, {"offset", 1000}, {"dtype", "<f8"}, {"astype", "|u1"}},
      {{"id", "fixedscaleoffset"}, {"scale", 0.01}, {"offset", -5.5}, {"dtype", ">f4"}, {"astype", ">i2"}},
      {{"id", "fixedscaleoffset"}, {"scale", 3}, {"offset", 7}, {"dtype", "<i4"}, {"astype", "<f4"}},
      {{"id", "fixedscaleoffset"}, {"scale", 10}, {"offset", 1000}, {"dtype", "<f8"}, {"astype", "<f2"}}};
  for (const auto& cfg : cfgs) {
    const auto p = cubestream::codec::fixedscaleoffset_params(cfg);
    std::vector<Buf> in;
    std::vector<std::size_t> sz;
    for (std::size_t n : {std::size_t{0}, std::size_t{7}, std::size_t{123457}}) {
      in.push_back(random_bytes(n * p.astype.size, static_cast<std::uint32_t>(n + 1)));
      sz.push_back(n * p.dtype.size);
    }
    expect_filter_matches_cpu(cfg, in, sz,
                              [&](const cuda::DeviceBatch& b) { cuda::batch_fixedscaleoffset(b, p, nullptr); });
  }
}

TEST(GpuBatch, ByteSwapAndTransposeMatchTheHost) {
  REQUIRE_GPU();
  for (std::size_t unit : {1, 2, 4, 8, 3}) {
    const Buf in = random_bytes(unit * 5001, static_cast<std::uint32_t>(unit));
    Batch b({in}, {in.size()});
    cuda::batch_byteswap(b.b, unit, nullptr);
    ok(cudaDeviceSynchronize());
    ASSERT_EQ(b.statuses()[0], DecodeStatus::kOk);
    Buf want = in;
    cubestream::byte_swap_inplace(want.data(), want.size(), unit);
    ASSERT_TRUE(b.output(0) == want) << "unit " << unit;
  }
  std::mt19937 rng(3);
  for (int rank = 1; rank <= 8; ++rank) {
    for (std::size_t es : {1, 2, 4, 8, 12}) {
      std::vector<std::int64_t> enc_shape(rank);
      std::int64_t n = 1;
      for (auto& s : enc_shape) {
        s = 1 + static_cast<std::int64_t>(rng() % (rank <= 3 ? 40 : 4));
        n *= s;
      }
      std::vector<int> order(rank);
      for (int i = 0; i < rank; ++i) order[i] = i;
      std::shuffle(order.begin(), order.end(), rng);
      const Buf in = random_bytes(static_cast<std::size_t>(n) * es, static_cast<std::uint32_t>(rank * 100 + es));
      Buf want(in.size());
      cubestream::permute_axes(in.data(), enc_shape, order, want.data(), es);
      Batch b({in, in}, {in.size(), in.size()});
      cuda::batch_transpose(b.b, enc_shape, order, es, nullptr);
      ok(cudaDeviceSynchronize());
      for (int i = 0; i < 2; ++i) {
        ASSERT_EQ(b.statuses()[i], DecodeStatus::kOk);
        ASSERT_TRUE(b.output(i) == want) << "rank " << rank << " element size " << es;
      }
    }
  }
}

TEST(GpuBatch, FilterSizeMismatchesGetStatuses) {
  REQUIRE_GPU();
  Batch b({Buf(10, 1), Buf(12, 2), Buf(12, 3)}, {10, 12, 11});
  cuda::batch_unshuffle(b.b, 4, nullptr);
  ok(cudaDeviceSynchronize());
  const auto st = b.statuses();
  EXPECT_EQ(st[0], DecodeStatus::kCorrupt);    // 10 bytes are not whole 4-byte elements
  EXPECT_EQ(st[1], DecodeStatus::kOk);
  EXPECT_EQ(st[2], DecodeStatus::kWrongSize);  // 12 bytes cannot fill 11
  b.output(2);                                 // guard intact
}

#endif  // CUBESTREAM_WITH_CUDA

}  // namespace
}  // namespace cs_codec_test
