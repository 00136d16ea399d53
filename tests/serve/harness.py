"""What the `ember serve` tests share: server and HAProxy processes, bounded waits, /metrics, RSS.

Every wait here has a deadline, every child process dies with the test (SIGKILL
through PR_SET_PDEATHSIG if the test itself is killed, e.g. by ctest's
TIMEOUT), and servers listen on 127.0.0.1 only.
"""
import ctypes
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import httpx

LISTENING = re.compile(r"ember serve: listening on http://([0-9.]+):(\d+)")
_children = []
_PR_SET_PDEATHSIG = 1


def _die_with_parent():
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def spawn(argv, **kwargs):
    """Popen that is killed with the test. Call from the main thread only: the
    death signal fires when the thread that forked exits."""
    proc = subprocess.Popen(argv, preexec_fn=_die_with_parent, **kwargs)
    _children.append(proc)
    return proc


def kill_children():
    for proc in _children:
        if proc.poll() is None:
            proc.kill()
    for proc in _children:
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


def watchdog(seconds, what):
    """Ends the whole test (exit 1) after `seconds`, whatever it is doing: no test hangs."""
    def fire():
        print(f"FAIL {what}: still running after {seconds} s (watchdog); killing it", flush=True)
        kill_children()
        os._exit(1)
    timer = threading.Timer(seconds, fire)
    timer.daemon = True
    timer.start()
    return timer


def free_port():
    """A loopback port free right now (HAProxy cannot report a port 0 bind back)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class EmberServer:
    """One `ember serve` process; stderr is kept (self.lines) and echoed to a log file."""

    def __init__(self, binary, model_dir, *extra, port=0, log_path=None, name="ember", env=None):
        self.binary, self.model_dir, self.extra = binary, model_dir, list(extra)
        self.env = dict(os.environ, **env) if env else None
        self.port, self.log_path, self.name = port, log_path, name
        self.proc = None

    def start(self, port=None):
        if port is not None:
            self.port = port
        self.lines = []
        self.listening = threading.Event()
        self.ready = threading.Event()
        self.url = None
        argv = [self.binary, "serve", self.model_dir, "--host", "127.0.0.1", "--port", str(self.port), *self.extra]
        self.started_at = time.monotonic()
        self.proc = spawn(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=self.env)
        log = open(self.log_path, "a") if self.log_path else None
        threading.Thread(target=self._read_stderr, args=(self.proc, log), daemon=True).start()
        return self

    def _read_stderr(self, proc, log):
        for raw in proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.lines.append((time.monotonic(), line))
            if log:
                log.write(f"[{self.name}] {line}\n")
                log.flush()
            m = LISTENING.search(line)
            if m and not self.listening.is_set():
                self.url = f"http://{m.group(1)}:{m.group(2)}"
                self.port = int(m.group(2))
                self.listening.set()
            if "ember serve: ready" in line:
                self.ready.set()
        if log:
            log.close()

    def wait_listening(self, timeout=30):
        deadline = time.monotonic() + timeout
        while not self.listening.wait(0.05):
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode} before listening:\n{self.stderr_tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} printed no 'listening on' line within {timeout} s:\n{self.stderr_tail()}")
        return self.url

    def wait_ready(self, timeout=60):
        """Until GET /health is 200 (and the process still runs)."""
        self.wait_listening(timeout)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode} before ready:\n{self.stderr_tail()}")
            try:
                if httpx.get(self.url + "/health", timeout=2).status_code == 200:
                    return self.url
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name}: /health not 200 within {timeout} s:\n{self.stderr_tail()}")
            time.sleep(0.05)

    def terminate(self, timeout=60):
        """SIGTERM, then the exit status within `timeout` (None if it had to be killed)."""
        if self.proc.poll() is not None:
            return self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
            return None

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)

    def rss_kb(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise RuntimeError("no VmRSS line")

    def metrics(self, timeout=5):
        r = httpx.get(self.url + "/metrics", timeout=timeout)
        r.raise_for_status()
        return parse_metrics(r.text)

    def stderr_tail(self, n=30):
        return "\n".join(line for _, line in self.lines[-n:])


_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


class Metrics:
    """Prometheus text format: samples by name, with their labels, and the # TYPE of each family."""

    def __init__(self):
        self.samples = {}
        self.types = {}

    def get(self, name, **labels):
        """Sum of the samples of `name` whose labels include `labels`; None if there is no such sample."""
        found = [v for lab, v in self.samples.get(name, []) if all(lab.get(k) == w for k, w in labels.items())]
        return sum(found) if found else None

    def names(self):
        return sorted(self.samples)


def parse_metrics(text):
    m = Metrics()
    for line in text.splitlines():
        if line.startswith("# TYPE"):
            parts = line.split()
            if len(parts) >= 4:
                m.types[parts[2]] = parts[3]
            continue
        if not line or line.startswith("#"):
            continue
        s = _SAMPLE.match(line)
        if not s:
            raise ValueError(f"not a Prometheus sample line: {line!r}")
        labels = dict(_LABEL.findall(s.group(2) or ""))
        m.samples.setdefault(s.group(1), []).append((labels, float(s.group(3))))
    return m


def percentile(values, p):
    if not values:
        return float("nan")
    v = sorted(values)
    k = (len(v) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def parse_sse(lines):
    """Events of an SSE body: yields the payload of each `data:` line (str)."""
    for line in lines:
        if line.startswith("data:"):
            yield line[5:].strip()


class Checks:
    """Collects named pass/fail results so one run reports every failure, then exits 0 or 1."""

    def __init__(self):
        self.failed = []
        self.passed = 0

    def run(self, name, fn, *args):
        t0 = time.monotonic()
        try:
            fn(*args)
        except Exception as e:  # noqa: BLE001 - a check's failure, whatever its kind, is reported
            detail = f"{type(e).__name__}: {e}"
            self.failed.append((name, detail))
            print(f"FAIL {name}: {detail}", flush=True)
            return False
        self.passed += 1
        print(f"PASS {name} ({time.monotonic() - t0:.2f} s)", flush=True)
        return True

    def finish(self):
        print(f"{self.passed} passed, {len(self.failed)} failed", flush=True)
        for name, detail in self.failed:
            print(f"  FAILED {name}: {detail}", flush=True)
        return 1 if self.failed else 0


def report(what, failures):
    """Prints each failure and the verdict; the exit status."""
    for f in failures:
        print(f"FAIL {f}")
    print(f"{what}: " + ("FAILED" if failures else "passed"))
    return 1 if failures else 0


def expect(cond, message):
    if not cond:
        raise AssertionError(message)


def eprint(*args):
    print(*args, file=sys.stderr, flush=True)
