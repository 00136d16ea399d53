#!/usr/bin/env python3
"""Writes single-op benchmark models into a folder (default build/bench_models).

    python3 tools/make_bench_models.py [OUT_DIR]

relu_4096.onnx: Relu over float32[4096], the per-run overhead yardstick.
"""
import os
import sys

import onnx
from onnx import TensorProto, helper


def unary_model(op, n):
    graph = helper.make_graph(
        [helper.make_node(op, ["x"], ["y"])], f"{op.lower()}_{n}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="ember-tools")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "build", "bench_models")
    os.makedirs(out, exist_ok=True)
    onnx.save(unary_model("Relu", 4096), os.path.join(out, "relu_4096.onnx"))


if __name__ == "__main__":
    main()
