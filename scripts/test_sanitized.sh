#!/usr/bin/env bash
# The sanitized half of the test command (scripts/test.sh runs it after the
# release suites, whose ctest already holds the TSan suites tsan.*). One more
# build, of only what it runs: build-fuzz/, clang-19 at -O1 with ASan+UBSan and
# libFuzzer's coverage instrumentation on every object. It runs
#   - every fuzz target for 30 s from its seeds and regression inputs (ctest fuzz_*);
#   - under ASan+UBSan, the suites listed below: every parser of untrusted
#     input, the runtime and its limits, generation, serving and a kernel suite
#     per family, with three comparisons against ONNX Runtime. The other kernel
#     suites (and the whole-decoder comparisons, minutes each under ASan) are
#     left to the release run and the guard-page buffers, which catch a kernel's
#     overrun there; CI's 90 minutes do not hold all of them twice.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/setup.sh"
jobs="$(nproc)"
build="$root/build-fuzz"

asan_suites=(
  # parsers of untrusted input, and what loads a model
  loader shape_inference op_table image_decoder string_tensor sequence json
  tokenizer jinja chat_template genai_config constraint serve_api tool_calls text_stream
  # the runtime: sessions, threads, limits
  runtime concurrency limits threading buffer fusion
  # generation
  sampling beam_search kv_block_pool decoder_graph
  # a kernel suite per family
  elementwise tensor_ops gather_scatter data_movement reduce attention_ops matmul_nbits integer_gemm
  conv_gemm recurrent signal misc_ops ml_ops
  # against ONNX Runtime
  gqa_ort integer_ort random_graph
)

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++-19 -DEMBER_FUZZ=ON \
  >/dev/null
fuzz_targets=()
for src in "$root"/tests/fuzz/*_fuzz.cpp; do fuzz_targets+=("fuzz_$(basename "$src" _fuzz.cpp)"); done
ninja -C "$build" "${fuzz_targets[@]}" "${asan_suites[@]/#/test_}"

failed=0
(cd "$build" && ctest --output-on-failure -j "$jobs" -R '^fuzz_') || failed=1

# Tests of oversized requests expect a failed allocation, not an ASan abort;
# the guard-page and mapped-file tests expect the default SIGSEGV and SIGBUS
# (a crash still fails its suite, without ASan's report).
export ASAN_OPTIONS="allocator_may_return_null=1:handle_segv=0:handle_sigbus=0"
logs="$(mktemp -d)"
# Each suite's executable, $jobs at a time; a line per suite, the output of each that fails.
printf '%s\n' "${asan_suites[@]}" | xargs -P "$jobs" -I{} bash -c '
  suite="$1" build="$2" logs="$3"
  start=$(date +%s)
  if "$build/test_$suite" > "$logs/$suite.log" 2>&1; then
    echo "asan: test_$suite passed ($(( $(date +%s) - start )) s)"
  else
    echo "asan: test_$suite FAILED"
    touch "$logs/$suite.failed"
  fi' _ {} "$build" "$logs"
for suite in "${asan_suites[@]}"; do
  if [ -f "$logs/$suite.failed" ]; then
    echo "===== test_$suite under ASan+UBSan ====="
    cat "$logs/$suite.log"
    failed=1
  fi
done
rm -rf "$logs"
exit $failed
