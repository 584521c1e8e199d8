#!/usr/bin/env bash
# Builds the libFuzzer targets with clang, ASan and UBSan into build-fuzz/ and runs each for
# a fixed time (first argument, seconds; default 20) from its seed corpus. A crash, leak or
# sanitizer report fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCUBESTREAM_FUZZ=ON \
  -DCUBESTREAM_CUDA=OFF -DCUBESTREAM_BUILD_PYTHON=OFF -DCUBESTREAM_BUILD_TESTS=OFF >/dev/null
ninja -C build-fuzz -j"$(nproc)" fuzz_targets
for target in build-fuzz/tests/fuzz/fuzz_*; do
  [ -x "$target" ] || continue
  name=$(basename "$target")
  corpus_src=tests/fuzz/corpus/${name#fuzz_}
  corpus=build-fuzz/corpus/$name
  mkdir -p "$corpus"
  [ -d "$corpus_src" ] && cp -n "$corpus_src"/* "$corpus"/ 2>/dev/null || true
  echo "fuzz: $name for ${seconds}s"
  "$target" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 -timeout=10 -print_final_stats=0 "$corpus" \
    >"build-fuzz/$name.log" 2>&1 || { tail -50 "build-fuzz/$name.log"; echo "fuzz: $name FAILED"; exit 1; }
  grep -E "^#[0-9]+.*DONE" "build-fuzz/$name.log" | tail -1 || true
done
echo "fuzz: all targets clean"
