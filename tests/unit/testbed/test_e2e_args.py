"""``python -m lws_testbed.e2e test [options] -- PYTEST_ARGS``: everything after ``--`` reaches
pytest as it is, wherever the options stand (make test-version passes ``-- -m versions``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lws_testbed import e2e


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["test", "--state-dir", "s", "--kubeconfig", "k", "--", "-m", "versions", "-rs"],
            ["-m", "versions", "-rs"],
        ),
        (["test", "--state-dir", "s", "--kubeconfig", "k"], []),
        (["--state-dir", "s", "test", "--", "-k", "dns", "--", "x"], ["-k", "dns", "--", "x"]),
    ],
)
def test_everything_after_the_separator_goes_to_pytest(
    monkeypatch: pytest.MonkeyPatch, argv: list[str], expected: list[str]
) -> None:
    seen: list[tuple[Path, Path, list[str]]] = []

    def test(state: Path, kubeconfig: Path, pytest_args: list[str]) -> int:
        seen.append((state, kubeconfig, pytest_args))
        return 0

    monkeypatch.setattr(e2e, "test", test)
    assert e2e.main(argv) == 0
    ((state, _kubeconfig, pytest_args),) = seen
    assert state == Path("s") and pytest_args == expected
