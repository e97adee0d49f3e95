"""volumeClaimTemplates and the retention policy on the real StatefulSet controller, PV binder
and scheduler (upstream's GetPVCApplyConfiguration, pkg/utils/controller/controller_utils.go;
S1 in docs/compatibility.md).

The local cluster has no provisioner: the module makes a StorageClass without one
(``WaitForFirstConsumer``) and enough hostPath PersistentVolumes; the scheduler binds each claim
when it places the pod (docs/local-cluster.md, "Volumes").
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from typing import Any

import pytest

from lws_operator.api import constants as c
from lws_operator.kube.client import ApiError, Kube
from lws_operator.kube.paths import resource_path
from lws_operator.plan.meta import labels_of
from lws_testbed.storage import storage_class, volumes
from lws_testbed.wait import Objects, wait_for_objects
from tests.cluster.controller.helpers import (
    container,
    create_available,
    is_available,
    list_of,
    lws_body,
    lws_path,
    wait_lws,
)

VOLUMES = 20  # claims this module binds, in all: volumes of deleted claims are not reused
CLAIM = "data"


@pytest.fixture(scope="module")
async def storage(kube: Kube) -> AsyncIterator[str]:
    """A StorageClass name, with VOLUMES volumes of it; all removed afterwards."""
    name = f"lws-test-{secrets.token_hex(3)}"
    await kube.create(resource_path("storage.k8s.io/v1", "storageclasses"), storage_class(name))
    pvs = volumes(name, VOLUMES, name)
    for pv in pvs:
        await kube.create(resource_path("v1", "persistentvolumes"), pv)
    try:
        yield name
    finally:
        for pv in pvs:
            await kube.delete(resource_path("v1", "persistentvolumes", name=pv["metadata"]["name"]))
        await kube.delete(resource_path("storage.k8s.io/v1", "storageclasses", name=name))


def claim(storage_class_name: str, size: str = "1Gi", name: str = CLAIM) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": storage_class_name,
            "resources": {"requests": {"storage": size}},
        },
    }


def pod_spec(role: str) -> dict[str, Any]:
    return {"containers": [container(role, volumeMounts=[{"name": CLAIM, "mountPath": "/data"}])]}


def lws_with_claims(
    name: str, storage_class_name: str, *, when_scaled: str, when_deleted: str, **kw: Any
) -> dict[str, Any]:
    body = lws_body(name, leader_spec=pod_spec("leader"), worker_spec=pod_spec("worker"), **kw)
    template = body["spec"]["leaderWorkerTemplate"]
    template["volumeClaimTemplates"] = [claim(storage_class_name)]
    template["persistentVolumeClaimRetentionPolicy"] = {
        "whenScaled": when_scaled,
        "whenDeleted": when_deleted,
    }
    return body


def pod_names(name: str, groups: range, size: int) -> list[str]:
    return [f"{name}-{g}" + (f"-{w}" if w else "") for g in groups for w in range(size)]


def short_claims(objs: Objects) -> str:
    return (
        "\n".join(
            f"- {k}: {o.get('status', {}).get('phase')} volume={o['spec'].get('volumeName')} "
            f"deleting={bool(o['metadata'].get('deletionTimestamp'))}"
            for k, o in sorted(objs.items())
        )
        or "(no claims)"
    )


async def wait_claims(kube: Kube, ns: str, names: list[str], what: str) -> Objects:
    """Wait until the namespace's claims are exactly ``names``, all Bound."""
    want = sorted(f"{ns}/{n}" for n in names)

    def done(objs: Objects) -> bool:
        return sorted(objs) == want and all(
            o.get("status", {}).get("phase") == "Bound" for o in objs.values()
        )

    return await wait_for_objects(
        kube,
        resource_path("v1", "persistentvolumeclaims", namespace=ns),
        done,
        timeout=90,
        what=what,
        summary=short_claims,
    )


async def test_a_claim_per_pod_deleted_on_scale_down_and_delete(
    kube: Kube, lws_namespace: str, storage: str
) -> None:
    ns, name, size = lws_namespace, "vol", 3
    body = lws_with_claims(
        name, storage, when_scaled="Delete", when_deleted="Delete", replicas=2, size=size
    )
    await create_available(kube, ns, body)
    pods = pod_names(name, range(2), size)
    await wait_claims(kube, ns, [f"{CLAIM}-{p}" for p in pods], "a bound claim for every pod")
    for pod_name in pods:
        pod = await kube.get(resource_path("v1", "pods", namespace=ns, name=pod_name))
        volume = {v["name"]: v for v in pod["spec"]["volumes"]}[CLAIM]
        assert volume["persistentVolumeClaim"]["claimName"] == f"{CLAIM}-{pod_name}"
    for sts in (await list_of(kube, "apps/v1", "statefulsets", ns, name)).values():
        assert sts["spec"]["persistentVolumeClaimRetentionPolicy"] == {
            "whenScaled": "Delete",
            "whenDeleted": "Delete",
        }

    # scale down: the leader's claim goes (whenScaled), and so do the workers' (their
    # StatefulSet is deleted: whenDeleted)
    await kube.patch(lws_path(ns, name), {"spec": {"replicas": 1}})
    await wait_lws(kube, ns, name, lambda o: is_available(o, 1), "Available with 1 group")
    await wait_claims(
        kube, ns, [f"{CLAIM}-{p}" for p in pod_names(name, range(1), size)], "group 1's gone"
    )

    await kube.delete(lws_path(ns, name))
    await wait_claims(kube, ns, [], "every claim gone with the LeaderWorkerSet")


async def test_retained_claims_survive_scale_down_and_delete(
    kube: Kube, lws_namespace: str, storage: str
) -> None:
    ns, name, size = lws_namespace, "keep", 3
    body = lws_with_claims(
        name, storage, when_scaled="Delete", when_deleted="Retain", replicas=2, size=size
    )
    await create_available(kube, ns, body)
    everything = [f"{CLAIM}-{p}" for p in pod_names(name, range(2), size)]
    await wait_claims(kube, ns, everything, "a bound claim for every pod")

    # whenScaled applies to the leader StatefulSet, which scales down; the group's worker
    # StatefulSet is deleted instead, so its claims follow whenDeleted: Retain
    await kube.patch(lws_path(ns, name), {"spec": {"replicas": 1}})
    await wait_lws(kube, ns, name, lambda o: is_available(o, 1), "Available with 1 group")
    kept = [n for n in everything if n != f"{CLAIM}-{name}-1"]
    await wait_claims(kube, ns, kept, "only the scaled-down leader's claim gone")

    await kube.delete(lws_path(ns, name))
    await wait_for_objects(
        kube,
        resource_path("v1", "pods", namespace=ns),
        lambda objs: not objs,
        timeout=60,
        what="all pods gone",
        label_selector=f"{c.SET_NAME_LABEL}={name}",
    )
    claims = await wait_claims(kube, ns, kept, "claims retained after the delete")
    assert all(not o["metadata"].get("deletionTimestamp") for o in claims.values())


async def test_changed_claims_keep_the_leaders_and_reach_new_workers(
    kube: Kube, lws_namespace: str, storage: str
) -> None:
    """Kubernetes (1.31 to 1.37) forbids changing a StatefulSet's volumeClaimTemplates. A changed
    claim size rolls the groups; the leader StatefulSet keeps its claims (a Warning says so),
    new worker StatefulSets get the new size. A renamed claim is not applied at all."""
    ns, name = lws_namespace, "resize"
    body = lws_with_claims(
        name, storage, when_scaled="Delete", when_deleted="Delete", replicas=1, size=2
    )
    await create_available(kube, ns, body)
    leader_sts = await kube.get(resource_path("apps/v1", "statefulsets", namespace=ns, name=name))
    old_key = labels_of(leader_sts)[c.REVISION_KEY]

    # what Kubernetes answers anyone changing a StatefulSet's claims (a dry run): up to 1.36
    # "spec: Forbidden: updates to statefulset spec for fields other than ...", from 1.37
    # "spec.volumeClaimTemplates: ... field is immutable"
    sts_path = resource_path("apps/v1", "statefulsets", namespace=ns, name=name)
    with pytest.raises(ApiError) as refused:
        await kube.request(
            "PATCH",
            sts_path,
            query={"dryRun": "All"},
            body={"spec": {"volumeClaimTemplates": [claim(storage, "2Gi")]}},
            content_type="application/merge-patch+json",
        )
    assert refused.value.status == 422, refused.value.message
    assert (
        "spec: Forbidden: updates to statefulset spec for fields other than"
        in refused.value.message
        or (
            "spec.volumeClaimTemplates" in refused.value.message
            and "field is immutable" in refused.value.message
        )
    ), refused.value.message

    template = body["spec"]["leaderWorkerTemplate"]
    template["volumeClaimTemplates"] = [claim(storage, "2Gi")]
    await kube.patch(lws_path(ns, name), {"spec": {"leaderWorkerTemplate": template}})
    await wait_event(kube, ns, name, "VolumeClaimTemplatesKept")

    def rolled(o: dict[str, Any]) -> bool:
        return is_available(o, 1) and o["status"].get("updatedReplicas") == 1

    await wait_lws(kube, ns, name, rolled, "rolled to the new revision")
    sets = await list_of(kube, "apps/v1", "statefulsets", ns, name)
    assert labels_of(sets[name])[c.REVISION_KEY] != old_key
    assert storage_of(sets[name]) == "1Gi"
    assert storage_of(sets[f"{name}-0"]) == "2Gi"
    claims = await wait_claims(kube, ns, [f"{CLAIM}-{name}-0", f"{CLAIM}-{name}-0-1"], "bound")
    sizes = {
        k.split("/")[1]: o["spec"]["resources"]["requests"]["storage"] for k, o in claims.items()
    }
    assert sizes == {f"{CLAIM}-{name}-0": "1Gi", f"{CLAIM}-{name}-0-1": "2Gi"}

    # a renamed claim cannot be applied: nothing changes, a Warning says what to do
    key = labels_of(sets[name])[c.REVISION_KEY]
    template["volumeClaimTemplates"] = [claim(storage, "2Gi", name="other")]
    await kube.patch(lws_path(ns, name), {"spec": {"leaderWorkerTemplate": template}})
    note = await wait_event(kube, ns, name, "FailedUpdate")
    assert "claim names" in note, note
    leader_sts = await kube.get(resource_path("apps/v1", "statefulsets", namespace=ns, name=name))
    assert labels_of(leader_sts)[c.REVISION_KEY] == key


def storage_of(sts: dict[str, Any]) -> str:
    (template,) = sts["spec"]["volumeClaimTemplates"]
    return str(template["spec"]["resources"]["requests"]["storage"])


async def wait_event(kube: Kube, ns: str, name: str, reason: str) -> str:
    """The note of the first Warning event ``reason`` about LWS ``name``."""
    events = await wait_for_objects(
        kube,
        resource_path("events.k8s.io/v1", "events", namespace=ns),
        lambda objs: any(e.get("reason") == reason for e in objs.values()),
        timeout=60,
        what=f"a {reason} event about {name}",
        # the leader StatefulSet shares the name and gets its own Warnings from kube
        field_selector=f"regarding.kind=LeaderWorkerSet,regarding.name={name},type=Warning",
        summary=lambda objs: "\n".join(
            f"- {e.get('reason')}: {e.get('note')}" for e in objs.values()
        ),
    )
    return next(str(e.get("note")) for e in events.values() if e.get("reason") == reason)
