"""Go's zero values, stored as upstream stores them.

CRD defaults apply only to absent fields, but Go clients send a non-pointer field they left
unset as ``""`` (``rolloutStrategy: {type: ""}``; Kueue's LWS webhook round-trips every LWS it
mutates through Go structs and can add the same). Upstream's defaulting webhook stores the
default instead (lws v0.10.0 ``pkg/webhooks/leaderworkerset_webhook.go:53-63``); so does the
operator's LeaderWorkerSet webhook (``lws_operator/controller/servers/webhook.py``), on every
Kubernetes version. Its ``matchConditions`` (:func:`match_condition`) send it only the writes
that carry one of these zero values: every other LeaderWorkerSet write never depends on the
operator being up. ``lws-operator validate`` replaces them the same way (:func:`with_defaults`).
"""

from __future__ import annotations

import copy
from typing import Any

from lws_operator.api.models import RestartPolicy, RolloutStrategyType

# (JSON path, the value upstream's webhook stores for "" there).
ZERO_VALUE_DEFAULTS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("spec", "rolloutStrategy", "type"), RolloutStrategyType.ROLLING_UPDATE.value),
    (
        ("spec", "leaderWorkerTemplate", "restartPolicy"),
        RestartPolicy.RECREATE_GROUP_ON_POD_RESTART.value,
    ),
)


def match_condition() -> str:
    """CEL, true when the object carries one of the zero values. Every step is optional: the
    condition runs before the schema is checked (``spec`` may be missing)."""
    return " || ".join(
        "object" + "".join(f".?{part}" for part in path) + '.orValue("-") == ""'
        for path, _ in ZERO_VALUE_DEFAULTS
    )


def with_defaults(obj: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``obj`` with each zero value replaced by the default upstream stores."""
    out = copy.deepcopy(obj)
    for path, default in ZERO_VALUE_DEFAULTS:
        *parents, leaf = path
        node: Any = out
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict) and node.get(leaf) == "":
            node[leaf] = default
    return out
