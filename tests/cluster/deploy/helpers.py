"""Helpers for the install and operations tests: kustomize builds, ServiceAccount tokens,
free ports and Prometheus scrapes (HTTPS with a bearer token, as the operator serves them)."""

from __future__ import annotations

import asyncio
import functools
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_testbed import binaries
from lws_testbed.wait import wait_for_objects

REPO = Path(__file__).resolve().parents[3]
DEPLOY = REPO / "deploy"
OVERLAYS = ("kind", "openshift", "cert-manager")
NAMESPACE = "lws-system"
SERVICE_ACCOUNT = "lws-controller-manager"


def kubectl() -> str:
    """The kubectl of the local cluster's binaries (it includes kustomize), else PATH's."""
    local = binaries.bin_dir() / "kubectl"
    if os.access(local, os.X_OK):
        return str(local)
    found = shutil.which("kubectl")
    if found is None:
        pytest.skip("no kubectl (make cluster-bins builds one)")
    return found


def run_kubectl(*args: str, stdin: str | None = None, timeout: float = 120) -> str:
    proc = subprocess.run(
        [kubectl(), *args], input=stdin, capture_output=True, text=True, timeout=timeout
    )
    if proc.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed:\n{proc.stderr}")
    return proc.stdout


@functools.cache
def _built(overlay: str, components: tuple[str, ...]) -> str:
    if not components:
        return run_kubectl("kustomize", str(DEPLOY / "overlays" / overlay))
    # A user's overlay: the named one plus components (paths relative to it, as kustomize wants).
    with tempfile.TemporaryDirectory() as d:
        rel = functools.partial(os.path.relpath, start=d)
        kustomization = {
            "resources": [rel(DEPLOY / "overlays" / overlay)],
            "components": [rel(DEPLOY / "components" / c) for c in components],
        }
        Path(d, "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
        return run_kubectl("kustomize", d)


def kustomize(overlay: str, *components: str) -> list[dict[str, Any]]:
    """``kubectl kustomize deploy/overlays/<overlay>`` (with ``deploy/components/<c>`` added),
    as documents (built once)."""
    return [d for d in yaml.safe_load_all(_built(overlay, components)) if isinstance(d, dict)]


def find(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (doc,) = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    return doc


async def service_account_token(
    kube: Kube, namespace: str, name: str, *, seconds: int = 3600
) -> str:
    """A token of ServiceAccount ``namespace/name`` from the TokenRequest API."""
    path = resource_path(
        "v1", "serviceaccounts", namespace=namespace, name=name, subresource="token"
    )
    answer = await kube.create(
        path,
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": seconds},
        },
    )
    return str(answer["status"]["token"])


async def service_account_kubeconfig(
    kube: Kube, admin_kubeconfig: Path, out: Path, *, seconds: int = 3600
) -> Path:
    """A kubeconfig for the deployed ServiceAccount, with a token from the TokenRequest API."""
    token = await service_account_token(kube, NAMESPACE, SERVICE_ACCOUNT, seconds=seconds)
    return write_token_kubeconfig(admin_kubeconfig, out, token)


def write_token_kubeconfig(admin_kubeconfig: Path, out: Path, token: str) -> Path:
    """``admin_kubeconfig``'s cluster (server and CA) with ``token`` as the user."""
    admin = yaml.safe_load(admin_kubeconfig.read_text())
    context = next(x for x in admin["contexts"] if x["name"] == admin["current-context"])
    cluster = next(c for c in admin["clusters"] if c["name"] == context["context"]["cluster"])
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": cluster["cluster"]}],
        "users": [{"name": SERVICE_ACCOUNT, "user": {"token": token}}],
        "contexts": [{"name": "sa", "context": {"cluster": "c", "user": SERVICE_ACCOUNT}}],
        "current-context": "sa",
    }
    out.write_text(yaml.safe_dump(config))
    out.chmod(0o600)
    return out


def sa_token(kubeconfig: Path) -> str:
    """The token of a kubeconfig written by :func:`write_token_kubeconfig`."""
    return str(yaml.safe_load(kubeconfig.read_text())["users"][0]["user"]["token"])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


async def scrape(
    port: int,
    path: str = "/metrics",
    *,
    token: str | None = None,
    scheme: str = "https",
    headers: dict[str, str] | None = None,
    verify: ssl.SSLContext | None = None,
    server_hostname: str | None = None,
) -> tuple[int, str]:
    """GET ``path`` on 127.0.0.1; over HTTPS the server's certificate is checked only against
    ``verify`` (else accepted as upstream's ServiceMonitor does: insecureSkipVerify)."""
    sent = dict(headers or {})
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    tls: ssl.SSLContext | bool = verify if verify is not None else False
    async with (
        aiohttp.ClientSession() as session,
        session.get(
            f"{scheme}://127.0.0.1:{port}{path}",
            headers=sent,
            ssl=tls if scheme == "https" else True,
            server_hostname=server_hostname,
            timeout=aiohttp.ClientTimeout(10),
        ) as resp,
    ):
        return resp.status, await resp.text()


async def metrics(port: int, token: str) -> Samples:
    status, text = await scrape(port, token=token)
    assert status == 200, text
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(samples: Samples, metric: str, /, **labels: str) -> float:
    """The sum of the samples of ``metric`` whose labels include ``labels``."""
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == metric and want <= ls)


def has(samples: Samples, name: str) -> bool:
    return any(n == name for n, _ in samples)


def denials(log: str) -> list[str]:
    """The lines of an operator log that show a request refused for want of a right (403,
    Forbidden). A namespace being deleted refuses new objects (Events of an earlier test's LWS
    still reconciled) with 403 too: not a missing right."""
    return [
        line
        for line in log.splitlines()
        if (" 403" in line or "Forbidden" in line) and "is being terminated" not in line
    ]


async def wait_holder(kube: Kube, namespace: str, want: Any, *, timeout: float) -> str:
    """The Lease lws-operator's holderIdentity once ``want(holder)`` holds (watched)."""
    key = f"{namespace}/lws-operator"
    objs = await wait_for_objects(
        kube,
        resource_path("coordination.k8s.io/v1", "leases", namespace=namespace),
        lambda o: key in o and bool(want((o[key].get("spec") or {}).get("holderIdentity") or "")),
        timeout=timeout,
        what="the Lease lws-operator's holder",
        field_selector="metadata.name=lws-operator",
    )
    return str((objs[key].get("spec") or {}).get("holderIdentity") or "")


async def wait_namespace_gone(kube: Kube, name: str, *, timeout: float = 120) -> None:
    await wait_for_objects(
        kube,
        resource_path("v1", "namespaces"),
        lambda objs: name not in objs,
        timeout=timeout,
        what=f"namespace {name} deleted",
        field_selector=f"metadata.name={name}",
    )


async def kubectl_lws(*args: str, timeout: float = 60) -> str:
    """Run the kubectl plugin (``kubectl-lws``, as kubectl runs it) and return its output."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "lws_operator.kubectl",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout)
    assert proc.returncode == 0, err.decode()
    return out.decode()
