#!/usr/bin/env bash
# Builds the libFuzzer targets with clang, ASan and UBSan into build-fuzz/ and runs each for
# a fixed time (first argument, seconds; default 20) from its seed corpus (codec goldens,
# real metadata documents, valid shards: tests/fuzz/seed_corpus.py). A crash, leak, timeout
# or sanitizer report fails the run and prints the reproducer's path.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCUBESTREAM_FUZZ=ON \
  -DCUBESTREAM_CUDA=OFF -DCUBESTREAM_BUILD_PYTHON=OFF -DCUBESTREAM_BUILD_TESTS=OFF >/dev/null
ninja -C build-fuzz -j"$(nproc)" fuzzers
rm -rf build-fuzz/corpus
/usr/bin/python3 tests/fuzz/seed_corpus.py build-fuzz/corpus >/dev/null
for target in build-fuzz/tests/fuzz/fuzz_*; do
  [ -x "$target" ] || continue
  name=$(basename "$target")
  corpus=build-fuzz/corpus/${name#fuzz_}
  corpus=${corpus/codec_/}
  mkdir -p "$corpus"
  log=build-fuzz/$name.log
  if "$target" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 -timeout=10 \
      -artifact_prefix=build-fuzz/"$name"- "$corpus" >"$log" 2>&1; then
    echo "fuzz: $name clean for ${seconds}s ($(grep -oE '#[0-9]+' "$log" | tail -1 | tr -d '#') runs)"
  else
    tail -60 "$log"
    echo "fuzz: $name FAILED (log $log)"
    exit 1
  fi
done
echo "fuzz: all targets clean"
