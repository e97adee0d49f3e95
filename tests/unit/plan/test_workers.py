"""What a group needs next on the workers' side (plan/lws/workers.py)."""

from __future__ import annotations

from typing import Any

from lws_operator.api import constants as c
from lws_operator.api.models import LeaderWorkerSet
from lws_operator.plan.lws.gang import GangApi
from lws_operator.plan.lws.groups import Group
from lws_operator.plan.lws.workers import is_foreign_workers, plan_workers
from tests.unit.api.lws_testdata import base_object


def lws(**changes: Any) -> LeaderWorkerSet:
    body = base_object("demo")
    body["metadata"].update(namespace="ns", uid="lws-uid", annotations=changes.pop("ann", {}))
    body["spec"].update(changes)
    return LeaderWorkerSet.model_validate(body)


def leader(*, ready: bool = True, node: str | None = "n1", deleting: bool = False) -> Any:
    meta: dict[str, Any] = {
        "name": "demo-0",
        "namespace": "ns",
        "uid": "leader-uid",
        "labels": {c.GROUP_INDEX_LABEL: "0", c.REVISION_KEY: "k", c.WORKER_INDEX_LABEL: "0"},
    }
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {
        "metadata": meta,
        "spec": {"nodeName": node},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def plan(model: LeaderWorkerSet, group: Group, **kw: Any) -> Any:
    args: dict[str, Any] = {
        "spec": model.spec,
        "services": {},
        "statefulsets": {},
        "podgroups": {},
        "nodes": {"n1": {"metadata": {"name": "n1", "labels": {"rack": "r1"}}}},
        "gang_api": None,
    }
    args.update(kw)
    return plan_workers(model, group, **args)


def test_the_worker_statefulset_is_created_from_the_leaders_revision() -> None:
    out = plan(lws(), Group(0, leader()))
    assert out.workers is not None and out.workers["metadata"]["name"] == "demo-0"
    assert out.acts
    assert out.created.note == "Created worker statefulset for leader pod demo-0"
    assert (
        out.failed.failed("x").note
        == "Failed to create worker statefulset for leader pod demo-0: x"
    )


def test_nothing_for_a_missing_or_deleting_leader_and_wait_for_its_revision() -> None:
    assert plan(lws(), Group(0, None)) == type(plan(lws(), Group(0, None)))()
    assert not Group(0, None).leader_live and not Group(0, leader(deleting=True)).leader_live
    assert Group(0, leader()).leader_live
    assert plan(lws(), Group(0, leader(deleting=True))).workers is None
    pending = plan(lws(), Group(0, leader()), spec=None)
    assert pending.workers is None and pending.retry == 1.0
    assert not pending.acts  # only a look again later: the pass skips the group


def test_a_group_with_its_workers_needs_nothing() -> None:
    workers = {"metadata": {"name": "demo-0", "uid": "w"}}
    out = plan(lws(), Group(0, leader(), workers=workers))
    assert out == type(out)() and not out.acts


def test_leader_ready_waits_for_the_leader() -> None:
    out = plan(lws(startupPolicy="LeaderReady"), Group(0, leader(ready=False)))
    assert out.workers is None and out.retry is None  # the leader's readiness wakes us


def test_a_previous_incarnations_statefulset_is_deleted_first_a_foreign_one_reported() -> None:
    stale = {
        "metadata": {
            "name": "demo-0",
            "uid": "s",
            "ownerReferences": [
                {"kind": "Pod", "name": "demo-0", "uid": "old-leader", "controller": True}
            ],
        }
    }
    out = plan(lws(), Group(0, leader()), statefulsets={"demo-0": stale})
    assert out.delete_stale is stale and out.workers is None and out.acts
    foreign = {"metadata": {"name": "demo-0", "uid": "f"}}
    out = plan(lws(), Group(0, leader()), statefulsets={"demo-0": foreign})
    assert out.delete_stale is None and out.workers is None and out.retry == 15.0
    assert out.acts  # its warning
    assert "not owned by leader pod demo-0" in out.events[0].note
    assert is_foreign_workers(foreign) and not is_foreign_workers(stale)


def test_exclusive_placement_follows_the_leaders_topology_domain() -> None:
    exclusive = lws(ann={c.EXCLUSIVE_KEY_ANNOTATION: "rack"})
    out = plan(exclusive, Group(0, leader()))
    assert out.workers is not None
    assert out.workers["spec"]["template"]["spec"]["nodeSelector"] == {"rack": "r1"}
    unscheduled = plan(exclusive, Group(0, leader(node=None)))
    assert unscheduled.workers is None and unscheduled.events == ()
    unknown = plan(exclusive, Group(0, leader(node="gone")))
    assert unknown.workers is None and unknown.retry == 30.0
    assert unknown.events[0].note == "node gone of leader pod demo-0 does not exist"


def test_unique_per_replica_gets_its_service_and_gangs_their_pod_group() -> None:
    model = lws(networkConfig={"subdomainPolicy": "UniquePerReplica"})
    native = GangApi("kubernetes", "scheduling.k8s.io/v1beta1")
    out = plan(model, Group(0, leader()), spec=model.spec, gang_api=native)
    assert out.service is not None and out.service["metadata"]["name"] == "demo-0"
    assert out.pod_group is not None and out.pod_group["metadata"]["name"] == "demo-0-k"
    assert out.pod_group["apiVersion"] == "scheduling.k8s.io/v1beta1"
    done = plan(
        model,
        Group(0, leader()),
        spec=model.spec,
        gang_api=native,
        services={"demo-0": {}},
        podgroups={"demo-0-k": {}},
    )
    assert done.service is None and done.pod_group is None and done.workers is not None
    only_service = plan(model, Group(0, leader(), workers={"metadata": {"name": "demo-0"}}))
    assert only_service.service is not None and only_service.acts


def test_a_leader_asking_for_tpus_tells_its_workers() -> None:
    tpu = leader()
    tpu["spec"]["containers"] = [{"name": "c", "resources": {"limits": {c.TPU_RESOURCE_NAME: "4"}}}]
    out = plan(lws(), Group(0, tpu))
    assert out.workers is not None
    annotations = out.workers["spec"]["template"]["metadata"]["annotations"]
    assert annotations[c.LEADER_REQUESTS_TPUS_ANNOTATION] == "true"
