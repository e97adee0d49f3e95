"""The admission corpus and generated LeaderWorkerSet specs against the real API server and the
running operator: every spec the API server refuses gets a field-specific message; every spec it
accepts is reconciled (its status reports its generation) without an exception in the operator
log. Accepted generated specs are scaled down to at most 2 groups of 3 pods (and renamed, short
and unique) before they are created for real, to keep the run small."""

from __future__ import annotations

import asyncio
import copy
import itertools
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, seed, settings

from lws_operator.kube.client import ApiError, Kube
from lws_testbed.operator_process import OperatorProcess
from lws_testbed.wait import WaitTimeout, wait_for_objects
from tests.cluster.controller.helpers import lws_path
from tests.cluster.reliability.harness import tracebacks
from tests.unit.api.lws_testdata import Case, load_cases, lws_objects

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


INVALID, VALID = load_cases()


async def test_the_corpus_for_real_with_the_operator_running(
    kube: Kube, lws_namespace: str, operator: OperatorProcess | None
) -> None:
    """Every case of tests/unit/api/lws_cases.yaml written for real (the API tests dry-run
    them): each invalid create or update is refused with its field's message and changes
    nothing; each valid object, and each object an invalid update was tried on, is reconciled
    (its status reports its generation) without an exception in the operator log."""
    ns = lws_namespace
    start = len(operator.log.read_text(errors="replace")) if operator else 0
    gate = asyncio.Semaphore(8)

    async def created(obj: dict[str, Any]) -> tuple[str, int]:
        body = await kube.create(lws_path(ns), copy.deepcopy(obj))
        return body["metadata"]["name"], body["metadata"]["generation"]

    async def invalid(case: Case) -> tuple[str, int] | None:
        async with gate:
            live = None if case.old is None else await created(case.old)
            with pytest.raises(ApiError) as refused:
                if case.old is None:
                    await kube.create(lws_path(ns), copy.deepcopy(case.obj))
                else:
                    await kube.patch(lws_path(ns, case.name), case.patch)
            e = refused.value
            assert e.status == 422, f"{case}: {e}"
            want = case.server or f"{case.path}: "
            assert want in e.message and (case.server or str(case.message)) in e.message, (
                f"{case}: {e.message}"
            )
            return live

    async def valid(case: Case) -> tuple[str, int]:
        async with gate:
            if case.old is None:
                return await created(case.obj)
            await created(case.old)
            body = await kube.patch(lws_path(ns, case.name), case.patch)
            return body["metadata"]["name"], body["metadata"]["generation"]

    live = [x for x in await asyncio.gather(*(invalid(c) for c in INVALID)) if x is not None]
    live += await asyncio.gather(*(valid(c) for c in VALID))
    want = dict(live)

    def late(objs: dict[str, dict[str, Any]]) -> dict[str, tuple[Any, int]]:
        """(observedGeneration, generation) of the objects not reported yet."""
        seen = {
            o["metadata"]["name"]: (o.get("status") or {}).get("observedGeneration")
            for o in objs.values()
        }
        return {n: (seen.get(n), g) for n, g in want.items() if seen.get(n) != g}

    await wait_for_objects(
        kube,
        lws_path(ns),
        lambda objs: not late(objs),
        timeout=120,
        what=f"the operator to report the generation of all {len(want)} objects",
        summary=lambda objs: f"not reported yet (observed, generation): {late(objs)}",
    )
    if operator is not None:
        operator.check_alive()
        found = tracebacks(operator.log.read_text(errors="replace")[start:])
        assert not found, "\n\n".join(found)
