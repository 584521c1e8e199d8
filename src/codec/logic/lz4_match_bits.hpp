// The pending bits of the segmented LZ4 decode's ready pass, written once for the host and the
// device.
//
// Why. The segment workers copy literals straight away, but a segment copies its matches only
// after the segment before it in the same block has copied all of its own (a flag per segment):
// one chain per block of ~300 segments x ~10 groups of matches on a 4 MiB era5-like block
// (docs/gpu_decoders.md, sessions 14-16 and 26). Yet most matches read only bytes that are final
// long before: literals, or matches of segments the chain has passed. On the GPU benchmark's
// era5-like chunks about two thirds of the groups leave the chain this way (1 150-1 220 of 3 256
// remain in a 4 MiB chunk, by the host run's schedule; the synth fields keep 53-86 %:
// bench/micro/lz4_ready_pass.cpp).
//
// So each block's output gets one bit per byte, set while the byte is the output of a match not
// yet copied:
//  1. A segment parses, copies its literals, sets the bits of its matches' outputs and then
//     publishes (its flag goes to 1: "literals and bits are in place"). It waits on nothing
//     before that.
//  2. It waits for the flags of every earlier segment its matches can read from: an LZ4 offset
//     reaches back at most 65 535 bytes (kLz4MaxOffset), so those whose output ends past the
//     segment's start - 65 535.
//  3. The ready pass: every match of at most kLz4LaneMatchMax bytes whose read range
//     (lz4_match_reads) has no bit set is copied (a bit seen clear means the byte is final: its
//     writer stored it, fenced, and then cleared the bit), and its bits cleared.
//  4. The chained pass as before for the rest: after the segment before is done (flag 2), in
//     the groups of lz4_group_size, each match clearing its bits; then the flag goes to 2.
// No new wait can last for good: step 2 waits only on segments that hold lower queue tickets
// (taken by workers that are running) and wait on nothing before they publish. Bits sit in a
// scratch region of decoded size / 8 bytes, zeroed per batch. lz4_segments_host.hpp runs this
// order on the host with an adversarial schedule (Lz4Matches::kReadyFirst).
//
// Measured on the H200 (session 27): the segment kernel alone gains 5 % (6.98 -> 6.6 ms on the
// era5-like batch, ncu), and the fused kernel, whose walk sets the batch's time, loses (9.7 ->
// 10.4-10.7 ms era5-like, 4.6 -> 4.9 mixed, 29 -> 36 synth fields): the bits' atomics and fences
// slow the walkers that share the SMs, and the groups taken off the chain were not what the
// segment kernel spends. So it is off unless CUBESTREAM_LZ4_MATCHES=ready
// (cuda/decode/batch_decode.cu).
#pragma once

#include <cstddef>
#include <cstdint>

#include "codec/logic/lz4_segments.hpp"
#include "core/host_device.hpp"

namespace cubestream::codec::logic {

// The largest LZ4 offset: a match reads at most this far back from its first output byte.
inline constexpr std::uint32_t kLz4MaxOffset = 65535;

// Words of the map for a block that decodes to `size` bytes (a bit per byte).
CS_HD inline std::size_t lz4_bit_words(std::size_t size) { return (size + 31) / 32; }

// The bits of word w (bytes [32 w, 32 w + 32)) that lie in [a, b); 0 where none do.
CS_HD inline std::uint32_t lz4_bits_in(std::uint32_t a, std::uint32_t b, std::uint32_t w) {
  const std::uint64_t lo = std::uint64_t{w} * 32, hi = lo + 32;
  const std::uint64_t s = a > lo ? a : lo, e = b < hi ? b : hi;
  if (s >= e) return 0;
  const auto n = static_cast<std::uint32_t>(e - s);
  const std::uint32_t m = n == 32 ? ~0u : (1u << n) - 1u;
  return m << static_cast<std::uint32_t>(s - lo);
}

// The output range match m reads: [first, end), min(off, len) bytes ending at or before m.dst
// (a match longer than its offset repeats its first `off` bytes: lz4_match_source).
struct Lz4Reads {
  std::uint32_t first, end;
};
CS_HD inline Lz4Reads lz4_match_reads(const Lz4MatchRecord& m) {
  const std::uint32_t first = m.dst - m.off;
  return Lz4Reads{first, first + (m.off < m.len ? m.off : m.len)};
}

// Whether no bit of [a, b) is set in `bits`; load(w) reads word w (on the device a load that
// sees other warps' updates).
CS_HD_TEMPLATE
template <class Load>
CS_HD inline bool lz4_bits_clear(std::uint32_t a, std::uint32_t b, Load&& load) {
  if (a >= b) return true;
  for (std::uint32_t w = a >> 5; w <= (b - 1) >> 5; ++w)
    if ((load(w) & lz4_bits_in(a, b, w)) != 0) return false;
  return true;
}

// The lowest output position segment `out` can read (step 2 waits for every segment whose output
// ends past it).
CS_HD inline std::uint32_t lz4_window_low(std::uint32_t out) { return out > kLz4MaxOffset ? out - kLz4MaxOffset : 0u; }

}  // namespace cubestream::codec::logic
