// Host count behind session 36's look at the segmented LZ4 decoder's chain (docs/gpu_decoders.md,
// "The workers' clocks, literal lanes and word copies of matches"): for the GPU benchmark's
// numcodecs-lz4 blocks (8 era5-like 4 MiB chunks, one field of three synth variables), per
// segment of the table walk:
//   - matches and groups (lz4_group_size: the groups a segment's match pass runs one after
//     another, each a link of its block's chain);
//   - the short matches' lengths, the share that overlap their own output (off < len), and the
//     share of groups holding one (a word copy picks those bytes one by one);
//   - "own" matches: those reading only bytes of their own segment that are literals or other
//     own matches (transitively), which a worker could copy before it waits for the segment
//     before, and the groups the chain would keep without them;
//   - their levels (session 37): level 0 reads only the segment's literals (the device's own
//     pass, logic::lz4_reads_own_literals, takes these), level d literals and matches of levels
//     below d; and the groups left without the levels up to d; the chained matches' passes by
//     dependency levels, 32 short matches a pass (the device's), or 64 or 128 (session 38);
//   - the same levels and passes after forwarding (session 39): a chained match that does not
//     overlap its output and reads bytes wholly inside the output of one earlier chained match
//     that does not overlap its own reads that match's source instead (its offset plus the
//     other's), as often as that holds, which would take it off the other's level.
// Build and run from the repository root, after the library's build:
//   g++ -std=c++20 -O2 -Isrc -Ibench bench/micro/lz4_chain_matches.cpp build/libcubestream.a
//       -llz4 -lpthread -o lz4_chain_matches && ./lz4_chain_matches   (one command line)
#include <lz4.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "codec/logic/lz4_segments.hpp"
#include "era5_chunk.hpp"
#include "synth/era5_model.hpp"

namespace logic = cubestream::codec::logic;
using Bytes = std::vector<std::uint8_t>;

namespace {

std::uint64_t groups_of(const std::vector<logic::Lz4MatchRecord>& r) {
  std::uint64_t g = 0;
  for (std::uint32_t at = 0; at < r.size(); ++g)
    at += logic::lz4_group_size(r.data() + at, static_cast<std::uint32_t>(r.size()) - at);
  return g;
}

// The dependency levels of a segment's chained matches (level 0 reads no output of another of
// them, level d one of level d - 1 at most) and the passes they take with 32, 64 or 128 short
// matches a pass (a level's long matches go one by one).
struct Passes {
  std::uint64_t levels = 0, passes[3] = {};
};
Passes passes_of(const std::vector<logic::Lz4MatchRecord>& recs) {
  std::vector<int> dl(recs.size(), 0);
  std::vector<std::uint64_t> shorts, longs;
  for (std::size_t i = 0; i < recs.size(); ++i) {
    const logic::Lz4MatchRecord& m = recs[i];
    const std::uint32_t a = m.dst - m.off, e = a + std::min(m.off, m.len);
    int l = 0;
    for (std::size_t j = 0; j < i; ++j)
      if (recs[j].dst < e && recs[j].dst + recs[j].len > a) l = std::max(l, dl[j] + 1);
    dl[i] = l;
    if (static_cast<std::size_t>(l) >= shorts.size()) shorts.resize(l + 1), longs.resize(l + 1);
    (m.len > logic::kLz4LaneMatchMax ? longs : shorts)[l] += 1;
  }
  Passes p;
  p.levels = shorts.size();
  for (std::size_t l = 0; l < shorts.size(); ++l)
    for (int w = 0; w < 3; ++w) p.passes[w] += (shorts[l] + (32u << w) - 1) / (32u << w) + longs[l];
  return p;
}

void count(const char* name, const std::vector<Bytes>& raws) {
  std::uint64_t segs = 0, matches = 0, groups = 0, overlapping = 0, groups_overlap = 0, own = 0, chained = 0;
  std::uint64_t lens[logic::kLz4LaneMatchMax + 2] = {};
  std::uint64_t lvl[4] = {}, lvl_chained[4] = {}, dep_passes = 0, dep_levels = 0, wide_passes[2] = {}, fwd_passes = 0, fwd_levels = 0;
  for (const Bytes& raw : raws) {
    Bytes enc(static_cast<std::size_t>(LZ4_compressBound(static_cast<int>(raw.size()))));
    const int n = LZ4_compress_default(reinterpret_cast<const char*>(raw.data()), reinterpret_cast<char*>(enc.data()),
                                       static_cast<int>(raw.size()), static_cast<int>(enc.size()));
    const auto n_in = static_cast<std::uint32_t>(n), n_out = static_cast<std::uint32_t>(raw.size());
    std::vector<logic::Lz4Segment> seg(logic::lz4_segment_bound(n_in, n_out));
    Bytes window(8192);
    logic::Lz4StagedReader<logic::Lz4MemcpyFill> rd{enc.data(), n_in, window.data(), window.size(), {}};
    std::uint32_t count = 0;
    const auto mark = [&](std::uint32_t k, std::uint32_t ip, std::uint32_t op) { seg[k] = {ip, op}; };
    if (logic::lz4_segment_walk(rd, n_in, n_out, seg.size(), mark, &count) != logic::DecodeStatus::kOk) {
      std::printf("%s: the walk failed\n", name);
      return;
    }
    segs += count;
    for (std::uint32_t k = 0; k < count; ++k) {
      std::vector<logic::Lz4MatchRecord> r;
      const std::uint32_t end = k + 1 < count ? seg[k + 1].in : n_in;
      const std::uint8_t* in = enc.data();
      logic::lz4_segment_parse(in, n_in, n_out, seg[k].in, end, seg[k].out,
                               [&](const logic::Lz4Sequence& s, std::uint32_t op) {
                                 if (s.match_len != 0)
                                   r.push_back({op + static_cast<std::uint32_t>(s.lit_len),
                                                static_cast<std::uint32_t>(s.match_offset),
                                                static_cast<std::uint32_t>(s.match_len)});
                               });
      matches += r.size();
      groups += groups_of(r);
      // own matches, in output order: the read range inside this segment, and every match of it
      // that the range meets an own one too
      std::vector<char> is_own(r.size());
      std::vector<logic::Lz4MatchRecord> rest;
      for (std::size_t i = 0; i < r.size(); ++i) {
        const logic::Lz4MatchRecord& m = r[i];
        const std::uint32_t a = m.dst - m.off, e = a + std::min(m.off, m.len);
        lens[std::min<std::uint32_t>(m.len, logic::kLz4LaneMatchMax + 1)] += 1;
        overlapping += m.len <= logic::kLz4LaneMatchMax && m.off < m.len ? 1 : 0;
        bool ok = a >= seg[k].out;
        for (std::size_t j = 0; ok && j < i; ++j)
          if (r[j].dst < e && r[j].dst + r[j].len > a && !is_own[j]) ok = false;
        is_own[i] = ok;
        own += ok ? 1 : 0;
        if (!ok) rest.push_back(m);
      }
      chained += groups_of(rest);
      // levels: 0 reads only this segment's literals; d reads literals and matches below d
      std::vector<int> level(r.size(), 99);
      for (std::size_t i = 0; i < r.size(); ++i) {
        const logic::Lz4MatchRecord& m = r[i];
        const std::uint32_t a = m.dst - m.off, e = a + std::min(m.off, m.len);
        if (a < seg[k].out || m.len > logic::kLz4LaneMatchMax) continue;
        int l = 0;
        for (std::size_t j = 0; j < i; ++j)
          if (r[j].dst < e && r[j].dst + r[j].len > a) l = std::max(l, level[j] + 1);
        level[i] = l;
      }
      for (int d = 0; d < 4; ++d) {
        std::vector<logic::Lz4MatchRecord> left;
        for (std::size_t i = 0; i < r.size(); ++i) {
          if (level[i] == d) lvl[d] += 1;
          if (level[i] > d) left.push_back(r[i]);
        }
        lvl_chained[d] += groups_of(left);
      }
      // the chained matches (all but level 0) in dependency levels: level 0 reads no output of
      // another chained match of the segment, level d one of level d - 1 at most; a level's
      // short matches go 32 at a time, its long ones one by one
      {
        std::vector<logic::Lz4MatchRecord> rest0;
        for (std::size_t i = 0; i < r.size(); ++i)
          if (level[i] != 0) rest0.push_back(r[i]);
        const Passes p = passes_of(rest0);
        dep_levels += p.levels;
        dep_passes += p.passes[0];
        wide_passes[0] += p.passes[1];
        wide_passes[1] += p.passes[2];
        // forwarding: a chained non-overlapping match whose read range lies wholly inside the
        // output of one earlier non-overlapping chained match A reads A's source instead
        // (offset + A's offset), repeatedly; then levels again
        std::vector<logic::Lz4MatchRecord> fw = rest0;
        for (std::size_t i = 0; i < fw.size(); ++i) {
          logic::Lz4MatchRecord& m = fw[i];
          if (m.off < m.len) continue;
          for (bool moved = true; moved;) {
            moved = false;
            const std::uint32_t a = m.dst - m.off, e = a + m.len;
            for (std::size_t j = i; j-- > 0;) {
              const logic::Lz4MatchRecord& A = rest0[j];
              if (A.dst + A.len <= a || A.dst >= e) continue;
              if (A.dst <= a && e <= A.dst + A.len && A.off >= A.len) {
                m.off += A.off;
                moved = true;
              }
              break;
            }
          }
        }
        const Passes f = passes_of(fw);
        fwd_levels += f.levels;
        fwd_passes += f.passes[0];
      }
      for (std::uint32_t at = 0; at < r.size();) {
        const std::uint32_t g = logic::lz4_group_size(r.data() + at, static_cast<std::uint32_t>(r.size()) - at);
        bool any = false;
        for (std::uint32_t q = at; q < at + g; ++q)
          any = any || (r[q].len <= logic::kLz4LaneMatchMax && r[q].off < r[q].len);
        groups_overlap += any ? 1 : 0;
        at += g;
      }
    }
  }
  const double s = static_cast<double>(segs), m = static_cast<double>(matches);
  std::printf("%-26s segments/chunk %6.1f  matches/segment %5.1f  groups/segment %5.2f\n", name,
              s / static_cast<double>(raws.size()), m / s, static_cast<double>(groups) / s);
  std::printf("%-26s lengths:", "");
  for (std::uint32_t l = logic::kLz4MinMatch; l <= logic::kLz4LaneMatchMax + 1; ++l)
    if (lens[l] * 1000 >= matches)
      std::printf(" %u%s %.1f %%", l, l > logic::kLz4LaneMatchMax ? "+" : "", 100.0 * static_cast<double>(lens[l]) / m);
  std::printf("\n%-26s overlapping short matches %.1f %%, groups holding one %.1f %%\n", "",
              100.0 * static_cast<double>(overlapping) / m,
              100.0 * static_cast<double>(groups_overlap) / static_cast<double>(groups));
  std::printf("%-26s own matches %.1f %%; chained groups/segment without them %.2f\n", "",
              100.0 * static_cast<double>(own) / m, static_cast<double>(chained) / s);
  for (int d = 0; d < 4; ++d)
    std::printf("%-26s level %d %.1f %%; chained groups/segment without levels <= %d: %.2f\n", "", d,
                100.0 * static_cast<double>(lvl[d]) / m, d, static_cast<double>(lvl_chained[d]) / s);
  std::printf("%-26s after level 0, in dependency levels: %.2f levels, %.2f passes a segment\n", "",
              static_cast<double>(dep_levels) / s, static_cast<double>(dep_passes) / s);
  std::printf("%-26s forwarded: %.2f levels, %.2f passes a segment\n", "",
              static_cast<double>(fwd_levels) / s, static_cast<double>(fwd_passes) / s);
  std::printf("%-26s passes a segment with 64 or 128 short matches a pass (session 38): %.2f, %.2f\n", "",
              static_cast<double>(wide_passes[0]) / s, static_cast<double>(wide_passes[1]) / s);
}

}  // namespace

int main() {
  std::vector<Bytes> era5;
  for (int c = 0; c < 8; ++c) era5.push_back(cubestream_bench::era5_chunk(std::size_t{1} << 20, 7919 * c + 256));
  count("era5-like 4 MiB (x8)", era5);
  cubestream::synth::ModelSpec spec;
  spec.variables = {"2m_temperature", "mean_sea_level_pressure", "total_column_water_vapour"};
  cubestream::synth::Era5Model model(spec, 2);
  for (std::size_t v = 0; v < spec.variables.size(); ++v) {
    Bytes raw(model.field_elements() * 4);
    model.field(v, 0, 3, reinterpret_cast<float*>(raw.data()));
    count(spec.variables[v].c_str(), {raw});
  }
  return 0;
}
