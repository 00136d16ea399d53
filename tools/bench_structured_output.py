#!/usr/bin/env python3
"""Constrained against unconstrained decode speed of `ember generate`.

usage: bench_structured_output.py EMBER MODEL_DIR [--rounds 7] [--tokens 64] [--threads N]

Each round runs, in one interleaved order, `ember generate --json` on the same
prompt and seed: unconstrained (A), constrained by each schema (C_*), and
unconstrained again (B, the null control), and reads decode_tokens_per_s
(decode steps / their time: model run, mask and sampling). It prints the
ratio C/A and B/A per round and their p50 with min..max. The constrained
runs also run with EMBER_CONSTRAINT_OVERLAP=0 (each mask computed inside
the sampler step instead of on the mask worker during the model run).
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

SCHEMAS = {
    # A free string: the mask allows most of the vocabulary for many steps.
    "free_text": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    # Structure everywhere: enums, bounded numbers, arrays, nested objects.
    "structured": {
        "type": "array",
        "items": {"type": "object", "properties": {
            "id": {"type": "integer", "minimum": 0, "maximum": 100000},
            "kind": {"enum": ["alpha", "beta", "gamma", "delta"]},
            "score": {"type": "number", "minimum": 0, "maximum": 1},
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 6}, "maxItems": 3},
            "ok": {"type": "boolean"}},
            "required": ["id", "kind", "score", "tags", "ok"], "additionalProperties": False}},
}


def run(ember, model, args, extra, env=None):
    cmd = [ember, "generate", model, "--prompt", "Write the answer as JSON:", "--max-new-tokens", str(args.tokens),
           "--temperature", "1", "--seed", "11", "--json"] + extra
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    p = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env)
    out = json.loads(p.stdout)
    return out["timings"]["decode_tokens_per_s"], len(out["generated_tokens"]), out.get("constraint")


def summary(xs):
    return f"p50 {statistics.median(xs):.3f} (min {min(xs):.3f}, max {max(xs):.3f})"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ember")
    ap.add_argument("model")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()
    work = tempfile.mkdtemp()
    files = {}
    for name, schema in SCHEMAS.items():
        files[name] = os.path.join(work, name + ".json")
        with open(files[name], "w") as f:
            json.dump(schema, f)
    inline_env = dict(os.environ, EMBER_CONSTRAINT_OVERLAP="0")
    variants = [("A", [], None)]
    for name in SCHEMAS:
        variants.append((f"C_{name}", ["--json-schema", files[name]], None))
        variants.append((f"C_{name}_inline", ["--json-schema", files[name]], inline_env))
    variants.append(("B", [], None))
    rows = {name: [] for name, _, _ in variants}
    costs = {name: [] for name, _, _ in variants}
    for r in range(args.rounds):
        order = variants if r % 2 == 0 else variants[::-1]
        line = []
        for name, extra, env in order:
            tps, n, c = run(args.ember, args.model, args, extra, env)
            rows[name].append(tps)
            if c:
                costs[name].append((c["mask_ms_mean"], c["apply_ms_mean"]))
            line.append(f"{name} {tps:.2f} tok/s ({n} tok{'' if c is None else ', complete' if c['complete'] else ''})")
        print(f"round {r + 1}: " + "; ".join(line), flush=True)
    a = rows["A"]
    print("\nratio to A (unconstrained), per round:")
    for name, _, _ in variants[1:]:
        ratios = [x / y for x, y in zip(rows[name], a)]
        print(f"  {name:28s} {summary(ratios)}   tok/s {summary(rows[name])}")
    print(f"  {'A':28s} tok/s {summary(a)}")
    print("\nper token, mean over each run: mask computation (worker or inline) and apply() on the sampler's path:")
    for name, _, _ in variants[1:-1]:
        print(f"  {name:28s} mask ms {summary([m for m, _ in costs[name]])}   "
              f"apply ms {summary([x for _, x in costs[name]])}")


if __name__ == "__main__":
    main()
