#!/usr/bin/env bash
# U-Net training with DDP on 1, 2, ... N GPUs of one machine (issue 6, multi-GPU): builds the
# `cubestream` command and Python module, writes six ERA5-like surface variables with
# `cubestream synth` (TIMES steps, WeatherBench2 v2 layout), computes their statistics, then runs
# `torchrun --nproc_per_node G examples/train_unet.py` for every G in GPUS and every loader in
# LOADERS, one after the other on the same machine, each writing its JSON to $OUT.
#
#   OUT=/empty/dir GPUS="1 2 4" LOADERS="cubestream-cpu cubestream-gpu" TIMES=960 bash bench/ddp_run.sh
#
# RUNS, when set, replaces the GPUS x LOADERS grid by a list of LOADER:GPUS[:ARGS] entries, ARGS
# being extra train_unet.py options with commas for spaces, e.g.
#   RUNS="synthetic:1 synthetic:4 synthetic:4:--ddp-grads,bf16 cubestream-cpu:4:--threads,12"
# An ARGS word of the form NAME=VALUE (upper-case NAME) is set in that run's environment instead,
# e.g. "cubestream-gpu:1:CUBESTREAM_GPU_POOL=default" or "cubestream-gpu:1:--loader-nice,10".
# EPOCHS (measured, default 2) and WARMUP (default 1) set the epochs of every run. CODEC, when
# set, is the store's --codec (e.g. blosc-lz4hc:9; default: synth's v2 default, blosc-lz4:5).
# GTEST_FILTER (a gtest filter) and PYTEST_K (a pytest -k expression) run those tests of this
# build first, the gtest log into $OUT/gtest.log. HOST_CEILING=N first measures what the host
# alone decodes, one process on all cores and then N processes at once (see below). Each
# multi-GPU run logs NCCL's choice of transport (P2P/NVLink, SHM) once, into $OUT/nccl.log.
# The store is written once per machine: a later call with the same TIMES and CODEC keeps it.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${OUT:?set OUT}
BUILD=build-gpu
STORE=/tmp/cs_ddp_era5.zarr
mkdir -p "$OUT"
exec > >(tee -a "$OUT/ddp_run.log") 2>&1
log() { printf '[ddp %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
EXTRA=""
[ -d .devdeps/usr/include ] && EXTRA="-I$PWD/.devdeps/usr/include"
log "build"; nvidia-smi --query-gpu=name --format=csv,noheader; nproc
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUBESTREAM_CUDA=ON -DCMAKE_CXX_FLAGS="$EXTRA" \
  -Dpybind11_DIR="$(python3 -m pybind11 --cmakedir)" >"$OUT/build.log" 2>&1 &&
  ninja -C "$BUILD" cubestream_cli _cubestream >>"$OUT/build.log" 2>&1 ||
  { log "build failed"; grep -E "error|FAILED" "$OUT/build.log" | head -20; exit 1; }
if [ -n "${GTEST_FILTER:-}" ]; then
  # Tests first, on GPU 0, so that one call can check the code it then measures.
  log "gtest $GTEST_FILTER"
  if ninja -C "$BUILD" cubestream_tests >>"$OUT/build.log" 2>&1; then
    "$BUILD/tests/cubestream_tests" --gtest_filter="$GTEST_FILTER" >"$OUT/gtest.log" 2>&1
    log "gtest rc=$?"; grep -E "^\[  (FAILED|PASSED|SKIPPED) " "$OUT/gtest.log" | head -20
  else
    log "test build failed"; grep -E "error|FAILED" "$OUT/build.log" | head -10
  fi
fi
if [ -n "${PYTEST_K:-}" ]; then
  log "pytest -k $PYTEST_K"
  PYTHONPATH=$BUILD/python python3 -m pytest -q -rs tests/python -k "$PYTEST_K" 2>&1 | tail -6
fi
VARIABLES=(2m_temperature 10m_u_component_of_wind 10m_v_component_of_wind mean_sea_level_pressure total_column_water_vapour surface_pressure)
store_tag="times=${TIMES:-960} codec=${CODEC:-default}"
if [ -f "$STORE.made" ] && [ "$(cat "$STORE.made")" = "$store_tag" ]; then
  # A second call on the same (still warm) machine keeps the store the first one wrote.
  log "store: kept from an earlier call ($store_tag)"
else
  log "store: ${TIMES:-960} steps${CODEC:+, codec $CODEC}"
  rm -f "$STORE.made"
  "$BUILD/cubestream" synth "$STORE" --variables "$(IFS=,; echo "${VARIABLES[*]}")" \
    --times "${TIMES:-960}" --format 2 ${CODEC:+--codec "$CODEC"} --overwrite --no-progress | tail -2 &&
    "$BUILD/cubestream" stats "$STORE" && echo "$store_tag" >"$STORE.made"
fi
if [ -n "${HOST_CEILING:-}" ]; then
  # What the host alone decodes: `cubestream bench read` (whole arrays of the store into plain
  # host memory, page cache warm) with one process on every core, then HOST_CEILING processes
  # at once on as many variables, the cores split between them as the ranks split them.
  log "host decode ceiling: 1 process x $(nproc) threads"
  "$BUILD/cubestream" bench read "$STORE" --array "${VARIABLES[0]}" --threads "$(nproc)" --repeat 3 --no-baseline
  log "host decode ceiling: $HOST_CEILING processes x $(( $(nproc) / HOST_CEILING )) threads at once"
  pids=()
  for ((i = 0; i < HOST_CEILING; ++i)); do
    "$BUILD/cubestream" bench read "$STORE" --array "${VARIABLES[i % ${#VARIABLES[@]}]}" --threads $(( $(nproc) / HOST_CEILING )) --repeat 3 --no-baseline &
    pids+=($!)
  done
  # Wait for these only: a bare `wait` also waits for the `tee` behind this script's output.
  wait "${pids[@]}"
fi
log "topology"; nvidia-smi topo -m 2>&1 | head -12; lscpu | grep -E "^(Model name|Socket|NUMA node|Thread)" || true
if [ -z "${RUNS:-}" ]; then
  for loader in ${LOADERS:-cubestream-cpu cubestream-gpu}; do
    for g in ${GPUS:-1 2 4}; do RUNS="${RUNS:-} $loader:$g"; done
  done
fi
nccl_logged=0
for run in $RUNS; do
  IFS=: read -r loader g extra <<<"$run"
  args=(); run_env=()
  for word in ${extra//,/ }; do
    if [[ $word =~ ^[A-Z][A-Z0-9_]*= ]]; then run_env+=("$word"); else args+=("$word"); fi
  done
  tag=$(printf '%s' "$extra" | tr -c 'A-Za-z0-9' '_' | sed 's/^_*//; s/_*$//')
  json="$OUT/ddp_${loader}_${g}gpu${tag:+_$tag}.json"
  log "$loader on $g GPU(s) ${args[*]} ${run_env[*]}"
  envs=("${run_env[@]}")
  if [ "$g" -gt 1 ] && [ $nccl_logged = 0 ]; then envs+=(NCCL_DEBUG=INFO NCCL_DEBUG_FILE="$OUT/nccl.log"); nccl_logged=1; fi
  env "${envs[@]}" PYTHONPATH=$BUILD/python timeout "${RUN_TIMEOUT:-150}" python3 -m torch.distributed.run --standalone --nproc_per_node "$g" \
    examples/train_unet.py --store "$STORE" --loader "$loader" --epochs "${EPOCHS:-2}" --warmup-epochs "${WARMUP:-1}" "${args[@]}" --json "$json" 2>&1 |
    grep -E "median of|epoch [0-9]|Error|error" | tail -5
  log "rc=${PIPESTATUS[0]}"
done
[ -f "$OUT/nccl.log" ] && grep -hE "via|Channel 00|NET/|P2P|SHM" "$OUT/nccl.log" | sort | uniq -c | sort -rn | head -12
python3 - "$OUT" <<'PY'
import glob, json, os, re, sys
rows = {}
for p in sorted(glob.glob(os.path.join(sys.argv[1], "ddp_*gpu*.json"))):
    r = json.load(open(p))
    variant = re.search(r"_\d+gpu_?(.*)\.json$", os.path.basename(p)).group(1)
    rows[(r["loader"], r["world_size"], variant)] = r
def step_ms(r):
    m = [e["step_ms_median"] for e in r["epochs"] if e["measured"]]
    return sorted(m)[len(m) // 2] if m else float("nan")
print("| loader | GPUs | options | threads/rank | samples/s | GB/s | data wait | median step ms | scaling vs 1 GPU "
      "| per measured epoch: samples/s (steps waiting > 10 ms, longest wait ms, longest step ms, pinned staging calls) "
      "| last epoch, per rank: host share (whole-batch trials kept/started), longest wait ms |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
def per_rank(r):
    last = [e for e in r["epochs"] if e["measured"]][-1:]
    if not last or "ranks" not in last[0]:
        return "-"
    return ", ".join(f"{x['host_decode_share']:.2f} ({x['host_share_trials_kept']:.0f}/{x['host_share_trials']:.0f}), "
                     f"{x['step_wait_ms_max']:.0f}" if x["host_decode_share"] >= 0 else f"-, {x['step_wait_ms_max']:.0f}"
                     for x in last[0]["ranks"])
for (loader, n, variant), r in sorted(rows.items()):
    one = rows.get((loader, 1, variant))   # the same options on one GPU
    sc = f"{r['samples_per_s'] / one['samples_per_s']:.2f}x ({r['samples_per_s'] / one['samples_per_s'] / n:.3f} of {n}x)" if one else ""
    print(f"| {loader} | {n} | {variant or '-'} | {r.get('threads') or '-'} | {r['samples_per_s']:.1f} | {r['gb_per_s']:.2f} | "
          f"{100 * r['wait_fraction']:.2f}% | {step_ms(r):.1f} | {sc} | "
          + ", ".join(f"{e['samples_per_s']:.0f} ({e.get('steps_waiting_over_10ms', '?')}, {e.get('step_wait_ms_max', float('nan')):.0f}, "
                      f"{e.get('step_ms_max', float('nan')):.0f}, {(e.get('loader_stats') or {}).get('staging_pinned_calls', '-')})"
                      for e in r["epochs"] if e["measured"]) + f" | {per_rank(r)} |")
PY
log "done"
