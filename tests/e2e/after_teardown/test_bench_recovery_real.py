"""After ``make e2e-down`` (one real-node cluster at a time): ``make bench-recovery-real``, the
README's real-container benchmark, runs as shown with one run (``BENCH_ARGS``) and its report
in a scratch directory (``LWS_BENCH_RESULTS``). It starts a real-node cluster of its own and
must restore the host (the benchmark fails otherwise; the host check that follows sees it too).
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.cluster.test_bench_commands import make_bench


def test_make_bench_recovery_real_measures_both_controllers(tmp_path: Path) -> None:
    make_bench(tmp_path, "bench-recovery-real", "--runs 1")
    report = json.loads((tmp_path / "recovery-real.json").read_text())
    measured = {(r["controller"], r["shutdown"]) for r in report["runs"]}
    assert measured == {
        (w, s) for w in ("ours", "upstream") for s in ("grace-0s", "shutdown-3s")
    }, report["runs"]
    runs = report["runs"]
    assert all(r["ready_s"] >= r["old_gone_s"] > 0 for r in runs), runs
    # Every phase of the breakdown seen, in order, and each pod's marks for the timeline.
    for r in runs:
        phases = [r[k] for k in ("exit_seen_s", "react_s", "old_gone_s", "ready_s")]
        assert phases == sorted(phases) and r["reaction_s"] > 0, r
        assert all(r[k] <= r["ready_s"] for k in ("created_s", "scheduled_s", "started_s")), r
        old = [p for p in r["pods"] if p["old"]]
        assert len(old) == 4 and sum(1 for p in old if p["victim"]) == 1, r["pods"]
    assert (tmp_path / "recovery-real.png").stat().st_size > 0
    assert report["cluster_rss_mib"], report
