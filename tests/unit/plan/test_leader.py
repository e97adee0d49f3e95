"""The leader StatefulSet's next apply and its events (plan/lws/leader.py)."""

from __future__ import annotations

import copy
from typing import Any

from lws_operator.api import constants as c
from lws_operator.api.models import LeaderWorkerSet
from lws_operator.plan.lws.leader import foreign_leader, plan_leader
from lws_operator.plan.lws.rollout import RolloutPlan
from tests.unit.api.lws_testdata import base_object


def lws(annotations: dict[str, str] | None = None) -> LeaderWorkerSet:
    body = base_object("demo")
    body["metadata"].update(namespace="ns", uid="lws-uid", annotations=annotations or {})
    return LeaderWorkerSet.model_validate(body)


def applied(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` as stored after an apply by "lws": with every field it set owned by it."""

    def fields(value: Any) -> dict[str, Any]:
        if isinstance(value, dict):
            return {f"f:{k}": fields(v) for k, v in value.items() if v is not None}
        return {}

    obj = copy.deepcopy(body)
    tracked = {k: v for k, v in body.items() if k not in ("apiVersion", "kind")}
    tracked["metadata"] = {
        k: v for k, v in body["metadata"].items() if k not in ("name", "namespace")
    }
    obj["metadata"]["uid"] = "sts-uid"
    obj["metadata"]["managedFields"] = [
        {"manager": "lws", "operation": "Apply", "fieldsV1": fields(tracked)}
    ]
    return obj


AT_REST = RolloutPlan(partition=0, replicas=2, sts_max_unavailable=1)


def test_a_new_leader_statefulset_is_created_and_announced() -> None:
    step = plan_leader(lws(), current=None, key="k", rollout=AT_REST, revision_changed=False)
    assert step.apply is not None
    assert [e.note for e in step.events] == ["Created leader statefulset demo"]
    assert step.failed.failed("nope").note == "Failed to create leader statefulset demo: nope"


def test_nothing_changes_nothing_is_applied() -> None:
    first = plan_leader(lws(), current=None, key="k", rollout=AT_REST, revision_changed=False)
    assert first.apply is not None
    again = plan_leader(
        lws(), current=applied(first.apply), key="k", rollout=AT_REST, revision_changed=False
    )
    assert again.apply is None and again.events == ()


def test_an_annotation_removed_from_the_lws_is_applied_at_once() -> None:
    exclusive = lws({c.EXCLUSIVE_KEY_ANNOTATION: "rack"})
    first = plan_leader(exclusive, current=None, key="k", rollout=AT_REST, revision_changed=False)
    assert first.apply is not None
    current = applied(first.apply)
    step = plan_leader(lws(), current=current, key="k", rollout=AT_REST, revision_changed=False)
    assert step.apply is not None
    assert c.EXCLUSIVE_KEY_ANNOTATION not in step.apply["metadata"]["annotations"]
    template = step.apply["spec"]["template"]["metadata"]["annotations"]
    assert c.EXCLUSIVE_KEY_ANNOTATION not in template


def test_partition_moves_are_announced_both_ways_and_surge_releases_too() -> None:
    first = plan_leader(lws(), current=None, key="k", rollout=AT_REST, revision_changed=False)
    assert first.apply is not None
    current = applied(first.apply)
    current["spec"]["updateStrategy"]["rollingUpdate"]["partition"] = 3
    current["spec"]["replicas"] = 4
    down = RolloutPlan(partition=2, replicas=3, sts_max_unavailable=1, released_surge=(3, 3))
    step = plan_leader(lws(), current=current, key="k", rollout=down, revision_changed=False)
    assert [(e.reason, e.action, e.note) for e in step.events] == [
        ("GroupsProgressing", "Delete", "deleting surge replica demo-3"),
        ("GroupsUpdating", "Update", "Updating replica 2"),
    ]
    many = RolloutPlan(partition=0, replicas=2, sts_max_unavailable=1, released_surge=(2, 3))
    step = plan_leader(lws(), current=current, key="k", rollout=many, revision_changed=False)
    assert [e.note for e in step.events] == [
        "deleting surge replicas from demo-2 to demo-3",
        "Updating replicas 0 to 2 (inclusive)",
    ]
    up = RolloutPlan(partition=4, replicas=4, sts_max_unavailable=1)
    step = plan_leader(lws(), current=current, key="k", rollout=up, revision_changed=False)
    assert [e.reason for e in step.events] == ["GroupsUpdating"]  # upstream: any change
    step = plan_leader(lws(), current=current, key="k2", rollout=up, revision_changed=True)
    assert step.events == ()  # a new revision: the rollout starts, no Updating event yet


def test_a_statefulset_the_lws_does_not_control_blocks_everything() -> None:
    ours = {"metadata": {"ownerReferences": [{"uid": "lws-uid", "controller": True}]}}
    assert foreign_leader(lws(), ours) is None and foreign_leader(lws(), None) is None
    event = foreign_leader(lws(), {"metadata": {"name": "demo"}})
    assert event is not None and event.type == "Warning" and "not owned" in event.note


def test_a_field_the_server_drops_is_still_owned_and_changes_nothing() -> None:
    """MaxUnavailableStatefulSet is off in Kubernetes 1.36: the server drops the StatefulSet's
    maxUnavailable, yet records the field as the applier's (seen on the local cluster)."""
    first = plan_leader(lws(), current=None, key="k", rollout=AT_REST, revision_changed=False)
    assert first.apply is not None
    current = applied(first.apply)
    del current["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"]
    fields = current["metadata"]["managedFields"][0]["fieldsV1"]
    assert "f:maxUnavailable" in fields["f:spec"]["f:updateStrategy"]["f:rollingUpdate"]
    again = plan_leader(lws(), current=current, key="k", rollout=AT_REST, revision_changed=False)
    assert again.apply is None
