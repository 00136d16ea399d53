#!/usr/bin/env python3
"""The deployment files are valid, and say what they mean.

usage: deploy_configs_test.py [EMBER_BINARY] [--haproxy PATH]

deploy/haproxy/ember.cfg: `haproxy -c` accepts it with its defaults and with
the test's environment (every "${VAR-default}" set), and the directives the
replicas rely on are there (health checks on /health, the X-Session-Id hash,
L7 retries with redispatch, the long server timeout for streams, the buffered
request that retries need).
deploy/kubernetes/ember.yaml: `kubernetes-validate --strict` (PyPI; bundled
schemas, offline) for Kubernetes 1.30 (the first with the preStop `sleep`
action on by default) and its newest bundled version; the probes hit /health;
the grace period covers the preStop sleep plus --drain-timeout; every flag
passed to `ember serve` is one `ember serve --help` lists (when EMBER_BINARY is
given).
Each validator is first shown a broken copy and must reject it, so a validator
that accepts everything cannot pass this test.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HAPROXY_CFG = os.path.join(ROOT, "deploy", "haproxy", "ember.cfg")
K8S_YAML = os.path.join(ROOT, "deploy", "kubernetes", "ember.yaml")
K8S_VERSIONS = ("1.30.0", "1.37.0")
failures = []


def fail(message):
    failures.append(message)
    print(f"FAIL {message}", flush=True)


def run(argv, env=None):
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)


def check_haproxy(haproxy, tmp):
    text = open(HAPROXY_CFG).read()
    env = dict(os.environ, EMBER_HAPROXY_BIND="127.0.0.1:18080", EMBER_HAPROXY_STATS_BIND="127.0.0.1:18404",
               EMBER_REPLICA_1="127.0.0.1:18081", EMBER_REPLICA_2="127.0.0.1:18082", EMBER_REPLICA_3="127.0.0.1:18083",
               EMBER_CHECK_INTER="500ms", EMBER_CHECK_FASTINTER="250ms")
    defaults_env = {k: v for k, v in os.environ.items() if not k.startswith("EMBER_")}
    for name, e in (("defaults", defaults_env), ("test environment", env)):
        r = run([haproxy, "-c", "-f", HAPROXY_CFG], env=e)
        if r.returncode != 0:
            fail(f"haproxy -c ({name}): {r.stdout}{r.stderr}")
        else:
            print(f"PASS haproxy -c ({name})")
    broken = os.path.join(tmp, "broken.cfg")
    with open(broken, "w") as f:
        f.write(text.replace("retry-on conn-failure", "retry-on conn-failur"))
    if run([haproxy, "-c", "-f", broken], env=env).returncode == 0:
        fail("haproxy -c accepted a cfg with a misspelt retry-on keyword (the validator checks nothing)")
    directives = [r"option httpchk GET /health", r"http-check expect status 200", r"balance hdr\(X-Session-Id\)",
                  r"hash-type consistent", r"retry-on conn-failure empty-response response-timeout 503",
                  r"option redispatch 1", r"option http-buffer-request", r"timeout server \d+m",
                  r"timeout tunnel \d+h", r"bind \"\$\{EMBER_HAPROXY_BIND-127\.0\.0\.1:"]
    for d in directives:
        if not re.search(r"^\s*" + d, text, re.M):
            fail(f"ember.cfg lacks `{d}`")
    if re.search(r"^\s*(compression|http-request cache-use|option httpclose)", text, re.M):
        fail("ember.cfg buffers or closes streamed responses (compression / cache / httpclose)")


def check_kubernetes(tmp, ember):
    validate = shutil.which("kubernetes-validate")
    if not validate:
        fail("kubernetes-validate is not installed (PyPI kubernetes-validate)")
        return
    docs = list(yaml.safe_load_all(open(K8S_YAML)))
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    broken = os.path.join(tmp, "broken.yaml")
    bad = yaml.safe_load(yaml.safe_dump(deployment))
    bad["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["periodSeconds"] = "two"
    with open(broken, "w") as f:
        yaml.safe_dump(bad, f)
    if run([validate, "--strict", "--quiet", broken]).returncode == 0:
        fail("kubernetes-validate accepted periodSeconds: \"two\" (the validator checks nothing)")
    for version in K8S_VERSIONS:
        r = run([validate, "--strict", "-k", version, K8S_YAML])
        if r.returncode != 0:
            fail(f"kubernetes-validate --strict -k {version}: {r.stdout}{r.stderr}")
        else:
            print(f"PASS kubernetes-validate --strict -k {version} ({len(docs)} resources)")
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        path = container.get(probe, {}).get("httpGet", {}).get("path")
        if path != "/health":
            fail(f"{probe} checks {path!r}, not /health")
    args = container["args"]
    flags = dict(a[2:].split("=", 1) for a in args if a.startswith("--") and "=" in a)
    drain = int(flags.get("drain-timeout", 30))
    pre_stop = container["lifecycle"]["preStop"]["sleep"]["seconds"]
    grace = pod["terminationGracePeriodSeconds"]
    if grace < pre_stop + drain + 1:
        fail(f"terminationGracePeriodSeconds {grace} < preStop {pre_stop} s + --drain-timeout {drain} s: "
             "SIGKILL would cut a drain short")
    live = container["livenessProbe"]
    if live["periodSeconds"] * live["failureThreshold"] <= pre_stop + drain:
        fail("the liveness probe could restart a draining replica (503 for the whole drain)")
    if flags.get("host") != "0.0.0.0" or args[0] != "serve":
        fail(f"the container must run `ember serve` on 0.0.0.0: {args}")
    if ember:
        r = run([ember, "serve", "--help"])
        if r.returncode != 0:
            fail(f"ember serve --help: exit {r.returncode}: {r.stderr[-300:]}")
        else:
            unknown = [f for f in flags if f"--{f}" not in r.stdout]
            if unknown:
                fail(f"ember.yaml passes flags `ember serve --help` does not list: {unknown}")
            else:
                print(f"PASS the container's flags are ember serve's: {sorted(flags)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("ember", nargs="?")
    ap.add_argument("--haproxy", default=shutil.which("haproxy") or "/usr/sbin/haproxy")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        check_haproxy(a.haproxy, tmp)
        check_kubernetes(tmp, a.ember)
    print("deploy configs: " + ("FAILED" if failures else "passed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
