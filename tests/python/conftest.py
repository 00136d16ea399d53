"""Shared fixtures of the Python suite (pytest; run by tests/python/run.sh, a ctest)."""
import os

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
NODE_TESTS = "/usr/share/libonnx-testdata/data/node"


@pytest.fixture(scope="session")
def root():
    return ROOT


@pytest.fixture(scope="session")
def default_model_dir():
    return os.path.join(ROOT, "models", "default")


@pytest.fixture(scope="session")
def builder_export_dir():
    """real_exports' Qwen2 folder from onnxruntime-genai's model builder (int4), which the ctest `python`
    gets from the ctest `real_exports` (EMBER_REAL_EXPORTS, its output folder); skipped where that is not set."""
    exports = os.environ.get("EMBER_REAL_EXPORTS")
    if not exports:
        pytest.skip("EMBER_REAL_EXPORTS is not set (the ctest python sets it to real_exports' output)")
    folder = os.path.join(exports, "qwen2-builder-int4")
    assert os.path.isfile(os.path.join(folder, "genai_config.json")), f"{folder}: no builder export there"
    return folder
