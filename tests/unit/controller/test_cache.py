from lws_operator.controller.cache import Cache, project_pod, project_revision


def deleted_pod(name: str, owner: str) -> dict[str, object]:
    return {"metadata": {"name": name, "ownerReferences": [{"uid": owner, "controller": True}]}}


def test_deleted_pods_are_remembered_per_lws_and_forgotten_with_it() -> None:
    cache = Cache()
    cache.pod_deleted(("ns", "a"), deleted_pod("a-0-1", "sts-uid"))
    cache.pod_deleted(("ns", "a"), {"metadata": {"name": "no-owner"}})
    assert cache.lost_pods(("ns", "a")) == [("a-0-1", "sts-uid")]
    assert cache.lost_pods(("ns", "b")) == []
    cache.forget(("ns", "a"))
    assert cache.lost_pods(("ns", "a")) == []


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
    out = project_pod(pod)
    assert "managedFields" not in out["metadata"]
    assert out["spec"] == {"nodeName": "n", "requestsTpus": True}
    assert out["status"]["containerStatuses"] == [{"name": "c", "restartCount": 2}]
    assert out["status"]["phase"] == "Running"


def test_statefulset_revisions_are_not_ours() -> None:
    sts_owned = {"metadata": {"ownerReferences": [{"controller": True, "kind": "StatefulSet"}]}}
    assert project_revision(sts_owned) is None
    lws_owned = {"metadata": {"ownerReferences": [{"controller": True, "kind": "LeaderWorkerSet"}]}}
    assert project_revision(lws_owned) == lws_owned
