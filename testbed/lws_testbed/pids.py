"""Processes started by another process of ours, found again by PID (from a state file)."""

from __future__ import annotations

from pathlib import Path


def pid_runs(pid: int, argv0: str) -> bool:
    """Whether ``pid`` still runs the program ``argv0`` (and is not a reused PID)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
    except OSError:
        return False
    return cmdline == argv0
