"""Which pods request TPUs (upstream tpu_test.go TestPodRequestsTPUs)."""

from __future__ import annotations

from typing import Any

import pytest

from lws_operator.api import constants as c
from lws_operator.plan.lws.podview import PodMutationError
from lws_operator.plan.lws.tpu import pod_requests_tpus
from tests.unit.plan.pods import container


def _spec(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p-0"}, "spec": spec}


def _resources(**amounts: Any) -> dict[str, Any]:
    return {"name": "c", "resources": {k: {c.TPU_RESOURCE_NAME: v} for k, v in amounts.items()}}


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        (_spec(containers=[container(tpus="4")]), True),  # "requests in containers"
        (_spec(initContainers=[container(tpus="4")]), True),  # "requests in init containers"
        (_spec(), False),  # "no requests"
        (_spec(containers=[container(), container(tpus="1")]), True),  # "mix containers"
        (_spec(containers=[container()]), False),
        (_spec(containers=[_resources(requests="2")]), True),
        (_spec(containers=[_resources(limits="0", requests="2")]), True),
        (_spec(containers=[_resources(limits="0")]), False),
        (_spec(containers=[_resources(limits="500m")]), True),
        (_spec(containers=[_resources(limits=1.5)]), True),
        (_spec(containers=[_resources(limits=None, requests=None)]), False),
        (_spec(containers=[{"name": "c", "resources": None}]), False),
    ],
)
def test_pod_requests_tpus(pod: dict[str, Any], expected: bool) -> None:
    assert pod_requests_tpus(pod) is expected


@pytest.mark.parametrize("amount", ["4 ", "four", "1.2.3", True, [4]])
def test_malformed_quantities_are_errors(amount: Any) -> None:
    with pytest.raises(
        PodMutationError, match=r"pod p-0: spec\.containers\[0\]\.resources\.limits"
    ):
        pod_requests_tpus(_spec(containers=[_resources(limits=amount)]))
