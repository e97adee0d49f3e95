"""The generated CRD and admission policy: committed files up to date, shape, structural."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from lws_operator.api import constants as c
from lws_operator.api import crd, kube_schema
from lws_operator.api.admission_policy import policy_yaml
from lws_operator.api.types import INT_OR_STRING_MAX_LENGTH
from lws_operator.cli import main

ROOT = Path(__file__).parents[3]
CRD_FILE = ROOT / "crds" / "leaderworkerset.x-k8s.io_leaderworkersets.yaml"
POLICY_FILE = ROOT / "crds" / "leaderworkerset.x-k8s.io_admissionpolicy.yaml"
REGENERATE = (
    "run `lws-operator crd -o crds/leaderworkerset.x-k8s.io_leaderworkersets.yaml && "
    "lws-operator crd --admission-policy -o crds/leaderworkerset.x-k8s.io_admissionpolicy.yaml`"
)


def test_committed_crd_is_up_to_date() -> None:
    assert CRD_FILE.read_text() == crd.crd_yaml(), REGENERATE


def test_committed_admission_policy_is_up_to_date() -> None:
    assert POLICY_FILE.read_text() == policy_yaml(), REGENERATE


def test_cli_writes_what_it_prints(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "crd.yaml"
    assert main(["crd", "-o", str(out)]) == 0
    assert main(["crd"]) == 0
    assert capsys.readouterr().out == out.read_text()


@pytest.fixture(scope="module")
def definition() -> dict[str, Any]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # 1 MB of YAML: use libyaml
    docs = [d for d in yaml.load_all(CRD_FILE.read_text(), Loader=loader) if d]
    assert len(docs) == 1
    doc: dict[str, Any] = docs[0]
    return doc


def test_names_and_subresources(definition: dict[str, Any]) -> None:
    spec = definition["spec"]
    assert definition["metadata"]["name"] == "leaderworkersets.leaderworkerset.x-k8s.io"
    assert spec["group"] == c.GROUP and spec["scope"] == "Namespaced"
    assert spec["names"] == {
        "kind": "LeaderWorkerSet",
        "listKind": "LeaderWorkerSetList",
        "plural": "leaderworkersets",
        "singular": "leaderworkerset",
        "shortNames": ["lws"],
    }
    (version,) = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1", True, True)
    assert version["subresources"] == {
        "status": {},
        "scale": {
            "specReplicasPath": ".spec.replicas",
            "statusReplicasPath": ".status.replicas",
            "labelSelectorPath": ".status.hpaPodSelector",
        },
    }
    columns = [(x["name"], x["type"], x["jsonPath"]) for x in version["additionalPrinterColumns"]]
    assert columns == [
        ("Ready", "integer", ".status.readyReplicas"),
        ("Desired", "integer", ".spec.replicas"),
        ("Up-to-date", "integer", ".status.updatedReplicas"),
        ("Age", "date", ".metadata.creationTimestamp"),
    ]


def _nodes(schema: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    if not isinstance(schema, dict):
        return
    yield path, schema
    for name, prop in schema.get("properties", {}).items():
        yield from _nodes(prop, f"{path}.{name}")
    if isinstance(schema.get("items"), dict):
        yield from _nodes(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _nodes(schema["additionalProperties"], f"{path}{{}}")


def _schema(definition: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = definition["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def test_schema_is_structural(definition: dict[str, Any]) -> None:
    """What the API server requires of a CRD schema: a type everywhere (or int-or-string), no
    $ref, no unknown keywords, properties and additionalProperties never together, and every
    key of a map-list required or defaulted."""
    allowed = {
        "type", "format", "description", "required", "enum", "default", "minimum", "maximum",
        "minLength", "maxLength", "pattern", "properties", "additionalProperties", "items",
        "anyOf", "x-kubernetes-list-type", "x-kubernetes-list-map-keys",
        "x-kubernetes-map-type", "x-kubernetes-int-or-string", "x-kubernetes-validations",
    }  # fmt: skip
    for path, node in _nodes(_schema(definition)):
        assert set(node) <= allowed, (path, set(node) - allowed)
        assert "type" in node or node.get("x-kubernetes-int-or-string"), path
        assert not ("properties" in node and "additionalProperties" in node), path
        for key in node.get("x-kubernetes-list-map-keys", []):
            item = node["items"]
            assert key in item.get("required", []) or "default" in item["properties"][key], path


def test_pod_template_and_pvc_schemas_are_embedded(definition: dict[str, Any]) -> None:
    lwt = _schema(definition)["properties"]["spec"]["properties"]["leaderWorkerTemplate"]
    for template in ("leaderTemplate", "workerTemplate"):
        pod_spec = lwt["properties"][template]["properties"]["spec"]
        assert pod_spec["required"] == ["containers"]
        container = pod_spec["properties"]["containers"]["items"]["properties"]
        assert container["resources"]["properties"]["limits"]["additionalProperties"][
            "x-kubernetes-int-or-string"
        ]
        assert container["ports"]["items"]["properties"]["protocol"]["default"] == "TCP"
        meta = lwt["properties"][template]["properties"]["metadata"]["properties"]
        assert set(meta) == {"annotations", "finalizers", "labels", "name", "namespace"}
    pvc = lwt["properties"]["volumeClaimTemplates"]["items"]["properties"]
    assert {"apiVersion", "kind", "metadata", "spec", "status"} <= set(pvc)


def test_zero_value_defaults_are_ours_only(definition: dict[str, Any]) -> None:
    """The OpenAPI builder emits `default: ""`/`0`/`{}` for every non-pointer field; as CRD
    defaults they would fill user pod templates with empty values. Only our own fields keep
    such defaults, plus map-list keys, which a CRD must default."""
    zero = {
        path
        for path, node in _nodes(_schema(definition))
        if "default" in node and node["default"] in ("", 0, {}, False, [])
    }
    assert zero == {
        ".spec.leaderWorkerTemplate.leaderTemplate.spec.imagePullSecrets[].name",
        ".spec.leaderWorkerTemplate.workerTemplate.spec.imagePullSecrets[].name",
        ".spec.rolloutStrategy",
        ".spec.rolloutStrategy.rollingUpdateConfiguration",
        ".spec.rolloutStrategy.rollingUpdateConfiguration.partition",
        ".spec.rolloutStrategy.rollingUpdateConfiguration.maxSurge",
        ".spec.networkConfig",
    }


def test_crd_size_is_within_api_limits(definition: dict[str, Any]) -> None:
    # etcd's default request limit is 1.5 MiB; the API server stores the CRD as JSON.
    assert len(json.dumps(definition, separators=(",", ":"))) < 1_000_000
    assert CRD_FILE.stat().st_size < 1_500_000


def test_kube_schemas_are_from_the_pinned_kubernetes() -> None:
    versions = (ROOT / "testbed" / "lws_testbed" / "versions.env").read_text()
    assert f"k8s.io/kubernetes@v{_pinned(versions)}/" in kube_schema.source()


def _pinned(versions_env: str) -> str:
    for line in versions_env.splitlines():
        if line.startswith("KUBE_VERSION="):
            return line.split("=", 1)[1].strip()
    raise AssertionError("KUBE_VERSION not found")


def test_extraction_is_reproducible(tmp_path: Path) -> None:
    """Re-extract from the Go module cache when it is there (it is not needed otherwise)."""
    source = kube_schema.source().removesuffix("/api/openapi-spec/v3")
    gomodcache = Path.home() / "go" / "pkg" / "mod"
    openapi = gomodcache / source / "api" / "openapi-spec" / "v3"
    if not openapi.is_dir():
        pytest.skip(f"{openapi} not present")
    out = tmp_path / "kube_schemas.json"
    assert kube_schema.main([str(openapi), "-o", str(out)]) == 0
    assert out.read_text() == kube_schema.SCHEMA_FILE.read_text()


def test_percent_rule_reads_digits_a_double_holds() -> None:
    """The CRD rule "must not be greater than 100%" converts the digits with double(), which
    fails above ~1.8e308; maxLength keeps the value to 63 digits before any CRD rule runs."""
    assert INT_OR_STRING_MAX_LENGTH - 1 < 309
    assert float("9" * (INT_OR_STRING_MAX_LENGTH - 1)) > 100.0
    assert float("0" * (INT_OR_STRING_MAX_LENGTH - 4) + "100") == 100.0
