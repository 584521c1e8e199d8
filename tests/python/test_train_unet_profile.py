"""The training example's gap analysis of a profiled training stream (examples/train_unet.py,
training_stream_gaps) on a hand-made Chrome trace: which gaps count as late launches, and what
the threads were doing over them."""
import importlib.util
import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = importlib.util.spec_from_file_location("train_unet", os.path.join(HERE, "..", "..", "examples", "train_unet.py"))
train_unet = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(train_unet)


def kernel(ts, dur, corr, stream=7, name="conv"):
    return {"ph": "X", "cat": "kernel", "name": name, "ts": ts, "dur": dur, "args": {"stream": stream, "correlation": corr}}


def call(ts, dur, corr=None, tid=1, name="cudaLaunchKernel", cat="cuda_runtime"):
    e = {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "tid": tid, "args": {}}
    if corr is not None:
        e["args"]["correlation"] = corr
    return e


def test_late_and_gpu_side_gaps_are_told_apart():
    events = [
        # training stream 7: kernels at 0-100, 150-250 (launched at 20, in time: a GPU-side gap of
        # 50 us), 400-500 (launched at 390, after the stream went idle at 250: a late gap of 150)
        kernel(0, 100, 1), call(0, 10, 1),
        kernel(150, 100, 2), call(20, 10, 2),
        kernel(400, 100, 3), call(390, 5, 3),
        # the launching thread spent 260-385 in an op, another thread in a long allocation
        call(260, 125, tid=1, name="aten::copy_", cat="cpu_op"),
        call(240, 200, tid=2, name="cudaMallocFromPoolAsync"),
        # a busier stream of the loader does not count as the training stream's
        kernel(0, 40, 9, stream=3, name="decode"), kernel(60, 40, 10, stream=3, name="decode"),
    ]
    g = train_unet.training_stream_gaps(events, steps=1)
    assert g["stream"] == "7"
    assert g["gap_ms_per_step"] == pytest.approx(0.2)
    assert g["late_launch_ms_per_step"] == pytest.approx(0.15)
    assert g["gpu_side_ms_per_step"] == pytest.approx(0.05)
    own = g["late_launching_thread_ms_per_step"]
    assert own["cpu_op: aten::copy_"] == pytest.approx(0.125)
    assert own["cuda_runtime: cudaLaunchKernel"] == pytest.approx(0.005)
    assert g["late_other_threads_ms_per_step"]["cuda_runtime: cudaMallocFromPoolAsync"] == pytest.approx(0.15)
    # 250-260, 385-390 and 395-400 of the late gap are in no event of the launching thread
    assert g["late_untraced_ms_per_step"] == pytest.approx(0.02)
    assert [b["gap_us"] for b in g["biggest_us"]] == [150.0, 50.0]
    assert [b["late_launch"] for b in g["biggest_us"]] == [True, False]


def test_overlapping_kernels_and_tiny_gaps_are_not_gaps():
    events = [kernel(0, 100, 1), call(0, 1, 1), kernel(50, 100, 2), call(1, 1, 2),
              kernel(153, 10, 3), call(2, 1, 3)]  # 3 us after the last end: under the 5 us floor
    g = train_unet.training_stream_gaps(events, steps=2)
    assert g["gap_ms_per_step"] == 0.0
    assert g["biggest_us"] == []
