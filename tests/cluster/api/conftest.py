"""Fixtures for the LeaderWorkerSet API tests: a namespace shared by a module's tests. The
CRD and its admission policy come from the `lws_api` fixture of tests/cluster/conftest.py."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator

import pytest

from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path


@pytest.fixture(scope="module")
async def api_namespace(kube: Kube, lws_api: None) -> AsyncIterator[str]:
    """A namespace for LeaderWorkerSet objects of one test module (they need no pods, so
    nothing waits for the namespace's ServiceAccount)."""
    name = f"lws-api-{secrets.token_hex(4)}"
    await kube.create(
        resource_path("v1", "namespaces"),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
    )
    try:
        yield name
    finally:
        await kube.delete(resource_path("v1", "namespaces", name=name), propagation="Background")
