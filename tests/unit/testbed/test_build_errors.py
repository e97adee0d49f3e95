"""The binary build fails with one line naming the cause."""

import os
import shutil
import subprocess
from pathlib import Path

from lws_testbed.binaries import BUILD_SCRIPT, cache_root, pins


def run_build(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {"HOME": str(tmp_path), "LWS_CACHE_DIR": str(tmp_path / "cache"), **env}
    bash = shutil.which("bash") or "/bin/bash"
    return subprocess.run(
        [bash, str(BUILD_SCRIPT)], env=full, capture_output=True, text=True, timeout=120
    )


def test_missing_go_is_one_clear_line(tmp_path: Path) -> None:
    # A PATH with the shell tools the script uses, but no Go.
    tools = tmp_path / "bin"
    tools.mkdir()
    tools_used = ("dirname", "mktemp", "rm", "mkdir", "sed", "cut", "date", "grep", "awk", "flock")
    for tool in tools_used:
        if found := shutil.which(tool):
            (tools / tool).symlink_to(found)
    proc = run_build(tmp_path, PATH=str(tools))
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines()[0] == (
        "build-cluster-bins: Go is not installed or not on PATH "
        "(need Go >= 1.26 to build the control plane)"
    )


def test_failed_module_download_names_the_module(tmp_path: Path) -> None:
    go = shutil.which("go")
    assert go, "Go is required to build the control plane"
    proc = run_build(
        tmp_path,
        PATH=os.environ["PATH"],
        GOPROXY="off",
        GOMODCACHE=str(tmp_path / "modcache"),
        GOCACHE=str(tmp_path / "gocache"),
    )
    assert proc.returncode != 0
    first = next(line for line in proc.stderr.splitlines() if line.startswith("build-cluster-bins"))
    etcd = pins()["ETCD_VERSION"]
    want = f"build-cluster-bins: downloading go.etcd.io/etcd/server/v3@v{etcd} failed:"
    assert first.startswith(want), proc.stderr
    assert "GOPROXY=off" in first


def test_cache_dir_is_outside_the_repository(tmp_path: Path) -> None:
    repo = Path(__file__).resolve().parents[3]
    assert repo not in cache_root().resolve().parents
