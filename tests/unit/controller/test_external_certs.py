"""--cert-dir: the webhook serves a certificate made by someone else, and follows changes."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

from lws_operator import pki
from lws_operator.controller.servers.external_certs import ExternalCertKeeper


def write(d: Path, ca: pki.KeyPair) -> bytes:
    leaf = pki.issue_cert(ca, "localhost", dns_names=("localhost",), ip_addresses=("127.0.0.1",))
    (d / "tls.crt").write_bytes(leaf.cert_pem)
    (d / "tls.key").write_bytes(leaf.key_pem)
    return leaf.cert_pem


async def served_cert(port: int, ca: pki.KeyPair) -> bytes:
    ctx = ssl.create_default_context(cadata=ca.cert_pem.decode())
    _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=ctx)
    der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    writer.close()
    await writer.wait_closed()
    return ssl.DER_cert_to_PEM_cert(der).encode()


def same(a: bytes, b: bytes) -> bool:
    return b"".join(a.split()) == b"".join(b.split())


async def test_serves_the_files_and_reloads_them_when_they_change(tmp_path: Path) -> None:
    ca = pki.make_ca("external-ca")
    first = write(tmp_path, ca)
    keeper = ExternalCertKeeper(tmp_path, "127.0.0.1", 0)
    await keeper.start()
    try:
        assert same(await served_cert(keeper.server.port, ca), first)
        assert not keeper.reload()  # unchanged
        second = write(tmp_path, ca)
        assert keeper.reload()
        assert same(await served_cert(keeper.server.port, ca), second)
    finally:
        await keeper.stop()
