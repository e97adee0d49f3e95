"""``kubectl lws status`` and ``plan`` with Kueue: each group's Workload and state, and the
quota a rollout's surge groups need against the ClusterQueue's free quota."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import yaml

from lws_operator.kube.client import Kube
from lws_testbed.local import LocalCluster
from tests.cluster.controller.helpers import lws_path, wait_lws
from tests.cluster.kueue.helpers import admitted, queues, wait_workloads
from tests.cluster.kueue.test_quota_gating import GROUP_GPUS, gpu_lws, new_image, pending


def kubectl_lws(kubeconfig: Path, namespace: str, *args: str) -> str:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "lws_operator.kubectl",
            "--kubeconfig",
            str(kubeconfig),
            "-n",
            namespace,
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


async def test_status_and_plan_show_kueue(
    kube: Kube, namespace: str, kueue_cluster: LocalCluster, tmp_path: Path
) -> None:
    kubeconfig = kueue_cluster.kubeconfig()
    async with queues(kube, namespace, {"cpu": 64, "nvidia.com/gpu": GROUP_GPUS}) as q:
        body = gpu_lws("g", q.local_queue, 2)
        lws = await kube.create(lws_path(namespace), body)
        uid = lws["metadata"]["uid"]
        await wait_workloads(
            kube,
            namespace,
            uid,
            lambda w: (
                sorted(w) == [0, 1]
                and admitted(w[0]) != admitted(w[1])
                and any(pending(x) for x in w.values())
            ),
            "one group admitted, one pending",
        )
        await wait_lws(
            kube,
            namespace,
            "g",
            lambda o: (o.get("status") or {}).get("readyReplicas") == 1,
            "1 group ready",
        )
        status = await asyncio.to_thread(kubectl_lws, kubeconfig, namespace, "status", "g")
        header, *rows = status.splitlines()[1:]
        assert "WORKLOAD" in header and "KUEUE" in header, status
        states = {row.split()[0]: row for row in rows}
        assert any("admitted" in r for r in states.values()), status
        waiting = "pending (Pending: couldn't assign flavors"
        short = "insufficient unused quota for nvidia.com/gpu"
        assert any(waiting in r and short in r for r in states.values()), status

        # A rollout with one surge group: 16 more GPUs than the queue has free.
        new = yaml.safe_load(yaml.safe_dump(body))
        new["spec"]["rolloutStrategy"] = {
            "rollingUpdateConfiguration": {"maxUnavailable": 0, "maxSurge": 1}
        }
        changed = new_image(body)["spec"]["leaderWorkerTemplate"]["workerTemplate"]
        new["spec"]["leaderWorkerTemplate"]["workerTemplate"] = changed
        new_file = tmp_path / "new.yaml"
        new_file.write_text(yaml.safe_dump(new))
        plan = await asyncio.to_thread(
            kubectl_lws, kubeconfig, namespace, "plan", "g", "-f", str(new_file)
        )
        assert "Kueue: 1 surge group(s) need cpu=2, nvidia.com/gpu=16" in plan, plan
        gpus = f"nvidia.com/gpu: need 16, free 0 of 16 in ClusterQueue {q.cluster_queue}"
        assert f"{gpus}  <- not enough" in plan, plan


async def test_without_a_queue_status_is_unchanged(
    kube: Kube, namespace: str, kueue_cluster: LocalCluster
) -> None:
    body = gpu_lws("plain", "unused", 1)
    del body["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
    await kube.create(lws_path(namespace), body)
    await wait_lws(
        kube,
        namespace,
        "plain",
        lambda o: (o.get("status") or {}).get("readyReplicas") == 1,
        "ready without Kueue",
    )
    status = await asyncio.to_thread(
        kubectl_lws, kueue_cluster.kubeconfig(), namespace, "status", "plain"
    )
    assert "KUEUE" not in status and "WORKLOAD" not in status, status
