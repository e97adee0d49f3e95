"""The package layout's one rule: the operator never imports the test bed (or the tests and
benchmarks), so that what ships in the image and wheel is what runs in the cluster."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FORBIDDEN = ("lws_testbed", "tests", "bench")


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
    return out


def test_the_operator_imports_neither_the_test_bed_nor_the_tests() -> None:
    offenders = {
        f"{path.relative_to(REPO)}: {name}"
        for path in (REPO / "lws_operator").rglob("*.py")
        for name in _imports(path)
        if name.split(".")[0] in FORBIDDEN
    }
    assert not offenders, sorted(offenders)


def test_the_operator_wheel_holds_only_the_operator_package() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert project["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == ["lws_operator"]
    testbed = tomllib.loads((REPO / "testbed" / "pyproject.toml").read_text())
    assert testbed["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == ["lws_testbed"]
    assert not (REPO / "lws_operator" / "cluster").exists()
