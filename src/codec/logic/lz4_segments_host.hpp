// The host run of the segmented numcodecs-LZ4 decode (lz4_segments.hpp), for tests and
// fuzzing: the device's walks and its segment passes in the order that is hardest on them.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "codec/logic/decode_status.hpp"
#include "codec/logic/lz4_block.hpp"
#include "codec/logic/lz4_literal_words.hpp"
#include "codec/logic/lz4_match_bits.hpp"
#include "codec/logic/lz4_match_words.hpp"
#include "codec/logic/lz4_segments.hpp"
#include "codec/logic/lz4_table_pipeline.hpp"
#include "codec/logic/lz4_split_walk.hpp"

namespace cubestream::codec::logic {

// A literal of n bytes from in[from] to out[at] on the host as the device copies it with
// -DCS_LZ4_LIT_WORDS=1 (lz4_literal_words.hpp): its head in words, positions relative to the
// aligned addresses at or below `in` and `out`, every word loaded and stored in turn; the rest
// (at most 3 bytes at the block's end) by memcpy. A loaded word's bytes before `in`
// (the device's numcodecs header holds them) read as a pattern, which the copy must not keep; a
// word past the block's end or without a byte of the literal aborts (proven bounds, not
// properties of the input).
inline void lz4_copy_literal_host(const std::uint8_t* in, std::uint32_t n_in, std::uint8_t* out, std::uint32_t from,
                                  std::uint32_t at, std::uint32_t n) {
  const auto in_mis = static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(in) & 3u);
  const auto out_mis = static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(out) & 3u);
  const std::uint32_t src = in_mis + from, dst = out_mis + at;
  const std::uint32_t head = lz4_literal_words_head(src, n, in_mis + n_in);
  std::memcpy(out + at + head, in + from + head, n - head);
  const auto load = [&](std::uint32_t w) {
    if (4 * std::uint64_t{w} + 4 <= src || 4 * std::uint64_t{w} >= std::uint64_t{src} + head) std::abort();
    std::uint32_t x = 0;
    for (std::uint32_t b = 0; b < 4; ++b) {
      const std::uint32_t p = 4 * w + b;  // relative to in's aligned address
      if (p >= in_mis + n_in) std::abort();
      const std::uint8_t v = p >= in_mis ? in[p - in_mis] : static_cast<std::uint8_t>(0xC3u + b);
      x |= std::uint32_t{v} << (8 * b);
    }
    return x;
  };
  struct Store {
    std::uint8_t* out;
    std::uint32_t mis;
    void u32(std::uint32_t p, std::uint32_t x) const { std::memcpy(out + (p - mis), &x, 4); }
    void u8(std::uint32_t p, std::uint8_t x) const { out[p - mis] = x; }
  };
  const std::uint32_t nw = lz4_literal_word_count(dst, head);
  for (std::uint32_t j = 0; j < nw; ++j)
    lz4_literal_word_store(dst, j, lz4_literal_word_load(src, dst, head, j, load), Store{out, out_mis});
}

// Segment k of a walked block on the host: its literals written to `out`, its matches appended
// to *recs in output order (the device keeps them in shared memory). kCorrupt where the parse
// fails or the segment holds more matches than a warp keeps (kLz4SegmentSeqs). With `runs` (the
// walk's notes, Lz4Runs) and a segment they note, its runs are parsed one after another the way a
// worker's lanes parse them side by side (lz4_run_parse, then lz4_run_place); else the segment is
// parsed serially through a staged window, as the device does for segments without notes.
inline DecodeStatus lz4_segment_literals_host(const std::uint8_t* in, std::uint32_t n_in, std::uint8_t* out,
                                              std::uint32_t n_out, const Lz4Segment* segs, std::uint32_t count,
                                              std::uint32_t k, std::vector<std::uint8_t>& window,
                                              std::vector<Lz4MatchRecord>* recs, const Lz4Runs* runs = nullptr) {
  const std::uint32_t end = k + 1 < count ? segs[k + 1].in : n_in;
  if (runs != nullptr && runs[k].seqs != 0) {
    const Lz4Runs& rk = runs[k];
    if (rk.seqs > kLz4SegmentSeqs) return DecodeStatus::kCorrupt;
    std::vector<Lz4Literal> lits(rk.seqs);
    std::vector<Lz4MatchRecord> all(rk.seqs);
    const std::uint32_t n = lz4_run_count(rk.seqs);
    std::vector<std::uint32_t> lens(n);
    const std::uint8_t* reader = in;
    for (std::uint32_t r = 0; r < n; ++r)
      if (!lz4_run_parse(reader, n_in, lz4_run_start(rk, segs[k].in, r), lz4_run_stop(rk, segs[k].in, end, n, r),
                         lz4_run_seqs(rk.seqs, r), lits.data() + r * kLz4RunSeqs, all.data() + r * kLz4RunSeqs,
                         &lens[r]))
        return DecodeStatus::kCorrupt;
    std::uint64_t op = segs[k].out;
    for (std::uint32_t r = 0; r < n; ++r) {
      if (!lz4_run_place(n_out, op, lz4_run_seqs(rk.seqs, r), lits.data() + r * kLz4RunSeqs,
                         all.data() + r * kLz4RunSeqs))
        return DecodeStatus::kCorrupt;
      op += lens[r];
    }
    for (std::uint32_t i = 0; i < rk.seqs; ++i) {
      lz4_copy_literal_host(in, n_in, out, lits[i].src, all[i].dst - lits[i].len, lits[i].len);
      if (all[i].len != 0) recs->push_back(all[i]);
    }
    return DecodeStatus::kOk;
  }
  Lz4StagedReader<Lz4MemcpyFill> rd{in, n_in, window.data(), window.size(), {}};
  const DecodeStatus st = lz4_segment_parse(rd, n_in, n_out, segs[k].in, end, segs[k].out,
                                            [&](const Lz4Sequence& s, std::uint32_t op) {
                                              lz4_copy_literal_host(in, n_in, out,
                                                                    static_cast<std::uint32_t>(s.lit_src), op,
                                                                    static_cast<std::uint32_t>(s.lit_len));
                                              if (s.match_len != 0)
                                                recs->push_back({op + static_cast<std::uint32_t>(s.lit_len),
                                                                 static_cast<std::uint32_t>(s.match_offset),
                                                                 static_cast<std::uint32_t>(s.match_len)});
                                            });
  return st != DecodeStatus::kOk || recs->size() > kLz4SegmentSeqs ? DecodeStatus::kCorrupt : DecodeStatus::kOk;
}

// Copies matches rec(0), ..., rec(n - 1) of an output of `size` bytes as a warp's lanes may:
// every byte read, then every byte written. The short ones (lz4_match_words_fit) go through the
// device's word copy (the host's loads and stores go through memcpy, so any output alignment
// does), its loads reading the whole words around the read range, stored by either form (wide or
// a byte at a time) as the match's position and index pick; the longer ones byte by byte.
// Before the loads every destination byte of the set is overwritten with a pattern (no match of
// a group or a ready set reads another's destination, and the stores replace every such byte),
// so a copy that kept a byte from outside its read range shows as wrong output rather than
// passing where the stale byte happened to be right. A word load outside the output aborts: the
// bound is a proven invariant (lz4_match_words.hpp), not a property of the input.
template <class Rec>
inline void lz4_copy_matches_host(std::uint8_t* out, std::uint32_t size, std::size_t n, Rec&& rec,
                                  std::vector<std::uint8_t>& bytes, std::vector<std::uint32_t>& words) {
  const auto load = [&](std::uint32_t w) {
    if (4 * std::size_t{w} + 4 > size) std::abort();
    std::uint32_t x;
    std::memcpy(&x, out + 4 * std::size_t{w}, 4);
    return x;
  };
  for (std::size_t j = 0; j < n; ++j) {
    const Lz4MatchRecord& m = rec(j);
    for (std::uint32_t i = 0; i < m.len; ++i) out[m.dst + i] = static_cast<std::uint8_t>(0xA5u ^ (m.dst + 7 * i));
  }
  struct Store {
    std::uint8_t* out;
    void u32(std::uint32_t p, std::uint32_t x) const { std::memcpy(out + p, &x, 4); }
    void u16(std::uint32_t p, std::uint16_t x) const { std::memcpy(out + p, &x, 2); }
    void u8(std::uint32_t p, std::uint8_t x) const { out[p] = x; }
  };
  bytes.clear();
  words.clear();
  std::uint32_t v[kLz4MatchWordsMax];
  for (std::size_t j = 0; j < n; ++j) {
    const Lz4MatchRecord& m = rec(j);
    if (lz4_match_words_fit(m)) {
      lz4_match_words_load(m, load, v);
      words.insert(words.end(), v, v + kLz4MatchWordsMax);
    } else {
      for (std::uint32_t i = 0; i < m.len; ++i) bytes.push_back(out[lz4_match_source(m, i)]);
    }
  }
  std::size_t b = 0, w = 0;
  for (std::size_t j = 0; j < n; ++j) {
    const Lz4MatchRecord& m = rec(j);
    if (lz4_match_words_fit(m)) {
      for (std::uint32_t i = 0; i < kLz4MatchWordsMax; ++i) v[i] = words[w++];
      // both store forms (the device's default stores bytes, -DCS_LZ4_MATCH_WORD_STORES=1 words)
      if (((m.dst ^ j) & 1u) != 0)
        lz4_match_words_store(m, v, Store{out});
      else
        lz4_match_words_store_bytes(m, v, Store{out});
    } else {
      for (std::uint32_t i = 0; i < m.len; ++i) out[m.dst + i] = bytes[b++];
    }
  }
}

// A walk's mark sink on the host: the segments' starts, and their runs (Lz4Runs), in arrays of
// the walk's bound.
struct Lz4HostMarks {
  Lz4Segment* segs;
  Lz4Runs* runs;
  void operator()(std::uint32_t k, std::uint32_t ip, std::uint32_t op) const { segs[k] = {ip, op}; }
  void run(std::uint32_t k, std::uint32_t i, std::uint32_t off) const {
    runs[k].at[i / kLz4RunSeqs - 1] = static_cast<std::uint16_t>(off);
  }
  void close(std::uint32_t k, std::uint32_t seqs) const { runs[k].seqs = static_cast<std::uint16_t>(seqs); }
};

// The match pass with pending bits (lz4_match_bits.hpp) over a walked block's segments, on the
// host: each segment is a worker stepped through the device's stages (parse, literals and bits,
// published; the window's published flags; the ready pass's check, and in a later step its
// copies; the segment before done; its other matches in groups, one group a step; done), the
// workers offered steps at random in a new seeded order every sweep, and a stage that must wait
// does not step. The bytes copied in one step are all read
// before any is written, as the device's lanes may do. So a ready rule that let a match read a
// byte before it is final shows as wrong output; a chained match that finds a pending bit in
// what it reads (the invariant of the chain: all its bytes are final), a sweep without progress
// (a wait that cannot end) and a bit still set at the end are answered kCorrupt, which the tests
// see (they compare statuses with the serial decoder's). *stats (when given) receives the counts.
struct Lz4ReadyFirstStats {
  std::uint64_t matches = 0;  // matches of the block
  std::uint64_t ready = 0;    // copied by the ready passes
  std::uint64_t groups = 0;   // groups of the chained pass (the rest)
  std::uint64_t sweeps = 0;   // sweeps of the schedule
};
inline DecodeStatus lz4_ready_first_matches_host(const std::uint8_t* in, std::uint32_t n_in, std::uint8_t* out,
                                                 std::uint32_t n_out, const Lz4Segment* segs, std::uint32_t count,
                                                 std::uint64_t seed, Lz4ReadyFirstStats* stats,
                                                 const Lz4Runs* runs = nullptr) {
  std::vector<std::uint32_t> bits(lz4_bit_words(n_out));
  const auto load = [&](std::uint32_t w) { return bits[w]; };
  const auto mark = [&](const Lz4MatchRecord& m, bool pending) {
    const std::uint32_t b = m.dst + m.len;
    for (std::uint32_t w = m.dst >> 5; w <= (b - 1) >> 5; ++w)
      bits[w] = pending ? bits[w] | lz4_bits_in(m.dst, b, w) : bits[w] & ~lz4_bits_in(m.dst, b, w);
  };
  const auto final_reads = [&](const Lz4MatchRecord& m) {
    const Lz4Reads r = lz4_match_reads(m);
    return lz4_bits_clear(r.first, r.end, load);
  };
  std::vector<std::uint8_t> bytes;
  std::vector<std::uint32_t> words;
  // copies the listed matches as a warp may: every byte read, then every byte written
  const auto copy = [&](const Lz4MatchRecord* const* list, std::size_t n) {
    const auto rec = [&](std::size_t j) -> const Lz4MatchRecord& { return *list[j]; };
    lz4_copy_matches_host(out, n_out, n, rec, bytes, words);
    for (std::size_t j = 0; j < n; ++j) mark(*list[j], false);
  };
  enum Stage { kParse, kWindow, kCheck, kCopy, kChain, kDone };
  struct Worker {
    Stage stage = kParse;
    std::vector<Lz4MatchRecord> recs;
    std::vector<std::uint8_t> ready;  // per record, from the check step
    std::uint32_t at = 0;
  };
  std::vector<Worker> w(count);
  std::vector<std::uint8_t> flag(count), window(kLz4SegmentWindow);  // 1 published, 2 done
  std::vector<std::uint32_t> order(count);
  for (std::uint32_t k = 0; k < count; ++k) order[k] = k;
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
  const auto rand = [&] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  std::uint32_t left = count;
  Lz4ReadyFirstStats counts;
  std::vector<const Lz4MatchRecord*> list;
  // A sweep offers each worker a step with probability 1/3, so that stages of different
  // segments interleave every way (a segment may reach its window wait, its check or its copy
  // before earlier ones have parsed); a sweep without progress is repeated offering every
  // worker, and only then is it a wait that cannot end.
  bool every = false;
  while (left != 0) {
    ++counts.sweeps;
    for (std::uint32_t i = count; i > 1; --i) std::swap(order[i - 1], order[rand() % i]);
    bool progress = false;
    for (const std::uint32_t k : order) {
      if (!every && rand() % 3 != 0) continue;
      Worker& wk = w[k];
      switch (wk.stage) {
        case kParse: {
          if (lz4_segment_literals_host(in, n_in, out, n_out, segs, count, k, window, &wk.recs, runs) !=
              DecodeStatus::kOk)
            return DecodeStatus::kCorrupt;
          for (const Lz4MatchRecord& m : wk.recs) mark(m, true);
          counts.matches += wk.recs.size();
          flag[k] = 1;
          wk.stage = kWindow;
          progress = true;
          break;
        }
        case kWindow: {
          const std::uint32_t lo = lz4_window_low(segs[k].out);
          bool all = true;
          for (std::uint32_t j = k; j-- > 0 && segs[j + 1].out > lo && all;) all = flag[j] != 0;
          if (!all) break;
          wk.stage = kCheck;
          progress = true;
          break;
        }
        case kCheck: {
          // every short match's read range checked (the device's lanes load the bits first)
          wk.ready.assign(wk.recs.size(), 0);
          for (std::size_t j = 0; j < wk.recs.size(); ++j)
            wk.ready[j] = wk.recs[j].len <= kLz4LaneMatchMax && final_reads(wk.recs[j]);
          wk.stage = kCopy;
          progress = true;
          break;
        }
        case kCopy: {
          // a later step: other segments' copies and chains may have run in between
          std::vector<Lz4MatchRecord> kept;
          list.clear();
          for (std::size_t j = 0; j < wk.recs.size(); ++j) {
            if (wk.ready[j] != 0)
              list.push_back(&wk.recs[j]);
            else
              kept.push_back(wk.recs[j]);
          }
          copy(list.data(), list.size());
          counts.ready += list.size();
          wk.recs = std::move(kept);
          wk.stage = kChain;
          progress = true;
          break;
        }
        case kChain: {
          if (k != 0 && flag[k - 1] != 2) break;
          if (wk.at < wk.recs.size()) {
            const std::uint32_t g =
                lz4_group_size(wk.recs.data() + wk.at, static_cast<std::uint32_t>(wk.recs.size() - wk.at));
            list.clear();
            for (std::uint32_t j = wk.at; j < wk.at + g; ++j) {
              if (!final_reads(wk.recs[j])) return DecodeStatus::kCorrupt;
              list.push_back(&wk.recs[j]);
            }
            copy(list.data(), list.size());
            wk.at += g;
            ++counts.groups;
            progress = true;
          }
          if (wk.at == wk.recs.size()) {
            flag[k] = 2;
            wk.stage = kDone;
            --left;
            progress = true;
          }
          break;
        }
        case kDone: break;
      }
    }
    if (!progress && every) return DecodeStatus::kCorrupt;
    every = !progress;
  }
  // every match copied has cleared its bits
  for (const std::uint32_t word : bits)
    if (word != 0) return DecodeStatus::kCorrupt;
  if (stats != nullptr) *stats = counts;
  return DecodeStatus::kOk;
}

// Host run of the segmented decode (tests and fuzzing): the walk with a staged window of
// `walk_window` bytes (>= kLz4FastSpan + 16), then every segment's literals with the segments in
// reverse order (the device runs them in any order), then the matches segment after segment as
// `matches` says below, in groups or dependency levels; a group's or a level's bytes are all read
// before any is written, which is the worst order the device's lanes can take, so a rule that let
// one match read another's bytes shows here as wrong output. *groups (when given) receives the
// number of groups (or the levels' passes) of the chained matches. Blocks at or over
// kLz4RingMaxBytes take lz4_decode_exact_with, as on the device. `walk` picks the walk; the
// table walk needs a window of at least kLz4TableWindowMin bytes (a smaller one walks serially);
// kTableAhead is the table walk with the next window filled ahead (Team::Ahead), kTablePipeline
// the pipelined walk (lz4_table_pipeline.hpp).
// With split_region (not 0) the split walk (lz4_split_walk.hpp) with regions of at least that
// many bytes goes first, and `walk` runs only where it declines the block; *split (when given)
// says whether it took the block.
// `matches` picks the match pass:
//  - kOwnThenChain (-DCS_LZ4_OWN_FIRST=1 -DCS_LZ4_LEVELS=0): first each segment's own pass
//    (lz4_reads_own_literals) copies the matches that read only its literals, all at once, every
//    segment's before any chained match and after every match's output is overwritten with a
//    pattern (so an own match that read any match's output shows as wrong output); then the
//    chained passes take the rest as above;
//  - kOwnThenLevels (the device's default, -DCS_LZ4_LEVELS=1): the own passes as above, then
//    each segment's other matches level by level (lz4_dep_level), a level's all at once (every
//    byte read, then every byte written); *groups receives a level's short matches' passes, 32 a
//    pass, plus one for each long match (the device copies those inside its passes, each by the
//    whole warp, so its pass count can be lower);
//  - kChain: the chained passes alone (-DCS_LZ4_OWN_FIRST=0);
//  - kReadyFirst: the ready pass with pending bits first (lz4_match_bits.hpp), run by
//    lz4_ready_first_matches_host above in the seed's order (*groups then receives the chained
//    pass's groups, those after the ready passes).
enum class Lz4Walk { kSerial, kTable, kTableAhead, kTablePipeline };
enum class Lz4Matches { kOwnThenChain, kOwnThenLevels, kChain, kReadyFirst };
inline DecodeStatus lz4_segments_decode_host(const std::uint8_t* in, std::size_t in_size, std::uint8_t* out,
                                             std::size_t size, std::size_t walk_window = 8192,
                                             std::uint64_t* groups = nullptr, Lz4Walk walk = Lz4Walk::kTable,
                                             std::uint32_t split_region = 0, bool* split = nullptr,
                                             Lz4Matches matches = Lz4Matches::kOwnThenLevels, std::uint64_t seed = 1) {
  if (split != nullptr) *split = false;
  if (in_size >= kLz4RingMaxBytes || size >= kLz4RingMaxBytes) {
    Lz4SerialCopier copy;
    return lz4_decode_exact_with(in, in_size, out, size, copy);
  }
  const auto n_in = static_cast<std::uint32_t>(in_size), n_out = static_cast<std::uint32_t>(size);
  std::vector<Lz4Segment> segs(lz4_segment_bound(in_size, size) +
                               (split_region != 0 ? lz4_split_extra_slots(in_size, split_region) : 0));
  // the walks note each segment's runs (the split walk does not: its segments keep seqs 0 and
  // are parsed serially, as on the device)
  std::vector<Lz4Runs> runs(segs.size(), Lz4Runs{});
  std::uint32_t count = 0;
  std::uint32_t rounds = 0;
  const auto split_mark = [&](std::uint32_t k, std::uint32_t ip, std::uint32_t op) { segs[k] = {ip, op}; };
  const Lz4HostMarks mark{segs.data(), runs.data()};
  if (split_region != 0 &&
      lz4_split_walk_host(in, n_in, n_out, split_region, segs.size(), split_mark, &count, &rounds)) {
    if (split != nullptr) *split = true;
  } else {
    std::vector<std::uint8_t> window(walk_window);
    Lz4StagedReader<Lz4MemcpyFill> rd{in, in_size, window.data(), walk_window, {}};
    DecodeStatus st = DecodeStatus::kOk;
    if (walk != Lz4Walk::kSerial && walk_window >= kLz4TableWindowMin && walk_window <= kLz4TableWindowMax) {
      const std::uint32_t cap = lz4_table_token_cap(walk_window);
      std::vector<std::uint16_t> tbl(2 * (walk_window + 1)), toks(2 * cap);
      std::vector<std::uint32_t> at(cap + 1);
      std::vector<std::uint8_t> window2(walk_window);
      const auto go = [&](auto& team) {
        return lz4_segment_walk_table(rd, team, toks.data(), cap, at.data(), true, n_in, n_out, segs.size(), mark,
                                      &count);
      };
      std::uint16_t* const tables[2] = {tbl.data(), tbl.data() + walk_window + 1};
      if (walk == Lz4Walk::kTablePipeline) {
        Lz4HostPipelineTeam team{{{tables[0], tables[1]}, {window.data(), window2.data()}, toks.data(), at.data(), n_out, cap}};
        st = lz4_segment_walk_pipelined(rd, team, toks.data(), cap, at.data(), true, n_in, n_out, segs.size(), mark,
                                        &count);
      } else if (walk == Lz4Walk::kTableAhead) {
        Lz4HostTableTeamOf<true> team{{tables[0], tables[1]}, {window.data(), window2.data()}, toks.data(), at.data(), n_out, cap};
        st = go(team);
      } else {
        Lz4HostTableTeam team{{tables[0], tables[1]}, {window.data(), nullptr}, toks.data(), at.data(), n_out, cap};
        st = go(team);
      }
    } else {
      st = lz4_segment_walk(rd, n_in, n_out, segs.size(), mark, &count);
    }
    if (st != DecodeStatus::kOk) return st;
  }
  if (matches == Lz4Matches::kReadyFirst) {
    Lz4ReadyFirstStats st;
    const DecodeStatus rs =
        lz4_ready_first_matches_host(in, n_in, out, n_out, segs.data(), count, seed, &st, runs.data());
    if (groups != nullptr) *groups = st.groups;
    return rs;
  }
  std::vector<std::vector<Lz4MatchRecord>> recs(count);
  std::vector<std::uint8_t> window(kLz4SegmentWindow);
  for (std::uint32_t k = count; k-- > 0;)
    if (lz4_segment_literals_host(in, n_in, out, n_out, segs.data(), count, k, window, &recs[k], runs.data()) !=
        DecodeStatus::kOk)
      return DecodeStatus::kCorrupt;
  std::vector<std::uint8_t> bytes;
  std::vector<std::uint32_t> words;
  if (matches != Lz4Matches::kChain) {  // (kReadyFirst returned above)
    // the pattern over every match's output, then the own passes, segments in reverse order
    for (const auto& r : recs)
      for (const Lz4MatchRecord& m : r)
        for (std::uint32_t i = 0; i < m.len; ++i) out[m.dst + i] = static_cast<std::uint8_t>(0x5Au ^ (m.dst + 3 * i));
    for (std::uint32_t k = count; k-- > 0;) {
      std::vector<Lz4MatchRecord> own, kept;
      for (std::uint32_t i = 0; i < recs[k].size(); ++i)
        (lz4_reads_own_literals(recs[k].data(), i, segs[k].out) ? own : kept).push_back(recs[k][i]);
      const auto rec = [&](std::size_t j) -> const Lz4MatchRecord& { return own[j]; };
      lz4_copy_matches_host(out, n_out, own.size(), rec, bytes, words);
      recs[k] = std::move(kept);
    }
  }
  std::uint64_t n_groups = 0;
  std::vector<std::uint32_t> level;
  std::vector<const Lz4MatchRecord*> set;
  for (std::uint32_t k = 0; k < count; ++k) {
    const auto& r = recs[k];
    if (matches != Lz4Matches::kOwnThenLevels) {
      for (std::uint32_t at = 0; at < r.size();) {
        const std::uint32_t g = lz4_group_size(r.data() + at, static_cast<std::uint32_t>(r.size()) - at);
        const auto rec = [&](std::size_t j) -> const Lz4MatchRecord& { return r[at + j]; };
        lz4_copy_matches_host(out, n_out, g, rec, bytes, words);
        at += g;
        ++n_groups;
      }
      continue;
    }
    level.assign(r.size(), 0);
    std::uint32_t top = 0;
    for (std::uint32_t i = 0; i < r.size(); ++i) {
      level[i] = lz4_dep_level(r.data(), i, [&](std::uint32_t j) { return level[j]; });
      top = level[i] > top ? level[i] : top;
    }
    for (std::uint32_t l = 0; l <= top && !r.empty(); ++l) {
      set.clear();
      std::uint64_t shorts = 0;
      for (std::uint32_t i = 0; i < r.size(); ++i)
        if (level[i] == l) {
          set.push_back(&r[i]);
          if (r[i].len <= kLz4LaneMatchMax) ++shorts;
          else ++n_groups;
        }
      const auto rec = [&](std::size_t j) -> const Lz4MatchRecord& { return *set[j]; };
      lz4_copy_matches_host(out, n_out, set.size(), rec, bytes, words);
      n_groups += (shorts + 31) / 32;
    }
  }
  if (groups != nullptr) *groups = n_groups;
  return DecodeStatus::kOk;
}

}  // namespace cubestream::codec::logic
