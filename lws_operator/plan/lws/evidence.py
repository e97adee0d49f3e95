"""What a group's failure leaves to read, taken before the group is recreated (issue 16,
item 3): recreating deletes every pod, and with them restart counts and ``kubectl logs
--previous``.

For each member pod (the culprit first): every container and init container that terminated
(``lastState.terminated`` after a restart, or ``state.terminated`` with a non-zero exit code)
with its exit code, reason, signal, termination message, restart count and node; a deleted
pod without such a container is recorded as deleted. The log tails of the first few are read
through the API (``pods/<name>/log``, ``previous`` when the container has restarted since),
bounded in lines and bytes by the request itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from lws_operator.plan.lws.history import MESSAGE_MAX, ContainerFailure, Limits, tail
from lws_operator.plan.meta import is_deleting, name_of

Obj = Mapping[str, Any]
# Records per recreation: a group of 64 crash-looping pods keeps the first ones.
FAILURES_MAX = 8


@dataclass(frozen=True)
class LogRequest:
    """The log tail to read of one failed container: ``failures[index]`` of the record."""

    index: int
    pod: str
    container: str
    previous: bool
    """The terminated run is the previous one (the container was restarted since)."""

    def query(self, limits: Limits) -> dict[str, str | int | bool]:
        # tailLines picks the last lines; limitBytes bounds what the kubelet sends of them
        # (counted from the first), so it is generous: the cut to ``log_tail_bytes`` from the
        # end is made here (``log_tail``).
        return {
            "container": self.container,
            "previous": self.previous,
            "tailLines": max(1, limits.log_tail_lines),
            "limitBytes": transfer_limit(limits),
        }


def transfer_limit(limits: Limits) -> int:
    """The most bytes one log read transfers (and holds in memory)."""
    return max(65536, 16 * limits.log_tail_bytes)


def _terminated(status: Obj) -> tuple[Obj, bool] | None:
    """(the terminated state to report, whether it is the previous run) of one container
    status, if it failed: restarted since (lastState), or exited non-zero (state)."""
    last = (status.get("lastState") or {}).get("terminated")
    if isinstance(last, dict) and int(status.get("restartCount") or 0) > 0:
        state = status.get("state") or {}
        # Still terminated (not restarted yet): the current run is the one to read.
        current = state.get("terminated")
        if isinstance(current, dict):
            return current, False
        return last, True
    current = (status.get("state") or {}).get("terminated")
    if isinstance(current, dict) and int(current.get("exitCode") or 0) != 0:
        return current, False
    return None


def _message(value: Any) -> str | None:
    return str(value)[:MESSAGE_MAX] if value else None


def pod_failures(pod: Obj) -> list[tuple[ContainerFailure, bool]]:
    """The failed containers of one pod, each with whether its log is the previous run's."""
    node = (pod.get("spec") or {}).get("nodeName")
    status = pod.get("status") or {}
    out = []
    for key, init in (("initContainerStatuses", True), ("containerStatuses", False)):
        for cs in status.get(key) or []:
            if not isinstance(cs, dict) or (found := _terminated(cs)) is None:
                continue
            term, previous = found
            out.append(
                (
                    ContainerFailure(
                        pod=name_of(pod),
                        container=str(cs.get("name") or ""),
                        init=init,
                        node=str(node) if node else None,
                        exit_code=term.get("exitCode"),
                        reason=term.get("reason"),
                        signal=term.get("signal") or None,
                        message=_message(term.get("message")),
                        restart_count=int(cs.get("restartCount") or 0),
                        finished_at=term.get("finishedAt"),
                    ),
                    previous,
                )
            )
    if not out and (is_deleting(pod) or status.get("phase") == "Failed"):
        failed = status.get("phase") == "Failed"  # then deleted: the failure is the evidence
        reason = str(status.get("reason") or "failed") if failed else "deleted"
        out.append(
            (
                ContainerFailure(
                    pod=name_of(pod),
                    node=str(node) if node else None,
                    reason=reason,
                    message=_message(status.get("message")),
                ),
                False,
            )
        )
    return out


def collect(
    members: Sequence[Obj],
    culprit: str,
    limits: Limits,
    unreachable: Mapping[str, str] | None = None,
) -> tuple[tuple[ContainerFailure, ...], tuple[LogRequest, ...]]:
    """The evidence of a group about to be recreated, and the log tails to read for it.
    ``unreachable``: pod name → why its node's kubelet cannot answer (plan/lws/nodehealth.py):
    no read is tried there (it would only wait for the timeout)."""
    unreachable = unreachable or {}
    ordered = sorted(members, key=lambda p: name_of(p) != culprit)
    failures: list[ContainerFailure] = []
    logs: list[LogRequest] = []
    reading = limits.log_tail_lines > 0 and limits.log_tail_bytes > 0
    for pod in ordered:
        for failure, previous in pod_failures(pod):
            if len(failures) == FAILURES_MAX:
                break
            if failure.container and failure.pod in unreachable:
                failure = replace(failure, log_error=log_unavailable(unreachable[failure.pod]))
            elif reading and failure.container and len(logs) < limits.log_tails_per_recreation:
                logs.append(LogRequest(len(failures), failure.pod, failure.container, previous))
            failures.append(failure)
    if not failures:
        failures.append(ContainerFailure(pod=culprit, reason="deleted"))  # gone already
    return tuple(failures), tuple(logs)


def log_tail(raw: bytes, limits: Limits) -> str:
    return tail(
        raw.decode(errors="replace"), lines=limits.log_tail_lines, max_bytes=limits.log_tail_bytes
    )


def log_unavailable(reason: str) -> str:
    """How a log that could not be read is recorded (kwok serves none; a node may be gone)."""
    return f"log unavailable: {' '.join(reason.split())[:300]}"
