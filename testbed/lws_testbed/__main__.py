"""``python -m lws_testbed up|down|status|run|build|preflight|image``: the local cluster
from a shell.

``up`` starts a detached cluster and returns; ``down`` stops it; ``run`` keeps one in the
foreground until Ctrl-C. The admin kubeconfig is written to ``--kubeconfig`` (the Makefile
passes ``.local/kubeconfig``, a stable, git-ignored path in the checkout). ``--real-nodes 1``
adds a real node (``make e2e-up`` is ``lws_testbed.e2e``); ``preflight``
says in one line why this machine cannot run one (exit 1), ``image pause|workload|operator``
builds (or finds) an image and prints its reference. With ``--kueue``, Kueue runs in the
cluster too (after the LeaderWorkerSet CRD and admission policies, which it then installs);
``build --kueue`` also builds Kueue.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from lws_operator.api.admission_policy import install_documents
from lws_testbed import binaries, kube_versions, kueue, realnode
from lws_testbed.local import (
    ClusterConfig,
    ClusterError,
    LocalCluster,
    running_components,
    stop_detached,
)
from lws_testbed.nodes import NodeShape
from lws_testbed.realnode import images, preflight

DEFAULT_STATE = Path(".local/cluster")
DEFAULT_KUBECONFIG = Path(".local/kubeconfig")


def _config(args: argparse.Namespace, *, detached: bool) -> ClusterConfig:
    return ClusterConfig(
        state_dir=args.state_dir,
        nodes=NodeShape(count=args.nodes, gpus=args.gpus),
        apiserver_port=args.port,
        kubeconfig_out=args.kubeconfig,
        audit_log=args.audit_log,
        die_with_parent=not detached,
        real_nodes=args.real_nodes,
        kueue=kueue_options() if args.kueue else None,
    )


def kueue_options() -> kueue.KueueOptions:
    """Kueue for this project's cluster: the LeaderWorkerSet API installed before it, so that
    its LeaderWorkerSet integration starts at once."""
    return kueue.KueueOptions(install_first=tuple(install_documents()))


def _banner(cluster: LocalCluster, kubeconfig: Path) -> str:
    n = cluster.config.nodes
    real = ""
    if cluster.config.real_nodes:
        refs = ", ".join(i.ref for i in cluster.node_images)
        real = (
            f" and the real node {realnode.NODE_NAME} (label {realnode.NODE_LABEL}=true, "
            f"tainted; images: {refs})"
        )
    with_kueue = ""
    if cluster.config.kueue is not None:
        with_kueue = (
            f"\n  Kueue v{binaries.pins()['KUEUE_VERSION']} running (ready in "
            f"{cluster.kueue_seconds:.1f}s; the LeaderWorkerSet CRD is installed)\n"
            f"  kubectl get clusterqueues,localqueues,workloads.kueue.x-k8s.io -A"
        )
    return (
        f"local cluster up in {cluster.started_seconds:.1f}s: {cluster.server}, "
        f"{n.count} kwok nodes with {n.gpus} nvidia.com/gpu each{real}\n"
        f"  export KUBECONFIG={kubeconfig.resolve()}\n"
        f"  kubectl get nodes        # kubectl v{cluster.kube_version.version} is at "
        f"{binaries.bin_dir() / 'kubectl'}\n"
        f"  logs: {cluster.log_dir}" + with_kueue
    )


def cmd_build(args: argparse.Namespace) -> int:
    print(binaries.ensure_binaries(node=args.real_nodes > 0))
    if args.kueue:
        print(kueue.kueue_dir())
    return 0


def cmd_preflight(args: argparse.Namespace) -> int:
    if reason := preflight.cannot_run_real_node():
        print(reason)
        return 1
    return 0


def cmd_image(args: argparse.Namespace) -> int:
    build = {
        "pause": images.pause_image,
        "workload": images.workload_image,
        "operator": images.operator_image,
    }[args.which]
    if args.which == "workload":
        binaries.ensure_binaries(node=True)
    print(build().ref)
    return 0


def _already_running(args: argparse.Namespace) -> bool:
    if running := running_components(args.state_dir):
        names = ", ".join(running)
        print(f"a local cluster is already running ({names}); `make cluster-down` first")
        return True
    return False


def cmd_up(args: argparse.Namespace) -> int:
    if _already_running(args):
        return 1
    cluster = LocalCluster(_config(args, detached=True))
    cluster.start()
    print(_banner(cluster, args.kubeconfig))
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    stopped = stop_detached(args.state_dir)  # ClusterError when the host was not restored
    print(f"stopped: {', '.join(stopped)}" if stopped else "no local cluster was running")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    running = running_components(args.state_dir)
    print(f"running: {', '.join(running)}" if running else "not running")
    return 0 if running else 1


def cmd_run(args: argparse.Namespace) -> int:
    if _already_running(args):
        return 1
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    with LocalCluster(_config(args, detached=False)) as cluster:
        print(_banner(cluster, args.kubeconfig))
        print("Ctrl-C stops it.", flush=True)
        while not stop.wait(timeout=1.0):
            if dead := cluster.dead_components():
                print(f"component(s) exited: {', '.join(dead)}; stopping", file=sys.stderr)
                return 1
    if cluster.host_differences:
        print("the host differs from before the real node started:", file=sys.stderr)
        print("\n".join(f"  {d}" for d in cluster.host_differences), file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lws_testbed")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, fn in (
        ("build", cmd_build),
        ("up", cmd_up),
        ("down", cmd_down),
        ("status", cmd_status),
        ("run", cmd_run),
        ("preflight", cmd_preflight),
    ):
        p = sub.add_parser(name)
        p.set_defaults(fn=fn)
        p.add_argument("--state-dir", type=Path, default=DEFAULT_STATE)
        p.add_argument("--kubeconfig", type=Path, default=DEFAULT_KUBECONFIG)
        p.add_argument("--nodes", type=int, default=NodeShape.count)
        p.add_argument("--gpus", type=int, default=NodeShape.gpus, help="GPUs per node")
        p.add_argument("--port", type=int, default=None, help="kube-apiserver port (default: free)")
        p.add_argument("--audit-log", action="store_true", help="write the apiserver audit log")
        p.add_argument(
            "--real-nodes", type=int, default=0, choices=(0, 1), help="real kubelet nodes (0 or 1)"
        )
        p.add_argument(
            "--kueue",
            action="store_true",
            help=f"run Kueue v{binaries.pins()['KUEUE_VERSION']} too",
        )
    image = sub.add_parser("image", help="build (or find) an image; print its reference")
    image.set_defaults(fn=cmd_image)
    image.add_argument("which", choices=("pause", "workload", "operator"))
    args = parser.parse_args(argv)
    try:
        if args.fn not in (cmd_down, cmd_status, cmd_preflight):
            kube_versions.selected()  # one line for a version outside KUBE_VERSIONS
        return int(args.fn(args))
    except (ClusterError, binaries.BinariesError, images.ImageError, kueue.KueueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
