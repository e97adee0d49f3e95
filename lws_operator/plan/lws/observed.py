"""Everything the operator knows about one LeaderWorkerSet when a reconcile starts: what the
cache (controller/lws/cache.py) hands the planners."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from lws_operator.plan.lws.groups import Group
from lws_operator.plan.lws.restart import Lost

_NO_OBSERVATIONS: MappingProxyType[int, int] = MappingProxyType({})
_NO_CHANGES: MappingProxyType[int, float] = MappingProxyType({})


@dataclass
class Observed:
    """Everything the operator knows about one LeaderWorkerSet, by object name. The mappings
    are live read-only views of the informers' stores (an event replaces an object's
    projection, never changes it): planners read them by name, or in one synchronous pass,
    and never change them."""

    lws: dict[str, Any] | None
    statefulsets: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    pods: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    services: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    revisions: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    # Gang PodGroups (metadata only); watched only with a gang provider.
    podgroups: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    nodes: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    healthy_nodes: frozenset[str] = frozenset()
    """The nodes known healthy (plan/lws/nodehealth.py); others are judged from ``nodes``."""
    lost: tuple[Lost, ...] = field(default_factory=tuple)
    """Worker pods seen deleted and not decided on yet (plan/lws/restart.py)."""
    groups: Sequence[Group] = field(default_factory=list)
    """The groups of the leader StatefulSet, by index (plan/lws/groups.py): the cache's table,
    which it changes only when it observes the LWS again (one reconcile at a time)."""
    observed_at: MappingProxyType[int, int] = field(default_factory=lambda: _NO_OBSERVATIONS)
    """When each group was last observed anew, as an observation number that only grows,
    oldest first (plan/lws/workers.WorkersDue reads the newest without a scan)."""
    changed_at: Mapping[int, float] = field(default_factory=lambda: _NO_CHANGES)
    """Per group, when (the controller's monotonic clock) the first event arrived that its
    latest observation follows. The plan never reads it: it times a recovery's reaction."""
    worker_input_events: int = 0
    """The count of events of its objects in the stores of plan/lws/workers.py's
    ``READS_BESIDES_GROUP``: unchanged, so are they."""
    terminating: tuple[dict[str, Any], ...] = ()
    """The pods with a deletionTimestamp."""
    history: dict[str, Any] | None = None
    """Its history ConfigMap, projected (plan/lws/history.py), if it exists."""
