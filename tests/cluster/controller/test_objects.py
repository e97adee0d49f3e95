"""The objects the operator makes, compared field by field with upstream's
(pkg/controllers/leaderworkerset_controller.go, pkg/controllers/pod_controller.go,
pkg/utils/controller/controller_utils.go, pkg/utils/revision/revision_utils.go,
pkg/webhooks/pod_webhook.go, pkg/utils/pod/pod_utils.go): StatefulSets, Services, revisions, pod
names, labels, annotations and env."""

from __future__ import annotations

import hashlib
from typing import Any

from lws_operator.api import constants as c
from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_testbed.wait import Objects, wait_for_objects
from tests.cluster.controller.helpers import (
    condition,
    container,
    create_available,
    env_names,
    env_of,
    list_of,
    lws_body,
    lws_revisions,
)

LWS_VARS = ["LWS_LEADER_ADDRESS", "LWS_GROUP_SIZE", "LWS_WORKER_INDEX", "LWS_GROUP_INDEX"]


def sha1(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


def with_user_env_and_init(role: str) -> dict[str, Any]:
    user_env = [
        {"name": "USER_FIRST", "value": "1"},
        {"name": "LWS_WORKER_INDEX", "value": "user-value-is-replaced"},
        {"name": "USES_LWS", "value": "$(LWS_LEADER_ADDRESS):8000"},
    ]
    return {
        "initContainers": [container(f"{role}-init", env=[{"name": "INIT", "value": "x"}])],
        "containers": [container(role, env=user_env)],
    }


async def test_shared_groups_with_leader_template(kube: Kube, lws_namespace: str) -> None:
    ns, name = lws_namespace, "shared"
    body = lws_body(
        name,
        replicas=2,
        size=3,
        leader_spec=with_user_env_and_init("leader"),
        worker_spec=with_user_env_and_init("worker"),
    )
    lws = await create_available(kube, ns, body)

    # --- status --------------------------------------------------------------------------
    status = lws["status"]
    assert status["replicas"] == 2 and status["readyReplicas"] == 2
    assert status["updatedReplicas"] == 2
    assert status["hpaPodSelector"] == (f"{c.SET_NAME_LABEL}={name},{c.WORKER_INDEX_LABEL}=0")
    assert (condition(lws, "Progressing") or {}).get("status") == "False"
    assert (condition(lws, "UpdateInProgress") or {"status": "False"})["status"] == "False"

    # --- revision ------------------------------------------------------------------------
    (revision,) = (await lws_revisions(kube, ns, name)).values()
    key = revision["metadata"]["labels"][c.REVISION_KEY]
    assert revision["metadata"]["name"] == f"{name}-{key}-1"
    assert revision["metadata"]["ownerReferences"][0]["uid"] == lws["metadata"]["uid"]

    # --- StatefulSets --------------------------------------------------------------------
    stss = await list_of(kube, "apps/v1", "statefulsets", ns, name)
    assert sorted(stss) == [name, f"{name}-0", f"{name}-1"]
    leader_sts = stss[name]
    assert leader_sts["metadata"]["labels"][c.REVISION_KEY] == key
    assert leader_sts["metadata"]["annotations"][c.REPLICAS_ANNOTATION] == "2"
    spec = leader_sts["spec"]
    assert spec["replicas"] == 2 and spec["podManagementPolicy"] == "Parallel"
    assert spec["serviceName"] == name
    assert spec["selector"]["matchLabels"] == {c.SET_NAME_LABEL: name, c.WORKER_INDEX_LABEL: "0"}
    assert spec["updateStrategy"]["rollingUpdate"]["partition"] == 0
    owner = leader_sts["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["uid"], owner["controller"]) == (
        c.KIND,
        lws["metadata"]["uid"],
        True,
    )

    pods = await list_of(kube, "v1", "pods", ns, name)
    assert sorted(pods) == sorted(
        [f"{name}-{g}" for g in range(2)] + [f"{name}-{g}-{w}" for g in range(2) for w in (1, 2)]
    )
    for g in range(2):
        leader_name = f"{name}-{g}"
        leader = pods[leader_name]
        group_key = sha1(f"{ns}/{leader_name}")
        workers = stss[leader_name]
        assert workers["spec"]["replicas"] == 2
        assert workers["spec"]["ordinals"] == {"start": 1}
        assert workers["spec"]["serviceName"] == name
        assert workers["spec"]["selector"]["matchLabels"] == {
            c.GROUP_INDEX_LABEL: str(g),
            c.SET_NAME_LABEL: name,
            c.GROUP_UNIQUE_HASH_LABEL: group_key,
        }
        w_owner = workers["metadata"]["ownerReferences"][0]
        assert (w_owner["kind"], w_owner["name"], w_owner["uid"]) == (
            "Pod",
            leader_name,
            leader["metadata"]["uid"],
        )

        # --- pods: labels, annotations, DNS, env ----------------------------------------
        for w in range(3):
            pod = pods[leader_name if w == 0 else f"{leader_name}-{w}"]
            labels, annotations = pod["metadata"]["labels"], pod["metadata"]["annotations"]
            assert labels[c.SET_NAME_LABEL] == name
            assert labels[c.GROUP_INDEX_LABEL] == str(g)
            assert labels[c.WORKER_INDEX_LABEL] == str(w)
            assert labels[c.GROUP_UNIQUE_HASH_LABEL] == group_key
            assert labels[c.REVISION_KEY] == key
            assert labels["role"] == ("leader" if w == 0 else "worker")
            assert annotations[c.SIZE_ANNOTATION] == "3"
            if w:
                assert annotations[c.LEADER_POD_NAME_ANNOTATION] == leader_name
            else:
                assert c.LEADER_POD_NAME_ANNOTATION not in annotations
            assert pod["spec"]["subdomain"] == name
            for ctr in [*pod["spec"]["initContainers"], *pod["spec"]["containers"]]:
                env = env_of(ctr)
                assert env_names(ctr)[:4] == LWS_VARS
                assert env["LWS_LEADER_ADDRESS"] == f"{leader_name}.{name}.{ns}"
                assert env["LWS_GROUP_SIZE"] == "3"
                assert env["LWS_WORKER_INDEX"] == str(w)
                assert env["LWS_GROUP_INDEX"] == str(g)
            main = pod["spec"]["containers"][0]
            # the user's own LWS_WORKER_INDEX is replaced; their other entries keep their order
            assert env_names(main) == [*LWS_VARS, "USER_FIRST", "USES_LWS"]
            assert env_names(pod["spec"]["initContainers"][0]) == [*LWS_VARS, "INIT"]

    # --- Services ------------------------------------------------------------------------
    services = await list_of(kube, "v1", "services", ns, name)
    assert list(services) == [name]
    svc = services[name]
    assert svc["spec"]["clusterIP"] == "None"
    assert svc["spec"]["publishNotReadyAddresses"] is True
    assert svc["spec"]["selector"] == {c.SET_NAME_LABEL: name}


async def test_unique_per_replica_without_leader_template(kube: Kube, lws_namespace: str) -> None:
    ns, name = lws_namespace, "unique"
    body = lws_body(name, replicas=2, size=2, leader=False, subdomain="UniquePerReplica")
    await create_available(kube, ns, body)
    pods = await list_of(kube, "v1", "pods", ns, name)
    services = await list_of(kube, "v1", "services", ns, name)
    stss = await list_of(kube, "apps/v1", "statefulsets", ns, name)
    assert sorted(services) == [f"{name}-0", f"{name}-1"]  # no shared Service
    for g in range(2):
        leader_name = f"{name}-{g}"
        leader = pods[leader_name]
        svc = services[leader_name]
        assert svc["spec"]["selector"] == {c.SET_NAME_LABEL: name, c.GROUP_INDEX_LABEL: str(g)}
        assert svc["metadata"]["ownerReferences"][0]["uid"] == leader["metadata"]["uid"]
        assert leader["spec"]["subdomain"] == leader_name
        assert leader["metadata"]["annotations"][c.SUBDOMAIN_POLICY_ANNOTATION] == (
            "UniquePerReplica"
        )
        assert leader["metadata"]["labels"]["role"] == "worker"  # built from the worker template
        assert stss[leader_name]["spec"]["serviceName"] == leader_name
        worker = pods[f"{leader_name}-1"]
        assert worker["spec"]["subdomain"] == leader_name
        for pod in (leader, worker):
            env = env_of(pod["spec"]["containers"][0])
            assert env["LWS_LEADER_ADDRESS"] == f"{leader_name}.{leader_name}.{ns}"


async def test_size_one_makes_no_worker_statefulset(kube: Kube, lws_namespace: str) -> None:
    ns, name = lws_namespace, "solo"
    await create_available(kube, ns, lws_body(name, replicas=3, size=1))
    stss = await list_of(kube, "apps/v1", "statefulsets", ns, name)
    assert list(stss) == [name]
    pods = await list_of(kube, "v1", "pods", ns, name)
    assert sorted(pods) == [f"{name}-{g}" for g in range(3)]
    for g, pod in enumerate(sorted(pods.values(), key=lambda p: p["metadata"]["name"])):
        env = env_of(pod["spec"]["containers"][0])
        assert (env["LWS_GROUP_SIZE"], env["LWS_WORKER_INDEX"], env["LWS_GROUP_INDEX"]) == (
            "1",
            "0",
            str(g),
        )


async def test_events_tell_what_happened(kube: Kube, lws_namespace: str) -> None:
    ns, name = lws_namespace, "events"
    lws = await create_available(kube, ns, lws_body(name, replicas=1, size=2))
    (revision,) = (await lws_revisions(kube, ns, name)).values()
    rk = revision["metadata"]["labels"][c.REVISION_KEY]
    expected = {
        (
            "CreatingRevision",
            f"Creating revision with key {rk} for a newly created LeaderWorkerSet",
        ),
        ("GroupsProgressing", f"Created leader statefulset {name}"),
        ("GroupsProgressing", f"Created worker statefulset for leader pod {name}-0"),
        ("AllGroupsReady", "All replicas are ready, with 1 groups ready of total 1 groups"),
    }

    def notes(objs: Objects) -> set[tuple[str, str]]:
        return {(e.get("reason", ""), e.get("note", "")) for e in objs.values()}

    events = await wait_for_objects(
        kube,
        resource_path("events.k8s.io/v1", "events", namespace=ns),
        lambda objs: expected <= notes(objs),
        timeout=30,
        what=f"events {sorted(expected)}",
        field_selector=f"regarding.uid={lws['metadata']['uid']}",
        summary=lambda objs: "\n".join(sorted(map(str, notes(objs)))),
    )
    assert all(e["reportingController"] == "leaderworkerset" for e in events.values())
