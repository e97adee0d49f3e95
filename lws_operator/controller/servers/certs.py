"""TLS of the pod webhook and of the metrics server: a CA and serving certificate that the
operator makes and rotates, and the server-side TLS context that serves it.

Two homes for a certificate:

* local (out of cluster, e.g. against ``make cluster-up``): made in memory at start-up for the
  address served; the API server reaches the webhook by URL;
* a Secret (in cluster): ``<namespace>/lws-webhook-server-cert`` for the webhook,
  ``<namespace>/lws-metrics-server-cert`` for metrics, each with ``ca.crt``, ``ca.key``,
  ``tls.crt``, ``tls.key``. Every replica serves the same certificate; whichever replica finds
  it missing, invalid or due for renewal writes a new one (optimistic concurrency on the
  Secret's resourceVersion decides between replicas), and the others load it.

The serving certificate lives a year and is renewed 30 days before it expires; the CA lives ten
years and is renewed a year before, with both CAs in the webhook's caBundle meanwhile, so the
API server trusts the webhook through every step.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime
import ipaddress
import logging
import ssl
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lws_operator import pki
from lws_operator.kube.client import ApiError, Kube
from lws_operator.kube.paths import resource_path

log = logging.getLogger(__name__)

LEAF_VALIDITY = datetime.timedelta(days=365)
LEAF_RENEW_BEFORE = datetime.timedelta(days=30)
CA_VALIDITY = datetime.timedelta(days=3650)
CA_RENEW_BEFORE = datetime.timedelta(days=365)
SECRET_NAME = "lws-webhook-server-cert"
METRICS_SECRET_NAME = "lws-metrics-server-cert"
# A failed renewal (API server unreachable, a watch refused) is tried again after this long.
RETRY_SECONDS = 60.0


@dataclass(frozen=True)
class ServingCert:
    ca: pki.KeyPair
    leaf: pki.KeyPair
    # Every CA the API server should trust: the current one, plus the previous during rotation.
    ca_bundle: bytes

    def renew_at(self) -> datetime.datetime:
        """When this certificate (or its CA) should be replaced."""
        return min(
            pki.not_after(self.leaf.cert_pem) - LEAF_RENEW_BEFORE,
            pki.not_after(self.ca.cert_pem) - CA_RENEW_BEFORE,
        )


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def issue(
    *,
    dns_names: tuple[str, ...],
    ip_addresses: tuple[str, ...] = (),
    previous: ServingCert | None = None,
    ca_name: str = "lws-webhook-ca",
) -> ServingCert:
    """A serving certificate for the given names, reusing ``previous``'s CA while it is not
    due for renewal."""
    ca = previous.ca if previous is not None else None
    bundle = previous.ca.cert_pem if previous is not None else b""
    if ca is None or pki.not_after(ca.cert_pem) - CA_RENEW_BEFORE <= _now():
        ca = pki.make_ca(ca_name, validity=CA_VALIDITY)
        # Keep trusting the old CA until every replica serves the new leaf.
        bundle = ca.cert_pem + (previous.ca.cert_pem if previous is not None else b"")
    leaf = pki.issue_cert(
        ca,
        dns_names[0] if dns_names else ip_addresses[0],
        dns_names=dns_names,
        ip_addresses=ip_addresses,
        validity=LEAF_VALIDITY,
    )
    return ServingCert(ca=ca, leaf=leaf, ca_bundle=bundle or ca.cert_pem)


def usable(cert: ServingCert, dns_names: tuple[str, ...]) -> bool:
    """Valid for the next while, signed by its CA, and for the names we serve."""
    if cert.renew_at() <= _now() or not pki.is_signed_by(cert.leaf.cert_pem, cert.ca.cert_pem):
        return False
    return set(dns_names) <= set(pki.dns_names(cert.leaf.cert_pem))


def service_dns_names(service: str, namespace: str) -> tuple[str, ...]:
    return (f"{service}.{namespace}.svc", f"{service}.{namespace}.svc.cluster.local")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _from_secret(secret: dict[str, Any]) -> ServingCert | None:
    data = secret.get("data") or {}
    try:
        parts = {k: base64.b64decode(data[k]) for k in ("ca.crt", "ca.key", "tls.crt", "tls.key")}
    except (KeyError, ValueError, TypeError):
        return None
    bundle = base64.b64decode(data["ca-bundle.crt"]) if "ca-bundle.crt" in data else parts["ca.crt"]
    return ServingCert(
        ca=pki.KeyPair(parts["ca.crt"], parts["ca.key"]),
        leaf=pki.KeyPair(parts["tls.crt"], parts["tls.key"]),
        ca_bundle=bundle,
    )


def _secret_body(name: str, namespace: str, cert: ServingCert) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/name": "lws-operator"},
        },
        "type": "kubernetes.io/tls",
        "data": {
            "ca.crt": _b64(cert.ca.cert_pem),
            "ca.key": _b64(cert.ca.key_pem),
            "tls.crt": _b64(cert.leaf.cert_pem),
            "tls.key": _b64(cert.leaf.key_pem),
            "ca-bundle.crt": _b64(cert.ca_bundle),
        },
    }


async def ensure_secret_cert(
    kube: Kube,
    *,
    namespace: str,
    service: str,
    secret_name: str = SECRET_NAME,
    ca_name: str = "lws-webhook-ca",
) -> ServingCert:
    """Read the shared certificate from its Secret, making or renewing it when needed. Safe to
    run from every replica at once: a lost write race re-reads the winner's certificate."""
    names = service_dns_names(service, namespace)
    path = resource_path("v1", "secrets", namespace=namespace, name=secret_name)
    for _ in range(5):
        secret = await kube.get_or_none(path)
        current = _from_secret(secret) if secret is not None else None
        if current is not None and usable(current, names):
            return current
        fresh = issue(dns_names=names, previous=current, ca_name=ca_name)
        body = _secret_body(secret_name, namespace, fresh)
        try:
            if secret is None:
                await kube.create(resource_path("v1", "secrets", namespace=namespace), body)
            else:
                body["metadata"]["resourceVersion"] = secret["metadata"]["resourceVersion"]
                await kube.replace(path, body)
            log.info("wrote a serving certificate to secret %s/%s", namespace, secret_name)
            return fresh
        except ApiError as e:
            if e.status not in (409,):
                raise
            # Another replica wrote it first: read theirs.
    raise RuntimeError(f"could not settle the certificate in secret {namespace}/{secret_name}")


class CertKeeper:
    """One serving certificate kept valid: in memory for ``host`` when ``service`` is None (out
    of cluster), else shared through the Secret ``secret_name`` for the Service's DNS names.
    :meth:`keep` renews it when due and, in cluster, follows the Secret when another replica
    renews it, handing every new certificate to ``on_change``."""

    def __init__(
        self,
        kube: Kube,
        *,
        namespace: str,
        service: str | None,
        secret_name: str,
        host: str,
        ca_name: str,
    ) -> None:
        self.kube = kube
        self.namespace = namespace
        self.service = service
        self.secret_name = secret_name
        self.host = host
        self.ca_name = ca_name

    async def current(self, previous: ServingCert | None = None) -> ServingCert:
        if self.service is None:
            if previous is not None and usable(previous, ()):
                return previous
            names: tuple[str, ...]
            ips: tuple[str, ...]
            try:
                names, ips = ("localhost",), (str(ipaddress.ip_address(self.host)),)
            except ValueError:  # a host name
                names, ips = ("localhost", self.host), ()
            return issue(dns_names=names, ip_addresses=ips, previous=previous, ca_name=self.ca_name)
        return await ensure_secret_cert(
            self.kube,
            namespace=self.namespace,
            service=self.service,
            secret_name=self.secret_name,
            ca_name=self.ca_name,
        )

    async def keep(
        self, cert: ServingCert, on_change: Callable[[ServingCert], Awaitable[None]]
    ) -> None:
        """Run forever (cancel to stop)."""
        while True:
            wait = max(1.0, (cert.renew_at() - _now()).total_seconds())
            try:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._secret_changed(cert), timeout=wait)
                fresh = await self.current(cert)
                if fresh != cert:
                    await on_change(fresh)
                    cert = fresh
            except Exception:
                log.exception(
                    "keeping the certificate of secret %s/%s failed; retrying in %.0fs",
                    self.namespace,
                    self.secret_name,
                    RETRY_SECONDS,
                )
                await asyncio.sleep(RETRY_SECONDS)

    async def _secret_changed(self, cert: ServingCert) -> None:
        """Return when the Secret no longer holds ``cert`` (never, out of cluster)."""
        if self.service is None:
            await asyncio.Event().wait()
            return
        path = resource_path("v1", "secrets", namespace=self.namespace)
        selector = f"metadata.name={self.secret_name}"
        while True:
            async for _kind, obj in self.kube.watch(path, field_selector=selector):
                current = _from_secret(obj)
                if current is not None and current.leaf != cert.leaf:
                    return


class ServerTLS:
    """The TLS context of one server (TLS 1.2 or later; HTTP/1.1 only, as upstream disables
    HTTP/2); :meth:`load_pem` swaps the certificate for every new connection, no restart."""

    def __init__(self, name: str) -> None:
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.minimum_version = ssl.TLSVersion.TLSv1_2
        # ssl loads a key only from a file: a private directory, on the pod's /tmp emptyDir.
        self._dir = tempfile.TemporaryDirectory(prefix=f"lws-{name}-")

    def load(self, cert: ServingCert) -> None:
        self.load_pem(cert.leaf.cert_pem, cert.leaf.key_pem)

    def load_pem(self, cert_pem: bytes, key_pem: bytes) -> None:
        """Serve this certificate (chain) and key from the next connection on."""
        d = Path(self._dir.name)
        (d / "tls.crt").write_bytes(cert_pem)
        key = d / "tls.key"
        key.write_bytes(key_pem)
        key.chmod(0o600)
        self.context.load_cert_chain(d / "tls.crt", key)

    def close(self) -> None:
        self._dir.cleanup()
