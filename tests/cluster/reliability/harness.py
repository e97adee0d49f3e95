"""Reliability harness: kill the operator when a watch sees a chosen event, restart it, and
check that the cluster converges to exactly the objects one LeaderWorkerSet should have.

Everything waits on watches (``wait_for_objects``) with bounded timeouts; a timeout reports the
last state observed."""

from __future__ import annotations

import asyncio
import os
import re
import signal
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lws_operator.api import constants as c
from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_operator.plan.meta import controller_of, pod_ready
from lws_testbed.operator_process import OperatorProcess
from lws_testbed.wait import Objects, wait_for_objects
from tests.cluster.controller.helpers import is_available, lws_path, short_pods

TIMEOUT = 90
Predicate = Callable[[Objects], bool]


async def kill(op: OperatorProcess) -> None:
    """SIGKILL the operator process and reap it."""
    if op.proc.returncode is None:
        os.kill(op.pid, signal.SIGKILL)
    await op.proc.wait()


async def kill_when(
    kube: Kube,
    op: OperatorProcess,
    path: str,
    predicate: Predicate,
    *,
    what: str,
    timeout: float = TIMEOUT,
    label_selector: str | None = None,
    field_selector: str | None = None,
) -> Objects:
    """SIGKILL the operator as soon as a watch on ``path`` sees ``predicate`` hold; returns
    the objects seen at that moment."""
    objs = await wait_for_objects(
        kube,
        path,
        predicate,
        timeout=timeout,
        what=f"kill point: {what}",
        label_selector=label_selector,
        field_selector=field_selector,
    )
    await kill(op)
    return objs


def start_kill_when(
    kube: Kube, op: OperatorProcess, path: str, predicate: Predicate, **kw: Any
) -> asyncio.Task[Objects]:
    """``kill_when`` as a task, started before the action that should trigger it."""
    return asyncio.get_running_loop().create_task(kill_when(kube, op, path, predicate, **kw))


# ---- convergence -----------------------------------------------------------------------------
def _alive(objs: Objects) -> dict[str, dict[str, Any]]:
    return {
        o["metadata"]["name"]: o
        for o in objs.values()
        if not o["metadata"].get("deletionTimestamp")
    }


def labels(o: dict[str, Any]) -> dict[str, str]:
    return dict(o["metadata"].get("labels") or {})


def group_uids(pods: Objects, group: int) -> dict[str, str]:
    """Pod name → UID of one group's pods (terminating ones left out)."""
    return {
        n: p["metadata"]["uid"]
        for n, p in _alive(pods).items()
        if labels(p).get(c.GROUP_INDEX_LABEL) == str(group)
    }


async def pods_of(kube: Kube, ns: str, name: str) -> Objects:
    listing = await kube.list(
        resource_path("v1", "pods", namespace=ns), label_selector=f"{c.SET_NAME_LABEL}={name}"
    )
    return {p["metadata"]["name"]: p for p in listing["items"]}


@dataclass
class Converged:
    lws: dict[str, Any]
    pods: Objects
    statefulsets: Objects
    revision_key: str


def _selector(name: str) -> str:
    return f"{c.SET_NAME_LABEL}={name}"


async def assert_converged(
    kube: Kube,
    ns: str,
    name: str,
    replicas: int,
    size: int,
    *,
    services: set[str] | None = None,
    timeout: float = TIMEOUT,
) -> Converged:
    """Wait (bounded) until the LWS is Available with every group ready and updated, then
    until its objects are exactly the expected ones: the leader StatefulSet (``replicas``,
    partition 0) and one worker StatefulSet per group owned by that group's leader pod;
    ``replicas * size`` pods, all on the current revision, none terminating; exactly one
    ControllerRevision of the LWS; the headless Service(s). Extra objects (orphans, duplicates,
    stale revisions) must go away within the timeout: the garbage collector may need a moment."""
    lws = (
        await wait_for_objects(
            kube,
            lws_path(ns),
            lambda o: (
                f"{ns}/{name}" in o
                and is_available(o[f"{ns}/{name}"], replicas)
                and (o[f"{ns}/{name}"].get("status") or {}).get("updatedReplicas", 0) == replicas
                and (o[f"{ns}/{name}"].get("status") or {}).get("replicas", 0) == replicas
            ),
            timeout=timeout,
            what=f"LWS {name} Available with {replicas} ready, updated groups",
            field_selector=f"metadata.name={name}",
        )
    )[f"{ns}/{name}"]
    uid = lws["metadata"]["uid"]

    async def revisions() -> Objects:
        return await wait_for_objects(
            kube,
            resource_path("apps/v1", "controllerrevisions", namespace=ns),
            lambda objs: len(_lws_revisions(objs, uid)) == 1,
            timeout=timeout,
            what=f"exactly one ControllerRevision of LWS {name}",
            label_selector=_selector(name),
        )

    revs = _lws_revisions(await revisions(), uid)
    (key,) = {labels(r).get(c.REVISION_KEY, "") for r in revs.values()}

    want_pods = {f"{name}-{g}" for g in range(replicas)} | {
        f"{name}-{g}-{w}" for g in range(replicas) for w in range(1, size)
    }

    def pods_ok(objs: Objects) -> bool:
        by_name = {o["metadata"]["name"]: o for o in objs.values()}
        return (
            set(by_name) == want_pods
            and all(not p["metadata"].get("deletionTimestamp") for p in by_name.values())
            and all(labels(p).get(c.REVISION_KEY) == key for p in by_name.values())
            and all(pod_ready(p) for p in by_name.values())
        )

    pods = await wait_for_objects(
        kube,
        resource_path("v1", "pods", namespace=ns),
        pods_ok,
        timeout=timeout,
        what=f"exactly the {replicas}x{size} pods of {name}, ready, on revision {key}",
        label_selector=_selector(name),
        summary=short_pods,
    )
    pods = {o["metadata"]["name"]: o for o in pods.values()}
    leader_uids = {f"{name}-{g}": pods[f"{name}-{g}"]["metadata"]["uid"] for g in range(replicas)}
    want_sts = {name} | ({f"{name}-{g}" for g in range(replicas)} if size > 1 else set())

    def sts_ok(objs: Objects) -> bool:
        by_name = {o["metadata"]["name"]: o for o in objs.values()}
        if set(by_name) != want_sts:
            return False
        for n, s in by_name.items():
            owner = controller_of(s) or {}
            want_owner = uid if n == name else leader_uids[n]
            if owner.get("uid") != want_owner or s["metadata"].get("deletionTimestamp"):
                return False
            if labels(s).get(c.REVISION_KEY) != key:
                return False
        spec = by_name[name]["spec"]
        partition = ((spec.get("updateStrategy") or {}).get("rollingUpdate") or {}).get(
            "partition"
        ) or 0
        return bool(spec.get("replicas", 0) == replicas and partition == 0)

    sts = await wait_for_objects(
        kube,
        resource_path("apps/v1", "statefulsets", namespace=ns),
        sts_ok,
        timeout=timeout,
        what=(
            f"exactly the StatefulSets {sorted(want_sts)}, owned by the LWS / their leader pod, "
            f"on revision {key}"
        ),
        label_selector=_selector(name),
    )
    sts_uids = {o["metadata"]["name"]: o["metadata"]["uid"] for o in sts.values()}

    def owned_pods(objs: Objects) -> bool:
        # Every pod belongs to a StatefulSet that exists now (not to one the garbage collector
        # has yet to clean up after), and the leader pods are those seen above.
        if not pods_ok(objs):
            return False
        for p in objs.values():
            n = p["metadata"]["name"]
            group = labels(p).get(c.GROUP_INDEX_LABEL, "")
            owner_sts = name if n == f"{name}-{group}" else f"{name}-{group}"
            if (controller_of(p) or {}).get("uid") != sts_uids.get(owner_sts):
                return False
            if n in leader_uids and p["metadata"]["uid"] != leader_uids[n]:
                return False
        return True

    pods = await wait_for_objects(
        kube,
        resource_path("v1", "pods", namespace=ns),
        owned_pods,
        timeout=timeout,
        what=f"every pod of {name} owned by a live StatefulSet of it",
        label_selector=_selector(name),
        summary=short_pods,
    )
    pods = {o["metadata"]["name"]: o for o in pods.values()}
    want_svc = {name} if services is None else services
    await wait_for_objects(
        kube,
        resource_path("v1", "services", namespace=ns),
        lambda objs: {o["metadata"]["name"] for o in objs.values()} == want_svc,
        timeout=timeout,
        what=f"exactly the Services {sorted(want_svc)}",
        label_selector=_selector(name),
    )
    return Converged(lws, pods, {o["metadata"]["name"]: o for o in sts.values()}, key)


def _lws_revisions(objs: Objects, uid: str) -> Objects:
    return {
        k: r
        for k, r in objs.items()
        if not r["metadata"].get("deletionTimestamp")
        and any(
            ref.get("kind") == c.KIND and ref.get("uid") == uid
            for ref in r["metadata"].get("ownerReferences") or []
        )
    }


async def assert_gone(kube: Kube, ns: str, name: str, timeout: float = TIMEOUT) -> None:
    """Nothing labelled with the LWS name is left (pods, StatefulSets, Services, revisions)."""
    for api, plural in (
        (c.API_VERSION, c.PLURAL),
        ("apps/v1", "statefulsets"),
        ("v1", "pods"),
        ("v1", "services"),
        ("apps/v1", "controllerrevisions"),
    ):
        if plural == c.PLURAL:
            await wait_for_objects(
                kube,
                lws_path(ns),
                lambda objs: f"{ns}/{name}" not in objs,
                timeout=timeout,
                what=f"LWS {name} gone",
            )
            continue
        await wait_for_objects(
            kube,
            resource_path(api, plural, namespace=ns),
            lambda objs: not objs,
            timeout=timeout,
            what=f"no {plural} of {name} left",
            label_selector=_selector(name),
        )


async def recreate_events(kube: Kube, ns: str, uid: str) -> list[str]:
    listing = await kube.list(
        resource_path("events.k8s.io/v1", "events", namespace=ns),
        field_selector=f"regarding.uid={uid}",
    )
    return [e.get("note", "") for e in listing["items"] if e.get("reason") == "RecreateGroup"]


def tracebacks(log_text: str) -> list[str]:
    """The Python tracebacks in an operator log."""
    out: list[str] = []
    lines = log_text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Traceback (most recent call last)"):
            end = next(
                (j for j in range(i + 1, len(lines)) if re.match(r"\d{4}-\d\d-\d\d ", lines[j])),
                len(lines),
            )
            out.append("\n".join(lines[max(0, i - 1) : end]))
    return out
