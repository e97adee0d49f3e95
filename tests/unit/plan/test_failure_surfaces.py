"""Where failure handling shows (issue 16): node-health reports, the Failed condition and
ready accounting, the Services' publishNotReadyAddresses, and what is not revisioned."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from lws_operator.api import constants as c
from lws_operator.api.models import LeaderWorkerSetSpec, NetworkConfig
from lws_operator.plan.lws import revision as rev
from lws_operator.plan.lws.groups import Group
from lws_operator.plan.lws.nodehealth import node_problems, node_state
from lws_operator.plan.lws.services import publish_not_ready, publish_patches, replica_service
from lws_operator.plan.lws.status import compute_status
from lws_operator.plan.meta import name_of
from tests.unit.plan.groups import CURRENT, group, leader_pod


def node(ready: str | None = "True", *taints: str) -> dict[str, Any]:
    conditions = [] if ready is None else [{"type": "Ready", "status": ready}]
    return {
        "metadata": {"name": "n"},
        "spec": {"taints": [{"key": t, "effect": "NoExecute"} for t in taints]},
        "status": {"conditions": conditions},
    }


OOS = ("node.kubernetes.io/out-of-service",)


def test_node_states() -> None:
    assert node_state(node()) is None
    assert node_state(None) == "gone"
    assert node_state(node("False")) == "NotReady"
    assert node_state(node("Unknown")) == "unreachable (Ready=Unknown)"
    assert node_state(node(None)) == "unreachable (Ready=Unknown)"
    assert node_state(node("True", "node.kubernetes.io/unreachable")) == "unreachable"
    assert node_state(node("True", "node.kubernetes.io/out-of-service")) == "out of service"


def test_each_pod_of_a_group_on_an_unhealthy_node_is_reported() -> None:
    leader = leader_pod(0)
    leader["spec"] = {"nodeName": "bad"}
    worker = {"metadata": {"name": "test-sample-0-1", "uid": "w"}, "spec": {"nodeName": "good"}}
    groups = [Group(0, leader, None, (worker,)), Group(1, None)]
    (problem,) = node_problems(groups, {"bad": node("False"), "good": node()})
    assert (problem.group, problem.pod, problem.node, problem.state) == (
        0,
        "test-sample-0",
        "bad",
        "NotReady",
    )
    assert problem.event.type == "Warning" and problem.event.reason == "GroupNodeNotReady"
    assert problem.event.note.startswith("group 0: pod test-sample-0 on node bad: NotReady;")


NODES = {"good": node(), "good2": node(), "bad": node("False"), "out": node("True", *OOS)}


@given(
    st.lists(
        st.lists(st.sampled_from(["good", "good2", "bad", "out", "gone", None]), max_size=4),
        max_size=6,
    )
)
def test_node_problems_are_every_member_on_a_node_not_healthy(placements: Any) -> None:
    """Judging each node and each set of nodes once (groups share them), and passing groups
    on nodes known healthy unjudged, finds what judging every member pod finds."""
    groups = []
    for i, nodes in enumerate(placements):
        pods = [
            {"metadata": {"name": f"p{i}-{j}", "uid": f"u{i}-{j}"}, "spec": {"nodeName": n}}
            for j, n in enumerate(nodes)
        ]
        groups.append(Group(i, pods[0], None, tuple(pods[1:])) if pods else Group(i, None))
    plain = [
        (g.index, name_of(p), n, node_state(NODES.get(n)))
        for g in groups
        for p in g.members
        if (n := p["spec"]["nodeName"]) and node_state(NODES.get(n)) is not None
    ]
    found = [(x.group, x.pod, x.node, x.state) for x in node_problems(groups, NODES)]
    assert found == plain
    # The cache's healthy nodes (good, good2) pass their groups unjudged: the same problems.
    healthy = frozenset(n for n, body in NODES.items() if node_state(body) is None)
    fast = node_problems(groups, NODES, healthy)
    assert [(x.group, x.pod, x.node, x.state) for x in fast] == plain


def status(failed: tuple[int, ...], old: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return compute_status(
        groups=[group(0), group(1)],
        key=CURRENT,
        replicas=2,
        partition=0,
        size=2,
        sts_status_replicas=2,
        generation=3,
        lws_name="x",
        old_conditions=old or [],
        now="2026-12-01T12:00:00Z",
        failed=failed,
        max_restarts=2,
    ).status


def test_a_failed_group_is_not_ready_and_sets_failed() -> None:
    assert "Failed" not in {x["type"] for x in status(())["conditions"]}, "absent until needed"
    s = status((1,))
    assert s["readyReplicas"] == 1
    failed = next(x for x in s["conditions"] if x["type"] == c.CONDITION_FAILED)
    assert failed["status"] == "True" and failed["reason"] == "MaxGroupRestartsExceeded"
    assert failed["message"].startswith("group(s) 1 exceeded maxGroupRestarts (2)")
    assert not any(
        x["type"] == c.CONDITION_AVAILABLE and x["status"] == "True" for x in s["conditions"]
    )
    cleared = status((), old=s["conditions"])
    failed = next(x for x in cleared["conditions"] if x["type"] == c.CONDITION_FAILED)
    assert failed["status"] == "False" and failed["reason"] == "MaxGroupRestartsExceeded"
    again = status((1,), old=s["conditions"])
    assert again["conditions"] == s["conditions"], "a condition that holds keeps its time"


def test_unset_publishes_not_ready_addresses_as_v0_10_0_and_false_does_not() -> None:
    assert publish_not_ready(NetworkConfig()) is True
    assert publish_not_ready(NetworkConfig(publish_not_ready_addresses=True)) is True
    assert publish_not_ready(NetworkConfig(publish_not_ready_addresses=False)) is False
    leader = {"metadata": {"name": "x-0", "namespace": "ns", "uid": "l", "labels": {}}}
    assert replica_service("x", leader, False)["spec"]["publishNotReadyAddresses"] is False


def test_a_changed_field_patches_our_services_only() -> None:
    def svc(name: str, owner_kind: str, owner: str, publish: bool | None) -> dict[str, Any]:
        return {
            "metadata": {
                "name": name,
                "resourceVersion": "5",
                "ownerReferences": [
                    {"controller": True, "kind": owner_kind, "name": owner, "uid": owner}
                ],
            },
            "spec": {"publishNotReadyAddresses": publish},
        }

    services = {
        "x": svc("x", c.KIND, "lws-uid", True),
        "x-0": svc("x-0", "Pod", "x-0", None),
        "y": svc("y", "Deployment", "d", True),
    }
    patches = publish_patches(services, lws_name="x", lws_uid="lws-uid", publish=False)
    assert patches == [
        ("x", {"metadata": {"resourceVersion": "5"}, "spec": {"publishNotReadyAddresses": False}})
    ]
    on = publish_patches(services, lws_name="x", lws_uid="lws-uid", publish=True)
    assert [name for name, _ in on] == ["x-0"]


def test_the_budget_and_publishing_are_not_revisioned() -> None:
    def spec(**extra: Any) -> LeaderWorkerSetSpec:
        return LeaderWorkerSetSpec.model_validate(
            {
                "leaderWorkerTemplate": {
                    "size": 2,
                    "workerTemplate": {"spec": {"containers": [{"name": "w", "image": "i"}]}},
                    **extra.get("lwt", {}),
                },
                "networkConfig": extra.get("net", {}),
            }
        )

    plain = spec()
    tuned = spec(lwt={"maxGroupRestarts": 3}, net={"publishNotReadyAddresses": False})
    assert rev.revision_key(plain) == rev.revision_key(tuned), "changing them rolls nothing"
    stored = {"data": rev.revision_content(plain)}
    assert rev.matches(stored, tuned)
    # A revision written with the fields (a future upstream) still matches, and the live
    # values win over what a revision recorded.
    with_fields = {
        "data": {
            "spec": {
                "leaderWorkerTemplate": {
                    **tuned.leader_worker_template.to_dict(),
                    "maxGroupRestarts": 9,
                },
                "networkConfig": {"publishNotReadyAddresses": True},
            }
        }
    }
    assert rev.matches(with_fields, plain)
    at = rev.spec_at_revision(tuned, with_fields)
    assert at.leader_worker_template.max_group_restarts == 3
    assert at.network_config.publish_not_ready_addresses is False
