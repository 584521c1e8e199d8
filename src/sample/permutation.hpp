// Keyed pseudo-random permutations of [0, n) computed per index: a balanced Feistel network
// over the smallest even power of two >= n, with cycle walking to stay inside [0, n). A Feistel
// network is a bijection whatever its round function, so the permutation is exact by
// construction (no sample lost or repeated); the quality of the shuffle comes from the round
// function (the murmur3/splitmix64 finaliser) and the round count. O(1) memory, O(1) expected
// time per index (the power-of-two domain is < 4n, so < 4 walks on average).
#pragma once

#include <array>
#include <cstdint>

namespace cubestream::sample {

// The splitmix64 finaliser: a fast, well-mixing 64-bit bijection.
inline std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

// A key for one use of a permutation, from the user's seed and what the use is (epoch, a tag
// naming the stream, a block number), so distinct uses get independent-looking permutations.
std::uint64_t derive_key(std::uint64_t seed, std::uint64_t epoch, std::uint64_t tag, std::uint64_t index = 0);

class Permutation {
 public:
  Permutation() = default;
  Permutation(std::uint64_t n, std::uint64_t key);
  std::uint64_t size() const { return n_; }
  // The image of i in [0, n). Undefined for i >= n.
  std::uint64_t operator()(std::uint64_t i) const;

 private:
  static constexpr int kRounds = 8;
  std::uint64_t feistel(std::uint64_t x) const;
  std::uint64_t n_ = 0;
  unsigned half_bits_ = 0;
  std::uint64_t half_mask_ = 0;
  std::array<std::uint64_t, kRounds> keys_{};
};

}  // namespace cubestream::sample
