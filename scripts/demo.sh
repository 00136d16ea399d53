#!/usr/bin/env bash
# The README's first command: install the build's Debian packages, build the
# `ember` command line alone (no tests, no ONNX Runtime), and run Ember's main job
# on the embedded default model (models/default: a small decoder trained on fortune
# cookies by tools/train_default_model.py): generate text from a few prompts,
# then measure prompt-processing and generation speed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/build.sh" --cli-only
ember="${EMBER_BUILD_DIR:-$root/build}/ember"
model="$root/models/default"
for prompt in "The computer" "Love is" "A wise man"; do
  echo "> $prompt"
  "$ember" generate "$model" --prompt "$prompt" --seed 7 --max-new-tokens 60
done
"$ember" bench "$model" -p 64 -n 64 -r 5
