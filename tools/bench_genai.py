#!/usr/bin/env python3
"""Ember's `ember bench` against onnxruntime-genai on the same model folder, interleaved.

Both measure as llama-bench does: pp = one prefill of P random tokens into an
empty KV cache; tg = N decode steps (model run + greedy choice) after a one-token
prompt, with a KV cache of max(P, N + 1) tokens shared between past and present.
onnxruntime-genai runs in this process (its own ONNX Runtime from PyPI); Ember runs
as `ember bench -r 1 --json` subprocesses. Each round runs Ember, genai and genai
again (the null control: genai against itself), in an order that alternates
between rounds so slow drift of the shared machine does not favour either side.

Needs onnxruntime-genai (PyPI), e.g. in a virtual environment:
    python3 -m venv /tmp/genai-venv && /tmp/genai-venv/bin/pip install onnxruntime-genai numpy
    /tmp/genai-venv/bin/python tools/bench_genai.py /tmp/fix/qwen05-int4 --ember build/ember \\
        -p 512 -n 128 --threads 1,2 --rounds 7
Prints a markdown table: per test and thread count, the p50 tokens/s of each,
the time ratio Ember/genai (lower is better) with its min-max spread over
rounds, the speedup (1 / ratio), and the genai/genai null ratio.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnxruntime_genai as og


def genai_folder(model_dir, threads, capacity, out_dir):
    """A copy of the folder (files linked) whose genai_config.json sets the threads and KV capacity."""
    for name in os.listdir(model_dir):
        if name != "genai_config.json":
            os.symlink(os.path.abspath(os.path.join(model_dir, name)), os.path.join(out_dir, name))
    with open(os.path.join(model_dir, "genai_config.json")) as f:
        config = json.load(f)
    session = config["model"]["decoder"].setdefault("session_options", {})
    session["intra_op_num_threads"] = threads
    session["inter_op_num_threads"] = 1
    search = config.setdefault("search", {})
    search.update(max_length=capacity, min_length=0, do_sample=False, past_present_share_buffer=True)
    with open(os.path.join(out_dir, "genai_config.json"), "w") as f:
        json.dump(config, f, indent=2)
    return out_dir


def genai_prompt(model, vocab, p, rng):
    generator = og.Generator(model, og.GeneratorParams(model))
    tokens = rng.integers(0, vocab, size=p, dtype=np.int32)
    start = time.perf_counter()
    generator.append_tokens(tokens)
    return p / (time.perf_counter() - start)


def genai_generation(model, vocab, n, rng):
    generator = og.Generator(model, og.GeneratorParams(model))
    generator.append_tokens(rng.integers(0, vocab, size=1, dtype=np.int32))
    # append_tokens computed the logits; this call only chooses the first token.
    generator.generate_next_token()
    start = time.perf_counter()
    for _ in range(n):
        generator.generate_next_token()  # one model run on the last token, then the greedy choice
    return n / (time.perf_counter() - start)


def ember_rates(ember, model_dir, threads, p, n):
    out = subprocess.run([ember, "bench", model_dir, "-p", str(p), "-n", str(n), "-r", "1", "--threads",
                          str(threads), "--json"], check=True, capture_output=True, text=True).stdout
    return {r["test"]: r["avg_ts"] for r in json.loads(out)["results"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model_dir")
    ap.add_argument("--ember", default="build/ember")
    ap.add_argument("-p", type=int, default=512)
    ap.add_argument("-n", type=int, default=128)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    with open(os.path.join(args.model_dir, "genai_config.json")) as f:
        vocab = json.load(f)["model"]["vocab_size"]
    tests = [(f"pp{args.p}", lambda m: genai_prompt(m, vocab, args.p, rng)),
             (f"tg{args.n}", lambda m: genai_generation(m, vocab, args.n, rng))]
    print(f"onnxruntime-genai {og.__version__}; model {args.model_dir}; {args.rounds} rounds\n")
    print("| test | threads | Ember t/s (p50) | genai t/s (p50) | time ratio Ember/genai (p50, min-max) "
          "| speedup | null genai/genai (p50) |")
    print("| --- | ---: | ---: | ---: | --- | ---: | ---: |")
    for threads in (int(t) for t in args.threads.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            model = og.Model(genai_folder(args.model_dir, threads, max(args.p, args.n + 1), tmp))
            for _, run in tests:  # untimed: first touch of weights and buffers, as ember bench does
                run(model)
            samples = {name: {"ember": [], "genai": [], "null": []} for name, _ in tests}
            for r in range(args.rounds):
                order = ["ember", "genai", "null"] if r % 2 == 0 else ["null", "genai", "ember"]
                for side in order:
                    if side == "ember":
                        for name, rate in ember_rates(args.ember, args.model_dir, threads, args.p, args.n).items():
                            samples[name]["ember"].append(rate)
                    else:
                        for name, run in tests:
                            samples[name][side].append(run(model))
            del model
        for name, _ in tests:
            s = samples[name]
            ratios = [g / e for e, g in zip(s["ember"], s["genai"])]  # time ratio = inverse rate ratio
            null = [g / n for g, n in zip(s["genai"], s["null"])]
            ratio = statistics.median(ratios)
            print(f"| {name} | {threads} | {statistics.median(s['ember']):.2f} | {statistics.median(s['genai']):.2f} "
                  f"| {ratio:.3f} ({min(ratios):.3f}-{max(ratios):.3f}) | {1 / ratio:.2f}x "
                  f"| {statistics.median(null):.3f} |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
