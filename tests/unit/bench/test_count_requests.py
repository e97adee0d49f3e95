"""The benchmarks count a controller's API requests from the audit log, including the files
the API server rotated away at 100 MB (an 8,000-pod run fills several)."""

from __future__ import annotations

import json
from pathlib import Path

from bench.compare import count_requests


def event(audit_id: str, user: str, verb: str, resource: str, at: str, stage: str) -> str:
    return json.dumps(
        {
            "auditID": audit_id,
            "stage": stage,
            "verb": verb,
            "user": {"username": user},
            "objectRef": {"resource": resource},
            "requestReceivedTimestamp": at,
        },
        separators=(",", ":"),  # as the API server writes it
    )


def test_rotated_files_are_counted_and_each_request_once(tmp_path: Path) -> None:
    rotated = tmp_path / "audit-2026-12-02T15-06-46.260.log"
    rotated.write_text(
        "\n".join(
            [
                event(
                    "a", "lws-operator", "create", "pods", "2026-12-02T15:00:01Z", "ResponseStarted"
                ),
                event(
                    "a",
                    "lws-operator",
                    "create",
                    "pods",
                    "2026-12-02T15:00:01Z",
                    "ResponseComplete",
                ),
                event("b", "someone", "create", "pods", "2026-12-02T15:00:02Z", "ResponseComplete"),
            ]
        )
        + "\n"
    )
    current = tmp_path / "audit.log"
    current.write_text(
        event("c", "lws-operator", "patch", "pods", "2026-12-02T15:07:00Z", "ResponseComplete")
        + "\n"
        + event("d", "lws-operator", "get", "pods", "2026-12-02T16:00:00Z", "ResponseComplete")
        + "\n"
    )
    lo = 1796223600.0  # 2026-12-02T15:00:00Z
    by_verb, by_resource = count_requests(current, "lws-operator", {"w": (lo, lo + 600)})
    assert by_verb == {"w": {"create": 1, "patch": 1, "total": 2}}
    assert by_resource == {"w": {"create pods": 1, "patch pods": 1}}
