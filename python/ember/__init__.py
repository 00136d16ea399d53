"""Ember: a native ONNX runtime for generative models on the CPU.

`import ember as ort` gives ONNX Runtime's InferenceSession API (ember._session);
`import ember.genai as og` gives onnxruntime-genai's generation API. Ember's errors
are EmberError and its subclasses, with Ember's message."""
from __future__ import annotations

import os

from ._errors import EmberError, InvalidArgument, InvalidGraph, NoSuchFile, NotImplemented
from ._session import (
    ExecutionMode,
    GraphOptimizationLevel,
    InferenceSession,
    IOBinding,
    ModelMetadata,
    NodeArg,
    OrtValue,
    RunOptions,
    SessionOptions,
    get_all_providers,
    get_available_providers,
    get_device,
    set_default_logger_severity,
    set_default_logger_verbosity,
)

__version__ = "0.1.0"

__all__ = [
    "EmberError", "InvalidArgument", "InvalidGraph", "NoSuchFile", "NotImplemented",
    "ExecutionMode", "GraphOptimizationLevel", "InferenceSession", "IOBinding", "ModelMetadata", "NodeArg",
    "OrtValue", "RunOptions", "SessionOptions", "get_all_providers", "get_available_providers", "get_device",
    "set_default_logger_severity", "set_default_logger_verbosity", "ort_ep_library_path", "__version__",
]


def ort_ep_library_path() -> str:
    """The path of the ONNX Runtime plugin EP library in this package, for
    onnxruntime.register_execution_provider_library("ember", ember.ort_ep_library_path())."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libember_ort_ep.so")
    if not os.path.exists(path):
        raise NoSuchFile(f"{path} is missing: this ember package was installed without its plugin EP")
    return path
