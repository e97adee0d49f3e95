"""Can this machine run a real node? One line saying why not, or None.

Checked before anything is installed or built, so that ``make test`` can say so in one line
and run the rest (and fail under ``CI=true``).
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from pathlib import Path

from lws_testbed.realnode import guard

PACKAGES_SCRIPT = Path(__file__).resolve().parent / "node-packages.sh"


def missing_packages() -> str | None:
    """``missing Debian packages: ...`` when some are not installed (``make node-packages``)."""
    proc = subprocess.run(
        ["bash", str(PACKAGES_SCRIPT), "--check"], capture_output=True, text=True, check=False
    )
    if proc.returncode == 0:
        return None
    return proc.stdout.strip() or "missing Debian packages"


def cannot_run_real_node() -> str | None:
    if platform.system() != "Linux":
        return f"a real node needs Linux (this machine runs {platform.system()})"
    if os.geteuid() != 0:
        return "a real node needs root (the kubelet, containerd and CNI change the host)"
    if (missing := missing_packages()) and shutil.which("apt-get") is None:
        return f"{missing}, and there is no apt-get to install them"
    filesystems = Path("/proc/filesystems").read_text()
    if "overlay" not in filesystems:
        return "a real node needs overlayfs (containerd's snapshotter); the kernel lacks it"
    if not Path("/sys/fs/cgroup").is_dir() or not any(Path("/sys/fs/cgroup").iterdir()):
        return "a real node needs cgroups mounted at /sys/fs/cgroup"
    if not Path("/proc/sys/net/bridge").is_dir():
        return "a real node needs the bridge netfilter (br_netfilter) in the kernel"
    owner = guard.read_owner()
    if owner is not None and (pids := guard.running(owner)):
        return (
            f"another real-node cluster runs on this machine (state {owner.state_dir}, pids "
            f"{pids}): one per machine"
        )
    if busy := guard.port_users():
        return f"port(s) {', '.join(busy)} in use: another kubelet or kube-proxy runs here"
    return None
