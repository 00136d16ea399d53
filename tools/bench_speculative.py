#!/usr/bin/env python3
"""Speculative decoding against plain decoding in `ember generate`, interleaved.

usage: bench_speculative.py EMBER MODEL_DIR [--draft-model DIR] [--prompt-file F] [--rounds 9]
                            [--tokens 64] [--threads N] [--draft-tokens K]

Each round runs, in a rotating order, `ember generate --greedy --json` on the
same prompt: plain (A), speculative (S: --prompt-lookup, or --draft-model DIR
when given) and plain again (B, the null control). The speed is generated
tokens after the first over their time (decode_tokens_per_s: drafting, model
runs and sampling). Every round checks that S chose A's tokens. It prints the
speed-up S/A and the null B/A as p50 (min-max), and S's acceptance rate and
tokens per model run.
"""
import argparse
import json
import statistics
import subprocess

# Copy-heavy by default: a passage, then an instruction to write it again.
DEFAULT_PROMPT = ("Once upon a time, a little girl named Lily found a red ball in the park. She played with the "
                  "ball all day. Then she went home and told her mom about the ball. Once upon a time, a little "
                  "girl named Lily found a red ball in the park.")


def generate(args, extra):
    cmd = [args.ember, "generate", args.model_dir, "--prompt", args.prompt, "--greedy", "--max-new-tokens",
           str(args.tokens), "--json"] + extra
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def spread(values):
    return f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("ember")
    parser.add_argument("model_dir")
    parser.add_argument("--draft-model")
    parser.add_argument("--prompt-file")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--draft-tokens", type=int, default=0)
    args = parser.parse_args()
    args.prompt = open(args.prompt_file).read() if args.prompt_file else DEFAULT_PROMPT
    spec = ["--draft-model", args.draft_model] if args.draft_model else ["--prompt-lookup"]
    if args.draft_tokens:
        spec += ["--draft-tokens", str(args.draft_tokens)]

    rates = {"A": [], "S": [], "B": []}
    accepted = drafted = runs = chosen = 0
    order = ["A", "S", "B"]
    for r in range(args.rounds):
        outputs = {}
        for side in order[r % 3:] + order[:r % 3]:
            outputs[side] = generate(args, spec if side == "S" else [])
            rates[side].append(outputs[side]["timings"]["decode_tokens_per_s"])
        if outputs["S"]["generated_tokens"] != outputs["A"]["generated_tokens"]:
            raise SystemExit(f"round {r}: speculative tokens differ from plain decoding's:\n"
                             f"  plain       {outputs['A']['generated_tokens']}\n"
                             f"  speculative {outputs['S']['generated_tokens']}")
        s = outputs["S"]["speculation"]
        accepted += s["accepted"]
        drafted += s["drafted"]
        runs += s["model_runs"]
        chosen += len(outputs["S"]["generated_tokens"]) - 1

    a = rates["A"]
    print(f"{args.model_dir} {' '.join(spec)}: {len(outputs['A']['generated_tokens'])} tokens, "
          f"threads {args.threads or 'default'}, {args.rounds} rounds")
    print(f"plain        {statistics.median(a):10.1f} tok/s ({min(a):.1f}-{max(a):.1f})")
    print(f"speculative  {statistics.median(rates['S']):10.1f} tok/s ({min(rates['S']):.1f}-{max(rates['S']):.1f})")
    print(f"speed-up S/A {spread([s / p for s, p in zip(rates['S'], a)])}")
    print(f"null B/A     {spread([b / p for b, p in zip(rates['B'], a)])}")
    print(f"acceptance   {accepted}/{drafted} = {accepted / max(drafted, 1):.3f}; "
          f"{chosen / max(runs, 1):.2f} tokens per model run")


if __name__ == "__main__":
    main()
