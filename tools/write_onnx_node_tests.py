#!/usr/bin/env python3
"""Writes today's ONNX backend node tests as test-case folders for `ember test-onnx`.

usage: write_onnx_node_tests.py OUT_DIR [--light LIGHT_DIR]

The cases are the ones the installed `onnx` package generates itself
(onnx.backend.test.case.node.collect_testcases: 1,884 in onnx 1.23.2), written as
ONNX's backend test data is laid out: OUT_DIR/<case>/model.onnx and
test_data_set_<i>/{input,output}_<j>.pb, each value a TensorProto,
SequenceProto, OptionalProto or MapProto by the graph's declared type. Run it
with the exporters' interpreter (third_party/exporters, onnx pinned by
scripts/setup.sh); Debian's libonnx-testdata holds the older 932 (onnx 1.12).

With --light, also the package's `light` model tests (onnx/backend/test/data/light:
small versions of AlexNet, DenseNet-121, Inception v1/v2, ResNet-50, ShuffleNet,
SqueezeNet, VGG-19 and ZFNet-512 whose weights are ConstantOfShape nodes), as
LIGHT_DIR/test_<model>/: the input ONNX's backend runner feeds them
(onnx.backend.test.runner.Runner.generate_dummy_data with random=False:
arange(n)/n in float32, unknown dims 1) and the expected output the package ships.
"""
import argparse
import glob
import os
import shutil

import onnx
from onnx import TensorProto, numpy_helper
from onnx.backend.test.case.node import collect_testcases
from onnx.backend.test.runner import Runner


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


def fresh(folder):
    if os.path.exists(folder):
        shutil.rmtree(folder)
    os.makedirs(folder)


def write_light(out):
    fresh(out)
    light = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
    models = sorted(glob.glob(os.path.join(light, "light_*.onnx")))
    for path in models:
        name = os.path.basename(path)[len("light_"):-len(".onnx")]
        model = onnx.load(path)
        data = os.path.join(out, f"test_{name}", "test_data_set_0")
        os.makedirs(data)
        shutil.copyfile(path, os.path.join(out, f"test_{name}", "model.onnx"))
        weights = {i.name for i in model.graph.initializer}
        feeds = [x for x in model.graph.input if x.name not in weights]
        for j, x in enumerate(feeds):
            value = Runner.generate_dummy_data(x, seed=0, name=name, random=False)
            with open(os.path.join(data, f"input_{j}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(value, x.name).SerializeToString())
        for j in range(len(model.graph.output)):
            shutil.copyfile(os.path.splitext(path)[0] + f"_output_{j}.pb", os.path.join(data, f"output_{j}.pb"))
    print(f"{len(models)} light model test cases in {out}")


def main():
    parser = argparse.ArgumentParser(description="Writes onnx's own backend test cases as folders.")
    parser.add_argument("out", help="folder for the node cases (replaced)")
    parser.add_argument("--light", help="folder for the light model cases (replaced)")
    args = parser.parse_args()
    out = args.out
    fresh(out)
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
    if args.light:
        write_light(args.light)


if __name__ == "__main__":
    main()
