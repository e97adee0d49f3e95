"""The DisaggregatedSet API: the committed CRDs and policies are the generator's output, the
CRDs have upstream's names, subresources and printer columns and a structural schema, and
``lws-operator validate`` gives the verdicts of tests/unit/api/ds_cases.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from lws_operator.api import ds_admission_policy, ds_crd
from lws_operator.api.ds_models import DisaggregatedSet, DisaggregatedSetRoleScaler
from lws_operator.api.validation import validate, warnings
from lws_operator.cli import main
from tests.unit.api.ds_cases import INVALID, VALID, Case, ds
from tests.unit.api.test_api_crd import _nodes

ROOT = Path(__file__).parents[3]
FILES = {
    "disaggregatedset.x-k8s.io_disaggregatedsets.yaml": ds_crd.crd_yaml,
    "disaggregatedset.x-k8s.io_disaggregatedsetrolescalers.yaml": ds_crd.scaler_crd_yaml,
    "disaggregatedset.x-k8s.io_admissionpolicy.yaml": ds_admission_policy.policy_yaml,
}


@pytest.mark.parametrize("name", sorted(FILES))
def test_committed_files_are_up_to_date(name: str) -> None:
    assert (ROOT / "crds" / name).read_text() == FILES[name](), (
        "regenerate with `lws-operator crd --kind ... [--admission-policy] -o crds/...`"
    )


def test_cli_prints_each_kind(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["crd", "--kind", "DisaggregatedSet"]) == 0
    assert capsys.readouterr().out == ds_crd.crd_yaml()
    assert main(["crd", "--kind", "DisaggregatedSetRoleScaler"]) == 0
    assert capsys.readouterr().out == ds_crd.scaler_crd_yaml()
    assert main(["crd", "--kind", "DisaggregatedSetRoleScaler", "--admission-policy"]) == 2


def test_names_subresources_and_columns() -> None:
    crd = ds_crd.custom_resource_definition()["spec"]
    assert crd["group"] == "disaggregatedset.x-k8s.io" and crd["scope"] == "Namespaced"
    assert crd["names"] == {
        "kind": "DisaggregatedSet",
        "listKind": "DisaggregatedSetList",
        "plural": "disaggregatedsets",
        "singular": "disaggregatedset",
    }
    (version,) = crd["versions"]
    assert version["subresources"] == {"status": {}}
    scaler = ds_crd.scaler_custom_resource_definition()["spec"]
    assert scaler["names"]["shortNames"] == ["dsrs"]
    (version,) = scaler["versions"]
    assert version["subresources"]["scale"] == {
        "specReplicasPath": ".spec.replicas",
        "statusReplicasPath": ".status.replicas",
        "labelSelectorPath": ".status.selector",
    }
    columns = [(c["name"], c["type"], c["jsonPath"]) for c in version["additionalPrinterColumns"]]
    assert columns == [
        ("Desired", "integer", ".spec.replicas"),
        ("Current", "integer", ".status.replicas"),
        ("Age", "date", ".metadata.creationTimestamp"),
    ]
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["required"] == ["replicas"]
    assert spec["properties"]["replicas"]["default"] == 0


@pytest.mark.parametrize(
    "crd", [ds_crd.custom_resource_definition(), ds_crd.scaler_custom_resource_definition()]
)
def test_schemas_are_structural(crd: dict[str, Any]) -> None:
    allowed = {
        "type", "format", "description", "required", "enum", "default", "minimum", "maximum",
        "minLength", "maxLength", "minItems", "maxItems", "pattern", "properties",
        "additionalProperties", "items", "anyOf", "x-kubernetes-list-type",
        "x-kubernetes-list-map-keys", "x-kubernetes-map-type", "x-kubernetes-int-or-string",
        "x-kubernetes-validations",
    }  # fmt: skip
    for path, node in _nodes(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]):
        assert set(node) <= allowed, (path, set(node) - allowed)
        assert "type" in node or node.get("x-kubernetes-int-or-string"), path
        for key in node.get("x-kubernetes-list-map-keys", []):
            item = node["items"]
            assert key in item.get("required", []) or "default" in item["properties"][key], path


def test_upstreams_defaults() -> None:
    """Those of upstream's CRD: no rolloutStrategy or networkConfig is added to a role (the
    rollout defaults to maxSurge 1, maxUnavailable 0 without one)."""
    parsed = DisaggregatedSet.model_validate(ds()).to_dict()
    assert parsed["spec"]["slices"] == 1 and "placementPolicy" not in parsed["spec"]
    role = parsed["spec"]["roles"][0]["spec"]
    assert role["replicas"] == 1 and role["startupPolicy"] == "LeaderCreated"
    assert "rolloutStrategy" not in role and "networkConfig" not in role
    assert DisaggregatedSetRoleScaler.model_validate({}).to_dict()["spec"] == {"replicas": 0}


@pytest.mark.parametrize("case", VALID, ids=str)
def test_valid(case: Case) -> None:
    assert validate(case.obj, case.old) == []
    found = warnings(case.obj)
    if case.warning is None:
        assert found == []
    else:
        assert any(case.warning in w for w in found), found


@pytest.mark.parametrize("case", INVALID, ids=str)
def test_invalid(case: Case) -> None:
    errors = validate(case.obj, case.old)
    assert any(e.path == case.path and case.message in e.message for e in errors), errors


def test_validate_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text(yaml.safe_dump(VALID[-1].obj))
    bad.write_text(yaml.safe_dump_all([INVALID[0].obj, VALID[0].obj]))
    assert main(["validate", str(good)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f'{good}: warning: role "prefill" sets scaling.mode: External')
    assert main(["validate", str(bad)]) == 1
    out = capsys.readouterr().out
    assert out == f"{bad}[0]: {INVALID[0].path}: {INVALID[0].message}\n"
