"""Offline validation of LeaderWorkerSet, DisaggregatedSet and DisaggregatedSetRoleScaler
objects: the verdicts and messages of the API server.

First the object is taken as the API server takes it before validating: nulls dropped (no
field of the CRD is nullable, so the server prunes them and applies the defaults instead) and
Go's zero values replaced as the operator's LeaderWorkerSet webhook does. Then the layers, in
the order the API server applies them: the schema (pydantic types, enums and required fields,
plus unknown fields as ``kubectl --validate=strict`` reports them), the CRD rules, then the
admission-policy rules. The rules themselves are in
:mod:`lws_operator.api.rules` and :mod:`lws_operator.api.ds_rules`.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from pydantic import BaseModel, ValidationError

from lws_operator.api import constants as c
from lws_operator.api import crd, ds_crd, ds_rules
from lws_operator.api import ds_constants as dc
from lws_operator.api.ds_models import DisaggregatedSet, DisaggregatedSetRoleScaler
from lws_operator.api.models import LeaderWorkerSet
from lws_operator.api.rules import RULES, Rule
from lws_operator.api.types import ApiModel
from lws_operator.api.zero_values import with_defaults


@dataclass(frozen=True)
class FieldError:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


@dataclass(frozen=True)
class Kind:
    """What validating one kind needs: its model, CRD schema and rules."""

    api_version: str
    kind: str
    model: type[ApiModel]
    schema: Callable[[], Mapping[str, Any]]
    rules: tuple[Rule, ...]


KINDS = {
    c.KIND: Kind(c.API_VERSION, c.KIND, LeaderWorkerSet, crd.open_api_schema, RULES),
    dc.KIND: Kind(
        dc.API_VERSION, dc.KIND, DisaggregatedSet, ds_crd.open_api_schema, ds_rules.RULES
    ),
    dc.SCALER_KIND: Kind(
        dc.API_VERSION,
        dc.SCALER_KIND,
        DisaggregatedSetRoleScaler,
        ds_crd.scaler_open_api_schema,
        (),
    ),
}


def validate(obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> list[FieldError]:
    """Errors the API server would report for creating ``obj`` (or updating ``old`` to it).
    The kind is the object's own (a LeaderWorkerSet when it names none we know).

    The API server stops before the validation rules when a type or enum is wrong, and before
    the admission policy when the CRD rejects the object; here every layer is reported at once,
    so one run lists everything to fix. (Accept or reject is the same either way.)
    """
    kind = KINDS.get(str(obj.get("kind")), KINDS[c.KIND])
    obj = as_admitted(obj, kind)
    old = as_admitted(old, kind) if old is not None else None
    errors = _envelope_errors(obj, kind)
    parsed, schema_errors = _parse(_with_generated_name(obj), kind)
    broken = {e.path for e in schema_errors}
    errors += schema_errors + [e for e in structural_errors(obj, kind) if e.path not in broken]
    if parsed is None:
        return errors
    old_parsed = _parse(old, kind)[0] if old is not None else None
    for rule in kind.rules:
        for path, node, old_node in _nodes_at(parsed, old_parsed, rule.scope):
            where = _join(path, rule.field)
            if not any(where == p or where.startswith((p + ".", p + "[")) for p in broken):
                errors += _run_rule(rule, where, node, old_node)
    return errors


def as_admitted(obj: Mapping[str, Any], kind: Kind | None = None) -> dict[str, Any]:
    """``obj`` as the API server has it when it validates: every ``null`` in an object dropped
    (nulls inside lists stay, and are refused), then, for a LeaderWorkerSet, ``""`` stored as
    upstream stores it where the operator's LeaderWorkerSet webhook does so."""
    out: dict[str, Any] = _without_nulls(obj)
    if kind is not None and kind.kind != c.KIND:
        return out
    return with_defaults(out)


def _without_nulls(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def warnings(obj: Mapping[str, Any]) -> list[str]:
    """The admission warnings the API server would return (DisaggregatedSets only)."""
    if obj.get("kind") != dc.KIND:
        return []
    parsed = _parse(obj, KINDS[dc.KIND])[0]
    return (
        ds_rules.external_replicas_warnings(parsed) if isinstance(parsed, DisaggregatedSet) else []
    )


def _parse(obj: Mapping[str, Any], kind: Kind) -> tuple[Any, list[FieldError]]:
    """Parse, collecting schema errors; wrong values are dropped (so defaults apply) and
    missing objects are added empty, until what is left parses, for the rules to check."""
    data: Any = copy.deepcopy(dict(obj))
    errors: list[FieldError] = []
    for _ in range(8):
        try:
            return kind.model.model_validate(data), errors
        except ValidationError as e:
            for err in e.errors():
                errors.append(_from_pydantic(err))
                _repair(data, tuple(err["loc"]), missing=err["type"] == "missing")
    return None, errors


def _repair(data: Any, loc: tuple[int | str, ...], *, missing: bool) -> None:
    for part in loc[:-1]:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return
    if not isinstance(data, dict):
        return
    if missing:
        data[loc[-1]] = {}
    else:
        data.pop(loc[-1], None)


def _join(path: str, names: tuple[str, ...]) -> str:
    for name in names:
        path = f"{path}.{name}" if path else name
    return path


def _nodes_at(model: Any, old: Any, scope: tuple[str, ...]) -> Iterator[tuple[str, Any, Any]]:
    """(path, value, old value) at a rule's scope; ``[]`` goes through every item of a list,
    reported by index and matched with the old item of the same ``name`` (list-map items are
    correlated by key, as the API server's ratcheting does)."""
    frontier = [("", model, old)]
    for name in scope:
        step = []
        for path, node, old_node in frontier:
            if name == "[]":
                if not isinstance(node, list):
                    continue
                olds = {getattr(o, "name", None): o for o in old_node or []}
                for i, item in enumerate(node):
                    step.append((f"{path}[{i}]", item, olds.get(getattr(item, "name", None))))
            else:
                value = _at(node, (name,))
                if value is not None:
                    step.append((_join(path, (name,)), value, _at(old_node, (name,))))
        frontier = step
    return iter(frontier)


def _run_rule(rule: Rule, where: str, node: Any, old_node: Any) -> list[FieldError]:
    if node is None:
        return []
    if rule.transition == "update" and old_node is None:
        return []
    if (
        rule.target == "crd"
        and rule.transition == "none"
        and old_node is not None
        and _dump(node) == _dump(old_node)
    ):
        return []  # CRD validation ratcheting: an unchanged value is not re-checked
    message = rule.check(node, old_node)
    return [] if message is None else [FieldError(where, message)]


def _envelope_errors(obj: Mapping[str, Any], kind: Kind) -> list[FieldError]:
    errors = []
    if obj.get("apiVersion") != kind.api_version:
        errors.append(FieldError("apiVersion", f"must be {kind.api_version}"))
    if obj.get("kind") != kind.kind:
        errors.append(FieldError("kind", f"must be {kind.kind}"))
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping) or not (meta.get("name") or meta.get("generateName")):
        errors.append(
            FieldError("metadata.name", "Required value: name or generateName is required")
        )
    return errors


def _with_generated_name(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """The API server appends 5 random characters to generateName before validating."""
    meta = obj.get("metadata")
    if isinstance(meta, Mapping) and not meta.get("name") and meta.get("generateName"):
        return {**obj, "metadata": {**meta, "name": f"{meta['generateName']}xxxxx"}}
    return obj


def _dump(value: Any) -> Any:
    return value.to_dict() if isinstance(value, ApiModel) else value


def _at(model: Any, path: tuple[str, ...]) -> Any:
    """The value at a JSON path (camelCase names) of a parsed model; None when absent.
    Plain dicts (object metadata, the pod templates) are entered by key."""
    for name in path:
        if isinstance(model, dict):
            model = model.get(name)
            continue
        if not isinstance(model, BaseModel):
            return None
        attr = next(
            (k for k, f in type(model).model_fields.items() if (f.alias or k) == name), None
        )
        if attr is None:
            return None
        model = getattr(model, attr)
    return model


def _loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out


def _from_pydantic(err: Any) -> FieldError:
    """A pydantic error in the API server's words."""
    kind, path = err["type"], _loc(tuple(err["loc"]))
    value = err.get("input")
    if kind == "missing":
        return FieldError(path, "Required value")
    if kind.startswith("int_or_string"):  # ours, already in the API server's words
        return FieldError(path, str(err["msg"]))
    if kind == "enum":
        allowed = re.findall(r"'([^']*)'", str(err.get("ctx", {}).get("expected", "")))
        listed = ", ".join(f'"{a}"' for a in allowed)
        return FieldError(path, f"Unsupported value: {_json(value)}: supported values: {listed}")
    if kind in ("greater_than_equal", "less_than_equal"):
        return FieldError(path, "Invalid value: must be of type integer with format int32")
    if kind.startswith("int_"):
        return FieldError(path, "Invalid value: must be of type integer")
    if kind.startswith("string_"):
        return FieldError(path, "Invalid value: must be of type string")
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return FieldError(path, "Invalid value: must be of type object")
    if kind == "list_type":
        return FieldError(path, "Invalid value: must be of type array")
    return FieldError(path, str(err["msg"]))


def _json(value: Any) -> str:
    """A value as the API server prints it (JSON: ``null``, never Python's ``None``)."""
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return json.dumps(str(value))


def structural_errors(obj: Mapping[str, Any], kind: Kind | None = None) -> list[FieldError]:
    """Unknown fields (which the API server drops and ``kubectl`` reports as errors by
    default), missing required fields and wrong types, anywhere in the object: this is what
    checks the pod templates and PVC templates, which the models keep as plain dicts."""
    errors: list[FieldError] = []
    _walk(obj, _schema((kind or KINDS[c.KIND]).kind), "", errors)
    return errors


@cache
def _schema(kind: str) -> Mapping[str, Any]:
    return KINDS[kind].schema()


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
}


def _type_error(value: Any, schema: Mapping[str, Any]) -> str | None:
    if schema.get("x-kubernetes-int-or-string"):
        ok = isinstance(value, int | str) and not isinstance(value, bool)
        return None if ok else "Invalid value: must be an integer or a string"
    expected = schema.get("type")
    if expected not in _JSON_TYPES:
        return None
    wrong_bool = isinstance(value, bool) and expected != "boolean"
    if wrong_bool or not isinstance(value, _JSON_TYPES[expected]):
        return f"Invalid value: must be of type {expected}"
    return None


def _bound_error(value: Any, schema: Mapping[str, Any]) -> str | None:
    """minimum/maximum of numbers, minItems/maxItems of lists, minLength of strings."""
    if isinstance(value, int) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            return f"Invalid value: {value}: should be greater than or equal to {schema['minimum']}"
        if "maximum" in schema and value > schema["maximum"]:
            return f"Invalid value: {value}: should be less than or equal to {schema['maximum']}"
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            return f"Invalid value: {len(value)}: should have at least {schema['minItems']} items"
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            return f"Too many: {len(value)}: must have at most {schema['maxItems']} items"
    if isinstance(value, str) and "minLength" in schema and len(value) < schema["minLength"]:
        return f"Invalid value: {value!r}: should be at least {schema['minLength']} chars long"
    return None


def _duplicate_keys(value: Any, schema: Mapping[str, Any], path: str) -> list[FieldError]:
    """Items of a list-map with the same keys (x-kubernetes-list-type: map)."""
    if schema.get("x-kubernetes-list-type") != "map" or not isinstance(value, list):
        return []
    keys = schema.get("x-kubernetes-list-map-keys") or []
    seen: set[str] = set()
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, Mapping):
            continue
        ident = repr([item.get(k) for k in keys])
        if ident in seen:
            out.append(
                FieldError(
                    f"{path}[{i}]", f"Duplicate value: {dict((k, item.get(k)) for k in keys)}"
                )
            )
        seen.add(ident)
    return out


def _value_error(value: Any, schema: Mapping[str, Any]) -> str | None:
    if (bound := _bound_error(value, schema)) is not None:
        return bound
    if not isinstance(value, str):
        return None
    pattern = schema.get("pattern")
    if pattern is not None and re.search(pattern, value) is None:
        return f"Invalid value: should match '{pattern}'"
    max_length = schema.get("maxLength")
    if max_length is not None and len(value) > max_length:
        return f"Too long: may not be more than {max_length} bytes"
    return None


def _walk(value: Any, schema: Mapping[str, Any], path: str, out: list[FieldError]) -> None:
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return
    problem = _type_error(value, schema) or _value_error(value, schema)
    if problem is not None:
        out.append(FieldError(path, problem))
        return
    out += _duplicate_keys(value, schema, path)
    if isinstance(value, Mapping):
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        for key in schema.get("required", ()):
            if key not in value:
                out.append(FieldError(f"{path}.{key}" if path else key, "Required value"))
        for key, item in value.items():
            child = f"{path}.{key}" if path else str(key)
            if props is not None and key in props:
                _walk(item, props[key], child, out)
            elif isinstance(extra, Mapping):
                _walk(item, extra, child, out)
            elif props is not None and path != "metadata":
                out.append(FieldError(child, "unknown field"))
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for i, item in enumerate(value):
            _walk(item, schema["items"], f"{path}[{i}]", out)


def first_error(error: ValidationError) -> str:
    """The first problem pydantic found, as ``field.path: message``: what a reconcile that
    cannot read an object says about it (its Warning event and log line)."""
    first = error.errors()[0]
    where = ".".join(str(p) for p in first.get("loc", ()))
    return f"{where}: {first.get('msg')}"
