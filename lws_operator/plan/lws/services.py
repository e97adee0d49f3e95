"""The headless Services that give LWS pods their DNS names (upstream's
CreateHeadlessServiceIfNotExists, pkg/utils/controller/controller_utils.go).

``Shared``: one Service ``<lws>`` for every pod, owned by the LWS. ``UniquePerReplica``: one
Service per group, named like its leader pod and owned by it, so it goes away with the group.
Both publish not-ready addresses, as upstream v0.10.0's always do (a group's pods must find
each other before they are Ready), unless ``networkConfig.publishNotReadyAddresses`` is
false (upstream KEP-820); a change of that field is applied to the existing Services.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lws_operator.api import constants as c
from lws_operator.api.models import NetworkConfig
from lws_operator.plan.events import Event, warning
from lws_operator.plan.meta import controller_of, controller_ref, meta_of, name_of


def publish_not_ready(network: NetworkConfig) -> bool:
    """Unset means published: what v0.10.0 does and what its manifests (without the field)
    rely on (docs/compatibility.md F5)."""
    return network.publish_not_ready_addresses is not False


def _headless(
    name: str,
    namespace: str,
    lws_name: str,
    selector: dict[str, str],
    owner: dict[str, Any],
    publish: bool,
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
        "spec": {"clusterIP": "None", "publishNotReadyAddresses": publish, "selector": selector},
    }


def shared_service(
    lws_name: str, namespace: str, lws_uid: str, publish: bool = True
) -> dict[str, Any]:
    return _headless(
        lws_name,
        namespace,
        lws_name,
        {c.SET_NAME_LABEL: lws_name},
        controller_ref(c.API_VERSION, c.KIND, lws_name, lws_uid),
        publish,
    )


def replica_service(lws_name: str, leader: dict[str, Any], publish: bool = True) -> dict[str, Any]:
    """The Service of the group led by pod ``leader``."""
    meta = leader["metadata"]
    group_index = (meta.get("labels") or {}).get(c.GROUP_INDEX_LABEL, "")
    return _headless(
        meta["name"],
        meta["namespace"],
        lws_name,
        {c.SET_NAME_LABEL: lws_name, c.GROUP_INDEX_LABEL: group_index},
        controller_ref("v1", "Pod", meta["name"], meta["uid"]),
        publish,
    )


def missing_shared_service(
    lws_name: str,
    namespace: str,
    lws_uid: str,
    *,
    shared: bool,
    services: Mapping[str, Any],
    publish: bool = True,
) -> dict[str, Any] | None:
    """The shared Service to create, when the policy is ``Shared`` and it does not exist."""
    if not shared or lws_name in services:
        return None
    return shared_service(lws_name, namespace, lws_uid, publish)


def publish_patches(
    services: Mapping[str, Mapping[str, Any]], *, lws_name: str, lws_uid: str, publish: bool
) -> list[tuple[str, dict[str, Any]]]:
    """(name, merge patch) for each of our Services whose publishNotReadyAddresses differs:
    the shared one (owned by the LWS) and the per-group ones (owned by their leader pod)."""
    out = []
    for name, svc in services.items():
        owner = controller_of(svc) or {}
        ours = (owner.get("kind") == c.KIND and owner.get("uid") == lws_uid) or (
            owner.get("kind") == "Pod" and owner.get("name") == name_of(svc)
        )
        current = (svc.get("spec") or {}).get("publishNotReadyAddresses") is True
        if ours and current != publish:
            patch = {
                "metadata": {"resourceVersion": meta_of(svc).get("resourceVersion")},
                "spec": {"publishNotReadyAddresses": publish},
            }
            out.append((name, patch))
    return out


def service_failed(message: str) -> Event:
    """The Warning upstream posts when a headless Service cannot be created."""
    return warning(
        "FailedCreate", "Create", f"Failed to create headless service for error: {message}"
    )
