"""The LeaderWorkerSet CustomResourceDefinition, generated from the pydantic models.

The spec and status schemas come from :mod:`lws_operator.api.models` (pydantic's JSON schema,
made structural: references inlined, no titles, no nullable unions), the pod template and PVC
schemas from :mod:`lws_operator.api.kube_schema`, and the ``x-kubernetes-validations`` from
:mod:`lws_operator.api.rules`. ``crds/leaderworkerset.x-k8s.io_leaderworkersets.yaml`` is this
module's output; a unit test fails when the two differ.
"""

from __future__ import annotations

import copy
from typing import Any

import yaml
from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from lws_operator.api import constants as c
from lws_operator.api import kube_schema
from lws_operator.api.models import LeaderWorkerSet, LeaderWorkerSetSpec, LeaderWorkerSetStatus
from lws_operator.api.rules import RULES, Rule, crd_rules_at
from lws_operator.api.types import KUBE_SCHEMA_MARKER

JsonObj = dict[str, Any]


class _StructuralJsonSchema(GenerateJsonSchema):
    """pydantic's JSON schema with what CRD schemas reject left out: ``Optional[X]`` is just X
    (absent means unset), no titles, no null defaults."""

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        json_schema = super().default_schema(schema)
        if json_schema.get("default", ...) is None:
            del json_schema["default"]
        return json_schema


def model_schema(model: type[BaseModel]) -> JsonObj:
    """The structural CRD schema of an API model (also the DisaggregatedSet's, api/ds_crd.py)."""
    raw = model.model_json_schema(by_alias=True, schema_generator=_StructuralJsonSchema)
    defs = raw.pop("$defs", {})
    resolved: JsonObj = _resolve(raw, defs)
    return resolved


def _resolve(node: Any, defs: JsonObj) -> Any:
    """Inline ``$ref``s (the field's own keys win over the referenced model's), expand the
    Kubernetes schema markers and drop titles."""
    if isinstance(node, list):
        return [_resolve(v, defs) for v in node]
    if not isinstance(node, dict):
        return node
    out: JsonObj = {}
    if "$ref" in node:
        out.update(_resolve(defs[node["$ref"].rsplit("/", 1)[-1]], defs))
    if KUBE_SCHEMA_MARKER in node:
        out.update(kube_schema.structural(node[KUBE_SCHEMA_MARKER]))
    for key, value in node.items():
        if key in ("$ref", "title", KUBE_SCHEMA_MARKER):
            continue
        if key == "properties":
            out[key] = {name: _resolve(prop, defs) for name, prop in value.items()}
        else:
            out[key] = _resolve(value, defs)
    return out


def strip_defaults(node: Any) -> None:
    """Status is written by the operator only: no server-side defaults there."""
    if isinstance(node, dict):
        node.pop("default", None)
        for prop in node.get("properties", {}).values():
            strip_defaults(prop)
        strip_defaults(node.get("items"))


def _node(schema: JsonObj, path: tuple[str, ...]) -> JsonObj:
    for name in path:
        schema = schema["properties"][name]
    return schema


def crd_validation(rule: Rule) -> JsonObj:
    """A rule as an x-kubernetes-validations entry."""
    out: JsonObj = {"rule": rule.cel, "message": rule.message}
    if rule.message_expression:
        out["messageExpression"] = rule.message_expression
    if rule.field:
        out["fieldPath"] = "." + ".".join(rule.field)
    if rule.reason != "FieldValueInvalid":
        out["reason"] = rule.reason
    if rule.transition == "optional":
        out["optionalOldSelf"] = True
    return out


def _attach_rules(root: JsonObj) -> None:
    for scope in sorted({r.scope for r in RULES if r.target == "crd"}):
        node = _node(root, scope)
        node["x-kubernetes-validations"] = [crd_validation(r) for r in crd_rules_at(scope)]


def open_api_schema() -> JsonObj:
    """The CRD's ``openAPIV3Schema``."""
    spec = model_schema(LeaderWorkerSetSpec)
    status = model_schema(LeaderWorkerSetStatus)
    strip_defaults(status)
    root: JsonObj = {
        "description": LeaderWorkerSet.__doc__,
        "type": "object",
        "required": ["spec"],
        "properties": {
            "apiVersion": {
                "description": "APIVersion defines the versioned schema of this representation "
                "of an object.",
                "type": "string",
            },
            "kind": {
                "description": "Kind is a string value representing the REST resource this "
                "object represents.",
                "type": "string",
            },
            # The root metadata schema may only constrain name and generateName; naming the
            # property lets validation rules report errors at metadata.name.
            "metadata": {"type": "object", "properties": {"name": {"type": "string"}}},
            "spec": spec,
            "status": status,
        },
    }
    _attach_rules(root)
    return root


PRINTER_COLUMNS = [
    {
        "name": "Ready",
        "type": "integer",
        "jsonPath": ".status.readyReplicas",
        "description": "Number of ready replicas",
    },
    {
        "name": "Desired",
        "type": "integer",
        "jsonPath": ".spec.replicas",
        "description": "Number of desired replicas",
    },
    {
        "name": "Up-to-date",
        "type": "integer",
        "jsonPath": ".status.updatedReplicas",
        "description": "Number of up-to-date replicas",
    },
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]


def custom_resource_definition() -> JsonObj:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": c.CRD_NAME},
        "spec": {
            "group": c.GROUP,
            "names": {
                "kind": c.KIND,
                "listKind": c.LIST_KIND,
                "plural": c.PLURAL,
                "singular": c.SINGULAR,
                "shortNames": list(c.SHORT_NAMES),
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": c.VERSION,
                    "served": True,
                    "storage": True,
                    "additionalPrinterColumns": copy.deepcopy(PRINTER_COLUMNS),
                    "schema": {"openAPIV3Schema": open_api_schema()},
                    "subresources": {
                        "status": {},
                        "scale": {
                            "specReplicasPath": ".spec.replicas",
                            "statusReplicasPath": ".status.replicas",
                            "labelSelectorPath": ".status.hpaPodSelector",
                        },
                    },
                }
            ],
        },
    }


def _header() -> str:
    return (
        "# Generated by `lws-operator crd` from lws_operator/api; do not edit.\n"
        f"# Pod template and PVC schemas: {kube_schema.source()}.\n"
        "# Install with server-side apply (the object is too large for kubectl's client-side\n"
        "# last-applied annotation): kubectl apply --server-side -f <this file>\n"
    )


def to_yaml(obj: JsonObj) -> str:
    return yaml.safe_dump(obj, sort_keys=False, width=100)


def crd_yaml() -> str:
    return _header() + "---\n" + to_yaml(custom_resource_definition())
