"""Summary of bench/lz4_worker_clocks.sh's WKC lines (one a worker warp of a launch):
WKC block segments run_segments sequences_in_runs records idle parse lits ready wait match
(cycles). Prints each phase's share of all the workers' cycles, cycles a segment by phase (over
all segments), and the spread over warps of parse and lits cycles a segment."""
import statistics
import sys

PHASES = ["idle", "parse", "lits", "ready", "wait", "match"]


def main(path):
    rows = []
    for line in open(path):
        f = line.split()
        if len(f) != 12 or f[0] != "WKC":
            continue
        v = [int(x) for x in f[1:]]
        rows.append({"block": v[0], "segs": v[1], "runs": v[2], "seqs": v[3], "recs": v[4],
                     **{p: v[5 + i] for i, p in enumerate(PHASES)}})
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
    busy = [r for r in rows if r["segs"] >= 4]
    for p in ("parse", "lits", "match"):
        if busy:
            per = sorted(r[p] / r["segs"] for r in busy)
            q = lambda x: per[min(len(per) - 1, int(x * len(per)))]
            print(f"  {p} cycles a segment over warps with 4+ segments: median {statistics.median(per):.0f}, "
                  f"10 % {q(0.1):.0f}, 90 % {q(0.9):.0f}")


if __name__ == "__main__":
    main(sys.argv[1])
