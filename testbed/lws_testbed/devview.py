"""What ``make run`` shows of one LeaderWorkerSet: its groups and pods. On a terminal, one table
redrawn in place (plain ANSI cursor movement), with notes and log lines scrolling above it;
elsewhere (pipes, CI), one line per change. Everything here but :class:`Live`'s write is pure:
objects in, text out; ``devrun.py`` does the watching."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from lws_operator import kueue
from lws_operator.api import constants as c
from lws_operator.plan.meta import pod_ready


@dataclass(frozen=True)
class PodRow:
    name: str
    group: str
    worker: str
    node: str  # "" until scheduled
    # Gated (held by a scheduling gate, e.g. Kueue's until the group is admitted), Pending,
    # Scheduled, Running, Ready, Terminating, Succeeded, Failed, Unknown
    state: str

    def phrase(self) -> str:
        return f"pod {self.name} {self.state}" + (f" on {self.node}" if self.node else "")


@dataclass(frozen=True)
class GroupQueue:
    """A group's Kueue Workload, in Kueue's words (``lws_operator.kueue.workload_state``)."""

    group: str
    state: str

    def phrase(self) -> str:
        if self.state == "admitted":
            return f"group {self.group} admitted by Kueue"
        if self.state.startswith("pending (") and self.state.endswith(")"):
            why = self.state.removeprefix("pending (").removesuffix(")")
            # "; " separates the changes of a line: Kueue's own list of reasons gets ", ".
            why = why.removeprefix("Pending: ").replace("; ", ", ")
            return f"group {self.group} waits for quota: {why}"
        return f"group {self.group}: Kueue {self.state}"


@dataclass(frozen=True)
class View:
    name: str
    exists: bool
    replicas: int
    ready: int
    reconciled: bool  # the operator has written a status
    pods: tuple[PodRow, ...]  # by group, then worker index
    queue: tuple[GroupQueue, ...] = ()  # with Kueue: each group's Workload, by group


def pod_state(pod: Mapping[str, Any]) -> str:
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return "Terminating"
    phase = str((pod.get("status") or {}).get("phase") or "Pending")
    if phase == "Pending" and (pod.get("spec") or {}).get("schedulingGates"):
        return "Gated"
    if phase == "Running":
        return "Ready" if pod_ready(pod) else "Running"
    if phase == "Pending" and (pod.get("spec") or {}).get("nodeName"):
        return "Scheduled"
    return phase


def _index(value: str) -> int:
    return int(value) if value.isdigit() else 1 << 30


def view_of(
    name: str,
    lws: Mapping[str, Any] | None,
    pods: Iterable[Mapping[str, Any]],
    workloads: Iterable[Mapping[str, Any]] | None = None,
) -> View:
    """The view of LWS ``name`` (None: not found), its pods and (with Kueue) its Workloads."""
    rows = []
    for pod in pods:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        rows.append(
            PodRow(
                name=str(pod["metadata"]["name"]),
                group=str(labels.get(c.GROUP_INDEX_LABEL, "-")),
                worker=str(labels.get(c.WORKER_INDEX_LABEL, "-")),
                node=str((pod.get("spec") or {}).get("nodeName") or ""),
                state=pod_state(pod),
            )
        )
    rows.sort(key=lambda r: (_index(r.group), _index(r.worker), r.name))
    spec = (lws or {}).get("spec") or {}
    status = (lws or {}).get("status") or {}
    replicas = spec.get("replicas", 1)  # the CRD defaults it to 1
    uid = str(((lws or {}).get("metadata") or {}).get("uid") or "")
    by_group = kueue.group_workloads(workloads or (), uid) if uid else {}
    return View(
        name=name,
        exists=lws is not None,
        replicas=replicas if isinstance(replicas, int) else 1,
        ready=int(status.get("readyReplicas") or 0),  # omitted when 0
        reconciled=bool(status),
        pods=tuple(rows),
        queue=tuple(
            GroupQueue(str(i), kueue.workload_state(wl)) for i, wl in sorted(by_group.items())
        ),
    )


def headline(view: View) -> str:
    if not view.exists:
        return f"{view.name}: not found"
    ready = f"{view.name}: {view.ready}/{view.replicas} groups ready"
    return ready if view.reconciled or view.pods else f"{ready}, waiting for the operator"


def change_line(old: View | None, new: View) -> str | None:
    """One line saying what changed from ``old`` to ``new`` (the headline, then each pod that
    appeared, changed or went), or None when nothing the line shows changed."""
    before = {r.name: r.phrase() for r in old.pods} if old else {}
    after = {r.name: r.phrase() for r in new.pods}
    changes = [phrase for name, phrase in after.items() if before.get(name) != phrase]
    changes += [f"pod {name} deleted" for name in before if name not in after]
    queued = {q.phrase() for q in old.queue} if old else set()
    changes += [q.phrase() for q in new.queue if q.phrase() not in queued]
    if old is not None and headline(old) == headline(new) and not changes:
        return None
    return "; ".join([headline(new), *changes])


def frame(view: View, hint: str, *, rows: int) -> list[str]:
    """The table for a terminal of ``rows`` lines: headline, pods, a status line ending in
    ``hint``. At most ``rows - 1`` lines (so that it can be redrawn in place); pods that do
    not fit are counted on one line."""
    table = [("POD", "GROUP", "WORKER", "NODE", "STATE")]
    table += [(r.name, r.group, r.worker, r.node or "-", r.state) for r in view.pods]
    widths = [max(len(row[i]) for row in table) for i in range(5)]
    lines = [
        "  " + "  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip()
        for row in table
    ]
    # With Kueue, the groups it has not admitted (and why), under the pods.
    waiting = [f"  {q.phrase()}" for q in view.queue if q.state != "admitted"]
    # For the column header and the pods, besides headline, status and the waiting groups.
    room = max(2, rows - 3 - len(waiting))
    if len(view.pods) == 0:
        lines = ["  (no pods yet)"]
    elif len(lines) > room:
        hidden = len(lines) - (room - 1)
        lines = [*lines[: room - 1], f"  ... and {hidden} more pods"]
    ready = sum(1 for r in view.pods if r.state == "Ready")
    status = f"{ready}/{len(view.pods)} pods Ready; {hint}" if view.pods else hint
    return [headline(view), *lines, *waiting, status]


def redraw(height: int, above: Sequence[str], lines: Sequence[str], columns: int) -> str:
    """The text that replaces the ``height`` lines just above the cursor with ``above`` (lines
    that scroll, such as log lines, as long as they are) and then ``lines`` (cut to the width,
    so that the next redraw knows their height: ``len(lines)``)."""
    up = f"\x1b[{height}A" if height else ""
    cut = max(1, columns - 1)  # a line as wide as the terminal wraps early on some terminals
    return "".join(
        [
            "\r",
            up,
            "\x1b[J",
            *(f"{line}\n" for line in above),
            *(f"{line[:cut]}\n" for line in lines),
        ]
    )


class Live:
    """A table kept at the bottom of a terminal: :meth:`show` redraws it in place,
    :meth:`note` prints lines above it. Safe to call from any thread (log handlers)."""

    def __init__(self, out: TextIO, columns: Callable[[], int]) -> None:
        self._out = out
        self._columns = columns
        self._lines: list[str] = []
        self._lock = threading.Lock()

    def show(self, lines: Sequence[str]) -> None:
        self._write([], lines)

    def note(self, text: str) -> None:
        self._write(text.splitlines(), self._lines)

    def keep(self) -> None:
        """Leave the table as it is: what follows is written below it."""
        with self._lock:
            self._lines = []

    def _write(self, above: Sequence[str], lines: Sequence[str]) -> None:
        with self._lock:
            self._out.write(redraw(len(self._lines), above, lines, self._columns()))
            self._out.flush()
            self._lines = list(lines)


class LineDisplay:
    """For pipes and CI: notes as they are, then one line per change of the view."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._lock = threading.Lock()

    def note(self, text: str) -> None:
        with self._lock:
            self._out.write(f"{text}\n")
            self._out.flush()

    def show(self, old: View | None, new: View) -> None:
        if (line := change_line(old, new)) is not None:
            self.note(line)

    def close(self) -> None:
        pass


class TerminalDisplay:
    """For a terminal: the table redrawn in place, notes scrolling above it."""

    def __init__(self, out: TextIO, hint: str, size: Callable[[], os.terminal_size]) -> None:
        self._live = Live(out, lambda: size().columns)
        self._hint = hint
        self._size = size

    def note(self, text: str) -> None:
        self._live.note(text)

    def show(self, old: View | None, new: View) -> None:
        self._live.show(frame(new, self._hint, rows=self._size().lines))

    def close(self) -> None:
        """The last table stays on the screen, above what is printed next."""
        self._live.keep()


Display = LineDisplay | TerminalDisplay
