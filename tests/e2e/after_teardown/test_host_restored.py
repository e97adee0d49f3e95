"""After ``make e2e-down``: the host is as it was before the real node started (sysctls the
kubelet and the bridge plugin write, nft tables and KUBE-*/CNI-* chains, cni0 and veths,
routes, mounts, the kubelet's cgroups, /var/lib/{kubelet,containerd,cni} and the other paths a
node writes). ``make test-e2e`` runs this after the teardown; the state saved at the start is
kept in the cluster's state directory for it."""

from __future__ import annotations

import os
from pathlib import Path

from lws_testbed.realnode import guard, host
from lws_testbed.realnode.node import HOST_BEFORE


def test_the_host_is_as_before_the_real_node() -> None:
    state_dir = os.environ["LWS_E2E_STATE"]  # else skipped (tests/e2e/conftest.py)
    saved = Path(state_dir) / HOST_BEFORE
    assert saved.is_file(), f"{saved} is missing: did make e2e-up run?"
    assert guard.read_owner() is None, "the real node still holds the host"
    before = host.HostState.from_json(saved.read_text())
    diffs = host.differences(before, host.capture())
    assert not diffs, "the host differs from before the real node:\n" + "\n".join(diffs)
    # A real record: the sysctls the kubelet writes, and no bridge yet.
    assert {"vm.overcommit_memory", "kernel.panic", "net.ipv4.ip_forward"} <= set(before.sysctls)
    assert "cni0" not in before.links
