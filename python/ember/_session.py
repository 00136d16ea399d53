"""ONNX Runtime's InferenceSession API over Ember's runtime (`import ember as ort`)."""
from __future__ import annotations

import ctypes
import enum
import json
import os
import threading
import time
import warnings
from typing import Any, Mapping, Sequence

import numpy as np

from . import _ember

CPU_PROVIDER = "CPUExecutionProvider"

# ONNX Runtime's type strings and numpy's dtypes (bfloat16 through ml_dtypes).
_NUMPY_OF_TYPE = {
    "tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64,
    "tensor(int8)": np.int8, "tensor(int16)": np.int16, "tensor(int32)": np.int32, "tensor(int64)": np.int64,
    "tensor(uint8)": np.uint8, "tensor(uint16)": np.uint16, "tensor(uint32)": np.uint32, "tensor(uint64)": np.uint64,
    "tensor(bool)": np.bool_,
}


def _type_of_dtype(dtype: np.dtype) -> str:
    dtype = np.dtype(dtype)
    if dtype.name == "bfloat16":
        return "tensor(bfloat16)"
    for name, np_type in _NUMPY_OF_TYPE.items():
        if dtype == np_type:
            return name
    raise NotImplementedError(f"numpy dtype {dtype} has no ONNX tensor type Ember supports")


class GraphOptimizationLevel(enum.IntEnum):
    """As onnxruntime.GraphOptimizationLevel. Ember's optimizer is all or nothing:
    ORT_DISABLE_ALL turns it off (no constant folding, no fusions), any other level on."""
    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_LAYOUT = 3
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    """As onnxruntime.ExecutionMode. Ember runs nodes in order; ORT_PARALLEL is accepted
    and runs the same way (each node is parallel inside)."""
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class SessionOptions:
    """The options of onnxruntime.SessionOptions that scripts set.

    Used: intra_op_num_threads (0: one thread per physical core, or EMBER_NUM_THREADS),
    graph_optimization_level, enable_profiling and profile_file_prefix.
    Accepted without effect on results: inter_op_num_threads, execution_mode,
    log_severity_level, log_verbosity_level, logid, enable_cpu_mem_arena,
    enable_mem_pattern, enable_mem_reuse, use_deterministic_compute (Ember's runs
    are deterministic), and session config entries.
    Not supported (NotImplementedError when the session is made): optimized_model_filepath,
    free dimension overrides, custom op libraries, added initializers."""

    def __init__(self) -> None:
        self.intra_op_num_threads: int = 0
        self.inter_op_num_threads: int = 0
        self.graph_optimization_level: GraphOptimizationLevel = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.execution_mode: ExecutionMode = ExecutionMode.ORT_SEQUENTIAL
        self.enable_profiling: bool = False
        self.profile_file_prefix: str = "ember_profile"
        self.log_severity_level: int = 2
        self.log_verbosity_level: int = 0
        self.logid: str = ""
        self.enable_cpu_mem_arena: bool = True
        self.enable_mem_pattern: bool = True
        self.enable_mem_reuse: bool = True
        self.use_deterministic_compute: bool = False
        self.optimized_model_filepath: str = ""
        self._config: dict[str, str] = {}
        self._unsupported: list[str] = []

    def add_session_config_entry(self, key: str, value: str) -> None:
        self._config[key] = value

    def get_session_config_entry(self, key: str) -> str:
        if key not in self._config:
            raise KeyError(f"session config entry '{key}' is not set")
        return self._config[key]

    def add_free_dimension_override_by_name(self, name: str, value: int) -> None:
        self._unsupported.append("add_free_dimension_override_by_name")

    def add_free_dimension_override_by_denotation(self, denotation: str, value: int) -> None:
        self._unsupported.append("add_free_dimension_override_by_denotation")

    def register_custom_ops_library(self, path: str) -> None:
        self._unsupported.append("register_custom_ops_library")

    def add_initializer(self, name: str, value: Any) -> None:
        self._unsupported.append("add_initializer")

    def _check_supported(self) -> None:
        unsupported = list(self._unsupported)
        if self.optimized_model_filepath:
            unsupported.append("optimized_model_filepath")
        if unsupported:
            raise NotImplementedError(f"SessionOptions: Ember does not support {', '.join(unsupported)}")
        if self.intra_op_num_threads < 0:
            raise ValueError(f"SessionOptions.intra_op_num_threads must be >= 0, got {self.intra_op_num_threads}")


class RunOptions:
    """onnxruntime.RunOptions: accepted (logging fields, run config entries); `terminate`
    (cancelling a run from another thread) is not supported."""

    def __init__(self) -> None:
        self.log_severity_level: int = 2
        self.log_verbosity_level: int = 0
        self.logid: str = ""
        self.terminate: bool = False
        self.only_execute_path_to_fetches: bool = False
        self._config: dict[str, str] = {}

    def add_run_config_entry(self, key: str, value: str) -> None:
        self._config[key] = value

    def get_run_config_entry(self, key: str) -> str:
        return self._config[key]


def _check_run_options(run_options: RunOptions | None) -> None:
    if run_options is not None and run_options.terminate:
        raise NotImplementedError("RunOptions.terminate: Ember cannot cancel a run")


class NodeArg:
    """A model input or output: name, ONNX Runtime's type string, shape (ints for known
    sizes, strings for symbolic ones, None for unnamed unknown ones)."""

    def __init__(self, name: str, type: str, shape: list[int | str | None]) -> None:
        self.name = name
        self.type = type
        self.shape = shape

    def __repr__(self) -> str:
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape!r})"


class ModelMetadata:
    """The model's descriptive fields, as onnxruntime.ModelMetadata."""

    def __init__(self, fields: Mapping[str, Any]) -> None:
        self.producer_name: str = fields["producer_name"]
        self.graph_name: str = fields["graph_name"]
        self.domain: str = fields["domain"]
        self.description: str = fields["description"]
        self.graph_description: str = fields["graph_description"]
        self.version: int = fields["version"]
        self.custom_metadata_map: dict[str, str] = dict(fields["custom_metadata_map"])


class OrtValue:
    """A CPU tensor as onnxruntime.OrtValue: it holds a numpy array (no copy)."""

    def __init__(self, array: np.ndarray) -> None:
        self._array = array

    @staticmethod
    def ortvalue_from_numpy(numpy_obj: np.ndarray, device_type: str = "cpu", device_id: int = 0) -> "OrtValue":
        _check_device(device_type)
        return OrtValue(np.ascontiguousarray(numpy_obj))

    @staticmethod
    def ortvalue_from_shape_and_type(shape: Sequence[int], element_type: Any = np.float32, device_type: str = "cpu",
                                     device_id: int = 0) -> "OrtValue":
        _check_device(device_type)
        return OrtValue(np.empty(tuple(shape), dtype=element_type))

    def numpy(self) -> np.ndarray:
        return self._array

    def shape(self) -> list[int]:
        return list(self._array.shape)

    def data_type(self) -> str:
        return _type_of_dtype(self._array.dtype)

    def element_type(self) -> Any:
        return self._array.dtype.type

    def device_name(self) -> str:
        return "cpu"

    def is_tensor(self) -> bool:
        return True

    def has_value(self) -> bool:
        return True

    def data_ptr(self) -> int:
        return self._array.ctypes.data

    def update_inplace(self, np_arr: np.ndarray) -> None:
        np.copyto(self._array, np_arr)


def _check_device(device_type: str) -> None:
    if str(device_type).lower() != "cpu":
        raise NotImplementedError(f"device '{device_type}': Ember runs on the CPU only")


def _array_at(buffer_ptr: int, element_type: Any, shape: Sequence[int]) -> np.ndarray:
    """A numpy array over memory the caller owns (IOBinding's buffer_ptr)."""
    dtype = np.dtype(element_type)
    count = int(np.prod(shape, dtype=np.int64)) if len(shape) else 1
    raw = (ctypes.c_byte * (count * dtype.itemsize)).from_address(buffer_ptr)
    return np.frombuffer(raw, dtype=dtype, count=count).reshape(tuple(shape))


class IOBinding:
    """onnxruntime.IOBinding for CPU memory: inputs read in place, outputs written into
    the caller's arrays (bind_output with a buffer or an OrtValue) or into new ones."""

    def __init__(self, session: "InferenceSession") -> None:
        self._session = session
        self._inputs: dict[str, np.ndarray] = {}
        self._outputs: dict[str, np.ndarray | None] = {}
        self._results: list[np.ndarray] = []

    def bind_cpu_input(self, name: str, arr_on_cpu: np.ndarray) -> None:
        self._inputs[name] = arr_on_cpu

    def bind_input(self, name: str, device_type: str, device_id: int, element_type: Any, shape: Sequence[int],
                   buffer_ptr: int) -> None:
        _check_device(device_type)
        self._inputs[name] = _array_at(buffer_ptr, element_type, shape)

    def bind_ortvalue_input(self, name: str, ortvalue: OrtValue) -> None:
        self._inputs[name] = ortvalue.numpy()

    def bind_output(self, name: str, device_type: str = "cpu", device_id: int = 0, element_type: Any = None,
                    shape: Sequence[int] | None = None, buffer_ptr: int | None = None) -> None:
        _check_device(device_type)
        if buffer_ptr is None:
            self._outputs[name] = None
            return
        if element_type is None or shape is None:
            raise ValueError(f"bind_output('{name}'): a buffer_ptr needs element_type and shape")
        self._outputs[name] = _array_at(buffer_ptr, element_type, shape)

    def bind_ortvalue_output(self, name: str, ortvalue: OrtValue) -> None:
        self._outputs[name] = ortvalue.numpy()

    def synchronize_inputs(self) -> None:
        pass

    def synchronize_outputs(self) -> None:
        pass

    def clear_binding_inputs(self) -> None:
        self._inputs.clear()

    def clear_binding_outputs(self) -> None:
        self._outputs.clear()
        self._results = []

    def get_outputs(self) -> list[OrtValue]:
        return [OrtValue(a) for a in self._results]

    def copy_outputs_to_cpu(self) -> list[np.ndarray]:
        return [a.copy() for a in self._results]

    def _run(self) -> None:
        self._results = self._session._sess.run_bound(self._inputs, list(self._outputs.items()))


class InferenceSession:
    """onnxruntime.InferenceSession on Ember: `import ember as ort` and keep the script.

    `path_or_bytes`: a model file (external data next to it) or its bytes.
    `providers`: Ember is one CPU provider; CPUExecutionProvider (or none) selects it,
    others are dropped with a warning, as ONNX Runtime does for providers it lacks."""

    def __init__(self, path_or_bytes: str | os.PathLike | bytes, sess_options: SessionOptions | None = None,
                 providers: Sequence[str | tuple[str, dict]] | None = None,
                 provider_options: Sequence[dict] | None = None, **kwargs: Any) -> None:
        self._options = sess_options if sess_options is not None else SessionOptions()
        self._options._check_supported()
        self._providers = self._select_providers(providers)
        if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            model: Any = bytes(path_or_bytes)
            self._model_path = None
        else:
            model = os.fspath(path_or_bytes)
            self._model_path = model
        self._profile: list[dict] = []
        self._profiling_start_ns = time.time_ns()
        start = time.perf_counter_ns()
        self._sess = _ember.Session(model, self._options.intra_op_num_threads,
                                    self._options.graph_optimization_level != GraphOptimizationLevel.ORT_DISABLE_ALL)
        self._profiling = bool(self._options.enable_profiling)
        self._profile_lock = threading.Lock()
        if self._profiling:
            self._record("session_initialization", start, time.perf_counter_ns())
        self._inputs_meta = [NodeArg(*i) for i in self._sess.inputs()]
        self._outputs_meta = [NodeArg(*o) for o in self._sess.outputs()]
        self._output_names = [o.name for o in self._outputs_meta]

    @staticmethod
    def _select_providers(providers: Sequence[str | tuple[str, dict]] | None) -> list[str]:
        for p in providers or []:
            name = p[0] if isinstance(p, tuple) else p
            if name != CPU_PROVIDER:
                warnings.warn(f"Specified provider '{name}' is not in available provider names. "
                              f"Available providers: '{CPU_PROVIDER}'")
        return [CPU_PROVIDER]

    def get_inputs(self) -> list[NodeArg]:
        return list(self._inputs_meta)

    def get_outputs(self) -> list[NodeArg]:
        return list(self._outputs_meta)

    def get_overridable_initializers(self) -> list[NodeArg]:
        return []

    def get_modelmeta(self) -> ModelMetadata:
        return ModelMetadata(self._sess.metadata())

    def get_providers(self) -> list[str]:
        return list(self._providers)

    def get_provider_options(self) -> dict[str, dict]:
        return {CPU_PROVIDER: {}}

    def set_providers(self, providers: Sequence[str | tuple[str, dict]] | None = None,
                      provider_options: Sequence[dict] | None = None) -> None:
        self._providers = self._select_providers(providers)

    def get_session_options(self) -> SessionOptions:
        return self._options

    def disable_fallback(self) -> None:
        pass

    def enable_fallback(self) -> None:
        pass

    def run(self, output_names: Sequence[str] | None, input_feed: Mapping[str, Any],
            run_options: RunOptions | None = None) -> list[Any]:
        """The outputs named (all of them for None or []) as numpy arrays."""
        if run_options is not None:
            _check_run_options(run_options)
        feed = input_feed if type(input_feed) is dict else dict(input_feed)
        if not self._profiling:
            return self._sess.run(output_names or None, feed)
        start = time.perf_counter_ns()
        outputs = self._sess.run(output_names or None, feed)
        self._record("model_run", start, time.perf_counter_ns())
        return outputs

    def run_with_ort_values(self, output_names: Sequence[str] | None, input_dict_ort_values: Mapping[str, OrtValue],
                            run_options: RunOptions | None = None) -> list[OrtValue]:
        feed = {name: value.numpy() for name, value in input_dict_ort_values.items()}
        return [OrtValue(a) for a in self.run(output_names, feed, run_options)]

    def io_binding(self) -> IOBinding:
        return IOBinding(self)

    def run_with_iobinding(self, iobinding: IOBinding, run_options: RunOptions | None = None) -> None:
        _check_run_options(run_options)
        start = time.perf_counter_ns()
        iobinding._run()
        if self._profiling:
            self._record("model_run", start, time.perf_counter_ns())

    def get_profiling_start_time_ns(self) -> int:
        return self._profiling_start_ns

    def end_profiling(self) -> str:
        """Writes the session's events (initialization, then each run; no per-node events)
        as ONNX Runtime's profile JSON (Chrome trace format) and returns the file name;
        "" when profiling is off."""
        if not self._profiling:
            return ""
        name = f"{self._options.profile_file_prefix}_{time.strftime('%Y-%m-%d_%H-%M-%S')}.json"
        with self._profile_lock:
            events, self._profile = self._profile, []
        with open(name, "w", encoding="utf-8") as f:
            json.dump(events, f)
        self._profiling = False
        return name

    def _record(self, name: str, start_ns: int, end_ns: int) -> None:
        origin = self._profiling_start_ns - (time.time_ns() - time.perf_counter_ns())
        event = {"cat": "Session", "pid": os.getpid(), "tid": threading.get_native_id(), "dur": (end_ns - start_ns) // 1000,
                 "ts": max(0, (start_ns - origin) // 1000), "ph": "X", "name": name, "args": {}}
        with self._profile_lock:
            self._profile.append(event)


def get_available_providers() -> list[str]:
    return [CPU_PROVIDER]


def get_all_providers() -> list[str]:
    return [CPU_PROVIDER]


def get_device() -> str:
    return "CPU"


def set_default_logger_severity(severity: int) -> None:
    """Accepted: Ember reports problems as exceptions, not log lines."""
    if not 0 <= int(severity) <= 4:
        raise ValueError(f"logger severity must be 0 to 4, got {severity}")


def set_default_logger_verbosity(verbosity: int) -> None:
    """Accepted, as set_default_logger_severity."""
