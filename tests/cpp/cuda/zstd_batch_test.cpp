// The batched GPU Zstandard decoder (src/cuda/zstd). With a GPU: a mixed batch (levels,
// sizes, checksums, several and skippable frames, no content size) must decode to libzstd's
// bytes, and damaged, wrongly sized and dictionary frames must get the same per-buffer status
// as the shared decoder run on the host, while the buffers around them decode right; with
// version 2's scratch, version 1's, and version 1 alone; with pass 3 on several warps per
// buffer (the default, 1-32 warps) and on one (CUBESTREAM_ZSTD_EXEC=warp). Without
// a visible GPU these tests skip; a build without CUDA checks that the API says so.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "codec/codec_test_util.hpp"
#include "codec/logic/zstd/decoder.hpp"
#include "codec/zstd_test_data.hpp"
#include "cubestream/error.hpp"
#include "cuda/zstd/zstd_batch.hpp"

#ifdef CUBESTREAM_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace {

using cubestream::codec::logic::DecodeStatus;
using cubestream::codec::logic::decode_status_name;
using namespace cs_zstd_test;
namespace zl = cubestream::codec::logic::zstd;

#ifndef CUBESTREAM_WITH_CUDA

TEST(ZstdBatch, BuiltWithoutCudaSaysSo) {
  try {
    cubestream::cuda::zstd_batch_decode(nullptr, nullptr, nullptr, nullptr, nullptr, 1, nullptr, 0, false, nullptr);
    FAIL() << "expected an error";
  } catch (const cubestream::Error& e) {
    EXPECT_EQ(e.code(), cubestream::ErrorCode::kUnsupported);
  }
}

#else

bool gpu_visible() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    cudaGetLastError();
    return false;
  }
  return true;
}

#define CHECK_CUDA(x) ASSERT_EQ((x), cudaSuccess) << #x

struct Case {
  std::string name;
  Bytes enc;
  std::size_t out_size;
  Bytes want;  // expected bytes when the host decoder says ok
};

// The shared decoder on the host: the oracle for statuses.
DecodeStatus host_decode(const Bytes& enc, std::size_t size, bool verify, Bytes* out) {
  static std::unique_ptr<zl::ZstdWorkspace> ws(new zl::ZstdWorkspace);
  out->assign(size + 1, 0);
  const DecodeStatus s = zl::zstd_decompress(zl::SerialTeam{}, enc.data(), enc.size(), out->data(), size, ws.get(), verify);
  out->resize(size);
  return s;
}
DecodeStatus host_status(const Bytes& enc, std::size_t size, bool verify) {
  Bytes out;
  return host_decode(enc, size, verify, &out);
}

std::size_t total_out(const std::vector<Case>& cases) {
  std::size_t t = 0;
  for (const auto& c : cases) t += c.out_size;
  return t;
}

std::vector<Case> mixed_batch() {
  std::vector<Case> cs;
  const auto add = [&](std::string name, Bytes enc, Bytes want) {
    const std::size_t n = want.size();
    cs.push_back({std::move(name), std::move(enc), n, std::move(want)});
  };
  int seed = 1;
  for (int level : {-5, -1, 1, 2, 3, 4, 5, 9, 15, 19, 22}) {
    for (std::size_t n : {std::size_t(1), std::size_t(4000), std::size_t(65536), std::size_t(300000)}) {
      const Bytes src = era5_bytes(n, seed++);
      add("era5 l" + std::to_string(level) + " n" + std::to_string(n),
          zstd_frame(src, {level, seed % 2 == 0, seed % 3 == 0}), src);
    }
  }
  const Bytes big = era5_bytes(4u << 20, 77);
  add("era5 4MiB l1", zstd_plain(big, 1), big);
  add("era5 4MiB l3 checksum", zstd_frame(big, {3, true, true}), big);
  for (const auto& kind : cs_codec_test::kDataKinds) {
    const Bytes src = kind.make(200000);
    add(std::string(kind.name) + " l3", zstd_plain(src, 3), src);
    add(std::string(kind.name) + " streamed", zstd_streamed(src, 5, 20000, true), src);
  }
  const Bytes a = cs_codec_test::climate_bytes(40000), b = cs_codec_test::random_bytes(3000);
  add("several+skippable",
      cat({skippable(0, cs_codec_test::random_bytes(17)), zstd_frame(a, {1, true, true}), skippable(15, {}),
           zstd_frame(b, {-3, false, false})}),
      cat({a, b}));
  add("empty frame", zstd_frame({}, {3, true, true}), {});
  add("zeros (RLE blocks)", zstd_plain(Bytes(1u << 20, 0), 3), Bytes(1u << 20, 0));
  const Bytes ldm_half = era5_bytes(1u << 20, 5);
  const Bytes ldm = cat({ldm_half, ldm_half});
  add("ldm", zstd_frame(ldm, {3, true, false, true, 24}), ldm);
  // damaged ones: statuses must match the host decoder's
  std::mt19937 rng(4);
  for (int i = 0; i < 24; ++i) {
    const Bytes src = era5_bytes(100000 + 1000 * i, 200 + i);
    Bytes enc = zstd_frame(src, {1 + i % 5, true, i % 2 == 0});
    if (i % 3 == 0) {
      enc[rng() % enc.size()] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
    } else if (i % 3 == 1) {
      enc.resize(rng() % enc.size());
    } else {
      enc[enc.size() - 1 - rng() % 8] ^= 0xFF;
    }
    cs.push_back({"damaged " + std::to_string(i), std::move(enc), src.size(), src});
  }
  {
    const Bytes src = era5_bytes(50000, 9);
    Bytes enc = zstd_frame(src, {3, true, true});
    enc[enc.size() - 1] ^= 0x55;
    cs.push_back({"flipped checksum", enc, src.size(), src});
    cs.push_back({"one byte short", zstd_plain(src, 3), src.size() - 1, src});
    cs.push_back({"one byte long", zstd_plain(src, 3), src.size() + 1, src});
    Bytes dict_frame = zstd_plain(src, 3);
    dict_frame[4] |= 0x01;  // Dictionary_ID_Flag 1: the next byte becomes a dictionary ID
    cs.push_back({"dictionary id", dict_frame, src.size(), src});
  }
  return cs;
}

void run_batch(const std::vector<Case>& cases, bool verify, std::size_t scratch_bytes_override) {
  const std::size_t n = cases.size() + 1;  // plus one skipped (size 0) entry at the end
  std::vector<void*> d_src(n, nullptr), d_dst(n, nullptr);
  std::vector<std::size_t> src_sizes(n, 0), dst_sizes(n, 0);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    src_sizes[i] = cases[i].enc.size();
    dst_sizes[i] = cases[i].out_size;
    CHECK_CUDA(cudaMalloc(&d_src[i], cases[i].enc.size() + 1));
    CHECK_CUDA(cudaMalloc(&d_dst[i], cases[i].out_size + 1));
    CHECK_CUDA(cudaMemcpy(d_src[i], cases[i].enc.data(), cases[i].enc.size(), cudaMemcpyHostToDevice));
  }
  void **dd_src, **dd_dst;
  std::size_t *d_src_sizes, *d_dst_sizes;
  DecodeStatus* d_status;
  CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&dd_src), n * sizeof(void*)));
  CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&dd_dst), n * sizeof(void*)));
  CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&d_src_sizes), n * sizeof(std::size_t)));
  CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&d_dst_sizes), n * sizeof(std::size_t)));
  CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&d_status), n * sizeof(DecodeStatus)));
  CHECK_CUDA(cudaMemcpy(dd_src, d_src.data(), n * sizeof(void*), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(dd_dst, d_dst.data(), n * sizeof(void*), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(d_src_sizes, src_sizes.data(), n * sizeof(std::size_t), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(d_dst_sizes, dst_sizes.data(), n * sizeof(std::size_t), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemset(d_status, 0x7F, n * sizeof(DecodeStatus)));  // sentinel: must survive for the skipped entry
  const std::size_t scratch =
      scratch_bytes_override ? scratch_bytes_override : cubestream::cuda::zstd_batch_scratch_bytes(n);
  void* d_scratch;
  CHECK_CUDA(cudaMalloc(&d_scratch, scratch));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  cubestream::cuda::zstd_batch_decode(dd_src, d_src_sizes, dd_dst, d_dst_sizes, d_status, n, d_scratch, scratch,
                                      verify, stream);
  CHECK_CUDA(cudaStreamSynchronize(stream));
  std::vector<DecodeStatus> st(n);
  CHECK_CUDA(cudaMemcpy(st.data(), d_status, n * sizeof(DecodeStatus), cudaMemcpyDeviceToHost));
  std::uint32_t sentinel;
  std::memset(&sentinel, 0x7F, 4);
  EXPECT_EQ(static_cast<std::uint32_t>(st[n - 1]), sentinel) << "the skipped entry's status was written";
  int ok = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const DecodeStatus want = host_status(c.enc, c.out_size, verify);
    EXPECT_EQ(std::string(decode_status_name(st[i])), decode_status_name(want)) << c.name;
    if (st[i] == DecodeStatus::kOk && want == DecodeStatus::kOk) {
      Bytes got(c.out_size);
      CHECK_CUDA(cudaMemcpy(got.data(), d_dst[i], c.out_size, cudaMemcpyDeviceToHost));
      Bytes ref;
      if (libzstd_decode(c.enc, c.out_size, &ref)) {
        EXPECT_TRUE(got == ref) << c.name << ": GPU bytes differ from libzstd";
      } else {
        // libzstd always checks a frame's checksum; with verify off we do not, so a frame
        // whose damage the checksum would catch decodes here. Compare like with like: the
        // host decoder, told the same, is the oracle (the host tests hold it byte-exact to
        // libzstd wherever libzstd accepts).
        EXPECT_FALSE(verify) << c.name << ": accepted with verification on, libzstd refuses";
        Bytes host;
        ASSERT_EQ(host_decode(c.enc, c.out_size, false, &host), DecodeStatus::kOk) << c.name;
        EXPECT_TRUE(got == host) << c.name << ": GPU bytes differ from the host decoder (verify off)";
      }
      ++ok;
    }
  }
  std::printf("[ZstdBatch] %zu buffers, %d decoded byte-exact, scratch %zu bytes\n", cases.size(), ok, scratch);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    cudaFree(d_src[i]);
    cudaFree(d_dst[i]);
  }
  cudaFree(dd_src);
  cudaFree(dd_dst);
  cudaFree(d_src_sizes);
  cudaFree(d_dst_sizes);
  cudaFree(d_status);
  cudaFree(d_scratch);
  cudaStreamDestroy(stream);
}

// run_batch with the scratch version 2 asks for (the cases plus the skipped entry).
void run_full(const std::vector<Case>& cases, bool verify) {
  run_batch(cases, verify, cubestream::cuda::zstd_batch_scratch_bytes(cases.size() + 1, total_out(cases)));
}

// Sets environment variables for one test and unsets them when it ends (also on a failure).
class TestEnv {
 public:
  ~TestEnv() {
    for (const auto& n : names_) ::unsetenv(n.c_str());
  }
  void set(const char* name, const char* value) {
    ::setenv(name, value, 1);
    names_.emplace_back(name);
  }
  void unset(const char* name) { ::unsetenv(name); }

 private:
  std::vector<std::string> names_;
};

TEST(ZstdBatch, MixedBatchMatchesLibzstdAndHostStatuses) {
  if (!gpu_visible()) GTEST_SKIP() << "no GPU visible";
  const auto cases = mixed_batch();
  // the statuses we mean to exercise are there
  int names[8] = {};
  for (const auto& c : cases) names[static_cast<int>(host_status(c.enc, c.out_size, true))]++;
  EXPECT_GT(names[static_cast<int>(DecodeStatus::kOk)], 60);
  EXPECT_GT(names[static_cast<int>(DecodeStatus::kCorrupt)], 0);
  EXPECT_GT(names[static_cast<int>(DecodeStatus::kWrongSize)], 0);
  EXPECT_GT(names[static_cast<int>(DecodeStatus::kDictionary)], 0);
  EXPECT_GT(names[static_cast<int>(DecodeStatus::kChecksumMismatch)], 0);
  // version 2 with the scratch it asks for, both checksum settings
  run_full(cases, true);
  run_full(cases, false);
}

// A device whose blocks cannot have the sequences kernel's table slots in shared memory (one
// 2.5 KiB slot per lane: 41 KiB at the default 16 steps per warp, 82 KiB at 32, which sm_75's
// 64 KiB cannot give): that kernel reads the tables from the scratch. Simulated here by
// lowering the limit (CUBESTREAM_GPU_SMEM_OPTIN) under the default's 41 KiB; same statuses and
// bytes.
TEST(ZstdBatch, SmallSharedMemoryDevicesReadTablesFromScratch) {
  if (!gpu_visible()) GTEST_SKIP() << "no GPU visible";
  const auto cases = mixed_batch();
  TestEnv env;
  env.set("CUBESTREAM_GPU_SMEM_OPTIN", "16384");
  run_full(cases, true);
}

// The sequences kernel's other table placement (read where pass 2a wrote them, in the scratch,
// CUBESTREAM_ZSTD_SEQ_SMEM=0): same statuses and bytes as the default (a copy in shared memory).
TEST(ZstdBatch, ScratchTablesOnRequestGiveTheSameBytes) {
  if (!gpu_visible()) GTEST_SKIP() << "no GPU visible";
  const auto cases = mixed_batch();
  TestEnv env;
  env.set("CUBESTREAM_ZSTD_SEQ_SMEM", "0");
  run_full(cases, true);
}

// Pass 2b's other forms (CUBESTREAM_ZSTD_SEQ_READER=general, =bits, =window: the records made
// by the sequences kernel itself, v3.10 and before; the default traces the chain and makes the
// records in zstd_records_kernel, v3.11): same statuses and bytes as the default, with both
// table placements; and the default with other numbers of steps per warp.
TEST(ZstdBatch, EverySequenceReaderGivesTheSameBytes) {
  if (!gpu_visible()) GTEST_SKIP() << "no GPU visible";
  const auto cases = mixed_batch();
  TestEnv env;
  for (const char* reader : {"general", "bits", "window"}) {
    for (const char* smem : {"0", "1"}) {
      SCOPED_TRACE(std::string("reader ") + reader + ", shared-memory tables " + smem);
      env.set("CUBESTREAM_ZSTD_SEQ_READER", reader);
      env.set("CUBESTREAM_ZSTD_SEQ_SMEM", smem);
      run_full(cases, true);
    }
  }
  // Fixed numbers of steps per warp of the sequences kernel (by default 32 for batches of few
  // blocks, as this one, and 16 for many), with both placements (32 lanes' slots need 82 KiB
  // of shared memory: the opt-in path).
  env.unset("CUBESTREAM_ZSTD_SEQ_READER");
  for (const char* smem : {"0", "1"}) {
    for (const char* per_warp : {"1", "8", "16", "32"}) {
      SCOPED_TRACE(std::string("steps per warp ") + per_warp + ", shared-memory tables " + smem);
      env.set("CUBESTREAM_ZSTD_SEQ_SMEM", smem);
      env.set("CUBESTREAM_ZSTD_SEQ_STEPS_PER_WARP", per_warp);
      run_full(cases, true);
    }
  }
}

// Scratches smaller than version 2 asks for: version 1's size (n workspaces), and the size for
// a batch that decodes to nothing. Buffers whose blocks do not fit the arena go to version 1,
// the rest to version 2, in one call; statuses and bytes must not change.
TEST(ZstdBatch, ScratchSplitsBuffersBetweenVersions) {
  if (!gpu_visible()) GTEST_SKIP() << "no GPU visible";
  const auto cases = mixed_batch();
  run_batch(cases, true, cubestream::cuda::zstd_batch_scratch_bytes(cases.size() + 1));
  run_batch(cases, false, cubestream::cuda::zstd_batch_scratch_bytes(cases.size() + 1, 0) + (3u << 20));
}

// Every block of many multi-block frames in flight: 48 ERA5-like chunks of 4 MiB at levels 1
// to 5 plus small and streamed ones, decoded in one call with version 2.
TEST(ZstdBatch, ManyLargeFramesVersion2) {
  if (!gpu_visible()) GTEST_SKIP() << "no GPU visible";
  std::vector<Case> cs;
  for (int i = 0; i < 48; ++i) {
    const Bytes src = era5_bytes(i % 4 == 3 ? 300000 + 77 * i : 4u << 20, 900 + i);
    Bytes enc = i % 6 == 5 ? zstd_streamed(src, 1 + i % 5, 40000, true) : zstd_plain(src, 1 + i % 5);
    cs.push_back({"era5 " + std::to_string(i), std::move(enc), src.size(), src});
  }
  run_full(cs, false);
}

// Large multi-block frames, intact and damaged past their first blocks (a flipped bit or byte
// in a later block, a cut, an output size off by one, a flipped checksum), so that in the
// several-warp execution a group fails while the warps after it have already taken, copied or
// are waiting on later groups: the statuses must still be the host decoder's.
std::vector<Case> damaged_large_batch() {
  std::vector<Case> cs;
  std::mt19937 rng(36);
  for (int i = 0; i < 24; ++i) {
    const Bytes src = era5_bytes(i % 3 == 2 ? 1500000 + 999 * i : 4u << 20, 700 + i);
    const int level = 1 + 2 * (i % 3);
    Bytes enc = zstd_frame(src, {level, i % 4 != 3, i % 2 == 1});
    std::size_t size = src.size();
    switch (i % 6) {
      case 0: break;  // intact
      case 1: enc[enc.size() / 3 + rng() % (enc.size() / 2)] ^= static_cast<std::uint8_t>(1u << (rng() % 8)); break;
      case 2: enc[enc.size() / 2 + rng() % (enc.size() / 3)] = static_cast<std::uint8_t>(rng()); break;
      case 3: enc.resize(enc.size() / 2 + rng() % (enc.size() / 3)); break;
      case 4: size += i % 2 ? 1 : -1; break;
      case 5: enc[enc.size() - 1 - rng() % 3] ^= 0x40; break;
    }
    cs.push_back({"large " + std::to_string(i), std::move(enc), size, src});
  }
  return cs;
}

// Pass 3 runs by default with several warps per buffer (execute_groups.hpp); with 1, 2, 8
// (the default) and 32 warps the mixed batch and the damaged large frames give libzstd's
// bytes and the host decoder's statuses.
TEST(ZstdBatch, MultiWarpExecuteMatchesLibzstdWithEveryWarpCount) {
  if (!gpu_visible()) GTEST_SKIP() << "no GPU visible";
  const auto cases = mixed_batch();
  const auto large = damaged_large_batch();
  TestEnv env;
  env.set("CUBESTREAM_ZSTD_EXEC", "multi");
  for (const char* warps : {"1", "2", "8", "32"}) {
    SCOPED_TRACE(std::string("warps per buffer ") + warps);
    env.set("CUBESTREAM_ZSTD_EXEC_WARPS", warps);
    run_full(cases, true);
    const bool verify = std::strcmp(warps, "2") != 0;  // one run leaves the checksums unchecked
    run_full(large, verify);
  }
}

// The entropy pass takes its steps and the units kernel its buffers largest first by default
// (one-CTA counting sorts of the blocks' compressed sizes and the buffers' decoded sizes);
// CUBESTREAM_ZSTD_ENTROPY_ORDER=index and CUBESTREAM_ZSTD_EXEC_ORDER=index keep the plan's and
// the index order. The schedule changes, the statuses and bytes must not, on a batch of mixed
// sizes and on damaged large frames.
TEST(ZstdBatch, WorkOrderDoesNotChangeResults) {
  if (!gpu_visible()) GTEST_SKIP() << "no GPU visible";
  const auto cases = mixed_batch();
  const auto large = damaged_large_batch();
  TestEnv env;
  for (const char* entropy : {"index", "largest"}) {
    for (const char* execute : {"index", "largest"}) {
      SCOPED_TRACE(std::string("entropy order ") + entropy + ", execute order " + execute);
      env.set("CUBESTREAM_ZSTD_ENTROPY_ORDER", entropy);
      env.set("CUBESTREAM_ZSTD_EXEC_ORDER", execute);
      run_full(cases, true);
      run_full(large, false);
    }
  }
}

// CUBESTREAM_ZSTD_EXEC=warp: the single-warp execute kernel of versions 3-3.5, kept for A/B
// runs; the same statuses and bytes on the same batches.
TEST(ZstdBatch, SingleWarpExecuteOnRequestGivesTheSameResults) {
  if (!gpu_visible()) GTEST_SKIP() << "no GPU visible";
  const auto cases = mixed_batch();
  const auto large = damaged_large_batch();
  TestEnv env;
  env.set("CUBESTREAM_ZSTD_EXEC", "warp");
  run_full(cases, true);
  run_full(cases, false);
  run_full(large, true);
}

// Too small for version 2's bookkeeping: version 1 alone, three warps over the whole batch.
TEST(ZstdBatch, SmallScratchSharesWarps) {
  if (!gpu_visible()) GTEST_SKIP() << "no GPU visible";
  const auto cases = mixed_batch();
  // room for three workspaces only: three warps take turns over the whole batch
  const std::size_t three = cubestream::cuda::zstd_batch_min_scratch_bytes() +
                            2 * (cubestream::cuda::zstd_batch_scratch_bytes(2) -
                                 cubestream::cuda::zstd_batch_scratch_bytes(1));
  run_batch(cases, true, three);
}

TEST(ZstdBatch, RejectsTooSmallScratch) {
  if (!gpu_visible()) GTEST_SKIP() << "no GPU visible";
  void* p = nullptr;
  CHECK_CUDA(cudaMalloc(&p, 1024));
  try {
    cubestream::cuda::zstd_batch_decode(reinterpret_cast<const void* const*>(p), static_cast<std::size_t*>(p),
                                        reinterpret_cast<void* const*>(p), static_cast<std::size_t*>(p),
                                        static_cast<DecodeStatus*>(p), 1, p, 1024, false, nullptr);
    ADD_FAILURE() << "expected an error";
  } catch (const cubestream::Error& e) {
    EXPECT_EQ(e.code(), cubestream::ErrorCode::kInvalidArgument);
  }
  cudaFree(p);
}

#endif

}  // namespace
