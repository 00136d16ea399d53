"""The installed package type-checks with mypy: its annotated modules against the
extension's generated stubs (_ember.pyi, nanobind's stubgen at build time)."""
import os
import shutil
import subprocess
import sys

import ember


def test_package_type_checks(tmp_path):
    package = os.path.dirname(ember.__file__)
    assert os.path.isfile(os.path.join(package, "_ember.pyi")), "the extension's stubs are not installed"
    assert os.path.isfile(os.path.join(package, "py.typed"))
    # A copy outside site-packages: mypy refuses to check a package among its neighbours' modules.
    shutil.copytree(package, tmp_path / "ember", ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    r = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "-p", "ember"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
