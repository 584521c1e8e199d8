#!/usr/bin/env python3
"""Merges read_bench.py results (RESULTS_DIR/*.json) into one markdown report and one JSON file,
with a description of the machine they were measured on.

    python3 bench/summarize.py --results /tmp/cs_bench --md $OUT/bench.md --json $OUT/bench.json
"""

import argparse
import glob
import json
import os
import platform
import subprocess
import sys
import time

HEADER = ("| store | codec | ratio | tool | threads | GB/s median | GB/s range | vs TS |\n"
          "|---|---|---|---|---|---|---|---|")


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              text=True, timeout=20).stdout.strip()
    except Exception:  # noqa: BLE001
        return ""


def machine():
    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gb = None
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal"):
                mem_gb = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    info = {"host": platform.node(), "os": sh(". /etc/os-release 2>/dev/null && echo $PRETTY_NAME"),
            "kernel": platform.release(), "cpu": cpu, "cpu_count": os.cpu_count(), "mem_gb": mem_gb,
            "gpu": sh("nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader"),
            "python": sys.version.split()[0],
            "git": sh("git rev-parse --short HEAD 2>/dev/null") or None,
            "git_dirty": bool(sh("git status --porcelain 2>/dev/null | head -1")) or None}
    for mod in ("numpy", "tensorstore"):
        try:
            info[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001
            info[mod] = None
    return info


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--results", required=True)
    p.add_argument("--md", required=True)
    p.add_argument("--json", required=True)
    p.add_argument("--title", default="cubestream whole-array read benchmark")
    p.add_argument("--note", action="append", default=[], help="extra line for the report (repeatable)")
    args = p.parse_args()

    results = []
    for path in sorted(glob.glob(os.path.join(args.results, "*.json"))):
        try:
            r = json.load(open(path))
        except ValueError:
            continue
        if isinstance(r, dict) and "label" in r and "bytes_decoded" in r:
            results.append(r)
    info = machine()
    report = {"title": args.title, "generated": time.strftime("%Y-%m-%dT%H:%M:%S"), "machine": info,
              "notes": args.note, "results": results}
    with open(args.json, "w") as f:
        json.dump(report, f, indent=1)

    lines = [f"# {args.title}", "",
             f"Measured {report['generated']} on {info['host']}: {info['os']}, {info['cpu']} "
             f"({info['cpu_count']} logical CPUs), {info['mem_gb']} GB RAM, GPU {info['gpu'] or 'none'}; "
             f"Python {info['python']}, NumPy {info['numpy']}, TensorStore {info['tensorstore']}"
             + (f"; cubestream git {info['git']}{' (dirty)' if info['git_dirty'] else ''}" if info['git'] else "")
             + ".", "",
             "Whole-array reads of (T, 721, 1440) float32, one chunk per time step, from the page cache "
             "(warmed first). GB/s of decoded data (1e9 bytes), median of interleaved rounds; "
             "'vs TS' = GB/s / GB/s of TensorStore writing into a preallocated buffer (the CLI also "
             "reads into one reused buffer), or of TensorStore read() where the former did not run. "
             "See bench/README.md.", "",
             HEADER]
    for r in results:
        md = os.path.join(args.results, f"{r['label']}.md")
        if os.path.exists(md):
            lines += [l for l in open(md).read().splitlines() if l.strip()]
    lines.append("")
    for r in results:
        extra = []
        if r.get("page_cache_read_gbps_1thread_python"):
            extra.append(f"page-cache read of its files (1 thread, Python) "
                         f"{r['page_cache_read_gbps_1thread_python']:.2f} GB/s")
        cip = r.get("cubestream_in_process") or {}
        if cip.get("codec_single_thread"):
            extra.append(f"codec single thread (CLI): {json.dumps(cip['codec_single_thread'])}")
        gi = r.get("generator_info") or {}
        if gi.get("seconds"):
            extra.append(f"store written in {gi['seconds']:.1f} s")
        extra.append(f"{r['bytes_decoded'] / 1e9:.2f} GB decoded, {r.get('bytes_stored', 0) / 1e9:.2f} GB stored "
                     f"in {r.get('chunk_files')} chunks")
        lines.append(f"- {r['label']}: " + "; ".join(extra))
        for e in r.get("errors") or []:
            lines.append(f"  - ERROR: {e}")
    for n in args.note:
        lines.append(f"- {n}")
    with open(args.md, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
