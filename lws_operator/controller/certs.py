"""The pod webhook's TLS: a CA and serving certificate that the operator makes and rotates.

Two homes for them:

* local (out of cluster, e.g. against ``make cluster-up``): made in memory at start-up for
  ``127.0.0.1``; the API server reaches the webhook by URL;
* a Secret (in cluster): ``<namespace>/lws-webhook-server-cert`` with ``ca.crt``, ``ca.key``,
  ``tls.crt``, ``tls.key``. Every replica serves the same certificate; whichever replica finds
  it missing, invalid or due for renewal writes a new one (optimistic concurrency on the
  Secret's resourceVersion decides between replicas), and the others load it.

The serving certificate lives a year and is renewed 30 days before it expires; the CA lives ten
years and is renewed a year before, with both CAs in the webhook's caBundle meanwhile, so the
API server trusts the webhook through every step.
"""

from __future__ import annotations

import base64
import datetime
import logging
from dataclasses import dataclass
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
) -> ServingCert:
    """A serving certificate for the given names, reusing ``previous``'s CA while it is not
    due for renewal."""
    ca = previous.ca if previous is not None else None
    bundle = previous.ca.cert_pem if previous is not None else b""
    if ca is None or pki.not_after(ca.cert_pem) - CA_RENEW_BEFORE <= _now():
        ca = pki.make_ca("lws-webhook-ca", validity=CA_VALIDITY)
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
    kube: Kube, *, namespace: str, service: str, secret_name: str = SECRET_NAME
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
        fresh = issue(dns_names=names, previous=current)
        body = _secret_body(secret_name, namespace, fresh)
        try:
            if secret is None:
                await kube.create(resource_path("v1", "secrets", namespace=namespace), body)
            else:
                body["metadata"]["resourceVersion"] = secret["metadata"]["resourceVersion"]
                await kube.replace(path, body)
            log.info("wrote webhook certificate to secret %s/%s", namespace, secret_name)
            return fresh
        except ApiError as e:
            if e.status not in (409,):
                raise
            # Another replica wrote it first: read theirs.
    raise RuntimeError(
        f"could not settle the webhook certificate in secret {namespace}/{secret_name}"
    )
