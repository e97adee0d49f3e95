"""The benchmark commands the README shows run as shown, made small (``BENCH_ARGS``, one run,
reports in a scratch directory through ``LWS_BENCH_RESULTS``): each starts its own local
clusters and controllers and writes a report with a figure for every controller it ran. The
figures are not checked against anything: a benchmark measures, a test only proves it runs."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("LWS_TEST_KUBECONFIG")), reason="starts local clusters of its own"
)


# Not the caller's cluster or make: the benchmark makes its own (tests/e2e/after_teardown too).
DROPPED = ("KUBECONFIG", "MAKEFLAGS", "MAKELEVEL", "LWS_TEST_KUBECONFIG", "LWS_TEST_OPERATOR")


def make_bench(results: Path, target: str, args: str) -> str:
    """``make <target> BENCH_ARGS=<args>`` with its reports in ``results``; its output."""
    env = {k: v for k, v in os.environ.items() if k not in DROPPED}
    env["LWS_BENCH_RESULTS"] = str(results)
    proc = subprocess.run(
        ["make", "--no-print-directory", target, f"BENCH_ARGS={args}"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=540,  # inside pytest-timeout's 600 s: this message, not a bare kill
    )
    assert proc.returncode == 0, (
        f"make {target} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    )
    return proc.stdout


def test_make_bench_runs_a_scenario_for_both_controllers(tmp_path: Path) -> None:
    out = make_bench(tmp_path, "bench", "--scenario P2 --runs 1")
    runs = json.loads((tmp_path / "compare-P2.json").read_text())["runs"]
    assert {r["controller"] for r in runs} == {"ours", "upstream"}, runs
    for r in runs:
        assert r["metrics"]["restart_group_ready_s"] > 0, r
        assert r["api"], r  # requests counted from the audit log
    summary = (tmp_path / "compare.md").read_text()
    assert "P2" in summary and summary in out, out
    assert (tmp_path / "compare.png").stat().st_size > 0
    assert not (tmp_path / "compare-P1.json").exists()  # one scenario ran, as asked


def test_make_bench_scale_runs_the_smallest_storm_for_both_controllers(tmp_path: Path) -> None:
    make_bench(tmp_path, "bench-scale", "--scenario S400 --runs 1")
    runs = json.loads((tmp_path / "compare-S400.json").read_text())["runs"]
    assert {r["controller"] for r in runs} == {"ours", "upstream"}, runs
    for r in runs:
        # 20 ticks of 40 flips, then the pods still unready flipped back.
        assert r["metrics"]["flips"] >= 800 and r["metrics"]["cpu_per_event_ms"] > 0, r
        assert r["metrics"]["status_writes"] > 0 and r["metrics"]["lag_s"] >= 0, r
    summary = (tmp_path / "compare.md").read_text()
    assert "## Scale: CPU per pod event" in summary and "| 400 |" in summary, summary
    assert (tmp_path / "scale.png").stat().st_size > 0
    assert not (tmp_path / "compare-P6a.json").exists()  # one scenario ran, as asked


def test_make_bench_create_times_a_small_set(tmp_path: Path) -> None:
    make_bench(tmp_path, "bench-create", "--groups 2 --size 2 --runs 1")
    report = json.loads((tmp_path / "create-2x2.json").read_text())
    assert len(report["runs"]) == 1, report
    assert report["median"]["pods_created_s"] > 0 and report["median"]["ready_s"] > 0, report
