"""A gang provider whose PodGroup API is not served (Volcano's CRD not installed): the operator
still reconciles (it does not wait for PodGroups it cannot list), says what is missing in a
Warning event on the LeaderWorkerSet, and once the CRD is installed picks the API up and
completes the groups, without a restart."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager

import pytest

from lws_operator.api import constants as c
from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_testbed.manifests import wait_established
from lws_testbed.operator_process import OperatorProcess
from lws_testbed.wait import wait_for_objects
from tests.cluster.controller.helpers import is_available, lws_body, lws_path, wait_lws
from tests.cluster.scheduling.test_gang_volcano import (
    API,
    CRD_NAME,
    CRDS,
    VOLCANO_PODGROUP_CRD,
    pod_groups,
)

_CRD_PATH = resource_path(CRDS, "customresourcedefinitions")


@pytest.fixture(scope="module")
async def operator_without_the_api(
    kube: Kube,
    replace_session_operator: Callable[..., AbstractAsyncContextManager[OperatorProcess]],
) -> AsyncIterator[OperatorProcess]:
    await _crd_gone(kube)  # the Volcano tests remove it when they end
    async with replace_session_operator("--gang-provider", "volcano") as op:
        yield op
    await kube.delete(f"{_CRD_PATH}/{CRD_NAME}")
    await _crd_gone(kube)  # before the Volcano tests create it again


async def _crd_gone(kube: Kube) -> None:
    await wait_for_objects(
        kube,
        _CRD_PATH,
        lambda objs: not objs,
        timeout=60,
        what=f"no CRD {CRD_NAME}",
        field_selector=f"metadata.name={CRD_NAME}",
    )


async def test_missing_podgroup_api_is_reported_then_picked_up(
    kube: Kube, namespace: str, operator_without_the_api: OperatorProcess
) -> None:
    ns, name = namespace, "nogang"
    await kube.create(lws_path(ns), lws_body(name, replicas=1, size=2))
    # Reconciled all the same: the leader StatefulSet exists and the missing API is named.
    await wait_for_objects(
        kube,
        resource_path("events.k8s.io/v1", "events", namespace=ns),
        lambda objs: any(
            e.get("reason") == "FailedCreate"
            and f"(is the {API} PodGroup API served?)" in (e.get("note") or "")
            for e in objs.values()
        ),
        timeout=60,
        what="a FailedCreate Warning naming the PodGroup API",
        field_selector=f"regarding.kind=LeaderWorkerSet,regarding.name={name},type=Warning",
    )
    sets = await kube.list(
        resource_path("apps/v1", "statefulsets", namespace=ns),
        label_selector=f"{c.SET_NAME_LABEL}={name}",
    )
    assert [s["metadata"]["name"] for s in sets["items"]] == [name]

    await kube.apply(
        f"{_CRD_PATH}/{CRD_NAME}", VOLCANO_PODGROUP_CRD, field_manager="lws-volcano-tests"
    )
    await wait_established(kube, CRD_NAME)
    # The operator retries the PodGroup every 30 s and its informer lists the API again.
    await wait_lws(kube, ns, name, lambda o: is_available(o, 1), "Available", timeout=90)
    (group,) = await pod_groups(kube, ns, name)
    assert group.startswith(f"{name}-0"), group
