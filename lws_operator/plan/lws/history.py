"""Each group's failure history, kept in one ConfigMap per LeaderWorkerSet (issue 16).

ConfigMap ``<lws>-restart-history``, labelled with the LWS's name and owned by it (deleted with
it), holds:

* annotation ``leaderworkerset.sigs.k8s.io/group-restart-count`` (upstream KEP-820's key): a
  JSON object ``{"<group index>": count}``, the recreations the restart budget counts;
* ``data["group-<i>"]``: group ``i``'s state (restarts, crash-loop streak, when it was seen
  Ready, whether its budget ran out, the backoff under way) and its last N recreations, each
  with what failed: pod, container, exit code, reason, signal, termination message, restart
  count, node;
* ``data["log-<i>-<n>-<k>"]``: the log tail of the k-th failed container of recreation n;
* ``data["requests"]``: the last recreation request (annotation) already carried out.

It is written before the deletion it records (a write-ahead record: a recreation whose
leader still exists after its record is finished without being counted twice), so the counts
survive operator restarts and takeovers. Bounded: N recreations per group, log tails cut to
lines and bytes, and a total size under which the oldest log tails, then the oldest records,
are dropped. Pure: parsing, the new state, the bounds and the write are values.
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from lws_operator.api import constants as c
from lws_operator.plan.events import Event, warning
from lws_operator.plan.meta import controller_ref, meta_of
from lws_operator.plan.timestamps import parse_time

Obj = Mapping[str, Any]

SUFFIX = "-restart-history"
REQUESTS_KEY = "requests"
_GROUP_KEY = re.compile(r"^group-(\d+)$")
_LOG_KEY = re.compile(r"^log-(\d+)-(\d+)-(\d+)$")
# A termination message is at most 4096 bytes (kubelet); records keep the start of it.
MESSAGE_MAX = 1024


@dataclass(frozen=True)
class Limits:
    recreations_per_group: int = 5
    log_tail_lines: int = 50
    log_tail_bytes: int = 4096
    log_tails_per_recreation: int = 3
    max_bytes: int = 512 * 1024
    """The ConfigMap's data and annotations together (the API server allows 1 MiB)."""
    log_timeout: float = 2.0
    """Seconds one log read may take: a recreation waits for its evidence."""


def history_name(lws_name: str) -> str:
    return f"{lws_name}{SUFFIX}"


def log_key(group: int, number: int, k: int) -> str:
    return f"log-{group}-{number}-{k}"


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


@dataclass(frozen=True)
class ContainerFailure:
    """What one failed container (or deleted pod, ``container=None``) left as evidence."""

    pod: str
    container: str | None = None
    init: bool = False
    node: str | None = None
    exit_code: int | None = None
    reason: str | None = None
    signal: int | None = None
    message: str | None = None
    restart_count: int = 0
    finished_at: str | None = None
    log: str | None = None
    """The data key of its log tail."""
    log_error: str | None = None
    """Why there is no log tail, e.g. "log unavailable: <the API server's answer>"."""

    def to_json(self) -> dict[str, Any]:
        out = {
            "pod": self.pod,
            "container": self.container,
            "init": self.init or None,
            "node": self.node,
            "exitCode": self.exit_code,
            "reason": self.reason,
            "signal": self.signal,
            "message": self.message,
            "restartCount": self.restart_count,
            "finishedAt": self.finished_at,
            "log": self.log,
            "logError": self.log_error,
        }
        return {k: v for k, v in out.items() if v is not None}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ContainerFailure:
        return cls(
            pod=str(d.get("pod") or ""),
            container=_str(d.get("container")),
            init=bool(d.get("init")),
            node=_str(d.get("node")),
            exit_code=_int(d.get("exitCode")),
            reason=_str(d.get("reason")),
            signal=_int(d.get("signal")),
            message=_str(d.get("message")),
            restart_count=_int(d.get("restartCount")) or 0,
            finished_at=_str(d.get("finishedAt")),
            log=_str(d.get("log")),
            log_error=_str(d.get("logError")),
        )

    def summary(self) -> str:
        """One line: "pod p container c exited 137 (Error, signal 9) after 3 restarts on
        node n: <message>"."""
        if self.container is None:
            what = f"pod {self.pod} {self.reason or 'failed'}"
        else:
            kind = "init container" if self.init else "container"
            what = f"pod {self.pod} {kind} {self.container}"
            if self.exit_code is not None:
                what += f" exited {self.exit_code}"
            details = [x for x in (self.reason, self.signal and f"signal {self.signal}") if x]
            if details:
                what += f" ({', '.join(str(x) for x in details)})"
            if self.restart_count:
                what += f" after {self.restart_count} restarts"
        if self.node:
            what += f" on node {self.node}"
        if self.message:
            what += f": {' '.join(self.message.split())[:200]}"
        return what


@dataclass(frozen=True)
class Recreation:
    number: int
    """1, 2, ... in the group's history."""
    at: str
    trigger: str
    """restarted, failed, deleted (the pod failure that broke the group) or requested."""
    culprit: str
    leader: str
    leader_uid: str
    counted: bool
    """Whether the restart budget counts it (user requests do not)."""
    waited: float = 0.0
    """The backoff it waited for, in seconds."""
    failures: tuple[ContainerFailure, ...] = ()
    nodes: tuple[str, ...] = ()
    """Node problems of the group's pods when it was recreated."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "n": self.number,
            "at": self.at,
            "trigger": self.trigger,
            "culprit": self.culprit,
            "leader": self.leader,
            "leaderUID": self.leader_uid,
            "counted": self.counted,
        }
        if self.waited:
            out["waited"] = self.waited
        if self.failures:
            out["failures"] = [f.to_json() for f in self.failures]
        if self.nodes:
            out["nodes"] = list(self.nodes)
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Recreation:
        waited = d.get("waited")
        return cls(
            number=_int(d.get("n")) or 0,
            at=str(d.get("at") or ""),
            trigger=str(d.get("trigger") or ""),
            culprit=str(d.get("culprit") or ""),
            leader=str(d.get("leader") or ""),
            leader_uid=str(d.get("leaderUID") or ""),
            counted=bool(d.get("counted", True)),
            waited=float(waited) if isinstance(waited, int | float) else 0.0,
            failures=tuple(
                ContainerFailure.from_json(f)
                for f in d.get("failures") or []
                if isinstance(f, dict)
            ),
            nodes=tuple(str(n) for n in d.get("nodes") or []),
        )


@dataclass(frozen=True)
class GroupHistory:
    restarts: int = 0
    """Recreations the restart budget counts (KEP-820's group-restart-count)."""
    streak: int = 0
    """Recreations of the current crash loop (plan/lws/backoff.py)."""
    total: int = 0
    """Recreations ever recorded: numbers them."""
    ready_since: str | None = None
    """When the incarnation made by the last recreation was first seen Ready."""
    failed_leader: str | None = None
    """Uid of the leader kept because the budget ran out (the group is Failed)."""
    failed_at: str | None = None
    backoff_leader: str | None = None
    """Uid of the leader waiting for its recreation (announced once)."""
    backoff_until: str | None = None
    recreations: tuple[Recreation, ...] = ()

    @property
    def last(self) -> Recreation | None:
        return self.recreations[-1] if self.recreations else None

    @property
    def last_at(self) -> datetime.datetime | None:
        return parse_time(self.last.at) if self.last else None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "restarts": self.restarts,
            "streak": self.streak,
            "total": self.total,
        }
        if self.ready_since:
            out["readySince"] = self.ready_since
        if self.failed_leader:
            out["failed"] = {"leaderUID": self.failed_leader, "at": self.failed_at}
        if self.backoff_leader:
            out["backoff"] = {"leaderUID": self.backoff_leader, "until": self.backoff_until}
        out["recreations"] = [r.to_json() for r in self.recreations]
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> GroupHistory:
        failed = d.get("failed")
        failed = failed if isinstance(failed, dict) else {}
        backoff = d.get("backoff")
        backoff = backoff if isinstance(backoff, dict) else {}
        return cls(
            restarts=max(0, _int(d.get("restarts")) or 0),
            streak=max(0, _int(d.get("streak")) or 0),
            total=max(0, _int(d.get("total")) or 0),
            ready_since=_str(d.get("readySince")),
            failed_leader=_str(failed.get("leaderUID")),
            failed_at=_str(failed.get("at")),
            backoff_leader=_str(backoff.get("leaderUID")),
            backoff_until=_str(backoff.get("until")),
            recreations=tuple(
                Recreation.from_json(r) for r in d.get("recreations") or [] if isinstance(r, dict)
            ),
        )

    def encoded(self) -> str:
        return json.dumps(self.to_json(), separators=(",", ":"), sort_keys=True)


@dataclass(frozen=True)
class History:
    """The history ConfigMap of one LWS as read (``exists`` False: none yet)."""

    name: str
    exists: bool = False
    resource_version: str | None = None
    owned: bool = True
    """Owned by this LWS. One that is not is never written (someone else's ConfigMap)."""
    groups: Mapping[int, GroupHistory] = field(default_factory=dict)
    handled_request: str | None = None
    log_sizes: Mapping[str, int] = field(default_factory=dict)
    """The log-tail keys present and their sizes (their text is not kept in memory)."""
    errors: tuple[str, ...] = ()
    """Entries that could not be read (edited by hand): they count as empty."""

    def group(self, index: int) -> GroupHistory:
        return self.groups.get(index, GroupHistory())

    @property
    def failed_groups(self) -> tuple[int, ...]:
        return tuple(sorted(i for i, g in self.groups.items() if g.failed_leader))

    def restart_counts(self) -> dict[str, int]:
        return {str(i): g.restarts for i, g in sorted(self.groups.items()) if g.restarts}


def project_history(body: Obj) -> dict[str, Any] | None:
    """What the operator keeps of a history ConfigMap: identity, owners, and its data without
    the log tails (their sizes only). Other ConfigMaps with the LWS label are skipped."""
    meta = meta_of(body)
    lws = (meta.get("labels") or {}).get(c.SET_NAME_LABEL)
    if not lws or meta.get("name") != history_name(str(lws)):
        return None
    data = body.get("data") or {}
    return {
        "metadata": {
            k: meta[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "labels", "ownerReferences")
            if k in meta
        },
        "data": {k: v for k, v in data.items() if not _LOG_KEY.match(k)},
        "logSizes": {k: len(str(v).encode()) for k, v in data.items() if _LOG_KEY.match(k)},
    }


def parse_history(projection: Obj | None, *, lws_name: str, lws_uid: str) -> History:
    name = history_name(lws_name)
    if projection is None:
        return History(name)
    meta = meta_of(projection)
    owned = any(
        ref.get("controller") and ref.get("uid") == lws_uid
        for ref in meta.get("ownerReferences") or []
    )
    groups: dict[int, GroupHistory] = {}
    errors = []
    for key, value in (projection.get("data") or {}).items():
        if (m := _GROUP_KEY.match(key)) is None:
            continue
        try:
            parsed = json.loads(value)
            if not isinstance(parsed, dict):
                raise ValueError("not an object")
            groups[int(m.group(1))] = GroupHistory.from_json(parsed)
        except (ValueError, TypeError) as e:
            errors.append(f"data[{key}]: {e}")
    request = (projection.get("data") or {}).get(REQUESTS_KEY)
    return History(
        name=name,
        exists=True,
        resource_version=str(meta.get("resourceVersion") or "") or None,
        owned=owned,
        groups=groups,
        handled_request=request if isinstance(request, str) else None,
        log_sizes=dict(projection.get("logSizes") or {}),
        errors=tuple(errors),
    )


# ---- bounds -------------------------------------------------------------------------------


def tail(text: str, *, lines: int, max_bytes: int) -> str:
    """The last ``lines`` lines of ``text`` within ``max_bytes`` bytes of UTF-8 (a line cut at
    the front rather than a character cut in two)."""
    if lines <= 0 or max_bytes <= 0:
        return ""
    kept = text.splitlines()[-lines:]
    out = "\n".join(kept)
    data = out.encode()
    if len(data) <= max_bytes:
        return out
    return data[-max_bytes:].decode(errors="ignore")


def size_of(groups: Mapping[int, GroupHistory], log_sizes: Mapping[str, int]) -> int:
    """The bytes these would take in the ConfigMap (keys, values, the counts annotation)."""
    counts = json.dumps({str(i): g.restarts for i, g in groups.items()})
    return (
        len(counts)
        + sum(len(f"group-{i}") + len(g.encoded().encode()) for i, g in groups.items())
        + sum(len(k) + n for k, n in log_sizes.items())
    )


def _drop_log(failure: ContainerFailure, why: str) -> ContainerFailure:
    return (
        replace(failure, log=None, log_error=failure.log_error or why) if failure.log else failure
    )


def bound(
    groups: Mapping[int, GroupHistory], log_sizes: Mapping[str, int], limits: Limits
) -> tuple[dict[int, GroupHistory], dict[str, int]]:
    """Apply the limits: the last ``recreations_per_group`` recreations of each group, log
    keys no record names removed, then, while over ``max_bytes``, the oldest log tails and
    then the oldest records beyond each group's latest dropped (counts are never dropped)."""
    out = {
        i: replace(g, recreations=g.recreations[-limits.recreations_per_group :])
        for i, g in groups.items()
    }

    def named() -> set[str]:
        return {f.log for g in out.values() for r in g.recreations for f in r.failures if f.log}

    sizes = {k: n for k, n in log_sizes.items() if k in named()}
    dropped = f"log tail dropped: the history is kept under {limits.max_bytes} bytes"
    # Oldest first: (time, group, position) of every record.
    order = sorted(
        ((r.at, i, pos) for i, g in out.items() for pos, r in enumerate(g.recreations)),
    )
    for _at, i, pos in order:
        if size_of(out, sizes) <= limits.max_bytes:
            break
        g = out[i]
        record = g.recreations[pos]
        if not any(f.log for f in record.failures):
            continue
        for f in record.failures:
            if f.log:
                sizes.pop(f.log, None)
        record = replace(record, failures=tuple(_drop_log(f, dropped) for f in record.failures))
        out[i] = replace(g, recreations=(*g.recreations[:pos], record, *g.recreations[pos + 1 :]))
    while size_of(out, sizes) > limits.max_bytes:
        candidates = sorted(
            (g.recreations[0].at, i) for i, g in out.items() if len(g.recreations) > 1
        )
        if not candidates:
            break  # only counters and each group's latest record are left
        _at, i = candidates[0]
        out[i] = replace(out[i], recreations=out[i].recreations[1:])
    return out, {k: n for k, n in sizes.items() if k in named()}


# ---- the write ----------------------------------------------------------------------------


@dataclass(frozen=True)
class HistoryWrite:
    create: dict[str, Any] | None = None
    """The ConfigMap to create (none exists yet)."""
    patch: dict[str, Any] | None = None
    """A merge patch with the resourceVersion it was computed from (409 if it moved)."""


def plan_write(
    old: History,
    groups: Mapping[int, GroupHistory],
    *,
    logs: Mapping[str, str],
    handled_request: str | None,
    lws_name: str,
    namespace: str,
    lws_uid: str,
    limits: Limits,
) -> tuple[HistoryWrite | None, History]:
    """The write that makes the ConfigMap hold ``groups`` (bounded) and the new ``logs``, and
    the History it leaves; None when nothing changes. Never for a ConfigMap not ours."""
    sizes = {**old.log_sizes, **{k: len(v.encode()) for k, v in logs.items()}}
    bounded, kept = bound(groups, sizes, limits)
    new = replace(
        old,
        exists=True,
        groups=bounded,
        handled_request=handled_request,
        log_sizes=kept,
    )
    if not old.owned:
        return None, old
    data: dict[str, Any] = {}
    for i, g in bounded.items():
        if old.groups.get(i) != g:
            data[f"group-{i}"] = g.encoded()
    for i in old.groups:
        if i not in bounded:
            data[f"group-{i}"] = None
    for k, v in logs.items():
        if k in kept:
            data[k] = v
    for k in old.log_sizes:
        if k not in kept:
            data[k] = None
    if handled_request != old.handled_request:
        data[REQUESTS_KEY] = handled_request
    if not data:
        return None, old  # nothing to record (an LWS that never failed has no ConfigMap)
    counts = json.dumps(new.restart_counts(), separators=(",", ":"), sort_keys=True)
    if not old.exists:
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": old.name,
                "namespace": namespace,
                "labels": {c.SET_NAME_LABEL: lws_name},
                "annotations": {c.GROUP_RESTART_COUNT_ANNOTATION: counts},
                "ownerReferences": [controller_ref(c.API_VERSION, c.KIND, lws_name, lws_uid)],
            },
            "data": {k: v for k, v in data.items() if v is not None},
        }
        return HistoryWrite(create=body), new
    patch = {
        "metadata": {
            "resourceVersion": old.resource_version,
            "annotations": {c.GROUP_RESTART_COUNT_ANNOTATION: counts},
        },
        "data": data,
    }
    return HistoryWrite(patch=patch), new


def not_owned(name: str) -> Event:
    """The Warning for a ConfigMap of the history's name that this LWS does not own (kept)."""
    return warning(
        "FailedCreate",
        "Create",
        f"ConfigMap {name} is not owned by this LeaderWorkerSet: no restart history is kept, "
        "and neither maxGroupRestarts nor the backoff can apply",
    )
