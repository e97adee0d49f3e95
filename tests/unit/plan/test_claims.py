"""Changed volumeClaimTemplates against an existing leader StatefulSet (plan/lws/claims.py)."""

from __future__ import annotations

from typing import Any

from lws_operator.plan.lws.claims import BLOCKED, KEEP, claims_conflict, keep_claims


def claim(name: str = "data", size: str = "1Gi", **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": size}},
            **spec,
        },
    }


def stored(*claims: dict[str, Any]) -> dict[str, Any]:
    """A StatefulSet as the API server returns it: claims with defaults and a status."""
    out = []
    for c in claims:
        full = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", **c}
        full["spec"] = {"volumeMode": "Filesystem", **c["spec"]}
        full["status"] = {"phase": "Pending"}
        out.append(full)
    return {"spec": {"volumeClaimTemplates": out, "replicas": 1}}


def desired(*claims: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"volumeClaimTemplates": list(claims), "replicas": 2}}


def test_no_statefulset_yet_or_same_claims() -> None:
    assert claims_conflict(desired(claim()), None) is None
    assert claims_conflict(desired(claim()), stored(claim())) is None
    # the API server's defaults and quantity spellings are no change
    assert claims_conflict(desired(claim(size="1024Mi")), stored(claim(size="1Gi"))) is None
    assert claims_conflict({"spec": {}}, {"spec": {}}) is None


def test_other_specs_under_the_same_names_keep_the_current_claims() -> None:
    current = stored(claim())
    for changed in (claim(size="2Gi"), claim(storageClassName="fast"), claim(volumeMode="Block")):
        want = desired(changed)
        assert claims_conflict(want, current) == KEEP
        keep_claims(want, current)
        assert want["spec"] == {
            "volumeClaimTemplates": current["spec"]["volumeClaimTemplates"],
            "replicas": 2,
        }


def test_added_removed_or_renamed_claims_are_blocked() -> None:
    current = stored(claim())
    assert claims_conflict(desired(claim(), claim("logs")), current) == BLOCKED
    assert claims_conflict(desired(), current) == BLOCKED
    assert claims_conflict(desired(claim("other")), current) == BLOCKED
    assert claims_conflict(desired(claim()), {"spec": {}}) == BLOCKED
