"""The configuration file (lws_operator/config.py) and ``lws-operator run --config``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from lws_operator import cli
from lws_operator.config import API_VERSION, ConfigError, load, parse

HEADER = {"apiVersion": API_VERSION, "kind": "Configuration"}


def test_minimal_and_full() -> None:
    assert parse(HEADER).gang_provider is None
    for provider in ("kubernetes", "volcano"):
        config = parse({**HEADER, "gangScheduling": {"provider": provider}})
        assert config.gang_provider == provider


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {**HEADER, "gangScheduling": {"providr": "volcano"}},
            "gangScheduling.providr: unknown field",
        ),
        ({**HEADER, "gangScheduling": {}}, "gangScheduling.provider: required field is missing"),
        ({**HEADER, "gangSchedulingManagement": {}}, "gangSchedulingManagement: unknown field"),
        (
            {**HEADER, "gangScheduling": {"provider": "slurm"}},
            "gangScheduling.provider: must be 'kubernetes' or 'volcano', not 'slurm'",
        ),
        ({**HEADER, "gangScheduling": "volcano"}, "gangScheduling: must be a mapping"),
        ({"kind": "Configuration"}, "apiVersion: required field is missing"),
        ({**HEADER, "kind": "Config"}, "kind: must be 'Configuration'"),
        ({"apiVersion": "config.lws.x-k8s.io/v1alpha1"}, "upstream LWS's configuration file"),
        ([1, 2], "must be a mapping"),
    ],
)
def test_errors_name_the_field(data: Any, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse(data, "f.yaml")
    assert str(e.value).startswith("f.yaml: ") and message in str(e.value)


def test_every_error_is_reported() -> None:
    with pytest.raises(ConfigError) as e:
        parse({**HEADER, "a": 1, "b": 2}, "f.yaml")
    assert str(e.value).splitlines() == ["f.yaml: a: unknown field", "f.yaml: b: unknown field"]


def test_load_reads_yaml(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        f"apiVersion: {API_VERSION}\nkind: Configuration\ngangScheduling:\n  provider: volcano\n"
    )
    assert load(path).gang_provider == "volcano"
    path.write_text("a: [")
    with pytest.raises(ConfigError, match=str(path)):
        load(path)
    with pytest.raises(ConfigError, match="No such file"):
        load(tmp_path / "missing.yaml")


def run_config(monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> Any:
    """The OperatorConfig ``lws-operator run ARGV`` would run with (nothing is started)."""
    from lws_operator.controller import operator

    seen: list[Any] = []

    async def fake_run(config: Any, stop: asyncio.Event | None = None) -> None:
        seen.append(config)

    monkeypatch.setattr(operator, "run", fake_run)
    assert cli.main(["run", *argv]) == 0
    return seen[0]


def test_cli_reads_the_file_and_flags_override_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        f"apiVersion: {API_VERSION}\nkind: Configuration\ngangScheduling:\n  provider: volcano\n"
    )
    assert run_config(monkeypatch, []).gang_provider is None
    assert run_config(monkeypatch, ["--config", str(path)]).gang_provider == "volcano"
    overridden = run_config(monkeypatch, ["--config", str(path), "--gang-provider", "kubernetes"])
    assert overridden.gang_provider == "kubernetes"
    assert run_config(monkeypatch, []).failed_group_grace == 1
    path.write_text(
        f"apiVersion: {API_VERSION}\nkind: Configuration\n"
        "groupRecreation:\n  failedGroupGraceSeconds: null\n"
    )
    assert run_config(monkeypatch, ["--config", str(path)]).failed_group_grace is None


def test_cli_rejects_an_invalid_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(f"apiVersion: {API_VERSION}\nkind: Configuration\ngang: {{}}\n")
    assert cli.main(["run", "--config", str(path)]) == 2
    assert f"lws-operator run: {path}: gang: unknown field" in capsys.readouterr().err


def test_group_recreation_settings() -> None:
    from lws_operator.plan.lws.backoff import Backoff
    from lws_operator.plan.lws.history import Limits

    assert parse(HEADER).backoff == Backoff() and parse(HEADER).history_limits == Limits()
    config = parse(
        {
            **HEADER,
            "groupRecreation": {
                "backoff": {"initialSeconds": 1, "maxSeconds": 4, "resetAfterReadySeconds": 60},
                "history": {"recreationsPerGroup": 2, "logTailLines": 10, "logTailBytes": 512},
            },
        }
    )
    assert config.backoff == Backoff(1, 4, 60)
    assert config.history_limits == Limits(
        recreations_per_group=2, log_tail_lines=10, log_tail_bytes=512
    )
    assert parse(HEADER).failed_group_grace == 1
    grace = {**HEADER, "groupRecreation": {"failedGroupGraceSeconds": 5}}
    assert parse(grace).failed_group_grace == 5
    own = {**HEADER, "groupRecreation": {"failedGroupGraceSeconds": None}}
    assert parse(own).failed_group_grace is None, "null: each pod's own"
    for bad, message in (
        ({"failedGroupGraceSeconds": 0}, "groupRecreation.failedGroupGraceSeconds: "),
        ({"backoff": {"initialSeconds": -1}}, "groupRecreation.backoff.initialSeconds: "),
        ({"history": {"maxBytes": 2_000_000}}, "groupRecreation.history.maxBytes: "),
        ({"backof": {}}, "groupRecreation.backof: unknown field"),
    ):
        with pytest.raises(ConfigError) as e:
            parse({**HEADER, "groupRecreation": bad})
        assert message in str(e.value)
