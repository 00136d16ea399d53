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
