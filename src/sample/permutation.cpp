// Feistel permutation with cycle walking; see permutation.hpp.
#include "sample/permutation.hpp"

#include <bit>

namespace cubestream::sample {

std::uint64_t derive_key(std::uint64_t seed, std::uint64_t epoch, std::uint64_t tag, std::uint64_t index) {
  // Chain the finaliser so every input bit reaches every key bit; the constants keep a zero
  // seed from producing a zero key.
  std::uint64_t h = mix64(seed ^ 0x9e3779b97f4a7c15ULL);
  h = mix64(h ^ (epoch + 0x632be59bd9b4e019ULL));
  h = mix64(h ^ (tag + 0x85157af5ULL));
  h = mix64(h ^ (index + 0xd1b54a32d192ed03ULL));
  return h;
}

Permutation::Permutation(std::uint64_t n, std::uint64_t key) : n_(n) {
  // Bits needed for n - 1, rounded up to an even count (at least 2) so both halves are equal.
  unsigned bits = n <= 1 ? 0 : 64u - static_cast<unsigned>(std::countl_zero(n - 1));
  if (bits < 2) bits = 2;
  half_bits_ = (bits + 1) / 2;
  half_mask_ = (std::uint64_t{1} << half_bits_) - 1;
  std::uint64_t k = key;
  for (auto& rk : keys_) {
    k = mix64(k + 0x9e3779b97f4a7c15ULL);
    rk = k;
  }
}

std::uint64_t Permutation::feistel(std::uint64_t x) const {
  std::uint64_t left = x >> half_bits_;
  std::uint64_t right = x & half_mask_;
  for (int r = 0; r < kRounds; ++r) {
    const std::uint64_t f = mix64(right ^ keys_[static_cast<std::size_t>(r)]) & half_mask_;
    const std::uint64_t next = left ^ f;
    left = right;
    right = next;
  }
  return (left << half_bits_) | right;
}

std::uint64_t Permutation::operator()(std::uint64_t i) const {
  if (n_ <= 1) return 0;
  // Cycle walking: the Feistel network permutes [0, 2^(2*half_bits)); following the cycle of
  // i until it re-enters [0, n) yields a permutation of [0, n).
  std::uint64_t x = feistel(i);
  while (x >= n_) x = feistel(x);
  return x;
}

}  // namespace cubestream::sample
