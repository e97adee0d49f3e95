"""Applying YAML manifests like ``kubectl apply --server-side``: any kind, found through API
discovery; CRDs are waited on until their objects can be listed."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from lws_operator.kube.client import ApiError, Kube
from lws_operator.kube.paths import resource_path
from lws_testbed.wait import wait_for_objects


def load_documents(*paths: Path) -> list[dict[str, Any]]:
    docs = []
    for path in paths:
        docs += [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]
    return docs


class Applier:
    def __init__(self, kube: Kube, field_manager: str = "lws-operator-install") -> None:
        self.kube = kube
        self.field_manager = field_manager
        self._discovery: dict[str, dict[str, tuple[str, bool]]] = {}

    async def resource_of(
        self, api_version: str, kind: str, *, timeout: float = 10
    ) -> tuple[str, bool]:
        """(plural, namespaced) of ``kind`` in ``api_version``. Discovery lags a CRD that was
        just Established (its group answers 404 for a moment, or lacks the kind), and no watch
        tells when it catches up: it is asked again, bounded by ``timeout``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            if api_version not in self._discovery:
                base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
                try:
                    listing = await self.kube.get(base)
                except ApiError as e:
                    if not e.not_found or loop.time() > deadline:
                        raise
                    await asyncio.sleep(0.2)
                    continue
                self._discovery[api_version] = {
                    r["kind"]: (r["name"], bool(r.get("namespaced")))
                    for r in listing.get("resources", [])
                    if "/" not in r["name"]
                }
            if kind in self._discovery[api_version]:
                return self._discovery[api_version][kind]
            if loop.time() > deadline:
                raise ValueError(f"the server has no kind {kind} in {api_version}")
            del self._discovery[api_version]
            await asyncio.sleep(0.2)

    async def path_of(self, doc: dict[str, Any], namespace: str | None) -> str:
        plural, namespaced = await self.resource_of(doc["apiVersion"], doc["kind"])
        ns = (doc.get("metadata") or {}).get("namespace") or namespace or "default"
        return resource_path(
            doc["apiVersion"],
            plural,
            namespace=ns if namespaced else None,
            name=doc["metadata"]["name"],
        )

    async def apply(self, doc: dict[str, Any], *, namespace: str | None = None) -> dict[str, Any]:
        path = await self.path_of(doc, namespace)
        applied = await self.kube.apply(path, doc, field_manager=self.field_manager)
        if doc["kind"] == "CustomResourceDefinition":
            await wait_served(self.kube, doc["metadata"]["name"])
            self._discovery.clear()  # the new kind is now discoverable
        return applied

    async def apply_all(
        self, docs: Iterable[dict[str, Any]], *, namespace: str | None = None
    ) -> list[dict[str, Any]]:
        return [await self.apply(d, namespace=namespace) for d in docs]


async def wait_established(kube: Kube, crd_name: str, timeout: float = 60) -> None:
    def established(objs: dict[str, dict[str, Any]]) -> bool:
        crd = objs.get(crd_name) or {}
        return any(
            cond.get("type") == "Established" and cond.get("status") == "True"
            for cond in (crd.get("status") or {}).get("conditions") or []
        )

    await wait_for_objects(
        kube,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        established,
        timeout=timeout,
        what=f"CRD {crd_name} Established",
        field_selector=f"metadata.name={crd_name}",
    )


async def wait_served(kube: Kube, crd_name: str, timeout: float = 60) -> None:
    """Wait until the CRD is Established and its objects can be listed. Established is not
    enough: the first request for a new resource starts its watch cache, and until that is
    filled lists and watches are refused (429 "storage is (re)initializing", which kopf logs
    as an ERROR while it retries)."""
    await wait_established(kube, crd_name, timeout)
    crd = await kube.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd_name}")
    spec = crd["spec"]
    for version in spec["versions"]:
        if version.get("served"):
            await wait_for_objects(
                kube,
                resource_path(f"{spec['group']}/{version['name']}", spec["names"]["plural"]),
                lambda _objs: True,  # listed: the watch cache is ready
                timeout=timeout,
                what=f"the {version['name']} objects of CRD {crd_name} to be listable",
            )


async def create_namespace(kube: Kube, name: str, timeout: float = 60) -> None:
    """Create namespace ``name`` and wait until it is ready for pods: the ServiceAccount
    admission refuses pods until the controller manager has made its default ServiceAccount."""
    await kube.create(
        resource_path("v1", "namespaces"),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
    )
    await wait_for_objects(
        kube,
        resource_path("v1", "serviceaccounts", namespace=name),
        lambda objs: f"{name}/default" in objs,
        timeout=timeout,
        what=f"the default ServiceAccount of namespace {name}",
    )


async def replace_whole(kube: Kube, path: str, body: dict[str, Any], attempts: int = 5) -> None:
    """Create ``body`` at ``path``, or replace what is there as a whole (for a webhook
    configuration, webhooks of an earlier owner must not survive a merge). Retries conflicts."""
    collection = path.rsplit("/", 1)[0]
    for _ in range(attempts):
        current = await kube.get_or_none(path)
        try:
            if current is None:
                await kube.create(collection, body)
            else:
                rv = current["metadata"]["resourceVersion"]
                meta = {**body["metadata"], "resourceVersion": rv}
                await kube.replace(path, {**body, "metadata": meta})
            return
        except ApiError as e:
            if e.status != 409:
                raise
    raise RuntimeError(f"could not write {path}: {attempts} conflicts in a row")
