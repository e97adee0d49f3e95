"""A cache filled from the cluster as it is now, for running the operator's reconcile in this
process on chosen state (a stale LeaderWorkerSet in a test, a frozen fleet in a benchmark)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lws_operator.controller.lws.cache import Cache
from lws_operator.controller.operator import _children, node_informer
from lws_operator.controller.runtime.informer import Informer, Key
from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_operator.plan.lws.gang import GangApi


async def cache_of(
    kube: Kube,
    namespace: str,
    lws: Mapping[Key, dict[str, Any]],
    *,
    gang_api: GangApi | None = None,
) -> Cache:
    """A cache holding the LeaderWorkerSets given (by (namespace, name)) as given, and every
    other object of ``namespace``, and the nodes, as they are now; it follows no watch."""
    cache = Cache()
    cache.bind({"lws_objects": {key: [body] for key, body in lws.items()}})

    async def listed(store: str, informer: Informer) -> None:
        listing = await kube.list(informer.path, label_selector=informer.label_selector)
        informer.replace(listing["items"])
        informer.synced.set()
        cache.add_informer(store, informer)

    for store, group, version, plural, projection in _children(gang_api):
        api = f"{group}/{version}" if group else version
        path = resource_path(api, plural, namespace=namespace)
        await listed(store, Informer(kube, path, projection, lambda *_: None))

    def node_changed(kind: str, _key: Key, node: Any) -> None:
        cache.node_changed(kind, node)  # the cache's node health, as the operator's (no wake)

    await listed("nodes", node_informer(kube, node_changed))
    return cache
