// The GPU path's blosc logic (codec/logic/blosc_decode.hpp: plan, per-stream work units,
// per-block unshuffle) run serially on the host: against libblosc at every level, shuffle
// mode, split mode and typesize for the inner compressors the GPU decodes (lz4, lz4hc,
// blosclz), against the CPU codec on damaged buffers, and its unit bookkeeping.
#include <algorithm>
#include <cstring>
#include <memory>

#include "blosc_test_encoder.hpp"
#include "codec/logic/blosc_decode.hpp"
#include "codec_test_util.hpp"

#ifdef CUBESTREAM_TEST_HAVE_BLOSC
#include <blosc.h>
#endif

namespace cs_codec_test {
namespace {

namespace logic = cubestream::codec::logic;
using logic::DecodeStatus;

struct Result {
  DecodeStatus status;
  Buf bytes;
};

// Exact-size heap copies of the input, output and staging buffers (so ASan sees overruns).
Result decode_gpu_logic(const Buf& in, std::size_t expected) {
  std::unique_ptr<std::uint8_t[]> src(new std::uint8_t[in.size() + 1]);
  if (!in.empty()) std::memcpy(src.get(), in.data(), in.size());
  std::unique_ptr<std::uint8_t[]> dst(new std::uint8_t[expected + 1]);
  std::unique_ptr<std::uint8_t[]> stage(new std::uint8_t[expected + 1]);
  Result r;
  r.status = logic::blosc_decode_serial(src.get(), in.size(), dst.get(), expected, stage.get());
  r.bytes.assign(dst.get(), dst.get() + expected);
  return r;
}

Buf header(std::uint8_t flags, std::uint8_t typesize, std::uint32_t nbytes, std::uint32_t blocksize,
           std::uint32_t cbytes) {
  Buf b(16);
  b[0] = 2;
  b[1] = 1;
  b[2] = flags;
  b[3] = typesize;
  put_le32(b.data() + 4, nbytes);
  put_le32(b.data() + 8, blocksize);
  put_le32(b.data() + 12, cbytes);
  return b;
}

TEST(BloscGpuLogic, HandWrittenRawContainers) {
  // memcpyed, larger than one copy unit so that several units cover it
  const Buf data = random_bytes(3 * logic::kBloscCopyUnitBytes + 17, 3);
  Buf mc = header(logic::kBloscFlagMemcpyed | logic::kBloscFlagShuffle, 4, static_cast<std::uint32_t>(data.size()),
                  static_cast<std::uint32_t>(data.size()), static_cast<std::uint32_t>(data.size() + 16));
  append(mc, data);
  Result r = decode_gpu_logic(mc, data.size());
  ASSERT_EQ(r.status, DecodeStatus::kOk);
  EXPECT_EQ(r.bytes, data);
  logic::BloscPlan plan;
  ASSERT_EQ(logic::blosc_plan(mc.data(), mc.size(), data.size(), &plan), DecodeStatus::kOk);
  EXPECT_EQ(plan.units, 4u);
  EXPECT_EQ(logic::blosc_largest_unit_bytes(plan), logic::kBloscCopyUnitBytes);

  // two full split blocks of 256 bytes (typesize 2: 2 raw streams of 128) + a leftover of 40,
  // byte-shuffled per block
  const Buf d = random_bytes(552, 4);
  const std::uint8_t flags = logic::kBloscFlagShuffle | (1u << 5);
  Buf body;
  Buf b = header(flags, 2, 552, 256, 0);
  const std::size_t table = 16 + 3 * 4;
  b.resize(table);
  std::size_t at = table;
  for (int j = 0; j < 3; ++j) {
    const std::size_t bs = j < 2 ? 256 : 40;
    Buf shuffled(bs);
    const std::size_t n = bs / 2;
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t k = 0; k < 2; ++k) shuffled[k * n + i] = d[j * 256 + i * 2 + k];
    put_le32(b.data() + 16 + 4 * j, static_cast<std::uint32_t>(at));
    const std::size_t streams = j < 2 ? 2 : 1;
    for (std::size_t s = 0; s < streams; ++s) {
      Buf sz(4);
      put_le32(sz.data(), static_cast<std::uint32_t>(bs / streams));
      append(b, sz);
      append(b, Buf(shuffled.begin() + s * (bs / streams), shuffled.begin() + (s + 1) * (bs / streams)));
    }
    at = b.size();
  }
  put_le32(b.data() + 12, static_cast<std::uint32_t>(b.size()));
  ASSERT_EQ(logic::blosc_plan(b.data(), b.size(), 552, &plan), DecodeStatus::kOk);
  EXPECT_EQ(plan.nsplits, 2u);
  EXPECT_EQ(plan.units, 5u);
  EXPECT_TRUE(plan.staged);
  const logic::BloscUnit last = logic::blosc_unit_at(plan, 4);
  EXPECT_EQ(last.block, 2u);
  EXPECT_EQ(last.stream_bytes, 40u);
  r = decode_gpu_logic(b, 552);
  ASSERT_EQ(r.status, DecodeStatus::kOk);
  EXPECT_EQ(r.bytes, d);
  // the CPU codec agrees
  EXPECT_EQ(decode(*make_b2b("blosc"), b, 552), d);
}

TEST(BloscGpuLogic, StatusesOfBadHeadersAndSizes) {
  const Buf data = random_bytes(300, 5);
  Buf mc = header(logic::kBloscFlagMemcpyed, 4, 300, 300, 316);
  append(mc, data);
  EXPECT_EQ(decode_gpu_logic(mc, 299).status, DecodeStatus::kWrongSize);
  EXPECT_EQ(decode_gpu_logic(Buf(mc.begin(), mc.begin() + 10), 300).status, DecodeStatus::kCorrupt);
  EXPECT_EQ(decode_gpu_logic(Buf(mc.begin(), mc.end() - 1), 300).status, DecodeStatus::kCorrupt);
  Buf v3 = mc;
  v3[0] = 3;
  EXPECT_EQ(decode_gpu_logic(v3, 300).status, DecodeStatus::kUnsupported);
  // zstd, zlib and snappy inner streams are left to the CPU path
  for (std::uint8_t format : {2, 3, 4}) {
    Buf z = header(static_cast<std::uint8_t>(format << 5), 4, 300, 300, 16 + 4 + 4 + 10);
    z.resize(z.size() + 18, 0);
    put_le32(z.data() + 16, 20);
    put_le32(z.data() + 20, 10);
    EXPECT_EQ(decode_gpu_logic(z, 300).status, DecodeStatus::kUnsupported) << int(format);
  }
  // more units than c-blosc ever writes: 300 bytes in blocks of 1 byte
  Buf tiny = header(1u << 5, 1, 300, 1, 16 + 300 * 4 + 5);
  tiny.resize(16 + 300 * 4 + 5, 0);
  EXPECT_EQ(decode_gpu_logic(tiny, 300).status, DecodeStatus::kUnsupported);
  // an empty buffer's container decodes to nothing
  EXPECT_EQ(decode_gpu_logic(header(1u << 5, 4, 0, 0, 16), 0).status, DecodeStatus::kOk);
}

// The GPU's split of the passes: every unit on its own (in reverse order), then the unshuffle
// one item at a time (as the unshuffle kernel's threads take them, here in reverse order),
// including blocks shorter than one element (no items, only a tail).
TEST(BloscGpuLogic, UnitsAndItemsInAnyOrder) {
  for (int shuffle = 0; shuffle <= 2; ++shuffle) {
    for (std::size_t ts : {1, 2, 3, 4, 8, 16}) {
      for (std::size_t n : {std::size_t{5000}, std::size_t{4096 * 3 + 1}, std::size_t{4096 * 2 + 7}}) {
        BloscEncodeOptions o;
        o.shuffle = shuffle;
        o.typesize = ts;
        o.blocksize = 4096;
        const Buf src = random_bytes(n, static_cast<std::uint32_t>(n + ts));
        const Buf enc = blosc_test_encode(src, o);
        logic::BloscPlan plan;
        ASSERT_EQ(logic::blosc_plan(enc.data(), enc.size(), n, &plan), DecodeStatus::kOk);
        // the GPU queue's sort key is the largest unit's size
        std::uint64_t largest = 0;
        for (std::uint64_t u = 0; u < plan.units; ++u)
          largest = std::max<std::uint64_t>(largest, logic::blosc_unit_at(plan, u).stream_bytes);
        ASSERT_EQ(logic::blosc_largest_unit_bytes(plan), largest) << "shuffle " << shuffle << " typesize " << ts;
        // the leftover leads exactly when the last unit is longer than every other
        bool last_longest = plan.units >= 2;
        const std::uint64_t last = logic::blosc_unit_at(plan, plan.units - 1).stream_bytes;
        for (std::uint64_t u = 0; u + 1 < plan.units; ++u)
          last_longest = last_longest && last > logic::blosc_unit_at(plan, u).stream_bytes;
        ASSERT_EQ(logic::blosc_leftover_leads(plan), last_longest) << "shuffle " << shuffle << " typesize " << ts << " n " << n;
        Buf out(n, 0), stage(n, 0);
        logic::BloscSerialCopier copy;
        for (std::uint64_t u = plan.units; u-- > 0;)
          ASSERT_EQ(logic::blosc_decode_unit(enc.data(), plan, u, out.data(), stage.data(), copy, true), DecodeStatus::kOk);
        if (plan.staged) {
          for (std::uint32_t j = 0; j < plan.nblocks; ++j) {
            const logic::BloscBlockShuffle b = logic::blosc_block_shuffle(plan.h, j);
            if (b.items == 0) logic::blosc_unshuffle_block_range(plan.h, j, b, stage.data(), out.data(), 0, 0);
            for (std::size_t item = b.items; item-- > 0;)
              logic::blosc_unshuffle_block_range(plan.h, j, b, stage.data(), out.data(), item, item + 1);
          }
        }
        ASSERT_TRUE(out == src) << "shuffle " << shuffle << " typesize " << ts << " n " << n;
      }
    }
  }
}

#ifdef CUBESTREAM_TEST_HAVE_BLOSC

struct BloscGlobals {
  BloscGlobals() { blosc_init(); }
  ~BloscGlobals() {
    blosc_set_splitmode(BLOSC_FORWARD_COMPAT_SPLIT);
    blosc_set_blocksize(0);
  }
};

Buf blosc_compress_oracle(const Buf& src, const char* cname, int clevel, int shuffle, std::size_t typesize,
                          std::size_t blocksize = 0) {
  Buf dst(src.size() + BLOSC_MAX_OVERHEAD);
  const int n = blosc_compress_ctx(clevel, shuffle, typesize, src.size(), src.data(), dst.data(), dst.size(), cname,
                                   blocksize, 1);
  if (n <= 0) throw std::runtime_error(std::string("blosc_compress_ctx failed for ") + cname);
  dst.resize(static_cast<std::size_t>(n));
  return dst;
}

constexpr const char* kGpuCnames[] = {"lz4", "lz4hc", "blosclz"};

TEST(BloscGpuLogic, OracleEveryLevelShuffleAndTypesize) {
  BloscGlobals globals;
  constexpr std::size_t kSizes[] = {1, 127, 128, 4099, 70001, 262147};
  for (const char* cname : kGpuCnames) {
    for (int clevel = 0; clevel <= 9; ++clevel) {
      for (int shuffle = 0; shuffle <= 2; ++shuffle) {
        for (std::size_t typesize : {1, 2, 4, 8}) {
          for (std::size_t n : kSizes) {
            const Buf src = (n + clevel) % 2 ? climate_bytes(n) : repetitive_bytes(n);
            SCOPED_TRACE(std::string(cname) + " clevel " + std::to_string(clevel) + " shuffle " +
                         std::to_string(shuffle) + " typesize " + std::to_string(typesize) + " n " + std::to_string(n));
            const Buf enc = blosc_compress_oracle(src, cname, clevel, shuffle, typesize);
            const Result r = decode_gpu_logic(enc, src.size());
            ASSERT_EQ(r.status, DecodeStatus::kOk) << logic::decode_status_name(r.status);
            ASSERT_TRUE(r.bytes == src);
          }
        }
      }
    }
  }
}

TEST(BloscGpuLogic, OracleSmallBlocksOddTypesizesAndSplitModes) {
  BloscGlobals globals;
  const int modes[] = {BLOSC_NEVER_SPLIT, BLOSC_AUTO_SPLIT, BLOSC_FORWARD_COMPAT_SPLIT, BLOSC_ALWAYS_SPLIT};
  for (int mode : modes) {
    blosc_set_splitmode(mode);
    for (const char* cname : kGpuCnames) {
      for (int shuffle = 0; shuffle <= 2; ++shuffle) {
        for (std::size_t typesize : {1, 2, 3, 4, 8, 16, 24}) {
          for (std::size_t blocksize : {128, 1000, 8192, 0}) {
            const Buf src = quantised_bytes(30000 + 3 * typesize + 1);
            SCOPED_TRACE(std::string(cname) + " mode " + std::to_string(mode) + " shuffle " + std::to_string(shuffle) +
                         " typesize " + std::to_string(typesize) + " blocksize " + std::to_string(blocksize));
            const Buf enc = blosc_compress_oracle(src, cname, 5, shuffle, typesize, blocksize);
            Buf back(src.size());
            const bool oracle_ok = blosc_decompress_ctx(enc.data(), back.data(), back.size(), 1) >= 0;
            const Result r = decode_gpu_logic(enc, src.size());
            if (!oracle_ok) {  // c-blosc's ALWAYS split with typesize > 16 (see blosc_test.cpp)
              EXPECT_NE(r.status, DecodeStatus::kOk);
              continue;
            }
            ASSERT_EQ(r.status, DecodeStatus::kOk) << logic::decode_status_name(r.status);
            ASSERT_TRUE(r.bytes == src);
          }
        }
      }
    }
  }
}

// Damaged buffers: whatever the serial GPU logic accepts, the CPU codec accepts with the same
// bytes; whatever the CPU codec accepts, the GPU logic accepts or leaves to the CPU
// (kUnsupported). Nothing reads or writes outside its buffer.
TEST(BloscGpuLogic, DamagedBuffersAgreeWithTheCpuCodec) {
  BloscGlobals globals;
  auto cpu = make_b2b("blosc");
  std::mt19937 rng(99);
  for (const char* cname : kGpuCnames) {
    for (int shuffle = 0; shuffle <= 2; ++shuffle) {
      const Buf src = climate_bytes(20000);
      const Buf enc = blosc_compress_oracle(src, cname, 5, shuffle, 4, 2048);
      for (int trial = 0; trial < 400; ++trial) {
        Buf bad = enc;
        if (trial % 4 == 0) {
          bad.resize(rng() % enc.size());
        } else {
          for (int f = 0; f < 1 + trial % 3; ++f) bad[rng() % bad.size()] = static_cast<std::uint8_t>(rng());
        }
        const Result r = decode_gpu_logic(bad, src.size());
        bool cpu_ok = true;
        Buf cpu_out;
        try {
          cpu_out = decode(*cpu, bad, src.size());
        } catch (const Error&) {
          cpu_ok = false;
        }
        if (r.status == DecodeStatus::kOk) {
          ASSERT_TRUE(cpu_ok) << cname << " trial " << trial;
          ASSERT_TRUE(cpu_out == r.bytes) << cname << " trial " << trial;
        } else if (cpu_ok && cpu_out.size() == src.size()) {
          EXPECT_EQ(r.status, DecodeStatus::kUnsupported) << cname << " trial " << trial;
        }
      }
    }
  }
}

TEST(BloscGpuLogic, ZstdInnerIsLeftToTheCpu) {
  BloscGlobals globals;
  const Buf src = climate_bytes(50000);
  const Buf enc = blosc_compress_oracle(src, "zstd", 5, 1, 4);
  EXPECT_EQ(decode_gpu_logic(enc, src.size()).status, DecodeStatus::kUnsupported);
  EXPECT_EQ(decode(*make_b2b("blosc"), enc, src.size()), src);
}

#endif  // CUBESTREAM_TEST_HAVE_BLOSC

}  // namespace
}  // namespace cs_codec_test
