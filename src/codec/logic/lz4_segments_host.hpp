// The host run of the segmented numcodecs-LZ4 decode (lz4_segments.hpp), for tests and
// fuzzing: the device's walks and its segment passes in the order that is hardest on them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "codec/logic/decode_status.hpp"
#include "codec/logic/lz4_block.hpp"
#include "codec/logic/lz4_segments.hpp"
#include "codec/logic/lz4_split_walk.hpp"

namespace cubestream::codec::logic {

// Host run of the segmented decode (tests and fuzzing): the walk with a staged window of
// `walk_window` bytes (>= kLz4FastSpan + 16), then every segment's literals with the segments in
// reverse order (the device runs them in any order), then the matches segment after segment in
// groups; a group's bytes are all read before any is written, which is the worst order the
// device's lanes can take, so a group rule that let one match read another's bytes shows here
// as wrong output. *groups (when given) receives the number of groups. Blocks at or over
// kLz4RingMaxBytes take lz4_decode_exact_with, as on the device. `walk` picks the walk; the
// table walk needs a window of at least kLz4TableWindowMin bytes (a smaller one walks serially).
// With split_region (not 0) the split walk (lz4_split_walk.hpp) with regions of at least that
// many bytes goes first, and `walk` runs only where it declines the block; *split (when given)
// says whether it took the block.
enum class Lz4Walk { kSerial, kTable };
inline DecodeStatus lz4_segments_decode_host(const std::uint8_t* in, std::size_t in_size, std::uint8_t* out,
                                             std::size_t size, std::size_t walk_window = 8192,
                                             std::uint64_t* groups = nullptr, Lz4Walk walk = Lz4Walk::kTable,
                                             std::uint32_t split_region = 0, bool* split = nullptr) {
  if (split != nullptr) *split = false;
  if (in_size >= kLz4RingMaxBytes || size >= kLz4RingMaxBytes) {
    Lz4SerialCopier copy;
    return lz4_decode_exact_with(in, in_size, out, size, copy);
  }
  const auto n_in = static_cast<std::uint32_t>(in_size), n_out = static_cast<std::uint32_t>(size);
  std::vector<Lz4Segment> segs(lz4_segment_bound(in_size, size) +
                               (split_region != 0 ? lz4_split_extra_slots(in_size, split_region) : 0));
  std::uint32_t count = 0;
  std::uint32_t rounds = 0;
  const auto mark = [&](std::uint32_t k, std::uint32_t ip, std::uint32_t op) { segs[k] = {ip, op}; };
  if (split_region != 0 && lz4_split_walk_host(in, n_in, n_out, split_region, segs.size(), mark, &count, &rounds)) {
    if (split != nullptr) *split = true;
  } else {
    std::vector<std::uint8_t> window(walk_window);
    Lz4StagedReader<Lz4MemcpyFill> rd{in, in_size, window.data(), walk_window, {}};
    DecodeStatus st = DecodeStatus::kOk;
    if (walk == Lz4Walk::kTable && walk_window >= kLz4TableWindowMin && walk_window <= kLz4TableWindowMax) {
      std::vector<std::uint16_t> tbl(walk_window), toks(lz4_table_token_cap(walk_window));
      std::vector<std::uint32_t> at(toks.size() + 1);
      Lz4HostTableTeam team{tbl.data(), toks.data(), at.data(), n_out};
      st = lz4_segment_walk_table(rd, team, tbl.data(), toks.data(), static_cast<std::uint32_t>(toks.size()),
                                  at.data(), true, n_in, n_out, segs.size(), mark, &count);
    } else {
      st = lz4_segment_walk(rd, n_in, n_out, segs.size(), mark, &count);
    }
    if (st != DecodeStatus::kOk) return st;
  }
  std::vector<std::vector<Lz4MatchRecord>> recs(count);
  std::vector<std::uint8_t> window(2048);
  for (std::uint32_t k = count; k-- > 0;) {
    const std::uint32_t end = k + 1 < count ? segs[k + 1].in : n_in;
    Lz4StagedReader<Lz4MemcpyFill> rd{in, in_size, window.data(), window.size(), {}};
    const DecodeStatus st = lz4_segment_parse(rd, n_in, n_out, segs[k].in, end, segs[k].out,
                                              [&](const Lz4Sequence& s, std::uint32_t op) {
                                                for (std::size_t i = 0; i < s.lit_len; ++i) out[op + i] = in[s.lit_src + i];
                                                if (s.match_len != 0)
                                                  recs[k].push_back({op + static_cast<std::uint32_t>(s.lit_len),
                                                                     static_cast<std::uint32_t>(s.match_offset),
                                                                     static_cast<std::uint32_t>(s.match_len)});
                                              });
    if (st != DecodeStatus::kOk || recs[k].size() > kLz4SegmentSeqs) return DecodeStatus::kCorrupt;
  }
  std::vector<std::uint8_t> bytes;
  std::uint64_t n_groups = 0;
  for (std::uint32_t k = 0; k < count; ++k) {
    const auto& r = recs[k];
    for (std::uint32_t at = 0; at < r.size();) {
      const std::uint32_t g = lz4_group_size(r.data() + at, static_cast<std::uint32_t>(r.size()) - at);
      bytes.clear();
      for (std::uint32_t j = at; j < at + g; ++j)
        for (std::uint32_t i = 0; i < r[j].len; ++i) bytes.push_back(out[lz4_match_source(r[j], i)]);
      std::size_t b = 0;
      for (std::uint32_t j = at; j < at + g; ++j)
        for (std::uint32_t i = 0; i < r[j].len; ++i) out[r[j].dst + i] = bytes[b++];
      at += g;
      ++n_groups;
    }
  }
  if (groups != nullptr) *groups = n_groups;
  return DecodeStatus::kOk;
}

}  // namespace cubestream::codec::logic
