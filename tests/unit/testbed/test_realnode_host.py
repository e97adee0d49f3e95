"""The real node's host bookkeeping: what differs (pure), which leftovers are the node's,
the one-per-machine guard, and how pods are put on the real node."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from lws_testbed import realnode
from lws_testbed.realnode import guard, host


def state(**kw: object) -> host.HostState:
    base: dict[str, object] = {
        "sysctls": {"vm.overcommit_memory": "0", "kernel.panic": "1"},
        "links": ["eth0", "lo"],
        "routes": ["default via 192.0.2.1 dev eth0"],
        "mounts": ["/ ext4"],
        "nft": [],
        "paths": {"/var/lib/cni": False, "/var/lib/kubelet": False},
        "cgroups": [],
    }
    base.update(kw)
    return host.HostState(**base)  # type: ignore[arg-type]


def test_an_unchanged_host_has_no_differences() -> None:
    assert host.differences(state(), state()) == []
    saved = state()
    assert host.HostState.from_json(saved.to_json()) == saved


def test_every_kind_of_leftover_is_named() -> None:
    after = state(
        sysctls={"vm.overcommit_memory": "1", "kernel.panic": "1"},
        links=["cni0", "eth0", "lo"],
        mounts=["/ ext4", "/run/netns/cni-1 nsfs"],
        nft=['table {"family": "ip", "name": "kube-proxy"}'],
        paths={"/var/lib/cni": True, "/var/lib/kubelet": False},
        cgroups=["/sys/fs/cgroup/memory/kubepods"],
    )
    diffs = host.differences(state(), after)
    assert "sysctl vm.overcommit_memory: '0' before, '1' now" in diffs
    assert "links: new: cni0" in diffs
    assert "mounts: new: /run/netns/cni-1 nsfs" in diffs
    assert 'nft: new: table {"family": "ip", "name": "kube-proxy"}' in diffs
    assert "path /var/lib/cni: absent before, exists now" in diffs
    assert "cgroups: new: /sys/fs/cgroup/memory/kubepods" in diffs
    assert len(diffs) == 6


def test_only_the_nodes_links_and_chains_are_touched() -> None:
    assert host.NODE_LINK.match("cni0") and host.NODE_LINK.match("veth0a1b2c3d")
    assert not host.NODE_LINK.match("eth0") and not host.NODE_LINK.match("veth-mine")
    assert host._node_rule({"chain": "KUBE-SERVICES", "expr": []})
    assert host._node_rule({"chain": "OUTPUT", "expr": [{"jump": {"target": "KUBE-FIREWALL"}}]})
    assert not host._node_rule({"chain": "INPUT", "expr": [{"accept": None}]})


def test_volatile_sysctls_are_not_compared() -> None:
    for key in ("fs.file-nr", "kernel.random.uuid", "net.netfilter.nf_conntrack_count"):
        assert host.VOLATILE_SYSCTLS.match(key), key
    assert not host.VOLATILE_SYSCTLS.match("vm.overcommit_memory")


def test_a_directory_that_vanishes_while_the_tree_is_read_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As a veth's /proc/sys/net/ipv6/conf/<veth> when the pod's network goes during teardown.
    (tmp_path / "veth1" / "conf").mkdir(parents=True)
    (tmp_path / "eth0").mkdir()
    (tmp_path / "eth0" / "mtu").write_text("1500")
    scandir = os.scandir

    def vanishing(path: str | int) -> object:  # rmtree itself scans by file descriptor
        if not isinstance(path, int) and Path(path).name == "veth1":
            monkeypatch.setattr(os, "scandir", scandir)
            shutil.rmtree(path)
        return scandir(path)

    monkeypatch.setattr(os, "scandir", vanishing)
    dirs, files = host.tree(tmp_path)
    assert files == [tmp_path / "eth0" / "mtu"]
    assert tmp_path / "eth0" in dirs


def test_one_real_node_cluster_per_machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(guard, "GUARD_DIR", tmp_path)
    monkeypatch.setattr(guard, "port_users", list)  # the fixed ports are not the question here
    me = {
        "pid": os.getpid(),
        "argv0": Path(f"/proc/{os.getpid()}/cmdline").read_bytes().split(b"\0")[0].decode(),
    }
    first = guard.Owner("/state/a", str(tmp_path / "before.json"), [me])
    assert guard.acquire(first) is None
    with pytest.raises(guard.GuardError, match=r"already runs on this machine \(state /state/a"):
        guard.acquire(guard.Owner("/state/b", str(tmp_path / "before.json")))
    # Its processes gone (killed): the record is stale, handed over for restoring the host.
    guard.write(guard.Owner("/state/a", str(tmp_path / "before.json"), [{"pid": 1, "argv0": "x"}]))
    stale = guard.acquire(guard.Owner("/state/b", str(tmp_path / "before.json")))
    assert stale is not None and stale.state_dir == "/state/a"
    assert guard.read_owner() == guard.Owner("/state/b", str(tmp_path / "before.json"))
    guard.release("/state/other")
    assert guard.read_owner() is not None
    guard.release("/state/b")
    assert guard.read_owner() is None


def test_busy_fixed_ports_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(guard, "GUARD_DIR", tmp_path)
    monkeypatch.setattr(guard, "port_users", lambda: ["10250 (kubelet)"])
    with pytest.raises(guard.GuardError, match=r"port\(s\) 10250 \(kubelet\) in use"):
        guard.acquire(guard.Owner("/state/a", str(tmp_path / "before.json")))


def test_pods_are_pinned_to_the_real_node_by_label_and_toleration() -> None:
    spec = realnode.pin_to_real_node(
        {"containers": [], "nodeSelector": {"a": "b"}, "tolerations": [{"key": "x"}]}
    )
    assert spec["nodeSelector"] == {"a": "b", realnode.NODE_LABEL: "true"}
    assert spec["tolerations"][-1] == {**realnode.NODE_TAINT, "operator": "Equal"}
    assert spec["tolerations"][0] == {"key": "x"}


def test_a_machine_that_cannot_run_a_real_node_is_told_why_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from lws_testbed.realnode import preflight

    monkeypatch.setattr(preflight.platform, "system", lambda: "Darwin")
    assert preflight.cannot_run_real_node() == "a real node needs Linux (this machine runs Darwin)"
    monkeypatch.setattr(preflight.platform, "system", lambda: "Linux")
    monkeypatch.setattr(preflight.os, "geteuid", lambda: 1000)
    reason = preflight.cannot_run_real_node()
    assert reason is not None and reason.startswith("a real node needs root")
    assert "\n" not in reason
