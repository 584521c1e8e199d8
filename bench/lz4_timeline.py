#!/usr/bin/env python3
"""Summarises the stamps of bench/lz4_timeline.patch (see bench/lz4_timeline.sh): per launch of
the fused kernel, when its buffers' walks and segment chains end; for the last launch, the
sampled buffers' chains segment by segment.

Lines (times are %globaltimer nanoseconds; j a buffer, k a segment, n the launch):
  TLL n start buffers        TLW n j walk_start walk_end segments ring
  TLS n j last_done          TLP n j k pushed          TLK n j k taken parsed done
"""
import collections
import statistics
import sys


def pct(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, int(q * (len(v) - 1) + 0.5))]


def main(path):
    launches = {}
    raw = collections.defaultdict(list)  # kind -> printed fields after the kind
    for line in open(path):
        f = line.split()
        if len(f) < 2:
            continue
        try:
            n = [int(x) for x in f[1:]]
        except ValueError:
            continue
        kind = f[0]
        if kind == "TLL" and len(n) == 3:
            launches[n[0]] = (n[1], n[2])
        elif (kind, len(n)) in (("TLW", 6), ("TLS", 3), ("TLP", 4), ("TLK", 6)):
            raw[kind].append(n)
    if not launches:
        print("no launches printed")
        return
    # A stamp carries the launch number its thread read when it printed; a block that printed
    # before the first block bumped the number would carry the launch before. Each stamp is
    # filed under the latest launch that started at or before its time instead, and the
    # disagreements counted.
    starts = sorted((t, n) for n, (t, _) in launches.items())

    def launch_at(t):
        k = None
        for t0, n in starts:
            if t0 > t:
                break
            k = n
        return k

    moved = 0
    walks = collections.defaultdict(dict)
    last = collections.defaultdict(dict)
    pushed = collections.defaultdict(lambda: collections.defaultdict(dict))
    seg = collections.defaultdict(lambda: collections.defaultdict(dict))
    for kind, rows in raw.items():
        for n in rows:
            t = n[{"TLW": 2, "TLS": 2, "TLP": 3, "TLK": 3}[kind]]
            m = launch_at(t)
            moved += m != n[0]
            if m is None:
                continue
            if kind == "TLW":
                walks[m][n[1]] = (n[2], n[3], n[4], n[5])
            elif kind == "TLS":
                last[m][n[1]] = n[2]
            elif kind == "TLP":
                pushed[m][n[1]][n[2]] = n[3]
            else:
                seg[m][n[1]][n[2]] = (n[3], n[4], n[5])
    if moved:
        print(f"({moved} stamps filed under another launch than the one they printed, or before any launch)")
    ms = lambda ns: ns / 1e6
    print("| launch | buffers | span ms | walk end ms (median / 90 % / max) | walk ms (median / max) | "
          "latest walk start ms | lag ms (median / 90 % / max) | last buffer: walk end, lag ms |")
    print("|---|---|---|---|---|---|---|---|")
    for n in sorted(launches):
        t0, nbuf = launches[n]
        w = walks.get(n, {})
        d = last.get(n, {})
        if not w:
            print(f"| {n} | {nbuf} | (no walks printed) | | | | | |")
            continue
        ends = [ms(e - t0) for (_, e, _, _) in w.values()]
        durs = [ms(e - s) for (s, e, _, _) in w.values()]
        starts = [ms(s - t0) for (s, _, _, _) in w.values()]
        lags = [ms(d[j] - w[j][1]) for j in d if j in w]
        done = [ms(t - t0) for t in d.values()]
        span = max(done + ends)
        jl = max(d, key=lambda j: d[j]) if d else max(w, key=lambda j: w[j][1])
        last_txt = (f"{jl}: {ms(w[jl][1] - t0):.3f}, {ms(d[jl] - w[jl][1]):.3f}" if jl in d and jl in w
                    else f"{jl}: -")
        lag_txt = (f"{statistics.median(lags):.3f} / {pct(lags, 0.9):.3f} / {max(lags):.3f}" if lags else "-")
        print(f"| {n} | {nbuf} ({len(w)} walked, {len(d)} chains) | {span:.3f} | "
              f"{statistics.median(ends):.3f} / {pct(ends, 0.9):.3f} / {max(ends):.3f} | "
              f"{statistics.median(durs):.3f} / {max(durs):.3f} | {max(starts):.3f} | {lag_txt} | {last_txt} |")
    n = max(launches)
    t0 = launches[n][0]
    stamps = sorted({v[0] for v in walks.get(n, {}).values()} | {v[1] for v in walks.get(n, {}).values()} |
                    set(last.get(n, {}).values()))
    gaps = [b - a for a, b in zip(stamps, stamps[1:]) if b > a]
    if gaps:
        print(f"launch {n}: smallest gap between distinct stamps {min(gaps)} ns (the timer's step is at most that)")
    w = walks.get(n, {})
    sampled = [ms(e - s0) for j, (s0, e, _, _) in w.items() if j % 64 == 0]
    others = [ms(e - s0) for j, (s0, e, _, _) in w.items() if j % 64 != 0]
    if sampled and others:
        print(f"launch {n}: walk ms, median of the sampled buffers (j % 64 == 0, whose pushes also print) "
              f"{statistics.median(sampled):.3f} against {statistics.median(others):.3f} for the others")
    for j in sorted(seg.get(n, {})):
        s = seg[n][j]
        p = pushed[n].get(j, {})
        ks = sorted(s)
        if len(ks) < 2:
            continue
        us = lambda ns: ns / 1e3
        push_pace = [us(p[k] - p[k - 1]) for k in ks if k in p and k - 1 in p]
        done_pace = [us(s[k][2] - s[k - 1][2]) for k in ks if k - 1 in s]
        take = [us(s[k][0] - p[k]) for k in ks if k in p]
        parse = [us(s[k][1] - s[k][0]) for k in ks]
        wait = [us(max(0, s[k - 1][2] - s[k][1])) for k in ks if k - 1 in s]
        own = [us(s[k][2] - max(s[k][1], s[k - 1][2])) for k in ks if k - 1 in s]
        med = lambda v: statistics.median(v) if v else float("nan")
        kl = ks[-1]
        lag = ms(s[kl][2] - p[kl]) if kl in p else float("nan")
        pk = sorted(k for k in ks if k in p)
        mean_push = us(p[pk[-1]] - p[pk[0]]) / (len(pk) - 1) if len(pk) > 1 else float("nan")
        mean_done = us(s[ks[-1]][2] - s[ks[0]][2]) / (len(ks) - 1)
        print(f"buffer {j} (launch {n}): {len(ks)} segments; a push every {med(push_pace):.1f} us (median; mean "
              f"{mean_push:.1f}: the ring's helper pushes in bursts), a segment done every {med(done_pace):.1f} us "
              f"(mean {mean_done:.1f}); per segment (median us): take {med(take):.1f}, parse {med(parse):.1f}, "
              f"wait {med(wait):.1f}, own copy {med(own):.1f}; the last segment done {lag:.3f} ms after its push")
        print("  k: pushed / taken / parsed / done, ms from the kernel's start")
        shown = ks[:: max(1, len(ks) // 10)]
        if shown[-1] != kl:
            shown.append(kl)
        for k in shown:
            pk = f"{ms(p[k] - t0):.3f}" if k in p else "-"
            print(f"  {k}: {pk} / {ms(s[k][0] - t0):.3f} / {ms(s[k][1] - t0):.3f} / {ms(s[k][2] - t0):.3f}")


if __name__ == "__main__":
    main(sys.argv[1])
