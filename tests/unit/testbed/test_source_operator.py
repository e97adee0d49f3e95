"""LWS_OPERATOR_SOURCE's launcher runs the lws_operator of the directory given, not this
checkout's editable install (whose import hook would win over PYTHONPATH)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def _launch(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lws_testbed.source_operator", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_operator_of_the_directory_given_runs_with_its_arguments(tmp_path: Path) -> None:
    package = tmp_path / "lws_operator"
    package.mkdir()
    (package / "__init__.py").write_text("MARK = 'the other tree'\n")
    (package / "__main__.py").write_text(
        "import sys\nimport lws_operator\nimport lws_operator.kube\n"
        "print(lws_operator.MARK, sys.argv[1:])\n"
    )
    (package / "kube.py").write_text("")
    done = _launch(str(tmp_path), "run", "--kubeconfig", "k")
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    assert first == f"lws_operator from {package}"
    assert second == "the other tree ['run', '--kubeconfig', 'k']"


def test_a_directory_without_the_package_is_refused(tmp_path: Path) -> None:
    done = _launch(str(tmp_path), "run")
    assert done.returncode != 0
    assert "usage: python -m lws_testbed.source_operator" in done.stderr
