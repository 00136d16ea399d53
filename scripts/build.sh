#!/usr/bin/env bash
# Set-up, then a Release build with assertions into build/ (or $EMBER_BUILD_DIR).
#   build.sh [CMAKE_ARGS...]             everything: library, CLI, plugin EP, tests, benchmarks
#   build.sh --cli-only [CMAKE_ARGS...]  the `ember` command line alone (scripts/demo.sh)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${EMBER_BUILD_DIR:-$root/build}"
if [ "${1:-}" = --cli-only ]; then
  shift
  bash "$root/scripts/setup.sh" --cli-only
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBER_BUILD_TESTS=OFF "$@" >/dev/null
  ninja -C "$build" ember
else
  bash "$root/scripts/setup.sh"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBER_BUILD_TESTS=ON "$@" >/dev/null
  ninja -C "$build"
fi
