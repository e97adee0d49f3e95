"""Side-by-side benchmarks: this operator ("ours") against the upstream LWS manager
("upstream", kubernetes-sigs/lws v0.9.0: v0.10.0 is not served by the Go module proxy here).

    python -m bench.compare [--scenario P1 ...] [--runs 3] [--controller ours|upstream|both]
    python -m bench.compare --scenario P1 --profile      # py-spy profile of ours, one run
    python -m bench.compare --report-only                # rebuild the summary from results

Every run starts a fresh local cluster with the same settings (:func:`cluster_config`, audit
log on), installs one controller (ours: our CRD and ``lws-operator run`` as its own process
under the identity ``lws-operator``; upstream: upstream's CRDs and manager with its webhooks
on 127.0.0.1 under ``lws-upstream``), applies the same manifests and simulates the same
events. Repetitions alternate the order (ours first, then upstream first, ...) so drift on a
noisy machine shows up in the per-run figures. API requests are counted exactly from the
audit log: requests by the controller's user, received inside each measured window (from the
first action until the goal holds, plus SETTLE seconds), counted once per audit ID.

Scenarios: P1 create 32x8; P2 recovery after a worker container restart and after a worker
pod deletion (8 groups of 8); P3 rolling update 16x4 (maxUnavailable 2, maxSurge 2); P4 100
LWS x 4 groups x 4 pods (time, peak RSS, CPU, 60 s idle CPU); D1 a DisaggregatedSet rollout
of 2 roles (4 and 2 groups of 2 pods, maxSurge 1) x 2 slices (upstream v0.9.0 has no slices:
two sets of the same roles); D2 the same with 1 slice. P5 (API economy) is reported for
every window. Scale (``--set scale``, make bench-scale): P6a 500 LWS x 4 x 4 and P6b 10 LWS x
100 x 8 (8,000 pods each: time, CPU, peak RSS, then everything deleted and the RSS left); P7 a
readiness storm (2,000 pods at rest, 10 % flipping Ready every second for 60 s: CPU, LWS
status writes, the lag from the last flip to a correct status); S400-S8000 the same storm for
20 s at 400 to 8,000 pods (CPU per pod event and RSS by size: scale.png). Runs of more than
1,600 pods get one kwok node per 200 pods. Each scenario writes
bench/results/compare-<S>.json (a one-controller run replaces that controller's runs and keeps
the other's); the summary (compare.md, compare.json, compare.png, scale.png) is rebuilt from
all of them.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import math
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.common import REPO, RESULTS, lws_manifest, machine, no_backoff
from lws_operator.api import constants as c
from lws_operator.api import ds_constants as dc
from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_operator.plan.ds.revision import compute_revision
from lws_operator.plan.meta import labels_of, pod_ready
from lws_testbed import kube_versions
from lws_testbed.local import ClusterConfig, LocalCluster
from lws_testbed.lws_api import install_lws_api
from lws_testbed.nodes import NodeShape
from lws_testbed.operator_process import start_operator
from lws_testbed.simulate import restart_container, unready_status
from lws_testbed.upstream import start_upstream, upstream_dir
from lws_testbed.wait import Objects, wait_for_objects

# Fleets of identical LWS, as (sets, groups, size): P4, P6 (8,000 pods, many small and few
# big), P7 (the readiness storm's 2,000 pods) and the curve (10 LWS of 5 to 100 groups of 8).
FLEETS = {
    "P4": (100, 4, 4),
    "P6a": (500, 4, 4),
    "P6b": (10, 100, 8),
    "P7": (10, 50, 4),
    "S400": (10, 5, 8),
    "S1600": (10, 20, 8),
    "S4000": (10, 50, 8),
    "S8000": (10, 100, 8),
}
CURVE = ("S400", "S1600", "S4000", "S8000")
SCALE_PODS = {s: sets * groups * size for s, (sets, groups, size) in FLEETS.items()}
STORM_S = {"P7": 60, **dict.fromkeys(CURVE, 20)}  # seconds of flips
STORM_FRACTION = 0.1  # of the pods, flipped every second
SETS = {
    "default": ("P1", "P2", "P3", "P4", "D1", "D2"),  # make bench
    "scale": ("P6a", "P6b", "P7", *CURVE),  # make bench-scale: hours with 3 runs
}
SCENARIOS = (*SETS["default"], *SETS["scale"])
CONTROLLERS = ("ours", "upstream")
USERS = {"ours": "lws-operator", "upstream": "lws-upstream"}
NS = "default"
SETTLE = 3.0  # seconds added to every API-counting window, after the goal holds
WARMUP = 5.0  # seconds between the controller reporting ready and the scenario's first action
IDLE = 60.0  # P4: idle period after all Available
TIMEOUT = 900.0
LWS_PATH = resource_path(c.API_VERSION, c.PLURAL, namespace=NS)
PODS_PATH = resource_path("v1", "pods", namespace=NS)
CLK_TCK = os.sysconf("SC_CLK_TCK")


def nodes_for(scenario: str) -> int:
    """kwok nodes of a run: the default 8 (250 pods each), or one per 200 pods of a larger
    scenario, so that no run is short of room."""
    return max(NodeShape().count, math.ceil(SCALE_PODS.get(scenario, 0) / 200))


def cluster_config(state: Path, nodes: int = NodeShape().count) -> ClusterConfig:
    """The one cluster configuration every run uses (defaults of ClusterConfig, audit on),
    with ``nodes`` kwok nodes."""
    return ClusterConfig(state_dir=state, audit_log=True, nodes=NodeShape(count=nodes))


def settings() -> dict[str, Any]:
    cfg = cluster_config(Path("/unused"))
    return {
        "nodes": asdict(cfg.nodes),
        "kube_controller_manager": {
            "kube_api_qps": cfg.kcm_qps,
            "kube_api_burst": cfg.kcm_burst,
            "controllers": list(kube_versions.selected().kcm_controllers),
        },
        "kube_scheduler": {"qps": cfg.scheduler_qps, "burst": cfg.scheduler_burst},
        "etcd": "tmpfs, --unsafe-no-fsync, auto-compaction 1h",
        "kube_apiserver": "audit log: Metadata level, omitStages RequestReceived, batch mode",
        "kwok": "testbed/lws_testbed/kwok-stages.yaml (pods Ready at once)",
        "ours": "lws-operator run (own process, default --workers 8, no client QPS limit), "
        "identity lws-operator (cluster-admin, not system:masters)",
        "upstream": "lws-manager v0.9.0, clientConnection qps 500 burst 500 (upstream defaults), "
        "leader election off, webhooks on 127.0.0.1, identity lws-upstream (cluster-admin)",
        "pod_image": "registry.k8s.io/pause:3.10 (never pulled: kwok)",
        "warmup_s": WARMUP,
        "settle_s": SETTLE,
        "idle_s": IDLE,
    }


# ---- the controller under test ------------------------------------------------------------------
@dataclass
class Proc:
    pid: int
    profile: Path | None = None
    """Where a py-spy profile of the body's measured part goes (``--profile``), or None."""

    @asynccontextmanager
    async def profiled(self) -> AsyncIterator[None]:
        """py-spy records the controller while the block runs, when asked to."""
        spy = start_profiler(self.pid, self.profile) if self.profile else None
        try:
            yield
        finally:
            if spy is not None:
                stop_profiler(spy)

    def stat(self) -> dict[str, float]:
        """CPU seconds (utime + stime, all threads) and peak/current RSS in MiB."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / CLK_TCK
        status = {}
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            status[key] = value.strip()
        return {
            "cpu_s": cpu,
            "hwm_mib": int(status["VmHWM"].split()[0]) / 1024,
            "rss_mib": int(status["VmRSS"].split()[0]) / 1024,
        }


@asynccontextmanager
async def controller(
    which: str, cluster: LocalCluster, kube: Kube, work: Path, bins: Path | None
) -> AsyncIterator[Proc]:
    if which == "ours":
        await install_lws_api(kube)
        op = await start_operator(
            kube, cluster.kubeconfig("lws-operator"), work / "op.log", *no_backoff(work)
        )
        try:
            yield Proc(op.pid)
            op.check_alive()
        finally:
            await op.stop()
    else:
        mgr = await start_upstream(kube, cluster.kubeconfig("lws-upstream"), work, bins=bins)
        try:
            yield Proc(mgr.pid)
            mgr.check_alive()
        finally:
            await mgr.stop()


# ---- measuring ----------------------------------------------------------------------------------
@dataclass
class Run:
    scenario: str
    controller: str
    rep: int
    loadavg: str
    metrics: dict[str, float] = field(default_factory=dict)
    windows: dict[str, tuple[float, float]] = field(default_factory=dict)
    api: dict[str, dict[str, int]] = field(default_factory=dict)
    api_by_resource: dict[str, dict[str, int]] = field(default_factory=dict)


class Clock:
    """Monotonic timings plus wall-clock windows (for the audit log)."""

    def __init__(self, run: Run) -> None:
        self.run = run

    def start(self) -> tuple[float, float]:
        return time.monotonic(), time.time()

    async def window(self, name: str, t: tuple[float, float], *, settle: bool = True) -> None:
        if settle:
            await asyncio.sleep(SETTLE)
        self.run.windows[name] = (t[1], time.time())


def since(t: tuple[float, float]) -> float:
    return round(time.monotonic() - t[0], 3)


def available(lws: dict[str, Any], groups: int) -> bool:
    status = lws.get("status") or {}
    return (
        status.get("observedGeneration") == lws.get("metadata", {}).get("generation")
        and status.get("readyReplicas") == groups
        and any(
            x.get("type") == "Available" and x.get("status") == "True"
            for x in status.get("conditions") or []
        )
    )


async def wait_available(kube: Kube, name: str, groups: int) -> None:
    await wait_for_objects(
        kube,
        LWS_PATH,
        lambda objs: available(objs.get(f"{NS}/{name}") or {}, groups),
        timeout=TIMEOUT,
        what=f"{name} Available",
        field_selector=f"metadata.name={name}",
    )


def live(objs: Objects) -> list[dict[str, Any]]:
    return [p for p in objs.values() if not p["metadata"].get("deletionTimestamp")]


async def p1(kube: Kube, proc: Proc, run: Run) -> None:
    groups, size, name = 32, 8, "bench"
    clock = Clock(run)
    t = clock.start()
    await kube.create(LWS_PATH, lws_manifest(name, groups, size))
    created = asyncio.ensure_future(
        wait_for_objects(
            kube,
            PODS_PATH,
            lambda objs: len(objs) >= groups * size,
            timeout=TIMEOUT,
            what=f"{groups * size} pods",
            label_selector=f"{c.SET_NAME_LABEL}={name}",
            summary=lambda objs: f"{len(objs)} pods",
        )
    )
    created.add_done_callback(lambda _: run.metrics.setdefault("pods_created_s", since(t)))
    await wait_available(kube, name, groups)
    run.metrics["ready_s"] = since(t)
    await created
    await clock.window("P1", t)


async def p2(kube: Kube, proc: Proc, run: Run) -> None:
    groups, size, name, group = 8, 8, "bench", 3
    await kube.create(LWS_PATH, lws_manifest(name, groups, size))
    await wait_available(kube, name, groups)
    await asyncio.sleep(SETTLE)
    selector = f"{c.SET_NAME_LABEL}={name},{c.GROUP_INDEX_LABEL}={group}"
    victim = f"{name}-{group}-{size - 1}"
    for breaker in ("restart", "delete"):
        old = {
            p["metadata"]["uid"]
            for p in (await kube.list(PODS_PATH, label_selector=selector))["items"]
        }
        clock = Clock(run)
        t = clock.start()
        if breaker == "restart":
            await restart_container(kube, NS, victim)
        else:
            await kube.delete(resource_path("v1", "pods", namespace=NS, name=victim))

        def recovered(objs: Objects, old: set[str] = old) -> bool:
            pods = live(objs)
            return (
                len(pods) == size
                and not {p["metadata"]["uid"] for p in pods} & old
                and all(pod_ready(p) for p in pods)
            )

        await wait_for_objects(
            kube,
            PODS_PATH,
            recovered,
            timeout=120,
            what=f"group {group} Ready again with all-new pods ({breaker})",
            label_selector=selector,
        )
        run.metrics[f"{breaker}_group_ready_s"] = since(t)
        await wait_available(kube, name, groups)
        run.metrics[f"{breaker}_lws_available_s"] = since(t)
        await clock.window(f"P2-{breaker}", t)


def p3_manifest(name: str, groups: int, size: int) -> dict[str, Any]:
    body = lws_manifest(name, groups, size)
    body["spec"]["rolloutStrategy"] = {
        "type": "RollingUpdate",
        "rollingUpdateConfiguration": {"maxUnavailable": 2, "maxSurge": 2},
    }
    return body


async def p3(kube: Kube, proc: Proc, run: Run) -> None:
    groups, size, name = 16, 4, "bench"
    await kube.create(LWS_PATH, p3_manifest(name, groups, size))
    await wait_available(kube, name, groups)
    await asyncio.sleep(SETTLE)
    env = [{"name": "BENCH_REVISION", "value": "2"}]
    container = {"name": "main", "image": "registry.k8s.io/pause:3.10", "env": env}
    patch = {
        "spec": {"leaderWorkerTemplate": {"workerTemplate": {"spec": {"containers": [container]}}}}
    }
    clock = Clock(run)
    t = clock.start()
    await kube.patch(resource_path(c.API_VERSION, c.PLURAL, namespace=NS, name=name), patch)

    def updated(objs: Objects) -> bool:
        lws = objs.get(f"{NS}/{name}") or {}
        return available(lws, groups) and (lws.get("status") or {}).get("updatedReplicas") == groups

    await wait_for_objects(
        kube,
        LWS_PATH,
        updated,
        timeout=TIMEOUT,
        what="rollout done",
        field_selector=f"metadata.name={name}",
    )

    def pods_updated(objs: Objects) -> bool:
        pods = live(objs)
        return (
            len(pods) == groups * size
            and all(p["spec"]["containers"][0].get("env", [])[-1:] == env for p in pods)
            and all(pod_ready(p) for p in pods)
        )

    await wait_for_objects(
        kube,
        PODS_PATH,
        pods_updated,
        timeout=TIMEOUT,
        what="every pod on the new template",
        label_selector=f"{c.SET_NAME_LABEL}={name}",
    )
    run.metrics["rollout_s"] = since(t)
    await clock.window("P3", t)


def fleet_names(sets: int) -> list[str]:
    return [f"bench-{i:03d}" for i in range(sets)]


async def create_fleet(kube: Kube, names: list[str], groups: int, size: int) -> None:
    """Create the LWS (10 requests at a time) and wait until every one is Available."""
    sem = asyncio.Semaphore(10)

    async def create(name: str) -> None:
        async with sem:
            await kube.create(LWS_PATH, lws_manifest(name, groups, size))

    await asyncio.gather(*(create(n) for n in names))
    await wait_fleet_available(kube, names, groups)


async def wait_fleet_available(kube: Kube, names: list[str], groups: int) -> None:
    """Until every LWS of the fleet shows readyReplicas == groups and Available."""
    await wait_for_objects(
        kube,
        LWS_PATH,
        lambda objs: all(available(objs.get(f"{NS}/{n}") or {}, groups) for n in names),
        timeout=TIMEOUT,
        what=f"{len(names)} LWS Available with every group ready",
        summary=lambda objs: f"{sum(available(o, groups) for o in objs.values())} Available",
    )


async def delete_fleet(kube: Kube, names: list[str]) -> None:
    """Delete the LWS and wait until the garbage collector has removed every pod of theirs."""
    sem = asyncio.Semaphore(10)

    async def delete(name: str) -> None:
        async with sem:
            await kube.delete(f"{LWS_PATH}/{name}")

    await asyncio.gather(*(delete(n) for n in names))
    await wait_for_objects(
        kube,
        PODS_PATH,
        lambda objs: not objs,
        timeout=TIMEOUT,
        what="every LWS pod gone",
        label_selector=c.SET_NAME_LABEL,
        summary=lambda objs: f"{len(objs)} pods left",
    )


async def p4(kube: Kube, proc: Proc, run: Run) -> None:
    sets, groups, size = FLEETS["P4"]
    names = fleet_names(sets)
    before = proc.stat()
    clock = Clock(run)
    t = clock.start()
    await create_fleet(kube, names, groups, size)
    run.metrics["available_s"] = since(t)
    busy = proc.stat()
    run.metrics["cpu_s"] = round(busy["cpu_s"] - before["cpu_s"], 2)
    await clock.window("P4", t)
    idle_t = clock.start()
    idle_before = proc.stat()
    await asyncio.sleep(IDLE)
    after = proc.stat()
    run.metrics["idle_cpu_s"] = round(after["cpu_s"] - idle_before["cpu_s"], 2)
    run.metrics["peak_rss_mib"] = round(after["hwm_mib"], 1)
    run.metrics["rss_mib"] = round(after["rss_mib"], 1)
    await clock.window("P4-idle", idle_t, settle=False)


async def p6(kube: Kube, proc: Proc, run: Run) -> None:
    """8,000 pods: time, CPU and peak RSS until every LWS is Available, then everything
    deleted and the RSS left (against the RSS before the load)."""
    sets, groups, size = FLEETS[run.scenario]
    names = fleet_names(sets)
    clock = Clock(run)
    before = proc.stat()
    run.metrics["rss_before_mib"] = round(before["rss_mib"], 1)
    t = clock.start()
    await create_fleet(kube, names, groups, size)
    run.metrics["available_s"] = since(t)
    loaded = proc.stat()
    run.metrics["cpu_s"] = round(loaded["cpu_s"] - before["cpu_s"], 2)
    await clock.window(run.scenario, t)
    gone = clock.start()
    await delete_fleet(kube, names)
    run.metrics["deleted_s"] = since(gone)
    await clock.window(f"{run.scenario}-delete", gone)
    after = proc.stat()
    run.metrics["peak_rss_mib"] = round(after["hwm_mib"], 1)
    run.metrics["rss_after_delete_mib"] = round(after["rss_mib"], 1)


def _ready_again(pod: dict[str, Any]) -> dict[str, Any]:
    """The status patch that reports a listed Ready pod Ready again (its own conditions and
    container statuses, which kwok wrote): undoes ``unready_status``."""
    status = pod.get("status") or {}
    conditions = [
        x for x in status.get("conditions") or [] if x.get("type") in ("Ready", "ContainersReady")
    ]
    return {"conditions": conditions, "containerStatuses": status.get("containerStatuses")}


async def storm(kube: Kube, proc: Proc, run: Run) -> None:
    """At rest, a tenth of the pods flip Ready every second (through the status subresource,
    as a kubelet reports a readiness probe), then every pod is Ready again: the controller's
    CPU per pod event, its status writes (from the audit log) and the lag from the last flip
    until every LWS shows readyReplicas == groups and Available again."""
    sets, groups, size = FLEETS[run.scenario]
    names = fleet_names(sets)
    await create_fleet(kube, names, groups, size)
    await asyncio.sleep(SETTLE)
    listed = (await kube.list(PODS_PATH, label_selector=c.SET_NAME_LABEL))["items"]
    pods = sorted(p["metadata"]["name"] for p in listed)
    up = {p["metadata"]["name"]: _ready_again(p) for p in listed}
    down_body = {p["metadata"]["name"]: unready_status(p) for p in listed}
    down: set[str] = set()
    sem = asyncio.Semaphore(32)

    async def flip(name: str) -> None:
        body = up[name] if name in down else down_body[name]
        down.symmetric_difference_update({name})
        path = resource_path("v1", "pods", namespace=NS, name=name, subresource="status")
        async with sem:
            await kube.patch(path, {"status": body}, kind="strategic")

    rng = random.Random(20261202)
    per_tick = max(1, round(len(pods) * STORM_FRACTION))
    clock = Clock(run)
    before = proc.stat()
    t = clock.start()
    flips = 0
    async with proc.profiled():
        for tick in range(STORM_S[run.scenario]):
            # The storm's pace (a load generator's clock, not a wait for state).
            await asyncio.sleep(max(0.0, t[0] + tick - time.monotonic()))
            batch = rng.sample(pods, per_tick)
            await asyncio.gather(*(flip(n) for n in batch))
            flips += len(batch)
        rest = sorted(down)  # the last flip: every pod still unready is Ready again
        await asyncio.gather(*(flip(n) for n in rest))
        flips += len(rest)
        last = time.monotonic()
        run.metrics["storm_s"] = round(last - t[0], 3)  # longer than asked: flips fell behind
        await wait_fleet_available(kube, names, groups)
        run.metrics["lag_s"] = round(time.monotonic() - last, 3)
    after = proc.stat()
    run.metrics["flips"] = flips
    run.metrics["cpu_s"] = round(after["cpu_s"] - before["cpu_s"], 2)
    run.metrics["cpu_per_event_ms"] = round(1000 * run.metrics["cpu_s"] / flips, 3)
    run.metrics["peak_rss_mib"] = round(after["hwm_mib"], 1)
    run.metrics["rss_mib"] = round(after["rss_mib"], 1)
    await clock.window(run.scenario, t)


def status_writes(api_by_resource: dict[str, int]) -> int:
    """LWS status writes in one window: ours patches the status, upstream updates it."""
    return sum(
        n
        for key, n in api_by_resource.items()
        if key in ("patch leaderworkersets/status", "update leaderworkersets/status")
    )


# ---- DisaggregatedSet rollouts -------------------------------------------------------------------
DS_WANT = {"prefill": 4, "decode": 2}  # groups per slice, 2 pods each
DS_PATH = resource_path(dc.API_VERSION, dc.PLURAL, namespace=NS)


def ds_manifest(name: str, slices: int) -> dict[str, Any]:
    """2 roles of groups of 2 pods, maxSurge 1 and maxUnavailable 0 each; ``slices`` copies
    (upstream v0.9.0 has no slices: 1 only)."""
    pod = {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]}
    roles = [
        {
            "name": role,
            "spec": {
                "replicas": n,
                "rolloutStrategy": {
                    "rollingUpdateConfiguration": {"maxSurge": 1, "maxUnavailable": 0}
                },
                "leaderWorkerTemplate": {"size": 2, "workerTemplate": {"spec": pod}},
            },
        }
        for role, n in DS_WANT.items()
    ]
    spec: dict[str, Any] = {"roles": roles}
    if slices > 1:
        spec["slices"] = slices
    return {
        "apiVersion": dc.API_VERSION,
        "kind": dc.KIND,
        "metadata": {"name": name, "namespace": NS},
        "spec": spec,
    }


def ds_only(objs: Objects, names: dict[str, str], slices: dict[str, int]) -> bool:
    """Every set's children are its revision's only (per role and slice), all ready."""
    for name, revision in names.items():
        mine = [o for o in objs.values() if labels_of(o).get(dc.SET_NAME_LABEL) == name]
        if len(mine) != len(DS_WANT) * slices[name]:
            return False
        for o in mine:
            labels, status = labels_of(o), o.get("status") or {}
            want = DS_WANT[labels[dc.ROLE_LABEL]]
            if labels[dc.REVISION_LABEL] != revision or o["spec"].get("replicas") != want:
                return False
            if status.get("readyReplicas") != want:
                return False
    return True


async def ds_rollout(kube: Kube, run: Run, slices: dict[str, int]) -> None:
    """Create the sets, wait until they run, then change every role's template at once and
    time the rollout until only the new revision's children are left, all ready."""
    children = resource_path(c.API_VERSION, c.PLURAL, namespace=NS)
    first = {}
    for name, n in slices.items():
        stored = await kube.create(DS_PATH, ds_manifest(name, n))
        first[name] = compute_revision(stored["spec"]["roles"])
    selector = dc.SET_NAME_LABEL
    await wait_for_objects(
        kube,
        children,
        lambda objs: ds_only(objs, first, slices),
        timeout=TIMEOUT,
        what="every set up",
        label_selector=selector,
    )
    await asyncio.sleep(SETTLE)
    clock = Clock(run)
    t = clock.start()
    second = {}
    for name in slices:
        ds = await kube.get(resource_path(dc.API_VERSION, dc.PLURAL, namespace=NS, name=name))
        for r in ds["spec"]["roles"]:
            r["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["env"] = [
                {"name": "BENCH_REVISION", "value": "2"}
            ]
        patched = await kube.patch(
            resource_path(dc.API_VERSION, dc.PLURAL, namespace=NS, name=name),
            {"spec": {"roles": ds["spec"]["roles"]}},
        )
        second[name] = compute_revision(patched["spec"]["roles"])
    await wait_for_objects(
        kube,
        children,
        lambda objs: ds_only(objs, second, slices),
        timeout=TIMEOUT,
        what="every set rolled out",
        label_selector=selector,
    )
    run.metrics["rollout_s"] = since(t)
    await clock.window(run.scenario, t)


async def d1(kube: Kube, proc: Proc, run: Run) -> None:
    """2 roles x 2 slices: ours one set with slices 2; upstream v0.9.0, which has no slices,
    the same topology as two sets."""
    layout = {"pd": 2} if run.controller == "ours" else {"pd-a": 1, "pd-b": 1}
    await ds_rollout(kube, run, layout)


async def d2(kube: Kube, proc: Proc, run: Run) -> None:
    """2 roles x 1 slice, the same manifest for both."""
    await ds_rollout(kube, run, {"pd": 1})


BODIES: dict[str, Callable[[Kube, Proc, Run], Awaitable[None]]] = {
    "P1": p1,
    "P2": p2,
    "P3": p3,
    "P4": p4,
    "P6a": p6,
    "P6b": p6,
    "P7": storm,
    **dict.fromkeys(CURVE, storm),
    "D1": d1,
    "D2": d2,
}


# ---- one run: a fresh cluster, one controller, one scenario --------------------------------------
def one_run(
    scenario: str,
    which: str,
    rep: int,
    tmp: Path,
    bins: Path | None,
    profile: Path | None = None,
) -> Run:
    run = Run(scenario, which, rep, Path("/proc/loadavg").read_text().strip())
    work = tmp / f"{scenario}-{which}-{rep}"
    work.mkdir(parents=True)
    with LocalCluster(cluster_config(work / "cluster", nodes_for(scenario))) as cluster:
        asyncio.run(drive(cluster, which, run, work, bins, profile))
    run.api, run.api_by_resource = count_requests(cluster.audit_log_path, USERS[which], run.windows)
    if BODIES[scenario] is storm:
        run.metrics["status_writes"] = status_writes(run.api_by_resource[scenario])
    return run


async def drive(
    cluster: LocalCluster,
    which: str,
    run: Run,
    work: Path,
    bins: Path | None,
    profile: Path | None,
) -> None:
    async with (
        await Kube.connect(cluster.kubeconfig()) as kube,
        controller(which, cluster, kube, work, bins) as proc,
    ):
        # Both controllers start their watches after they report ready (webhook answering):
        # let each finish its start-up before the first measured action.
        await asyncio.sleep(WARMUP)
        start = proc.stat()
        body = BODIES[run.scenario]
        if body is storm:  # profiled over the storm only, not the fleet's creation
            proc.profile = profile
            await body(kube, proc, run)
        else:
            async with Proc(proc.pid, profile).profiled():
                await body(kube, proc, run)
        end = proc.stat()
        run.metrics.setdefault("cpu_s", round(end["cpu_s"] - start["cpu_s"], 2))
        run.metrics.setdefault("peak_rss_mib", round(end["hwm_mib"], 1))


def count_requests(
    audit: Path, user: str, windows: dict[str, tuple[float, float]]
) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]]:
    """Requests by ``user`` received inside each window, by verb and by verb + resource (each
    request once: an audit ID may have a ResponseStarted and a ResponseComplete event). The
    API server rotates its log at 100 MB (``audit-<time>.log``): those are read too."""
    seen: dict[str, tuple[str, str, str]] = {}
    for path in sorted(audit.parent.glob(f"{audit.stem}*{audit.suffix}")):
        with path.open() as f:
            for line in f:
                if f'"username":"{user}"' not in line:
                    continue
                ev = json.loads(line)
                if ev.get("user", {}).get("username") != user:
                    continue
                if ev.get("stage") == "RequestReceived":
                    continue
                received = datetime.datetime.fromisoformat(ev["requestReceivedTimestamp"])
                ts = received.timestamp()
                ref = ev.get("objectRef") or {}
                resource = ref.get("resource", ev.get("requestURI", "?"))
                if ref.get("subresource"):
                    resource += "/" + ref["subresource"]
                for name, (lo, hi) in windows.items():
                    if lo <= ts <= hi:
                        seen[ev["auditID"]] = (name, ev["verb"], resource)
    by_verb: dict[str, Counter[str]] = defaultdict(Counter)
    by_res: dict[str, Counter[str]] = defaultdict(Counter)
    for name, verb, resource in seen.values():
        by_verb[name][verb] += 1
        by_verb[name]["total"] += 1
        by_res[name][f"{verb} {resource}"] += 1
    return (
        {w: dict(by_verb[w]) for w in windows},
        {w: dict(sorted(by_res[w].items())) for w in windows},
    )


# ---- profiling (ours) ---------------------------------------------------------------------------
def start_profiler(pid: int, out: Path) -> subprocess.Popen[bytes]:
    spy = Path(sys.executable).parent / "py-spy"
    return subprocess.Popen(
        [str(spy), "record", "--pid", str(pid), "--format", "raw", "--rate", "100", "-o", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def stop_profiler(spy: subprocess.Popen[bytes]) -> None:
    spy.send_signal(signal.SIGINT)
    try:
        _, err = spy.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        spy.kill()
        _, err = spy.communicate()
    if spy.returncode not in (0, -signal.SIGINT):
        print(f"py-spy exited {spy.returncode}: {err.decode(errors='replace')[-500:]}")


def function_of(frame: str) -> str:
    """``name (file:line)`` -> ``name (file)``: samples per function, not per line."""
    name, _, where = frame.partition(" (")
    return f"{name} ({where.rstrip(')').rsplit(':', 1)[0]})" if where else name


# Leaf frames where a thread waits (py-spy counts some of them as active on a loaded machine).
WAITING = {"_worker (concurrent/futures/thread.py)", "EpollSelector.select (selectors.py)"}


def top_functions(raw: Path, n: int = 25) -> str:
    """Self and inclusive shares per function from py-spy's collapsed stacks, waiting leaves
    (idle thread-pool workers, the event loop in epoll) left out; then this operator's own
    functions."""
    own: Counter[str] = Counter()
    incl: Counter[str] = Counter()
    total = waiting = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        k = int(count)
        frames = [function_of(f) for f in stack.split(";")]
        if frames[-1] in WAITING:
            waiting += k
            continue
        total += k
        own[frames[-1]] += k
        for f in set(frames):
            incl[f] += k
    total = max(total, 1)
    ours = Counter({f: v for f, v in incl.items() if "(lws_operator/" in f})
    lines = [
        f"busy samples: {total} at 100 Hz ({waiting} waiting samples left out)",
        "",
        "self (share of busy samples):",
        *[f"  {v / total:6.1%}  {f}" for f, v in own.most_common(n)],
        "",
        "inclusive:",
        *[f"  {v / total:6.1%}  {f}" for f, v in incl.most_common(n)],
        "",
        "inclusive, lws_operator's own functions:",
        *[f"  {v / total:6.1%}  {f}" for f, v in ours.most_common(n)],
    ]
    return "\n".join(lines) + "\n"


# ---- reports ------------------------------------------------------------------------------------
HEADLINES: dict[str, list[tuple[str, str, str]]] = {
    # scenario -> (metric, label, target)
    "P1": [
        ("pods_created_s", "P1 create 32x8: all pods created (s)", ""),
        ("ready_s", "P1 create 32x8: readyReplicas == 32 (s)", "<= 0.8x"),
        ("cpu_s", "P1 controller CPU (s)", ""),
    ],
    "P2": [
        ("restart_group_ready_s", "P2 restart: group Ready, all-new pods (s)", "<= 0.5x"),
        ("restart_lws_available_s", "P2 restart: LWS Available (s)", ""),
        ("delete_group_ready_s", "P2 delete: group Ready, all-new pods (s)", ""),
        ("delete_lws_available_s", "P2 delete: LWS Available (s)", ""),
    ],
    "P3": [
        ("rollout_s", "P3 rollout 16x4 (s)", "<= 0.8x"),
        ("cpu_s", "P3 controller CPU, whole run (s)", ""),
    ],
    "P4": [
        ("available_s", "P4 100 LWS x 4x4: all Available (s)", ""),
        ("peak_rss_mib", "P4 peak RSS, VmHWM (MiB)", "<= 1.5x"),
        ("cpu_s", "P4 CPU until Available (s)", ""),
        ("idle_cpu_s", f"P4 CPU over {IDLE:.0f} s idle (s; 0.01 s resolution)", ""),
    ],
    **{
        s: [
            ("available_s", f"{s} {shape}: all Available (s)", "<= 0.8x"),
            ("cpu_s", f"{s} CPU until Available (s)", "<= 1.0x"),
            ("peak_rss_mib", f"{s} peak RSS, VmHWM (MiB)", "<= 1.3x"),
            ("rss_before_mib", f"{s} RSS before the load (MiB)", ""),
            ("rss_after_delete_mib", f"{s} RSS after deleting everything (MiB)", "within 10 %"),
            ("deleted_s", f"{s} deletion until every pod is gone (s)", ""),
        ]
        for s, shape in (("P6a", "500 LWS x 4x4"), ("P6b", "10 LWS x 100x8"))
    },
    "P7": [
        ("cpu_s", "P7 storm, 2,000 pods, 10 %/s for 60 s: CPU (s)", "<= 1.0x"),
        ("status_writes", "P7 LWS status writes", "<= 0.5x"),
        ("lag_s", "P7 lag, last flip to readyReplicas and Available (s)", "<= 1.5 s"),
        ("cpu_per_event_ms", "P7 CPU per pod event (ms)", ""),
        ("storm_s", "P7 storm duration, asked 60 s (s)", ""),
    ],
    **{
        s: [
            ("cpu_per_event_ms", f"{s} CPU per pod event (ms)", "flat +-20 %"),
            ("peak_rss_mib", f"{s} peak RSS, VmHWM (MiB)", ""),
        ]
        for s in CURVE
    },
    "D1": [
        ("rollout_s", "D1 DisaggregatedSet rollout, 2 roles x 2 slices (s)", ""),
        ("cpu_s", "D1 controller CPU, whole run (s)", ""),
    ],
    "D2": [
        ("rollout_s", "D2 DisaggregatedSet rollout, 2 roles x 1 slice (s)", ""),
        ("cpu_s", "D2 controller CPU, whole run (s)", ""),
    ],
}
WINDOWS = {
    "P1": ["P1"],
    "P2": ["P2-restart", "P2-delete"],
    "P3": ["P3"],
    "P4": ["P4", "P4-idle"],
    "P6a": ["P6a", "P6a-delete"],
    "P6b": ["P6b", "P6b-delete"],
    "P7": ["P7"],
    **{s: [s] for s in CURVE},
    "D1": ["D1"],
    "D2": ["D2"],
}


def median(values: list[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a is not None and b else None


def fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:g}"


def save_scenario(scenario: str, runs: list[Run], kept: list[dict[str, Any]]) -> None:
    """Write compare-<scenario>.json: ``runs`` plus ``kept`` (earlier runs of the controllers
    this invocation does not measure, so that a one-controller run keeps the other's data)."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    body = {
        "scenario": scenario,
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "runs": kept + [asdict(r) for r in runs],
    }
    (RESULTS / f"compare-{scenario}.json").write_text(json.dumps(body, indent=2) + "\n")


def earlier_runs(scenario: str, besides: list[str]) -> list[dict[str, Any]]:
    """Runs in compare-<scenario>.json of controllers not in ``besides``."""
    path = RESULTS / f"compare-{scenario}.json"
    if not path.exists():
        return []
    runs: list[dict[str, Any]] = json.loads(path.read_text())["runs"]
    return [r for r in runs if r["controller"] not in besides]


def summarise() -> str:
    """Rebuild compare.{md,json,png} from every compare-<S>.json present."""
    loaded = {}
    for s in SCENARIOS:
        path = RESULTS / f"compare-{s}.json"
        if path.exists():
            loaded[s] = json.loads(path.read_text())
    m = machine()
    rows: list[dict[str, Any]] = []
    api_rows: list[dict[str, Any]] = []
    for s, data in loaded.items():
        runs = data["runs"]
        for metric, label, target in HEADLINES[s]:
            vals = {
                w: [
                    r["metrics"][metric]
                    for r in runs
                    if r["controller"] == w and metric in r["metrics"]
                ]
                for w in CONTROLLERS
            }
            med = {w: median(v) for w, v in vals.items()}
            rows.append(
                {
                    "scenario": s,
                    "metric": metric,
                    "label": label,
                    "target": target,
                    "ours": med["ours"],
                    "upstream": med["upstream"],
                    "ratio": ratio(med["ours"], med["upstream"]),
                    "runs": vals,
                    "date": data["date"],
                }
            )
        for window in WINDOWS[s]:
            verbs = sorted({v for r in runs for v in r["api"].get(window, {})} - {"total"})
            for verb in [*verbs, "total"]:
                vals = {
                    w: [r["api"].get(window, {}).get(verb, 0) for r in runs if r["controller"] == w]
                    for w in CONTROLLERS
                }
                med = {w: median([float(x) for x in v]) for w, v in vals.items()}
                api_rows.append(
                    {
                        "window": window,
                        "verb": verb,
                        "ours": med["ours"],
                        "upstream": med["upstream"],
                        "ratio": ratio(med["ours"], med["upstream"]),
                        "runs": vals,
                    }
                )
    date = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    summary: dict[str, Any] = {
        "date": date,
        "machine": m,
        "upstream": "kubernetes-sigs/lws v0.9.0 "
        "(v0.10.0 is not served by the Go module proxy here)",
        "ours": subprocess.run(
            ["git", "-C", str(REPO), "describe", "--always", "--dirty"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip(),
        "settings": settings(),
        "headline": rows,
        "api": api_rows,
        "scenarios": {
            s: {
                "date": d["date"],
                "runs": {w: sum(r["controller"] == w for r in d["runs"]) for w in CONTROLLERS},
            }
            for s, d in loaded.items()
        },
    }
    (RESULTS / "compare.json").write_text(json.dumps(summary, indent=2) + "\n")
    chart([r for r in rows if r["scenario"] not in CURVE], api_rows)
    curve = [r for r in rows if r["scenario"] in CURVE]
    scale_chart(curve)
    st = summary["settings"]
    n = st["nodes"]
    md = [
        f"# Ours vs upstream LWS v0.9.0 ({date})",
        "",
        "Upstream is **v0.9.0**: v0.10.0 is not served by the Go module proxy here. "
        f"Ours: `{summary['ours']}`.",
        "",
        f"Machine: {m['cpus']} CPUs ({m['cpu_model']}), {m['memory_gib']} GiB, kernel "
        f"{m['kernel']}, Python {m['python']}; Kubernetes v{m['versions']['KUBE_VERSION']}, "
        f"etcd v{m['versions']['ETCD_VERSION']}, kwok v{m['versions']['KWOK_VERSION']}. "
        "The machine may be shared with other work (upstream's runs kept from an earlier "
        "series were, with reliability tests): per-run figures and the load average of each "
        "run are in the JSON files; treat differences under ~20 % as noise.",
        "",
        "Every run: a fresh local cluster (etcd on tmpfs without fsync, kube-apiserver with a "
        "Metadata-level audit log, kube-controller-manager "
        f"QPS {st['kube_controller_manager']['kube_api_qps']}/burst "
        f"{st['kube_controller_manager']['kube_api_burst']}, kube-scheduler QPS "
        f"{st['kube_scheduler']['qps']}/burst {st['kube_scheduler']['burst']}, kwok with "
        f"{n['count']} fake nodes (one per 200 pods in larger runs) of {n['cpu']} CPU, "
        f"{n['memory']}, {n['gpus']} GPUs, "
        f"{n['pods']} pods each), one controller, the same manifests (pause pods) and the "
        f"same simulated events, each after a {WARMUP:g} s warm-up once the controller "
        "answers. Ours: " + st["ours"] + ". Upstream: " + st["upstream"] + ". "
        "Repetitions alternate which controller runs first. Medians; ratio = ours / upstream "
        "(below 1 is better for ours).",
        "",
        "| scenario | ours (median) | upstream (median) | ratio | target | runs ours / upstream |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r["scenario"] in CURVE:
            continue  # in the curve's own table
        runs_txt = " / ".join(", ".join(fmt(x) for x in r["runs"][w]) or "-" for w in CONTROLLERS)
        md.append(
            f"| {r['label']} | {fmt(r['ours'])} | {fmt(r['upstream'])} | {fmt(r['ratio'])} | "
            f"{r['target']} | {runs_txt} |"
        )
    if curve:
        md += ["", *curve_table(curve)]
    md += [
        "",
        "## P5: API requests by the controller, per measured window (by verb)",
        "",
        "Exact, from the audit log: requests of user `lws-operator` (ours) or `lws-upstream`, "
        f"received from the first action until the goal held plus {SETTLE:g} s (P4-idle: the "
        f"{IDLE:g} s idle period). Start-up requests (initial lists, watches) are outside "
        "every window. Target: ours <= upstream.",
        "",
        "| window | verb | ours (median) | upstream (median) | ratio |",
        "|---|---|---|---|---|",
    ]
    for a in api_rows:
        verb = f"**{a['verb']}**" if a["verb"] == "total" else a["verb"]
        md.append(
            f"| {a['window']} | {verb} | {fmt(a['ours'])} | {fmt(a['upstream'])} | "
            f"{fmt(a['ratio'])} |"
        )
    md += [
        "",
        "Per scenario: "
        + "; ".join(
            f"{s} measured {v['date']} "
            f"(runs: {v['runs']['ours']} ours, {v['runs']['upstream']} upstream)"
            for s, v in summary["scenarios"].items()
        )
        + ". Chart of the ratios: [compare.png](compare.png). Per-run data, requests by "
        "verb and resource: `compare-<scenario>.json`.",
        "",
    ]
    profiles = sorted(RESULTS.glob("profile-*.txt"))
    if profiles:
        links = ", ".join(f"[{p.name}]({p.name})" for p in profiles)
        md += [f"py-spy profiles of ours (`--profile`, one run each): {links}.", ""]
    text = "\n".join(md)
    (RESULTS / "compare.md").write_text(text)
    return text


def curve_table(curve: list[dict[str, Any]]) -> list[str]:
    """The scale curve as a table: a row per size, CPU per pod event and peak RSS."""
    by = {(r["scenario"], r["metric"]): r for r in curve}
    out = [
        "## Scale: CPU per pod event and RSS by size ([scale.png](scale.png))",
        "",
        f"10 LWS of 5, 20, 50 and 100 groups of 8 pods; at rest, {STORM_FRACTION:.0%} of the "
        f"pods flip Ready every second for {STORM_S[CURVE[0]]} s; CPU of the controller over "
        "the storm divided by the flips. Target: ours flat within +-20 % from 400 to 8,000 "
        "pods.",
        "",
        "| pods | CPU/event ours (ms) | upstream (ms) | ratio | peak RSS ours (MiB) | "
        "upstream (MiB) | ratio |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in CURVE:
        cpu, rss = by.get((s, "cpu_per_event_ms")), by.get((s, "peak_rss_mib"))
        if cpu is None or rss is None:
            continue
        out.append(
            f"| {SCALE_PODS[s]:,} | {fmt(cpu['ours'])} | {fmt(cpu['upstream'])} | "
            f"{fmt(cpu['ratio'])} | {fmt(rss['ours'])} | {fmt(rss['upstream'])} | "
            f"{fmt(rss['ratio'])} |"
        )
    return out


def scale_chart(curve: list[dict[str, Any]]) -> None:
    """scale.png: CPU per pod event and peak RSS against the pods, both controllers."""
    if not curve:
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, metric, label in (
        (axes[0], "cpu_per_event_ms", "CPU per pod event (ms)"),
        (axes[1], "peak_rss_mib", "peak RSS (MiB)"),
    ):
        for w in CONTROLLERS:
            points = sorted(
                (SCALE_PODS[r["scenario"]], r[w])
                for r in curve
                if r["metric"] == metric and r[w] is not None
            )
            if points:
                ax.plot(*zip(*points, strict=True), marker="o", label=w)
        ax.set_xlabel("pods")
        ax.set_ylabel(label)
        ax.set_ylim(bottom=0)
        ax.legend()
    fig.suptitle("lws-operator vs upstream LWS v0.9.0 by size (medians)")
    fig.tight_layout()
    fig.savefig(RESULTS / "scale.png", dpi=110)
    plt.close(fig)


def chart(rows: list[dict[str, Any]], api_rows: list[dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    items = [(r["label"], r["ratio"]) for r in rows if r["ratio"] is not None]
    items += [
        (f"P5 API requests, {a['window']}", a["ratio"])
        for a in api_rows
        if a["verb"] == "total" and a["ratio"] is not None
    ]
    if not items:
        return
    fig, ax = plt.subplots(figsize=(9, 0.4 * len(items) + 1.5))
    labels = [i[0] for i in items][::-1]
    values = [i[1] for i in items][::-1]
    colours = ["tab:green" if v <= 1 else "tab:red" for v in values]
    ax.barh(labels, values, color=colours)
    ax.axvline(1.0, color="black", linewidth=1)
    for y, v in enumerate(values):
        ax.text(v, y, f" {v:g}", va="center", fontsize=8)
    ax.set_xlabel("ours / upstream v0.9.0 (median; < 1 is better for ours)")
    ax.set_title("lws-operator vs upstream LWS v0.9.0")
    fig.tight_layout()
    fig.savefig(RESULTS / "compare.png", dpi=110)
    plt.close(fig)


# ---- command line -------------------------------------------------------------------------------
def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.compare", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--scenario", action="append", choices=SCENARIOS)
    parser.add_argument(
        "--set", choices=SETS, default="default", help="the scenarios run without --scenario"
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--controller", choices=[*CONTROLLERS, "both"], default="both")
    parser.add_argument("--profile", action="store_true", help="py-spy profile of ours, one run")
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args()
    scenarios = args.scenario or list(SETS[args.set])
    if args.report_only:
        print(summarise())
        return
    which = list(CONTROLLERS) if args.controller == "both" else [args.controller]
    bins = upstream_dir() if "upstream" in which and not args.profile else None
    with tempfile.TemporaryDirectory(prefix="lws-compare-") as tmp:
        for s in scenarios:
            if args.profile:
                raw = Path(tmp) / f"profile-{s}.raw"
                run = one_run(s, "ours", 0, Path(tmp), None, profile=raw)
                top = top_functions(raw)
                (RESULTS / f"profile-{s}.txt").write_text(f"{s} {run.metrics}\n\n{top}")
                print(run.metrics)
                print(top)
                continue
            runs = []
            kept = earlier_runs(s, which)
            for rep in range(args.runs):
                order = which if rep % 2 == 0 else which[::-1]
                for w in order:
                    run = one_run(s, w, rep, Path(tmp), bins)
                    print(
                        f"{s} {w} run {rep + 1}: {run.metrics} api={run.api} load={run.loadavg}",
                        flush=True,
                    )
                    runs.append(run)
                    save_scenario(
                        s, runs, kept
                    )  # after every run: an interrupted series keeps its data
    if not args.profile:
        print(summarise())


if __name__ == "__main__":
    main()
