#!/usr/bin/env python3
"""Encode throughput of Ember's tokenizer against Hugging Face `tokenizers`, interleaved.

The texts: the tokenizer tests' multilingual corpus (tests/genai/tokenizer_corpus.json:
code, emoji, CJK, RTL, whitespace runs, special tokens) plus README.md and
docs/architecture.md (English prose with code), each encoded separately without
added special tokens. Ember runs as `ember_micro --benchmark_filter=^tokenizer/encode/NAME/`
(bench/micro/tokenizer_bench.cpp) on the same texts; Hugging Face runs in this
process, single-threaded (`Tokenizer.encode`, one text at a time). Each round runs
Ember, HF and HF again (the null control), the order alternating between rounds.

    python3 tools/bench_tokenizer.py --micro build/ember_micro --rounds 5
Prints a markdown table: per tokenizer, the p50 MB/s of each, the time ratio
Ember/HF (lower is better) with its min-max spread, and the HF/HF null ratio.
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

import tokenizers
from tokenizers import Tokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_texts():
    with open(os.path.join(ROOT, "tests/genai/tokenizer_corpus.json"), encoding="utf-8") as f:
        texts = json.load(f)
    for doc in ("README.md", "docs/architecture.md"):
        with open(os.path.join(ROOT, doc), encoding="utf-8") as f:
            texts.append(f.read())
    return texts


def hf_rate(tokenizer, texts, nbytes, min_time):
    iterations, start = 0, time.perf_counter()
    while True:
        for text in texts:
            tokenizer.encode(text, add_special_tokens=False)
        iterations += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_time:
            return iterations * nbytes / elapsed / 1e6


def ember_rate(micro, name, texts_file, min_time):
    env = dict(os.environ, EMBER_TOKENIZER_TEXTS=texts_file)
    out = subprocess.run([micro, f"--benchmark_filter=^tokenizer/encode/{name}/", "--benchmark_format=json",
                          f"--benchmark_min_time={min_time}"], check=True, capture_output=True, text=True,
                         env=env).stdout
    (bench,) = json.loads(out)["benchmarks"]
    return bench["bytes_per_second"] / 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--micro", default="build/ember_micro")
    ap.add_argument("--tokenizers", default=os.path.join(ROOT, "third_party/tokenizers"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=0.5, help="seconds per measurement")
    args = ap.parse_args()
    texts = load_texts()
    nbytes = sum(len(t.encode("utf-8")) for t in texts)
    names = sorted(n for n in os.listdir(args.tokenizers)
                   if os.path.exists(os.path.join(args.tokenizers, n, "tokenizer.json")))
    print(f"Hugging Face tokenizers {tokenizers.__version__}; {len(texts)} texts, {nbytes} bytes; "
          f"{args.rounds} rounds\n")
    print("| tokenizer | Ember MB/s (p50) | HF MB/s (p50) | time ratio Ember/HF (p50, min-max) | null HF/HF (p50) |")
    print("| --- | ---: | ---: | --- | ---: |")
    with tempfile.NamedTemporaryFile("w", suffix=".json", encoding="utf-8") as texts_file:
        json.dump(texts, texts_file, ensure_ascii=False)
        texts_file.flush()
        for name in names:
            hf = Tokenizer.from_file(os.path.join(args.tokenizers, name, "tokenizer.json"))
            rates = {"ember": [], "hf": [], "null": []}
            for r in range(args.rounds):
                for side in (["ember", "hf", "null"] if r % 2 == 0 else ["null", "hf", "ember"]):
                    rates[side].append(ember_rate(args.micro, name, texts_file.name, args.min_time) if side == "ember"
                                       else hf_rate(hf, texts, nbytes, args.min_time))
            ratios = [h / e for e, h in zip(rates["ember"], rates["hf"])]
            null = [h / n for h, n in zip(rates["hf"], rates["null"])]
            print(f"| {name} | {statistics.median(rates['ember']):.1f} | {statistics.median(rates['hf']):.1f} "
                  f"| {statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f}) "
                  f"| {statistics.median(null):.3f} |", flush=True)


if __name__ == "__main__":
    main()
