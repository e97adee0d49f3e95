"""The local control plane's own promises: fast, clear failures and no process left behind.

These start clusters of their own, so they run only where this project builds the binaries
(not against LWS_TEST_KUBECONFIG)."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_testbed.local import ClusterConfig, ClusterError, LocalCluster, read_state
from lws_testbed.nodes import GPU_RESOURCE, RACK_LABEL, NodeShape

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("LWS_TEST_KUBECONFIG")), reason="tests the local control plane harness"
)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie has exited; it only waits for its parent to reap it.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_busy_port_is_one_line_naming_the_port(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        cluster = LocalCluster(ClusterConfig(state_dir=tmp_path / "c", apiserver_port=port))
        with pytest.raises(ClusterError) as err:
            cluster.start()
    assert str(err.value) == f"port {port} on 127.0.0.1 is busy: cannot start kube-apiserver"
    assert cluster.procs == []


def test_dying_component_fails_start_fast_with_its_log_tail(tmp_path: Path) -> None:
    cluster = LocalCluster(
        ClusterConfig(
            state_dir=tmp_path / "c",
            extra_args={"kube-apiserver": ["--no-such-flag=1"]},
        )
    )
    with pytest.raises(ClusterError) as err:
        cluster.start()
    first, *tail = str(err.value).splitlines()
    assert first.startswith("kube-apiserver exited with code 1 during start-up; last lines of")
    assert any("unknown flag: --no-such-flag" in line for line in tail), err.value
    # etcd had started; nothing is left running.
    assert cluster.procs == []


def test_detached_cluster_up_and_down_leave_no_process(tmp_path: Path) -> None:
    state = tmp_path / "state"
    kubeconfig = tmp_path / "kubeconfig"
    cli = [sys.executable, "-m", "lws_testbed"]
    args = ["--state-dir", str(state), "--kubeconfig", str(kubeconfig), "--nodes", "2"]
    up = subprocess.run([*cli, "up", *args], capture_output=True, text=True, timeout=180)
    assert up.returncode == 0, up.stderr
    assert "2 kwok nodes" in up.stdout and kubeconfig.exists()
    pids = [p["pid"] for p in (read_state(state) or {})["procs"]]
    assert len(pids) == 5 and all(alive(p) for p in pids)
    again = subprocess.run([*cli, "up", *args], capture_output=True, text=True, timeout=60)
    assert again.returncode == 1 and "already running" in again.stdout
    down = subprocess.run([*cli, "down", *args], capture_output=True, text=True, timeout=120)
    assert down.returncode == 0, down.stderr
    assert not [p for p in pids if alive(p)]
    assert read_state(state) is None


def test_node_shape_is_configurable(tmp_path: Path) -> None:
    shape = NodeShape(count=3, gpus=4, zones=1, racks_per_zone=3)

    async def list_nodes(kubeconfig: Path) -> list[dict[str, Any]]:
        async with await Kube.connect(kubeconfig) as kube:
            items: list[dict[str, Any]] = (await kube.list(resource_path("v1", "nodes")))["items"]
            return items

    with LocalCluster(ClusterConfig(state_dir=tmp_path / "c", nodes=shape)) as cluster:
        nodes = asyncio.run(list_nodes(cluster.kubeconfig()))
    assert len(nodes) == 3
    assert {n["status"]["allocatable"][GPU_RESOURCE] for n in nodes} == {"4"}
    assert {n["metadata"]["labels"][RACK_LABEL] for n in nodes} == {"rack-0", "rack-1", "rack-2"}
