"""LWS_OPERATOR_SOURCE as the README shows it: the test bed runs the operator of a tree
unpacked with ``git archive``, and that operator reconciles (how a regression test is shown to
fail before its fix, and one tree is benchmarked against another)."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from lws_operator.kube.client import Kube
from lws_testbed.local import LocalCluster
from lws_testbed.operator_process import start_operator
from lws_testbed.source_operator import SOURCE_ENV
from tests.cluster.controller.helpers import create_available, lws_body

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """This checkout's committed operator, unpacked as the README shows."""
    tree = tmp_path / "tree"
    tree.mkdir()
    archive = subprocess.run(
        ["git", "archive", "HEAD", "lws_operator"], cwd=REPO, capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    return tree


async def test_the_operator_of_an_archived_tree_runs_and_reconciles(
    tree: Path,
    kube: Kube,
    local_cluster: LocalCluster | None,
    lws_namespace: str,
    pause_session_operator: Callable[[], contextlib.AbstractAsyncContextManager[None]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if local_cluster is None:
        pytest.skip("runs an operator of its own")
    log = tmp_path / "operator.log"
    async with pause_session_operator():
        monkeypatch.setenv(SOURCE_ENV, str(tree))
        op = await start_operator(kube, local_cluster.kubeconfig("lws-operator"), log)
        monkeypatch.delenv(SOURCE_ENV)  # the session's operator comes back as itself
        try:
            await create_available(kube, lws_namespace, lws_body("src", replicas=1, size=2))
            op.check_alive()
        finally:
            await op.stop()
    first = log.read_text(errors="replace").splitlines()[0]
    assert first == f"lws_operator from {tree / 'lws_operator'}", first
