#!/usr/bin/env python3
"""Load test: concurrent streaming chat clients against one `ember serve` for a minute.

usage: load_test.py EMBER_BINARY MODEL_DIR [--clients 64] [--seconds 60] [--warmup 15]

Starts `ember serve MODEL_DIR --port 0` on 127.0.0.1 and runs --clients asyncio
clients (httpx), each looping streamed chat completions (include_usage, a
seeded temperature-0.8 sample of 8 to 64 tokens, prompts that share a system
prompt so the prefix cache is used) until --seconds have passed. Every stream
must be complete: HTTP 200, a choice with finish_reason, a usage chunk whose
completion_tokens equals the content chunks received, then `data: [DONE]`.
Any error, incomplete stream or request over its 60 s bound fails the test.

Memory: the server's VmRSS (/proc/PID/status) is sampled every second; the
value at the end of the warm-up (--warmup s, by which the KV pool, the prefix
cache, the thread pool's scratch and the allocator's arenas have reached their
steady size) is the start, the last sample under load the end. Flat means
end <= start x 1.10 + 8 MiB: the 8 MiB absorb glibc malloc's arena trimming and
per-connection buffers coming and going (64 connections x a few 100 KiB of
httplib and SSE buffers), the 10 % the allocator's fragmentation drift. On the
2-core machine the server answers ~13,000 requests a minute, ~10,000 in the
45 s measured window, and RSS is ~27 MiB, so the limit allows ~10.7 MiB: a leak
of 1 KiB per request, or of one request's KV blocks or token buffers, fails it
(measured: 26.7 -> 27.3 MiB in 60 s; 27.2 -> 28.1 MiB over 180 s and 28,600
requests, the slope falling from +11 to +5 KiB/s: the allocator settling). The
least-squares slope of RSS over the measured window is printed too.

After the load: the running/active gauges and the KV blocks held return to 0
within 5 s (nothing leaked in the engine), and SIGTERM exits 0.
Prints a summary table: requests, tokens, errors, tok/s, TTFT p50/p99, RSS.
"""
import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
import time

import httpx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import EmberServer, kill_children, parse_metrics, percentile, report, watchdog  # noqa: E402

REQUEST_BOUND = 60
SYSTEM = "You are a fortune cookie. Answer with one short fortune."
QUESTIONS = ["What will happen to me tomorrow?", "Tell me about love.", "Will I be rich?", "What should I learn?",
             "Is the computer my friend?", "Where will I travel?", "What does the wise man say?", "Why?"]


class Stats:
    def __init__(self):
        self.requests = 0
        self.ok = 0
        self.tokens = 0
        self.ttft = []
        self.errors = {}
        self.first_start = None
        self.last_end = None

    def error(self, kind):
        self.errors[kind] = self.errors.get(kind, 0) + 1


async def one_stream(http, url, model, rng, stats):
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": rng.choice(QUESTIONS)}]
    body = {"model": model, "messages": messages, "max_tokens": rng.randint(8, 64), "temperature": 0.8,
            "seed": rng.randrange(1 << 31), "stream": True, "stream_options": {"include_usage": True}}
    t0 = time.monotonic()
    stats.first_start = stats.first_start or t0
    ttft, finish, usage, content_chunks, done = None, None, None, 0, False
    async with http.stream("POST", url + "/v1/chat/completions", json=body) as r:
        if r.status_code != 200:
            await r.aread()
            return f"http {r.status_code}: {r.text[:120]}"
        async for line in r.aiter_lines():
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                done = True
                break
            chunk = json.loads(data)
            if chunk.get("usage"):
                usage = chunk["usage"]
            for choice in chunk.get("choices", []):
                if choice["delta"].get("content"):
                    content_chunks += 1
                    ttft = ttft if ttft is not None else time.monotonic() - t0
                finish = choice.get("finish_reason") or finish
    stats.last_end = time.monotonic()
    if not done:
        return "no [DONE]"
    if finish not in ("stop", "length"):
        return f"finish_reason {finish!r}"
    if usage is None:
        return "no usage chunk"
    # A token may decode to no text (a partial UTF-8 character held back), never to two chunks.
    if content_chunks > usage["completion_tokens"]:
        return f"{content_chunks} content chunks for {usage['completion_tokens']} tokens"
    stats.tokens += usage["completion_tokens"]
    if ttft is not None:
        stats.ttft.append(ttft)
    return None


async def client_loop(i, http, url, model, deadline, stats):
    rng = random.Random(i)
    while time.monotonic() < deadline:
        stats.requests += 1
        try:
            problem = await asyncio.wait_for(one_stream(http, url, model, rng, stats), REQUEST_BOUND)
        except asyncio.TimeoutError:
            problem = f"over {REQUEST_BOUND} s"
        except httpx.HTTPError as e:
            problem = f"{type(e).__name__}"
        if problem:
            stats.error(problem)
        else:
            stats.ok += 1


async def sample_rss(server, t_start, samples, stop):
    while not stop.is_set():
        samples.append((time.monotonic() - t_start, server.rss_kb()))
        try:
            await asyncio.wait_for(stop.wait(), 1.0)
        except asyncio.TimeoutError:
            pass


async def run_load(server, model, clients, seconds):
    stats = Stats()
    samples = []
    stop = asyncio.Event()
    limits = httpx.Limits(max_connections=clients + 4, max_keepalive_connections=clients + 4)
    timeout = httpx.Timeout(REQUEST_BOUND, connect=5)
    t_start = time.monotonic()
    async with httpx.AsyncClient(limits=limits, timeout=timeout) as http:
        sampler = asyncio.create_task(sample_rss(server, t_start, samples, stop))
        loops = [client_loop(i, http, server.url, model, t_start + seconds, stats) for i in range(clients)]
        await asyncio.gather(*loops)
        stop.set()
        await sampler
    return stats, samples


def slope_kb_per_s(points):
    if len(points) < 2:
        return 0.0
    n = len(points)
    mx = sum(t for t, _ in points) / n
    my = sum(v for _, v in points) / n
    den = sum((t - mx) ** 2 for t, _ in points)
    return sum((t - mx) * (v - my) for t, v in points) / den if den else 0.0


def wait_idle(server, timeout=5):
    """Until no request runs and no KV block is held; the last metrics read."""
    deadline = time.monotonic() + timeout
    while True:
        m = parse_metrics(server_metrics_text(server))
        busy = [(n, m.get(n)) for n in ("ember_requests_running", "ember_requests_active", "ember_kv_blocks_used")
                if m.get(n) != 0]
        if not busy or time.monotonic() > deadline:
            return busy
        time.sleep(0.1)


def server_metrics_text(server):
    return httpx.get(server.url + "/metrics", timeout=10).text


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary")
    ap.add_argument("model_dir")
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--warmup", type=float, default=15)
    a = ap.parse_args()
    watchdog(a.seconds + REQUEST_BOUND + 90, "load_test")
    log = os.path.join(tempfile.mkdtemp(prefix="ember-serve-load-"), "server.log")
    model = os.path.basename(os.path.normpath(a.model_dir))
    failures = []
    try:
        server = EmberServer(os.path.abspath(a.binary), os.path.abspath(a.model_dir), log_path=log).start()
        server.wait_ready(60)
        stats, samples = asyncio.run(run_load(server, model, a.clients, a.seconds))
        measured = [(t, v) for t, v in samples if t >= a.warmup]
        if len(measured) < 2:
            failures.append(f"only {len(measured)} RSS samples after the warm-up")
            measured = samples[-2:] or [(0, 0), (0, 0)]
        rss_start, rss_end = measured[0][1], measured[-1][1]
        rss_limit = rss_start * 1.10 + 8 * 1024
        elapsed = (stats.last_end or time.monotonic()) - (stats.first_start or time.monotonic())
        errors = sum(stats.errors.values())
        rows = [("clients", a.clients), ("seconds", f"{a.seconds:.0f} (warm-up {a.warmup:.0f})"),
                ("requests", stats.requests), ("complete", stats.ok), ("errors", errors),
                ("tokens", stats.tokens), ("tok/s", f"{stats.tokens / elapsed:.1f}" if elapsed > 0 else "-"),
                ("requests/s", f"{stats.ok / elapsed:.2f}" if elapsed > 0 else "-"),
                ("TTFT p50", f"{percentile(stats.ttft, 50) * 1000:.0f} ms"),
                ("TTFT p99", f"{percentile(stats.ttft, 99) * 1000:.0f} ms"),
                ("RSS start", f"{rss_start / 1024:.1f} MiB (t={measured[0][0]:.0f} s)"),
                ("RSS end", f"{rss_end / 1024:.1f} MiB (t={measured[-1][0]:.0f} s, limit {rss_limit / 1024:.1f} MiB)"),
                ("RSS slope", f"{slope_kb_per_s(measured):+.1f} KiB/s over the measured window"),
                ("RSS max", f"{max(v for _, v in samples) / 1024:.1f} MiB")]
        print("| figure | value |\n|---|---|")
        for k, v in rows:
            print(f"| {k} | {v} |")
        for kind, n in sorted(stats.errors.items()):
            print(f"error: {n} x {kind}")
        if errors:
            failures.append(f"{errors} requests failed")
        if stats.ok == 0:
            failures.append("no request completed")
        if rss_end > rss_limit:
            failures.append(f"RSS grew from {rss_start} KiB to {rss_end} KiB (limit {rss_limit:.0f} KiB)")
        busy = wait_idle(server)
        if busy:
            failures.append(f"5 s after the load: {busy} (expected 0)")
        rc = server.terminate(timeout=40)
        if rc != 0:
            failures.append(f"exit status {rc} after SIGTERM")
    except Exception as e:  # noqa: BLE001 - any failure to run the load is a failure of the test
        failures.append(f"{type(e).__name__}: {e}")
    finally:
        kill_children()
    print(f"server log: {log}")
    return report("load test", failures)


if __name__ == "__main__":
    sys.exit(main())
