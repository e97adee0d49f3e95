"""The local Kubernetes control plane: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and kwok as processes on 127.0.0.1, with simulated GPU nodes, and optionally a
real node (``real_nodes=1``: kubelet, containerd, kube-proxy and CoreDNS, see ``realnode``).

One class owns it: :class:`LocalCluster`. It is used by the tests (a session fixture), by
``make run`` and by ``make cluster-up``/``cluster-down`` (through ``python -m
lws_testbed``). Everything it makes lives in one state directory: PKI, kubeconfigs,
logs and ``state.json`` (the PIDs, so a detached cluster can be stopped from another process);
etcd's data lives on tmpfs.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import os
import secrets
import select
import shutil
import signal
import socket
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from lws_operator import pki
from lws_operator.kube.client import ApiError, Kube
from lws_operator.kube.paths import resource_path
from lws_testbed import binaries, kube_versions, kueue, realnode
from lws_testbed.nodes import NodeShape, fake_nodes
from lws_testbed.pids import pid_runs
from lws_testbed.realnode import host as realnode_host
from lws_testbed.realnode import preflight
from lws_testbed.realnode.images import Image, pause_image, workload_image
from lws_testbed.realnode.node import NodeError, RealNode
from lws_testbed.wait import Objects, WaitTimeout, wait_for_objects

HERE = Path(__file__).resolve().parent
START_TIMEOUT = 120.0


class ClusterError(RuntimeError):
    """The cluster could not be started or stopped; the message is one line naming the cause,
    optionally followed by the tail of a component's log."""


@dataclass(frozen=True)
class User:
    """A static-token identity. Users outside system:masters are bound to cluster-admin, so
    API Priority and Fairness and the audit log can tell their requests apart."""

    name: str
    kubeconfig: str
    groups: tuple[str, ...] = ()


USERS = (
    User("admin", "admin.kubeconfig", ("system:masters",)),
    User("system:kube-controller-manager", "kcm.kubeconfig", ("system:masters",)),
    User("system:kube-scheduler", "scheduler.kubeconfig", ("system:masters",)),
    User("kwok", "kwok.kubeconfig", ("system:masters",)),
    User("lws-operator", "operator.kubeconfig"),
    User("lws-upstream", "upstream.kubeconfig"),
    User("kueue", "kueue.kubeconfig"),
)


@dataclass
class ClusterConfig:
    state_dir: Path
    nodes: NodeShape = field(default_factory=NodeShape)
    # Client QPS of kube-controller-manager and kube-scheduler: high enough that neither is the
    # bottleneck of StatefulSet pod creation and binding (their defaults are 20 and 50).
    kcm_qps: int = 1000
    kcm_burst: int = 2000
    scheduler_qps: int = 1000
    scheduler_burst: int = 2000
    apiserver_port: int | None = None  # None: any free port
    audit_log: bool = False
    # Also write the admin kubeconfig here (a stable path for users and tools).
    kubeconfig_out: Path | None = None
    # Tie the components' lives to this process (tests); False for a detached cluster.
    die_with_parent: bool = True
    # Extra command-line flags per component name (e.g. "kube-apiserver"), appended last.
    extra_args: dict[str, list[str]] = field(default_factory=dict)
    # Real nodes (0 or 1: the kubelet's ports are fixed) beside the kwok nodes, labelled and
    # tainted lws-testbed/real-node (realnode.pin_to_real_node puts a pod there). The pause and
    # workload images are always imported; ``images`` are imported too (e.g. the operator's).
    real_nodes: int = 0
    images: tuple[Image, ...] = ()
    # Start Kueue's manager too, last (before any pod: its pod webhook fails closed).
    kueue: kueue.KueueOptions | None = None

    def __post_init__(self) -> None:
        if self.real_nodes not in (0, 1):
            raise ValueError(
                f"real_nodes must be 0 or 1 (got {self.real_nodes}): one real node per machine, "
                "its kubelet and kube-proxy ports are fixed"
            )


@dataclass
class _Proc:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_busy(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def _tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _set_pdeathsig() -> None:
    # Runs in the child before exec: SIGTERM the component when its parent dies.
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


@contextlib.contextmanager
def _interrupt_held() -> Iterator[None]:
    """Hold a Ctrl-C (SIGINT) until the block is done: a KeyboardInterrupt between the fork of
    a component and its bookkeeping would leave it running, unknown to ``stop()``."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: held.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if held:
            signal.raise_signal(signal.SIGINT)


class LocalCluster:
    def __init__(self, config: ClusterConfig) -> None:
        self.config = config
        # What differs per Kubernetes version (feature gates, API versions, controllers);
        # UnsupportedKubeVersion (a BinariesError) for a version outside KUBE_VERSIONS.
        self.kube_version = kube_versions.selected()
        self.state_dir = config.state_dir.resolve()
        self.pki_dir = self.state_dir / "pki"
        self.log_dir = self.state_dir / "logs"
        self.etcd_dir = Path("/dev/shm") / f"lws-etcd-{secrets.token_hex(6)}"
        self.procs: list[_Proc] = []
        self.ports: dict[str, int] = {}
        self.tokens: dict[str, str] = {}
        self.started_seconds = 0.0
        self.ca: pki.KeyPair | None = None
        self.node: RealNode | None = None
        # With a real node the API server listens on the host's bridge address, which pods
        # reach (through the `kubernetes` Service) and 127.0.0.1 does not serve.
        self.host_ip = realnode.HOST_IP if config.real_nodes else "127.0.0.1"
        self.node_images: list[Image] = []
        # What differed from the saved host state after the real node stopped (empty: as it
        # was); set by stop().
        self.host_differences: list[str] = []
        self.kueue_files: kueue.KueueFiles | None = None
        self.kueue_seconds = 0.0

    # ---- paths ------------------------------------------------------------------------------
    @property
    def server(self) -> str:
        return f"https://{self.host_ip}:{self.ports['apiserver']}"

    def kubeconfig(self, user: str = "admin") -> Path:
        return self.state_dir / next(u.kubeconfig for u in USERS if u.name == user)

    @property
    def audit_log_path(self) -> Path:
        return self.state_dir / "audit.log"

    # ---- lifecycle --------------------------------------------------------------------------
    def start(self) -> None:
        """Start every component and wait until the cluster can run pods. On any failure, stop
        what was started and raise ClusterError."""
        t0 = time.monotonic()
        real = self.config.real_nodes > 0
        if real and (reason := preflight.cannot_run_real_node()):
            raise ClusterError(f"this machine cannot run a real node: {reason}")
        if real and (missing := preflight.missing_packages()):
            raise ClusterError(f"{missing}: make node-packages installs them")
        bins = binaries.ensure_binaries(node=real)
        if real:
            self.node_images = [pause_image(), workload_image(), *self.config.images]
            node = RealNode(self.state_dir / "node", self.state_dir)
            try:
                node.prepare_host()  # takes the host; also restores one a killed cluster left
            except NodeError as e:
                raise ClusterError(str(e)) from None
            self.node = node
        try:
            if mounts := realnode_host.mounts_under(self.state_dir):
                raise ClusterError(
                    f"{len(mounts)} mount(s) under {self.state_dir} (e.g. {mounts[0]}): a real "
                    "node of an earlier run is still there; stop it first"
                )
            if self.state_dir.exists():
                shutil.rmtree(self.state_dir)
            for d in (self.pki_dir, self.log_dir):
                d.mkdir(parents=True, exist_ok=True)
            self._pick_ports()
            self._write_pki_and_kubeconfigs()
            deadline = time.monotonic() + START_TIMEOUT
            self._start_etcd(bins)
            self._wait_http("etcd", f"http://127.0.0.1:{self.ports['etcd']}/health", deadline)
            self._start_apiserver(bins)
            self._wait_http("kube-apiserver", f"{self.server}/readyz", deadline, auth=True)
            self._start_kcm(bins)
            self._start_scheduler(bins)
            self._start_kwok(bins)
            self._write_state()
            asyncio.run(self._bootstrap(deadline))
            self._wait_http(
                "kube-scheduler", f"https://127.0.0.1:{self.ports['scheduler']}/healthz", deadline
            )
            if self.node is not None:
                self._start_node(self.node, deadline)
            if self.config.kueue is not None:
                self.start_kueue(self.config.kueue)
        except BaseException:
            self.stop()
            raise
        self.started_seconds = time.monotonic() - t0

    def _start_node(self, node: RealNode, deadline: float) -> None:
        assert self.ca is not None
        node.write_config(self.ca, self.server, self.node_images[0].ref)
        try:
            node.start_runtime(self._spawn, self.node_images)
        except Exception as e:  # a failed import names the image and ctr's message
            raise ClusterError(f"the real node's container runtime: {e}") from None
        node.start_agents(self._spawn)
        self._write_state()

        async def bootstrap() -> None:
            async with await Kube.connect(self.kubeconfig("admin")) as kube:

                async def watch(
                    k: Kube, path: str, done: Callable[[Objects], bool], what: str
                ) -> None:
                    await self._await_watch(k, path, done, what, deadline)

                await node.bootstrap(kube, watch)

        asyncio.run(bootstrap())
        self._wait_http(
            "coredns", f"http://127.0.0.1:{node.ports['coredns-ready']}/ready", deadline
        )

    def stop(self) -> None:
        """Stop every component (SIGTERM, then SIGKILL), clients before the servers they use,
        so that kube-apiserver does not wait on a stopped etcd; then remove etcd's data. A
        real node is drained first (its pods deleted through the API) and the host restored
        after (``host_differences`` says what still differs)."""
        if self.node is not None and "kube-apiserver" not in self.dead_components() and self.procs:
            _run_async(self._drain(self.node))
        for p in reversed(self.procs):
            _end(p)
        self.procs.clear()
        if self.node is not None:
            self.host_differences = self.node.cleanup()
            self.node = None
        shutil.rmtree(self.etcd_dir, ignore_errors=True)
        with contextlib.suppress(FileNotFoundError):
            (self.state_dir / "state.json").unlink()

    async def _drain(self, node: RealNode) -> None:
        with contextlib.suppress(Exception):
            async with await Kube.connect(self.kubeconfig("admin")) as kube:
                await node.drain(kube)

    def __enter__(self) -> LocalCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def dead_components(self) -> list[str]:
        return [p.name for p in self.procs if p.popen.poll() is not None]

    def restart_component(self, name: str, *, kill: bool = False, timeout: float = 60.0) -> None:
        """Stop one component (SIGTERM, or SIGKILL with ``kill``) and start it again with the
        same command line and log; etcd and kube-apiserver are waited for until healthy (for
        fault-injection tests). etcd keeps its data (it lives in ``etcd_dir``)."""
        i = next((i for i, p in enumerate(self.procs) if p.name == name), None)
        if i is None:
            raise ClusterError(f"no component {name!r} (have: {[p.name for p in self.procs]})")
        old = self.procs[i]
        if old.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(old.popen.pid, signal.SIGKILL if kill else signal.SIGTERM)
        try:  # kube-apiserver drains its watches for a long while on SIGTERM
            old.popen.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(old.popen.pid, signal.SIGKILL)
            old.popen.wait(timeout=timeout)
        with open(old.log, "ab") as out:
            popen = subprocess.Popen(
                [str(a) for a in old.popen.args],  # type: ignore[union-attr]
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_set_pdeathsig if self.config.die_with_parent else None,
            )
        self.procs[i] = _Proc(name, popen, old.log)
        self._write_state()
        deadline = time.monotonic() + timeout
        if name == "etcd":
            self._wait_http(name, f"http://127.0.0.1:{self.ports['etcd']}/health", deadline)
        elif name == "kube-apiserver":
            self._wait_http(name, f"{self.server}/readyz", deadline, auth=True)

    # ---- Kueue ------------------------------------------------------------------------------
    def start_kueue(
        self, options: kueue.KueueOptions, timeout: float = kueue.READY_TIMEOUT
    ) -> None:
        """Install Kueue (``options.install_first``, its CRDs, its webhook configurations) and
        start its manager; return once its webhooks answer through the API server. Raises
        ClusterError with one line naming the cause."""
        t0 = time.monotonic()
        try:
            kueue.ensure_metrics_certificate()
            bins = kueue.kueue_dir()
            if self.kueue_files is None:
                self.kueue_files = kueue.KueueFiles(
                    work_dir=self.state_dir / "kueue",
                    webhook_port=free_port(),
                    health_port=free_port(),
                    ca=pki.make_ca("kueue-local-webhook-ca"),
                )
            files = self.kueue_files
            files.write(options)
            asyncio.run(self._kueue_async(kueue.install, bins, files, options))
            self._spawn("kueue", files.argv(bins, self.kubeconfig("kueue")))
            self._write_state()
            asyncio.run(
                self._kueue_async(kueue.wait_ready, files, self._check_alive, timeout=timeout)
            )
        except kueue.KueueError as e:
            raise ClusterError(str(e)) from None
        self.kueue_seconds = time.monotonic() - t0

    def restart_kueue(self, options: kueue.KueueOptions) -> None:
        """Stop Kueue's manager and start it again with ``options`` (same ports, certificate
        and webhook configurations), as Kueue's e2e does to change its configuration."""
        self._end_component("kueue")
        self.start_kueue(options)

    def stop_kueue(self) -> None:
        """Stop Kueue's manager and delete its webhook configurations, without which nothing
        refuses pods any more."""
        self._end_component("kueue")
        asyncio.run(self._kueue_async(lambda kube: kueue.remove_webhooks(kube)))

    def _end_component(self, name: str) -> None:
        for p in [p for p in self.procs if p.name == name]:
            _end(p)
            self.procs.remove(p)
        self._write_state()

    async def _kueue_async(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        async with await Kube.connect(self.kubeconfig("admin")) as kube:
            await fn(kube, *args, **kwargs)

    # ---- set-up -----------------------------------------------------------------------------
    def _pick_ports(self) -> None:
        want = self.config.apiserver_port
        if want is not None and port_busy(want):
            raise ClusterError(f"port {want} on 127.0.0.1 is busy: cannot start kube-apiserver")
        names = ("etcd", "etcd-peer", "kcm", "scheduler", "kwok")
        self.ports = {n: free_port() for n in names}
        self.ports["apiserver"] = want or free_port()

    def _write_pki_and_kubeconfigs(self) -> None:
        ca = self.ca = pki.make_ca("lws-local-ca")
        ca.write(self.pki_dir / "ca.crt", self.pki_dir / "ca.key")
        serving = pki.issue_cert(
            ca,
            "kube-apiserver",
            dns_names=(
                "localhost",
                "kubernetes",
                "kubernetes.default",
                "kubernetes.default.svc",
                f"kubernetes.default.svc.{realnode.CLUSTER_DOMAIN}",
            ),
            ip_addresses=("127.0.0.1", realnode.KUBERNETES_SERVICE_IP, self.host_ip),
        )
        serving.write(self.pki_dir / "apiserver.crt", self.pki_dir / "apiserver.key")
        if self.config.real_nodes:
            # The API server's identity towards kubelets (logs, exec, port-forward).
            client = pki.issue_cert(
                ca,
                "kube-apiserver-kubelet-client",
                organizations=("system:masters",),
                client=True,
            )
            client.write(self.pki_dir / "kubelet-client.crt", self.pki_dir / "kubelet-client.key")
        sa_key, sa_pub = pki.make_signing_key()
        (self.pki_dir / "sa.key").write_bytes(sa_key)
        (self.pki_dir / "sa.pub").write_bytes(sa_pub)
        rows = []
        for i, user in enumerate(USERS, start=1):
            token = secrets.token_hex(16)
            self.tokens[user.name] = token
            groups = ",".join(user.groups)
            rows.append(
                f'{token},{user.name},{i},"{groups}"' if groups else f"{token},{user.name},{i}"
            )
            self._write_kubeconfig(self.state_dir / user.kubeconfig, user.name, token)
        tokens = self.pki_dir / "tokens.csv"
        tokens.write_text("\n".join(rows) + "\n")
        tokens.chmod(0o600)
        if self.config.kubeconfig_out is not None:
            out = self.config.kubeconfig_out
            out.parent.mkdir(parents=True, exist_ok=True)
            self._write_kubeconfig(out, "admin", self.tokens["admin"])

    def _write_kubeconfig(self, path: Path, user: str, token: str) -> None:
        ca = str(self.pki_dir / "ca.crt")
        cfg = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "lws-local",
                    "cluster": {"server": self.server, "certificate-authority": ca},
                }
            ],
            "users": [{"name": user, "user": {"token": token}}],
            "contexts": [{"name": "lws-local", "context": {"cluster": "lws-local", "user": user}}],
            "current-context": "lws-local",
        }
        path.write_text(yaml.safe_dump(cfg, sort_keys=False))
        path.chmod(0o600)

    def _spawn(self, name: str, argv: list[str]) -> None:
        argv = argv + self.config.extra_args.get(name, [])
        log = self.log_dir / f"{name}.log"
        with open(log, "ab") as out, _interrupt_held():
            popen = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_set_pdeathsig if self.config.die_with_parent else None,
            )
            self.procs.append(_Proc(name, popen, log))

    def _start_etcd(self, bins: Path) -> None:
        port, peer = self.ports["etcd"], self.ports["etcd-peer"]
        self._spawn(
            "etcd",
            [
                str(bins / "etcd"),
                "--name=node0",
                f"--data-dir={self.etcd_dir}",
                f"--listen-client-urls=http://127.0.0.1:{port}",
                f"--advertise-client-urls=http://127.0.0.1:{port}",
                f"--listen-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-cluster=node0=http://127.0.0.1:{peer}",
                "--auto-compaction-retention=1",
                "--quota-backend-bytes=8589934592",
                "--unsafe-no-fsync=true",
                "--log-level=warn",
            ],
        )

    def _start_apiserver(self, bins: Path) -> None:
        p = self.pki_dir
        argv = [
            str(bins / "kube-apiserver"),
            f"--etcd-servers=http://127.0.0.1:{self.ports['etcd']}",
            f"--bind-address={self.host_ip}",
            f"--advertise-address={self.host_ip}",
            f"--secure-port={self.ports['apiserver']}",
            f"--tls-cert-file={p / 'apiserver.crt'}",
            f"--tls-private-key-file={p / 'apiserver.key'}",
            f"--client-ca-file={p / 'ca.crt'}",
            f"--token-auth-file={p / 'tokens.csv'}",
            f"--service-account-issuer={self.server}",
            f"--service-account-key-file={p / 'sa.pub'}",
            f"--service-account-signing-key-file={p / 'sa.key'}",
            f"--service-cluster-ip-range={realnode.SERVICE_CIDR}",
            "--allow-privileged=true",
        ]
        if self.config.real_nodes:
            argv += [
                # Kubelets are authorized as nodes (one list: RBAC must not appear twice).
                "--authorization-mode=Node,RBAC",
                "--enable-admission-plugins=NodeRestriction",
                f"--kubelet-client-certificate={p / 'kubelet-client.crt'}",
                f"--kubelet-client-key={p / 'kubelet-client.key'}",
                f"--kubelet-certificate-authority={p / 'ca.crt'}",
                "--kubelet-preferred-address-types=InternalIP,Hostname",
                # The `kubernetes` Service points at the bridge address, for pods.
                "--endpoint-reconciler-type=lease",
            ]
        else:
            argv += [
                "--authorization-mode=RBAC",
                # The `kubernetes` Service cannot point at 127.0.0.1; nothing in-cluster needs it.
                "--endpoint-reconciler-type=none",
            ]
        argv += [
            *self.kube_version.component_flags(apiserver=True),
            f"--cert-dir={self.state_dir / 'apiserver-certs'}",
        ]
        if self.config.audit_log:
            policy = self.state_dir / "audit-policy.yaml"
            policy.write_text(
                yaml.safe_dump(
                    {
                        "apiVersion": "audit.k8s.io/v1",
                        "kind": "Policy",
                        "omitStages": ["RequestReceived"],
                        "rules": [{"level": "Metadata"}],
                    }
                )
            )
            argv += [
                f"--audit-policy-file={policy}",
                f"--audit-log-path={self.audit_log_path}",
                "--audit-log-mode=batch",
            ]
        self._spawn("kube-apiserver", argv)

    def _component_auth(self, kubeconfig: Path) -> list[str]:
        return [
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
        ]

    def _start_kcm(self, bins: Path) -> None:
        p = self.pki_dir
        self._spawn(
            "kube-controller-manager",
            [
                str(bins / "kube-controller-manager"),
                *self._component_auth(self.kubeconfig("system:kube-controller-manager")),
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={self.ports['kcm']}",
                f"--cert-dir={self.state_dir / 'kcm-certs'}",
                f"--service-account-private-key-file={p / 'sa.key'}",
                f"--root-ca-file={p / 'ca.crt'}",
                "--use-service-account-credentials=false",
                f"--controllers={','.join(self.kube_version.kcm_controllers)}",
                f"--kube-api-qps={self.config.kcm_qps}",
                f"--kube-api-burst={self.config.kcm_burst}",
                *self.kube_version.component_flags(),
            ],
        )

    def _start_scheduler(self, bins: Path) -> None:
        kubeconfig = self.kubeconfig("system:kube-scheduler")
        cfg = self.state_dir / "scheduler-config.yaml"
        cfg.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "kubescheduler.config.k8s.io/v1",
                    "kind": "KubeSchedulerConfiguration",
                    "leaderElection": {"leaderElect": False},
                    "clientConnection": {
                        "kubeconfig": str(kubeconfig),
                        "qps": self.config.scheduler_qps,
                        "burst": self.config.scheduler_burst,
                    },
                }
            )
        )
        self._spawn(
            "kube-scheduler",
            [
                str(bins / "kube-scheduler"),
                f"--config={cfg}",
                f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={self.ports['scheduler']}",
                f"--cert-dir={self.state_dir / 'scheduler-certs'}",
                *self.kube_version.component_flags(),
            ],
        )

    def _start_kwok(self, bins: Path) -> None:
        self._spawn(
            "kwok",
            [
                str(bins / "kwok"),
                f"--kubeconfig={self.kubeconfig('kwok')}",
                f"--config={HERE / 'kwok-stages.yaml'}",
                "--manage-all-nodes=false",
                "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
                "--manage-nodes-with-label-selector=",
                "--manage-single-node=",
                f"--cidr={realnode.KWOK_CIDR}",
                # The nodes' kubelet address is kwok's own server: the API server's requests
                # for pod logs (pods/<pod>/log) then fail at once (kwok serves none) instead
                # of waiting on a route to an address no one has.
                "--node-ip=127.0.0.1",
                f"--node-port={self.ports['kwok']}",
                "--node-lease-duration-seconds=40",
                f"--server-address=127.0.0.1:{self.ports['kwok']}",
            ],
        )

    def _write_state(self) -> None:
        procs = [
            {"name": p.name, "pid": p.popen.pid, "argv0": str(p.popen.args[0])}  # type: ignore[index]
            for p in self.procs
        ]
        state: dict[str, Any] = {
            "server": self.server,
            "ports": self.ports,
            "etcd_dir": str(self.etcd_dir),
            "procs": procs,
        }
        if self.node is not None:
            state["real_node"] = {
                "root": str(self.node.root),
                "containerd_socket": str(self.node.containerd_socket),
                "name": realnode.NODE_NAME,
                "images": {i.ref: str(i.archive) for i in self.node_images},
            }
            self.node.record_pids(procs)
        (self.state_dir / "state.json").write_text(json.dumps(state, indent=2))

    # ---- waiting ----------------------------------------------------------------------------
    def _check_alive(self) -> None:
        for p in self.procs:
            rc = p.popen.poll()
            if rc is not None:
                raise ClusterError(_death_message(p.name, rc, p.log))

    def _wait_http(self, name: str, url: str, deadline: float, *, auth: bool = False) -> None:
        """Wait until ``url`` answers 200. Health endpoints have no watch, so this retries with
        a short, growing back-off; a component that dies fails the wait at once."""
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        headers = {"Authorization": f"Bearer {self.tokens['admin']}"} if auth else {}
        delay = 0.05
        last = ""
        while True:
            self._check_alive()
            try:
                req = urllib.request.Request(url, headers=headers)
                with urllib.request.urlopen(req, timeout=5, context=ctx) as resp:
                    if resp.status == 200:
                        return
                    last = f"HTTP {resp.status}"
            except urllib.error.HTTPError as e:
                last = f"HTTP {e.code}"
            except (OSError, urllib.error.URLError) as e:
                last = str(e)
            if time.monotonic() > deadline:
                proc = next((p for p in self.procs if p.name == name), None)
                tail = f"\n{_tail(proc.log)}" if proc else ""
                raise ClusterError(f"{name} not ready at {url} in time (last: {last}){tail}")
            time.sleep(delay)
            delay = min(delay * 1.5, 0.5)

    async def _bootstrap(self, deadline: float) -> None:
        """Identities, fake nodes; then wait (by watches) until nodes are Ready and the
        controller manager has made the default ServiceAccount."""
        async with await Kube.connect(self.kubeconfig("admin")) as kube:
            for user in USERS:
                if user.groups:
                    continue
                await _create_ignore_exists(
                    kube,
                    resource_path("rbac.authorization.k8s.io/v1", "clusterrolebindings"),
                    {
                        "apiVersion": "rbac.authorization.k8s.io/v1",
                        "kind": "ClusterRoleBinding",
                        "metadata": {"name": f"local-{user.name}-cluster-admin"},
                        "roleRef": {
                            "apiGroup": "rbac.authorization.k8s.io",
                            "kind": "ClusterRole",
                            "name": "cluster-admin",
                        },
                        "subjects": [
                            {
                                "apiGroup": "rbac.authorization.k8s.io",
                                "kind": "User",
                                "name": user.name,
                            }
                        ],
                    },
                )
            for node in fake_nodes(self.config.nodes):
                await _create_ignore_exists(kube, resource_path("v1", "nodes"), node)
            want = self.config.nodes.count
            await self._await_watch(
                kube,
                resource_path("v1", "nodes"),
                lambda objs: sum(1 for o in objs.values() if _node_ready(o)) >= want,
                f"{want} Ready nodes (kwok)",
                deadline,
            )
            await self._await_watch(
                kube,
                resource_path("v1", "serviceaccounts", namespace="default"),
                lambda objs: "default/default" in objs,
                "the default ServiceAccount (kube-controller-manager)",
                deadline,
            )

    async def _await_watch(
        self,
        kube: Kube,
        path: str,
        done: Callable[[Objects], bool],
        what: str,
        deadline: float,
    ) -> None:
        """wait_for_objects, but a component that dies meanwhile fails the start at once
        (noticed through pidfds: no polling)."""
        loop = asyncio.get_running_loop()
        died: asyncio.Future[None] = loop.create_future()

        def on_exit() -> None:
            if not died.done():
                died.set_result(None)

        fds = []
        for p in self.procs:
            fd = os.pidfd_open(p.popen.pid)
            fds.append(fd)
            loop.add_reader(fd, on_exit)
        timeout = max(1.0, deadline - time.monotonic())
        waiter = asyncio.ensure_future(
            wait_for_objects(kube, path, done, timeout=timeout, what=what)
        )
        try:
            self._check_alive()
            pending: set[asyncio.Future[Any]] = {waiter, died}
            await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for fd in fds:
                loop.remove_reader(fd)
                os.close(fd)
            waiter.cancel()
            await asyncio.gather(waiter, return_exceptions=True)
        if died.done():
            self._check_alive()
        try:
            waiter.result()
        except WaitTimeout as e:
            raise ClusterError(str(e)) from None


def _end(p: _Proc) -> None:
    """SIGTERM the component's process group, SIGKILL after 10 s."""
    if p.popen.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.popen.pid, signal.SIGTERM)
    try:
        p.popen.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.popen.pid, signal.SIGKILL)
        p.popen.wait(timeout=10)


def _death_message(name: str, rc: int, log: Path) -> str:
    text = _tail(log)
    if "address already in use" in text:
        return f"{name} could not bind its port: address already in use (see {log})"
    if name == "kueue":
        cause = kueue.failure_cause(log)
        return f"kueue exited with code {rc} during start-up: {cause}; log: {log}"
    return f"{name} exited with code {rc} during start-up; last lines of {log}:\n{text}"


def _node_ready(node: dict[str, Any]) -> bool:
    conds = node.get("status", {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)


async def _create_ignore_exists(kube: Kube, path: str, body: dict[str, Any]) -> None:
    try:
        await kube.create(path, body)
    except ApiError as e:
        if e.status != 409:
            raise


# ---- a detached cluster, found again through its state directory -----------------------------
def read_state(state_dir: Path) -> dict[str, Any] | None:
    try:
        data: dict[str, Any] = json.loads((state_dir / "state.json").read_text())
    except (OSError, ValueError):
        return None
    return data


def running_components(state_dir: Path) -> list[str]:
    state = read_state(state_dir) or {}
    return [p["name"] for p in state.get("procs", []) if pid_runs(p["pid"], p["argv0"])]


def stop_detached(state_dir: Path, timeout: float = 15.0) -> list[str]:
    """Stop a cluster started by another process; returns the components that were stopped.
    A real node is drained first and the host restored after; ClusterError when the host still
    differs from the state saved at start (the message lists what)."""
    state = read_state(state_dir)
    if state is None:
        return []
    procs = [p for p in state.get("procs", []) if pid_runs(p["pid"], p["argv0"])]
    node = None
    if "real_node" in state:
        node = RealNode(Path(state["real_node"]["root"]), state_dir.resolve())
        if any(p["name"] == "kube-apiserver" for p in procs):
            _run_async(_drain_detached(node, state_dir / "admin.kubeconfig"))
    for p in reversed(procs):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p["pid"], signal.SIGTERM)
        deadline = time.monotonic() + timeout
        # Not our child: no wait() is possible, so a pidfd tells when it has exited.
        try:
            fd = os.pidfd_open(p["pid"])
        except ProcessLookupError:
            continue
        try:
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p["pid"], signal.SIGKILL)
                select.select([fd], [], [], 5.0)
        finally:
            os.close(fd)
    shutil.rmtree(state.get("etcd_dir", "/nonexistent"), ignore_errors=True)
    with contextlib.suppress(FileNotFoundError):
        (state_dir / "state.json").unlink()
    # kube-proxy's own cleanup, by the binary the node ran (another Kubernetes version than
    # the one selected now, perhaps).
    proxy = next(
        (Path(p["argv0"]) for p in state.get("procs", []) if p["name"] == "kube-proxy"), None
    )
    if node is not None and (diffs := node.cleanup(proxy_bin=proxy)):
        raise ClusterError(
            "the host differs from before the real node started:\n  " + "\n  ".join(diffs)
        )
    return [p["name"] for p in procs]


async def _drain_detached(node: RealNode, kubeconfig: Path) -> None:
    with contextlib.suppress(Exception):
        async with await Kube.connect(kubeconfig) as kube:
            await node.drain(kube)


def _run_async(coro: Any) -> None:
    """Run ``coro`` to completion from synchronous code, also when an event loop already runs
    in this thread (then in a thread of its own)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(coro)
        return
    import threading

    t = threading.Thread(target=asyncio.run, args=(coro,))
    t.start()
    t.join()


@contextlib.contextmanager
def local_cluster(config: ClusterConfig) -> Iterator[LocalCluster]:
    cluster = LocalCluster(config)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()
