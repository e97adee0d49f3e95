"""The upstream LWS manager (kubernetes-sigs/lws) as a child process, out of cluster, against
any cluster whose API server can reach 127.0.0.1: for takeover tests and side-by-side
comparisons.

Out of cluster, its webhooks are set up as controller-runtime's envtest does:
``internalCertManagement`` off, a certificate for IP 127.0.0.1 in ``webhook.certDir``, and our
own webhook configurations pointing at ``https://127.0.0.1:<port><path>``. Leader election is
off. The binary and upstream's CRDs come from ``build-bins.sh upstream-lws`` (pinned in
``versions.env``).

Upstream and this operator serve the same CRD and the same webhook configuration name, so they
must never run at the same time against one cluster: :meth:`UpstreamManager.stop` first.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ctypes
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from lws_operator import pki
from lws_operator.api import constants as c
from lws_operator.kube.client import ApiError, Kube
from lws_operator.kube.paths import resource_path
from lws_testbed.binaries import BUILD_SCRIPT
from lws_testbed.local import free_port
from lws_testbed.manifests import Applier, replace_whole

ADMISSION = "admissionregistration.k8s.io/v1"
MUTATING_CONFIGURATION = "lws-mutating-webhook-configuration"
VALIDATING_CONFIGURATION = "lws-validating-webhook-configuration"
CRD_FIELD_MANAGER = "lws-upstream-install"
START_TIMEOUT = 60.0
CONFIG_NAME = "lws-manager.yaml"
LOG_NAME = "lws-manager.log"

_LWS_RULE = {
    "apiGroups": [c.GROUP],
    "apiVersions": [c.VERSION],
    "operations": ["CREATE", "UPDATE"],
    "resources": [c.PLURAL],
}
_POD_SELECTOR = {"matchExpressions": [{"key": c.SET_NAME_LABEL, "operator": "Exists"}]}


def _pod_rule(*operations: str) -> dict[str, Any]:
    return {
        "apiGroups": [""],
        "apiVersions": ["v1"],
        "operations": list(operations),
        "resources": ["pods"],
    }


# (configuration kind, webhook name, path, rule, objectSelector): upstream's
# config/webhook/manifests.yaml with its objectSelector patches, minus DisaggregatedSet's.
_WEBHOOKS: tuple[tuple[str, str, str, dict[str, Any], dict[str, Any] | None], ...] = (
    (
        "mutating",
        "mleaderworkerset.kb.io",
        "/mutate-leaderworkerset-x-k8s-io-v1-leaderworkerset",
        _LWS_RULE,
        None,
    ),
    ("mutating", "mpod.kb.io", "/mutate--v1-pod", _pod_rule("CREATE"), _POD_SELECTOR),
    (
        "validating",
        "vleaderworkerset.kb.io",
        "/validate-leaderworkerset-x-k8s-io-v1-leaderworkerset",
        _LWS_RULE,
        None,
    ),
    ("validating", "vpod.kb.io", "/validate--v1-pod", _pod_rule("CREATE", "UPDATE"), _POD_SELECTOR),
)


class UpstreamError(RuntimeError):
    """The upstream manager could not be built, started or stopped; one line naming the
    cause, optionally followed by the tail of its log."""


class UpstreamUnavailable(UpstreamError):
    """The upstream binary is not there and cannot be built here (no Go, no module proxy)."""


def upstream_dir() -> Path:
    """The directory holding ``lws-manager`` and ``crds/``, building them when missing (a few
    minutes when cold). Raises UpstreamUnavailable with the build's own one-line cause."""
    proc = subprocess.run(
        ["bash", str(BUILD_SCRIPT), "upstream-lws"],
        capture_output=True,
        text=True,
        check=False,
    )
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        causes = [ln for ln in proc.stderr.splitlines() if ln.startswith("build-cluster-bins:")]
        cause = causes[0] if causes else (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise UpstreamUnavailable(f"cannot build the upstream LWS manager: {cause}")
    bins = Path(lines[-1])
    if not (bins / "lws-manager").is_file() or not list((bins / "crds").glob("*.yaml")):
        raise UpstreamUnavailable(f"{bins} lacks lws-manager or crds/*.yaml after the build")
    return bins


async def install_crds(kube: Kube, bins: Path, *, field_manager: str = CRD_FIELD_MANAGER) -> None:
    """Server-side apply (force) upstream's CRDs (LeaderWorkerSet and DisaggregatedSet: its
    manager watches both) and wait until they are Established. A CRD applied later with the
    same ``field_manager`` replaces these wholesale (fields it lacks are removed)."""
    docs = await asyncio.to_thread(load_crds, bins)
    await Applier(kube, field_manager).apply_all(docs)


def load_crds(bins: Path) -> list[dict[str, Any]]:
    # 2.8 MB of YAML: libyaml's loader when PyYAML has it (about 10 times faster).
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    docs: list[dict[str, Any]] = []
    for path in sorted((bins / "crds").glob("*.yaml")):
        docs += [d for d in yaml.load_all(path.read_text(), Loader=loader) if isinstance(d, dict)]
    return docs


def manager_configuration(
    *, webhook_port: int, cert_dir: Path, metrics_port: int, health_port: int
) -> dict[str, Any]:
    """upstream's ``config.lws.x-k8s.io/v1alpha1`` Configuration for running out of cluster
    (decoded strictly by the manager: no unknown fields)."""
    return {
        "apiVersion": "config.lws.x-k8s.io/v1alpha1",
        "kind": "Configuration",
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": str(cert_dir)},
        "metrics": {"bindAddress": f"127.0.0.1:{metrics_port}"},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "clientConnection": {"qps": 500, "burst": 500},
    }


def webhook_configurations(port: int, ca_bundle: bytes) -> list[dict[str, Any]]:
    """The Mutating- and ValidatingWebhookConfiguration for the manager's webhooks on
    ``https://127.0.0.1:<port>``: upstream's names, paths and rules, by URL instead of a
    Service."""
    out = []
    for kind, name in (
        ("Mutating", MUTATING_CONFIGURATION),
        ("Validating", VALIDATING_CONFIGURATION),
    ):
        webhooks = []
        for which, hook, path, rule, selector in _WEBHOOKS:
            if which != kind.lower():
                continue
            webhook: dict[str, Any] = {
                "name": hook,
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "failurePolicy": "Fail",
                "clientConfig": {
                    "url": f"https://127.0.0.1:{port}{path}",
                    "caBundle": base64.b64encode(ca_bundle).decode(),
                },
                "rules": [rule],
            }
            if selector is not None:
                webhook["objectSelector"] = selector
            webhooks.append(webhook)
        out.append(
            {
                "apiVersion": ADMISSION,
                "kind": f"{kind}WebhookConfiguration",
                "metadata": {"name": name, "labels": {"app.kubernetes.io/name": "lws"}},
                "webhooks": webhooks,
            }
        )
    return out


def _configuration_path(kind: str, name: str | None = None) -> str:
    plural = f"{kind.removesuffix('WebhookConfiguration').lower()}webhookconfigurations"
    return resource_path(ADMISSION, plural, name=name)


def _readiness_probe() -> dict[str, Any]:
    return {
        "apiVersion": c.API_VERSION,
        "kind": c.KIND,
        "metadata": {"name": "lws-upstream-readiness-probe", "namespace": "default"},
        "spec": {
            "leaderWorkerTemplate": {
                "workerTemplate": {
                    "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}
                }
            }
        },
    }


def _write_files(work_dir: Path, ca: pki.KeyPair, ports: dict[str, int]) -> Path:
    """The serving certificate (IP 127.0.0.1, signed by ``ca``) in ``work_dir/certs`` and the
    manager's configuration file; returns the latter."""
    cert_dir = work_dir / "certs"
    cert_dir.mkdir(parents=True, exist_ok=True)
    pki.issue_cert(ca, "lws-upstream-webhook", ip_addresses=("127.0.0.1",)).write(
        cert_dir / "tls.crt", cert_dir / "tls.key"
    )
    config = work_dir / CONFIG_NAME
    body = manager_configuration(
        webhook_port=ports["webhook"],
        cert_dir=cert_dir,
        metrics_port=ports["metrics"],
        health_port=ports["health"],
    )
    config.write_text(yaml.safe_dump(body, sort_keys=False))
    return config


def _set_pdeathsig() -> None:
    # Runs in the child before exec: SIGTERM the manager when its parent dies.
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


@dataclass
class UpstreamManager:
    """A running upstream manager. :meth:`stop` ends it and removes its validating webhook."""

    proc: asyncio.subprocess.Process
    kube: Kube
    log: Path
    config: Path
    webhook_port: int
    health_port: int
    metrics_port: int

    @property
    def pid(self) -> int:
        return self.proc.pid

    def tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def check_alive(self) -> None:
        if self.proc.returncode is not None:
            raise UpstreamError(
                f"the upstream LWS manager exited with code {self.proc.returncode}; "
                f"last lines of {self.log}:\n{self.tail()}"
            )

    async def terminate(self, timeout: float = 15) -> None:
        """End the process (SIGTERM, then SIGKILL after ``timeout``)."""
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.terminate()
            try:
                await asyncio.wait_for(self.proc.wait(), timeout)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    self.proc.kill()
                await self.proc.wait()

    async def stop(self, timeout: float = 15) -> None:
        """End the process, then delete ``lws-validating-webhook-configuration``: its webhooks
        fail closed, so with the manager gone every LWS create and update would be refused.
        The mutating configuration stays (pod creation waits, failing, until the next LWS
        controller replaces it: no LWS pod is created unmutated meanwhile)."""
        await self.terminate(timeout)
        await self.kube.delete(_configuration_path("Validating", VALIDATING_CONFIGURATION))


async def start_upstream(
    kube: Kube,
    kubeconfig: Path,
    work_dir: Path,
    *extra_args: str,
    bins: Path | None = None,
    install: bool = True,
    crd_field_manager: str = CRD_FIELD_MANAGER,
    die_with_parent: bool = True,
    timeout: float = START_TIMEOUT,
) -> UpstreamManager:
    """Start upstream's manager against the cluster of ``kubeconfig`` (its identity; ``kube``
    is any admin client of that cluster) and return once its webhooks answer through the API
    server. ``work_dir`` receives the configuration, the certificate and ``lws-manager.log``.
    With ``install``, upstream's CRDs are applied first. ``extra_args`` go to the manager's
    command line (e.g. ``--zap-log-level=5``)."""
    if bins is None:
        bins = await asyncio.to_thread(upstream_dir)
    if install:
        await install_crds(kube, bins, field_manager=crd_field_manager)
    ca = pki.make_ca("lws-upstream-webhook-ca")
    ports = {"webhook": free_port(), "metrics": free_port(), "health": free_port()}
    config = _write_files(work_dir, ca, ports)
    for body in webhook_configurations(ports["webhook"], ca.cert_pem):
        await replace_whole(kube, _configuration_path(body["kind"], body["metadata"]["name"]), body)
    log = work_dir / LOG_NAME
    with open(log, "ab") as out:  # noqa: ASYNC230 (opened once, handed to the child)
        proc = await asyncio.create_subprocess_exec(
            str(bins / "lws-manager"),
            f"--kubeconfig={kubeconfig}",
            f"--config={config}",
            "--leader-elect=false",
            *extra_args,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_set_pdeathsig if die_with_parent else None,
        )
    manager = UpstreamManager(
        proc=proc,
        kube=kube,
        log=log,
        config=config,
        webhook_port=ports["webhook"],
        health_port=ports["health"],
        metrics_port=ports["metrics"],
    )
    try:
        await _wait_webhooks(manager, timeout)
    except BaseException:
        await manager.stop()
        raise
    return manager


async def _wait_webhooks(manager: UpstreamManager, timeout: float) -> None:
    """Until a server-side dry-run create of an LWS passes both LWS webhooks: the API server
    reaches the manager's webhook server, with our CA, and its handlers are registered (they
    are added only once the manager runs). Nothing can be watched for that, so this is a
    bounded retry with backoff; a manager that exits fails the wait at once."""
    path = resource_path(c.API_VERSION, c.PLURAL, namespace="default")
    probe = _readiness_probe()
    died = asyncio.ensure_future(manager.proc.wait())
    deadline = time.monotonic() + timeout
    delay = 0.05
    last = "no attempt"
    try:
        while True:
            try:
                await manager.kube.create(path, probe, dry_run=True)
                return
            except ApiError as e:
                last = str(e)
            if time.monotonic() > deadline:
                raise UpstreamError(
                    f"the upstream LWS manager's webhooks did not answer within {timeout:.0f}s; "
                    f"last error: {last}; last lines of {manager.log}:\n{manager.tail()}"
                )
            await asyncio.wait({died}, timeout=delay)
            manager.check_alive()
            delay = min(delay * 2, 1.0)
    finally:
        if not died.done():
            died.cancel()
            await asyncio.gather(died, return_exceptions=True)
