"""Metrics: controller-runtime's series from the reconcile wrapper and the queue, the LWS
series from the reconcile hooks, the HTTP endpoints; and the JSON log lines."""

from __future__ import annotations

import io
import json
import logging

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from lws_operator.controller.runtime.logs import ContextFilter, JsonFormatter, reconciling
from lws_operator.controller.runtime.queue import WorkQueue
from lws_operator.controller.servers.metrics import (
    Metrics,
    MetricsServing,
    group_state,
    parse_bind_address,
    serve_endpoints,
)
from tests.unit.plan.groups import CURRENT, group


def samples(m: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in text_string_to_metric_families(m.exposition().decode())
        for s in f.samples
    }


def test_group_states_partition_the_groups() -> None:
    assert group_state(group(0), CURRENT, 2) == "ready"
    assert group_state(group(0, ready=False), CURRENT, 2) == "not_ready"
    assert group_state(group(0, ready=False, updated=False), CURRENT, 2) == "updating"
    assert group_state(group(0, updated=False), CURRENT, 2) == "updating"


async def test_reconcile_wrapper_counts_results_errors_and_time() -> None:
    m = Metrics()

    async def handler(key: object) -> float | None:
        if key == "boom":
            raise RuntimeError("boom")
        return 5.0 if key == "later" else None

    wrapped = m.instrument(handler)
    assert await wrapped(("ns", "a")) is None
    assert await wrapped("later") == 5.0
    with pytest.raises(RuntimeError):
        await wrapped("boom")
    s = samples(m)
    ctl = (("controller", "leaderworkerset"),)
    total = "controller_runtime_reconcile_total"
    assert s[(total, (*ctl, ("result", "success")))] == 1
    assert s[(total, (*ctl, ("result", "requeue_after")))] == 1
    assert s[(total, (*ctl, ("result", "error")))] == 1
    assert s[(total, (*ctl, ("result", "requeue")))] == 0
    assert s[("controller_runtime_reconcile_errors_total", ctl)] == 1
    assert s[("controller_runtime_reconcile_time_seconds_count", ctl)] == 3
    assert s[("controller_runtime_active_workers", ctl)] == 0


async def test_queue_depth_and_adds() -> None:
    m = Metrics()

    async def handler(key: object) -> None:
        return None

    q = WorkQueue(handler, workers=2)
    m.watch_queue(q)
    q.add("a")
    q.add("a")
    q.add("b")
    s = samples(m)
    assert s[("workqueue_depth", (("name", "leaderworkerset"),))] == 2
    assert s[("workqueue_adds_total", (("name", "leaderworkerset"),))] == 2
    assert (
        s[("controller_runtime_max_concurrent_reconciles", (("controller", "leaderworkerset"),))]
        == 2
    )


def test_lws_series_and_forgetting_them() -> None:
    m = Metrics()
    groups = [group(0), group(1, ready=False), group(2, updated=False)]
    m.groups_observed("ns", "x", groups, CURRENT, 2, desired=3, rollout_done=False)
    m.group_recreated("ns", "x", "deleted", 0.02)
    m.group_recreated("ns", "x", "deleted", None)  # not on an event: no reaction observed
    s = samples(m)
    lws = (("leaderworkerset", "x"), ("namespace", "ns"))
    for state, n in (("ready", 1), ("not_ready", 1), ("updating", 1)):
        assert s[("lws_groups", (*lws, ("state", state)))] == n
    assert s[("lws_rollout_desired_groups", lws)] == 3
    assert s[("lws_rollout_updated_groups", lws)] == 2
    assert s[("lws_rollout_in_progress", lws)] == 1
    assert s[("lws_group_recreations_total", (*lws, ("reason", "deleted")))] == 2
    reaction = "lws_group_recreation_reaction_seconds"
    assert s[(f"{reaction}_count", (("reason", "deleted"),))] == 1
    assert s[(f"{reaction}_bucket", (("le", "0.025"), ("reason", "deleted")))] == 1
    assert s[(f"{reaction}_bucket", (("le", "0.01"), ("reason", "deleted")))] == 0
    m.forget(("ns", "x"))
    assert not [k for k in samples(m) if ("leaderworkerset", "x") in k[1]]


def test_bind_addresses() -> None:
    assert parse_bind_address(":8443") == ("0.0.0.0", 8443)
    assert parse_bind_address("127.0.0.1:0") == ("127.0.0.1", 0)
    assert parse_bind_address("[::1]:8081") == ("::1", 8081)
    assert parse_bind_address("0") is None
    with pytest.raises(ValueError):
        parse_bind_address("8443")


async def test_endpoints_serve_metrics_health_and_readiness() -> None:
    m = Metrics()
    m.webhook_request("/mutate--v1-pod", 200, 0.01)
    ready = {"webhook": True, "informers": False}
    plain = MetricsServing("127.0.0.1:0", secure=False)  # (secure: tests/cluster/deploy)
    endpoints = await serve_endpoints(plain, "127.0.0.1:0", m, lambda: iter(ready.items()))
    metrics_port, health_port = (e.port for e in endpoints)
    try:
        async with aiohttp.ClientSession() as http:

            async def get(port: int, path: str) -> tuple[int, str]:
                async with http.get(f"http://127.0.0.1:{port}{path}") as resp:
                    return resp.status, await resp.text()

            status, text = await get(metrics_port, "/metrics")
            assert status == 200
            assert (
                'controller_runtime_webhook_requests_total{code="200",webhook="/mutate--v1-pod"}'
                " 1.0" in text
            )
            assert (await get(health_port, "/healthz"))[0] == 200
            status, text = await get(health_port, "/readyz")
            assert status == 503 and "[-]informers failed" in text and "[+]webhook ok" in text
            ready["informers"] = True
            assert (await get(health_port, "/readyz"))[0] == 200
    finally:
        for e in endpoints:
            await e.stop()


def test_json_log_lines_carry_the_lws_and_group() -> None:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(ContextFilter())
    handler.setFormatter(JsonFormatter())
    log = logging.getLogger("lws-test-json")
    log.addHandler(handler)
    log.propagate = False
    log.setLevel(logging.INFO)
    try:
        log.warning("outside")
        with reconciling(("ns", "x")):
            log.info("Recreated group", extra={"group": 1})
    finally:
        log.removeHandler(handler)
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert first["msg"] == "outside" and "leaderworkerset" not in first
    assert first["level"] == "warning" and first["logger"] == "lws-test-json"
    assert second["leaderworkerset"] == "ns/x" and second["namespace"] == "ns"
    assert second["group"] == 1 and second["ts"].endswith("+00:00")
