#!/usr/bin/env bash
# The README's second command (and CI's): set up, build, run every test suite.
# EMBER_SANITIZE=1 builds into build-asan/ with AddressSanitizer and UBSan.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ "${EMBER_SANITIZE:-0}" = 1 ]; then
  export EMBER_BUILD_DIR="${EMBER_BUILD_DIR:-$root/build-asan}"
  # Tests of oversized requests expect a failed allocation, not an ASan abort.
  export ASAN_OPTIONS="${ASAN_OPTIONS:-allocator_may_return_null=1}"
  bash "$root/scripts/build.sh" -DEMBER_SANITIZE=ON
else
  bash "$root/scripts/build.sh"
fi
cd "${EMBER_BUILD_DIR:-$root/build}"
ctest --output-on-failure -j "$(nproc)"
