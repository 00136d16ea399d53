#!/usr/bin/env python3
"""`ember generate --json --logprobs N` against a float64 log-softmax of onnxruntime-genai's logits.

usage: logprobs_test.py EMBER MODEL_DIR

For greedy decoding and for sampling (temperature 0.7, repetition penalty 1.3,
top-k 20), Ember's tokens are replayed through onnxruntime_genai (PyPI) one at a
time; at each step its logits, in float64, get the processing Ember documents
(the repetition penalty over the prompt and the tokens so far, Hugging Face's
rule; then the temperature, 1 for greedy; no truncation), and their log-softmax
must give Ember's chosen-token logprob and its top-N list: the same ids wherever
two neighbours are further apart than the tolerance, and the same values
within it. The tolerance covers int4 weights with int8 activations computed by
two runtimes, divided by the temperature as the logits are. Their logprobs
differ by CPU, since ONNX Runtime's int8 kernels do: up to ~1e-2 on AVX-512
VNNI hosts, 2.02e-2 (greedy) and 3.85e-2 (temperature 0.7) on an AVX2-only EPYC
(2026-12-04; Ember's own logprobs are the same at every ISA level). The same
again with --prompt-lookup, whose logprobs come from rows of multi-token runs.
Exits non-zero on the first mismatch.
"""
import json
import subprocess
import sys

import numpy as np
import onnxruntime_genai as og

TOP = 5
TOLERANCE = 0.035  # at temperature 1


def ember_run(ember, folder, extra):
    cmd = [ember, "generate", folder, "--prompt", "A fool and his money", "--max-new-tokens", "24", "--json",
           "--logprobs", str(TOP)] + extra
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def reference_logprobs(logits, history, temperature, penalty):
    x = logits.astype(np.float64)
    if penalty != 1.0:
        seen = np.unique(np.array(history, dtype=np.int64))
        x[seen] = np.where(x[seen] > 0, x[seen] / penalty, x[seen] * penalty)
    x = x / temperature
    m = x.max()
    return x - m - np.log(np.exp(x - m).sum())


def check(model, out, temperature, penalty, what):
    tolerance = TOLERANCE / temperature
    prompt, tokens = out["prompt_tokens"], out["generated_tokens"]
    assert len(out["logprobs"]) == len(tokens), (what, len(out["logprobs"]), len(tokens))
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=len(prompt) + len(tokens) + 1, do_sample=False)
    generator = og.Generator(model, params)
    generator.append_tokens(np.array(prompt, dtype=np.int32))
    history = list(prompt)
    worst = 0.0
    for step, (token, lp) in enumerate(zip(tokens, out["logprobs"])):
        ref = reference_logprobs(generator.get_logits().reshape(-1), history, temperature, penalty)
        where = f"{what} step {step}"
        assert lp["token"] == token, (where, lp["token"], token)
        assert lp["logprob"] <= 0, (where, lp)
        worst = max(worst, abs(lp["logprob"] - ref[token]))
        assert abs(lp["logprob"] - ref[token]) < tolerance, (where, lp["logprob"], ref[token])
        top = lp["top"]
        assert len(top) == TOP, (where, top)
        values = [t["logprob"] for t in top]
        assert values == sorted(values, reverse=True), (where, values)
        order = np.argsort(-ref, kind="stable")
        for k, entry in enumerate(top):
            worst = max(worst, abs(entry["logprob"] - ref[entry["token"]]))
            assert abs(entry["logprob"] - ref[entry["token"]]) < tolerance, (where, k, entry, ref[entry["token"]])
            # The k-th most likely by the reference, unless a neighbour is within the tolerance.
            expected = int(order[k])
            if entry["token"] != expected:
                assert abs(ref[expected] - ref[entry["token"]]) < tolerance, (where, k, entry, expected)
        history.append(token)
        generator.append_tokens(np.array([token], dtype=np.int32))
    print(f"ok   {what}: {len(tokens)} tokens, largest logprob difference {worst:.2e}")


def main():
    ember, folder = sys.argv[1], sys.argv[2]
    model = og.Model(folder)
    for speculate in ([], ["--prompt-lookup"]):
        name = " prompt lookup" if speculate else ""
        greedy = ember_run(ember, folder, ["--greedy"] + speculate)
        check(model, greedy, 1.0, 1.0, "greedy" + name)
        sampled = ember_run(ember, folder, ["--temperature", "0.7", "--top-k", "20", "--repetition-penalty", "1.3",
                                            "--seed", "4"] + speculate)
        check(model, sampled, 0.7, 1.3, "sampled" + name)


if __name__ == "__main__":
    main()
