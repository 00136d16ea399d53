#!/usr/bin/env python3
"""`ember serve` through the real OpenAI Python client (PyPI `openai`, v1+ API).

usage: openai_client_test.py EMBER_BINARY MODEL_DIR [--keep-logs DIR]

Starts `ember serve MODEL_DIR --port 0` on 127.0.0.1 (the port read from its
stderr line), and checks, each as one named case (all run; every failure is
listed at the end):
  - /health is 503 {"status":"loading"} before `ember serve: ready` (when the
    load is slow enough to see) and 200 {"status":"ok"} after;
  - chat completions: the response's shape, usage (prompt, completion, total,
    prompt_tokens_details.cached_tokens: > 0 when a long prompt is sent twice),
    streaming with include_usage (chunks assemble into the non-streamed text of
    the same seed, finish_reason on the last choice chunk, usage on the final
    chunk, the raw SSE ends with `data: [DONE]`), seeds (same seed, same text;
    different seeds, different texts), n=2, stop, max_tokens=1, logprobs with
    top_logprobs=3 (greedy: the chosen token is the top one), tools accepted,
    response_format json_schema / json_object constrained (the reply validates under
    the schema; a bad schema is a 400), concurrent requests give the
    texts they give one at a time;
  - completions: text prompt, token-id prompt, echo, streaming; and the
    acceptance criterion: streamed text for prompt ids with a fixed seed and
    temperature equals `ember generate --prompt-ids ... --seed S --temperature
    T --max-new-tokens N --json`'s "text";
  - /v1/models, /metrics (Prometheus text), /tokenize and /detokenize;
  - the listen backlog is the system's maximum (`ss -ltn`), not cpp-httplib's 5;
  - errors, each with OpenAI's error object {"error": {message, type, param,
    code}} and the client's matching exception class: malformed JSON 400,
    unknown model 404 (NotFoundError, as OpenAI answers: code
    "model_not_found"), temperature -1 400, a prompt longer than the context
    400, a body over --max-body-bytes 413, a missing or wrong key with
    --api-key 401 (while /health stays open for load balancers and probes);
  - a client that disconnects mid-stream frees its request: 16 streams that
    run 96 to 120 tokens when read whole (seeds found at run time) are closed
    after 2 chunks; the running and active gauges of /metrics return to 0
    within 5 s, and ember_generation_tokens_total grows by less than half of
    what the same requests generate whole;
  - SIGTERM drains: with generation running (2 requests of n=16 on a server
    with one thread, using the reference kernels, EMBER_REFERENCE=1, where
    the model is small enough to finish such a request within a second),
    /health is 503 {"status":"draining"}, a new request 503 with an error
    object, the in-flight streams finish whole, exit status 0; an idle server
    exits 0 on SIGTERM; with --drain-timeout 1 the process exits 0 after the
    timeout and within 7 s, the in-flight streams end (cancelled) and none
    hangs.
Every request has a timeout and the whole run a watchdog (240 s); servers listen on 127.0.0.1.
"""
import argparse
import concurrent.futures
import http.client
import json
import math
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import httpx
import jsonschema
import openai

import tokenizers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "genai"))
from chat_template_reference import make_env, special_tokens  # noqa: E402
from harness import Checks, EmberServer, expect, kill_children, parse_metrics, parse_sse, watchdog  # noqa: E402

REQUEST_TIMEOUT = 30
API_KEY = "sekrit-test-key"
MAX_BODY = 16384
PROMPT = "Tell me a fortune."
LONG_PROMPT = ("A wise man once said that the computer is a tool for people who love to learn, and a fool "
               "once said that love is a tool for people who")


class Ctx:
    """What the cases share: the binary, the model folder, the servers and clients."""

    def __init__(self, binary, model_dir, log_dir):
        self.binary, self.model_dir, self.log_dir = binary, model_dir, log_dir
        self.model = os.path.basename(os.path.normpath(model_dir))
        self.log = os.path.join(log_dir, "servers.log")

    def client(self, url=None, key="unused"):
        return openai.OpenAI(base_url=(url or self.url) + "/v1", api_key=key, max_retries=0, timeout=REQUEST_TIMEOUT)

    def chat(self, **kw):
        kw.setdefault("model", self.model)
        kw.setdefault("messages", [{"role": "user", "content": PROMPT}])
        return self.oai.chat.completions.create(**kw)

    def completion(self, **kw):
        kw.setdefault("model", self.model)
        return self.oai.completions.create(**kw)


def ember_tokenize(ctx, text, add_special=True):
    argv = [ctx.binary, "tokenize", ctx.model_dir, "--text", text] + (["--add-special"] if add_special else [])
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True).stdout
    return json.loads(out)["ids"]


def reference_prompt_tokens(ctx, messages, tools=None):
    """The chat prompt's length as transformers makes it: the folder's template (chat_template.jinja, else
    tokenizer_config.json's) rendered by jinja2 as apply_chat_template does, encoded by Hugging Face tokenizers
    without added special tokens."""
    config = json.load(open(os.path.join(ctx.model_dir, "tokenizer_config.json"), encoding="utf-8"))
    jinja_file = os.path.join(ctx.model_dir, "chat_template.jinja")
    if os.path.exists(jinja_file):
        source = open(jinja_file, encoding="utf-8").read()
    elif isinstance(config["chat_template"], str):
        source = config["chat_template"]
    else:
        named = {t["name"]: t["template"] for t in config["chat_template"]}
        source = named["tool_use"] if tools is not None and "tool_use" in named else named["default"]
    text = make_env().from_string(source).render(messages=messages, tools=tools, documents=None,
                                                 add_generation_prompt=True, **special_tokens(config))
    tok = tokenizers.Tokenizer.from_file(os.path.join(ctx.model_dir, "tokenizer.json"))
    return len(tok.encode(text, add_special_tokens=False).ids)


def check_error_object(response, status, what):
    expect(response.status_code == status,
           f"{what}: expected HTTP {status}, got {response.status_code}: {response.text[:300]}")
    try:
        body = response.json()
    except ValueError:
        raise AssertionError(f"{what}: the {status} body is not JSON: {response.text[:300]!r}")
    err = body.get("error") if isinstance(body, dict) else None
    expect(isinstance(err, dict), f"{what}: no 'error' object in {body}")
    missing = [k for k in ("message", "type", "param", "code") if k not in err]
    expect(not missing, f"{what}: error object lacks {missing}: {err}")
    expect(isinstance(err["message"], str) and err["message"], f"{what}: empty error message: {err}")
    expect(isinstance(err["type"], str) and err["type"], f"{what}: error type not a string: {err}")
    return err


def expect_api_error(cls, status, fn, what):
    """fn() must raise the OpenAI client's `cls` with `status`, and the body must be OpenAI's error object."""
    try:
        fn()
    except cls as e:
        expect(e.status_code == status, f"{what}: {cls.__name__} with status {e.status_code}, expected {status}")
        return check_error_object(e.response, status, what)
    except openai.APIStatusError as e:
        raise AssertionError(f"{what}: expected {cls.__name__} ({status}), got {type(e).__name__} "
                             f"{e.status_code}: {e.response.text[:300]}")
    raise AssertionError(f"{what}: expected {cls.__name__} ({status}), the request succeeded")


def stream_text(stream):
    """Concatenated content of a chat or completion stream, with its finish reasons and usage chunk."""
    text, finish, usage, chunks = "", None, None, 0
    for chunk in stream:
        chunks += 1
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            piece = choice.delta.content if hasattr(choice, "delta") else choice.text
            text += piece or ""
            if choice.finish_reason is not None:
                expect(finish is None, f"two finish_reason chunks: {finish}, {choice.finish_reason}")
                finish = choice.finish_reason
    return text, finish, usage, chunks


# ---- chat completions -------------------------------------------------------------------------------

def check_chat_shape(ctx):
    t0 = time.time()
    r = ctx.chat(max_tokens=16, seed=1, temperature=0.8)
    expect(r.object == "chat.completion", f"object {r.object!r}")
    expect(isinstance(r.id, str) and r.id, f"id {r.id!r}")
    expect(r.model == ctx.model, f"model {r.model!r}, expected {ctx.model!r}")
    expect(abs(r.created - t0) < 60, f"created {r.created} is not now ({t0:.0f})")
    expect(len(r.choices) == 1, f"{len(r.choices)} choices")
    c = r.choices[0]
    expect(c.index == 0 and c.message.role == "assistant", f"choice {c}")
    expect(isinstance(c.message.content, str), f"content {c.message.content!r}")
    expect(c.finish_reason in ("stop", "length"), f"finish_reason {c.finish_reason!r}")
    u = r.usage
    expected_prompt = reference_prompt_tokens(ctx, [{"role": "user", "content": PROMPT}])
    expect(u.prompt_tokens == expected_prompt, f"prompt_tokens {u.prompt_tokens}, expected {expected_prompt}")
    expect(1 <= u.completion_tokens <= 16, f"completion_tokens {u.completion_tokens}")
    if c.finish_reason == "length":
        expect(u.completion_tokens == 16, f"finish 'length' after {u.completion_tokens} of 16 tokens")
    expect(u.total_tokens == u.prompt_tokens + u.completion_tokens, f"total_tokens {u}")
    d = u.prompt_tokens_details
    expect(d is not None and isinstance(d.cached_tokens, int) and 0 <= d.cached_tokens <= u.prompt_tokens,
           f"prompt_tokens_details {d}")


def check_chat_cached_tokens(ctx):
    messages = [{"role": "user", "content": LONG_PROMPT}]
    first = ctx.chat(messages=messages, max_tokens=4, seed=3)
    second = ctx.chat(messages=messages, max_tokens=4, seed=3)
    p = second.usage.prompt_tokens
    cached = second.usage.prompt_tokens_details.cached_tokens
    expect(p >= 32, f"the long prompt is only {p} tokens")
    expect(0 < cached < p, f"the same {p}-token prompt again: cached_tokens {cached} (first request: "
                           f"{first.usage.prompt_tokens_details.cached_tokens}); expected a prefix-cache hit")


def check_chat_stream(ctx):
    kw = dict(max_tokens=24, seed=11, temperature=1.0)
    whole = ctx.chat(**kw)
    stream = ctx.chat(stream=True, stream_options={"include_usage": True}, **kw)
    text, finish, usage, chunks = stream_text(stream)
    expect(chunks >= 3, f"only {chunks} chunks")
    expect(text == whole.choices[0].message.content,
           f"streamed text {text!r} != non-streamed {whole.choices[0].message.content!r} (same seed)")
    expect(finish == whole.choices[0].finish_reason, f"finish_reason {finish!r} vs {whole.choices[0].finish_reason!r}")
    expect(usage is not None, "no usage chunk with include_usage")
    expect((usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) ==
           (whole.usage.prompt_tokens, whole.usage.completion_tokens, whole.usage.total_tokens),
           f"stream usage {usage} != {whole.usage}")


def check_chat_stream_raw(ctx):
    """The wire format: `data: {...}` events, the role first, usage last with empty choices, then [DONE]."""
    body = {"model": ctx.model, "messages": [{"role": "user", "content": PROMPT}], "max_tokens": 8,
            "stream": True, "stream_options": {"include_usage": True}}
    with httpx.stream("POST", ctx.url + "/v1/chat/completions", json=body, timeout=REQUEST_TIMEOUT) as r:
        expect(r.status_code == 200, f"status {r.status_code}")
        ctype = r.headers.get("content-type", "")
        expect(ctype.startswith("text/event-stream"), f"content-type {ctype!r}")
        events = list(parse_sse(r.iter_lines()))
    expect(events and events[-1] == "[DONE]", f"last event {events[-1:]!r}, expected [DONE]")
    objs = [json.loads(e) for e in events[:-1]]
    expect(all(o.get("object") == "chat.completion.chunk" for o in objs), "an event is not a chat.completion.chunk")
    expect(len({o["id"] for o in objs}) == 1, "chunks of one stream carry different ids")
    expect(objs[0]["choices"][0]["delta"].get("role") == "assistant", f"first delta {objs[0]['choices'][0]['delta']}")
    expect(objs[-1]["choices"] == [] and objs[-1].get("usage"), f"last chunk {objs[-1]}")
    expect(all(o.get("usage") is None for o in objs[:-1]), "usage on a chunk before the last")
    expect(objs[-2]["choices"][0]["finish_reason"] in ("stop", "length"), f"before usage: {objs[-2]}")


def check_seeds(ctx):
    texts = {}
    for seed in (5, 6, 7, 8):
        a = ctx.chat(max_tokens=32, seed=seed, temperature=1.0).choices[0].message.content
        b = ctx.chat(max_tokens=32, seed=seed, temperature=1.0).choices[0].message.content
        expect(a == b, f"seed {seed}: {a!r} then {b!r}")
        texts[seed] = a
    expect(len(set(texts.values())) > 1, f"four seeds, one text: {texts[5]!r} (is the seed used?)")


def check_n2(ctx):
    r = ctx.chat(max_tokens=32, seed=21, temperature=1.0, n=2)
    expect(len(r.choices) == 2 and sorted(c.index for c in r.choices) == [0, 1], f"choices {r.choices}")
    a, b = (c.message.content for c in r.choices)
    expect(a != b, f"n=2 at temperature 1 gave the same text twice: {a!r}")
    expect(r.usage.completion_tokens >= 2, f"usage {r.usage}")
    expect(r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens, f"usage {r.usage}")


def check_stop(ctx):
    for seed in range(30, 40):
        base = ctx.chat(max_tokens=40, seed=seed, temperature=0.8).choices[0].message.content
        words = [w for w in base.split() if len(w) >= 3 and base.index(w) > 0]
        if len(words) >= 2:
            break
    else:
        raise AssertionError("no seed gave a text with a word to stop at")
    stop = words[1]
    r = ctx.chat(max_tokens=40, seed=seed, temperature=0.8, stop=[stop, "\u0001never"])
    expected = base[:base.index(stop)]
    c = r.choices[0]
    expect(c.message.content == expected, f"stop={stop!r} on {base!r}: got {c.message.content!r}, expected {expected!r}")
    expect(c.finish_reason == "stop", f"finish_reason {c.finish_reason!r}")
    s_text, s_finish, _, _ = stream_text(ctx.chat(max_tokens=40, seed=seed, temperature=0.8, stop=stop, stream=True))
    expect((s_text, s_finish) == (expected, "stop"), f"streamed with stop: {s_text!r} {s_finish!r}")


def check_max_tokens_1(ctx):
    r = ctx.chat(max_tokens=1, seed=2)
    expect(r.usage.completion_tokens == 1, f"completion_tokens {r.usage.completion_tokens}")
    expect(r.choices[0].finish_reason in ("length", "stop"), f"finish_reason {r.choices[0].finish_reason!r}")


def check_logprobs(ctx):
    # Greedy, "Love is" gives 15 tokens of text and then the end-of-sequence token.
    r = ctx.chat(messages=[{"role": "user", "content": "Love is"}], max_tokens=40, temperature=0, logprobs=True,
                 top_logprobs=3)
    c = r.choices[0]
    expect(c.message.content, "greedy after 'Love is' gave no text")
    expect(c.logprobs is not None and c.logprobs.content, f"logprobs {c.logprobs}")
    entries = c.logprobs.content
    n = r.usage.completion_tokens
    expect(len(entries) == n or (c.finish_reason == "stop" and len(entries) == n - 1),
           f"{len(entries)} logprob entries for {n} tokens ({c.finish_reason})")
    text = b"".join(bytes(e.bytes) for e in entries).decode("utf-8")
    expect(text == c.message.content, f"the entries' bytes spell {text!r}, the content is {c.message.content!r}")
    for i, e in enumerate(entries):
        top = e.top_logprobs
        expect(len(top) == 3, f"token {i}: {len(top)} top_logprobs")
        lps = [t.logprob for t in top]
        expect(lps == sorted(lps, reverse=True) and lps[0] <= 0, f"token {i}: top logprobs {lps}")
        expect(sum(math.exp(x) for x in lps) <= 1.0 + 1e-4, f"token {i}: top probabilities sum over 1: {lps}")
        expect(e.token == top[0].token and abs(e.logprob - top[0].logprob) < 1e-4,
               f"token {i} (greedy): {e.token!r} {e.logprob} is not the top one {top[0].token!r} {top[0].logprob}")


def check_tools(ctx):
    tools = [{"type": "function", "function": {
        "name": "get_weather", "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    r = ctx.chat(max_tokens=16, seed=4, tools=tools, messages=messages)
    c = r.choices[0]
    expected = reference_prompt_tokens(ctx, messages, tools)
    expect(r.usage.prompt_tokens == expected, f"prompt_tokens {r.usage.prompt_tokens} with the tool, "
                                              f"the template rendered by jinja2 gives {expected}")
    if c.message.tool_calls:
        expect(c.finish_reason == "tool_calls", f"tool calls with finish_reason {c.finish_reason!r}")
        for call in c.message.tool_calls:
            expect(call.type == "function" and isinstance(call.function.name, str), f"tool call {call}")
            json.loads(call.function.arguments)
    else:
        expect(c.finish_reason in ("stop", "length"), f"finish_reason {c.finish_reason!r}")


def check_response_format(ctx):
    """response_format json_schema and json_object constrain the reply (src/genai/constraint.h): a json_schema
    reply that ends with "stop" parses and validates under the schema (PyPI jsonschema); a bad schema is a 400
    naming response_format, before any token."""
    schema = {"type": "object", "properties": {"answer": {"type": "string", "maxLength": 12},
                                               "score": {"type": "integer", "minimum": 0, "maximum": 9}},
              "required": ["answer", "score"], "additionalProperties": False}
    fmt = {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema, "strict": True}}
    choices = []
    for seed in (1, 2):
        choices += ctx.chat(seed=seed, temperature=1.0, max_tokens=min(200, ctx.context // 2),
                            response_format=fmt).choices
    # n choices: each its own matcher.
    choices += ctx.chat(seed=3, n=2, temperature=1.0, max_tokens=min(200, ctx.context // 2), response_format=fmt).choices
    for i, c in enumerate(choices):
        expect(c.finish_reason == "stop", f"response_format json_schema reply {i}: finish_reason "
                                          f"{c.finish_reason!r} (the document was cut): {c.message.content!r}")
        doc = json.loads(c.message.content)
        jsonschema.validate(doc, schema)
    # Any JSON object: its keys are free strings, which a model may not close within the context.
    c = ctx.chat(seed=4, temperature=1.0, max_tokens=48, response_format={"type": "json_object"}).choices[0]
    expect(c.message.content.startswith("{"), f"response_format json_object: {c.message.content!r}")
    if c.finish_reason == "stop":
        expect(isinstance(json.loads(c.message.content), dict), f"json_object: {c.message.content!r}")
    bad = {"type": "json_schema", "json_schema": {"name": "bad", "schema": {"type": "strnig"}}}
    err = expect_api_error(openai.BadRequestError, 400, lambda: ctx.chat(max_tokens=8, response_format=bad),
                           "response_format with an unknown type")
    expect(err["param"] == "response_format" and "strnig" in err["message"], f"bad schema error: {err}")
    expect_api_error(openai.BadRequestError, 400,
                     lambda: ctx.chat(max_tokens=8, response_format={"type": "json_schema"}),
                     "response_format json_schema without json_schema")


def check_constraint_failure(ctx):
    """A constraint that fails mid-generation, here a JSON Schema pattern whose forced text takes a matcher step past
    its CPU budget (kMatcherStepBudget, src/genai/constraint.h), ends its choice with finish_reason "error" and
    OpenAI's error object naming the budget: the response's "error" member (its 200 went out with the first
    heartbeat), and in a stream an error event, which the openai client raises as an APIError."""
    fmt = {"type": "json_schema",
           "json_schema": {"name": "runaway", "schema": {"type": "string", "pattern": "^(a{1000}b{1000}){100000}$"}}}
    for path, extra in (("/v1/chat/completions", {"messages": [{"role": "user", "content": PROMPT}]}),
                        ("/v1/completions", {"prompt": PROMPT})):
        body = {"model": ctx.model, "max_tokens": 8, "response_format": fmt, **extra}
        r = httpx.post(ctx.url + path, json=body, timeout=REQUEST_TIMEOUT)
        expect(r.status_code == 200, f"{path}: status {r.status_code}: {r.text[:300]}")
        doc = r.json()
        expect(doc["choices"][0]["finish_reason"] == "error", f"{path}: finish_reason {doc['choices'][0]}")
        err = doc.get("error") or {}
        expect(err.get("type") == "server_error" and err.get("code") == "generation_failed",
               f"{path}: error member {err}")
        expect("ms of CPU time" in err.get("message", ""), f"{path}: the error does not name the budget: {err}")
    for what, start in (("chat", lambda: ctx.chat(stream=True, max_tokens=8, response_format=fmt)),
                        ("completion", lambda: ctx.completion(prompt=PROMPT, stream=True, max_tokens=8,
                                                              extra_body={"response_format": fmt}))):
        try:
            for _ in start():
                pass
        except openai.APIError as e:
            expect("ms of CPU time" in e.message, f"{what} stream: APIError {e.message!r} does not name the budget")
        else:
            raise AssertionError(f"{what} stream: a failed constraint raised no APIError in the client")
    ok = ctx.chat(max_tokens=4, seed=1)
    expect(ok.choices[0].finish_reason in ("stop", "length"), f"the next request: {ok.choices[0].finish_reason!r}")


def check_batched_equals_sequential(ctx):
    """Continuous batching must not change a seeded request's text."""
    def one(seed):
        return ctx.chat(max_tokens=24, seed=seed, temperature=1.0).choices[0].message.content
    seeds = list(range(100, 108))
    alone = [one(s) for s in seeds]
    with concurrent.futures.ThreadPoolExecutor(len(seeds)) as pool:
        together = list(pool.map(one, seeds))
    bad = [(s, a, b) for s, a, b in zip(seeds, alone, together) if a != b]
    expect(not bad, f"texts differ when the requests run together: {bad[:2]}")


# ---- completions ----------------------------------------------------------------------------------

def check_completion_text(ctx):
    r = ctx.completion(prompt="The computer", max_tokens=16, seed=9)
    expect(r.object == "text_completion", f"object {r.object!r}")
    expect(r.model == ctx.model and len(r.choices) == 1 and r.choices[0].index == 0, f"response {r}")
    expect(isinstance(r.choices[0].text, str), f"text {r.choices[0].text!r}")
    expect(r.choices[0].finish_reason in ("stop", "length"), f"finish_reason {r.choices[0].finish_reason!r}")
    ids = ember_tokenize(ctx, "The computer", add_special=True)
    expect(r.usage.prompt_tokens == len(ids), f"prompt_tokens {r.usage.prompt_tokens}, `ember tokenize` gives {len(ids)}")
    expect(r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens, f"usage {r.usage}")


def check_completion_ids(ctx):
    ids = ember_tokenize(ctx, "Love is", add_special=True)
    by_ids = ctx.completion(prompt=ids, max_tokens=16, seed=9, temperature=0.9)
    by_text = ctx.completion(prompt="Love is", max_tokens=16, seed=9, temperature=0.9)
    expect(by_ids.usage.prompt_tokens == len(ids), f"prompt_tokens {by_ids.usage.prompt_tokens} for {len(ids)} ids")
    expect(by_ids.choices[0].text == by_text.choices[0].text,
           f"ids {ids}: {by_ids.choices[0].text!r}; the same prompt as text: {by_text.choices[0].text!r}")


def check_completion_echo(ctx):
    plain = ctx.completion(prompt="A wise man", max_tokens=8, seed=13).choices[0].text
    echoed = ctx.completion(prompt="A wise man", max_tokens=8, seed=13, echo=True).choices[0].text
    expect(echoed == "A wise man" + plain, f"echo: {echoed!r}, expected {'A wise man' + plain!r}")


def check_completion_stream(ctx):
    whole = ctx.completion(prompt="Love is", max_tokens=24, seed=17, temperature=1.0)
    stream = ctx.completion(prompt="Love is", max_tokens=24, seed=17, temperature=1.0, stream=True,
                            stream_options={"include_usage": True})
    text, finish, usage, _ = stream_text(stream)
    expect(text == whole.choices[0].text, f"streamed {text!r} != {whole.choices[0].text!r}")
    expect(finish == whole.choices[0].finish_reason, f"finish_reason {finish!r}")
    expect(usage is not None and usage.completion_tokens == whole.usage.completion_tokens, f"usage {usage}")


def check_matches_ember_generate(ctx):
    """Acceptance: the server's streamed text is `ember generate`'s for the same ids, seed and temperature."""
    ids = ember_tokenize(ctx, "A wise man", add_special=True)
    bad = []
    for seed, temperature, n in ((7, 0.8, 32), (42, 1.0, 48), (1234, 0.5, 24)):
        argv = [ctx.binary, "generate", ctx.model_dir, "--prompt-ids", ",".join(map(str, ids)), "--seed", str(seed),
                "--temperature", str(temperature), "--max-new-tokens", str(n), "--json"]
        gen = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        expect(gen.returncode == 0, f"{' '.join(argv)}: exit {gen.returncode}: {gen.stderr[-500:]}")
        expected = json.loads(gen.stdout)["text"]
        stream = ctx.completion(prompt=ids, max_tokens=n, seed=seed, temperature=temperature, stream=True)
        got = stream_text(stream)[0]
        if got != expected:
            bad.append(f"seed {seed} T {temperature} N {n}: server {got!r}, ember generate {expected!r}")
    expect(not bad, "; ".join(bad) + f" (prompt ids {ids})")


# ---- other endpoints ------------------------------------------------------------------------------

def check_listen_backlog(ctx):
    """The listening socket's backlog (Send-Q of `ss -ltn` for a listener) is the system's maximum, not
    cpp-httplib's 5, which made 8 clients connecting at once wait a second for the kernel's SYN retry."""
    out = subprocess.run(["ss", "-ltnH", f"sport = :{ctx.server.port}"], capture_output=True, text=True, timeout=10,
                         check=True).stdout.split()
    expect(len(out) >= 3 and out[0] == "LISTEN", f"ss -ltn for port {ctx.server.port}: {out}")
    backlog = int(out[2])
    somaxconn = int(open("/proc/sys/net/core/somaxconn").read())
    expect(backlog == min(somaxconn, 4096) and backlog >= 128, f"listen backlog {backlog} (somaxconn {somaxconn})")


def check_models(ctx):
    models = ctx.oai.models.list()
    ids = [m.id for m in models.data]
    expect(ids == [ctx.model], f"/v1/models lists {ids}, expected [{ctx.model!r}] (the folder's basename)")
    m = models.data[0]
    expect(m.object == "model" and isinstance(m.created, int) and isinstance(m.owned_by, str), f"model entry {m}")
    config = json.load(open(os.path.join(ctx.model_dir, "genai_config.json")))
    expect(ctx.context == config["model"]["context_length"],
           f"max_model_len {ctx.context}, genai_config.json context_length {config['model']['context_length']}")
    raw = httpx.get(ctx.url + "/v1/models", timeout=REQUEST_TIMEOUT).json()
    expect(raw.get("object") == "list", f"/v1/models object {raw.get('object')!r}")


def check_metrics(ctx):
    r = httpx.get(ctx.url + "/metrics", timeout=REQUEST_TIMEOUT)
    expect(r.status_code == 200, f"status {r.status_code}")
    expect(r.headers.get("content-type", "").startswith("text/plain"), f"content-type {r.headers.get('content-type')}")
    m = parse_metrics(r.text)
    expect(m.get("ember_requests_total") is not None, f"no ember_requests_total; families: {m.names()}")
    expect(running_gauge(m) is not None, f"no ember_requests_running / ember_requests_active; families: {m.names()}")
    expect(m.types.get("ember_requests_running") == "gauge", "ember_requests_running is not a gauge")
    expect(m.get("ember_ready") == 1, f"ember_ready {m.get('ember_ready')}")


def running_gauge(m):
    """Requests in flight: sequences decoding (ember_requests_running) plus API requests not finished
    (ember_requests_active); None when either gauge is missing."""
    running, active = m.get("ember_requests_running"), m.get("ember_requests_active")
    return None if running is None or active is None else running + active


def check_tokenize(ctx):
    text = "Love is a wise man"
    ids = ember_tokenize(ctx, text, add_special=True)
    r = httpx.post(ctx.url + "/tokenize", json={"model": ctx.model, "prompt": text}, timeout=REQUEST_TIMEOUT)
    expect(r.status_code == 200, f"/tokenize: {r.status_code} {r.text[:200]}")
    got = r.json().get("tokens")
    expect(got == ids, f"/tokenize gives {got}, `ember tokenize --add-special` {ids}")
    plain = ember_tokenize(ctx, text, add_special=False)
    r = httpx.post(ctx.url + "/detokenize", json={"model": ctx.model, "tokens": plain}, timeout=REQUEST_TIMEOUT)
    expect(r.status_code == 200, f"/detokenize: {r.status_code} {r.text[:200]}")
    expect(r.json().get("prompt") == text, f"/detokenize gives {r.json()}, expected prompt {text!r}")


# ---- errors ---------------------------------------------------------------------------------------

def check_malformed_json(ctx):
    for path in ("/v1/chat/completions", "/v1/completions"):
        r = httpx.post(ctx.url + path, content=b'{"model": "x", "messages": [', timeout=REQUEST_TIMEOUT,
                       headers={"Content-Type": "application/json"})
        err = check_error_object(r, 400, f"malformed JSON to {path}")
        expect(err["type"] == "invalid_request_error", f"{path}: type {err['type']!r}")
    r = httpx.post(ctx.url + "/v1/chat/completions", json={"model": ctx.model}, timeout=REQUEST_TIMEOUT)
    check_error_object(r, 400, "chat without messages")


def check_unknown_model(ctx):
    err = expect_api_error(openai.NotFoundError, 404, lambda: ctx.chat(model="no-such-model", max_tokens=4),
                           "unknown model (chat)")
    expect(err["type"] == "invalid_request_error" and err["code"] == "model_not_found", f"error {err}")
    expect_api_error(openai.NotFoundError, 404, lambda: ctx.completion(model="no-such-model", prompt="x", max_tokens=4),
                     "unknown model (completions)")


def check_bad_temperature(ctx):
    err = expect_api_error(openai.BadRequestError, 400, lambda: ctx.chat(temperature=-1, max_tokens=4), "temperature -1")
    expect(err["type"] == "invalid_request_error" and err["param"] == "temperature", f"error {err}")
    expect_api_error(openai.BadRequestError, 400, lambda: ctx.chat(temperature=-1, max_tokens=4, stream=True),
                     "temperature -1, streamed")
    expect_api_error(openai.BadRequestError, 400, lambda: ctx.completion(prompt="x", temperature=-1, max_tokens=4),
                     "temperature -1 (completions)")


def check_prompt_too_long(ctx):
    words = " ".join(["fortune"] * (ctx.context * 2))
    expect_api_error(openai.BadRequestError, 400,
                     lambda: ctx.chat(messages=[{"role": "user", "content": words}], max_tokens=4), "chat prompt > context")
    expect_api_error(openai.BadRequestError, 400,
                     lambda: ctx.completion(prompt=list(range(3, 3 + ctx.context + 8)), max_tokens=4), "id prompt > context")


def check_auth_and_limits(ctx):
    url = ctx.auth.url
    model = "ember-test"
    msgs = [{"role": "user", "content": PROMPT}]
    expect_api_error(openai.AuthenticationError, 401, lambda: ctx.client(url, key="wrong").chat.completions.create(
        model=model, messages=msgs, max_tokens=4), "wrong API key")
    r = httpx.post(url + "/v1/chat/completions", json={"model": model, "messages": msgs}, timeout=REQUEST_TIMEOUT)
    check_error_object(r, 401, "no Authorization header")
    r = httpx.get(url + "/v1/models", timeout=REQUEST_TIMEOUT)
    check_error_object(r, 401, "GET /v1/models without a key")
    good = ctx.client(url, key=API_KEY)
    ok = good.chat.completions.create(model=model, messages=msgs, max_tokens=4)
    expect(ok.model == model, f"--served-model-name: response model {ok.model!r}")
    expect([m.id for m in good.models.list().data] == [model], "--served-model-name not in /v1/models")
    h = httpx.get(url + "/health", timeout=REQUEST_TIMEOUT)
    expect(h.status_code == 200, f"/health must stay open without a key (load balancer checks): {h.status_code}")
    # --max-body-bytes: a valid body just under the limit passes, one over it is 413.
    pad = MAX_BODY - 600
    under = good.chat.completions.create(model=model, messages=msgs, max_tokens=4, user="u" * pad)
    expect(under.choices, "a body just under --max-body-bytes was refused")
    expect_api_error(openai.APIStatusError, 413, lambda: good.chat.completions.create(
        model=model, messages=msgs, max_tokens=4, user="u" * (MAX_BODY + 100)), "body over --max-body-bytes")
    # Last, so that the checks above run whatever this gives.
    expect_api_error(openai.NotFoundError, 404, lambda: good.chat.completions.create(
        model=ctx.model, messages=msgs, max_tokens=4), "the folder name when --served-model-name is set")


# ---- lifecycle ------------------------------------------------------------------------------------

def check_loading(ctx):
    """Recorded when the main server started: /health right after the listening line."""
    status, body, ready_first = ctx.first_health
    if status == 503:
        expect(body == {"status": "loading"}, f"503 before ready with body {body}")
        print("  /health before ready: 503 loading (observed)")
    else:
        expect(status == 200 and body == {"status": "ok"}, f"/health right after listening: {status} {body}")
        expect(ctx.server.ready.wait(5), "/health was 200 but no 'ember serve: ready' line followed")
        print(f"  /health before ready: not observable (the model loaded first; ready line already seen: {ready_first})")
    r = httpx.get(ctx.url + "/health", timeout=REQUEST_TIMEOUT)
    expect(r.status_code == 200 and r.json() == {"status": "ok"}, f"/health when ready: {r.status_code} {r.text}")


# One connection pool for the raw streams: an httpx.Client per request costs milliseconds of CPU (its SSL
# context), enough for the server to finish a stream before the next thread has sent its request.
STREAMS = httpx.Client(limits=httpx.Limits(max_connections=256, max_keepalive_connections=0),
                       timeout=httpx.Timeout(REQUEST_TIMEOUT, connect=5))


class StreamRun(threading.Thread):
    """One raw streamed completion: whether it finished whole ([DONE] after a finish_reason), how it ended."""

    def __init__(self, url, model, max_tokens, seed, read_chunks=None, headers=None, temperature=1.0):
        super().__init__(daemon=True)
        self.temperature = temperature
        self.url, self.model, self.max_tokens, self.seed = url, model, max_tokens, seed
        self.read_chunks, self.headers = read_chunks, headers or {}
        self.outcome, self.chunks = None, 0

    def run(self):
        body = {"model": self.model, "prompt": "The computer", "max_tokens": self.max_tokens, "seed": self.seed,
                "temperature": self.temperature, "stream": True}
        finish = None
        try:
            with STREAMS.stream("POST", self.url + "/v1/completions", json=body, headers=self.headers) as r:
                if r.status_code != 200:
                    self.outcome = f"http {r.status_code}"
                    return
                for data in parse_sse(r.iter_lines()):
                    if data == "[DONE]":
                        self.outcome = "complete" if finish else "done without finish_reason"
                        return
                    self.chunks += 1
                    for choice in json.loads(data).get("choices", []):
                        finish = choice.get("finish_reason") or finish
                    if self.read_chunks and self.chunks >= self.read_chunks:
                        self.outcome = "disconnected"
                        return  # leaving the block closes the connection mid-stream
                self.outcome = "cut (no [DONE])"
        except httpx.TimeoutException:
            self.outcome = "timeout"
        except httpx.HTTPError as e:
            self.outcome = f"error {type(e).__name__}"


def long_seeds(ctx, count, min_tokens, temperature):
    """Seeds whose completion of "The computer" runs at least `min_tokens` tokens (most end sooner, at EOS)."""
    found = []
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        for base in range(1000, 1800, 32):
            def length(seed):
                return seed, ctx.completion(prompt="The computer", max_tokens=120, seed=seed,
                                            temperature=temperature).usage.completion_tokens
            found += [(seed, n) for seed, n in pool.map(length, range(base, base + 32)) if n >= min_tokens]
            if len(found) >= count:
                return found[:count]
    raise AssertionError(f"only {len(found)} of 800 seeds give {min_tokens} tokens or more")


def check_disconnect_frees(ctx):
    """16 clients close their streams after 2 chunks of completions that run 96 to 120 tokens when read whole:
    the running/active gauges return to 0 within 5 s, and far fewer tokens are generated than whole."""
    chosen = long_seeds(ctx, 16, 96, 1.5)
    full = sum(n for _, n in chosen)
    tokens_before = ctx.server.metrics().get("ember_generation_tokens_total")
    expect(tokens_before is not None, "no ember_generation_tokens_total in /metrics")
    runs = [StreamRun(ctx.url, ctx.model, 120, seed, read_chunks=2, temperature=1.5) for seed, _ in chosen]
    for r in runs:
        r.start()
    for r in runs:
        r.join(REQUEST_TIMEOUT)
    expect(all(r.outcome == "disconnected" for r in runs), f"outcomes {[r.outcome for r in runs]}")
    deadline = time.monotonic() + 5
    while True:
        in_flight = running_gauge(ctx.server.metrics())
        if in_flight == 0:
            break
        expect(time.monotonic() < deadline,
               f"running + active requests still {in_flight} 5 s after 16 clients disconnected")
        time.sleep(0.05)
    spent = ctx.server.metrics().get("ember_generation_tokens_total") - tokens_before
    print(f"  16 streams cut after 2 chunks generated {spent:.0f} tokens; read whole they generate {full}")
    expect(spent < full / 2, f"ember_generation_tokens_total grew by {spent:.0f} of {full}: the requests ran on")


# The drain checks need generation still running at SIGTERM, and finished within the default 30 s drain:
# requests for 16 choices of up to 120 tokens on a server with one thread. models/default makes such a
# request in ~0.1 s, so where one takes under a second on the main server, the drain servers run the
# reference kernels (EMBER_REFERENCE=1: ~300 tokens/s on models/default, seconds of work); a larger model
# (Qwen2's 151,936-token vocabulary: ~2 s with the fast kernels, ~70 s with the reference ones) runs as is.
def drain_env(ctx):
    t0 = time.monotonic()
    r = httpx.post(ctx.url + "/v1/completions", timeout=REQUEST_TIMEOUT, json=stream_body(ctx.model, 500, stream=False))
    took = time.monotonic() - t0
    expect(r.status_code == 200, f"the drain checks' request: status {r.status_code} {r.text[:200]}")
    print(f"  one request of the drain checks takes {took:.2f} s on the main server", flush=True)
    return {"EMBER_REFERENCE": "1"} if took < 1.0 else {}


def stream_body(model, seed, stream=True):
    return {"model": model, "prompt": "The computer", "max_tokens": 120, "seed": seed, "temperature": 1.5, "n": 16,
            "stream": stream}


def send_streams(server, model, count, headers=None):
    """`count` streamed completions of 16 choices, each request written whole on its own socket (http.client's
    separate header and body writes cost a delayed ACK, ~40 ms, each); returns the sockets once the server
    runs or queues all of them (ember_requests_active), none finished."""
    socks = []
    for i in range(count):
        body = json.dumps(stream_body(model, 500 + i)).encode()
        head = "".join(f"{k}: {v}\r\n" for k, v in {"Host": f"127.0.0.1:{server.port}", "Content-Type": "application/json",
                                                     "Content-Length": len(body), **(headers or {})}.items())
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=REQUEST_TIMEOUT)
        sock.sendall(f"POST /v1/completions HTTP/1.1\r\n{head}\r\n".encode() + body)
        socks.append(sock)
    deadline = time.monotonic() + REQUEST_TIMEOUT
    while True:
        m = server.metrics()
        if (m.get("ember_requests_active") or 0) >= count:
            break
        expect(not m.get("ember_requests_finished_total"), "a request finished before all were in")
        expect(time.monotonic() < deadline, f"the server did not take {count} requests within {REQUEST_TIMEOUT} s")
        time.sleep(0.01)
    return socks


def read_stream(sock, n=16):
    """How one response of send_streams ended: "complete" ([DONE] after the n choices' finish_reason), or what
    went wrong."""
    try:
        r = http.client.HTTPResponse(sock, method="POST")
        r.begin()
        body = r.read().decode("utf-8", "replace")
        if r.status != 200:
            return f"http {r.status}"
    except (OSError, http.client.HTTPException) as e:
        return f"error {type(e).__name__}"
    finally:
        sock.close()
    events = [line[5:].strip() for line in body.splitlines() if line.startswith("data:")]
    if not events or events[-1] != "[DONE]":
        return "cut (no [DONE])"
    reasons = [(c["index"], c.get("finish_reason")) for e in events[:-1] for c in json.loads(e).get("choices", [])]
    reasons = sorted((i, x) for i, x in reasons if x)
    complete = [i for i, _ in reasons] == list(range(n)) and all(x in ("stop", "length") for _, x in reasons)
    return "complete" if complete else f"finish_reasons {reasons}"


def count_outcomes(outcomes):
    counts = {}
    for o in outcomes:
        counts[o] = counts.get(o, 0) + 1
    return counts


def check_drain(ctx):
    """SIGTERM with generation running: /health 503 draining, a new request 503 with an error object, the
    in-flight streams finish whole, exit 0; and the idle main server exits 0 on SIGTERM."""
    drain = EmberServer(ctx.binary, ctx.model_dir, "--threads", "1", log_path=ctx.log, name="drain", env=ctx.drain_env).start()
    drain.wait_ready(60)
    socks = send_streams(drain, ctx.model, 2)
    drain.proc.send_signal(signal.SIGTERM)
    t0 = time.monotonic()
    try:
        health = httpx.get(drain.url + "/health", timeout=5)
        new = httpx.post(drain.url + "/v1/chat/completions", timeout=5,
                         json={"model": ctx.model, "messages": [{"role": "user", "content": PROMPT}], "max_tokens": 4})
    except httpx.HTTPError as e:
        raise AssertionError(f"the server did not answer {time.monotonic() - t0:.3f} s after SIGTERM with 2 "
                             f"requests generating: {type(e).__name__} {e}")
    expect(health.status_code == 503 and health.json() == {"status": "draining"},
           f"/health while draining: {health.status_code} {health.text}")
    check_error_object(new, 503, "a new request while draining")
    outcomes = count_outcomes(read_stream(sock) for sock in socks)
    expect(outcomes == {"complete": 2}, f"the requests in flight at SIGTERM: {outcomes}")
    try:
        rc = drain.proc.wait(timeout=35)
    except subprocess.TimeoutExpired:
        raise AssertionError("still running 35 s after SIGTERM (default --drain-timeout 30)")
    expect(rc == 0, f"exit status {rc} after SIGTERM")
    print(f"  2 requests (n=16) generating at SIGTERM, both whole; exit 0 after {time.monotonic() - t0:.2f} s")
    t1 = time.monotonic()
    rc = ctx.server.terminate(timeout=10)
    expect(rc == 0, f"the idle main server: exit status {rc} after SIGTERM")
    print(f"  the idle main server exited 0 {time.monotonic() - t1:.2f} s after SIGTERM")


def check_drain_timeout(ctx):
    """--drain-timeout 1 with generation running: exit 0 within 1 s + 6 s, the streams end (cancelled), none hangs."""
    key = {"Authorization": f"Bearer {API_KEY}"}
    socks = send_streams(ctx.auth, "ember-test", 2, headers=key)
    t0 = time.monotonic()
    ctx.auth.proc.send_signal(signal.SIGTERM)
    outcomes = count_outcomes(read_stream(sock) for sock in socks)
    try:
        rc = ctx.auth.proc.wait(timeout=7)
    except subprocess.TimeoutExpired:
        raise AssertionError("still running 7 s after SIGTERM with --drain-timeout 1")
    took = time.monotonic() - t0
    expect(rc == 0, f"exit status {rc}")
    print(f"  exit 0 after {took:.2f} s; streams: {outcomes}")
    expect(took >= 0.9, f"exit after {took:.2f} s, before the 1 s drain timeout, with requests generating")
    expect(outcomes.get("complete", 0) < 2, "both requests finished within 1 s: the drain timeout was not exercised")


# ---- main -----------------------------------------------------------------------------------------

def start_main_server(ctx):
    ctx.server = EmberServer(ctx.binary, ctx.model_dir, log_path=ctx.log, name="main").start()
    ctx.url = ctx.server.wait_listening(30)
    try:
        r = httpx.get(ctx.url + "/health", timeout=5)
        ctx.first_health = (r.status_code, r.json(), ctx.server.ready.is_set())
    except (httpx.HTTPError, ValueError) as e:
        ctx.first_health = (None, f"{type(e).__name__}: {e}", ctx.server.ready.is_set())
    ctx.server.wait_ready(60)
    ctx.oai = ctx.client()
    ctx.context = httpx.get(ctx.url + "/v1/models", timeout=REQUEST_TIMEOUT).json()["data"][0]["max_model_len"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary")
    ap.add_argument("model_dir")
    ap.add_argument("--keep-logs", help="write the servers' stderr here (default: a temporary folder)")
    a = ap.parse_args()
    watchdog(240, "openai_client_test")
    log_dir = a.keep_logs or tempfile.mkdtemp(prefix="ember-serve-openai-")
    os.makedirs(log_dir, exist_ok=True)
    ctx = Ctx(os.path.abspath(a.binary), os.path.abspath(a.model_dir), log_dir)
    checks = Checks()
    try:
        start_main_server(ctx)
        ctx.drain_env = drain_env(ctx)
        ctx.auth = EmberServer(ctx.binary, ctx.model_dir, "--api-key", API_KEY, "--max-body-bytes", str(MAX_BODY),
                               "--served-model-name", "ember-test", "--drain-timeout", "1", "--threads", "1",
                               log_path=ctx.log, name="auth", env=ctx.drain_env).start()
        ctx.auth.wait_ready(60)
        cases = [check_loading, check_chat_shape, check_chat_cached_tokens, check_chat_stream, check_chat_stream_raw,
                 check_seeds, check_n2, check_stop, check_max_tokens_1, check_logprobs, check_tools,
                 check_response_format, check_constraint_failure, check_batched_equals_sequential,
                 check_completion_text, check_completion_ids, check_completion_echo, check_completion_stream,
                 check_matches_ember_generate, check_listen_backlog, check_models, check_metrics, check_tokenize,
                 check_malformed_json, check_unknown_model, check_bad_temperature, check_prompt_too_long,
                 check_auth_and_limits, check_disconnect_frees, check_drain, check_drain_timeout]
        for case in cases:
            checks.run(case.__name__[len("check_"):], case, ctx)
    except Exception as e:  # noqa: BLE001 - a server that does not start fails the whole test
        checks.failed.append(("start", f"{type(e).__name__}: {e}"))
        print(f"FAIL start: {e}", flush=True)
    finally:
        kill_children()
    print(f"server logs: {ctx.log}")
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
