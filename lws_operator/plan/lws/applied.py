"""Would a server-side apply change anything? Upstream applies the leader StatefulSet on every
reconcile; writing only when something would change saves most of those requests, but only if
"would change" is exact: a field we applied before and no longer apply (a removed label or
annotation, an exclusive-topology annotation gone from the LWS) is removed by the next apply,
so it counts as a change even though the object still "contains" everything we want.

The fields a manager owns are in the object's ``metadata.managedFields`` (``fieldsV1``: ``f:``
a field, ``k:`` an item of a keyed list, ``v:`` an item of a set, ``.`` the item itself). An
apply changes nothing when those are exactly the fields of the body to apply and the object
holds the body's values.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from lws_operator.plan.diff import contains
from lws_operator.plan.meta import meta_of

# Not tracked in managedFields: the object's identity.
_IDENTITY = ("name", "namespace")


def owned_fields(obj: Mapping[str, Any], manager: str) -> dict[str, Any] | None:
    """The ``fieldsV1`` of ``manager``'s apply on the object itself (not a subresource), or
    None when it has applied nothing."""
    for entry in meta_of(obj).get("managedFields") or []:
        if (
            isinstance(entry, dict)
            and entry.get("manager") == manager
            and entry.get("operation") == "Apply"
            and not entry.get("subresource")
        ):
            fields = entry.get("fieldsV1")
            return fields if isinstance(fields, dict) else {}
    return None


def apply_changes_nothing(
    observed: Mapping[str, Any],
    body: Mapping[str, Any],
    manager: str,
    *,
    stored: Mapping[str, Any] | None = None,
) -> bool:
    """True when applying ``body`` as ``manager`` would leave ``observed`` as it is: every field
    ``manager`` owns is still in the body (an owned field left out of an apply is removed),
    and the object holds the values the server would store of it (``stored``: the body less
    what the server drops, such as a field of a feature gate that is off, which the manager
    still owns). A field of the body that ``manager`` does not own yet but whose value is
    already there would change only its ownership."""
    fields = owned_fields(observed, manager)
    if fields is None:
        return False
    values = _tracked(body if stored is None else stored)
    return still_applied(_tracked(body), fields) and contains(observed, values)


def _tracked(body: Mapping[str, Any]) -> dict[str, Any]:
    """``body`` without what managedFields do not track and a listed object may lack: its
    apiVersion and kind (list items carry none) and its name and namespace (the path's)."""
    out = {k: v for k, v in body.items() if k not in ("apiVersion", "kind", "metadata")}
    out["metadata"] = {k: v for k, v in meta_of(body).items() if k not in _IDENTITY}
    return out


def still_applied(value: Any, fields: Mapping[str, Any]) -> bool:
    """Whether every field that ``fields`` (a fieldsV1 node) names is set in ``value``."""
    children = {k: v for k, v in fields.items() if k != "."}
    if not children:
        return True  # a scalar, an atomic list or map, or nothing owned below
    if isinstance(value, Mapping):
        return all(
            k.startswith("f:")
            and value.get(k[2:]) is not None
            and isinstance(sub, dict)
            and still_applied(value[k[2:]], sub)
            for k, sub in children.items()
        )
    if isinstance(value, list):
        return all(_item_still_applied(value, k, sub) for k, sub in children.items())
    return False


def _item_still_applied(items: list[Any], key: str, sub: Any) -> bool:
    if key.startswith("v:"):
        return any(json.dumps(v, separators=(",", ":")) == key[2:] for v in items)
    if not key.startswith("k:") or not isinstance(sub, dict):
        return False
    try:
        wanted = json.loads(key[2:])
    except ValueError:
        return False
    if not isinstance(wanted, dict):
        return False
    # A key field left out of the body (a port's protocol) takes its default on the server.
    return any(
        isinstance(item, Mapping)
        and all(item[f] == v for f, v in wanted.items() if f in item)
        and still_applied(item, sub)
        for item in items
    )
