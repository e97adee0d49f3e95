"""Fixtures for the LeaderWorkerSet API tests: a namespace shared by a module's tests. The
CRD and its admission policy come from the `lws_api` fixture of tests/cluster/conftest.py, and
the storing of Go's zero values from the operator's LeaderWorkerSet webhook (the `operator`
fixture)."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator

import pytest

from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_testbed.lws_api import wait_zero_values
from lws_testbed.operator_process import OperatorProcess


@pytest.fixture(scope="module")
async def api_namespace(
    kube: Kube, lws_api: None, operator: OperatorProcess | None
) -> AsyncIterator[str]:
    """A namespace for LeaderWorkerSet objects of one test module (they need no pods, so
    nothing waits for the namespace's ServiceAccount), with Go's zero values stored as
    upstream stores them."""
    await wait_zero_values(kube)
    name = f"lws-api-{secrets.token_hex(4)}"
    await kube.create(
        resource_path("v1", "namespaces"),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
    )
    try:
        yield name
    finally:
        await kube.delete(resource_path("v1", "namespaces", name=name), propagation="Background")
