// Hand-written LZ4 blocks for the decoder tests: sequences with exactly the offsets and match
// lengths a test asks for (a compressor would pick its own), e.g. a match of megabytes at offset
// 65535. The blocks follow the format's end rules (the last sequence is literals only, at least
// 5 of them), so liblz4 decodes them and is the oracle.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace cs_codec_test {

struct Lz4Crafter {
  std::vector<std::uint8_t> block;  // the LZ4 block so far
  std::size_t out = 0;              // decoded bytes so far
  std::mt19937 rng{1};

  static void put_length(std::vector<std::uint8_t>& b, std::size_t extra) {
    for (; extra >= 255; extra -= 255) b.push_back(255);
    b.push_back(static_cast<std::uint8_t>(extra));
  }

  // One sequence: `lit` random literals, then (when mlen != 0) a match of mlen >= 4 bytes at
  // offset off (1..65535, at most the output so far plus lit).
  void sequence(std::size_t lit, std::size_t off, std::size_t mlen) {
    const std::size_t ml = mlen == 0 ? 0 : mlen - 4;
    block.push_back(static_cast<std::uint8_t>(((lit < 15 ? lit : 15) << 4) | (ml < 15 ? ml : 15)));
    if (lit >= 15) put_length(block, lit - 15);
    for (std::size_t i = 0; i < lit; ++i) block.push_back(static_cast<std::uint8_t>(rng()));
    out += lit;
    if (mlen == 0) return;
    block.push_back(static_cast<std::uint8_t>(off & 255));
    block.push_back(static_cast<std::uint8_t>(off >> 8));
    if (ml >= 15) put_length(block, ml - 15);
    out += mlen;
  }

  // The last sequence (literals only) closes the block.
  std::vector<std::uint8_t> finish(std::size_t lit = 5) {
    sequence(lit, 0, 0);
    return block;
  }
};

// `size` random bytes made periodic: each byte from `period` on repeats the one `period` before
// it, except one in a thousand (draws from rng, so a seed gives the same data): long runs for
// short periods, matches reaching far back for long ones.
inline std::vector<std::uint8_t> lz4_periodic_bytes(std::size_t size, std::size_t period, std::mt19937& rng) {
  std::vector<std::uint8_t> b(size);
  for (auto& x : b) x = static_cast<std::uint8_t>(rng());
  for (std::size_t i = period; i < b.size(); ++i)
    if (rng() % 1000 != 0) b[i] = b[i - period];
  return b;
}

// A block of one sequence, `lead` random literals (lead >= off) and a match of mlen bytes at
// offset off, closed by `tail` literals.
inline std::vector<std::uint8_t> lz4_far_match_block(std::size_t off, std::size_t mlen, std::size_t lead,
                                                     std::size_t tail = 5, std::uint32_t seed = 1) {
  Lz4Crafter c;
  c.rng.seed(seed);
  c.sequence(lead, off, mlen);
  return c.finish(tail);
}

// Every offset 1..65535 once, in a shuffled order, each with a random length (4..1500: wider
// than the aliasing bound 64 Ki - off near the ring's size, so the far ones are staged in
// several pieces) and 0..3 literals before it, in one block: lone and batched sequences,
// staged and direct pieces, flushes in between. `decoded` receives the block's decoded size.
inline std::vector<std::uint8_t> lz4_every_offset_block(std::size_t& decoded, std::uint32_t seed = 17) {
  std::mt19937 rng(seed);
  std::vector<std::size_t> offs(65535);
  for (std::size_t i = 0; i < offs.size(); ++i) offs[i] = i + 1;
  std::shuffle(offs.begin(), offs.end(), rng);
  Lz4Crafter c;
  c.sequence(65535, 65535, 4 + rng() % 1500);
  for (const std::size_t off : offs) c.sequence(rng() % 4, off, 4 + rng() % 1500);
  decoded = c.out + 5;
  return c.finish();
}

}  // namespace cs_codec_test
