"""Serving certificates made by someone else (``--cert-dir`` for the pod webhook,
``--metrics-cert-dir`` for metrics): OpenShift's service CA or cert-manager writes ``tls.crt``
and ``tls.key`` into a Secret mounted in the pod (and, for the webhook, injects their CA into the
webhook configuration's caBundle). The operator then only serves: it neither writes the Secret
nor the webhook configuration (which ships as a manifest).

The files are re-read every :data:`POLL_SECONDS` and served from the next connection on when
they changed (the kubelet swaps a Secret volume's files atomically), as controller-runtime's
certwatcher does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from pathlib import Path

from lws_operator.controller.servers import webhook

log = logging.getLogger(__name__)

POLL_SECONDS = 10.0


class CertFiles:
    """``cert_dir``'s tls.crt and tls.key, handed to ``load`` at start and whenever they
    change."""

    def __init__(self, cert_dir: Path, load: Callable[[bytes, bytes], None], what: str) -> None:
        self.cert_dir = cert_dir
        self.load = load
        self.what = what
        self._loaded: tuple[bytes, bytes] | None = None
        self._task: asyncio.Task[None] | None = None

    def _read(self) -> tuple[bytes, bytes]:
        return (self.cert_dir / "tls.crt").read_bytes(), (self.cert_dir / "tls.key").read_bytes()

    def reload(self) -> bool:
        """Serve the files' certificate if it changed; True when it did."""
        pair = self._read()
        if pair == self._loaded:
            return False
        self.load(*pair)
        self._loaded = pair
        log.info("loaded the %s certificate from %s", self.what, self.cert_dir)
        return True

    def start(self) -> None:
        """Load the files (raises if they are missing or invalid), then follow them."""
        self.reload()
        self._task = asyncio.create_task(self._watch(), name=f"{self.what}-certificate-files")

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(POLL_SECONDS)
            try:
                self.reload()
            except (OSError, ValueError) as e:
                # Mid-rotation (one file new, the other old) or briefly missing: keep serving
                # the previous certificate and look again.
                log.warning(
                    "could not load the %s certificate from %s: %s", self.what, self.cert_dir, e
                )

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None


class ExternalCertKeeper:
    """Same interface as :class:`lws_operator.controller.operator.WebhookKeeper`."""

    def __init__(
        self, cert_dir: Path, host: str, port: int, gang_provider: str | None = None
    ) -> None:
        self.server = webhook.WebhookServer(host, port, gang_provider)
        self.files = CertFiles(cert_dir, self.server.load_pem, "webhook")

    def reload(self) -> bool:
        return self.files.reload()

    async def start(self) -> None:
        self.files.start()
        await self.server.start()

    async def stop(self) -> None:
        await self.files.stop()
        await self.server.stop()
