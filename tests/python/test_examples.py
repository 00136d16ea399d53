"""Scripts nobody here wrote, run with only their import changed: ONNX Runtime's
Python documentation examples (tests/python/ort_examples/, each crediting its
source) under `import ember as rt`, against the same script under
`import onnxruntime as rt`, in this process with numpy's global seed fixed."""
import contextlib
import io
import os

import numpy as np
import pytest

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ort_examples")
EMBER_IMPORT = "import ember as rt\n"
ORT_IMPORT = "import onnxruntime as rt\n"


def run_script(name, runtime, tmp_path):
    """The script's printed text and globals, with `rt` being `runtime`."""
    source = open(os.path.join(HERE, name), encoding="utf-8").read()
    assert source.count(EMBER_IMPORT) == 1, f"{name}: the one changed line is not there"
    if runtime == "onnxruntime":
        source = source.replace(EMBER_IMPORT, ORT_IMPORT)
    np.random.seed(0)
    out = io.StringIO()
    namespace = {"__name__": "__main__"}
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(source, name, "exec"), namespace)
    finally:
        os.chdir(cwd)
    return out.getvalue(), namespace


def test_load_and_predict(tmp_path):
    ours_text, ours = run_script("plot_load_and_predict.py", "ember", tmp_path)
    theirs_text, theirs = run_script("plot_load_and_predict.py", "onnxruntime", tmp_path)
    # The six lines of names, shapes and types, word for word.
    assert ours_text.splitlines()[:6] == theirs_text.splitlines()[:6]
    np.testing.assert_allclose(ours["res"][0], theirs["res"][0], rtol=1e-6, atol=1e-6)


def test_profiling(tmp_path):
    ours_text, ours = run_script("plot_profiling.py", "ember", tmp_path)
    _, theirs = run_script("plot_profiling.py", "onnxruntime", tmp_path)
    np.testing.assert_array_equal(ours["res"][0], theirs["res"][0])
    assert os.path.isfile(tmp_path / ours["prof_file"]), ours_text
    ours_events, theirs_events = ours["sess_time"], theirs["sess_time"]
    assert ours_events and isinstance(ours_events, list)
    # ONNX Runtime's trace event fields (Chrome trace format) on every event.
    keys = set(theirs_events[0])
    assert all(keys <= set(e) for e in ours_events), (keys, ours_events[0])
    assert ours_events[0]["name"] == "session_initialization"


@pytest.mark.parametrize("name", sorted(n for n in os.listdir(HERE) if n.endswith(".py")))
def test_every_example_is_run(name):
    assert name in ("plot_load_and_predict.py", "plot_profiling.py"), f"{name} has no test"
