"""The StatefulSets match upstream's field by field: the leader's
(constructLeaderStatefulSetApplyConfiguration, pkg/controllers/leaderworkerset_controller.go)
and the workers' (constructWorkerStatefulSetApplyConfiguration,
pkg/controllers/pod_controller.go)."""

from typing import Any

from lws_operator.api import constants as c
from lws_operator.api.models import LeaderWorkerSet
from lws_operator.plan.lws.statefulsets import leader_statefulset, worker_statefulset


def lws(**spec: Any) -> LeaderWorkerSet:
    body = {
        "apiVersion": c.API_VERSION,
        "kind": c.KIND,
        "metadata": {
            "name": "sample",
            "namespace": "ns",
            "uid": "lws-uid",
            "labels": {"team": "a"},
            "annotations": {"note": "x", c.REPLICAS_ANNOTATION: "user-value"},
        },
        "spec": {
            "replicas": 3,
            "leaderWorkerTemplate": {
                "size": 4,
                "workerTemplate": {
                    "metadata": {"labels": {"role": "worker"}},
                    "spec": {"containers": [{"name": "w", "image": "img"}]},
                },
            },
            **spec,
        },
    }
    return LeaderWorkerSet.model_validate(body)


def test_leader_statefulset_fields() -> None:
    sts = leader_statefulset(lws(), revision_key="rk", replicas=5, partition=2, max_unavailable=3)
    meta = sts["metadata"]
    assert meta["name"] == "sample" and meta["namespace"] == "ns"
    assert meta["labels"] == {"team": "a", c.SET_NAME_LABEL: "sample", c.REVISION_KEY: "rk"}
    # controller-owned keys win over the user's
    assert meta["annotations"] == {"note": "x", c.REPLICAS_ANNOTATION: "3"}
    (owner,) = meta["ownerReferences"]
    assert owner == {
        "apiVersion": c.API_VERSION,
        "kind": c.KIND,
        "name": "sample",
        "uid": "lws-uid",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    spec = sts["spec"]
    assert spec["replicas"] == 5
    assert spec["serviceName"] == "sample"
    assert spec["podManagementPolicy"] == "Parallel"
    assert spec["selector"] == {
        "matchLabels": {c.SET_NAME_LABEL: "sample", c.WORKER_INDEX_LABEL: "0"}
    }
    assert spec["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"partition": 2, "maxUnavailable": 3},
    }
    tmpl = spec["template"]
    assert tmpl["metadata"]["labels"] == {
        "role": "worker",
        c.WORKER_INDEX_LABEL: "0",
        c.SET_NAME_LABEL: "sample",
        c.REVISION_KEY: "rk",
    }
    assert tmpl["metadata"]["annotations"] == {c.SIZE_ANNOTATION: "4"}
    assert tmpl["spec"]["containers"][0]["name"] == "w"
    assert "volumeClaimTemplates" not in spec and "ordinals" not in spec


def test_leader_template_wins_and_subgroup_and_placement_annotations() -> None:
    obj = lws(
        networkConfig={"subdomainPolicy": "UniquePerReplica"},
    )
    obj.spec.leader_worker_template.leader_template = {
        "spec": {"containers": [{"name": "l", "image": "img"}]}
    }
    obj.metadata["annotations"][c.EXCLUSIVE_KEY_ANNOTATION] = "topology.kubernetes.io/zone"
    sts = leader_statefulset(obj, revision_key="rk", replicas=3, partition=0, max_unavailable=1)
    tmpl = sts["spec"]["template"]
    assert tmpl["spec"]["containers"][0]["name"] == "l"
    assert tmpl["metadata"]["annotations"] == {
        c.SIZE_ANNOTATION: "4",
        c.EXCLUSIVE_KEY_ANNOTATION: "topology.kubernetes.io/zone",
        c.SUBDOMAIN_POLICY_ANNOTATION: "UniquePerReplica",
    }
    assert sts["spec"]["serviceName"] == "sample"  # always, even with UniquePerReplica


def test_volume_claims_copy_only_upstreams_fields() -> None:
    claim = {
        "metadata": {"name": "data", "labels": {"dropped": "yes"}},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "fast",
            "resources": {"requests": {"storage": "1Gi"}},
            "selector": {"matchLabels": {"x": "y"}},
        },
    }
    obj = lws()
    obj.spec.leader_worker_template.volume_claim_templates = [claim]
    sts = leader_statefulset(obj, revision_key="rk", replicas=3, partition=0, max_unavailable=1)
    assert sts["spec"]["volumeClaimTemplates"] == [
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "fast",
                "resources": {"requests": {"storage": "1Gi"}},
            },
        }
    ]


LEADER = {
    "metadata": {
        "name": "sample-1",
        "namespace": "ns",
        "uid": "leader-uid",
        "labels": {
            c.GROUP_INDEX_LABEL: "1",
            c.GROUP_UNIQUE_HASH_LABEL: "gk",
            c.REVISION_KEY: "old-rk",
            c.WORKER_INDEX_LABEL: "0",
        },
    }
}


def test_worker_statefulset_fields() -> None:
    obj = lws()
    sts = worker_statefulset(obj, obj.spec, leader=LEADER)
    meta = sts["metadata"]
    assert meta["name"] == "sample-1"
    group = {c.GROUP_INDEX_LABEL: "1", c.SET_NAME_LABEL: "sample", c.GROUP_UNIQUE_HASH_LABEL: "gk"}
    assert meta["labels"] == {"team": "a", **group, c.REVISION_KEY: "old-rk"}
    assert meta["annotations"] == {"note": "x", c.REPLICAS_ANNOTATION: "user-value"}
    (owner,) = meta["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"]) == ("Pod", "sample-1", "leader-uid")
    # Garbage-collected in the foreground, its pods first (Kueue, compatibility C11).
    assert meta["finalizers"] == ["foregroundDeletion"]
    spec = sts["spec"]
    assert spec["replicas"] == 3
    assert spec["ordinals"] == {"start": 1}
    assert spec["serviceName"] == "sample"
    assert spec["selector"] == {"matchLabels": group}
    assert spec["podManagementPolicy"] == "Parallel"
    assert "updateStrategy" not in spec
    tmpl = spec["template"]["metadata"]
    assert tmpl["labels"] == {"role": "worker", **group, c.REVISION_KEY: "old-rk"}
    assert tmpl["annotations"] == {c.SIZE_ANNOTATION: "4", c.LEADER_POD_NAME_ANNOTATION: "sample-1"}


def test_worker_statefulset_unique_subdomain_node_selector_and_tpu() -> None:
    obj = lws(networkConfig={"subdomainPolicy": "UniquePerReplica"})
    obj.spec.leader_worker_template.worker_template["spec"]["nodeSelector"] = {"a": "b"}
    sts = worker_statefulset(
        obj,
        obj.spec,
        leader=LEADER,
        node_selector={"topology.kubernetes.io/zone": "zone-a"},
        leader_requests_tpus=True,
    )
    assert sts["spec"]["serviceName"] == "sample-1"
    assert sts["spec"]["template"]["spec"]["nodeSelector"] == {
        "a": "b",
        "topology.kubernetes.io/zone": "zone-a",
    }
    annotations = sts["spec"]["template"]["metadata"]["annotations"]
    assert annotations[c.LEADER_REQUESTS_TPUS_ANNOTATION] == "true"
    # the LWS template itself is not modified
    assert obj.spec.leader_worker_template.worker_template["spec"]["nodeSelector"] == {"a": "b"}


def test_as_served_drops_max_unavailable_only_when_the_server_does() -> None:
    from lws_operator.plan.lws.statefulsets import as_served

    desired = leader_statefulset(
        lws(), revision_key="rk", replicas=3, partition=0, max_unavailable=2
    )
    dropped = {"spec": {"updateStrategy": {"rollingUpdate": {"partition": 0}}}}
    kept = {"spec": {"updateStrategy": {"rollingUpdate": {"partition": 0, "maxUnavailable": 1}}}}
    served = as_served(desired, dropped)
    assert "maxUnavailable" not in served["spec"]["updateStrategy"]["rollingUpdate"]
    assert desired["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] == 2
    assert as_served(desired, kept) is desired
