"""What the disruption tests share: GPU LeaderWorkerSets on a node pool of their own, a watch
that checks availability at every pod event, and ``kubectl drain`` run as users run it."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lws_operator.api import constants as c
from lws_operator.kube.client import ApiError, Kube
from lws_operator.kube.paths import resource_path
from lws_operator.plan.lws.disruption import BUDGET_ANNOTATION, STATE_ANNOTATION
from lws_operator.plan.meta import is_deleting, pod_ready
from lws_testbed.binaries import bin_dir
from lws_testbed.wait import Objects, follow_objects
from tests.cluster.controller.helpers import lws_body, short_pods
from tests.cluster.scheduling.conftest import NodePool, gpu_pod_spec

SIZE = 2
GPUS = 2  # per pod: four pods on an 8-GPU node
DRAIN_TIMEOUT = 240


def gpu_lws(
    name: str,
    pool: NodePool,
    *,
    replicas: int,
    max_surge: int = 1,
    budget: str | None = None,
    gpus: int = GPUS,
) -> dict[str, Any]:
    annotations = {} if budget is None else {BUDGET_ANNOTATION: budget}
    return lws_body(
        name,
        replicas=replicas,
        size=SIZE,
        annotations=annotations,
        leader_spec=gpu_pod_spec("leader", gpus, pool),
        worker_spec=gpu_pod_spec("worker", gpus, pool),
        rolloutStrategy={
            "type": "RollingUpdate",
            "rollingUpdateConfiguration": {"maxUnavailable": 1, "maxSurge": max_surge},
        },
    )


def ready_groups(pods: Objects, name: str, size: int = SIZE) -> set[int]:
    """Indices of the groups whose every pod exists, is not deleting and is Ready (surge
    groups included, as the rollout tests count them)."""
    by_name = {p["metadata"]["name"]: p for p in pods.values()}
    indices = {
        int(i)
        for p in pods.values()
        if (i := (p["metadata"].get("labels") or {}).get(c.GROUP_INDEX_LABEL, "")).isdigit()
    }
    out = set()
    for i in indices:
        members = [f"{name}-{i}"] + [f"{name}-{i}-{j}" for j in range(1, size)]
        if all(
            (p := by_name.get(m)) is not None and not is_deleting(p) and pod_ready(p)
            for m in members
        ):
            out.add(i)
    return out


@dataclass
class Releases:
    """A group incarnation's first deletion seen, and what stood in for it then."""

    group: int
    surge_ready: bool
    available: int
    pods: tuple[str, ...] = ()
    """The incarnation's pods that went (name on node), for a failure's message."""


@dataclass
class Watcher:
    """Follows the pods of one LWS; at every watch event counts the available groups and,
    when a pod of a ready incarnation of a group starts deleting, whether a surge group
    (index >= replicas) was Ready at that moment."""

    kube: Kube
    ns: str
    name: str
    replicas: int
    events: int = 0
    min_available: int | None = None
    low: list[str] = field(default_factory=list)
    releases: list[Releases] = field(default_factory=list)
    floor: int = 0
    _incarnations: dict[int, dict[str, str]] = field(default_factory=dict)
    _released: set[str] = field(default_factory=set)
    """Pods of released incarnations: one still there (a worker not yet deleting beside a new
    leader) makes no new incarnation."""
    _task: asyncio.Task[None] | None = None
    _started: asyncio.Event = field(default_factory=asyncio.Event)

    def see(self, pods: Objects) -> None:
        self.events += 1
        ready = ready_groups(pods, self.name)
        available = len(ready)
        self.min_available = (
            available if self.min_available is None else min(self.min_available, available)
        )
        if available < self.floor:
            self.low.append(f"event {self.events}: {available} available\n{short_pods(pods)}")
        uids = {p["metadata"]["uid"]: p for p in pods.values()}
        for index, incarnation in list(self._incarnations.items()):
            gone = [u for u in incarnation if u not in uids or is_deleting(uids[u])]
            if gone:
                surge = any(i >= self.replicas for i in ready)
                went = tuple(incarnation[u] for u in gone)
                self.releases.append(Releases(index, surge, available, went))
                self._released |= set(incarnation)
                del self._incarnations[index]
        for index in ready - set(self._incarnations):
            if index < self.replicas:
                incarnation = {
                    p["metadata"]["uid"]: f"{p['metadata']['name']} on {p['spec'].get('nodeName')}"
                    for p in pods.values()
                    if (p["metadata"].get("labels") or {}).get(c.GROUP_INDEX_LABEL) == str(index)
                    and not is_deleting(p)
                }
                if not self._released & set(incarnation):
                    self._incarnations[index] = incarnation

    async def _run(self) -> None:
        async with contextlib.aclosing(
            follow_objects(
                self.kube,
                resource_path("v1", "pods", namespace=self.ns),
                label_selector=f"{c.SET_NAME_LABEL}={self.name}",
            )
        ) as updates:
            async for pods in updates:
                self.see(pods)
                self._started.set()

    @contextlib.asynccontextmanager
    async def watching(self, floor: int) -> AsyncIterator[Watcher]:
        self.floor = floor
        self._task = asyncio.create_task(self._run())
        await asyncio.wait(
            {self._task, asyncio.ensure_future(self._started.wait())},
            return_when=asyncio.FIRST_COMPLETED,
        )
        if self._task.done():
            self._task.result()
        try:
            yield self
        finally:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


async def kubectl(kubeconfig: Path, *args: str, timeout: float = DRAIN_TIMEOUT) -> tuple[int, str]:
    """Run kubectl (the cached binary of the pinned version); (exit code, stdout + stderr)."""
    proc = await asyncio.create_subprocess_exec(
        str(bin_dir() / "kubectl"),
        f"--kubeconfig={kubeconfig}",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, "KUBECONFIG": str(kubeconfig)},
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        proc.kill()
        out, _ = await proc.communicate()
        return -1, out.decode() + f"\n(killed after {timeout:.0f}s)"
    return int(proc.returncode or 0), out.decode()


async def drain(kubeconfig: Path, *nodes: str) -> str:
    """``kubectl drain`` as an operator runs it; its own retries on 429 are the only waiting."""
    code, out = await kubectl(
        kubeconfig,
        "drain",
        *nodes,
        "--ignore-daemonsets",
        "--delete-emptydir-data",
        "--force",
        f"--timeout={DRAIN_TIMEOUT - 10}s",
    )
    assert code == 0, f"kubectl drain {' '.join(nodes)} failed ({code}):\n{out}"
    return out


async def pods_by_node(kube: Kube, ns: str, name: str) -> dict[str, list[dict[str, Any]]]:
    listing = await kube.list(
        resource_path("v1", "pods", namespace=ns), label_selector=f"{c.SET_NAME_LABEL}={name}"
    )
    out: dict[str, list[dict[str, Any]]] = {}
    for pod in listing["items"]:
        out.setdefault(str((pod.get("spec") or {}).get("nodeName")), []).append(pod)
    return out


async def diagnostics(kube: Kube, ns: str, name: str) -> str:
    """Pods (with their scheduling condition), StatefulSets and the moves, for a failure."""
    selector = f"{c.SET_NAME_LABEL}={name}"
    pods = await kube.list(resource_path("v1", "pods", namespace=ns), label_selector=selector)
    rows = []
    for p in sorted(pods["items"], key=lambda p: p["metadata"]["name"]):
        conds = {
            x["type"]: (x["status"], x.get("reason")) for x in p["status"].get("conditions") or []
        }
        rows.append(
            f"- pod {p['metadata']['name']} uid={p['metadata']['uid'][:8]} "
            f"node={p['spec'].get('nodeName')} phase={p['status'].get('phase')} "
            f"deleting={bool(p['metadata'].get('deletionTimestamp'))} conditions={conds}"
        )
    sts = await kube.list(
        resource_path("apps/v1", "statefulsets", namespace=ns), label_selector=selector
    )
    for s in sorted(sts["items"], key=lambda s: s["metadata"]["name"]):
        owner = (s["metadata"].get("ownerReferences") or [{}])[0]
        rows.append(
            f"- sts {s['metadata']['name']} replicas={s['spec'].get('replicas')} "
            f"owner={owner.get('name')}/{str(owner.get('uid'))[:8]} status={s.get('status')} "
            f"moves={(s['metadata'].get('annotations') or {}).get(STATE_ANNOTATION)}"
        )
    return "\n".join(rows)


async def evict(kube: Kube, ns: str, name: str) -> ApiError | None:
    """POST the pod's eviction; the error the API server answered, or None when it went
    through."""
    path = resource_path("v1", "pods", namespace=ns, name=name, subresource="eviction")
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}}
    try:
        await kube.create(path, body)
    except ApiError as e:
        return e
    return None
