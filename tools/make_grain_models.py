#!/usr/bin/env python3
"""Writes the single-op f32 models of the thread-grain measurement
(docs/benchmarks/2026-11-30-thread-grains.md) into OUT_DIR: each op at
4 Ki ... 256 Ki elements; softmax, norms and reductions over rows of 1024."""
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h


def save(out_dir, name, nodes, inputs, outputs, inits=()):
    graph = h.make_graph(nodes, name, inputs, outputs, list(inits))
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 18)])
    model.ir_version = 8
    onnx.save(model, f"{out_dir}/{name}.onnx")


def main(out_dir):
    for n in [4096 << i for i in range(7)]:
        k = f"{n // 1024}Ki"
        rows = n // 1024
        x = h.make_tensor_value_info("x", T.FLOAT, [n])
        x2 = h.make_tensor_value_info("x2", T.FLOAT, [n])
        y = h.make_tensor_value_info("y", T.FLOAT, [n])
        save(out_dir, f"relu_{k}", [h.make_node("Relu", ["x"], ["y"])], [x], [y])
        save(out_dir, f"sigmoid_{k}", [h.make_node("Sigmoid", ["x"], ["y"])], [x], [y])
        save(out_dir, f"silu_{k}", [h.make_node("Sigmoid", ["x"], ["s"]), h.make_node("Mul", ["x", "s"], ["y"])], [x], [y])
        save(out_dir, f"add_{k}", [h.make_node("Add", ["x", "x2"], ["y"])], [x, x2], [y])
        save(out_dir, f"cast_{k}", [h.make_node("Cast", ["x"], ["y"], to=T.FLOAT16)], [x],
             [h.make_tensor_value_info("y", T.FLOAT16, [n])])
        xr = h.make_tensor_value_info("x", T.FLOAT, [rows, 1024])
        yr = h.make_tensor_value_info("y", T.FLOAT, [rows, 1024])
        save(out_dir, f"softmax_{k}", [h.make_node("Softmax", ["x"], ["y"], axis=-1)], [xr], [yr])
        scale = h.make_tensor("scale", T.FLOAT, [1024], np.ones(1024, np.float32))
        bias = h.make_tensor("bias", T.FLOAT, [1024], np.zeros(1024, np.float32))
        save(out_dir, f"layernorm_{k}", [h.make_node("LayerNormalization", ["x", "scale", "bias"], ["y"], axis=-1)],
             [xr], [yr], [scale, bias])
        axes = h.make_tensor("axes", T.INT64, [1], np.array([-1], np.int64))
        save(out_dir, f"reducesum_{k}", [h.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=1)], [xr],
             [h.make_tensor_value_info("y", T.FLOAT, [rows, 1])], [axes])
        side = int(np.sqrt(n))
        save(out_dir, f"transpose_{k}", [h.make_node("Transpose", ["x"], ["y"], perm=[1, 0])],
             [h.make_tensor_value_info("x", T.FLOAT, [side, n // side])],
             [h.make_tensor_value_info("y", T.FLOAT, [n // side, side])])


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
