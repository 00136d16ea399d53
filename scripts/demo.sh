#!/usr/bin/env bash
# The README's first command: set up, build, and run Ember's main job on the
# bundled demo model (models/demo, made by tools/make_demo_model.py): its
# outputs, then its per-run timing.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/build.sh"
ember="${EMBER_BUILD_DIR:-$root/build}/ember"
"$ember" info "$root/models/demo/model.onnx"
"$ember" run "$root/models/demo/model.onnx" --input x="$root/models/demo/x.npy" \
  --output-dir "${EMBER_BUILD_DIR:-$root/build}/demo_output"
"$ember" perf "$root/models/demo/model.onnx" --dim batch=4 --iters 2000
