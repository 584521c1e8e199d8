#!/usr/bin/env bash
# The main job on a fresh machine, end to end: install, build, synthesise a small ERA5-like
# store (`cubestream synth`: six surface variables on the 1.5-degree grid, Zarr v3, zstd,
# sharded), compute its normalisation statistics, then train the U-Net of examples/train_unet.py
# for a few steps on it with the best path this machine has (GPU decode and assembly when a GPU
# and a CUDA build of PyTorch are present, else host decode on the CPU), beside the synthetic-
# data ceiling (the same model fed random batches), and print throughput and where time went.
#
# Environment: DEMO_DIR (default build/demo), TIMES (time steps, default 96), EPOCHS (measured
# epochs, default 1); for machines set up otherwise: SKIP_SETUP=1 (no install, no build),
# BUILD_DIR (default build), PY (default /usr/bin/python3, Debian's, which sees python3-torch).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${SKIP_SETUP:-0}" != 1 ]; then
  scripts/setup.sh --train
  scripts/build.sh
fi
py=${PY:-/usr/bin/python3}
build=${BUILD_DIR:-build}
dir=${DEMO_DIR:-build/demo}
store=$dir/era5_demo.zarr
mkdir -p "$dir"

echo
echo "== cubestream synth $store"
"$build"/cubestream synth "$store" --grid 1.5 --times "${TIMES:-96}" --variables surface --format 3 --shards time=32 \
  --overwrite --no-progress
echo
echo "== cubestream stats $store"
"$build"/cubestream stats "$store"

if "$py" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  loader=cubestream-gpu device=cuda batch=16
else
  loader=cubestream-cpu device=cpu batch=8
  echo
  echo "(no GPU visible to PyTorch: decoding and training on the CPU; a tiny run, for the path, not for speed)"
fi
train() {
  PYTHONPATH="$build"/python "$py" examples/train_unet.py --store "$store" --grid 121x240 --batch-size "$batch" \
    --device "$device" --epochs "${EPOCHS:-1}" --warmup-epochs 1 "$@"
}
echo
echo "== train the U-Net (ResNet-18 encoder), next-step prediction of 6 variables: loader $loader on $device"
train --loader "$loader" --json "$dir/train_$loader.json"
echo
echo "== the same model on random batches already in memory (the ceiling: no loading at all)"
train --loader synthetic --json "$dir/train_synthetic.json"
echo
"$py" - "$dir/train_$loader.json" "$dir/train_synthetic.json" <<'PY'
import json, sys
ours, ceiling = (json.load(open(p)) for p in sys.argv[1:3])
share = ours["samples_per_s"] / ceiling["samples_per_s"] if ceiling["samples_per_s"] else float("nan")
print(f"== result: {ours['loader']} trained at {ours['samples_per_s']:.1f} samples/s "
      f"({100 * share:.0f}% of the {ceiling['samples_per_s']:.1f} samples/s ceiling), "
      f"data wait {100 * ours['wait_fraction']:.1f}% of step time, on {ours['device']}")
PY
