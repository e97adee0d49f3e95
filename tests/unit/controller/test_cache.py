from lws_operator.api import constants as c
from lws_operator.controller.lws.cache import Cache, project_node, project_pod, project_revision


def deleted_pod(name: str, owner: str, worker: str = "1") -> dict[str, object]:
    return {
        "metadata": {
            "name": name,
            "uid": f"{name}-uid",
            "labels": {c.WORKER_INDEX_LABEL: worker, c.GROUP_INDEX_LABEL: "0"},
            "ownerReferences": [{"uid": owner, "controller": True}],
        }
    }


def test_deleted_worker_pods_live_with_their_worker_statefulset_and_their_lws() -> None:
    """Only observations write the cache: a deleted worker pod's record is the latest of its
    name, dropped with its worker StatefulSet or its LWS, never by a reader."""
    cache = Cache()
    a, b = ("ns", "a"), ("ns", "b")
    store: dict[tuple[str, str], list[dict[str, object]]] = {
        a: [{"metadata": {"name": "a"}}],
        b: [{"metadata": {"name": "b"}}],
    }
    cache.bind({"lws_objects": store})
    cache.changed("lws_pods", "DELETED", a, deleted_pod("a-0-1", "sts-uid"))
    cache.changed("lws_pods", "DELETED", a, deleted_pod("a-0-2", "sts-uid"))
    cache.changed("lws_pods", "DELETED", a, deleted_pod("a-1-1", "other-sts"))
    cache.changed(
        "lws_pods", "DELETED", a, deleted_pod("a-0", "leader-sts", worker="0")
    )  # a leader: no record
    cache.changed("lws_pods", "DELETED", a, {"metadata": {"name": "no-owner"}})
    assert [r.name for r in cache.observe(a).lost] == ["a-0-1", "a-0-2", "a-1-1"]
    assert cache.observe(b).lost == ()
    again = deleted_pod("a-0-1", "sts-uid")
    again["metadata"]["uid"] = "second"  # type: ignore[index]
    cache.changed("lws_pods", "DELETED", a, again)  # the same pod name deleted again
    assert sorted((r.name, r.uid) for r in cache.observe(a).lost) == [
        ("a-0-1", "second"),
        ("a-0-2", "a-0-2-uid"),
        ("a-1-1", "a-1-1-uid"),
    ]
    sts = {"metadata": {"name": "a-0", "uid": "sts-uid"}}
    cache.changed("lws_statefulsets", "MODIFIED", a, sts)
    assert len(cache.observe(a).lost) == 3, "its worker StatefulSet still exists"
    cache.changed("lws_statefulsets", "DELETED", a, sts)
    assert [r.name for r in cache.observe(a).lost] == ["a-1-1"]
    del store[a]
    assert cache.observe(a).lws is None and cache.observe(a).lost == ()
    cache.changed("lws_pods", "DELETED", a, deleted_pod("a-1-2", "other-sts"))
    assert cache.observe(a).lws is None and cache.observe(a).lost == ()
    assert cache._lost == {} and cache._terminating == {}, "nothing kept of a gone LWS"


def test_pod_projection_keeps_what_the_planner_reads() -> None:
    pod = {
        "metadata": {"name": "p", "uid": "u", "labels": {"x": "y"}, "managedFields": [1] * 50},
        "spec": {
            "nodeName": "n",
            "containers": [{"name": "c", "resources": {"limits": {"google.com/tpu": "4"}}}],
        },
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "c", "restartCount": 2, "imageID": "sha"}],
        },
    }
    pod["spec"]["initContainers"] = [{"name": "i", "resources": {"requests": {"cpu": "1"}}}]
    pod["status"]["initContainerStatuses"] = [{"name": "i", "restartCount": 1, "ready": True}]
    out = project_pod(pod)
    assert "managedFields" not in out["metadata"]
    # A subset of the pod: every field means what it means in the API.
    assert out["spec"] == {
        "nodeName": "n",
        "containers": [{"name": "c", "resources": {"limits": {"google.com/tpu": "4"}}}],
    }
    assert out["status"]["containerStatuses"] == [{"name": "c", "restartCount": 2}]
    assert out["status"]["initContainerStatuses"] == [{"name": "i", "restartCount": 1}]
    assert out["status"]["phase"] == "Running"


def test_node_projection_keeps_labels_readiness_and_the_out_of_service_taint() -> None:
    node = {
        "metadata": {"name": "n", "labels": {"zone": "a"}, "annotations": {"big": "x" * 99}},
        "spec": {
            "unschedulable": True,
            "taints": [
                {"key": "node.kubernetes.io/out-of-service", "effect": "NoExecute"},
                {"key": "gpu", "effect": "NoSchedule"},
            ],
        },
        "status": {
            "conditions": [
                {"type": "Ready", "status": "False", "message": "kubelet stopped"},
                {"type": "MemoryPressure", "status": "False"},
            ],
            "images": [{"names": ["big"]}] * 50,
        },
    }
    assert project_node(node) == {
        "metadata": {"name": "n", "labels": {"zone": "a"}},
        "spec": {
            "taints": [{"key": "node.kubernetes.io/out-of-service", "effect": "NoExecute"}],
            "unschedulable": True,
        },
        "status": {"conditions": [{"type": "Ready", "status": "False"}]},
    }


def test_statefulset_revisions_are_not_ours() -> None:
    sts_owned = {"metadata": {"ownerReferences": [{"controller": True, "kind": "StatefulSet"}]}}
    assert project_revision(sts_owned) is None
    lws_owned = {"metadata": {"ownerReferences": [{"controller": True, "kind": "LeaderWorkerSet"}]}}
    assert project_revision(lws_owned) == lws_owned


def test_pod_projection_keeps_the_terminated_states_as_evidence() -> None:
    from lws_operator.plan.lws.history import MESSAGE_MAX

    status = {
        "name": "c",
        "restartCount": 2,
        "image": "dropped",
        "state": {"running": {"startedAt": "t"}},
        "lastState": {
            "terminated": {
                "exitCode": 137,
                "reason": "OOMKilled",
                "signal": 9,
                "message": "x" * 5000,
                "finishedAt": "t",
                "containerID": "dropped",
            }
        },
    }
    projected = project_pod({"metadata": {"name": "p"}, "status": {"containerStatuses": [status]}})
    (kept,) = projected["status"]["containerStatuses"]
    assert set(kept) == {"name", "restartCount", "lastState"}
    term = kept["lastState"]["terminated"]
    assert term["exitCode"] == 137 and term["signal"] == 9 and "containerID" not in term
    assert len(term["message"]) == MESSAGE_MAX


def test_a_node_whose_health_changes_wakes_the_lws_with_pods_on_it() -> None:
    from typing import cast

    from lws_operator.controller.runtime.informer import Informer
    from lws_operator.kube.client import Kube

    cache = Cache()
    cache.bind({"lws_objects": {("a", "x"): [{"metadata": {"name": "x", "namespace": "a"}}]}})
    pods = Informer(cast(Kube, None), "/api/v1/pods", project_pod, lambda *_: None)
    cache.add_informer("lws_pods", pods)
    for ns, lws, node_name in (("a", "x", "n1"), ("b", "y", "n2")):
        pods.apply(
            "ADDED",
            {
                "metadata": {
                    "name": f"{lws}-0",
                    "namespace": ns,
                    "labels": {c.SET_NAME_LABEL: lws},
                },
                "spec": {"nodeName": node_name},
            },
        )

    def node(ready: str) -> dict[str, object]:
        return {
            "metadata": {"name": "n1"},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": ready}]},
        }

    def healthy() -> frozenset[str]:
        return cache.observe(("a", "x")).healthy_nodes

    assert cache.node_changed("ADDED", node("True")) == [], "a healthy node seen first: nothing"
    assert healthy() == {"n1"}
    assert cache.node_changed("MODIFIED", node("True")) == [], "a heartbeat: nothing"
    kept = healthy()
    assert cache.node_changed("MODIFIED", node("Unknown")) == [("a", "x")]
    assert healthy() == set() and kept == {"n1"}, "an observation keeps its own set"
    assert cache.node_changed("MODIFIED", node("Unknown")) == [], "no change"
    assert cache.node_changed("MODIFIED", node("True")) == [("a", "x")], "healthy again"
    assert healthy() == {"n1"}
    assert cache.node_changed("DELETED", node("True")) == [("a", "x")], "gone"
    assert healthy() == set()


def test_a_pod_event_has_its_own_group_observed_anew_and_no_other() -> None:
    """The cache keeps the groups between observations: a pod event replaces its group only
    (its observation number grows); an object without a group label, a new leader StatefulSet or
    new replicas have the groups observed anew."""
    import time
    from typing import Any, cast

    from lws_operator.controller.lws.cache import project_statefulset
    from lws_operator.controller.runtime.informer import Informer
    from lws_operator.kube.client import Kube

    key = ("ns", "x")
    cache = Cache()

    def informer(name: str, projection: Any) -> Informer:
        def on_change(kind: str, k: Any, obj: Any) -> None:
            cache.changed(name, kind, k, obj)

        inf = Informer(cast(Kube, None), f"/{name}", projection, on_change)
        cache.add_informer(name, inf)
        return inf

    pods, sets = (
        informer("lws_pods", project_pod),
        informer("lws_statefulsets", project_statefulset),
    )

    def leader_sts(uid: str, replicas: int) -> dict[str, Any]:
        return {
            "metadata": {
                "name": "x",
                "namespace": "ns",
                "uid": uid,
                "labels": {c.SET_NAME_LABEL: "x"},
            },
            "spec": {"replicas": replicas},
        }

    def leader(i: int, ready: str, group_label: bool = True) -> dict[str, Any]:
        labels = {c.SET_NAME_LABEL: "x", c.WORKER_INDEX_LABEL: "0"}
        if group_label:
            labels[c.GROUP_INDEX_LABEL] = str(i)
        return {
            "metadata": {
                "name": f"x-{i}",
                "namespace": "ns",
                "uid": f"p{i}",
                "labels": labels,
                "ownerReferences": [{"uid": "s1", "controller": True, "kind": "StatefulSet"}],
            },
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": ready}]},
        }

    sets.apply("ADDED", leader_sts("s1", 3))
    for i in range(3):
        pods.apply("ADDED", leader(i, "True"))

    cache.bind({"lws_objects": {key: [{"metadata": {"name": "x", "namespace": "ns"}}]}})
    taken = 0

    def anew(obs: Any) -> set[int]:
        return {i for i, at in obs.observed_at.items() if at > taken}

    def observe() -> Any:
        nonlocal taken
        obs = cache.observe(key)
        fresh = anew(obs)
        taken = max(obs.observed_at.values(), default=taken)  # as the reconciler does
        obs.fresh = fresh
        return obs

    first = observe()
    assert first.fresh == {0, 1, 2} and [g.leader_ready for g in first.groups] == [True] * 3
    assert list(first.observed_at) == [0, 1, 2], "oldest observation first"
    before = list(first.groups)
    assert observe().fresh == set(), "nothing changed: nothing observed"
    event = time.monotonic()
    pods.apply("MODIFIED", leader(1, "False"))
    after_first = time.monotonic()
    pods.apply("MODIFIED", leader(1, "True"))
    pods.apply("MODIFIED", leader(1, "False"))
    assert anew(cache.observe(key)) == {1}, "another reader observes it too"
    obs = observe()
    assert obs.fresh == {1}, "and the reconciler still sees it observed anew"
    assert event <= obs.changed_at[1] <= after_first, "timed from the first event since"
    assert obs.changed_at[0] < event, "the others keep the time of theirs"
    assert list(obs.observed_at) == [0, 2, 1], "the newest observation last"
    assert [g.leader_ready for g in obs.groups] == [True, False, True]
    assert obs.groups[0] is before[0] and obs.groups[2] is before[2]
    pods.apply("MODIFIED", leader(2, "False", group_label=False))
    assert observe().fresh == {0, 1, 2}, "no group label: every group"
    sets.apply("MODIFIED", leader_sts("s1", 4))
    obs = observe()
    assert obs.fresh == {3} and len(obs.groups) == 4 and obs.groups[3].leader is None
    sets.apply("MODIFIED", leader_sts("s1", 2))
    obs = observe()
    assert obs.fresh == set() and len(obs.groups) == 2 and set(obs.observed_at) == {0, 1}
    sets.apply("MODIFIED", leader_sts("s2", 2))
    obs = observe()
    assert obs.fresh == {0, 1} and all(g.leader is None for g in obs.groups), "a new leader sts"
