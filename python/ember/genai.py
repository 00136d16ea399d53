"""onnxruntime-genai's Python API over Ember's generation (`import ember.genai as og`).

The classes and methods scripts written for onnxruntime-genai 0.18 use, with its
semantics: `append_tokens` runs the prompt at once; `generate_next_token` chooses
a token from the current logits and appends it to the sequence, and the model
runs on it when the next token is asked for (so a generation ending at EOS or
max_length makes no wasted run); an EOS ends generation without entering the
sequence; `max_length` counts the prompt; `is_done` is false while logits wait to
be used; `rewind_to(n)` keeps the first n tokens and, as onnxruntime-genai does,
runs the token that was at position n again on the next `generate_next_token`.
The same `random_seed` gives the same tokens (not the tokens onnxruntime-genai
draws: its random numbers differ); greedy search gives its tokens.

One sequence at a time (batch_size 1), greedy or sampling (temperature, top-k,
top-p, repetition penalty, min_length); beam search, guidance, adapters,
multimodal inputs and execution providers other than the CPU raise
NotImplementedError naming what was asked for.
"""
from __future__ import annotations

import json
import os
from typing import Any, Iterable, Sequence, cast

import numpy as np

from . import _ember
from ._errors import InvalidArgument, NoSuchFile
from ._errors import NotImplemented as _NotImplemented

__all__ = [
    "Config", "Model", "Tokenizer", "TokenizerStream", "GeneratorParams", "Generator", "Images", "Audios",
    "is_cuda_available", "is_dml_available", "is_qnn_available", "is_openvino_available", "is_webgpu_available",
    "register_execution_provider_library", "set_log_options",
]

# Every search option onnxruntime-genai 0.18 knows, with the values Ember runs.
# None: any value; a tuple: the values accepted (others raise NotImplementedError).
_SEARCH_OPTIONS: dict[str, tuple | None] = {
    "max_length": None, "min_length": None, "do_sample": None, "temperature": None, "top_k": None, "top_p": None,
    "repetition_penalty": None, "random_seed": None, "chunk_size": None, "past_present_share_buffer": None,
    "batch_size": (1,), "num_beams": (1,), "num_return_sequences": (1,), "no_repeat_ngram_size": (0,),
    # Beam search's scoring: without beams onnxruntime-genai ignores them too.
    "length_penalty": None, "diversity_penalty": None, "early_stopping": None,
    "blank_penalty": (0,),
}


# The defaults of the options Ember's config does not carry (onnxruntime-genai's).
_FIXED_DEFAULTS = {"batch_size": 1, "num_beams": 1, "num_return_sequences": 1, "chunk_size": 0,
                   "no_repeat_ngram_size": 0, "length_penalty": 1.0, "diversity_penalty": 0.0, "early_stopping": True}


def _check_search_options(options: dict[str, Any]) -> None:
    for name, value in options.items():
        if name not in _SEARCH_OPTIONS:
            raise _NotImplemented(f"search option '{name}' is not one onnxruntime-genai knows "
                                  f"(known: {', '.join(sorted(_SEARCH_OPTIONS))})")
        allowed = _SEARCH_OPTIONS[name]
        if allowed is not None and value not in allowed:
            raise _NotImplemented(f"search option {name}={value!r}: Ember's ember.genai runs only {name}="
                                  f"{allowed[0]!r} (one sequence, no beam search)")


def _check_providers_free(what: str) -> None:
    raise _NotImplemented(f"{what}: Ember runs on the CPU, with no other execution providers")


class Config:
    """A model folder's configuration (genai_config.json) before the model loads.

    `overlay` takes JSON with a "search" object (its defaults for every
    GeneratorParams); execution providers other than the CPU are refused."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = os.fspath(path)
        if not os.path.isdir(self.path):
            raise NoSuchFile(f"{self.path}: no such model folder")
        self._search: dict[str, Any] = {}

    def overlay(self, json_text: str) -> None:
        overlay = json.loads(json_text)
        unsupported = sorted(set(overlay) - {"search"})
        if unsupported:
            raise _NotImplemented(f"Config.overlay: only 'search' can be overlaid, not {', '.join(unsupported)}")
        search = overlay.get("search", {})
        _check_search_options(search)
        self._search.update(search)

    def clear_providers(self) -> None:
        """Accepted: the CPU needs no provider entry."""

    def append_provider(self, provider: str) -> None:
        if provider.lower() not in ("cpu", "cpuexecutionprovider"):
            _check_providers_free(f"Config.append_provider('{provider}')")

    def set_provider_option(self, provider: str, key: str, value: str) -> None:
        _check_providers_free(f"Config.set_provider_option('{provider}', '{key}')")


class Model:
    """A model folder (onnxruntime-genai's genai_config.json, or an optimum export), loaded once."""

    def __init__(self, config: Config | str | os.PathLike) -> None:
        if not isinstance(config, Config):
            config = Config(config)
        self._search = dict(config._search)
        self._model = _ember.GenaiModel(config.path, int(self._search.get("max_length", 0)),
                                        int(self._search.get("chunk_size", 0)))

    @property
    def type(self) -> str:
        return self._model.type

    @property
    def device_type(self) -> str:
        return "cpu"


class Tokenizer:
    """The model folder's tokenizer.json, as onnxruntime-genai 0.18 applies it: encode adds no
    special tokens (not tokenizer.json's post-processor's BOS, nor add_bos_token's); decode skips them."""

    def __init__(self, model: Model) -> None:
        self._model = model._model
        self._tokenizer = _ember.GenaiTokenizer(self._model)

    @property
    def bos_token_id(self) -> int:
        return self._model.bos_token_id

    @property
    def eos_token_ids(self) -> np.ndarray:
        return np.array(self._model.eos_token_ids, np.int32)

    @property
    def pad_token_id(self) -> int:
        return self._model.pad_token_id

    def encode(self, text: str) -> np.ndarray:
        """The ids of `text`, an int32 array."""
        return cast(np.ndarray, self._tokenizer.encode(text))

    def encode_batch(self, texts: Sequence[str]) -> np.ndarray:
        """The ids of each text as the rows of an int32 array, padded on the right with pad_token_id."""
        return cast(np.ndarray, self._tokenizer.encode_batch(list(texts), self._model.pad_token_id))

    def decode(self, tokens: Iterable[int] | np.ndarray) -> str:
        return self._tokenizer.decode(np.ascontiguousarray(tokens, dtype=np.int32).reshape(-1))

    def decode_batch(self, tokens: np.ndarray) -> list[str]:
        return [self.decode(row) for row in np.asarray(tokens, dtype=np.int32)]

    def to_token_id(self, token: str) -> int:
        return self._tokenizer.to_token_id(token)

    def create_stream(self) -> TokenizerStream:
        return TokenizerStream(self)

    def apply_chat_template(self, messages: str, *, template_str: str | None = None, tools: str | None = None,
                            add_generation_prompt: bool = True) -> str:
        """The folder's chat template (or `template_str` when not empty) over `messages`, a JSON
        list of messages as text; `tools`, when not empty, a JSON list of tools as text."""
        return self._tokenizer.apply_chat_template(messages, template_str, tools, add_generation_prompt)


class TokenizerStream:
    """Text for one token at a time: "" while a character is incomplete, special tokens skipped."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self._stream = _ember.GenaiTokenizerStream(tokenizer._tokenizer)

    def decode(self, token: int) -> str:
        return self._stream.decode(token)


class GeneratorParams:
    """Search options for a Generator: the model's genai_config.json "search" defaults, then set_search_options."""

    def __init__(self, model: Model) -> None:
        self._model = model
        self._search: dict[str, Any] = {**_FIXED_DEFAULTS, **model._model.search_defaults(), **model._search}

    def set_search_options(self, **options: Any) -> None:
        _check_search_options(options)
        self._search.update(options)

    def get_search_options(self) -> dict[str, Any]:
        return {k: (v if isinstance(v, bool) else float(v)) for k, v in sorted(self._search.items())}

    def set_guidance(self, type: str, data: str, enable_ff_tokens: bool = False) -> None:
        raise _NotImplemented(f"GeneratorParams.set_guidance('{type}'): constrained decoding is not in ember.genai")

    def _options(self) -> _ember.SearchOptions:
        s = self._search
        options = _ember.SearchOptions()
        options.max_length = int(s["max_length"]) if s["max_length"] else self._model._model.context_length
        options.min_length = int(s["min_length"])
        options.do_sample = bool(s["do_sample"])
        options.temperature = float(s["temperature"])
        options.top_k = int(s["top_k"])
        options.top_p = float(s["top_p"])
        options.repetition_penalty = float(s["repetition_penalty"])
        seed = int(s["random_seed"])
        options.seed = seed if seed >= 0 else int.from_bytes(os.urandom(8), "little")
        options.chunk_size = int(s["chunk_size"])
        if options.do_sample and options.top_k != 1 and options.temperature != 0:
            if not 0.0 <= options.top_p <= 1.0:
                raise InvalidArgument(f"top_p must be between 0.0 and 1.0, is {options.top_p}")
            if options.top_k < 0:
                raise InvalidArgument(f"top_k must be 0 or greater, is {options.top_k}")
        return options


class Generator:
    """Generates one token per generate_next_token call after the tokens given to append_tokens."""

    def __init__(self, model: Model, params: GeneratorParams) -> None:
        self._generator = _ember.GenaiGenerator(model._model, params._options())

    def append_tokens(self, tokens: Iterable[int] | np.ndarray) -> None:
        """Runs the model over `tokens` (a list or array of ids; a [1, n] array from encode_batch) after the sequence."""
        ids = np.ascontiguousarray(tokens, dtype=np.int32)
        if ids.ndim == 2 and ids.shape[0] > 1:
            raise _NotImplemented(f"append_tokens: {ids.shape[0]} rows (batch_size > 1) are not supported")
        self._generator.append_tokens(ids.reshape(-1))

    def generate_next_token(self) -> None:
        """Chooses the next token (running the model on the last one first) and appends it unless it is EOS."""
        self._generator.generate_next_token()

    def is_done(self) -> bool:
        """True after an EOS or once the sequence holds max_length tokens."""
        return self._generator.is_done()

    def get_next_tokens(self) -> np.ndarray:
        """The last token chosen (or appended), as an int32 array of one."""
        return cast(np.ndarray, self._generator.get_next_tokens())

    def token_count(self) -> int:
        return self._generator.token_count()

    def get_sequence(self, index: int) -> np.ndarray:
        """The prompt and the chosen tokens (EOS excluded) of sequence `index` (0), as int32."""
        if index != 0:
            raise InvalidArgument(f"get_sequence({index}): there is one sequence (batch_size 1)")
        return cast(np.ndarray, self._generator.get_sequence())

    def rewind_to(self, new_length: int) -> None:
        """Keeps the first new_length tokens of the sequence (and their KV cache)."""
        self._generator.rewind_to(new_length)

    def get_logits(self) -> np.ndarray:
        """The logits the next token is chosen from, float32 [1, 1, vocab] (runs the model on a pending token)."""
        return cast(np.ndarray, self._generator.get_logits())


class _Unsupported:
    @classmethod
    def open(cls, *paths: str) -> None:
        raise _NotImplemented(f"og.{cls.__name__}: multimodal inputs are not in ember.genai")


class Images(_Unsupported):
    """Refused: multimodal models are not in ember.genai."""


class Audios(_Unsupported):
    """Refused: multimodal models are not in ember.genai."""


def is_cuda_available() -> bool:
    return False


def is_dml_available() -> bool:
    return False


def is_qnn_available() -> bool:
    return False


def is_openvino_available() -> bool:
    return False


def is_webgpu_available() -> bool:
    return False


def register_execution_provider_library(name: str, path: str) -> None:
    _check_providers_free(f"register_execution_provider_library('{name}')")


def set_log_options(**options: Any) -> None:
    raise _NotImplemented(f"set_log_options({', '.join(options)}): onnxruntime-genai's logging is not in ember.genai")
