"""``lws-operator run``: the operator process.

What kopf owns: the LeaderWorkerSet watch (an index of LWS objects, and an event handler that
wakes the LWS), the login and the process lifecycle (start-up, signals, stop). What the
operator's own informers (``informer.py``) own: the LWS's children (StatefulSets, pods,
Services, ControllerRevisions, PodGroups, found by the ``leaderworkerset.sigs.k8s.io/name``
label on the server) and the nodes, kept as projections in the cache. kopf's per-object
machinery for every pod event was most of the CPU; an informer event costs one projection.
Every event only wakes the reconcile of its LWS, through a work queue. The pod webhook is
served from the same event loop.

The DisaggregatedSet controller runs beside it with the same shape: kopf indexes the
DisaggregatedSets and their role scalers, informers watch the LeaderWorkerSets and Services
labelled ``disaggregatedset.x-k8s.io/name``, and a queue of its own runs ``ds/reconcile.py``.

Two kopf features are switched off because they cost something on every LWS event and the
operator has no use for them: the diff base (a deep copy of each object for change-detection
handlers: it has none) and the posting of kopf's log lines as Events (the operator's Events are
upstream's). Nothing is written to user objects for bookkeeping: no kopf annotations or
finalizers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import aiohttp
import kopf

from lws_operator.api import constants as c
from lws_operator.api import ds_constants as dc
from lws_operator.controller.ds.cache import (
    DS_INDEX,
    LWS_STORE,
    SCALER_NAMES_INDEX,
    SCALERS_INDEX,
    SERVICES_STORE,
    DsCache,
    ds_key,
    project_child,
)
from lws_operator.controller.ds.cache import (
    project_service as project_ds_service,
)
from lws_operator.controller.ds.reconcile import DsReconciler
from lws_operator.controller.lws.cache import (
    Cache,
    node_key,
    project_meta,
    project_node,
    project_pod,
    project_revision,
    project_service,
    project_statefulset,
)
from lws_operator.controller.lws.eviction import (
    EVICTION_WEBHOOK_PATH,
    EvictionCoverage,
    EvictionReviewer,
)
from lws_operator.controller.lws.reconcile import Reconciler
from lws_operator.controller.runtime.informer import Informer, Key
from lws_operator.controller.runtime.leader import (
    LEASE_NAME,
    LeaderElector,
    Leadership,
    default_identity,
)
from lws_operator.controller.runtime.queue import WorkQueue
from lws_operator.controller.servers import certs, webhook
from lws_operator.controller.servers.external_certs import ExternalCertKeeper
from lws_operator.controller.servers.metrics import Metrics, MetricsServing, serve_endpoints
from lws_operator.kube.client import ApiError, Kube
from lws_operator.kube.events import EventRecorder
from lws_operator.kube.paths import resource_path
from lws_operator.plan.events import Event
from lws_operator.plan.keys import OwnerKey
from lws_operator.plan.lws import gang
from lws_operator.plan.lws.backoff import Backoff
from lws_operator.plan.lws.history import Limits, project_history
from lws_operator.plan.lws.pod_mutation import GANG_PROVIDER_KUBERNETES
from lws_operator.plan.lws.restart import FAILED_GROUP_GRACE

log = logging.getLogger(__name__)

USER_AGENT = "lws-operator"
# The name of the DisaggregatedSet controller (its Events' reportingController, its metrics).
DS_CONTROLLER = "disaggregatedset"
IN_CLUSTER_TOKEN = Path("/var/run/secrets/kubernetes.io/serviceaccount/token")
IN_CLUSTER_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


@dataclass
class OperatorConfig:
    kubeconfig: Path | None = None
    # Namespaces to serve; empty means all.
    namespaces: tuple[str, ...] = ()
    workers: int = 8
    # Where the webhook server listens.
    webhook_bind_host: str = "127.0.0.1"
    webhook_port: int = 9443
    # In cluster: the API server reaches the webhook through this Service (certificate in a
    # Secret). Out of cluster (None): by URL https://<webhook_bind_host>:<port>.
    webhook_service: str | None = None
    namespace: str = "lws-system"
    gang_provider: str | None = None
    # Group recreation: backoff, history bounds and the failed-group grace (configuration
    # file, groupRecreation).
    backoff: Backoff = field(default_factory=Backoff)
    history_limits: Limits = field(default_factory=Limits)
    failed_group_grace: int | None = FAILED_GROUP_GRACE
    # Serve tls.crt/tls.key from this directory (certificate and caBundle made by someone
    # else: OpenShift's service CA, cert-manager); then no Secret or webhook configuration
    # is written.
    cert_dir: Path | None = None
    # Only the holder of the Lease `lws-operator` in `namespace` reconciles.
    leader_elect: bool = False
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    # HOST:PORT or :PORT of /metrics and of /healthz and /readyz; "0" disables.
    metrics_bind_address: str = "0"
    health_probe_bind_address: str = "0"
    # /metrics over HTTPS with token authorization (else plain HTTP, open to anyone); its
    # certificate from this directory, else kept in a Secret for this Service (in cluster),
    # else made in memory.
    metrics_secure: bool = True
    metrics_cert_dir: Path | None = None
    metrics_service: str | None = None


# (store name, API group, version, plural, projection), watched by informers with a server-side
# selector on the LWS name label. A projection returning None skips the object.
_CHILDREN: tuple[tuple[str, str, str, str, Callable[[Any], dict[str, Any] | None]], ...] = (
    ("lws_statefulsets", "apps", "v1", "statefulsets", project_statefulset),
    ("lws_pods", "", "v1", "pods", project_pod),
    ("lws_services", "", "v1", "services", project_service),
    ("lws_revisions", "apps", "v1", "controllerrevisions", project_revision),
    # Each LWS's failure history (plan/lws/history.py); other labelled ConfigMaps are skipped.
    ("lws_history", "", "v1", "configmaps", project_history),
)


def _children(gang_api: gang.GangApi | None) -> tuple[Any, ...]:
    """The watched child resources; with a gang provider also its PodGroups, in the version
    written (a missing PodGroup is recreated). A PodGroup CRD installed after the start is
    picked up by the informer's next retry (within 30 s)."""
    if gang_api is None:
        return _CHILDREN
    group, version = gang_api.group_version
    return (*_CHILDREN, ("lws_podgroups", group, version, gang.PLURAL, project_meta))


class _NoDiffBase(kopf.DiffBaseStorage):
    """kopf builds a "diff base" (a deep copy of the essence) of every object on every event,
    even without change-detection handlers; the operator has none (only event and index
    handlers), so it builds, keeps and writes nothing."""

    def build(self, *, body: Any, extra_fields: Any = None) -> Any:
        return {}

    def fetch(self, *, body: Any) -> Any:
        return None

    def store(self, *, body: Any, patch: Any, essence: Any) -> None:
        return None


def settings(config: OperatorConfig) -> kopf.OperatorSettings:
    s = kopf.OperatorSettings()
    s.persistence.diffbase_storage = _NoDiffBase()
    s.posting.enabled = False  # our Events are the upstream-compatible ones, written by us
    s.scanning.disabled = True
    s.watching.server_timeout = 300
    return s


@dataclass
class DsWiring:
    """The DisaggregatedSet controller's cache and queue (None when the API is not served)."""

    cache: DsCache
    queue: WorkQueue


def registry(
    cache: Cache, queue: WorkQueue, config: OperatorConfig, ds: DsWiring | None = None
) -> kopf.OperatorRegistry:
    reg = kopf.OperatorRegistry()

    @kopf.on.login(registry=reg)
    def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
        if config.kubeconfig is None and IN_CLUSTER_TOKEN.exists():
            return kopf.login_with_service_account(**kwargs)
        return kopf.login_with_kubeconfig(**kwargs)

    # kopf passes every handler argument by keyword; these read the few they need. All are
    # coroutines: kopf runs plain functions in a thread pool, a hop per watch event.
    async def lws_index(**kw: Any) -> dict[Key, Any]:
        return {OwnerKey(kw["namespace"], kw["name"]): dict(kw["body"])}

    kopf.index(c.GROUP, c.VERSION, c.PLURAL, id="lws_objects", registry=reg)(lws_index)

    async def on_lws(**kw: Any) -> None:
        queue.add((kw["namespace"], kw["name"]))

    kopf.on.event(c.GROUP, c.VERSION, c.PLURAL, id="lws_events", registry=reg)(on_lws)

    if ds is not None:
        _ds_handlers(reg, ds)

    @kopf.on.startup(registry=reg)
    async def bind_indexes(**kwargs: Any) -> None:
        cache.bind({k: v for k, v in kwargs.items() if k.startswith("lws_")})
        if ds is not None:
            ds.cache.bind(kwargs)

    return reg


def _ds_handlers(reg: kopf.OperatorRegistry, ds: DsWiring) -> None:
    """kopf's DisaggregatedSet and role scaler watches: indexes, and events that wake the
    set (a scaler by its set label). kopf calls handlers only once every index is filled,
    which the first call tells the cache."""

    async def sets(**kw: Any) -> dict[Key, Any]:
        return {OwnerKey(kw["namespace"], kw["name"]): dict(kw["body"])}

    async def on_set(**kw: Any) -> None:
        ds.cache.indexed.set()
        ds.queue.add((kw["namespace"], kw["name"]))

    async def scalers_by_set(**kw: Any) -> dict[Key, Any] | None:
        key = ds_key(kw["body"])
        return None if key is None else {key: dict(kw["body"])}

    async def scalers_by_name(**kw: Any) -> dict[Key, Any]:
        return {OwnerKey(kw["namespace"], kw["name"]): dict(kw["body"])}

    async def on_scaler(**kw: Any) -> None:
        ds.cache.indexed.set()
        if (key := ds_key(kw["body"])) is not None:
            ds.queue.add(key)

    group, version = dc.GROUP, dc.VERSION
    kopf.index(group, version, dc.PLURAL, id=DS_INDEX, registry=reg)(sets)
    kopf.on.event(group, version, dc.PLURAL, id="ds_events", registry=reg)(on_set)
    scalers = dc.SCALER_PLURAL
    kopf.index(group, version, scalers, id=SCALERS_INDEX, registry=reg)(scalers_by_set)
    kopf.index(group, version, scalers, id=SCALER_NAMES_INDEX, registry=reg)(scalers_by_name)
    kopf.on.event(group, version, scalers, id="ds_scaler_events", registry=reg)(on_scaler)


def ds_informers(kube: Kube, ds: DsWiring, config: OperatorConfig) -> list[Informer]:
    """The LeaderWorkerSets and Services labelled disaggregatedset.x-k8s.io/name (selected
    on the server), each event waking its set."""
    out = []
    for store, api_version, plural, projection in (
        (LWS_STORE, c.API_VERSION, c.PLURAL, project_child),
        (SERVICES_STORE, "v1", "services", project_ds_service),
    ):

        def on_change(kind: str, key: Key, obj: Any) -> None:
            ds.queue.add(key)

        for ns in config.namespaces or (None,):
            informer = Informer(
                kube,
                resource_path(api_version, plural, namespace=ns),
                projection,
                on_change,
                label_selector=dc.SET_NAME_LABEL,
                key_of=ds_key,
            )
            ds.cache.add_informer(store, informer)
            out.append(informer)
    return out


def ready_groups(cache: Cache) -> Callable[[Key], int | None]:
    """The ready groups of an LWS as this process's LWS controller observes them (its pods,
    through its informers): what a DisaggregatedSet's rollout step waits for, a second
    sooner than the LWS's status says it (compatibility R9)."""

    def ready(key: Key) -> int | None:
        obs = cache.observe(key)
        if obs.lws is None:
            return None
        template = (obs.lws.get("spec") or {}).get("leaderWorkerTemplate") or {}
        size = int(template.get("size") or 1)
        return sum(1 for g in obs.groups if g.ready(size))

    return ready


def _waker(ds: DsWiring | None) -> Callable[[Any], None] | None:
    """Wakes the DisaggregatedSet of a pod (its label) on each of the pod's events."""
    if ds is None:
        return None

    def wake(pod: Any) -> None:
        if (key := ds_key(pod)) is not None:
            ds.queue.add(key)

    return wake


async def ds_api_served(kube: Kube) -> bool:
    """Whether the DisaggregatedSet API is installed (its CRDs): kopf watches only resources
    that exist; without them the operator serves LeaderWorkerSets alone (and says so)."""
    try:
        found = await kube.get_or_none(f"/apis/{dc.API_VERSION}")
    except ApiError:
        return False
    served = {r.get("name") for r in (found or {}).get("resources") or []}
    return {dc.PLURAL, dc.SCALER_PLURAL} <= served


async def served_versions(kube: Kube, group: str) -> dict[str, frozenset[str]]:
    """Each version of API ``group`` the cluster serves, with the resources it serves in it
    (discovery); empty when the group is not served."""
    found = await kube.get_or_none(f"/apis/{group}")
    served: dict[str, frozenset[str]] = {}
    for entry in (found or {}).get("versions") or []:
        version = str(entry.get("version") or "")
        listing = await kube.get_or_none(f"/apis/{group}/{version}") if version else None
        served[version] = frozenset(
            str(r.get("name")) for r in (listing or {}).get("resources") or []
        )
    return served


async def cluster_version(kube: Kube) -> str:
    """The API server's version (``/version``'s gitVersion), or what kept it from being read."""
    try:
        return str((await kube.get("/version")).get("gitVersion") or "version unknown")
    except (ApiError, OSError) as e:
        return f"version unknown: {e}"


# Discovery failing at start-up for a passing reason (5xx, 429, no connection) is retried this
# many times, DISCOVERY_RETRY seconds apart and doubling, before the start fails: running every
# LWS without gangs on a wrong answer would last until a restart.
DISCOVERY_ATTEMPTS = 5
DISCOVERY_RETRY = 1.0


async def _native_served(kube: Kube) -> tuple[dict[str, frozenset[str]], str]:
    """scheduling.k8s.io's served versions and their resources, and "" or why discovery
    was refused (then as if none were served)."""
    delay = DISCOVERY_RETRY
    for attempt in range(1, DISCOVERY_ATTEMPTS + 1):
        try:
            return await served_versions(kube, gang.NATIVE_GROUP), ""
        except ApiError as e:
            if e.status < 500 and e.status != 429:
                return {}, f" (discovery of {gang.NATIVE_GROUP} was refused: {e.message})"
            if attempt == DISCOVERY_ATTEMPTS:
                raise
            error: Exception = e
        except (aiohttp.ClientError, OSError, TimeoutError) as e:
            if attempt == DISCOVERY_ATTEMPTS:
                raise
            error = e
        log.info("discovery of %s failed (%s); again in %.0f s", gang.NATIVE_GROUP, error, delay)
        await asyncio.sleep(delay)
        delay *= 2
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class GangWiring:
    """Gang scheduling as this cluster allows it: the PodGroup API written and watched (None:
    no gangs), and the Warning for each LWS when a configured provider cannot be served."""

    api: gang.GangApi | None = None
    unavailable: Event | None = None

    @property
    def webhook_provider(self) -> str | None:
        """The provider pods are joined to; none when their PodGroups can never exist (a pod
        naming a missing PodGroup would wait for it forever)."""
        return None if self.api is None else self.api.provider


async def gang_wiring(kube: Kube, provider: str | None) -> GangWiring:
    """The configured provider's PodGroup API, chosen from discovery (plan/lws/gang.py
    ``resolve``). The native API unserved is logged once, as an error, with the cluster's
    version; the operator then runs every LWS without gangs."""
    if provider is None:
        return GangWiring()
    served: dict[str, frozenset[str]] = {}
    why = ""
    if provider == GANG_PROVIDER_KUBERNETES:
        served, why = await _native_served(kube)
    api = gang.resolve(provider, served)
    if api is not None:
        log.info("gang scheduling: %s PodGroups (provider %s)", api.api_version, provider)
        return GangWiring(api)
    message = gang.unavailable(await cluster_version(kube), served) + why
    log.error("%s", message)
    return GangWiring(None, gang.unavailable_event(message))


def node_informer(kube: Kube, on_change: Callable[[str, Key, Any], None] | None = None) -> Informer:
    """All nodes, as projections (``cache.project_node``); ``on_change`` hears of each."""
    return Informer(
        kube,
        resource_path("v1", "nodes"),
        project_node,
        on_change or (lambda *_: None),
        label_selector=None,
        key_of=node_key,
    )


def informers(
    kube: Kube,
    cache: Cache,
    queue: WorkQueue,
    config: OperatorConfig,
    on_pod: Callable[[Any], None] | None = None,
    gang_api: gang.GangApi | None = None,
) -> list[Informer]:
    """One informer per child resource (and per namespace when limited to some), registered
    with ``cache``; each event wakes its LWS, and a deleted pod is remembered. Nodes too (for
    exclusive placement and lost-node detection): a node's event wakes only the LWSs with pods
    on it, and only when its health changed (node-health reports); what else needs a node
    waits on its pod's events, or on a timer. ``on_pod`` also hears every pod event (the
    DisaggregatedSet of a child LWS's pod waits on their readiness). ``gang_api``: the
    PodGroups written, watched too."""

    def on_node(kind: str, _key: Key, node: Any) -> None:
        for key in cache.node_changed(kind, node):
            queue.add(key)

    nodes = node_informer(kube, on_node)
    cache.add_informer("nodes", nodes)
    out = [nodes]
    for name, group, version, plural, projection in _children(gang_api):
        api_version = f"{group}/{version}" if group else version

        def on_change(kind: str, key: Key, obj: Any, _store: str = name) -> None:
            cache.changed(_store, kind, key, obj)
            queue.add(key)
            if on_pod is not None and _store == "lws_pods":
                on_pod(obj)

        for ns in config.namespaces or (None,):
            informer = Informer(
                kube, resource_path(api_version, plural, namespace=ns), projection, on_change
            )
            cache.add_informer(name, informer)
            out.append(informer)
    return out


class WebhookKeeper:
    """Serves the pod webhook with a certificate that stays valid, and keeps the webhook
    configuration pointing at it."""

    def __init__(
        self,
        kube: Kube,
        config: OperatorConfig,
        coverage: EvictionCoverage | None = None,
        gang_provider: str | None = None,
    ) -> None:
        self.kube = kube
        self.config = config
        self.coverage = coverage
        self.server = webhook.WebhookServer(
            config.webhook_bind_host, config.webhook_port, gang_provider
        )
        self.certs = certs.CertKeeper(
            kube,
            namespace=config.namespace,
            service=config.webhook_service,
            secret_name=certs.SECRET_NAME,
            host=config.webhook_bind_host,
            ca_name="lws-webhook-ca",
        )
        self._task: asyncio.Task[None] | None = None

    async def _publish(self, cert: certs.ServingCert) -> None:
        self.server.load(cert)

        def client(path: str) -> dict[str, Any]:
            if self.config.webhook_service is None:
                host, port = self.config.webhook_bind_host, self.server.port
                return webhook.client_config_url(host, port, path)
            service, namespace = self.config.webhook_service, self.config.namespace
            return webhook.client_config_service(service, namespace, path=path)

        body = webhook.webhook_configuration(client, cert.ca_bundle)
        await webhook.register(self.kube, body)
        if self.coverage is not None:
            await self.coverage.publish(client(EVICTION_WEBHOOK_PATH), cert.ca_bundle)

    async def start(self) -> None:
        cert = await self.certs.current()
        self.server.load(cert)
        await self.server.start()
        await self._publish(cert)
        self._task = asyncio.create_task(
            self.certs.keep(cert, self._publish), name="webhook-certificate"
        )

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.server.stop()


def _start_queues(queue: WorkQueue, ds: DsWiring | None) -> None:
    queue.start()
    if ds is not None:
        ds.queue.start()


async def _stop_queues(queue: WorkQueue, ds: DsWiring | None) -> None:
    await queue.stop()
    if ds is not None:
        await ds.queue.stop()


async def run(config: OperatorConfig, stop: asyncio.Event | None = None) -> None:
    """Run until ``stop`` is set (or forever)."""
    if config.kubeconfig is not None:
        os.environ["KUBECONFIG"] = str(config.kubeconfig)
    kube = await Kube.connect(config.kubeconfig, user_agent=USER_AGENT)
    cache = Cache()
    metrics = Metrics()
    recorder = EventRecorder(kube)
    coverage = EvictionCoverage(kube, manage_client=config.cert_dir is None)
    gangs = await gang_wiring(kube, config.gang_provider)
    reconciler = Reconciler(
        kube,
        cache,
        recorder,
        metrics=metrics,
        gang_api=gangs.api,
        gang_unavailable=gangs.unavailable,
        backoff=config.backoff,
        history_limits=config.history_limits,
        failed_group_grace=config.failed_group_grace,
        coverage=coverage,
    )
    queue = WorkQueue(metrics.instrument(reconciler), workers=config.workers)
    metrics.watch_queue(queue)
    ds: DsWiring | None = None
    ds_recorder = EventRecorder(kube, controller=DS_CONTROLLER)
    if await ds_api_served(kube):
        ds_cache = DsCache()
        ds_reconciler = DsReconciler(kube, ds_cache, ds_recorder, ready_groups(cache))
        ds_queue = WorkQueue(
            metrics.instrument(ds_reconciler, DS_CONTROLLER), workers=config.workers
        )
        metrics.watch_queue(ds_queue, DS_CONTROLLER)
        ds = DsWiring(ds_cache, ds_queue)
    else:
        log.warning(
            "the %s API is not installed (kubectl apply --server-side -f crds/): "
            "DisaggregatedSets are not served until the operator restarts with it",
            dc.API_VERSION,
        )
    keeper: WebhookKeeper | ExternalCertKeeper = (
        ExternalCertKeeper(
            config.cert_dir, config.webhook_bind_host, config.webhook_port, gangs.webhook_provider
        )
        if config.cert_dir is not None
        else WebhookKeeper(kube, config, coverage, gangs.webhook_provider)
    )
    keeper.server.on_request = metrics.webhook_request
    keeper.server.evictions = (EVICTION_WEBHOOK_PATH, EvictionReviewer(kube, cache).review)
    kopf_ready = asyncio.Event()
    watching = [
        asyncio.create_task(i.run(), name=f"informer {i.path}")
        for i in [
            *informers(kube, cache, queue, config, on_pod=_waker(ds), gang_api=gangs.api),
            *(ds_informers(kube, ds, config) if ds else []),
        ]
    ]
    endpoints = await serve_endpoints(
        MetricsServing(
            address=config.metrics_bind_address,
            secure=config.metrics_secure,
            cert_dir=config.metrics_cert_dir,
            service=config.metrics_service,
            namespace=config.namespace,
        ),
        config.health_probe_bind_address,
        metrics,
        lambda: iter(
            [
                ("webhook", keeper.server.serving),
                ("informers", kopf_ready.is_set() and cache.synced()),
            ]
        ),
        kube,
    )
    await keeper.start()
    log.info("pod webhook serving on %s:%d", config.webhook_bind_host, keeper.server.port)
    stop_flag = stop or asyncio.Event()
    # One name for this process, from the pod (or host) name: the Lease holder, and kopf's
    # peering identity, which kopf would otherwise build from getpass.getuser(), a passwd
    # lookup that fails under an arbitrary UID (OpenShift's restricted-v2, any runAsUser).
    identity = default_identity()
    leadership = Leadership(
        LeaderElector(
            kube,
            config.namespace,
            identity=identity,
            lease_duration=config.lease_duration,
            renew_deadline=config.renew_deadline,
            retry_period=config.retry_period,
        )
        if config.leader_elect
        else None,
        lambda: _start_queues(queue, ds),
        lambda: _stop_queues(queue, ds),
        stop_flag,
        lambda leading: metrics.leader.labels(LEASE_NAME).set(int(leading)),
    )
    leadership.start()
    recorder.start()
    ds_recorder.start()
    try:
        await kopf.operator(
            registry=registry(cache, queue, config, ds),
            settings=settings(config),
            clusterwide=not config.namespaces,
            namespaces=config.namespaces,
            standalone=True,
            identity=cast(Any, identity),  # kopf's Identity, a NewType of str it does not export
            stop_flag=stop_flag,
            ready_flag=kopf_ready,
        )
    finally:
        await _stop_queues(queue, ds)
        for task in watching:
            task.cancel()
        await asyncio.gather(*watching, return_exceptions=True)
        await leadership.stop()
        await recorder.stop()
        await ds_recorder.stop()
        await keeper.stop()
        for endpoint in endpoints:
            await endpoint.stop()
        await kube.close()
    leadership.check()
