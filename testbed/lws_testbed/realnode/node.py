"""One real node: containerd (with runc and the CNI bridge), the kubelet, kube-proxy
(nftables mode) and CoreDNS, as processes of the local cluster (``LocalCluster`` spawns them,
so they stop with it and show in its state file).

Everything they write lives under the node's directory in the cluster's state directory
(containerd's root and state, runc's root, the kubelet's root and pod logs, CNI configuration
and address leases); what cannot be moved (containerd's shim sockets, the CNI result cache,
``/var/log/containers``, sysctls, nft rules, ``cni0``, cgroups) is restored by ``host``.
Identities are client certificates from the cluster's CA: ``system:node:<name>`` in
``system:nodes``, ``system:kube-proxy`` and ``system:coredns``; the kubelet serves with a
certificate for the bridge address, which the API server verifies.

Settings that matter on these machines (``docs/local-cluster.md`` has the why): cgroupfs and
cgroup v1 allowed, no swap check, ``oomScoreAdj: 0`` (no CAP_SYS_RESOURCE), image garbage
collection off (local images cannot be pulled again), no host resolv.conf in pods, CoreDNS
serving ``cluster.local`` and the reverse zones only (no forward plugin: no query leaves the
machine), kube-proxy leaving the host's conntrack sysctls alone.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from lws_operator import pki
from lws_operator.kube.client import ApiError, Kube
from lws_operator.kube.paths import resource_path
from lws_testbed import binaries
from lws_testbed.realnode import (
    CLUSTER_DOMAIN,
    DNS_SERVICE_IP,
    HOST_IP,
    KWOK_CIDR,
    NODE_LABEL,
    NODE_NAME,
    NODE_TAINT,
    POD_CIDR,
    SERVICE_CIDR,
    guard,
    host,
)
from lws_testbed.realnode.images import Image, import_images
from lws_testbed.wait import wait_for_objects

CNI_BIN_DIR = "/usr/lib/cni"  # Debian's containernetworking-plugins
RUNC = "/usr/sbin/runc"
CORE_DNS_ROLE = "lws-testbed:coredns"
FIELD_MANAGER = "lws-testbed"
# The host state saved at start, kept in the cluster's state directory after teardown (for the
# check that the host is as it was).
HOST_BEFORE = "host-before.json"
Spawn = Callable[[str, list[str]], None]


class NodeError(RuntimeError):
    """The real node could not start or stop cleanly; one line naming the cause."""


class RealNode:
    def __init__(self, root: Path, state_dir: Path) -> None:
        self.root = root
        self.state_dir = state_dir
        self.before: host.HostState | None = None
        self.ports: dict[str, int] = {}

    # ---- paths ---------------------------------------------------------------------------
    @property
    def containerd_socket(self) -> Path:
        return self.root / "containerd.sock"

    @property
    def kubelet_root(self) -> Path:
        return self.root / "kubelet"

    def _p(self, *parts: str) -> Path:
        return self.root.joinpath(*parts)

    # ---- the host ------------------------------------------------------------------------
    def prepare_host(self) -> None:
        """Take the host (one real-node cluster per machine), save its state, and make the
        bridge with the host's address on it: the API server and the kubelet listen there."""
        # This process holds the host until the node's own processes are recorded.
        me = {"pid": os.getpid(), "argv0": _argv0(os.getpid())}
        owner = guard.Owner(str(self.state_dir), str(guard.GUARD_DIR / "host-before.json"), [me])
        try:
            stale = guard.acquire(owner)
        except guard.GuardError as e:
            raise NodeError(str(e)) from None
        try:
            self._take_host(stale, Path(owner.host_before))
        except BaseException:
            self.cleanup()
            raise

    def _take_host(self, stale: guard.Owner | None, before_file: Path) -> None:
        if stale is not None and before_file.is_file():
            # A cluster that was killed left its state: restore the host from its record.
            self.before = host.HostState.from_json(before_file.read_text())
            kill_leftovers(Path(stale.state_dir))
            host.unmount_under(Path(stale.state_dir))
            host.restore(self.before)
        else:
            self.before = host.capture()
            before_file.write_text(self.before.to_json())
        for argv in (
            ["ip", "link", "add", "cni0", "type", "bridge"],
            ["ip", "addr", "add", f"{HOST_IP}/24", "dev", "cni0"],
            ["ip", "link", "set", "cni0", "up"],
            # Service and kwok addresses never leave through the default route.
            ["ip", "route", "add", SERVICE_CIDR, "dev", "cni0", "src", HOST_IP],
            ["ip", "route", "add", KWOK_CIDR, "dev", "cni0", "src", HOST_IP],
        ):
            proc = subprocess.run(argv, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                raise NodeError(f"{' '.join(argv)} failed: {proc.stderr.strip()}")

    def record_pids(self, pids: list[dict[str, Any]]) -> None:
        owner = guard.read_owner()
        if owner is not None and owner.state_dir == str(self.state_dir):
            owner.pids = pids
            guard.write(owner)

    # ---- configuration -------------------------------------------------------------------
    def write_config(self, ca: pki.KeyPair, server: str, sandbox_image: str) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        pki_dir = self._p("pki")
        pki_dir.mkdir(exist_ok=True)
        (pki_dir / "ca.crt").write_bytes(ca.cert_pem)
        identities = {
            "kubelet": (f"system:node:{NODE_NAME}", ("system:nodes",)),
            "kube-proxy": ("system:kube-proxy", ()),
            "coredns": ("system:coredns", ()),
        }
        for name, (cn, groups) in identities.items():
            cert = pki.issue_cert(ca, cn, organizations=groups, client=True)
            cert.write(pki_dir / f"{name}-client.crt", pki_dir / f"{name}-client.key")
            self._kubeconfig(name, server)
        serving = pki.issue_cert(ca, NODE_NAME, dns_names=(NODE_NAME,), ip_addresses=(HOST_IP,))
        serving.write(pki_dir / "kubelet.crt", pki_dir / "kubelet.key")
        self._write_containerd_config(sandbox_image)
        self._write_cni_config()
        self._write_kubelet_config()
        self._write_proxy_config()
        self._write_corefile()

    def _kubeconfig(self, name: str, server: str) -> None:
        pki_dir = self._p("pki")
        cfg = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "lws-local",
                    "cluster": {"server": server, "certificate-authority": str(pki_dir / "ca.crt")},
                }
            ],
            "users": [
                {
                    "name": name,
                    "user": {
                        "client-certificate": str(pki_dir / f"{name}-client.crt"),
                        "client-key": str(pki_dir / f"{name}-client.key"),
                    },
                }
            ],
            "contexts": [{"name": "lws-local", "context": {"cluster": "lws-local", "user": name}}],
            "current-context": "lws-local",
        }
        path = self._p(f"{name}.kubeconfig")
        path.write_text(yaml.safe_dump(cfg, sort_keys=False))
        path.chmod(0o600)

    def _write_containerd_config(self, sandbox_image: str) -> None:
        cri = 'plugins."io.containerd.grpc.v1.cri"'
        toml = f"""\
version = 2
root = "{self._p("containerd", "root")}"
state = "{self._p("containerd", "state")}"
oom_score = 0
disabled_plugins = [
  "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing",
]
[grpc]
  address = "{self.containerd_socket}"
[ttrpc]
  address = "{self.containerd_socket}.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "{self._p("containerd", "opt")}"
[{cri}]
  sandbox_image = "{sandbox_image}"
  # Guaranteed pods ask for -997, which needs CAP_SYS_RESOURCE: clamp to our own score.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [{cri}.containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [{cri}.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [{cri}.containerd.runtimes.runc.options]
        BinaryName = "{RUNC}"
        Root = "{self._p("runc")}"
        SystemdCgroup = false
  [{cri}.cni]
    bin_dir = "{CNI_BIN_DIR}"
    conf_dir = "{self._p("cni", "net.d")}"
    max_conf_num = 1
"""
        self._p("containerd").mkdir(exist_ok=True)
        self._p("containerd", "config.toml").write_text(toml)

    def _write_cni_config(self) -> None:
        conf_dir = self._p("cni", "net.d")
        conf_dir.mkdir(parents=True, exist_ok=True)
        conflist = {
            "cniVersion": "1.0.0",
            "name": "lws-testbed",
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": "cni0",
                    "isGateway": True,
                    # No masquerading: nothing a pod sends is meant to leave the machine.
                    "ipMasq": False,
                    # A pod reaching itself through a Service; excludes promiscMode.
                    "hairpinMode": True,
                    "ipam": {
                        "type": "host-local",
                        "ranges": [[{"subnet": POD_CIDR, "gateway": HOST_IP}]],
                        "routes": [{"dst": "0.0.0.0/0"}],
                        "dataDir": str(self._p("cni", "ipam")),
                    },
                }
            ],
        }
        (conf_dir / "10-lws-testbed.conflist").write_text(json.dumps(conflist, indent=2))

    def _write_kubelet_config(self) -> None:
        pki_dir = self._p("pki")
        cfg = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "address": HOST_IP,
            "port": 10250,
            "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1",
            "healthzPort": 10248,
            "tlsCertFile": str(pki_dir / "kubelet.crt"),
            "tlsPrivateKeyFile": str(pki_dir / "kubelet.key"),
            "authentication": {
                "anonymous": {"enabled": False},
                "webhook": {"enabled": True},
                "x509": {"clientCAFile": str(pki_dir / "ca.crt")},
            },
            "authorization": {"mode": "Webhook"},
            "containerRuntimeEndpoint": f"unix://{self.containerd_socket}",
            "cgroupDriver": "cgroupfs",
            "failCgroupV1": False,
            "failSwapOn": False,
            "oomScoreAdj": 0,
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "evictionHard": {
                "memory.available": "100Mi",
                "nodefs.available": "1%",
                "nodefs.inodesFree": "1%",
                "imagefs.available": "1%",
            },
            "clusterDNS": [DNS_SERVICE_IP],
            "clusterDomain": CLUSTER_DOMAIN,
            # Pods get the cluster's resolver and search path only, not this host's.
            "resolvConf": "",
            "podLogsDir": str(self._p("pod-logs")),
            "registerWithTaints": [NODE_TAINT],
            "serializeImagePulls": False,
            "shutdownGracePeriod": "0s",
        }
        self._p("kubelet-config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))

    def _write_proxy_config(self) -> None:
        cfg = {
            "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
            "kind": "KubeProxyConfiguration",
            "mode": "nftables",
            "clientConnection": {"kubeconfig": str(self._p("kube-proxy.kubeconfig"))},
            "hostnameOverride": NODE_NAME,
            "clusterCIDR": POD_CIDR,
            "healthzBindAddress": "127.0.0.1:10256",
            "metricsBindAddress": "127.0.0.1:10249",
            "nodePortAddresses": [f"{HOST_IP}/32"],
            # Leave the host's conntrack sysctls as they are.
            "conntrack": {
                "maxPerCore": 0,
                "min": 0,
                "tcpEstablishedTimeout": "0s",
                "tcpCloseWaitTimeout": "0s",
                "udpTimeout": "0s",
                "udpStreamTimeout": "0s",
            },
            "iptables": {"localhostNodePorts": False},
        }
        self._p("kube-proxy.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))

    def _write_corefile(self) -> None:
        self.ports = {"coredns-health": _free_port(), "coredns-ready": _free_port()}
        self._p("Corefile").write_text(
            f"""\
{CLUSTER_DOMAIN}:53 in-addr.arpa:53 ip6.arpa:53 {{
    bind {HOST_IP}
    errors
    log . {{
        class denial error
    }}
    health 127.0.0.1:{self.ports["coredns-health"]}
    ready 127.0.0.1:{self.ports["coredns-ready"]}
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{
        kubeconfig {self._p("coredns.kubeconfig")} lws-local
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 5
    }}
    cache 5
    loop
    reload
    loadbalance
}}
"""
        )

    # ---- processes -----------------------------------------------------------------------
    def start_runtime(self, spawn: Spawn, images: list[Image]) -> None:
        """containerd, then the images imported (nothing can be pulled)."""
        containerd = shutil.which("containerd") or "/usr/bin/containerd"
        spawn("containerd", [containerd, "--config", str(self._p("containerd", "config.toml"))])
        deadline = time.monotonic() + 30
        while not self.containerd_socket.exists():
            if time.monotonic() > deadline:
                raise NodeError(f"containerd did not open {self.containerd_socket} in 30s")
            time.sleep(0.05)
        import_images(self.containerd_socket, images)

    def start_agents(self, spawn: Spawn) -> None:
        bins = binaries.node_binaries()
        spawn(
            "kubelet",
            [
                str(bins["kubelet"]),
                f"--config={self._p('kubelet-config.yaml')}",
                f"--kubeconfig={self._p('kubelet.kubeconfig')}",
                f"--hostname-override={NODE_NAME}",
                f"--node-ip={HOST_IP}",
                f"--root-dir={self.kubelet_root}",
                f"--cert-dir={self._p('pki')}",
                f"--node-labels={NODE_LABEL}=true",
            ],
        )
        spawn("kube-proxy", [str(bins["kube-proxy"]), f"--config={self._p('kube-proxy.yaml')}"])
        spawn("coredns", [str(bins["coredns"]), "-conf", str(self._p("Corefile"))])

    async def bootstrap(self, kube: Kube, await_watch: Callable[..., Any]) -> None:
        """CoreDNS's read access and the kube-dns Service (to CoreDNS on the bridge), then
        wait until the node is Ready."""
        rbac = "rbac.authorization.k8s.io/v1"
        await kube.apply(
            resource_path(rbac, "clusterroles", name=CORE_DNS_ROLE),
            {
                "apiVersion": rbac,
                "kind": "ClusterRole",
                "metadata": {"name": CORE_DNS_ROLE},
                "rules": [
                    {
                        "apiGroups": [""],
                        "resources": ["services", "pods", "namespaces"],
                        "verbs": ["list", "watch"],
                    },
                    {
                        "apiGroups": ["discovery.k8s.io"],
                        "resources": ["endpointslices"],
                        "verbs": ["list", "watch"],
                    },
                ],
            },
            field_manager=FIELD_MANAGER,
        )
        await kube.apply(
            resource_path(rbac, "clusterrolebindings", name=CORE_DNS_ROLE),
            {
                "apiVersion": rbac,
                "kind": "ClusterRoleBinding",
                "metadata": {"name": CORE_DNS_ROLE},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": CORE_DNS_ROLE,
                },
                "subjects": [
                    {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "User",
                        "name": "system:coredns",
                    }
                ],
            },
            field_manager=FIELD_MANAGER,
        )
        ports = [
            {"name": "dns", "port": 53, "protocol": "UDP"},
            {"name": "dns-tcp", "port": 53, "protocol": "TCP"},
        ]
        await kube.apply(
            resource_path("v1", "services", namespace="kube-system", name="kube-dns"),
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {
                    "name": "kube-dns",
                    "namespace": "kube-system",
                    "labels": {"k8s-app": "kube-dns"},
                },
                "spec": {
                    "clusterIP": DNS_SERVICE_IP,
                    "ports": [{**p, "targetPort": 53} for p in ports],
                },
            },
            field_manager=FIELD_MANAGER,
        )
        slices = "discovery.k8s.io/v1"
        await kube.apply(
            resource_path(slices, "endpointslices", namespace="kube-system", name="kube-dns-host"),
            {
                "apiVersion": slices,
                "kind": "EndpointSlice",
                "metadata": {
                    "name": "kube-dns-host",
                    "namespace": "kube-system",
                    "labels": {
                        "kubernetes.io/service-name": "kube-dns",
                        "endpointslice.kubernetes.io/managed-by": FIELD_MANAGER,
                    },
                },
                "addressType": "IPv4",
                "endpoints": [{"addresses": [HOST_IP], "conditions": {"ready": True}}],
                "ports": ports,
            },
            field_manager=FIELD_MANAGER,
        )
        await await_watch(
            kube,
            resource_path("v1", "nodes"),
            lambda objs: _ready(objs.get(NODE_NAME) or {}),
            f"the real node {NODE_NAME} Ready",
        )

    # ---- stopping ------------------------------------------------------------------------
    async def drain(self, kube: Kube, timeout: float = 60) -> None:
        """Cordon the node and delete its pods through the API, so that the kubelet stops
        them the normal way (CNI DEL, volumes unmounted) before it is stopped."""
        with contextlib.suppress(ApiError):
            await kube.patch(
                resource_path("v1", "nodes", name=NODE_NAME), {"spec": {"unschedulable": True}}
            )
        selector = f"spec.nodeName={NODE_NAME}"
        pods = await kube.list(resource_path("v1", "pods"), field_selector=selector)
        for pod in pods.get("items", []):
            meta = pod["metadata"]
            with contextlib.suppress(ApiError):
                await kube.delete(
                    resource_path("v1", "pods", namespace=meta["namespace"], name=meta["name"]),
                    grace_period_seconds=0,
                )
        with contextlib.suppress(Exception):
            await wait_for_objects(
                kube,
                resource_path("v1", "pods"),
                lambda objs: not objs,
                timeout=timeout,
                what=f"the pods on {NODE_NAME} gone",
                field_selector=selector,
            )

    def cleanup(self, proxy_bin: Path | None = None) -> list[str]:
        """After its processes have stopped: kube-proxy's own cleanup, leftover containers
        and shims killed, mounts undone, the host restored, and then the guard released.
        Returns what still differs from the host state saved at start (empty: as it was)."""
        before_file = guard.GUARD_DIR / "host-before.json"
        proxy = proxy_bin or binaries.node_binaries()["kube-proxy"]
        if proxy.is_file() and self._p("kube-proxy.yaml").is_file():
            subprocess.run(
                [str(proxy), "--cleanup", f"--config={self._p('kube-proxy.yaml')}"],
                capture_output=True,
                check=False,
                timeout=60,
            )
        kill_leftovers(self.state_dir)
        host.unmount_under(self.root)
        if self.before is None and before_file.is_file():
            self.before = host.HostState.from_json(before_file.read_text())
        diffs = host.restore(self.before) if self.before is not None else []
        if self.before is not None and self.state_dir.is_dir():
            (self.state_dir / HOST_BEFORE).write_text(self.before.to_json())
        if not diffs:
            before_file.unlink(missing_ok=True)
            guard.release(str(self.state_dir))
        # Else the guard stays, stale: the next start restores from the original record.
        return diffs


def kill_leftovers(state_dir: Path) -> None:
    """SIGKILL whatever a (stopped or killed) node left running: every process in the
    kubelet's cgroups (container processes survive their shim), then containerd's shims and
    any of our node processes still running from ``state_dir``."""
    for top in host.node_cgroups():
        for procs in (f for f in host.tree(Path(top))[1] if f.name == "cgroup.procs"):
            with contextlib.suppress(OSError):
                for pid in procs.read_text().split():
                    with contextlib.suppress(ProcessLookupError, ValueError):
                        os.kill(int(pid), signal.SIGKILL)
    marker = str(state_dir).encode()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if marker in cmdline and (
            b"containerd-shim" in cmdline or b"containerd" in cmdline.split(b"\0")[0]
        ):
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(proc.name), signal.SIGKILL)


def _argv0(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()


def _ready(node: dict[str, Any]) -> bool:
    conds = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ---- from the host, for tests -------------------------------------------------------------
def _ctr(socket: Path, *args: str) -> str:
    proc = subprocess.run(
        ["ctr", "--address", str(socket), "-n", "k8s.io", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
    if proc.returncode != 0:
        raise NodeError(f"ctr {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc.stdout


def container_id(status: dict[str, Any]) -> str:
    """The runtime's id in a pod's containerStatuses entry (``containerd://<id>``)."""
    return str(status["containerID"]).split("://", 1)[1]


def kill_container(socket: Path, cid: str, sig: str = "SIGKILL") -> None:
    """Signal a container's main process from the host: a crash the process did not choose
    (inside the container, PID 1 ignores signals it has no handler for)."""
    _ctr(socket, "tasks", "kill", "--signal", sig, cid)


def task_pid(socket: Path, cid: str) -> int:
    """The host PID of a container's main process."""
    for line in _ctr(socket, "tasks", "ls").splitlines()[1:]:
        words = line.split()
        if words and words[0] == cid:
            return int(words[1])
    raise NodeError(f"no task {cid} on the real node")
