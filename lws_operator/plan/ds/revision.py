"""The revision of a DisaggregatedSet: eight hex digits naming its current role templates.

Computed exactly as upstream computes it (``pkg/utils/disaggregatedset/utils.go``,
``ComputeRevision``): SHA-256 of Go's JSON for the list ``[{"name": <role>, "template":
<leaderWorkerTemplate>}, ...]`` in ``spec.roles`` order, as hex, first 8 characters. Children
are named and labelled with it, so an object upstream created is recognised by its name: the
same spec gives the same revision here, and nothing rolls when this operator takes over.

Only the roles' names and ``leaderWorkerTemplate``s count: changing replicas, the rollout
strategy, ``slices`` or the placement policy starts no rollout (upstream's rule).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from lws_operator.plan import gojson

REVISION_LENGTH = 8


def revision_document(roles: Sequence[Mapping[str, Any]]) -> str:
    """Go's ``json.Marshal`` of the role templates (what is hashed)."""
    template = gojson.root()
    parts = []
    for role in roles:
        spec = role.get("spec") or {}
        name = gojson.marshal(role.get("name") or "", "string")
        body = gojson.marshal(spec.get("leaderWorkerTemplate") or {}, template)
        parts.append(f'{{"name":{name},"template":{body}}}')
    return "[" + ",".join(parts) + "]"


def compute_revision(roles: Sequence[Mapping[str, Any]]) -> str:
    """The revision of ``spec.roles`` (plain dicts, as stored). Raises
    :class:`gojson.GoJsonError` for a template Go could not have decoded."""
    digest = hashlib.sha256(revision_document(roles).encode()).hexdigest()
    return digest[:REVISION_LENGTH]
