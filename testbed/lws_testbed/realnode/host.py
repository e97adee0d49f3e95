"""The host state a real node changes, saved before it starts and restored after it stops.

A kubelet, containerd, CNI plugins and kube-proxy change host-global state: sysctls (the
kubelet writes ``vm.overcommit_memory``, ``kernel.panic``, ``kernel.panic_on_oops`` and key
limits at start-up; the bridge plugin ``net.ipv4.ip_forward``), packet-filter rules (nft
tables and ``KUBE-*``/``CNI-*`` chains), the ``cni0`` bridge and veths, mounts, cgroups and
directories (``/var/lib/cni``, ``/run/containerd``, ``/var/log/containers``...).
:func:`capture` records all of it, :func:`restore` undoes what the node did (only what is
recognisably the node's), and :func:`differences` (pure) says what still differs, for the
check after teardown.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

# Directories the node's components create outside its state directory when they are absent
# (some paths are compiled in: containerd's shim sockets in /run/containerd/s, the CNI result
# cache in /var/lib/cni, the kubelet's /var/log/containers), and the default locations of
# everything this harness moves into its state directory.
WATCHED_PATHS = (
    "/var/lib/kubelet",
    "/var/lib/containerd",
    "/var/lib/cni",
    "/run/containerd",
    "/run/netns",
    "/var/run/netns",
    "/var/log/pods",
    "/var/log/containers",
    "/opt/containerd",
    "/opt/cni",
    "/etc/cni",
    "/etc/kubernetes",
)
SYSCTL_ROOT = Path("/proc/sys")
# Counters and values the kernel changes by itself.
VOLATILE_SYSCTLS = re.compile(
    r"^(fs\.(dentry-state|inode-nr|inode-state|file-nr|aio-nr|quota\..*)"
    r"|kernel\.(random\..*|ns_last_pid|pty\.nr|perf_event_max_sample_rate|tainted)"
    r"|net\.netfilter\.nf_conntrack_count"
    r"|vm\.(stat_refresh|drop_caches|compact_memory))$"
)
CGROUP_ROOT = Path("/sys/fs/cgroup")
# Interface names the node's network makes: the bridge, and veth host ends (CNI names them
# veth<hex>).
NODE_LINK = re.compile(r"^(cni0|veth[0-9a-f]{8})$")
NODE_CHAIN = re.compile(r"^(KUBE-|CNI-)")
NODE_TABLES = {("ip", "kube-proxy"), ("ip6", "kube-proxy")}


@dataclass
class HostState:
    sysctls: dict[str, str] = field(default_factory=dict)
    links: list[str] = field(default_factory=list)
    routes: list[str] = field(default_factory=list)
    mounts: list[str] = field(default_factory=list)
    nft: list[str] = field(default_factory=list)
    paths: dict[str, bool] = field(default_factory=dict)
    cgroups: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> HostState:
        return cls(**json.loads(text))


def _run(*argv: str) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    return proc.stdout if proc.returncode == 0 else ""


def tree(root: Path) -> tuple[list[Path], list[Path]]:
    """The directories and files under ``root``. These trees change while they are read (a
    veth's sysctls, an exited container's cgroup): what vanishes meanwhile is skipped."""
    dirs: list[Path] = []
    files: list[Path] = []
    for top, subdirs, names in os.walk(root):  # os.walk ignores a directory gone when listed
        dirs += [Path(top, d) for d in subdirs]
        files += [Path(top, n) for n in names]
    return dirs, files


def read_sysctls() -> dict[str, str]:
    out = {}
    for path in tree(SYSCTL_ROOT)[1]:
        if not os.access(path, os.R_OK):
            continue
        key = ".".join(path.relative_to(SYSCTL_ROOT).parts)
        if VOLATILE_SYSCTLS.match(key):
            continue
        try:
            out[key] = " ".join(path.read_text().split())
        except OSError:
            continue
    return out


def mount_points() -> list[str]:
    """Every mount point with its filesystem type, from /proc/self/mountinfo."""
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        point = left.split()[4].replace("\\040", " ")
        out.append(f"{point} {right.split()[0]}")
    return sorted(out)


def nft_objects() -> list[str]:
    """Tables, chains and rules (without handles and counters), one line per object."""
    raw = _run("nft", "-j", "list", "ruleset")
    if not raw:
        return []
    out = []
    for item in json.loads(raw).get("nftables", []):
        for kind in ("table", "chain", "rule", "set", "map"):
            if kind in item:
                obj = {k: v for k, v in item[kind].items() if k != "handle"}
                if kind == "rule":
                    obj["expr"] = _without_counters(obj.get("expr", []))
                out.append(f"{kind} {json.dumps(obj, sort_keys=True)}")
    return sorted(out)


def _without_counters(exprs: list[Any]) -> list[Any]:
    return [e for e in exprs if not (isinstance(e, dict) and "counter" in e)]


def node_cgroups() -> list[str]:
    """The kubelet's cgroup trees (``kubepods*``) in every hierarchy."""
    out: list[str] = []
    if not CGROUP_ROOT.is_dir():
        return out
    for hierarchy in sorted(CGROUP_ROOT.iterdir()):
        with contextlib.suppress(OSError):
            out += [str(p) for p in hierarchy.glob("kubepods*") if p.is_dir()]
    return sorted(out)


def capture() -> HostState:
    return HostState(
        sysctls=read_sysctls(),
        links=sorted(
            line.split(":")[1].strip().split("@")[0]
            for line in _run("ip", "-o", "link", "show").splitlines()
            if ":" in line
        ),
        routes=sorted(line.strip() for line in _run("ip", "route", "show").splitlines()),
        mounts=mount_points(),
        nft=nft_objects(),
        paths={p: os.path.lexists(p) for p in WATCHED_PATHS},
        cgroups=node_cgroups(),
    )


def differences(before: HostState, after: HostState) -> list[str]:
    """What differs, one line each (empty when the host is as it was)."""
    out = []
    for key in sorted(set(before.sysctls) | set(after.sysctls)):
        b, a = before.sysctls.get(key), after.sysctls.get(key)
        if b != a:
            out.append(f"sysctl {key}: {b!r} before, {a!r} now")
    for name in ("links", "routes", "mounts", "nft", "cgroups"):
        b_set, a_set = set(getattr(before, name)), set(getattr(after, name))
        out += [f"{name}: gone: {x}" for x in sorted(b_set - a_set)]
        out += [f"{name}: new: {x}" for x in sorted(a_set - b_set)]
    for path in sorted(set(before.paths) | set(after.paths)):
        b_exists, a_exists = before.paths.get(path, False), after.paths.get(path, False)
        if b_exists != a_exists:
            out.append(
                f"path {path}: {'existed' if b_exists else 'absent'} before, "
                f"{'exists' if a_exists else 'absent'} now"
            )
    return out


# ---- undoing what a node did --------------------------------------------------------------
def unmount_under(*roots: Path | str) -> list[str]:
    """Lazily unmount every mount point under ``roots`` (deepest first); returns them."""
    prefixes = [str(Path(r)).rstrip("/") + "/" for r in roots]
    points = [m.rsplit(" ", 1)[0] for m in mount_points()]
    mine = sorted(
        {p for p in points if any(p.startswith(x) or p + "/" == x for x in prefixes)},
        key=lambda p: -p.count("/"),
    )
    for point in mine:
        subprocess.run(["umount", "-l", point], capture_output=True, check=False)
    return mine


def mounts_under(root: Path | str) -> list[str]:
    prefix = str(Path(root)).rstrip("/") + "/"
    return [p for p in (m.rsplit(" ", 1)[0] for m in mount_points()) if p.startswith(prefix)]


def remove_node_links(before: HostState) -> None:
    for link in set(capture().links) - set(before.links):
        if NODE_LINK.match(link):
            subprocess.run(["ip", "link", "delete", link], capture_output=True, check=False)


def remove_node_rules(before: HostState) -> None:
    """Delete the nft tables the node created (kube-proxy's, and iptables-nft's tables that
    hold nothing but the node's chains), then the ``KUBE-*``/``CNI-*`` chains and the rules
    that jump to them in tables that were there before."""
    raw = _run("nft", "-j", "list", "ruleset")
    if not raw:
        return
    items = json.loads(raw).get("nftables", [])
    had = {
        (json.loads(x[6:])["family"], json.loads(x[6:])["name"])
        for x in before.nft
        if x.startswith("table ")
    }
    tables = [(t["table"]["family"], t["table"]["name"]) for t in items if "table" in t]
    rules = [i["rule"] for i in items if "rule" in i]
    chains = [i["chain"] for i in items if "chain" in i]
    for family, name in tables:
        if (family, name) in had:
            continue
        own_chains = [c for c in chains if (c["family"], c["table"]) == (family, name)]
        own_rules = [r for r in rules if (r["family"], r["table"]) == (family, name)]
        foreign = [r for r in own_rules if not _node_rule(r)]
        if (family, name) in NODE_TABLES or (
            not foreign and all(NODE_CHAIN.match(c["name"]) or "hook" in c for c in own_chains)
        ):
            _nft("delete", "table", family, name)
    for rule in rules:
        if (rule["family"], rule["table"]) in had and _node_rule(rule):
            _nft(
                "delete",
                "rule",
                rule["family"],
                rule["table"],
                rule["chain"],
                "handle",
                str(rule["handle"]),
            )
    for chain in chains:
        if (chain["family"], chain["table"]) in had and NODE_CHAIN.match(chain["name"]):
            _nft("flush", "chain", chain["family"], chain["table"], chain["name"])
    for chain in chains:
        if (chain["family"], chain["table"]) in had and NODE_CHAIN.match(chain["name"]):
            _nft("delete", "chain", chain["family"], chain["table"], chain["name"])


def _node_rule(rule: dict[str, Any]) -> bool:
    text = json.dumps(rule.get("expr", []))
    return bool(NODE_CHAIN.match(rule.get("chain", ""))) or any(
        m in text for m in ('"KUBE-', '"CNI-', "cni0")
    )


def _nft(*args: str) -> None:
    subprocess.run(["nft", *args], capture_output=True, check=False)


def restore_sysctls(before: HostState) -> None:
    now = read_sysctls()
    for key, value in before.sysctls.items():
        if now.get(key, value) == value:
            continue
        path = SYSCTL_ROOT.joinpath(*key.split("."))
        with contextlib.suppress(OSError):
            path.write_text(value)


def remove_node_cgroups(before: HostState) -> None:
    """Remove the kubelet's cgroups (children first) that were not there before; they are
    empty once every container has stopped."""
    for top in set(node_cgroups()) - set(before.cgroups):
        dirs = sorted(tree(Path(top))[0], key=lambda p: -len(p.parts))
        for d in [*dirs, Path(top)]:
            with contextlib.suppress(OSError):
                d.rmdir()


def remove_node_paths(before: HostState) -> None:
    import shutil

    for path, existed in before.paths.items():
        if existed or not os.path.lexists(path):
            continue
        unmount_under(path)
        if mounts_under(path):
            continue  # never delete through a mount
        if os.path.islink(path) or not os.path.isdir(path):
            os.unlink(path)
        else:
            shutil.rmtree(path, ignore_errors=True)


def restore(before: HostState) -> list[str]:
    """Undo what a stopped node left behind; return what still differs."""
    remove_node_links(before)
    remove_node_rules(before)
    remove_node_cgroups(before)
    remove_node_paths(before)
    restore_sysctls(before)
    return differences(before, capture())
