"""What the pod webhook does to an LWS pod at CREATE (upstream's pkg/webhooks/pod_webhook.go,
Default).

The StatefulSet controller creates the pods from templates shared by all groups (leaders) or all
workers of a group, so the per-pod facts are filled in here, in upstream's order: the labels
(group index and key, worker index, subgroup), the exclusive-placement terms, gang membership,
then the TPU variables and last the LWS variables, which go first in every env list.
"""

from __future__ import annotations

import copy
from typing import Any, Final

from lws_operator.api import constants as c
from lws_operator.api.models import SubdomainPolicy
from lws_operator.plan.lws import names, placement, subgroups, tpu
from lws_operator.plan.lws.podview import PodMutationError, PodView

__all__ = ["GANG_PROVIDERS", "PodMutationError", "mutate_pod"]

# Gang-scheduling providers. Not in api/constants.py yet (defined here until it has them):
# Volcano names the PodGroup in an annotation; Kubernetes' native gang scheduling
# (scheduling.k8s.io PodGroup, 1.36 and later) in pod.spec.schedulingGroup. The webhook is given
# the provider only when its PodGroups can exist (plan/lws/gang.py ``resolve``).
GANG_PROVIDER_VOLCANO: Final = "volcano"
GANG_PROVIDER_KUBERNETES: Final = "kubernetes"
GANG_PROVIDERS: Final = (GANG_PROVIDER_VOLCANO, GANG_PROVIDER_KUBERNETES)

# Env vars owned by LWS, in injection order; same-named user entries are dropped.
LWS_ENV_NAMES: Final = (
    c.LWS_LEADER_ADDRESS,
    c.LWS_GROUP_SIZE,
    c.LWS_WORKER_INDEX,
    c.LWS_GROUP_INDEX,
)

_FROM_STS = "pods of a LeaderWorkerSet are created by its StatefulSets, which set it"


def mutate_pod(pod: dict[str, Any], *, gang_provider: str | None = None) -> dict[str, Any]:
    """The pod as the webhook admits it: a new dict; ``pod`` is not modified.

    Pods without the ``leaderworkerset.sigs.k8s.io/name`` label come back unchanged. Mutating a
    mutated pod again changes nothing. The caller must have filled ``metadata.namespace`` (an
    AdmissionReview object may lack it; the request's namespace is authoritative).

    Raises PodMutationError when the pod lacks what LWS pods always carry or has malformed
    values; ValueError for an unknown ``gang_provider``.
    """
    if gang_provider is not None and gang_provider not in GANG_PROVIDERS:
        raise ValueError(f"unknown gang provider {gang_provider!r}; known: {GANG_PROVIDERS}")
    if not isinstance(pod, dict):
        raise PodMutationError(f"pod: must be an object, not {type(pod).__name__}")
    pod = copy.deepcopy(pod)
    view = PodView(pod)
    lws_name = view.label(c.SET_NAME_LABEL)
    if lws_name is None:
        return pod
    if not lws_name:
        view.fail(f"label {c.SET_NAME_LABEL}", "is empty; it must be the LeaderWorkerSet name")

    raw_size = view.annotation(c.SIZE_ANNOTATION)
    if raw_size is None:
        view.fail(f"annotation {c.SIZE_ANNOTATION}", f"is missing; {_FROM_STS}")
    size = view.unsigned(raw_size, f"annotation {c.SIZE_ANNOTATION}", minimum=1)
    raw_sg = view.annotation(c.SUBGROUP_SIZE_ANNOTATION)
    subgroup_size = None
    if raw_sg is not None:
        subgroup_size = view.unsigned(raw_sg, f"annotation {c.SUBGROUP_SIZE_ANNOTATION}", minimum=1)
    leader_in_sg = subgroups.leader_in_subgroup(view.annotation(c.SUBGROUP_POLICY_TYPE_ANNOTATION))

    if view.label(c.WORKER_INDEX_LABEL) == "0":
        _label_leader(view, subgroup_size, leader_in_sg)
    else:
        _label_worker(view, size, subgroup_size)
    if gang_provider is not None:
        _set_gang_membership(view, lws_name, gang_provider)
    # Before the LWS variables, so that those end up first (upstream's Default, pod_webhook.go).
    tpu.add_tpu_env(view, size=size, subgroup_size=subgroup_size, leader_in_subgroup=leader_in_sg)
    _add_lws_env(view, lws_name, raw_size)
    return pod


def _label_leader(pod: PodView, subgroup_size: int | None, leader_in_sg: bool) -> None:
    name = pod.required_meta("name", _FROM_STS)
    namespace = pod.required_meta("namespace", "the webhook server fills it from the request")
    if not pod.label(c.GROUP_INDEX_LABEL):
        pod.set_label(c.GROUP_INDEX_LABEL, str(_parse_name(pod, name)[1]))
    if pod.annotation(c.SUBDOMAIN_POLICY_ANNOTATION) == SubdomainPolicy.UNIQUE_PER_REPLICA:
        # The group's own headless Service is named like the leader pod (services.py).
        pod.ensure("spec")["subdomain"] = name
    key = pod.label(c.GROUP_UNIQUE_HASH_LABEL) or names.group_key(namespace, name)
    pod.set_label(c.GROUP_UNIQUE_HASH_LABEL, key)
    # An empty topology would give terms the API server rejects; the controller never sets one.
    if topology := pod.annotation(c.EXCLUSIVE_KEY_ANNOTATION):
        placement.add_exclusive_terms(pod, c.GROUP_UNIQUE_HASH_LABEL, key, topology)
    if subgroup_size is not None and not pod.label(c.SUBGROUP_INDEX_LABEL) and leader_in_sg:
        _set_subgroup(pod, name, 0)


def _label_worker(pod: PodView, size: int, subgroup_size: int | None) -> None:
    name = pod.required_meta("name", _FROM_STS)
    parent, worker = _parse_name(pod, name)
    if worker == 0:
        # Only leaders have ordinal 0, and they carry worker-index "0"; labelling this pod
        # worker 0 would make it look like a second leader.
        pod.fail(
            f"label {c.WORKER_INDEX_LABEL}",
            'is not "0" but the pod name ends in ordinal 0; worker ordinals start at 1',
        )
    pod.set_label(c.WORKER_INDEX_LABEL, str(worker))
    if subgroup_size is not None and not pod.label(c.SUBGROUP_INDEX_LABEL):
        # Upstream keys on the leader-name annotation alone; without it every group's
        # subgroups would share keys, so fall back to the parent name, which is the leader's.
        leader = pod.annotation(c.LEADER_POD_NAME_ANNOTATION) or parent
        _set_subgroup(pod, leader, subgroups.subgroup_index(size, subgroup_size, worker))


def _set_subgroup(pod: PodView, leader: str, index: int) -> None:
    key = names.subgroup_key(leader, index)
    pod.set_label(c.SUBGROUP_INDEX_LABEL, str(index))
    pod.set_label(c.SUBGROUP_UNIQUE_HASH_LABEL, key)
    if topology := pod.annotation(c.SUBGROUP_EXCLUSIVE_KEY_ANNOTATION):
        placement.add_exclusive_terms(pod, c.SUBGROUP_UNIQUE_HASH_LABEL, key, topology)


def _parse_name(pod: PodView, name: str) -> tuple[str, int]:
    parsed = names.parse_ordinal(name)
    if parsed is None:
        pod.fail("metadata.name", f"has no trailing ordinal (-<n>); {_FROM_STS}")
    return parsed


def _group_index(pod: PodView) -> str:
    raw = pod.label(c.GROUP_INDEX_LABEL)
    if not raw:
        pod.fail(f"label {c.GROUP_INDEX_LABEL}", f"is missing; {_FROM_STS}")
    pod.unsigned(raw, f"label {c.GROUP_INDEX_LABEL}")
    return raw


def _set_gang_membership(pod: PodView, lws_name: str, provider: str) -> None:
    """Name the group's PodGroup, which the controller creates (:mod:`.gang`)."""
    revision = pod.label(c.REVISION_KEY)
    if not revision:
        pod.fail(f"label {c.REVISION_KEY}", f"is missing; it names the PodGroup; {_FROM_STS}")
    group = names.pod_group_name(lws_name, _group_index(pod), revision)
    if provider == GANG_PROVIDER_VOLCANO:
        pod.set_annotation(c.POD_GROUP_NAME_ANNOTATION, group)
    else:
        pod.ensure("spec")["schedulingGroup"] = {"podGroupName": group}


def _add_lws_env(pod: PodView, lws_name: str, raw_size: str) -> None:
    """Prepend the LWS variables to every container and init container (upstream's
    AddLWSVariables, pkg/utils/pod/pod_utils.go).

    Prepending lets later entries use ``$(LWS_...)``. Same-named user entries are dropped so the
    injected value wins (upstream's addEnvVarsIfNotExists does so despite its name; kept). Unlike
    upstream, other user entries are kept as they are, duplicates included: upstream keeps only the
    first of duplicated names, which changes the value the container sees (the kubelet uses the
    last).
    """
    group_index = _group_index(pod)
    worker_index = pod.label(c.WORKER_INDEX_LABEL) or ""
    namespace = pod.required_meta("namespace", "the webhook server fills it from the request")
    values = (
        names.leader_address(lws_name, group_index, pod.subdomain(), namespace),
        raw_size,
        worker_index,
        group_index,
    )
    injected = [{"name": n, "value": v} for n, v in zip(LWS_ENV_NAMES, values, strict=True)]
    for field, container in pod.containers():
        kept = [e for e in pod.env(container, field) if e["name"] not in LWS_ENV_NAMES]
        container["env"] = copy.deepcopy(injected) + kept
