"""Benchmark: group recovery on real containers, ours against upstream LWS v0.9.0.

    python -m bench.recovery_real [--runs 5] [--controller ours|upstream|both]

One local cluster with a real node (``ClusterConfig(real_nodes=1)``) for every run; both
controllers run out of cluster against it, one at a time (each installs its own CRD; the other's
is deleted first). A LeaderWorkerSet of one group of 4 lws-probe pods on the real node; one
worker's container is SIGKILLed from the host (a crash), the kubelet restarts it, the controller
recreates the group. Every phase is timed from the kill, as a watch of the group's pods shows it
(bench/phases.py): the kubelet's report of the exit, the controller's first write, every old pod
gone, and each new pod created, scheduled, with its sandbox, started and Ready; for ours, its own
share from its log (the event to its last delete sent). Two shutdowns: pods that exit at once on
SIGTERM (grace 0 s), and pods that take 3 s (terminationGracePeriodSeconds 10, the program waits
3 s on SIGTERM). The StatefulSet controller cannot create a pod before the old one of the same
name is gone (the identity rule). Ours runs without its crash-loop backoff (every run breaks the
same group again: the backoff would be measured, not the recovery). Results:
bench/results/recovery-real.md and a timeline of each median run, recovery-real.png.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import re
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from bench.common import RESULTS, machine, no_backoff
from bench.phases import GROUP_PHASES, Timeline
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
from lws_testbed.wait import Objects, follow_objects, wait_for_objects, wait_on

NS = "default"
NAME = "recovery"
SIZE = 4
SHUTDOWNS = {"grace-0s": (0, 0.0), "shutdown-3s": (10, 3.0)}  # grace seconds, time to stop
CONTROLLERS = ("ours", "upstream")
TIMEOUT = 180.0
LWS_PATH = resource_path(c.API_VERSION, c.PLURAL, namespace=NS)
PODS_PATH = resource_path("v1", "pods", namespace=NS)
CRD = "apiextensions.k8s.io/v1"
COLUMNS = (*GROUP_PHASES, "reaction_s", "own_s", "from_exit_s")
# Each phase's share, for a reader: (label, from, to), times from the kill.
SHARES = (
    ("the kubelet reports the exit", None, "exit_seen_s"),
    ("the controller reacts (its first write)", "exit_seen_s", "react_s"),
    ("the old pods terminate and go", "react_s", "old_gone_s"),
    ("the last new pod is created", "old_gone_s", "created_s"),
    ("scheduled", "created_s", "scheduled_s"),
    ("sandbox ready", "scheduled_s", "sandbox_s"),
    ("container started", "sandbox_s", "started_s"),
    ("Ready", "started_s", "ready_s"),
)


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


async def one_recovery(kube: Kube, socket: Path) -> dict[str, Any]:
    """Kill one worker's container; the group's phases (bench/phases.py) and its pods' marks,
    from a watch listed before the kill, so that it shows every step after it."""
    selector = f"{c.SET_NAME_LABEL}={NAME}"
    async with contextlib.aclosing(
        follow_objects(kube, PODS_PATH, label_selector=selector)
    ) as updates:
        before = {p["metadata"]["uid"]: dict(p) for p in (await anext(updates)).values()}
        victim = next(p for p in before.values() if p["metadata"]["name"] == f"{NAME}-0-{SIZE - 1}")
        timeline = Timeline(old=before, victim=victim["metadata"]["uid"], size=SIZE)
        cid = realnode.container_id(victim["status"]["containerStatuses"][0])
        t0 = time.monotonic()
        ready_at = 0.0

        def watch(objs: Objects) -> bool:
            nonlocal ready_at
            ready_at = time.monotonic() - t0
            timeline.see(objs, ready_at)
            return all_new_ready(objs, set(before))

        realnode.kill_container(socket, cid)
        await wait_on(
            updates, watch, timeout=TIMEOUT, what="the group Ready again with all-new pods"
        )
    phases = timeline.group_phases()
    phases["ready_s"] = round(ready_at, 3)
    return {"phases": phases, "pods": timeline.pods()}


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
                        logged = len(own_shares(work / "ours.log"))
                        r = await one_recovery(kube, socket)
                        phases = r["phases"]
                        row = {
                            "controller": who,
                            "shutdown": shutdown,
                            "rep": rep + 1,
                            **phases,
                            "reaction_s": reaction(phases),
                            "from_exit_s": since_exit(phases),
                            "own_s": (
                                next(iter(own_shares(work / "ours.log")[logged:]), None)
                                if who == "ours"
                                else None
                            ),
                            "loadavg": loadavg(),
                        }
                        print(json.dumps(row), flush=True)
                        results.append({**row, "pods": r["pods"]})
                    await kube.delete(
                        resource_path(c.API_VERSION, c.PLURAL, namespace=NS, name=NAME)
                    )
                    await wait_group(kube, lambda o: not o, "the group's pods gone")
    return results


OWN_SHARE = re.compile(r"recreate group \d+ \(\w+; (\d+) ms after the event\)")


def own_shares(log: Path) -> list[float]:
    """Our operator's own share of each recovery so far, as it logs it: from the watch event
    that showed the failure to the recreation's last delete sent (controller/lws/steps.py)."""
    if not log.exists():
        return []
    return [int(m.group(1)) / 1000 for m in OWN_SHARE.finditer(log.read_text())]


def reaction(phases: dict[str, float]) -> float | None:
    """The controller's share as a watcher sees it: from the kubelet's report of the exit to
    the controller's first write (each as a watch shows it, a few ms after the write)."""
    if "exit_seen_s" not in phases or "react_s" not in phases:
        return None
    return round(phases["react_s"] - phases["exit_seen_s"], 3)


def since_exit(phases: dict[str, float]) -> float | None:
    """Ready again, counted from the kubelet's report of the exit: the part of a recovery a
    controller can change (the kill to the report is the kubelet's relist, 0 to 1 s)."""
    if "exit_seen_s" not in phases:
        return None
    return round(phases["ready_s"] - phases["exit_seen_s"], 3)


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def medians(results: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, float]]:
    """Per (controller, shutdown), the median of each column over the runs that have it."""
    med: dict[tuple[str, str], dict[str, float]] = {}
    for who in CONTROLLERS:
        for shutdown in SHUTDOWNS:
            rows = [r for r in results if r["controller"] == who and r["shutdown"] == shutdown]
            if rows:
                med[who, shutdown] = {
                    k: round(statistics.median(vals), 3)
                    for k in COLUMNS
                    if (vals := [r[k] for r in rows if r.get(k) is not None])
                }
    return med


def _cell(x: dict[str, Any], k: str) -> str:
    return "-" if x.get(k) is None else f"{x[k]:.3f}"


def report(
    results: list[dict[str, Any]],
    cluster_memory: dict[str, float],
    measured: tuple[str, dict[str, Any]] | None = None,
) -> str:
    """The report of ``results``, measured now on this machine or as ``measured`` says
    (date, machine)."""
    med = medians(results)
    if measured is None:
        measured = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"), machine()
    now, m = measured
    lines = [
        "# Group recovery on real containers, ours vs upstream LWS "
        f"v{m['versions']['LWS_VERSION']} ({now})",
        "",
        f"Machine: {m['cpus']} CPUs ({m['cpu_model']}), {m['memory_gib']} GiB, "
        f"Python {m['python']}; Kubernetes v{m['versions']['KUBE_VERSION']} with one real node "
        "(containerd, runc, CNI bridge, kube-proxy nftables, CoreDNS); both controllers out of "
        f"cluster against the same cluster. A group of {SIZE} lws-probe pods; one worker's "
        "container SIGKILLed from the host. Every time is in seconds from the kill, as a watch "
        "of the group's pods listed before the kill first shows it (bench/phases.py says why "
        "not the API's own timestamps: they count whole seconds); medians of the runs below.",
        "",
        "| shutdown | controller | exit seen | first write | reaction | operator's own "
        "| old pods gone | last created | scheduled | sandbox | started | **Ready** "
        "| ours / upstream | Ready from the exit seen | ours / upstream |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for shutdown in SHUTDOWNS:
        for who in CONTROLLERS:
            if (who, shutdown) not in med:
                continue
            x = med[who, shutdown]
            ratio = since = ""
            if who == "ours" and ("upstream", shutdown) in med:
                theirs = med["upstream", shutdown]
                ratio = f"{x['ready_s'] / theirs['ready_s']:.2f}x"
                since = f"{x['from_exit_s'] / theirs['from_exit_s']:.2f}x"
            columns = (*GROUP_PHASES[:2], "reaction_s", "own_s", *GROUP_PHASES[2:])
            cells = [_cell(x, k) for k in columns]
            cells[-1] = f"**{cells[-1]}**"
            exit_to_ready = _cell(x, "from_exit_s")
            lines.append(
                f"| {shutdown} | {who} | "
                + " | ".join(cells)
                + f" | {ratio} | {exit_to_ready} | {since} |"
            )
    lines += [
        "",
        "Where the seconds go (medians of each phase's own duration: from the phase before it "
        'to it; the column "reaction" above is the controller\'s share as a watcher sees it, '
        "from the kubelet's report of the exit to the first old pod marked for deletion; "
        '"operator\'s own" is ours alone, from its log: from the watch event that showed the '
        "failure to its last delete sent, evidence read included):",
        "",
        "| phase | " + " | ".join(f"{w}, {s}" for s in SHUTDOWNS for w in CONTROLLERS) + " |",
        "|---|" + "---|" * (len(SHUTDOWNS) * len(CONTROLLERS)),
    ]
    for label, start, end in SHARES:
        cells = []
        for shutdown in SHUTDOWNS:
            for who in CONTROLLERS:
                rows = [
                    r
                    for r in results
                    if r["controller"] == who
                    and r["shutdown"] == shutdown
                    and r.get(end) is not None
                    and (start is None or r.get(start) is not None)
                ]
                spans = [r[end] - (r[start] if start else 0.0) for r in rows]
                cells.append(f"{statistics.median(spans):.3f}" if spans else "-")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "![timeline of the median run of each](recovery-real.png)",
        "",
        "On kwok's simulated pods (no process, deleted in 0 s) the same controller recovers a "
        "group of 8 in well under a second: [recovery-restart-8x8.md](recovery-restart-8x8.md), "
        "[compare.md](compare.md) (P2).",
        "",
        "Memory of the real-node cluster during the runs (RSS, MiB): "
        + ", ".join(f"{k} {v:.0f}" for k, v in sorted(cluster_memory.items())),
        "",
        "| controller | shutdown | run | "
        + " | ".join(k.removesuffix("_s") for k in COLUMNS)
        + " | load |",
        "|---|---|---|" + "---|" * len(COLUMNS) + "---|",
        *[
            f"| {r['controller']} | {r['shutdown']} | {r['rep']} | "
            + " | ".join(_cell(r, k) for k in COLUMNS)
            + f" | {r['loadavg']} |"
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
    timeline_chart(results)
    text = "\n".join(lines)
    (RESULTS / "recovery-real.md").write_text(text)
    return text


# The plot's colours: an old pod's life, then each step of a new pod's start.
STEP_COLOURS = (
    ("created", "scheduled", "tab:blue", "created → scheduled"),
    ("scheduled", "sandbox", "tab:orange", "scheduled → sandbox ready"),
    ("sandbox", "started", "tab:purple", "sandbox → container started"),
    ("started", "ready", "tab:green", "started → Ready"),
)


def _pod_label(pod: dict[str, Any]) -> str:
    """ "old NAME (grace N s)" or "new NAME"."""
    if not pod["old"]:
        return f"new {pod['name']}"
    grace = pod.get("grace")
    return f"old {pod['name']}" + ("" if grace is None else f" (grace {grace} s)")


def timeline_chart(results: list[dict[str, Any]]) -> None:
    """recovery-real.png: for each shutdown and controller, the run with the median Ready time,
    one bar per pod: an old pod until it is marked for deletion (grey) and while it terminates
    (red); a new pod's steps to Ready; the kubelet's report of the exit and the controller's
    first write as vertical lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    panels = []
    for shutdown in SHUTDOWNS:
        for who in CONTROLLERS:
            rows = sorted(
                (r for r in results if r["controller"] == who and r["shutdown"] == shutdown),
                key=lambda r: r["ready_s"],
            )
            if rows:
                panels.append((f"{who}, {shutdown}", rows[(len(rows) - 1) // 2]))
    if not panels:
        return
    horizon = max(r["ready_s"] for _, r in panels) * 1.05
    fig, axes = plt.subplots(len(panels), 1, figsize=(10, 2.2 * len(panels)), squeeze=False)
    for ax, (title, run) in zip(axes[:, 0], panels, strict=True):
        pods = run["pods"]
        for y, pod in enumerate(pods):
            if pod["old"]:
                deleting = pod.get("deleting", run["ready_s"])
                ax.barh(y, deleting, color="lightgrey")
                ax.barh(
                    y, pod.get("gone", run["ready_s"]) - deleting, left=deleting, color="tab:red"
                )
            else:
                marks = pod
                for start, end, colour, _ in STEP_COLOURS:
                    if start in marks and end in marks:
                        ax.barh(y, marks[end] - marks[start], left=marks[start], color=colour)
        for key, style in (("exit_seen_s", ":"), ("react_s", "-")):
            if key in run:
                ax.axvline(run[key], color="black", linestyle=style, linewidth=1)
        ax.set_yticks(range(len(pods)))
        ax.set_yticklabels([_pod_label(p) for p in pods], fontsize=7)
        ax.invert_yaxis()
        ax.set_xlim(0, horizon)
        ax.set_title(f"{title}: Ready at {run['ready_s']:.2f} s", fontsize=9)
    axes[-1, 0].set_xlabel(
        "seconds from the kill (dotted: the kubelet reports the exit; solid: first write)"
    )
    handles = [
        Patch(color="lightgrey", label="old pod, until marked for deletion"),
        Patch(color="tab:red", label="old pod terminating"),
        *(Patch(color=colour, label=label) for _, _, colour, label in STEP_COLOURS),
    ]
    fig.legend(handles=handles, loc="lower center", ncol=3, fontsize=7)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(RESULTS / "recovery-real.png", dpi=110)
    plt.close(fig)


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
    parser.add_argument(
        "--report-only", action="store_true", help="rewrite the report from recovery-real.json"
    )
    args = parser.parse_args()
    if args.report_only:
        saved = json.loads((RESULTS / "recovery-real.json").read_text())
        runs = [{**r, "from_exit_s": since_exit(r)} for r in saved["runs"]]
        print(report(runs, saved["cluster_rss_mib"], (saved["date"], saved["machine"])))
        return 0
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
