"""Fixtures of the e2e tests: the local cluster of ``make e2e-up`` (a real node, the operator
deployed in it from deploy/), found through ``LWS_E2E_STATE`` (its state directory) and
``LWS_TEST_KUBECONFIG``. ``make test-e2e`` sets both; without them the tests are skipped with
that reason (they need the real-node cluster; ``make test`` runs them through test-e2e).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lws_testbed.realnode import images

# The cluster tests' fixtures (a Kube client of LWS_TEST_KUBECONFIG, fresh namespaces).
from tests.cluster.conftest import kube, kubeconfig, local_cluster, lws_api, namespace

__all__ = ["kube", "kubeconfig", "local_cluster", "lws_api", "namespace"]

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class E2E:
    """What the tests need from the running e2e cluster."""

    state_dir: Path
    kubeconfig: Path
    containerd_socket: Path
    node: str
    images: dict[str, str]  # ref -> archive

    def image(self, name: str) -> str:
        """The reference of the image named ``name`` (e.g. "workload", "lws-operator")."""
        (ref,) = [r for r in self.images if r.split(":")[0].rsplit("/", 1)[-1] == name]
        return ref


def _state() -> dict[str, Any] | None:
    state_dir = os.environ.get("LWS_E2E_STATE")
    if not state_dir or not os.environ.get("LWS_TEST_KUBECONFIG"):
        return None
    try:
        data: dict[str, Any] = json.loads((Path(state_dir) / "state.json").read_text())
    except (OSError, ValueError):
        return None
    return data if "real_node" in data else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without make test-e2e's environment, skip (saying why) instead of failing: a plain
    ``pytest`` collects these too. The host check runs once the cluster is gone."""
    if os.environ.get("LWS_E2E_STATE") and _state() is not None:
        return
    skip = pytest.mark.skip(
        reason="needs the real-node cluster of make e2e-up (LWS_E2E_STATE, LWS_TEST_KUBECONFIG):"
        " make test-e2e runs these"
    )
    for item in items:
        path = Path(str(item.fspath))
        if HERE not in path.parents:
            continue
        after = "after_teardown" in path.parts
        if not os.environ.get("LWS_E2E_STATE") or not after:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def e2e() -> E2E:
    state = _state()
    assert state is not None
    node = state["real_node"]
    return E2E(
        state_dir=Path(os.environ["LWS_E2E_STATE"]),
        kubeconfig=Path(os.environ["LWS_TEST_KUBECONFIG"]),
        containerd_socket=Path(node["containerd_socket"]),
        node=node["name"],
        images=dict(node["images"]),
    )


@pytest.fixture(scope="session")
def workload_image(e2e: E2E) -> str:
    return e2e.image("workload")


def image_archive(e2e: E2E, ref: str) -> images.Image:
    return images.Image(ref, Path(e2e.images[ref]))
