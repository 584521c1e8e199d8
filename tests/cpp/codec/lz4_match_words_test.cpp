// The word copy of a short LZ4 match (codec/logic/lz4_match_words.hpp), against the byte-by-byte
// rule dst[i] = dst[i - off]: every position, offset (overlapping or not), length and alignment
// of a small output,
// with the bytes around the read range changed under the loads (other lanes of the group may be
// writing them), every load inside the output, and every store inside the match's destination
// at its own alignment.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "codec/logic/lz4_match_bits.hpp"
#include "codec/logic/lz4_match_words.hpp"

namespace cs_codec_test {
namespace {

namespace logic = cubestream::codec::logic;

struct Stores {
  std::vector<std::uint8_t>* out;
  std::vector<std::uint32_t>* written;  // positions, each once
  bool* misaligned;
  void put(std::uint32_t p, std::uint64_t x, std::uint32_t n) const {
    if (p % n != 0) *misaligned = true;
    for (std::uint32_t i = 0; i < n; ++i) {
      (*out)[p + i] = static_cast<std::uint8_t>(x >> (8 * i));
      written->push_back(p + i);
    }
  }
  void u32(std::uint32_t p, std::uint32_t x) const { put(p, x, 4); }
  void u16(std::uint32_t p, std::uint16_t x) const { put(p, x, 2); }
  void u8(std::uint32_t p, std::uint8_t x) const { put(p, x, 1); }
};

TEST(Lz4MatchWords, EveryShortMatchOfASmallOutputCopiesLikeTheByteRule) {
  // every short match of a 72-byte output, overlapping ones (off < len) included
  constexpr std::uint32_t kSize = 72;
  std::mt19937 rng(36);
  std::vector<std::uint8_t> base(kSize);
  for (auto& b : base) b = static_cast<std::uint8_t>(rng());
  std::uint64_t fitted = 0, overlapping = 0;
  for (std::uint32_t dst = 0; dst < kSize; ++dst)
    for (std::uint32_t len = logic::kLz4MinMatch; len <= logic::kLz4LaneMatchMax && dst + len <= kSize; ++len)
      for (std::uint32_t off = 1; off <= dst; ++off) {
        const logic::Lz4MatchRecord m{dst, off, len};
        ASSERT_TRUE(logic::lz4_match_words_fit(m));
        ++fitted;
        overlapping += off < len ? 1 : 0;
        std::vector<std::uint8_t> want = base;
        for (std::uint32_t i = 0; i < len; ++i) want[dst + i] = want[logic::lz4_match_source(m, i)];
        // the loads see the read range as it is and every other byte changed (a lane of the group
        // writing it), and must stay inside the output
        const logic::Lz4Reads rd = logic::lz4_match_reads(m);
        bool outside = false;
        std::uint32_t loads = 0;
        const auto load = [&](std::uint32_t w) {
          ++loads;
          std::uint32_t x = 0;
          for (std::uint32_t i = 0; i < 4; ++i) {
            const std::uint32_t p = 4 * w + i;
            // the proof's bound (lz4_match_words.hpp): every word read ends before dst + len,
            // so within any output that holds the match
            if (p >= dst + len) {
              outside = true;
              continue;
            }
            const std::uint8_t b = p >= rd.first && p < rd.end ? base[p] : static_cast<std::uint8_t>(~base[p] ^ i);
            x |= std::uint32_t{b} << (8 * i);
          }
          return x;
        };
        std::uint32_t v[logic::kLz4MatchWordsMax];
        const std::uint32_t ns = logic::lz4_match_words_load(m, load, v);
        ASSERT_FALSE(outside) << "a load at or past the match's end: dst " << dst << " off " << off << " len " << len;
        // the words that hold the read range, each loaded once
        EXPECT_EQ(ns, ((rd.end - 1) >> 2) - (rd.first >> 2) + 1);
        EXPECT_EQ(loads, ns);
        EXPECT_LE(loads, 5u);
        std::vector<std::uint8_t> got = base;
        std::vector<std::uint32_t> written;
        bool misaligned = false;
        logic::lz4_match_words_store(m, v, Stores{&got, &written, &misaligned});
        ASSERT_EQ(got, want) << "dst " << dst << " off " << off << " len " << len;
        EXPECT_FALSE(misaligned);
        // exactly the destination, each byte once
        std::set<std::uint32_t> once(written.begin(), written.end());
        EXPECT_EQ(once.size(), written.size());
        EXPECT_EQ(written.size(), len);
        EXPECT_EQ(*once.begin(), dst);
        EXPECT_EQ(*once.rbegin(), dst + len - 1);
        // the byte-store form: the same bytes, each once, and nothing but byte stores
        std::vector<std::uint8_t> got_bytes = base;
        std::vector<std::uint32_t> written_bytes;
        struct ByteStores {
          Stores s;
          bool* wide;
          void u32(std::uint32_t p, std::uint32_t x) const { *wide = true, s.u32(p, x); }
          void u16(std::uint32_t p, std::uint16_t x) const { *wide = true, s.u16(p, x); }
          void u8(std::uint32_t p, std::uint8_t x) const { s.u8(p, x); }
        };
        bool wide = false;
        logic::lz4_match_words_store_bytes(m, v, ByteStores{Stores{&got_bytes, &written_bytes, &misaligned}, &wide});
        EXPECT_FALSE(wide) << "a wide store in the byte form: dst " << dst << " off " << off << " len " << len;
        ASSERT_EQ(got_bytes, want) << "byte stores: dst " << dst << " off " << off << " len " << len;
        EXPECT_EQ(std::set<std::uint32_t>(written_bytes.begin(), written_bytes.end()), once);
        EXPECT_EQ(written_bytes.size(), len);
      }
  EXPECT_GT(fitted, 10000u);
  EXPECT_GT(overlapping, 1000u);
}

TEST(Lz4MatchWords, TheStoresAreFewAndWide) {
  // a 16-byte match at each alignment: 5 or 6 stores, never a byte store between whole words
  for (std::uint32_t t = 0; t < 4; ++t) {
    const logic::Lz4MatchRecord m{64 + t, 32, 16};
    std::vector<std::uint8_t> out(128, 0);
    std::vector<std::uint32_t> written;
    bool misaligned = false;
    struct Count {
      Stores s;
      int* n;
      void u32(std::uint32_t p, std::uint32_t x) const { ++*n, s.u32(p, x); }
      void u16(std::uint32_t p, std::uint16_t x) const { ++*n, s.u16(p, x); }
      void u8(std::uint32_t p, std::uint8_t x) const { ++*n, s.u8(p, x); }
    };
    int n = 0;
    std::uint32_t v[logic::kLz4MatchWordsMax] = {};
    logic::lz4_match_words_store(m, v, Count{Stores{&out, &written, &misaligned}, &n});
    EXPECT_EQ(written.size(), 16u);
    EXPECT_LE(n, t == 0 ? 4 : t == 2 ? 5 : 6) << "alignment " << t;
    EXPECT_FALSE(misaligned);
  }
}

TEST(Lz4MatchWords, TheFunnelShiftAndTheBytePickTakeTheBytesInOrder) {
  EXPECT_EQ(logic::lz4_funnel_bytes(0x44332211u, 0x88776655u, 0), 0x44332211u);
  EXPECT_EQ(logic::lz4_funnel_bytes(0x44332211u, 0x88776655u, 1), 0x55443322u);
  EXPECT_EQ(logic::lz4_funnel_bytes(0x44332211u, 0x88776655u, 3), 0x77665544u);
  const std::uint32_t s[logic::kLz4MatchWordsMax] = {0x03020100u, 0x07060504u, 0x0B0A0908u, 0x0F0E0D0Cu, 0x13121110u};
  for (std::uint32_t q = 0; q < 4 * logic::kLz4MatchWordsMax; ++q) EXPECT_EQ(logic::lz4_word_byte(s, q), q);
}

}  // namespace
}  // namespace cs_codec_test
