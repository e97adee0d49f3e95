"""Kueue's view for ``kubectl lws``: Workloads by group, their state, and quota for surge
groups against a ClusterQueue (from objects as Kueue v0.19.2 writes them)."""

from __future__ import annotations

import datetime
from typing import Any

from lws_operator import kueue
from lws_operator.kubectl.common import status_rows
from tests.unit.test_kubectl_lws import LWS, pod

UID = "lws-uid"
NOW = datetime.datetime(2026, 1, 1, 12, 0, 0, tzinfo=datetime.UTC)


def workload(index: int, *conditions: tuple[str, str, str, str], active: bool = True) -> Any:
    return {
        "metadata": {
            "name": f"leaderworkerset-x-{index}-abcde",
            "annotations": {kueue.WORKLOAD_INDEX_ANNOTATION: str(index)},
            "ownerReferences": [{"kind": "LeaderWorkerSet", "name": "x", "uid": UID}],
        },
        "spec": {"active": active, "queueName": "lq"},
        "status": {
            "conditions": [
                {"type": t, "status": s, "reason": r, "message": m} for t, s, r, m in conditions
            ]
        },
    }


ADMITTED = workload(
    0, ("QuotaReserved", "True", "QuotaReserved", ""), ("Admitted", "True", "Admitted", "")
)
PENDING = workload(
    1,
    (
        "QuotaReserved",
        "False",
        "Pending",
        "couldn't assign flavors to pod set main: insufficient quota for nvidia.com/gpu in "
        "flavor gpu, request > maximum capacity (32 > 16)",
    ),
)
PREEMPTED = workload(
    2,
    ("QuotaReserved", "False", "Pending", ""),
    ("Evicted", "True", "Preempted", "Preempted to accommodate a workload"),
    ("Preempted", "True", "InClusterQueue", "Preempted to accommodate a workload (UID: u)"),
)


def test_workloads_by_group_only_of_this_lws() -> None:
    other = workload(0)
    other["metadata"]["ownerReferences"][0]["uid"] = "someone-else"
    assert kueue.group_workloads([ADMITTED, PENDING, other], UID) == {0: ADMITTED, 1: PENDING}


def test_states_say_what_kueue_says() -> None:
    assert kueue.workload_state(ADMITTED) == "admitted"
    assert kueue.workload_state(PENDING) == (
        "pending (Pending: couldn't assign flavors to pod set main: insufficient quota for "
        "nvidia.com/gpu in flavor gpu, request > maximum capacity (32 > 16))"
    )
    assert kueue.workload_state(PREEMPTED).startswith("preempted (InClusterQueue: Preempted")
    evicted = workload(0, ("Evicted", "True", "PodsReadyTimeout", "Exceeded the timeout"))
    assert kueue.workload_state(evicted) == "evicted (PodsReadyTimeout: Exceeded the timeout)"
    assert kueue.workload_state(workload(0, active=False)) == "deactivated"
    assert kueue.workload_state(None) == "-"


def test_status_adds_workload_columns_only_with_kueue() -> None:
    pods = [pod("x-0", 0, 0), pod("x-0-1", 0, 1), pod("x-0-2", 0, 2)]
    without = status_rows(LWS, pods, [], {}, NOW)
    assert "KUEUE" not in without[0]
    rows = status_rows(LWS, pods, [], {}, NOW, {0: ADMITTED, 1: PENDING, 2: PREEMPTED})
    header = rows[0]
    assert header[-3:] == ["WORKLOAD", "KUEUE", "LAST RECREATION"]
    by_group = {r[0]: dict(zip(header, r, strict=True)) for r in rows[1:]}
    assert by_group["0"]["KUEUE"] == "admitted"
    assert by_group["0"]["WORKLOAD"] == "leaderworkerset-x-0-abcde"
    assert by_group["1"]["KUEUE"].startswith("pending (Pending: couldn't assign flavors")
    assert by_group["1"]["LEADER"] == "0/1 (missing)"
    assert by_group["2"]["KUEUE"].startswith("preempted")
    # The other columns are what they are without Kueue.
    assert [r[: len(without[0]) - 1] for r in without] == [
        [c for c in r if c not in (r[-3], r[-2])][: len(without[0]) - 1] for r in rows
    ]


def cluster_queue(gpu_quota: str, reserved: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "gpu"},
        "spec": {
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "nvidia.com/gpu"],
                    "flavors": [
                        {
                            "name": "gpu",
                            "resources": [
                                {"name": "cpu", "nominalQuota": "128"},
                                {"name": "nvidia.com/gpu", "nominalQuota": gpu_quota},
                            ],
                        }
                    ],
                }
            ]
        },
        "status": {
            "flavorsReservation": [
                {
                    "name": "gpu",
                    "resources": [
                        {"name": "cpu", "total": "8"},
                        {"name": "nvidia.com/gpu", "total": reserved},
                    ],
                }
            ]
        },
    }


def test_free_quota_is_nominal_minus_reserved() -> None:
    quota = kueue.cluster_queue_quota(cluster_queue("32", "16"))
    assert {k: (str(v.nominal), str(v.reserved), str(v.free)) for k, v in quota.items()} == {
        "cpu": ("128", "8", "120"),
        "nvidia.com/gpu": ("32", "16", "16"),
    }


def test_surge_quota_against_the_cluster_queue() -> None:
    group = {"cpu": "2", "nvidia.com/gpu": "16"}
    fits = kueue.surge_quota_lines(group, 1, "gpu", cluster_queue("32", "16"))
    assert fits[0] == (
        "Kueue: 1 surge group(s) need cpu=2, nvidia.com/gpu=16 beyond the groups' own quota"
    )
    assert "  nvidia.com/gpu: need 16, free 16 of 32 in ClusterQueue gpu" in fits
    assert not any("not enough" in line for line in fits)
    short = kueue.surge_quota_lines(group, 2, "gpu", cluster_queue("32", "16"))
    assert any(line.endswith("<- not enough") and "need 32, free 16" in line for line in short)
    assert "wait (gated)" in short[-1]
    uncovered = kueue.surge_quota_lines({"example.com/tpu": "4"}, 1, "gpu", cluster_queue("1", "0"))
    assert any("not covered by ClusterQueue gpu" in line for line in uncovered)
    assert kueue.surge_quota_lines(group, 0, "gpu", None) == [
        "Kueue: no surge group, so no quota beyond what the groups hold"
    ]
