// The table walk's chain by pointer doubling (codec/logic/lz4_table_jump.hpp) against the chain
// that follows the table one load a token (lz4_table_chain): the same tokens, count and end
// position for every start, cap and team size, on tables of real LZ4 windows and on random
// tables (every shape of stop: a declined entry, an entry past the end, the cap).
#include <lz4.h>

#include <random>
#include <string>
#include <vector>

#include "codec/logic/lz4_segments.hpp"
#include "codec/logic/lz4_table_jump.hpp"
#include "codec_test_util.hpp"
#include "liblz4_block.hpp"

namespace cs_codec_test {
namespace {

namespace logic = cubestream::codec::logic;

// Both chains from r over tbl[0, end): equal results, or a failure naming the case.
void expect_same_chain(const std::vector<std::uint16_t>& tbl, std::uint32_t end, std::uint32_t r, std::uint32_t cap,
                       std::uint32_t threads, const std::string& what) {
  std::vector<std::uint16_t> a(cap, 0xBEEF), b(cap, 0xBEEF), jmp(tbl.size(), 0xDEAD);
  std::uint32_t ra = r, rb = r;
  const std::uint32_t na = logic::lz4_table_chain(tbl.data(), &ra, end, a.data(), cap, true);
  const std::uint32_t nb = logic::lz4_table_chain_jump_host(tbl.data(), jmp.data(), &rb, end, b.data(), cap, threads);
  ASSERT_EQ(na, nb) << what;
  ASSERT_EQ(ra, rb) << what;
  for (std::uint32_t i = 0; i < na; ++i) ASSERT_EQ(a[i], b[i]) << what << " token " << i;
}

TEST(Lz4TableJump, ChainEqualsTheOneLoadATokenChainOnRandomTables) {
  std::mt19937 rng(77);
  for (int trial = 0; trial < 400; ++trial) {
    const std::uint32_t size = 64 + rng() % 9000;
    const std::uint32_t end = size - rng() % 40;
    std::vector<std::uint16_t> tbl(size);
    // steps of 3..(3 + span) with declines now and then; some entries reach past `end`
    const std::uint32_t span = 1 + rng() % (trial % 3 == 0 ? 8 : 300);
    const std::uint32_t decline = trial % 4 == 0 ? 0 : 50 + rng() % 2000;
    for (std::uint32_t p = 0; p < size; ++p) {
      const std::uint32_t q = p + 3 + rng() % span;
      tbl[p] = decline != 0 && rng() % decline == 0 ? 0 : static_cast<std::uint16_t>(q < 65535 ? q : 65534);
    }
    for (int s = 0; s < 6; ++s) {
      const std::uint32_t r = rng() % end;
      for (std::uint32_t cap : {1u, 2u, 7u, 1024u, size / 3 + 2}) {
        for (std::uint32_t threads : {1u, 3u, 256u})
          expect_same_chain(tbl, end, r, cap, threads,
                            "trial " + std::to_string(trial) + " r " + std::to_string(r) + " cap " +
                                std::to_string(cap) + " threads " + std::to_string(threads));
      }
    }
  }
}

TEST(Lz4TableJump, ChainEqualsTheOneLoadATokenChainOnLz4Windows) {
  std::mt19937 rng(5);
  for (const auto& kind : kDataKinds) {
    const Buf src = kind.make(300000);
    for (int level : {0, 9}) {
      const Buf enc = liblz4_block(src, level);
      for (std::size_t window : {logic::kLz4TableWindowMin, std::size_t{8192}, std::size_t{logic::kLz4TableWindowMax}}) {
        if (enc.size() < window + 64) continue;
        for (int w = 0; w < 4; ++w) {
          const std::size_t base = rng() % (enc.size() - window);
          const auto left0 = static_cast<std::uint32_t>(enc.size() - base);
          const std::uint32_t end = logic::lz4_table_end(base, window, static_cast<std::uint32_t>(enc.size()));
          std::vector<std::uint16_t> tbl(window, 0);
          logic::lz4_table_fill(enc.data() + base, tbl.data(), 0, end, static_cast<std::uint32_t>(window), left0, 0, 1);
          for (int s = 0; s < 8; ++s) {
            const std::uint32_t r = rng() % end;
            for (std::uint32_t cap : {7u, 1024u, logic::lz4_table_token_cap(window)})
              expect_same_chain(tbl, end, r, cap, s % 2 == 0 ? 256u : 5u,
                                std::string(kind.name) + " level " + std::to_string(level) + " window " +
                                    std::to_string(window) + " r " + std::to_string(r));
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace cs_codec_test
