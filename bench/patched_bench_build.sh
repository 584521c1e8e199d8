# Sourced by the bench scripts that count inside the kernels with a patch (lz4_walk_clocks.sh,
# lz4_timeline.sh, lz4_worker_clocks.sh): the counters stay out of the library's source, so each run builds
# gpu_decode_bench from a patched copy of the working tree.
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
