"""``make run``: the whole thing on a laptop. A local cluster with simulated GPU nodes (unless
KUBECONFIG points at one), the CRD, the operator with its pod webhook, and an example (the
seed's vLLM one by default), with its groups shown as they come up (``devview.py``), until
Ctrl-C.

With ``--kueue`` (``make run KUEUE=1``) Kueue runs in the local cluster too, and the example
is queued to a GPU ClusterQueue that admits one of its two groups: the other waits for quota,
shown with Kueue's reason, until the quota is raised with the command printed."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import shutil
import signal
import sys
from pathlib import Path

from lws_operator import kueue as kueue_view
from lws_operator.api import constants as c
from lws_operator.api.admission_policy import install_documents
from lws_operator.controller import operator
from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_testbed import binaries, kueue
from lws_testbed.devview import Display, LineDisplay, TerminalDisplay, View, view_of
from lws_testbed.local import ClusterConfig, ClusterError, LocalCluster, running_components
from lws_testbed.lws_api import install_lws_api
from lws_testbed.manifests import Applier, create_namespace, load_documents
from lws_testbed.wait import Objects, follow_objects

REPO = Path(__file__).resolve().parents[2]
CRDS = sorted((REPO / "crds").glob("*.yaml"))
EXAMPLE = REPO / "examples" / "vllm-llama3-405b.yaml"
# With Kueue: one ResourceFlavor, ClusterQueue and LocalQueue named so, whose GPU quota admits
# one group of the example (2 pods of 8 GPUs, 32 CPUs and 256Gi each); CPU and memory for two.
QUEUE = "gpu"
GROUP_GPUS = 16
QUEUE_QUOTA: dict[str, str | int] = {"nvidia.com/gpu": GROUP_GPUS, "cpu": 128, "memory": "1Ti"}


class _CompactFormatter(logging.Formatter):
    """``12:00:01 reconcile: message``: the time, the level unless INFO, the module (or
    "kopf")."""

    def format(self, record: logging.LogRecord) -> str:
        level = "" if record.levelno == logging.INFO else f" {record.levelname}"
        source = record.name.partition(".")[0] if record.name.startswith("kopf") else record.name
        source = source.rsplit(".", 1)[-1] if source.startswith("lws_") else source
        text = f"{self.formatTime(record, '%H:%M:%S')}{level} {source}: {record.getMessage()}"
        return f"{text}\n{self.formatException(record.exc_info)}" if record.exc_info else text


class _KopfFilter(logging.Filter):
    """kopf's INFO lines (authentication, activities, each handler run) are its own chatter.
    Once it is stopping, so are its retries of the requests it abandons: a Ctrl-C during its
    start leaves some, logged as ERRORs ("Connector is closed"). Its other warnings and errors
    show."""

    stopping = False

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith("kopf"):
            return True
        message = record.getMessage()
        self.stopping = self.stopping or "Operator is stopping" in message
        if record.levelno < logging.WARNING:
            return False
        return not (self.stopping and message.startswith("Request attempt"))


class _DisplayHandler(logging.Handler):
    """Log lines go through the display, so that they scroll above the table, not through it."""

    def __init__(self, display: Display) -> None:
        super().__init__()
        self.display = display
        self.setFormatter(_CompactFormatter())
        self.addFilter(_KopfFilter())

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.display.note(self.format(record))
        except Exception:
            self.handleError(record)


def _configure_logging(display: Display) -> None:
    """make run's own logging: compact lines through the display (``lws-operator run`` keeps
    its own format)."""
    root = logging.getLogger()
    root.handlers[:] = [_DisplayHandler(display)]
    root.setLevel(logging.INFO)


async def _follow(
    kube: Kube,
    path: str,
    into: Objects,
    changed: asyncio.Event,
    listed: asyncio.Event,
    *,
    label_selector: str | None = None,
    field_selector: str | None = None,
) -> None:
    """Keep ``into`` equal to the objects at ``path``; set ``listed`` once they are, and
    ``changed`` on every change (and when this ends, so that its error is seen)."""
    try:
        async with contextlib.aclosing(
            follow_objects(kube, path, label_selector=label_selector, field_selector=field_selector)
        ) as updates:
            async for objs in updates:
                into.clear()
                into.update(objs)
                listed.set()
                changed.set()
    finally:
        changed.set()


async def show(
    kube: Kube, namespace: str, name: str, display: Display, *, with_kueue: bool = False
) -> None:
    """Show LWS ``name``, its pods and (``with_kueue``) its Workloads whenever what is shown
    changes (watches, no polling)."""
    sets: Objects = {}
    pods: Objects = {}
    workloads: Objects = {}
    changed = asyncio.Event()
    lists = (asyncio.Event(), asyncio.Event(), asyncio.Event())
    followers = [
        asyncio.create_task(
            _follow(
                kube,
                resource_path(c.API_VERSION, c.PLURAL, namespace=namespace),
                sets,
                changed,
                lists[0],
                field_selector=f"metadata.name={name}",
            )
        ),
        asyncio.create_task(
            _follow(
                kube,
                resource_path("v1", "pods", namespace=namespace),
                pods,
                changed,
                lists[1],
                label_selector=f"{c.SET_NAME_LABEL}={name}",
            )
        ),
    ]
    if with_kueue:
        path = resource_path(kueue_view.API_VERSION, "workloads", namespace=namespace)
        followers.append(asyncio.create_task(_follow(kube, path, workloads, changed, lists[2])))
    else:
        lists[2].set()
    shown: View | None = None
    try:
        while True:
            await changed.wait()
            changed.clear()
            for task in followers:
                if task.done():
                    task.result()  # raises what stopped it
            if not all(listed.is_set() for listed in lists):
                continue  # both listed once: no view of the pods without their LWS
            view = view_of(
                name,
                sets.get(f"{namespace}/{name}"),
                pods.values(),
                workloads.values() if with_kueue else None,
            )
            if view != shown:
                display.show(shown, view)
                shown = view
    finally:
        for task in followers:
            task.cancel()
        await asyncio.gather(*followers, return_exceptions=True)


async def _install(
    kube: Kube, display: Display, namespace: str, example: Path, with_kueue: bool, kubeconfig: Path
) -> str:
    """The CRD, the namespace and ``example``; returns the name of its LeaderWorkerSet. With
    Kueue, its queues first, and the example's LeaderWorkerSet queued."""
    applier = Applier(kube)
    # This waits until LWS objects are served and admitted: the operator then starts on a
    # served API, and the example is not refused with a 503.
    await install_lws_api(kube)
    display.note(f"installed {', '.join(p.name for p in CRDS)}")
    if await kube.get_or_none(resource_path("v1", "namespaces", name=namespace)) is None:
        await create_namespace(kube, namespace)
    docs = load_documents(example)
    if with_kueue:
        await applier.apply_all(
            [
                kueue.resource_flavor(QUEUE),
                kueue.cluster_queue(QUEUE, QUEUE, QUEUE_QUOTA),
                kueue.local_queue(QUEUE, namespace, QUEUE),
            ]
        )
        for doc in docs:
            if doc.get("kind") == c.KIND:
                doc.setdefault("metadata", {}).setdefault("labels", {})[kueue.QUEUE_LABEL] = QUEUE
        display.note(quota_note(kubeconfig))
    await applier.apply_all(docs, namespace=namespace)
    shown = example.relative_to(REPO) if example.is_relative_to(REPO) else example
    display.note(f"applied {shown} in namespace {namespace}")
    return str(next(d["metadata"]["name"] for d in docs if d["kind"] == "LeaderWorkerSet"))


def quota_note(kubeconfig: Path) -> str:
    """What make run KUEUE=1 says about the queue, with the command that raises its quota."""
    patch = (
        '[{"op": "replace", "path": "/spec/resourceGroups/0/flavors/0/resources/0/nominalQuota", '
        f'"value": {2 * GROUP_GPUS}}}]'
    )
    kubectl = binaries.bin_dir() / "kubectl"
    return (
        f"Kueue: ClusterQueue {QUEUE} has {GROUP_GPUS} nvidia.com/gpu, one group's worth; "
        "the example is queued to it (label kueue.x-k8s.io/queue-name), so one group runs and "
        "the other waits for quota. To let it start, raise the quota:\n"
        f"  {kubectl} --kubeconfig {kubeconfig.resolve()} patch clusterqueue {QUEUE} "
        f"--type json -p '{patch}'"
    )


async def run(
    kubeconfig: Path,
    operator_kubeconfig: Path,
    display: Display,
    *,
    namespace: str = "default",
    example: Path = EXAMPLE,
    with_kueue: bool = False,
    user_kubeconfig: Path | None = None,
) -> None:
    """Install the CRD and ``example`` (in ``namespace``), then start the operator and show the
    example's LeaderWorkerSet, until SIGINT or SIGTERM (at any step)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    stopped = asyncio.ensure_future(stop.wait())
    async with await Kube.connect(kubeconfig, user_agent="lws-operator-dev") as kube:
        setup = asyncio.create_task(
            _install(kube, display, namespace, example, with_kueue, user_kubeconfig or kubeconfig)
        )
        await asyncio.wait({setup, stopped}, return_when=asyncio.FIRST_COMPLETED)
        if not setup.done():
            setup.cancel()
            await asyncio.gather(setup, return_exceptions=True)
            return
        shower = asyncio.create_task(
            show(kube, namespace, setup.result(), display, with_kueue=with_kueue)
        )
        config = operator.OperatorConfig(kubeconfig=operator_kubeconfig, webhook_port=0)
        # kopf puts its own SIGINT/SIGTERM handlers in place of ours and then stops by itself.
        op = asyncio.create_task(operator.run(config, stop), name="operator")
        await asyncio.wait({op, shower, stopped}, return_when=asyncio.FIRST_COMPLETED)
        stop.set()
        shower.cancel()
        try:
            with contextlib.suppress(asyncio.CancelledError):
                await shower
        finally:
            display.close()
            await op


def _display(hint: str) -> Display:
    if sys.stdout.isatty():
        return TerminalDisplay(sys.stdout, hint, shutil.get_terminal_size)
    return LineDisplay(sys.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lws_testbed.devrun")
    parser.add_argument("--state-dir", type=Path, default=Path(".local/cluster"))
    parser.add_argument("--kubeconfig", type=Path, default=Path(".local/kubeconfig"))
    parser.add_argument("--namespace", default="default")
    parser.add_argument("--example", type=Path, default=EXAMPLE)
    parser.add_argument("--kueue", action="store_true", help="Kueue in the local cluster too")
    args = parser.parse_args(argv)
    external = os.environ.get("KUBECONFIG")
    if external and Path(external).resolve() != args.kubeconfig.resolve() and args.kueue:
        print(
            "error: make run KUEUE=1 starts a local cluster with Kueue; unset KUBECONFIG "
            f"(it points at {external})",
            file=sys.stderr,
        )
        return 1
    if external and Path(external).resolve() != args.kubeconfig.resolve():
        display = _display("Ctrl-C stops the operator")
        _configure_logging(display)
        display.note(f"using the cluster of KUBECONFIG={external} (no local cluster started)")
        asyncio.run(
            run(
                Path(external),
                Path(external),
                display,
                namespace=args.namespace,
                example=args.example,
            )
        )
        return 0
    if running := running_components(args.state_dir):
        print(
            f"a local cluster is already running ({', '.join(running)}); `make cluster-down` first"
        )
        return 1
    display = _display("Ctrl-C stops the operator and the local cluster")
    _configure_logging(display)
    display.note("starting the local cluster" + (" with Kueue" if args.kueue else "") + " ...")
    # The generated twins of crds/ (parsing 1 MB of YAML in Python takes seconds).
    options = kueue.KueueOptions(install_first=tuple(install_documents()))
    try:
        with LocalCluster(
            ClusterConfig(
                state_dir=args.state_dir,
                kubeconfig_out=args.kubeconfig,
                kueue=options if args.kueue else None,
            )
        ) as cluster:
            display.note(
                f"local cluster up in {cluster.started_seconds:.1f}s at {cluster.server}; "
                f"export KUBECONFIG={args.kubeconfig.resolve()}"
                + (f" (Kueue ready in {cluster.kueue_seconds:.1f}s)" if args.kueue else "")
            )
            asyncio.run(
                run(
                    cluster.kubeconfig(),
                    cluster.kubeconfig("lws-operator"),
                    display,
                    namespace=args.namespace,
                    example=args.example,
                    with_kueue=args.kueue,
                    user_kubeconfig=args.kubeconfig,
                )
            )
    except ClusterError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl-C while the cluster was starting: it is stopped
        pass
    display.note("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
