"""The operator's view of DisaggregatedSets, keyed by (namespace, DisaggregatedSet name): the
kopf indexes of DisaggregatedSets and role scalers, and the informers of the LeaderWorkerSets
and Services labelled ``disaggregatedset.x-k8s.io/name`` (the filter runs on the server), kept
as projections with what the planners read (plan/ds/reconcile.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lws_operator.api import ds_constants as c
from lws_operator.controller.runtime.informer import Informer, Key
from lws_operator.plan.keys import OwnerKey
from lws_operator.plan.meta import labels_of, meta_of, namespace_of

# The kopf indexes (ids): the sets by (namespace, name); scalers by (namespace, set label)
# and by (namespace, name) (a scaler in the way of one to create has no label of ours).
DS_INDEX = "ds_objects"
SCALERS_INDEX = "ds_scalers"
SCALER_NAMES_INDEX = "ds_scaler_names"
LWS_STORE = "ds_lws"
SERVICES_STORE = "ds_services"


def ds_key(obj: Mapping[str, Any]) -> Key | None:
    """(namespace, DisaggregatedSet name) from the ``disaggregatedset.x-k8s.io/name`` label."""
    owner = labels_of(obj).get(c.SET_NAME_LABEL)
    return OwnerKey(namespace_of(obj), str(owner)) if owner else None


def _meta(meta: Mapping[str, Any]) -> dict[str, Any]:
    keep = (
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
    )
    out = {k: meta[k] for k in keep if k in meta}
    out["labels"] = dict(meta.get("labels") or {})
    out["annotations"] = dict(meta.get("annotations") or {})
    out["ownerReferences"] = [dict(r) for r in meta.get("ownerReferences") or []]
    return out


def project_child(body: Mapping[str, Any]) -> dict[str, Any]:
    """A child LeaderWorkerSet: identity, labels, annotations, owners, replicas and the group
    counts of its status."""
    spec, status = body.get("spec") or {}, body.get("status") or {}
    return {
        "metadata": _meta(meta_of(body)),
        "spec": {k: spec[k] for k in ("replicas",) if k in spec},
        "status": {
            k: status[k] for k in ("replicas", "readyReplicas", "updatedReplicas") if k in status
        },
    }


def project_service(body: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "metadata": _meta(meta_of(body)),
        "spec": {"selector": dict((body.get("spec") or {}).get("selector") or {})},
    }


@dataclass
class DsObserved:
    ds: dict[str, Any] | None
    lws: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    services: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    scalers: Mapping[str, dict[str, Any]] = field(default_factory=dict)


class DsCache:
    def __init__(self) -> None:
        self.indexes: dict[str, Mapping[Key, Iterable[Any]]] = {}
        self.informers: dict[str, list[Informer]] = {}
        self.indexed = asyncio.Event()
        """Set at the first kopf handler call: kopf calls handlers only once every index is
        filled, so from then on a scaler missing from the index does not exist."""

    def bind(self, indexes: Mapping[str, Any]) -> None:
        self.indexes = {k: v for k, v in indexes.items() if k.startswith("ds_")}

    def add_informer(self, name: str, informer: Informer) -> None:
        self.informers.setdefault(name, []).append(informer)

    async def wait_ready(self) -> None:
        for informer in (i for group in self.informers.values() for i in group):
            await informer.synced.wait()
        await self.indexed.wait()

    def _get(self, name: str, key: Key) -> dict[str, dict[str, Any]]:
        merged: dict[str, dict[str, Any]] = {}
        for informer in self.informers.get(name, []):
            merged.update(informer.get(key))
        return merged

    def _index(self, name: str, key: Key) -> list[dict[str, Any]]:
        return [dict(v) for v in self.indexes.get(name, {}).get(key, ())]

    def observe(self, key: Key) -> DsObserved:
        found = self._index(DS_INDEX, key)
        ds = found[0] if found else None
        scalers = {str(s["metadata"]["name"]): s for s in self._index(SCALERS_INDEX, key)}
        for role in ((ds or {}).get("spec") or {}).get("roles") or []:
            name = f"{key[1]}-{role.get('name')}"
            for scaler in self._index(SCALER_NAMES_INDEX, OwnerKey(key[0], name)):
                scalers.setdefault(name, scaler)
        return DsObserved(
            ds=ds,
            lws=self._get(LWS_STORE, key),
            services=self._get(SERVICES_STORE, key),
            scalers=scalers,
        )
