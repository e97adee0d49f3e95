"""Kueue (``sigs.k8s.io/kueue``, GPU quota and queues) against the local cluster: its manager
as a process on 127.0.0.1, out of cluster, with its CRDs and its webhooks registered by URL.

What is needed to run it that way (docs/kueue.md): a ``config.kueue.x-k8s.io/v1beta2``
Configuration with the webhook server on 127.0.0.1 and a certificate of ours
(``internalCertManagement`` off), leader election off, the visibility server off (it binds
:8082 with certificates of its own and exits the process on failure), the frameworks listed
(Go's default is only ``batch/job``); Kueue's 11 CRDs and the ``kueue-system`` namespace; and
Kueue's webhook manifests with ``url: https://127.0.0.1:<port><path>`` and our CA, keeping the
namespaceSelector of its install that leaves kube-system and kueue-system out.

Kueue's pod webhook fails closed for every pod outside those two namespaces, so a cluster with
Kueue depends on it for all pods: start it before any pod, and use a cluster of its own.
:class:`lws_testbed.local.LocalCluster` starts it when ``ClusterConfig.kueue`` is set, stops it
with the cluster, and can restart it with other options. The binary, CRDs and webhook manifests
come from ``build-bins.sh kueue`` (pinned in ``versions.env``).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import os
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from lws_operator import pki
from lws_operator.kube.client import ApiError, Kube
from lws_operator.kube.paths import resource_path
from lws_testbed.binaries import BUILD_SCRIPT, cache_root, pins
from lws_testbed.manifests import Applier, replace_whole

GROUP = "kueue.x-k8s.io"
API_VERSION = f"{GROUP}/v1beta2"
NAMESPACE = "kueue-system"
# Kueue's kustomize install prefixes every name with "kueue-".
MUTATING_CONFIGURATION = "kueue-mutating-webhook-configuration"
VALIDATING_CONFIGURATION = "kueue-validating-webhook-configuration"
# cmd/kueue/main.go reads the metrics certificate from here, hard-coded, whenever internal
# certificate management is off, and exits when the files are missing (even with metrics off).
METRICS_CERT_DIR = Path("/etc/kueue/metrics/certs")
# The frameworks of Kueue's e2e configuration (test/e2e/config/extended) whose kinds every
# cluster serves, plus LeaderWorkerSet; the others need CRDs this cluster does not have.
FRAMEWORKS = (
    "batch/job",
    "pod",
    "deployment",
    "statefulset",
    "leaderworkerset.x-k8s.io/leaderworkerset",
)
CRD_FIELD_MANAGER = "lws-testbed-kueue"
LOG_NAME = "kueue.log"
READY_TIMEOUT = 90.0

# Labels, annotations and the gate Kueue puts on what it manages (pkg/controller/constants,
# pkg/controller/jobs/pod/constants).
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
MANAGED_LABEL = "kueue.x-k8s.io/managed"
ADMISSION_GATE = "kueue.x-k8s.io/admission"
TOPOLOGY_GATE = "kueue.x-k8s.io/topology"
SUSPENDING_PARENT_ANNOTATION = "kueue.x-k8s.io/pod-suspending-parent"
GROUP_NAME_ANNOTATION = "kueue.x-k8s.io/pod-group-name"
GROUP_NAME_LABEL = "kueue.x-k8s.io/pod-group-name"
PREBUILT_WORKLOAD_ANNOTATION = "kueue.x-k8s.io/prebuilt-workload-name"


class KueueError(RuntimeError):
    """Kueue could not be built, started or stopped; one line naming the cause, optionally
    followed by the tail of its log."""


@dataclass(frozen=True)
class KueueOptions:
    """What may differ between runs of Kueue's manager (Kueue's e2e restarts it for some)."""

    manage_jobs_without_queue_name: bool = False
    feature_gates: tuple[tuple[str, bool], ...] = ()
    frameworks: tuple[str, ...] = FRAMEWORKS
    # Applied before Kueue starts (e.g. the LeaderWorkerSet CRD): Kueue sets up an
    # integration's controller at start when its kind is served, else later with a backoff of
    # up to 2 minutes (jobframework.WaitForAPI).
    install_first: tuple[dict[str, Any], ...] = field(default=(), compare=False, repr=False)


def bin_dir() -> Path:
    """Where ``build-bins.sh kueue`` puts Kueue, keyed by its pin."""
    return cache_root() / "bin" / f"kueue-v{pins()['KUEUE_VERSION']}"


def built() -> bool:
    return os.access(bin_dir() / "kueue-manager", os.X_OK)


def kueue_dir() -> Path:
    """The directory holding ``kueue-manager``, ``crds/`` and ``webhook/``, building them when
    missing (about 20 minutes on 2 cores when cold). Raises KueueError with the build's own
    one-line cause."""
    proc = subprocess.run(
        ["bash", str(BUILD_SCRIPT), "kueue"], capture_output=True, text=True, check=False
    )
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        causes = [ln for ln in proc.stderr.splitlines() if ln.startswith("build-cluster-bins:")]
        cause = causes[0] if causes else (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise KueueError(f"cannot build Kueue: {cause}")
    bins = Path(lines[-1])
    if (
        not (bins / "kueue-manager").is_file()
        or not (bins / "webhook" / "manifests.yaml").is_file()
    ):
        raise KueueError(f"{bins} lacks kueue-manager or webhook/manifests.yaml after the build")
    return bins


def configuration(
    options: KueueOptions, *, webhook_port: int, health_port: int, cert_dir: Path
) -> dict[str, Any]:
    """Kueue's ``config.kueue.x-k8s.io/v1beta2`` Configuration for running out of cluster."""
    gates = {"VisibilityOnDemand": False, **dict(options.feature_gates)}
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": NAMESPACE,
        "manageJobsWithoutQueueName": options.manage_jobs_without_queue_name,
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "metrics": {"bindAddress": "0"},
        "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": str(cert_dir)},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "clientConnection": {"qps": 300, "burst": 500},
        "integrations": {"frameworks": list(options.frameworks)},
        "featureGates": gates,
    }


_NAMESPACE_SELECTOR = {
    "matchExpressions": [
        {
            "key": "kubernetes.io/metadata.name",
            "operator": "NotIn",
            "values": ["kube-system", NAMESPACE],
        }
    ]
}


def webhook_configurations(
    manifests: Iterable[dict[str, Any]], port: int, ca_bundle: bytes
) -> list[dict[str, Any]]:
    """Kueue's webhook configurations (``config/components/webhook/manifests.yaml``) as its
    install makes them (names prefixed ``kueue-``, and every webhook of a kind outside
    ``kueue.x-k8s.io`` limited to namespaces other than kube-system and kueue-system, as its
    kustomization does), pointing at ``https://127.0.0.1:<port>`` with ``ca_bundle``."""
    out = []
    for doc in manifests:
        body = copy.deepcopy(doc)
        body["metadata"] = {
            "name": f"kueue-{doc['metadata']['name']}",
            "labels": {"app.kubernetes.io/name": "kueue"},
        }
        for hook in body["webhooks"]:
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {
                "url": f"https://127.0.0.1:{port}{path}",
                "caBundle": base64.b64encode(ca_bundle).decode(),
            }
            groups = {g for rule in hook.get("rules") or [] for g in rule.get("apiGroups") or []}
            if GROUP not in groups:
                hook["namespaceSelector"] = copy.deepcopy(_NAMESPACE_SELECTOR)
        out.append(body)
    return out


def _load(path: Path) -> list[dict[str, Any]]:
    # The Workload CRD alone is 1.4 MB of YAML: libyaml's loader when PyYAML has it.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return [d for d in yaml.load_all(path.read_text(), Loader=loader) if isinstance(d, dict)]


def crds(bins: Path) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in sorted((bins / "crds").glob("*.yaml")):
        docs += _load(path)
    return docs


def ensure_metrics_certificate(directory: Path = METRICS_CERT_DIR) -> None:
    """Make sure ``directory/tls.{crt,key}`` exist: Kueue only loads them (its metrics server
    is off here), so any valid pair will do; one is written, atomically, when missing."""
    crt, key = directory / "tls.crt", directory / "tls.key"
    if crt.is_file() and key.is_file():
        return
    try:
        directory.mkdir(parents=True, exist_ok=True)
        pair = pki.issue_cert(pki.make_ca("kueue-local-metrics-ca"), "kueue-metrics")
        for target, data in ((key, pair.key_pem), (crt, pair.cert_pem)):
            fd, tmp = tempfile.mkstemp(dir=directory)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, target)
    except OSError as e:
        raise KueueError(
            f"Kueue needs a certificate at {crt} and {key} (a path its main.go hard-codes when "
            f"internal certificate management is off) and cannot create it: {e.strerror}; "
            f"create the directory writable for this user, or run once as root"
        ) from None


@dataclass
class KueueFiles:
    """What one Kueue manager runs with: ports, its serving certificate and CA, and its
    configuration file, all under ``work_dir``."""

    work_dir: Path
    webhook_port: int
    health_port: int
    ca: pki.KeyPair

    @property
    def cert_dir(self) -> Path:
        return self.work_dir / "certs"

    @property
    def config(self) -> Path:
        return self.work_dir / "kueue-config.yaml"

    @property
    def log(self) -> Path:
        return self.work_dir / LOG_NAME

    def write(self, options: KueueOptions) -> None:
        self.cert_dir.mkdir(parents=True, exist_ok=True)
        if not (self.cert_dir / "tls.crt").is_file():
            pki.issue_cert(self.ca, "kueue-webhook", ip_addresses=("127.0.0.1",)).write(
                self.cert_dir / "tls.crt", self.cert_dir / "tls.key"
            )
        body = configuration(
            options,
            webhook_port=self.webhook_port,
            health_port=self.health_port,
            cert_dir=self.cert_dir,
        )
        self.config.write_text(yaml.safe_dump(body, sort_keys=False))

    def argv(self, bins: Path, kubeconfig: Path) -> list[str]:
        return [
            str(bins / "kueue-manager"),
            f"--config={self.config}",
            f"--kubeconfig={kubeconfig}",
            "--zap-log-level=info",
        ]


async def install(kube: Kube, bins: Path, files: KueueFiles, options: KueueOptions) -> None:
    """``options.install_first``, the namespace, Kueue's CRDs (server-side, Established) and
    its webhook configurations (replaced as a whole)."""
    applier = Applier(kube, CRD_FIELD_MANAGER)
    await applier.apply_all(options.install_first)
    await applier.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    await applier.apply_all(await asyncio.to_thread(crds, bins))
    manifests = await asyncio.to_thread(_load, bins / "webhook" / "manifests.yaml")
    for body in webhook_configurations(manifests, files.webhook_port, files.ca.cert_pem):
        await replace_whole(kube, _configuration_path(body["kind"], body["metadata"]["name"]), body)


def _configuration_path(kind: str, name: str | None = None) -> str:
    plural = f"{kind.lower()}s"
    return resource_path("admissionregistration.k8s.io/v1", plural, name=name)


async def remove_webhooks(kube: Kube) -> None:
    """Delete Kueue's webhook configurations: with its manager gone they would refuse every
    pod (and Job, Deployment, StatefulSet, LeaderWorkerSet) outside kube-system and
    kueue-system."""
    for kind, name in (
        ("MutatingWebhookConfiguration", MUTATING_CONFIGURATION),
        ("ValidatingWebhookConfiguration", VALIDATING_CONFIGURATION),
    ):
        await kube.delete(_configuration_path(kind, name))


def _probe_flavor() -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "ResourceFlavor",
        "metadata": {"name": "lws-testbed-readiness-probe"},
    }


def _probe_pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "kueue-readiness-probe", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
    }


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
            return bool(r.status == 200)
    except (OSError, urllib.error.URLError):
        return False


async def wait_ready(
    kube: Kube,
    files: KueueFiles,
    check_alive: Callable[[], None],
    *,
    timeout: float = READY_TIMEOUT,
) -> None:
    """Until Kueue's readiness probe passes and a server-side dry-run create of a
    ResourceFlavor and of a pod pass its webhooks through the API server (its handlers are
    registered once the manager runs). Nothing can be watched for that: a bounded retry with
    backoff; ``check_alive`` raises when the process has exited, which fails the wait at once."""
    deadline = time.monotonic() + timeout
    delay = 0.1
    last = "no attempt"
    flavors = resource_path(API_VERSION, "resourceflavors")
    pods = resource_path("v1", "pods", namespace="default")
    while True:
        check_alive()
        if await asyncio.to_thread(_healthy, files.health_port):
            try:
                await kube.create(flavors, _probe_flavor(), dry_run=True)
                await kube.create(pods, _probe_pod(), dry_run=True)
                return
            except ApiError as e:
                last = str(e)
        else:
            last = f"http://127.0.0.1:{files.health_port}/readyz not ready"
        if time.monotonic() > deadline:
            raise KueueError(f"Kueue did not become ready within {timeout:.0f}s; last: {last}")
        await asyncio.sleep(delay)
        delay = min(delay * 1.5, 1.0)


def failure_cause(log: Path) -> str:
    """The one line of Kueue's log that says why it exited, if there is one."""
    with contextlib.suppress(OSError):
        for line in reversed(log.read_text(errors="replace").splitlines()):
            if '"level":"error"' in line or "ERROR" in line or "Unable to" in line:
                return line.strip()[:400]
    return "no error in its log"


# ---- Kueue objects ---------------------------------------------------------------------------
def resource_flavor(name: str, node_labels: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeLabels": dict(node_labels)} if node_labels else {}
    return {
        "apiVersion": API_VERSION,
        "kind": "ResourceFlavor",
        "metadata": {"name": name},
        "spec": spec,
    }


def cluster_queue(
    name: str,
    flavor: str,
    quota: dict[str, str | int],
    *,
    preemption: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A ClusterQueue for every namespace with one flavor and a nominal quota per resource
    (every resource the pods request must be listed, else their Workloads are inadmissible)."""
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": list(quota),
                "flavors": [
                    {
                        "name": flavor,
                        "resources": [{"name": r, "nominalQuota": q} for r, q in quota.items()],
                    }
                ],
            }
        ],
    }
    if preemption:
        spec["preemption"] = dict(preemption)
    return {
        "apiVersion": API_VERSION,
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": spec,
    }


def local_queue(name: str, namespace: str, cluster_queue_name: str) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterQueue": cluster_queue_name},
    }


def workload_priority_class(name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


def path(plural: str, namespace: str | None = None, name: str | None = None) -> str:
    return resource_path(API_VERSION, plural, namespace=namespace, name=name)
