// The word copy of an LZ4 literal (codec/logic/lz4_literal_words.hpp) against memcpy: every
// source and destination alignment, every length up to 80 bytes and every buffer end the copy
// may meet, the head (lz4_literal_words_head) in words and the rest by bytes, with each word
// load holding a byte of the head and ending inside the buffer, and each store inside the
// destination, once, word stores aligned.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "codec/logic/lz4_literal_words.hpp"

namespace cs_codec_test {
namespace {

namespace logic = cubestream::codec::logic;

TEST(Lz4LiteralWords, EveryAlignmentAndLengthCopiesLikeMemcpy) {
  std::mt19937 rng(37);
  std::vector<std::uint8_t> in(128);
  for (auto& b : in) b = static_cast<std::uint8_t>(rng());
  std::uint64_t copies = 0, word_stores = 0;
  for (std::uint32_t src = 0; src < 8; ++src)
    for (std::uint32_t dst = 0; dst < 8; ++dst)
      for (std::uint32_t n = 0; n <= 80; ++n)
        for (std::uint32_t slack = 0; slack < 4; ++slack) {
          const std::uint32_t end = src + n + slack;  // the source buffer's end
          const std::uint32_t head = logic::lz4_literal_words_head(src, n, end);
          // all of it where its last word ends inside the buffer, else all but at most 3 bytes
          if (n == 0 || ((src + n + 3) / 4) * 4 <= end)
            EXPECT_EQ(head, n) << src << " " << n << " " << slack;
          else
            EXPECT_TRUE(head < n && n - head <= 3) << src << " " << n << " " << slack << " head " << head;
          std::vector<std::uint8_t> out(128, 0xEE), want = out;
          for (std::uint32_t i = 0; i < n; ++i) want[dst + i] = in[src + i];
          std::vector<std::uint32_t> written;
          bool bad_load = false, bad_store = false;
          const auto load = [&](std::uint32_t w) {
            // a byte of the head in every word loaded, and the word inside the buffer
            if (4 * w + 4 <= src || 4 * w >= src + head) bad_load = true;
            if (4 * w + 4 > end) bad_load = true;
            return static_cast<std::uint32_t>(in[4 * w]) | static_cast<std::uint32_t>(in[4 * w + 1]) << 8 |
                   static_cast<std::uint32_t>(in[4 * w + 2]) << 16 | static_cast<std::uint32_t>(in[4 * w + 3]) << 24;
          };
          struct Stores {
            std::vector<std::uint8_t>* out;
            std::vector<std::uint32_t>* written;
            bool* bad;
            std::uint64_t* words;
            void u32(std::uint32_t p, std::uint32_t x) const {
              if (p % 4 != 0) *bad = true;
              ++*words;
              for (std::uint32_t i = 0; i < 4; ++i) u8(p + i, static_cast<std::uint8_t>(x >> (8 * i)));
            }
            void u8(std::uint32_t p, std::uint8_t x) const {
              (*out)[p] = x;
              written->push_back(p);
            }
          };
          const std::uint32_t nw = logic::lz4_literal_word_count(dst, head);
          // every lane's loads before any store, as a group of lanes may run them
          std::vector<logic::Lz4LiteralWord> ws;
          for (std::uint32_t j = 0; j < nw; ++j) ws.push_back(logic::lz4_literal_word_load(src, dst, head, j, load));
          const Stores stores{&out, &written, &bad_store, &word_stores};
          for (std::uint32_t j = 0; j < nw; ++j) logic::lz4_literal_word_store(dst, j, ws[j], stores);
          for (std::uint32_t i = head; i < n; ++i) stores.u8(dst + i, in[src + i]);  // the rest
          ASSERT_EQ(out, want) << "src " << src << " dst " << dst << " n " << n;
          ASSERT_FALSE(bad_load) << "src " << src << " dst " << dst << " n " << n;
          ASSERT_FALSE(bad_store) << "src " << src << " dst " << dst << " n " << n;
          const std::set<std::uint32_t> once(written.begin(), written.end());
          EXPECT_EQ(once.size(), written.size());
          EXPECT_EQ(written.size(), n);
          if (n != 0) {
            EXPECT_EQ(*once.begin(), dst);
            EXPECT_EQ(*once.rbegin(), dst + n - 1);
          }
          ++copies;
        }
  EXPECT_GT(copies, 20000u);
  EXPECT_GT(word_stores, 50000u);  // the interior words go whole
}

TEST(Lz4LiteralWords, AWordPerFourBytesAndTwoLoadsAtMost) {
  // a 52-byte literal (the era5-like chunks' mean) at every alignment: 13-14 destination words,
  // 12-13 of them whole, at most two loads each
  for (std::uint32_t src = 0; src < 4; ++src)
    for (std::uint32_t dst = 0; dst < 4; ++dst) {
      const std::uint32_t nw = logic::lz4_literal_word_count(dst, 52);
      EXPECT_EQ(nw, dst == 0 ? 13u : 14u);
      std::uint32_t whole = 0;
      for (std::uint32_t j = 0; j < nw; ++j) {
        int loads = 0;
        const logic::Lz4LiteralWord w =
            logic::lz4_literal_word_load(src, dst, 52, j, [&](std::uint32_t) { return ++loads, 0u; });
        EXPECT_LE(loads, src == dst ? 1 : 2);
        whole += w.count == 4 ? 1 : 0;
      }
      EXPECT_EQ(whole, dst == 0 ? 13u : 12u);
    }
}

}  // namespace
}  // namespace cs_codec_test
