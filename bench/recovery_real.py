"""Benchmark: group recovery on real containers, ours against upstream LWS v0.9.0.

    python -m bench.recovery_real [--runs 5] [--controller ours|upstream|both]

One local cluster with a real node (``ClusterConfig(real_nodes=1)``) for every run; both
controllers run out of cluster against it, one at a time (each installs its own CRD; the other's
is deleted first). A LeaderWorkerSet of one group of 4 lws-probe pods on the real node; one
worker's container is SIGKILLed from the host (a crash), the kubelet restarts it, the controller
recreates the group. Measured from the kill: ``react_s`` until the controller deletes the first
pod, ``old_gone_s`` until every old pod is gone, ``ready_s`` until the group is Ready again with
all-new pods. Two shutdowns: pods that exit at once on SIGTERM (grace 0 s), and pods that take
3 s (terminationGracePeriodSeconds 10, the program waits 3 s on SIGTERM). The StatefulSet
controller cannot create a pod before the old one of the same name is gone (the identity rule):
that wait is Kubernetes'; the rest is the controller's. Ours runs without its crash-loop
backoff (every run breaks the same group again: the backoff would be measured, not the
recovery). Results: bench/results/recovery-real.md.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from bench.common import RESULTS, machine, no_backoff
from lws_operator.api import constants as c
from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_operator.plan.meta import pod_ready
from lws_testbed.local import ClusterConfig, LocalCluster
from lws_testbed.lws_api import install_lws_api, wait_lws_api
from lws_testbed.operator_process import start_operator
from lws_testbed.realnode import node as realnode
from lws_testbed.realnode import pin_to_real_node, preflight
from lws_testbed.upstream import install_crds, start_upstream, upstream_dir
from lws_testbed.wait import Objects, wait_for_objects

NS = "default"
NAME = "recovery"
SIZE = 4
SHUTDOWNS = {"grace-0s": (0, 0.0), "shutdown-3s": (10, 3.0)}  # grace seconds, time to stop
CONTROLLERS = ("ours", "upstream")
TIMEOUT = 180.0
LWS_PATH = resource_path(c.API_VERSION, c.PLURAL, namespace=NS)
PODS_PATH = resource_path("v1", "pods", namespace=NS)
CRD = "apiextensions.k8s.io/v1"
COLUMNS = ("react_s", "old_gone_s", "ready_s")


def manifest(image: str, grace: int, stop_s: float) -> dict[str, Any]:
    container = {
        "name": "probe",
        "image": image,
        "imagePullPolicy": "Never",
        # Ready at once: the times are the controller's and Kubernetes', not a workload's.
        "args": [f"--term-delay={stop_s}s", "--no-rendezvous"],
        "readinessProbe": {
            "httpGet": {"path": "/ready", "port": 8080},
            "periodSeconds": 1,
            "failureThreshold": 1,
        },
    }
    pod = pin_to_real_node({"containers": [container], "terminationGracePeriodSeconds": grace})
    return {
        "apiVersion": c.API_VERSION,
        "kind": c.KIND,
        "metadata": {"name": NAME, "namespace": NS},
        "spec": {
            "replicas": 1,
            "leaderWorkerTemplate": {"size": SIZE, "workerTemplate": {"spec": pod}},
        },
    }


async def group(kube: Kube) -> dict[str, dict[str, Any]]:
    listing = await kube.list(PODS_PATH, label_selector=f"{c.SET_NAME_LABEL}={NAME}")
    return {p["metadata"]["uid"]: p for p in listing["items"]}


async def wait_group(kube: Kube, done: Any, what: str) -> Objects:
    return await wait_for_objects(
        kube,
        PODS_PATH,
        done,
        timeout=TIMEOUT,
        what=what,
        label_selector=f"{c.SET_NAME_LABEL}={NAME}",
    )


def all_new_ready(objs: Objects, old: set[str]) -> bool:
    live = [p for p in objs.values() if not p["metadata"].get("deletionTimestamp")]
    return (
        len(live) == SIZE
        and not {p["metadata"]["uid"] for p in live} & old
        and all(pod_ready(p) for p in live)
    )


async def one_recovery(kube: Kube, socket: Path) -> dict[str, float]:
    before = await group(kube)
    old = set(before)
    victim = next(p for p in before.values() if p["metadata"]["name"] == f"{NAME}-0-{SIZE - 1}")
    cid = realnode.container_id(victim["status"]["containerStatuses"][0])
    marks: dict[str, float] = {}
    t0 = time.monotonic()

    def watch(objs: Objects) -> bool:
        now = time.monotonic() - t0
        present = {p["metadata"]["uid"]: p for p in objs.values()}
        if any(present[u]["metadata"].get("deletionTimestamp") for u in old & set(present)):
            marks.setdefault("react_s", now)
        if not old & set(present):
            marks.setdefault("react_s", now)
            marks.setdefault("old_gone_s", now)
        return all_new_ready(objs, old)

    realnode.kill_container(socket, cid)
    await wait_group(kube, watch, "the group Ready again with all-new pods")
    marks["ready_s"] = time.monotonic() - t0
    return {k: round(marks[k], 3) for k in COLUMNS}


@asynccontextmanager
async def controller(
    which: str, cluster: LocalCluster, kube: Kube, work: Path
) -> AsyncIterator[None]:
    """The controller installed (its CRD, the other's deleted) and running out of cluster."""
    crd = resource_path(CRD, "customresourcedefinitions", name=c.CRD_NAME)
    await kube.delete(crd)
    await wait_for_objects(
        kube,
        resource_path(CRD, "customresourcedefinitions"),
        lambda o: c.CRD_NAME not in o,
        timeout=60,
        what="the LeaderWorkerSet CRD deleted",
        field_selector=f"metadata.name={c.CRD_NAME}",
    )
    if which == "ours":
        # Upstream's LWS mutating webhook is left behind until our operator replaces its
        # configuration (upstream.UpstreamManager.stop): the policies are probed after that.
        await install_lws_api(kube, wait=False)
        op = await start_operator(
            kube, cluster.kubeconfig("lws-operator"), work / "ours.log", *no_backoff(work)
        )
        try:
            await wait_lws_api(kube)
            yield
            op.check_alive()
        finally:
            await op.stop()
    else:
        bins = await asyncio.to_thread(upstream_dir)
        await install_crds(kube, bins)
        mgr = await start_upstream(
            kube, cluster.kubeconfig("lws-upstream"), work, bins=bins, install=False
        )
        try:
            yield
            mgr.check_alive()
        finally:
            await mgr.stop()


async def measure(
    cluster: LocalCluster, runs: int, which: tuple[str, ...], work: Path
) -> list[dict[str, Any]]:
    assert cluster.node is not None
    socket = cluster.node.containerd_socket
    image = next(i.ref for i in cluster.node_images if "/workload:" in i.ref)
    results: list[dict[str, Any]] = []
    async with await Kube.connect(cluster.kubeconfig()) as kube:
        for k, (shutdown, (grace, stop_s)) in enumerate(SHUTDOWNS.items()):
            # Alternate which controller goes first, so drift shows in both.
            order = which if k % 2 == 0 else tuple(reversed(which))
            for who in order:
                async with controller(who, cluster, kube, work):
                    await kube.create(LWS_PATH, manifest(image, grace, stop_s))
                    await wait_group(kube, lambda o: all_new_ready(o, set()), "the group Ready")
                    for rep in range(runs):
                        r = await one_recovery(kube, socket)
                        row = {
                            "controller": who,
                            "shutdown": shutdown,
                            "rep": rep + 1,
                            **r,
                            "loadavg": loadavg(),
                        }
                        print(json.dumps(row), flush=True)
                        results.append(row)
                    await kube.delete(
                        resource_path(c.API_VERSION, c.PLURAL, namespace=NS, name=NAME)
                    )
                    await wait_group(kube, lambda o: not o, "the group's pods gone")
    return results


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def report(results: list[dict[str, Any]], cluster_memory: dict[str, float]) -> str:
    med: dict[tuple[str, str], dict[str, float]] = {}
    for who in CONTROLLERS:
        for shutdown in SHUTDOWNS:
            rows = [r for r in results if r["controller"] == who and r["shutdown"] == shutdown]
            if rows:
                med[who, shutdown] = {
                    k: round(statistics.median(r[k] for r in rows), 3) for k in COLUMNS
                }
    m = machine()
    now = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    lines = [
        "# Group recovery on real containers, ours vs upstream LWS "
        f"v{m['versions']['LWS_VERSION']} ({now})",
        "",
        f"Machine: {m['cpus']} CPUs ({m['cpu_model']}), {m['memory_gib']} GiB, "
        f"Python {m['python']}; Kubernetes v{m['versions']['KUBE_VERSION']} with one real node "
        "(containerd, runc, CNI bridge, kube-proxy nftables, CoreDNS); both controllers out of "
        f"cluster against the same cluster. A group of {SIZE} lws-probe pods; one worker's "
        "container SIGKILLed from the host; times from the kill (median of the runs below).",
        "",
        "| shutdown | controller | react_s | old_gone_s | ready_s | ready ours / upstream |",
        "|---|---|---|---|---|---|",
    ]
    for shutdown in SHUTDOWNS:
        for who in CONTROLLERS:
            if (who, shutdown) not in med:
                continue
            x = med[who, shutdown]
            ratio = ""
            if who == "ours" and ("upstream", shutdown) in med:
                ratio = f"{x['ready_s'] / med['upstream', shutdown]['ready_s']:.2f}x"
            lines.append(
                f"| {shutdown} | {who} | {x['react_s']} | {x['old_gone_s']} "
                f"| **{x['ready_s']}** | {ratio} |"
            )
    lines += [
        "",
        "On kwok's simulated pods (no process, deleted in 0 s) the same controller recovers a "
        "group of 8 in well under a second: [recovery-restart-8x8.md](recovery-restart-8x8.md), "
        "[compare.md](compare.md) (P2).",
        "",
        "Memory of the real-node cluster during the runs (RSS, MiB): "
        + ", ".join(f"{k} {v:.0f}" for k, v in sorted(cluster_memory.items())),
        "",
        "| controller | shutdown | run | react_s | old_gone_s | ready_s | load |",
        "|---|---|---|---|---|---|---|",
        *[
            f"| {r['controller']} | {r['shutdown']} | {r['rep']} | {r['react_s']} | "
            f"{r['old_gone_s']} | {r['ready_s']} | {r['loadavg']} |"
            for r in results
        ],
        "",
    ]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "recovery-real.json").write_text(
        json.dumps(
            {
                "date": now,
                "machine": m,
                "runs": results,
                "cluster_rss_mib": cluster_memory,
                "median": {f"{w}/{s}": v for (w, s), v in med.items()},
            },
            indent=2,
        )
        + "\n"
    )
    text = "\n".join(lines)
    (RESULTS / "recovery-real.md").write_text(text)
    return text


def rss_of(cluster: LocalCluster) -> dict[str, float]:
    out = {}
    for p in cluster.procs:
        for line in Path(f"/proc/{p.popen.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                out[p.name] = int(line.split()[1]) / 1024
    return out


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.recovery_real")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--controller", choices=("ours", "upstream", "both"), default="both")
    args = parser.parse_args()
    if reason := preflight.cannot_run_real_node():
        print(
            f"bench-recovery-real: this machine cannot run a real node: {reason}", file=sys.stderr
        )
        return 1
    which = CONTROLLERS if args.controller == "both" else (args.controller,)
    with tempfile.TemporaryDirectory(prefix="lws-bench-real-") as tmp:
        config = ClusterConfig(state_dir=Path(tmp) / "cluster", real_nodes=1)
        with LocalCluster(config) as cluster:
            results = asyncio.run(measure(cluster, args.runs, which, Path(tmp)))
            memory = rss_of(cluster)
        if cluster.host_differences:
            print("the host differs after the real node:", *cluster.host_differences, sep="\n  ")
            return 1
    print(report(results, memory))
    return 0


if __name__ == "__main__":
    sys.exit(main())
