#!/usr/bin/env bash
# Runs `ember test-onnx` on one folder of ONNX backend test cases: a
# libonnx-testdata folder by its name, or with --data DIR the cases in DIR
# (tools/write_onnx_node_tests.py's). Fails if fewer cases pass than the
# name's floor in floors.txt, or if a case FAILs that is not listed, with its
# reason, in known_failures.txt.
# Usage: check_floor.sh [--data DIR] NAME EMBER_COMMAND...
# (EMBER_COMMAND: the binary, or e.g. `qemu-x86_64 -cpu Nehalem build/ember`)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
data=""
if [ "$1" = --data ]; then
  data="$2"
  shift 2
fi
name="$1"
shift
data="${data:-/usr/share/libonnx-testdata/data/$name}"
floor=$(awk -v n="$name" '$1 == n {print $2}' "$here/floors.txt")
[ -n "$floor" ] || { echo "no floor for $name in floors.txt"; exit 1; }
out=$("$@" test-onnx "$data" || true)
summary=$(printf '%s\n' "$out" | tail -n 1)
passed=$(printf '%s\n' "$summary" | awk '{print $1}')
echo "$name: $summary (floor $floor)"
[[ "$passed" =~ ^[0-9]+$ ]] || { echo "could not read the pass count: $summary"; exit 1; }
status=0
while IFS= read -r line; do
  case_name=$(printf '%s\n' "$line" | sed -E 's/^FAIL ([^:]+):.*/\1/')
  if grep -qE "^$case_name " "$here/known_failures.txt"; then
    echo "known: $line"
  else
    echo "NEW FAILURE: $line"
    status=1
  fi
done < <(printf '%s\n' "$out" | grep -E '^FAIL' || true)
if [ "$passed" -lt "$floor" ]; then
  echo "$name: $passed passed, below the floor of $floor"
  status=1
fi
exit $status
