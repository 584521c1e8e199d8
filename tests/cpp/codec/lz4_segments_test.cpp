// The device's segmented numcodecs-LZ4 decoder (codec/logic/lz4_segments.hpp: a checking walk
// that marks segments, literals per segment in any order, matches per segment in order and in
// groups) run on the host, against liblz4 byte for byte and against the serial decoder status
// for status. Inputs and outputs are exact-size heap allocations (the ASan build reports any
// stray access).
#include <lz4.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "codec/logic/byte_shuffle.hpp"
#include "codec/logic/lz4_block.hpp"
#include "codec/logic/lz4_segments_host.hpp"
#include "codec/logic/lz4_table_pipeline.hpp"
#include "codec_test_util.hpp"
#include "era5_chunk.hpp"
#include "liblz4_block.hpp"
#include "lz4_craft.hpp"
#include "lz4_serial.hpp"

namespace cs_codec_test {
namespace {

namespace logic = cubestream::codec::logic;
using logic::DecodeStatus;

struct Result {
  DecodeStatus status;
  Buf bytes;
  std::uint64_t groups = 0;
};

// `mis` (0..15) places the input at mis % 4 and the output at mis / 4 bytes past a 4-byte
// aligned address (the word copies of literals and matches take their positions relative to the
// aligned addresses below them); the allocations then start that many bytes before them.
Result segmented(const Buf& in, std::size_t size, std::size_t window = 8192,
                 logic::Lz4Walk walk = logic::Lz4Walk::kTable,
                 logic::Lz4Matches matches = logic::Lz4Matches::kOwnThenLevels, unsigned mis = 0) {
  const unsigned in_mis = mis % 4, out_mis = mis / 4 % 4;
  std::unique_ptr<std::uint8_t[]> src(new std::uint8_t[in_mis + (in.empty() ? 1 : in.size())]);
  if (!in.empty()) std::memcpy(src.get() + in_mis, in.data(), in.size());
  std::unique_ptr<std::uint8_t[]> dst(new std::uint8_t[out_mis + (size == 0 ? 1 : size)]);
  Result r;
  r.status = logic::lz4_segments_decode_host(src.get() + in_mis, in.size(), dst.get() + out_mis, size, window,
                                             &r.groups, walk, 0, nullptr, matches);
  r.bytes.assign(dst.get() + out_mis, dst.get() + out_mis + size);
  return r;
}

TEST(Lz4Segments, MatchLiblz4OnEveryDataKindAndLevel) {
  for (const auto& kind : kDataKinds) {
    for (std::size_t n : {0u, 1u, 15u, 300u, 4096u, 70001u, 300000u, 1100000u}) {
      const Buf src = kind.make(n);
      for (int level : {0, 3, 9, 12}) {
        const Buf enc = liblz4_block(src, level);
        for (std::size_t window : {8192u, 296u}) {
          // the chained passes alone (-DCS_LZ4_OWN_FIRST=0) on the small window; on the large
          // one the own passes, then the levels (the default) or the groups (-DCS_LZ4_LEVELS=0);
          // input and output at every alignment
          const Result r =
              segmented(enc, src.size(), window,
                        level == 3    ? logic::Lz4Walk::kSerial
                        : level == 9  ? logic::Lz4Walk::kTablePipeline
                        : level == 12 ? logic::Lz4Walk::kTableAhead
                                      : logic::Lz4Walk::kTable,
                        window == 296u ? logic::Lz4Matches::kChain
                        : level == 3 || level == 9 ? logic::Lz4Matches::kOwnThenLevels
                                                   : logic::Lz4Matches::kOwnThenChain,
                        static_cast<unsigned>((n + static_cast<std::size_t>(level) + window) % 16));
          ASSERT_EQ(r.status, DecodeStatus::kOk) << kind.name << " " << n << " level " << level;
          ASSERT_TRUE(r.bytes == src) << kind.name << " " << n << " level " << level << " window " << window;
        }
      }
    }
  }
}

// Long runs (matches longer than a group's lanes, offsets below their length), periods around
// the group's width, matches reaching back nearly 64 KiB into earlier segments.
TEST(Lz4Segments, LongRunsAndFarMatchesMatchLiblz4) {
  std::mt19937 rng(5);
  std::vector<Buf> srcs;
  for (std::size_t period : {1u, 2u, 3u, 7u, 31u, 32u, 33u, 100u, 4000u, 40000u, 65000u}) {
    srcs.push_back(lz4_periodic_bytes(600000, period, rng));
  }
  srcs.push_back(Buf(3000000, 0));
  for (const Buf& src : srcs) {
    for (int level : {0, 9}) {
      const Buf enc = liblz4_block(src, level);
      // the chained matches by levels (the default) at level 0, in groups at level 9
      const Result r = segmented(enc, src.size(), 8192, logic::Lz4Walk::kTable,
                                 level == 0 ? logic::Lz4Matches::kOwnThenLevels : logic::Lz4Matches::kOwnThenChain);
      ASSERT_EQ(r.status, DecodeStatus::kOk);
      ASSERT_TRUE(r.bytes == src) << "level " << level;
    }
  }
}

TEST(Lz4Segments, CraftedFarMatchesAndEveryOffsetMatchLiblz4) {
  for (const std::size_t off : {65535u, 65534u, 40000u, 32768u, 1000u, 33u, 32u, 31u, 7u, 1u}) {
    for (const std::size_t mlen : {4u, 17u, 513u, 65536u, 1u << 20}) {
      const std::size_t tail = mlen < 8 ? 12 : 5;
      const Buf enc = lz4_far_match_block(off, mlen, off + 3, tail, static_cast<std::uint32_t>(off * 31 + mlen));
      const std::size_t size = off + 3 + mlen + tail;
      for (const logic::Lz4Matches matches : {logic::Lz4Matches::kOwnThenLevels, logic::Lz4Matches::kOwnThenChain}) {
        const Result r = segmented(enc, size, 8192, logic::Lz4Walk::kTable, matches);
        ASSERT_EQ(r.status, DecodeStatus::kOk) << "off " << off << " len " << mlen;
        ASSERT_TRUE(r.bytes == liblz4_decode(enc, size)) << "off " << off << " len " << mlen;
      }
    }
  }
  std::size_t size = 0;
  const Buf enc = lz4_every_offset_block(size);
  const Result r = segmented(enc, size);
  ASSERT_EQ(r.status, DecodeStatus::kOk);
  ASSERT_TRUE(r.bytes == liblz4_decode(enc, size));
}

// The table walk against the serial walk: the same status, the same count and every mark in the
// same order (also the marks made before a damaged block's failure), for windows from the
// smallest the table walk takes to the largest its 16-bit entries allow.
struct Walked {
  DecodeStatus status;
  std::uint32_t count = 0;
  std::vector<logic::Lz4Segment> marks;
  std::vector<logic::Lz4Runs> runs;      // the runs each segment's walk noted (Lz4Runs)
  std::uint64_t stages = 0, aheads = 0;  // tables staged at the walk's position; windows filled ahead
  std::uint64_t posted = 0, synced = 0;  // token passes posted with a job; run at once
};

// A team of 3 threads, as the device splits the work among its threads. WithAhead, ahead()
// only records its request and fills the buffer with junk; join() does the work: a walk that
// touched the buffer ahead before it joined would read junk and go astray. WithPipeline
// (lz4_table_pipeline.hpp), post() runs the token pass at once into a copy of at[], fills at[]
// with junk, and join_pass() publishes it (join() too: it joins the pass first), checking that
// the walk left the posted token slot alone; the window ahead stays junk until join().
template <bool WithAhead, bool WithPipeline = false>
struct ThreeThreadTeam {
  using Ahead = std::bool_constant<WithAhead>;
  using Pipeline = std::bool_constant<WithPipeline>;
  std::vector<std::uint16_t> tbl[2];
  std::uint8_t* win[2];
  const std::vector<std::uint16_t>& toks;
  std::vector<std::uint32_t>& at;
  std::uint32_t size;
  std::size_t cap;    // a window's bytes
  std::uint32_t tcap;  // a token slot's entries
  std::uint64_t filled = 0, stages = 0, aheads = 0, posted = 0, synced = 0;
  bool pending = false;
  std::uint32_t p_k = 0, p_len = 0, p_end = 0, p_left0 = 0;
  const std::uint8_t* p_src = nullptr;
  // the posted token pass: its answer and at[] (published at join), its slot as posted
  bool tok_pending = false;
  std::uint32_t tok_ok = 0, tok_slot = 0, tok_n = 0;
  std::vector<std::uint32_t> tok_at;
  std::vector<std::uint16_t> tok_list;

  // (the buffer a window ahead goes into is the team's until join)
  const std::uint16_t* table(std::uint32_t k) const {
    EXPECT_FALSE(pending && k == p_k) << "the table ahead read before join";
    return tbl[k].data();
  }
  std::uint8_t* window(std::uint32_t k) const {
    EXPECT_FALSE(pending && k == p_k) << "the window ahead taken before join";
    return win[k];
  }
  void fill(std::uint32_t k, const std::uint8_t* w, std::uint32_t r0, std::uint32_t end, std::uint32_t len,
            std::uint32_t left0) {
    EXPECT_LT(r0, end);
    EXPECT_LE(end + logic::kLz4FastSpan, len);
    EXPECT_LE(len, cap);
    // stale entries must never be read: a walk that read one would go astray
    std::fill(tbl[k].begin(), tbl[k].end(), std::uint16_t{0xDEAD});
    for (std::uint32_t t = 3; t-- > 0;) logic::lz4_table_fill(w, tbl[k].data(), r0, end, len, left0, t, 3);
    filled += end - r0;
  }
  void stage(std::uint32_t k, const std::uint8_t* w, std::uint32_t r0, std::uint32_t end, std::uint32_t len,
             std::uint32_t left0) {
    EXPECT_FALSE(pending) << "a stage while a window ahead is being filled";
    EXPECT_TRUE(k == 0 || WithAhead);
    ++stages;
    fill(k, w, r0, end, len, left0);
  }
  void ahead(std::uint32_t k, const std::uint8_t* src, std::uint32_t len, std::uint32_t end, std::uint32_t left0) {
    EXPECT_FALSE(pending) << "two windows ahead at once";
    ++aheads;
    pending = true;
    p_k = k;
    p_src = src;
    p_len = len;
    p_end = end;
    p_left0 = left0;
    std::memset(win[k], 0xA5, cap);
    std::fill(tbl[k].begin(), tbl[k].end(), std::uint16_t{0xBEEF});
  }
  void join_pass() {
    if (!tok_pending) return;
    tok_pending = false;
    EXPECT_TRUE(std::equal(tok_list.begin(), tok_list.end(), toks.begin() + tok_slot * tcap))
        << "the walk wrote the posted token slot before join";
    at = tok_at;
  }
  void join() {
    join_pass();
    if (!pending) return;
    pending = false;
    std::memcpy(win[p_k], p_src, p_len);
    fill(p_k, win[p_k], 0, p_end, p_len, p_left0);
  }
  void post(const logic::Lz4PipelineJob& j) {
    EXPECT_FALSE(pending || tok_pending) << "a post before the last job was joined";
    EXPECT_TRUE(j.n != 0 || j.flen != 0);
    if (j.n != 0) {
      ++posted;
      EXPECT_LT(j.slot, 2u);
      tok_ok = tokens(j.tk, win[j.tk], j.tlen, j.tleft0, j.n, j.op0, j.slot);
      tok_at = at;
      std::fill(at.begin(), at.end(), 0xDEADBEEFu);
      tok_slot = j.slot;
      tok_n = j.n;
      tok_list.assign(toks.begin() + j.slot * tcap, toks.begin() + j.slot * tcap + j.n);
      tok_pending = true;
    }
    if (j.flen != 0) ahead(j.fk, j.src, j.flen, j.fend, j.fleft0);  // (junk in buffer fk until join)
  }
  std::uint32_t posted_ok() const {
    EXPECT_FALSE(tok_pending);
    return tok_ok;
  }
  std::uint32_t tokens(std::uint32_t k, const std::uint8_t* w, std::uint32_t len, std::uint32_t left0,
                       std::uint32_t n, std::uint32_t op0, std::uint32_t slot) {
    EXPECT_EQ(w, win[k]);
    EXPECT_FALSE(tok_pending) << "a token pass while the posted one is unanswered";
    EXPECT_FALSE(WithPipeline && pending) << "a token pass while the team fills a window";
    ++synced;
    EXPECT_TRUE(slot == 0 || WithPipeline);
    std::fill(at.begin(), at.end(), 0xDEADBEEFu);
    const std::uint16_t* list = toks.data() + slot * tcap;
    std::uint32_t sums[3], i0[3], i1[3], pre = op0, ok = n;
    for (std::uint32_t t = 0; t < 3; ++t) {
      logic::lz4_table_share(n, t, 3, &i0[t], &i1[t]);
      sums[t] = logic::lz4_table_token_sum<logic::kLz4TokenSumWidth>(w, len, left0, list, i0[t], i1[t], at.data());
    }
    for (std::uint32_t t = 0; t < 3; ++t) {
      const std::uint32_t bad = logic::lz4_table_token_place(size, n, i0[t], i1[t], pre, at.data());
      ok = bad < ok ? bad : ok;
      pre += sums[t];
    }
    return ok;
  }
};

// The reader's refill (on the GPU a block job): with `team_filling` set (the pipelined walk,
// which joins before a serial step), never while the team fills a window.
struct CheckedFill {
  const bool* team_filling = nullptr;
  void operator()(std::uint8_t* win, const std::uint8_t* src, std::size_t n) const {
    EXPECT_FALSE(team_filling != nullptr && *team_filling) << "a refill while the team fills a window";
    std::memcpy(win, src, n);
  }
};

Walked walk(const Buf& enc, std::size_t size, std::size_t window, logic::Lz4Walk kind) {
  const std::unique_ptr<std::uint8_t[]> src = exact_copy(enc);
  Walked w;
  std::vector<std::uint8_t> win(window), win2(window);
  logic::Lz4StagedReader<CheckedFill> rd{src.get(), enc.size(), win.data(), window, {}};
  const std::size_t bound = logic::lz4_segment_bound(enc.size(), size);
  // the marks in order, and the runs: a run's start only in the open segment, each segment
  // closed once, after its marks and before the next segment's
  struct Sink {
    Walked& w;
    void operator()(std::uint32_t k, std::uint32_t ip, std::uint32_t op) const {
      EXPECT_EQ(k, w.marks.size());
      EXPECT_TRUE(k == 0 || w.runs[k - 1].seqs != 0) << "segment " << k - 1 << " not closed before mark " << k;
      w.marks.push_back({ip, op});
      w.runs.push_back(logic::Lz4Runs{});
    }
    void run(std::uint32_t k, std::uint32_t i, std::uint32_t off) const {
      ASSERT_EQ(k + 1, w.marks.size()) << "a run noted outside the open segment";
      ASSERT_TRUE(i % logic::kLz4RunSeqs == 0 && i >= logic::kLz4RunSeqs && i < logic::kLz4SegmentSeqs) << i;
      w.runs[k].at[i / logic::kLz4RunSeqs - 1] = static_cast<std::uint16_t>(off);
      EXPECT_LT(off, 65536u);
    }
    void close(std::uint32_t k, std::uint32_t seqs) const {
      ASSERT_LT(k, w.runs.size());
      EXPECT_EQ(w.runs[k].seqs, 0u) << "segment " << k << " closed twice";
      ASSERT_TRUE(seqs >= 1 && seqs <= logic::kLz4SegmentSeqs) << seqs;
      w.runs[k].seqs = static_cast<std::uint16_t>(seqs);
    }
  } mark{w};
  const auto in_n = static_cast<std::uint32_t>(enc.size()), out_n = static_cast<std::uint32_t>(size);
  if (kind == logic::Lz4Walk::kSerial) {
    w.status = logic::lz4_segment_walk(rd, in_n, out_n, bound, mark, &w.count);
    return w;
  }
  const std::uint32_t tcap = logic::lz4_table_token_cap(window);
  std::vector<std::uint16_t> toks(2 * tcap);
  std::vector<std::uint32_t> at(tcap + 1);
  // a short token list on small windows: the chain stops at it and goes on from there
  const auto cap = static_cast<std::uint32_t>(window < 2000 ? 7 : tcap);
  // each input position is filled about once (the windows overlap by the fast path's span), or
  // twice with a window ahead that the walk does not take (after serial steps elsewhere)
  const std::uint64_t once =
      enc.size() + enc.size() * (logic::kLz4FastSpan + 16) / (window - logic::kLz4FastSpan - 16) + window;
  const auto run = [&](auto& team) {
    team.tbl[0].assign(window + 1, 0xDEAD);
    team.tbl[1].assign(window + 1, 0xDEAD);
    w.status = logic::lz4_segment_walk_table(rd, team, toks.data(), cap, at.data(), true, in_n, out_n, bound, mark,
                                             &w.count);
  };
  if (kind == logic::Lz4Walk::kTablePipeline) {
    ThreeThreadTeam<true, true> team{{}, {win.data(), win2.data()}, toks, at, out_n, window, cap};
    rd.fill.team_filling = &team.pending;
    team.tbl[0].assign(window + 1, 0xDEAD);
    team.tbl[1].assign(window + 1, 0xDEAD);
    w.status = logic::lz4_segment_walk_pipelined(rd, team, toks.data(), cap, at.data(), true, in_n, out_n, bound,
                                                 mark, &w.count);
    team.join();
    EXPECT_LE(team.filled, 2 * once + 2 * window);
    w.stages = team.stages;
    w.aheads = team.aheads;
    w.posted = team.posted;
    w.synced = team.synced - team.posted;  // (post runs its pass through tokens())
  } else if (kind == logic::Lz4Walk::kTableAhead) {
    ThreeThreadTeam<true> team{{}, {win.data(), win2.data()}, toks, at, out_n, window, cap};
    run(team);
    team.join();  // (the device joins at the walk's end)
    EXPECT_LE(team.filled, 2 * once + 2 * window);
    w.stages = team.stages;
    w.aheads = team.aheads;
  } else {
    ThreeThreadTeam<false> team{{}, {win.data(), nullptr}, toks, at, out_n, window, cap};
    run(team);
    EXPECT_LE(team.filled, once);
    w.stages = team.stages;
  }
  return w;
}

// The runs a walk noted against the sequences themselves (lz4_read_sequence from each mark): a
// segment's count, and the input offset of every kLz4RunSeqs-th sequence from its first. Only for
// a walk that accepted the block (a failed walk closes no segment after its last mark).
void expect_runs_as_parsed(const Buf& enc, std::size_t size, const Walked& w, const std::string& what) {
  if (w.status != DecodeStatus::kOk) return;
  ASSERT_EQ(w.runs.size(), w.marks.size()) << what;
  for (std::size_t k = 0; k < w.marks.size(); ++k) {
    const std::size_t end = k + 1 < w.marks.size() ? w.marks[k + 1].in : enc.size();
    std::size_t ip = w.marks[k].in, op = w.marks[k].out;
    std::uint32_t i = 0;
    for (; ip < end; ++i) {
      if (i % logic::kLz4RunSeqs == 0 && i != 0)
        ASSERT_EQ(w.runs[k].at[i / logic::kLz4RunSeqs - 1], ip - w.marks[k].in) << what << " segment " << k << " run " << i;
      logic::Lz4Sequence sq;
      bool last = false;
      const std::uint8_t* bytes = enc.data();
      ASSERT_EQ(logic::lz4_read_sequence(bytes, enc.size(), &ip, op, size, &sq, &last), DecodeStatus::kOk);
      op += sq.lit_len + sq.match_len;
    }
    ASSERT_EQ(w.runs[k].seqs, i) << what << " segment " << k;
  }
}

void expect_same_walk(const Buf& enc, std::size_t size, std::size_t window, const std::string& what) {
  const Walked a = walk(enc, size, window, logic::Lz4Walk::kSerial);
  expect_runs_as_parsed(enc, size, a, what + " (serial)");
  for (const logic::Lz4Walk kind :
       {logic::Lz4Walk::kTable, logic::Lz4Walk::kTableAhead, logic::Lz4Walk::kTablePipeline}) {
    const Walked b = walk(enc, size, window, kind);
    const std::string how = what + (kind == logic::Lz4Walk::kTableAhead       ? " (ahead)"
                                    : kind == logic::Lz4Walk::kTablePipeline ? " (pipelined)"
                                                                              : "");
    ASSERT_EQ(a.status, b.status) << how;
    ASSERT_EQ(a.count, b.count) << how;
    ASSERT_EQ(a.marks.size(), b.marks.size()) << how;
    for (std::size_t k = 0; k < a.marks.size(); ++k) {
      ASSERT_EQ(a.marks[k].in, b.marks[k].in) << how << " mark " << k;
      ASSERT_EQ(a.marks[k].out, b.marks[k].out) << how << " mark " << k;
      // the same runs (entries past a segment's last run are never written: both 0)
      ASSERT_EQ(a.runs[k].seqs, b.runs[k].seqs) << how << " segment " << k;
      for (std::uint32_t r = 0; r + 1 < logic::kLz4SegmentRuns; ++r)
        ASSERT_EQ(a.runs[k].at[r], b.runs[k].at[r]) << how << " segment " << k << " run " << r + 1;
    }
  }
}

TEST(Lz4Segments, TableWalkMarksWhatTheSerialWalkMarks) {
  const std::size_t windows[] = {logic::kLz4TableWindowMin, 1000, 8192, logic::kLz4TableWindowMax};
  for (const auto& kind : kDataKinds) {
    for (std::size_t n : {0u, 1u, 15u, 300u, 4096u, 70001u, 1100000u}) {
      const Buf src = kind.make(n);
      for (int level : {0, 9}) {
        const Buf enc = liblz4_block(src, level);
        for (std::size_t window : windows)
          expect_same_walk(enc, src.size(), window,
                           std::string(kind.name) + " " + std::to_string(n) + " level " + std::to_string(level));
      }
    }
  }
  // long literal runs (length bytes of 255: the table declines them), long matches, zeros
  std::mt19937 rng(23);
  Buf mixed(400000);
  for (std::size_t i = 0; i < mixed.size(); ++i) mixed[i] = (i / 5000) % 3 == 0 ? static_cast<std::uint8_t>(rng()) : 7;
  for (std::size_t window : windows) expect_same_walk(liblz4_block(mixed, 0), mixed.size(), window, "runs");
  const Buf zeros(3000000, 0);
  expect_same_walk(liblz4_block(zeros, 0), zeros.size(), 8192, "zeros");
}

// A segment's runs decode it like its serial parse; notes that disagree with the bytes (as if the
// input changed after the walk) give kCorrupt, never a read or write outside the exact-size
// buffers (the ASan build).
TEST(Lz4Segments, RunsDecodeLikeTheSerialParseAndNotesThatLieAreCorrupt) {
  for (const auto& kind : kDataKinds) {
    const Buf src = kind.make(300000);
    const Buf enc = liblz4_block(src, 0);
    const Walked w = walk(enc, src.size(), 8192, logic::Lz4Walk::kTable);
    ASSERT_EQ(w.status, DecodeStatus::kOk) << kind.name;
    const std::unique_ptr<std::uint8_t[]> in = exact_copy(enc);
    const auto n_in = static_cast<std::uint32_t>(enc.size()), n_out = static_cast<std::uint32_t>(src.size());
    std::vector<std::uint8_t> window(logic::kLz4SegmentWindow);
    std::unique_ptr<std::uint8_t[]> serial(new std::uint8_t[n_out]), runs(new std::uint8_t[n_out]);
    std::uint64_t multi = 0;
    for (std::uint32_t k = 0; k < w.count; ++k) {
      std::vector<logic::Lz4MatchRecord> a, b;
      ASSERT_EQ(logic::lz4_segment_literals_host(in.get(), n_in, serial.get(), n_out, w.marks.data(), w.count, k,
                                                 window, &a),
                DecodeStatus::kOk);
      ASSERT_EQ(logic::lz4_segment_literals_host(in.get(), n_in, runs.get(), n_out, w.marks.data(), w.count, k,
                                                 window, &b, w.runs.data()),
                DecodeStatus::kOk)
          << kind.name << " segment " << k;
      ASSERT_EQ(a.size(), b.size());
      for (std::size_t i = 0; i < a.size(); ++i) {
        ASSERT_EQ(a[i].dst, b[i].dst);
        ASSERT_EQ(a[i].off, b[i].off);
        ASSERT_EQ(a[i].len, b[i].len);
      }
      const std::uint32_t seqs = w.runs[k].seqs;
      if (seqs <= logic::kLz4RunSeqs) continue;
      ++multi;
      // one note wrong at a time
      std::vector<logic::Lz4Runs> lie(w.runs);
      const auto corrupt = [&](const char* how) {
        std::vector<logic::Lz4MatchRecord> c;
        EXPECT_EQ(logic::lz4_segment_literals_host(in.get(), n_in, runs.get(), n_out, w.marks.data(), w.count, k,
                                                   window, &c, lie.data()),
                  DecodeStatus::kCorrupt)
            << kind.name << " segment " << k << ": " << how;
        lie = w.runs;
      };
      lie[k].at[0] += 1;
      corrupt("a run starts a byte late");
      lie[k].at[0] -= 1;
      corrupt("a run starts a byte early");
      const std::uint32_t runs_n = logic::lz4_run_count(seqs);
      if (runs_n >= 3) {
        lie[k].at[runs_n - 2] += 1;
        corrupt("the last run starts a byte late");
      }
      lie[k].seqs = static_cast<std::uint16_t>(seqs - 1);
      corrupt("a sequence fewer");
      if (seqs < logic::kLz4SegmentSeqs) {
        lie[k].seqs = static_cast<std::uint16_t>(seqs + 1);
        corrupt("a sequence more");
      }
      lie[k].seqs = static_cast<std::uint16_t>(logic::kLz4SegmentSeqs + 1);
      corrupt("more sequences than a segment holds");
      lie[k].at[0] = 0xFFFF;
      corrupt("a run past the block");
    }
    if (std::string(kind.name) != "random") EXPECT_GT(multi, 0u) << kind.name;  // (random: one literal run)
    // the literals in place: every byte outside the matches as the serial parse wrote it
    std::vector<bool> match(n_out, false);
    for (std::uint32_t k = 0; k < w.count; ++k) {
      std::vector<logic::Lz4MatchRecord> a;
      ASSERT_EQ(logic::lz4_segment_literals_host(in.get(), n_in, serial.get(), n_out, w.marks.data(), w.count, k,
                                                 window, &a),
                DecodeStatus::kOk);
      for (const auto& m : a) std::fill(match.begin() + m.dst, match.begin() + m.dst + m.len, true);
    }
    for (std::uint32_t i = 0; i < n_out; ++i)
      if (!match[i]) ASSERT_EQ(serial[i], runs[i]) << kind.name << " byte " << i;
  }
}

// With the window ahead, the walk takes almost every table from the window filled ahead: a
// window staged at the walk's position only at the block's start and where serial steps moved
// the walk off the fixed windows (at the time of writing: climate fields 9 of 129 and 1 of 135,
// every other compressible kind 1). Random bytes are one long literal run, walked serially.
TEST(Lz4Segments, TableWalkTakesItsTablesFromTheWindowAhead) {
  for (const auto& kind : kDataKinds) {
    if (std::string(kind.name) == "random") continue;
    const Buf src = kind.make(1100000);
    for (int level : {0, 9}) {
      const Buf enc = liblz4_block(src, level);
      const Walked w = walk(enc, src.size(), 8192, logic::Lz4Walk::kTableAhead);
      ASSERT_EQ(w.status, DecodeStatus::kOk) << kind.name << " level " << level;
      EXPECT_LE(w.stages * 8, w.aheads + 8) << kind.name << " level " << level << ": " << w.stages << " staged, "
                                            << w.aheads << " ahead";
    }
  }
}

// The pipelined walk posts most token passes with the next job (a chain that leaves its table),
// and runs the rest at once (a chain that stops on a sequence the table declines). At the time of
// writing (8 KiB windows): 433 posted against 90 at once over these kinds; the climate fields at
// level 0 alone 34 against 82 (their long literal runs straddle a window's end, and the table
// declines a sequence it cannot see whole).
TEST(Lz4Segments, PipelinedWalkPostsMostTokenPasses) {
  std::uint64_t posted = 0, synced = 0;
  for (const auto& kind : kDataKinds) {
    if (std::string(kind.name) == "random") continue;
    const Buf src = kind.make(1100000);
    for (int level : {0, 9}) {
      const Walked w = walk(liblz4_block(src, level), src.size(), 8192, logic::Lz4Walk::kTablePipeline);
      ASSERT_EQ(w.status, DecodeStatus::kOk) << kind.name << " level " << level;
      posted += w.posted;
      synced += w.synced;
    }
  }
  EXPECT_GE(posted, 3 * synced) << posted << " posted, " << synced << " at once";
}

// The table fill (four positions a lane a step, session 33) against the rule it stands for, one
// position at a time: lz4_fast_next, else lz4_table_shape, else the position itself; positions
// from r_end to len their own; positions before r_begin untouched. Windows of random bytes rich
// in 0xF nibbles and 255 length bytes (so that both lengths extend and the long-run rule
// decides), r_begin anywhere below r_end, the block ending inside the window or past it (the
// table's end, lz4_table_end, follows either), and teams of 1, 3 and 32 lanes. Each lane also
// fills a table of its own: the lanes' writes must be disjoint and cover [r_begin, len], since
// on the GPU they run at once (two lanes writing one position would be a race even where they
// write the same value).
TEST(Lz4Segments, TableFillSetsWhatOnePositionAtATimeSets) {
  std::mt19937 rng(33);
  std::uint64_t shaped = 0;  // positions lz4_fast_next declined and the shape took
  for (int round = 0; round < 400; ++round) {
    const std::uint32_t len = 300 + rng() % 3000;
    std::vector<std::uint8_t> w(len);
    const unsigned kind = round % 4;
    for (auto& b : w) {
      const unsigned x = rng() % 16;
      b = kind != 0 && x < 3 ? 255 : kind == 2 && x < 6 ? 0xF0 | (rng() % 16) : static_cast<std::uint8_t>(rng());
    }
    // the block's bytes from the window's start: past the window, or ending inside it
    const std::uint32_t left0 = rng() % 3 == 0 ? len + rng() % 5000 : 283 + rng() % (len - 282);
    const std::uint32_t r_end = logic::lz4_table_end(0, len, left0);
    if (r_end == 0) continue;
    const std::uint32_t r_begin = rng() % 2 == 0 ? 0 : rng() % r_end;
    std::vector<std::uint16_t> want(len + 1, 0xDEAD);
    for (std::uint32_t r = r_begin; r <= len; ++r) {
      std::uint32_t n = 0;
      if (r < r_end) {
        n = logic::lz4_fast_next(w.data() + r, left0 - r);
        logic::Lz4FastShape f;
        if (n == 0 && logic::lz4_table_shape(w.data() + r, len - r, left0 - r, &f)) {
          n = f.size;
          ++shaped;
        }
      }
      want[r] = static_cast<std::uint16_t>(r + n);
    }
    for (const std::uint32_t lanes : {1u, 3u, 32u}) {
      std::vector<std::uint16_t> got(len + 1, 0xDEAD);
      std::vector<std::uint32_t> writers(len + 1, 0);  // lanes that wrote each position
      for (std::uint32_t lane = 0; lane < lanes; ++lane) {
        std::vector<std::uint16_t> own(len + 1, 0xDEAD);  // (0xDEAD is no entry: len < 0xDEAD)
        logic::lz4_table_fill(w.data(), own.data(), r_begin, r_end, len, left0, lane, lanes);
        for (std::uint32_t r = 0; r <= len; ++r) {
          if (own[r] == 0xDEAD) continue;
          ++writers[r];
          got[r] = own[r];
        }
      }
      for (std::uint32_t r = 0; r <= len; ++r) {
        ASSERT_EQ(writers[r], r >= r_begin ? 1u : 0u)
            << "round " << round << " lanes " << lanes << " position " << r << " of [" << r_begin << ", " << r_end
            << "), len " << len;
        ASSERT_EQ(got[r], want[r]) << "round " << round << " lanes " << lanes << " position " << r << " of ["
                                   << r_begin << ", " << r_end << "), len " << len;
      }
    }
  }
  EXPECT_GT(shaped, 1000u);  // the rare path ran
}

// The token pass's part 1 (Width tokens a thread a step, session 33) against lz4_table_shape and
// lz4_token_pack token by token: tokens listed by the chain over tables of random windows rich
// in 0xF nibbles and 255 length bytes (so that runs of length bytes take the shape's path),
// widths 1 to 4, shared among teams of 1, 3 and 32 threads (lz4_table_share), windows exactly
// `len` bytes long (reads past them are caught under the sanitizers): the same words and sums.
TEST(Lz4Segments, TokenSumPacksWhatTheShapeReads) {
  std::mt19937 rng(34);
  std::uint64_t tokens = 0, long_runs = 0;
  for (int round = 0; round < 600; ++round) {
    const std::uint32_t len = 400 + rng() % 6000;
    std::vector<std::uint8_t> w(len);
    for (auto& b : w) {  // (bytes below 32: short literal runs, so that a window holds many tokens)
      const unsigned x = rng() % 16;
      b = x < 2   ? 255
          : x < 5 ? static_cast<std::uint8_t>(0xF0 | (rng() % 16))
          : x < 11 ? static_cast<std::uint8_t>(rng() % 32)
                   : static_cast<std::uint8_t>(rng());
    }
    const std::uint32_t left0 = rng() % 2 == 0 ? len + rng() % 1000 : 283 + rng() % (len - 282);
    const std::uint32_t r_end = logic::lz4_table_end(0, len, left0);
    if (r_end == 0) continue;
    std::vector<std::uint16_t> tbl(len + 1);
    logic::lz4_table_fill(w.data(), tbl.data(), 0, r_end, len, left0, 0, 1);
    // the chains from a random start to the table's end, each on from the position after the
    // decline that stopped the one before: every listed position is a token the table accepted
    const std::uint32_t cap = logic::lz4_table_token_cap(len);
    std::vector<std::uint16_t> toks(cap);
    std::uint32_t n = 0;
    for (std::uint32_t r = rng() % r_end; r < r_end && n < cap;) {
      n += logic::lz4_table_chain(tbl.data(), &r, r_end, toks.data() + n, cap - n, true);
      ++r;
    }
    if (n == 0) continue;
    std::vector<std::uint32_t> want(n);
    std::uint32_t want_sum = 0;
    for (std::uint32_t i = 0; i < n; ++i) {
      logic::Lz4FastShape f;
      ASSERT_TRUE(logic::lz4_table_shape(w.data() + toks[i], len - toks[i], left0 - toks[i], &f));
      want[i] = logic::lz4_token_pack(f);
      want_sum += f.lit + f.mlen;
      long_runs += f.head > 2 || f.size > f.head + f.lit + 3;  // two or more length bytes
    }
    tokens += n;
    const auto check = [&](auto width) {
      constexpr std::uint32_t kWidth = decltype(width)::value;
      for (const std::uint32_t threads : {1u, 3u, 32u}) {
        std::vector<std::uint32_t> at(n, 0xFFFFFFFFu);
        std::uint32_t sum = 0;
        for (std::uint32_t t = 0; t < threads; ++t) {
          std::uint32_t i0 = 0, i1 = 0;
          logic::lz4_table_share(n, t, threads, &i0, &i1);
          sum += logic::lz4_table_token_sum<kWidth>(w.data(), len, left0, toks.data(), i0, i1, at.data());
        }
        ASSERT_EQ(sum, want_sum) << "round " << round << " width " << kWidth << " threads " << threads;
        for (std::uint32_t i = 0; i < n; ++i)
          ASSERT_EQ(at[i], want[i]) << "round " << round << " width " << kWidth << " threads " << threads << " token "
                                    << i << " of " << n;
      }
    };
    check(std::integral_constant<std::uint32_t, 1>{});
    check(std::integral_constant<std::uint32_t, 2>{});
    check(std::integral_constant<std::uint32_t, 3>{});
    check(std::integral_constant<std::uint32_t, 4>{});
  }
  EXPECT_GT(tokens, 6000u);
  EXPECT_GT(long_runs, 400u);  // the shape's path ran
}

// A window whose last byte sits just before an inaccessible page: any read past it faults.
class GuardedWindow {
 public:
  explicit GuardedWindow(std::size_t len) : page_(static_cast<std::size_t>(sysconf(_SC_PAGESIZE))) {
    const std::size_t pages = (len + page_ - 1) / page_ + 1;
    bytes_ = pages * page_;
    void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("mmap");
    base_ = static_cast<std::uint8_t*>(p);
    if (mprotect(base_ + bytes_ - page_, page_, PROT_NONE) != 0) throw std::runtime_error("mprotect");
    data_ = base_ + bytes_ - page_ - len;
  }
  ~GuardedWindow() { munmap(base_, bytes_); }
  GuardedWindow(const GuardedWindow&) = delete;
  GuardedWindow& operator=(const GuardedWindow&) = delete;
  std::uint8_t* data() const { return data_; }

 private:
  std::size_t page_, bytes_ = 0;
  std::uint8_t* base_ = nullptr;
  std::uint8_t* data_ = nullptr;
};

// The token pass reads no byte after what lz4_table_shape needed to accept a sequence: one
// sequence at position 0 of the shortest window the shape accepts it in (the block ending there
// too), that window's last byte before an inaccessible page, for every literal and match length
// form (nibbles below 15, one length byte, length bytes of 255 then one more), widths 1 to 4
// (the token listed up to three times, so that a step's other lanes read it as well): the same
// packed word and sum as the shape's, and no fault. A literal run with a 255 length byte is the
// tight case: the step's first offset guess (q from e1 = 255) must stay inside the real run.
TEST(Lz4Segments, TokenSumReadsNoByteAfterTheSequence) {
  std::uint32_t cases = 0;
  const std::vector<std::vector<std::uint8_t>> lit_forms = {{}, {0}, {100}, {254}, {255, 0}, {255, 3}, {255, 255, 0}};
  const std::vector<std::vector<std::uint8_t>> match_forms = {{}, {0}, {254}, {255, 0}, {255, 7}, {255, 255, 255, 1}};
  for (const std::uint32_t lit_nibble : {0u, 5u, 14u, 15u}) {
    for (const std::uint32_t match_nibble : {0u, 7u, 14u, 15u}) {
      for (const auto& lf : lit_forms) {
        if ((lit_nibble == 15) != !lf.empty()) continue;
        for (const auto& mf : match_forms) {
          if ((match_nibble == 15) != !mf.empty()) continue;
          std::uint32_t lit = lit_nibble;
          for (const std::uint8_t e : lf) lit += e;
          std::vector<std::uint8_t> seq{static_cast<std::uint8_t>(lit_nibble << 4 | match_nibble)};
          seq.insert(seq.end(), lf.begin(), lf.end());
          for (std::uint32_t i = 0; i < lit; ++i) seq.push_back(static_cast<std::uint8_t>(0x41 + i % 7));
          seq.push_back(3);  // offset 3
          seq.push_back(0);
          seq.insert(seq.end(), mf.begin(), mf.end());
          seq.push_back(0x10);  // the next token (the shape needs a byte after the offset)
          // the shortest window (and block) the shape accepts the sequence in
          std::uint32_t len = 1;
          logic::Lz4FastShape want_f;
          while (!logic::lz4_table_shape(seq.data(), len, len, &want_f)) {
            ++len;
            ASSERT_LE(len, seq.size()) << "the shape takes the crafted sequence";
          }
          GuardedWindow w(len);
          std::memcpy(w.data(), seq.data(), len);
          const std::uint32_t want = logic::lz4_token_pack(want_f);
          const std::uint16_t toks[3] = {0, 0, 0};
          const auto check = [&](auto width) {
            constexpr std::uint32_t kWidth = decltype(width)::value;
            for (std::uint32_t n = 1; n <= 3; ++n) {
              std::uint32_t at[3] = {0, 0, 0};
              const std::uint32_t sum = logic::lz4_table_token_sum<kWidth>(w.data(), len, len, toks, 0, n, at);
              ASSERT_EQ(sum, n * (want_f.lit + want_f.mlen)) << "width " << kWidth << " len " << len;
              for (std::uint32_t i = 0; i < n; ++i) ASSERT_EQ(at[i], want) << "width " << kWidth << " len " << len;
            }
          };
          check(std::integral_constant<std::uint32_t, 1>{});
          check(std::integral_constant<std::uint32_t, 2>{});
          check(std::integral_constant<std::uint32_t, 3>{});
          check(std::integral_constant<std::uint32_t, 4>{});
          ++cases;
        }
      }
    }
  }
  EXPECT_EQ(cases, 72u);  // 9 literal forms x 8 match forms
}

// The chain against a one-step-a-token reference, on random tables with declines (fixed points
// below end), the identity past end, every start, and caps below, at and above its blocks of
// kLz4ChainSteps loads: the same tokens, count and stop.
TEST(Lz4Segments, TableChainListsWhatOneStepAtATimeLists) {
  std::mt19937 rng(29);
  for (int round = 0; round < 200; ++round) {
    const std::uint32_t len = 300 + rng() % 2000, end = len - 280 + rng() % 200;
    std::vector<std::uint16_t> tbl(len + 1);
    for (std::uint32_t r = 0; r <= len; ++r) {
      const std::uint32_t step = rng() % 7 == 0 ? 0u : 3 + rng() % (round % 2 == 0 ? 8 : 60);
      tbl[r] = static_cast<std::uint16_t>(r < end && rng() % 23 != 0 ? std::min(r + step, len) : r);
      if (r >= end) tbl[r] = static_cast<std::uint16_t>(r);
    }
    for (const std::uint32_t cap : {1u, 7u, 8u, 9u, 16u, 17u, 1024u}) {
      const std::uint32_t start = rng() % end;
      std::vector<std::uint16_t> want;
      std::uint32_t at = start;
      while (want.size() < cap && tbl[at] != at) {
        want.push_back(static_cast<std::uint16_t>(at));
        at = tbl[at];
      }
      std::vector<std::uint16_t> toks(cap, 0xBEEF);
      std::uint32_t r = start;
      const std::uint32_t n = logic::lz4_table_chain(tbl.data(), &r, end, toks.data(), cap, true);
      ASSERT_EQ(n, want.size()) << "round " << round << " cap " << cap;
      EXPECT_EQ(r, at) << "round " << round << " cap " << cap;
      EXPECT_TRUE(std::equal(want.begin(), want.end(), toks.begin())) << "round " << round << " cap " << cap;
    }
  }
}

// The token pass (sum, then place from the packed sequences) against a reference that parses each
// token and runs lz4_fast_checks: random sequences whose offsets and lengths straddle each check
// (offset 0, an offset one past the output written so far, the output's end), split over teams of
// 1, 3 and 32 threads: the same positions, end and first failing token.
TEST(Lz4Segments, TokenPassChecksWhatTheFastChecksCheck) {
  std::mt19937 rng(31);
  for (int round = 0; round < 400; ++round) {
    // a window of sequences: token, literal length bytes, literals, offset, match length bytes
    Buf w;
    std::vector<std::uint16_t> toks;
    const std::uint32_t n = 1 + rng() % 60;
    for (std::uint32_t i = 0; i < n; ++i) {
      toks.push_back(static_cast<std::uint16_t>(w.size()));
      const std::uint32_t lit = rng() % 4 == 0 ? 15 + rng() % 600 : rng() % 15;
      const std::uint32_t m = rng() % 4 == 0 ? 15 + rng() % 600 : rng() % 15;
      w.push_back(static_cast<std::uint8_t>((std::min(lit, 15u) << 4) | std::min(m, 15u)));
      if (lit >= 15) {
        std::uint32_t rest = lit - 15;
        for (; rest >= 255; rest -= 255) w.push_back(255);
        w.push_back(static_cast<std::uint8_t>(rest));
      }
      for (std::uint32_t k = 0; k < lit; ++k) w.push_back(static_cast<std::uint8_t>(rng()));
      const std::uint32_t kind = rng() % 8;
      const std::uint32_t off = kind == 0 ? 0u : kind == 1 ? 65535u : kind == 2 ? 1u + rng() % 64 : 1u + rng() % 4000;
      w.push_back(static_cast<std::uint8_t>(off & 0xFF));
      w.push_back(static_cast<std::uint8_t>(off >> 8));
      if (m >= 15) {
        std::uint32_t rest = m - 15;
        for (; rest >= 255; rest -= 255) w.push_back(255);
        w.push_back(static_cast<std::uint8_t>(rest));
      }
    }
    w.resize(w.size() + 16, 0);  // the fast path's bytes after the last offset
    const auto len = static_cast<std::uint32_t>(w.size());
    const std::uint32_t op0 = rng() % 3 == 0 ? 0u : rng() % 5000;
    // the reference: the positions, then per output size the first token whose checks fail
    std::vector<std::uint32_t> want(n + 1);
    std::uint32_t pos = op0;
    for (std::uint32_t i = 0; i < n; ++i) {
      logic::Lz4FastShape f;
      ASSERT_TRUE(logic::lz4_table_shape(w.data() + toks[i], len - toks[i], len - toks[i], &f));
      want[i] = pos;
      pos += f.lit + f.mlen;
    }
    want[n] = pos;
    // sizes: room for all, the exact end, one short of it, and somewhere inside
    for (const std::uint32_t size : {pos + 100, pos, pos - 1, op0 + (pos - op0) / 2}) {
      std::uint32_t want_bad = n;
      for (std::uint32_t i = 0; i < n && want_bad == n; ++i) {
        logic::Lz4FastShape f;
        static_cast<void>(logic::lz4_table_shape(w.data() + toks[i], len - toks[i], len - toks[i], &f));
        if (!logic::lz4_fast_checks(f.lit, f.off, f.mlen, want[i], size)) want_bad = i;
      }
      for (const std::uint32_t threads : {1u, 3u, 32u}) {
        std::vector<std::uint32_t> at(n + 1, 0xDEADBEEFu);
        std::vector<std::uint32_t> sums(threads), i0(threads), i1(threads);
        for (std::uint32_t t = 0; t < threads; ++t) {
          logic::lz4_table_share(n, t, threads, &i0[t], &i1[t]);
          sums[t] = logic::lz4_table_token_sum<logic::kLz4TokenSumWidth>(w.data(), len, len, toks.data(), i0[t], i1[t], at.data());
        }
        std::uint32_t pre = op0, bad = n;
        for (std::uint32_t t = 0; t < threads; ++t) {
          bad = std::min(bad, logic::lz4_table_token_place(size, n, i0[t], i1[t], pre, at.data()));
          pre += sums[t];
        }
        ASSERT_EQ(bad, want_bad) << "round " << round << " size " << size << " threads " << threads;
        ASSERT_EQ(at, want) << "round " << round << " size " << size << " threads " << threads;
      }
    }
  }
}

// A host team that counts the tables it fills and the sequences its token passes accept.
template <bool WithAhead>
struct Counting : logic::Lz4HostTableTeamOf<WithAhead> {
  using Base = logic::Lz4HostTableTeamOf<WithAhead>;
  std::uint64_t windows = 0, accepted = 0;
  void stage(std::uint32_t k, const std::uint8_t* w, std::uint32_t r0, std::uint32_t end, std::uint32_t len,
             std::uint32_t left0) {
    ++windows;
    Base::stage(k, w, r0, end, len, left0);
  }
  void ahead(std::uint32_t k, const std::uint8_t* src, std::uint32_t len, std::uint32_t end, std::uint32_t left0) {
    ++windows;
    Base::ahead(k, src, len, end, left0);
  }
  std::uint32_t tokens(std::uint32_t k, const std::uint8_t* w, std::uint32_t len, std::uint32_t left0,
                       std::uint32_t n, std::uint32_t op0, std::uint32_t slot) {
    const std::uint32_t ok = Base::tokens(k, w, len, left0, n, op0, slot);
    accepted += ok;
    return ok;
  }
};

// Literal runs of 270 bytes and more and matches of 274 and more take two or more length bytes:
// the table takes them (lz4_table_shape), so the chain stops only at window ends and at the
// block's last sequence. Runs of literals from 16 to 3000 bytes between matches from 4 to 5000:
// every walk gives the serial walk's marks, and all but a few sequences per window go through the
// token pass.
TEST(Lz4Segments, TableTakesLongLiteralRunsAndLongMatches) {
  std::mt19937 rng(41);
  Buf src;
  while (src.size() < 600000) {
    const std::size_t lit = 16 + rng() % 3000, match = 4 + rng() % (rng() % 4 == 0 ? 5000 : 300);
    for (std::size_t i = 0; i < lit; ++i) src.push_back(static_cast<std::uint8_t>(rng()));
    const std::uint8_t v = static_cast<std::uint8_t>(rng());
    src.insert(src.end(), match, v);
  }
  const Buf enc = liblz4_block(src, 0);
  for (std::size_t window : {std::size_t{8192}, std::size_t{logic::kLz4TableWindowMax}})
    expect_same_walk(enc, src.size(), window, "long runs, window " + std::to_string(window));
  // how many sequences the token passes accept, with and without the window ahead
  const auto in_n = static_cast<std::uint32_t>(enc.size()), out_n = static_cast<std::uint32_t>(src.size());
  const std::size_t window = 8192;
  std::vector<std::uint8_t> win(window), win2(window);
  std::vector<std::uint16_t> tbl(2 * (window + 1)), toks(logic::lz4_table_token_cap(window));
  std::vector<std::uint32_t> at(toks.size() + 1);
  Counting<false> plain{{{tbl.data(), tbl.data() + window + 1}, {win.data(), nullptr}, toks.data(), at.data(), out_n}};
  Counting<true> ahead{{{tbl.data(), tbl.data() + window + 1}, {win.data(), win2.data()}, toks.data(), at.data(), out_n}};
  const auto run = [&](auto& team) {
    logic::Lz4StagedReader<logic::Lz4MemcpyFill> rd{enc.data(), enc.size(), win.data(), window, {}};
    std::uint32_t count = 0;
    return logic::lz4_segment_walk_table(rd, team, toks.data(), static_cast<std::uint32_t>(toks.size()), at.data(),
                                         true, in_n, out_n, logic::lz4_segment_bound(in_n, out_n),
                                         [](std::uint32_t, std::uint32_t, std::uint32_t) {}, &count);
  };
  ASSERT_EQ(run(plain), DecodeStatus::kOk);
  ASSERT_EQ(run(ahead), DecodeStatus::kOk);
  std::uint64_t seqs = 0, long_lit = 0, long_match = 0;
  for (std::size_t ip = 0; ip < enc.size();) {  // the block's sequences, counted
    const unsigned t = enc[ip++];
    std::size_t lit = t >> 4, match = t & 15u;
    for (unsigned e = lit == 15 ? 255 : 0; e == 255; lit += e) e = enc[ip++];
    ip += lit;
    ++seqs;
    long_lit += lit >= 270;
    if (ip >= enc.size()) break;
    ip += 2;
    for (unsigned e = match == 15 ? 255 : 0; e == 255; match += e) e = enc[ip++];
    long_match += match + 4 >= 274;
  }
  EXPECT_GT(long_lit, 100u);
  EXPECT_GT(long_match, 20u);
  // the serial steps: the last sequence, and one where a sequence reaches past the staged window
  // (with the window ahead, windows counts those filled ahead too)
  EXPECT_LE(seqs - plain.accepted, plain.windows + 1) << seqs << " sequences, " << plain.windows << " windows";
  EXPECT_LE(seqs - ahead.accepted, ahead.windows + 1) << seqs << " sequences, " << ahead.windows << " windows";
}

TEST(Lz4Segments, TableWalkGivesTheSerialStatusOnDamagedBlocks) {
  const Buf src = quantised_bytes(120000);
  std::mt19937 rng(29);
  for (int level : {0, 9}) {
    const Buf enc = liblz4_block(src, level);
    for (std::size_t cut = 0; cut < enc.size(); cut += (cut < 64 ? 1 : 97))
      expect_same_walk(Buf(enc.begin(), enc.begin() + cut), src.size(), 1000, "cut " + std::to_string(cut));
    for (int trial = 0; trial < 3000; ++trial) {
      Buf bad = enc;
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; ++f) bad[rng() % bad.size()] = static_cast<std::uint8_t>(rng());
      const std::size_t size = trial % 3 == 0 ? src.size() / 2 : trial % 3 == 1 ? src.size() + 7 : src.size();
      expect_same_walk(bad, size, trial % 2 == 0 ? 8192 : logic::kLz4TableWindowMin, "trial " + std::to_string(trial));
      const Result r = segmented(bad, size);
      ASSERT_EQ(r.status, lz4_serial_status(bad, size)) << "trial " << trial;
    }
  }
}

// Damaged blocks: the same status as the serial decoder (and liblz4's bytes when accepted).
TEST(Lz4Segments, DamagedBlocksGetTheSerialStatus) {
  const Buf src = quantised_bytes(120000);
  std::mt19937 rng(11);
  for (int level : {0, 9}) {
    const Buf enc = liblz4_block(src, level);
    for (std::size_t cut = 0; cut < enc.size(); cut += (cut < 64 ? 1 : 89)) {
      const Buf in(enc.begin(), enc.begin() + cut);
      ASSERT_EQ(segmented(in, src.size()).status, lz4_serial_status(in, src.size())) << "cut " << cut;
    }
    for (int trial = 0; trial < 3000; ++trial) {
      Buf bad = enc;
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; ++f) bad[rng() % bad.size()] = static_cast<std::uint8_t>(rng());
      const std::size_t size = trial % 3 == 0 ? src.size() / 2 : trial % 3 == 1 ? src.size() + 7 : src.size();
      // the chained matches by levels (the default) or groups
      const Result r = segmented(bad, size, trial % 2 == 0 ? 8192 : 296, logic::Lz4Walk::kTable,
                                 trial % 4 == 0 ? logic::Lz4Matches::kOwnThenChain : logic::Lz4Matches::kOwnThenLevels);
      ASSERT_EQ(r.status, lz4_serial_status(bad, size)) << "trial " << trial;
      if (r.status == DecodeStatus::kOk) {
        Buf ref(size);
        ASSERT_EQ(LZ4_decompress_safe(reinterpret_cast<const char*>(bad.data()), reinterpret_cast<char*>(ref.data()),
                                      static_cast<int>(bad.size()), static_cast<int>(size)),
                  static_cast<int>(size));
        ASSERT_TRUE(r.bytes == ref) << "trial " << trial;
      }
    }
  }
}

// The walk's segments: within lz4_segment_bound, each but the last closed by its output or its
// sequence count, none holding more than kLz4SegmentSeqs sequences; and groups, and the
// dependency levels' passes (the default), that take many matches at once on climate data (the
// point of the match pass).
TEST(Lz4Segments, SegmentsKeepTheirBoundsAndGroupsTakeManyMatches) {
  for (const auto& kind : kDataKinds) {
    const Buf src = kind.make(1 << 20);
    const Buf enc = liblz4_block(src, 0);
    std::vector<logic::Lz4Segment> segs(logic::lz4_segment_bound(enc.size(), src.size()));
    std::vector<std::uint8_t> window(8192);
    logic::Lz4StagedReader<logic::Lz4MemcpyFill> rd{enc.data(), enc.size(), window.data(), window.size(), {}};
    std::uint32_t count = 0;
    ASSERT_EQ(logic::lz4_segment_walk(
                  rd, static_cast<std::uint32_t>(enc.size()), static_cast<std::uint32_t>(src.size()), segs.size(),
                  [&](std::uint32_t k, std::uint32_t ip, std::uint32_t op) { segs[k] = {ip, op}; }, &count),
              DecodeStatus::kOk)
        << kind.name;
    ASSERT_GE(count, 1u);
    ASSERT_EQ(segs[0].in, 0u);
    ASSERT_EQ(segs[0].out, 0u);
    std::uint64_t sequences = 0;
    for (std::uint32_t k = 0; k < count; ++k) {
      const std::uint32_t end = k + 1 < count ? segs[k + 1].in : static_cast<std::uint32_t>(enc.size());
      std::uint32_t n = 0, out = 0;
      const std::uint8_t* in = enc.data();
      ASSERT_EQ(logic::lz4_segment_parse(in, static_cast<std::uint32_t>(enc.size()),
                                         static_cast<std::uint32_t>(src.size()), segs[k].in, end, segs[k].out,
                                         [&](const logic::Lz4Sequence& s, std::uint32_t) {
                                           ++n;
                                           out += static_cast<std::uint32_t>(s.lit_len + s.match_len);
                                         }),
                DecodeStatus::kOk);
      ASSERT_LE(n, logic::kLz4SegmentSeqs) << kind.name << " segment " << k;
      if (k + 1 < count) {
        ASSERT_TRUE(out >= logic::kLz4SegmentOut || n == logic::kLz4SegmentSeqs) << kind.name << " segment " << k;
        ASSERT_EQ(segs[k + 1].out, segs[k].out + out);
      }
      sequences += n;
    }
    const Result r = segmented(enc, src.size(), 8192, logic::Lz4Walk::kTable, logic::Lz4Matches::kOwnThenChain);
    const Result lv = segmented(enc, src.size());
    ASSERT_EQ(r.status, DecodeStatus::kOk);
    ASSERT_EQ(lv.status, DecodeStatus::kOk);
    if (std::string(kind.name) == "climate_f32") {
      ASSERT_GT(sequences, 0u);
      // a group (or a pass) per match would be no better than the serial order
      EXPECT_LT(r.groups * 2, sequences) << r.groups << " groups for " << sequences << " sequences";
      EXPECT_LT(lv.groups * 2, sequences) << lv.groups << " passes for " << sequences << " sequences";
    }
  }
}

// The densest block for lz4_segment_bound's output side: sequences of no literals and a match of
// kLz4MinMatch bytes, so every segment but the last is closed by its sequence count with the
// least output a segment can have. Every walk fits the bound (its guard would answer kCorrupt),
// the bound is within 2 of the count, and the same block claiming less output than it has
// (kWrongSize from the serial decoder) gets that status, not the guard's.
TEST(Lz4Segments, TheOutputBoundHoldsForTheDensestBlock) {
  Lz4Crafter c;
  c.sequence(1, 1, logic::kLz4MinMatch);
  for (int i = 0; i < 99999; ++i) c.sequence(0, 1, logic::kLz4MinMatch);
  const Buf enc = c.finish(12);  // (liblz4 wants the last match 12 bytes before the end)
  const std::size_t size = c.out;
  const std::size_t bound = logic::lz4_segment_bound(enc.size(), size);
  ASSERT_EQ(bound, size / logic::kLz4SegmentOutMin + 2);  // the output side is the tighter here
  for (const logic::Lz4Walk kind : {logic::Lz4Walk::kSerial, logic::Lz4Walk::kTable, logic::Lz4Walk::kTableAhead,
                                    logic::Lz4Walk::kTablePipeline}) {
    const Walked w = walk(enc, size, 8192, kind);
    ASSERT_EQ(w.status, DecodeStatus::kOk);
    EXPECT_LE(w.count, bound);
    EXPECT_GE(w.count + 2, bound);
  }
  expect_same_walk(enc, size, 8192, "densest");
  expect_same_walk(enc, size - 1000, 8192, "densest, short output");
  EXPECT_EQ(walk(enc, size - 1000, 8192, logic::Lz4Walk::kSerial).status, DecodeStatus::kWrongSize);
  const Result r = segmented(enc, size);
  ASSERT_EQ(r.status, DecodeStatus::kOk);
  EXPECT_TRUE(r.bytes == liblz4_decode(enc, size));
}

TEST(Lz4Segments, GroupRuleRefusesEveryMatchThatReadsTheGroupsOutput) {
  // a match reads min(off, len) bytes: [dst - off, ...)
  EXPECT_FALSE(logic::lz4_reads_meet({1100, 104, 4}, 1000, 96));
  EXPECT_TRUE(logic::lz4_reads_meet({1100, 99, 4}, 1000, 2));
  EXPECT_FALSE(logic::lz4_reads_meet({1100, 99, 4}, 1000, 1));
  EXPECT_TRUE(logic::lz4_reads_meet({1100, 50, 500}, 1090, 5));  // off < len: reads up to its start
  EXPECT_FALSE(logic::lz4_reads_meet({1100, 50, 500}, 1000, 50));
  // byte i of a match with off < len repeats the last off bytes before it
  const logic::Lz4MatchRecord m{100, 3, 10};
  for (std::uint32_t i = 0; i < 10; ++i) EXPECT_EQ(logic::lz4_match_source(m, i), 97 + i % 3);
  // the third reads 1010..1013, which the second writes; the fourth reads literals between the
  // first two (1004..1007), which no match writes
  const logic::Lz4MatchRecord recs[] = {{1000, 50, 4}, {1010, 20, 4}, {1020, 10, 4}, {1030, 26, 4}};
  EXPECT_EQ(logic::lz4_group_size(recs, 4), 2u);
  EXPECT_EQ(logic::lz4_group_size(recs + 2, 2), 2u);
  EXPECT_EQ(logic::lz4_group_size(recs + 3, 1), 1u);
  // long matches go alone, and end a group of short ones
  const logic::Lz4MatchRecord longs[] = {{1000, 900, 17}, {1100, 900, 4}, {1200, 900, 17}};
  EXPECT_EQ(logic::lz4_group_size(longs, 3), 1u);
  EXPECT_EQ(logic::lz4_group_size(longs + 1, 2), 1u);
}

TEST(Lz4Segments, OwnPassTakesExactlyTheShortMatchesThatReadOnlyTheSegmentsLiterals) {
  // a segment from 1000; its matches write 1010..1013, 1020..1023, 1040..1045, 1050..1053,
  // 1060..1075, 1080..1083, 1100..1116, 1120..1123, 1130..1133 and the rest is literals
  const logic::Lz4MatchRecord recs[] = {
      {1010, 10, 4},   // reads 1000..1003: literals
      {1020, 30, 4},   // reads 990..993: before the segment
      {1040, 20, 6},   // reads 1020..1025: the second match's output
      {1050, 26, 4},   // reads 1024..1027: literals (the second match ends at 1024)
      {1060, 1, 16},   // reads 1059: a literal (off < len)
      {1080, 21, 4},   // reads 1059..1062: a literal, then the fifth match's output
      {1100, 1, 17},   // reads 1099, a literal, but long (the warp's)
      {1120, 71, 4},   // reads 1049..1052: 1049 literal, 1050.. the fourth match's output
      {1130, 116, 4},  // reads 1014..1017: literals (the first match ends at 1014)
  };
  const bool own[] = {true, false, false, true, true, false, false, false, true};
  for (std::uint32_t i = 0; i < 9; ++i) EXPECT_EQ(logic::lz4_reads_own_literals(recs, i, 1000), own[i]) << i;
  // the segment start bounds the range: at 1001 the first match reads one byte before it
  EXPECT_FALSE(logic::lz4_reads_own_literals(recs, 0, 1001));
  EXPECT_TRUE(logic::lz4_reads_own_literals(recs, 0, 1000));
  // an offset past the segment's output start (or past dst itself) never wraps into "own"
  const logic::Lz4MatchRecord far[] = {{1010, 2000, 4}};
  EXPECT_FALSE(logic::lz4_reads_own_literals(far, 0, 1000));
}

TEST(Lz4Segments, OwnPassTakesGroupsOffTheChainOfEra5LikeChunks) {
  // the own passes leave the chained passes about two thirds of their groups on the benchmark's
  // era5-like chunks (bench/micro/lz4_chain_matches.cpp: 10.45 -> 6.79 a segment), same bytes
  const Buf src = cubestream_bench::era5_chunk(std::size_t{1} << 18, 7919);
  const Buf enc = liblz4_block(src, 0);
  const Result own = segmented(enc, src.size(), 8192, logic::Lz4Walk::kTable, logic::Lz4Matches::kOwnThenChain);
  const Result alone = segmented(enc, src.size(), 8192, logic::Lz4Walk::kTable, logic::Lz4Matches::kChain);
  ASSERT_EQ(own.status, DecodeStatus::kOk);
  ASSERT_EQ(alone.status, DecodeStatus::kOk);
  EXPECT_TRUE(own.bytes == src);
  EXPECT_TRUE(alone.bytes == src);
  EXPECT_LT(own.groups * 10, alone.groups * 8) << own.groups << " of " << alone.groups;
  EXPECT_GT(own.groups * 10, alone.groups * 4) << own.groups << " of " << alone.groups;
}

TEST(Lz4Segments, LevelsTakeFewerPassesThanGroupsOnEra5LikeChunks) {
  // bench/micro/lz4_chain_matches.cpp: 5.7 passes a segment against 6.8 groups
  const Buf src = cubestream_bench::era5_chunk(std::size_t{1} << 18, 7919);
  const Buf enc = liblz4_block(src, 0);
  const Result groups = segmented(enc, src.size(), 8192, logic::Lz4Walk::kTable, logic::Lz4Matches::kOwnThenChain);
  const Result levels = segmented(enc, src.size());
  ASSERT_EQ(levels.status, DecodeStatus::kOk);
  EXPECT_TRUE(levels.bytes == src);
  EXPECT_LT(levels.groups * 100, groups.groups * 95) << levels.groups << " passes, " << groups.groups << " groups";
}

TEST(Lz4Segments, DependencyLevelsAgreeWithAByteMapOfRandomSegments) {
  // random chained matches (reading anywhere before them, earlier segments included): each
  // level one more than the highest level among the matches whose output it reads, by a map of
  // which match wrote each byte
  std::mt19937 rng(11);
  for (int trial = 0; trial < 400; ++trial) {
    std::vector<logic::Lz4MatchRecord> recs;
    const std::uint32_t seg_out = 70000;
    std::vector<int> writer(seg_out + 20000, -1);
    std::vector<std::uint32_t> level;
    std::uint32_t op = seg_out;
    const std::uint32_t n = 1 + rng() % logic::kLz4SegmentSeqs;
    for (std::uint32_t i = 0; i < n; ++i) {
      op += rng() % 3 == 0 ? 0 : rng() % 10;
      const std::uint32_t len = 4 + (rng() % 8 == 0 ? rng() % 40 : rng() % 4);
      const std::uint32_t off = 1 + (rng() % 4 == 0 ? rng() % 3000 : rng() % 40);
      recs.push_back({op, off, len});
      int expect = 0;
      for (std::uint32_t b = 0; b < std::min(off, len); ++b) {
        const int w = writer[op - off + b];
        if (w >= 0) expect = std::max(expect, static_cast<int>(level[static_cast<std::size_t>(w)]) + 1);
      }
      level.push_back(logic::lz4_dep_level(recs.data(), i, [&](std::uint32_t j) { return level[j]; }));
      ASSERT_EQ(level.back(), static_cast<std::uint32_t>(expect)) << trial << " " << i;
      for (std::uint32_t b = 0; b < len; ++b) writer[op + b] = static_cast<int>(i);
      op += len;
    }
  }
}

TEST(Lz4Segments, TheRecordSearchStepsCoverEveryIndex) {
  static_assert(logic::lz4_search_top(256) == 128 && logic::lz4_search_top(300) == 256);
  static_assert(logic::lz4_search_top(32) == 16 && logic::lz4_search_top(33) == 32 && logic::lz4_search_top(2) == 1);
  for (std::uint32_t n = 2; n < 5000; ++n) {
    const std::uint32_t t = logic::lz4_search_top(n);
    EXPECT_GE(2 * t - 1, n - 1) << n;
    EXPECT_LT(t - 1, n - 1) << n;  // no step wasted: one fewer would not reach n - 1
  }
}

TEST(Lz4Segments, OwnPassAgreesWithAByteMapOfRandomSegments) {
  // random segments of up to kLz4SegmentSeqs matches: the binary search against a map of which
  // bytes are match output
  std::mt19937 rng(7);
  for (int trial = 0; trial < 400; ++trial) {
    const std::uint32_t seg_out = 70000 + rng() % 100;
    std::vector<logic::Lz4MatchRecord> recs;
    std::vector<char> written(seg_out + 20000, 0);
    std::uint32_t op = seg_out;
    const std::uint32_t n = 1 + rng() % logic::kLz4SegmentSeqs;
    for (std::uint32_t i = 0; i < n; ++i) {
      op += rng() % 4 == 0 ? 0 : rng() % 12;  // literals
      const std::uint32_t len = 4 + (rng() % 8 == 0 ? rng() % 30 : rng() % 4);
      const std::uint32_t off = 1 + (rng() % 4 == 0 ? rng() % 3000 : rng() % 60);
      recs.push_back({op, off, len});
      op += len;
    }
    written.resize(op + 1, 0);
    for (std::uint32_t i = 0; i < n; ++i) {
      const logic::Lz4MatchRecord& m = recs[i];
      bool expect = m.len <= logic::kLz4LaneMatchMax && m.off <= m.dst - seg_out;
      for (std::uint32_t b = 0; expect && b < std::min(m.off, m.len); ++b) expect = written[m.dst - m.off + b] == 0;
      ASSERT_EQ(logic::lz4_reads_own_literals(recs.data(), i, seg_out), expect) << trial << " " << i;
      for (std::uint32_t b = 0; b < m.len; ++b) written[m.dst + b] = 1;
    }
  }
}

// Which blocks the segmented path takes (the rest go to the ring kernel): those decoding to at
// most 1.4x their size. A plain float32 field stays on it; the same field byte-shuffled first
// (numcodecs' Shuffle filter before LZ4, the density of blosc's streams) does not. (A field
// quantised to 16-bit values already compresses 1.67x unshuffled and goes to the ring too;
// which path is faster there was not measured.)
TEST(Lz4Segments, DenseBlocksAreLeftToTheRingDecoder) {
  EXPECT_TRUE(logic::lz4_segments_take(1000, 1400));
  EXPECT_FALSE(logic::lz4_segments_take(1000, 1401));
  EXPECT_TRUE(logic::lz4_segments_take(1, 0));
  EXPECT_TRUE(logic::lz4_segments_take(0xFFFEFFFFu, 0xFFFEFFFFu));  // no overflow near the 32-bit limit
  EXPECT_FALSE(logic::lz4_segments_take(0x10000000u, 0xFFFEFFFFu));
  {
    const Buf plain = climate_bytes(1 << 20);
    Buf shuffled(plain.size());
    logic::shuffle_block(plain.data(), shuffled.data(), plain.size(), 4);
    const Buf a = liblz4_block(plain), b = liblz4_block(shuffled);
    SCOPED_TRACE("ratios " + std::to_string(double(plain.size()) / a.size()) + " and " +
                 std::to_string(double(plain.size()) / b.size()));
    EXPECT_TRUE(logic::lz4_segments_take(a.size(), plain.size()));
    EXPECT_FALSE(logic::lz4_segments_take(b.size(), shuffled.size()));
  }
}

}  // namespace
}  // namespace cs_codec_test
