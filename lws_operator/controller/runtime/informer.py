"""List and watch one resource of the objects labelled ``leaderworkerset.sigs.k8s.io/name``
(the filter runs on the server) and keep each as a small projection, by (namespace, LWS name).

This replaces kopf's indexes for the child resources (pods, StatefulSets, Services, revisions,
PodGroups): kopf runs a per-object worker, memory and handler machinery for every event, which
was most of the operator's CPU per pod event and kept whole pod bodies alive for seconds after
each. Here an event costs one projection. A re-list (start, expired watch) replaces the store,
and objects that vanished while no watch was open are reported as deleted: kopf does not."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from lws_operator.api import constants as c
from lws_operator.kube.client import ApiError, Kube
from lws_operator.plan.keys import OwnerKey
from lws_operator.plan.meta import labels_of, meta_of, name_of, namespace_of, resource_version_of

log = logging.getLogger(__name__)

Key = OwnerKey
Projection = Callable[[Mapping[str, Any]], dict[str, Any] | None]
KeyOf = Callable[[Mapping[str, Any]], Key | None]
# Called for every change of an object that projects: (event type, key, object or projection).
OnChange = Callable[[str, Key, Mapping[str, Any]], None]

DELETED = "DELETED"
_MAX_BACKOFF = 30.0


def lws_key(obj: Mapping[str, Any]) -> Key | None:
    """(namespace, LWS name) from the ``leaderworkerset.sigs.k8s.io/name`` label."""
    owner = labels_of(obj).get(c.SET_NAME_LABEL)
    return OwnerKey(namespace_of(obj), str(owner)) if owner else None


class Informer:
    def __init__(
        self,
        kube: Kube,
        path: str,
        projection: Projection,
        on_change: OnChange,
        *,
        label_selector: str | None = c.SET_NAME_LABEL,
        key_of: KeyOf = lws_key,
        watch_timeout: int = 300,
    ) -> None:
        self.kube = kube
        self.path = path
        self.projection = projection
        self.on_change = on_change
        self.label_selector = label_selector
        self.key_of = key_of
        self.watch_timeout = watch_timeout
        self.synced = asyncio.Event()
        self._items: dict[Key, dict[str, dict[str, Any]]] = {}
        self._where: dict[tuple[str, str], Key] = {}  # (namespace, name) -> its key

    def get(self, key: Key) -> Mapping[str, dict[str, Any]]:
        """The projections kept for ``key``, by object name: a read-only view, not a copy."""
        return MappingProxyType(self._items.get(key, _EMPTY))

    def __len__(self) -> int:
        return len(self._where)

    def stores(self) -> list[tuple[Key, Mapping[str, dict[str, Any]]]]:
        """Every key's projections (read-only views): for the rare look across all LWSs."""
        return [(key, MappingProxyType(items)) for key, items in self._items.items()]

    def apply(self, kind: str, obj: Mapping[str, Any]) -> None:
        """One watch event: update the store, then tell ``on_change``."""
        ns, name = namespace_of(obj), name_of(obj)
        key = self.key_of(obj)
        value = self.projection(obj) if key is not None else None
        old_key = self._drop((ns, name))
        if value is not None and key is not None and kind != DELETED:
            self._items.setdefault(key, {})[name] = value
            self._where[(ns, name)] = key
        if old_key is not None and old_key != key:
            # Its LWS label changed or went away: for the old LWS it is gone.
            self.on_change(DELETED, old_key, obj)
        if value is not None and key is not None:
            self.on_change(kind, key, obj)

    def replace(self, items: list[dict[str, Any]]) -> None:
        """A full listing: objects not in it were deleted while nothing watched."""
        seen = set()
        for obj in items:
            ident = (namespace_of(obj), name_of(obj))
            seen.add(ident)
            known = self._stored(ident)
            if known is not None and _rv(known) == _rv(obj):
                continue  # unchanged since the last watch event
            self.apply("MODIFIED" if known is not None else "ADDED", obj)
        for ident in [i for i in self._where if i not in seen]:
            gone = self._stored(ident)
            key = self._drop(ident)
            if gone is not None and key is not None:
                self.on_change(DELETED, key, gone)

    def _stored(self, ident: tuple[str, str]) -> dict[str, Any] | None:
        key = self._where.get(ident)
        return None if key is None else self._items.get(key, {}).get(ident[1])

    def _drop(self, ident: tuple[str, str]) -> Key | None:
        key = self._where.pop(ident, None)
        if key is not None:
            bucket = self._items.get(key, {})
            bucket.pop(ident[1], None)
            if not bucket:
                self._items.pop(key, None)
        return key

    async def run(self) -> None:
        """List, then watch from the listing's resourceVersion, until cancelled. An expired
        watch (410) re-lists at once; other failures re-list after a backoff (0.5 s doubling
        to 30 s). A resource that is not served counts as listed and empty."""
        backoff = 0.0
        while True:
            try:
                listing = await self.kube.list(self.path, label_selector=self.label_selector)
                self.replace(list(listing.get("items") or []))
                self.synced.set()
                backoff = 0.0
                rv = resource_version_of(listing)
                while True:  # each watch ends after watch_timeout; resume where it stopped
                    async for kind, obj in self.kube.watch(
                        self.path,
                        resource_version=rv,
                        label_selector=self.label_selector,
                        timeout_seconds=self.watch_timeout,
                    ):
                        rv = resource_version_of(obj) or rv
                        if kind != "BOOKMARK":
                            self.apply(kind, obj)
            except asyncio.CancelledError:
                raise
            except ApiError as e:
                if e.gone:
                    log.info("watch of %s expired (410); re-listing", self.path)
                else:
                    if e.not_found:
                        # Not served (a PodGroup CRD not installed): there is nothing to wait
                        # for; reconciles go on, and the resource is picked up once served.
                        self.replace([])
                        self.synced.set()
                    backoff = await self._back_off(backoff, e)
            except Exception as e:  # connection lost, API server restarting...
                backoff = await self._back_off(backoff, e)

    async def _back_off(self, backoff: float, error: Exception) -> float:
        backoff = min(max(backoff * 2, 0.5), _MAX_BACKOFF)
        log.warning("watch of %s failed (%s); re-listing in %.1fs", self.path, error, backoff)
        await asyncio.sleep(backoff)
        return backoff


_EMPTY: dict[str, dict[str, Any]] = {}


def _rv(obj: Mapping[str, Any]) -> str:
    # str() of the raw value, "None" when unset, as the comparison in replace() always had.
    return str(meta_of(obj).get("resourceVersion"))
