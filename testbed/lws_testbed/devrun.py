"""``make run``: the whole thing on a laptop. A local cluster with simulated GPU nodes (unless
KUBECONFIG points at one), the CRD, the operator with its pod webhook, and the seed's example,
with the groups shown as they come up, until Ctrl-C."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any

from lws_operator.api import constants as c
from lws_operator.controller import operator
from lws_operator.kube.client import ApiError, Kube
from lws_operator.kube.paths import resource_path
from lws_operator.plan.meta import pod_ready
from lws_testbed.local import ClusterConfig, ClusterError, LocalCluster, running_components
from lws_testbed.manifests import Applier, load_documents

REPO = Path(__file__).resolve().parents[2]
CRDS = sorted((REPO / "crds").glob("*.yaml"))
EXAMPLE = REPO / "examples" / "vllm-llama3-405b.yaml"


def _pods_table(pods: list[dict[str, Any]]) -> str:
    rows = [f"  {'POD':34} {'GROUP':5} {'WORKER':6} {'NODE':12} READY"]
    for p in sorted(pods, key=lambda p: p["metadata"]["name"]):
        labels = p["metadata"].get("labels") or {}
        rows.append(
            f"  {p['metadata']['name']:34} {labels.get(c.GROUP_INDEX_LABEL, '-'):5} "
            f"{labels.get(c.WORKER_INDEX_LABEL, '-'):6} {(p['spec'].get('nodeName') or '-'):12} "
            f"{'yes' if pod_ready(p) else 'no'}"
        )
    return "\n".join(rows)


async def _follow(
    kube: Kube, path: str, selector: str, into: dict[str, dict[str, Any]], changed: asyncio.Event
) -> None:
    """Keep ``into`` equal to the objects at ``path`` (list, then watch; relist when needed)."""
    while True:
        listing = await kube.list(path, label_selector=selector or None)
        into.clear()
        into.update({o["metadata"]["name"]: o for o in listing["items"]})
        changed.set()
        rv = listing["metadata"]["resourceVersion"]
        with contextlib.suppress(ApiError):
            async for kind, obj in kube.watch(
                path, resource_version=rv, label_selector=selector or None
            ):
                if kind == "BOOKMARK":
                    continue
                if kind == "DELETED":
                    into.pop(obj["metadata"]["name"], None)
                else:
                    into[obj["metadata"]["name"]] = obj
                changed.set()


async def _show(kube: Kube, namespace: str, name: str) -> None:
    """Print the example's groups whenever its pods or status change (watches, no polling)."""
    pods: dict[str, dict[str, Any]] = {}
    sets: dict[str, dict[str, Any]] = {}
    changed = asyncio.Event()
    lws_collection = resource_path(c.API_VERSION, c.PLURAL, namespace=namespace)
    followers = [
        asyncio.create_task(
            _follow(
                kube,
                resource_path("v1", "pods", namespace=namespace),
                f"{c.SET_NAME_LABEL}={name}",
                pods,
                changed,
            )
        ),
        asyncio.create_task(_follow(kube, lws_collection, "", sets, changed)),
    ]
    last = ""
    try:
        while True:
            await changed.wait()
            changed.clear()
            lws = sets.get(name) or {}
            ready = (lws.get("status") or {}).get("readyReplicas", 0)
            want = (lws.get("spec") or {}).get("replicas")
            view = f"{name}: {ready}/{want} groups ready\n{_pods_table(list(pods.values()))}"
            if view != last:
                print(view, flush=True)
                last = view
    finally:
        for task in followers:
            task.cancel()
        await asyncio.gather(*followers, return_exceptions=True)


async def run(kubeconfig: Path, operator_kubeconfig: Path, namespace: str) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with await Kube.connect(kubeconfig, user_agent="lws-operator-dev") as kube:
        applier = Applier(kube)
        await applier.apply_all(load_documents(*CRDS))
        print(f"installed {', '.join(p.name for p in CRDS)}", flush=True)
        config = operator.OperatorConfig(kubeconfig=operator_kubeconfig, webhook_port=0)
        op = asyncio.create_task(operator.run(config, stop), name="operator")
        example = load_documents(EXAMPLE)
        await applier.apply_all(example, namespace=namespace)
        name = example[0]["metadata"]["name"]
        print(f"applied {EXAMPLE.relative_to(REPO)} in namespace {namespace}", flush=True)
        shower = asyncio.create_task(_show(kube, namespace, name))
        await asyncio.wait({op, asyncio.ensure_future(stop.wait())}, return_when="FIRST_COMPLETED")
        stop.set()
        shower.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await shower
        await op


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lws_testbed.devrun")
    parser.add_argument("--state-dir", type=Path, default=Path(".local/cluster"))
    parser.add_argument("--kubeconfig", type=Path, default=Path(".local/kubeconfig"))
    parser.add_argument("--namespace", default="default")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    external = os.environ.get("KUBECONFIG")
    if external and Path(external).resolve() != args.kubeconfig.resolve():
        print(f"using the cluster of KUBECONFIG={external} (no local cluster started)")
        asyncio.run(run(Path(external), Path(external), args.namespace))
        return 0
    if running := running_components(args.state_dir):
        print(
            f"a local cluster is already running ({', '.join(running)}); `make cluster-down` first"
        )
        return 1
    try:
        with LocalCluster(
            ClusterConfig(state_dir=args.state_dir, kubeconfig_out=args.kubeconfig)
        ) as cluster:
            print(
                f"local cluster up in {cluster.started_seconds:.1f}s at {cluster.server}; "
                f"export KUBECONFIG={args.kubeconfig.resolve()}",
                flush=True,
            )
            asyncio.run(
                run(cluster.kubeconfig(), cluster.kubeconfig("lws-operator"), args.namespace)
            )
    except ClusterError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
