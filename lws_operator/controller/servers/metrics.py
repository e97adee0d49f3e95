"""Prometheus metrics, and the ``/healthz`` and ``/readyz`` endpoints.

The series copy controller-runtime's names, labels and buckets (``controller_runtime_*``,
``workqueue_*``, ``leader_election_master_status``), so the dashboards and alerts written for
upstream LWS's manager work unchanged; the LWS-specific series are prefixed ``lws_``. Served as
upstream serves them: HTTPS, each scrape authorized by a token (:mod:`.metrics_auth`); plain
HTTP without authorization only when asked for (``--metrics-secure=false``).

Reconcile code reports through :class:`ReconcileMetrics` — one call where a group is
recreated, one where the status is computed — and :class:`NoMetrics` is its silent stand-in.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from aiohttp import web
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from lws_operator.controller.runtime.logs import reconciling
from lws_operator.controller.runtime.queue import Handler, WorkQueue
from lws_operator.controller.servers import certs
from lws_operator.controller.servers.external_certs import CertFiles
from lws_operator.controller.servers.metrics_auth import Review, ScrapeAuthorizer
from lws_operator.kube.client import Kube
from lws_operator.plan.keys import RevisionKey
from lws_operator.plan.lws.groups import Group, tally

log = logging.getLogger(__name__)

CONTROLLER = "leaderworkerset"
# A recovery's reaction (lws_group_recreation_reaction_seconds): milliseconds to seconds.
REACTION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
# controller-runtime's reconcile_time_seconds buckets (pkg/internal/controller/metrics).
RECONCILE_BUCKETS = (
    *(0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7),
    *(0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15),
    *(20, 25, 30, 40, 50, 60),
)
WEBHOOK_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
GROUP_STATES = ("ready", "not_ready", "updating")
Key = tuple[str, str]


class ReconcileMetrics(Protocol):
    def group_recreated(
        self, namespace: str, name: str, reason: str, reaction: float | None
    ) -> None: ...

    def groups_observed(
        self,
        namespace: str,
        name: str,
        groups: Sequence[Group],
        key: RevisionKey,
        size: int,
        desired: int,
        rollout_done: bool,
    ) -> None: ...

    def forget(self, key: Key) -> None: ...


class NoMetrics:
    """Metrics that go nowhere (tests, tools)."""

    def group_recreated(
        self, namespace: str, name: str, reason: str, reaction: float | None
    ) -> None:
        pass

    def groups_observed(
        self,
        namespace: str,
        name: str,
        groups: Sequence[Group],
        key: RevisionKey,
        size: int,
        desired: int,
        rollout_done: bool,
    ) -> None:
        pass

    def forget(self, key: Key) -> None:
        pass


def group_state(g: Group, key: RevisionKey, size: int) -> str:
    """One state per group: not yet on the current revision ``key`` is ``updating``; else
    ``ready`` when its leader and workers are ready; else ``not_ready``."""
    if not g.updated(size, key):
        return "updating"
    return "ready" if g.ready(size) else "not_ready"


class _QueueCollector(Collector):
    def __init__(self, queue: WorkQueue, name: str = CONTROLLER) -> None:
        self.queue = queue
        self.name = name

    def collect(self) -> Iterable[Any]:
        depth = GaugeMetricFamily("workqueue_depth", "Current depth of workqueue", labels=["name"])
        depth.add_metric([self.name], len(self.queue))
        adds = CounterMetricFamily(
            "workqueue_adds", "Total number of adds handled by workqueue", labels=["name"]
        )
        adds.add_metric([self.name], self.queue.adds)
        yield depth
        yield adds


class Metrics:
    """All series of one operator process, in their own registry."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        r = self.registry = registry or CollectorRegistry()
        self.reconcile_total = Counter(
            "controller_runtime_reconcile_total",
            "Total number of reconciliations per controller",
            ["controller", "result"],
            registry=r,
        )
        self.reconcile_errors = Counter(
            "controller_runtime_reconcile_errors_total",
            "Total number of reconciliation errors per controller",
            ["controller"],
            registry=r,
        )
        self.reconcile_time = Histogram(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            ["controller"],
            buckets=RECONCILE_BUCKETS,
            registry=r,
        )
        self.max_concurrent = Gauge(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            ["controller"],
            registry=r,
        )
        self.active_workers = Gauge(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            ["controller"],
            registry=r,
        )
        self.webhook_requests = Counter(
            "controller_runtime_webhook_requests_total",
            "Total number of admission requests by HTTP status code",
            ["webhook", "code"],
            registry=r,
        )
        self.webhook_latency = Histogram(
            "controller_runtime_webhook_latency_seconds",
            "Histogram of the latency of processing admission requests",
            ["webhook"],
            buckets=WEBHOOK_BUCKETS,
            registry=r,
        )
        self.leader = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
            "backup, 1 indicates master. 'name' is the string used to identify the lease.",
            ["name"],
            registry=r,
        )
        self.groups = Gauge(
            "lws_groups",
            "Groups of a LeaderWorkerSet by state: ready, not_ready, or updating (not yet on "
            "the current revision)",
            ["namespace", "leaderworkerset", "state"],
            registry=r,
        )
        self.recreations = Counter(
            "lws_group_recreations_total",
            "Groups recreated after a pod failure, by what happened to the pod (restarted, "
            "failed, deleted)",
            ["namespace", "leaderworkerset", "reason"],
            registry=r,
        )
        self.recreation_reaction = Histogram(
            "lws_group_recreation_reaction_seconds",
            "From the event that showed a pod's failure to the last write of its group's "
            "recreation sent (the operator's own share of a recovery), by reason",
            ["reason"],
            buckets=REACTION_BUCKETS,
            registry=r,
        )
        self.rollout_desired = Gauge(
            "lws_rollout_desired_groups",
            "Groups a LeaderWorkerSet should have (spec.replicas)",
            ["namespace", "leaderworkerset"],
            registry=r,
        )
        self.rollout_updated = Gauge(
            "lws_rollout_updated_groups",
            "Groups on the current revision",
            ["namespace", "leaderworkerset"],
            registry=r,
        )
        self.rollout_in_progress = Gauge(
            "lws_rollout_in_progress",
            "1 while a rolling update of the LeaderWorkerSet is under way",
            ["namespace", "leaderworkerset"],
            registry=r,
        )
        # process_resident_memory_bytes, process_cpu_seconds_total... as controller-runtime's;
        # and the Python heap's live blocks: RSS keeps pymalloc's high-water arenas after a
        # load has gone, the live blocks show whether the objects went too.
        ProcessCollector(registry=r)
        Gauge(
            "python_heap_allocated_blocks",
            "Memory blocks currently allocated by the Python interpreter",
            registry=r,
        ).set_function(sys.getallocatedblocks)
        for result in ("success", "error", "requeue", "requeue_after"):
            self.reconcile_total.labels(CONTROLLER, result)
        self.reconcile_errors.labels(CONTROLLER)
        self._recreation_labels: dict[Key, set[str]] = {}
        self._observed: dict[Key, tuple[tuple[int, ...], int, bool]] = {}
        """Per LWS, what its group series were last set from."""

    def watch_queue(self, queue: WorkQueue, controller: str = CONTROLLER) -> None:
        self.registry.register(_QueueCollector(queue, controller))
        self.max_concurrent.labels(controller).set(queue.workers)

    def instrument(self, handler: Handler, controller: str = CONTROLLER) -> Handler:
        """``handler`` timed and counted as controller-runtime counts reconciles (per
        ``controller``: leaderworkerset, disaggregatedset), with the object it works on in the
        context of every log line."""
        total = self.reconcile_total
        active = self.active_workers.labels(controller)
        timer = self.reconcile_time.labels(controller)

        async def reconcile(key: Any) -> float | None:
            start = time.perf_counter()
            active.inc()
            try:
                with reconciling(key):
                    again = await handler(key)
            except Exception:
                total.labels(controller, "error").inc()
                self.reconcile_errors.labels(controller).inc()
                raise
            else:
                total.labels(controller, "requeue_after" if again else "success").inc()
                return again
            finally:
                active.dec()
                timer.observe(time.perf_counter() - start)

        return reconcile

    def webhook_request(self, path: str, code: int, seconds: float) -> None:
        self.webhook_requests.labels(path, str(code)).inc()
        self.webhook_latency.labels(path).observe(seconds)

    # ---- ReconcileMetrics ---------------------------------------------------------------------
    def group_recreated(
        self, namespace: str, name: str, reason: str, reaction: float | None
    ) -> None:
        """``reaction``: seconds from the event that showed the failure to the recreation's
        last write sent (None when no event prompted it)."""
        self.recreations.labels(namespace, name, reason).inc()
        if reaction is not None:
            self.recreation_reaction.labels(reason).observe(reaction)
        self._recreation_labels.setdefault((namespace, name), set()).add(reason)

    def groups_observed(
        self,
        namespace: str,
        name: str,
        groups: Sequence[Group],
        key: RevisionKey,
        size: int,
        desired: int,
        rollout_done: bool,
    ) -> None:
        """``groups`` are those of the leader StatefulSet; a missing leader is not counted."""

        def count(g: Group) -> tuple[int, ...]:
            state = group_state(g, key, size) if g.leader is not None else None
            return tuple(int(state == s) for s in GROUP_STATES)

        states = tally(groups, ("metrics", key, size), count, 3)
        if self._observed.get((namespace, name)) == (states, desired, rollout_done):
            return  # as set last time (every pass at rest): no series looked up
        self._observed[(namespace, name)] = (states, desired, rollout_done)
        counts = dict(zip(GROUP_STATES, states, strict=True))
        for state, n in counts.items():
            self.groups.labels(namespace, name, state).set(n)
        updated = counts["ready"] + counts["not_ready"]
        self.rollout_desired.labels(namespace, name).set(desired)
        self.rollout_updated.labels(namespace, name).set(updated)
        self.rollout_in_progress.labels(namespace, name).set(0 if rollout_done else 1)

    def forget(self, key: Key) -> None:
        """Drop the series of a LeaderWorkerSet that is gone."""
        ns, name = key
        self._observed.pop(key, None)
        for state in GROUP_STATES:
            _remove(self.groups, ns, name, state)
        for gauge in (self.rollout_desired, self.rollout_updated, self.rollout_in_progress):
            _remove(gauge, ns, name)
        for reason in self._recreation_labels.pop(key, set()):
            _remove(self.recreations, ns, name, reason)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


def _remove(metric: Gauge | Counter, *labels: str) -> None:
    with contextlib.suppress(KeyError):
        metric.remove(*labels)


def parse_bind_address(address: str) -> tuple[str, int] | None:
    """``":8443"`` → ("0.0.0.0", 8443); ``"127.0.0.1:0"`` → a free port; ``"0"`` → None
    (disabled), as controller-runtime's bind addresses."""
    if address in ("0", ""):
        return None
    host, sep, port = address.rpartition(":")
    if not sep:
        raise ValueError(f"bind address {address!r} is not HOST:PORT or :PORT")
    return (host.strip("[]") or "0.0.0.0", int(port))


class HttpEndpoint:
    """One small aiohttp server (metrics, or health probes), over TLS when given ``tls``."""

    def __init__(
        self,
        name: str,
        bind: tuple[str, int],
        routes: Sequence[web.RouteDef],
        tls: certs.ServerTLS | None = None,
    ) -> None:
        self.name = name
        self.host, self.port = bind
        self.routes = routes
        self.tls = tls
        self._runner: web.AppRunner | None = None

    async def start(self) -> int:
        app = web.Application()
        app.add_routes(self.routes)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        ssl_context = self.tls.context if self.tls is not None else None
        site = web.TCPSite(self._runner, self.host, self.port, ssl_context=ssl_context)
        await site.start()
        self.port = int(self._runner.addresses[0][1])
        scheme = "https" if self.tls is not None else "http"
        log.info("%s serving on %s://%s:%d", self.name, scheme, self.host, self.port)
        return self.port

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self.tls is not None:
            self.tls.close()


@dataclass(frozen=True)
class MetricsServing:
    """How ``/metrics`` is served (the ``--metrics-*`` flags)."""

    # [HOST]:PORT, or "0" for off.
    address: str = "0"
    # HTTPS with token authorization; False: plain HTTP, anyone may scrape.
    secure: bool = True
    # Serve DIR/tls.crt and DIR/tls.key, made by someone else (re-read when they change).
    cert_dir: Path | None = None
    # Else, in cluster: the Service in front of the metrics port; the certificate is kept in
    # the Secret lws-metrics-server-cert of ``namespace``. None: made in memory for the bind
    # address (out of cluster).
    service: str | None = None
    namespace: str = "lws-system"


class MetricsEndpoint(HttpEndpoint):
    """``/metrics`` as :class:`MetricsServing` says, with its certificate kept valid."""

    def __init__(
        self,
        metrics: Metrics,
        bind: tuple[str, int],
        serving: MetricsServing,
        kube: Kube | None,
    ) -> None:
        self.serving = serving
        self.kube = kube
        authorizer = None
        tls = None
        if serving.secure:
            if kube is None:
                raise ValueError("secure metrics need an API client for token reviews")
            authorizer = ScrapeAuthorizer(_review(kube))
            tls = certs.ServerTLS("metrics")

        async def serve(request: web.Request) -> web.Response:
            if authorizer is not None:
                decision = await authorizer.decide(
                    request.headers.get("Authorization"), request.method, request.path
                )
                if decision.status != 200:
                    return web.Response(status=decision.status, text=decision.message + "\n")
            body = metrics.exposition()
            return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

        super().__init__("metrics", bind, [web.get("/metrics", serve)], tls)
        self._files: CertFiles | None = None
        self._keeping: asyncio.Task[None] | None = None

    async def start(self) -> int:
        if self.tls is not None:
            await self._load_certificate(self.tls)
        return await super().start()

    async def _load_certificate(self, tls: certs.ServerTLS) -> None:
        if self.serving.cert_dir is not None:
            self._files = CertFiles(self.serving.cert_dir, tls.load_pem, "metrics")
            self._files.start()
            return
        assert self.kube is not None
        keeper = certs.CertKeeper(
            self.kube,
            namespace=self.serving.namespace,
            service=self.serving.service,
            secret_name=certs.METRICS_SECRET_NAME,
            # A wildcard bind address is scraped through the loopback address.
            host="127.0.0.1" if self.host in ("0.0.0.0", "::") else self.host,
            ca_name="lws-metrics-ca",
        )
        cert = await keeper.current()
        tls.load(cert)

        async def reload(fresh: certs.ServingCert) -> None:
            tls.load(fresh)

        self._keeping = asyncio.create_task(keeper.keep(cert, reload), name="metrics-certificate")

    async def stop(self) -> None:
        if self._keeping is not None:
            self._keeping.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._keeping
            self._keeping = None
        if self._files is not None:
            await self._files.stop()
        await super().stop()


def _review(kube: Kube) -> Review:
    async def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
        # controller-runtime's TokenAccessReviewTimeout.
        return await kube.request("POST", path, body=body, request_timeout=10)

    return post


def health_endpoint(
    bind: tuple[str, int], checks: Callable[[], Iterator[tuple[str, bool]]]
) -> HttpEndpoint:
    """``/healthz``: the process answers (its event loop runs). ``/readyz``: every named check
    of ``checks`` passes; the body lists them, as Kubernetes components' ``?verbose``."""

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def readyz(_: web.Request) -> web.Response:
        results = list(checks())
        lines = [f"[{'+' if ok else '-'}]{name} {'ok' if ok else 'failed'}" for name, ok in results]
        ok = all(passed for _, passed in results)
        lines.append("readyz check passed" if ok else "readyz check failed")
        return web.Response(status=200 if ok else 503, text="\n".join(lines) + "\n")

    return HttpEndpoint(
        "health probes", bind, [web.get("/healthz", healthz), web.get("/readyz", readyz)]
    )


async def serve_endpoints(
    serving: MetricsServing,
    health_address: str,
    metrics: Metrics,
    checks: Callable[[], Iterator[tuple[str, bool]]],
    kube: Kube | None = None,
) -> list[HttpEndpoint]:
    """Start the metrics and health endpoints that are enabled; returns them (to stop)."""
    started: list[HttpEndpoint] = []
    metrics_bind = parse_bind_address(serving.address)
    health_bind = parse_bind_address(health_address)
    try:
        if metrics_bind is not None:
            started.append(MetricsEndpoint(metrics, metrics_bind, serving, kube))
            await started[-1].start()
        if health_bind is not None:
            started.append(health_endpoint(health_bind, checks))
            await started[-1].start()
    except BaseException:
        for endpoint in started:
            await endpoint.stop()
        raise
    return started
