"""Gang scheduling: the PodGroup of each group (contract 3.5 and 4.12).

One PodGroup per group and revision, named ``<lws>-<groupIndex>-<revisionKey>`` (the name the
pod webhook writes into every pod of the group), owned by the group's leader pod, created when
missing and never updated: a new revision gets new PodGroups, and the garbage collector removes
the old ones with their leader pods. Two providers:

* ``kubernetes``: Kubernetes 1.36's native ``scheduling.k8s.io/v1alpha2`` PodGroup with
  ``schedulingPolicy.gang.minCount``. Pods join through ``spec.schedulingGroup.podGroupName``.
  No Workload object is needed: the scheduler's GangScheduling plugin reads only the PodGroup,
  and holds a pod whose PodGroup does not exist yet (PreEnqueue) until it appears.
* ``volcano``: ``scheduling.volcano.sh/v1beta1`` PodGroup exactly as upstream's Volcano provider
  writes it (labels, ``volcano.sh/*`` annotations, ``minMember``, ``minResources``, ``queue``).

The minimum is the group size, or 1 with ``startupPolicy: LeaderReady`` (the leader must run
alone first). Size and templates come from the revision the leader pod carries, so a PodGroup
always describes the pods that will join it; upstream reads the current spec instead.
"""

from __future__ import annotations

from typing import Any, Final

from lws_operator.api import constants as c
from lws_operator.api.models import LeaderWorkerSet, LeaderWorkerSetSpec, StartupPolicy
from lws_operator.plan import names, placement
from lws_operator.plan.events import CREATE, FAILED_CREATE, Event, warning
from lws_operator.plan.meta import controller_ref
from lws_operator.plan.pod_mutation import GANG_PROVIDER_KUBERNETES, GANG_PROVIDER_VOLCANO
from lws_operator.plan.quantity import Quantity, add_all, max_into, parse

NATIVE_API: Final = "scheduling.k8s.io/v1alpha2"
VOLCANO_API: Final = "scheduling.volcano.sh/v1beta1"
PLURAL: Final = "podgroups"
VOLCANO_ANNOTATION_PREFIX: Final = "volcano.sh/"
# Resources a pod-level ``spec.resources`` may set (component-helpers PodRequests).
_POD_LEVEL = ("cpu", "memory")
_HUGEPAGES = "hugepages-"

_API = {GANG_PROVIDER_KUBERNETES: NATIVE_API, GANG_PROVIDER_VOLCANO: VOLCANO_API}
# A PodGroup API that is not served yet (its CRD installed later) is tried again this often.
CREATE_RETRY = 30.0


def creation_failed(name: str, api: str, status: int, message: str) -> Event:
    """The Warning for a PodGroup the API server refused; a 404 is most likely its API."""
    hint = f" (is the {api} PodGroup API served?)" if status == 404 else ""
    return warning(FAILED_CREATE, CREATE, f"Failed to create PodGroup {name}: {message}{hint}")


def api_version(provider: str) -> str:
    """The apiVersion of ``provider``'s PodGroups; ValueError for an unknown provider."""
    try:
        return _API[provider]
    except KeyError:
        raise ValueError(f"unknown gang provider {provider!r}; known: {sorted(_API)}") from None


def pod_group_name(lws_name: str, leader: dict[str, Any]) -> str:
    """The PodGroup of the group ``leader`` (a leader pod) leads; the webhook's name for it."""
    labels = (leader.get("metadata") or {}).get("labels") or {}
    return names.pod_group_name(
        lws_name, labels.get(c.GROUP_INDEX_LABEL, ""), labels.get(c.REVISION_KEY, "")
    )


def min_member(lws: LeaderWorkerSet, spec: LeaderWorkerSetSpec) -> int:
    if lws.spec.startup_policy == StartupPolicy.LEADER_READY:
        return 1
    return spec.leader_worker_template.size


def pod_group(
    provider: str, lws: LeaderWorkerSet, spec: LeaderWorkerSetSpec, leader: dict[str, Any]
) -> dict[str, Any]:
    """The PodGroup body for the group led by ``leader``, with ``spec`` the LWS spec as
    recorded in the leader's revision."""
    meta = leader["metadata"]
    labels = meta.get("labels") or {}
    body_meta: dict[str, Any] = {
        "name": pod_group_name(lws.name, leader),
        "namespace": lws.namespace,
        "labels": {
            c.SET_NAME_LABEL: lws.name,
            c.GROUP_INDEX_LABEL: labels.get(c.GROUP_INDEX_LABEL, ""),
            c.REVISION_KEY: labels.get(c.REVISION_KEY, ""),
        },
        "ownerReferences": [controller_ref("v1", "Pod", meta["name"], meta["uid"])],
    }
    minimum = min_member(lws, spec)
    if provider == GANG_PROVIDER_KUBERNETES:
        group_spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": minimum}}}
    else:
        api_version(provider)
        inherited = {
            k: v for k, v in lws.annotations.items() if k.startswith(VOLCANO_ANNOTATION_PREFIX)
        }
        if inherited:
            body_meta["annotations"] = inherited
        group_spec = {"minMember": minimum, "minResources": min_resources(spec)}
        if (queue := lws.annotations.get(c.VOLCANO_QUEUE_ANNOTATION)) is not None:
            group_spec["queue"] = queue
    return {
        "apiVersion": api_version(provider),
        "kind": "PodGroup",
        "metadata": body_meta,
        "spec": group_spec,
    }


def follow_leader(worker_sts: dict[str, Any], leader: dict[str, Any], topology: str) -> None:
    """Exclusive placement under a gang: pin the workers to their leader's domain by affinity.

    Upstream creates the worker StatefulSet only once the leader is scheduled, with a
    nodeSelector on the leader node's domain. Under a gang of the whole group the leader is
    scheduled only together with its workers, so that would wait forever. Instead the worker
    template gets a required pod-affinity term to its group's pods (``group-key``) on
    ``topology``, and the scheduler places the gang in one cycle, in one domain; the leader's
    anti-affinity keeps other groups out, as without a gang. Changes ``worker_sts`` in place.
    """
    key = ((leader.get("metadata") or {}).get("labels") or {}).get(c.GROUP_UNIQUE_HASH_LABEL, "")
    term, _ = placement.exclusive_terms(c.GROUP_UNIQUE_HASH_LABEL, key, topology)
    pod_spec = worker_sts["spec"]["template"].setdefault("spec", {})
    affinity = pod_spec.setdefault("affinity", {}).setdefault("podAffinity", {})
    affinity.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(term)


def min_resources(spec: LeaderWorkerSetSpec) -> dict[str, str]:
    """Requests of the whole group: the leader's plus ``size - 1`` times a worker's
    (upstream ``CalculatePGMinResources``)."""
    tmpl = spec.leader_worker_template
    leader = tmpl.leader_template if tmpl.leader_template is not None else tmpl.worker_template
    total = pod_requests(leader.get("spec") or {})
    worker = pod_requests(tmpl.worker_template.get("spec") or {})
    for _ in range(tmpl.size - 1):
        total = add_all(total, worker)
    return {name: str(q) for name, q in sorted(total.items())}


def pod_requests(pod_spec: dict[str, Any]) -> dict[str, Quantity]:
    """A pod's effective requests: ``resourcehelper.PodRequests`` of k8s.io/component-helpers
    with default options (containers summed; init containers as a maximum, sidecars
    counted in both; pod-level requests for cpu, memory and hugepages; overhead added)."""
    reqs: dict[str, Quantity] = {}
    for container in pod_spec.get("containers") or []:
        _add_into(reqs, _requests(container))
    sidecars: dict[str, Quantity] = {}
    init: dict[str, Quantity] = {}
    for container in pod_spec.get("initContainers") or []:
        own = _requests(container)
        if container.get("restartPolicy") == "Always":
            _add_into(reqs, own)
            _add_into(sidecars, own)
            use = dict(sidecars)
        else:
            use = {}
            _add_into(use, own)
            _add_into(use, sidecars)
        max_into(init, use)
    max_into(reqs, init)
    pod_level = ((pod_spec.get("resources") or {}).get("requests")) or {}
    supported = {k: v for k, v in pod_level.items() if _pod_level(k)}
    for name, value in supported.items():
        reqs[name] = parse(value)
    _add_into(reqs, {k: parse(v) for k, v in (pod_spec.get("overhead") or {}).items()})
    return reqs


def _pod_level(name: str) -> bool:
    return name in _POD_LEVEL or name.startswith(_HUGEPAGES)


def _requests(container: dict[str, Any]) -> dict[str, Quantity]:
    requests = (container.get("resources") or {}).get("requests") or {}
    return {name: parse(value) for name, value in requests.items()}


def _add_into(target: dict[str, Quantity], other: dict[str, Quantity]) -> None:
    """``addResourceList``: add ``other`` into ``target`` in place."""
    for name, q in other.items():
        target[name] = target[name] + q if name in target else q
