import ipaddress

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID

from lws_operator import pki


def test_serving_cert_is_signed_by_ca_and_names_its_addresses() -> None:
    ca = pki.make_ca("test-ca")
    leaf = pki.issue_cert(ca, "svc", dns_names=("localhost",), ip_addresses=("127.0.0.1",))
    ca_cert = x509.load_pem_x509_certificate(ca.cert_pem)
    cert = x509.load_pem_x509_certificate(leaf.cert_pem)
    cert.verify_directly_issued_by(ca_cert)
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["localhost"]
    assert san.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [ExtendedKeyUsageOID.SERVER_AUTH]
    assert ca_cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca


def test_client_cert_carries_groups_as_organizations() -> None:
    ca = pki.make_ca("test-ca")
    leaf = pki.issue_cert(ca, "alice", organizations=("system:masters",), client=True)
    cert = x509.load_pem_x509_certificate(leaf.cert_pem)
    orgs = [a.value for a in cert.subject if a.oid == x509.oid.NameOID.ORGANIZATION_NAME]
    assert orgs == ["system:masters"]
    eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    assert isinstance(cert.public_key(), ec.EllipticCurvePublicKey)


def test_signing_key_pair_matches() -> None:
    from cryptography.hazmat.primitives import serialization

    private_pem, public_pem = pki.make_signing_key()
    key = serialization.load_pem_private_key(private_pem, password=None)
    assert (
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        == public_pem
    )
