#!/usr/bin/env python3
"""Writes models/demo/: the small model the README's first command runs.

A two-layer MLP block as transformer exports spell it: LayerNormalization,
MatMul + Add, GELU written out with Erf, MatMul + Add, a residual Add and a
Softmax, with a symbolic batch dimension. Weights come from a fixed seed, so the
files are reproducible: python3 tools/make_demo_model.py
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HIDDEN, FFN = 64, 256


def main():
    rng = np.random.default_rng(20261130)
    inits = {
        "ln_scale": (1.0 + 0.1 * rng.standard_normal(HIDDEN)).astype(np.float32),
        "ln_bias": (0.1 * rng.standard_normal(HIDDEN)).astype(np.float32),
        "w1": (rng.standard_normal((HIDDEN, FFN)) / np.sqrt(HIDDEN)).astype(np.float32),
        "b1": (0.1 * rng.standard_normal(FFN)).astype(np.float32),
        "w2": (rng.standard_normal((FFN, HIDDEN)) / np.sqrt(FFN)).astype(np.float32),
        "b2": (0.1 * rng.standard_normal(HIDDEN)).astype(np.float32),
        "sqrt2": np.array(np.sqrt(2.0), dtype=np.float32),
        "one": np.array(1.0, dtype=np.float32),
        "half": np.array(0.5, dtype=np.float32),
    }
    nodes = [
        helper.make_node("LayerNormalization", ["x", "ln_scale", "ln_bias"], ["ln"], axis=-1, epsilon=1e-5),
        helper.make_node("MatMul", ["ln", "w1"], ["h0"]),
        helper.make_node("Add", ["h0", "b1"], ["h1"]),
        helper.make_node("Div", ["h1", "sqrt2"], ["g0"]),
        helper.make_node("Erf", ["g0"], ["g1"]),
        helper.make_node("Add", ["g1", "one"], ["g2"]),
        helper.make_node("Mul", ["h1", "g2"], ["g3"]),
        helper.make_node("Mul", ["g3", "half"], ["gelu"]),
        helper.make_node("MatMul", ["gelu", "w2"], ["o0"]),
        helper.make_node("Add", ["o0", "b2"], ["o1"]),
        helper.make_node("Add", ["o1", "x"], ["residual"]),
        helper.make_node("Softmax", ["residual"], ["probs"], axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "demo_mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", HIDDEN])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", HIDDEN])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="ember-tools")
    model.ir_version = 8
    onnx.checker.check_model(model)
    out = os.path.join(os.path.dirname(__file__), "..", "models", "demo")
    os.makedirs(out, exist_ok=True)
    onnx.save(model, os.path.join(out, "model.onnx"))
    np.save(os.path.join(out, "x.npy"), rng.standard_normal((4, HIDDEN)).astype(np.float32))


if __name__ == "__main__":
    main()
