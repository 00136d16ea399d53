"""ember.InferenceSession against onnxruntime.InferenceSession (PyPI) on the ONNX node
tests Debian packages (libonnx-testdata: 932 models with inputs and expected outputs).

Each case runs the model through both with the case's inputs. Ember's outputs must
match ONNX Runtime's (rtol 1e-3, atol 1e-5: the backend suite's rtol), or, where
they do not, the suite's own expected outputs (ONNX Runtime deviates from the
specification in a few cases). Models Ember refuses with NotImplemented are
skipped, and pytest lists every skip with Ember's reason; any other error fails.
The cases tests/conformance/known_failures.txt lists (wrong packaged data) must fail
(strict xfail)."""
import glob
import os

import ml_dtypes
import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import numpy_helper

import ember
from conftest import NODE_TESTS, ROOT

CASES = sorted(os.path.basename(d) for d in glob.glob(os.path.join(NODE_TESTS, "test_*")))
# Cases whose packaged data is wrong, with the reason (shared with the C++ conformance check);
# lines marked "(onnx 1.23 suite)" are about that suite's case of the name, not Debian's.
KNOWN = {name: reason for name, reason in
         (line.rstrip("\n").split(" ", 1) for line in open(os.path.join(ROOT, "tests", "conformance", "known_failures.txt"))
          if line.strip())
         if not reason.startswith("(onnx 1.23 suite)")}


def read_tensors(folder, prefix, values):
    """The case's TensorProto files for the graph's `values` (in order); bfloat16 where the
    graph declares it (the packaged files store its bits as uint16)."""
    paths = sorted(glob.glob(os.path.join(folder, f"{prefix}_*.pb")), key=lambda p: int(p.rsplit("_", 1)[1][:-3]))
    out = []
    for path, value in zip(paths, values):
        t = onnx.TensorProto()
        with open(path, "rb") as f:
            t.ParseFromString(f.read())
        a = numpy_helper.to_array(t)
        if value.type.tensor_type.elem_type == onnx.TensorProto.BFLOAT16 and a.dtype == np.uint16:
            a = a.view(ml_dtypes.bfloat16)
        out.append((t.name or value.name, a))
    return out


def close(actual, expected):
    if actual.shape != expected.shape or actual.dtype != expected.dtype:
        return False
    if actual.dtype == ml_dtypes.bfloat16:
        actual, expected = actual.astype(np.float32), expected.astype(np.float32)
    if actual.dtype.kind in "fc":
        return np.allclose(actual, expected, rtol=1e-3, atol=1e-5, equal_nan=True)
    return np.array_equal(actual, expected)


def test_cases_found():
    assert len(CASES) >= 900, f"{NODE_TESTS} has {len(CASES)} cases: is Debian's libonnx-testdata installed?"


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.xfail(reason=KNOWN[c], strict=True)) if c in KNOWN
                                  else c for c in CASES])
def test_node_model(case):
    folder = os.path.join(NODE_TESTS, case)
    model_path = os.path.join(folder, "model.onnx")
    graph = onnx.load(model_path).graph
    initializers = {t.name for t in graph.initializer}
    graph_inputs = [v for v in graph.input if v.name not in initializers]
    if not all(v.type.HasField("tensor_type") for v in list(graph_inputs) + list(graph.output)):
        pytest.skip("sequence or optional values: not in ember's Python API")
    data = os.path.join(folder, "test_data_set_0")
    feed = dict(read_tensors(data, "input", graph_inputs))
    expected = [a for _, a in read_tensors(data, "output", graph.output)]
    if any(a.dtype.kind in "OUS" for a in list(feed.values()) + expected):
        pytest.skip("string tensors: not in ember's Python API")
    try:
        sess = ember.InferenceSession(model_path)
    except ember.NotImplemented as e:
        pytest.skip(f"ember: {e}")
    try:
        ours = sess.run(None, feed)
    except ember.NotImplemented as e:
        pytest.skip(f"ember: {e}")
    try:
        theirs = onnxruntime.InferenceSession(model_path, providers=["CPUExecutionProvider"]).run(None, feed)
    except Exception:  # noqa: BLE001 - ONNX Runtime lacks some cases; the suite's outputs remain
        theirs = None
    assert len(ours) == len(expected), f"{len(ours)} outputs, the model has {len(expected)}"
    for k, (a, want) in enumerate(zip(ours, expected)):
        if theirs is not None and close(a, theirs[k]):
            continue
        assert close(a, want), (f"output {k}: ember {a.dtype}{list(a.shape)} matches neither ONNX Runtime "
                                f"nor the suite's expected {want.dtype}{list(want.shape)}")
