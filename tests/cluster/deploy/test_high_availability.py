"""Two operator replicas with leader election, as the Deployment runs them: only the Lease
holder reconciles, every replica serves the pod webhook; a SIGKILLed leader is replaced within
the lease duration, with no action done twice. Along the way: /metrics, /healthz, /readyz,
JSON logs and ``kubectl lws status``.

Both run out of cluster (``--leader-elect``, their Lease in a namespace of this module) in
place of the session operator, which is paused meanwhile.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lws_operator.api import constants as c
from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_testbed.local import LocalCluster
from lws_testbed.lws_api import until
from lws_testbed.operator_process import OperatorProcess, start_operator
from lws_testbed.wait import wait_for_objects
from tests.cluster.controller.helpers import (
    create_available,
    is_available,
    lws_body,
    lws_path,
    wait_lws,
)
from tests.cluster.deploy.conftest import Scrapers
from tests.cluster.deploy.helpers import (
    Samples,
    free_port,
    has,
    kubectl_lws,
    metrics,
    scrape,
    value,
    wait_holder,
    wait_namespace_gone,
)

LEASE_DURATION = 15.0  # the default, as upstream's
CONTROLLER = {"controller": "leaderworkerset"}


@dataclass
class Replica:
    name: str
    op: OperatorProcess
    metrics_port: int
    health_port: int
    scrape_token: str  # allowed to get /metrics

    async def metrics(self) -> Samples:
        return await metrics(self.metrics_port, self.scrape_token)

    def log_records(self) -> list[dict[str, Any]]:
        records = []
        for line in self.op.log.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                records.append(json.loads(line))
        return records


@pytest.fixture(scope="module")
async def lease_namespace(kube: Kube) -> AsyncIterator[str]:
    name = f"t-ha-{secrets.token_hex(3)}"
    await kube.create(
        resource_path("v1", "namespaces"),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
    )
    yield name
    await kube.delete(resource_path("v1", "namespaces", name=name))
    await wait_namespace_gone(kube, name)


@pytest.fixture(scope="module")
async def replicas(
    kube: Kube,
    kubeconfig: Path,
    local_cluster: LocalCluster | None,
    lws_api: None,
    lease_namespace: str,
    pause_session_operator: Callable[[], contextlib.AbstractAsyncContextManager[None]],
    tmp_path_factory: pytest.TempPathFactory,
    scrapers: Scrapers,
) -> AsyncIterator[dict[str, Replica]]:
    """op-a, started first and so the leader; then op-b, whose webhook registration is the
    last one (out of cluster each registers its own URL), so the API server calls the
    standby's webhook."""
    own = local_cluster.kubeconfig("lws-operator") if local_cluster else kubeconfig
    logs = tmp_path_factory.mktemp("ha")
    started: dict[str, Replica] = {}

    async def start(name: str) -> Replica:
        ports = free_port(), free_port()
        os.environ["POD_NAME"] = name  # the identity and Events' reportingInstance
        try:
            op = await start_operator(
                kube,
                own,
                logs / f"{name}.log",
                "--leader-elect",
                "--operator-namespace",
                lease_namespace,
                "--metrics-bind-address",
                f"127.0.0.1:{ports[0]}",
                "--health-probe-bind-address",
                f"127.0.0.1:{ports[1]}",
                "--log-format",
                "json",
            )
        finally:
            del os.environ["POD_NAME"]
        started[name] = Replica(name, op, *ports, scrapers.reader)
        return started[name]

    async with pause_session_operator():
        try:
            await start("op-a")
            await wait_holder(kube, lease_namespace, lambda h: h.startswith("op-a_"), timeout=30)
            await start("op-b")
            yield started
        finally:
            for replica in started.values():
                await replica.op.stop()


def events_of(objs: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(objs.values(), key=lambda e: e.get("eventTime") or "")


async def test_only_the_leader_reconciles_and_every_replica_serves_the_webhook(
    kube: Kube, kubeconfig: Path, replicas: dict[str, Replica], namespace: str
) -> None:
    a, b = replicas["op-a"], replicas["op-b"]
    ns, name = namespace, "ha"
    lws = await create_available(kube, ns, lws_body(name, replicas=2, size=2))

    async def leader_saw(check: Callable[[Samples], bool]) -> bool:
        return check(await a.metrics())

    # Metrics are written right after the status; scrape until they show it (bounded).
    await until(
        lambda: leader_saw(
            lambda s: value(s, "lws_groups", state="ready", leaderworkerset=name) == 2
        ),
        timeout=30,
        what="lws_groups ready=2 on the leader",
    )
    ma, mb = await a.metrics(), await b.metrics()
    assert value(ma, "leader_election_master_status", name="lws-operator") == 1
    assert value(mb, "leader_election_master_status", name="lws-operator") == 0
    assert value(ma, "controller_runtime_reconcile_total", result="success", **CONTROLLER) > 0
    assert value(mb, "controller_runtime_reconcile_total", **CONTROLLER) == 0, "standby reconciled"
    assert value(ma, "controller_runtime_reconcile_errors_total", **CONTROLLER) == 0
    assert value(ma, "controller_runtime_reconcile_time_seconds_count", **CONTROLLER) > 0
    assert value(ma, "workqueue_adds_total", name="leaderworkerset") > 0
    assert has(ma, "workqueue_depth") and has(mb, "workqueue_depth")
    # The API server called the standby's webhook (registered last) for all 4 pods.
    hook = {"webhook": "/mutate--v1-pod", "code": "200"}
    assert value(mb, "controller_runtime_webhook_requests_total", **hook) >= 4
    assert value(ma, "controller_runtime_webhook_requests_total") == 0
    for gauge, want in (
        ("lws_rollout_desired_groups", 2),
        ("lws_rollout_updated_groups", 2),
        ("lws_rollout_in_progress", 0),
    ):
        assert value(ma, gauge, namespace=ns, leaderworkerset=name) == want, gauge
    for replica in (a, b):
        for path in ("/healthz", "/readyz"):
            status, body = await scrape(replica.health_port, path, scheme="http")
            assert status == 200, (replica.name, path, body)

    # A group recreation: counted, logged with its LWS and group, shown by kubectl lws status.
    await kube.delete(resource_path("v1", "pods", namespace=ns, name=f"{name}-1-1"))
    await wait_for_objects(
        kube,
        resource_path("events.k8s.io/v1", "events", namespace=ns),
        lambda objs: any(e.get("reason") == "RecreateGroup" for e in objs.values()),
        timeout=60,
        what="a RecreateGroup event",
        field_selector=f"regarding.uid={lws['metadata']['uid']}",
    )
    await wait_lws(kube, ns, name, lambda o: is_available(o, 2), "Available again")
    await until(
        lambda: leader_saw(
            lambda s: (
                value(s, "lws_group_recreations_total", reason="deleted", leaderworkerset=name) == 1
            )
        ),
        timeout=30,
        what="lws_group_recreations_total{reason=deleted} == 1",
    )
    (line,) = [r for r in a.log_records() if "recreate group 1" in r.get("msg", "")]
    assert line["leaderworkerset"] == f"{ns}/{name}" and line["group"] == 1, line
    # Decided on the pod's event: its reaction time is logged and observed.
    assert line["msg"].endswith(" ms after the event)"), line
    assert await leader_saw(
        lambda s: value(s, "lws_group_recreation_reaction_seconds_count", reason="deleted") == 1
    )
    reconciling = [r for r in a.log_records() if r.get("logger", "").startswith("lws_operator")]
    assert reconciling and all(isinstance(r.get("ts"), str) for r in reconciling)

    out = await kubectl_lws("--kubeconfig", str(kubeconfig), "status", name, "-n", ns)
    table, _, failures = out.partition("\n\n")
    head, header, *rows = table.splitlines()
    assert failures.startswith("group 1: 1 recreations, 1 counted by the budget"), out
    assert head.startswith(f"{ns}/{name}: 2/2 groups ready, 2 updated, size 2"), out
    assert header.split()[:8] == [
        "GROUP",
        "REVISION",
        "LEADER",
        "WORKERS",
        "RESTARTS",
        "AGE",
        "NODE",
        "DOMAIN",
    ], out
    assert len(rows) == 2, out
    cells = [row.split() for row in rows]
    assert [r[0] for r in cells] == ["0", "1"]
    assert all(r[2] == "1/1" and r[3] == "1/1" and r[4] == "0" for r in cells), out
    assert all(r[6] != "-" for r in cells), out  # scheduled on a node
    assert cells[0][-1] == "-", out
    assert f"Worker pod {name}-1-1 failed (" in rows[1] and rows[1].endswith(" ago)"), out


async def test_a_killed_leader_is_replaced_within_the_lease_duration(
    kube: Kube, replicas: dict[str, Replica], lease_namespace: str, namespace: str
) -> None:
    a, b = replicas["op-a"], replicas["op-b"]
    ns, name = namespace, "fo"
    await create_available(kube, ns, lws_body(name, replicas=1, size=2))

    a.op.proc.send_signal(signal.SIGKILL)
    killed = time.monotonic()
    holder = await wait_holder(
        kube, lease_namespace, lambda h: h.startswith("op-b_"), timeout=LEASE_DURATION + 15
    )
    takeover = time.monotonic() - killed
    print(f"\nleader SIGKILLed; {holder} took the Lease after {takeover:.2f}s")
    assert takeover <= LEASE_DURATION + 1.0, takeover
    assert await a.op.proc.wait() == -signal.SIGKILL

    await kube.patch(lws_path(ns, name), {"spec": {"replicas": 3}})
    await wait_lws(kube, ns, name, lambda o: is_available(o, 3), "Available with 3 (op-b)")
    mb = await b.metrics()
    assert value(mb, "leader_election_master_status", name="lws-operator") == 1
    assert value(mb, "controller_runtime_reconcile_total", **CONTROLLER) > 0

    lws = await kube.get(lws_path(ns, name))
    objs = await wait_for_objects(
        kube,
        resource_path("events.k8s.io/v1", "events", namespace=ns),
        lambda objs: (
            sum("Created worker statefulset" in (e.get("note") or "") for e in objs.values()) >= 3
        ),
        timeout=30,
        what="3 worker StatefulSet creation events",
        field_selector=f"regarding.uid={lws['metadata']['uid']}",
    )
    events = events_of(objs)
    notes = Counter(e["note"] for e in events)
    assert notes[f"Created leader statefulset {name}"] == 1, notes
    for i in range(3):
        assert notes[f"Created worker statefulset for leader pod {name}-{i}"] == 1, notes
    assert sum(e["reason"] == "CreatingRevision" for e in events) == 1, notes
    by = {e["note"]: e["reportingInstance"] for e in events}
    assert by[f"Created leader statefulset {name}"] == "op-a"
    assert by[f"Created worker statefulset for leader pod {name}-0"] == "op-a"
    assert by[f"Created worker statefulset for leader pod {name}-2"] == "op-b"
    assert {e["reportingInstance"] for e in events} == {"op-a", "op-b"}
    sts = await kube.list(
        resource_path("apps/v1", "statefulsets", namespace=ns),
        label_selector=f"{c.SET_NAME_LABEL}={name}",
    )
    assert sorted(s["metadata"]["name"] for s in sts["items"]) == [
        name,
        f"{name}-0",
        f"{name}-1",
        f"{name}-2",
    ]
