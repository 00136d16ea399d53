"""onnxruntime-genai's own example scripts (tests/python/og_examples: its examples/python, the
import changed to ember.genai) against the same scripts under onnxruntime_genai, greedy
(top_k 1), on models/default and on a real builder export: the printed text must be the same."""
import os
import re
import subprocess
import sys

import pytest

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "og_examples")
# Lines whose numbers are timings.
TIMINGS = re.compile(r"^Tokens: \d+, Time: .*$", re.MULTILINE)


@pytest.fixture(scope="module")
def og_examples(tmp_path_factory):
    """The same scripts with onnxruntime_genai's import back."""
    out = tmp_path_factory.mktemp("og_examples")
    for name in os.listdir(EXAMPLES):
        if name.endswith(".py"):
            with open(os.path.join(EXAMPLES, name)) as f:
                text = f.read()
            assert "import ember.genai as og\n" in text
            (out / name).write_text(text.replace("import ember.genai as og\n", "import onnxruntime_genai as og\n"))
    return str(out)


def run(folder, script, args, stdin=None):
    result = subprocess.run([sys.executable, os.path.join(folder, script), *args], input=stdin, capture_output=True,
                            text=True, cwd=folder, timeout=300)
    assert result.returncode == 0, result.stderr
    return TIMINGS.sub("Tokens: N, Time: T", result.stdout)


CASES = {
    "generate": ("model-generate.py", ["-pr", "The first 4 digits of pi are", "-k", "1"], None),
    "generate-interactive": ("model-generate.py", ["-k", "1", "-l", "40"], "Once upon a time\n"),
    "qa": ("model-qa.py", ["--non_interactive", "-k", "1", "-up", "Love is"], None),
    # At 56 tokens "The computer"'s chat prompt meets a near-tie in models/default (int4 weights, int8
    # activations in both runtimes): onnxruntime-genai's top two logits 284 and 261 are 0.0012 x RMS apart and
    # Ember's come out the other way round (genai_greedy.py's allowance); 50 stays before it.
    "qa-interactive": ("model-qa.py", ["-k", "1", "-l", "50"], "The computer\nQ: Why did the chicken cross\nquit()\n"),
}


# On the builder export (random weights, a 151,936-token vocabulary, int4 weights and int8 activations) the
# scripts' default max_length is the context, 2,048 tokens, and over hundreds of tokens greedy search meets a
# near-tie that the two runtimes break differently (as real_exports.py's check, which compares 64 new tokens);
# the cases without a bound get one there.
EXPORT_MAX_LENGTH = ["-l", "80"]


def same_text_but_og_truncation(ours, expected):
    """Equal, line by line, except where onnxruntime-genai's Tokenizer.decode met bytes that are not UTF-8: it
    writes one U+FFFD and drops the rest of the text, where Ember (as Hugging Face's tokenizers) writes U+FFFD
    and goes on. Such an expected line ends with U+FFFD and starts our line."""
    ours_lines, expected_lines = ours.split("\n"), expected.split("\n")
    if len(ours_lines) != len(expected_lines):
        return False
    return all(o == e or (e.endswith("\ufffd") and o.startswith(e)) for o, e in zip(ours_lines, expected_lines))


@pytest.mark.parametrize("folder", ["default_model_dir", "builder_export_dir"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_example_prints_what_onnxruntime_genai_prints(og_examples, request, folder, case):
    script, args, stdin = CASES[case]
    if folder == "builder_export_dir" and "-l" not in args:
        args = [*args, *EXPORT_MAX_LENGTH]
    args = ["-m", request.getfixturevalue(folder), *args]
    ours = run(EXAMPLES, script, args, stdin)
    expected = run(og_examples, script, args, stdin)
    assert same_text_but_og_truncation(ours, expected), f"ours:\n{ours}\nonnxruntime-genai:\n{expected}"
    assert len(ours.split()) > 8, ours  # generated text, not only the scripts' own lines
