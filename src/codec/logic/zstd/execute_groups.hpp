// Pass 3 of split.hpp (execution) by several teams per buffer (docs/gpu_zstd.md, v3.6): on the
// GPU, W warps of one CTA execute one buffer's groups of kGroupSeqs sequences side by side,
// where execute_steps runs them one after another on one warp.
//
// A buffer's work is a list of units, in output order: per step one unit, and before a
// compressed step's own unit (the literals after its last sequence) one unit per group of its
// records. resolve_units walks the steps once, as execute_steps does but without copying: from
// pass 2b's group tables (GroupStart) it knows each block's size, so it writes each step's
// output offset, first unit and incoming repeat offsets, and evaluates every check that does
// not depend on a sequence (frame sizes, raw and RLE sizes, a block's entropy status and
// trailing literals, frame content sizes, error steps, the buffer's size). The first of those
// that fails is the `limit`: no unit from it on runs.
//
// Teams take units from a counter, in order (run_units). Literals are copied at once; a match
// is copied once the bytes it reads are final: those below the frame's output that every
// complete unit before the first incomplete one covers (`done_bytes`), or those of its own
// group that are written (the rounds of execute_compressed). A team that can do neither waits
// (on the GPU it spins, UnitRunner::runnable). A unit waits only on units before it, all of
// which were taken by running teams, so work always progresses: the first incomplete unit
// waits at most for the team that has just moved done_units past the unit before it and is
// about to raise done_bytes (publish: the swap comes first, the maximum after), and that team
// waits on nothing. Completion is published in order: a team marks its unit complete in a ring
// of slots, then moves done_units / done_bytes over every complete unit in order.
//
// Errors keep execute_steps' status: a unit that fails records (unit, status) with an atomic
// minimum, and the buffer's status is that of the lowest failing unit, or the limit's. Every
// unit before the lowest failing one sees exactly the state execute_steps would have (the
// positions and repeat offsets assume that every earlier unit succeeds), so it passes or fails
// as there. Units after a failure are skipped, and a waiting team stops when a unit before its
// own failed, so a failed frame ends. The bytes written before an error may differ from
// execute_steps'; none is written outside the buffer's output (every unit checks its own
// bounds).
//
// The same code runs on the host with SerialTeams (execute_units_emulated): one team in order,
// or several interleaved in a seeded random order, which exercises the waiting and the
// out-of-order completion without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>

#include "codec/logic/zstd/common.hpp"
#include "codec/logic/zstd/split.hpp"
#include "codec/logic/zstd/xxhash64.hpp"

namespace cubestream::codec::logic::zstd {

// Units complete at most this far ahead of the first incomplete one (a slot per unit): a team
// may take unit u only once done_units > u - kUnitRing.
inline constexpr u32 kUnitRing = 256;

// The shared state of one buffer's execution: in the CTA's shared memory on the GPU, written
// only through the q_* accessors below.
struct UnitQueue {
  u64 next;            // the next unit to take
  u64 limit;           // units [0, limit) run (resolve_units)
  u64 steps_resolved;  // steps whose exec_* fields resolve_units wrote
  u64 done_units;      // units [0, done_units) are complete
  u64 done_bytes;      // bytes [0, done_bytes) of the buffer's output are final
  u64 first_error;     // (unit << 8) | status of the lowest failing unit so far (the limit's at first)
  u64 slot_unit[kUnitRing];  // unit + 1 once that unit is complete, in slot unit % kUnitRing
  u64 slot_end[kUnitRing];   // its end in the buffer's output
};

namespace detail {

// Accesses to the UnitQueue. On the GPU several warps of a CTA use it at once: loads and
// stores are volatile (each one reaches shared memory, none is cached in a register), updates
// are atomics, and q_fence is __threadfence_block, a sequentially consistent fence at CTA
// scope (the CUDA guide: cuda::atomic_thread_fence(memory_order_seq_cst, thread_scope_block)),
// which is enough because every warp that reads a buffer's output during pass 3 belongs to the
// buffer's CTA. On the host one thread runs every team, in turn.
CS_HD inline u64 q_read(const u64* p) {
#if CS_DEVICE_PASS
  return *reinterpret_cast<const volatile u64*>(p);
#else
  return *p;
#endif
}
CS_HD inline void q_write(u64* p, u64 v) {
#if CS_DEVICE_PASS
  *reinterpret_cast<volatile u64*>(p) = v;
#else
  *p = v;
#endif
}
CS_HD inline u64 q_fetch_add(u64* p, u64 v) {
#if CS_DEVICE_PASS
  return atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
#else
  const u64 old = *p;
  *p = old + v;
  return old;
#endif
}
CS_HD inline u64 q_cas(u64* p, u64 expect, u64 want) {
#if CS_DEVICE_PASS
  return atomicCAS(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(expect),
                   static_cast<unsigned long long>(want));
#else
  const u64 old = *p;
  if (old == expect) *p = want;
  return old;
#endif
}
CS_HD inline void q_min(u64* p, u64 v) {
#if CS_DEVICE_PASS
  atomicMin(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
#else
  if (v < *p) *p = v;
#endif
}
CS_HD inline void q_max(u64* p, u64 v) {
#if CS_DEVICE_PASS
  atomicMax(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
#else
  if (v > *p) *p = v;
#endif
}
CS_HD inline void q_fence() {
#if CS_DEVICE_PASS
  __threadfence_block();
#endif
}

CS_HD inline u64 pack_error(u64 unit, DecodeStatus st) { return (unit << 8) | static_cast<u32>(st); }

}  // namespace detail

// Clears the completion slots; members `rank` of `size` threads share the work (the GPU: every
// thread of the CTA, before resolve_units and a barrier).
CS_HD inline void reset_unit_ring(UnitQueue* q, unsigned rank, unsigned size) {
  for (unsigned i = rank; i < kUnitRing; i += size) {
    q->slot_unit[i] = 0;
    q->slot_end[i] = 0;
  }
}

// The units before a compressed step's own: one per group of its n_ok records.
CS_HD inline u64 step_group_units(const BlockStep& s) {
  return s.kind == kStepCompressed ? (u64(s.n_ok) + kGroupSeqs - 1) / kGroupSeqs : 0;
}
// The totals entry of a compressed step's group table (zero when it has no records: pass 2b
// did not run, or found nothing before its error).
CS_HD inline GroupStart step_group_totals(const BlockStep& s, const u8* scratch) {
  if (s.n_ok == 0) return GroupStart{0, 0};
  return reinterpret_cast<const GroupStart*>(scratch + s.scratch + step_groups_at(s))[step_group_units(s)];
}

// The walk of execute_steps without the copies, by one thread, after passes 1-2: writes the
// exec_* fields of the steps up to the first failing check and initialises q (all but the ring,
// see reset_unit_ring).
CS_HD inline void resolve_units(BlockStep* steps, u64 count, const u8* scratch, std::size_t dst_size, UnitQueue* q) {
  u64 done = 0;  // bytes of the finished frames
  u64 o = 0;     // bytes of the current frame
  u64 cap = 0;   // bytes available to the current frame
  u64 unit = 0;
  u64 reps[3] = {1, 4, 8};
  q->next = 0;
  q->done_units = 0;
  q->done_bytes = 0;
  DecodeStatus st = DecodeStatus::kOk;
  u64 k = 0;
  for (; k < count && st == DecodeStatus::kOk; ++k) {
    BlockStep& s = steps[k];
    s.exec_unit = unit;
    s.exec_frame = done;
    s.exec_out = o;
    switch (s.kind) {
      case kStepFrame:
        cap = dst_size - done;
        if ((s.flags & kStepHasContentSize) && s.size > cap) st = DecodeStatus::kWrongSize;
        // Repeat offsets start at 1, 4, 8 in every frame (section 3.1.2.5).
        reps[0] = 1;
        reps[1] = 4;
        reps[2] = 8;
        break;
      case kStepRaw:
      case kStepRle:
        if (s.size > cap - o) st = DecodeStatus::kWrongSize;
        else o += s.size;
        break;
      case kStepCompressed: {
        for (int r = 0; r < 3; ++r) s.reps_in[r] = reps[r];
        unit += step_group_units(s);  // the groups; the step's own unit (trailing literals) follows
        // execute_compressed's checks after the sequences, in its order.
        const GroupStart tot = step_group_totals(s, scratch);
        if (s.status != static_cast<u32>(DecodeStatus::kOk)) {
          st = static_cast<DecodeStatus>(s.status);
          break;
        }
        if (s.n_ok != s.nb_seq) {
          st = DecodeStatus::kCorrupt;  // records were capped: see kMaxStoredSeqs
          break;
        }
        detail::advance_repeat_offsets(s.reps_end, reps);
        // More literals used than decoded: a group fails its literal check first; any status
        // here lies after that group's.
        if (tot.lit > s.lit_regen) {
          st = DecodeStatus::kCorrupt;
          break;
        }
        const u64 end = o + tot.out;
        const u64 rest = s.lit_regen - tot.lit;
        st = detail::check_trailing_literals(tot.out, rest, end, cap);
        if (st == DecodeStatus::kOk) o = end + rest;
        break;
      }
      case kStepFrameEnd:
        if ((s.flags & kStepHasContentSize) && o != s.size) {
          st = DecodeStatus::kCorrupt;
          break;
        }
        done += o;
        o = 0;
        break;
      default:
        st = static_cast<DecodeStatus>(s.status);
        break;
    }
    if (st == DecodeStatus::kOk) ++unit;
  }
  if (st == DecodeStatus::kOk && done != dst_size) st = DecodeStatus::kWrongSize;
  q->steps_resolved = k;
  q->limit = unit;
  q->first_error = detail::pack_error(unit, st);
}

// What a team reads while it executes units of one buffer.
struct UnitContext {
  const u8* src;
  const BlockStep* steps;
  const u8* scratch;  // the base of the steps' scratch offsets
  u8* dst;
  std::size_t dst_size;
  bool verify_checksum;
  u64* xxh_acc;  // 4 u64 the team shares (checksums)
};

enum class RunState : u32 {
  kProgress = 0,  // a unit was taken, completed, failed or skipped, or a sub-batch of a group
                  // loaded (a team of fewer than kGroupSeqs members): call again
  kBlocked = 1,   // waiting: call again once runnable()
  kFinished = 2,  // no unit left
};

// One team's position in the work; each member keeps its own copy (registers on the GPU).
struct UnitRunner {
  enum Phase : u32 { kTake = 0, kSlot = 1, kRounds = 2, kChecksum = 3 };
  u32 phase = kTake;
  u64 unit = 0;        // the unit held (kTake: the last one held)
  u64 cursor = 0;      // the step of the last unit taken (units are taken in increasing order)
  u64 need_units = 0;  // kBlocked: runnable once done_units >= need_units ...
  u64 need_bytes = 0;  //   ... and done_bytes >= need_bytes
  // The group being executed (kRounds): offsets in the frame.
  u64 frame = 0;    // the frame's offset in the buffer's output
  u64 gstart = 0;   // the group's first byte
  u64 o = 0;        // output and literal offsets after the current sub-batch
  u64 lit_pos = 0;
  u32 first = 0;    // the group's first record in its block
  u32 count = 0;    // records in the group
  u32 sub = 0;      // the current sub-batch: sequences [sub, sub + team size) of the group
  // This member's sequence of the current sub-batch.
  u64 mdst = 0, offset = 0;
  u32 ml = 0;
  bool pending = false;  // its match is not copied yet

  // Whether a team blocked here can go on: the bytes or units it waits for are final, or a
  // unit before its own failed (it then drops its unit).
  CS_HD bool runnable(const UnitQueue* q) const {
    if ((detail::q_read(&q->first_error) >> 8) < unit) return true;
    return detail::q_read(&q->done_units) >= need_units && detail::q_read(&q->done_bytes) >= need_bytes;
  }
};

namespace detail {

CS_HD inline RunState blocked(UnitRunner* r, u64 need_units, u64 need_bytes) {
  r->need_units = need_units;
  r->need_bytes = need_bytes;
  return RunState::kBlocked;
}

// Records a failure of unit u (the lowest one wins) and drops the unit.
template <class Team>
CS_HD RunState fail_unit(const Team& team, UnitQueue* q, UnitRunner* r, DecodeStatus st) {
  if (team.rank() == 0) q_min(&q->first_error, pack_error(r->unit, st));
  r->phase = UnitRunner::kTake;
  return RunState::kProgress;
}

// Unit r->unit is complete and its output ends at `end` (in the buffer): marks its slot, then
// moves done_units and done_bytes over every complete unit in order. When the team that
// completes unit d + 1 marks its slot while another moves done_units to d + 1, at least one of
// them sees the other's store: each has a fence between its store (the slot; the swap of
// done_units) and its load (done_units; the slot), and of two sequentially consistent fences
// one comes first. So done_units never stops at a complete unit. Only the team whose
// compare-and-swap moves done_units from d to d + 1 uses slot d's end, which it read before
// the swap, while unit d + kUnitRing could not yet be taken (it waits for done_units > d).
template <class Team>
CS_HD RunState publish(const Team& team, UnitQueue* q, UnitRunner* r, u64 end) {
  q_fence();  // every member's output bytes before the slot
  team.sync();
  if (team.rank() == 0) {
    const u32 slot = static_cast<u32>(r->unit % kUnitRing);
    q_write(&q->slot_end[slot], end);
    q_fence();
    q_write(&q->slot_unit[slot], r->unit + 1);
    for (;;) {
      q_fence();
      const u64 d = q_read(&q->done_units);
      if (d >= q->limit) break;
      const u32 ds = static_cast<u32>(d % kUnitRing);
      if (q_read(&q->slot_unit[ds]) != d + 1) break;
      q_fence();
      const u64 e = q_read(&q->slot_end[ds]);
      q_fence();  // the slot's end is read before the swap that lets slot d be reused
      if (q_cas(&q->done_units, d, d + 1) == d) q_max(&q->done_bytes, e);
    }
  }
  team.sync();
  r->phase = UnitRunner::kTake;
  return RunState::kProgress;
}

// Loads the current sub-batch of the group (r->sub), checks its sequences as execute_compressed
// does, and copies their literals. The sequences are those of records r->first + r->sub + rank.
template <class Team>
CS_HD DecodeStatus load_sub_batch(const Team& team, const UnitContext& c, UnitRunner* r) {
  const BlockStep& s = c.steps[r->cursor];
  const u8* blk = c.scratch + s.scratch;
  const u8* lits = s.lit_type == 0 ? c.src + s.lit_at : blk;
  const u64 lits_size = s.lit_regen;
  const u32* rec_ll = reinterpret_cast<const u32*>(blk + step_lit_bytes(s));
  const u32* rec_ml = rec_ll + step_rec_stride(s);
  const u32* rec_off = rec_ml + step_rec_stride(s);
  const u64 block_start = s.exec_out;
  const u64 cap = c.dst_size - r->frame;
  u8* out = c.dst + r->frame;
  const u32 j = r->sub + team.rank();
  const bool act = j < r->count;
  u32 llw = 0, ml = 0, offw = 0;
  if (act) {
    llw = rec_ll[r->first + j];
    ml = rec_ml[r->first + j];
    offw = rec_off[r->first + j];
  }
  const u32 ll = llw & ((1u << 29) - 1);
  const PlacedSequence p =
      place_sequence(team, act, llw, ll, ml, offw, s.reps_in, r->lit_pos, r->o, lits_size, block_start, cap);
  const u64 offset = p.offset, my_lit = p.lit, my_out = p.out, incl = p.incl;
  const u32 bad = team.ballot(act && p.status != DecodeStatus::kOk);
  if (bad) return static_cast<DecodeStatus>(team.shfl(static_cast<u32>(p.status), team.lowest(bad)));
  const u32 last = (r->count - r->sub < team.size() ? r->count - r->sub : team.size()) - 1;
  const u64 total = team.shfl(incl, last);
  // Literals depend on nothing: copied at once, long runs by the whole team.
  const bool long_lit = ll > kLongCopy;
  if (!long_lit) lane_copy(out + my_out, lits + my_lit, ll);
  team_copy_long_literals(team, long_lit, out, my_out, lits, my_lit, ll);
  team.sync();
  r->mdst = my_out + ll;
  r->offset = offset;
  r->ml = ml;
  r->pending = act && ml > 0;
  r->lit_pos += total >> 32;
  r->o += total & 0xFFFFFFFFu;
  return DecodeStatus::kOk;
}

// The matches of the group, sub-batch by sub-batch, in rounds: a member copies its match once
// the bytes it reads, out[dst - off, dst - off + min(ml, off)), are final. Below the group's
// start that is done_bytes' business; inside the group, as in execute_compressed, the lowest
// pending member's source is written, and another's is when it ends before that member's
// output. Blocks when no member can go.
template <class Team>
CS_HD RunState group_rounds(const Team& team, const UnitContext& c, UnitQueue* q, UnitRunner* r) {
  u8* out = c.dst + r->frame;
  for (;;) {
    const u32 pm = team.ballot(r->pending);
    if (!pm) {
      r->sub += team.size();
      if (r->sub >= r->count) return publish(team, q, r, r->frame + r->o);
      const DecodeStatus st = load_sub_batch(team, c, r);
      if (st != DecodeStatus::kOk) return fail_unit(team, q, r, st);
      return RunState::kProgress;  // (a point where the host emulation switches teams)
    }
    const u32 lead = team.lowest(pm);
    const u64 front = team.shfl(r->mdst, lead);
    // Each member reads done_bytes itself and fences before it reads the bytes below it.
    const u64 done = q_read(&q->done_bytes);
    q_fence();
    const u64 read_start = r->mdst - r->offset;
    const u64 read_end = read_start + (r->ml < r->offset ? r->ml : r->offset);
    const u64 below = read_end < r->gstart ? read_end : r->gstart;  // end of the part before the group
    const bool low_final = read_start >= r->gstart || r->frame + below <= done;
    const bool ready = r->pending && low_final && (team.rank() == lead || read_end <= front);
    if (!team.ballot(ready)) return blocked(r, 0, team.shfl(r->frame + below, lead));
    // Every member copies each long match below, on the observation of done_bytes its owner
    // made (and fenced): the warp barrier orders that observation before the others' reads.
    // Ballots and shuffles exchange values but do not order memory.
    team.sync();
    const bool long_match = ready && r->ml > kLongCopy;
    if (ready && !long_match) lane_match(out + r->mdst, static_cast<std::size_t>(r->offset), r->ml);
    team_copy_long_matches(team, long_match, out, r->mdst, r->offset, r->ml);
    team.sync();
    if (ready) r->pending = false;
  }
}

// The step's own unit after its groups (or alone): what execute_steps does for it after the
// checks resolve_units made.
template <class Team>
CS_HD RunState step_unit(const Team& team, const UnitContext& c, UnitQueue* q, UnitRunner* r) {
  const BlockStep& s = c.steps[r->cursor];
  u8* out = c.dst + s.exec_frame;
  switch (s.kind) {
    case kStepFrame:
      return publish(team, q, r, s.exec_frame);
    case kStepRaw:
      team_copy(team, out + s.exec_out, c.src + s.at, static_cast<std::size_t>(s.size));
      return publish(team, q, r, s.exec_frame + s.exec_out + s.size);
    case kStepRle: {
      const u8 v = c.src[s.at];
      for (std::size_t i = team.rank(); i < s.size; i += team.size()) out[s.exec_out + i] = v;
      return publish(team, q, r, s.exec_frame + s.exec_out + s.size);
    }
    case kStepCompressed: {
      // The literals left after the last sequence end the block.
      const GroupStart tot = step_group_totals(s, c.scratch);
      const u8* lits = s.lit_type == 0 ? c.src + s.lit_at : c.scratch + s.scratch;
      const u64 end = s.exec_out + tot.out;
      const u64 rest = s.lit_regen - tot.lit;
      team_copy(team, out + end, lits + tot.lit, static_cast<std::size_t>(rest));
      return publish(team, q, r, s.exec_frame + end + rest);
    }
    case kStepFrameEnd: {
      const u64 frame_end = s.exec_frame + s.exec_out;
      if ((s.flags & kStepHasChecksum) && c.verify_checksum) {
        // Content_Checksum (section 3.1.1): low 32 bits of XXH64(content, seed 0), once every
        // byte of the frame is final: each member reads done_bytes (and fences) itself, and the
        // team goes on only when all saw it there.
        const bool early = q_read(&q->done_bytes) < frame_end;
        q_fence();
        if (team.ballot(early)) {
          r->phase = UnitRunner::kChecksum;
          return blocked(r, 0, frame_end);
        }
        const u64 o = s.exec_out;
        for (unsigned a = team.rank(); a < 4; a += team.size()) c.xxh_acc[a] = xxh64_accumulator(out, o, a, 0);
        team.sync();
        const u64 hash = xxh64_finish(out, o, 0, c.xxh_acc[0], c.xxh_acc[1], c.xxh_acc[2], c.xxh_acc[3]);
        team.sync();
        if (static_cast<u32>(hash) != load_le32(c.src + s.at)) return fail_unit(team, q, r, DecodeStatus::kChecksumMismatch);
      }
      return publish(team, q, r, frame_end);
    }
    default:  // an error step is the limit; never taken
      return fail_unit(team, q, r, static_cast<DecodeStatus>(s.status));
  }
}

}  // namespace detail

// Runs units of one buffer with `team` until it takes, completes, fails or skips one, or loads
// a group's next sub-batch (kProgress), must wait (kBlocked: call again once r->runnable(q))
// or finds none left (kFinished). Every team of the buffer calls it with its own runner, after
// resolve_units and reset_unit_ring.
template <class Team>
CS_HD RunState run_units(const Team& team, const UnitContext& c, UnitQueue* q, UnitRunner* r) {
  if (r->phase == UnitRunner::kTake) {
    u64 u = 0;
    if (team.rank() == 0) u = detail::q_fetch_add(&q->next, 1);
    u = team.shfl(u, 0);
    if (u >= q->limit) return RunState::kFinished;
    r->unit = u;
    r->phase = UnitRunner::kSlot;
    // Taken, not begun: on the host the emulation may now let other teams take units first.
    return RunState::kProgress;
  }
  // Dropped when a unit before it failed (the buffer's status is that one's or earlier).
  u64 err = 0;
  if (team.rank() == 0) err = detail::q_read(&q->first_error);
  if ((team.shfl(err, 0) >> 8) < r->unit) {
    r->phase = UnitRunner::kTake;
    return RunState::kProgress;
  }
  if (r->phase == UnitRunner::kRounds) return detail::group_rounds(team, c, q, r);
  if (r->phase == UnitRunner::kChecksum) return detail::step_unit(team, c, q, r);
  // kSlot: the unit's completion slot must be free.
  u64 du = 0;
  if (team.rank() == 0) du = detail::q_read(&q->done_units);
  if (team.shfl(du, 0) + kUnitRing <= r->unit) return detail::blocked(r, r->unit - kUnitRing + 1, 0);
  while (r->cursor + 1 < q->steps_resolved && r->unit >= c.steps[r->cursor + 1].exec_unit) ++r->cursor;
  const BlockStep& s = c.steps[r->cursor];
  const u64 g = r->unit - s.exec_unit;
  if (g >= step_group_units(s)) return detail::step_unit(team, c, q, r);
  // Group g of a compressed block.
  const GroupStart at = reinterpret_cast<const GroupStart*>(c.scratch + s.scratch + step_groups_at(s))[g];
  r->frame = s.exec_frame;
  r->gstart = s.exec_out + at.out;
  r->o = r->gstart;
  r->lit_pos = at.lit;
  r->first = static_cast<u32>(g * kGroupSeqs);
  r->count = s.n_ok - r->first < kGroupSeqs ? s.n_ok - r->first : kGroupSeqs;
  r->sub = 0;
  const DecodeStatus st = detail::load_sub_batch(team, c, r);
  if (st != DecodeStatus::kOk) return detail::fail_unit(team, q, r, st);
  r->phase = UnitRunner::kRounds;
  return detail::group_rounds(team, c, q, r);
}

// The buffer's status once every team has finished.
CS_HD inline DecodeStatus units_status(const UnitQueue* q) {
  return static_cast<DecodeStatus>(detail::q_read(&q->first_error) & 0xFF);
}

// ---- the host emulation ----------------------------------------------------------------------

// What execute_units_emulated saw.
struct UnitEmulationStats {
  u64 units = 0;         // units completed
  u64 waits = 0;         // times a team had to wait
  u64 out_of_order = 0;  // units completed while an earlier unit was not
  u64 stalls = 0;        // times no team could go on although some had work (a deadlock: never)
};

// Pass 3 for one buffer, as execute_steps, by `teams` (1 to 32) SerialTeams taking units from
// one UnitQueue. seed 0: the teams act in turn (one team: the units in order, never waiting);
// else each action goes to a team picked at random among those that can go on (a seeded xorshift),
// which completes units out of order wherever their sources allow and makes teams wait where
// they do not. Writes the steps' exec_* fields.
inline DecodeStatus execute_units_emulated(const u8* src, BlockStep* steps, u64 count, const u8* scratch, u8* dst,
                                           std::size_t dst_size, bool verify_checksum, u32 teams, u64 seed,
                                           UnitEmulationStats* stats) {
  UnitQueue q;
  reset_unit_ring(&q, 0, 1);
  resolve_units(steps, count, scratch, dst_size, &q);
  constexpr u32 kMaxTeams = 32;
  if (teams < 1) teams = 1;
  if (teams > kMaxTeams) teams = kMaxTeams;
  UnitRunner runners[kMaxTeams];
  u64 xxh[kMaxTeams][4];
  bool waiting[kMaxTeams] = {}, finished[kMaxTeams] = {};
  u64 rng = seed * 0x9E3779B97F4A7C15ull + 1;
  u32 turn = 0;
  for (;;) {
    u32 can[kMaxTeams];
    u32 n = 0;
    u32 left = 0;
    for (u32 t = 0; t < teams; ++t) {
      if (finished[t]) continue;
      ++left;
      if (!waiting[t] || runners[t].runnable(&q)) can[n++] = t;
    }
    if (left == 0) break;
    if (n == 0) {
      ++stats->stalls;
      break;
    }
    u32 t = can[turn++ % n];
    if (seed != 0) {
      rng ^= rng << 13;
      rng ^= rng >> 7;
      rng ^= rng << 17;
      t = can[rng % n];
    }
    const UnitContext c{src, steps, scratch, dst, dst_size, verify_checksum, xxh[t]};
    const UnitRunner& r = runners[t];
    const u32 phase = r.phase;
    const RunState st = run_units(SerialTeam{}, c, &q, &runners[t]);
    waiting[t] = st == RunState::kBlocked;
    finished[t] = st == RunState::kFinished;
    stats->waits += waiting[t];
    // Completed now (its slot is marked); at or past done_units, an earlier unit was not.
    if (phase != UnitRunner::kTake && r.phase == UnitRunner::kTake &&
        q.slot_unit[r.unit % kUnitRing] == r.unit + 1) {
      ++stats->units;
      stats->out_of_order += r.unit >= q.done_units;
    }
  }
  return units_status(&q);
}

}  // namespace cubestream::codec::logic::zstd
