"""Summary of bench/lz4_worker_clocks.sh's WKC lines (one a worker warp of a launch):
WKC block segments run_segments sequences_in_runs records chained passes idle parse lits ready
wait match flag (cycles; lines of the patch before session 38, without chained, passes and flag,
are read too). Prints each phase's share of all the workers' cycles, cycles a segment by phase
(over all segments), the chained records and their passes (levels' passes or groups) a segment
with the cycles a pass, and the spread over warps of parse, lits and match cycles a segment."""
import statistics
import sys

PHASES = ["idle", "parse", "lits", "ready", "wait", "match", "flag"]


def main(path):
    rows = []
    for line in open(path):
        f = line.split()
        if not f or f[0] != "WKC" or len(f) not in (12, 15):
            continue
        v = [int(x) for x in f[1:]]
        if len(f) == 12:  # (before session 38: match held the flag too)
            v = v[:5] + [0, 0] + v[5:] + [0]
        rows.append({"block": v[0], "segs": v[1], "runs": v[2], "seqs": v[3], "recs": v[4], "chain": v[5],
                     "passes": v[6], **{p: v[7 + i] for i, p in enumerate(PHASES)}})
    if not rows:
        print("no WKC lines")
        return
    segs = sum(r["segs"] for r in rows)
    total = sum(r[p] for r in rows for p in PHASES)
    print(f"warps {len(rows)} (all launches), segments {segs} ({sum(r['runs'] for r in rows)} parsed in runs, "
          f"{sum(r['seqs'] for r in rows) / max(1, sum(r['runs'] for r in rows)):.1f} sequences each), "
          f"records a segment {sum(r['recs'] for r in rows) / segs:.1f}")
    for p in PHASES:
        c = sum(r[p] for r in rows)
        print(f"  {p:6s} {100 * c / total:5.1f} % of the workers' cycles, {c / segs:9.0f} cycles a segment")
    passes = sum(r["passes"] for r in rows)
    if passes:
        print(f"  chained records a segment {sum(r['chain'] for r in rows) / segs:.1f}, passes a segment "
              f"{passes / segs:.2f}, match cycles a pass {sum(r['match'] for r in rows) / passes:.0f}")
    busy = [r for r in rows if r["segs"] >= 4]
    for p in ("parse", "lits", "match"):
        if busy:
            per = sorted(r[p] / r["segs"] for r in busy)
            q = lambda x: per[min(len(per) - 1, int(x * len(per)))]
            print(f"  {p} cycles a segment over warps with 4+ segments: median {statistics.median(per):.0f}, "
                  f"10 % {q(0.1):.0f}, 90 % {q(0.9):.0f}")


if __name__ == "__main__":
    main(sys.argv[1])
