"""ember.InferenceSession's API against onnxruntime's on the same models: inputs,
outputs, metadata, options, IOBinding, dtypes, errors, profiling, and the plugin EP
shipped inside the package."""
import json
import math
import os
import threading
import time
import warnings

import ml_dtypes
import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember


def make_model(path, nodes, inputs, outputs, initializers=(), opset=17, **model_fields):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers), doc_string="graph doc")
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], **model_fields)
    onnx.save(model, path)
    return path


@pytest.fixture(scope="module")
def mlp(tmp_path_factory):
    """x[batch, 16] -> MatMul(w) -> Relu -> Add(b) -> y[batch, 8], with metadata."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((16, 8)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b")
    path = str(tmp_path_factory.mktemp("mlp") / "mlp.onnx")
    make_model(path, [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Relu", ["m"], ["r"]),
                      helper.make_node("Add", ["r", "b"], ["y"])],
               [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])], [w, b],
               producer_name="pytest", producer_version="9.9", domain="ai.test", model_version=3,
               doc_string="an MLP")
    m = onnx.load(path)
    helper.set_model_props(m, {"author": "ember", "purpose": "tests"})
    onnx.save(m, path)
    return path


def node_args(args):
    return [(a.name, a.type, a.shape) for a in args]


def test_inputs_outputs_as_onnxruntime(mlp, default_model_dir):
    for path in (mlp, os.path.join(default_model_dir, "model.onnx")):
        ours, theirs = ember.InferenceSession(path), onnxruntime.InferenceSession(path)
        assert node_args(ours.get_inputs()) == node_args(theirs.get_inputs())
        assert node_args(ours.get_outputs()) == node_args(theirs.get_outputs())


def test_modelmeta_as_onnxruntime(mlp):
    ours, theirs = ember.InferenceSession(mlp).get_modelmeta(), onnxruntime.InferenceSession(mlp).get_modelmeta()
    for field in ("producer_name", "graph_name", "domain", "description", "graph_description", "version",
                  "custom_metadata_map"):
        assert getattr(ours, field) == getattr(theirs, field), field
    assert ours.custom_metadata_map == {"author": "ember", "purpose": "tests"}


def test_run_matches_onnxruntime(mlp):
    x = np.random.default_rng(1).standard_normal((5, 16)).astype(np.float32)
    ours = ember.InferenceSession(mlp).run(None, {"x": x})
    theirs = onnxruntime.InferenceSession(mlp).run(None, {"x": x})
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5, atol=1e-5)
    assert ours[0].flags.writeable and ours[0].flags.c_contiguous


def test_output_names_and_bytes_model(mlp):
    with open(mlp, "rb") as f:
        sess = ember.InferenceSession(f.read())
    x = np.ones((2, 16), np.float32)
    y = sess.run(["y"], {"x": x})[0]
    assert len(sess.run([], {"x": x})) == 1
    both = sess.run(["y", "y"], {"x": x})
    np.testing.assert_array_equal(both[0], both[1])
    both[0][0, 0] = 1e9  # the second is its own copy
    assert both[1][0, 0] == y[0, 0]


def test_non_contiguous_and_sequence_inputs(mlp):
    sess = ember.InferenceSession(mlp)
    base = np.random.default_rng(2).standard_normal((16, 6)).astype(np.float32)
    strided = base.T  # a transposed view: not C-contiguous
    assert not strided.flags.c_contiguous
    np.testing.assert_allclose(sess.run(None, {"x": strided})[0],
                               sess.run(None, {"x": np.ascontiguousarray(strided)})[0], rtol=0, atol=0)
    listed = sess.run(None, {"x": [[0.5] * 16]})[0]
    np.testing.assert_allclose(listed, sess.run(None, {"x": np.full((1, 16), 0.5, np.float32)})[0])


def test_zero_size_batch(mlp):
    y = ember.InferenceSession(mlp).run(None, {"x": np.zeros((0, 16), np.float32)})[0]
    assert y.shape == (0, 8) and y.dtype == np.float32


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.float64, np.int32, np.uint8, np.bool_])
def test_dtypes_round_trip(tmp_path, dtype):
    onnx_type = {np.float16: TensorProto.FLOAT16, ml_dtypes.bfloat16: TensorProto.BFLOAT16,
                 np.float64: TensorProto.DOUBLE, np.int32: TensorProto.INT32, np.uint8: TensorProto.UINT8,
                 np.bool_: TensorProto.BOOL}[dtype]
    path = make_model(str(tmp_path / "id.onnx"), [helper.make_node("Identity", ["x"], ["y"])],
                      [helper.make_tensor_value_info("x", onnx_type, [2, 3])],
                      [helper.make_tensor_value_info("y", onnx_type, [2, 3])])
    x = (np.arange(6).reshape(2, 3) % 2).astype(dtype)
    sess = ember.InferenceSession(path)
    assert sess.get_inputs()[0].type == onnxruntime.InferenceSession(path).get_inputs()[0].type
    y = sess.run(None, {"x": x})[0]
    assert y.dtype == np.dtype(dtype) and y.shape == (2, 3)
    np.testing.assert_array_equal(y.astype(np.float64), x.astype(np.float64))


def test_errors_name_the_problem(mlp, tmp_path):
    sess = ember.InferenceSession(mlp)
    with pytest.raises(ember.InvalidArgument, match="'z' is not an input of the model"):
        sess.run(None, {"z": np.ones((1, 16), np.float32)})
    with pytest.raises(ember.InvalidArgument, match="'nope' is not an output"):
        sess.run(["nope"], {"x": np.ones((1, 16), np.float32)})
    with pytest.raises(ember.InvalidArgument, match="float32"):
        sess.run(None, {"x": np.ones((1, 16), np.float64)})
    with pytest.raises(ember.InvalidArgument, match="x"):
        sess.run(None, {"x": np.ones((1, 15), np.float32)})
    with pytest.raises(ember.InvalidArgument):
        sess.run(None, {})
    with pytest.raises(ember.NotImplemented, match="dtype"):
        sess.run(None, {"x": np.array([["a"] * 16])})
    with pytest.raises(FileNotFoundError):
        ember.InferenceSession(str(tmp_path / "missing.onnx"))
    (tmp_path / "garbage.onnx").write_bytes(b"\x08\x07garbage")
    with pytest.raises(ember.EmberError):
        ember.InferenceSession(str(tmp_path / "garbage.onnx"))
    unsupported = make_model(str(tmp_path / "u.onnx"), [helper.make_node("Multinomial", ["x"], ["y"], sample_size=2)],
                             [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])],
                             [helper.make_tensor_value_info("y", TensorProto.INT32, [1, 2])], opset=15)
    with pytest.raises(NotImplementedError, match="Multinomial"):
        ember.InferenceSession(unsupported)


def test_session_options(mlp):
    opts = ember.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.graph_optimization_level = ember.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.log_severity_level = 3
    x = np.random.default_rng(3).standard_normal((4, 16)).astype(np.float32)
    plain = ember.InferenceSession(mlp, opts).run(None, {"x": x})[0]
    np.testing.assert_allclose(plain, ember.InferenceSession(mlp).run(None, {"x": x})[0], rtol=1e-6, atol=1e-6)
    opts.optimized_model_filepath = "out.onnx"
    with pytest.raises(NotImplementedError, match="optimized_model_filepath"):
        ember.InferenceSession(mlp, opts)
    opts = ember.SessionOptions()
    opts.add_free_dimension_override_by_name("batch", 1)
    with pytest.raises(NotImplementedError, match="add_free_dimension_override_by_name"):
        ember.InferenceSession(mlp, opts)


def test_providers(mlp):
    assert ember.get_available_providers() == ["CPUExecutionProvider"]
    sess = ember.InferenceSession(mlp, providers=["CPUExecutionProvider"])
    assert sess.get_providers() == ["CPUExecutionProvider"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ember.InferenceSession(mlp, providers=[("CUDAExecutionProvider", {}), "CPUExecutionProvider"])
    assert any("CUDAExecutionProvider" in str(w.message) for w in caught)


def test_iobinding_writes_in_place(mlp):
    sess = ember.InferenceSession(mlp)
    x = np.random.default_rng(4).standard_normal((3, 16)).astype(np.float32)
    expected = sess.run(None, {"x": x})[0]
    out = np.zeros((3, 8), np.float32)
    binding = sess.io_binding()
    binding.bind_cpu_input("x", x)
    binding.bind_output("y", "cpu", 0, np.float32, [3, 8], out.ctypes.data)
    sess.run_with_iobinding(binding)
    np.testing.assert_array_equal(out, expected)
    assert binding.get_outputs()[0].numpy().ctypes.data == out.ctypes.data
    fresh = sess.io_binding()
    fresh.bind_ortvalue_input("x", ember.OrtValue.ortvalue_from_numpy(x))
    fresh.bind_output("y")
    sess.run_with_iobinding(fresh)
    np.testing.assert_array_equal(fresh.copy_outputs_to_cpu()[0], expected)
    wrong = sess.io_binding()
    wrong.bind_cpu_input("x", x)
    wrong.bind_ortvalue_output("y", ember.OrtValue.ortvalue_from_shape_and_type([2, 8], np.float32))
    with pytest.raises(ember.InvalidArgument, match="y"):
        sess.run_with_iobinding(wrong)


def test_iobinding_decode_loop_shares_the_kv_buffer(default_model_dir):
    """models/default's decode step with past and present bound to one buffer per layer
    (past_present_share_buffer), as onnxruntime-genai drives it, against plain runs that
    concatenate the cache: the same logits at every step."""
    path = os.path.join(default_model_dir, "model.onnx")
    sess = ember.InferenceSession(path)
    layers = sum(1 for i in sess.get_inputs() if i.name.endswith(".key"))
    kv_heads, head = sess.get_inputs()[2].shape[1], sess.get_inputs()[2].shape[3]
    capacity, prompt = 16, [0, 45, 80, 99]
    shared = {f"{kind}.{layer}.{part}": np.zeros((1, kv_heads, capacity, head), np.float32)
              for layer in range(layers) for part in ("key", "value") for kind in ("past_key_values",)}
    binding = sess.io_binding()
    logits_bound = []
    tokens = list(prompt)
    for step in range(6):
        ids = np.array([tokens if step == 0 else tokens[-1:]], np.int64)
        binding.clear_binding_inputs()
        binding.clear_binding_outputs()
        binding.bind_cpu_input("input_ids", ids)
        binding.bind_cpu_input("attention_mask", np.ones((1, len(tokens)), np.int64))
        for name, buf in shared.items():
            binding.bind_cpu_input(name, buf)
            binding.bind_ortvalue_output(name.replace("past_key_values", "present"), ember.OrtValue(buf))
        binding.bind_output("logits")
        sess.run_with_iobinding(binding)
        logits = binding.copy_outputs_to_cpu()[-1]  # in binding order: logits last
        logits_bound.append(logits[0, -1])
        tokens.append(int(logits[0, -1].argmax()))
    del shared
    # The same steps with ONNX Runtime, growing the cache by concatenation.
    ref = onnxruntime.InferenceSession(path)
    past = {i.name: np.zeros((1, kv_heads, 0, head), np.float32) for i in ref.get_inputs() if "past" in i.name}
    names = [o.name for o in ref.get_outputs()]
    for step in range(6):
        n = len(prompt) + step
        ids = np.array([tokens[:n] if step == 0 else tokens[n - 1:n]], np.int64)
        out = dict(zip(names, ref.run(None, {"input_ids": ids, "attention_mask": np.ones((1, n), np.int64), **past})))
        np.testing.assert_allclose(logits_bound[step], out["logits"][0, -1], rtol=2e-3, atol=2e-3)
        past = {k: out[k.replace("past_key_values", "present")] for k in past}


def test_profiling_writes_onnxruntime_trace(mlp, tmp_path):
    opts = ember.SessionOptions()
    opts.enable_profiling = True
    opts.profile_file_prefix = str(tmp_path / "prof")
    sess = ember.InferenceSession(mlp, opts)
    for _ in range(3):
        sess.run(None, {"x": np.ones((1, 16), np.float32)})
    name = sess.end_profiling()
    events = json.load(open(name))
    assert [e["name"] for e in events] == ["session_initialization"] + ["model_run"] * 3
    assert all(e["ph"] == "X" and e["dur"] >= 0 and e["cat"] == "Session" for e in events)
    assert ember.InferenceSession(mlp).end_profiling() == ""


def test_run_releases_the_gil(tmp_path):
    """A Python thread keeps running while another thread is inside run(). The chain of MatMuls is sized so that
    one run takes about 0.2 s on this machine (40 of them took 0.049 s on an AVX2 EPYC)."""
    n = 1024
    w = numpy_helper.from_array(np.full((n, n), 1e-3, np.float32), "w")
    x = np.ones((64, n), np.float32)

    def chain(layers):
        nodes = [helper.make_node("MatMul", ["x" if i == 0 else f"h{i}", "w"],
                                  [f"h{i + 1}" if i < layers - 1 else "y"]) for i in range(layers)]
        path = make_model(str(tmp_path / f"slow{layers}.onnx"), nodes,
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, n])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, n])], [w])
        sess = ember.InferenceSession(path)
        sess.run(None, {"x": x})
        return sess

    sess = chain(40)
    start = time.perf_counter()
    sess.run(None, {"x": x})
    once = time.perf_counter() - start
    if once < 0.2:
        sess = chain(min(4000, math.ceil(40 * 0.2 / once)))
    ticks = []
    done = threading.Event()

    def tick():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    t = threading.Thread(target=tick)
    start = time.perf_counter()
    t.start()
    sess.run(None, {"x": x})
    end = time.perf_counter()
    done.set()
    t.join()
    inside = [s for s in ticks if start + 0.01 < s < end - 0.01]
    assert end - start > 0.05, f"the run took {end - start:.3f} s: too short to tell"
    assert len(inside) >= 5, f"{len(inside)} ticks of a Python thread during a {end - start:.3f} s run: the GIL was held"


def test_plugin_ep_from_the_package(mlp):
    path = ember.ort_ep_library_path()
    assert os.path.isfile(path)
    onnxruntime.register_execution_provider_library("ember", path)
    try:
        devices = [d for d in onnxruntime.get_ep_devices() if d.ep_name == "EmberExecutionProvider"]
        assert devices, "EmberExecutionProvider not among onnxruntime.get_ep_devices()"
        opts = onnxruntime.SessionOptions()
        opts.add_provider_for_devices(devices, {})
        x = np.random.default_rng(5).standard_normal((3, 16)).astype(np.float32)
        with_ember = onnxruntime.InferenceSession(mlp, sess_options=opts).run(None, {"x": x})[0]
        cpu = onnxruntime.InferenceSession(mlp).run(None, {"x": x})[0]
        np.testing.assert_allclose(with_ember, cpu, rtol=1e-5, atol=1e-5)
    finally:
        onnxruntime.unregister_execution_provider_library("ember")
