#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora (tests/fuzz/*_fuzz.cpp) into OUT/NAME/.

Every seed is a real input of the kind the target reads, taken from the
repository's fixtures, Debian's ONNX node tests (libonnx-testdata) and what
scripts/setup.sh put into third_party/ (real tokenizers and chat templates),
or written here with onnx and numpy where no file has the feature (external
data, every .npy version and dtype). Needs onnx and numpy (scripts/setup.sh
installs both for python3):

    python3 tests/fuzz/make_seeds.py build-fuzz/fuzz_seeds
"""
import hashlib
import io
import json
import os
import pathlib
import shutil
import sys

import numpy as np
from onnx import TensorProto, helper

ROOT = pathlib.Path(__file__).resolve().parents[2]
NODE_TESTS = pathlib.Path("/usr/share/libonnx-testdata/data/node")
TOKENIZERS = ROOT / "third_party/tokenizers"
TEMPLATES = [ROOT / "tests/genai/templates", ROOT / "third_party/chat_templates/llama.cpp"]
MAX_SEED = 64 << 10  # bytes: libFuzzer's inputs grow to the largest seed


def write(out, name, data):
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    if len(data) <= MAX_SEED:
        (folder / hashlib.sha1(data).hexdigest()).write_bytes(data)


def model_seeds(out):
    for case in sorted(NODE_TESTS.iterdir()):
        write(out, "model", (case / "model.onnx").read_bytes())
    # External data in the fuzz target's folder: weights.bin (64 KiB).
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4, 4])
    w.data_location = TensorProto.EXTERNAL
    for key, value in [("location", "weights.bin"), ("offset", "4096"), ("length", "64")]:
        w.external_data.add(key=key, value=value)
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "external",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 4])], [w])
    write(out, "model", helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]).SerializeToString())
    # A model-local function, called twice.
    fn = helper.make_function("local", "AddMul", ["a", "b"], ["c"],
                              [helper.make_node("Add", ["a", "b"], ["s"]), helper.make_node("Mul", ["s", "b"], ["c"])],
                              [helper.make_opsetid("", 21)])
    graph = helper.make_graph([helper.make_node("AddMul", ["x", "x"], ["t"], domain="local"),
                               helper.make_node("AddMul", ["t", "x"], ["y"], domain="local")], "function",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    write(out, "model", helper.make_model(graph, functions=[fn], opset_imports=[
        helper.make_opsetid("", 21), helper.make_opsetid("local", 1)]).SerializeToString())


def tensor_seeds(out):
    # The first byte picks the reader: even for TensorProto, odd for .npy.
    for case in sorted(NODE_TESTS.iterdir()):
        for pb in sorted((case / "test_data_set_0").glob("*.pb")):
            write(out, "tensor", b"\x00" + pb.read_bytes())
    arrays = [np.arange(12, dtype=np.float32).reshape(3, 4), np.array(3.5, dtype=np.float64),
              np.zeros((0, 3), dtype=np.int64), np.array([True, False]), np.arange(6, dtype=np.int8),
              np.arange(6, dtype=np.uint16).reshape(2, 3), np.array([1.5, -2], dtype=np.float16),
              np.arange(4, dtype=np.int32).reshape(1, 1, 2, 2)]
    for array in arrays:
        for version in [(1, 0), (2, 0)]:
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, array, version=version)
            write(out, "tensor", b"\x01" + buffer.getvalue())


def shrunk_tokenizer(tokenizer, keep):
    """The tokenizer with its BPE vocabulary cut to `keep` entries and the merges that stay inside it."""
    model = tokenizer.get("model") or {}
    vocab = model.get("vocab")
    if not isinstance(vocab, dict):
        return tokenizer
    kept = dict(sorted(vocab.items(), key=lambda item: item[1])[:keep])
    merges = []
    for merge in model.get("merges", []):
        left, right = merge.split(" ", 1) if isinstance(merge, str) else merge
        if left in kept and right in kept and left + right in kept:
            merges.append(merge)
    tokenizer = dict(tokenizer)
    tokenizer["model"] = dict(model, vocab=kept, merges=merges)
    tokenizer["added_tokens"] = [t for t in tokenizer.get("added_tokens", []) if t["id"] < keep + 64]
    return tokenizer


def tokenizer_seeds(out):
    sample = "Hello, world! It's 2026-12-04 ünïcödé 日本語 \U0001f600 <s> [INST]\n\t  x"
    files = [ROOT / "models/default/tokenizer.json"] + sorted(TOKENIZERS.glob("*/tokenizer.json"))
    for index, path in enumerate(files):
        tokenizer = json.loads(path.read_text())
        for keep in (300, 1000):
            text = json.dumps(shrunk_tokenizer(tokenizer, keep), ensure_ascii=False)
            write(out, "tokenizer_json", text.encode() + b"\0" + sample.encode())
    corpus = json.loads((ROOT / "tests/genai/tokenizer_corpus.json").read_text())
    texts = corpus if isinstance(corpus, list) else list(corpus.values())
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            text = json.dumps(text, ensure_ascii=False)
        # The first byte picks one of the fuzz target's tokenizers (models/default, then third_party's in order).
        write(out, "tokenizer_text", bytes([i % len(files)]) + text.encode())


MESSAGES = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "What is the weather in Paris?"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\": 21}"},
    {"role": "assistant", "content": "21 degrees."},
    {"role": "user", "content": [{"type": "text", "text": "And tomorrow?"}]},
]
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]


def chat_template_seeds(out):
    messages = json.dumps(MESSAGES).encode()
    for folder in TEMPLATES:
        for path in sorted(folder.glob("*.jinja")):
            write(out, "chat_template", path.read_bytes() + b"\0" + messages)
    for path in sorted(TOKENIZERS.glob("*/tokenizer_config.json")):
        source = json.loads(path.read_text()).get("chat_template")
        if isinstance(source, str):
            write(out, "chat_template", source.encode() + b"\0" + messages)


def genai_config_seeds(out):
    text = (ROOT / "models/default/genai_config.json").read_text()
    write(out, "genai_config", text)
    config = json.loads(text)
    decoder = config["model"]["decoder"]
    # Variants with the fields real exports carry: sliding windows, provider options, beam search.
    variants = [
        dict(config, search=dict(config.get("search", {}), num_beams=4, early_stopping=True, length_penalty=1.0)),
        dict(config, model=dict(config["model"], decoder=dict(decoder, sliding_window={
            "window_size": 16, "slide_key_value_cache": False, "pad_value": 0, "alignment": "left"}))),
        dict(config, model=dict(config["model"], decoder=dict(decoder, session_options={
            "log_id": "onnxruntime-genai", "provider_options": [{"cpu": {}}]}))),
        dict(config, model=dict(config["model"], type="qwen2", eos_token_id=[1, 2])),
    ]
    for variant in variants:
        write(out, "genai_config", json.dumps(variant, indent=2))


def server_request_seeds(out):
    bodies = [
        {"messages": MESSAGES[:2], "max_tokens": 16},
        {"model": "default", "messages": MESSAGES, "tools": TOOLS, "tool_choice": "auto", "stream": True,
         "stream_options": {"include_usage": True}, "temperature": 0.7, "top_p": 0.9, "seed": 7},
        {"messages": [{"role": "user", "content": "json"}], "response_format": {
            "type": "json_schema", "json_schema": {"name": "w", "schema": TOOLS[0]["function"]["parameters"]}},
         "logprobs": True, "top_logprobs": 3, "n": 2, "stop": ["\n", "END"]},
        {"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_object"},
         "presence_penalty": 0.5, "frequency_penalty": -0.5, "max_completion_tokens": 8, "user": "u"},
        {"prompt": "Once upon a time", "max_tokens": 8, "echo": True, "logprobs": 2, "stop": "."},
        {"prompt": [1, 2, 3, 4], "max_tokens": 4, "stream": True},
    ]
    for body in bodies:
        write(out, "server_request", json.dumps(body))
    write(out, "server_request", '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>')
    write(out, "server_request", '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}')


GBNF = 'root ::= expr\nexpr ::= term (("+" | "-") term)*\nterm ::= [0-9]+ | "(" expr ")"\n'
LARK = 'start: pair ("," pair)*\npair: /[a-z]{1,6}/ "=" /[0-9]{1,3}/\n'


def constraint_seeds(out):
    # The first byte picks the kind: 0 JSON Schema, 1 regex, 2 Lark, 3 GBNF.
    for schema in json.loads((ROOT / "tests/genai/json_schemas.json").read_text()):
        write(out, "constraint", b"\x00" + json.dumps(schema).encode())
    for regex in [r"[A-Z][a-z]{2,8} [0-9]{2}", r"(yes|no|maybe)", r"\d{4}-\d{2}-\d{2}", r"[^\n]{0,20}\."]:
        write(out, "constraint", b"\x01" + regex.encode())
    write(out, "constraint", b"\x02" + LARK.encode())
    write(out, "constraint", b"\x03" + GBNF.encode())
    write(out, "constraint", b"\x03" + b'root ::= "a" [b-d]? ("x" | "y"){2,3} ws\nws ::= [ \\t\\n]*\n')


def main():
    out = pathlib.Path(sys.argv[1])
    shutil.rmtree(out, ignore_errors=True)
    for make in [model_seeds, tensor_seeds, tokenizer_seeds, chat_template_seeds, genai_config_seeds,
                 server_request_seeds, constraint_seeds]:
        make(out)
    for folder in sorted(out.iterdir()):
        print(f"{folder.name}: {len(os.listdir(folder))} seeds")


if __name__ == "__main__":
    main()
