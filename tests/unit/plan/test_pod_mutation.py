"""The pod webhook, case by case.

Ports upstream's integration tests of the pod webhook (test/integration/webhooks/pod_test.go;
the line numbers are upstream's) and its unit test TestAddLWSVariables
(pkg/utils/pod/pod_utils_test.go), plus examples of the LWS and TPU variables and of exclusive
placement (pkg/utils/pod/pod_utils.go, pkg/utils/accelerators/tpu.go,
pkg/webhooks/pod_webhook.go). Upstream's test pods that lack a label or annotation every
StatefulSet-created pod has (size, group-index) get it here, since both upstream and we reject
them at the LWS-env step.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from lws_operator.api import constants as c
from lws_operator.plan.lws import names, placement
from lws_operator.plan.lws.pod_mutation import LWS_ENV_NAMES, PodMutationError, mutate_pod
from tests.unit.plan import pods
from tests.unit.plan.pods import NAMESPACE, container, env_of, labels_of, required_terms

TPU_VARS = (c.TPU_WORKER_HOSTNAMES, c.TPU_WORKER_ID, c.TPU_NAME, c.TPU_PROCESS_ADDRESSES)
TOPOLOGY = "cloud.google.com/gke-nodepool"
SUB_TOPOLOGY = "cloud.google.com/gke-tpu-slice"


def hosts(*names_: str, subdomain: str = "default") -> str:
    return ",".join(f"{n}.{subdomain}" for n in names_)


def has_tpu_env(p: dict[str, Any]) -> bool:
    return any(
        var in env_of(ctr)
        for ctr in [*p["spec"]["containers"], *p["spec"].get("initContainers", [])]
        for var in TPU_VARS
    )


def tpu_env(p: dict[str, Any], index: int = 0) -> dict[str, str]:
    return env_of(p["spec"]["containers"][index])


# --- Labels (pod_test.go:68-264) ---------------------------------------------------------------


def test_not_lws_pods_have_no_effect() -> None:  # :68, and validation :871
    pod = pods.pod("randompod", lws=None, labels={"random-label": "random-value"})
    before = copy.deepcopy(pod)
    assert mutate_pod(pod) == before
    assert pod == before


def test_worker_index_label_is_populated_for_worker_pods() -> None:  # :91
    pod = pods.pod(
        "test-1-1",
        lws="test",
        labels={c.GROUP_INDEX_LABEL: "1"},
        annotations={c.SIZE_ANNOTATION: "2"},
    )
    assert labels_of(mutate_pod(pod)) == {
        c.SET_NAME_LABEL: "test",
        c.WORKER_INDEX_LABEL: "1",
        c.GROUP_INDEX_LABEL: "1",
    }


def test_worker_index_label_is_populated_for_leader_pods() -> None:  # :119
    pod = pods.pod(
        "test-1",
        lws="test",
        labels={c.WORKER_INDEX_LABEL: "0"},
        annotations={c.SIZE_ANNOTATION: "2"},
    )
    assert labels_of(mutate_pod(pod)) == {
        c.SET_NAME_LABEL: "test",
        c.WORKER_INDEX_LABEL: "0",
        c.GROUP_INDEX_LABEL: "1",
        c.GROUP_UNIQUE_HASH_LABEL: names.group_key(NAMESPACE, "test-1"),
    }


def test_leader_gets_subgroup_labels() -> None:  # :152
    pod = pods.pod(
        "test-1",
        lws="test",
        labels={c.WORKER_INDEX_LABEL: "0"},
        annotations={
            c.SIZE_ANNOTATION: "5",
            c.LEADER_REQUESTS_TPUS_ANNOTATION: "true",
            c.SUBGROUP_SIZE_ANNOTATION: "4",
        },
        containers=[container(tpus="4")],
    )
    assert labels_of(mutate_pod(pod)) == {
        c.SET_NAME_LABEL: "test",
        c.WORKER_INDEX_LABEL: "0",
        c.GROUP_INDEX_LABEL: "1",
        c.GROUP_UNIQUE_HASH_LABEL: names.group_key(NAMESPACE, "test-1"),
        c.SUBGROUP_INDEX_LABEL: "0",
        c.SUBGROUP_UNIQUE_HASH_LABEL: names.subgroup_key("test-1", 0),
    }


@pytest.mark.parametrize(
    ("name", "size", "leader_tpus", "index"),
    [
        ("test-1-3", 4, True, "1"),  # :192 "Leader requests TPU resources"
        ("test-1-4", 5, False, "1"),  # :229 "Leader doesn't request TPU resources"
    ],
)
def test_worker_gets_subgroup_labels(name: str, size: int, leader_tpus: bool, index: str) -> None:
    annotations = {c.SUBGROUP_SIZE_ANNOTATION: "2"}
    if leader_tpus:
        annotations[c.LEADER_REQUESTS_TPUS_ANNOTATION] = "true"
    pod = pods.worker(name, size, 1, annotations=annotations)
    labels = labels_of(mutate_pod(pod))
    assert labels[c.SUBGROUP_INDEX_LABEL] == index
    assert labels[c.SUBGROUP_UNIQUE_HASH_LABEL] == names.subgroup_key("test-1", index)
    assert labels[c.WORKER_INDEX_LABEL] == name.rsplit("-", 1)[1]
    assert c.GROUP_UNIQUE_HASH_LABEL not in labels  # only the worker sts sets it on workers


def test_worker_subgroup_key_falls_back_to_the_parent_name() -> None:
    pod = pods.worker("test-1-3", 4, 1, annotations={c.SUBGROUP_SIZE_ANNOTATION: "2"})
    del pod["metadata"]["annotations"][c.LEADER_POD_NAME_ANNOTATION]
    labels = labels_of(mutate_pod(pod))
    assert labels[c.SUBGROUP_UNIQUE_HASH_LABEL] == names.subgroup_key("test-1", 1)


def test_leader_excluded_leader_has_no_subgroup_labels() -> None:
    pod = pods.leader(
        "test-1",
        5,
        annotations={
            c.SUBGROUP_SIZE_ANNOTATION: "2",
            c.SUBGROUP_POLICY_TYPE_ANNOTATION: "LeaderExcluded",
            c.SUBGROUP_EXCLUSIVE_KEY_ANNOTATION: SUB_TOPOLOGY,
        },
    )
    mutated = mutate_pod(pod)
    assert c.SUBGROUP_INDEX_LABEL not in labels_of(mutated)
    assert "affinity" not in mutated["spec"]


def test_existing_labels_are_kept() -> None:
    pod = pods.leader(
        "test-1",
        4,
        labels={
            c.GROUP_INDEX_LABEL: "7",
            c.GROUP_UNIQUE_HASH_LABEL: "k",
            c.SUBGROUP_INDEX_LABEL: "3",
        },
        annotations={c.SUBGROUP_SIZE_ANNOTATION: "2"},
    )
    labels = labels_of(mutate_pod(pod))
    assert labels[c.GROUP_INDEX_LABEL] == "7"
    assert labels[c.GROUP_UNIQUE_HASH_LABEL] == "k"
    assert labels[c.SUBGROUP_INDEX_LABEL] == "3"
    assert c.SUBGROUP_UNIQUE_HASH_LABEL not in labels


def test_worker_index_is_always_overwritten() -> None:
    pod = pods.worker("test-1-2", 4, 1, labels={c.WORKER_INDEX_LABEL: "9"})
    assert labels_of(mutate_pod(pod))[c.WORKER_INDEX_LABEL] == "2"


# --- TPU env (pod_test.go:265-621; pkg/utils/accelerators/tpu.go) ------------------------------


def test_tpu_pod_outside_lws_gets_no_tpu_env() -> None:  # :265
    pod = pods.pod("test-1", lws=None, containers=[container(tpus="4")])
    assert not has_tpu_env(mutate_pod(pod))


def test_leader_without_tpus_gets_no_tpu_env() -> None:  # :282
    assert not has_tpu_env(mutate_pod(pods.leader("test-1", 2)))


def test_worker_without_tpus_gets_no_tpu_env() -> None:  # :306
    assert not has_tpu_env(mutate_pod(pods.worker("test-1-2", 3, 1)))


TPU_CASES = [
    # (upstream line, pod, TPU_WORKER_HOSTNAMES, TPU_WORKER_ID)
    (
        ":330 size 5, leader",
        pods.leader("test-sample-1", 5, containers=[container(tpus="4")]),
        hosts("test-sample-1", *(f"test-sample-1-{i}" for i in range(1, 5))),
        "0",
    ),
    (
        ":395 subgroup size 5, leader",
        pods.leader(
            "test-sample-1",
            5,
            annotations={c.SUBGROUP_SIZE_ANNOTATION: "5"},
            containers=[container(tpus="4")],
        ),
        hosts("test-sample-1", *(f"test-sample-1-{i}" for i in range(1, 5))),
        "0",
    ),
    (
        ":423 worker, leader requests TPUs too",
        pods.worker(
            "test-sample-1-3",
            5,
            1,
            annotations={c.LEADER_REQUESTS_TPUS_ANNOTATION: "true"},
            containers=[container(tpus="4")],
        ),
        hosts("test-sample-1", *(f"test-sample-1-{i}" for i in range(1, 5))),
        "3",
    ),
    (
        ":452 worker, subgroups, leader requests TPUs too",
        pods.worker(
            "test-sample-1-3",
            10,
            1,
            annotations={
                c.LEADER_REQUESTS_TPUS_ANNOTATION: "true",
                c.SUBGROUP_SIZE_ANNOTATION: "5",
            },
            containers=[container(tpus="4")],
        ),
        hosts("test-sample-1", *(f"test-sample-1-{i}" for i in range(1, 5))),
        "3",
    ),
    (
        ":482 worker, leader requests no TPUs",
        pods.worker("test-sample-1-3", 5, 1, containers=[container(tpus="4")]),
        hosts(*(f"test-sample-1-{i}" for i in range(1, 5))),
        "2",
    ),
    (
        ":510 worker, subgroups, leader requests no TPUs",
        pods.worker(
            "test-sample-1-7",
            11,
            1,
            annotations={c.SUBGROUP_SIZE_ANNOTATION: "5"},
            containers=[container(tpus="4")],
        ),
        hosts(*(f"test-sample-1-{i}" for i in range(6, 11))),
        "1",
    ),
    (
        ":539 size 2, worker",
        pods.worker(
            "test-sample-1-1",
            2,
            1,
            annotations={c.LEADER_REQUESTS_TPUS_ANNOTATION: "true"},
            containers=[container(tpus="4")],
        ),
        hosts("test-sample-1", "test-sample-1-1"),
        "1",
    ),
    (
        ":568 size 1, leader",
        pods.leader("test-sample-1", 1, containers=[container(tpus="4")]),
        hosts("test-sample-1"),
        "0",
    ),
]


@pytest.mark.parametrize(
    ("pod", "hostnames", "worker_id"), [t[1:] for t in TPU_CASES], ids=[t[0] for t in TPU_CASES]
)
def test_tpu_env(pod: dict[str, Any], hostnames: str, worker_id: str) -> None:
    env = tpu_env(mutate_pod(pod))
    assert env[c.TPU_WORKER_HOSTNAMES] == hostnames
    assert env[c.TPU_WORKER_ID] == worker_id
    assert env[c.TPU_NAME] == "test-sample-1"
    assert env[c.TPU_PROCESS_ADDRESSES] == ",".join(f"{h}:8476" for h in hostnames.split(","))
    assert env[c.TPU_PROCESS_PORT] == "8476"


def test_unique_per_replica_leader_gets_its_own_subdomain() -> None:  # :357
    pod = pods.leader(
        "test-sample-1",
        5,
        annotations={c.SUBDOMAIN_POLICY_ANNOTATION: "UniquePerReplica"},
        containers=[container(tpus="4")],
        subdomain="test-sample",
    )
    mutated = mutate_pod(pod)
    assert mutated["spec"]["subdomain"] == "test-sample-1"
    env = tpu_env(mutated)
    expected = ["test-sample-1", *(f"test-sample-1-{i}" for i in range(1, 5))]
    assert env[c.TPU_WORKER_HOSTNAMES] == hosts(*expected, subdomain="test-sample-1")
    assert env[c.LWS_LEADER_ADDRESS] == f"test-sample-1.test-sample-1.{NAMESPACE}"


def test_only_tpu_containers_get_tpu_env() -> None:  # :595
    pod = pods.leader(
        "test-sample-1", 1, containers=[container("tpu", tpus="4"), container("sidecar")]
    )
    mutated = mutate_pod(pod)
    assert tpu_env(mutated, 0)[c.TPU_WORKER_HOSTNAMES] == hosts("test-sample-1")
    assert not any(var in tpu_env(mutated, 1) for var in TPU_VARS)
    assert list(tpu_env(mutated, 1)) == list(LWS_ENV_NAMES)


def test_multiple_tpu_containers() -> None:
    """e2e :263 and upstream's tpu_test.go: hosts repeated per container, ports 8476+k."""
    for name, pod_index in (("test-sample-0", 0), ("test-sample-0-1", 1)):
        if pod_index == 0:
            pod = pods.leader(
                name, 2, containers=[container("c1", tpus="1"), container("c2", tpus="1")]
            )
        else:
            pod = pods.worker(
                name,
                2,
                0,
                annotations={c.LEADER_REQUESTS_TPUS_ANNOTATION: "true"},
                containers=[container("c1", tpus="1"), container("c2", tpus="1")],
            )
        mutated = mutate_pod(pod)
        for k in range(2):
            env = tpu_env(mutated, k)
            assert env[c.TPU_WORKER_HOSTNAMES] == hosts(
                "test-sample-0", "test-sample-0", "test-sample-0-1", "test-sample-0-1"
            )
            assert env[c.TPU_WORKER_ID] == str(pod_index * 2 + k)
            assert env[c.TPU_PROCESS_ADDRESSES] == (
                "test-sample-0.default:8476,test-sample-0.default:8477,"
                "test-sample-0-1.default:8476,test-sample-0-1.default:8477"
            )
            assert env[c.TPU_PROCESS_PORT] == str(8476 + k)


def test_user_tpu_process_ports_are_used_and_kept() -> None:
    containers = [
        container("c1", tpus="1", env=[{"name": c.TPU_PROCESS_PORT, "value": "8478"}]),
        container("c2", tpus="1", env=[{"name": c.TPU_PROCESS_PORT, "value": "8479"}]),
    ]
    mutated = mutate_pod(pods.leader("test-sample-0", 2, containers=containers))
    env = mutated["spec"]["containers"][0]["env"]
    assert [e["name"] for e in env].count(c.TPU_PROCESS_PORT) == 1
    assert env_of(mutated["spec"]["containers"][0])[c.TPU_PROCESS_ADDRESSES] == (
        "test-sample-0.default:8478,test-sample-0.default:8479,"
        "test-sample-0-1.default:8478,test-sample-0-1.default:8479"
    )


def test_tpu_requests_without_limits_and_init_containers() -> None:
    pod = pods.leader("sample-0", 1, containers=[container()])
    pod["spec"]["initContainers"] = [
        {
            "name": "i1",
            "resources": {
                "limits": {c.TPU_RESOURCE_NAME: "0"},
                "requests": {c.TPU_RESOURCE_NAME: 1},
            },
        }
    ]
    mutated = mutate_pod(pod)
    assert env_of(mutated["spec"]["initContainers"][0])[c.TPU_WORKER_ID] == "0"
    assert not has_tpu_env({"spec": {"containers": mutated["spec"]["containers"]}})


@pytest.mark.parametrize("quantity", ["0", "0.0", "0Gi", "0e3", 0])
def test_zero_tpus_is_no_request(quantity: Any) -> None:
    ctr = {"name": "c", "resources": {"limits": {c.TPU_RESOURCE_NAME: quantity}}}
    assert not has_tpu_env(mutate_pod(pods.leader("sample-0", 1, containers=[ctr])))


@pytest.mark.parametrize("var", [c.TPU_WORKER_HOSTNAMES, c.TPU_WORKER_ID])
def test_user_tpu_env_skips_injection(var: str) -> None:
    ctr = container(tpus="1", env=[{"name": var, "value": "mine"}])
    env = mutate_pod(pods.leader("sample-0", 2, containers=[ctr]))["spec"]["containers"][0]["env"]
    assert [e["name"] for e in env] == [*LWS_ENV_NAMES, var]


SUBGROUP_TPU_CASES = [
    # upstream tpu_test.go TestAddTPUVariablesSubGroup, as whole pods:
    # (name, size, annotations, hostnames, worker id)
    (
        "test-sample-1-3",
        9,
        {"leader-tpus": "true", "sg": "5"},
        ["test-sample-1", *[f"test-sample-1-{i}" for i in range(1, 5)]],
        "3",
    ),
    (
        "test-sample-1-7",
        9,
        {"leader-tpus": "true", "sg": "4"},
        [f"test-sample-1-{i}" for i in range(4, 8)],
        "3",
    ),
    ("test-sample-1-5", 9, {"sg": "4"}, [f"test-sample-1-{i}" for i in range(5, 9)], "0"),
    (
        "test-sample-0-2",
        5,
        {"sg": "2", "type": "LeaderExcluded"},
        ["test-sample-0-1", "test-sample-0-2"],
        "1",
    ),
    # LeaderExcluded: no worker's slice holds the leader, even one that requests TPUs.
    (
        "test-sample-0-1",
        5,
        {"sg": "2", "type": "LeaderExcluded", "leader-tpus": "true"},
        ["test-sample-0-1", "test-sample-0-2"],
        "0",
    ),
    (
        "test-sample-0-3",
        4,
        {"sg": "1", "type": "LeaderExcluded", "leader-tpus": "true"},
        ["test-sample-0-3"],
        "0",
    ),
]


@pytest.mark.parametrize(
    ("name", "size", "opts", "expected_hosts", "worker_id"), SUBGROUP_TPU_CASES
)
def test_subgroup_tpu_env(
    name: str, size: int, opts: dict[str, str], expected_hosts: list[str], worker_id: str
) -> None:
    annotations = {c.SUBGROUP_SIZE_ANNOTATION: opts["sg"]}
    if "leader-tpus" in opts:
        annotations[c.LEADER_REQUESTS_TPUS_ANNOTATION] = "true"
    if "type" in opts:
        annotations[c.SUBGROUP_POLICY_TYPE_ANNOTATION] = opts["type"]
    pod = pods.worker(name, size, 1, annotations=annotations, containers=[container(tpus="4")])
    env = tpu_env(mutate_pod(pod))
    assert env[c.TPU_WORKER_HOSTNAMES] == hosts(*expected_hosts)
    assert env[c.TPU_WORKER_ID] == worker_id
    assert env[c.TPU_NAME] == name.rsplit("-", 1)[0]


def test_subgroup_tpu_env_only_in_the_first_tpu_container_with_user_port() -> None:
    containers = [
        container("c1", tpus="1", env=[{"name": c.TPU_PROCESS_PORT, "value": "8478"}]),
        container("c2", tpus="1"),
    ]
    pod = pods.worker(
        "test-sample-1-5",
        9,
        1,
        annotations={c.SUBGROUP_SIZE_ANNOTATION: "4"},
        containers=containers,
    )
    mutated = mutate_pod(pod)
    assert tpu_env(mutated, 0)[c.TPU_PROCESS_ADDRESSES] == ",".join(
        f"test-sample-1-{i}.default:8478" for i in range(5, 9)
    )
    assert not any(var in tpu_env(mutated, 1) for var in TPU_VARS)


def test_leader_excluded_leader_with_tpus_is_a_slice_of_its_own() -> None:
    # Upstream rejects this pod: it parses the subgroup-index label the leader does not have.
    annotations = {
        c.SUBGROUP_SIZE_ANNOTATION: "2",
        c.SUBGROUP_POLICY_TYPE_ANNOTATION: "LeaderExcluded",
    }
    pod = pods.leader("test-sample-0", 5, annotations=annotations, containers=[container(tpus="4")])
    env = tpu_env(mutate_pod(pod))
    assert env[c.TPU_WORKER_HOSTNAMES] == hosts("test-sample-0")
    assert env[c.TPU_WORKER_ID] == "0"


def test_subgroup_leader_with_tpus() -> None:
    # size 4, subgroups of 2: {0,1}, {2,3}; the leader and worker 1 share a slice.
    annotations = {c.SUBGROUP_SIZE_ANNOTATION: "2"}
    leader_env = tpu_env(
        mutate_pod(
            pods.leader("lws-0", 4, annotations=annotations, containers=[container(tpus="4")])
        )
    )
    assert leader_env[c.TPU_WORKER_HOSTNAMES] == hosts("lws-0", "lws-0-1")
    annotations[c.LEADER_REQUESTS_TPUS_ANNOTATION] = "true"
    for w, expected, wid in (
        (1, ["lws-0", "lws-0-1"], "1"),
        (2, ["lws-0-2", "lws-0-3"], "0"),
        (3, ["lws-0-2", "lws-0-3"], "1"),
    ):
        pod = pods.worker(
            f"lws-0-{w}", 4, 0, annotations=annotations, containers=[container(tpus="4")]
        )
        env = tpu_env(mutate_pod(pod))
        assert env[c.TPU_WORKER_HOSTNAMES] == hosts(*expected)
        assert env[c.TPU_WORKER_ID] == wid


# --- Exclusive placement (pod_test.go:622-800; SetExclusiveAffinities) -------------------------


def _group_terms(key: str) -> tuple[dict[str, Any], dict[str, Any]]:
    return placement.exclusive_terms(c.GROUP_UNIQUE_HASH_LABEL, key, TOPOLOGY)


def test_leader_with_exclusive_placement() -> None:  # :622
    pod = pods.leader("test-sample-1", 4, annotations={c.EXCLUSIVE_KEY_ANNOTATION: TOPOLOGY})
    mutated = mutate_pod(pod)
    affinity, anti = _group_terms(names.group_key(NAMESPACE, "test-sample-1"))
    assert required_terms(mutated, "podAffinity") == [affinity]
    assert required_terms(mutated, "podAntiAffinity") == [anti]


def test_leader_with_group_and_subgroup_exclusive_placement() -> None:  # :645
    annotations = {
        c.EXCLUSIVE_KEY_ANNOTATION: TOPOLOGY,
        c.SUBGROUP_EXCLUSIVE_KEY_ANNOTATION: SUB_TOPOLOGY,
        c.SUBGROUP_SIZE_ANNOTATION: "2",
    }
    mutated = mutate_pod(pods.leader("test-sample-1", 4, annotations=annotations))
    affinity, anti = _group_terms(names.group_key(NAMESPACE, "test-sample-1"))
    sub_affinity, sub_anti = placement.exclusive_terms(
        c.SUBGROUP_UNIQUE_HASH_LABEL, names.subgroup_key("test-sample-1", 0), SUB_TOPOLOGY
    )
    assert required_terms(mutated, "podAffinity") == [affinity, sub_affinity]
    assert required_terms(mutated, "podAntiAffinity") == [anti, sub_anti]


def test_worker_with_both_exclusive_placements_gets_only_subgroup_terms() -> None:  # :671
    annotations = {
        c.EXCLUSIVE_KEY_ANNOTATION: TOPOLOGY,
        c.SUBGROUP_EXCLUSIVE_KEY_ANNOTATION: SUB_TOPOLOGY,
        c.SUBGROUP_SIZE_ANNOTATION: "2",
    }
    mutated = mutate_pod(pods.worker("test-sample-1-3", 4, 1, annotations=annotations))
    sub_affinity, sub_anti = placement.exclusive_terms(
        c.SUBGROUP_UNIQUE_HASH_LABEL, names.subgroup_key("test-sample-1", 1), SUB_TOPOLOGY
    )
    assert required_terms(mutated, "podAffinity") == [sub_affinity]
    assert required_terms(mutated, "podAntiAffinity") == [sub_anti]


def test_leader_without_exclusive_placement_has_no_affinity() -> None:  # :698
    assert "affinity" not in mutate_pod(pods.leader("test-sample-1", 4))["spec"]


def test_empty_exclusive_topology_adds_no_terms() -> None:
    pod = pods.leader("test-sample-1", 4, annotations={c.EXCLUSIVE_KEY_ANNOTATION: ""})
    assert "affinity" not in mutate_pod(pod)["spec"]


def test_exclusive_terms_are_not_reapplied() -> None:  # :720
    pod = pods.leader("test-sample-1", 4, annotations={c.EXCLUSIVE_KEY_ANNOTATION: TOPOLOGY})
    affinity, anti = _group_terms("uniquehash")
    pod["spec"]["affinity"] = {
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [affinity]},
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [anti]},
    }
    mutated = mutate_pod(pod)
    assert required_terms(mutated, "podAffinity") == [affinity]
    assert required_terms(mutated, "podAntiAffinity") == [anti]


def test_exclusive_terms_do_not_override_other_terms() -> None:  # :745
    pod = pods.leader("test-sample-1", 4, annotations={c.EXCLUSIVE_KEY_ANNOTATION: TOPOLOGY})
    user_affinity = {
        "labelSelector": {
            "matchExpressions": [{"key": "key", "operator": "In", "values": ["value"]}]
        },
        "topologyKey": "topology",
    }
    user_anti = {
        "labelSelector": {
            "matchExpressions": [
                {"key": "key", "operator": "Exists"},
                {"key": "key", "operator": "NotIn", "values": ["value"]},
            ]
        },
        "topologyKey": "topology",
    }
    pod["spec"]["affinity"] = {
        "nodeAffinity": {"x": 1},
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [user_affinity]},
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [user_anti]},
    }
    mutated = mutate_pod(pod)
    affinity, anti = _group_terms(names.group_key(NAMESPACE, "test-sample-1"))
    assert required_terms(mutated, "podAffinity") == [user_affinity, affinity]
    assert required_terms(mutated, "podAntiAffinity") == [user_anti, anti]
    assert mutated["spec"]["affinity"]["nodeAffinity"] == {"x": 1}


# --- LWS env (pod_test.go:801; AddLWSVariables and its unit test TestAddLWSVariables) ----------


def test_leader_address_env_is_first_in_containers_and_init_containers() -> None:  # :801
    pod = pods.worker(
        "test-sample-1-1",
        2,
        1,
        subdomain="test-sample",
        containers=[container("c", env=[{"name": "A", "value": "a"}])],
        init_containers=[container("init")],
    )
    mutated = mutate_pod(pod)
    for ctr in [*mutated["spec"]["containers"], *mutated["spec"]["initContainers"]]:
        assert ctr["env"][0] == {
            "name": c.LWS_LEADER_ADDRESS,
            "value": f"test-sample-1.test-sample.{NAMESPACE}",
        }
        assert env_of(ctr)[c.LWS_GROUP_SIZE] == "2"


@pytest.mark.parametrize(
    ("pod", "address", "size", "worker_index", "group_index"),
    [
        (pods.leader("test-sample-0", 3), "test-sample-0.default", "3", "0", "0"),
        (pods.worker("test-sample-0-1", 3, 0), "test-sample-0.default", "3", "1", "0"),
        (pods.leader("test-sample-1", 2), "test-sample-1.default", "2", "0", "1"),
        (pods.worker("test-sample-1-3", 4, 1), "test-sample-1.default", "4", "3", "1"),
        (
            pods.leader("test-sample-1", 2, namespace="lws", subdomain="test-sample"),
            "test-sample-1.test-sample",
            "2",
            "0",
            "1",
        ),
    ],
)
def test_lws_env(
    pod: dict[str, Any], address: str, size: str, worker_index: str, group_index: str
) -> None:
    namespace = pod["metadata"]["namespace"]
    env = mutate_pod(pod)["spec"]["containers"][0]["env"]
    assert env[:4] == [
        {"name": c.LWS_LEADER_ADDRESS, "value": f"{address}.{namespace}"},
        {"name": c.LWS_GROUP_SIZE, "value": size},
        {"name": c.LWS_WORKER_INDEX, "value": worker_index},
        {"name": c.LWS_GROUP_INDEX, "value": group_index},
    ]


def test_user_entries_with_lws_names_are_replaced_others_keep_their_order() -> None:
    user_env = [
        {"name": "B", "value": "b"},
        {"name": c.LWS_WORKER_INDEX, "value": "user"},
        {"name": "A", "value": "$(LWS_WORKER_INDEX)"},
        {"name": c.LWS_GROUP_INDEX, "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {
            "name": "B",
            "value": "b2",
        },  # duplicates are the user's business; the kubelet takes the last
    ]
    pod = pods.worker("test-sample-1-2", 3, 1, containers=[container(env=user_env)])
    env = mutate_pod(pod)["spec"]["containers"][0]["env"]
    assert [e["name"] for e in env] == [*LWS_ENV_NAMES, "B", "A", "B"]
    assert env[4:] == [user_env[0], user_env[2], user_env[4]]


def test_ephemeral_containers_are_left_alone() -> None:
    pod = pods.leader("test-sample-1", 2)
    pod["spec"]["ephemeralContainers"] = [{"name": "debug"}]
    assert mutate_pod(pod)["spec"]["ephemeralContainers"] == [{"name": "debug"}]


# --- Gang scheduling (pod_test.go:913; pkg/schedulerprovider/volcano_provider.go) --------------


def _gang_pods() -> list[dict[str, Any]]:
    return [
        pods.leader("test-0", 2, labels={c.REVISION_KEY: "1"}, lws="test"),
        pods.worker("test-0-1", 2, 0, labels={c.REVISION_KEY: "1"}, lws="test"),
    ]


@pytest.mark.parametrize("index", [0, 1])
def test_volcano_pod_group_annotation(index: int) -> None:  # :913
    mutated = mutate_pod(_gang_pods()[index], gang_provider="volcano")
    assert mutated["metadata"]["annotations"][c.POD_GROUP_NAME_ANNOTATION] == "test-0-1"
    assert "schedulingGroup" not in mutated["spec"]


@pytest.mark.parametrize("index", [0, 1])
def test_native_scheduling_group(index: int) -> None:
    mutated = mutate_pod(_gang_pods()[index], gang_provider="kubernetes")
    assert mutated["spec"]["schedulingGroup"] == {"podGroupName": "test-0-1"}
    assert c.POD_GROUP_NAME_ANNOTATION not in mutated["metadata"]["annotations"]


def test_no_gang_provider_sets_nothing() -> None:
    mutated = mutate_pod(_gang_pods()[0])
    assert c.POD_GROUP_NAME_ANNOTATION not in mutated["metadata"]["annotations"]
    assert "schedulingGroup" not in mutated["spec"]


def test_unknown_gang_provider_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown gang provider 'kueue'") as info:
        mutate_pod(_gang_pods()[0], gang_provider="kueue")
    assert not isinstance(info.value, PodMutationError)


# --- Errors ------------------------------------------------------------------------------------


def _without(p: dict[str, Any], *path: str) -> dict[str, Any]:
    node = p
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return p


def _with(p: dict[str, Any], value: Any, *path: str | int) -> dict[str, Any]:
    node: Any = p
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return p


L, W = pods.leader, pods.worker
ERROR_CASES = [
    (
        _without(L("web-0", 2), "metadata", "annotations", c.SIZE_ANNOTATION),
        rf"pod web-0: annotation {c.SIZE_ANNOTATION} is missing; "
        "pods of a LeaderWorkerSet are created by its StatefulSets",
    ),
    (
        L("web-0", 0),
        rf"annotation {c.SIZE_ANNOTATION} must be an integer from 1 to 2147483647, got '0'",
    ),
    (_with(L("web-0", 2), "two", "metadata", "annotations", c.SIZE_ANNOTATION), "got 'two'"),
    (_with(L("web-0", 2), " 2", "metadata", "annotations", c.SIZE_ANNOTATION), "got ' 2'"),
    (
        _with(L("web-0", 2), "9" * 5000, "metadata", "annotations", c.SIZE_ANNOTATION),
        "must be an integer",
    ),
    (
        _with(L("web-0", 2), 2, "metadata", "annotations", c.SIZE_ANNOTATION),
        rf"annotation {c.SIZE_ANNOTATION} must be a string, not a number",
    ),
    (L("web-x", 2), r"pod web-x: metadata\.name has no trailing ordinal"),
    (W("web-0-x", 2, 0), r"pod web-0-x: metadata\.name has no trailing ordinal"),
    (
        W("web-0-0", 2, 0),
        rf"label {c.WORKER_INDEX_LABEL} is not \"0\" but the pod name ends in ordinal 0",
    ),
    (
        _with(L("web-0", 2), "0", "metadata", "annotations", c.SUBGROUP_SIZE_ANNOTATION),
        rf"annotation {c.SUBGROUP_SIZE_ANNOTATION} must be an integer from 1",
    ),
    (
        _with(W("web-0-1", 2, 0), "-1", "metadata", "annotations", c.SUBGROUP_SIZE_ANNOTATION),
        "got '-1'",
    ),
    (
        _without(W("web-0-1", 2, 0), "metadata", "labels", c.GROUP_INDEX_LABEL),
        rf"label {c.GROUP_INDEX_LABEL} is missing",
    ),
    (
        _with(W("web-0-1", 2, 0), "x", "metadata", "labels", c.GROUP_INDEX_LABEL),
        rf"label {c.GROUP_INDEX_LABEL} must be an integer",
    ),
    (
        _with(L("web-0", 2), "", "metadata", "labels", c.SET_NAME_LABEL),
        rf"label {c.SET_NAME_LABEL} is empty",
    ),
    (
        _without(L("web-0", 2), "metadata", "namespace"),
        r"pod web-0: metadata\.namespace is missing; the webhook server fills it",
    ),
    (_without(L("web-0", 2), "metadata", "name"), r"pod \(unnamed\): metadata\.name is missing"),
    (
        _with(L("web-0", 2), ["x"], "metadata", "labels"),
        r"metadata\.labels must be an object, not a list",
    ),
    (
        _with(L("web-0", 2), "x", "metadata"),
        r"pod \(unnamed\): metadata must be an object, not a string",
    ),
    (
        _with(L("web-0", 2), {}, "spec", "containers"),
        r"spec\.containers must be a list, not an object",
    ),
    (
        _with(L("web-0", 2), [1], "spec", "initContainers"),
        r"spec\.initContainers\[0\] must be an object",
    ),
    (
        _with(L("web-0", 2), [{"value": "x"}], "spec", "containers", 0, "env"),
        r"spec\.containers\[0\]\.env\[0\]\.name must be a string",
    ),
    (_with(L("web-0", 2), 3, "spec", "subdomain"), r"spec\.subdomain must be a string"),
    (
        L(
            "web-0",
            2,
            containers=[{"name": "c", "resources": {"limits": {c.TPU_RESOURCE_NAME: "lots"}}}],
        ),
        rf"spec\.containers\[0\]\.resources\.limits\[{c.TPU_RESOURCE_NAME}\] "
        "is not a valid quantity: 'lots'",
    ),
    (
        L(
            "web-0",
            4,
            labels={c.SUBGROUP_INDEX_LABEL: "first"},
            annotations={c.SUBGROUP_SIZE_ANNOTATION: "2"},
            containers=[container(tpus="1")],
        ),
        rf"label {c.SUBGROUP_INDEX_LABEL} must be an integer",
    ),
]


@pytest.mark.parametrize(("pod", "message"), ERROR_CASES)
def test_errors_name_the_pod_and_the_field(pod: dict[str, Any], message: str) -> None:
    with pytest.raises(PodMutationError, match=message):
        mutate_pod(pod)


def test_gang_needs_the_revision_label() -> None:
    pod = _without(pods.leader("web-0", 2), "metadata", "labels", c.REVISION_KEY)
    with pytest.raises(
        PodMutationError, match=rf"label {c.REVISION_KEY} is missing; it names the PodGroup"
    ):
        mutate_pod(pod, gang_provider="volcano")
    assert mutate_pod(pod)  # without gang scheduling it is not needed


def test_non_dict_pod() -> None:
    with pytest.raises(PodMutationError, match="pod: must be an object, not list"):
        mutate_pod([])  # type: ignore[arg-type]


def test_input_is_not_modified() -> None:
    pod = pods.worker(
        "test-sample-1-2",
        4,
        1,
        annotations={c.SUBGROUP_SIZE_ANNOTATION: "2", c.SUBGROUP_EXCLUSIVE_KEY_ANNOTATION: "t"},
        containers=[container(tpus="4", env=[{"name": "A", "value": "1"}])],
    )
    before = copy.deepcopy(pod)
    mutated = mutate_pod(pod, gang_provider="volcano")
    assert pod == before
    assert mutated != before
