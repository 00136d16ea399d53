#!/usr/bin/env bash
# The `ember` command-line contracts (DESIGN.md): help for every command, run's
# output files, perf's last line, info's report, and clear non-zero exits on
# bad input.  Usage: check_cli.sh EMBER_BINARY
set -uo pipefail
ember="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
demo="$root/models/demo"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
failures=0
pass() { echo "ok: $1"; }
fail() { echo "FAILED: $1"; failures=$((failures + 1)); }

# expect_error NAME PATTERN CMD...: CMD exits non-zero and its stderr matches PATTERN.
expect_error() {
  local name="$1" pattern="$2"; shift 2
  if "$@" >"$tmp/out" 2>"$tmp/err"; then
    fail "$name: exited 0"
  elif grep -qE "$pattern" "$tmp/err"; then
    pass "$name"
  else
    fail "$name: stderr does not match '$pattern': $(cat "$tmp/err")"
  fi
}

for cmd in "" test-onnx run perf info tokenize chat-template generate bench chat; do
  if "$ember" $cmd --help >"$tmp/help" 2>&1 && grep -q "Usage" "$tmp/help"; then pass "help $cmd"; else fail "help $cmd"; fi
done

if "$ember" run "$demo/model.onnx" --input "x=$demo/x.npy" --output-dir "$tmp/run" >"$tmp/out" 2>&1 &&
   [ -s "$tmp/run/output_0.pb" ] && [ -s "$tmp/run/output_0.npy" ] && grep -q "probs float32\[4,64\]" "$tmp/out"; then
  pass "run writes output_0.pb and output_0.npy"
else
  fail "run on the demo model: $(cat "$tmp/out")"
fi
# Each row of a softmax sums to 1: a check of the values that does not use Ember.
if python3 -c "
import sys, numpy as np
p = np.load('$tmp/run/output_0.npy')
sys.exit(0 if p.shape == (4, 64) and np.allclose(p.sum(axis=1), 1, atol=1e-5) and (p > 0).all() else 1)"; then
  pass "run's .npy output holds softmax rows"
else
  fail "run's .npy output is not a softmax"
fi

# Sequences in and out: a SequenceProto output that ONNX's own reader reads back,
# and the same file fed to a model that takes a sequence.
if python3 -c "
import numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto as T
split = helper.make_graph([helper.make_node('SplitToSequence', ['x', 's'], ['seq'], axis=0)], 'split',
    [helper.make_tensor_value_info('x', T.FLOAT, [6])], [helper.make_tensor_sequence_value_info('seq', T.FLOAT, None)],
    initializer=[numpy_helper.from_array(np.array([2, 4], np.int64), 's')])
onnx.save(helper.make_model(split, opset_imports=[helper.make_opsetid('', 17)]), '$tmp/split.onnx')
concat = helper.make_graph([helper.make_node('ConcatFromSequence', ['seq'], ['y'], axis=0)], 'concat',
    [helper.make_tensor_sequence_value_info('seq', T.FLOAT, None)], [helper.make_tensor_value_info('y', T.FLOAT, None)])
onnx.save(helper.make_model(concat, opset_imports=[helper.make_opsetid('', 17)]), '$tmp/concat.onnx')
open('$tmp/x.pb', 'wb').write(numpy_helper.from_array(np.arange(6, dtype=np.float32), 'x').SerializeToString())" &&
   "$ember" run "$tmp/split.onnx" --input "x=$tmp/x.pb" --output-dir "$tmp/seq" >"$tmp/out" 2>&1 &&
   "$ember" run "$tmp/concat.onnx" --input "seq=$tmp/seq/output_0.pb" --output-dir "$tmp/cat" >>"$tmp/out" 2>&1 &&
   python3 -c "
import sys, numpy as np, onnx
from onnx import numpy_helper
s = onnx.SequenceProto(); s.ParseFromString(open('$tmp/seq/output_0.pb', 'rb').read())
t = onnx.TensorProto(); t.ParseFromString(open('$tmp/cat/output_0.pb', 'rb').read())
items = [a.tolist() for a in numpy_helper.to_list(s)]
sys.exit(0 if s.name == 'seq' and items == [[0, 1], [2, 3, 4, 5]] and numpy_helper.to_array(t).tolist() == list(range(6)) else 1)"; then
  pass "run writes and reads a sequence (SequenceProto)"
else
  fail "run with sequences: $(cat "$tmp/out")"
fi
expect_error "sequence input from .npy" "cannot come from a .npy" "$ember" run "$tmp/concat.onnx" --input "seq=$demo/x.npy"

if "$ember" perf "$demo/model.onnx" --dim batch=2 --iters 20 --warmup 2 >"$tmp/out" 2>&1 &&
   tail -n 1 "$tmp/out" | grep -qE '^p50_us=[0-9.]+ p90_us=[0-9.]+ min_us=[0-9.]+$'; then
  pass "perf's last line"
else
  fail "perf: $(cat "$tmp/out")"
fi

if "$ember" info "$demo/model.onnx" >"$tmp/out" 2>&1 && grep -q "LayerNormalization" "$tmp/out" &&
   grep -q "unsupported ops: none" "$tmp/out" && grep -q "^optimized: .* nodes" "$tmp/out" &&
   grep -q "^  fused .*: .*Erf" "$tmp/out"; then
  pass "info"
else
  fail "info: $(cat "$tmp/out")"
fi

head -c 1000 "$demo/model.onnx" >"$tmp/truncated.onnx"
expect_error "truncated model" "truncated.onnx|past the end|truncated" "$ember" run "$tmp/truncated.onnx" --input "x=$demo/x.npy"
expect_error "missing model file" "no_such.onnx" "$ember" info "$tmp/no_such.onnx"
expect_error "perf needs symbolic dims" "batch" "$ember" perf "$demo/model.onnx" --iters 1
expect_error "unknown input name" "unknown input 'y'" "$ember" run "$demo/model.onnx" --input "y=$demo/x.npy"
expect_error "missing input" "input 'x' is missing" "$ember" run "$demo/model.onnx"
expect_error "missing input file" "nope.npy" "$ember" run "$demo/model.onnx" --input "x=$tmp/nope.npy"
python3 -c "import numpy as np; np.save('$tmp/wrong.npy', np.zeros((4, 63), np.float32)); np.save('$tmp/int.npy', np.zeros((4, 64), np.int32))"
expect_error "wrong dimension" "input 'x' dimension 1 must be 64" "$ember" run "$demo/model.onnx" --input "x=$tmp/wrong.npy"
expect_error "wrong dtype" "input 'x' must be float32, got int32" "$ember" run "$demo/model.onnx" --input "x=$tmp/int.npy"
expect_error "bad --dim" "not a non-negative integer" "$ember" perf "$demo/model.onnx" --dim batch=abc

# tokenize: ids from Hugging Face tokenizers 0.23 for the same text (tests/unit/tokenizer_test.cpp checks the rest).
tok="$root/third_party/tokenizers"
expect_output() {
  local name="$1" want="$2"; shift 2
  local got
  got="$("$@" 2>&1)"
  if [ "$got" = "$want" ]; then pass "$name"; else fail "$name: got '$got', want '$want'"; fi
}
expect_output "tokenize llama3" '{"ids":[9906,11,1917,0]}' "$ember" tokenize "$tok/llama3" --text "Hello, world!"
expect_output "tokenize gemma3 with bos" '{"ids":[2,9259]}' "$ember" tokenize "$tok/gemma3" --text "Hello" --add-special
expect_output "detokenize llama3" '{"text":"Hello, world"}' "$ember" tokenize "$tok/llama3" --decode 128000,9906,11,1917 --skip-special
expect_error "tokenize bad ids" "." "$ember" tokenize "$tok/llama3" --decode 1,x
expect_error "tokenize missing folder" "no_such" "$ember" tokenize "$tmp/no_such" --text hi
echo '[{"role": "user", "content": "Hi"}]' >"$tmp/messages.json"
if "$ember" chat-template "$tok/qwen3" --messages "$tmp/messages.json" --add-generation-prompt >"$tmp/chat" 2>&1 &&
   grep -q "<|im_start|>user" "$tmp/chat" && grep -q "<|im_start|>assistant" "$tmp/chat"; then
  pass "chat-template qwen3"
else
  fail "chat-template qwen3: $(cat "$tmp/chat")"
fi
expect_error "chat-template without a template" "chat_template" "$ember" chat-template "$tok/llama2" --messages "$tmp/messages.json"

# generate: a tiny random-weight fixture; greedy is deterministic, the prompt is the tokenizer's ids.
if python3 "$root/tools/make_decoder_fixtures.py" --family llama --weights fp32 --out "$tmp/llama" >/dev/null 2>&1 &&
   "$ember" generate "$tmp/llama" --prompt "hello world" --max-new-tokens 8 --json >"$tmp/gen1" 2>&1 &&
   "$ember" generate "$tmp/llama" --prompt "hello world" --max-new-tokens 8 --json >"$tmp/gen2" 2>&1 &&
   "$ember" tokenize "$tmp/llama" --text "hello world" --add-special >"$tmp/ids" 2>&1 &&
   python3 -c "
import json, sys
a, b, ids = (json.load(open(f)) for f in sys.argv[1:4])
assert a == {**b, 'timings': a['timings']}, 'greedy runs differ'
assert len(a['generated_tokens']) == 8 and a['prompt_tokens'] == ids['ids'], a
" "$tmp/gen1" "$tmp/gen2" "$tmp/ids"; then
  pass "generate --json: greedy, 8 tokens, the tokenizer's prompt ids"
else
  fail "generate: $(cat "$tmp/gen1")"
fi
expect_error "generate without a model folder" "no_such" "$ember" generate "$tmp/no_such" --prompt hi
expect_error "generate with --greedy and --temperature" "excludes" "$ember" generate "$tmp/llama" --prompt hi --greedy --temperature 0.5

# --stop: the greedy text cut before a piece of itself, taken from the middle of the
# unstopped run's text; the stop string itself is never printed.
"$ember" generate "$tmp/llama" --prompt "hello world" --max-new-tokens 24 --json >"$tmp/gen24" 2>&1
stop="$(python3 -c "
import json, sys
t = json.load(open(sys.argv[1]))['text']
print(t[len(t) // 2:len(t) // 2 + 3])" "$tmp/gen24")"
if [ -n "$stop" ] &&
   "$ember" generate "$tmp/llama" --prompt "hello world" --max-new-tokens 24 --json --stop "$stop" >"$tmp/gen_stop" 2>&1 &&
   "$ember" generate "$tmp/llama" --prompt "hello world" --max-new-tokens 24 --stop "$stop" >"$tmp/gen_stream" 2>&1 &&
   python3 -c "
import json, sys
full, cut = (json.load(open(f)) for f in sys.argv[1:3])
streamed = open(sys.argv[3], encoding='utf-8').read()
stop = sys.argv[4]
expected = full['text'][:full['text'].index(stop)]
assert cut['text'] == expected and cut['stop_reason'] == 'stop_string', (cut, expected)
assert streamed == expected + '\n', (streamed, expected)
" "$tmp/gen24" "$tmp/gen_stop" "$tmp/gen_stream" "$stop"; then
  pass "generate --stop: text cut before the stop string, streamed and --json"
else
  fail "generate --stop '$stop': $(cat "$tmp/gen_stop" "$tmp/gen_stream")"
fi
expect_error "generate --stop ''" "stop string 1 is empty" "$ember" generate "$tmp/llama" --prompt hi --stop ""

# Penalties reach the sampler: greedy "A fool" on the default model falls into a
# loop; a repetition penalty must change the text and repeat fewer tokens.
default_model="$root/models/default"
if "$ember" generate "$default_model" --prompt "A fool" --greedy --max-new-tokens 40 --json >"$tmp/loop" 2>&1 &&
   "$ember" generate "$default_model" --prompt "A fool" --greedy --max-new-tokens 40 --repetition-penalty 1.5 \
     --json >"$tmp/no_loop" 2>&1 &&
   python3 -c "
import json, sys
a, b = (json.load(open(f))['generated_tokens'] for f in sys.argv[1:3])
assert a != b and len(set(b)) / len(b) > len(set(a)) / len(a), (a, b)
" "$tmp/loop" "$tmp/no_loop"; then
  pass "generate --repetition-penalty"
else
  fail "generate --repetition-penalty: $(cat "$tmp/loop" "$tmp/no_loop")"
fi

# Speculative decoding gives plain greedy's tokens: prompt lookup (which the loop
# feeds) and the default model as its own draft.
if "$ember" generate "$default_model" --prompt "A fool" --greedy --max-new-tokens 40 --json --prompt-lookup \
     >"$tmp/lookup" 2>&1 &&
   "$ember" generate "$default_model" --prompt "A fool" --greedy --max-new-tokens 40 --json \
     --draft-model "$default_model" --draft-tokens 3 >"$tmp/drafted" 2>&1 &&
   python3 -c "
import json, sys
plain, lookup, drafted = (json.load(open(f)) for f in sys.argv[1:4])
assert lookup['generated_tokens'] == plain['generated_tokens'] == drafted['generated_tokens'], (plain, lookup, drafted)
assert lookup['speculation']['method'] == 'prompt_lookup' and lookup['speculation']['accepted'] > 0, lookup
assert drafted['speculation']['method'] == 'draft_model' and drafted['speculation']['draft_tokens'] == 3, drafted
" "$tmp/loop" "$tmp/lookup" "$tmp/drafted"; then
  pass "generate --prompt-lookup / --draft-model: plain greedy's tokens"
else
  fail "generate speculative: $(cat "$tmp/lookup" "$tmp/drafted")"
fi
expect_error "generate --draft-model with another tokenizer" "draft model .*tokenizer" \
  "$ember" generate "$default_model" --prompt hi --draft-model "$tmp/llama"
expect_error "generate --draft-model that is not a folder" "draft-model" \
  "$ember" generate "$default_model" --prompt hi --draft-model "$tmp/no_such"
expect_error "generate --prompt-lookup with --draft-model" "excludes" \
  "$ember" generate "$default_model" --prompt hi --prompt-lookup --draft-model "$default_model"
expect_error "generate --draft-tokens 0" "draft-tokens" "$ember" generate "$default_model" --prompt hi --prompt-lookup --draft-tokens 0
expect_error "generate --draft-tokens alone" "draft-tokens needs" "$ember" generate "$default_model" --prompt hi --draft-tokens 2
expect_error "generate --lookup-ngram alone" "requires --prompt-lookup|prompt-lookup" "$ember" generate "$default_model" --prompt hi --lookup-ngram 2
expect_error "generate --temperature nan" "not a finite number" "$ember" generate "$default_model" --prompt hi --temperature nan
expect_error "generate --logprobs without --json" "logprobs needs --json" "$ember" generate "$default_model" --prompt hi --logprobs 2
expect_error "generate --logprobs 21" "logprobs" "$ember" generate "$default_model" --prompt hi --json --logprobs 21
expect_error "generate --num-return-sequences above --num-beams" "num-return-sequences 3 exceeds --num-beams 2" \
  "$ember" generate "$default_model" --prompt hi --num-beams 2 --num-return-sequences 3
expect_error "generate --length-penalty without --num-beams" "requires --num-beams" \
  "$ember" generate "$default_model" --prompt hi --length-penalty 2
expect_error "generate --num-beams with --temperature" "excludes" \
  "$ember" generate "$default_model" --prompt hi --num-beams 2 --temperature 0.5
expect_error "generate --num-beams 0" "num-beams" "$ember" generate "$default_model" --prompt hi --num-beams 0

# bench: both tests, and the peak resident memory against weights + KV cache.
if "$ember" bench "$tmp/llama" -p 16 -n 8 -r 2 --json >"$tmp/bench" 2>&1 &&
   python3 -c "
import json, sys
b = json.load(open(sys.argv[1]))
assert [r['test'] for r in b['results']] == ['pp16', 'tg8'] and all(r['avg_ts'] > 0 for r in b['results']), b
m = b['memory']
assert m['kv_cache_tokens'] == 16 and m['weight_bytes'] > 2000000 and m['peak_rss_bytes'] > m['weight_bytes'], m
" "$tmp/bench"; then
  pass "bench --json: pp16, tg8, memory"
else
  fail "bench: $(cat "$tmp/bench")"
fi
expect_error "bench --max-context too small" "below the 16 tokens" "$ember" bench "$tmp/llama" -p 16 -n 4 --max-context 8
if "$ember" bench "$tmp/llama" -p 0 -n 7 -r 1 --draft-tokens 3 --json >"$tmp/bench_k" 2>&1 &&
   python3 -c "
import json, sys
b = json.load(open(sys.argv[1]))
assert [r['test'] for r in b['results']] == ['tg7', 'tg7+k3'] and all(r['avg_ts'] > 0 for r in b['results']), b
" "$tmp/bench_k"; then
  pass "bench --draft-tokens: tg7+k3"
else
  fail "bench --draft-tokens: $(cat "$tmp/bench_k")"
fi
expect_error "bench --draft-tokens 0" "draft-tokens" "$ember" bench "$tmp/llama" -p 0 -n 4 --draft-tokens 0

# Bad model folders and requests: each a clear error naming what is wrong.
long_prompt="$(printf 'word %.0s' $(seq 1 40))"
expect_error "prompt longer than --max-context" "prompt of [0-9]+ tokens leaves no room in the context of 16 tokens" \
  "$ember" generate "$tmp/llama" --prompt "$long_prompt" --max-context 16
expect_error "--max-context above context_length" "max length 5000 exceeds the model's context_length 4096" \
  "$ember" generate "$tmp/llama" --prompt hi --max-context 5000
broken() {  # broken NAME: a fresh copy of the fixture in $tmp/NAME
  rm -rf "$tmp/$1" && cp -r "$tmp/llama" "$tmp/$1"
}
broken no_config && rm "$tmp/no_config/genai_config.json"
expect_error "missing genai_config.json" "no_config: neither genai_config.json .* nor config.json" "$ember" generate "$tmp/no_config" --prompt hi
broken no_model && rm "$tmp/no_model/model.onnx"
expect_error "missing model.onnx" "no_model/model.onnx" "$ember" generate "$tmp/no_model" --prompt hi
broken no_data && rm "$tmp/no_data/model.onnx.data"
expect_error "missing external data" "model.onnx.data" "$ember" generate "$tmp/no_data" --prompt hi
broken short_data && truncate -s 100000 "$tmp/short_data/model.onnx.data"
expect_error "truncated external data" "external data bytes .* lie outside 'model.onnx.data'" \
  "$ember" generate "$tmp/short_data" --prompt hi
broken junk_model && echo "not a model" >"$tmp/junk_model/model.onnx"
expect_error "model.onnx that is not ONNX" "junk_model/model.onnx" "$ember" generate "$tmp/junk_model" --prompt hi
broken no_tokenizer && rm "$tmp/no_tokenizer/tokenizer.json"
expect_error "missing tokenizer.json" "no_tokenizer/tokenizer.json" "$ember" generate "$tmp/no_tokenizer" --prompt hi
broken bad_type && sed -i 's/"type": "llama"/"type": "resnet"/' "$tmp/bad_type/genai_config.json"
expect_error "unknown model type" "unknown model type 'resnet'" "$ember" generate "$tmp/bad_type" --prompt hi
broken bad_tokenizer && head -c 3000 "$tmp/llama/tokenizer.json" >"$tmp/bad_tokenizer/tokenizer.json"
expect_error "truncated tokenizer.json" "bad_tokenizer/tokenizer.json" "$ember" generate "$tmp/bad_tokenizer" --prompt hi
broken wordpiece && python3 -c "
import json, sys
t = json.load(open(sys.argv[1])); t['model']['type'] = 'WordPiece'; json.dump(t, open(sys.argv[1], 'w'))
" "$tmp/wordpiece/tokenizer.json"
expect_error "unsupported tokenizer model" "WordPiece" "$ember" generate "$tmp/wordpiece" --prompt hi
broken bad_template && python3 -c "
import json, sys
c = json.load(open(sys.argv[1])); c['chat_template'] = '{% for m in messages %}{{ m.content }}'; json.dump(c, open(sys.argv[1], 'w'))
" "$tmp/bad_template/tokenizer_config.json"
expect_error "malformed chat template" "bad_template/tokenizer_config.json: chat_template: .*endfor" sh -c "echo hi | '$ember' chat '$tmp/bad_template'"

# chat: the same fixture with Qwen3's chat template; the second turn reuses the first turn's KV prefix.
expect_error "chat without a chat_template" "chat_template" "$ember" chat "$tmp/llama"
cp -r "$tmp/llama" "$tmp/chat_model"
python3 -c "
import json, sys
config = json.load(open(sys.argv[1]))
config['chat_template'] = json.load(open(sys.argv[2]))['chat_template']
json.dump(config, open(sys.argv[1], 'w'))
" "$tmp/chat_model/tokenizer_config.json" "$tok/qwen3/tokenizer_config.json"
if printf 'hello\nhow are you\n/stats\n/exit\n' | "$ember" chat "$tmp/chat_model" --max-new-tokens 4 >"$tmp/chat_out" 2>&1 &&
   [ "$(grep -c 'tokens in' "$tmp/chat_out")" = 3 ] &&
   grep -qE '\[[0-9]+ tokens in \(([0-9]+) new\), 4 out' "$tmp/chat_out" &&
   python3 -c "
import re, sys
turns = re.findall(r'\[(\d+) tokens in \((\d+) new\)', open(sys.argv[1], errors='replace').read())
assert int(turns[1][1]) < int(turns[1][0]), turns  # the second turn prefills only its new tokens
" "$tmp/chat_out"; then
  pass "chat: two turns, prefix reuse, /stats"
else
  fail "chat: $(cat "$tmp/chat_out")"
fi

echo "$failures failed"
[ "$failures" -eq 0 ]
