#!/usr/bin/env python3
"""Beam search: `ember generate --num-beams` against onnxruntime-genai (PyPI) on the decoder fixtures.

usage: genai_beam.py EMBER_BINARY WORK_DIR [--only NAME,...]

For every GroupQueryAttention fixture family (tools/make_decoder_fixtures.py,
int4 and fp32) and models/default, onnxruntime-genai runs beam search
(set_search_options(num_beams, num_return_sequences, length_penalty,
early_stopping, do_sample=False, max_length)) after a fixed prompt and every
returned sequence (get_sequence(i)) must equal Ember's, in order, token for
token. Three settings per model:

  4 beams, all 4 returned, length_penalty 1, early_stopping;
  3 beams, 2 returned, length_penalty 0.5, no early stopping;
  the first setting with the folder's EOS id replaced by the token the best
      beam chose third, so hypotheses end early and the EOS bookkeeping
      (which candidates close one, length without the EOS, when the search is
      done) decides the output; on the random-weight fixtures the real EOS is
      never likely enough to end a beam.

genai leaves the EOS out of a sequence; Ember reports it (stop_reason eos),
and it is dropped before comparing. The older MultiHeadAttention and the
optimum exports have no shared-buffer cache: Ember must refuse them with an
error that says so.

int4 folders (the default model included) quantize activations to int8 in
both runtimes, and their logits differ by up to genai_greedy.py's tolerance
(0.1 x RMS of the logits on 2-layer fixtures, 0.5 deeper). Where the
sequences differ there, the search is replayed in Python on ONNX Runtime's
logits (float64 log-softmax, the same rules); the replay must give
onnxruntime-genai's sequences, and the difference counts as a coin toss only
if swapping one pair of candidates on a decision boundary (the last beam
kept against the next, or ranks num_beams - 1 and num_beams, where an EOS
closes a hypothesis or not) whose scores are closer than twice that
tolerance x the RMS of the step's logits makes the replay give exactly
Ember's sequences. fp32 folders get no such allowance.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import onnxruntime_genai as og
from tokenizers import Tokenizer

from genai_greedy import int8_tolerance, last_logits

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NEW_TOKENS = 20
FAMILIES = ["llama", "qwen2", "qwen3", "phi3", "gemma2", "mistral"]
GQA_FIXTURES = [(f, w) for f in FAMILIES for w in ("int4", "fp32")]
REFUSED_FIXTURES = [("llama", "fp32", "mha"), ("optimum", "fp32", "gqa")]
DEFAULT_MODEL_PROMPTS = ["The computer", "A wise man"]
# (num_beams, num_return_sequences, length_penalty, early_stopping)
SETTINGS = [(4, 4, 1.0, True), (3, 2, 0.5, False)]


def genai_beams(folder, prompt, setting):
    num_beams, returned, length_penalty, early_stopping = setting
    model = og.Model(folder)
    params = og.GeneratorParams(model)
    params.set_search_options(num_beams=num_beams, num_return_sequences=returned, length_penalty=length_penalty,
                              early_stopping=early_stopping, do_sample=False, min_length=0,
                              max_length=len(prompt) + NEW_TOKENS)
    generator = og.Generator(model, params)
    generator.append_tokens(prompt)
    while not generator.is_done():
        generator.generate_next_token()
    return [[int(t) for t in generator.get_sequence(i)[len(prompt):]] for i in range(returned)]


def ember_beams(ember, folder, prompt, setting):
    """Ember's sequences (EOS left out, as genai does), or its error."""
    num_beams, returned, length_penalty, early_stopping = setting
    run = subprocess.run([ember, "generate", folder, "--prompt-ids", ",".join(map(str, prompt)),
                          "--num-beams", str(num_beams), "--num-return-sequences", str(returned),
                          "--length-penalty", str(length_penalty),
                          "--early-stopping" if early_stopping else "--no-early-stopping",
                          "--max-new-tokens", str(NEW_TOKENS), "--json"], capture_output=True, text=True)
    if run.returncode != 0:
        return None, run.stderr.strip()
    return [s["generated_tokens"][:-1] if s["stop_reason"] == "eos" else s["generated_tokens"]
            for s in json.loads(run.stdout)["sequences"]], None


def with_eos(folder, eos, out):
    """A copy of `folder` (files hard-linked where they can be) whose genai_config.json names `eos` as the EOS id."""
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(folder):
        target = os.path.join(out, name)
        if name == "genai_config.json" or os.path.exists(target):
            continue
        try:  # not a symlink: Ember refuses external data that resolves outside the model's folder
            os.link(os.path.join(folder, name), target)
        except OSError:
            shutil.copy(os.path.join(folder, name), target)
    with open(os.path.join(folder, "genai_config.json")) as f:
        config = json.load(f)
    config["model"]["eos_token_id"] = eos
    with open(os.path.join(out, "genai_config.json"), "w") as f:
        json.dump(config, f, indent=2)
    return out


def int8_activations(folder):
    graph = onnx.load(os.path.join(folder, "model.onnx"), load_external_data=False).graph
    return any(node.op_type == "MatMulNBits" and any(a.name == "accuracy_level" and a.i == 4 for a in node.attribute)
               for node in graph.node)


class Replay:
    """The search replayed on ONNX Runtime's logits (one run per sequence, float64 log-softmax), by the rules
    onnxruntime-genai follows; `flip` = (step, a, b) swaps the scores of candidates a and b at that step."""

    def __init__(self, folder, prompt, setting):
        self.prompt, self.setting = prompt, setting
        with open(os.path.join(folder, "genai_config.json")) as f:
            config = json.load(f)
        eos = config["model"]["eos_token_id"]
        self.eos = set(eos if isinstance(eos, list) else [eos])
        self.tolerance = 2 * int8_tolerance(config["model"]["decoder"]["num_hidden_layers"])
        self.session = ort.InferenceSession(os.path.join(folder, "model.onnx"), providers=["CPUExecutionProvider"])
        self.cache = {}
        self.ties = []  # (step, a, b) of the unflipped run: boundary candidates closer than the tolerance

    def logits(self, tokens):
        key = tuple(tokens)
        if key not in self.cache:
            row = last_logits(self.session, tokens)
            self.cache[key] = (row - row.max() - np.log(np.exp(row - row.max()).sum()), np.sqrt(np.mean(row ** 2)))
        return self.cache[key]

    def run(self, flip=None):
        num_beams, returned, length_penalty, early_stopping = self.setting
        beams, scores, hypotheses = [[]], [0.0], []

        def add(tokens, score, length):
            hypotheses.append((score / length ** length_penalty, tokens))
            hypotheses.sort(key=lambda h: -h[0])  # stable: an equal later score stays behind
            del hypotheses[num_beams:]

        for step in range(NEW_TOKENS):
            length = len(self.prompt) + step
            candidates, rms = [], 0.0
            for beam, score in zip(beams, scores):
                row, row_rms = self.logits(self.prompt + beam)
                rms = max(rms, row_rms)
                candidates += [[row[t] + score, beam, int(t)] for t in np.argsort(row)[::-1][:2 * num_beams]]
            candidates = sorted(candidates, key=lambda c: -c[0])[:2 * num_beams + 1]
            if flip is None:
                kept = [j for j, c in enumerate(candidates) if c[2] not in self.eos][:num_beams + 1]
                for a, b in [(kept[-2], kept[-1]), (num_beams - 1, num_beams)]:
                    if candidates[a][0] - candidates[b][0] < self.tolerance * rms:
                        self.ties.append((step, a, b))
            elif flip[0] == step:
                a, b = flip[1], flip[2]
                candidates[a][0], candidates[b][0] = candidates[b][0], candidates[a][0]
                candidates = sorted(candidates, key=lambda c: -c[0])
            candidates = candidates[:2 * num_beams]
            next_beams, next_scores = [], []
            for j, (score, beam, token) in enumerate(candidates):
                if token in self.eos:
                    if j < num_beams:
                        add(beam, score, length)
                    continue
                next_beams.append(beam + [token])
                next_scores.append(score)
                if len(next_beams) == num_beams:
                    break
            beams, scores = next_beams, next_scores
            if len(hypotheses) == num_beams and (
                    early_stopping or hypotheses[-1][0] >= candidates[0][0] / length ** length_penalty):
                return [h[1] for h in hypotheses[:returned]]
        for beam, score in zip(beams, scores):
            add(beam, score, len(self.prompt) + NEW_TOKENS)
        return [h[1] for h in hypotheses[:returned]]


def coin_toss(folder, prompt, setting, expected, got):
    """A near-tie flipped in the replay that turns onnxruntime-genai's output into Ember's, or None."""
    replay = Replay(folder, prompt, setting)
    if replay.run() != expected:
        return None
    for step, a, b in replay.ties:
        if replay.run((step, a, b)) == got:
            return step, a, b
    return None


def check(ember, name, folder, prompt, setting):
    expected = genai_beams(folder, prompt, setting)
    got, error = ember_beams(ember, folder, prompt, setting)
    label = f"{name} beams={setting[0]} return={setting[1]} length_penalty={setting[2]} early_stopping={setting[3]}"
    if error is not None:
        print(f"FAILED: {label}: {error}")
        return 1, expected
    same = sum(a == b for a, b in zip(expected, got))
    if got == expected:
        ends = sum(len(s) < NEW_TOKENS for s in expected)
        print(f"ok: {label}: {len(expected)} sequences identical ({ends} ended by EOS)")
        return 0, expected
    if len(got) == len(expected) and int8_activations(folder):
        flipped = coin_toss(folder, prompt, setting, expected, got)
        if flipped:
            print(f"ok: {label}: {same} of {len(expected)} sequences identical; the reference search with its "
                  f"candidates {flipped[1]} and {flipped[2]} swapped at step {flipped[0]} (a near-tie, int8 "
                  "activations) gives Ember's")
            return 0, expected
    print(f"FAILED: {label}: {same} of {len(expected)} sequences identical\n"
          f"  onnxruntime-genai {expected}\n  ember             {got}")
    return 1, expected


def check_model(ember, name, folder, prompt, work):
    failures = 0
    third = None
    for setting in SETTINGS:
        failed, sequences = check(ember, name, folder, prompt, setting)
        failures += failed
        if third is None:
            third = next((s[2] for s in sequences if len(s) > 2), None)
    if third is not None:
        eos_folder = with_eos(folder, third, os.path.join(work, f"{name}-eos"))
        failures += check(ember, f"{name} (EOS := {third})", eos_folder, prompt, SETTINGS[0])[0]
    return failures


def fixture(family, weights, attention, work):
    folder = os.path.join(work, f"{family}-{weights}-{attention}")
    if not os.path.exists(os.path.join(folder, "genai_config.json")):
        subprocess.run([sys.executable, os.path.join(ROOT, "tools/make_decoder_fixtures.py"), "--family", family,
                        "--weights", weights, "--attention", attention, "--out", folder], check=True,
                       capture_output=True)
    with open(os.path.join(folder, "genai_config.json")) as f:
        vocab = json.load(f)["model"]["vocab_size"]
    return folder, [(7 + 31 * i) % (vocab - 3) for i in range(12)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("ember")
    parser.add_argument("work")
    parser.add_argument("--only", default="", help="comma-separated case names (default, qwen2-int4-gqa, ...)")
    args = parser.parse_args()
    only = set(filter(None, args.only.split(",")))
    wanted = lambda name: not only or name in only
    os.makedirs(args.work, exist_ok=True)
    for name in os.listdir(args.work):
        if name.endswith("-eos"):
            shutil.rmtree(os.path.join(args.work, name))
    failures = 0
    if wanted("default"):
        folder = os.path.join(ROOT, "models/default")
        hf = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
        for i, text in enumerate(DEFAULT_MODEL_PROMPTS):
            failures += check_model(args.ember, f"default-{i}", folder, hf.encode(text).ids, args.work)
    for family, weights in GQA_FIXTURES:
        name = f"{family}-{weights}-gqa"
        if wanted(name):
            folder, prompt = fixture(family, weights, "gqa", args.work)
            failures += check_model(args.ember, name, folder, prompt, args.work)
    for family, weights, attention in REFUSED_FIXTURES:
        name = f"{family}-{weights}-{attention}"
        if not wanted(name):
            continue
        folder, prompt = fixture(family, weights, attention, args.work)
        got, error = ember_beams(args.ember, folder, prompt, SETTINGS[0])
        if error is not None and "shared-buffer KV cache" in error:
            print(f"ok: {name}: refused ({error.splitlines()[-1]})")
        else:
            failures += 1
            print(f"FAILED: {name}: expected a refusal naming the shared-buffer KV cache, got {got or error}")
    print(f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
