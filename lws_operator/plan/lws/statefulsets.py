"""The desired StatefulSets of a LeaderWorkerSet (upstream's
constructLeaderStatefulSetApplyConfiguration, pkg/controllers/leaderworkerset_controller.go, and
constructWorkerStatefulSetApplyConfiguration, pkg/controllers/pod_controller.go).

The leader StatefulSet ``<lws>`` holds one leader pod per group and is server-side applied on
every change; the worker StatefulSet ``<lws>-<i>`` of each group is built from the revision its
leader pod carries, owned by the leader pod, and only ever created.
"""

from __future__ import annotations

import copy
from typing import Any

from lws_operator.api import constants as c
from lws_operator.api.models import LeaderWorkerSet, LeaderWorkerSetSpec, SubdomainPolicy
from lws_operator.plan.keys import RevisionKey
from lws_operator.plan.lws import names
from lws_operator.plan.meta import controller_ref, meta_of

# metav1.FinalizerDeleteDependents: the garbage collector honours it as a foreground deletion.
FOREGROUND_DELETION = "foregroundDeletion"
# The only claim fields upstream copies into the StatefulSets (GetPVCApplyConfiguration,
# pkg/utils/controller/controller_utils.go).
_CLAIM_SPEC_FIELDS = ("accessModes", "storageClassName", "volumeMode")


def _volume_claims(spec: LeaderWorkerSetSpec) -> list[dict[str, Any]]:
    claims = []
    for claim in spec.leader_worker_template.volume_claim_templates or []:
        src = claim.get("spec") or {}
        out: dict[str, Any] = {k: copy.deepcopy(src[k]) for k in _CLAIM_SPEC_FIELDS if k in src}
        resources = src.get("resources") or {}
        res = {k: dict(resources[k]) for k in ("requests", "limits") if resources.get(k)}
        if res:
            out["resources"] = res
        claims.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": meta_of(claim).get("name")},
                "spec": out,
            }
        )
    return claims


def _storage(spec: LeaderWorkerSetSpec, sts_spec: dict[str, Any]) -> None:
    if claims := _volume_claims(spec):
        sts_spec["volumeClaimTemplates"] = claims
    policy = spec.leader_worker_template.persistent_volume_claim_retention_policy
    if policy is not None and (retention := policy.to_dict()):
        sts_spec["persistentVolumeClaimRetentionPolicy"] = retention


def _template(
    source: dict[str, Any], labels: dict[str, str], annotations: dict[str, str]
) -> dict[str, Any]:
    template = copy.deepcopy(source)
    meta = template.setdefault("metadata", {})
    meta["labels"] = {**(meta.get("labels") or {}), **labels}
    meta["annotations"] = {**(meta.get("annotations") or {}), **annotations}
    return template


def _group_annotations(lws: LeaderWorkerSet, spec: LeaderWorkerSetSpec) -> dict[str, str]:
    """Template annotations that tell the pod webhook about the group."""
    tmpl = spec.leader_worker_template
    out = {c.SIZE_ANNOTATION: str(tmpl.size)}
    lws_annotations = lws.annotations
    if topology := lws_annotations.get(c.EXCLUSIVE_KEY_ANNOTATION):
        out[c.EXCLUSIVE_KEY_ANNOTATION] = topology
    if (sub := tmpl.sub_group_policy) is not None:
        out[c.SUBGROUP_POLICY_TYPE_ANNOTATION] = str(sub.sub_group_policy_type.value)
        out[c.SUBGROUP_SIZE_ANNOTATION] = str(sub.sub_group_size)
        if topology := lws_annotations.get(c.SUBGROUP_EXCLUSIVE_KEY_ANNOTATION):
            out[c.SUBGROUP_EXCLUSIVE_KEY_ANNOTATION] = topology
    return out


def leader_statefulset(
    lws: LeaderWorkerSet,
    *,
    revision_key: RevisionKey,
    replicas: int,
    partition: int,
    max_unavailable: int,
) -> dict[str, Any]:
    """The apply body of the leader StatefulSet ``<lws>``."""
    spec = lws.spec
    name = lws.name
    tmpl = spec.leader_worker_template
    source = tmpl.leader_template if tmpl.leader_template is not None else tmpl.worker_template
    annotations = _group_annotations(lws, spec)
    if spec.network_config.subdomain_policy == SubdomainPolicy.UNIQUE_PER_REPLICA:
        annotations[c.SUBDOMAIN_POLICY_ANNOTATION] = SubdomainPolicy.UNIQUE_PER_REPLICA.value
    template = _template(
        source,
        {c.WORKER_INDEX_LABEL: "0", c.SET_NAME_LABEL: name, c.REVISION_KEY: revision_key},
        annotations,
    )
    sts_spec: dict[str, Any] = {
        "replicas": replicas,
        "serviceName": name,
        "podManagementPolicy": "Parallel",
        "selector": {"matchLabels": {c.SET_NAME_LABEL: name, c.WORKER_INDEX_LABEL: "0"}},
        "updateStrategy": {
            "type": spec.rollout_strategy.type.value,
            "rollingUpdate": {"partition": partition, "maxUnavailable": max_unavailable},
        },
        "template": template,
    }
    _storage(spec, sts_spec)
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {
            "name": name,
            "namespace": lws.namespace,
            "labels": {**_lws_labels(lws), c.SET_NAME_LABEL: name, c.REVISION_KEY: revision_key},
            "annotations": {**lws.annotations, c.REPLICAS_ANNOTATION: str(spec.replicas)},
            "ownerReferences": [controller_ref(c.API_VERSION, c.KIND, name, _uid(lws))],
        },
        "spec": sts_spec,
    }


def worker_statefulset(
    lws: LeaderWorkerSet,
    spec: LeaderWorkerSetSpec,
    *,
    leader: dict[str, Any],
    node_selector: dict[str, str] | None = None,
    leader_requests_tpus: bool = False,
) -> dict[str, Any]:
    """The worker StatefulSet of the group led by ``leader`` (a pod), from ``spec`` as recorded
    in the leader's revision."""
    meta = leader["metadata"]
    leader_name = meta["name"]
    leader_labels = meta.get("labels") or {}
    name = lws.name
    group_labels = {
        c.GROUP_INDEX_LABEL: leader_labels.get(c.GROUP_INDEX_LABEL, ""),
        c.SET_NAME_LABEL: name,
        c.GROUP_UNIQUE_HASH_LABEL: leader_labels.get(c.GROUP_UNIQUE_HASH_LABEL, ""),
    }
    labels = {**group_labels, c.REVISION_KEY: leader_labels.get(c.REVISION_KEY, "")}
    annotations = _group_annotations(lws, spec)
    annotations[c.LEADER_POD_NAME_ANNOTATION] = leader_name
    if leader_requests_tpus:
        annotations[c.LEADER_REQUESTS_TPUS_ANNOTATION] = "true"
    template = _template(spec.leader_worker_template.worker_template, labels, annotations)
    if node_selector:
        pod_spec = template.setdefault("spec", {})
        pod_spec["nodeSelector"] = {**(pod_spec.get("nodeSelector") or {}), **node_selector}
    unique = spec.network_config.subdomain_policy == SubdomainPolicy.UNIQUE_PER_REPLICA
    sts_spec: dict[str, Any] = {
        "replicas": spec.leader_worker_template.size - 1,
        "serviceName": leader_name if unique else name,
        "podManagementPolicy": "Parallel",
        "ordinals": {"start": 1},
        "selector": {"matchLabels": group_labels},
        "template": template,
    }
    _storage(spec, sts_spec)
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {
            "name": names.worker_statefulset_name(leader_name),
            "namespace": lws.namespace,
            "labels": {**_lws_labels(lws), **labels},
            "annotations": dict(lws.annotations),
            "ownerReferences": [controller_ref("v1", "Pod", leader_name, meta["uid"])],
            # When its leader pod goes, the garbage collector deletes it in the foreground:
            # its pods first. Deleted in the background, it would vanish before them, and Kueue
            # ungates at once (no quota check) a pod whose StatefulSet it cannot find.
            "finalizers": [FOREGROUND_DELETION],
        },
        "spec": sts_spec,
    }


def _lws_labels(lws: LeaderWorkerSet) -> dict[str, str]:
    labels = lws.metadata.get("labels")
    return dict(labels) if isinstance(labels, dict) else {}


def _uid(lws: LeaderWorkerSet) -> str:
    return str(lws.metadata.get("uid", ""))


def as_served(desired: dict[str, Any], observed: dict[str, Any]) -> dict[str, Any]:
    """``desired`` as the API server would store it next to ``observed``: without the
    StatefulSet ``rollingUpdate.maxUnavailable`` when the server drops it (its
    MaxUnavailableStatefulSet feature gate is off, the default of Kubernetes 1.36), so that an
    unchanged StatefulSet is not applied again on every reconcile."""
    served = ((observed.get("spec") or {}).get("updateStrategy") or {}).get("rollingUpdate") or {}
    if "maxUnavailable" in served:
        return desired
    out = copy.deepcopy(desired)
    out["spec"]["updateStrategy"]["rollingUpdate"].pop("maxUnavailable", None)
    return out
