"""The native gang provider on a cluster that serves no PodGroup API the operator knows
(Kubernetes before 1.36, or 1.36/1.37 without the feature gates and runtime-config): the
operator says so once in its log, with the cluster's version, warns on each LeaderWorkerSet it
would have ganged, joins no pod to a PodGroup (one that can never exist would hold the pod
forever) and runs the LeaderWorkerSets without gangs. A cluster that serves the API cannot show
this: the test skips there (``test_gang_native.py`` runs instead)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager

import pytest

from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_operator.plan.lws import gang
from lws_testbed.operator_process import OperatorProcess
from lws_testbed.wait import wait_for_objects
from tests.cluster.controller.helpers import create_available, lws_body
from tests.cluster.scheduling.conftest import NativeGangs
from tests.cluster.scheduling.test_gang_native import pods_of


@pytest.fixture(scope="module")
async def unserved_gang_operator(
    native_gangs: NativeGangs,
    replace_session_operator: Callable[..., AbstractAsyncContextManager[OperatorProcess]],
) -> AsyncIterator[OperatorProcess]:
    if native_gangs.api is not None:
        pytest.skip(
            f"the cluster under test ({native_gangs.cluster_version}) serves {native_gangs.api} "
            "PodGroups (discovery): the provider's unserved case cannot be shown on it"
        )
    async with replace_session_operator("--gang-provider", "kubernetes") as op:
        yield op


async def test_unserved_native_gangs_are_reported_and_lws_run_without_them(
    kube: Kube,
    namespace: str,
    native_gangs: NativeGangs,
    unserved_gang_operator: OperatorProcess,
) -> None:
    ns = namespace
    names = ("plain", "second")
    for name in names:
        await create_available(kube, ns, lws_body(name, replicas=2, size=2))

    for name in names:  # one Warning on each, naming the feature and the cluster's version
        events = await wait_for_objects(
            kube,
            resource_path("events.k8s.io/v1", "events", namespace=ns),
            lambda objs: any(e.get("reason") == gang.UNAVAILABLE_REASON for e in objs.values()),
            timeout=30,
            what=f"a {gang.UNAVAILABLE_REASON} Warning on {name}",
            field_selector=f"regarding.kind=LeaderWorkerSet,regarding.name={name},type=Warning",
        )
        (event,) = [e for e in events.values() if e.get("reason") == gang.UNAVAILABLE_REASON]
        assert "the scheduling.k8s.io PodGroup API" in event["note"], event["note"]
        assert f"this cluster ({native_gangs.cluster_version})" in event["note"], event["note"]
        assert (event.get("series") or {}).get("count", 1) == 1, event  # once per LWS

    pods = {}
    for name in names:
        pods.update(await pods_of(kube, ns, name))
    assert len(pods) == 8
    joined = {
        k: p["spec"]["schedulingGroup"] for k, p in pods.items() if "schedulingGroup" in p["spec"]
    }
    assert not joined, f"pods joined to PodGroups that cannot exist: {joined}"

    log = unserved_gang_operator.log.read_text(errors="replace")
    # The text log format: time, level, logger, message. (The event recorder's own warnings,
    # for LeaderWorkerSets of namespaces being deleted, quote the note; they are not counted.)
    errors = [
        line
        for line in log.splitlines()
        if " ERROR " in line and "gang scheduling with the kubernetes" in line
    ]
    assert len(errors) == 1, "\n".join(errors) or unserved_gang_operator.tail()
    (line,) = errors
    assert "ERROR lws_operator.controller.operator: gang scheduling with the kubernetes" in line
    assert f"this cluster ({native_gangs.cluster_version}) serves" in line, line
    assert "LeaderWorkerSets are run without gangs" in line, line
