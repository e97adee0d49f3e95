"""The operator starts and works under an arbitrary UID that has no passwd entry, without USER
or LOGNAME in its environment: how OpenShift's restricted-v2 (and any runAsUser) runs it.
It once crashed at start-up there: kopf built its peering identity with getpass.getuser(),
which raised ``KeyError: 'getpwuid(): uid not found'``.
"""

from __future__ import annotations

import base64
import contextlib
import os
import pwd
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from lws_operator.kube.client import Kube
from lws_testbed.local import LocalCluster
from lws_testbed.operator_process import OperatorProcess, RunAs
from tests.cluster.controller.helpers import create_available, lws_body

UID = 1000123456  # in OpenShift's range for a project's pods


def kubeconfig_for(uid: int, source: Path, out_dir: Path) -> Path:
    """``source`` with its CA inlined, owned by ``uid`` in a directory only it can enter."""
    config = yaml.safe_load(source.read_text())
    for cluster in config["clusters"]:
        ca = cluster["cluster"].pop("certificate-authority", None)
        if ca:
            data = base64.b64encode(Path(ca).read_bytes()).decode()
            cluster["cluster"]["certificate-authority-data"] = data
    path = out_dir / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    for p in (out_dir, path):
        os.chown(p, uid, 0)
    path.chmod(0o600)
    return path


def process_identity(pid: int) -> tuple[list[str], list[bytes]]:
    """The real, effective, saved and filesystem UIDs of ``pid``, and its environment names."""
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    uids = next(line for line in status if line.startswith("Uid:")).split()[1:]
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return uids, [v.split(b"=")[0] for v in environ if v]


Replace = Callable[..., contextlib.AbstractAsyncContextManager[OperatorProcess]]


@pytest.fixture
def uid_dir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="lws-uid-") as d:
        yield Path(d)


@pytest.mark.parametrize("home", ["/", "/tmp"], ids=["home-root", "home-tmp"])
async def test_the_operator_runs_under_an_arbitrary_uid_without_a_passwd_entry(
    kube: Kube,
    kubeconfig: Path,
    local_cluster: LocalCluster | None,
    replace_session_operator: Replace,
    namespace: str,
    uid_dir: Path,
    home: str,
) -> None:
    if os.geteuid() != 0:
        pytest.skip("starting a process under another UID needs root")
    with pytest.raises(KeyError):
        pwd.getpwuid(UID)  # the premise: no passwd entry
    own = local_cluster.kubeconfig("lws-operator") if local_cluster else kubeconfig
    readable = kubeconfig_for(UID, own, uid_dir)
    # HOME "/" (not writable) is what runc sets when the image sets none; "/tmp" the image's.
    run_as = RunAs(UID, 0, (("HOME", home),))
    async with replace_session_operator(kubeconfig=readable, run_as=run_as) as op:
        uids, names = process_identity(op.pid)
        assert uids == [str(UID)] * 4
        assert not {b"USER", b"LOGNAME"} & set(names), names
        await create_available(kube, namespace, lws_body("uid", replicas=2, size=2))
        op.check_alive()
    log = op.log.read_text(errors="replace")
    assert "getpwuid" not in log and "Traceback" not in log, log[-3000:]
