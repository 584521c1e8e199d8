// Host count behind the segmented LZ4 decoder's match pass (codec/logic/lz4_segments.hpp):
// for era5-like 4 MiB chunks (numcodecs lz4, liblz4 acceleration 1), how many segments the
// walk marks, how many matches each keeps, and how many groups the match pass needs with the
// decoder's rule (lz4_group_size: a match joins while it reads no byte another match of the
// group writes) against a cruder one (a match joins while it reads only below the group's first
// output byte). The groups of a segment run one after another on the critical path of its block.
//   g++ -std=c++20 -O2 -Isrc -Ibench bench/micro/lz4_segment_groups.cpp -llz4
#include <lz4.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "codec/logic/lz4_segments.hpp"
#include "era5_chunk.hpp"

namespace logic = cubestream::codec::logic;

// Groups of recs under the crude rule: match j joins while its reads end at or below the
// group's first output byte (and it is at most kLz4LaneMatchMax long, as the decoder's rule).
static std::uint64_t crude_groups(const std::vector<logic::Lz4MatchRecord>& r) {
  std::uint64_t groups = 0;
  for (std::size_t at = 0; at < r.size();) {
    std::size_t g = 1;
    while (at + g < r.size() && g < logic::kLz4GroupMax && r[at].len <= logic::kLz4LaneMatchMax) {
      const auto& m = r[at + g];
      if (m.len > logic::kLz4LaneMatchMax || m.dst - m.off + std::min(m.off, m.len) > r[at].dst) break;
      ++g;
    }
    at += g;
    ++groups;
  }
  return groups;
}

int main() {
  constexpr int kChunks = 8;
  std::uint64_t seqs = 0, segs = 0, matches = 0, groups = 0, crude = 0, max_seg_groups = 0;
  for (int c = 0; c < kChunks; ++c) {
    const std::vector<std::uint8_t> raw = cubestream_bench::era5_chunk(1 << 20, 7919 * c + 256);
    std::vector<std::uint8_t> enc(LZ4_compressBound(static_cast<int>(raw.size())));
    const int n = LZ4_compress_default(reinterpret_cast<const char*>(raw.data()), reinterpret_cast<char*>(enc.data()),
                                       static_cast<int>(raw.size()), static_cast<int>(enc.size()));
    const auto n_in = static_cast<std::uint32_t>(n), n_out = static_cast<std::uint32_t>(raw.size());
    std::vector<logic::Lz4Segment> seg(logic::lz4_segment_bound(n_in, n_out));
    std::vector<std::uint8_t> window(8192);
    logic::Lz4StagedReader<logic::Lz4MemcpyFill> rd{enc.data(), n_in, window.data(), window.size(), {}};
    std::uint32_t count = 0;
    if (logic::lz4_segment_walk(
            rd, n_in, n_out, seg.size(), [&](std::uint32_t k, std::uint32_t ip, std::uint32_t op) { seg[k] = {ip, op}; },
            &count) != logic::DecodeStatus::kOk)
      return 1;
    segs += count;
    const std::uint8_t* in = enc.data();
    for (std::uint32_t k = 0; k < count; ++k) {
      std::vector<logic::Lz4MatchRecord> r;
      const std::uint32_t end = k + 1 < count ? seg[k + 1].in : n_in;
      logic::lz4_segment_parse(in, n_in, n_out, seg[k].in, end, seg[k].out,
                               [&](const logic::Lz4Sequence& s, std::uint32_t op) {
                                 ++seqs;
                                 if (s.match_len != 0)
                                   r.push_back({op + static_cast<std::uint32_t>(s.lit_len),
                                                static_cast<std::uint32_t>(s.match_offset),
                                                static_cast<std::uint32_t>(s.match_len)});
                               });
      matches += r.size();
      std::uint64_t g = 0;
      for (std::uint32_t at = 0; at < r.size(); ++g)
        at += logic::lz4_group_size(r.data() + at, static_cast<std::uint32_t>(r.size()) - at);
      groups += g;
      max_seg_groups = std::max(max_seg_groups, g);
      crude += crude_groups(r);
    }
  }
  std::printf("%d era5-like chunks of 4 MiB: %.1f segments, %.0f sequences, %.0f matches per chunk\n", kChunks,
              double(segs) / kChunks, double(seqs) / kChunks, double(matches) / kChunks);
  std::printf("groups per chunk: %.0f (%.1f matches each; most in one segment %llu), crude rule %.0f (%.1f each)\n",
              double(groups) / kChunks, double(matches) / groups, static_cast<unsigned long long>(max_seg_groups),
              double(crude) / kChunks, double(matches) / crude);
}
