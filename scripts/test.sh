#!/usr/bin/env bash
# The README's second command (and CI's): set up, build, run every test suite,
# then the sanitized suites and the fuzz smoke (scripts/test_sanitized.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/build.sh"
(cd "${EMBER_BUILD_DIR:-$root/build}" && ctest --output-on-failure -j "$(nproc)")
bash "$root/scripts/test_sanitized.sh"
