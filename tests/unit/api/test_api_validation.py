"""Offline validation: the admission cases of lws_cases.yaml, and the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from lws_operator.api import validate
from lws_operator.cli import main
from tests.unit.api.lws_testdata import Case, base_object, load_cases

INVALID, VALID = load_cases()
EXAMPLES = sorted((Path(__file__).parents[3] / "examples").glob("*.yaml"))


def test_the_table_is_big_enough() -> None:
    assert len({case.id.removesuffix("-update") for case in INVALID}) >= 30
    assert sum(case.old is not None for case in INVALID) >= 30


@pytest.mark.parametrize("case", INVALID, ids=str)
def test_invalid(case: Case) -> None:
    errors = validate(case.obj, case.old)
    assert any(e.path == case.path and str(case.message) in e.message for e in errors), errors


@pytest.mark.parametrize("case", VALID, ids=str)
def test_valid(case: Case) -> None:
    assert validate(case.obj, case.old) == []


def test_errors_of_every_layer_are_reported_together() -> None:
    obj = base_object("2bad")
    obj["spec"]["startupPolicy"] = "Eager"  # schema layer
    obj["spec"]["leaderWorkerTemplate"]["size"] = 0  # CRD rule
    obj["metadata"]["annotations"] = {  # admission policy
        "leaderworkerset.sigs.k8s.io/exclusive-topology": ""
    }
    paths = {e.path for e in validate(obj)}
    assert {
        "spec.startupPolicy",
        "spec.leaderWorkerTemplate.size",
        "metadata.name",
        "metadata.annotations[leaderworkerset.sigs.k8s.io/exclusive-topology]",
    } <= paths


def test_unchanged_invalid_values_are_ratcheted() -> None:
    """An object that an older validator accepted stays editable as long as the invalid value
    is left alone (CRD validation ratcheting)."""
    old = base_object("legacy")
    old["spec"]["leaderWorkerTemplate"]["size"] = 0
    new = base_object("legacy")
    new["spec"]["leaderWorkerTemplate"]["size"] = 0
    new["spec"]["replicas"] = 3
    assert validate(new, old) == []
    assert validate(new) != []


def test_generate_name_is_checked_with_the_suffix_the_server_adds() -> None:
    obj = base_object("x")
    del obj["metadata"]["name"]
    obj["metadata"]["generateName"] = "a" * 45 + "-"  # + 5 characters = 51 > 50
    assert [e.path for e in validate(obj)] == ["metadata.name"]
    obj["metadata"]["generateName"] = "a" * 44 + "-"
    assert validate(obj) == []


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_examples_are_valid(example: Path) -> None:
    assert main(["validate", str(example)]) == 0


def test_cli_reports_one_line_per_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "x.yaml"
    bad.write_text(
        "apiVersion: leaderworkerset.x-k8s.io/v1\n"
        "kind: LeaderWorkerSet\n"
        "metadata: {name: x}\n"
        "spec:\n"
        "  leaderWorkerTemplate:\n"
        "    size: 0\n"
        "    workerTemplate: {spec: {containers: [{name: c, image: i}], contianers: []}}\n"
    )
    assert main(["validate", str(bad)]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"{bad}: spec.leaderWorkerTemplate.workerTemplate.spec.contianers: unknown field",
        f"{bad}: spec.leaderWorkerTemplate.size: must be >= 1",
    ]


def test_cli_multi_document(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "all.yaml"
    path.write_text(
        "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n---\n"
        "apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\nmetadata: {name: y}\n"
        "spec: {replicas: -1, leaderWorkerTemplate: {workerTemplate: {spec: {containers: []}}}}\n"
    )
    assert main(["validate", str(path)]) == 1
    assert capsys.readouterr().out == f"{path}[1]: spec.replicas: must be >= 0\n"


def test_cli_unreadable_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "broken.yaml"
    bad.write_text("a: [\n")
    assert main(["validate", str(bad), str(tmp_path / "missing.yaml")]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{bad}: ") and out[1].startswith(f"{tmp_path / 'missing.yaml'}: ")
