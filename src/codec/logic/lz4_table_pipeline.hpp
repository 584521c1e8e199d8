// The pipelined table walk of a numcodecs LZ4 block (issue 4, docs/gpu_decoders.md, session 31):
// lz4_segment_walk_table with the window ahead, and each chain's token pass run by the team while
// the walker chains on.
//
// Why: with the window ahead, the walker (warp 0 on the GPU) still runs the chain, the token pass
// and the marks one after another, ~13.6 k of the 16.3 k cycles a 6 KiB table of an era5-like
// chunk took on the H200 (session 31's clocks), while the seven helper warps need well under that
// for the next window's copy and table. Here a chain that leaves its table (or lists `cap`
// tokens) is taken on trust: the walker goes on from where it ended, and that chain's token pass
// goes to the team with the next window's fill, one job; the walker takes its answer (the marks,
// the output position) after its next chain. A chain the table stops on a decline has its token
// pass at once (the serial step after it needs the output position), as in the table walk.
//
// Where a trusted chain's token fails its checks, the walk goes back to that token and drops the
// chain it walked since; the serial step there decides, as in lz4_segment_walk_table. The marks
// come in order (each chain's after the one before), so statuses, marks and counts are
// lz4_segment_walk's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "codec/logic/decode_status.hpp"
#include "codec/logic/lz4_block.hpp"
#include "codec/logic/lz4_segments.hpp"
#include "core/host_device.hpp"

namespace cubestream::codec::logic {

// One job of the team: a trusted chain's token pass (n != 0), then a window filled ahead
// (flen != 0), either or both.
struct Lz4PipelineJob {
  // the token pass of toks slot `slot` (n tokens) over buffer tk's window, `tlen` bytes staged
  // from the block's byte base, tleft0 = in_size - base, from output position op0: at[] and the
  // first failing token (or n), as team.tokens
  std::uint32_t n, slot, tk, tlen, tleft0, op0;
  // flen bytes from src into buffer fk and its table over [0, fend], as team.ahead; fk may be tk:
  // the fill then waits for the token pass, which reads that window
  const std::uint8_t* src;
  std::uint32_t fk, flen, fend, fleft0;
};

// The pipelined walk: the contract of lz4_segment_walk. The team is lz4_segment_walk_table's with
// Team::Ahead true (team.ahead is not called), and besides:
//   Team::Pipeline: std::true_type;
//   team.tokens(k, window, len, left0, n, op0, slot): as there, over toks slot `slot`;
//   team.post(job): starts `job`, which may still run when post returns; the walk touches neither
//     the job's toks slot nor at[] until team.join_pass() (or join) has returned, nor the buffer
//     it fills until team.join() has;
//   team.join_pass(): returns once the posted job's token pass has answered (its fill may run on);
//   team.posted_ok(): after join_pass, the posted token pass's answer (the first failing token or n).
// Nothing the walk posted is running at a stage, tokens or post (the walk has joined it). toks
// holds 2 x cap entries (the chain writes one slot while the team reads the other), at cap + 1.
// The walk waits for a token pass's answer after its next chain (join_pass) and for the window's
// fill only where it needs the team again: at the next table or post, or before a serial step.
// (Session 32 on the H200: waiting for the whole job after each chain left warp 0 waiting
// ~3.4 k cycles a table of ~16 k on the era5-like batch, the fill running past the chain.)
CS_HD_TEMPLATE
template <class Fill, class Team, class Mark>
CS_HD inline DecodeStatus lz4_segment_walk_pipelined(Lz4StagedReader<Fill>& rd, Team& team, std::uint16_t* toks,
                                                     std::uint32_t cap, const std::uint32_t* at, bool writer,
                                                     std::uint32_t in_size, std::uint32_t size,
                                                     std::size_t max_segments, Mark&& mark, std::uint32_t* segments) {
  static_assert(Team::Ahead::value && Team::Pipeline::value, "the pipelined walk's team fills windows ahead");
  *segments = 0;
  if (in_size == 0) return DecodeStatus::kCorrupt;  // not a block (the empty block is a 0 token)
  std::uint32_t ip = 0, op = 0;
  Lz4SegmentMarks m;
  std::size_t tbl_base = ~std::size_t{0};
  std::uint32_t tbl_end = 0;
  std::uint32_t k = 0;  // the buffer rd reads and the chain walks
  bool ahead = false;   // a window ahead was posted into buffer k ^ 1
  Lz4AheadWindow a_win{0, 0, 0};
  // A trusted chain: its tokens in toks slot `slot`, over buffer `k`'s window staged from `base`
  // with `len` bytes. `ready`: walked, its token pass not yet posted; `posted`: posted, its answer
  // not yet taken. n == 0: none. At most one of the two is set: a chain becomes ready only once
  // the posted one is answered, and is posted at the next step.
  struct Chain {
    std::uint32_t n, base, len, k, slot;
  };
  Chain ready{0, 0, 0, 0, 0}, posted{0, 0, 0, 0, 0};
  std::uint32_t slot = 0;  // the slot the next chain writes
  // The answer of a chain's token pass (ok of c.n tokens, at[] written): its marks, then the
  // output position, or the walk's position back at the first failing token. kBack: the walk
  // went back (the caller drops the chain walked since, if any); kBad: the marks' guard.
  enum Took { kOn, kBack, kBad };
  const auto take = [&](const Chain& c, std::uint32_t ok) -> Took {
    const std::uint16_t* t = toks + c.slot * cap;
    if (!lz4_table_marks(at, t, c.base, ok, max_segments, &m, mark)) return kBad;
    op = at[ok];
    if (ok == c.n) return kOn;
    ip = c.base + t[ok];
    return kBack;
  };
  // the posted chain's answer (once the team's job has answered it: join_pass)
  const auto settle = [&]() -> Took {
    if (posted.n == 0) return kOn;
    team.join_pass();
    const Chain c = posted;
    posted.n = 0;
    return take(c, team.posted_ok());
  };
  // the ready chain's token pass now (its window is still in buffer ready.k)
  const auto finish = [&]() -> Took {
    if (ready.n == 0) return kOn;
    const Chain c = ready;
    ready.n = 0;
    const std::uint32_t ok = team.tokens(c.k, static_cast<const std::uint8_t*>(team.window(c.k)), c.len,
                                         in_size - c.base, c.n, op, c.slot);
    return take(c, ok);
  };
  // The fast path from ip (at least kLz4FastSpan + 3 bytes of block left): kLoop to decide again
  // from the new ip, kSerial for the serial step at ip (the fast path declines the sequence
  // there, or a token failed and the walk went back to it: walking its chain again would list
  // it again), kFail.
  enum Step { kLoop, kSerial, kFail };
  // No token pass is unanswered on entry: a step that posts settles after its chain before it
  // returns kLoop, and the serial step settles first. So the ready chain's token pass may start
  // from op. The last job's window fill may still run: the step joins it before it takes that
  // window or asks the team for anything.
  const auto fast_step = [&]() -> Step {
    Lz4PipelineJob job{0, 0, 0, 0, 0, 0, nullptr, 0, 0, 0, 0};
    if (rd.base != tbl_base || std::size_t{ip} - rd.base >= tbl_end) {
      team.join();
      bool taken = false;
      if (ahead) {
        ahead = false;
        if (std::size_t{ip} - a_win.base < a_win.end) {  // wraps around when ip < base
          k ^= 1u;
          rd.window = team.window(k);
          rd.base = a_win.base;
          rd.len = a_win.len;
          tbl_base = a_win.base;
          tbl_end = a_win.end;
          taken = true;
        }
      }
      if (!taken) {
        const Took s = finish();  // (the ready chain's window is the one restaged now)
        if (s != kOn) return s == kBad ? kFail : kSerial;
        tbl_end = lz4_table_stage(rd, team, k, ip, in_size);
        tbl_base = rd.base;
      }
      if (lz4_ahead_window(rd, tbl_end, in_size, &a_win)) {
        // into the other buffer: the ready chain's window if it walked the last table (the job's
        // token pass reads it first)
        job.src = rd.src + a_win.base;
        job.fk = k ^ 1u;
        job.flen = static_cast<std::uint32_t>(a_win.len);
        job.fend = a_win.end;
        job.fleft0 = static_cast<std::uint32_t>(in_size - a_win.base);
        ahead = true;
      }
    }
    if (ready.n != 0) {  // its token pass, from the output position where the last one ended
      job.n = ready.n;
      job.slot = ready.slot;
      job.tk = ready.k;
      job.tlen = ready.len;
      job.tleft0 = in_size - ready.base;
      job.op0 = op;
      posted = ready;
      ready.n = 0;
    }
    if (job.n != 0 || job.flen != 0) {
      team.join();  // (the last job's fill, if the step took no table)
      team.post(job);
    }
    const auto base = static_cast<std::uint32_t>(rd.base);
    std::uint32_t r = ip - base;
    const std::uint32_t n = lz4_table_chain(team.table(k), &r, tbl_end, toks + slot * cap, cap, writer);
    if (n == 0) return kSerial;  // the fast path declines the sequence at ip
    Took s = settle();  // the chain before this one
    if (s != kOn) return s == kBad ? kFail : kSerial;  // (this one started past the failing token)
    if (n == cap || r >= tbl_end) {
      // on trust: the next chain starts where this one ended
      ready = Chain{n, base, static_cast<std::uint32_t>(rd.len), k, slot};
      slot ^= 1u;
      ip = base + r;
      return kLoop;
    }
    // a decline ends the chain: its token pass now (the serial step there needs the output
    // position), and on along the table if every token passed (the next chain lists none)
    team.join();
    const std::uint32_t ok = team.tokens(k, static_cast<const std::uint8_t*>(rd.window),
                                         static_cast<std::uint32_t>(rd.len), in_size - base, n, op, slot);
    s = take(Chain{n, base, static_cast<std::uint32_t>(rd.len), k, slot}, ok);
    if (s != kOn) return s == kBad ? kFail : kSerial;
    ip = base + r;
    return kLoop;
  };
  for (;;) {
    if (in_size - ip >= kLz4FastSpan + 3) {
      const Step st = fast_step();
      if (st == kFail) return DecodeStatus::kCorrupt;
      if (st == kLoop) continue;
    }
    // one sequence the serial way, every token pass answered first (a failing token moves ip
    // back to itself: the serial step is then that token's), the team idle
    if (settle() == kBad) return DecodeStatus::kCorrupt;
    team.join();
    if (finish() == kBad) return DecodeStatus::kCorrupt;
    if (!lz4_mark_before(&m, ip, op, max_segments, mark)) return DecodeStatus::kCorrupt;
    bool last = false;
    const DecodeStatus st = lz4_walk_read(rd, in_size, size, &ip, &op, &last);
    if (st != DecodeStatus::kOk) return st;
    if (last) break;
  }
  if (m.count != 0) lz4_note_close(mark, m.count - 1, m.seqs);
  *segments = m.count;
  return op == size ? DecodeStatus::kOk : DecodeStatus::kCorrupt;
}

// The host's pipelined team: one thread does every part, a posted job at once.
struct Lz4HostPipelineTeam : Lz4HostTableTeamOf<true> {
  using Pipeline = std::true_type;
  std::uint32_t ok = 0;
  void join_pass() {}
  void post(const Lz4PipelineJob& j) {
    if (j.n != 0) ok = tokens(j.tk, win[j.tk], j.tlen, j.tleft0, j.n, j.op0, j.slot);
    if (j.flen != 0) ahead(j.fk, j.src, j.flen, j.fend, j.fleft0);
  }
  std::uint32_t posted_ok() const { return ok; }
};

}  // namespace cubestream::codec::logic
