#!/usr/bin/env bash
# The Python suite as a user gets the package: a fresh virtual environment at VENV,
# `pip install ".[test]"` from the source tree (scikit-build-core builds the extension
# into build/python/, fetching its build requirements from PyPI), then pytest over
# tests/python. Its closing line is the test's verdict. The package links the
# ember_core that the build folder BUILD compiled from these sources with the same
# flags (CMake's EMBER_CORE_FROM) rather than compiling the library a second time.
# usage: tests/python/run.sh VENV BUILD [PYTEST_ARGS...]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="$1" build="$(cd "$2" && pwd)"
shift 2
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "$root[test]" \
  --config-settings="cmake.define.EMBER_CORE_FROM=$build"
cd "$root"
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider -rfE "$@" tests/python
