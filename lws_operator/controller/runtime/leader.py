"""Leader election with a ``coordination.k8s.io/v1`` Lease, as client-go's: every replica
serves the pod webhook, only the Lease holder reconciles.

The same rules as client-go's ``leaderelection`` package (and upstream LWS's defaults: lease
duration 15 s, renew deadline 10 s, retry period 2 s):

* a candidate takes the Lease when nobody holds it, or when its record (holder, renew time) has
  not changed for a whole lease duration *as observed by this candidate's own clock* (clock
  skew between machines does not matter). A change first seen at one read happened after the
  previous read began, so the candidate dates it from then (client-go dates it from the read
  that saw it, up to one retry period later): a killed holder is replaced within one lease
  duration of the kill, and never earlier than lease duration - retry period after its last
  renewal, when a live but cut-off holder has long given up (renew deadline);
* every write carries the resourceVersion read before it, so two candidates never both win;
* the holder renews every retry period; when it has not renewed for the renew deadline it
  gives up leadership (the caller stops reconciling at once and exits);
* on a clean shutdown the holder releases the Lease, so a successor need not wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import os
import socket
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from lws_operator.kube.client import ApiError, Kube
from lws_operator.kube.paths import resource_path
from lws_operator.plan.timestamps import format_micros

log = logging.getLogger(__name__)

LEASE_NAME = "lws-operator"
API = "coordination.k8s.io/v1"


class LeadershipLost(Exception):
    """The Lease could not be renewed within the renew deadline (or another holder took it)."""


def default_identity() -> str:
    """``<pod or host name>_<random>``: unique per process, readable in the Lease."""
    return f"{os.environ.get('POD_NAME') or socket.gethostname()}_{uuid.uuid4().hex[:8]}"


@dataclass
class LeaderElector:
    kube: Kube
    namespace: str
    name: str = LEASE_NAME
    identity: str = field(default_factory=default_identity)
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    # What we last saw of the Lease and when (monotonic), to judge expiry by our own clock.
    _observed: tuple[str, str] | None = None
    _observed_at: float = 0.0
    _previous_read: float | None = None
    _last_renew: float = 0.0
    _held: dict[str, Any] | None = None
    is_leader: bool = False

    def __post_init__(self) -> None:
        if not 0 < self.retry_period < self.renew_deadline < self.lease_duration:
            raise ValueError("need 0 < retry period < renew deadline < lease duration")

    @property
    def path(self) -> str:
        return resource_path(API, "leases", namespace=self.namespace, name=self.name)

    def _spec(self, previous: dict[str, Any] | None) -> dict[str, Any]:
        now = format_micros(datetime.datetime.now(datetime.UTC))
        prev = (previous or {}).get("spec") or {}
        transitions = int(prev.get("leaseTransitions") or 0)
        ours = prev.get("holderIdentity") == self.identity
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(1, round(self.lease_duration)),
            "acquireTime": prev.get("acquireTime") if ours else now,
            "renewTime": now,
            "leaseTransitions": transitions if ours or previous is None else transitions + 1,
        }

    def _observe(self, lease: dict[str, Any], read_at: float) -> None:
        spec = lease.get("spec") or {}
        record = (str(spec.get("holderIdentity") or ""), str(spec.get("renewTime") or ""))
        if record != self._observed:
            first = self._observed is None or self._previous_read is None
            self._observed = record
            self._observed_at = time.monotonic() if first else float(self._previous_read or 0)
        self._previous_read = read_at

    async def try_acquire_or_renew(self) -> bool:
        """One attempt; True when we hold the Lease afterwards."""
        read_at = time.monotonic()
        lease = await self.kube.get_or_none(self.path)
        if lease is None:
            body = {
                "apiVersion": API,
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": self._spec(None),
            }
            try:
                self._held = await self.kube.create(
                    resource_path(API, "leases", namespace=self.namespace), body
                )
            except ApiError as e:
                if e.status == 409:
                    return False
                raise
            self._last_renew = time.monotonic()
            return True
        self._observe(lease, read_at)
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        if holder and holder != self.identity and time.monotonic() < self._observed_at + duration:
            return False  # held by someone else, and not expired by our clock
        body = {**lease, "spec": self._spec(lease)}
        try:
            self._held = await self.kube.replace(self.path, body)
        except ApiError as e:
            if e.status == 409:
                return False  # someone wrote in between: look again next time
            raise
        self._last_renew = time.monotonic()
        return True

    def _wait_before_retry(self) -> float:
        """The retry period, or less when a foreign Lease expires sooner (by our clock), so a
        successor takes over within one lease duration of the holder's last renewal."""
        if self._observed is None or not self._observed[0]:
            return self.retry_period
        expires_in = self._observed_at + self.lease_duration - time.monotonic()
        return max(0.05, min(self.retry_period, expires_in + 0.05))

    async def acquire(self) -> None:
        """Return once this process holds the Lease."""
        while True:
            try:
                if await self.try_acquire_or_renew():
                    break
            except (ApiError, OSError, TimeoutError) as e:
                log.warning("leader election: could not read or write the Lease: %s", e)
            await asyncio.sleep(self._wait_before_retry())
        self.is_leader = True
        log.info(
            "became leader (Lease %s/%s, identity %s)", self.namespace, self.name, self.identity
        )

    async def hold(self) -> None:
        """Renew every retry period; raise :class:`LeadershipLost` once renewal has failed
        for the renew deadline."""
        while True:
            await asyncio.sleep(self.retry_period)
            try:
                if await asyncio.wait_for(self.try_acquire_or_renew(), self.renew_deadline):
                    continue
                ok = False
            except (ApiError, OSError, TimeoutError) as e:
                log.warning("leader election: renewing the Lease failed: %s", e)
                ok = False
            holder = (self._observed or ("", ""))[0]
            if not ok and holder and holder != self.identity:
                self.is_leader = False
                raise LeadershipLost(f"the Lease is now held by {holder}")
            if time.monotonic() - self._last_renew >= self.renew_deadline:
                self.is_leader = False
                raise LeadershipLost(
                    f"could not renew the Lease for {self.renew_deadline:.0f}s (renew deadline)"
                )

    async def release(self) -> None:
        """Give the Lease up (clean shutdown), so that a successor takes it at once."""
        if not self.is_leader or self._held is None:
            return
        self.is_leader = False
        body = dict(self._held)
        body["spec"] = {
            **(body.get("spec") or {}),
            "holderIdentity": "",
            "leaseDurationSeconds": 1,
            "renewTime": format_micros(datetime.datetime.now(datetime.UTC)),
        }
        try:
            await self.kube.replace(self.path, body)
            log.info("released the Lease %s/%s", self.namespace, self.name)
        except (ApiError, OSError) as e:
            log.warning("could not release the Lease: %s", e)


class Leadership:
    """Runs the reconcile workers of ``queue`` only while this process holds the Lease (or
    always, without leader election). On loss of the Lease the workers stop at once and
    ``stop`` is set: the process exits non-zero (:class:`LeadershipLost` from
    :meth:`check`) and Kubernetes starts it afresh as a candidate."""

    def __init__(
        self,
        elector: LeaderElector | None,
        start_work: Callable[[], None],
        stop_work: Callable[[], Awaitable[None]],
        stop: asyncio.Event,
        on_change: Callable[[bool], None] = lambda leading: None,
    ) -> None:
        self.elector = elector
        self._start_work, self._stop_work = start_work, stop_work
        self._stop = stop
        self._on_change = on_change
        self._task: asyncio.Task[None] | None = None
        self.lost: LeadershipLost | None = None

    def start(self) -> None:
        if self.elector is None:
            self._start_work()
            return
        self._on_change(False)
        self._task = asyncio.create_task(self._lead(self.elector), name="leader-election")

    async def _lead(self, elector: LeaderElector) -> None:
        await elector.acquire()
        self._start_work()
        self._on_change(True)
        try:
            await elector.hold()
        except LeadershipLost as e:
            log.error("lost leadership: %s; stopping reconciles and exiting", e)
            self.lost = e
            await self._stop_work()
            self._on_change(False)
            self._stop.set()

    async def stop(self) -> None:
        """Stop campaigning; release the Lease if held (call after the workers stopped)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self.elector is not None and self.lost is None:
            await self.elector.release()

    def check(self) -> None:
        if self.lost is not None:
            raise self.lost
