#!/usr/bin/env python3
"""Writes today's ONNX backend node tests as test-case folders for `ember test-onnx`.

usage: write_onnx_node_tests.py OUT_DIR

The cases are the ones the installed `onnx` package generates itself
(onnx.backend.test.case.node.collect_testcases: 1,884 in onnx 1.23.2), written as
ONNX's backend test data is laid out: OUT_DIR/<case>/model.onnx and
test_data_set_<i>/{input,output}_<j>.pb, each value a TensorProto,
SequenceProto, OptionalProto or MapProto by the graph's declared type. Run it
with the exporters' interpreter (third_party/exporters, onnx pinned by
scripts/setup.sh); Debian's libonnx-testdata holds the older 932 (onnx 1.12).
"""
import os
import shutil
import sys

from onnx import TensorProto, numpy_helper
from onnx.backend.test.case.node import collect_testcases


def serialized(value, value_info):
    kind = value_info.type.WhichOneof("value")
    if kind == "map_type":
        return numpy_helper.from_dict(value, value_info.name).SerializeToString()
    if kind == "sequence_type":
        return numpy_helper.from_list(value, value_info.name).SerializeToString()
    if kind == "optional_type":
        return numpy_helper.from_optional(value, value_info.name).SerializeToString()
    if isinstance(value, TensorProto):
        return value.SerializeToString()
    return numpy_helper.from_array(value, value_info.name).SerializeToString()


def main():
    out = sys.argv[1]
    if os.path.exists(out):
        shutil.rmtree(out)
    cases = collect_testcases(None)
    for case in cases:
        folder = os.path.join(out, case.name)
        os.makedirs(folder)
        with open(os.path.join(folder, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        graph = case.model.graph
        for i, (inputs, outputs) in enumerate(case.data_sets):
            data = os.path.join(folder, f"test_data_set_{i}")
            os.makedirs(data)
            for prefix, values, infos in (("input", inputs, graph.input), ("output", outputs, graph.output)):
                for j, value in enumerate(values):
                    with open(os.path.join(data, f"{prefix}_{j}.pb"), "wb") as f:
                        f.write(serialized(value, infos[j]))
    print(f"{len(cases)} node test cases in {out}")


if __name__ == "__main__":
    main()
