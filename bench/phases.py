"""Where a group recovery's seconds go: the phases of each pod, as a watch on the group's pods
sees them (bench/recovery_real.py).

The API's own timestamps (a container's ``finishedAt``, a condition's ``lastTransitionTime``,
``deletionTimestamp``) have a resolution of one second, too coarse for phases of tens of
milliseconds; so each phase is timed when a watch, started before the failure, first shows it
(on loopback, a few milliseconds after the write). From the failure, for the old pods:
the kubelet's report of the exit, the controller's first write (the first old pod marked for
deletion), each old pod gone; for each new pod: created, scheduled, its sandbox ready (the
``PodReadyToStartContainers`` condition), its container started, Ready.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# The group's phases, from the failure: each the time its last pod reached it (the group waits
# for its slowest member), except the first two, which one pod marks.
GROUP_PHASES = (
    "exit_seen_s",
    "react_s",
    "old_gone_s",
    "created_s",
    "scheduled_s",
    "sandbox_s",
    "started_s",
    "ready_s",
)
NEW_POD_PHASES = ("created", "scheduled", "sandbox", "started", "ready")


def _condition(pod: Mapping[str, Any], type_: str) -> bool:
    return any(
        c.get("type") == type_ and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or ()
    )


def _restarts(pod: Mapping[str, Any]) -> int:
    return sum(
        s.get("restartCount", 0) for s in (pod.get("status") or {}).get("containerStatuses") or ()
    )


def _exit_reported(pod: Mapping[str, Any], restarts: int) -> bool:
    """The kubelet has reported a container of ``pod`` exited: a restart counted, or a
    container not running."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or ()
    return _restarts(pod) > restarts or any(
        "running" not in (s.get("state") or {}) for s in statuses
    )


def _started(pod: Mapping[str, Any]) -> bool:
    statuses = (pod.get("status") or {}).get("containerStatuses") or ()
    return bool(statuses) and all("running" in (s.get("state") or {}) for s in statuses)


@dataclass
class Timeline:
    """The phases of one recovery, fed every state a watch of the group's pods shows."""

    old: Mapping[str, Mapping[str, Any]]
    """The group's pods before the failure, by uid."""
    victim: str
    """The uid of the pod whose container fails."""
    size: int
    exit_seen: float | None = None
    deleting: dict[str, float] = field(default_factory=dict)
    """Old pods: when each was first seen marked for deletion (or gone without it)."""
    gone: dict[str, float] = field(default_factory=dict)
    grace: dict[str, int] = field(default_factory=dict)
    """Old pods: the grace period they were first seen deleted with (the kubelet's final
    deletion, once it has stopped a pod, shows 0)."""
    new: dict[str, dict[str, float]] = field(default_factory=dict)
    """New pods by uid: when each reached each of ``NEW_POD_PHASES``."""
    names: dict[str, str] = field(default_factory=dict)
    """Every new pod's name, by uid."""
    replaced: set[str] = field(default_factory=set)
    """New pods seen gone again (replaced themselves): not the group that recovered."""

    def see(self, pods: Mapping[str, Mapping[str, Any]], now: float) -> None:
        """One state of the group's pods (any keys), ``now`` seconds after the failure."""
        present = {p["metadata"]["uid"]: p for p in pods.values()}
        victim = present.get(self.victim)
        if (
            self.exit_seen is None
            and victim is not None
            and _exit_reported(victim, _restarts(self.old[self.victim]))
        ):
            self.exit_seen = now
        for uid in self.old:
            pod = present.get(uid)
            if pod is None:
                self.deleting.setdefault(uid, now)
                self.gone.setdefault(uid, now)
            elif pod["metadata"].get("deletionTimestamp"):
                self.deleting.setdefault(uid, now)
                if (grace := pod["metadata"].get("deletionGracePeriodSeconds")) is not None:
                    self.grace.setdefault(uid, grace)
        self.replaced |= self.new.keys() - present.keys()
        for uid, pod in present.items():
            if uid in self.old:
                continue
            marks = self.new.setdefault(uid, {"created": now})
            self.names[uid] = pod["metadata"]["name"]
            if (pod.get("spec") or {}).get("nodeName"):
                marks.setdefault("scheduled", now)
            if _condition(pod, "PodReadyToStartContainers"):
                marks.setdefault("sandbox", now)
            if _started(pod):
                marks.setdefault("started", now)
            if _condition(pod, "Ready"):
                marks.setdefault("ready", now)

    def group_phases(self) -> dict[str, float]:
        """The group's phases (``GROUP_PHASES``) seen so far, each in seconds from the failure."""
        out: dict[str, float] = {}
        if self.exit_seen is not None:
            out["exit_seen_s"] = self.exit_seen
        if self.deleting:
            out["react_s"] = min(self.deleting.values())
        if len(self.gone) == len(self.old):
            out["old_gone_s"] = max(self.gone.values())
        newest = [m for uid, m in self.new.items() if uid not in self.replaced]
        if len(newest) == self.size:
            filled = [_filled(m) for m in newest]
            for phase in NEW_POD_PHASES:
                if all(phase in m for m in filled):
                    out[f"{phase}_s"] = max(m[phase] for m in filled)
        return {k: round(out[k], 3) for k in GROUP_PHASES if k in out}

    def pods(self) -> list[dict[str, Any]]:
        """Per pod, for the plot: its name, old or new, and its marks."""
        rows: list[dict[str, Any]] = []
        for uid, pod in self.old.items():
            ends = {"deleting": self.deleting.get(uid), "gone": self.gone.get(uid)}
            rows.append(
                {
                    "name": pod["metadata"]["name"],
                    "old": True,
                    "victim": uid == self.victim,
                    "grace": self.grace.get(uid),
                    **{k: round(v, 3) for k, v in ends.items() if v is not None},
                }
            )
        for uid, marks in sorted(self.new.items(), key=lambda kv: kv[1]["created"]):
            rows.append(
                {
                    "name": self.names[uid],
                    "old": False,
                    **{k: round(v, 3) for k, v in marks.items()},
                }
            )
        return rows


def _filled(marks: Mapping[str, float]) -> dict[str, float]:
    """A new pod's marks, where a phase no watch event showed on its own (two steps in one
    status update) takes the time of the next phase seen."""
    out = dict(marks)
    later: float | None = None
    for phase in reversed(NEW_POD_PHASES):
        if phase in out:
            later = out[phase]
        elif later is not None:
            out[phase] = later
    return out
