"""The operator as a child process (``lws-operator run``), for tests and benchmarks: what users
run, in its own process, so that a crash is a crash and it can be killed at will."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from lws_operator.kube.client import Kube
from lws_testbed.wait import wait_for_objects

WEBHOOK_CONFIGS = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
WEBHOOK_CONFIG = "lws-mutating-webhook-configuration"


class OperatorProcess:
    def __init__(
        self,
        proc: asyncio.subprocess.Process,
        log: Path,
        kubeconfig: Path | None = None,
        args: tuple[str, ...] = (),
    ) -> None:
        self.proc = proc
        self.log = log
        # How it was started, for restart().
        self.kubeconfig = kubeconfig
        self.args = args

    @property
    def pid(self) -> int:
        return self.proc.pid

    def tail(self, lines: int = 60) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def check_alive(self) -> None:
        if self.proc.returncode is not None:
            raise AssertionError(
                f"the operator exited with code {self.proc.returncode}:\n{self.tail()}"
            )

    async def restart(self, kube: Kube, timeout: float = 60) -> None:
        """Start it again, with the same arguments and log, once stopped."""
        assert self.kubeconfig is not None and self.proc.returncode is not None
        fresh = await start_operator(kube, self.kubeconfig, self.log, *self.args, timeout=timeout)
        self.proc = fresh.proc

    async def stop(self, timeout: float = 15) -> None:
        if self.proc.returncode is None:
            self.proc.terminate()
            try:
                await asyncio.wait_for(self.proc.wait(), timeout)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()


async def start_operator(
    kube: Kube, kubeconfig: Path, log: Path, *extra_args: str, timeout: float = 60
) -> OperatorProcess:
    """Start the operator against ``kubeconfig`` and return once it serves its pod webhook
    (it has registered the webhook configuration anew). ``kube`` is any client of that
    cluster, used to watch for the registration."""
    before = await kube.get_or_none(f"{WEBHOOK_CONFIGS}/{WEBHOOK_CONFIG}")
    old_rv = (before or {}).get("metadata", {}).get("resourceVersion")
    with open(log, "ab") as out:  # noqa: ASYNC230 (opened once, handed to the child)
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "lws_operator",
            "run",
            "--kubeconfig",
            str(kubeconfig),
            "--webhook-port",
            "0",
            *extra_args,
            stdout=out,
            stderr=asyncio.subprocess.STDOUT,
        )
    op = OperatorProcess(proc, log, kubeconfig, tuple(extra_args))

    def registered(objs: dict[str, dict[str, object]]) -> bool:
        meta = (objs.get(WEBHOOK_CONFIG) or {}).get("metadata") or {}
        return isinstance(meta, dict) and meta.get("resourceVersion", old_rv) != old_rv

    try:
        await wait_for_objects(
            kube,
            WEBHOOK_CONFIGS,
            registered,
            timeout=timeout,
            what="the operator to register its pod webhook",
            field_selector=f"metadata.name={WEBHOOK_CONFIG}",
        )
        op.check_alive()
    except BaseException:
        await op.stop()
        raise
    return op
