# Sourced by the bench scripts that count inside the kernels with a patch (lz4_walk_clocks.sh,
# lz4_timeline.sh, lz4_worker_clocks.sh): the counters stay out of the library's source, so
# each run builds gpu_decode_bench from a patched copy of the working tree, then runs the cases.
#
#   patched_bench_build TREE PATCH LOG
#
# copies the working tree (the current directory: the repository root; build folders and .git
# left out) to TREE, applies PATCH there (patch -p1), configures TREE/build with CUDA on, the
# tests and Python off and CUDA_FLAGS as its CUDA flags, and builds gpu_decode_bench, cmake's and
# ninja's output into LOG. Returns 1, having said why on stderr, when the patch does not apply
# or the build fails (then the log's error lines).
patched_bench_build() {
  local tree=$1 patch_file=$2 build_log=$3
  rm -rf "$tree" && mkdir -p "$tree" || return 1
  tar --exclude='./build*' --exclude=./.git -cf - . | tar -xf - -C "$tree"
  (cd "$tree" && patch -p1 -s <"$patch_file") || { echo "$patch_file does not apply" >&2; return 1; }
  local extra=()
  [ -d .devdeps/usr/include ] && extra=(-DCMAKE_CXX_FLAGS=-I$PWD/.devdeps/usr/include)
  cmake -S "$tree" -B "$tree/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUBESTREAM_CUDA=ON -DCUBESTREAM_BUILD_PYTHON=OFF \
    -DCUBESTREAM_BUILD_TESTS=OFF "-DCMAKE_CUDA_FLAGS=${CUDA_FLAGS:-}" "${extra[@]}" >"$build_log" 2>&1 &&
    ninja -C "$tree/build" gpu_decode_bench >>"$build_log" 2>&1 ||
    { echo "the build failed:" >&2; grep -E "error" "$build_log" | head >&2; return 1; }
}

# patched_bench_cases TREE PATTERN PREFIX SUMMARY OUTFILE
#
# runs TREE/build/gpu_decode_bench once per case of CASES (CS_BENCH_CASE texts separated by ';',
# numbered n from 1) with CS_BENCH_CODEC=lz4 CS_BENCH_REPEAT=1 (CS_BENCH_ERA5_COUNTS as set, else
# 1), 300 s at most each: the lines matching PATTERN (an extended regex) go to $OUT/PREFIX_<n>.txt
# (gzipped afterwards), the others to $OUT/bench_<n>.txt; OUTFILE receives "## case" and the
# output of the python script SUMMARY run on the kept lines.
patched_bench_cases() {
  local tree=$1 pattern=$2 prefix=$3 summary=$4 outfile=$5 c n=0
  local cases
  IFS=';' read -r -a cases <<<"$CASES"
  for c in "${cases[@]}"; do
    n=$((n + 1))
    printf '[%s %s] case %s: %s\n' "$prefix" "$(date +%H:%M:%S)" "$n" "'$c'"
    echo "## $c" >>"$outfile"
    CS_BENCH_CODEC=lz4 CS_BENCH_REPEAT=1 CS_BENCH_ERA5_COUNTS=${CS_BENCH_ERA5_COUNTS:-1} CS_BENCH_CASE="$c" timeout 300 \
      "$tree/build/gpu_decode_bench" >"$OUT/run.tmp" 2>&1
    printf '[%s %s] rc=%s\n' "$prefix" "$(date +%H:%M:%S)" "$?"
    grep -E "$pattern" "$OUT/run.tmp" >"$OUT/${prefix}_$n.txt"
    grep -vE "$pattern" "$OUT/run.tmp" >"$OUT/bench_$n.txt"
    /usr/bin/python3 "$summary" "$OUT/${prefix}_$n.txt" | tee -a "$outfile"
    gzip -f "$OUT/${prefix}_$n.txt"
  done
  rm -f "$OUT/run.tmp"
}
