"""Objects the operator did not create but that look like its own never crash it, are never
deleted by it, and are reported as Events where it can tell; a leader pod deleted or a Service
edited by hand leaves the LWS converged."""

from __future__ import annotations

from typing import Any

from lws_operator.api import constants as c
from lws_operator.kube.client import ApiError, Kube
from lws_operator.kube.paths import resource_path
from lws_operator.plan.lws.disruption import BUDGET_ANNOTATION
from lws_operator.plan.lws.history import history_name
from lws_testbed.operator_process import OperatorProcess
from lws_testbed.wait import wait_for_objects
from tests.cluster.controller.helpers import (
    container,
    create_available,
    is_available,
    lws_body,
    lws_path,
    wait_lws,
)
from tests.cluster.reliability.harness import (
    assert_converged,
    group_uids,
    pods_of,
    tracebacks,
)

NAME = "f"


def _pod(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [container("c")]},
    }


def _foreign_sts(name: str, labels: dict[str, str]) -> dict[str, Any]:
    sel = {"app": f"foreign-{name}"}
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": 0,
            "serviceName": name,
            "selector": {"matchLabels": sel},
            "template": {"metadata": {"labels": sel}, "spec": {"containers": [container("c")]}},
        },
    }


async def reconciled_after(kube: Kube, ns: str, name: str) -> None:
    """Evidence the operator has processed everything so far: bump the generation with a field
    that does not roll and wait for the status of that generation."""
    lws = await kube.get(lws_path(ns, name))
    surge = lws["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"]["maxSurge"]
    bumped = surge + 1 if isinstance(surge, int) else 1
    await kube.patch(
        lws_path(ns, name),
        {"spec": {"rolloutStrategy": {"rollingUpdateConfiguration": {"maxSurge": bumped}}}},
    )
    gen = (await kube.get(lws_path(ns, name)))["metadata"]["generation"]
    await wait_lws(
        kube,
        ns,
        name,
        lambda o: (o.get("status") or {}).get("observedGeneration") == gen,
        f"status of generation {gen}",
    )


def _no_new_tracebacks(op: OperatorProcess | None, start: int) -> None:
    if op is None:
        return
    op.check_alive()
    found = tracebacks(op.log.read_text(errors="replace")[start:])
    assert not found, "\n\n".join(found)


def _log_size(op: OperatorProcess | None) -> int:
    return len(op.log.read_text(errors="replace")) if op else 0


async def _warnings(kube: Kube, ns: str, uid: str, needle: str, timeout: float = 30) -> list[str]:
    events = await wait_for_objects(
        kube,
        resource_path("events.k8s.io/v1", "events", namespace=ns),
        lambda objs: any(
            e.get("type") == "Warning" and needle in (e.get("note") or "") for e in objs.values()
        ),
        timeout=timeout,
        what=f"a Warning event mentioning {needle!r}",
        field_selector=f"regarding.uid={uid}",
    )
    return [e.get("note", "") for e in events.values() if e.get("type") == "Warning"]


async def test_pods_with_lws_labels_but_no_owner_are_left_alone(
    kube: Kube, lws_namespace: str, operator: OperatorProcess | None
) -> None:
    ns, start = lws_namespace, _log_size(operator)
    await create_available(kube, ns, lws_body(NAME, replicas=2, size=2))
    before = await pods_of(kube, ns, NAME)
    strays = {
        "stray-noindex": {c.SET_NAME_LABEL: NAME},
        "stray-group0": {c.SET_NAME_LABEL: NAME, c.GROUP_INDEX_LABEL: "0"},
        "stray-group9": {
            c.SET_NAME_LABEL: NAME,
            c.GROUP_INDEX_LABEL: "9",
            c.WORKER_INDEX_LABEL: "1",
        },
    }
    created = []
    for pod_name, labels in strays.items():
        try:
            await kube.create(resource_path("v1", "pods", namespace=ns), _pod(pod_name, labels))
            created.append(pod_name)
        except ApiError as e:  # the pod webhook may refuse it: also fine, with a reason
            assert e.message, pod_name
    await reconciled_after(kube, ns, NAME)
    after = await pods_of(kube, ns, NAME)
    for pod_name in created:
        assert pod_name in after and not after[pod_name]["metadata"].get("deletionTimestamp"), (
            f"the operator deleted foreign pod {pod_name}"
        )
    for g in (0, 1):
        mine = {k: v for k, v in group_uids(after, g).items() if not k.startswith("stray")}
        assert mine == group_uids(before, g), f"group {g} was recreated because of a stray pod"
    lws = await kube.get(lws_path(ns, NAME))
    assert is_available(lws, 2), lws.get("status")
    _no_new_tracebacks(operator, start)


async def test_a_foreign_statefulset_named_like_a_group_is_kept_and_reported(
    kube: Kube, lws_namespace: str, operator: OperatorProcess | None
) -> None:
    """A StatefulSet ``f-1`` someone else owns blocks group 1's workers: it is not deleted,
    the LWS reports it in a Warning event, group 0 completes."""
    ns, start = lws_namespace, _log_size(operator)
    sts_path = resource_path("apps/v1", "statefulsets", namespace=ns)
    await kube.create(sts_path, _foreign_sts(f"{NAME}-1", {"app": "mine"}))
    lws = await kube.create(lws_path(ns), lws_body(NAME, replicas=2, size=2))
    notes = await _warnings(kube, ns, lws["metadata"]["uid"], f"{NAME}-1")
    assert any("not owned" in n for n in notes), notes
    # Reported again while it stays (every 15 s), as one Event with a count (issue 12.5).
    repeated = await wait_for_objects(
        kube,
        resource_path("events.k8s.io/v1", "events", namespace=ns),
        lambda objs: any(
            "not owned" in (e.get("note") or "") and (e.get("series") or {}).get("count", 1) >= 2
            for e in objs.values()
        ),
        timeout=60,
        what="the repeated Warning counted in a series",
        field_selector=f"regarding.uid={lws['metadata']['uid']}",
    )
    same = [e for e in repeated.values() if f"StatefulSet {NAME}-1 exists" in e.get("note", "")]
    assert len(same) == 1, [e.get("note") for e in same]
    await wait_for_objects(
        kube,
        resource_path("v1", "pods", namespace=ns),
        lambda objs: f"{ns}/{NAME}-0-1" in objs,
        timeout=60,
        what="group 0's worker pod",
    )
    foreign = await kube.get(f"{sts_path}/{NAME}-1")
    assert not foreign["metadata"].get("deletionTimestamp")
    assert not foreign["metadata"].get("ownerReferences"), foreign["metadata"]
    # Once it is removed, group 1 completes.
    await kube.delete(f"{sts_path}/{NAME}-1")
    await assert_converged(kube, ns, NAME, 2, 2)
    _no_new_tracebacks(operator, start)


async def test_a_foreign_leader_statefulset_is_kept_and_reported(
    kube: Kube, lws_namespace: str, operator: OperatorProcess | None
) -> None:
    ns, start = lws_namespace, _log_size(operator)
    sts_path = resource_path("apps/v1", "statefulsets", namespace=ns)
    await kube.create(sts_path, _foreign_sts(NAME, {c.SET_NAME_LABEL: NAME}))
    lws = await kube.create(lws_path(ns), lws_body(NAME, replicas=1, size=2))
    notes = await _warnings(kube, ns, lws["metadata"]["uid"], "not owned")
    assert notes
    foreign = await kube.get(f"{sts_path}/{NAME}")
    assert not foreign["metadata"].get("deletionTimestamp")
    assert not foreign["metadata"].get("ownerReferences"), foreign["metadata"]
    _no_new_tracebacks(operator, start)


async def test_a_leader_pod_deleted_by_hand_recreates_only_its_group(
    kube: Kube, lws_namespace: str, operator: OperatorProcess | None
) -> None:
    ns, start = lws_namespace, _log_size(operator)
    await create_available(kube, ns, lws_body(NAME, replicas=3, size=2))
    before = await pods_of(kube, ns, NAME)
    await kube.delete(resource_path("v1", "pods", namespace=ns, name=f"{NAME}-1"))
    done = await assert_converged(kube, ns, NAME, 3, 2)
    for g in (0, 2):
        assert group_uids(done.pods, g) == group_uids(before, g)
    assert not set(group_uids(done.pods, 1).values()) & set(group_uids(before, 1).values())
    _no_new_tracebacks(operator, start)


async def test_services_edited_or_deleted_by_hand(
    kube: Kube, lws_namespace: str, operator: OperatorProcess | None
) -> None:
    """An edited headless Service is neither deleted nor a crash; a deleted one comes back."""
    ns, start = lws_namespace, _log_size(operator)
    await create_available(kube, ns, lws_body(NAME, replicas=2, size=2))
    svc = resource_path("v1", "services", namespace=ns, name=NAME)
    before = await kube.get(svc)
    await kube.patch(
        svc,
        {"metadata": {"labels": {"edited": "by-hand"}}, "spec": {"selector": {"x": "y"}}},
    )
    await reconciled_after(kube, ns, NAME)
    edited = await kube.get(svc)
    assert edited["metadata"]["uid"] == before["metadata"]["uid"]
    await kube.delete(svc)
    await wait_for_objects(
        kube,
        resource_path("v1", "services", namespace=ns),
        lambda objs: any(
            o["metadata"]["name"] == NAME and o["metadata"]["uid"] != before["metadata"]["uid"]
            for o in objs.values()
        ),
        timeout=60,
        what=f"Service {NAME} recreated",
    )
    await assert_converged(kube, ns, NAME, 2, 2)
    _no_new_tracebacks(operator, start)


async def test_a_foreign_restart_history_configmap_is_kept_and_reported_once(
    kube: Kube, lws_namespace: str, operator: OperatorProcess | None
) -> None:
    """A ConfigMap named like the LWS's restart history but not owned by it: recreations still
    happen, the ConfigMap is left as it was, and one Warning says so (not one per pass)."""
    ns, start = lws_namespace, _log_size(operator)
    cm_path = resource_path("v1", "configmaps", namespace=ns, name=history_name(NAME))
    foreign = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": history_name(NAME), "labels": {c.SET_NAME_LABEL: NAME}},
        "data": {"mine": "keep"},
    }
    await kube.create(resource_path("v1", "configmaps", namespace=ns), foreign)
    lws = await create_available(kube, ns, lws_body(NAME, replicas=2, size=2))
    needle = f"ConfigMap {history_name(NAME)} is not owned"
    await _warnings(kube, ns, lws["metadata"]["uid"], needle)
    # More passes, and a recreation (which would record history): still that one Warning.
    leader = (await pods_of(kube, ns, NAME))[f"{NAME}-1"]["metadata"]["uid"]
    await kube.delete(resource_path("v1", "pods", namespace=ns, name=f"{NAME}-1-1"))
    await wait_for_objects(
        kube,
        resource_path("v1", "pods", namespace=ns),
        lambda objs: (
            (p := objs.get(f"{ns}/{NAME}-1")) is not None and p["metadata"]["uid"] != leader
        ),
        timeout=60,
        what="group 1 recreated",
    )
    await assert_converged(kube, ns, NAME, 2, 2)
    await reconciled_after(kube, ns, NAME)
    events = await kube.list(
        resource_path("events.k8s.io/v1", "events", namespace=ns),
        field_selector=f"regarding.uid={lws['metadata']['uid']}",
    )
    same = [e for e in events["items"] if needle in (e.get("note") or "")]
    assert len(same) == 1 and "series" not in same[0], same
    kept = await kube.get(cm_path)
    assert kept["data"] == {"mine": "keep"}, kept.get("data")
    assert not kept["metadata"].get("ownerReferences"), kept["metadata"]
    _no_new_tracebacks(operator, start)


async def test_an_invalid_disruption_budget_is_reported_once(
    kube: Kube, lws_namespace: str, operator: OperatorProcess | None
) -> None:
    """A disruption-budget annotation that is not a count or a percentage: one Warning naming
    the annotation (not one per pass); the LWS still reconciles, on maxUnavailable."""
    ns, start = lws_namespace, _log_size(operator)
    body = lws_body(NAME, replicas=2, size=2, annotations={BUDGET_ANNOTATION: "lots"})
    lws = await create_available(kube, ns, body)
    notes = await _warnings(kube, ns, lws["metadata"]["uid"], BUDGET_ANNOTATION)
    assert any("Invalid value: 'lots'" in n and "using maxUnavailable" in n for n in notes), notes
    await reconciled_after(kube, ns, NAME)
    await kube.patch(lws_path(ns, NAME), {"spec": {"replicas": 3}})
    await assert_converged(kube, ns, NAME, 3, 2)
    events = await kube.list(
        resource_path("events.k8s.io/v1", "events", namespace=ns),
        field_selector=f"regarding.uid={lws['metadata']['uid']}",
    )
    same = [e for e in events["items"] if BUDGET_ANNOTATION in (e.get("note") or "")]
    assert len(same) == 1 and "series" not in same[0], same
    _no_new_tracebacks(operator, start)
