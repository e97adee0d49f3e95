"""The DisaggregatedSet and DisaggregatedSetRoleScaler CustomResourceDefinitions, generated
from the pydantic models (:mod:`lws_operator.api.ds_models`) the way the LeaderWorkerSet CRD
is (:mod:`lws_operator.api.crd`), with the rules of :mod:`lws_operator.api.ds_rules`.
``crds/disaggregatedset.x-k8s.io_*.yaml`` are this module's output; a unit test fails when
they differ.
"""

from __future__ import annotations

import copy
from typing import Any

from lws_operator.api import ds_constants as c
from lws_operator.api import kube_schema
from lws_operator.api.crd import crd_validation, model_schema, strip_defaults, to_yaml
from lws_operator.api.ds_models import (
    DisaggregatedSet,
    DisaggregatedSetRoleScaler,
    DisaggregatedSetSpec,
    DisaggregatedSetStatus,
    RoleScalerSpec,
    RoleScalerStatus,
)
from lws_operator.api.ds_rules import RULES, crd_rules_at

JsonObj = dict[str, Any]

_API_VERSION = {
    "description": "APIVersion defines the versioned schema of this representation of an object.",
    "type": "string",
}
_KIND = {
    "description": "Kind is a string value representing the REST resource this object represents.",
    "type": "string",
}


def _node(schema: JsonObj, path: tuple[str, ...]) -> JsonObj:
    """The schema node at a rule scope; ``[]`` steps into a list's items."""
    for name in path:
        schema = schema["items"] if name == "[]" else schema["properties"][name]
    return schema


def _root(model: type[Any], spec: JsonObj, status: JsonObj, *, spec_required: bool) -> JsonObj:
    strip_defaults(status)
    root: JsonObj = {
        "description": " ".join((model.__doc__ or "").split()),
        "type": "object",
        "properties": {
            "apiVersion": dict(_API_VERSION),
            "kind": dict(_KIND),
            # Root rules may read metadata.name (nothing else of metadata).
            "metadata": {"type": "object", "properties": {"name": {"type": "string"}}},
            "spec": spec,
            "status": status,
        },
    }
    if spec_required:
        root["required"] = ["spec"]
    return root


def open_api_schema() -> JsonObj:
    """The DisaggregatedSet CRD's ``openAPIV3Schema``."""
    root = _root(
        DisaggregatedSet,
        model_schema(DisaggregatedSetSpec),
        model_schema(DisaggregatedSetStatus),
        spec_required=True,
    )
    for scope in sorted({r.scope for r in RULES if r.target == "crd"}):
        _node(root, scope)["x-kubernetes-validations"] = [
            crd_validation(r) for r in crd_rules_at(scope)
        ]
    return root


def scaler_open_api_schema() -> JsonObj:
    spec = model_schema(RoleScalerSpec)
    # The scale subresource reads spec.replicas at once (an HPA reads /scale before it ever
    # writes): it must always be there, hence required with a default, and spec defaulted too
    # (upstream's is not: /scale of a scaler made without a spec fails there).
    spec["required"] = ["replicas"]
    spec["default"] = {"replicas": 0}
    return _root(
        DisaggregatedSetRoleScaler, spec, model_schema(RoleScalerStatus), spec_required=False
    )


def _available(condition: str) -> str:
    return f'.status.conditions[?(@.type=="{condition}")].status'


PRINTER_COLUMNS = [
    {"name": "Slices", "type": "integer", "jsonPath": ".spec.slices"},
    {"name": "Available", "type": "string", "jsonPath": _available(c.CONDITION_AVAILABLE)},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]
SCALER_PRINTER_COLUMNS = [
    {"name": "Desired", "type": "integer", "jsonPath": ".spec.replicas"},
    {"name": "Current", "type": "integer", "jsonPath": ".status.replicas"},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]


def _crd(
    name: str,
    names: JsonObj,
    columns: list[JsonObj],
    schema: JsonObj,
    subresources: JsonObj,
) -> JsonObj:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": {
            "group": c.GROUP,
            "names": names,
            "scope": "Namespaced",
            "versions": [
                {
                    "name": c.VERSION,
                    "served": True,
                    "storage": True,
                    "additionalPrinterColumns": copy.deepcopy(columns),
                    "schema": {"openAPIV3Schema": schema},
                    "subresources": subresources,
                }
            ],
        },
    }


def custom_resource_definition() -> JsonObj:
    names = {"kind": c.KIND, "listKind": c.LIST_KIND, "plural": c.PLURAL, "singular": c.SINGULAR}
    return _crd(c.CRD_NAME, names, PRINTER_COLUMNS, open_api_schema(), {"status": {}})


def scaler_custom_resource_definition() -> JsonObj:
    names = {
        "kind": c.SCALER_KIND,
        "listKind": c.SCALER_LIST_KIND,
        "plural": c.SCALER_PLURAL,
        "singular": c.SCALER_SINGULAR,
        "shortNames": list(c.SCALER_SHORT_NAMES),
    }
    scale = {
        "specReplicasPath": ".spec.replicas",
        "statusReplicasPath": ".status.replicas",
        "labelSelectorPath": ".status.selector",
    }
    return _crd(
        c.SCALER_CRD_NAME,
        names,
        SCALER_PRINTER_COLUMNS,
        scaler_open_api_schema(),
        {"status": {}, "scale": scale},
    )


def _header(install: str) -> str:
    return (
        "# Generated by `lws-operator crd` from lws_operator/api; do not edit.\n"
        f"# Pod template and PVC schemas: {kube_schema.source()}.\n"
        f"# {install}\n"
    )


def crd_yaml() -> str:
    return (
        _header("Install with server-side apply: kubectl apply --server-side -f <this file>")
        + "---\n"
        + to_yaml(custom_resource_definition())
    )


def scaler_crd_yaml() -> str:
    return "# Generated by `lws-operator crd` from lws_operator/api; do not edit.\n---\n" + to_yaml(
        scaler_custom_resource_definition()
    )
