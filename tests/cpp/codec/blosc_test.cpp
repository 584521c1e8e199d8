// blosc codec: our own container parser, unshuffles and BloscLZ decoder checked against
// libblosc 1.x (the oracle, linked into the tests only) over every compressor, level, shuffle
// mode and typesize, with leftover blocks, many small blocks, every split mode and memcpyed
// buffers; plus hand-damaged containers.
#include <cstring>

#include "codec/chain.hpp"
#include "codec/logic/bit_shuffle.hpp"
#include "codec/logic/blosc_format.hpp"
#include "codec/logic/blosclz.hpp"
#include "codec_test_util.hpp"

#ifdef CUBESTREAM_TEST_HAVE_BLOSC
#include <blosc.h>
#endif

namespace cs_codec_test {
namespace {

namespace logic = cubestream::codec::logic;

// ---- container tests that need no oracle --------------------------------------------------

// A memcpyed container written by hand: header + raw bytes.
Buf memcpyed_container(const Buf& data, std::uint8_t typesize = 4, std::uint8_t extra_flags = 0) {
  Buf b(16);
  b[0] = 2;
  b[1] = 1;
  b[2] = static_cast<std::uint8_t>(logic::kBloscFlagMemcpyed | extra_flags);
  b[3] = typesize;
  put_le32(b.data() + 4, static_cast<std::uint32_t>(data.size()));
  put_le32(b.data() + 8, static_cast<std::uint32_t>(data.size()));
  put_le32(b.data() + 12, static_cast<std::uint32_t>(data.size() + 16));
  append(b, data);
  return b;
}

// A one-block container whose single stream is stored raw (csize == block size), with the
// given shuffle flags applied by the caller to `stream`.
Buf raw_stream_container(const Buf& stream, std::uint8_t typesize, std::uint8_t flags) {
  Buf b(16 + 4 + 4);
  b[0] = 2;
  b[1] = 1;
  b[2] = static_cast<std::uint8_t>(flags | logic::kBloscFlagDontSplit | (1u << 5));  // lz4 format
  b[3] = typesize;
  put_le32(b.data() + 4, static_cast<std::uint32_t>(stream.size()));
  put_le32(b.data() + 8, static_cast<std::uint32_t>(stream.size()));
  put_le32(b.data() + 12, static_cast<std::uint32_t>(b.size() + stream.size()));
  put_le32(b.data() + 16, 20);  // block 0 starts after the header and the table
  put_le32(b.data() + 20, static_cast<std::uint32_t>(stream.size()));
  append(b, stream);
  return b;
}

TEST(BloscCodec, MemcpyedContainer) {
  auto codec = make_b2b("blosc");
  const Buf data = climate_bytes(1000);
  EXPECT_EQ(decode(*codec, memcpyed_container(data), data.size()), data);
  // shuffle flags do not apply to memcpyed buffers
  EXPECT_EQ(decode(*codec, memcpyed_container(data, 4, logic::kBloscFlagShuffle), data.size()), data);
  Buf wrong = memcpyed_container(data);
  put_le32(wrong.data() + 12, static_cast<std::uint32_t>(data.size() + 15));
  expect_error(ErrorCode::kCorruptData, [&] { decode(*codec, wrong, data.size()); });
}

TEST(BloscCodec, RawStreamWithByteAndBitShuffle) {
  auto codec = make_b2b("blosc");
  // byte shuffle by hand: 10 elements of 4 bytes plus 3 trailing bytes
  const Buf data = random_bytes(43, 21);
  Buf shuffled(43);
  for (std::size_t i = 0; i < 10; ++i)
    for (std::size_t j = 0; j < 4; ++j) shuffled[j * 10 + i] = data[i * 4 + j];
  std::copy(data.begin() + 40, data.end(), shuffled.begin() + 40);
  EXPECT_EQ(decode(*codec, raw_stream_container(shuffled, 4, logic::kBloscFlagShuffle), 43), data);

  // bit shuffle by hand: 16 elements of 2 bytes plus 1 trailing byte
  const Buf d2 = random_bytes(33, 22);
  Buf bits(33, 0);
  const std::size_t n = 16, row = n / 8;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < 2; ++j)
      for (std::size_t k = 0; k < 8; ++k)
        if ((d2[i * 2 + j] >> k) & 1u) bits[(8 * j + k) * row + i / 8] |= static_cast<std::uint8_t>(1u << (i % 8));
  bits[32] = d2[32];
  EXPECT_EQ(decode(*codec, raw_stream_container(bits, 2, logic::kBloscFlagBitShuffle), 33), d2);

  // 7 elements: not a multiple of 8, so c-blosc 1.x stores the block unshuffled
  const Buf d3 = random_bytes(28, 23);
  EXPECT_EQ(decode(*codec, raw_stream_container(d3, 4, logic::kBloscFlagBitShuffle), 28), d3);
}

TEST(BloscCodec, BitTransposeIsItsOwnInverse) {
  std::mt19937_64 rng(5);
  for (int i = 0; i < 1000; ++i) {
    const std::uint64_t x = rng();
    const std::uint64_t t = logic::transpose_bits_8x8(x);
    EXPECT_EQ(logic::transpose_bits_8x8(t), x);
    for (int r = 0; r < 8; ++r)
      for (int c = 0; c < 8; ++c) ASSERT_EQ((x >> (8 * r + c)) & 1u, (t >> (8 * c + r)) & 1u);
  }
}

TEST(BloscCodec, HeaderErrors) {
  auto codec = make_b2b("blosc");
  const Buf data = random_bytes(200);
  const Buf good = memcpyed_container(data);
  expect_error(ErrorCode::kCorruptData, [&] { decode(*codec, Buf(good.begin(), good.begin() + 15), 200); });
  expect_error(ErrorCode::kCorruptData, [&] { decode(*codec, Buf(good.begin(), good.end() - 1), 200); });
  Buf v3 = good;
  v3[0] = 3;  // c-blosc2 formats
  expect_error(ErrorCode::kUnsupported, [&] { decode(*codec, v3, 200); });
  Buf reserved = good;
  reserved[2] |= logic::kBloscFlagReserved;
  expect_error(ErrorCode::kUnsupported, [&] { decode(*codec, reserved, 200); });
  Buf ts0 = good;
  ts0[3] = 0;
  expect_error(ErrorCode::kCorruptData, [&] { decode(*codec, ts0, 200); });
  Buf bs0 = good;
  put_le32(bs0.data() + 8, 0);
  expect_error(ErrorCode::kCorruptData, [&] { decode(*codec, bs0, 200); });
  // decoded size larger than the output: refused before anything is written
  expect_error(ErrorCode::kSizeMismatch, [&] { decode(*codec, good, 199); });
  // an empty buffer's container decodes to nothing
  EXPECT_TRUE(decode(*codec, memcpyed_container({}), 0).empty());
}

TEST(BloscCodec, BlockTableAndStreamErrors) {
  auto codec = make_b2b("blosc");
  const Buf stream = random_bytes(64, 31);
  const Buf good = raw_stream_container(stream, 1, 0);
  EXPECT_EQ(decode(*codec, good, 64), stream);
  Buf start_out = good;
  put_le32(start_out.data() + 16, static_cast<std::uint32_t>(good.size() - 3));
  expect_error(ErrorCode::kOutOfRange, [&] { decode(*codec, start_out, 64); });
  Buf negative_start = good;
  put_le32(negative_start.data() + 16, 0x80000000u);
  expect_error(ErrorCode::kOutOfRange, [&] { decode(*codec, negative_start, 64); });
  Buf csize_out = good;
  put_le32(csize_out.data() + 20, 65);
  expect_error(ErrorCode::kOutOfRange, [&] { decode(*codec, csize_out, 64); });
  Buf table_cut = good;
  put_le32(table_cut.data() + 12, 18);  // cbytes too small for the block table
  table_cut.resize(18);
  expect_error(ErrorCode::kCorruptData, [&] { decode(*codec, table_cut, 64); });
  // a compressed (csize != block size) lz4 stream of garbage
  Buf garbage = good;
  put_le32(garbage.data() + 20, 63);
  expect_error(ErrorCode::kCorruptData, [&] { decode(*codec, garbage, 64); });
  // snappy streams are reported as unsupported, naming snappy
  Buf snappy = good;
  snappy[2] = static_cast<std::uint8_t>((snappy[2] & 0x1F) | (2u << 5));
  put_le32(snappy.data() + 20, 10);
  const std::string msg = expect_error(ErrorCode::kUnsupported, [&] { decode(*codec, snappy, 64); });
  EXPECT_NE(msg.find("snappy"), std::string::npos);
  Buf future = good;
  future[2] = static_cast<std::uint8_t>((future[2] & 0x1F) | (6u << 5));
  expect_error(ErrorCode::kCorruptData, [&] { decode(*codec, future, 64); });
  Buf lzversion = good;
  lzversion[1] = 2;
  expect_error(ErrorCode::kUnsupported, [&] { decode(*codec, lzversion, 64); });
}

// BloscLZ streams written by hand (libblosc's compressor rarely emits far matches), decoded
// against a plain LZ77 expansion.
struct BlosclzWriter {
  Buf stream;
  Buf expanded;
  bool first = true;
  void literals(const Buf& bytes) {
    for (std::size_t i = 0; i < bytes.size(); i += 32) {
      const std::size_t run = std::min<std::size_t>(32, bytes.size() - i);
      // the first control byte carries the format marker in its top 3 bits
      stream.push_back(static_cast<std::uint8_t>((run - 1) | (first ? 0x20 : 0)));
      first = false;
      stream.insert(stream.end(), bytes.begin() + i, bytes.begin() + i + run);
      expanded.insert(expanded.end(), bytes.begin() + i, bytes.begin() + i + run);
    }
  }
  void match(std::size_t distance, std::size_t length) {  // length >= 3
    const std::size_t l = length - 2;                        // 1..: L field, 7 means extended
    const bool far = distance > logic::kBlosclzMaxDistance;
    const std::size_t near = far ? 0 : distance - 1;
    const std::uint8_t high = far ? 31 : static_cast<std::uint8_t>(near >> 8);
    if (l < 7) {
      stream.push_back(static_cast<std::uint8_t>((l << 5) | high));
    } else {
      stream.push_back(static_cast<std::uint8_t>((7u << 5) | high));
      std::size_t rest = l - 7;
      for (; rest >= 255; rest -= 255) stream.push_back(255);
      stream.push_back(static_cast<std::uint8_t>(rest));
    }
    if (far) {
      const std::size_t f = distance - logic::kBlosclzMaxDistance - 1;
      stream.push_back(255);
      stream.push_back(static_cast<std::uint8_t>(f >> 8));
      stream.push_back(static_cast<std::uint8_t>(f));
    } else {
      stream.push_back(static_cast<std::uint8_t>(near & 255));
    }
    for (std::size_t k = 0; k < length; ++k) expanded.push_back(expanded[expanded.size() - distance]);
  }
};

Buf blosclz_container(const Buf& stream, std::size_t decoded) {
  Buf b(24);
  b[0] = 2;
  b[1] = 1;
  b[2] = logic::kBloscFlagDontSplit;  // compressor format 0: blosclz
  b[3] = 1;
  put_le32(b.data() + 4, static_cast<std::uint32_t>(decoded));
  put_le32(b.data() + 8, static_cast<std::uint32_t>(decoded));
  put_le32(b.data() + 12, static_cast<std::uint32_t>(24 + stream.size()));
  put_le32(b.data() + 16, 20);
  put_le32(b.data() + 20, static_cast<std::uint32_t>(stream.size()));
  append(b, stream);
  return b;
}

TEST(BloscCodec, HandWrittenBlosclzStreams) {
  auto codec = make_b2b("blosc");
  BlosclzWriter w;
  w.literals(random_bytes(80000, 51));
  w.match(20000, 3);          // far, shortest
  w.match(8191, 40);          // the largest near distance
  w.match(8192, 6);           // the smallest far distance
  w.match(1, 1000);           // a run, extended length over several 255 bytes
  w.match(3, 17);             // overlapping pattern, distance < 8
  w.match(9, 100);            // overlapping, distance >= 8
  w.match(73725, 8);          // the largest far distance
  w.match(300, 9);            // L = 7 exactly: one extension byte of 0
  w.literals(random_bytes(5, 52));
  ASSERT_LT(w.expanded.size(), 1u << 20);
  EXPECT_EQ(decode(*codec, blosclz_container(w.stream, w.expanded.size()), w.expanded.size()), w.expanded);

  // damaged streams: every prefix is detected (truncated or a wrong decoded size)
  for (std::size_t cut = 1; cut < w.stream.size(); cut += 331) {
    const Buf part(w.stream.begin(), w.stream.begin() + cut);
    expect_error(ErrorCode::kCorruptData,
                 [&] { decode(*codec, blosclz_container(part, w.expanded.size()), w.expanded.size()); });
  }
  // a match reaching before the start of the block
  BlosclzWriter early;
  early.literals(random_bytes(10, 53));
  early.stream.push_back(static_cast<std::uint8_t>((1u << 5) | 0));
  early.stream.push_back(10);  // distance 11 > 10 bytes written
  early.literals(random_bytes(3, 54));
  const std::string msg = expect_error(ErrorCode::kCorruptData, [&] { decode(*codec, blosclz_container(early.stream, 16), 16); });
  EXPECT_NE(msg.find("before the start"), std::string::npos) << msg;
}

TEST(BloscCodec, ConfigurationForms) {
  // v3
  EXPECT_EQ(make_b2b("blosc", {{"cname", "lz4"}, {"clevel", 5}, {"shuffle", "shuffle"}, {"typesize", 4},
                               {"blocksize", 0}})
                ->name(),
            "blosc");
  // numcodecs
  EXPECT_EQ(make_b2b("blosc", {{"id", "blosc"}, {"cname", "zstd"}, {"clevel", 5}, {"shuffle", -1}, {"blocksize", 0}})
                ->configuration()["cname"],
            "zstd");
  EXPECT_EQ(make_b2b("blosc", {{"typesize", nullptr}, {"unknown", "x"}})->name(), "blosc");
  expect_error(ErrorCode::kInvalidMetadata, [] { make_b2b("blosc", {{"clevel", "5"}}); });
  expect_error(ErrorCode::kInvalidMetadata, [] { make_b2b("blosc", {{"shuffle", true}}); });
  expect_error(ErrorCode::kInvalidMetadata, [] { make_b2b("blosc", {{"cname", 4}}); });
}

// The writer's block sizes when the configuration leaves them open (blocksize 0): 128 KiB for
// lz4 and lz4hc (one GPU warp per block: docs/gpu_decoders.md, version 11), 1 MiB for zstd and
// zlib; a chunk smaller than the block is one block; an explicit blocksize wins. The header's
// bytes 8..11 hold the block size.
TEST(BloscCodec, WriterBlockSizes) {
  const Buf data = climate_bytes(std::size_t{1} << 20);
  auto block_of = [&](const nlohmann::json& cfg, const Buf& in) {
    auto codec = make_b2b("blosc", cfg);
    const auto enc = codec->encode(ByteView(in.data(), in.size()));
    EXPECT_EQ(decode(*codec, ByteView(enc.data(), enc.size()), in.size()), in) << cfg.dump();
    EXPECT_EQ(enc[2] & logic::kBloscFlagMemcpyed, 0) << cfg.dump();
    return logic::blosc_load_le32(enc.data() + 8);
  };
  const auto cfg = [](const char* cname, int blocksize) {
    return nlohmann::json{{"cname", cname}, {"clevel", 5}, {"shuffle", 1}, {"typesize", 4}, {"blocksize", blocksize}};
  };
  EXPECT_EQ(block_of(cfg("lz4", 0), data), 128u << 10);
  EXPECT_EQ(block_of(cfg("lz4hc", 0), data), 128u << 10);
  EXPECT_EQ(block_of(cfg("zstd", 0), data), 1u << 20);
  EXPECT_EQ(block_of(cfg("zlib", 0), data), 1u << 20);
  EXPECT_EQ(block_of(cfg("lz4", 65536), data), 65536u);
  const Buf small(data.begin(), data.begin() + 100000);
  EXPECT_EQ(block_of(cfg("lz4", 0), small), 100000u);
}

#ifdef CUBESTREAM_TEST_HAVE_BLOSC

// ---- differential tests against libblosc -------------------------------------------------

// Restores libblosc's global settings after a test changes them.
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

constexpr const char* kCnames[] = {"blosclz", "lz4", "lz4hc", "zlib", "zstd"};

TEST(BloscOracle, EveryCompressorLevelShuffleAndTypesize) {
  BloscGlobals globals;
  auto codec = make_b2b("blosc", {{"cname", "lz4"}, {"clevel", 5}, {"shuffle", 1}, {"blocksize", 0}});
  // sizes: tiny (memcpyed below 128 bytes), odd sizes that leave a leftover block, and sizes
  // above the default block size
  constexpr std::size_t kSizes[] = {1, 7, 127, 128, 4099, 70001, 262147};
  int combo = 0;
  for (const char* cname : kCnames) {
    for (int clevel = 0; clevel <= 9; ++clevel) {
      for (int shuffle = 0; shuffle <= 2; ++shuffle) {
        for (std::size_t typesize : {1, 2, 3, 4, 8}) {
          const auto& kind = kDataKinds[combo % std::size(kDataKinds)];
          std::size_t n = kSizes[combo % std::size(kSizes)];
          // the slowest settings (zstd/zlib at high levels) on the smaller sizes
          const std::string_view name(cname);
          if (clevel >= 7 && (name == "zstd" || name == "zlib" || name == "lz4hc")) n = std::min<std::size_t>(n, 70001);
          ++combo;
          const Buf src = kind.make(n);
          SCOPED_TRACE(std::string(cname) + " clevel " + std::to_string(clevel) + " shuffle " +
                       std::to_string(shuffle) + " typesize " + std::to_string(typesize) + " " + kind.name +
                       " n " + std::to_string(src.size()));
          const Buf enc = blosc_compress_oracle(src, cname, clevel, shuffle, typesize);
          ASSERT_EQ(decode(*codec, enc, src.size()), src);
        }
      }
    }
  }
}

TEST(BloscOracle, ManySmallBlocksWithLeftover) {
  BloscGlobals globals;
  auto codec = make_b2b("blosc");
  for (const char* cname : kCnames) {
    for (int shuffle = 0; shuffle <= 2; ++shuffle) {
      for (std::size_t typesize : {1, 2, 4, 8, 3, 16, 24}) {
        for (std::size_t blocksize : {128, 256, 1000, 4096}) {
          const Buf src = climate_bytes(20000 + 3 * typesize + 1);
          SCOPED_TRACE(std::string(cname) + " shuffle " + std::to_string(shuffle) + " typesize " +
                       std::to_string(typesize) + " blocksize " + std::to_string(blocksize));
          const Buf enc = blosc_compress_oracle(src, cname, 5, shuffle, typesize, blocksize);
          ASSERT_EQ(decode(*codec, enc, src.size()), src);
        }
      }
    }
  }
}

TEST(BloscOracle, EverySplitMode) {
  BloscGlobals globals;
  auto codec = make_b2b("blosc");
  const int modes[] = {BLOSC_ALWAYS_SPLIT, BLOSC_NEVER_SPLIT, BLOSC_AUTO_SPLIT, BLOSC_FORWARD_COMPAT_SPLIT};
  for (int mode : modes) {
    blosc_set_splitmode(mode);
    for (const char* cname : kCnames) {
      for (std::size_t typesize : {2, 4, 8, 17}) {
        for (int shuffle : {0, 1, 2}) {
          const Buf src = quantised_bytes(100003);
          SCOPED_TRACE("split mode " + std::to_string(mode) + " " + cname + " typesize " +
                       std::to_string(typesize) + " shuffle " + std::to_string(shuffle));
          const Buf enc = blosc_compress_oracle(src, cname, 4, shuffle, typesize, 8192);
          // In ALWAYS mode c-blosc 1.x splits blocks with typesize > 16 but its decoder never
          // reads them as split (nothing in the header says so), so it cannot decode its own
          // output. We read the format the same way and must fail cleanly where it fails.
          Buf back(src.size());
          if (blosc_decompress_ctx(enc.data(), back.data(), back.size(), 1) < 0) {
            expect_error(ErrorCode::kCorruptData, [&] { decode(*codec, enc, src.size()); });
            continue;
          }
          ASSERT_EQ(decode(*codec, enc, src.size()), src);
        }
      }
    }
  }
}

TEST(BloscOracle, ClimateLikeFieldsAtRealisticChunkSizes) {
  BloscGlobals globals;
  auto codec = make_b2b("blosc");
  struct Field {
    const char* name;
    Buf data;
  };
  const Field fields[] = {{"t2m", as_bytes(climate_field_f32(256 * 1024))},
                          {"t2m_quantised", as_bytes(quantised_field_f32(256 * 1024))},
                          {"precip", as_bytes(precip_field_f32(256 * 1024))}};
  for (const auto& f : fields) {
    for (const char* cname : {"lz4", "zstd", "blosclz"}) {
      for (int shuffle : {1, 2}) {
        SCOPED_TRACE(std::string(f.name) + " " + cname + " shuffle " + std::to_string(shuffle));
        const Buf enc = blosc_compress_oracle(f.data, cname, 5, shuffle, 4);
        ASSERT_EQ(decode(*codec, enc, f.data.size()), f.data);
      }
    }
  }
}

TEST(BloscOracle, BlosclzLongRuns) {
  BloscGlobals globals;
  auto codec = make_b2b("blosc");
  // long runs: match lengths continued over several 255 bytes
  Buf runs(300000, 0);
  for (std::size_t i = 0; i < runs.size(); i += 70000) runs[i] = 1;
  const Buf enc_runs = blosc_compress_oracle(runs, "blosclz", 9, 0, 1);
  EXPECT_LT(enc_runs.size(), 5000u);
  EXPECT_EQ(decode(*codec, enc_runs, runs.size()), runs);
}

TEST(BloscOracle, SizeMismatchTruncationAndCorruption) {
  BloscGlobals globals;
  auto codec = make_b2b("blosc");
  const Buf src = climate_bytes(50000);
  for (const char* cname : kCnames) {
    SCOPED_TRACE(cname);
    const Buf enc = blosc_compress_oracle(src, cname, 5, 1, 4, 4096);
    expect_error(ErrorCode::kSizeMismatch, [&] { decode(*codec, enc, src.size() - 1); });
    expect_error(ErrorCode::kCorruptData, [&] { decode(*codec, Buf(enc.begin(), enc.end() - 1), src.size()); });
    expect_error(ErrorCode::kCorruptData, [&] { decode(*codec, Buf(enc.begin(), enc.begin() + 16), src.size()); });
    std::mt19937 rng(17);
    for (int trial = 0; trial < 200; ++trial) {
      Buf bad = enc;
      const int flips = 1 + trial % 3;
      for (int f = 0; f < flips; ++f) bad[rng() % bad.size()] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
      expect_ok_or_error([&] { decode(*codec, bad, src.size()); });
    }
  }
}

TEST(BloscOracle, EmptyAndTinyBuffers) {
  BloscGlobals globals;
  auto codec = make_b2b("blosc");
  for (const char* cname : kCnames) {
    for (std::size_t n : {0, 1, 2, 3}) {
      const Buf src = random_bytes(n);
      const Buf enc = blosc_compress_oracle(src, cname, 9, 1, 4);
      EXPECT_EQ(decode(*codec, enc, n), src);
    }
  }
}

// decode_blocks: the blocks, in order and end to end, are the oracle's bytes; each is whole
// elements; a chunk whose blocks are not (or that decodes to another size) is refused before
// any block goes out, and a damaged one fails as decode() does.
Buf decode_by_blocks(const BytesToBytesCodec& c, const Buf& enc, std::size_t out_size, std::size_t align,
                     bool* taken = nullptr) {
  Buf out;
  std::size_t calls = 0;
  const bool ok = c.decode_blocks(ByteView(enc.data(), enc.size()), out_size, align,
                                  [&](std::size_t offset, const std::uint8_t* data, std::size_t bytes) {
                                    EXPECT_EQ(offset, out.size());
                                    EXPECT_EQ(bytes % align, 0u);
                                    out.insert(out.end(), data, data + bytes);
                                    ++calls;
                                  });
  if (taken) *taken = ok;
  if (!ok) EXPECT_EQ(calls, 0u);
  return out;
}

TEST(BloscOracle, BlocksHandedOnOneByOneEqualTheWholeDecode) {
  BloscGlobals globals;
  auto codec = make_b2b("blosc");
  int taken = 0;
  for (const char* cname : kCnames) {
    for (int shuffle = 0; shuffle <= 2; ++shuffle) {
      for (std::size_t typesize : {1, 2, 4, 8}) {
        for (std::size_t blocksize : {0, 256, 65536}) {
          for (std::size_t n : {std::size_t{0}, std::size_t{96}, std::size_t{100000}, std::size_t{262144}}) {
            const std::size_t bytes = n * typesize;
            const Buf src = climate_bytes(bytes);
            SCOPED_TRACE(std::string(cname) + " shuffle " + std::to_string(shuffle) + " typesize " +
                         std::to_string(typesize) + " blocksize " + std::to_string(blocksize) + " bytes " +
                         std::to_string(bytes));
            const Buf enc = blosc_compress_oracle(src, cname, 5, shuffle, typesize, blocksize);
            bool ok = false;
            const Buf got = decode_by_blocks(*codec, enc, src.size(), typesize, &ok);
            ASSERT_TRUE(ok);  // c-blosc keeps blocks whole elements of its typesize
            ASSERT_EQ(got, src);
            ++taken;
          }
        }
      }
    }
  }
  EXPECT_GT(taken, 400);
  // memcpyed: one piece, straight from the input
  const Buf data = climate_bytes(1000);
  bool ok = false;
  EXPECT_EQ(decode_by_blocks(*codec, memcpyed_container(data), data.size(), 4, &ok), data);
  EXPECT_TRUE(ok);
}

TEST(BloscOracle, BlockDecodeRefusesMisalignedBlocksAndFailsAsDecode) {
  BloscGlobals globals;
  auto codec = make_b2b("blosc");
  const Buf src = climate_bytes(3 * 4096 * 4 + 12);
  // blocks of 1000 bytes are not whole 8-byte elements: refused, nothing handed on
  const Buf odd = blosc_compress_oracle(src, "lz4", 5, 0, 1, 1000);
  bool ok = true;
  decode_by_blocks(*codec, odd, src.size(), 8, &ok);
  EXPECT_FALSE(ok);
  EXPECT_EQ(decode_by_blocks(*codec, odd, src.size(), 4, &ok), src);   // 1000 = 250 x 4
  EXPECT_TRUE(ok);
  const Buf enc = blosc_compress_oracle(src, "lz4", 5, 1, 4, 4096);
  // another decoded size than the header's
  expect_error(ErrorCode::kSizeMismatch, [&] { decode_by_blocks(*codec, enc, src.size() - 4, 4); });
  expect_error(ErrorCode::kSizeMismatch, [&] { decode_by_blocks(*codec, enc, src.size() + 4, 4); });
  expect_error(ErrorCode::kCorruptData, [&] { decode_by_blocks(*codec, Buf(enc.begin(), enc.end() - 1), src.size(), 4); });
  std::mt19937 rng(29);
  for (int trial = 0; trial < 300; ++trial) {
    Buf bad = enc;
    const int flips = 1 + trial % 3;
    for (int f = 0; f < flips; ++f) bad[rng() % bad.size()] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
    // Whatever a damaged chunk does, decode_blocks does the same: same error, or the same bytes.
    std::string whole_error, block_error;
    Buf whole, blocks;
    try {
      whole = decode(*codec, bad, src.size());
    } catch (const cubestream::Error& e) {
      whole_error = std::to_string(static_cast<int>(e.code()));
    }
    try {
      blocks = decode_by_blocks(*codec, bad, src.size(), 4);
    } catch (const cubestream::Error& e) {
      block_error = std::to_string(static_cast<int>(e.code()));
    }
    // decode() may stop short of the output (a header with fewer bytes: the chain then
    // refuses the size); decode_blocks refuses it at once.
    if (whole_error.empty() && whole.size() != src.size()) {
      whole_error = std::to_string(static_cast<int>(ErrorCode::kSizeMismatch));
    }
    ASSERT_EQ(whole_error, block_error) << "trial " << trial;
    if (whole_error.empty()) ASSERT_EQ(whole, blocks) << "trial " << trial;
  }
}

// CodecChain::decode_blocks takes a chain only where its decoded bytes are blosc's output as
// they are: `bytes` little-endian (this host's order) then blosc. A big-endian `bytes`, a
// transpose, a second bytes->bytes codec or a codec without blocks leave it to decode(); so
// does a multi-byte type whose `bytes` has no "endian", which decode() refuses.
TEST(BloscOracle, ChainsDecodeByBlocksOnlyWhereTheBytesAreBloscs) {
  BloscGlobals globals;
  using cubestream::codec::ChunkSpec;
  using cubestream::codec::CodecChain;
  using nlohmann::json;
  const ChunkSpec spec{cubestream::DataType::float_(4), {64, 100}, std::vector<std::uint8_t>(4, 0)};
  const Buf src = climate_bytes(spec.num_bytes());
  const Buf enc = blosc_compress_oracle(src, "lz4", 5, 1, 4, 4096);
  const json blosc = {{"name", "blosc"}, {"configuration", {{"cname", "lz4"}, {"clevel", 5}, {"shuffle", "shuffle"}, {"typesize", 4}, {"blocksize", 0}}}};
  const json little = {{"name", "bytes"}, {"configuration", {{"endian", "little"}}}};
  const auto blocks = [&](const CodecChain& chain, bool* taken) {
    Buf out;
    *taken = chain.decode_blocks(ByteView(enc.data(), enc.size()), spec,
                                 [&](std::size_t offset, const std::uint8_t* data, std::size_t bytes) {
                                   EXPECT_EQ(offset, out.size());
                                   out.insert(out.end(), data, data + bytes);
                                 });
    return out;
  };
  bool taken = false;
  EXPECT_EQ(blocks(CodecChain::from_json(json::array({little, blosc})), &taken), src);
  EXPECT_TRUE(taken);
  const json refused_chains[] = {
      json::array({{{"name", "bytes"}, {"configuration", {{"endian", "big"}}}}, blosc}),
      json::array({{{"name", "transpose"}, {"configuration", {{"order", {1, 0}}}}}, little, blosc}),
      json::array({little, {{"name", "zstd"}, {"configuration", {{"level", 3}}}}}),
      json::array({little, blosc, {{"name", "crc32c"}}})};
  for (const json& c : refused_chains) {
    const Buf out = blocks(CodecChain::from_json(c), &taken);
    EXPECT_FALSE(taken) << c.dump();
    EXPECT_TRUE(out.empty()) << c.dump();
  }
  const CodecChain no_endian = CodecChain::from_json(json::array({{{"name", "bytes"}}, blosc}));
  EXPECT_TRUE(blocks(no_endian, &taken).empty());
  EXPECT_FALSE(taken);
  Buf whole(spec.num_bytes());
  expect_error(ErrorCode::kInvalidMetadata, [&] {
    no_endian.decode(ByteView(enc.data(), enc.size()), spec, MutableByteView(whole.data(), whole.size()));
  });
}

#endif  // CUBESTREAM_TEST_HAVE_BLOSC

}  // namespace
}  // namespace cs_codec_test
