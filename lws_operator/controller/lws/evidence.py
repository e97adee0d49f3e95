"""The reads a broken group's evidence asks for (plan/lws/recovery.py): the failed containers'
log tails, through the API (``pods/<name>/log``), read together before the group is deleted.
A read that fails is recorded as why (plan/lws/evidence.log_unavailable)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence

import aiohttp

from lws_operator.api.models import LeaderWorkerSet
from lws_operator.kube.client import ApiError, Kube
from lws_operator.kube.paths import resource_path
from lws_operator.plan.lws.evidence import LogRequest, log_tail, log_unavailable, transfer_limit
from lws_operator.plan.lws.history import Limits

log = logging.getLogger(__name__)


async def read_logs(
    kube: Kube, lws: LeaderWorkerSet, reads: Sequence[tuple[int, LogRequest]], limits: Limits
) -> list[tuple[str | None, str]]:
    """Each read's outcome, in order: (the tail, "") or (None, why not)."""
    if not reads:
        return []
    started = time.monotonic()
    results = await asyncio.gather(*(_log_tail(kube, lws.namespace, r, limits) for _, r in reads))
    if (took := time.monotonic() - started) > 0.5:
        log.info(
            "%s/%s: reading %d log tail(s) before a recreation took %.1fs",
            lws.namespace,
            lws.name,
            len(reads),
            took,
        )
    return list(results)


async def _log_tail(
    kube: Kube, namespace: str, req: LogRequest, limits: Limits
) -> tuple[str | None, str]:
    path = resource_path("v1", "pods", namespace=namespace, name=req.pod, subresource="log")
    try:
        raw = await kube.read_bytes(
            path,
            query=req.query(limits),
            timeout=limits.log_timeout,
            max_bytes=transfer_limit(limits),
        )
    except ApiError as e:
        return None, log_unavailable(f"{e.status} {e.message}")
    except (TimeoutError, aiohttp.ClientError) as e:
        return None, log_unavailable(f"{type(e).__name__} {e}".strip())
    text = log_tail(raw, limits)
    return (text, "") if text else (None, log_unavailable("the log is empty"))
