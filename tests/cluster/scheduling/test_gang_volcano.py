"""The Volcano gang provider (upstream's pkg/schedulerprovider/volcano_provider.go and its gang e2e
tests, test/e2e/e2e_gang_scheduling_test.go): PodGroups ``scheduling.volcano.sh/v1beta1`` with
upstream's names, labels, annotations, minMember, minResources and queue.

Volcano's PodGroup CRD is installed (Volcano's own schema, descriptions left out); no Volcano
scheduler runs, and the pods keep the default scheduler, so the groups still come up. The
operator runs for this module from a configuration file selecting the provider, in place of the
session's, after the CRD is installed (test_gang_api_missing.py covers the other order).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest
import yaml

from lws_operator.api import constants as c
from lws_operator.api.kube_schema import QUANTITY_PATTERN
from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_operator.plan.meta import labels_of
from lws_testbed.manifests import wait_established
from lws_testbed.operator_process import OperatorProcess
from lws_testbed.wait import wait_for_objects
from tests.cluster.controller.helpers import (
    container,
    create_available,
    is_available,
    list_of,
    lws_body,
    lws_path,
    wait_lws,
)

API = "scheduling.volcano.sh/v1beta1"
CRD_NAME = "podgroups.scheduling.volcano.sh"
CRDS = "apiextensions.k8s.io/v1"
QUANTITY = {
    "anyOf": [{"type": "integer"}, {"type": "string"}],
    "pattern": QUANTITY_PATTERN,
    "x-kubernetes-int-or-string": True,
}
INT32 = {"type": "integer", "format": "int32"}
# Volcano's config/crd/volcano/bases/scheduling.volcano.sh_podgroups.yaml, without descriptions.
VOLCANO_PODGROUP_CRD: dict[str, Any] = {
    "apiVersion": CRDS,
    "kind": "CustomResourceDefinition",
    "metadata": {"name": CRD_NAME},
    "spec": {
        "group": "scheduling.volcano.sh",
        "names": {
            "kind": "PodGroup",
            "listKind": "PodGroupList",
            "plural": "podgroups",
            "shortNames": ["pg", "podgroup-v1beta1"],
            "singular": "podgroup",
        },
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1beta1",
                "served": True,
                "storage": True,
                "subresources": {},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "apiVersion": {"type": "string"},
                            "kind": {"type": "string"},
                            "metadata": {"type": "object"},
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "minMember": INT32,
                                    "minResources": {
                                        "type": "object",
                                        "additionalProperties": QUANTITY,
                                    },
                                    "minTaskMember": {
                                        "type": "object",
                                        "additionalProperties": INT32,
                                    },
                                    "networkTopology": {
                                        "type": "object",
                                        "properties": {
                                            "highestTierAllowed": {"type": "integer", "default": 1},
                                            "mode": {
                                                "type": "string",
                                                "default": "hard",
                                                "enum": ["hard", "soft"],
                                            },
                                        },
                                    },
                                    "priorityClassName": {"type": "string"},
                                    "queue": {"type": "string", "default": "default"},
                                    "preemptable": {"type": "boolean"},
                                },
                            },
                            "status": {
                                "type": "object",
                                "properties": {
                                    "conditions": {
                                        "type": "array",
                                        "items": {
                                            "type": "object",
                                            "properties": {
                                                k: {"type": "string"}
                                                for k in (
                                                    "lastTransitionTime",
                                                    "message",
                                                    "reason",
                                                    "status",
                                                    "transitionID",
                                                    "type",
                                                )
                                            },
                                        },
                                    },
                                    "failed": INT32,
                                    "phase": {"type": "string"},
                                    "running": INT32,
                                    "succeeded": INT32,
                                },
                            },
                        },
                    }
                },
            }
        ],
    },
}


@pytest.fixture(scope="module")
async def volcano_crd(kube: Kube) -> AsyncIterator[None]:
    await kube.apply(
        resource_path(CRDS, "customresourcedefinitions", name=CRD_NAME),
        VOLCANO_PODGROUP_CRD,
        field_manager="lws-volcano-tests",
    )
    await wait_established(kube, CRD_NAME)
    try:
        yield
    finally:
        await kube.delete(resource_path(CRDS, "customresourcedefinitions", name=CRD_NAME))


@pytest.fixture(scope="module")
async def volcano_operator(
    volcano_crd: None,
    replace_session_operator: Callable[..., AbstractAsyncContextManager[OperatorProcess]],
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[OperatorProcess]:
    config = tmp_path_factory.mktemp("volcano") / "config.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "config.lws-operator.x-k8s.io/v1alpha1",
                "kind": "Configuration",
                "gangScheduling": {"provider": "volcano"},
            }
        )
    )
    async with replace_session_operator("--config", str(Path(config))) as op:
        yield op


def requesting(role: str, init: dict[str, str] | None = None, **requests: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [container(role, resources={"requests": requests})]}
    if init is not None:
        spec["initContainers"] = [container(f"{role}-init", resources={"requests": init})]
    return spec


async def pod_groups(kube: Kube, ns: str, name: str) -> dict[str, dict[str, Any]]:
    listing = await kube.list(
        resource_path(API, "podgroups", namespace=ns), label_selector=f"{c.SET_NAME_LABEL}={name}"
    )
    return {g["metadata"]["name"]: g for g in listing["items"]}


async def test_volcano_pod_groups_as_upstream_writes_them(
    kube: Kube, namespace: str, volcano_operator: OperatorProcess
) -> None:
    ns, name = namespace, "vc"
    annotations = {
        "volcano.sh/task-spec": "x",
        c.VOLCANO_QUEUE_ANNOTATION: "q1",
        "unrelated/annotation": "y",
    }
    body = lws_body(
        name,
        replicas=2,
        size=4,
        annotations=annotations,
        leader_spec=requesting("leader", cpu="100m", memory="1Gi"),
        # the init container's 4 CPUs exceed the container's: the pod needs 4
        worker_spec=requesting("worker", {"cpu": "4"}, cpu="200m", memory="512Mi"),
    )
    await create_available(kube, ns, body)
    await create_available(kube, ns, lws_body("ready", replicas=1, size=3, startup="LeaderReady"))

    sts = await kube.get(resource_path("apps/v1", "statefulsets", namespace=ns, name=name))
    key = labels_of(sts)[c.REVISION_KEY]
    pods = await list_of(kube, "v1", "pods", ns, name)
    groups = await pod_groups(kube, ns, name)
    assert sorted(groups) == [f"{name}-0-{key}", f"{name}-1-{key}"]
    for i in range(2):
        group, leader = groups[f"{name}-{i}-{key}"], pods[f"{name}-{i}"]
        assert labels_of(group) == {
            c.SET_NAME_LABEL: name,
            c.GROUP_INDEX_LABEL: str(i),
            c.REVISION_KEY: key,
        }
        assert group["metadata"]["annotations"] == {"volcano.sh/task-spec": "x"}
        assert group["spec"] == {
            "minMember": 4,
            # 100m + 3 x 4, and 1Gi + 3 x 512Mi
            "minResources": {"cpu": "12100m", "memory": "2560Mi"},
            "queue": "q1",
        }
        (owner,) = group["metadata"]["ownerReferences"]
        assert owner == {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": f"{name}-{i}",
            "uid": leader["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    for pod in pods.values():
        index = labels_of(pod)[c.GROUP_INDEX_LABEL]
        assert (
            pod["metadata"]["annotations"][c.POD_GROUP_NAME_ANNOTATION] == f"{name}-{index}-{key}"
        )

    (ready,) = (await pod_groups(kube, ns, "ready")).values()
    # minMember 1 with LeaderReady; the queue is the CRD's default
    assert ready["spec"] == {"minMember": 1, "minResources": {}, "queue": "default"}

    # resize (upstream e2e "recreate PodGroups with correct size"): new revision, new PodGroups
    await kube.patch(lws_path(ns, name), {"spec": {"leaderWorkerTemplate": {"size": 2}}})
    await wait_lws(
        kube,
        ns,
        name,
        lambda o: is_available(o, 2) and o["status"].get("updatedReplicas") == 2,
        "resized to 2",
    )
    sts = await kube.get(resource_path("apps/v1", "statefulsets", namespace=ns, name=name))
    new_key = labels_of(sts)[c.REVISION_KEY]
    want = {f"{ns}/{name}-{i}-{new_key}" for i in range(2)}
    objs = await wait_for_objects(
        kube,
        resource_path(API, "podgroups", namespace=ns),
        lambda objs: set(objs) == want,
        timeout=60,
        what=f"only the new revision's PodGroups {sorted(want)}",
        label_selector=f"{c.SET_NAME_LABEL}={name}",
    )
    assert all(o["spec"]["minMember"] == 2 for o in objs.values())
    assert all(
        o["spec"]["minResources"] == {"cpu": "4100m", "memory": "1536Mi"} for o in objs.values()
    )

    # deleted with the LeaderWorkerSet
    for lws_name in (name, "ready"):
        await kube.delete(lws_path(ns, lws_name))
    await wait_for_objects(
        kube,
        resource_path(API, "podgroups", namespace=ns),
        lambda objs: not objs,
        timeout=60,
        what="every PodGroup garbage-collected",
    )
