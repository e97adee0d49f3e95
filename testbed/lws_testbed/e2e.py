"""``make e2e-up``, ``make e2e-down`` and ``make test-e2e``: the local cluster with a real node,
the operator installed in it the way a user installs it, and the e2e run against it.

    python -m lws_testbed.e2e up   [--state-dir D] [--kubeconfig K]
    python -m lws_testbed.e2e down [--state-dir D] [--kubeconfig K]
    python -m lws_testbed.e2e test [--state-dir D] [--kubeconfig K] [-- PYTEST_ARGS...]

``up`` starts the cluster detached (``--real-nodes 1`` with the operator's image imported),
then runs ``make deploy`` of the e2e overlay with that image, the command users run, and says
how to reach it. ``test`` is up, ``tests/cluster`` and ``tests/e2e`` against it
(``LWS_TEST_OPERATOR=external``), down (which restores the host and fails on what still
differs), and the host check after teardown; it prints how long each took.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from lws_testbed import binaries, kube_versions, realnode
from lws_testbed.local import (
    ClusterConfig,
    ClusterError,
    LocalCluster,
    read_state,
    running_components,
    stop_detached,
)
from lws_testbed.realnode import images, preflight

REPO = Path(__file__).resolve().parents[2]
OVERLAY = "testbed/lws_testbed/deploy/e2e"  # the kind overlay, pinned to the real node
# The cluster suite against the deployed operator, and the e2e tests; not what never touches
# the operator (the CRD and the API server alone, kustomize builds: make test runs those).
E2E_SELECTION = (
    "tests/cluster",
    "tests/e2e",
    "--ignore=tests/e2e/after_teardown",
    "--ignore=tests/cluster/api",
    "--deselect=tests/cluster/deploy/test_deploy.py::test_every_overlay_builds",
    "--deselect=tests/cluster/deploy/test_deploy.py::test_the_service_monitor_scrapes",
    "-m",
    "not reliability_full",
    "--durations=15",
)


def _kubectl(kubeconfig: Path) -> str:
    return f"{binaries.bin_dir() / 'kubectl'} --kubeconfig {kubeconfig.resolve()}"


def deploy(kubeconfig: Path, image: str) -> None:
    """``make deploy`` of the e2e overlay with ``image`` (raises CalledProcessError)."""
    subprocess.run(
        [
            "make",
            "--no-print-directory",
            "deploy",
            f"OVERLAY={OVERLAY}",
            f"IMG={image}",
            f"KUBECTL={_kubectl(kubeconfig)}",
        ],
        cwd=REPO,
        check=True,
    )


def up(state_dir: Path, kubeconfig: Path) -> None:
    kube_versions.selected()  # one line for a version outside KUBE_VERSIONS
    if reason := preflight.cannot_run_real_node():
        raise ClusterError(f"this machine cannot run a real node: {reason}")
    if running := running_components(state_dir):
        raise ClusterError(
            f"a local cluster is already running ({', '.join(running)}); make e2e-down first"
        )
    operator = images.operator_image()
    config = ClusterConfig(
        state_dir=state_dir,
        kubeconfig_out=kubeconfig,
        die_with_parent=False,
        real_nodes=1,
        images=(operator,),
    )
    cluster = LocalCluster(config)
    cluster.start()
    print(
        f"local cluster up in {cluster.started_seconds:.1f}s: {cluster.server}, kwok nodes and "
        f"the real node {realnode.NODE_NAME}; images: "
        + ", ".join(i.ref for i in cluster.node_images),
        flush=True,
    )
    try:
        deploy(kubeconfig, operator.ref)
    except subprocess.CalledProcessError:
        stop_detached(state_dir)
        raise ClusterError("make deploy failed (see above); the cluster was stopped") from None
    kubectl = _kubectl(kubeconfig)
    print(
        f"\nthe operator runs in the cluster (image {operator.ref}, 2 replicas on "
        f"{realnode.NODE_NAME}):\n"
        f"  export KUBECONFIG={kubeconfig.resolve()}\n"
        f"  {kubectl} -n lws-system get pods -o wide\n"
        f"  {kubectl} -n lws-system logs deploy/lws-controller-manager\n"
        f"  real-node pods: nodeSelector and toleration {realnode.NODE_LABEL}=true "
        "(lws_testbed.realnode.pin_to_real_node); images: imagePullPolicy Never\n"
        f"  logs of the node and control plane: {state_dir.resolve() / 'logs'}\n"
        "  make e2e-down stops it all and restores the host",
        flush=True,
    )
    memory = cluster_memory(state_dir)
    print(f"  resident memory now: {sum(memory.values()):.0f} MiB", flush=True)


def _rss_mib(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def cluster_memory(state_dir: Path) -> dict[str, float]:
    """Resident memory (MiB) of each component of the running cluster, of containerd's shims
    together, and of the containers (the kubelet's cgroups: the operator's pods and the
    tests'), from the host."""
    state = read_state(state_dir) or {}
    out = {p["name"]: _rss_mib(p["pid"]) for p in state.get("procs", [])}
    socket = str((state.get("real_node") or {}).get("containerd_socket", "")).encode()
    shims = 0.0
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes()
            except OSError:
                continue
            if socket and b"containerd-shim" in cmdline and socket in cmdline:
                shims += _rss_mib(int(proc.name))
    out["containerd shims"] = shims
    stat = Path("/sys/fs/cgroup/memory/kubepods/memory.stat")
    if stat.is_file():
        fields = dict(line.split() for line in stat.read_text().splitlines())
        out["containers (kubepods rss)"] = int(fields.get("total_rss", 0)) / 2**20
    return out


def down(state_dir: Path) -> None:
    stopped = stop_detached(state_dir)  # ClusterError when the host was not restored
    print(f"stopped: {', '.join(stopped)}" if stopped else "no local cluster was running")


def _pytest(state_dir: Path, kubeconfig: Path, *args: str) -> int:
    env = {
        **os.environ,
        "LWS_TEST_KUBECONFIG": str(kubeconfig.resolve()),
        "LWS_TEST_OPERATOR": "external",
        "LWS_E2E_STATE": str(state_dir.resolve()),
    }
    return subprocess.run([sys.executable, "-m", "pytest", *args], cwd=REPO, env=env).returncode


def test(state_dir: Path, kubeconfig: Path, pytest_args: list[str]) -> int:
    times: dict[str, float] = {}
    t = time.monotonic()
    try:
        up(state_dir, kubeconfig)
    except (ClusterError, images.ImageError, binaries.BinariesError):
        if running_components(state_dir):
            down(state_dir)
        raise
    times["e2e-up"] = time.monotonic() - t
    t = time.monotonic()
    rc = _pytest(state_dir, kubeconfig, *E2E_SELECTION, *pytest_args)
    times["tests"] = time.monotonic() - t
    memory = cluster_memory(state_dir)
    print(
        f"memory of the real-node cluster: {sum(memory.values()):.0f} MiB ("
        + ", ".join(f"{k} {v:.0f}" for k, v in memory.items())
        + ")",
        flush=True,
    )
    t = time.monotonic()
    try:
        down(state_dir)
    except ClusterError as e:
        print(f"error: {e}", file=sys.stderr)
        rc = rc or 1
    times["e2e-down"] = time.monotonic() - t
    rc = _pytest(state_dir, kubeconfig, "tests/e2e/after_teardown", *pytest_args) or rc
    print("test-e2e: " + ", ".join(f"{k} {v:.0f}s" for k, v in times.items()), flush=True)
    return rc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lws_testbed.e2e")
    parser.add_argument("command", choices=("up", "down", "test"))
    parser.add_argument("--state-dir", type=Path, default=Path(".local/cluster"))
    parser.add_argument("--kubeconfig", type=Path, default=Path(".local/kubeconfig"))
    parser.add_argument("pytest_args", nargs="*", help="after --: passed to pytest (test)")
    # Everything after "--" goes to pytest as it is (argparse alone would refuse it once the
    # options sit between the command and "--").
    argv = sys.argv[1:] if argv is None else argv
    cut = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:cut])
    args.pytest_args += argv[cut + 1 :]
    try:
        if args.command == "up":
            up(args.state_dir, args.kubeconfig)
        elif args.command == "down":
            down(args.state_dir)
        else:
            return test(args.state_dir, args.kubeconfig, args.pytest_args)
    except (ClusterError, images.ImageError, binaries.BinariesError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
