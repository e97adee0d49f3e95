"""Generated LeaderWorkerSet specs against the real API server and the running operator: every
spec the API server refuses gets a field-specific message; every spec it accepts is reconciled
(its status reports its generation) without an exception in the operator log. Accepted specs
are scaled down to at most 2 groups of 3 pods (and renamed, short and unique) before they are
created for real, to keep the run small."""

from __future__ import annotations

import copy
import itertools
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, seed, settings

from lws_operator.cluster.operator_process import OperatorProcess
from lws_operator.kube.client import ApiError, Kube
from lws_operator.kube.wait import WaitTimeout, wait_for_objects
from tests.cluster.controller.helpers import lws_path
from tests.cluster.reliability.harness import tracebacks
from tests.unit.api.lws_testdata import lws_objects

pytestmark = pytest.mark.reliability_full

# A field path in the message: spec.replicas, spec.leaderWorkerTemplate.size, metadata.name,
# metadata.annotations[...]...
FIELD = re.compile(r"\b(spec|metadata)(\.[A-Za-z]+|\[[^\]]*\])+")
_count = itertools.count()


async def _refused(kube: Kube, ns: str, obj: dict[str, Any]) -> str | None:
    try:
        await kube.create(lws_path(ns), copy.deepcopy(obj), dry_run=True)
    except ApiError as e:
        if e.status != 422:
            raise
        return e.message
    return None


def _small(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["metadata"]["name"] = f"fz{next(_count)}"
    spec = out["spec"]
    if isinstance(spec.get("replicas"), int):
        spec["replicas"] = min(spec["replicas"], 2)
    lwt = spec["leaderWorkerTemplate"]
    if isinstance(lwt.get("size"), int):
        lwt["size"] = min(lwt["size"], 3)
    return out


@seed(20261130)
@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(obj=lws_objects())
async def test_fuzzed_specs_are_refused_clearly_or_reconciled(
    kube: Kube, lws_namespace: str, operator: OperatorProcess | None, obj: dict[str, Any]
) -> None:
    ns = lws_namespace
    refused = await _refused(kube, ns, obj)
    if refused is not None:
        event("refused")
        assert FIELD.search(refused), f"no field named in: {refused}"
        return
    small = _small(obj)
    if await _refused(kube, ns, small) is not None:
        event("accepted, but not once scaled down")
        return
    event("accepted")
    start = len(operator.log.read_text(errors="replace")) if operator else 0
    created = await kube.create(lws_path(ns), small)
    name, gen = created["metadata"]["name"], created["metadata"]["generation"]
    try:
        await wait_for_objects(
            kube,
            lws_path(ns),
            lambda objs: (
                (objs.get(f"{ns}/{name}", {}).get("status") or {}).get("observedGeneration") == gen
            ),
            timeout=60,
            what=f"the operator to report generation {gen} of {name}",
            field_selector=f"metadata.name={name}",
        )
    except WaitTimeout as e:
        raise AssertionError(f"{e}\nspec: {small}") from None
    finally:
        await kube.delete(lws_path(ns, name), propagation="Background")
    if operator is not None:
        operator.check_alive()
        found = tracebacks(operator.log.read_text(errors="replace")[start:])
        assert not found, "\n\n".join(found) + f"\nspec: {small}"
