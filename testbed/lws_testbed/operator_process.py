"""The operator as a child process (``lws-operator run``), for tests and benchmarks: what users
run, in its own process, so that a crash is a crash and it can be killed at will."""

from __future__ import annotations

import asyncio
import os
import site
import sys
from dataclasses import dataclass
from pathlib import Path

from lws_operator.kube.client import Kube
from lws_testbed.source_operator import SOURCE_ENV
from lws_testbed.wait import wait_for_objects

WEBHOOK_CONFIGS = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
WEBHOOK_CONFIG = "lws-mutating-webhook-configuration"


@dataclass(frozen=True)
class RunAs:
    """Run the operator under ``uid`` (with primary group ``gid`` and no other) and exactly
    ``env`` (plus what it needs to find its Python packages), as a container runtime would:
    e.g. an arbitrary UID without a passwd entry, as OpenShift's restricted-v2 assigns."""

    uid: int
    gid: int = 0
    env: tuple[tuple[str, str], ...] = (("HOME", "/"),)


def _interpreter_for_others() -> tuple[str, dict[str, str]]:
    """A Python another UID can execute, with this environment's packages: this one when its
    whole path is world-executable, else the system's interpreter of the same version (a venv
    made from a Python under a private home, e.g. pyenv's under /root, is not)."""
    exe = Path(sys.executable).resolve()
    if all(os.stat(p).st_mode & 0o001 for p in [exe, *exe.parents]):
        return sys.executable, {}
    system = Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}")
    if not system.is_file():
        raise RuntimeError(
            f"{exe} cannot be executed by another user and there is no {system} to use instead"
        )
    repo = Path(__file__).resolve().parents[2]  # the editable installs' .pth files point here
    paths = [str(repo), *site.getsitepackages()]
    return str(system), {"PYTHONPATH": os.pathsep.join(paths)}


class OperatorProcess:
    def __init__(
        self,
        proc: asyncio.subprocess.Process,
        log: Path,
        kubeconfig: Path | None = None,
        args: tuple[str, ...] = (),
        run_as: RunAs | None = None,
    ) -> None:
        self.proc = proc
        self.log = log
        # How it was started, for restart().
        self.kubeconfig = kubeconfig
        self.args = args
        self.run_as = run_as

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
        fresh = await start_operator(
            kube, self.kubeconfig, self.log, *self.args, timeout=timeout, run_as=self.run_as
        )
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
    kube: Kube,
    kubeconfig: Path,
    log: Path,
    *extra_args: str,
    timeout: float = 60,
    run_as: RunAs | None = None,
) -> OperatorProcess:
    """Start the operator against ``kubeconfig`` and return once it serves its pod webhook
    (it has registered the webhook configuration anew). ``kube`` is any client of that
    cluster, used to watch for the registration. With ``run_as``, under that UID and
    environment (``kubeconfig`` must be readable by it)."""
    before = await kube.get_or_none(f"{WEBHOOK_CONFIGS}/{WEBHOOK_CONFIG}")
    old_rv = (before or {}).get("metadata", {}).get("resourceVersion")
    python, env, ids = sys.executable, None, {}
    if run_as is not None:
        python, extra_env = _interpreter_for_others()
        env = {"PATH": "/usr/bin:/bin", **dict(run_as.env), **extra_env}
        ids = {"user": run_as.uid, "group": run_as.gid, "extra_groups": []}
    # LWS_OPERATOR_SOURCE: another tree's operator (source_operator.py says why and how).
    source = os.environ.get(SOURCE_ENV)
    module = ("lws_testbed.source_operator", source) if source else ("lws_operator",)
    with open(log, "ab") as out:  # noqa: ASYNC230 (opened once, handed to the child)
        proc = await asyncio.create_subprocess_exec(
            python,
            "-m",
            *module,
            "run",
            "--kubeconfig",
            str(kubeconfig),
            "--webhook-port",
            "0",
            *extra_args,
            stdout=out,
            stderr=asyncio.subprocess.STDOUT,
            env=env,
            **ids,  # type: ignore[arg-type]
        )
    op = OperatorProcess(proc, log, kubeconfig, tuple(extra_args), run_as)

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
