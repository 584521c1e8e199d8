#!/usr/bin/env python3
"""Helper of bench/objstore_bench.sh: reads slices of the nginx access log the benchmark's
nginx writes (one line per request: `$connection|$request_method|$request_uri|$http_range|
$status|$body_bytes_sent`), turns the requests of one cubestream read into curl inputs, and
prints the final Markdown table.

    objstore_log.py stats SLICE                       -> "requests bytes connections bad_status"
    objstore_log.py replay SLICE_R1 SLICE_R2 BASE OUT -> writes OUT.args (xargs: one curl per
                                                         request) and OUT.curlrc (curl -K with
                                                         --parallel); prints "requests bytes"
    objstore_log.py fetch ARGS STORE_URL              -> fetches ARGS's requests one after the
                                                         other through cubestream's HTTP store
                                                         (Python Store.get_range / size, no
                                                         decode); prints "seconds"
    objstore_log.py table RESULTS.tsv                 -> Markdown table of medians

`replay` gets the log slices of two runs of `cubestream bench read`, with --repeat 1 and
--repeat 2 (each read once more as warm-up). The second has K more lines than the first: the
requests of one timed read, i.e. its last K lines (the index reads of a sharded store happen
in the warm-up only; the shard index cache keeps them).
"""
import statistics
import sys


def parse(path):
    out = []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            conn, method, uri, rng, status, sent = line.split("|")
            out.append((conn, method, uri, rng, int(status), int(sent)))
    return out


METADATA = ("zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata")


def stats(path):
    # bad_status leaves out 404 on metadata names: opening a v2 array probes zarr.json first.
    reqs = parse(path)
    bad = sum(1 for r in reqs if r[4] not in (200, 206) and not (r[4] == 404 and r[2].endswith(METADATA)))
    print(len(reqs), sum(r[5] for r in reqs), len({r[0] for r in reqs}), bad)


def replay(p1, p2, base, out):
    r1, r2 = parse(p1), parse(p2)
    k = len(r2) - len(r1)
    if k <= 0:
        sys.exit(f"replay: second run has {len(r2)} requests, first {len(r1)}: cannot tell the timed read apart")
    timed = r2[-k:]
    bad = [r for r in timed if r[4] not in (200, 206)]
    if bad:
        sys.exit(f"replay: the timed read has requests with status {bad[0][4]}: {bad[0]}")
    with open(out + ".args", "w") as a, open(out + ".curlrc", "w") as c:
        for i, (_, method, uri, rng, _, _) in enumerate(timed):
            url = base + uri
            words = []
            if method == "HEAD":
                words.append("-I")
            elif method != "GET":
                sys.exit(f"replay: unexpected method {method}")
            if rng != "-":
                if not rng.startswith("bytes=") or "," in rng:
                    sys.exit(f"replay: unexpected Range header {rng!r}")
                words += ["-r", rng[len("bytes="):]]
            a.write(" ".join(words + [url]) + "\n")
            if i:
                c.write("next\n")
            c.write(f'url = "{url}"\noutput = "/dev/null"\n')
            if method == "HEAD":
                c.write("head\n")
            if rng != "-":
                c.write(f'range = "{rng[len("bytes="):]}"\n')
    print(k, sum(r[5] for r in timed))


def fetch(args_path, store_url):
    # One thread: Store.get_range keeps the GIL, so Python threads would not overlap requests.
    import time
    import urllib.parse

    import cubestream

    prefix = urllib.parse.urlparse(store_url).path.rstrip("/") + "/"
    reqs = []
    for line in open(args_path):
        w = line.split()
        key = urllib.parse.urlparse(w[-1]).path
        assert key.startswith(prefix), (key, prefix)
        key = key[len(prefix):]
        if w[0] == "-I":
            reqs.append((key, None))
        elif w[0] == "-r":
            lo, hi = w[1].split("-")
            reqs.append((key, (int(lo), int(hi) - int(lo) + 1 if hi else -1)))
        else:
            reqs.append((key, (0, -1)))
    store = cubestream.open_store(store_url)
    t0 = time.perf_counter()
    for key, rng in reqs:
        if rng is None:
            store.size(key)
        else:
            store.get_range(key, *rng)
    print(time.perf_counter() - t0)


def table(path):
    # RESULTS.tsv: store method threads seconds requests bytes decoded_bytes connections
    rows = {}
    order = []
    with open(path) as f:
        for line in f:
            store, method, n, sec, reqs, nbytes, dec, conns = line.split()
            key = (store, int(n), method)
            if key not in rows:
                rows[key] = []
                order.append(key)
            rows[key].append((float(sec), int(reqs), int(nbytes), int(dec), int(conns)))
    names = {"cubestream": "cubestream `bench read`", "curl-xargs": "curl, one process per request (`xargs -P N`)",
             "cubestream-fetch": "cubestream HTTP store, fetch only (Python `Store.get_range`, 1 thread)",
             "curl-parallel": "curl, one process, `--parallel-immediate --parallel-max N` (keep-alive)"}
    print("| store | N | client | requests | MB moved | s (median) | GB/s moved | requests/s | GB/s decoded | connections | vs cubestream |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for store in sorted({k[0] for k in order}, key=lambda s: [k[0] for k in order].index(s)):
        for n in sorted({k[1] for k in order if k[0] == store}):
            base = None
            for method in ("cubestream", "cubestream-fetch", "curl-xargs", "curl-parallel"):
                v = rows.get((store, n, method))
                if not v:
                    continue
                sec = statistics.median(x[0] for x in v)
                reqs = statistics.median(x[1] for x in v)
                nbytes = statistics.median(x[2] for x in v)
                dec = statistics.median(x[3] for x in v)
                conns = statistics.median(x[4] for x in v)
                gbps = nbytes / sec / 1e9
                if method == "cubestream":
                    base = gbps
                rel = f"{gbps / base:.2f}x" if base else ""
                dec_s = f"{dec / sec / 1e9:.2f}" if dec else ""
                print(f"| {store} | {n} | {names[method]} | {reqs:.0f} | {nbytes / 1e6:.1f} | {sec:.3f} | {gbps:.2f} | "
                      f"{reqs / sec:.0f} | {dec_s} | {conns:.0f} | {rel} |")
    counts = sorted({len(v) for v in rows.values()})
    print(f"\nmedians of {'/'.join(map(str, counts))} interleaved rounds per row")


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "stats":
        stats(sys.argv[2])
    elif cmd == "replay":
        replay(*sys.argv[2:6])
    elif cmd == "fetch":
        fetch(sys.argv[2], sys.argv[3])
    elif cmd == "table":
        table(sys.argv[2])
    else:
        sys.exit(__doc__)
