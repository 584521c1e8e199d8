// The segmented LZ4 path's compile-time shape: warps and windows of the walks, the table walk's
// variants (window ahead, pipeline, MarkRing) and their switches for A/B builds.
// (A private part of cuda/decode/lz4_segments.cu: lz4_segments_private.cuh says what that means.)
#pragma once

#include "cuda/decode/lz4_segments_private.cuh"

#include <cstddef>
#include <cstdint>

#include "codec/logic/lz4_segments.hpp"

namespace cubestream::cuda::detail {
namespace {

namespace logic = codec::logic;
using logic::DecodeStatus;

constexpr unsigned kWalkWarps = 4;
constexpr std::size_t kWalkWindow = 8192;
// The table walk fills the next window's table ahead (the helper warps, while warp 0 chains the
// current one: lz4_segment_walk_table's Team::Ahead), in a second window and table; its windows
// are then 6 KiB so that both fit the 48 KiB of static shared memory (one window of 8 KiB
// without; -DCS_LZ4_TABLE_WINDOW=n sets it). On the H200 (session 32) one era5-like chunk alone
// takes 18 % less kernel time than with the 8 KiB window and no window ahead
// (-DCS_LZ4_TABLE_AHEAD=0), the era5-like and mixed batches 4-5 % less, the synth fields 1 %.
// CS_LZ4_TABLE_PIPELINE=1 (the window ahead implied) walks with lz4_segment_walk_pipelined: the
// helpers also run each trusted chain's token pass while warp 0 chains the next (two token
// slots). Off: no faster than the window ahead alone on the batches and slower on one chunk
// (session 32, docs/gpu_decoders.md): the helpers' token pass plus the next window's fill
// outlast warp 0's chain.
#ifndef CS_LZ4_TABLE_PIPELINE
#define CS_LZ4_TABLE_PIPELINE 0
#endif
#ifndef CS_LZ4_TABLE_AHEAD
#define CS_LZ4_TABLE_AHEAD 1
#endif
// CS_LZ4_MARK_RING=0: warp 0 pushes every segment mark itself (MarkRing, lz4_table_walk.cuh), for the A/B.
#ifndef CS_LZ4_MARK_RING
#define CS_LZ4_MARK_RING 1
#endif
constexpr bool kTablePipeline = CS_LZ4_TABLE_PIPELINE != 0;
constexpr bool kTableAhead = CS_LZ4_TABLE_AHEAD != 0;
constexpr bool kMarkRingOn = kTableAhead && CS_LZ4_MARK_RING != 0;
static_assert(kTableAhead || !kTablePipeline, "the pipelined walk fills windows ahead");
constexpr unsigned kTableTokenSlots = kTablePipeline ? 2 : 1;
constexpr unsigned kTableBuffers = kTableAhead ? 2 : 1;
#ifdef CS_LZ4_TABLE_WINDOW
constexpr std::size_t kTableWindow = CS_LZ4_TABLE_WINDOW;
#else
constexpr std::size_t kTableWindow = kTableAhead ? 6144 : 8192;
#endif
static_assert(kTableWindow % 16 == 0, "windows are filled with 16-byte stores");
// Tokens the chain lists at a time (a window of the era5-like chunks holds ~150, of the synth
// fields ~500; more take several token passes).
constexpr std::uint32_t kTableTokens = 1024;
// Warps per buffer in the table walk (4: 9 % slower on era5-like chunks; 16: 28 % slower on the
// mixed batch, H100, session 15).
constexpr unsigned kTableWarps = 8;
static_assert(kTableWindow >= logic::kLz4TableWindowMin && kTableWindow <= logic::kLz4TableWindowMax, "table window");
constexpr unsigned kSegWarps = 8;
// The walks note each segment's runs and the workers parse them side by side, a lane a run
// (codec/logic/lz4_segments.hpp, Lz4Runs; session 35). -DCS_LZ4_RUNS=0: no notes, and each
// worker parses its segment one sequence after another, as before.
#ifndef CS_LZ4_RUNS
#define CS_LZ4_RUNS 1
#endif
constexpr bool kRunsOn = CS_LZ4_RUNS != 0;
// Lanes a literal takes when a worker copies a batch of 32 sequences' literals: 8 (the default)
// copies 4 literals at once, a group of 8 lanes each, kLitUnroll x kLitRounds loads (4 by
// default) in flight a lane before their stores (copy_literals); 4 or 16 copy 8 or 2 at once; 32 copies one literal after another with
// the whole warp (lane_copy_forward: ~35 instructions and two dependent load-store round trips
// for an era5-like literal of ~52 bytes). Measured on the H200 (session 36, kernel ms, medians of
// two rounds a call; docs/gpu_decoders.md): 8 lanes against 32, era5-like 4 MiB x256 6.98 / 7.51
// (0.929), mixed 64 KiB-1 MiB x1024 3.29 / 3.68 (0.893), synth fields x256 25.8 / 26.0, one
// era5-like chunk 4.08 / 4.12; with the word copy of matches on, 4 lanes were 1.05 / 1.07 of 8
// and 16 lanes 0.980 / 0.962 of 8 (era5-like / mixed; 16 not measured with byte matches).
#ifndef CS_LZ4_LIT_LANES
#define CS_LZ4_LIT_LANES 8
#endif
constexpr unsigned kLitLanes = CS_LZ4_LIT_LANES;
static_assert(kLitLanes == 4 || kLitLanes == 8 || kLitLanes == 16 || kLitLanes == 32, "lanes a literal");
// The byte copy of literals (kLitLanes < 32, without the word copy): a lane loads kLitUnroll
// bytes of its literal, kLitLanes apart, for each of kLitRounds rounds of 32 / kLitLanes
// literals, before it stores any (4 and 1 by default: the loop that session 36 measured with its
// lane counts; other values were not measured against it). The worker
// clocks of session 38 put the era5-like batch's literals at half the workers' cycles, ~207 k a
// segment for ~230 literals of ~52 bytes: with 8 lanes and 4 bytes a trip, a call of 32 literals
// takes 16 trips, each a dependent load-store round trip; 8 bytes a trip make it 8 (one trip a
// literal up to 64 bytes), and two rounds at once halve it again where the two rounds' literals
// are of like lengths (a trip ends with the longest literal of the lane's rounds). UNROLL=8 with
// ROUNDS=2 spills more (the fused kernel's workers 218/292 bytes against 170/240). Written in
// session 38 after its GPU calls; a host simulation of the loop (a second review's: every lane
// count, unroll 1-16, rounds 1, 2 and 4 against memcpy) found it exact. Measured on the H200
// (session 39, call 1, kernel ms, medians of two rounds, against the defaults; era5-like /
// mixed / synth fields / one chunk): UNROLL=8 0.988 / 0.962 / 1.026 / 1.001, with ROUNDS=2 as
// well 1.096 / 1.044 / 1.084 / 0.999; GPU suites (38 tests) and memcheck clean on both. Neither
// is the default: 8 gains on two batches and loses on the synth fields, and was not measured
// with session 39's fences.
#ifndef CS_LZ4_LIT_UNROLL
#define CS_LZ4_LIT_UNROLL 4
#endif
#ifndef CS_LZ4_LIT_ROUNDS
#define CS_LZ4_LIT_ROUNDS 1
#endif
constexpr std::uint32_t kLitUnroll = CS_LZ4_LIT_UNROLL, kLitRounds = CS_LZ4_LIT_ROUNDS;
static_assert(kLitUnroll >= 1 && kLitUnroll <= 16 && (kLitRounds == 1 || kLitRounds == 2 || kLitRounds == 4),
              "literal bytes a lane a trip: 1-16; rounds at once: 1, 2 or 4");
// -DCS_LZ4_LIT_WORDS=1 (with kLitLanes < 32): a literal's lanes take its aligned destination
// words, two at once, a word store for each word that is all literal and byte stores at its
// two edges (codec/logic/lz4_literal_words.hpp), instead of a byte a load and a store. Off: it
// was slower on every batch (session 38, call 1, against the default of then, kernel ms: era5-like
// x256 1.127, mixed 1.055, synth fields 1.031, one chunk 1.001; GPU tests and memcheck clean),
// presumably as the per-lane shifts and edge paths cost more than the byte copy's extra loads
// (not profiled).
#ifndef CS_LZ4_LIT_WORDS
#define CS_LZ4_LIT_WORDS 0
#endif
constexpr bool kLitWords = CS_LZ4_LIT_WORDS != 0 && kLitLanes < 32;
// The matches' copy. H200 kernel ms, medians of two rounds in one call each (session 37,
// docs/gpu_decoders.md; era5-like 4 MiB x256 / mixed 64 KiB-1 MiB x1024 / synth fields x256):
//  - CS_LZ4_OWN_FIRST=1 (the default): before a worker waits for the segment before, it copies
//    the matches of its segment that read only the segment's literals (own_pass,
//    logic::lz4_reads_own_literals), so that its link of the chain holds fewer groups (era5-like
//    chunks: 10.5 -> 6.8 a segment; synth fields 13.6-16.0 -> 11.8-15.0;
//    bench/micro/lz4_chain_matches.cpp). Against 0: 0.930 / 0.989 / 0.969. Not with the ready
//    pass's bits, which take those matches and more.
//  - CS_LZ4_MATCH_WORDS: 0 copies a short match byte by byte (up to 16 loads a lane); 1 loads the
//    aligned 4-byte words that hold its read range (codec/logic/lz4_match_words.hpp, at most 5);
//    2 (the default) does so for a group none of whose matches overlaps its output, bytes for
//    the others, the same choice on every lane (10-24 % of the synth fields' groups hold such a
//    match, 10 % of the era5-like ones'). The own pass takes words for every short match with 1
//    or 2.
//  - CS_LZ4_MATCH_WORD_STORES: with words, 0 (the default) stores the destination a byte at a
//    time from them (lz4_match_words_store_bytes: the same instructions on every lane), 1 in
//    whole words with byte and half stores at the edges, whose per-alignment paths a warp of
//    lanes at mixed alignments runs one after another.
//  With the own pass, against bytes (WORDS=0): WORDS=2 with wide stores 0.929-0.983 /
//  0.890-0.892 / 1.071-1.072 (calls 2 and 3), with byte stores 0.930 / 0.929 / 0.926 (call 3).
//  Without it, the wide stores: WORDS=1 0.929 / 0.913 / 1.160 and WORDS=2 0.916 / 0.911 / 1.061
//  (call 1; session 36 measured an earlier form of them at 0.91 / 0.90 / 1.15), so words stayed
//  off until the byte stores.
#ifndef CS_LZ4_OWN_FIRST
#define CS_LZ4_OWN_FIRST 1
#endif
constexpr bool kOwnFirst = CS_LZ4_OWN_FIRST != 0;
//  - CS_LZ4_LEVELS=1 (the default since session 38): the chained matches go by dependency
//    levels (logic::lz4_dep_level, computed before the wait) instead of groups, a level's matches
//    all at once, 32 a pass: 5.7 passes a segment where the groups were 6.8 on the era5-like
//    chunks, 8.9-10.2 where they were 11.8-15.0 on the synth fields
//    (bench/micro/lz4_chain_matches.cpp), and what decides a group's end (each match against the
//    group's earlier outputs) no longer runs after the wait. Against 0 (session 38, call 1):
//    1.016 / 1.007 / **0.612**, one chunk 1.000: the synth fields, whose chain's wait holds ~69 %
//    of the workers' cycles (the worker clocks, call 2), gain most; the era5-like batch, bound by
//    its literals' copies, pays 0.2-3.0 % (the two rounds), presumably the levels' computation.
//    Wider passes (64 or 128 records, a lane's loads before its stores, or 64 copied one after
//    the other) measured slower: 1.035-1.174 / 1.020-1.162 / 1.140-1.542 (calls 3 and 4).
//    Session 38's LEVELS=2 (the levels only where the segment before is not done when the own
//    pass ends, else the groups) measured slower (session 39, call 1, against 1: 1.062 / 0.993 /
//    1.070, one chunk 1.002): a segment whose predecessor is done when its own pass ends is not
//    off the chain's critical path, and its groups then make the link longer than its levels
//    would. It was removed after that call (code in e3efc34).
#ifndef CS_LZ4_LEVELS
#define CS_LZ4_LEVELS 1
#endif
static_assert(CS_LZ4_LEVELS == 0 || CS_LZ4_LEVELS == 1, "CS_LZ4_LEVELS: 0 or 1");
constexpr bool kLevelsOn = CS_LZ4_LEVELS != 0;
#ifndef CS_LZ4_MATCH_WORDS
#define CS_LZ4_MATCH_WORDS 2
#endif
static_assert(CS_LZ4_MATCH_WORDS >= 0 && CS_LZ4_MATCH_WORDS <= 2, "CS_LZ4_MATCH_WORDS: 0, 1 or 2");
constexpr bool kMatchWords = CS_LZ4_MATCH_WORDS != 0;
constexpr bool kMatchWordsPerGroup = CS_LZ4_MATCH_WORDS == 2;
#ifndef CS_LZ4_MATCH_WORD_STORES
#define CS_LZ4_MATCH_WORD_STORES 0
#endif
constexpr bool kMatchWordStores = CS_LZ4_MATCH_WORD_STORES != 0;
// The chain's wait on the segment before sleeps 64 ns a poll, doubling up to this (ns): each
// poll is ~5 instructions of issue slots the SM's other warps could use (the wait was ~26 % of
// the instructions executed in session 34's ncu).
// A segment's flag after its chained matches (segment_worker): CS_LZ4_FLAG_FENCE=1 has every
// lane fence (__threadfence: MEMBAR.SC.GPU and an invalidation of the SM's L1) before lane 0's
// release store (itself a MEMBAR.ALL.GPU and the store), two fences one after the other on each
// link of the chain; 0 (the default since session 39) leaves the release alone. Session 39's ncu
// of the synth fields put ~0.7 k cycles a link on each of the two (the link ~23.6 k cycles).
// Measured on the H200 (session 39, call 3, kernel ms, medians of two rounds, against 1 with the
// acq_rel fence after the wait; era5-like 4 MiB x256 / mixed 64 KiB-1 MiB x1024 / synth fields
// x256, one chunk): 0 alone 1.015 / 0.989 / 0.974 / 1.002; 0 with fence.acquire after the polls
// (CS_LZ4_POLL_FENCE=1, now the default too) 0.995 / 0.981 / 0.952 / 1.000; 0 with the chain's
// acquire load (=2) 1.028 / 0.980 / 0.951 / 0.998. GPU suites passed on all three.
#ifndef CS_LZ4_FLAG_FENCE
#define CS_LZ4_FLAG_FENCE 0
#endif
constexpr bool kFlagFence = CS_LZ4_FLAG_FENCE != 0;
// -DCS_LZ4_FLAG_BARRIER=1: the warp meets on its own named barrier (warp_barrier) instead of
// __syncwarp before lane 0's release of the flag. A second review (session 39) found the release's
// cumulativity over the other lanes' writes resting on bar.warp.sync's written promise to order
// memory among the warp's threads, which the PTX memory model's list of synchronizing operations
// does not include (nor did the lanes' fences make it formal: a fence joins a release pattern
// only with a strong write by its own thread); barrier.sync is on that list. Off: measured on
// the H200 (session 39, call 4, against call 3's measurement of the same default in another
// call, so only roughly) synth fields x256 13.66-13.68 ms against 13.42-13.45 (~1.7 % slower),
// era5-like x256 6.09 against 6.06-6.21, mixed 3.03-3.05 against 3.01-3.03; GPU suites (38
// tests) passed. The default keeps __syncwarp, whose promise the CUDA programming guide states
// and on which the code's other lane-to-lane hand-overs rest too (next_segment, the ready pass).
// Its 16 named barriers a block (ptxas) put ncu's barrier limit at 4 blocks an SM (12 with the
// default's 5, apparently 64 a SM), the register limit already.
#ifndef CS_LZ4_FLAG_BARRIER
#define CS_LZ4_FLAG_BARRIER 0
#endif
constexpr bool kFlagBarrier = CS_LZ4_FLAG_BARRIER != 0;
static_assert(kSegWarps <= 8 && kTableWarps <= 8, "warp_barrier: named barriers 8-15, one a warp");
#ifndef CS_LZ4_CHAIN_SLEEP_MAX
#define CS_LZ4_CHAIN_SLEEP_MAX 64
#endif
constexpr unsigned kChainSleepMax = CS_LZ4_CHAIN_SLEEP_MAX;
static_assert(kChainSleepMax >= 64, "the chain's first sleep is 64 ns");
// Segments of a split-walked buffer in the queue or in work at a time (see split_job; at most a
// warp's lanes, which push the first ones).
constexpr std::uint32_t kSplitInFlight = 32;

}  // namespace
}  // namespace cubestream::cuda::detail
