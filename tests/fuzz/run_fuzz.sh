#!/usr/bin/env bash
# One libFuzzer target from its seeds and regression inputs, with the limits
# every target is held to: 1 s per input, 2 GiB of memory, no leak.
#   run_fuzz.sh BINARY NAME SEEDS_ROOT CORPUS_ROOT [LIBFUZZER_FLAGS...] [MORE_INPUT_DIRS...]
# e.g. -max_total_time=30 (the ctest smoke) or -runs=1000000 (docs/fuzzing.md);
# a longer run goes on from an earlier run's corpus when given its folder.
# New inputs go to CORPUS_ROOT/NAME, emptied first; a crash is written to
# CORPUS_ROOT/NAME-crashes/ (kept until copied into regressions/NAME) and makes this fail.
set -euo pipefail
binary="$1" name="$2" seeds="$3/$2" corpus="$4/$2"
shift 4
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
for arg in "$@"; do  # an earlier corpus to go on from must not be the folder emptied here
  case "$arg" in
    -*) ;;
    *) case "$(realpath -m "$arg")/" in "$(realpath -m "$corpus")"/*)
         echo "run_fuzz.sh: $arg is inside $corpus, which this run empties; give it another CORPUS_ROOT" >&2
         exit 1 ;;
       esac ;;
  esac
done
rm -rf "$corpus"
mkdir -p "$corpus" "$corpus-crashes"
[ -d "$seeds" ] || { echo "run_fuzz.sh: no seed corpus $seeds (tests/fuzz/make_seeds.py)" >&2; exit 1; }
inputs=("$seeds")
[ -d "$here/regressions/$name" ] && inputs+=("$here/regressions/$name")
flags=(-timeout=1 -rss_limit_mb=2048 -malloc_limit_mb=2048 -detect_leaks=1 -print_final_stats=1
       "-artifact_prefix=$corpus-crashes/")
case "$name" in  # the dictionaries: tokens of the input's language
  chat_template) flags+=("-dict=$here/jinja.dict") ;;
  genai_config|server_request|tokenizer_json|constraint) flags+=("-dict=$here/json.dict") ;;
esac
# libFuzzer writes new inputs to the first folder and takes flags anywhere.
exec "$binary" "${flags[@]}" "$corpus" "$@" "${inputs[@]}"
