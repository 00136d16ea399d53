#!/usr/bin/env python3
"""Three `ember serve` replicas behind HAProxy (deploy/haproxy/ember.cfg, Debian's haproxy binary).

usage: replica_test.py EMBER_BINARY MODEL_DIR [--haproxy PATH] [--cfg PATH] [--clients 12]

Starts three replicas on free loopback ports (--threads 1 each: three on the
CI's two cores; EMBER_REFERENCE=1, the reference kernels, so that a stream
takes long enough, ~0.1 s, for a kill to meet it mid-way) and `haproxy -db -f
ember.cfg` in the foreground on a free loopback port, the replica addresses
passed through the cfg's environment variables (health checks every 500 ms
instead of 2 s, so the run is short).
Then, each bound by a deadline (the whole run by a 170 s watchdog):

1. Stickiness, counted by each replica's ember_requests_total{endpoint="chat"}:
   4 requests with the same X-Session-Id land on one replica, for each of 12
   session ids; the 12 sessions use at least two replicas; 30 requests without
   the header spread round-robin (each replica gets some).
2. Steady load: --clients streaming chat clients, each with its own session id,
   loop through HAProxy. Every request has a 30 s bound; an outcome is "ok"
   (HTTP 200, finish_reason, [DONE]), a clean error (an HTTP error status, a
   stream cut without [DONE], a refused connection), or "hung" (over the
   bound: always a failure).
3. SIGKILL, mid-load, the replica that served the most load clients in the
   first 6 s (HAProxy's hash decides where each client's session lands).
   Requests in flight on it may end in a clean error; every request that
   starts after it is reaped must be ok (HAProxy retries a refused connection
   or an empty response on another replica), and the two others keep serving
   (their counters grow). It is started again on its port and must come back
   UP in HAProxy.
4. Graceful restart of the replica with the next most load: SIGTERM (drain),
   exit status 0 within --drain-timeout + 5 s, start it again on the same
   port, UP again. Every request in flight at the SIGTERM or started until
   3 s after it is UP again must be ok: a draining replica answers 503 to new
   requests and HAProxy retries those elsewhere (without `retry-on ... 503`
   in ember.cfg this fails: the 503 reaches the client).
Prints the outcome counts per phase and HAProxy's retry and redispatch
counters. Exit status 0 only if every check held.
"""
import argparse
import asyncio
import csv
import io
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time

import httpx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import EmberServer, free_port, kill_children, report, spawn, watchdog  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REQUEST_BOUND = 30
DRAIN_TIMEOUT = 10
CHECK_INTER_MS = 500
# models/default makes thousands of tokens/s: a response would be whole in HAProxy's buffers before a SIGKILL
# or SIGTERM could meet it. The replicas run the reference kernels (~300 tokens/s on one thread), so the
# streams of the load are being generated most of the time and each failure hits some mid-stream.
SLOW = {"EMBER_REFERENCE": "1"}


class HAProxy:
    def __init__(self, binary, cfg, replicas, log_path):
        self.binary, self.cfg, self.replicas, self.log_path = binary, cfg, replicas, log_path

    def start(self, attempts=3):
        """`haproxy -db`; a port taken between free_port() and the bind is retried with new ports."""
        for _ in range(attempts):
            self.port, self.stats_port = free_port(), free_port()
            env = dict(os.environ, EMBER_HAPROXY_BIND=f"127.0.0.1:{self.port}",
                       EMBER_HAPROXY_STATS_BIND=f"127.0.0.1:{self.stats_port}",
                       EMBER_CHECK_INTER=f"{CHECK_INTER_MS}ms", EMBER_CHECK_FASTINTER=f"{CHECK_INTER_MS // 2}ms",
                       EMBER_HAPROXY_HARD_STOP="5s")
            for i, r in enumerate(self.replicas):
                env[f"EMBER_REPLICA_{i + 1}"] = f"127.0.0.1:{r.port}"
            log = open(self.log_path, "a")
            self.proc = spawn([self.binary, "-db", "-f", self.cfg], env=env, stdin=subprocess.DEVNULL,
                              stdout=log, stderr=subprocess.STDOUT)
            log.close()
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and self.proc.poll() is None:
                try:
                    self.server_status()
                    self.url = f"http://127.0.0.1:{self.port}"
                    return self
                except httpx.HTTPError:
                    time.sleep(0.1)
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait(timeout=5)
        raise RuntimeError(f"haproxy did not start ({attempts} attempts); see {self.log_path}")

    def stats(self):
        r = httpx.get(f"http://127.0.0.1:{self.stats_port}/stats;csv", timeout=5)
        r.raise_for_status()
        return list(csv.DictReader(io.StringIO(r.text.lstrip("# "))))

    def server_status(self):
        return {row["svname"]: row["status"] for row in self.stats() if row["pxname"] == "ember_replicas"
                and row["svname"] not in ("FRONTEND", "BACKEND")}

    def backend_counters(self):
        row = next(r for r in self.stats() if r["pxname"] == "ember_replicas" and r["svname"] == "BACKEND")
        return {k: int(row[k] or 0) for k in ("wretr", "wredis", "econ", "eresp", "hrsp_5xx", "stot")}

    def wait_status(self, name, status, timeout):
        deadline = time.monotonic() + timeout
        while True:
            now = self.server_status().get(name)
            if now == status:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"haproxy: {name} is {now}, not {status}, after {timeout} s")
            time.sleep(0.1)


def chat_counts(replicas):
    counts = []
    for r in replicas:
        try:
            counts.append(r.metrics().get("ember_requests_total", endpoint="chat") or 0)
        except (httpx.HTTPError, OSError):
            counts.append(None)
    return counts


def delta(after, before):
    return [None if a is None or b is None else int(a - b) for a, b in zip(after, before)]


def check_stickiness(hap, replicas, model, failures):
    body = {"model": model, "messages": [{"role": "user", "content": "Love is"}], "max_tokens": 2}
    placement = {}
    with httpx.Client(base_url=hap.url, timeout=REQUEST_BOUND) as http:
        for s in range(12):
            session = f"conversation-{s}"
            before = chat_counts(replicas)
            for _ in range(4):
                r = http.post("/v1/chat/completions", json=body, headers={"X-Session-Id": session})
                if r.status_code != 200:
                    failures.append(f"stickiness: {session}: HTTP {r.status_code} {r.text[:200]}")
                    return
            d = delta(chat_counts(replicas), before)
            hit = [i for i, n in enumerate(d) if n]
            if sorted(d) != [0, 0, 4]:
                failures.append(f"stickiness: the 4 requests of {session} landed {d} (expected all on one replica)")
            placement[session] = hit
        used = {h[0] for h in placement.values() if len(h) == 1}
        before = chat_counts(replicas)
        for _ in range(30):
            r = http.post("/v1/chat/completions", json=body)
            if r.status_code != 200:
                failures.append(f"no session header: HTTP {r.status_code} {r.text[:200]}")
                return
        spread = delta(chat_counts(replicas), before)
    print(f"stickiness: 12 sessions x 4 requests; sessions per replica "
          f"{[sum(1 for h in placement.values() if h == [i]) for i in range(3)]}; "
          f"30 requests without X-Session-Id: {spread}")
    if len(used) < 2:
        failures.append(f"stickiness: 12 session ids all hashed to replica {used}")
    if sum(spread) != 30 or min(spread) < 5:
        failures.append(f"round-robin without the header: {spread} (expected about 10 each)")


class Load:
    """Streaming clients through HAProxy on an asyncio loop in a thread; each request's (start, end, outcome)."""

    def __init__(self, url, model, clients):
        self.url, self.model, self.clients = url, model, clients
        self.records = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)

    async def _main(self):
        limits = httpx.Limits(max_connections=self.clients + 2)
        timeout = httpx.Timeout(REQUEST_BOUND, connect=3)
        async with httpx.AsyncClient(base_url=self.url, limits=limits, timeout=timeout) as http:
            await asyncio.gather(*(self._client(i, http) for i in range(self.clients)))

    async def _client(self, i, http):
        rng = random.Random(i)
        while not self.stop.is_set():
            t0 = time.monotonic()
            try:
                outcome = await asyncio.wait_for(self._one(http, i, rng), REQUEST_BOUND)
            except asyncio.TimeoutError:
                outcome = "hung"
            except httpx.ConnectError:
                outcome = "connection refused"
            except (httpx.RemoteProtocolError, httpx.ReadError):
                outcome = "cut"
            except httpx.HTTPError as e:
                outcome = f"error {type(e).__name__}"
            self.records.append((t0, time.monotonic(), outcome))
            if outcome != "ok":
                await asyncio.sleep(0.2)  # a client backs off briefly after an error

    async def _one(self, http, i, rng):
        body = {"model": self.model, "messages": [{"role": "user", "content": f"Fortune number {i}, please."}],
                "max_tokens": rng.randint(16, 48), "temperature": 0.8, "seed": rng.randrange(1 << 30), "stream": True}
        finish, done = None, False
        async with http.stream("POST", "/v1/chat/completions", json=body,
                               headers={"X-Session-Id": f"client-{i}"}) as r:
            if r.status_code != 200:
                await r.aread()
                return f"http {r.status_code}"
            async for line in r.aiter_lines():
                if line.startswith("data:"):
                    data = line[5:].strip()
                    if data == "[DONE]":
                        done = True
                        break
                    for choice in json.loads(data).get("choices", []):
                        finish = choice.get("finish_reason") or finish
        if not done:
            return "cut"
        return "ok" if finish in ("stop", "length") else f"finish_reason {finish!r}"

    def start(self):
        self.thread.start()
        return self

    def finish(self, timeout):
        self.stop.set()
        self.thread.join(timeout)
        return not self.thread.is_alive()

    def outcomes(self, select):
        out = {}
        for t0, t1, o in list(self.records):
            if select(t0, t1):
                out[o] = out.get(o, 0) + 1
        return out


def restart(replica, timeout=30):
    replica.start(port=replica.port)
    replica.wait_ready(timeout)


def phases(hap, replicas, failures):
    """Kill the replica that serves the most load clients, bring it back, then restart another one that
    serves some gracefully; the timestamps. (Which replica a client's X-Session-Id hashes to is HAProxy's
    choice: the victims are picked from the counters, so each failure hits live streams.)"""
    t = {}
    start = chat_counts(replicas)
    time.sleep(6)
    before = chat_counts(replicas)
    share = delta(before, start)
    order = sorted(range(3), key=lambda i: share[i] or 0, reverse=True)
    dead, drained = order[0], order[1]
    print(f"load per replica in 6 s: {share}; SIGKILL ember{dead + 1}, graceful restart ember{drained + 1}")
    if not share[drained]:
        failures.append(f"the load reaches fewer than two replicas: {share}")
    t["kill_sent"] = time.monotonic()
    replicas[dead].kill()  # SIGKILL, then reaped: from here on it is gone
    t["kill"] = time.monotonic()
    time.sleep(6)
    served = delta(chat_counts(replicas), before)
    others = [i for i in range(3) if i != dead]
    print(f"after SIGKILL of ember{dead + 1}: chat requests served in 6 s by ember{others[0] + 1} and "
          f"ember{others[1] + 1}: {[served[i] for i in others]}")
    if not all(served[i] for i in others):
        failures.append(f"after the kill the other two replicas did not both serve: {served}")
    hap.wait_status(f"ember{dead + 1}", "DOWN", 10)
    restart(replicas[dead])
    hap.wait_status(f"ember{dead + 1}", "UP", 15)
    t["back"] = time.monotonic()
    time.sleep(2)
    t["term"] = time.monotonic()
    rc = replicas[drained].terminate(timeout=DRAIN_TIMEOUT + 5)
    t["exited"] = time.monotonic()
    print(f"ember{drained + 1}: SIGTERM -> exit status {rc} after {t['exited'] - t['term']:.2f} s")
    if rc != 0:
        failures.append(f"graceful restart: exit status {rc} (None: still running after {DRAIN_TIMEOUT + 5} s)")
    restart(replicas[drained])
    hap.wait_status(f"ember{drained + 1}", "UP", 15)
    t["up"] = time.monotonic()
    time.sleep(3)
    t["end"] = time.monotonic()
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary")
    ap.add_argument("model_dir")
    ap.add_argument("--haproxy", default="/usr/sbin/haproxy")
    ap.add_argument("--cfg", default=os.path.join(ROOT, "deploy", "haproxy", "ember.cfg"))
    ap.add_argument("--clients", type=int, default=12)
    a = ap.parse_args()
    watchdog(170, "replica_test")
    work = tempfile.mkdtemp(prefix="ember-serve-replicas-")
    model = os.path.basename(os.path.normpath(a.model_dir))
    failures = []
    load = None
    try:
        replicas = [EmberServer(os.path.abspath(a.binary), os.path.abspath(a.model_dir), "--threads", "1",
                                "--drain-timeout", str(DRAIN_TIMEOUT), log_path=os.path.join(work, "replicas.log"),
                                name=f"ember{i + 1}", env=SLOW).start() for i in range(3)]
        for r in replicas:
            r.wait_ready(60)
        print(f"replicas on ports {[r.port for r in replicas]}")
        hap = HAProxy(a.haproxy, a.cfg, replicas, os.path.join(work, "haproxy.log")).start()
        for name in ("ember1", "ember2", "ember3"):
            hap.wait_status(name, "UP", 10)
        print(f"haproxy on port {hap.port} (stats {hap.stats_port}): {hap.server_status()}")
        check_stickiness(hap, replicas, model, failures)
        counters0 = hap.backend_counters()
        load = Load(hap.url, model, a.clients).start()
        t = phases(hap, replicas, failures)
        if not load.finish(REQUEST_BOUND + 10):
            failures.append("the load clients did not stop within their bound")
        counters = {k: v - counters0[k] for k, v in hap.backend_counters().items()}
        judge(load, t, counters, failures)
    except Exception as e:  # noqa: BLE001 - a step that cannot run fails the test
        failures.append(f"{type(e).__name__}: {e}")
    finally:
        if load:
            load.stop.set()
        kill_children()
    print(f"logs: {work}")
    return report("replica test", failures)


def judge(load, t, counters, failures):
    before = load.outcomes(lambda t0, t1: t1 < t["kill_sent"])
    at_kill = load.outcomes(lambda t0, t1: t0 < t["kill"] and t1 >= t["kill_sent"])
    after_kill = load.outcomes(lambda t0, t1: t["kill"] <= t0 < t["term"])
    restart_window = load.outcomes(lambda t0, t1: t1 >= t["term"] and t0 <= t["end"])
    every = load.outcomes(lambda t0, t1: True)
    print("| phase | outcomes |\n|---|---|")
    for name, o in (("before the kill", before), ("in flight at the SIGKILL", at_kill),
                    ("started after the SIGKILL, until the graceful restart", after_kill),
                    ("graceful restart (SIGTERM .. UP again + 3 s)", restart_window), ("all", every)):
        print(f"| {name} | {o} |")
    print(f"haproxy during the load: retries {counters['wretr']}, redispatches {counters['wredis']}, "
          f"connection errors {counters['econ']}, response errors {counters['eresp']}, "
          f"5xx to clients {counters['hrsp_5xx']}, sessions {counters['stot']}")
    if every.get("hung"):
        failures.append(f"{every['hung']} requests hung (over {REQUEST_BOUND} s)")
    for name, o in (("before the kill", before), ("after the kill", after_kill),
                    ("during the graceful restart", restart_window)):
        bad = {k: v for k, v in o.items() if k != "ok"}
        if bad:
            failures.append(f"{name}: {bad} (every request must succeed)")
        if not o.get("ok"):
            failures.append(f"{name}: no request completed")


if __name__ == "__main__":
    sys.exit(main())
