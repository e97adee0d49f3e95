from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from lws_operator.api import constants as c
from lws_operator.plan.diff import contains
from lws_operator.plan.lws.groups import observe_groups
from lws_operator.plan.lws.services import replica_service, shared_service
from lws_operator.plan.meta import pod_ready, statefulset_ready


def test_shared_service() -> None:
    svc = shared_service("sample", "ns", "uid")
    assert svc["metadata"]["name"] == "sample"
    assert svc["metadata"]["labels"] == {c.SET_NAME_LABEL: "sample"}
    assert svc["spec"] == {
        "clusterIP": "None",
        "publishNotReadyAddresses": True,
        "selector": {c.SET_NAME_LABEL: "sample"},
    }
    assert svc["metadata"]["ownerReferences"][0]["kind"] == c.KIND


def test_replica_service_is_owned_by_its_leader() -> None:
    leader = {
        "metadata": {
            "name": "sample-2",
            "namespace": "ns",
            "uid": "p-uid",
            "labels": {c.GROUP_INDEX_LABEL: "2"},
        }
    }
    svc = replica_service("sample", leader)
    assert svc["metadata"]["name"] == "sample-2"
    assert svc["spec"]["selector"] == {c.SET_NAME_LABEL: "sample", c.GROUP_INDEX_LABEL: "2"}
    owner = svc["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["uid"], owner["controller"]) == ("Pod", "p-uid", True)


def test_contains_allows_server_defaults_but_not_changes() -> None:
    observed = {"a": 1, "b": {"c": [1, {"d": 2, "e": 3}]}, "x": "defaulted"}
    assert contains(observed, {"a": 1, "b": {"c": [1, {"d": 2}]}})
    assert contains(observed, {"a": 1, "z": None})
    assert not contains(observed, {"a": 2})
    assert not contains(observed, {"b": {"c": [1]}})
    assert not contains(observed, {"missing": 0})
    assert not contains({"v": 1}, {"v": True})


json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda kids: (
        st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=2), kids, max_size=3)
    ),
    max_leaves=10,
)


@given(json)
def test_contains_is_reflexive(value: Any) -> None:
    assert contains(value, value)


def pod(name: str, *, ready: bool, owner: str = "sts-uid", **labels: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "uid": f"{name}-uid",
            "labels": {c.WORKER_INDEX_LABEL: "0", **labels},
            "ownerReferences": [{"uid": owner, "controller": True}],
        },
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def workers(name: str, owner: str, *, ready: bool, key: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "labels": {c.REVISION_KEY: key},
            "ownerReferences": [{"uid": owner, "controller": True}],
        },
        "spec": {"replicas": 3},
        "status": {
            "availableReplicas": 3 if ready else 1,
            "currentRevision": "a",
            "updateRevision": "a",
        },
    }


def test_groups_from_pods_and_statefulsets() -> None:
    pods = {
        "s-0": pod("s-0", ready=True, **{c.GROUP_INDEX_LABEL: "0", c.REVISION_KEY: "k"}),
        "s-1": pod("s-1", ready=True, **{c.GROUP_INDEX_LABEL: "1", c.REVISION_KEY: "old"}),
        # looks like a leader but is owned by something else: not part of the group
        "s-2": pod("s-2", ready=True, owner="other", **{c.GROUP_INDEX_LABEL: "2"}),
    }
    stss = {
        "s-0": workers("s-0", "s-0-uid", ready=True, key="k"),
        "s-1": workers("s-1", "previous-leader-uid", ready=True, key="old"),
    }
    g0, g1, g2, g3 = observe_groups(
        lws_name="s", count=4, leader_sts_uid="sts-uid", pods=pods, statefulsets=stss
    )
    assert g0.ready(4) and g0.updated(4, "k")
    assert g1.leader is not None and g1.workers is None  # a stale worker sts is not the group's
    assert not g1.ready(4) and g1.ready(1)
    assert g2.leader is None and g3.leader is None


def test_readiness_rules() -> None:
    assert pod_ready(pod("p", ready=True))
    assert not pod_ready({**pod("p", ready=True), "status": {"phase": "Pending"}})
    assert statefulset_ready(workers("w", "u", ready=True, key="k"))
    assert not statefulset_ready(workers("w", "u", ready=False, key="k"))
    rolling = workers("w", "u", ready=True, key="k")
    rolling["status"]["updateRevision"] = "b"
    assert not statefulset_ready(rolling)
