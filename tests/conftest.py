"""Shared test configuration: hypothesis profiles (CI runs the same, derandomized), and the
tests run on every supported Kubernetes version."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev"))

# The tests that run on every supported Kubernetes version in `make test` (pytest -m versions;
# docs/kubernetes-versions.md says which and why): the API as each API server admits it, the
# objects, restarts and rollouts as upstream makes them, and, on a real node, the
# install from deploy/, real crashes and the webhooks. The full suite runs on the default
# version, and on all of them with `make test-versions`.
VERSIONS_SUITE = (
    "tests/cluster/test_smoke.py",
    "tests/cluster/api/test_api_cluster_admission.py",
    "tests/cluster/api/test_ds_cluster_admission.py",
    "tests/cluster/api/test_api_cluster_defaults.py",
    "tests/cluster/api/test_api_cluster_examples.py",
    "tests/cluster/api/test_api_cluster_policy.py",
    "tests/cluster/api/test_api_cluster_serving.py",
    "tests/cluster/controller/test_objects.py",
    "tests/cluster/controller/test_lifecycle.py",
    "tests/cluster/controller/test_restarts.py",
    "tests/cluster/rollout/test_rollout_scenarios.py",
    "tests/cluster/disaggregated/test_ds_lifecycle.py",
    "tests/cluster/disaggregated/test_ds_rollout.py",
    "tests/cluster/scheduling/test_exclusive_placement.py",
    "tests/cluster/scheduling/test_gang_native.py",
    "tests/cluster/scheduling/test_gang_unserved.py",
    "tests/e2e/test_operator_in_cluster.py",
    "tests/e2e/test_real_containers.py",
    "tests/e2e/after_teardown/test_host_restored.py",
)
ROOT = Path(__file__).resolve().parent.parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    suite = {ROOT / p for p in VERSIONS_SUITE}
    for item in items:
        if Path(str(item.fspath)) in suite:
            item.add_marker(pytest.mark.versions)
