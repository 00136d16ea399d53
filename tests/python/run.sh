#!/usr/bin/env bash
# The Python suite as a user gets the package: a fresh virtual environment at VENV,
# `pip install ".[test]"` from the source tree (scikit-build-core builds the extension
# into build/python/, fetching its build requirements from PyPI), then pytest over
# tests/python. Its closing line is the test's verdict. Given a build folder BUILD
# (a release build of these sources), the package links the ember_core it compiled
# (CMake's EMBER_CORE_FROM; brought up to date first) rather than compiling the
# library a second time; given "", the package compiles its own.
# usage: tests/python/run.sh VENV BUILD|"" [PYTEST_ARGS...]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
[ $# -ge 2 ] || { echo "usage: tests/python/run.sh VENV BUILD|\"\" [PYTEST_ARGS...]" >&2; exit 2; }
venv="$1" build="$2"
shift 2
core_from=()
if [ -n "$build" ]; then
  cmake --build "$build" --target ember_core ember_image_codecs >/dev/null
  core_from=(--config-settings="cmake.define.EMBER_CORE_FROM=$(realpath "$build")")
fi
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "$root[test]" "${core_from[@]}"
cd "$root"
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider -rfE "$@" tests/python
