"""Groups for the planners' tests, built from real-looking pods and StatefulSets."""

from __future__ import annotations

from typing import Any

from lws_operator.api import constants as c
from lws_operator.plan.lws.groups import Group

CURRENT = "current"  # the revision key the tests call current
OLD = "old"


def leader_pod(index: int, *, ready: bool = True, key: str = CURRENT) -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"test-sample-{index}",
            "uid": f"leader-{index}",
            "labels": {c.WORKER_INDEX_LABEL: "0", c.REVISION_KEY: key},
        },
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def worker_sts(index: int, *, ready: bool = True, key: str = CURRENT) -> dict[str, Any]:
    return {
        "metadata": {"name": f"test-sample-{index}", "labels": {c.REVISION_KEY: key}},
        "spec": {"replicas": 1},
        "status": {
            "availableReplicas": 1 if ready else 0,
            "currentRevision": "r",
            "updateRevision": "r",
        },
    }


def group(
    index: int,
    *,
    ready: bool = True,
    updated: bool = True,
    workers: bool = True,
    workers_ready: bool | None = None,
    workers_updated: bool | None = None,
) -> Group:
    """Group ``index`` of an LWS of size 2: leader ready/updated (to CURRENT), and its worker
    StatefulSet (absent with ``workers=False``) ready/updated like the leader unless told."""
    leader = leader_pod(index, ready=ready, key=CURRENT if updated else OLD)
    if not workers:
        return Group(index, leader)
    w_ready = ready if workers_ready is None else workers_ready
    w_updated = updated if workers_updated is None else workers_updated
    return Group(index, leader, worker_sts(index, ready=w_ready, key=CURRENT if w_updated else OLD))
