#!/usr/bin/env python3
"""Expected token ids from Hugging Face `tokenizers` (the oracle of tests/unit/tokenizer_test.cpp).

usage: tokenizer_reference.py TOKENIZERS_DIR CORPUS.json OUT.json [VARIANTS_DIR [NAME]]

For every tokenizer folder NAME under TOKENIZERS_DIR and every corpus string it
records encode(text, add_special_tokens=False/True) and decode(ids, skip_special_tokens
=False/True) of the add_special=True ids, as {NAME: [{text, ids, ids_special,
decoded, decoded_skip}, ...]}.
With VARIANTS_DIR it also writes VARIANTS_DIR/llama2_metaspace/tokenizer.json (Llama-2's
vocab with the Metaspace pre-tokenizer and decoder that Mistral/Llama-2 exports use in
place of the Prepend/Replace normalizers) and records it too.
With NAME it records that tokenizer only (each test process needs one).
"""
import json
import os
import sys

from tokenizers import Tokenizer


def write_json_atomically(path, value):
    """ctest runs the test binaries in parallel, each running this script: a file is
    replaced whole (rename), so no reader sees another process's half-written one."""
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(value, f, ensure_ascii=False)
    os.replace(tmp, path)


def metaspace_variant(root, variants):
    spec = json.load(open(os.path.join(root, "llama2", "tokenizer.json"), encoding="utf-8"))
    spec["normalizer"] = None
    spec["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": True}
    spec["decoder"] = {"type": "Sequence", "decoders": [
        {"type": "ByteFallback"},
        {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": True}]}
    os.makedirs(os.path.join(variants, "llama2_metaspace"), exist_ok=True)
    path = os.path.join(variants, "llama2_metaspace", "tokenizer.json")
    write_json_atomically(path, spec)
    return path


def main():
    root, corpus_path, out_path = sys.argv[1:4]
    corpus = json.load(open(corpus_path, encoding="utf-8"))
    paths = {name: os.path.join(root, name, "tokenizer.json") for name in sorted(os.listdir(root))}
    only = sys.argv[5] if len(sys.argv) > 5 else None
    # The variant is written only when it is asked for: reading Llama-2's
    # tokenizer.json for it costs every other case's process a second.
    if len(sys.argv) > 4 and only in (None, "llama2_metaspace"):
        paths["llama2_metaspace"] = metaspace_variant(root, sys.argv[4])
    if only:
        paths = {only: paths[only]}
    result = {}
    for name, path in paths.items():
        if not os.path.isfile(path):
            continue
        tok = Tokenizer.from_file(path)
        rows = []
        for text in corpus:
            ids = tok.encode(text, add_special_tokens=False).ids
            ids_special = tok.encode(text, add_special_tokens=True).ids
            rows.append({
                "text": text,
                "ids": ids,
                "ids_special": ids_special,
                "decoded": tok.decode(ids_special, skip_special_tokens=False),
                "decoded_skip": tok.decode(ids_special, skip_special_tokens=True),
            })
        result[name] = rows
    write_json_atomically(out_path, result)


if __name__ == "__main__":
    main()
