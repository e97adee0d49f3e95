"""Startup policy, scaling (spec and scale subresource) and deletion."""

from __future__ import annotations

from typing import Any

from lws_operator.api import constants as c
from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_testbed.wait import wait_for_objects
from tests.cluster.controller.conftest import AddNode
from tests.cluster.controller.helpers import (
    container,
    create_available,
    is_available,
    list_of,
    lws_body,
    lws_path,
    lws_revisions,
    wait_lws,
    wait_pods,
)

BIG_GPUS = 16  # more than any default node has: such a leader stays Pending


def gpu_spec(role: str, gpus: int) -> dict[str, Any]:
    limits = {"nvidia.com/gpu": str(gpus)}
    return {"containers": [container(role, resources={"limits": limits, "requests": limits})]}


async def test_leader_ready_holds_workers_until_the_leader_is_ready(
    kube: Kube, lws_namespace: str, add_big_node: AddNode
) -> None:
    ns = lws_namespace
    gated = lws_body(
        "gated",
        replicas=1,
        size=2,
        startup="LeaderReady",
        leader_spec=gpu_spec("leader", BIG_GPUS),
    )
    eager = lws_body(
        "eager",
        replicas=1,
        size=2,
        startup="LeaderCreated",
        leader_spec=gpu_spec("leader", BIG_GPUS),
    )
    await kube.create(lws_path(ns), gated)
    await wait_pods(
        kube,
        ns,
        "gated",
        lambda pods: any(p.get("status", {}).get("conditions") for p in pods.values()),
        "the leader reported unschedulable",
    )
    # The operator saw the pending leader before it even sees "eager" (one FIFO work queue),
    # so once eager's worker pod exists, gated's decision has long been taken.
    await kube.create(lws_path(ns), eager)
    await wait_pods(kube, ns, "eager", lambda pods: f"{ns}/eager-0-1" in pods, "a worker pod")
    assert list(await list_of(kube, "apps/v1", "statefulsets", ns, "gated")) == ["gated"]

    await add_big_node()  # now both leaders fit: gated's workers follow its readiness
    for name in ("gated", "eager"):
        await wait_lws(kube, ns, name, lambda o: is_available(o, 1), "Available")
    assert sorted(await list_of(kube, "apps/v1", "statefulsets", ns, "gated")) == [
        "gated",
        "gated-0",
    ]


async def test_scale_through_spec_and_scale_subresource(kube: Kube, lws_namespace: str) -> None:
    ns, name = lws_namespace, "scaled"
    await create_available(kube, ns, lws_body(name, replicas=2, size=2))

    await kube.patch(lws_path(ns, name), {"spec": {"replicas": 4}})
    lws = await wait_lws(kube, ns, name, lambda o: is_available(o, 4), "Available with 4")
    assert lws["status"]["replicas"] == 4 and lws["status"]["updatedReplicas"] == 4
    pods = await list_of(kube, "v1", "pods", ns, name)
    assert sorted(pods) == sorted(f"{name}-{g}{w}" for g in range(4) for w in ("", "-1"))

    scale = await kube.get(lws_path(ns, name, "scale"))
    assert scale["spec"]["replicas"] == 4
    assert scale["status"]["selector"] == f"{c.SET_NAME_LABEL}={name},{c.WORKER_INDEX_LABEL}=0"
    await kube.patch(lws_path(ns, name, "scale"), {"spec": {"replicas": 1}})
    lws = await wait_lws(
        kube,
        ns,
        name,
        lambda o: is_available(o, 1) and o["status"]["replicas"] == 1,
        "Available with 1 group",
    )
    assert lws["spec"]["replicas"] == 1
    # the highest groups went, with everything their leaders owned
    await wait_pods(
        kube,
        ns,
        name,
        lambda pods: sorted(pods) == [f"{ns}/{name}-0", f"{ns}/{name}-0-1"],
        "1 group",
    )
    await wait_for_objects(
        kube,
        resource_path("apps/v1", "statefulsets", namespace=ns),
        lambda objs: sorted(objs) == [f"{ns}/{name}", f"{ns}/{name}-0"],
        timeout=60,
        what="worker StatefulSets of groups 1-3 garbage-collected",
        label_selector=f"{c.SET_NAME_LABEL}={name}",
    )


async def test_scale_to_zero_is_available(kube: Kube, lws_namespace: str) -> None:
    ns, name = lws_namespace, "zero"
    await create_available(kube, ns, lws_body(name, replicas=1, size=2))
    await kube.patch(lws_path(ns, name), {"spec": {"replicas": 0}})
    lws = await wait_lws(
        kube, ns, name, lambda o: is_available(o, 0) and "replicas" not in o["status"], "empty"
    )
    # As upstream's omitempty: counters that are 0 are not stored.
    assert not {"replicas", "readyReplicas", "updatedReplicas"} & set(lws["status"])
    await wait_pods(kube, ns, name, lambda pods: not pods, "no pods")


async def test_deleting_the_lws_removes_everything_it_made(kube: Kube, lws_namespace: str) -> None:
    ns, name = lws_namespace, "doomed"
    await create_available(
        kube, ns, lws_body(name, replicas=2, size=3, subdomain="UniquePerReplica")
    )
    assert await lws_revisions(kube, ns, name)
    await kube.delete(lws_path(ns, name))  # kubectl delete: background propagation
    for api, plural in (
        ("v1", "pods"),
        ("apps/v1", "statefulsets"),
        ("v1", "services"),
        ("apps/v1", "controllerrevisions"),
    ):
        await wait_for_objects(
            kube,
            resource_path(api, plural, namespace=ns),
            lambda objs: not objs,
            timeout=60,
            what=f"all {plural} of {name} garbage-collected",
            label_selector=f"{c.SET_NAME_LABEL}={name}",
        )
    await wait_for_objects(
        kube,
        lws_path(ns),
        lambda objs: not objs,
        timeout=60,
        what=f"{name} itself gone",
        field_selector=f"metadata.name={name}",
    )
