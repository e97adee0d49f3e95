"""Go's ``encoding/json`` output for an object decoded into upstream's Go API types: what
``json.Marshal`` of a ``LeaderWorkerTemplate`` prints, byte for byte, given the object as the
API server stores it.

Upstream's DisaggregatedSet controller names its children after a hash of that output
(:mod:`lws_operator.plan.ds.revision`), so recognising its children means reproducing it:
fields in Go declaration order (not sorted), ``omitempty`` and ``omitzero`` as Go applies them
(never to structs for omitempty; a missing slice is ``null``, an empty one ``[]``), map keys
sorted, quantities in canonical form, HTML characters escaped. The struct layout comes from
upstream's own types (``lws_operator/api/go_layout.json``, written by the test bed's ``dshash
layout``); this module knows only encoding/json's rules and the four types with their own
marshalers.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from lws_operator.plan.quantity import parse as parse_quantity
from lws_operator.plan.timestamps import format_time

LAYOUT_FILE = Path(__file__).resolve().parents[1] / "api" / "go_layout.json"

_STRUCT = "struct:"
_OPAQUE = "opaque:"
# Go's encodeState.string: these bytes are escaped (HTML-safe encoding), the rest of ASCII
# is written as is.
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b"}
_ESCAPES["\f"] = "\\f"


class GoJsonError(ValueError):
    """A value Go could not have decoded into the type (or one this encoder cannot write)."""


@cache
def layout() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(LAYOUT_FILE.read_text())
    return data


def root() -> str:
    """The type reference of ``LeaderWorkerTemplate``."""
    return str(layout()["root"])


def _string(s: str) -> str:
    out = ['"']
    for ch in s:
        code = ord(ch)
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif code < 0x20 or ch in "<>&" or code in (0x2028, 0x2029):
            out.append(f"\\u{code:04x}")
        elif 0xD800 <= code <= 0xDFFF:
            out.append("\ufffd")  # a lone surrogate: invalid UTF-8 to Go
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _is_empty(value: Any, ref: str) -> bool:
    """omitempty: false, 0, "", nil pointer, nil or empty slice or map; never a struct."""
    if ref.startswith(_STRUCT) or ref in ("quantity", "time", "microtime", "intorstring"):
        return False
    if value is None:
        return True
    if ref in ("string", "bytes") or ref.startswith(("[]", "map[]")):
        return len(value) == 0
    if ref in ("int", "uint"):
        return bool(value == 0)
    if ref == "bool":
        return value is False
    return False  # a non-nil pointer


def _is_zero(value: Any, ref: str) -> bool:
    """omitzero: the zero value, or IsZero() for the types that have it (Time, Quantity)."""
    if value is None:
        return True
    if ref in ("time", "microtime"):
        return False  # a set time is never the zero time (year 1)
    if ref == "quantity":
        return parse_quantity(value).nanos == 0
    if ref == "intorstring":
        return bool(value == 0)
    if ref.startswith(_STRUCT):
        fields = layout()["structs"][ref[len(_STRUCT) :]]
        return isinstance(value, Mapping) and all(
            _is_zero(value.get(f["name"]), f["type"]) for f in fields
        )
    if ref == "string":
        return bool(value == "")
    if ref in ("int", "uint", "bool"):
        return bool(value in (0, False))
    return False  # a non-nil pointer, slice or map


def _time(value: Any) -> str:
    if not isinstance(value, str):
        raise GoJsonError(f"a time must be a string, not {value!r}")
    try:
        when = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as e:
        raise GoJsonError(f"not an RFC 3339 time: {value!r}") from e
    return '"' + format_time(when) + '"'


def _encode(value: Any, ref: str, out: list[str]) -> None:
    if ref.startswith("*"):
        if value is None:
            out.append("null")
        else:
            _encode(value, ref[1:], out)
    elif ref.startswith("[]"):
        if value is None:
            out.append("null")
            return
        if not isinstance(value, list):
            raise GoJsonError(f"expected a list, not {type(value).__name__}")
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _encode(item, ref[2:], out)
        out.append("]")
    elif ref.startswith("map[]"):
        if value is None:
            out.append("null")
            return
        if not isinstance(value, Mapping):
            raise GoJsonError(f"expected an object, not {type(value).__name__}")
        out.append("{")
        for i, key in enumerate(sorted(value)):
            if i:
                out.append(",")
            out.append(_string(str(key)) + ":")
            _encode(value[key], ref[5:], out)
        out.append("}")
    elif ref.startswith(_STRUCT):
        _struct(value, ref[len(_STRUCT) :], out)
    else:
        out.append(_scalar(value, ref))


def _struct(value: Any, name: str, out: list[str]) -> None:
    if value is None:
        value = {}
    if not isinstance(value, Mapping):
        raise GoJsonError(f"{name}: expected an object, not {type(value).__name__}")
    out.append("{")
    first = True
    for field in layout()["structs"][name]:
        item, ref = value.get(field["name"]), field["type"]
        if field.get("omitempty") and _is_empty(item, ref):
            continue
        if field.get("omitzero") and _is_zero(item, ref):
            continue
        if not first:
            out.append(",")
        first = False
        out.append(_string(field["name"]) + ":")
        _encode(item, ref, out)
    out.append("}")


def _scalar(value: Any, ref: str) -> str:
    if ref == "string":
        if value is None:
            return '""'
        if not isinstance(value, str):
            raise GoJsonError(f"expected a string, not {value!r}")
        return _string(value)
    if ref in ("int", "uint"):
        if value is None:
            return "0"
        if isinstance(value, bool) or not isinstance(value, int):
            raise GoJsonError(f"expected an integer, not {value!r}")
        return str(value)
    if ref == "bool":
        if value is None:
            return "false"
        if not isinstance(value, bool):
            raise GoJsonError(f"expected a boolean, not {value!r}")
        return "true" if value else "false"
    if ref == "quantity":
        if value is None:
            return '"0"'
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise GoJsonError(f"expected a quantity, not {value!r}")
        text = value.strip() if isinstance(value, str) else json.dumps(value)
        try:
            return '"' + str(parse_quantity(text)) + '"'
        except ValueError as e:
            raise GoJsonError(str(e)) from e
    if ref == "intorstring":
        if value is None:
            return "0"
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise GoJsonError(f"expected an integer or a string, not {value!r}")
        return str(value) if isinstance(value, int) else _string(value)
    if ref in ("time", "microtime"):
        return "null" if value is None else _time(value)
    if ref.startswith(_OPAQUE):
        if value is None:
            return "null"
        raise GoJsonError(f"cannot encode a value of {ref[len(_OPAQUE) :]}")
    raise GoJsonError(f"unknown type reference {ref!r} in the layout")


def marshal(value: Any, ref: str) -> str:
    """``json.Marshal`` of ``value`` (decoded JSON) as the Go type ``ref`` of the layout."""
    out: list[str] = []
    _encode(value, ref, out)
    return "".join(out)
