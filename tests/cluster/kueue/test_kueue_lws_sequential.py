"""Kueue v0.19.2's sequential LeaderWorkerSet scenarios: with ``manageJobsWithoutQueueName``
(``test/e2e/sequential/extended/managejobswithoutqueuename_test.go``; Kueue restarted with it,
as its e2e does) and a 50-character LWS name
(``test/e2e/sequential/extended/workloadidentifierannotations_test.go``)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from typing import Any

import pytest

from lws_operator.kube.client import Kube
from lws_testbed import kueue
from lws_testbed.local import LocalCluster
from tests.cluster.controller.helpers import lws_path, wait_lws
from tests.cluster.kueue.helpers import (
    Queues,
    admitted,
    gated,
    kueue_lws,
    owned_by,
    queues,
    wait_kueue_pods,
    wait_workloads,
)


def ready_one(lws: dict[str, Any]) -> bool:
    return (lws.get("status") or {}).get("readyReplicas") == 1


@pytest.fixture(scope="module")
async def manage_without_queue_name(kueue_cluster: LocalCluster) -> AsyncIterator[None]:
    """Kueue restarted with manageJobsWithoutQueueName, and restarted back afterwards."""
    options = kueue_cluster.config.kueue
    assert options is not None
    changed = dataclasses.replace(options, manage_jobs_without_queue_name=True)
    await asyncio.to_thread(kueue_cluster.restart_kueue, changed)
    try:
        yield
    finally:
        await asyncio.to_thread(kueue_cluster.restart_kueue, options)


@pytest.fixture
async def main_queue(kube: Kube, namespace: str) -> AsyncIterator[Queues]:
    async with queues(kube, namespace, {"cpu": 2, "memory": "2G"}, local_queue="main") as q:
        yield q


def only_group_0(wls: dict[int, dict[str, Any]], uid: str) -> bool:
    return sorted(wls) == [0] and owned_by(wls[0], uid)


@pytest.mark.kueue_full  # Kueue restarted twice: make test-kueue
@pytest.mark.usefixtures("manage_without_queue_name")
class TestManageJobsWithoutQueueName:
    async def test_with_queue_name_admitted(
        self, kube: Kube, namespace: str, main_queue: Queues
    ) -> None:
        body = kueue_lws("lws", queue="main", size=1)
        for t in body["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"]:
            t["resources"]["requests"]["memory"] = "200Mi"
        lws = await kube.create(lws_path(namespace), body)
        uid = lws["metadata"]["uid"]
        await wait_workloads(
            kube, namespace, uid, lambda w: only_group_0(w, uid) and admitted(w[0]), "admitted"
        )
        await wait_lws(kube, namespace, "lws", ready_one, "1 group ready")
        await wait_kueue_pods(
            kube,
            namespace,
            "lws",
            lambda pods: (
                len(pods) == 1
                and all(p.get("status", {}).get("phase") == "Running" for p in pods.values())
            ),
            "Running",
        )
        await kube.delete(lws_path(namespace, "lws"))
        await wait_workloads(kube, namespace, uid, lambda w: not w, "Workload deleted")

    async def test_without_queue_name_suspended(
        self, kube: Kube, namespace: str, main_queue: Queues
    ) -> None:
        lws = await kube.create(lws_path(namespace), kueue_lws("lws", queue=None, size=1))
        uid = lws["metadata"]["uid"]
        wls = await wait_workloads(kube, namespace, uid, lambda w: only_group_0(w, uid), "one")
        assert not admitted(wls[0])
        await wait_kueue_pods(
            kube,
            namespace,
            "lws",
            lambda pods: len(pods) == 1 and all(gated(p) for p in pods.values()),
            "gated",
        )
        current = await kube.get(lws_path(namespace, "lws"))
        assert (current.get("status") or {}).get("readyReplicas", 0) == 0
        await kube.delete(lws_path(namespace, "lws"))
        await wait_workloads(kube, namespace, uid, lambda w: not w, "Workload deleted")

    async def test_queue_name_set_later(
        self, kube: Kube, namespace: str, main_queue: Queues
    ) -> None:
        lws = await kube.create(lws_path(namespace), kueue_lws("lws", queue=None, size=1))
        uid = lws["metadata"]["uid"]

        def inadmissible(wls: dict[int, dict[str, Any]]) -> bool:
            cond = next(
                (
                    x
                    for x in (wls.get(0) or {}).get("status", {}).get("conditions") or []
                    if x.get("type") == "QuotaReserved"
                ),
                {},
            )
            return only_group_0(wls, uid) and cond.get("reason") == "Inadmissible"

        await wait_workloads(kube, namespace, uid, inadmissible, "inadmissible (no queue)")
        await wait_kueue_pods(
            kube,
            namespace,
            "lws",
            lambda pods: len(pods) == 1 and all(gated(p) for p in pods.values()),
            "gated",
        )
        await kube.patch(
            lws_path(namespace, "lws"), {"metadata": {"labels": {kueue.QUEUE_LABEL: "main"}}}
        )
        await wait_workloads(
            kube, namespace, uid, lambda w: only_group_0(w, uid) and admitted(w[0]), "admitted"
        )
        await wait_lws(kube, namespace, "lws", ready_one, "1 group ready")


async def test_fifty_character_name(kube: Kube, namespace: str) -> None:
    name = "a" * 50
    async with queues(kube, namespace) as q:
        lws = await kube.create(lws_path(namespace), kueue_lws(name, queue=q.local_queue, size=3))
        await wait_lws(kube, namespace, name, ready_one, "1 group ready", timeout=120)
        pods = await wait_kueue_pods(kube, namespace, name, lambda p: len(p) == 3, "3 pods")
        for pod in pods.values():
            annotations = pod["metadata"].get("annotations") or {}
            assert kueue.GROUP_NAME_ANNOTATION in annotations, annotations
            assert kueue.GROUP_NAME_LABEL not in (pod["metadata"].get("labels") or {})
        wl_name = pods[f"{namespace}/{name}-0"]["metadata"]["annotations"][
            kueue.GROUP_NAME_ANNOTATION
        ]
        assert len(wl_name) > 63, wl_name  # too long for a label: hence the annotation
        assert lws["metadata"]["uid"]
