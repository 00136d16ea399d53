"""ember.genai against onnxruntime-genai (PyPI) itself: greedy tokens, tokenizer, chat
template, the generator's sequence semantics (EOS, max_length, lazy steps, rewind_to),
seeds and errors, on models/default and on decoder fixtures (tools/make_decoder_fixtures.py)."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnxruntime_genai as og
import pytest

import ember
import ember.genai as eg

NEW_TOKENS = 48
TEXTS = ["The computer", "Love is", "Q: Why did the chicken cross the road?", "Ünïcödé 🚀  spaces", "<|bos|>a<|eos|>b"]
# fp32 fixtures: int4 ones quantize activations to int8 in both runtimes, where near-ties may part (genai_greedy.py).
FIXTURES = [("qwen2", "gqa"), ("llama", "mha"), ("optimum", "gqa")]


@pytest.fixture(scope="session")
def fixture_dirs(tmp_path_factory, root):
    dirs = {}
    for family, attention in FIXTURES:
        out = str(tmp_path_factory.mktemp(f"{family}-{attention}"))
        subprocess.run([sys.executable, os.path.join(root, "tools/make_decoder_fixtures.py"), "--family", family,
                        "--weights", "fp32", "--attention", attention, "--out", out], check=True, capture_output=True)
        dirs[f"{family}-{attention}"] = out
    return dirs


@pytest.fixture(scope="session")
def models(default_model_dir):
    return og.Model(default_model_dir), eg.Model(default_model_dir)


def greedy(lib, model, prompt, max_length):
    params = lib.GeneratorParams(model)
    params.set_search_options(do_sample=False, max_length=max_length)
    generator = lib.Generator(model, params)
    generator.append_tokens(prompt)
    steps = []
    while not generator.is_done():
        generator.generate_next_token()
        steps.append(int(generator.get_next_tokens()[0]))
    return steps, [int(t) for t in generator.get_sequence(0)]


def test_greedy_default_model_matches_onnxruntime_genai(models):
    ref, ours = models
    ref_tok, our_tok = og.Tokenizer(ref), eg.Tokenizer(ours)
    for text in TEXTS[:4]:
        prompt = ref_tok.encode(text)
        assert our_tok.encode(text).tolist() == prompt.tolist()
        expected = greedy(og, ref, prompt, len(prompt) + NEW_TOKENS)
        assert greedy(eg, ours, prompt, len(prompt) + NEW_TOKENS) == expected, text


@pytest.mark.parametrize("name", [f"{f}-{a}" for f, a in FIXTURES])
def test_greedy_fixture_matches_onnxruntime_genai(fixture_dirs, name):
    folder = fixture_dirs[name]
    ref, ours = og.Model(folder), eg.Model(folder)
    with open(os.path.join(folder, "genai_config.json")) as f:
        vocab = json.load(f)["model"]["vocab_size"]
    prompt = np.array([(7 + 31 * i) % (vocab - 3) for i in range(12)], np.int32)
    assert greedy(eg, ours, prompt, 12 + NEW_TOKENS) == greedy(og, ref, prompt, 12 + NEW_TOKENS)
    # The text through each runtime's tokenizer as well.
    text = "the quick brown fox"
    assert eg.Tokenizer(ours).encode(text).tolist() == og.Tokenizer(ref).encode(text).tolist()


def test_eos_ends_generation_outside_the_sequence(models):
    """Prompts until one stops at EOS before max_length: the EOS is the last next token, not in the sequence."""
    ref, ours = models
    ref_tok = og.Tokenizer(ref)
    stopped = 0
    for text in ["Hello", "Once upon a time", "The", "A wise man", "Love is"]:
        prompt = ref_tok.encode(text)
        expected = greedy(og, ref, prompt, 128)
        got = greedy(eg, ours, prompt, 128)
        assert got == expected, text
        if len(got[1]) < 128:
            stopped += 1
            assert got[0][-1] in ref_tok.eos_token_ids and got[0][-1] not in got[1]
    assert stopped > 0, "no prompt reached EOS: the test checks nothing about EOS"


def test_step_semantics_match(models):
    """token_count, is_done and get_next_tokens after each call, get_logits on a pending token, max_length."""
    def trace(lib, model):
        tok = lib.Tokenizer(model)
        params = lib.GeneratorParams(model)
        params.set_search_options(do_sample=False, max_length=10)
        g = lib.Generator(model, params)
        out = [("start", g.is_done(), g.token_count())]
        g.append_tokens(tok.encode("The computer"))
        out.append(("append", g.is_done(), g.token_count(), g.get_next_tokens().tolist()))
        g.generate_next_token()
        logits = g.get_logits()
        out.append(("logits", logits.shape, logits.dtype.name, int(np.argmax(logits)), g.is_done()))
        while not g.is_done():
            g.generate_next_token()
            out.append(("step", g.token_count(), g.get_next_tokens().tolist()))
        with pytest.raises(RuntimeError, match="max_length"):
            g.generate_next_token()
        return out, g.get_sequence(0).dtype.name
    assert trace(eg, models[1]) == trace(og, models[0])


def test_rewind_to_matches(models):
    """rewind_to(n) then generate_next_token (onnxruntime-genai runs the token that was at n again), then append."""
    def run(lib, model):
        tok = lib.Tokenizer(model)
        params = lib.GeneratorParams(model)
        params.set_search_options(do_sample=False, max_length=40)
        g = lib.Generator(model, params)
        g.append_tokens(tok.encode("Once upon a time"))
        for _ in range(8):
            g.generate_next_token()
        out = [g.get_sequence(0).tolist()]
        g.rewind_to(6)
        out.append((g.get_sequence(0).tolist(), g.get_next_tokens().tolist(), g.is_done()))
        for _ in range(3):
            g.generate_next_token()
        out.append(g.get_sequence(0).tolist())
        g.rewind_to(4)
        g.append_tokens(tok.encode(" and"))
        for _ in range(5):
            g.generate_next_token()
        out.append(g.get_sequence(0).tolist())
        g.rewind_to(0)
        g.append_tokens(tok.encode("Love is"))
        g.generate_next_token()
        out.append(g.get_sequence(0).tolist())
        return out
    assert run(eg, models[1]) == run(og, models[0])


def test_tokenizer_matches(models):
    ref, ours = (og.Tokenizer(models[0]), eg.Tokenizer(models[1]))
    for text in TEXTS:
        ids = ref.encode(text)
        assert ours.encode(text).dtype == np.int32
        assert ours.encode(text).tolist() == ids.tolist()
        assert ours.decode(ids) == ref.decode(ids)
        assert ours.decode(list(ids)) == ref.decode(ids)
    # Special tokens are skipped. (Invalid UTF-8 differs: onnxruntime-genai drops the text after a
    # broken byte sequence, [5, 100, 300] -> '#\ufffd'; Ember decodes as Hugging Face does, '#\ufffd is'.)
    ids = np.array([0, 300, 1, 1500, 2, 300], np.int32)
    assert ours.decode(ids) == ref.decode(ids)
    stream_ref, stream_ours = ref.create_stream(), ours.create_stream()
    tokens = ref.encode(TEXTS[3]).tolist() + [0, 1, 2, 300]
    assert [stream_ours.decode(t) for t in tokens] == [stream_ref.decode(t) for t in tokens]
    assert (ours.bos_token_id, ours.pad_token_id, ours.eos_token_ids.tolist()) == \
        (ref.bos_token_id, ref.pad_token_id, ref.eos_token_ids.tolist())
    assert ours.to_token_id("<|eos|>") == ref.to_token_id("<|eos|>")
    assert ours.encode_batch(["Love is"]).tolist() == [ref.encode("Love is").tolist()]


def test_encode_adds_no_special_tokens(tmp_path, default_model_dir):
    """onnxruntime-genai 0.18 adds no BOS, neither for tokenizer.json's post-processor (models/default has
    one) nor for tokenizer_config.json's add_bos_token."""
    for name in os.listdir(default_model_dir):
        shutil.copy(os.path.join(default_model_dir, name), tmp_path / name)
    with open(os.path.join(default_model_dir, "tokenizer_config.json")) as f:
        config = json.load(f)
    config["add_bos_token"] = True
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config))
    ref, ours = og.Tokenizer(og.Model(str(tmp_path))), eg.Tokenizer(eg.Model(str(tmp_path)))
    assert ours.encode("Love is").tolist() == ref.encode("Love is").tolist()
    assert ours.bos_token_id not in ours.encode("Love is").tolist()


def test_apply_chat_template_matches(models):
    ref, ours = (og.Tokenizer(models[0]), eg.Tokenizer(models[1]))
    messages = json.dumps([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
                           {"role": "assistant", "content": "Hello"}, {"role": "user", "content": "Sky?"}])
    for add in (True, False):
        assert ours.apply_chat_template(messages, add_generation_prompt=add) == \
            ref.apply_chat_template(messages, add_generation_prompt=add)
    template = "{% for m in messages %}[{{ m['role'] }}]{{ m['content'] }}{% endfor %}" \
               "{% if add_generation_prompt %}[assistant]{% endif %}"
    assert ours.apply_chat_template(messages, template_str=template, tools="") == \
        ref.apply_chat_template(messages, template_str=template, tools="")
    with pytest.raises(ValueError, match="messages is not valid JSON"):
        ours.apply_chat_template("[{")


def test_seed_gives_the_same_tokens(models):
    ours = models[1]
    prompt = eg.Tokenizer(ours).encode("Once upon a time")

    def sample(seed):
        params = eg.GeneratorParams(ours)
        params.set_search_options(do_sample=True, temperature=1.5, top_k=0, top_p=1.0, random_seed=seed,
                                  max_length=len(prompt) + 32)
        g = eg.Generator(ours, params)
        g.append_tokens(prompt)
        while not g.is_done():
            g.generate_next_token()
        return g.get_sequence(0).tolist()
    assert sample(7) == sample(7)
    assert sample(7) != sample(8)


def test_search_options_and_errors(models):
    ours = models[1]
    params = eg.GeneratorParams(ours)
    assert params.get_search_options() == og.GeneratorParams(models[0]).get_search_options()
    for bad in ({"num_beams": 4}, {"batch_size": 2}, {"no_such_option": 1}):
        with pytest.raises(NotImplementedError, match=next(iter(bad))):
            params.set_search_options(**bad)
    with pytest.raises(ember.EmberError, match="context_length"):
        params.set_search_options(max_length=4096)
        eg.Generator(ours, params)
    params.set_search_options(max_length=8)
    g = eg.Generator(ours, params)
    with pytest.raises(RuntimeError, match="no prior state"):
        g.generate_next_token()
    with pytest.raises(RuntimeError, match="exceeds max length"):
        g.append_tokens(list(range(3, 12)))
    with pytest.raises(RuntimeError, match="empty"):
        g.append_tokens([])
    with pytest.raises(RuntimeError, match="vocabulary"):
        g.append_tokens([1 << 20])
    assert g.token_count() == 0
    with pytest.raises(NotImplementedError, match="batch_size"):
        g.append_tokens(np.zeros((2, 3), np.int32))
    with pytest.raises(FileNotFoundError):
        eg.Model("/nonexistent/model")
    with pytest.raises(NotImplementedError, match="cuda"):
        eg.Config(ours._model.dir).append_provider("cuda")


def test_config_overlay_sets_search_defaults(default_model_dir):
    config = eg.Config(default_model_dir)
    config.overlay(json.dumps({"search": {"max_length": 20, "do_sample": False}}))
    model = eg.Model(config)
    options = eg.GeneratorParams(model).get_search_options()
    assert options["max_length"] == 20 and options["do_sample"] is False
    with pytest.raises(NotImplementedError, match="model"):
        config.overlay(json.dumps({"model": {"context_length": 4}}))


def test_generators_share_the_model(models):
    """Two generators alive at once, stepped in turn, each keep their own KV cache."""
    ours = models[1]
    prompt = eg.Tokenizer(ours).encode("Love is")
    params = eg.GeneratorParams(ours)
    params.set_search_options(do_sample=False)
    greedy_a = eg.Generator(ours, params)
    greedy_b = eg.Generator(ours, params)
    for g in (greedy_a, greedy_b):
        g.append_tokens(prompt)
    for _ in range(4):
        greedy_a.generate_next_token()
    for _ in range(4):
        greedy_b.generate_next_token()
        greedy_a.generate_next_token()
    assert greedy_a.get_sequence(0).tolist()[:-4] == greedy_b.get_sequence(0).tolist()
    assert greedy_a.get_sequence(0).tolist() == greedy(eg, ours, prompt, len(prompt) + 8)[1]
