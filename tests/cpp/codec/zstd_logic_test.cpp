// The shared (host + GPU) Zstandard decoder in src/codec/logic/zstd, run on the host:
// byte-exact differential tests against libzstd's compressor over levels, frame options,
// data kinds and sizes; statuses for dictionaries, checksums and sizes; and thousands of
// seeded mutated and truncated frames that must give a non-ok status or libzstd's bytes
// (run it in the ASan build too: any out-of-bounds access fails there).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>

#include "codec/logic/zstd/decoder.hpp"
#include "codec/logic/zstd/execute_groups.hpp"
#include "codec/logic/zstd/sequence_trace.hpp"
#include "codec/logic/zstd/split.hpp"
#include "codec/logic/zstd/xxhash64.hpp"
#include "codec_test_util.hpp"
#include "zstd_test_data.hpp"

namespace {

namespace zl = cubestream::codec::logic::zstd;
using cubestream::codec::logic::DecodeStatus;
using cubestream::codec::logic::decode_status_name;
using namespace cs_zstd_test;

// The three passes of split.hpp (the GPU decoder's version 2), run here by one thread:
// plan the buffer (counting, then writing the steps), decode every compressed block's
// entropy, then execute the steps. When `reverse`, as the GPU runs them: pass 2a (literals,
// tables) for every block in reverse block order, each block with table space filled with
// garbage (a block needs nothing from the blocks decoded before it), then pass 2b (sequence
// streams, through `reader`) for every block from a garbage-filled copy of its tables;
// otherwise both halves of pass 2 per block, general reader only. Exact-size heap buffers, so that AddressSanitizer sees any overrun.
struct SplitStats {
  long blocks = 0;          // compressed blocks decoded
  long cross_refs = 0;      // ... whose tree or a sequence table was described by an earlier block
  long sym_records = 0;     // sequence records with a repeat offset resolved only at execution
  long bound_over = 0;      // buffers whose plan_buffer_bound counted more steps than the plan has
  long units = 0;           // units the emulated several-team execution completed ...
  long out_of_order = 0;    // ... while an earlier unit was not complete
  long waits = 0;           // times an emulated team waited for earlier units
};
SplitStats g_split;

// How pass 2b runs: in one serial pass with one of split.hpp's readers, or traced
// (sequence_trace.hpp: the chain's trace, then the records), the GPU's default.
enum class Pass2b { kGeneral, kFastBits, kWindow, kTraced };
const char* pass2b_name(Pass2b p) {
  return p == Pass2b::kGeneral ? "general" : p == Pass2b::kFastBits ? "bits" : p == Pass2b::kWindow ? "window" : "traced";
}

// Pass 2b of one block with needs_sequences(*st): `symbols` and `chain` are its two table sets
// (or copies of them), `blk` its scratch.
void run_pass_2b(const std::uint8_t* src, zl::BlockStep* st, const zl::SeqTables* symbols, const zl::ChainTables* chain,
                 std::uint8_t* blk, Pass2b pass) {
  static_assert(zl::TraceWindow::kRingWords >= zl::BackwardWordQueue::kRingWords, "one ring for both");
  zl::u64 ring[zl::TraceWindow::kRingWords];  // the GPU lane's stream ring (the larger of the two)
  if (pass == Pass2b::kTraced) {
    zl::decode_block_sequences_traced(src, st, chain, symbols, zl::seq_code_words(), blk, ring);
    return;
  }
  const zl::SeqReader reader = pass == Pass2b::kGeneral    ? zl::SeqReader::kGeneral
                               : pass == Pass2b::kFastBits ? zl::SeqReader::kFastBits
                                                           : zl::SeqReader::kWindow;
  zl::decode_block_sequences(src, st, symbols, blk, reader, zl::seq_code_words(), ring);
}

// A buffer after passes 1 and 2: its steps and their scratch.
struct SplitBuffer {
  std::vector<zl::BlockStep> steps;
  std::unique_ptr<std::uint8_t[]> scratch;
};

// Pass 3 by several teams (execute_groups.hpp), emulated on the host: `teams` SerialTeams,
// in turn (seed 0) or in a seeded random order. Adds to g_split's counts; a stall (no team
// can go on) fails the test.
DecodeStatus multi_team_execute(const std::uint8_t* src, SplitBuffer* b, std::uint8_t* dst, std::size_t size,
                                bool verify, std::uint32_t teams, std::uint64_t seed) {
  zl::UnitEmulationStats stats;
  const DecodeStatus s = zl::execute_units_emulated(src, b->steps.data(), b->steps.size(), b->scratch.get(), dst,
                                                    size, verify, teams, seed, &stats);
  EXPECT_EQ(stats.stalls, 0u) << "no team could go on";
  g_split.units += static_cast<long>(stats.units);
  g_split.out_of_order += static_cast<long>(stats.out_of_order);
  g_split.waits += static_cast<long>(stats.waits);
  return s;
}

std::uint64_t g_team_seed = 0;  // a new random order for every emulated several-team run

// Passes 1 and 2 of split_decode (see there).
SplitBuffer split_prepare(const std::uint8_t* src, std::size_t n, bool reverse, Pass2b pass) {
  short norm[zl::kFseMaxSymbols];
  zl::PlanTotals count{}, wrote{}, bound{};
  zl::plan_buffer(src, n, nullptr, 0, norm, &count);
  zl::plan_buffer_bound(src, n, norm, &bound);  // what the GPU reserves
  EXPECT_GE(bound.steps, count.steps);
  EXPECT_GE(bound.scratch, count.scratch);
  g_split.bound_over += bound.steps > count.steps;
  std::vector<zl::BlockStep> steps(count.steps);
  zl::plan_buffer(src, n, steps.data(), 0, norm, &wrote);
  EXPECT_EQ(count.steps, wrote.steps);
  EXPECT_EQ(count.scratch, wrote.scratch);
  if (count.steps && steps.back().kind != zl::kStepError) {  // no damaged description: the same
    EXPECT_EQ(bound.steps, count.steps);
    EXPECT_EQ(bound.scratch, count.scratch);
  }
  SplitBuffer b;
  b.scratch.reset(new std::uint8_t[count.scratch ? count.scratch : 1]);
  std::uint8_t* scratch = b.scratch.get();
  std::unique_ptr<zl::ZstdTables> tables(new zl::ZstdTables);
  for (std::size_t k = 0; k < steps.size(); ++k) {
    zl::BlockStep& st = steps[reverse ? steps.size() - 1 - k : k];
    if (st.kind != zl::kStepCompressed) continue;
    if (reverse) {
      std::memset(static_cast<void*>(tables.get()), 0xA5, sizeof(zl::ZstdTables));
      zl::decode_block_literals(zl::SerialTeam{}, src, &st, tables.get(), scratch + st.scratch);
    } else {
      zl::decode_block_entropy(zl::SerialTeam{}, src, &st, tables.get(), scratch + st.scratch);
    }
  }
  if (reverse) {
    // Pass 2b from copies of each block's tables, as the GPU's shared-memory slots.
    std::unique_ptr<zl::SeqTables> slot(new zl::SeqTables);
    std::unique_ptr<zl::ChainTables> chain(new zl::ChainTables);
    for (auto& st : steps) {
      if (!zl::needs_sequences(st)) continue;
      std::memset(static_cast<void*>(slot.get()), 0x5A, sizeof(zl::SeqTables));
      std::memset(static_cast<void*>(chain.get()), 0x5A, sizeof(zl::ChainTables));
      std::memcpy(static_cast<void*>(slot.get()), zl::step_seq_tables(st, scratch + st.scratch),
                  sizeof(zl::SeqTables));
      std::memcpy(static_cast<void*>(chain.get()), zl::step_chain_tables(st, scratch + st.scratch),
                  sizeof(zl::ChainTables));
      run_pass_2b(src, &st, slot.get(), chain.get(), scratch + st.scratch, pass);
    }
  }
  for (const auto& st : steps) {
    if (st.kind != zl::kStepCompressed) continue;
    ++g_split.blocks;
    bool cross = st.lit_type == 3;
    for (const auto& c : st.code) cross = cross || (st.nb_seq > 0 && c.at < st.at);
    g_split.cross_refs += cross;
    const auto* rec_ll = reinterpret_cast<const std::uint32_t*>(scratch + st.scratch + zl::step_lit_bytes(st));
    for (std::uint32_t i = 0; i < st.n_ok; ++i) g_split.sym_records += (rec_ll[i] & zl::kRecSym) != 0;
  }
  b.steps = std::move(steps);
  return b;
}

// Passes 1-3. Pass 3 runs as execute_steps (one team, steps in order), whose status this
// returns, and as the GPU's several-team execution emulated: one team taking the units in
// order, and eight taking them in a random order; both must give execute_steps' status and,
// when ok, its bytes.
DecodeStatus split_decode(const std::uint8_t* src, std::size_t n, std::uint8_t* dst, std::size_t size, bool verify,
                          bool reverse, Pass2b pass) {
  SplitBuffer b = split_prepare(src, n, reverse, pass);
  std::uint64_t acc[4];
  const DecodeStatus s =
      zl::execute_steps(zl::SerialTeam{}, src, b.steps.data(), b.steps.size(), b.scratch.get(), dst, size, verify, acc);
  for (const std::uint32_t teams : {1u, 8u}) {
    std::unique_ptr<std::uint8_t[]> out(new std::uint8_t[size ? size : 1]);
    for (std::size_t i = 0; i < size; ++i) out[i] = static_cast<std::uint8_t>(~dst[i]);  // every byte wrong at first
    const DecodeStatus m = multi_team_execute(src, &b, out.get(), size, verify, teams, teams == 1 ? 0 : ++g_team_seed);
    EXPECT_STREQ(decode_status_name(m), decode_status_name(s)) << teams << " teams vs execute_steps";
    if (s == DecodeStatus::kOk && m == DecodeStatus::kOk) {
      EXPECT_TRUE(size == 0 || std::memcmp(out.get(), dst, size) == 0) << teams << " teams: bytes differ";
    }
  }
  return s;
}

// Decodes into a heap buffer of exactly `size` bytes (so AddressSanitizer sees any write
// past it) with a fresh heap workspace. Every call also runs the split passes, which must give
// the same status and, when ok, the same bytes.
DecodeStatus shared_decode(const Bytes& enc, std::size_t size, Bytes* out, bool verify = true) {
  static std::unique_ptr<zl::ZstdWorkspace> ws(new zl::ZstdWorkspace);
  static int calls = 0;
  std::unique_ptr<std::uint8_t[]> dst(new std::uint8_t[size ? size : 1]);
  std::unique_ptr<std::uint8_t[]> src(new std::uint8_t[enc.size() ? enc.size() : 1]);
  if (!enc.empty()) std::memcpy(src.get(), enc.data(), enc.size());
  const DecodeStatus s = zl::zstd_decompress(zl::SerialTeam{}, src.get(), enc.size(), dst.get(), size, ws.get(), verify);
  out->assign(dst.get(), dst.get() + size);
  std::unique_ptr<std::uint8_t[]> dst2(new std::uint8_t[size ? size : 1]());
  // Calls alternate between the forward order and the GPU's order, whose pass 2b takes turns
  // traced (the GPU's default), with the word window and with the fast bit reader.
  const int call = calls++;
  const Pass2b turn[3] = {Pass2b::kTraced, Pass2b::kWindow, Pass2b::kFastBits};
  const DecodeStatus s2 = split_decode(src.get(), enc.size(), dst2.get(), size, verify, call % 2 == 1, turn[(call / 2) % 3]);
  EXPECT_STREQ(decode_status_name(s2), decode_status_name(s)) << "split passes vs one pass, call " << calls;
  if (s == DecodeStatus::kOk && s2 == DecodeStatus::kOk) {
    EXPECT_TRUE(std::memcmp(dst.get(), dst2.get(), size) == 0) << "split passes: bytes differ, call " << calls;
  }
  return s;
}

std::string status(DecodeStatus s) { return decode_status_name(s); }

// Decodes with the shared decoder and expects exactly `want`.
void expect_decodes(const Bytes& enc, const Bytes& want) {
  Bytes got;
  const DecodeStatus s = shared_decode(enc, want.size(), &got);
  ASSERT_EQ(status(s), "ok");
  ASSERT_TRUE(got == want) << "decoded bytes differ (first at "
                           << (std::mismatch(got.begin(), got.end(), want.begin()).first - got.begin()) << ")";
}

int g_cases = 0;  // differential cases run, printed at the end of the big sweep

TEST(ZstdLogic, Xxh64CheckValues) {
  const std::uint8_t* none = reinterpret_cast<const std::uint8_t*>("");
  EXPECT_EQ(zl::xxh64(none, 0, 0), 0xEF46DB3751D8E999ull);
  EXPECT_EQ(zl::xxh64(reinterpret_cast<const std::uint8_t*>("a"), 1, 0), 0xD24EC4F1A98C6E5Bull);
  // Every tail length and the stripe loop: checked through libzstd's frame checksums, which
  // are the low 32 bits of the same hash.
  for (std::size_t n : {1u, 3u, 4u, 7u, 8u, 31u, 32u, 33u, 63u, 64u, 100u, 1000u}) {
    const Bytes src = cs_codec_test::random_bytes(n, 7 + static_cast<std::uint32_t>(n));
    const Bytes enc = zstd_frame(src, {1, true, true});
    const std::uint32_t stored = zl::load_le32(enc.data() + enc.size() - 4);
    EXPECT_EQ(static_cast<std::uint32_t>(zl::xxh64(src.data(), n, 0)), stored) << n;
  }
}

TEST(ZstdLogic, EveryLevelEveryDataKind) {
  std::vector<int> levels;
  for (int l = -5; l <= 19; ++l) levels.push_back(l);
  levels.push_back(22);
  int combo = 0;
  for (const auto& kind : cs_codec_test::kDataKinds) {
    for (int level : levels) {
      for (std::size_t n : {std::size_t(1000), std::size_t(300 * 1024 + 7)}) {
        if (level >= 17 && n > 100000) n = 160 * 1024 + 3;  // slow levels: still two blocks
        const Bytes src = kind.make(n);
        const ZstdOptions o{level, combo % 2 == 0, (combo / 2) % 2 == 0};
        ++combo;
        SCOPED_TRACE(std::string(kind.name) + " n=" + std::to_string(n) + " level " + std::to_string(level) +
                     " content_size " + std::to_string(o.content_size) + " checksum " + std::to_string(o.checksum));
        expect_decodes(zstd_frame(src, o), src);
        ++g_cases;
      }
    }
  }
  std::printf("[ZstdLogic] %d level x data-kind differential cases byte-exact\n", combo);
}

TEST(ZstdLogic, Era5LikeMultiMegabyteFields) {
  for (int level : {1, 3, 5, 9}) {
    const Bytes src = era5_bytes(4u << 20, 11 + level);  // 4 MiB: 32 blocks of 128 KiB
    SCOPED_TRACE("level " + std::to_string(level));
    expect_decodes(zstd_plain(src, level), src);
    ++g_cases;
  }
  const Bytes big = era5_bytes(9u << 20, 5);
  expect_decodes(zstd_frame(big, {3, false, true}), big);
  expect_decodes(zstd_frame(big, {-3, true, true}), big);
  g_cases += 2;
}

TEST(ZstdLogic, LongDistanceMatchingAndUltra) {
  // 6 MiB where the second half repeats the first 3 MiB back: only long-distance matching
  // (or a 2^23+ window) finds it.
  Bytes a = era5_bytes(3u << 20, 21);
  Bytes src = a;
  src.insert(src.end(), a.begin(), a.end());
  for (int level : {1, 3, 19}) {
    SCOPED_TRACE("ldm level " + std::to_string(level));
    const Bytes enc = zstd_frame(src, {level, true, level == 3, true, 27});
    EXPECT_LT(enc.size(), src.size() * 3 / 4);  // the repeat was found
    expect_decodes(enc, src);
    ++g_cases;
  }
  const Bytes ultra_src = era5_bytes(1u << 20, 3);
  expect_decodes(zstd_frame(ultra_src, {22, true, true}), ultra_src);
  expect_decodes(zstd_frame(ultra_src, {22, false, false, false, 27}), ultra_src);
  g_cases += 2;
}

TEST(ZstdLogic, StreamedFramesWithoutContentSizeAndSmallBlocks) {
  const Bytes src = cs_codec_test::quantised_bytes(700 * 1024 + 11);
  for (std::size_t piece : {std::size_t(333), std::size_t(5000), std::size_t(50000)}) {
    for (int level : {1, 7}) {
      SCOPED_TRACE("piece " + std::to_string(piece) + " level " + std::to_string(level));
      const Bytes enc = zstd_streamed(src, level, piece, piece == 5000);
      ASSERT_EQ(ZSTD_getFrameContentSize(enc.data(), enc.size()), ZSTD_CONTENTSIZE_UNKNOWN);
      expect_decodes(enc, src);
      ++g_cases;
    }
  }
}

TEST(ZstdLogic, SeveralFramesAndSkippableFrames) {
  const Bytes a = cs_codec_test::climate_bytes(40000), b = cs_codec_test::random_bytes(3000);
  const Bytes c = cs_codec_test::repetitive_bytes(300000);
  const Bytes enc = cat({skippable(0, cs_codec_test::random_bytes(17)), zstd_frame(a, {1, true, true}),
                         zstd_frame(b, {-3, false, false}), skippable(15, {}), zstd_streamed(c, 9, 7000, true),
                         skippable(7, cs_codec_test::random_bytes(5)), zstd_frame({}, {3, true, true})});
  expect_decodes(enc, cat({a, b, c}));
  Bytes got;
  EXPECT_EQ(status(shared_decode(enc, a.size() + b.size() + c.size() - 1, &got)), "wrong size");
  EXPECT_EQ(status(shared_decode(enc, a.size() + b.size() + c.size() + 1, &got)), "wrong size");
  // only skippable frames, and no input at all: nothing decoded
  expect_decodes(skippable(3, cs_codec_test::random_bytes(9)), {});
  expect_decodes({}, {});
  // a skippable frame claiming more than there is
  Bytes cut = skippable(1, cs_codec_test::random_bytes(30));
  cut.resize(20);
  EXPECT_EQ(status(shared_decode(cut, 0, &got)), "corrupt");
  g_cases += 3;
}

TEST(ZstdLogic, EmptyOneByteIncompressibleRepetitive) {
  for (bool cs : {true, false}) {
    for (bool ck : {true, false}) {
      expect_decodes(zstd_frame({}, {3, cs, ck}), {});
      expect_decodes(zstd_frame({42}, {3, cs, ck}), {42});
      Bytes got;
      EXPECT_EQ(status(shared_decode(zstd_frame({42}, {3, cs, ck}), 0, &got)), "wrong size");
      g_cases += 2;
    }
  }
  const Bytes rnd = cs_codec_test::random_bytes(1u << 20, 99);  // raw blocks
  expect_decodes(zstd_frame(rnd, {3, true, true}), rnd);
  const Bytes zeros(3u << 20, 0);  // RLE blocks
  const Bytes enc = zstd_frame(zeros, {3, true, true});
  EXPECT_LT(enc.size(), 200u);
  expect_decodes(enc, zeros);
  Bytes rep = cs_codec_test::repetitive_bytes(2u << 20, 5);
  for (int level : {-5, 1, 19}) expect_decodes(zstd_frame(rep, {level, true, false}), rep);
  g_cases += 5;
}

// libzstd writes Huffman weights as direct 4-bit values (RFC 8878 section 4.2.1.1, header
// byte >= 128) when the alphabet is small and FSE would not save space: random bytes over 16
// symbols. The test checks that the first block really uses that form.
TEST(ZstdLogic, DirectHuffmanWeights) {
  int direct = 0;
  for (unsigned alphabet : {3u, 16u, 20u, 60u, 100u}) {
    Bytes src = cs_codec_test::random_bytes(200000, alphabet);
    for (auto& b : src) b = static_cast<std::uint8_t>(b % alphabet);
    const Bytes enc = zstd_frame(src, {3, true, true});
    zl::FrameHeader h;
    ASSERT_EQ(status(zl::parse_frame_header(enc.data(), enc.size(), &h)), "ok");
    const std::uint8_t* block = enc.data() + h.header_bytes + 3;
    const unsigned lit_type = block[0] & 3, size_format = (block[0] >> 2) & 3;
    if (lit_type == 2) {
      const std::size_t lit_header = size_format <= 1 ? 3 : size_format == 2 ? 4 : 5;
      if (block[lit_header] >= 128) ++direct;
    }
    SCOPED_TRACE("alphabet " + std::to_string(alphabet));
    expect_decodes(enc, src);
    ++g_cases;
  }
  EXPECT_GT(direct, 0) << "no frame used direct 4-bit Huffman weights";
}

TEST(ZstdLogic, RealClimateDataFromTheDemoStore) {
  // data/demo holds CMIP5 fields as a Zarr v2 store compressed with blosc-lz4; decode each
  // chunk with the library's blosc codec and compress it with zstd at several levels.
  const std::string dir = std::string(CUBESTREAM_SOURCE_DIR) + "/data/demo/cmip5_2005.zarr";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "no demo store at " << dir;
  auto blosc = cs_codec_test::make_b2b("blosc");
  Bytes all;
  int chunks = 0;
  for (const char* var : {"tas", "uas", "vas"}) {
    for (int t = 0; t < 12; ++t) {
      const std::string path = dir + "/" + var + "/" + std::to_string(t) + ".0.0";
      if (!std::filesystem::exists(path)) continue;
      const Bytes enc = cs_codec_test::read_file(path);
      const Bytes raw = cs_codec_test::decode(*blosc, enc, 96 * 192 * 4);
      ASSERT_EQ(raw.size(), 96u * 192u * 4u);
      all.insert(all.end(), raw.begin(), raw.end());
      ++chunks;
    }
  }
  ASSERT_GT(chunks, 0);
  for (int level : {1, 3, 5, 12, 19}) {
    SCOPED_TRACE("level " + std::to_string(level));
    expect_decodes(zstd_plain(all, level), all);
    const Bytes one(all.begin(), all.begin() + 96 * 192 * 4);
    expect_decodes(zstd_plain(one, level), one);
    g_cases += 2;
  }
}

TEST(ZstdLogic, DictionaryFramesSayNeedsADictionary) {
  Bytes samples;
  std::vector<std::size_t> sizes;
  for (int i = 0; i < 200; ++i) {
    const Bytes s = cs_codec_test::repetitive_bytes(600, 100 + i);
    samples.insert(samples.end(), s.begin(), s.end());
    sizes.push_back(s.size());
  }
  Bytes dict(2048);
  const std::size_t dn = ZDICT_trainFromBuffer(dict.data(), dict.size(), samples.data(), sizes.data(),
                                               static_cast<unsigned>(sizes.size()));
  ASSERT_FALSE(ZDICT_isError(dn)) << ZDICT_getErrorName(dn);
  dict.resize(dn);
  const Bytes src = cs_codec_test::repetitive_bytes(10000, 9);
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  Bytes enc(ZSTD_compressBound(src.size()));
  const std::size_t n =
      ZSTD_compress_usingDict(cctx, enc.data(), enc.size(), src.data(), src.size(), dict.data(), dict.size(), 3);
  ZSTD_freeCCtx(cctx);
  ASSERT_FALSE(ZSTD_isError(n));
  enc.resize(n);
  ASSERT_NE(ZSTD_getDictID_fromFrame(enc.data(), enc.size()), 0u);
  Bytes got;
  EXPECT_EQ(status(shared_decode(enc, src.size(), &got)), "needs a dictionary");
}

TEST(ZstdLogic, ChecksumMismatchOnlyWhenVerifying) {
  const Bytes src = era5_bytes(500000, 4);
  Bytes enc = zstd_frame(src, {3, true, true});
  enc[enc.size() - 2] ^= 0x10;  // the stored checksum
  Bytes got;
  EXPECT_EQ(status(shared_decode(enc, src.size(), &got, true)), "checksum mismatch");
  EXPECT_EQ(status(shared_decode(enc, src.size(), &got, false)), "ok");
  EXPECT_TRUE(got == src);
  // the content changed instead (a raw block's byte): the checksum catches it
  Bytes rnd = cs_codec_test::random_bytes(5000, 8);
  Bytes enc2 = zstd_frame(rnd, {3, true, true});
  enc2[enc2.size() - 100] ^= 1;
  EXPECT_EQ(status(shared_decode(enc2, rnd.size(), &got, true)), "checksum mismatch");
}

TEST(ZstdLogic, HeaderErrors) {
  const Bytes src = cs_codec_test::climate_bytes(50000);
  const Bytes enc = zstd_frame(src, {3, true, false});
  Bytes got;
  Bytes bad = enc;
  bad[0] ^= 1;  // magic
  EXPECT_EQ(status(shared_decode(bad, src.size(), &got)), "corrupt");
  // a window over 2^31 (allowed by the format, refused by libzstd): unsupported, as on the CPU
  const Bytes streamed = zstd_streamed(src, 3, 10000, false);  // has a Window_Descriptor
  bad = streamed;
  bad[5] = 0xF8;  // exponent 31: windowLog 41
  EXPECT_EQ(status(shared_decode(bad, src.size(), &got)), "unsupported feature");
  bad = enc;
  bad[4] |= 0x08;  // reserved descriptor bit
  EXPECT_EQ(status(shared_decode(bad, src.size(), &got)), "corrupt");
  // a reserved block type (3) in the first block header
  zl::FrameHeader h;
  ASSERT_EQ(status(zl::parse_frame_header(enc.data(), enc.size(), &h)), "ok");
  bad = enc;
  bad[h.header_bytes] |= 0x06;
  EXPECT_EQ(status(shared_decode(bad, src.size(), &got)), "corrupt");
  // content size larger than the output: wrong size before anything is decoded
  EXPECT_EQ(status(shared_decode(enc, src.size() - 1, &got)), "wrong size");
  for (std::size_t cut : {std::size_t(1), std::size_t(4), std::size_t(5), h.header_bytes, h.header_bytes + 2,
                          enc.size() / 2, enc.size() - 1}) {
    Bytes t(enc.begin(), enc.begin() + cut);
    EXPECT_NE(status(shared_decode(t, src.size(), &got)), "ok") << cut;
  }
}

// Thousands of seeded damaged frames: flipped bits, random bytes, truncations, inserted and
// deleted bytes. The decoder must return a status and, when it says ok, match libzstd.
TEST(ZstdLogic, MutatedAndTruncatedFramesNeverMisbehave) {
  std::vector<std::pair<Bytes, std::size_t>> seeds;  // (frame, decoded size)
  int k = 0;
  for (const auto& kind : cs_codec_test::kDataKinds) {
    for (int level : {-3, 1, 3, 9, 19}) {
      const Bytes src = kind.make(level == 19 ? 20000 : 70000 + 13 * k);
      seeds.emplace_back(zstd_frame(src, {level, k % 2 == 0, k % 3 == 0}), src.size());
      ++k;
    }
  }
  const Bytes era = era5_bytes(200000, 3);
  seeds.emplace_back(zstd_streamed(era, 5, 30000, true), era.size());
  std::mt19937 rng(20261117);
  int ok = 0, rejected = 0, lenient = 0, runs = 0;
  for (int iter = 0; iter < 6000; ++iter) {
    const auto& [frame, size] = seeds[iter % seeds.size()];
    Bytes m = frame;
    const int kind = static_cast<int>(rng() % 6);
    const std::size_t at = rng() % m.size();
    switch (kind) {
      case 0: m[at] ^= static_cast<std::uint8_t>(1u << (rng() % 8)); break;
      case 1: for (int j = 0; j < 4; ++j) m[rng() % m.size()] = static_cast<std::uint8_t>(rng()); break;
      case 2: m.resize(at); break;
      case 3: m.insert(m.begin() + at, static_cast<std::uint8_t>(rng())); break;
      case 4: m.erase(m.begin() + at); break;
      case 5: m[at % 40] = static_cast<std::uint8_t>(rng()); break;  // headers, literals section
    }
    // sometimes the output size is off as well
    const std::size_t out_size = (rng() % 8 == 0) ? size + (rng() % 3) - 1 : size;
    Bytes ours, ref;
    const bool verify = rng() % 2 == 0;
    const DecodeStatus s = shared_decode(m, out_size, &ours, verify);
    const char* why = "";
    const bool ref_ok = libzstd_decode(m, out_size, &ref, &why);
    ++runs;
    if (s == DecodeStatus::kOk) {
      ++ok;
      if (ref_ok) {
        ASSERT_TRUE(ours == ref) << "iteration " << iter << ": ok, but bytes differ from libzstd";
      } else {
        // Accepted where libzstd refuses: only a checksum we were told not to check may do that.
        ++lenient;
        EXPECT_FALSE(verify) << "iteration " << iter << ": accepted a frame libzstd refuses (" << why
                             << "), mutation " << kind << " at " << at << " of " << frame.size();
      }
    } else {
      ++rejected;
    }
  }
  std::printf("[ZstdLogic] %d damaged frames: %d decoded (%d where libzstd refused), %d rejected; %ld planned "
              "with more steps reserved than written\n",
              runs, ok, lenient, rejected, g_split.bound_over);
  EXPECT_GT(rejected, runs / 2);
  EXPECT_GT(g_split.bound_over, 0) << "no damaged table description: the plan's bound was never loose";
}

// Multi-block frames use what version 2 must carry between blocks: treeless
// literals and Repeat_Mode tables (described by an earlier block) and repeat offsets that
// reach back past the block start (stored symbolically by the entropy pass). This checks that
// the corpus above really exercised them, and one frame in isolation.
TEST(ZstdLogic, SplitPassesCarryTablesAndRepeatOffsetsAcrossBlocks) {
  const SplitStats before = g_split;
  for (const auto& kind : cs_codec_test::kDataKinds) {
    const Bytes src = kind.make(1u << 20);
    for (int level : {1, 3, 5}) {
      expect_decodes(zstd_plain(src, level), src);
      expect_decodes(zstd_streamed(src, level, 20000, false), src);
    }
  }
  EXPECT_GT(g_split.cross_refs - before.cross_refs, 0) << "no block reused an earlier block's table";
  EXPECT_GT(g_split.sym_records - before.sym_records, 0) << "no symbolic repeat offset";
  std::printf("[ZstdLogic] split passes so far: %ld compressed blocks, %ld with tables from earlier blocks, %ld "
              "symbolic repeat offsets\n",
              g_split.blocks, g_split.cross_refs, g_split.sym_records);
}

// The plan of a buffer: one step per frame, block and frame end, errors as a last step in
// the place the one-pass decoder finds them.
TEST(ZstdLogic, SplitPlanSteps) {
  short norm[zl::kFseMaxSymbols];
  const Bytes a = era5_bytes(300000, 8);
  const Bytes enc = cat({skippable(2, cs_codec_test::random_bytes(10)), zstd_frame(a, {3, true, true}),
                         zstd_frame({}, {1, false, false})});
  zl::PlanTotals t{};
  zl::plan_buffer(enc.data(), enc.size(), nullptr, 0, norm, &t);
  std::vector<zl::BlockStep> steps(t.steps);
  zl::plan_buffer(enc.data(), enc.size(), steps.data(), 0, norm, &t);
  // 300000 bytes: 3 blocks (128 KiB max); the empty frame has one empty raw block.
  ASSERT_EQ(steps.size(), 1u + 3 + 1 + 1 + 1 + 1);
  EXPECT_EQ(steps[0].kind, zl::kStepFrame);
  EXPECT_EQ(steps[0].size, a.size());
  EXPECT_EQ(steps[0].flags, zl::kStepHasContentSize | zl::kStepHasChecksum);
  for (int k = 1; k <= 3; ++k) EXPECT_EQ(steps[k].kind, zl::kStepCompressed);
  EXPECT_EQ(steps[4].kind, zl::kStepFrameEnd);
  EXPECT_EQ(steps[5].kind, zl::kStepFrame);
  EXPECT_EQ(steps[6].kind, zl::kStepRaw);
  EXPECT_EQ(steps[6].size, 0u);
  EXPECT_EQ(steps[7].kind, zl::kStepFrameEnd);
  std::uint64_t need = 0;
  for (const auto& s : steps) need += s.kind == zl::kStepCompressed ? zl::step_scratch_bytes(s) : 0;
  EXPECT_EQ(need, t.scratch);
  // cut inside the second block: the first block stays, then an error step
  const Bytes cut(enc.begin(), enc.begin() + static_cast<long>(steps[2].at + 10));
  zl::plan_buffer(cut.data(), cut.size(), nullptr, 0, norm, &t);
  std::vector<zl::BlockStep> cs(t.steps);
  zl::plan_buffer(cut.data(), cut.size(), cs.data(), 0, norm, &t);
  ASSERT_EQ(cs.size(), 3u);
  EXPECT_EQ(cs[1].kind, zl::kStepCompressed);
  EXPECT_EQ(cs[2].kind, zl::kStepError);
  EXPECT_EQ(cs[2].status, static_cast<std::uint32_t>(DecodeStatus::kCorrupt));
}

// The one-word form of the literal- and match-length code tables (seq_code_word, looked up
// by the word-window reader) against the tables of section 3.1.1.3.2.1.1, every code; and the
// host's copy of it.
TEST(ZstdLogic, LengthCodeWordsMatchTheTables) {
  const zl::u32* words = zl::seq_code_words();
  for (std::uint32_t c = 0; c <= zl::kLlMaxSymbol; ++c) {
    EXPECT_EQ(words[c] & 0xFFFFFFu, zl::ll_base(c)) << "literal-length code " << c;
    EXPECT_EQ(words[c] >> 24, zl::ll_bits(c)) << "literal-length code " << c;
  }
  for (std::uint32_t c = 0; c <= zl::kMlMaxSymbol; ++c) {
    EXPECT_EQ(words[zl::kMlCodeWordAt + c] & 0xFFFFFFu, zl::ml_base(c)) << "match-length code " << c;
    EXPECT_EQ(words[zl::kMlCodeWordAt + c] >> 24, zl::ml_bits(c)) << "match-length code " << c;
  }
  EXPECT_EQ(zl::kMlCodeWordAt + zl::kMlMaxSymbol + 1, zl::kSeqCodeWords);
  for (zl::u32 n = 0; n <= 32; ++n) EXPECT_EQ(zl::low_mask(n), n == 32 ? ~0u : (1u << n) - 1) << n;
}

// The window loop's 32-bit repeat offsets (split.hpp, sym32_from): symbolic entries with up to
// a block's worth of decrements and real offsets below 2^31 round-trip, decrement as the 64-bit
// form does, and store the same records.
TEST(ZstdLogic, ThirtyTwoBitRepeatOffsetsMatchTheSixtyFourBitForm) {
  std::vector<zl::u64> entries;
  for (zl::u32 idx = 0; idx < 3; ++idx) {
    for (zl::u64 sub : std::vector<zl::u64>{0, 1, 2, 1000, zl::kMaxStoredSeqs, zl::kSym32Base / 2 - 1}) {
      entries.push_back(zl::sym_rep(idx) - sub);
    }
  }
  for (zl::u64 off : {1ull, 2ull, 3ull, 4ull, 65536ull, 0x7FFFFFFFull}) entries.push_back(off);
  for (zl::u64 e : entries) {
    ASSERT_TRUE(zl::sym32_fits(e)) << std::hex << e;
    const zl::u32 v = zl::sym32_from(e);
    EXPECT_EQ(zl::sym32_to64(v), e) << std::hex << e;
    if (e > 1) EXPECT_EQ(zl::sym32_to64(v - 1), e - 1) << std::hex << e;  // the format's rep[0] - 1
    EXPECT_NE(v, 0u);
    zl::u32 a[3][4], b[3][4];
    zl::detail::store_record(a[0], a[1], a[2], 2, 77, 9, e);
    zl::detail::record32_words(77, v, &b[0][2], &b[2][2]);  // the window loop's record words
    b[1][2] = 9;
    for (int k = 0; k < 3; ++k) EXPECT_EQ(a[k][2], b[k][2]) << "array " << k << ", entry " << std::hex << e;
  }
  EXPECT_FALSE(zl::sym32_fits(0x80000000ull));
  EXPECT_FALSE(zl::sym32_fits(zl::sym_rep(1) - zl::kSym32Base / 2));
  // The flat update on both forms, every Offset_Value class and literal length 0 or not, from
  // lists mixing real and symbolic entries.
  std::mt19937 rng(7);
  for (int t = 0; t < 20000; ++t) {
    zl::RepeatOffsets r64{{zl::sym_rep(0) - rng() % 3, zl::sym_rep(1), rng() % 2 ? zl::u64(1 + rng() % 3) : zl::sym_rep(2)}};
    zl::u32 r32[3] = {zl::sym32_from(r64.rep[0]), zl::sym32_from(r64.rep[1]), zl::sym32_from(r64.rep[2])};
    for (int q = 0; q < 8; ++q) {
      const zl::u32 of_value = rng() % 2 ? 1 + rng() % 3 : 4 + rng() % 100000;
      const zl::u32 ll = rng() % 3 == 0 ? 0 : 1 + rng() % 40;
      zl::u64 o64 = 0;
      zl::u32 o32 = 0;
      const bool ok64 = zl::update_repeat_offsets(&r64, of_value, ll, &o64) == DecodeStatus::kOk;
      const bool ok32 = zl::update_repeat_offsets_flat(r32, of_value, ll, &o32);
      ASSERT_EQ(ok64, ok32) << "trial " << t;
      if (!ok64) break;
      ASSERT_EQ(zl::sym32_to64(o32), o64) << "trial " << t;
      for (int k = 0; k < 3; ++k) ASSERT_EQ(zl::sym32_to64(r32[k]), r64.rep[k]) << "trial " << t << ", rep " << k;
    }
  }
}

// Pass 2b of one block (step `st`, tables `t` and `chain`, scratch `blk`) each way: the fast
// and window readers and the traced pass must give the general reader's status, record count,
// repeat offsets, records 0..n_ok of each array (step_rec_stride long, one after another) and
// group table (entries 0 to ceil(n_ok / 32)). *ref gets the general reader's result.
void expect_sequence_readers_agree(const std::uint8_t* src, const zl::BlockStep& st, const zl::SeqTables* t,
                                   const zl::ChainTables* chain, std::uint8_t* blk, zl::BlockStep* ref) {
  const std::size_t rec_bytes = std::size_t(12) * zl::step_rec_stride(st);
  std::uint8_t* recs = blk + zl::step_lit_bytes(st);
  auto* groups = reinterpret_cast<zl::GroupStart*>(blk + zl::step_groups_at(st));
  const std::size_t group_bytes = sizeof(zl::GroupStart) * zl::step_group_entries(st);
  std::vector<std::uint8_t> first, first_groups;
  for (Pass2b pass : {Pass2b::kGeneral, Pass2b::kFastBits, Pass2b::kWindow, Pass2b::kTraced}) {
    zl::BlockStep s = st;
    std::memset(recs, 0xEE, rec_bytes);
    std::memset(static_cast<void*>(groups), 0xEE, group_bytes);
    run_pass_2b(src, &s, t, chain, blk, pass);
    const auto* g = reinterpret_cast<const std::uint8_t*>(groups);
    if (pass == Pass2b::kGeneral) {
      *ref = s;
      first.assign(recs, recs + rec_bytes);
      first_groups.assign(g, g + group_bytes);
      continue;
    }
    SCOPED_TRACE(std::string("pass 2b ") + pass2b_name(pass));
    ASSERT_EQ(s.status, ref->status);
    ASSERT_EQ(s.n_ok, ref->n_ok);
    for (int q = 0; q < 3; ++q) EXPECT_EQ(s.reps_end[q], ref->reps_end[q]);
    for (int a = 0; a < 3; ++a) {
      const std::size_t at = std::size_t(4) * zl::step_rec_stride(st) * a, len = std::size_t(4) * s.n_ok;
      ASSERT_EQ(std::memcmp(recs + at, first.data() + at, len), 0) << "array " << a;
    }
    const std::size_t used = sizeof(zl::GroupStart) * ((s.n_ok + zl::kGroupSeqs - 1) / zl::kGroupSeqs + 1);
    ASSERT_EQ(std::memcmp(g, first_groups.data(), used), 0) << "group table";
  }
}

// The ChainTables entry of a SeqTables entry of a table of this log and code `code` (0 literal
// lengths, 1 match lengths, 2 offsets): (k << 5) | the symbol's extra-bit count, as pass 2a
// packs it.
zl::u16 chain_of(zl::u16 packed, zl::u32 log, int code) {
  const zl::FseEntry e = zl::unpack_seq_entry(packed, log);
  const zl::u32 extra = code == 0 ? zl::ll_bits(e.symbol) : code == 1 ? zl::ml_bits(e.symbol) : e.symbol;
  return zl::pack_chain_entry(e, log, extra);
}

// The readers of pass 2b and the traced pass on streams no encoder writes: random bits read
// with small hand-made tables whose offset codes include 31 (offsets of 2^31 and more, which
// the window loop hands to the general reader), 29-30 (with the longest length codes,
// sequences of more than 64 bits, after which the window reader's and the trace's rings must
// have copied two words) and 0-1 (repeat offsets, "rep[0] - 1" included), and length codes
// with the most extra bits. The same status, records, group table and repeat offsets from each.
TEST(ZstdLogic, SequenceReadersAgreeOnCraftedStreams) {
  std::mt19937 rng(20261123);
  long handed_over = 0;
  for (int trial = 0; trial < 300; ++trial) {
    // Tables of log 2, four symbols of probability 1 each: every state reads 2 bits and may go
    // to any state (k = 1: nbits = log, base = 0).
    std::unique_ptr<zl::SeqTables> t(new zl::SeqTables{});
    t->ll_log = t->ml_log = t->of_log = 2;
    const zl::u32 of_syms[4] = {trial % 3 == 0 ? 31u : 28u + trial % 3, static_cast<zl::u32>(rng() % 2),
                                static_cast<zl::u32>(1 + rng() % 20), static_cast<zl::u32>(rng() % 2)};
    for (zl::u32 k = 0; k < 4; ++k) {
      t->ll[k] = static_cast<zl::u16>(1u << 6 | (rng() % 4 == 0 ? 35 - rng() % 6 : rng() % 20));
      t->ml[k] = static_cast<zl::u16>(1u << 6 | (rng() % 4 == 0 ? 52 - rng() % 6 : rng() % 40));
      t->of[k] = static_cast<zl::u16>(1u << 6 | of_syms[k]);
    }
    zl::BlockStep st{};
    st.kind = zl::kStepCompressed;
    st.nb_seq = st.seq_cap = 200 + rng() % 800;
    const std::size_t stream_bytes = std::size_t(st.nb_seq) * 14 + 16;
    Bytes src(16 + stream_bytes);
    for (auto& c : src) c = static_cast<std::uint8_t>(rng());
    src.back() |= 0x80;  // the stream's end marker
    st.seq_at = 16;
    st.seq_avail = stream_bytes;
    std::unique_ptr<zl::ChainTables> chain(new zl::ChainTables{});
    chain->ll_log = chain->ml_log = chain->of_log = 2;
    for (zl::u32 k = 0; k < 4; ++k) {
      chain->ll[k] = chain_of(t->ll[k], 2, 0);
      chain->ml[k] = chain_of(t->ml[k], 2, 1);
      chain->of[k] = chain_of(t->of[k], 2, 2);
    }
    std::vector<std::uint8_t> blk(zl::step_scratch_bytes(st));
    zl::BlockStep ref{};
    SCOPED_TRACE("trial " + std::to_string(trial));
    expect_sequence_readers_agree(src.data(), st, t.get(), chain.get(), blk.data(), &ref);
    if (::testing::Test::HasFatalFailure()) return;
    handed_over += trial % 3 == 0 && ref.n_ok > 4;
  }
  EXPECT_GT(handed_over, 50);  // streams where offset code 31 occurs after the window loop began
}

// Pass 2b block by block with each SeqReader, from the same pass-2a output: the same status,
// record count, records and repeat offsets, on intact frames of every data kind and level and
// on frames with damaged sequence sections (where the readers must stop at the same record).
TEST(ZstdLogic, SequenceReadersGiveTheSameRecords) {
  short norm[zl::kFseMaxSymbols];
  std::vector<Bytes> frames;
  for (const auto& kind : cs_codec_test::kDataKinds) {
    const Bytes src = kind.make(300000);
    for (int level : {-1, 1, 3, 5, 9, 19}) frames.push_back(zstd_plain(src, level));
  }
  frames.push_back(zstd_plain(era5_bytes(1u << 20, 21), 3));
  frames.push_back(zstd_streamed(era5_bytes(400000, 22), 5, 9000, false));
  std::mt19937 rng(20261122);
  const std::size_t intact = frames.size();
  for (std::size_t k = 0; k < intact; ++k) {  // damaged copies: bytes flipped past the frame header
    for (int d = 0; d < 6; ++d) {
      Bytes m = frames[k];
      for (int j = 0; j < 3; ++j) m[20 + rng() % (m.size() - 20)] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
      frames.push_back(m);
    }
  }
  long blocks = 0, window_blocks = 0, errors = 0;
  for (std::size_t f = 0; f < frames.size(); ++f) {
    const Bytes& enc = frames[f];
    zl::PlanTotals count{}, wrote{};
    zl::plan_buffer(enc.data(), enc.size(), nullptr, 0, norm, &count);
    std::vector<zl::BlockStep> steps(count.steps);
    zl::plan_buffer(enc.data(), enc.size(), steps.data(), 0, norm, &wrote);
    std::vector<std::uint8_t> scratch(count.scratch + 1);
    std::unique_ptr<zl::ZstdTables> tables(new zl::ZstdTables);
    for (auto& st : steps) {
      if (st.kind != zl::kStepCompressed) continue;
      zl::decode_block_literals(zl::SerialTeam{}, enc.data(), &st, tables.get(), scratch.data() + st.scratch);
      if (!zl::needs_sequences(st)) continue;
      ++blocks;
      window_blocks += st.seq_at >= 8 && st.seq_avail * 8 >= zl::kWindowMinBits + 8;
      zl::BlockStep ref{};
      SCOPED_TRACE("frame " + std::to_string(f));
      expect_sequence_readers_agree(enc.data(), st, zl::step_seq_tables(st, scratch.data() + st.scratch),
                                    zl::step_chain_tables(st, scratch.data() + st.scratch), scratch.data() + st.scratch,
                                    &ref);
      if (::testing::Test::HasFatalFailure()) return;
      errors += ref.status != static_cast<std::uint32_t>(DecodeStatus::kOk);
    }
  }
  std::printf("[ZstdLogic] pass 2b readers compared on %ld blocks (%ld long enough for the window), %ld with errors\n",
              blocks, window_blocks, errors);
  EXPECT_GT(window_blocks, blocks / 2);
  EXPECT_GT(errors, 0);
}

// Pass 2a packs each block's sequence-code tables to 2 bytes a state (split.hpp, SeqTables);
// unpacked, every state must give the FseEntry the team built: FSE tables of every accuracy
// log the data kinds and levels produce, predefined tables (small inputs), RLE tables
// (repetitive data), "less than 1" symbols. Also the packing's own corner cases, directly.
TEST(ZstdLogic, PackedSequenceTablesUnpackToTheBuiltEntries) {
  // Corner cases: an RLE table (log 0), a "less than 1" symbol's state (k = 1, all log bits),
  // a symbol holding every state (k from 2^log to 2^(log+1) - 1, nbits 0 and base up to 2^log - 1).
  for (const zl::u32 log : {0u, 5u, 8u, 9u}) {
    const zl::u32 size = 1u << log;
    for (zl::u32 k = 1; k < 2 * size; ++k) {
      const zl::u32 nbits = log - (31u - static_cast<zl::u32>(__builtin_clz(k)));
      if (k < (size >> nbits)) continue;  // not a counter a table of this log can hold
      zl::FseEntry e{};
      e.base = static_cast<std::uint16_t>((k << nbits) - size);
      e.nbits = static_cast<std::uint8_t>(nbits);
      e.symbol = static_cast<std::uint8_t>(k % 53);
      const zl::FseEntry u = zl::unpack_seq_entry(zl::pack_seq_entry(e, log), log);
      ASSERT_EQ(u.base, e.base) << "log " << log << " k " << k;
      ASSERT_EQ(u.nbits, e.nbits) << "log " << log << " k " << k;
      ASSERT_EQ(u.symbol, e.symbol) << "log " << log << " k " << k;
    }
  }
  short norm[zl::kFseMaxSymbols];
  std::vector<Bytes> frames;
  for (const auto& kind : cs_codec_test::kDataKinds) {
    for (std::size_t n : {std::size_t(300), std::size_t(300000)}) {
      const Bytes src = kind.make(n);
      for (int level : {-1, 1, 3, 9, 19}) frames.push_back(zstd_plain(src, level));
    }
  }
  frames.push_back(zstd_plain(era5_bytes(1u << 20, 31), 3));
  long tables = 0, states = 0;
  int modes[3] = {0, 0, 0};  // predefined, RLE, FSE (Repeat_Mode resolves to one of these)
  for (const Bytes& enc : frames) {
    zl::PlanTotals count{}, wrote{};
    zl::plan_buffer(enc.data(), enc.size(), nullptr, 0, norm, &count);
    std::vector<zl::BlockStep> steps(count.steps);
    zl::plan_buffer(enc.data(), enc.size(), steps.data(), 0, norm, &wrote);
    std::vector<std::uint8_t> scratch(count.scratch + 1);
    std::unique_ptr<zl::ZstdTables> t(new zl::ZstdTables);
    for (auto& st : steps) {
      if (st.kind != zl::kStepCompressed) continue;
      zl::decode_block_literals(zl::SerialTeam{}, enc.data(), &st, t.get(), scratch.data() + st.scratch);
      if (!zl::needs_sequences(st)) continue;
      const zl::SeqTables* p = zl::step_seq_tables(st, scratch.data() + st.scratch);
      const zl::SeqTablesView v = zl::view_of(p);
      ASSERT_EQ(p->ll_log, t->ll_log);
      ASSERT_EQ(p->ml_log, t->ml_log);
      ASSERT_EQ(p->of_log, t->of_log);
      for (int c = 0; c < 3; ++c) ++modes[st.code[c].mode];
      tables += 3;
      const auto same = [&](const zl::FseEntry& a, const zl::FseEntry& b, zl::u32 log, const char* code, zl::u32 s) {
        // The next state base + (nbits bits) stays inside the table whatever the stream holds.
        ASSERT_LE(std::uint32_t(a.base) + (1u << a.nbits), 1u << log) << code << " state " << s;
        ASSERT_EQ(a.base, b.base) << code << " state " << s;
        ASSERT_EQ(a.nbits, b.nbits) << code << " state " << s;
        ASSERT_EQ(a.symbol, b.symbol) << code << " state " << s;
      };
      for (zl::u32 s = 0; s < (1u << t->ll_log); ++s, ++states) {
        same(zl::ll_entry(p, s), t->ll[s], t->ll_log, "ll", s);
        same(zl::ll_entry(&v, s), t->ll[s], t->ll_log, "ll (view)", s);
      }
      for (zl::u32 s = 0; s < (1u << t->ml_log); ++s, ++states) {
        same(zl::ml_entry(p, s), t->ml[s], t->ml_log, "ml", s);
        same(zl::ml_entry(&v, s), t->ml[s], t->ml_log, "ml (view)", s);
      }
      for (zl::u32 s = 0; s < (1u << t->of_log); ++s, ++states) {
        same(zl::of_entry(p, s), t->of[s], t->of_log, "of", s);
        same(zl::of_entry(&v, s), t->of[s], t->of_log, "of (view)", s);
      }
      // The trace's tables: the same next states, and each symbol's extra-bit count.
      const zl::ChainTables* c = zl::step_chain_tables(st, scratch.data() + st.scratch);
      ASSERT_EQ(c->ll_log, t->ll_log);
      ASSERT_EQ(c->ml_log, t->ml_log);
      ASSERT_EQ(c->of_log, t->of_log);
      const auto chain_same = [&](zl::u16 packed, const zl::FseEntry& b, zl::u32 log, zl::u32 extra, const char* code,
                                  zl::u32 s) {
        const zl::ChainStep cs = zl::chain_step(packed, log);
        ASSERT_EQ(cs.nbits, b.nbits) << code << " state " << s;
        ASSERT_EQ(cs.next(log, 0), b.base) << code << " state " << s;
        ASSERT_EQ(zl::chain_extra(packed), extra) << code << " state " << s;
      };
      for (zl::u32 s = 0; s < (1u << t->ll_log); ++s) chain_same(c->ll[s], t->ll[s], t->ll_log, zl::ll_bits(t->ll[s].symbol), "chain ll", s);
      for (zl::u32 s = 0; s < (1u << t->ml_log); ++s) chain_same(c->ml[s], t->ml[s], t->ml_log, zl::ml_bits(t->ml[s].symbol), "chain ml", s);
      for (zl::u32 s = 0; s < (1u << t->of_log); ++s) chain_same(c->of[s], t->of[s], t->of_log, t->of[s].symbol, "chain of", s);
    }
  }
  std::printf("[ZstdLogic] packed tables: %ld tables, %ld states (modes: %d predefined, %d RLE, %d FSE)\n", tables,
              states, modes[0], modes[1], modes[2]);
  EXPECT_GT(modes[0], 0);
  EXPECT_GT(modes[1], 0);
  EXPECT_GT(modes[2], 0);
}

// The GPU records pass's cut of a sequence's extra bits (sequence_trace.hpp, stream_words and
// cut_words: two aligned words and a shift, where both words lie inside the stream or, with
// lead_ok, start at most 7 bytes before it) against the byte reader, at every alignment of the
// stream, positions up to its last bit, and widths 0-63. The buffer holds the stream and, with
// lead_ok, exactly 8 bytes before it, so that AddressSanitizer sees any word read outside.
TEST(ZstdLogic, TracedExtraBitsFromAlignedWordsMatchTheByteReader) {
  std::mt19937 rng(11);
  long whole = 0, bytes = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    const bool lead_ok = trial % 2 == 0;
    const std::size_t size = 1 + rng() % 200, lead = lead_ok ? 8 : 0;
    // An 8-byte aligned allocation, the stream at a random offset m inside its first word.
    const std::size_t m = rng() % 8;
    std::unique_ptr<zl::u64[]> words(new zl::u64[(lead + m + size + 7) / 8 + 1]);
    auto* base = reinterpret_cast<std::uint8_t*>(words.get());
    for (std::size_t k = 0; k < lead + m + size; ++k) base[k] = static_cast<std::uint8_t>(rng());
    const std::uint8_t* p = base + lead + m;
    for (int q = 0; q < 20; ++q) {
      const zl::u32 n = static_cast<zl::u32>(rng() % 64);
      if (n > size * 8) continue;
      const zl::u32 lo = static_cast<zl::u32>(rng() % (size * 8 - n + 1));
      const zl::u64 want = zl::stream_bits_bytes(p, size, lo, n);
      const zl::StreamWords sw = zl::stream_words(p, size, lo, lead_ok);
      if (!sw.whole) {
        ++bytes;
        continue;
      }
      ++whole;
      // Inside the stream, or from 8 bytes before it with lead_ok.
      const auto* first = reinterpret_cast<const std::uint8_t*>(sw.w);
      ASSERT_GE(first, lead_ok ? p - 8 : p) << "trial " << trial;
      ASSERT_LE(first + 16, p + size) << "trial " << trial;
      const zl::u64 w0 = zl::load_le64(first), w1 = zl::load_le64(first + 8);
      ASSERT_EQ(zl::cut_words(w0, w1, sw.shift) & ((zl::u64(1) << n) - 1), want)
          << "trial " << trial << ", lo " << lo << ", n " << n << ", offset " << m;
      ASSERT_EQ(zl::stream_bits(p, size, lo, n, lead_ok), want);
    }
  }
  EXPECT_GT(whole, 10000);
  EXPECT_GT(bytes, 1000);
}

// The traced pass's repeat offsets (sequence_trace.hpp): a RepMap per sequence, composed,
// gives every sequence the offset and list update_repeat_offsets gives it one after another,
// from the block's symbolic incoming list; composed in a warp scan's order (lane l takes the
// composition of lanes l - d .. l for d = 1, 2, 4, 8, 16, then the carry of the chunks before)
// as well as left to right, and, for chunks without a repeat offset, as the GPU's shortcut
// (rep_after_literals) takes them. Every Offset_Value class, literal length 0 or not, and
// "rep[0] - 1" down to the error it gives at a literal offset of 1.
TEST(ZstdLogic, RepeatOffsetMapsComposeLikeTheSerialUpdate) {
  std::mt19937 rng(20261127);
  long errors = 0, literal_zero_checks = 0, literals_chunks = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 200);
    const bool numeric = trial % 3 == 0;  // like numeric fields: (almost) no repeat offsets
    std::vector<zl::u32> of_values(n), lls(n);
    for (int i = 0; i < n; ++i) {
      const zl::u32 r = rng() % 10;
      // small offsets (4 and 5: literal offsets 1 and 2, which "rep[0] - 1" takes to zero)
      of_values[i] = r < 5 && !numeric ? 1 + rng() % 3 : r < 7 ? 4 + rng() % 2 : r < 9 ? 4 + rng() % 100000 : 0xFFFFFFFFu;
      if (numeric && rng() % 500 == 0) of_values[i] = 1 + rng() % 3;
      lls[i] = rng() % 3 == 0 ? 0 : 1 + rng() % 40;
    }
    // The serial update, symbolic from the block's start (as split.hpp's readers).
    zl::RepeatOffsets reps{{zl::sym_rep(0), zl::sym_rep(1), zl::sym_rep(2)}};
    std::vector<zl::u64> want_offset;
    std::vector<zl::RepeatOffsets> want_list;
    int first_error = n;
    for (int i = 0; i < n; ++i) {
      zl::u64 off = 0;
      if (zl::update_repeat_offsets(&reps, of_values[i], lls[i], &off) != DecodeStatus::kOk) {
        first_error = i;
        break;
      }
      want_offset.push_back(off);
      want_list.push_back(reps);
    }
    errors += first_error < n;
    // Left to right.
    zl::RepMap list = zl::rep_identity();
    for (int i = 0; i < n; ++i) {
      const zl::RepMap after = zl::rep_then(list, zl::rep_of_sequence(of_values[i], lls[i]));
      if (i == first_error) {
        ASSERT_FALSE(zl::rep_offset_ok(after)) << "trial " << trial << ", sequence " << i;
        break;
      }
      ASSERT_TRUE(zl::rep_offset_ok(after)) << "trial " << trial << ", sequence " << i;
      list = after;
      ASSERT_EQ(zl::rep_entry64(list, 0), want_offset[i]) << "trial " << trial << ", sequence " << i;
      for (int k = 0; k < 3; ++k) ASSERT_EQ(zl::rep_entry64(list, k), want_list[i].rep[k]) << "trial " << trial;
      ++literal_zero_checks;
    }
    // In chunks of 32, each scanned as a warp does.
    zl::RepMap carry = zl::rep_identity();
    for (int base = 0; base < n && base <= first_error; base += 32) {
      zl::RepMap m[32];
      for (int l = 0; l < 32; ++l) {
        m[l] = base + l < n ? zl::rep_of_sequence(of_values[base + l], lls[base + l]) : zl::rep_identity();
      }
      for (int d = 1; d < 32; d <<= 1) {
        zl::RepMap next[32];
        for (int l = 0; l < 32; ++l) next[l] = l >= d ? zl::rep_then(m[l - d], m[l]) : m[l];
        std::copy(next, next + 32, m);
      }
      bool literals_only = true;  // the GPU's shortcut for chunks without a repeat offset
      for (int l = 0; l < 32 && base + l < n; ++l) literals_only = literals_only && of_values[base + l] > 3;
      literals_chunks += literals_only;
      for (int l = 0; l < 32 && base + l < n; ++l) {
        const zl::RepMap mine = zl::rep_then(carry, m[l]);
        if (literals_only) {
          const auto off = [&](int j) { return j >= 0 ? of_values[base + j] - 3 : 0u; };
          const zl::RepMap fast = zl::rep_after_literals(carry, static_cast<zl::u32>(l), off(l), off(l - 1), off(l - 2));
          for (int k = 0; k < 3; ++k) ASSERT_EQ(zl::rep_entry64(fast, k), zl::rep_entry64(mine, k)) << "trial " << trial;
        }
        if (base + l == first_error) {
          ASSERT_FALSE(zl::rep_offset_ok(mine)) << "trial " << trial;
          break;
        }
        ASSERT_TRUE(zl::rep_offset_ok(mine)) << "trial " << trial;
        for (int k = 0; k < 3; ++k) ASSERT_EQ(zl::rep_entry64(mine, k), want_list[base + l].rep[k]) << "trial " << trial;
      }
      carry = zl::rep_then(carry, m[31]);
    }
  }
  EXPECT_GT(errors, 100);  // "rep[0] - 1" reached a literal zero in many trials
  EXPECT_GT(literals_chunks, 1000);
  EXPECT_GT(literal_zero_checks, 100000);
}

// Pass 3 by several teams (execute_groups.hpp), emulated: one team in order, 8 and 32 in
// random orders, on multi-block frames of every kind the GPU meets (ERA5-like 4 MiB fields at
// levels 1, 3 and 5, level 19, several and skippable frames, no content size, checksums, raw
// and RLE blocks, the climate-like kinds): libzstd's bytes each time. The random orders must
// really complete units out of order and make teams wait.
TEST(ZstdLogic, SeveralTeamsExecuteByteExactAgainstLibzstd) {
  struct Input {
    std::string name;
    Bytes enc;
    std::size_t size;
  };
  std::vector<Input> inputs;
  const auto add = [&](std::string name, Bytes enc, std::size_t size) { inputs.push_back({std::move(name), std::move(enc), size}); };
  for (int level : {1, 3, 5}) {
    add("era5 4 MiB level " + std::to_string(level), zstd_plain(era5_bytes(4u << 20, 40 + level), level), 4u << 20);
  }
  add("era5 1 MiB level 19 checksum", zstd_frame(era5_bytes(1u << 20, 44), {19, true, true}), 1u << 20);
  add("era5 streamed, no content size, checksum", zstd_streamed(era5_bytes(900000, 45), 3, 70000, true), 900000);
  const Bytes a = cs_codec_test::climate_bytes(300000), r = cs_codec_test::random_bytes(400000, 46);
  const Bytes rle(700000, 7), p = cs_codec_test::precip_bytes(250000);
  add("several frames, skippable, raw and RLE blocks",
      cat({zstd_frame(a, {3, true, true}), skippable(4, cs_codec_test::random_bytes(11)), zstd_frame(r, {5, false, true}),
           zstd_plain(rle, 3), zstd_frame({}, {1, true, false}), zstd_streamed(p, 1, 30000, false)}),
      a.size() + r.size() + rle.size() + p.size());
  for (const auto& kind : cs_codec_test::kDataKinds) {
    add(std::string(kind.name) + " level 3", zstd_frame(kind.make(500000), {3, true, true}), kind.make(500000).size());
  }
  const SplitStats before = g_split;
  for (const auto& [name, enc, got_size] : inputs) {
    SCOPED_TRACE(name);
    Bytes want;
    ASSERT_TRUE(libzstd_decode(enc, got_size, &want));
    SplitBuffer b = split_prepare(enc.data(), enc.size(), true, Pass2b::kTraced);
    const std::pair<std::uint32_t, std::uint64_t> runs[] = {{1, 0}, {8, 1}, {8, 2}, {8, 3}, {32, 4}};
    for (const auto& [teams, seed] : runs) {
      std::unique_ptr<std::uint8_t[]> out(new std::uint8_t[got_size ? got_size : 1]);
      for (std::size_t i = 0; i < got_size; ++i) out[i] = static_cast<std::uint8_t>(~want[i]);
      const DecodeStatus st = multi_team_execute(enc.data(), &b, out.get(), got_size, true, teams, seed);
      ASSERT_EQ(status(st), "ok") << teams << " teams, seed " << seed;
      ASSERT_TRUE(got_size == 0 || std::memcmp(out.get(), want.data(), got_size) == 0)
          << teams << " teams, seed " << seed << ": bytes differ from libzstd";
    }
  }
  std::printf("[ZstdLogic] several teams: %ld units, %ld completed out of order, %ld waits\n",
              g_split.units - before.units, g_split.out_of_order - before.out_of_order, g_split.waits - before.waits);
  EXPECT_GT(g_split.out_of_order - before.out_of_order, 1000) << "the random orders completed few units out of order";
  EXPECT_GT(g_split.waits - before.waits, 100) << "no team had to wait for an earlier unit";
}

// Damaged multi-block frames (flipped bits and bytes in later blocks, truncations, checksums,
// output sizes off by one): the emulated several-team execution gives execute_steps' status
// whichever order the teams take, although units after the failing one may have run.
TEST(ZstdLogic, SeveralTeamsKeepTheSerialStatusOnDamagedFrames) {
  const Bytes src = era5_bytes(1u << 20, 61);
  const std::vector<Bytes> seeds = {zstd_frame(src, {3, true, true}), zstd_frame(src, {5, false, false}),
                                    zstd_streamed(src, 1, 50000, true)};
  std::mt19937 rng(20261123);
  int by_status[8] = {};
  for (int iter = 0; iter < 240; ++iter) {
    Bytes m = seeds[iter % seeds.size()];
    std::size_t size = src.size();
    switch (iter % 6) {
      case 0: m[m.size() / 4 + rng() % (m.size() * 3 / 4)] ^= static_cast<std::uint8_t>(1u << (rng() % 8)); break;
      case 1: for (int j = 0; j < 3; ++j) m[20 + rng() % (m.size() - 20)] = static_cast<std::uint8_t>(rng()); break;
      case 2: m.resize(m.size() / 3 + rng() % (m.size() * 2 / 3)); break;
      case 3: m[m.size() - 1 - rng() % 4] ^= 0x21; break;  // the checksum, or the last block
      case 4: size += (rng() % 2) ? 1 : -1; break;
      case 5: m.erase(m.begin() + static_cast<long>(m.size() / 2 + rng() % (m.size() / 2))); break;
    }
    const bool verify = iter % 5 != 4;
    SplitBuffer b = split_prepare(m.data(), m.size(), true, Pass2b::kTraced);
    std::unique_ptr<std::uint8_t[]> ref(new std::uint8_t[size]());
    std::uint64_t acc[4];
    const DecodeStatus want = zl::execute_steps(zl::SerialTeam{}, m.data(), b.steps.data(), b.steps.size(),
                                                b.scratch.get(), ref.get(), size, verify, acc);
    ++by_status[static_cast<int>(want)];
    for (const auto& [teams, seed] : {std::pair<std::uint32_t, std::uint64_t>{1, 0}, {8, 100 + iter}, {32, 900 + iter}}) {
      std::unique_ptr<std::uint8_t[]> out(new std::uint8_t[size]);
      for (std::size_t i = 0; i < size; ++i) out[i] = static_cast<std::uint8_t>(~ref[i]);
      const DecodeStatus got = multi_team_execute(m.data(), &b, out.get(), size, verify, teams, seed);
      ASSERT_EQ(status(got), status(want)) << "iteration " << iter << ", " << teams << " teams, seed " << seed;
      if (want == DecodeStatus::kOk) ASSERT_EQ(std::memcmp(out.get(), ref.get(), size), 0) << "iteration " << iter;
    }
  }
  std::printf("[ZstdLogic] several teams on 240 damaged frames: %d ok, %d corrupt, %d wrong size, %d checksum mismatch\n",
              by_status[0], by_status[1], by_status[2], by_status[5]);
  EXPECT_GT(by_status[static_cast<int>(DecodeStatus::kCorrupt)], 20);
  EXPECT_GT(by_status[static_cast<int>(DecodeStatus::kWrongSize)], 5);
  EXPECT_GT(by_status[static_cast<int>(DecodeStatus::kChecksumMismatch)], 5);
}

TEST(ZstdLogic, CaseCount) { std::printf("[ZstdLogic] %d differential cases outside the level sweep\n", g_cases); }

}  // namespace
