#!/usr/bin/env python3
"""How close Ember's decode runs to the machine's read bandwidth, measured interleaved.

A decode step of a batch-1 decoder reads every packed weight once and the KV
cache of the tokens so far, so tokens/s <= read bandwidth / bytes read per token.
Bytes per token: the prepacked weight bytes `ember info` reports (every MatMulNBits
/ MatMul weight in its kernel layout; embedding rows, norm weights and biases are
left out, which makes the figure conservative) plus the KV cache rows the
attention reads, averaged over the steps of `ember bench -p 0 -n N` (step i, from
0, reads i + 2 rows per layer and K/V). Read bandwidth: `ember_micro
--benchmark_filter=bandwidth` (a 512 MiB buffer summed by the AVX-512 row-sum
kernel). Each round measures both, back to back, at each thread count; the
ratio is taken per round, so slow drift of the shared machine cancels.

    python3 tools/decode_bandwidth.py /tmp/fix/qwen05-int4 --ember build/ember --micro build/ember_micro \\
        -n 128 --threads 1,2 --rounds 7
"""
import argparse
import json
import os
import re
import statistics
import subprocess


def bytes_per_token(ember, model_dir, n):
    info = subprocess.run([ember, "info", os.path.join(model_dir, "model.onnx")], check=True, capture_output=True,
                          text=True).stdout
    packed = int(re.search(r"prepacked weights: (\d+) bytes", info).group(1))
    with open(os.path.join(model_dir, "genai_config.json")) as f:
        d = json.load(f)["model"]["decoder"]
    row = d["num_hidden_layers"] * 2 * d["num_key_value_heads"] * d["head_size"] * 4
    kv = row * statistics.mean(i + 2 for i in range(n))
    return packed, kv


def read_bandwidth(micro, threads):
    out = subprocess.run([micro, f"--benchmark_filter=bandwidth/read/threads:{threads}/", "--benchmark_format=json"],
                         check=True, capture_output=True, text=True).stdout
    (bench,) = json.loads(out)["benchmarks"]
    return bench["bytes_per_second"]


def decode_rate(ember, model_dir, threads, n):
    out = subprocess.run([ember, "bench", model_dir, "-p", "0", "-n", str(n), "-r", "3", "--threads", str(threads),
                          "--json"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)["results"][0]["avg_ts"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model_dir")
    ap.add_argument("--ember", default="build/ember")
    ap.add_argument("--micro", default="build/ember_micro")
    ap.add_argument("-n", type=int, default=128)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    packed, kv = bytes_per_token(args.ember, args.model_dir, args.n)
    total = packed + kv
    print(f"bytes per token: {total / 1e6:.1f} MB ({packed / 1e6:.1f} MB packed weights + {kv / 1e6:.2f} MB KV cache); "
          f"{args.rounds} rounds\n")
    print("| threads | decode t/s (p50) | read bandwidth GB/s (p50) | limit t/s (p50) | share of the limit (p50, min-max) |")
    print("| ---: | ---: | ---: | ---: | --- |")
    for threads in (int(t) for t in args.threads.split(",")):
        rates, bandwidths, shares = [], [], []
        for r in range(args.rounds):
            steps = [lambda: bandwidths.append(read_bandwidth(args.micro, threads)),
                     lambda: rates.append(decode_rate(args.ember, args.model_dir, threads, args.n))]
            for step in steps if r % 2 == 0 else reversed(steps):
                step()
            shares.append(rates[-1] * total / bandwidths[-1])
        limit = statistics.median(bandwidths) / total
        print(f"| {threads} | {statistics.median(rates):.1f} | {statistics.median(bandwidths) / 1e9:.1f} | {limit:.1f} "
              f"| {100 * statistics.median(shares):.0f} % ({100 * min(shares):.0f}-{100 * max(shares):.0f} %) |",
              flush=True)


if __name__ == "__main__":
    main()
