"""`make run` end to end: its own local cluster, the CRD, the operator and the seed's vLLM
example, whose two groups (4 pods on 8-GPU simulated nodes) come up; Ctrl-C stops it all."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

from lws_testbed.local import read_state

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("LWS_TEST_KUBECONFIG")), reason="make run starts a local cluster"
)

PODS = ["vllm-llama3-405b-0", "vllm-llama3-405b-0-1", "vllm-llama3-405b-1", "vllm-llama3-405b-1-1"]


def alive(pid: int) -> bool:
    return os.path.exists(f"/proc/{pid}")


async def test_make_run_brings_up_the_seed_example(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    state = tmp_path / "cluster"
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "lws_testbed.devrun",
        "--state-dir",
        str(state),
        "--kubeconfig",
        str(tmp_path / "kubeconfig"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=env,
    )
    assert proc.stdout is not None
    seen: list[str] = []

    async def until_ready() -> list[str]:
        """The last table printed once it says 2/2 groups with all 4 pods ready."""
        assert proc.stdout is not None
        table: list[str] = []
        while line := (await proc.stdout.readline()).decode():
            seen.append(line.rstrip())
            if line.startswith("vllm-llama3-405b: "):
                table = [line.strip()]
            elif line.startswith("  ") and table:
                table.append(line.strip())
                rows = {r.split()[0]: r.split()[-1] for r in table[2:]}
                if table[0].startswith("vllm-llama3-405b: 2/2") and rows == dict.fromkeys(
                    PODS, "yes"
                ):
                    return table
        raise AssertionError("make run ended early")

    try:
        table = await asyncio.wait_for(until_ready(), 120)
    except (TimeoutError, AssertionError) as e:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()
        raise AssertionError(f"{e}; output:\n" + "\n".join(seen[-60:])) from None
    assert any(line.startswith("local cluster up in") for line in seen)
    assert any("installed" in line and "leaderworkersets" in line for line in seen)
    nodes = {row.split()[3] for row in table[2:]}
    assert all(n.startswith("gpu-node-") for n in nodes) and len(nodes) == 4  # 8 GPUs each
    pids = [p["pid"] for p in (read_state(state) or {})["procs"]]

    proc.send_signal(signal.SIGINT)
    assert await asyncio.wait_for(proc.wait(), 60) == 0, "\n".join(seen[-30:])
    assert not [pid for pid in pids if alive(pid)]
