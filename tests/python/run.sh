#!/usr/bin/env bash
# The Python suite as a user gets the package: a fresh virtual environment at VENV,
# `pip install ".[test]"` from the source tree (scikit-build-core builds the extension
# into build/python/, fetching its build requirements from PyPI), then pytest over
# tests/python. Its closing line is the test's verdict.
# usage: tests/python/run.sh VENV [PYTEST_ARGS...]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="$1"
shift
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "$root[test]"
cd "$root"
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider -rfE "$@" tests/python
