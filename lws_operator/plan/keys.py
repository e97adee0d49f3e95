"""The keys things are found by, as distinct types: an owner (a LeaderWorkerSet or a
DisaggregatedSet, by namespace and name: what caches, queues and memories are keyed by), a
revision (the hash of an LWS's template, upstream's template-revision-hash label) and a
memoised result (what it was computed from)."""

from __future__ import annotations

from typing import Any, NamedTuple, NewType


class OwnerKey(NamedTuple):
    """A LeaderWorkerSet or DisaggregatedSet, and what belongs to it, by its namespace and name."""

    namespace: str
    name: str


RevisionKey = NewType("RevisionKey", str)
"""The revision an LWS's groups run (plan/lws/revision.revision_key)."""

MemoKey = NewType("MemoKey", tuple[Any, ...])
"""What a memoised pure result was computed from (its kind first)."""
