"""The headless Services that give LWS pods their DNS names (contract 3.3, 4.10).

``Shared``: one Service ``<lws>`` for every pod, owned by the LWS. ``UniquePerReplica``: one
Service per group, named like its leader pod and owned by it, so it goes away with the group.
Both publish not-ready addresses: a group's pods must find each other before they are Ready.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lws_operator.api import constants as c
from lws_operator.plan.meta import controller_ref


def _headless(
    name: str, namespace: str, lws_name: str, selector: dict[str, str], owner: dict[str, Any]
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {c.SET_NAME_LABEL: lws_name},
            "ownerReferences": [owner],
        },
        "spec": {"clusterIP": "None", "publishNotReadyAddresses": True, "selector": selector},
    }


def shared_service(lws_name: str, namespace: str, lws_uid: str) -> dict[str, Any]:
    return _headless(
        lws_name,
        namespace,
        lws_name,
        {c.SET_NAME_LABEL: lws_name},
        controller_ref(c.API_VERSION, c.KIND, lws_name, lws_uid),
    )


def replica_service(lws_name: str, leader: dict[str, Any]) -> dict[str, Any]:
    """The Service of the group led by pod ``leader``."""
    meta = leader["metadata"]
    group_index = (meta.get("labels") or {}).get(c.GROUP_INDEX_LABEL, "")
    return _headless(
        meta["name"],
        meta["namespace"],
        lws_name,
        {c.SET_NAME_LABEL: lws_name, c.GROUP_INDEX_LABEL: group_index},
        controller_ref("v1", "Pod", meta["name"], meta["uid"]),
    )


def missing_shared_service(
    lws_name: str, namespace: str, lws_uid: str, *, shared: bool, services: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The shared Service to create, when the policy is ``Shared`` and it does not exist."""
    if not shared or lws_name in services:
        return None
    return shared_service(lws_name, namespace, lws_uid)
