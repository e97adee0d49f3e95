"""Kueue's LeaderWorkerSet webhooks against the LWS API under test: what its mutating webhook
writes on the templates, and the update rules of its validating webhook (Kueue v0.19.2
``pkg/controller/jobs/leaderworkerset/leaderworkerset_webhook.go`` and
``test/integration/singlecluster/webhook/jobs/leaderworkerset_webhook_test.go``)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from lws_operator.kube.client import ApiError, Kube
from lws_testbed import kueue
from tests.cluster.controller.helpers import lws_path, wait_lws
from tests.cluster.kueue.helpers import Queues, kueue_lws, queues


@pytest.fixture
async def q(kube: Kube, namespace: str) -> Any:
    async with queues(kube, namespace) as made:
        yield made


async def refused(kube: Kube, ns: str, name: str, patch: dict[str, Any], field: str) -> str:
    with pytest.raises(ApiError) as caught:
        await kube.patch(lws_path(ns, name), patch)
    assert caught.value.status in (400, 403, 422), caught.value
    assert "vleaderworkerset.kb.io" in caught.value.message, caught.value.message
    assert field in caught.value.message, caught.value.message
    return caught.value.message


def worker_container(lws: dict[str, Any], **changes: Any) -> dict[str, Any]:
    container = copy.deepcopy(
        lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    )
    container.update(changes)
    return {
        "spec": {"leaderWorkerTemplate": {"workerTemplate": {"spec": {"containers": [container]}}}}
    }


async def test_mutating_webhook_marks_both_templates(kube: Kube, namespace: str, q: Queues) -> None:
    body = kueue_lws("lws", queue=q.local_queue, size=2, leader_cpu="150m")
    stored = await kube.create(lws_path(namespace), body)
    for which in ("leaderTemplate", "workerTemplate"):
        meta = stored["spec"]["leaderWorkerTemplate"][which].get("metadata") or {}
        assert (meta.get("labels") or {}).get(kueue.QUEUE_LABEL) == q.local_queue, (which, meta)
        annotations = meta.get("annotations") or {}
        assert annotations.get(kueue.SUSPENDING_PARENT_ANNOTATION) == (
            "leaderworkerset.x-k8s.io/leaderworkerset"
        ), (which, annotations)
        assert annotations.get("kueue.x-k8s.io/pod-group-serving") == "true", (which, annotations)
    # The round trip through Go structs left what upstream's API would store.
    assert stored["spec"]["rolloutStrategy"]["type"] == "RollingUpdate", stored["spec"]
    assert stored["spec"]["leaderWorkerTemplate"]["restartPolicy"] == "RecreateGroupOnPodRestart"


async def test_size_is_immutable_while_managed(kube: Kube, namespace: str, q: Queues) -> None:
    await kube.create(lws_path(namespace), kueue_lws("lws", queue=q.local_queue, size=2))
    for size in (3, 1):
        patch = {"spec": {"leaderWorkerTemplate": {"size": size}}}
        await refused(kube, namespace, "lws", patch, "spec.leaderWorkerTemplate.size")
    await kube.patch(lws_path(namespace, "lws"), {"spec": {"replicas": 3}})


async def test_unmanaged_lws_is_unrestricted(kube: Kube, namespace: str, q: Queues) -> None:
    await kube.create(lws_path(namespace), kueue_lws("lws", queue=None, size=2))
    await kube.patch(lws_path(namespace, "lws"), {"spec": {"leaderWorkerTemplate": {"size": 3}}})
    stored = await kube.get(lws_path(namespace, "lws"))
    worker = stored["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    assert kueue.SUSPENDING_PARENT_ANNOTATION not in (worker.get("metadata") or {}).get(
        "annotations", {}
    )


async def test_pod_shape_is_immutable_image_is_not(kube: Kube, namespace: str, q: Queues) -> None:
    lws = await kube.create(lws_path(namespace), kueue_lws("lws", queue=q.local_queue, size=2))
    bigger = {"requests": {"cpu": "300m"}, "limits": {"cpu": "300m"}}
    await refused(
        kube,
        namespace,
        "lws",
        worker_container(lws, resources=bigger),
        "spec.leaderWorkerTemplate.workerTemplate.spec",
    )
    await kube.patch(lws_path(namespace, "lws"), worker_container(lws, image="example.com/new:1"))


async def test_queue_name_is_immutable_once_a_group_is_ready(
    kube: Kube, namespace: str, q: Queues
) -> None:
    await kube.create(lws_path(namespace), kueue_lws("lws", queue=q.local_queue))
    await wait_lws(
        kube,
        namespace,
        "lws",
        lambda o: (o.get("status") or {}).get("readyReplicas") == 1,
        "1 group ready",
    )
    patch = {"metadata": {"labels": {kueue.QUEUE_LABEL: "another-queue"}}}
    await refused(kube, namespace, "lws", patch, f"metadata.labels[{kueue.QUEUE_LABEL}]")
