#!/usr/bin/env python3
"""Real exporter output against Ember: random-initialized Hugging Face models exported by
onnxruntime-genai's model builder and by Hugging Face optimum, then run by `ember`.

usage:
  real_exports.py all --out DIR [make's and check's options]   # the whole matrix: make, then check
  real_exports.py make --out DIR [--arch llama,qwen2,...] [--size tiny|small]
                       [--exporters builder-int4,optimum-fp32,...] [--jobs 2]
  real_exports.py check --dir DIR [--ember build/ember] [--only PATTERN,...] [--speed]
                        [--threads N] [--rounds 3] [--json OUT.json] [--markdown OUT.md]

make: for each architecture (llama with llama3 RoPE scaling, qwen2, qwen3, phi3,
phi3-longrope, gemma2, gemma3 text-only, mistral) it builds a transformers model with
a fixed seed, the vocabulary and special ids of a real tokenizer from
third_party/tokenizers (copied into the folder verbatim), GQA, and for the
sliding-window architectures a window of 32 tokens (shorter than the 76 tokens of a
check) with gemma's alternating local/global layers. `tiny` is 2-4 layers at hidden
64-128 (all of make in minutes on 2 cores); `small` has Qwen2.5-0.5B widths over 4
layers, for speed. The weights are drawn wider than transformers' default (std
1.2/sqrt(hidden), not 0.02) so greedy decoding wanders instead of repeating one
token. DIR/hf/ARCH holds the model (save_pretrained + generation_config.json); each
export goes to DIR/ARCH-EXPORTER:
  builder-int4      python -m onnxruntime_genai.models.builder -i HF -o OUT -p int4 -e cpu
                    (MatMulNBits accuracy_level 4: int8 activations)
  builder-int4acc1  the same with --extra_options accuracy_level=1 (fp32 activations)
  builder-fp32      -p fp32
  optimum-fp32      optimum-cli export onnx --model HF --task text-generation-with-past OUT
  transformersjs-fp32  the optimum folder laid out as transformers.js does (onnx/model.onnx);
                    by default for qwen2 only
DIR/manifest.json records every export (success or the exporter's last error line;
DIR/logs/NAME.log has its whole output). Exported folders are never edited.

check: for each exported folder (--only: comma-separated globs; a bare word matches
as a substring) it records
  loads   `ember generate DIR --prompt-ids P --greedy --max-new-tokens 64 --json` on the
          untouched folder, P = the first 12 ids of a fixed English sentence encoded with
          the folder's tokenizer.json; Ember's error text when it refuses.
  tokens  the reference's greedy ids: onnxruntime-genai for builder folders, an
          onnxruntime.InferenceSession loop over the decoder (present -> past) for optimum
          folders. Where genai cannot run a builder folder, that loop instead, with the
          sliding window genai_config.json declares set on the graph's GroupQueryAttention
          nodes in memory (the builder's Mistral export declares its window only there,
          as Ember applies it); transformers' generate(do_sample=False) if that fails too.
          The row says which. `same`, or the first index where they part.
          A folder may part only at a near-tie of the reference: its top two logits
          closer than 2 x tolerance x RMS, Ember's and the reference's choices being
          those two; the tolerance is
          0.1 at <= 2 layers and 0.5 deeper for accuracy_level-4 folders (int8
          activations: tests/genai/genai_greedy.py), 1e-4 for float activations
          (tests/ort/compare.cpp), where a tie that close is one the reference itself
          resolves differently between a prefill and its decode steps. For fp32 exports
          the reference is also compared with the transformers model's own greedy ids
          (the export's fidelity, not Ember's).
  logit   max |Ember - ONNX Runtime| / RMS(ONNX Runtime) of the last-position logits after
          the prompt: `ember generate` shows no logits, so both run the decoder .onnx on
          the same feeds (empty past [1, kv_heads, 0, head_size]; the builder's windowed
          layers, past dim `past_sliding_length`, get an empty cache of the window's
          capacity, as ONNX Runtime requires); Ember through
          `ember run --input NAME=FILE.npy ... --output-dir D`.
  speed   (--speed, folders Ember loads) decode tokens/s, interleaved over --rounds:
          `ember bench DIR -p 0 -n 64 -r 3 --json` against onnxruntime-genai (builder
          folders; a one-token prompt then 64 decode steps in a shared buffer, as
          ember bench's tg test and tools/bench_genai.py) or the onnxruntime loop
          (optimum folders), at the same thread count. Ratio = Ember tok/s / reference
          tok/s: above 1 means Ember is faster.
It also lists graph features (GroupQueryAttention attributes, MatMulNBits accuracy
levels, tied embeddings, If nodes) and the ops `ember info` calls unsupported, prints
markdown tables and the package versions, and exits 1 if Ember fails to load a folder
or its tokens part from the reference (other than at a near-tie).
Export failures are reported, not counted.

Worked with: torch 2.15 (CPU), transformers 4.57.6, optimum 2.1.0 + optimum-onnx 0.1.0,
onnx 1.23.2, onnx-ir 1.1.0, onnxruntime 1.32.0, onnxruntime-genai 0.18.0, tokenizers 0.22.

Exporter workarounds, all applied in this script's process or in the builder's
subprocess (the `_builder` entry below), never to exported files:
  - builder 0.18 imports Qwen3_5ForConditionalGeneration and
    Qwen3_5MoeForConditionalGeneration, which transformers 4.57 lacks: stand-in classes.
  - builder 0.18 expects transformers-5 configs: it iterates config.rope_scaling (None
    for plain RoPE in 4.57, a crash) and reads rope_parameters["rope_type"] (phi3's
    longrope config, which transformers 4.57 requires as exactly {type, short_factor,
    long_factor}, has only `type`). Its config loading gets rope_scaling
    {"rope_type": "default"} for None, and rope_type copied from `type`.
  - builder 0.18 silently ignores the documented alias int4_accuracy_level=1; the
    export uses accuracy_level=1, and make checks the MatMulNBits attributes it wrote.
  - Phi3Config's default original_max_position_embeddings (4096) differs from our
    max_position_embeddings, which sends the builder to its LongRoPE class (KeyError
    'multi_cache'): plain phi3 sets them equal.
  - the builder writes a cache folder (-c): a temporary one per export.
Known export differences this check shows (not Ember's): the builder's Mistral graph has
no window (local_window_size=-1; MistralConfig has no layer_types) while its
genai_config.json declares one on `layers: []`, and onnxruntime-genai 0.18 fails on it
once the sequence outgrows its windowed KV buffer (48 positions for a window of 32); phi3 LongRoPE exports part from transformers at the first
token past original_max_position_embeddings, where transformers' Phi3 drops its KV cache
and re-reads the whole sequence with the long factors; optimum without `accelerate`
stores tied embeddings twice.
"""
import argparse
import fnmatch
import functools
import importlib.metadata
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
TOKENIZERS = ROOT / "third_party" / "tokenizers"
SEED = 1234
WINDOW = 32
PROMPT_TOKENS = 12
NEW_TOKENS = 64
SENTENCE = "The quick brown fox jumps over the lazy dog while the old farmer watches from his porch at dawn."
PACKAGES = ["torch", "transformers", "optimum", "optimum-onnx", "onnx", "onnx-ir", "onnxruntime",
            "onnxruntime-genai", "tokenizers", "numpy"]

SIZES = {
    "tiny": dict(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, head_dim=32),
    "small": dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=4, num_attention_heads=14,
                  num_key_value_heads=2, head_dim=64),
}
GEMMA_TINY = dict(hidden_size=64, num_hidden_layers=4)  # 262k vocabulary: keep the tied embedding small
LONGROPE_ORIGINAL = 64  # < the 76 tokens of a check: the long factors take over mid-generation

# arch: transformers config class, tokenizer folder, widths changed at --size tiny, extra config
ARCHS = {
    "llama": ("LlamaConfig", "llama3_2", {}, dict(
        tie_word_embeddings=True, rope_theta=500000.0,
        rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                          original_max_position_embeddings=256))),
    "qwen2": ("Qwen2Config", "qwen2_5", {}, dict(tie_word_embeddings=True)),
    "qwen3": ("Qwen3Config", "qwen3", dict(head_dim=64), dict(tie_word_embeddings=True)),
    # original == max position embeddings: the builder's plain Phi3MiniModel (else its LongRoPE class)
    "phi3": ("Phi3Config", "llama2", {}, dict(tie_word_embeddings=False, original_max_position_embeddings=2048)),
    "phi3-longrope": ("Phi3Config", "llama2", {}, dict(tie_word_embeddings=False)),
    "gemma2": ("Gemma2Config", "gemma3", GEMMA_TINY, dict(
        sliding_window=WINDOW, layer_types=["sliding_attention", "full_attention"] * 2)),
    "gemma3": ("Gemma3TextConfig", "gemma3", GEMMA_TINY, dict(
        sliding_window=WINDOW,
        layer_types=["sliding_attention", "sliding_attention", "full_attention", "sliding_attention"])),
    "mistral": ("MistralConfig", "mistral_nemo", dict(head_dim=64), dict(
        tie_word_embeddings=False, sliding_window=WINDOW)),
}

BUILDER = {"builder-int4": (["-p", "int4"], 4),
           "builder-int4acc1": (["-p", "int4", "--extra_options", "accuracy_level=1"], 1),
           "builder-fp32": (["-p", "fp32"], None)}
EXPORTERS = [*BUILDER, "optimum-fp32", "transformersjs-fp32"]
TRANSFORMERSJS_ARCH = "qwen2"  # the one arch that gets a transformers.js layout by default


def run_builder(argv):
    """The model builder's command line with the workarounds the module docstring lists."""
    import runpy

    import transformers
    for name in ("Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration"):
        if not hasattr(transformers, name):
            setattr(transformers, name, type(name, (), {}))
    load = transformers.AutoConfig.from_pretrained.__func__

    def from_pretrained(cls, *args, **kwargs):
        loaded = load(cls, *args, **kwargs)
        config = loaded[0] if isinstance(loaded, tuple) else loaded
        rope = getattr(config, "rope_scaling", None)
        if rope is None:
            config.rope_scaling = {"rope_type": "default"}
        elif "rope_type" not in rope:
            rope["rope_type"] = rope["type"]
        return loaded

    transformers.AutoConfig.from_pretrained = classmethod(from_pretrained)
    sys.argv = ["onnxruntime_genai.models.builder", *argv]
    runpy.run_module("onnxruntime_genai.models.builder", run_name="__main__", alter_sys=True)


def versions():
    result = {}
    for package in PACKAGES:
        try:
            result[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            result[package] = "absent"
    return result


def select(spec, choices, what):
    if not spec:
        return list(choices)
    wanted = spec.split(",")
    unknown = [w for w in wanted if w not in choices]
    if unknown:
        sys.exit(f"unknown {what}: {', '.join(unknown)} (choose from {', '.join(choices)})")
    return wanted


# ---------------------------------------------------------------- make


def arch_config(arch, size, tokenizer):
    import transformers
    class_name, _, tiny, extra = ARCHS[arch]
    widths = dict(SIZES[size], **(tiny if size == "tiny" else {}))
    config = dict(widths, **extra, vocab_size=len(tokenizer), bos_token_id=tokenizer.bos_token_id,
                  eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                  max_position_embeddings=2048, initializer_range=1.2 / widths["hidden_size"] ** 0.5)
    if arch.startswith("gemma"):
        config["query_pre_attn_scalar"] = widths["head_dim"]
    if arch == "phi3-longrope":
        half = widths["head_dim"] // 2
        config.update(max_position_embeddings=4096, original_max_position_embeddings=LONGROPE_ORIGINAL,
                      rope_scaling=dict(type="longrope", short_factor=[1.0 + 0.5 * i / half for i in range(half)],
                                        long_factor=[1.0 + 7.0 * i / half for i in range(half)]))
    return getattr(transformers, class_name)(**config)


def make_hf_model(arch, size, folder):
    """A random-initialized model with a real tokenizer, saved as Hugging Face does."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig
    source = TOKENIZERS / ARCHS[arch][1]
    tokenizer = AutoTokenizer.from_pretrained(source)
    config = arch_config(arch, size, tokenizer)
    torch.manual_seed(SEED)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32).eval()
    shutil.rmtree(folder, ignore_errors=True)
    model.save_pretrained(folder)
    GenerationConfig(bos_token_id=config.bos_token_id, eos_token_id=config.eos_token_id,
                     pad_token_id=config.pad_token_id, do_sample=False).save_pretrained(folder)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(source / name, folder / name)
    return folder


def accuracy_levels(model_path):
    import onnx
    graph = onnx.load(model_path, load_external_data=False).graph
    return sorted({a.i for n in graph.node if n.op_type == "MatMulNBits" for a in n.attribute
                   if a.name == "accuracy_level"})


def export_command(exporter, hf, out, cache):
    if exporter in BUILDER:
        return [sys.executable, str(Path(__file__).resolve()), "_builder", "-i", str(hf), "-o", str(out),
                "-e", "cpu", "-c", str(cache), *BUILDER[exporter][0]]
    cli = Path(sys.executable).parent / "optimum-cli"
    return [str(cli) if cli.exists() else "optimum-cli", "export", "onnx", "--model", str(hf),
            "--task", "text-generation-with-past", str(out)]


def transformersjs_layout(source, out):
    """The optimum folder's files, with the .onnx (and its external data) under onnx/."""
    (out / "onnx").mkdir(parents=True)
    for f in source.iterdir():
        shutil.copy2(f, out / "onnx" / f.name if f.name.startswith("model.onnx") else out / f.name)


def run_export(out_dir, arch, exporter, hf):
    """Exports one folder; returns its manifest entry (status ok, or failed with the error)."""
    name = f"{arch}-{exporter}"
    out, log = out_dir / name, out_dir / "logs" / f"{name}.log"
    shutil.rmtree(out, ignore_errors=True)
    entry = dict(arch=arch, exporter=exporter, hf=str(hf), status="ok", error="")
    start, command, output = time.perf_counter(), [], ""
    if exporter == "transformersjs-fp32":
        source = out_dir / f"{arch}-optimum-fp32"
        if (source / "model.onnx").exists():
            transformersjs_layout(source, out)
            command = ["copy", str(source)]
        else:
            entry.update(status="failed", error=f"needs {source.name} (make it with --exporters optimum-fp32)")
    else:
        with tempfile.TemporaryDirectory() as cache:
            command = export_command(exporter, hf, out, cache)
            run = subprocess.run(command, capture_output=True, text=True)
        output = run.stdout + run.stderr
        if run.returncode != 0 or not (out / "model.onnx").exists():
            lines = [line for line in output.splitlines() if line.strip()]
            errors = [line for line in lines if "Error" in line or "Exception" in line]
            entry.update(status="failed", error=(errors or lines or [f"exit status {run.returncode}"])[-1])
        elif exporter in BUILDER and BUILDER[exporter][1] is not None:
            levels = accuracy_levels(out / "model.onnx")
            if levels != [BUILDER[exporter][1]]:
                entry.update(status="failed", error=f"MatMulNBits accuracy_level {levels}, asked for "
                                                    f"{BUILDER[exporter][1]}")
    log.write_text(" ".join(command) + "\n\n" + output)
    entry["seconds"] = round(time.perf_counter() - start, 1)
    print(f"{name}: {entry['status']} in {entry['seconds']} s {entry['error']}", flush=True)
    return name, entry


def cmd_make(args):
    out = Path(args.out).resolve()
    archs = select(args.arch, ARCHS, "architecture")
    exporters = select(args.exporters, EXPORTERS, "exporter")
    (out / "logs").mkdir(parents=True, exist_ok=True)
    manifest_path = out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {"exports": {}}
    manifest.update(size=args.size, versions=versions())
    start = time.perf_counter()
    hf = {}
    for arch in archs:
        hf[arch] = make_hf_model(arch, args.size, out / "hf" / arch)
        print(f"{arch}: Hugging Face model in {hf[arch]}", flush=True)
    jobs = [(a, e) for e in exporters for a in archs
            if args.exporters or e != "transformersjs-fp32" or a == TRANSFORMERSJS_ARCH]
    first = [j for j in jobs if j[1] != "transformersjs-fp32"]
    with ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda j: run_export(out, j[0], j[1], hf[j[0]]), first))
    results += [run_export(out, a, e, hf[a]) for a, e in jobs if e == "transformersjs-fp32"]
    manifest["exports"].update(dict(results))
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")
    failed = [name for name, entry in results if entry["status"] != "ok"]
    print(f"{len(results) - len(failed)} exported, {len(failed)} failed ({', '.join(failed) or 'none'}) "
          f"in {time.perf_counter() - start:.0f} s; manifest {manifest_path}")
    return 1 if failed else 0


# ---------------------------------------------------------------- references


def model_path(folder):
    return folder / "model.onnx" if (folder / "model.onnx").exists() else folder / "onnx" / "model.onnx"


def kv_geometry(folder):
    """(kv_heads, head_size, window) from the folder's genai_config.json, else its config.json (window 0)."""
    if (folder / "genai_config.json").exists():
        decoder = json.loads((folder / "genai_config.json").read_text())["model"]["decoder"]
        window = decoder.get("sliding_window", {}).get("window_size", 0)
        return decoder["num_key_value_heads"], decoder["head_size"], window
    config = json.loads((folder / "config.json").read_text())
    heads = config["num_attention_heads"]
    return config.get("num_key_value_heads", heads), config.get("head_dim") or config["hidden_size"] // heads, 0


def with_declared_window(folder):
    """The decoder (serialized, in memory) with genai_config.json's sliding window on the GroupQueryAttention
    nodes of the windowed layers (all when `layers` is empty) that have none: the builder's Mistral export
    declares its window only in genai_config.json, which onnxruntime-genai 0.18 then fails to run."""
    import onnx
    decoder = json.loads((folder / "genai_config.json").read_text())["model"]["decoder"]
    window = decoder["sliding_window"]
    layers = window["layers"] or range(decoder["num_hidden_layers"])
    pasts = {decoder["inputs"]["past_key_names"] % layer for layer in layers}
    model = onnx.load(str(model_path(folder)))
    for node in model.graph.node:
        if node.op_type == "GroupQueryAttention" and len(node.input) > 3 and node.input[3] in pasts:
            for a in node.attribute:
                if a.name == "local_window_size" and a.i <= 0:
                    a.i = window["window_size"]
    return model.SerializeToString()


class OrtDecoder:
    """The exported decoder in an onnxruntime.InferenceSession, fed as onnxruntime-genai feeds it."""

    def __init__(self, folder, threads=0, declared_window=False):
        import onnxruntime as ort
        options = ort.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
        model = with_declared_window(folder) if declared_window else str(model_path(folder))
        self.session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        self.kv_heads, self.head_size, self.window = kv_geometry(folder)
        self.inputs = {i.name: i for i in self.session.get_inputs()}
        self.outputs = [o.name for o in self.session.get_outputs()]
        self.logits_index = self.outputs.index("logits")

    def feeds(self, tokens, past=None, past_length=0):
        """Feeds for `tokens` after `past` (output name -> array; None: an empty cache). The builder's windowed
        layers (GroupQueryAttention sliding_window_cache=1, past dim `past_sliding_length`) take an empty
        cache of the window's capacity: ONNX Runtime refuses a smaller one."""
        feeds = {}
        for name, info in self.inputs.items():
            if name == "input_ids":
                feeds[name] = np.array([tokens], np.int64)
            elif name == "attention_mask":
                feeds[name] = np.ones((1, past_length + len(tokens)), np.int64)
            elif name == "position_ids":
                feeds[name] = np.arange(past_length, past_length + len(tokens), dtype=np.int64)[None]
            elif past is not None:
                feeds[name] = past[name.replace("past_key_values", "present")]
            else:
                dtype = np.float16 if "float16" in info.type else np.float32
                capacity = self.window if info.shape[2] == "past_sliding_length" else 0
                feeds[name] = np.zeros((1, self.kv_heads, capacity, self.head_size), dtype)
        return feeds

    def step(self, tokens, past=None, past_length=0):
        results = self.session.run(None, self.feeds(tokens, past, past_length))
        return results[self.logits_index][0, -1], dict(zip(self.outputs, results))

    def logits(self, tokens):
        return self.step(tokens)[0].astype(np.float64)

    def greedy(self, prompt, eos):
        tokens, (logits, past) = [], self.step(prompt)
        while len(tokens) < NEW_TOKENS:
            token = int(np.argmax(logits))
            if token in eos:
                break
            tokens.append(token)
            logits, past = self.step([token], past, len(prompt) + len(tokens) - 1)
        return tokens

    def decode_rate(self, first_token):
        """Tokens/s of NEW_TOKENS single-token steps after a one-token prompt."""
        logits, past = self.step([first_token])
        start = time.perf_counter()
        for i in range(NEW_TOKENS):
            logits, past = self.step([int(np.argmax(logits))], past, i + 1)
        return NEW_TOKENS / (time.perf_counter() - start)


def genai_greedy(folder, prompt):
    import onnxruntime_genai as og
    model = og.Model(str(folder))
    params = og.GeneratorParams(model)
    params.set_search_options(do_sample=False, max_length=len(prompt) + NEW_TOKENS, min_length=0)
    generator = og.Generator(model, params)
    generator.append_tokens(prompt)
    while not generator.is_done():
        generator.generate_next_token()
    return [int(t) for t in generator.get_sequence(0)[len(prompt):]]


@functools.lru_cache(maxsize=4)
def transformers_greedy(hf, prompt):
    """The Hugging Face model's own greedy continuation of the prompt (a tuple), a final EOS left out."""
    import torch
    from transformers import AutoModelForCausalLM
    eos = sorted(eos_ids(hf))
    model = AutoModelForCausalLM.from_pretrained(hf, dtype=torch.float32).eval()
    ids = torch.tensor([prompt])
    with torch.no_grad():
        out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=NEW_TOKENS,
                             eos_token_id=eos, pad_token_id=eos[0])
    tokens = out[0, len(prompt):].tolist()
    return tokens[:-1] if tokens and tokens[-1] in eos else tokens


def eos_ids(hf):
    eos = json.loads((Path(hf) / "generation_config.json").read_text()).get("eos_token_id")
    return set(eos if isinstance(eos, list) else [eos])


def reference_tokens(folder, entry, prompt, decoder):
    """(tokens, which reference, its OrtDecoder for near-ties or None, why not the first choice):
    onnxruntime-genai for builder folders, else the onnxruntime loop; where genai fails, that loop with the
    window genai_config.json declares (when it declares one), transformers last."""
    eos = eos_ids(entry["hf"])
    if not (folder / "genai_config.json").exists():
        return decoder.greedy(prompt, eos), "onnxruntime loop", decoder, None
    try:
        return genai_greedy(folder, prompt), "onnxruntime-genai", decoder, None
    except Exception as e:  # noqa: BLE001 - whatever genai raises, the next reference is tried
        why = f"onnxruntime-genai failed: {one_line(e)}"
    declared = "sliding_window" in json.loads((folder / "genai_config.json").read_text())["model"]["decoder"]
    try:
        windowed = OrtDecoder(folder, declared_window=True) if declared else decoder
        name = "onnxruntime loop, declared window" if declared else "onnxruntime loop"
        return windowed.greedy(prompt, eos), name, windowed, why
    except Exception as e:  # noqa: BLE001
        why += f"; the onnxruntime loop failed: {one_line(e)}"
    return transformers_greedy(entry["hf"], tuple(prompt)), "transformers", None, why


# ---------------------------------------------------------------- Ember


def one_line(error, limit=600):
    text = " | ".join(line.strip() for line in str(error).strip().splitlines() if line.strip())
    return text if len(text) <= limit else text[:limit] + "..."


def ember_generate(ember, folder, prompt):
    """(tokens with a final EOS left out as genai does, None) or (None, Ember's error)."""
    run = subprocess.run([ember, "generate", str(folder), "--prompt-ids", ",".join(map(str, prompt)), "--greedy",
                          "--max-new-tokens", str(NEW_TOKENS), "--json"], capture_output=True, text=True)
    if run.returncode != 0:
        return None, one_line(run.stderr or run.stdout or f"exit status {run.returncode}")
    result = json.loads(run.stdout)
    tokens = result["generated_tokens"]
    return (tokens[:-1] if result["stop_reason"] == "eos" else tokens), None


def ember_logits(ember, decoder, folder, prompt):
    """Ember's last-position logits for the prompt through `ember run` on the decoder's feeds."""
    with tempfile.TemporaryDirectory() as tmp:
        inputs = []
        for name, array in decoder.feeds(prompt).items():
            np.save(os.path.join(tmp, f"{name}.npy"), array)
            inputs += ["--input", f"{name}={os.path.join(tmp, name)}.npy"]
        run = subprocess.run([ember, "run", str(model_path(folder)), *inputs, "--output-dir", tmp],
                             capture_output=True, text=True)
        if run.returncode != 0:
            raise RuntimeError(one_line(run.stderr or run.stdout or f"exit status {run.returncode}"))
        return np.load(os.path.join(tmp, f"output_{decoder.logits_index}.npy"))[0, -1].astype(np.float64)


def ember_decode_rate(ember, folder, threads):
    out = subprocess.run([ember, "bench", str(folder), "-p", "0", "-n", str(NEW_TOKENS), "-r", "3", "--threads",
                          str(threads), "--json"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)["results"][0]["avg_ts"]


def genai_decode_rate(model, first_token):
    import onnxruntime_genai as og
    generator = og.Generator(model, og.GeneratorParams(model))
    generator.append_tokens([first_token])
    generator.generate_next_token()  # only chooses the first token: append_tokens ran the model
    start = time.perf_counter()
    for _ in range(NEW_TOKENS):
        generator.generate_next_token()
    return NEW_TOKENS / (time.perf_counter() - start)


def genai_speed_folder(folder, threads, tmp):
    """A linked copy of the folder whose genai_config.json sets threads and a small shared KV buffer."""
    for f in folder.iterdir():
        if f.name != "genai_config.json":
            os.symlink(f, os.path.join(tmp, f.name))
    config = json.loads((folder / "genai_config.json").read_text())
    session = config["model"]["decoder"].setdefault("session_options", {})
    session.update(intra_op_num_threads=threads, inter_op_num_threads=1)
    config["search"].update(max_length=NEW_TOKENS + 2, min_length=0, do_sample=False,
                            past_present_share_buffer=True)
    Path(tmp, "genai_config.json").write_text(json.dumps(config, indent=2))
    return tmp


def speed(ember, folder, threads, rounds, first_token, reference_name):
    """Median decode tokens/s of Ember and of the reference (genai or the onnxruntime loop), interleaved."""
    samples = {"ember": [], "ref": []}
    with tempfile.TemporaryDirectory() as tmp:
        if reference_name == "onnxruntime-genai":
            import onnxruntime_genai as og
            model = og.Model(genai_speed_folder(folder, threads, tmp))
            reference = lambda: genai_decode_rate(model, first_token)  # noqa: E731
        else:
            decoder = OrtDecoder(folder, threads, reference_name.endswith("declared window"))
            reference = lambda: decoder.decode_rate(first_token)  # noqa: E731
        reference()  # untimed: first touch of weights and buffers, as ember bench does
        for r in range(rounds):
            for side in (("ember", "ref") if r % 2 == 0 else ("ref", "ember")):
                samples[side].append(ember_decode_rate(ember, folder, threads) if side == "ember"
                                     else statistics.mean(reference() for _ in range(3)))
    return statistics.median(samples["ember"]), statistics.median(samples["ref"])


# ---------------------------------------------------------------- check


# x RMS of the logits per runtime with float activations: tests/ort/compare.cpp
# decoder_logits_tolerance, two orders of magnitude above the ~1e-6 measured.
FLOAT_TOLERANCE = 1e-4


def int8_tolerance(layers):
    """x RMS of the logits per runtime with int8 activations (tests/ort/compare.cpp decoder_logits_tolerance)."""
    return 0.1 if layers <= 2 else 0.5


def first_difference(a, b):
    return next(i for i in range(min(len(a), len(b)) + 1) if i == len(a) or i == len(b) or a[i] != b[i])


def compare_tokens(entry, prompt, expected, got, decoder):
    """(verdict, ok): `same`, or where the sequences part and whether a near-tie of the reference's logits
    (`decoder`'s) excuses it."""
    if got == expected:
        return "same", True
    k = first_difference(got, expected)
    if k == min(len(got), len(expected)):
        return f"diverge@{k} (lengths {len(got)} vs {len(expected)})", False
    if decoder is None:
        return f"diverge@{k}", False
    layers = json.loads((Path(entry["hf"]) / "config.json").read_text())["num_hidden_layers"]
    tolerance = int8_tolerance(layers) if entry["exporter"] == "builder-int4" else FLOAT_TOLERANCE
    logits = decoder.logits(prompt + expected[:k])
    top = np.argsort(logits)[::-1][:2]
    gap = (logits[top[0]] - logits[top[1]]) / np.sqrt(np.mean(logits ** 2))
    # The two are the reference's top two, in either order: at a tie this close the
    # reference's prefill of the same tokens may rank them the other way than its decode did.
    tie = {int(top[0]), int(top[1])} == {expected[k], got[k]} and gap < 2 * tolerance
    return f"diverge@{k} ({'near-tie' if tie else 'no tie'}: top-2 gap {gap:.3f} x RMS, limit {2 * tolerance})", tie


def export_fidelity(entry, prompt, expected):
    """fp32 exports only: does the reference follow the transformers model's own greedy tokens?"""
    if not entry["exporter"].endswith("fp32"):
        return "-"
    hf = transformers_greedy(entry["hf"], tuple(prompt))
    return "same" if hf == expected else f"diverge@{first_difference(hf, expected)}"


def graph_features(path):
    """Notable ops and attributes of an exported decoder, subgraphs included."""
    import onnx
    graph = onnx.load(path, load_external_data=False).graph
    nodes, stack = [], [graph]
    while stack:
        g = stack.pop()
        nodes += g.node
        stack += [a.g for n in g.node for a in n.attribute if a.type == onnx.AttributeProto.GRAPH]
    ops = Counter(n.op_type for n in nodes)
    notes = [f"{op}x{ops[op]}" for op in ("GroupQueryAttention", "MultiHeadAttention", "RotaryEmbedding", "If",
                                          "GatherBlockQuantized", "MatMulNBits") if ops[op]]
    attributes = {}
    for n in nodes:
        if n.op_type in ("GroupQueryAttention", "MatMulNBits"):
            for a in n.attribute:
                if a.name in ("local_window_size", "softcap", "sliding_window_cache", "do_rotary", "accuracy_level"):
                    value = round(a.f, 3) if a.type == onnx.AttributeProto.FLOAT else a.i
                    attributes.setdefault(a.name, set()).add(value)
    notes += [f"{k}={'/'.join(map(str, sorted(v)))}" for k, v in sorted(attributes.items())]
    initializers = {i.name for i in graph.initializer if np.prod(i.dims) >= 1 << 16}  # weights, not constants
    users = {}
    for n in graph.node:
        for name in n.input:
            if name in initializers:
                users.setdefault(name, set()).add(n.op_type)
    notes += sorted({f"shared weight via {'+'.join(sorted(u))}" for u in users.values() if len(u) > 1})
    return ", ".join(notes) or "-"


def unsupported_ops(ember, path):
    run = subprocess.run([ember, "info", str(path)], capture_output=True, text=True)
    lines = [line for line in run.stdout.splitlines() if line.startswith("unsupported ops:")]
    return lines[0].split(":", 1)[1].strip() if lines else one_line(run.stderr or "ember info failed")


def check_folder(args, name, entry):
    """One row of the matrix; row['failed'] when Ember refuses the folder or its tokens part."""
    from tokenizers import Tokenizer
    folder = Path(args.dir) / name
    row = dict(folder=name, export=entry["status"], notes=[], failed=False)
    if entry["status"] != "ok":
        row["notes"].append(f"export failed: {entry['error']}")
        return row
    path = model_path(folder)
    row.update(features=graph_features(path), unsupported=unsupported_ops(args.ember, path))
    prompt = Tokenizer.from_file(str(folder / "tokenizer.json")).encode(SENTENCE).ids[:PROMPT_TOKENS]
    got, error = ember_generate(args.ember, folder, prompt)
    row.update(prompt=prompt, loads=error is None, ember_tokens=got)
    if error:
        row["notes"].append(f"Ember: {error}")
    decoder = OrtDecoder(folder)
    reference = decoder.logits(prompt)
    try:
        worst = np.max(np.abs(ember_logits(args.ember, decoder, folder, prompt) - reference))
        row["logit_err"] = float(worst / np.sqrt(np.mean(reference ** 2)))
    except RuntimeError as e:
        row["notes"].append(f"ember run: {e}")
    expected, row["reference"], reference_decoder, why = reference_tokens(folder, entry, prompt, decoder)
    row.update(ref_tokens=expected, ref_vs_transformers=export_fidelity(entry, prompt, expected))
    if why:
        row["notes"].append(f"reference is the {row['reference']}: {why}")
    if got is not None:
        row["tokens"], tokens_ok = compare_tokens(entry, prompt, expected, got, reference_decoder)
        row["failed"] = not tokens_ok
        if args.speed and row["reference"] != "transformers":
            row["ember_tps"], row["ref_tps"] = speed(args.ember, folder, args.threads, args.rounds, prompt[0],
                                                     row["reference"])
    row["failed"] = row["failed"] or not row["loads"]
    return row


def physical_cores():
    cores = set()
    for cpu in Path("/sys/devices/system/cpu").glob("cpu[0-9]*/topology"):
        cores.add(((cpu / "physical_package_id").read_text(), (cpu / "core_id").read_text()))
    return len(cores) or os.cpu_count()


def selected(name, only):
    patterns = [p if any(c in p for c in "*?[") else f"*{p}*" for p in only.split(",")] if only else ["*"]
    return any(fnmatch.fnmatch(name, p) for p in patterns)


def markdown(rows, meta):
    def cell(row, key, fmt):
        return fmt(row[key]) if row.get(key) is not None else "-"

    lines = [f"Ember {meta['ember']} on {meta['size']} models; {meta['threads']} threads for speed; "
             + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()), "",
             "| folder | loads | reference | tokens (same / diverge@i) | logit err ×RMS | Ember tok/s "
             "| ref tok/s | speed ratio Ember/ref (>1: Ember faster) |",
             "| --- | --- | --- | --- | ---: | ---: | ---: | ---: |"]
    for r in rows:
        loads = ("export failed" if r["export"] != "ok" else "?" if r.get("loads") is None
                 else "yes" if r["loads"] else "**no**")
        ratio = f"{r['ember_tps'] / r['ref_tps']:.2f}" if r.get("ember_tps") else "-"
        tokens = r.get("tokens") or ("-" if not r.get("ref_tokens") else "(ref only)")
        lines.append(f"| {r['folder']} | {loads} | {r.get('reference', '-')} | {'**' * r['failed']}{tokens}"
                     f"{'**' * r['failed']} | {cell(r, 'logit_err', lambda v: f'{v:.2e}')} | "
                     f"{cell(r, 'ember_tps', lambda v: f'{v:.1f}')} | {cell(r, 'ref_tps', lambda v: f'{v:.1f}')} "
                     f"| {ratio} |")
    lines += ["", "| folder | reference vs transformers greedy (fp32 exports) | graph features "
                  "| ops Ember calls unsupported |", "| --- | --- | --- | --- |"]
    lines += [f"| {r['folder']} | {r.get('ref_vs_transformers', '-')} | {r.get('features', '-')} "
              f"| {r.get('unsupported', '-')} |" for r in rows]
    lines += ["", "Notes:"] + [f"- {r['folder']}: {note}" for r in rows for note in r["notes"]]
    return "\n".join(lines) + "\n"


def cmd_check(args):
    folder = Path(args.dir)
    manifest = json.loads((folder / "manifest.json").read_text())
    args.threads = args.threads or physical_cores()
    start, rows = time.perf_counter(), []
    for name, entry in sorted(manifest["exports"].items()):
        if selected(name, args.only):
            try:
                rows.append(check_folder(args, name, entry))
            except Exception as e:  # noqa: BLE001 - one broken folder must not hide the rest of the matrix
                rows.append(dict(folder=name, export=entry["status"], loads=None, failed=True,
                                 notes=[f"the check itself failed: {type(e).__name__}: {one_line(e)}"]))
            print(f"{name}: {'FAILED' if rows[-1]['failed'] else 'ok'} {rows[-1].get('tokens', '')}", flush=True)
    meta = dict(ember=args.ember, size=manifest.get("size"), threads=args.threads, versions=versions(),
                seconds=round(time.perf_counter() - start, 1))
    report = markdown(rows, meta)
    print(report)
    if args.markdown:
        Path(args.markdown).write_text(report)
    if args.json:
        Path(args.json).write_text(json.dumps(dict(meta, rows=rows), indent=2) + "\n")
    failed = [r["folder"] for r in rows if r["failed"]]
    print(f"{len(rows) - len(failed)} ok, {len(failed)} failed ({', '.join(failed) or 'none'}) in {meta['seconds']} s")
    return 1 if failed else 0


def main():
    if sys.argv[1:2] == ["_builder"]:  # internal: the builder subprocess of `make`
        return run_builder(sys.argv[2:])
    make_opts = argparse.ArgumentParser(add_help=False)
    make_opts.add_argument("--arch", default="", help=f"comma-separated, of {','.join(ARCHS)} (default: all)")
    make_opts.add_argument("--size", choices=list(SIZES), default="tiny")
    make_opts.add_argument("--exporters", default="", help=f"comma-separated, of {','.join(EXPORTERS)} (default: "
                                                           f"all, transformersjs-fp32 for {TRANSFORMERSJS_ARCH} only)")
    make_opts.add_argument("--jobs", type=int, default=2, help="exports run at once")
    check_opts = argparse.ArgumentParser(add_help=False)
    check_opts.add_argument("--ember", default=str(ROOT / "build" / "ember"))
    check_opts.add_argument("--only", default="", help="comma-separated globs over folder names (bare word: substring)")
    check_opts.add_argument("--speed", action="store_true", help="also measure decode tokens/s")
    check_opts.add_argument("--threads", type=int, default=0, help="threads for speed (default: physical cores)")
    check_opts.add_argument("--rounds", type=int, default=3, help="interleaved speed rounds (at least 3)")
    check_opts.add_argument("--json")
    check_opts.add_argument("--markdown")
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("make", parents=[make_opts], help="build the models and export them").add_argument(
        "--out", required=True)
    commands.add_parser("check", parents=[check_opts], help="run Ember on the exports against the references"
                        ).add_argument("--dir", required=True)
    commands.add_parser("all", parents=[make_opts, check_opts], help="make, then check the same folder").add_argument(
        "--out", required=True)
    args = parser.parse_args()
    if args.command != "make" and args.rounds < 3:
        parser.error("--rounds must be at least 3")
    if args.command == "make":
        return cmd_make(args)
    if args.command == "check":
        return cmd_check(args)
    made = cmd_make(args)
    args.dir = args.out
    return max(made, cmd_check(args))

if __name__ == "__main__":
    sys.exit(main())
