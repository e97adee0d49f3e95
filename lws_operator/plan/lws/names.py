"""How every LWS name, key and address is formed: the one place that knows (upstream's
pkg/webhooks/pod_webhook.go, pkg/utils/pod/pod_utils.go, pkg/schedulerprovider/interface.go).

Values must match upstream byte for byte: labels, DNS names and PodGroup names are observed by
other tools, and taking over pods created by the upstream controller must not change them.
"""

from __future__ import annotations

import hashlib
import re

from lws_operator.api.constants import MAX_INT32

# A StatefulSet pod is named <parent>-<ordinal> (upstream statefulset_utils.go).
_ORDINAL = re.compile(r"(.*)-([0-9]+)", re.DOTALL)


def _sha1_hex(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


def group_key(namespace: str, leader_pod_name: str) -> str:
    """Label ``group-key``: sha1 hex of ``<namespace>/<leaderPodName>``."""
    return _sha1_hex(f"{namespace}/{leader_pod_name}")


def subgroup_key(leader_pod_name: str, subgroup_index: int | str) -> str:
    """Label ``subgroup-key``: sha1 hex of ``<leaderPodName>/<subgroupIndex>``.

    Not namespace-qualified, unlike ``group_key``, as upstream's pod webhook forms it
    (pkg/webhooks/pod_webhook.go); kept (labels are observed).
    """
    return _sha1_hex(f"{leader_pod_name}/{subgroup_index}")


def parse_ordinal(pod_name: str) -> tuple[str, int] | None:
    """``("<parent>", ordinal)`` of a StatefulSet pod name, or None when it has no ordinal.

    An ordinal beyond int32 counts as none, as upstream parses it with ``ParseInt(.., 32)``.
    """
    match = _ORDINAL.fullmatch(pod_name)
    if match is None:
        return None
    ordinal = int(match.group(2))
    if ordinal > MAX_INT32:
        return None
    return match.group(1), ordinal


def leader_pod_name(lws_name: str, group_index: int | str) -> str:
    """Leader pod ``<lws>-<groupIndex>`` (a pod of the leader StatefulSet ``<lws>``)."""
    return f"{lws_name}-{group_index}"


def worker_pod_name(leader_pod_name: str, worker_index: int | str) -> str:
    """Worker pod ``<leaderPodName>-<workerIndex>`` (worker StatefulSet ordinals start at 1)."""
    return f"{leader_pod_name}-{worker_index}"


def worker_statefulset_name(leader_pod_name: str) -> str:
    """The worker StatefulSet of a group is named like its leader pod (upstream's
    constructWorkerStatefulSetApplyConfiguration, pkg/controllers/pod_controller.go)."""
    return leader_pod_name


def pod_hostname(pod_name: str, subdomain: str) -> str:
    """``<podName>.<subdomain>``: a pod under its headless Service, as the TPU env lists it."""
    return f"{pod_name}.{subdomain}"


def leader_address(lws_name: str, group_index: int | str, subdomain: str, namespace: str) -> str:
    """``LWS_LEADER_ADDRESS``: ``<lws>-<groupIndex>.<subdomain>.<namespace>``.

    No ``.svc.<clusterDomain>`` suffix, as upstream: the resolver's search path completes it.
    """
    return f"{pod_hostname(leader_pod_name(lws_name, group_index), subdomain)}.{namespace}"


def pod_group_name(lws_name: str, group_index: int | str, revision_key: str) -> str:
    """Gang PodGroup of a group, ``<lws>-<groupIndex>-<revisionKey>``: a new one per revision."""
    return f"{lws_name}-{group_index}-{revision_key}"
