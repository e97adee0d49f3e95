"""Scrapers of the operator's metrics: two ServiceAccounts with TokenRequest tokens, one bound
to (a copy of) the install's ``lws-metrics-reader`` ClusterRole and one not."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from tests.cluster.deploy.helpers import (
    find,
    kustomize,
    service_account_token,
    wait_namespace_gone,
)

RBAC = "rbac.authorization.k8s.io/v1"


@dataclass(frozen=True)
class Scrapers:
    namespace: str
    reader: str  # token of ServiceAccount <namespace>/reader, bound to lws-metrics-reader
    stranger: str  # token of <namespace>/stranger, bound to nothing
    binding: dict[str, Any]  # the reader's ClusterRoleBinding

    async def unbind_reader(self, kube: Kube) -> None:
        await kube.delete(self._binding_path)

    async def bind_reader(self, kube: Kube) -> None:
        await kube.create(resource_path(RBAC, "clusterrolebindings"), self.binding)

    @property
    def _binding_path(self) -> str:
        return resource_path(RBAC, "clusterrolebindings", name=self.binding["metadata"]["name"])


@pytest.fixture(scope="module")
async def scrapers(kube: Kube) -> AsyncIterator[Scrapers]:
    suffix = secrets.token_hex(3)
    ns, role = f"t-scrape-{suffix}", f"lws-metrics-reader-{suffix}"
    # The install's ClusterRole, under a name of this test's (a deployed operator may run).
    reader_role = find(kustomize("kind"), "ClusterRole", "lws-metrics-reader")
    await kube.create(
        resource_path("v1", "namespaces"),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
    )
    binding = {
        "apiVersion": RBAC,
        "kind": "ClusterRoleBinding",
        "metadata": {"name": role},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": ns}],
    }
    try:
        for sa in ("reader", "stranger"):
            await kube.create(
                resource_path("v1", "serviceaccounts", namespace=ns),
                {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa}},
            )
        await kube.create(
            resource_path(RBAC, "clusterroles"),
            {**reader_role, "metadata": {"name": role}},
        )
        found = Scrapers(
            ns,
            await service_account_token(kube, ns, "reader"),
            await service_account_token(kube, ns, "stranger"),
            binding,
        )
        await found.bind_reader(kube)
        yield found
    finally:
        await kube.delete(resource_path(RBAC, "clusterrolebindings", name=role))
        await kube.delete(resource_path(RBAC, "clusterroles", name=role))
        await kube.delete(resource_path("v1", "namespaces", name=ns))
        await wait_namespace_gone(kube, ns)
