#!/usr/bin/env python3
"""The Ember plugin EP from Python's onnxruntime (PyPI, installed by scripts/setup.sh).

usage: python_smoke.py LIBEMBER_ORT_EP_SO

Registers the library, finds its device among get_ep_devices(), appends it with
add_provider_for_devices and CPU fallback disabled, runs a small model (MatMul
on an initializer weight -> Relu -> Add -> Softmax, a dynamic batch) with three
batch sizes and compares every output with the CPU EP; reads
get_provider_graph_assignment_info (every node on Ember) and checks Ember's
exported counter (EmberEp_ExecutedNodeCount, through ctypes) grows by exactly
that many nodes per run and not at all for a CPU-only session. Then it
unregisters, and a second register/run/unregister round must work too.

Two If models follow (ModelBuilder in the C++ suite writes no graph
attributes): one whose branches read a graph input and an initializer from the
outer scope, which Ember claims whole (fallback disabled), and one whose
branches hold a MaxRoiPool, which Ember lacks: the If and the MaxRoiPools run on ORT's CPU
EP, the rest of each branch on Ember, and only the taken branch's Ember nodes
count. Both take each branch once.

Last, a 64 MiB weight read by a MatMul claimed alone (a kernel of the EP's
registry) and by a MatMul -> Relu partition: ORT must free its own copy, so
resident memory grows by about one weight.
"""
import ctypes
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

EP = "EmberExecutionProvider"


def build_model():
    rng = np.random.default_rng(3)
    w = numpy_helper.from_array(rng.standard_normal((16, 8)).astype(np.float32), "w")
    bias = numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "bias")
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["m"], name="matmul"),
        helper.make_node("Relu", ["m"], ["r"], name="relu"),
        helper.make_node("Add", ["r", "bias"], ["a"], name="add"),
        helper.make_node("Softmax", ["a"], ["y"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(nodes, "smoke", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])], [w, bias])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


def if_model(branch_ops, out_shape):
    """y = If(ReduceSum(x) > 0, then: branch_ops on Add(x, w), else: on Mul(x, w)); w an initializer."""
    def branch(tag, op):
        nodes = [helper.make_node(op, ["x", "w"], [f"{tag}_a"], name=f"{tag}_{op}")]
        last = f"{tag}_a"
        for k, (branch_op, extra, attrs) in enumerate(branch_ops):
            nodes.append(helper.make_node(branch_op, [last] + extra, [f"{tag}_{k}"], name=f"{tag}_{branch_op}{k}", **attrs))
            last = f"{tag}_{k}"
        return helper.make_graph(nodes, tag, [], [helper.make_tensor_value_info(last, TensorProto.FLOAT, out_shape)])

    initializers = [numpy_helper.from_array(np.array([1, 2, 3, 4], np.float32), "w"),
                    numpy_helper.from_array(np.array(0, np.float32), "zero"),
                    numpy_helper.from_array(np.array([1, 1, 2, 2], np.int64), "shape"),
                    numpy_helper.from_array(np.array([[0, 0, 0, 1, 1]], np.float32), "rois")]
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], name="sum", keepdims=0),
             helper.make_node("Greater", ["s", "zero"], ["c"], name="greater"),
             helper.make_node("If", ["c"], ["y"], name="if", then_branch=branch("then", "Add"),
                              else_branch=branch("else", "Mul"))]
    graph = helper.make_graph(nodes, "if", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


def check_if_models(library):
    ort.register_execution_provider_library("ember", library)
    try:
        devices = [d for d in ort.get_ep_devices() if d.ep_name == EP]
        cases = [  # (branch ops, output shape, CPU fallback allowed)
            ([("Relu", [], {}), ("Neg", [], {})], [4], False),
            ([("Reshape", ["shape"], {}), ("MaxRoiPool", ["rois"], {"pooled_shape": [1, 1]}), ("Relu", [], {})],
             [1, 1, 1, 1], True),
        ]
        for branch_ops, out_shape, fallback in cases:
            model = if_model(branch_ops, out_shape)
            options = ort.SessionOptions()
            options.add_provider_for_devices(devices, {})
            if not fallback:
                options.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
            options.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
            ember = ort.InferenceSession(model, sess_options=options)
            cpu = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
            on_ember = [n.name for sg in ember.get_provider_graph_assignment_info() if sg.ep_name == EP
                        for n in sg.get_nodes()]
            on_cpu = sorted(n.op_type for sg in ember.get_provider_graph_assignment_info() if sg.ep_name != EP
                            for n in sg.get_nodes())
            assert on_cpu == ([] if not fallback else ["If", "MaxRoiPool", "MaxRoiPool"]), on_cpu
            for x, taken in (([1, -5, 2, 0.5], "else"), ([3, 1, 2, 1], "then")):
                x = np.array(x, np.float32)
                before = executed_nodes(library)
                got = ember.run(None, {"x": x})[0]
                # The untaken branch's Ember partitions do not run.
                ran = len([n for n in on_ember if not n.startswith("else_" if taken == "then" else "then_")])
                assert executed_nodes(library) == before + ran, (executed_nodes(library) - before, ran)
                want = cpu.run(None, {"x": x})[0]
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
            print(f"If with {[op for op, _, _ in branch_ops]}: Ember {sorted(on_ember)}, CPU {on_cpu}; both branches match")
            del ember, cpu
    finally:
        ort.unregister_execution_provider_library("ember")


def executed_nodes(library):
    counter = ctypes.CDLL(library).EmberEp_ExecutedNodeCount
    counter.restype = ctypes.c_uint64
    return counter()


def one_round(library, model, round_index):
    ort.register_execution_provider_library("ember", library)
    try:
        devices = [d for d in ort.get_ep_devices() if d.ep_name == EP]
        assert len(devices) == 1, f"expected one {EP} device, got {[d.ep_name for d in ort.get_ep_devices()]}"
        assert devices[0].ep_vendor == "Ember", devices[0].ep_vendor
        options = ort.SessionOptions()
        options.add_provider_for_devices(devices, {})
        options.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
        options.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
        ember = ort.InferenceSession(model, sess_options=options)
        cpu_options = ort.SessionOptions()
        cpu_options.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
        cpu = ort.InferenceSession(model, sess_options=cpu_options, providers=["CPUExecutionProvider"])

        assigned = {}
        for subgraph in ember.get_provider_graph_assignment_info():
            names = [n.name for n in subgraph.get_nodes()]
            assigned.setdefault(subgraph.ep_name, []).extend(names)
        assert set(assigned) == {EP}, f"nodes outside Ember: {assigned}"
        ember_nodes = len(assigned[EP])
        assert ember_nodes > 0
        cpu_eps = {s.ep_name for s in cpu.get_provider_graph_assignment_info()}
        assert EP not in cpu_eps, cpu_eps

        rng = np.random.default_rng(round_index)
        before = executed_nodes(library)
        for batch in (1, 5, 3):
            x = rng.standard_normal((batch, 16)).astype(np.float32)
            want = cpu.run(None, {"x": x})[0]
            assert executed_nodes(library) == before, "a CPU-only session ran nodes on Ember"
            got = ember.run(None, {"x": x})[0]
            before += ember_nodes
            assert executed_nodes(library) == before, f"counter {executed_nodes(library)}, expected {before}"
            assert got.shape == want.shape, (got.shape, want.shape)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        print(f"round {round_index}: {ember_nodes} nodes on {EP}, outputs match the CPU EP for batches 1, 5, 3")
        del ember, cpu
    finally:
        ort.unregister_execution_provider_library("ember")
    assert not [d for d in ort.get_ep_devices() if d.ep_name == EP], "the Ember device outlived unregistering"


def rss_mib():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024


def check_weight_held_once(library, with_relu):
    """A MatMul claimed alone runs as a kernel of the EP's registry, which copies
    its 64 MiB weight and reports it packed (PrePackWeight); MatMul -> Relu is a
    compiled partition, whose fused node ORT gives no initializers. Either way
    ORT frees its own copy: resident memory grows by about one weight, not two."""
    weight = np.random.default_rng(5).standard_normal((4096, 4096)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m" if with_relu else "y"], name="matmul")]
    if with_relu:
        nodes.append(helper.make_node("Relu", ["m"], ["y"], name="relu"))
    graph = helper.make_graph(nodes, "weight",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4096])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4096])],
                              [numpy_helper.from_array(weight, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    data = model.SerializeToString()
    del graph, model
    ort.register_execution_provider_library("ember", library)
    try:
        options = ort.SessionOptions()
        options.add_provider_for_devices([d for d in ort.get_ep_devices() if d.ep_name == EP], {"num_threads": "1"})
        options.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
        before = rss_mib()
        session = ort.InferenceSession(data, sess_options=options)
        x = np.ones((1, 4096), np.float32)
        want = weight.sum(axis=0)
        np.testing.assert_allclose(session.run(None, {"x": x})[0][0], np.maximum(want, 0) if with_relu else want,
                                   rtol=1e-4, atol=1e-2)
        grown = rss_mib() - before
        what = "MatMul -> Relu" if with_relu else "single-node MatMul"
        assert grown < 1.5 * weight.nbytes / 2**20, f"{what}: resident memory grew by {grown:.0f} MiB for a 64 MiB weight"
        print(f"{what}: resident memory +{grown:.0f} MiB for a 64 MiB weight")
        del session
    finally:
        ort.unregister_execution_provider_library("ember")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    library = os.path.abspath(sys.argv[1])  # ORT resolves a relative path against its own folder
    ort.set_default_logger_severity(3)
    model = build_model()
    for round_index in range(2):
        one_round(library, model, round_index)
    check_if_models(library)
    for with_relu in (False, True):
        check_weight_held_once(library, with_relu)
    print(f"python smoke test passed (onnxruntime {ort.__version__})")


if __name__ == "__main__":
    main()
