"""TPU environment variables for pods that request ``google.com/tpu`` (upstream's
pkg/utils/accelerators/tpu.go).

Without subgroups every TPU container of the pod gets the variables and the whole group is one
TPU slice; with subgroups only the first TPU container does, and each subgroup is a slice. Host
names never include the namespace: ``<pod>.<subdomain>``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from lws_operator.api import constants as c
from lws_operator.plan.lws import names
from lws_operator.plan.lws.podview import PodView

# A resource.Quantity: signed decimal mantissa, then a binary or decimal suffix or an exponent.
_QUANTITY = re.compile(
    r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(?:[KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]+)?"
)


def _quantity_nonzero(pod: PodView, value: Any, field: str) -> bool:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value != 0
    if isinstance(value, str) and (match := _QUANTITY.fullmatch(value)) is not None:
        return Decimal(match.group(1)) != 0
    pod.fail(field, f"is not a valid quantity: {value!r}")


def _requests_tpus(pod: PodView, container: dict[str, Any], field: str) -> bool:
    """Limits first, then requests, as upstream: a zero limit falls through to requests."""
    resources = container.get("resources")
    if resources is None:
        return False
    if not isinstance(resources, dict):
        pod.fail(f"{field}.resources", "must be an object")
    for kind in ("limits", "requests"):
        amounts = resources.get(kind)
        if amounts is None:
            continue
        if not isinstance(amounts, dict):
            pod.fail(f"{field}.resources.{kind}", "must be an object")
        amount = amounts.get(c.TPU_RESOURCE_NAME)
        item = f"{field}.resources.{kind}[{c.TPU_RESOURCE_NAME}]"
        if amount is not None and _quantity_nonzero(pod, amount, item):
            return True
    return False


def _tpu_containers(pod: PodView) -> list[tuple[str, dict[str, Any]]]:
    """``(field, container)`` of every TPU-requesting container, then init container."""
    return [(f, ctr) for f, ctr in pod.containers() if _requests_tpus(pod, ctr, f)]


def pod_requests_tpus(pod: dict[str, Any]) -> bool:
    """Whether a container or init container of ``pod`` requests TPUs (upstream
    ``PodRequestsTPUs``). For a leader pod this decides its workers' ``leader-requests-tpus``.

    Raises PodMutationError when the containers or their resources are malformed.
    """
    return bool(_tpu_containers(PodView(pod)))


def add_tpu_env(
    pod: PodView, *, size: int, subgroup_size: int | None, leader_in_subgroup: bool
) -> None:
    """Append the TPU variables to the pod's TPU containers (the labels are already set).

    Skipped when the first TPU container already has them: that keeps the mutation idempotent
    and lets users supply their own.
    """
    containers = _tpu_containers(pod)
    if not containers:
        return
    first_field, first = containers[0]
    if any(
        pod.env_value(first, first_field, var) is not None
        for var in (c.TPU_WORKER_HOSTNAMES, c.TPU_WORKER_ID)
    ):
        return
    if subgroup_size is None:
        _add_group_env(pod, containers, size)
    else:
        _add_subgroup_env(pod, first_field, first, subgroup_size, leader_in_subgroup)


def _leader_and_worker_index(pod: PodView) -> tuple[str, int]:
    """(leader pod name, worker index) of this pod, from its name."""
    name = pod.required_meta("name", "it names the TPU hosts")
    if pod.label(c.WORKER_INDEX_LABEL) == "0":
        return name, 0
    parsed = names.parse_ordinal(name)
    if parsed is None:
        pod.fail("metadata.name", "has no trailing ordinal (-<n>), so its leader is unknown")
    return parsed


def _leader_requests_tpus(pod: PodView) -> bool:
    return pod.annotation(c.LEADER_REQUESTS_TPUS_ANNOTATION) == "true"


def _add_group_env(
    pod: PodView, containers: Sequence[tuple[str, dict[str, Any]]], size: int
) -> None:
    """The whole group is one slice; container k of pod p is TPU worker ``p*n + k``."""
    leader, pod_index = _leader_and_worker_index(pod)
    is_leader = pod.label(c.WORKER_INDEX_LABEL) == "0"
    if not is_leader and not _leader_requests_tpus(pod):
        pod_index -= 1  # the leader holds no TPU, so workers count from 0
    subdomain = pod.subdomain()
    count = len(containers)
    ports = [
        pod.env_value(ctr, field, c.TPU_PROCESS_PORT) or str(c.TPU_DEFAULT_PROCESS_PORT + k)
        for k, (field, ctr) in enumerate(containers)
    ]
    hosts = [names.worker_pod_name(leader, i) for i in range(1, size)]
    if is_leader or _leader_requests_tpus(pod):
        hosts.insert(0, leader)
    # Upstream's AddTPUVariables, kept: the leader is assumed to have as many TPU containers as this
    # pod, since a worker cannot see the leader's spec.
    hostnames = [names.pod_hostname(h, subdomain) for h in hosts for _ in range(count)]
    addresses = [f"{h}:{ports[i % count]}" for i, h in enumerate(hostnames)]
    for k, (field, container) in enumerate(containers):
        _append_env(
            pod,
            container,
            field,
            hostnames=hostnames,
            worker_id=pod_index * count + k,
            leader=leader,
            addresses=addresses,
            port=ports[k],
        )


def _add_subgroup_env(
    pod: PodView, field: str, container: dict[str, Any], subgroup_size: int, leader_in_sg: bool
) -> None:
    """Each subgroup is one slice; only the first TPU container gets the variables."""
    leader, worker = _leader_and_worker_index(pod)
    is_leader = pod.label(c.WORKER_INDEX_LABEL) == "0"
    subdomain = pod.subdomain()
    port = pod.env_value(container, field, c.TPU_PROCESS_PORT) or str(c.TPU_DEFAULT_PROCESS_PORT)
    hosts: list[str] = []
    if is_leader and not leader_in_sg:
        # LeaderExcluded leader: a slice of its own. Upstream rejects it (it parses the
        # subgroup-index label, which such a leader does not have).
        hosts.append(leader)
        worker_id = 0
    else:
        # With LeaderExcluded no worker's slice holds the leader, whatever the leader requests;
        # upstream puts it in subgroup 0's hosts and shifts the other windows.
        leader_tpus = leader_in_sg and (is_leader or _leader_requests_tpus(pod))
        if leader_tpus:
            label = pod.label(c.SUBGROUP_INDEX_LABEL) or ""
            index = pod.unsigned(label, f"label {c.SUBGROUP_INDEX_LABEL}")
            worker_id = worker % subgroup_size
        else:
            index, worker_id = divmod(worker - 1, subgroup_size)
        start, end = subgroup_size * index + 1, subgroup_size * (index + 1)
        if is_leader or (leader_tpus and index == 0):
            # The leader takes the first slot of subgroup 0 ...
            hosts.append(leader)
            end -= 1
        elif leader_tpus:
            # ... which shifts every later window left by one.
            start, end = start - 1, end - 1
        hosts.extend(names.worker_pod_name(leader, i) for i in range(start, end + 1))
    hostnames = [names.pod_hostname(h, subdomain) for h in hosts]
    _append_env(
        pod,
        container,
        field,
        hostnames=hostnames,
        worker_id=worker_id,
        leader=leader,
        addresses=[f"{h}:{port}" for h in hostnames],
        port=port,
    )


def _append_env(
    pod: PodView,
    container: dict[str, Any],
    field: str,
    *,
    hostnames: list[str],
    worker_id: int,
    leader: str,
    addresses: list[str],
    port: str,
) -> None:
    has_port = pod.env_value(container, field, c.TPU_PROCESS_PORT) is not None
    env = pod.env(container, field)
    container["env"] = env
    env += [
        {"name": c.TPU_WORKER_HOSTNAMES, "value": ",".join(hostnames)},
        {"name": c.TPU_WORKER_ID, "value": str(worker_id)},
        {"name": c.TPU_NAME, "value": leader},
        {"name": c.TPU_PROCESS_ADDRESSES, "value": ",".join(addresses)},
    ]
    if not has_port:
        env.append({"name": c.TPU_PROCESS_PORT, "value": port})
