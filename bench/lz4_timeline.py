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
    walks = collections.defaultdict(dict)
    last = collections.defaultdict(dict)
    pushed = collections.defaultdict(lambda: collections.defaultdict(dict))
    seg = collections.defaultdict(lambda: collections.defaultdict(dict))
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
        elif kind == "TLW" and len(n) == 6:
            walks[n[0]][n[1]] = (n[2], n[3], n[4], n[5])
        elif kind == "TLS" and len(n) == 3:
            last[n[0]][n[1]] = n[2]
        elif kind == "TLP" and len(n) == 4:
            pushed[n[0]][n[1]][n[2]] = n[3]
        elif kind == "TLK" and len(n) == 6:
            seg[n[0]][n[1]][n[2]] = (n[3], n[4], n[5])
    if not launches:
        print("no launches printed")
        return
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
        print(f"buffer {j} (launch {n}): {len(ks)} segments; a push every {med(push_pace):.1f} us, a segment done "
              f"every {med(done_pace):.1f} us; per segment (median us): take {med(take):.1f}, parse {med(parse):.1f}, "
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
