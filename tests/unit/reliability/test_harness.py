"""The pure parts of the reliability harness (tests/cluster/reliability/harness.py)."""

from __future__ import annotations

from lws_operator.api import constants as c
from tests.cluster.reliability.harness import group_uids, tracebacks

LOG = """\
2026-11-30 18:00:00,000 INFO kopf.objects: Handler 'lws_events' succeeded.
2026-11-30 18:00:01,000 ERROR lws_operator.controller.runtime.queue: reconcile failed (attempt 1)
Traceback (most recent call last):
  File "x.py", line 1, in f
    raise ValueError("boom")
ValueError: boom
2026-11-30 18:00:02,000 INFO kopf.objects: Handler 'lws_events' succeeded.
"""


def test_tracebacks_are_cut_at_the_next_log_line() -> None:
    (found,) = tracebacks(LOG)
    assert found.startswith("2026-11-30 18:00:01,000 ERROR")
    assert found.endswith("ValueError: boom")
    assert tracebacks(LOG.replace("Traceback", "Trace")) == []


def test_group_uids_leave_out_other_groups_and_terminating_pods() -> None:
    def pod(name: str, group: str, uid: str, deleting: bool = False) -> dict[str, object]:
        meta: dict[str, object] = {
            "name": name,
            "uid": uid,
            "labels": {c.GROUP_INDEX_LABEL: group},
        }
        if deleting:
            meta["deletionTimestamp"] = "2026-11-30T18:00:00Z"
        return {"metadata": meta}

    pods = {
        "a-0": pod("a-0", "0", "u0"),
        "a-0-1": pod("a-0-1", "0", "u01", deleting=True),
        "a-1": pod("a-1", "1", "u1"),
    }
    assert group_uids(pods, 0) == {"a-0": "u0"}
