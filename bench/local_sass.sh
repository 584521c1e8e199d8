#!/usr/bin/env bash
# SASS of a CUDA source for sm_90 on a machine without a GPU and without cuobjdump (the
# development machine has nvcc 13 only): nvcc writes the PTX, the ptxas and nvdisasm of Debian's
# non-free nvidia-cuda-toolkit (CUDA 11.8, downloaded once into $TOOLS, not installed) assemble
# and disassemble it. 11.8's ptxas is not 13's, so instruction counts are close, not equal, to
# what the GPU runs (docs/gpu_zstd.md, v3.11, counted the sequence loops this way).
#
#   bash bench/local_sass.sh src/cuda/zstd/zstd_batch.cu /tmp/zstd.sass [kernel-name-part]
#
# With a kernel name part, only that kernel's section is written, and its loops (a label and
# the last branch back to it) are listed with their lengths in SASS lines.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
SRC=${1:?CUDA source}
OUTF=${2:?output file}
KERNEL=${3:-}
TOOLS=${TOOLS:-/tmp/cs_cuda118}
if [ ! -x "$TOOLS/x/usr/bin/nvdisasm" ]; then
  mkdir -p "$TOOLS/lists/partial" "$TOOLS/deb"
  echo "deb http://deb.debian.org/debian bookworm non-free" >"$TOOLS/sources.list"
  o="-oDir::Etc::SourceList=$TOOLS/sources.list -oDir::Etc::SourceParts=/dev/null -oDir::State::Lists=$TOOLS/lists"
  apt-get $o update >/dev/null
  (cd "$TOOLS/deb" && apt-get $o download nvidia-cuda-toolkit >/dev/null)
  dpkg -x "$TOOLS"/deb/nvidia-cuda-toolkit_*.deb "$TOOLS/x"
fi
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
ptx=$(mktemp --suffix=.ptx)
cubin=$(mktemp --suffix=.cubin)
trap 'rm -f "$ptx" "$cubin"' EXIT
"$NVCC" -std=c++17 -O3 --expt-relaxed-constexpr -arch=sm_90 -ptx -Isrc -Iinclude -DNDEBUG -o "$ptx" "$SRC"
sed -i 's/^\.version .*/.version 7.8/' "$ptx"  # the newest PTX version 11.8's ptxas reads
# Registers and spills of each entry (or of the kernel asked for), from ptxas -v.
"$TOOLS/x/usr/bin/ptxas" -arch=sm_90 -O3 -v "$ptx" -o "$cubin" 2>&1 |
  awk -v k="$KERNEL" '/Compiling entry function/ {name=$0; sub(/.*function ./, "", name); sub(/. for .*/, "", name); show=index(name, k) > 0}
                      show && /spill|Used/ {sub(/^ptxas info *: */, ""); sub(/^ */, ""); print name ": " $0}' >&2
"$TOOLS/x/usr/bin/nvdisasm" -c "$cubin" >"$OUTF.all"
if [ -z "$KERNEL" ]; then
  mv "$OUTF.all" "$OUTF"
  exit 0
fi
awk -v k="$KERNEL" '/^[[:space:]]*\.text\./{f=index($0, k) > 0} f' "$OUTF.all" >"$OUTF"
rm -f "$OUTF.all"
# Loops: a label, and the last branch that jumps back to it from below.
awk '/^\.L_x_[0-9]+:/{lab=$1; sub(":", "", lab); at[lab]=NR}
     /BRA/ {for (l in at) if (index($0, "(" l ")") && NR > at[l]) last[l]=NR}
     END {for (l in last) printf "loop %s: lines %d-%d, %d SASS lines\n", l, at[l], last[l], last[l]-at[l]}' "$OUTF" | sort -t: -k2 -n
