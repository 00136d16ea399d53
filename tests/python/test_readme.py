"""The README's Python snippets (its "## Python" section) run as printed, from the
repository root: each exits 0 and prints what its `print(...)  # TEXT` comments
say (up to a trailing "...")."""
import os
import re
import subprocess
import sys

from conftest import ROOT


def snippets():
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    section = text[text.index("\n## Python\n"):]
    section = section[:section.index("\n## ", 1)]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_readme_python_snippets_run_as_printed():
    blocks = snippets()
    assert len(blocks) >= 2, "the README's Python section has no snippets"
    for code in blocks:
        r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, f"{code}\n{r.stderr}"
        for expected in re.findall(r"^print\(.*\)\s+# (.*)$", code, re.M):
            assert expected.rstrip(".").rstrip() in r.stdout, f"expected {expected!r}, printed {r.stdout!r}"
