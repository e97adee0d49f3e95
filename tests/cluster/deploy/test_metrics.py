"""Secure metrics, as upstream's manager serves them: HTTPS only, each scrape's bearer token
reviewed by the API server (TokenReview) and its user's access to /metrics checked
(SubjectAccessReview against the install's lws-metrics-reader ClusterRole); a certificate from
--metrics-cert-dir; plain HTTP only with --metrics-secure=false.

The operator runs out of cluster in place of the session's (its TokenReviews and
SubjectAccessReviews go to the local API server); the scrapers are ServiceAccounts with
TokenRequest tokens (tests/cluster/deploy/conftest.py).
"""

from __future__ import annotations

import contextlib
import ssl
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from lws_operator import pki
from lws_operator.kube.client import Kube
from lws_testbed.operator_process import OperatorProcess
from tests.cluster.deploy.conftest import Scrapers
from tests.cluster.deploy.helpers import free_port, scrape

Replace = Callable[..., contextlib.AbstractAsyncContextManager[OperatorProcess]]


@pytest.fixture(scope="module")
async def secure_port(replace_session_operator: Replace) -> AsyncIterator[int]:
    """An operator serving metrics with the defaults: HTTPS, token authorization."""
    port = free_port()
    async with replace_session_operator("--metrics-bind-address", f"127.0.0.1:{port}"):
        yield port


async def test_only_a_token_allowed_to_get_metrics_is_answered(
    kube: Kube, secure_port: int, scrapers: Scrapers
) -> None:
    t0 = time.perf_counter()
    status, text = await scrape(secure_port, token=scrapers.reader)
    first = time.perf_counter() - t0
    assert status == 200, text
    assert "controller_runtime_reconcile_total" in text and "workqueue_depth" in text, text
    t0 = time.perf_counter()
    for _ in range(20):
        assert (await scrape(secure_port, token=scrapers.reader))[0] == 200
    print(
        f"\nfirst scrape (TokenReview + SubjectAccessReview) {first * 1000:.1f} ms; "
        f"cached: {(time.perf_counter() - t0) / 20 * 1000:.1f} ms each (new TLS connection)"
    )

    status, text = await scrape(secure_port, token=scrapers.stranger)
    assert (status, text) == (
        403,
        f"Authorization denied for user system:serviceaccount:{scrapers.namespace}:stranger\n",
    )
    for headers in (
        {},
        {"Authorization": "Bearer not-a-token"},
        {"Authorization": f"Basic {scrapers.reader}"},
        {"Authorization": "Bearer"},
    ):
        assert await scrape(secure_port, headers=headers) == (401, "Unauthorized\n"), headers
    # The verb is the method (controller-runtime's filter): the role grants get, not head.
    async with (
        aiohttp.ClientSession() as session,
        session.head(
            f"https://127.0.0.1:{secure_port}/metrics",
            headers={"Authorization": f"Bearer {scrapers.reader}"},
            ssl=False,
        ) as resp,
    ):
        assert resp.status == 403

    # Allowed decisions are cached for five minutes, as upstream: a revoked reader keeps
    # reading meanwhile, and no scrape costs a review.
    await scrapers.unbind_reader(kube)
    try:
        status, _ = await scrape(secure_port, token=scrapers.reader)
        assert status == 200
    finally:
        await scrapers.bind_reader(kube)


async def test_plain_http_is_not_served_on_the_secure_port(secure_port: int) -> None:
    with pytest.raises(aiohttp.ClientError):
        await scrape(secure_port, scheme="http")


def _verifying(ca: pki.KeyPair) -> ssl.SSLContext:
    return ssl.create_default_context(cadata=ca.cert_pem.decode())


async def test_a_certificate_from_a_directory_is_served(
    replace_session_operator: Replace, scrapers: Scrapers, tmp_path: Path
) -> None:
    """--metrics-cert-dir (the OpenShift service CA's or cert-manager's Secret, mounted)."""
    ca = pki.make_ca("scrape-test-ca")
    leaf = pki.issue_cert(ca, "metrics", dns_names=("metrics.test",), ip_addresses=("127.0.0.1",))
    leaf.write(tmp_path / "tls.crt", tmp_path / "tls.key")
    port = free_port()
    args = ("--metrics-bind-address", f"127.0.0.1:{port}", "--metrics-cert-dir", str(tmp_path))
    async with replace_session_operator(*args):
        verify: dict[str, Any] = {"verify": _verifying(ca), "server_hostname": "metrics.test"}
        status, text = await scrape(port, token=scrapers.reader, **verify)
        assert status == 200, text
        status, _ = await scrape(port, token=scrapers.stranger, **verify)
        assert status == 403
        # A certificate of another CA is not what is served.
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await scrape(port, token=scrapers.reader, verify=_verifying(pki.make_ca("other")))


async def test_plain_http_only_when_asked_for(replace_session_operator: Replace) -> None:
    port = free_port()
    args = ("--metrics-bind-address", f"127.0.0.1:{port}", "--metrics-secure=false")
    async with replace_session_operator(*args):
        status, text = await scrape(port, scheme="http")
        assert status == 200 and "controller_runtime_reconcile_total" in text, text
        with pytest.raises(aiohttp.ClientError):
            await scrape(port)  # no TLS on it
