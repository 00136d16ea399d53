#!/usr/bin/env python3
"""The Python package's per-call cost against ONNX Runtime's Python API, interleaved.

run: `InferenceSession.run(None, {"x": x})` on a model of one elementwise op over
4,096 float32 elements (Add of a constant, 16 KiB in and out), where the call's
overhead (argument conversion, output arrays, the GIL) dominates the op. Each
round times --calls calls of ember, of onnxruntime and of ember again (the null
control: ember against itself), in an order that alternates between rounds; the
per-call time of a round is its median over --calls. Reported: p50 per-call time
of each, the ratio ember/onnxruntime (lower is better) with its min-max over
rounds, and the null ratio.

Needs the ember package and onnxruntime in the running Python, e.g.
    python3 -m venv /tmp/ember-venv && /tmp/ember-venv/bin/pip install '.[test]'
    /tmp/ember-venv/bin/python tools/bench_python.py --rounds 15 --calls 2000 --threads 1
"""
import argparse
import os
import statistics
import tempfile
import time

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper

import ember


def make_model(path, n):
    c = numpy_helper.from_array(np.full(n, 0.5, np.float32), "c")
    graph = helper.make_graph([helper.make_node("Add", ["x", "c"], ["y"])], "add",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n])], [c])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def per_call_us(sess, feed, calls):
    times = []
    for _ in range(calls):
        t0 = time.perf_counter_ns()
        sess.run(None, feed)
        times.append(time.perf_counter_ns() - t0)
    return statistics.median(times) / 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--elements", type=int, default=4096)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "add.onnx")
        make_model(path, a.elements)
        eo = ember.SessionOptions()
        eo.intra_op_num_threads = a.threads
        oo = onnxruntime.SessionOptions()
        oo.intra_op_num_threads = a.threads
        sessions = {"ember": ember.InferenceSession(path, eo), "ember (null)": ember.InferenceSession(path, eo),
                    "onnxruntime": onnxruntime.InferenceSession(path, oo, providers=["CPUExecutionProvider"])}
        feed = {"x": np.random.default_rng(0).standard_normal(a.elements).astype(np.float32)}
        expected = sessions["onnxruntime"].run(None, feed)[0]
        for name, sess in sessions.items():
            np.testing.assert_allclose(sess.run(None, feed)[0], expected, rtol=0, atol=0, err_msg=name)
            per_call_us(sess, feed, a.calls)  # warm-up
        us = {name: [] for name in sessions}
        order = list(sessions)
        for r in range(a.rounds):
            for name in (order if r % 2 == 0 else order[::-1]):
                us[name].append(per_call_us(sessions[name], feed, a.calls))
    ratio = [e / o for e, o in zip(us["ember"], us["onnxruntime"])]
    null = [e / n for e, n in zip(us["ember"], us["ember (null)"])]
    print(f"{a.elements} float32 elements, {a.threads} thread(s), {a.rounds} rounds x {a.calls} calls "
          f"(ember {ember.__version__}, onnxruntime {onnxruntime.__version__})")
    print("| | p50 µs/call | min-max |")
    print("|---|---|---|")
    for name, v in us.items():
        print(f"| {name} | {statistics.median(v):.2f} | {min(v):.2f}-{max(v):.2f} |")
    print(f"| ratio ember/onnxruntime | {statistics.median(ratio):.3f} | {min(ratio):.3f}-{max(ratio):.3f} |")
    print(f"| null ember/ember | {statistics.median(null):.3f} | {min(null):.3f}-{max(null):.3f} |")


if __name__ == "__main__":
    main()
