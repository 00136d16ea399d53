#!/usr/bin/env python3
"""Structured output end to end: `ember generate` constrained by JSON Schemas,
--json-object, --regex and GBNF / Lark grammars, every output checked by an
independent validator, and every bad constraint refused before a token.

usage: structured_output_test.py EMBER WORK_DIR [--seeds 5] [--only validity,bad_input,...] [--runner CMD]

- validity: each of the 50 schemas of tests/genai/json_schemas.json x 5 seeds,
  sampled (temperature 1, the whole vocabulary) on a random-weight qwen2
  fixture with a byte-level vocabulary of 2048 tokens and a 2048-token context,
  which tools/make_decoder_fixtures.py writes into WORK_DIR. Random weights
  wander through whatever the grammar allows, so the constraint alone makes the
  output valid. An output counts as valid only when generation ended with EOS,
  the CLI reports the constraint complete, the text parses as JSON and PyPI
  jsonschema (with its format checker) validates it. A document cut short by
  max_new_tokens counts as a failure, never as valid.
- models/default: a few schemas on the trained fortune model (its own English
  inside the strings).
- regex, grammars (GBNF and Lark, detected by extension, by `::=`, or chosen
  with --grammar-syntax) and --json-object, checked with Python's re / json.
- incomplete: a document cut by --max-new-tokens is reported as incomplete.
- bad_input: malformed schemas, patterns and grammars are errors naming where,
  with nothing on stdout (no token was generated).
"""
import argparse
import concurrent.futures
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile

import jsonschema

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCHEMAS = os.path.join(ROOT, "tests", "genai", "json_schemas.json")
PROMPT = "Reply in JSON:"


RUNNER = []  # --runner: e.g. qemu-x86_64 -cpu Nehalem, in front of every ember command


def run(cmd, timeout=300):
    return subprocess.run(RUNNER + cmd, capture_output=True, text=True, timeout=timeout)


def make_fixture(work):
    out = os.path.join(work, "qwen2-random-2k")
    if not os.path.exists(os.path.join(out, "genai_config.json")):
        subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_decoder_fixtures.py"), "--family", "qwen2",
                        "--weights", "int4", "--shape", "tiny", "--vocab", "2048", "--max-length", "2048",
                        "--seed", "3", "--out", out], check=True)
    return out


def format_checker():
    checker = jsonschema.FormatChecker()

    # jsonschema checks date-time and time only with optional packages; RFC 3339's grammar and ranges here
    # (second 60 is a leap second; 't', 'z' and 'T', 'Z' alike).
    time_re = r"(\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-](\d{2}):(\d{2}))"

    def full_time(m, i):
        hour, minute, second = int(m.group(i)), int(m.group(i + 1)), int(m.group(i + 2))
        if hour > 23 or minute > 59 or second > 60:
            raise ValueError("time out of range")
        if m.group(i + 5) is not None and (int(m.group(i + 5)) > 23 or int(m.group(i + 6)) > 59):
            raise ValueError("offset out of range")

    @checker.checks("date-time", raises=ValueError)
    def date_time(value):
        if not isinstance(value, str):
            return True
        m = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})[Tt]" + time_re, value)
        if not m:
            raise ValueError("not RFC 3339")
        datetime.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        full_time(m, 4)
        return True

    @checker.checks("time", raises=ValueError)
    def time(value):
        if not isinstance(value, str):
            return True
        m = re.fullmatch(time_re, value)
        if not m:
            raise ValueError("not RFC 3339 full-time")
        full_time(m, 1)
        return True

    return checker


def generate(ember, model, extra, seed=None, max_new_tokens=1500, prompt=PROMPT):
    cmd = [ember, "generate", model, "--prompt", prompt, "--max-new-tokens", str(max_new_tokens), "--json"] + extra
    if seed is not None:
        cmd += ["--temperature", "1", "--top-k", "0", "--seed", str(seed)]  # the fixture's config says top_k 1
    p = run(cmd, timeout=600)
    if p.returncode != 0:
        return None, f"exit {p.returncode}: {p.stderr.strip()}"
    return json.loads(p.stdout), None


def check_document(out, schema, checker):
    """None when `out` is a complete, valid document of `schema`; else why not."""
    c = out.get("constraint") or {}
    if not c.get("complete") or out["stop_reason"] != "eos":
        return f"not complete (stop {out['stop_reason']}, constraint {c}): {out['text'][:120]!r}"
    try:
        doc = json.loads(out["text"])
    except json.JSONDecodeError as e:
        return f"does not parse ({e}): {out['text'][:200]!r}"
    try:
        jsonschema.validate(doc, schema, cls=jsonschema.Draft202012Validator, format_checker=checker)
    except jsonschema.ValidationError as e:
        return f"invalid: {e.message}: {out['text'][:200]!r}"
    return None


def test_validity(ember, work, seeds):
    model = make_fixture(work)
    schemas = json.load(open(SCHEMAS))
    checker = format_checker()
    files = []
    for i, schema in enumerate(schemas):
        path = os.path.join(work, f"schema_{i:02d}.json")
        with open(path, "w") as f:
            json.dump(schema, f)
        files.append(path)
    jobs = [(i, seed) for i in range(len(schemas)) for seed in range(seeds)]

    def one(job):
        i, seed = job
        out, err = generate(ember, model, ["--json-schema", files[i]], seed=seed)
        if err:
            return job, err, 0
        return job, check_document(out, schemas[i], checker), len(out["generated_tokens"])

    failures, tokens = [], 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for (i, seed), err, n in pool.map(one, jobs):
            tokens += n
            if err:
                failures.append(f"schema {i} seed {seed}: {err}")
    valid = len(jobs) - len(failures)
    print(f"validity: {valid}/{len(jobs)} outputs valid ({len(schemas)} schemas x {seeds} seeds, {tokens} tokens)")
    return failures


def test_default_model(ember, work):
    model = os.path.join(ROOT, "models", "default")
    checker = format_checker()
    schema = {"type": "object", "properties": {"fortune": {"type": "string", "maxLength": 40},
                                               "lucky": {"type": "integer", "minimum": 0, "maximum": 99}},
              "required": ["fortune", "lucky"], "additionalProperties": False}
    path = os.path.join(work, "fortune.json")
    with open(path, "w") as f:
        json.dump(schema, f)
    failures = []
    for seed in range(3):
        out, err = generate(ember, model, ["--json-schema", path], seed=seed, max_new_tokens=100, prompt="Love is")
        err = err or check_document(out, schema, checker)
        if err:
            failures.append(f"models/default seed {seed}: {err}")
        else:
            print(f"models/default seed {seed}: {out['text']}")
    # Any JSON object: keys are free strings, which the model may not close within its 128-token context; a
    # document it finishes must parse as an object, and one it does not must never be reported complete.
    finished = 0
    for seed in range(5):
        out, err = generate(ember, model, ["--json-object"], seed=seed, max_new_tokens=120, prompt="Love is")
        if err:
            failures.append(f"models/default --json-object seed {seed}: {err}")
            continue
        c = out["constraint"]
        if out["stop_reason"] == "eos":
            finished += 1
            if not c["complete"] or not isinstance(json.loads(out["text"]), dict):
                failures.append(f"models/default --json-object seed {seed}: {c} {out['text']!r}")
        elif c["complete"] is not False or not out["text"].lstrip().startswith("{"):
            failures.append(f"models/default --json-object seed {seed}: cut by {out['stop_reason']}, reported {c}")
    if finished == 0:
        failures.append("models/default --json-object: no seed finished an object")
    print(f"models/default --json-object: {finished}/5 objects finished within the context, every one parses")
    return failures


GBNF = r'''# arithmetic, llama.cpp style
root  ::= expr
expr  ::= term (("+" | "-") term)*
term  ::= num | "(" expr ")"
num   ::= [1-9] [0-9]{0,2}
'''
LARK = r'''start: item ("," item){1,3}
item: NAME "=" VALUE
NAME: /[a-z]{1,6}/
VALUE: /[0-9]{1,3}/
'''


def test_grammars(ember, work):
    model = make_fixture(work)
    failures = []
    gbnf = os.path.join(work, "arith.gbnf")
    lark = os.path.join(work, "pairs.lark")
    gbnf_txt = os.path.join(work, "arith.txt")  # no extension: detected by its '::='
    lark_txt = os.path.join(work, "pairs.txt")
    for path, text in [(gbnf, GBNF), (lark, LARK), (gbnf_txt, GBNF), (lark_txt, LARK)]:
        with open(path, "w") as f:
            f.write(text)
    cases = [
        (["--regex", r"[A-Z][a-z]{2,8} [0-9]{2}"], lambda t: re.fullmatch(r"[A-Z][a-z]{2,8} [0-9]{2}", t)),
        (["--regex", r"(yes|no|maybe)"], lambda t: t in ("yes", "no", "maybe")),
        (["--grammar", gbnf], lambda t: arithmetic_ok(t)),
        (["--grammar", gbnf_txt], lambda t: arithmetic_ok(t)),
        (["--grammar", lark], lambda t: re.fullmatch(r"[a-z]{1,6}=[0-9]{1,3}(,[a-z]{1,6}=[0-9]{1,3}){1,3}", t)),
        (["--grammar", lark_txt, "--grammar-syntax", "lark"],
         lambda t: re.fullmatch(r"[a-z]{1,6}=[0-9]{1,3}(,[a-z]{1,6}=[0-9]{1,3}){1,3}", t)),
    ]
    for extra, ok in cases:
        for seed in range(3):
            out, err = generate(ember, model, extra, seed=seed, max_new_tokens=400)
            if not err:
                c = out.get("constraint") or {}
                if not c.get("complete") or out["stop_reason"] != "eos":
                    err = f"not complete: {out['stop_reason']} {c} {out['text'][:80]!r}"
                else:
                    try:
                        good = ok(out["text"])
                    except ValueError as e:
                        good, err = False, str(e)
                    if not good:
                        err = err or f"does not match: {out['text']!r}"
            if err:
                failures.append(f"{' '.join(extra)} seed {seed}: {err}")
    print(f"grammars: {len(cases) * 3 - len(failures)}/{len(cases) * 3} outputs match")
    return failures


def arithmetic_ok(text):
    """Parses GBNF's arithmetic grammar: expr = term (("+"|"-") term)*, term = num | "(" expr ")"."""
    pos = 0

    def term():
        nonlocal pos
        if text[pos:pos + 1] == "(":
            pos += 1
            expr()
            if text[pos:pos + 1] != ")":
                raise ValueError(f"expected ')' at {pos} in {text!r}")
            pos += 1
            return
        m = re.compile(r"[1-9][0-9]{0,2}").match(text, pos)
        if not m:
            raise ValueError(f"expected a number at {pos} in {text!r}")
        pos = m.end()

    def expr():
        nonlocal pos
        term()
        while text[pos:pos + 1] in ("+", "-") and pos < len(text):
            pos += 1
            term()

    expr()
    return pos == len(text)


def test_incomplete(ember, work):
    model = make_fixture(work)
    path = os.path.join(work, "long.json")
    with open(path, "w") as f:
        json.dump({"type": "array", "items": {"type": "integer"}, "minItems": 50}, f)
    out, err = generate(ember, model, ["--json-schema", path], seed=0, max_new_tokens=5)
    if err:
        return [f"incomplete: {err}"]
    c = out.get("constraint") or {}
    if c.get("complete") is not False or out["stop_reason"] != "max_new_tokens":
        return [f"incomplete: a 5-token cut of a 50-item array is reported as {c}, stop {out['stop_reason']}"]
    p = run([ember, "generate", model, "--prompt", PROMPT, "--max-new-tokens", "5", "--json-schema", path,
             "--seed", "0", "--temperature", "1"])
    if "not a complete json_schema document" not in p.stderr:
        return [f"incomplete: no warning on stderr without --json: {p.stderr!r}"]
    print("incomplete: a cut document is reported (constraint.complete false, stop max_new_tokens)")
    return []


def test_bad_input(ember, work):
    model = os.path.join(ROOT, "models", "default")
    files = {
        "syntax.json": '{"type": "object",\n "properties": {"a": {"type": "string"},}\n}',
        "badtype.json": '{"type": "object", "properties": {"a": {"type": "strnig"}}}',
        "badmin.json": '{"type": "array", "minItems": 5, "maxItems": 2}',
        "notschema.json": '[1, 2, 3]',
        "undefined.gbnf": 'root ::= greeting " " name\ngreeting ::= "hi"\n',
        "noroot.gbnf": 'start ::= "a"\n',
        "escape.gbnf": 'root ::= "a\\q"\n',
        "unclosed.gbnf": 'root ::= ("a" | "b"\n',
        "bad.lark": 'start: item+\nitem: "a" | \n  | ) \n',
        "undefined.lark": 'start: missing_rule\n',
    }
    for name, text in files.items():
        with open(os.path.join(work, name), "w") as f:
            f.write(text)
    w = lambda n: os.path.join(work, n)
    cases = [
        (["--json-schema", w("syntax.json")], r"line 2, column \d+"),
        (["--json-schema", w("badtype.json")], r"at #/properties/a: .*strnig"),
        (["--grammar", w("noroot.gbnf"), "--grammar-syntax", "xml"], r"xml"),
        (["--json-schema", w("badmin.json")], r"(?i)minItems|maxItems|unsatisfiable"),
        (["--json-schema", w("notschema.json")], r"must be an object or a boolean"),
        (["--regex", "([a-z]+"], r"(?i)regex"),
        (["--regex", "a{5,2}"], r"(?i)regex"),
        (["--grammar", w("undefined.gbnf")], r"line 1, column \d+: rule 'name' is used but never defined"),
        (["--grammar", w("noroot.gbnf")], r"no 'root' rule"),
        (["--grammar", w("escape.gbnf")], r"line 1, column \d+: unknown escape"),
        (["--grammar", w("unclosed.gbnf")], r"line 1, column \d+: expecting '\)'"),
        (["--grammar", w("bad.lark")], r"(?i)lark.*(line|\d+)"),
        (["--grammar", w("undefined.lark")], r"missing_rule"),
        (["--json-schema", w("missing.json")], r"(?i)missing\.json"),
        (["--regex", "a", "--json-object"], r"excludes"),
    ]
    failures = []
    help_text = run([ember, "generate", "--help"]).stdout
    for flag in ("--json-schema", "--json-object", "--regex", "--grammar", "--grammar-syntax"):
        if not re.search(re.escape(flag) + r"\b[^\n]*\S", help_text):
            failures.append(f"generate --help does not describe {flag}")
    for extra, pattern in cases:
        p = run([ember, "generate", model, "--prompt", "hi", "--max-new-tokens", "4"] + extra)
        msg = p.stderr.strip()
        if p.returncode == 0:
            failures.append(f"bad input {extra}: accepted (stdout {p.stdout!r})")
        elif p.stdout.strip():
            failures.append(f"bad input {extra}: generated text before failing: {p.stdout!r}")
        elif not re.search(pattern, msg):
            failures.append(f"bad input {extra}: message does not match {pattern!r}: {msg!r}")
        elif "Segmentation" in msg or p.returncode < 0:
            failures.append(f"bad input {extra}: crashed: {msg!r}")
        else:
            print(f"bad input {' '.join(os.path.basename(x) for x in extra)}: {msg.splitlines()[0][:150]}")
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ember")
    ap.add_argument("work")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--only", default="bad_input,grammars,incomplete,default_model,validity")
    ap.add_argument("--runner", default="", help="a command in front of ember, e.g. 'qemu-x86_64 -cpu Nehalem'")
    args = ap.parse_args()
    RUNNER[:] = args.runner.split()
    os.makedirs(args.work, exist_ok=True)
    failures = []
    for name in args.only.split(","):
        if name == "validity":
            failures += test_validity(args.ember, args.work, args.seeds)
        elif name == "default_model":
            failures += test_default_model(args.ember, args.work)
        elif name == "grammars":
            failures += test_grammars(args.ember, args.work)
        elif name == "incomplete":
            failures += test_incomplete(args.ember, args.work)
        elif name == "bad_input":
            failures += test_bad_input(args.ember, args.work)
        else:
            sys.exit(f"unknown part {name}")
    for f in failures:
        print("FAIL", f)
    print(f"{'FAILED' if failures else 'PASSED'}: {len(failures)} failures")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
