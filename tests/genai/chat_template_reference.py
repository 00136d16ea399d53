#!/usr/bin/env python3
"""Renders the real chat templates over a set of conversations with jinja2, exactly as
transformers' apply_chat_template does (ImmutableSandboxedEnvironment, trim_blocks,
lstrip_blocks, loopcontrols, its tojson filter, raise_exception, strftime_now), and
writes the cases with their expected text (or the error jinja2 raised) as JSON for
chat_template_test.

usage: chat_template_reference.py OUT.json DIR...

Each DIR contributes the chat_template of every DIR/NAME/tokenizer_config.json (the
template named NAME, with that file's special tokens) and every DIR/NAME.jinja (with
Llama-3's bos/eos tokens).
"""
import json
import os
import sys
from datetime import datetime

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

FIXED_NOW = datetime(2024, 7, 26, 9, 30)


class GenerationBlock(Extension):
    """transformers' AssistantTracker: {% generation %}...{% endgeneration %} renders its
    body unchanged (it only marks assistant tokens for return_assistant_tokens_mask)."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def make_env():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[GenerationBlock, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: FIXED_NOW.strftime(fmt)
    return env


def special_tokens(config):
    out = {}
    for key in ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"):
        v = config.get(key)
        if isinstance(v, dict):
            v = v.get("content")
        if isinstance(v, str):
            out[key] = v
    extra = config.get("additional_special_tokens")
    if isinstance(extra, list):
        out["additional_special_tokens"] = [t["content"] if isinstance(t, dict) else t for t in extra]
    return out


WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name, e.g. Zürich"},
                           "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["city"],
        },
    },
}

CONVERSATIONS = {
    "single_user": {"messages": [{"role": "user", "content": "Hello!"}]},
    "system_multi_turn": {"messages": [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "2+2 is 4."},
        {"role": "user", "content": "And times 3?"},
    ]},
    "unicode_whitespace": {"messages": [
        {"role": "user", "content": "  Grüße aus Zürich! 你好，世界 🌍\n\n  "},
        {"role": "assistant", "content": "\tこんにちは — «ça va?» 👋 "},
        {"role": "user", "content": "Ω≈ç√∫ \"quoted\" and 'single' \\ backslash"},
    ]},
    "thinking": {"messages": [
        {"role": "user", "content": "Think first."},
        {"role": "assistant", "content": "<think>\nLet me see.\n</think>\n\nThe answer is 42."},
        {"role": "user", "content": "Why?"},
    ]},
    "tool_calls": {
        "tools": [WEATHER_TOOL],
        "messages": [
            {"role": "system", "content": "Use tools when useful."},
            {"role": "user", "content": "Weather in Zürich and Paris?"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Zürich", "unit": "celsius"}}},
                {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
            ]},
            {"role": "tool", "content": "{\"temperature\": 21.5}"},
            {"role": "tool", "content": "{\"temperature\": 18}"},
            {"role": "assistant", "content": "Zürich: 21.5 °C, Paris: 18 °C."},
        ],
    },
    "tool_calls_string_arguments": {
        "tools": [WEATHER_TOOL],
        "messages": [
            {"role": "user", "content": "Weather in Oslo?"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}},
            ]},
            {"role": "tool", "content": "{\"temperature\": -3}"},
        ],
    },
}


# Templates shipped without a tokenizer_config.json get Llama-3's special tokens.
BARE_TEMPLATE_TOKENS = {"bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>"}


def load_templates(dirs):
    out = {}
    for root in dirs:
        for name in sorted(os.listdir(root)):
            path = os.path.join(root, name, "tokenizer_config.json")
            if os.path.exists(path):
                config = json.load(open(path, encoding="utf-8"))
                config.pop("added_tokens_decoder", None)
                out[name] = config
            elif name.endswith(".jinja"):
                config = dict(BARE_TEMPLATE_TOKENS)
                config["chat_template"] = open(os.path.join(root, name), encoding="utf-8").read()
                out[name[: -len(".jinja")]] = config
    return out


def main():
    out_path, dirs = sys.argv[1], sys.argv[2:]
    env = make_env()
    cases = []
    for name, config in load_templates(dirs).items():
        if not isinstance(config.get("chat_template"), str):
            continue
        template = env.from_string(config["chat_template"])
        for conv_name, conv in CONVERSATIONS.items():
            for add_generation_prompt in (False, True):
                case = {"template": name, "conversation": conv_name, "add_generation_prompt": add_generation_prompt,
                        "config": config, "messages": conv["messages"], "tools": conv.get("tools")}
                try:
                    case["expected"] = template.render(messages=conv["messages"], tools=conv.get("tools"),
                                                       documents=None, add_generation_prompt=add_generation_prompt,
                                                       **special_tokens(config))
                except Exception as e:  # the template refuses the conversation (e.g. roles must alternate)
                    case["error"] = f"{type(e).__name__}: {e}"
                    # raise_exception's own message, which Ember's error must carry too.
                    if type(e) is jinja2.exceptions.TemplateError:
                        case["raised"] = str(e)
                cases.append(case)
    # ctest runs the test binaries in parallel, each running this script: the file is
    # replaced whole (rename), so no reader sees another process's half-written one.
    tmp = f"{out_path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(cases, f, ensure_ascii=False, indent=1)
    os.replace(tmp, out_path)


if __name__ == "__main__":
    main()
