import datetime

from lws_operator import pki
from lws_operator.controller.servers import certs


def test_issue_for_names_and_trust_chain() -> None:
    cert = certs.issue(dns_names=("svc.ns.svc",), ip_addresses=("127.0.0.1",))
    assert pki.is_signed_by(cert.leaf.cert_pem, cert.ca.cert_pem)
    assert cert.ca_bundle == cert.ca.cert_pem
    assert certs.usable(cert, ("svc.ns.svc",))
    assert not certs.usable(cert, ("other.ns.svc",))
    renew = cert.renew_at() - datetime.datetime.now(datetime.UTC)
    assert datetime.timedelta(days=330) < renew < datetime.timedelta(days=336)


def test_renewal_keeps_the_ca_and_rotation_bundles_both() -> None:
    first = certs.issue(dns_names=("a",))
    second = certs.issue(dns_names=("a",), previous=first)
    assert second.ca == first.ca and second.leaf != first.leaf
    old_ca = certs.ServingCert(
        ca=pki.make_ca("old", validity=datetime.timedelta(days=100)),
        leaf=first.leaf,
        ca_bundle=b"",
    )
    rotated = certs.issue(dns_names=("a",), previous=old_ca)
    assert rotated.ca != old_ca.ca
    assert rotated.ca_bundle == rotated.ca.cert_pem + old_ca.ca.cert_pem


def test_secret_round_trip() -> None:
    cert = certs.issue(dns_names=certs.service_dns_names("lws-webhook-service", "lws-system"))
    body = certs._secret_body("s", "lws-system", cert)
    assert body["type"] == "kubernetes.io/tls"
    assert certs._from_secret(body) == cert
    assert certs._from_secret({"data": {"tls.crt": "!!"}}) is None
