"""Gang scheduling: the PodGroup of each group (upstream's
pkg/schedulerprovider/volcano_provider.go and interface.go).

One PodGroup per group and revision, named ``<lws>-<groupIndex>-<revisionKey>`` (the name the
pod webhook writes into every pod of the group), owned by the group's leader pod, created when
missing and never updated: a new revision gets new PodGroups, and the garbage collector removes
the old ones with their leader pods. Two providers:

* ``kubernetes``: the native ``scheduling.k8s.io`` PodGroup with
  ``schedulingPolicy.gang.minCount``, in the newest version the cluster serves that the operator
  knows (``native_api``, from discovery at start-up): ``v1beta1`` (Kubernetes 1.37),
  ``v1alpha3`` (1.37, alpha), ``v1alpha2`` (1.36). Pods join through
  ``spec.schedulingGroup.podGroupName``. No Workload object is needed: the scheduler's gang
  plugin reads only the PodGroup, and holds a pod whose PodGroup does not exist yet
  (PreEnqueue) until it appears. A cluster serving none of them (before 1.36, or without the
  feature gates and runtime-config) runs LeaderWorkerSets without gangs (``unavailable``).
* ``volcano``: ``scheduling.volcano.sh/v1beta1`` PodGroup exactly as upstream's Volcano provider
  writes it (labels, ``volcano.sh/*`` annotations, ``minMember``, ``minResources``, ``queue``).

The minimum is the group size, or 1 with ``startupPolicy: LeaderReady`` (the leader must run
alone first). Size and templates come from the revision the leader pod carries, so a PodGroup
always describes the pods that will join it; upstream reads the current spec instead.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Final

from lws_operator.api import constants as c
from lws_operator.api.models import LeaderWorkerSet, LeaderWorkerSetSpec, StartupPolicy
from lws_operator.plan.events import CREATE, FAILED_CREATE, Event, warning
from lws_operator.plan.lws import names, placement
from lws_operator.plan.lws.pod_mutation import GANG_PROVIDER_KUBERNETES, GANG_PROVIDER_VOLCANO
from lws_operator.plan.meta import controller_ref, labels_of
from lws_operator.plan.quantity import Quantity, add_all, max_into, parse

NATIVE_GROUP: Final = "scheduling.k8s.io"
# The native PodGroup versions whose shape the operator writes, newest first by Kubernetes'
# version priority. In each, ``spec.schedulingPolicy.gang.minCount`` (at least 1) is the only
# required field; the rest (workloadRef / podGroupTemplateRef, constraints, priority) is
# optional, and the pods name the PodGroup in ``spec.schedulingGroup.podGroupName``.
# v1alpha2: Kubernetes 1.36 (GenericWorkload, GangScheduling; alpha, so runtime-config).
# v1beta1, v1alpha3: Kubernetes 1.37, which serves no v1alpha2 (GenericWorkload; neither
# version is served by default, so runtime-config).
NATIVE_VERSIONS: Final = ("v1beta1", "v1alpha3", "v1alpha2")
VOLCANO_API: Final = "scheduling.volcano.sh/v1beta1"
PLURAL: Final = "podgroups"
VOLCANO_ANNOTATION_PREFIX: Final = "volcano.sh/"
# Resources a pod-level ``spec.resources`` may set (component-helpers PodRequests).
_POD_LEVEL = ("cpu", "memory")
_HUGEPAGES = "hugepages-"

# A PodGroup API that is not served yet (its CRD installed later) is tried again this often.
CREATE_RETRY = 30.0
# The Warning on each LeaderWorkerSet run without gangs because the cluster serves no PodGroup
# API the operator knows.
UNAVAILABLE_REASON: Final = "GangSchedulingUnavailable"


@dataclass(frozen=True)
class GangApi:
    """A gang provider as this cluster serves it: the provider, and the apiVersion of the
    PodGroups it is given."""

    provider: str
    api_version: str

    def __post_init__(self) -> None:
        if self.provider not in (GANG_PROVIDER_KUBERNETES, GANG_PROVIDER_VOLCANO):
            known = sorted((GANG_PROVIDER_KUBERNETES, GANG_PROVIDER_VOLCANO))
            raise ValueError(f"unknown gang provider {self.provider!r}; known: {known}")

    @property
    def group_version(self) -> tuple[str, str]:
        group, _, version = self.api_version.partition("/")
        return group, version


VOLCANO: Final = GangApi(GANG_PROVIDER_VOLCANO, VOLCANO_API)


def native_api(served: Mapping[str, Collection[str]]) -> str | None:
    """The apiVersion of the native PodGroups to write: the newest of ``NATIVE_VERSIONS`` that
    serves ``podgroups``, given ``served``, each served version of scheduling.k8s.io with the
    resources it serves (discovery); None when there is none."""
    for version in NATIVE_VERSIONS:
        if PLURAL in served.get(version, ()):
            return f"{NATIVE_GROUP}/{version}"
    return None


def resolve(provider: str, served: Mapping[str, Collection[str]]) -> GangApi | None:
    """The PodGroup API of ``provider`` on a cluster serving ``served`` (scheduling.k8s.io's
    versions and their resources), or None when the native API is not served. Volcano's is a
    CRD that may be installed later: always its own version (creation retries meanwhile)."""
    if provider == GANG_PROVIDER_VOLCANO:
        return VOLCANO
    if provider != GANG_PROVIDER_KUBERNETES:
        raise ValueError(f"unknown gang provider {provider!r}")
    api = native_api(served)
    return None if api is None else GangApi(provider, api)


def unavailable(cluster_version: str, served: Mapping[str, Collection[str]]) -> str:
    """What to say when the kubernetes provider is configured and ``native_api`` found none:
    the API it needs in each Kubernetes version, and what this cluster serves."""
    unknown = sorted(v for v, resources in served.items() if PLURAL in resources)
    if unknown:
        serves = f"serves PodGroups only in {', '.join(unknown)}, which this operator does not know"
    else:
        serves = "serves none"
    return (
        f"gang scheduling with the kubernetes provider needs the {NATIVE_GROUP} PodGroup API "
        "(v1alpha2 in Kubernetes 1.36 with the GenericWorkload and GangScheduling feature gates "
        f"and --runtime-config={NATIVE_GROUP}/v1alpha2=true, v1beta1 in 1.37 with "
        f"GenericWorkload and --runtime-config={NATIVE_GROUP}/v1beta1=true); this cluster "
        f"({cluster_version}) {serves}: LeaderWorkerSets are run without gangs"
    )


def unavailable_event(message: str) -> Event:
    """The Warning posted once on each LeaderWorkerSet run without gangs."""
    return warning(UNAVAILABLE_REASON, CREATE, message)


def creation_failed(name: str, api: str, status: int, message: str) -> Event:
    """The Warning for a PodGroup the API server refused; a 404 is most likely its API (a
    native version chosen at start-up and no longer served: the control plane was upgraded)."""
    hint = ""
    if status == 404:
        hint = f" (is the {api} PodGroup API served?"
        if api.startswith(f"{NATIVE_GROUP}/"):
            hint += " The version is chosen when the operator starts: restart it"
        hint += ")"
    return warning(FAILED_CREATE, CREATE, f"Failed to create PodGroup {name}: {message}{hint}")


def pod_group_name(lws_name: str, leader: dict[str, Any]) -> str:
    """The PodGroup of the group ``leader`` (a leader pod) leads; the webhook's name for it."""
    labels = labels_of(leader)
    return names.pod_group_name(
        lws_name, labels.get(c.GROUP_INDEX_LABEL, ""), labels.get(c.REVISION_KEY, "")
    )


def min_member(lws: LeaderWorkerSet, spec: LeaderWorkerSetSpec) -> int:
    if lws.spec.startup_policy == StartupPolicy.LEADER_READY:
        return 1
    return spec.leader_worker_template.size


def pod_group(
    api: GangApi, lws: LeaderWorkerSet, spec: LeaderWorkerSetSpec, leader: dict[str, Any]
) -> dict[str, Any]:
    """The PodGroup body of ``api`` for the group led by ``leader``, with ``spec`` the LWS spec
    as recorded in the leader's revision. The native versions share the shape written here."""
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
    if api.provider == GANG_PROVIDER_KUBERNETES:
        group_spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": minimum}}}
    else:
        inherited = {
            k: v for k, v in lws.annotations.items() if k.startswith(VOLCANO_ANNOTATION_PREFIX)
        }
        if inherited:
            body_meta["annotations"] = inherited
        group_spec = {"minMember": minimum, "minResources": min_resources(spec)}
        if (queue := lws.annotations.get(c.VOLCANO_QUEUE_ANNOTATION)) is not None:
            group_spec["queue"] = queue
    return {
        "apiVersion": api.api_version,
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
    key = labels_of(leader).get(c.GROUP_UNIQUE_HASH_LABEL, "")
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
