// The rounds of lz4_rounds.hpp on the host, one region after another in each step (tests and
// fuzzing run the device's logic through it; the GPU runs the regions side by side).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "codec/logic/lz4_rounds.hpp"

namespace cubestream::codec::logic {

// Plain words: the host's bitmap.
struct Lz4HostBits {
  std::uint32_t* w;
  void set(std::uint32_t i, std::uint32_t mask) { w[i] |= mask; }
  std::uint32_t get(std::uint32_t i) const { return w[i]; }
};

// What a host run of the rounds did.
struct Lz4RoundsRun {
  bool accepted = false;     // false: declined (the caller decodes the block another way)
  std::uint32_t regions = 0;
  std::uint32_t walk_rounds = 0;  // split-walk rounds after the first
  std::uint32_t rounds = 0;       // rounds of matches
  std::uint64_t tests = 0;        // ready tests over all rounds
  std::uint64_t parsed = 0;       // sequences parsed by the split walk's walks and the emit walks
};

// Decodes (with the round pass's batches of `Batch` records) the numcodecs-lz4 block in[0, in_size) (no header) into out[0, size) as the device
// does, with regions of at least region_min bytes; returns what happened. Declined: out holds
// whatever was written, and the caller must decode the block another way. In order, a round's
// regions go first to last, so each sees its predecessors' copies of the same round (one round
// then copies every match); `last_first` runs them last to first, so that a region sees only
// its own copies of the round and the others' of the rounds before (the device's worst case,
// where no other thread's copy of the round is visible yet): the rounds' count and keeping of
// pending matches are exercised as on the device.
// `records`: the split walk's region walks keep their sequences as records and stop where they
// meet the chain their region's last walk recorded, and the emit reads the records
// (lz4_region_walk_records, lz4_region_emit_records: CUBESTREAM_LZ4_ROUNDS_WALK=records on the
// device), instead of walking each region again.
template <std::uint32_t Batch = kLz4RoundBatch>
inline Lz4RoundsRun lz4_rounds_decode_host(const std::uint8_t* in, std::uint32_t in_size, std::uint8_t* out,
                                           std::uint32_t size, std::uint32_t region_min, bool last_first = false,
                                           bool records = false) {
  Lz4RoundsRun run;
  if (!lz4_split_worth(in_size, size)) return run;
  const Lz4SplitShape shape = lz4_split_shape(in_size, region_min);
  const std::uint32_t n = shape.regions;
  run.regions = n;
  const Lz4RoundsLayout layout = lz4_rounds_layout(shape, size, records);
  const std::uint32_t slots = lz4_rounds_region_slots(shape);
  // the slots as the device carves them: `slots` records of lz4_rounds_slot_bytes a region
  std::vector<Lz4RoundSeq> store((layout.bits_at + sizeof(Lz4RoundSeq) - 1) / sizeof(Lz4RoundSeq));
  auto* slot0 = reinterpret_cast<std::uint8_t*>(store.data());
  const auto region_rec = [&](std::uint32_t r) {
    return reinterpret_cast<Lz4RoundMatch*>(slot0 + std::size_t{r} * slots * lz4_rounds_slot_bytes(records));
  };
  std::vector<Lz4RegionRecords> kept(n);
  std::vector<std::uint32_t> entry(n);
  std::vector<Lz4RegionWalk> w;
  for (std::uint32_t r = 0; r < n; ++r) entry[r] = lz4_rounds_guess_start(shape, r, in_size);
  const bool fixed =
      records ? lz4_split_fixed_point_host(
                    shape, entry, w, &run.walk_rounds,
                    [&](std::uint32_t r, std::uint32_t from, const Lz4RegionWalk* last) {
                      const Lz4RegionWalk rw = lz4_region_walk_records(
                          in, in_size, from, lz4_split_end(shape, r, in_size),
                          reinterpret_cast<Lz4RoundSeq*>(region_rec(r)), slots, &kept[r], last);
                      run.parsed += kept[r].parsed;
                      return rw;
                    })
              : lz4_split_fixed_point_host(shape, entry, w, &run.walk_rounds,
                                           [&](std::uint32_t r, std::uint32_t from, const Lz4RegionWalk*) {
                                             return lz4_region_walk(
                                                 in, in_size, from, lz4_split_end(shape, r, in_size),
                                                 [](std::uint32_t, std::uint32_t, std::uint32_t) {},
                                                 [&](std::uint32_t, std::uint32_t, std::uint32_t, std::uint32_t) {
                                                   ++run.parsed;
                                                 },
                                                 [](std::uint32_t) { return false; });
                                           });
  if (!fixed) return run;
  std::vector<std::uint64_t> base(n);
  if (!lz4_split_accepts(w.data(), n, size, base.data())) return run;

  std::vector<std::uint32_t> words(layout.words, 0), count(n, 0);
  Lz4HostBits bits{words.data()};
  for (std::uint32_t r = 0; r < n; ++r) {
    const std::uint32_t end = lz4_split_end(shape, r, in_size);
    if (records) {
      if (!lz4_region_emit_records(in, in_size, reinterpret_cast<Lz4RoundSeq*>(region_rec(r)), slots, kept[r],
                                   w[r].out, out, size, static_cast<std::uint32_t>(base[r]), bits, &count[r], in,
                                   in + in_size))
        return run;
    } else if (!lz4_region_emit(in, in_size, entry[r], end, out, size, static_cast<std::uint32_t>(base[r]), bits,
                                region_rec(r), slots, &count[r], in, in + in_size)) {
      return run;
    } else {
      run.parsed += count[r] + (w[r].last ? 1 : 0);  // the emit walk parses every sequence again
    }
  }
  const auto nothing = [] {};
  const auto pending = [&] {
    for (std::uint32_t c : count)
      if (c != 0) return true;
    return false;
  };
  // each round copies at least the first pending match in output order (every byte it reads is
  // a literal or an earlier match's, all done), so the loop ends
  while (pending()) {
    if (++run.rounds > kLz4RoundsMax) return run;  // declined, as on the device
    for (std::uint32_t k = 0; k < n; ++k) {
      const std::uint32_t r = last_first ? n - 1 - k : k;
      run.tests += count[r];
      lz4_round_pass<Batch>(region_rec(r), &count[r], out, size, bits, nothing, nothing);
    }
  }
  run.accepted = true;
  return run;
}

}  // namespace cubestream::codec::logic
