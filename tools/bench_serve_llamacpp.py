"""`ember serve` against llama.cpp's `llama-server` on the same model, 8 concurrent streams.

    python3 tools/bench_serve_llamacpp.py setup            # installs (below); stdlib only
    W=/tmp/ember-llamacpp; PY=$W/venv/bin/python
    $PY tools/bench_serve_llamacpp.py convert [--qtype Q4_0]   # models/default -> $W/default-Q4_0.gguf
    $PY tools/bench_serve_llamacpp.py check [--qtype Q4_0]     # greedy tokens: llama-server vs `ember generate`
    $PY tools/bench_serve_llamacpp.py bench [--rounds 7]       # the interleaved side-by-side

Nothing here is used by the build or CI. `setup` installs, all under --work
(default /tmp/ember-llamacpp), nothing in the repository:

- npm's `node-llama-cpp` 3.22.1 (`$W/npm`). Its prebuilt binary packages hold
  the llama.cpp libraries and a Node addon but no `llama-server`; the package
  does ship llama.cpp's source as a git bundle (`llama/gitRelease.bundle`), so
  `setup` clones it (`$W/llama.cpp`) and builds only `llama-server`
  (`$W/llama-build`, Release, no web UI, no OpenSSL: nothing is downloaded at
  build time) for the CPU variant the prebuilt package loads on an AVX-512
  machine ("sapphirerapids") less AMX: on the KVM guest this was measured on,
  AMX tile instructions fault (SIGILL in ggml's AMX matmul) although CPUID
  lists them and the kernel grants the tile state.
- a venv (`$W/venv`) with PyPI's `gguf`, `numpy`, `onnx` and `httpx`.

`convert` writes a GGUF of the same weights: the ONNX model's int4
MatMulNBits projections are dequantized exactly (ONNX Runtime's contrib op
definition: w = (q - zero_point) * scale per block of 32 along K, low nibble
first) and requantized with `gguf.quants`; the embedding and norms stay fp32.
The fused qkv projection is split, and the q/k rows of each head are permuted
from the half-split rotary layout ("rotate_half", which the ONNX
GroupQueryAttention uses with rotary_interleaved=0) to the adjacent-pair
layout of llama.cpp's `llama` architecture: dimension i of the first half and
i of the second half become dimensions 2i and 2i+1. The same permutation on q
and k leaves every q.k product unchanged.

`bench` starts `ember serve` twice (the second is the null control) and
`llama-server` (8 slots of 128 tokens), each with 2 threads, then runs
rounds: in each round every server, in a shuffled order, gets the 8 prompts
at once as streaming /v1/completions requests (token ids, greedy,
max_tokens 100). `ember serve` has no ignore_eos; the prompts are ones whose
greedy continuation runs 100 tokens without EOS, and llama-server is sent
`ignore_eos` with `max_tokens` set to the tokens ember generated for each
prompt, so both do the same work. Per stream: TTFT (request sent to the first
chunk with text); per round: output tokens / wall time of the batch. A round
in which other processes used more than --max-other-cores of CPU (from
/proc/stat, less the servers' and this process's own time) is discarded and
run again: the machine is shared.
"""
import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NODE_LLAMA_CPP = "node-llama-cpp@3.22.1"
PY_PACKAGES = ["gguf==0.19.0", "numpy", "onnx", "httpx"]
LLAMA_CPU_ISAS = ["AVX", "F16C", "FMA", "AVX2", "BMI2", "AVX512", "AVX512_VBMI", "AVX512_VNNI", "AVX512_BF16"]
THREADS = 2
STREAMS = 8
MAX_NEW_TOKENS = 100
# Fortune openings whose greedy continuation runs the full 100 tokens in `ember generate` (no EOS),
# so all 8 streams decode together to the end.
PROMPTS = ["A fool", "The computer", "Your lucky number is", "A man", "When in doubt", "Time is", "Happiness is", "In the"]


def run(argv, **kwargs):
    print("+", " ".join(map(str, argv)), flush=True)
    subprocess.run(argv, check=True, **kwargs)


def setup(args):
    work = args.work
    npm_dir = work / "npm"
    npm_dir.mkdir(parents=True, exist_ok=True)
    if not (npm_dir / "package.json").exists():
        (npm_dir / "package.json").write_text('{"private": true}\n')
    run(["npm", "install", "--no-audit", "--no-fund", NODE_LLAMA_CPP], cwd=npm_dir)
    bundle = npm_dir / "node_modules/node-llama-cpp/llama/gitRelease.bundle"
    src = work / "llama.cpp"
    if not src.exists():
        run(["git", "clone", "--quiet", str(bundle), str(src)])
    build = work / "llama-build"
    run(["cmake", "-S", str(src), "-B", str(build), "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
         "-DGGML_NATIVE=OFF", *(f"-DGGML_{isa}=ON" for isa in LLAMA_CPU_ISAS), "-DGGML_AMX_TILE=OFF", "-DGGML_AMX_INT8=OFF",
         "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_APP=OFF",
         "-DLLAMA_BUILD_UI=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF", "-DLLAMA_OPENSSL=OFF"])
    run(["ninja", "-C", str(build), "llama-server"])
    venv = work / "venv"
    if not venv.exists():
        run([sys.executable, "-m", "venv", str(venv)])
    run([str(venv / "bin/pip"), "install", "--quiet", *PY_PACKAGES])


# --- ONNX -> GGUF -------------------------------------------------------------------------------

def dequantize_matmul_nbits(qweight, scales, zero_points, k):
    """MatMulNBits (4 bits) to a float [N, K] matrix, as ONNX Runtime's contrib op docs define it."""
    import numpy as np
    n, blocks, blob = qweight.shape
    block = blob * 2
    q = np.empty((n, blocks, block), np.uint8)
    q[..., 0::2] = qweight & 0x0F
    q[..., 1::2] = qweight >> 4
    zp_bytes = zero_points.reshape(n, -1)
    zp = np.empty((n, zp_bytes.shape[1] * 2), np.uint8)
    zp[:, 0::2] = zp_bytes & 0x0F
    zp[:, 1::2] = zp_bytes >> 4
    w = (q.astype(np.float32) - zp[:, :blocks, None]) * scales.reshape(n, blocks, 1)
    return w.reshape(n, blocks * block)[:, :k]


def rotate_half_to_pairs(w, heads, head_dim):
    """Rows of a q or k projection, per head, from [x0..x(d/2-1), y0..] to [x0, y0, x1, y1, ...]."""
    return w.reshape(heads, 2, head_dim // 2, -1).swapaxes(1, 2).reshape(w.shape)


def convert(args):
    import gguf
    import numpy as np
    import onnx
    from onnx import numpy_helper

    model_dir = args.model
    config = json.loads((model_dir / "genai_config.json").read_text())["model"]
    dec = config["decoder"]
    hidden, heads, kv_heads, head_dim = dec["hidden_size"], dec["num_attention_heads"], dec["num_key_value_heads"], dec["head_size"]
    graph = onnx.load(str(model_dir / "model.onnx")).graph
    init = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    attrs = {n.name: {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute} for n in graph.node}
    gqa = attrs["/model/layers.0/attn/GroupQueryAttention"]
    eps = attrs["/model/layers.0/input_layernorm/LayerNorm"]["epsilon"]
    assert gqa["rotary_interleaved"] == 0 and gqa["num_heads"] == heads and gqa["kv_num_heads"] == kv_heads
    # The rotary cache says the base: cos_cache[p, i] = cos(p * theta^(-2i / head_dim)).
    theta = 500000.0
    inv_freq = theta ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    assert np.allclose(init["cos_cache"], np.cos(np.outer(np.arange(init["cos_cache"].shape[0]), inv_freq)), atol=1e-5)

    nbits = [n for n in graph.node if n.op_type == "MatMulNBits"]
    assert all(attrs[n.name]["bits"] == 4 and attrs[n.name]["block_size"] == 32 for n in nbits)
    k_of = {n.input[1]: attrs[n.name]["K"] for n in nbits}

    def linear(prefix):
        weight = prefix + ".qweight"
        return dequantize_matmul_nbits(init[weight], init[prefix + ".scales"], init[prefix + ".qzeros"], k_of[weight])

    qtype = gguf.GGMLQuantizationType[args.qtype]
    file_type = {"Q4_0": gguf.LlamaFileType.MOSTLY_Q4_0, "Q4_1": gguf.LlamaFileType.MOSTLY_Q4_1,
                 "Q8_0": gguf.LlamaFileType.MOSTLY_Q8_0}[args.qtype]
    out = args.work / f"default-{args.qtype}.gguf"
    out.parent.mkdir(parents=True, exist_ok=True)
    w = gguf.GGUFWriter(str(out), "llama")
    w.add_name("ember models/default")
    w.add_context_length(config["context_length"])
    w.add_embedding_length(hidden)
    w.add_block_count(dec["num_hidden_layers"])
    w.add_feed_forward_length(init["model.layers.0.mlp.up_proj.MatMulNBits.qweight"].shape[0])
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_layer_norm_rms_eps(float(eps))
    w.add_rope_freq_base(theta)
    w.add_rope_dimension_count(head_dim)
    w.add_vocab_size(config["vocab_size"])
    w.add_file_type(file_type)

    tokenizer = json.loads((model_dir / "tokenizer.json").read_text())
    vocab = sorted(tokenizer["model"]["vocab"].items(), key=lambda kv: kv[1])
    assert [i for _, i in vocab] == list(range(config["vocab_size"]))
    special = {t["id"] for t in tokenizer["added_tokens"] if t["special"]}
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list([t for t, _ in vocab])
    w.add_token_types([gguf.TokenType.CONTROL if i in special else gguf.TokenType.NORMAL for _, i in vocab])
    w.add_token_merges([m if isinstance(m, str) else " ".join(m) for m in tokenizer["model"]["merges"]])
    w.add_bos_token_id(config["bos_token_id"])
    w.add_eos_token_id(config["eos_token_id"])
    w.add_pad_token_id(config["pad_token_id"])
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)

    def matrix(name, x):
        w.add_tensor(name, gguf.quants.quantize(np.ascontiguousarray(x, np.float32), qtype), raw_dtype=qtype)

    def vector(name, x):
        w.add_tensor(name, np.asarray(x, np.float32))

    w.add_tensor("token_embd.weight", init["model.embed_tokens.weight"].astype(np.float32))
    for i in range(dec["num_hidden_layers"]):
        p = f"model.layers.{i}"
        qkv = linear(f"{p}.attn.qkv_proj.MatMulNBits")
        q, k, v = np.split(qkv, [heads * head_dim, (heads + kv_heads) * head_dim])
        vector(f"blk.{i}.attn_norm.weight", init[f"{p}.input_layernorm.weight"])
        matrix(f"blk.{i}.attn_q.weight", rotate_half_to_pairs(q, heads, head_dim))
        matrix(f"blk.{i}.attn_k.weight", rotate_half_to_pairs(k, kv_heads, head_dim))
        matrix(f"blk.{i}.attn_v.weight", v)
        matrix(f"blk.{i}.attn_output.weight", linear(f"{p}.attn.o_proj.MatMulNBits"))
        vector(f"blk.{i}.ffn_norm.weight", init[f"{p}.post_attention_layernorm.weight"])
        matrix(f"blk.{i}.ffn_gate.weight", linear(f"{p}.mlp.gate_proj.MatMulNBits"))
        matrix(f"blk.{i}.ffn_up.weight", linear(f"{p}.mlp.up_proj.MatMulNBits"))
        matrix(f"blk.{i}.ffn_down.weight", linear(f"{p}.mlp.down_proj.MatMulNBits"))
    vector("output_norm.weight", init[f"model.layers.{dec['num_hidden_layers']}.final_norm_layernorm.weight"])
    matrix("output.weight", linear("lm_head.MatMulNBits"))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"wrote {out} ({out.stat().st_size} bytes, {args.qtype})")


# --- the servers --------------------------------------------------------------------------------

def harness():
    sys.path.insert(0, str(REPO / "tests/serve"))
    import harness
    return harness


class LlamaServer:
    """`llama-server` on 127.0.0.1: one slot of 128 tokens (the model's context) per stream."""

    def __init__(self, args):
        self.binary = args.work / "llama-build/bin/llama-server"
        self.gguf = args.work / f"default-{args.qtype}.gguf"

    def start(self):
        h = harness()
        port = h.free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.log = open(self.gguf.with_suffix(".server.log"), "w")
        self.proc = h.spawn([str(self.binary), "-m", str(self.gguf), "--host", "127.0.0.1", "--port", str(port),
                             "-t", str(THREADS), "-tb", str(THREADS), "-np", str(STREAMS), "-c", str(128 * STREAMS),
                             "--no-webui"], stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)
        return self

    def wait_ready(self, timeout=60):
        import httpx
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama-server exited with {self.proc.returncode}; see {self.log.name}")
            try:
                if httpx.get(self.url + "/health", timeout=2).status_code == 200:
                    return self.url
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"llama-server: /health not 200 within {timeout} s; see {self.log.name}")
            time.sleep(0.1)


def start_ember(args, name):
    server = harness().EmberServer(str(args.ember), str(args.model), "--threads", str(THREADS),
                                   "--max-concurrent", str(STREAMS), name=name).start()
    server.wait_ready()
    return server


def prompt_ids(ember_url, prompts):
    import httpx
    return [httpx.post(ember_url + "/tokenize", json={"prompt": p, "add_special_tokens": True}).json()["tokens"]
            for p in prompts]


def check(args):
    """Greedy continuations of each prompt, as token ids: llama-server against `ember generate`."""
    import httpx
    ember = start_ember(args, "ember")
    ids = prompt_ids(ember.url, ["Love is", *PROMPTS])
    ember.terminate()
    llama = LlamaServer(args).start()
    llama.wait_ready()
    print(f"| prompt | tokens equal | ember | llama.cpp ({args.qtype}) |\n|---|---|---|---|")
    for text, prompt in zip(["Love is", *PROMPTS], ids):
        ours = json.loads(subprocess.run([str(args.ember), "generate", str(args.model), "--prompt", text, "--greedy",
                                          "--max-new-tokens", "20", "--json"],
                                         check=True, capture_output=True, text=True).stdout)
        assert ours["prompt_tokens"] == prompt
        theirs = httpx.post(llama.url + "/completion", timeout=60, json={
            "prompt": prompt, "n_predict": 20, "temperature": 0, "return_tokens": True, "cache_prompt": False}).json()
        a, b = ours["generated_tokens"], theirs["tokens"]
        same = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        verdict = f"all {same}" if a == b else f"first {same} of {len(a)}/{len(b)}"
        print(f"| {text} | {verdict} | `{ours['text']}` | `{theirs['content']}` |")
    llama.proc.kill()


# --- the benchmark ------------------------------------------------------------------------------

async def stream(client, url, body):
    """(seconds to the first chunk with text, completion tokens) of one streaming /v1/completions."""
    start = time.perf_counter()
    first, tokens = None, None
    async with client.stream("POST", url + "/v1/completions", json=body) as r:
        r.raise_for_status()
        async for line in r.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if first is None and any(c.get("text") for c in chunk.get("choices", [])):
                first = time.perf_counter() - start
            if chunk.get("usage"):
                tokens = chunk["usage"]["completion_tokens"]
    return first, tokens


async def batch(url, bodies):
    import httpx
    async with httpx.AsyncClient(timeout=120, limits=httpx.Limits(max_connections=STREAMS)) as client:
        start = time.perf_counter()
        results = await asyncio.gather(*(stream(client, url, b) for b in bodies))
        wall = time.perf_counter() - start
    return {"ttft_s": [r[0] for r in results], "tokens": [r[1] for r in results], "wall_s": wall,
            "tok_per_s": sum(r[1] for r in results) / wall}


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_busy_seconds():
    with open("/proc/stat") as f:
        jiffies = [int(x) for x in f.readline().split()[1:9]]
    return (sum(jiffies) - jiffies[3] - jiffies[4]) / os.sysconf("SC_CLK_TCK")


def cpu_of(pids):
    """Seconds of CPU used so far by these processes and by this one, and by the whole machine."""
    return sum(cpu_seconds(pid) for pid in pids) + sum(os.times()[:2]), machine_busy_seconds()


def percentile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q / 100 * (len(xs) - 1)))]


def spread(xs, fmt):
    return f"{fmt.format(statistics.median(xs))} ({fmt.format(min(xs))}–{fmt.format(max(xs))})"


def bench(args):
    ember_a, ember_b = start_ember(args, "ember"), start_ember(args, "ember-null")
    llama = LlamaServer(args).start()
    llama.wait_ready()
    ids = prompt_ids(ember_a.url, PROMPTS)
    assert all(len(p) + MAX_NEW_TOKENS <= 128 for p in ids)

    def bodies(max_tokens, extra):
        return [dict(prompt=p, max_tokens=m, temperature=0, stream=True, stream_options={"include_usage": True}, **extra)
                for p, m in zip(ids, max_tokens)]

    ember_bodies = bodies([MAX_NEW_TOKENS] * STREAMS, {})
    counts = asyncio.run(batch(ember_a.url, ember_bodies))["tokens"]
    servers = {"ember": (ember_a.url, ember_a.proc.pid, ember_bodies),
               "ember-null": (ember_b.url, ember_b.proc.pid, ember_bodies),
               "llama.cpp": (llama.url, llama.proc.pid, bodies(counts, {"ignore_eos": True}))}
    for url, _, b in servers.values():
        asyncio.run(batch(url, b))
    idle = {name: cpu_seconds(pid) for name, (_, pid, _) in servers.items()}
    time.sleep(2)
    idle = {name: (cpu_seconds(pid) - idle[name]) / 2 for name, (_, pid, _) in servers.items()}
    print(f"completion tokens per prompt (ember greedy, to EOS or {MAX_NEW_TOKENS}): {counts}")
    print("idle CPU (cores) of each server between rounds: " + ", ".join(f"{n} {c:.3f}" for n, c in idle.items()))

    rng = random.Random(args.seed)
    rounds, discarded = [], 0
    while len(rounds) < args.rounds:
        order = list(servers)
        rng.shuffle(order)
        row = {"order": order}
        pids = [pid for _, pid, _ in servers.values()]
        (ours, machine), start = cpu_of(pids), time.perf_counter()
        for name in order:
            url, _, b = servers[name]
            row[name] = asyncio.run(batch(url, b))
            assert row[name]["tokens"] == counts, (name, row[name]["tokens"])
        ours_after, machine_after = cpu_of(pids)
        other = row["other_cores"] = max(0.0, (machine_after - machine) - (ours_after - ours)) / (time.perf_counter() - start)
        line = ", ".join(f"{n} {row[n]['tok_per_s']:.0f} tok/s TTFT p50 {statistics.median(row[n]['ttft_s']) * 1e3:.1f} ms"
                         for n in servers) + f" (other processes: {other:.2f} cores)"
        if other > args.max_other_cores:
            discarded += 1
            print(f"discarded: {line}", flush=True)
            if discarded > args.max_discarded:
                sys.exit(f"the machine stayed busy: {discarded} rounds discarded")
            time.sleep(2)
            continue
        rounds.append(row)
        print(f"round {len(rounds)}: {line}", flush=True)

    for s in (ember_a, ember_b):
        s.terminate()
    llama.proc.kill()
    report(rounds, counts)
    print(f"\n{discarded} rounds discarded (other processes above {args.max_other_cores} cores)")
    if args.json:
        args.json.write_text(json.dumps({"counts": counts, "idle_cores": idle, "discarded": discarded, "rounds": rounds},
                                        indent=1))


def report(rounds, counts):
    names = ["ember", "ember-null", "llama.cpp"]
    print(f"\n{len(rounds)} rounds x {STREAMS} streams, {sum(counts)} output tokens per batch\n")
    print("| server | output tok/s p50 (min–max over rounds) | TTFT p50 ms | TTFT p99 ms | TTFT p50 per round, ms (min–max) |")
    print("|---|---|---|---|---|")
    for n in names:
        ttft = [t * 1e3 for r in rounds for t in r[n]["ttft_s"]]
        print(f"| {n} | {spread([r[n]['tok_per_s'] for r in rounds], '{:.0f}')} | {percentile(ttft, 50):.1f} | "
              f"{percentile(ttft, 99):.1f} | {spread([statistics.median(r[n]['ttft_s']) * 1e3 for r in rounds], '{:.1f}')} |")
    print("\nper-round ratios, median (min–max):\n")
    print("| ratio | throughput | TTFT p50 |\n|---|---|---|")
    for a, b, label in [("llama.cpp", "ember", "llama.cpp / ember (throughput: >1 llama.cpp faster; TTFT: <1 llama.cpp faster)"),
                        ("ember-null", "ember", "null: ember-null / ember")]:
        tput = [r[a]["tok_per_s"] / r[b]["tok_per_s"] for r in rounds]
        ttft = [statistics.median(r[a]["ttft_s"]) / statistics.median(r[b]["ttft_s"]) for r in rounds]
        print(f"| {label} | {spread(tput, '{:.3f}')} | {spread(ttft, '{:.3f}')} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("command", choices=["setup", "convert", "check", "bench"])
    ap.add_argument("--work", type=Path, default=Path("/tmp/ember-llamacpp"), help="where everything installed and made goes")
    ap.add_argument("--model", type=Path, default=REPO / "models/default")
    ap.add_argument("--ember", type=Path, default=REPO / "build/ember")
    ap.add_argument("--qtype", default="Q4_0", choices=["Q4_0", "Q4_1", "Q8_0"], help="GGUF weight type of the projections")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--max-other-cores", type=float, default=0.25,
                    help="bench: rerun a round in which other processes used more CPU than this, in cores")
    ap.add_argument("--max-discarded", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0, help="shuffles the order of the servers in each round")
    ap.add_argument("--json", type=Path, help="bench: also write every round's raw numbers here")
    args = ap.parse_args()
    {"setup": setup, "convert": convert, "check": check, "bench": bench}[args.command](args)


if __name__ == "__main__":
    main()
