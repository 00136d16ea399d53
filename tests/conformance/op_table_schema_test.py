#!/usr/bin/env python3
"""Checks Ember's op table (`ember ops --json`) against ONNX's own operator schemas.

For every ai.onnx and ai.onnx.ml entry:
  - `since` is one of the op's schema since_versions (an entry starts where a
    version of the op starts);
  - `until` is the table's newest opset of the domain, or one less than a
    schema since_version (an entry ends where a version ends);
  - the entries of one op do not overlap;
  - the op's newest schema version (its newest not deprecated one) is covered:
    no op lags behind ONNX.
The table's newest opsets must be ONNX's. Each exception is listed below with
its reason, and one that no longer applies fails too.

Input 0's type constraint in the schema is compared with the entry's types as a
report only: an entry's types are the union over all its inputs, and a kernel
may take less than the spec allows (it then refuses the rest by name).

Usage: op_table_schema_test.py EMBER_BINARY   (run with an interpreter that has onnx 1.23.2)
"""
import json
import subprocess
import sys
from collections import defaultdict

import onnx
import onnx.defs

# Entries whose `since` is not a since_version of the op's schema.
SINCE_EXCEPTIONS = {
    ("ai.onnx", "LayerNormalization"): "ONNX Runtime registers its contrib LayerNormalization in the ONNX "
    "domain from opset 1 (ONNX's own starts at 17), and exports older than opset 17 use it",
}

# Ops in ONNX's domains that ONNX itself does not define.
NOT_IN_ONNX = {
    ("ai.onnx", "SimplifiedLayerNormalization"): "ONNX Runtime's contrib op, registered in the ONNX domain "
    "from opset 1; models exported for ONNX Runtime use it",
}

# ONNX's experimental ops of opsets 1-9, removed from the spec at opset 10 (so
# onnx.defs has no schema for them); ONNX Runtime still runs them in the ONNX
# domain up to opset 9, and converters of that era wrote them. An entry of one
# must end by opset 9. Source: ONNX 1.5's changelog (opset 10 removed the
# experimental ops).
REMOVED_AT_OPSET_10 = {"ATen", "Affine", "ConstantFill", "Crop", "DynamicSlice", "GRUUnit", "GivenTensorFill",
                       "ImageScaler", "ParametricSoftplus", "Scale", "ScaledTanh"}

# ONNX's names for its tensor element types, by Ember's dtype names.
ONNX_TYPE_NAMES = {
    "float": "float32", "double": "float64", "float16": "float16", "bfloat16": "bfloat16",
    "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64",
    "uint8": "uint8", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64",
    "bool": "bool", "string": "string",
    "float8e4m3fn": "float8e4m3fn", "float8e4m3fnuz": "float8e4m3fnuz", "float8e5m2": "float8e5m2",
    "float8e5m2fnuz": "float8e5m2fnuz", "float8e8m0": "float8e8m0", "float4e2m1": "float4e2m1",
    "uint4": "uint4", "int4": "int4", "uint2": "uint2", "int2": "int2",
}


def schema_domain(domain):
    return "" if domain == "ai.onnx" else domain


def onnx_newest_opsets():
    newest = defaultdict(int)
    for s in onnx.defs.get_all_schemas_with_history():
        newest[s.domain] = max(newest[s.domain], s.since_version)
    newest[""] = onnx.defs.onnx_opset_version()
    return newest


def ember_types(type_str):
    """Ember's dtype name for ONNX's `tensor(float)`, `seq(...)`, `optional(...)`; None for the rest (complex)."""
    if type_str.startswith("seq("):
        return "sequence"
    if type_str.startswith("optional("):
        return "optional"
    if type_str.startswith("tensor(") and type_str.endswith(")"):
        return ONNX_TYPE_NAMES.get(type_str[len("tensor("):-1])
    return None


def input0_types(schema):
    """The dtype names ONNX allows on input 0 of `schema`, or None when it has no input."""
    if not schema.inputs:
        return None
    type_str = schema.inputs[0].type_str
    for c in schema.type_constraints:
        if c.type_param_str == type_str:
            return {t for t in map(ember_types, c.allowed_type_strs) if t}
    return {t for t in [ember_types(type_str)] if t}


def main():
    table = json.loads(subprocess.run([sys.argv[1], "ops", "--json"], check=True, capture_output=True,
                                      text=True).stdout)
    schemas = defaultdict(dict)  # (domain, op) -> {since_version: schema}
    for s in onnx.defs.get_all_schemas_with_history():
        schemas[(s.domain, s.name)][s.since_version] = s
    newest = onnx_newest_opsets()
    failures, reports = [], []
    used_exceptions = set()

    for domain in ("ai.onnx", "ai.onnx.ml"):
        ours, theirs = table["newest_opset"].get(domain), newest[schema_domain(domain)]
        if ours != theirs:
            failures.append(f"newest_opset({domain}) is {ours}; onnx {onnx.__version__} is at {theirs}")

    entries = defaultdict(list)
    for e in table["entries"]:
        if e["domain"] in ("ai.onnx", "ai.onnx.ml"):
            entries[(e["domain"], e["op"])].append(e)

    for key, op_entries in sorted(entries.items()):
        domain, op = key
        name = f"{domain}.{op}"
        versions = schemas.get((schema_domain(domain), op))
        if not versions:
            if domain == "ai.onnx" and op in REMOVED_AT_OPSET_10:
                for e in op_entries:
                    if e["until"] > 9:
                        failures.append(f"{name} {e['since']}-{e['until']}: ONNX removed the op at opset 10")
            elif key in NOT_IN_ONNX:
                used_exceptions.add(key)
            else:
                failures.append(f"{name}: ONNX has no such op")
            continue
        top = newest[schema_domain(domain)]
        op_entries.sort(key=lambda e: e["since"])
        for e in op_entries:
            rng = f"{e['since']}-{e['until']}"
            if e["since"] not in versions:
                if key in SINCE_EXCEPTIONS:
                    used_exceptions.add(key)
                else:
                    failures.append(f"{name} {rng}: since {e['since']} is not a version of the op "
                                    f"(its versions: {sorted(versions)})")
            if not (e["until"] == top or (e["until"] + 1) in versions):
                failures.append(f"{name} {rng}: until {e['until']} is neither opset {top} nor the opset "
                                f"before a version of the op (its versions: {sorted(versions)})")
            in_effect = versions[max((v for v in versions if v <= e["until"]), default=min(versions))]
            allowed = input0_types(in_effect)
            if allowed is not None:
                missing = sorted(allowed - set(e["types"]))
                if missing:
                    reports.append(f"{name} {rng}: input 0 of {op}-{in_effect.since_version} also allows "
                                   f"{' '.join(missing)}")
        for a, b in zip(op_entries, op_entries[1:]):
            if b["since"] <= a["until"]:
                failures.append(f"{name}: entries {a['since']}-{a['until']} and {b['since']}-{b['until']} overlap")
        current = [v for v, s in versions.items() if not s.deprecated]
        if current:
            latest = max(current)
            if not any(e["since"] <= latest <= e["until"] for e in op_entries):
                failures.append(f"{name}: its newest version {latest} is not covered "
                                f"({', '.join(str(e['since']) + '-' + str(e['until']) for e in op_entries)})")

    for key in sorted((set(SINCE_EXCEPTIONS) | set(NOT_IN_ONNX)) - used_exceptions):
        failures.append(f"{key[0]}.{key[1]} is listed as an exception that no longer applies")

    print(f"{len(reports)} entries whose input 0 takes fewer types than ONNX allows (a report, not a failure):")
    for r in reports:
        print("  " + r)
    checked = sum(len(v) for v in entries.values())
    print(f"{checked} ai.onnx/ai.onnx.ml entries of {len(entries)} ops checked against onnx {onnx.__version__}")
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
