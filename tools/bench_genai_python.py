#!/usr/bin/env python3
"""The decode loop through ember.genai against `ember generate`, interleaved.

Each round runs `ember generate DIR --prompt-ids ... --greedy --max-new-tokens N --json`
(its decode_tokens_per_s: every step after the first token, model run and sampling)
and, in this process, the loop onnxruntime-genai's examples run over ember.genai:
generate_next_token, get_next_tokens()[0] and TokenizerStream.decode per token, timed
over the same steps (from the second token on; the first only samples the prompt's
logits). Both generate the same greedy tokens. A round runs each side --repeats
times back to back and keeps its median (a tiny model's generation lasts a few
milliseconds, shorter than the machine's hiccups); the order rotates between
rounds. Reported: each side's median tok/s over rounds with its min-max, and the
median and min-max of the rounds' ratios python/cli, and of a null control: ember
generate run a second time in each round, over the first.

  python3 tools/bench_genai_python.py EMBER_BINARY MODEL_DIR [--rounds 9] [--repeats 5] [--new-tokens 64]
"""
import argparse
import json
import statistics
import subprocess
import time

import numpy as np

import ember.genai as og


def cli_tokens_per_s(ember, folder, prompt, new_tokens):
    args = [ember, "generate", folder, "--prompt-ids", ",".join(map(str, prompt)), "--greedy",
            "--max-new-tokens", str(new_tokens), "--json"]
    result = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
    return result["timings"]["decode_tokens_per_s"], result["generated_tokens"]


def python_tokens_per_s(model, tokenizer, prompt, new_tokens):
    params = og.GeneratorParams(model)
    params.set_search_options(do_sample=False, max_length=len(prompt) + new_tokens)
    generator = og.Generator(model, params)
    stream = tokenizer.create_stream()
    generator.append_tokens(prompt)
    generator.generate_next_token()
    tokens = [int(generator.get_next_tokens()[0])]
    stream.decode(tokens[0])
    start = time.perf_counter()
    while not generator.is_done():
        generator.generate_next_token()
        token = generator.get_next_tokens()[0]
        stream.decode(token)
        tokens.append(int(token))
    elapsed = time.perf_counter() - start
    return (len(tokens) - 1) / elapsed, tokens


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("ember")
    parser.add_argument("model_dir")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--new-tokens", type=int, default=64)
    args = parser.parse_args()

    model = og.Model(args.model_dir)
    tokenizer = og.Tokenizer(model)
    with open(f"{args.model_dir}/genai_config.json") as f:
        vocab = json.load(f)["model"]["vocab_size"]
    prompt = np.array([(7 + 31 * i) % (vocab - 3) for i in range(12)], np.int32)
    # Sides: ember generate, ember.genai, ember generate again (the null control: cli2/cli).
    rates = {"cli": [], "py": [], "cli2": []}
    order = ["cli", "py", "cli2"]
    for r in range(args.rounds):
        for side in order[r % 3:] + order[:r % 3]:
            samples = []
            for _ in range(args.repeats):
                if side == "py":
                    rate, py_tokens = python_tokens_per_s(model, tokenizer, prompt, args.new_tokens)
                else:
                    rate, cli_tokens = cli_tokens_per_s(args.ember, args.model_dir, prompt.tolist(), args.new_tokens)
                samples.append(rate)
            rates[side].append(statistics.median(samples))
        if cli_tokens != py_tokens:
            raise SystemExit(f"the token streams differ:\n  ember generate {cli_tokens}\n  ember.genai    {py_tokens}")

    def spread(values):
        return f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})"

    cli, py = rates["cli"], rates["py"]
    print(f"{args.model_dir}: {len(py_tokens)} tokens, {args.rounds} rounds of {args.repeats}")
    print(f"ember generate  {statistics.median(cli):10.1f} tok/s ({min(cli):.1f}-{max(cli):.1f})")
    print(f"ember.genai     {statistics.median(py):10.1f} tok/s ({min(py):.1f}-{max(py):.1f})")
    print(f"ratio python/cli {spread([p / c for p, c in zip(py, cli)])}")
    print(f"null cli2/cli    {spread([c2 / c for c2, c in zip(rates['cli2'], cli)])}")

if __name__ == "__main__":
    main()
