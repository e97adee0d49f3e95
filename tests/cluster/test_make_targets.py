"""Every `make` target the README shows a user: each is a target of the Makefile, and each that
can run on this machine runs, the way a user types it, in a copy of the checkout (so that
`make clean` and the local cluster's state never touch the working tree's).

A target the README gains must be added to RUNS or NOT_HERE below, or this test fails."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("LWS_TEST_KUBECONFIG")), reason="starts local clusters of its own"
)

# Run below for real, in this order of appearance in the tests.
RUNS = {
    "help",
    "cluster-bins",
    "kueue-bins",
    "cluster-up",
    "cluster-status",
    "cluster-down",
    "clean",
}
# Run elsewhere, or not here; each still has to be a target `make -n` accepts.
NOT_HERE = {
    "run": "tests/cluster/test_make_run.py runs it",
    "test": "this test runs inside it (CI's .ci/run)",
    "test-cluster": "runs this test itself",
    "test-reliability": "runs the cluster suite (minutes); CI runs its fast subset in make test",
    "test-kueue": "runs tests/cluster/kueue twice (minutes); CI runs its fast subset in make test",
    "bench": "tests/cluster/test_bench_commands.py runs it small (BENCH_ARGS)",
    "bench-create": "tests/cluster/test_bench_commands.py runs it small (BENCH_ARGS)",
    "bench-scale": "tests/cluster/test_bench_commands.py runs it small (BENCH_ARGS)",
    "deploy": "needs an operator image in a cluster's runtime",
    "docker-build": "needs a Docker engine (none on the project's machines)",
    "docker-push": "needs a Docker engine and a registry",
    "e2e-up": "make test-e2e runs it (one real-node cluster per machine, after this suite)",
    "e2e-down": "make test-e2e runs it, then checks the host",
    "test-e2e": "make test runs it after this suite",
    "test-version": "make test runs it on 1.33 and 1.37 after this suite",
    "test-versions": "every cluster and e2e test on four Kubernetes versions (hours)",
    "bench-recovery-real": "tests/e2e/after_teardown runs it small (a real node of its own)",
}


def readme_targets() -> set[str]:
    """The words after `make` in the README, up to the first that is not a target name."""
    out: set[str] = set()
    for match in re.finditer(
        r"\bmake((?: [a-z][a-z0-9-]*(?![=\w]))+)", (REPO / "README.md").read_text()
    ):
        out.update(match.group(1).split())
    return out - {"and"}  # "Go >= 1.26 and make (nothing else ...)"


def make(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "MAKEFLAGS", "MAKELEVEL")}
    proc = subprocess.run(
        ["make", "--no-print-directory", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"make {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
        )
    return proc


@pytest.fixture
def checkout(tmp_path: Path) -> Iterator[Path]:
    """A copy of the checkout's files (modification times kept, so make sees the virtualenv as
    up to date) with `.venv` a link to this one's: no venv is built, and `make clean` removes
    only the link."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    copy = tmp_path / "checkout"
    for name in filter(None, listed):
        src = REPO / name.decode()
        if src.is_file():
            dst = copy / name.decode()
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    (copy / ".venv").symlink_to(REPO / ".venv")
    for project in ("pyproject.toml", "testbed/pyproject.toml"):
        os.utime(copy / project, (0, 0))  # never older than the venv: make must not rebuild it
    yield copy
    make(copy, "cluster-down", check=False)  # whatever a failed assertion left running


def test_every_target_the_readme_shows_exists_and_is_classified() -> None:
    shown = readme_targets()
    unclassified = shown - RUNS - set(NOT_HERE)
    assert not unclassified, f"README shows make targets this test does not know: {unclassified}"
    for target in sorted(shown):
        make(REPO, "-n", target, "IMG=lws-operator:check")


def test_the_readme_targets_run_here(checkout: Path) -> None:
    assert "cluster-up" in make(checkout, "help").stdout

    bins = make(checkout, "cluster-bins").stdout.strip().splitlines()[-1]
    assert (Path(bins) / "kube-apiserver").is_file(), bins

    status = make(checkout, "cluster-status", check=False)
    assert status.returncode != 0 and "not running" in status.stdout, status

    up = make(checkout, "cluster-up").stdout
    assert "local cluster up in" in up, up
    kubeconfig = checkout / ".local" / "kubeconfig"
    nodes = subprocess.run(
        [
            str(Path(bins) / "kubectl"),
            "--kubeconfig",
            str(kubeconfig),
            "get",
            "nodes",
            "-o",
            "name",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.split()
    assert len(nodes) == 8 and all(n.startswith("node/gpu-node-") for n in nodes), nodes
    assert "running: " in make(checkout, "cluster-status").stdout

    again = make(checkout, "cluster-up", check=False)
    assert again.returncode != 0 and "already running" in again.stdout, again

    assert "stopped: " in make(checkout, "cluster-down").stdout
    assert make(checkout, "cluster-status", check=False).returncode != 0

    # With Kueue: built (the cache), running with the cluster, its API served, stopped with it.
    kueue_bins = make(checkout, "kueue-bins").stdout.strip().splitlines()[-1]
    assert (Path(kueue_bins) / "kueue-manager").is_file(), kueue_bins
    up = make(checkout, "cluster-up", "KUEUE=1").stdout
    assert "Kueue v" in up and "running" in up, up
    queues = subprocess.run(
        [
            str(Path(bins) / "kubectl"),
            "--kubeconfig",
            str(kubeconfig),
            "get",
            "clusterqueues,workloads.kueue.x-k8s.io,leaderworkersets",
            "-A",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert queues.returncode == 0, queues.stderr
    assert "kueue" in make(checkout, "cluster-status").stdout
    assert "kueue" in make(checkout, "cluster-down").stdout

    # clean stops a running cluster too, then removes the local state and the virtualenv link.
    make(checkout, "cluster-up")
    make(checkout, "clean")
    assert not (checkout / ".local").exists() and not (checkout / ".venv").exists()
    assert (REPO / ".venv" / "bin" / "python").exists()
    leftover = subprocess.run(
        ["pgrep", "-f", str(checkout / ".local")], capture_output=True, text=True
    ).stdout.split()
    assert not leftover, f"processes of the cleaned cluster still run: {leftover}"
