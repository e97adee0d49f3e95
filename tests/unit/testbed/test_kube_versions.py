"""What the local cluster passes to each supported Kubernetes version (lws_testbed.kube_versions),
one row per version, and the one-line refusal of any other version."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from lws_testbed import binaries, kube_versions
from lws_testbed.kube_versions import UnsupportedKubeVersion, for_version
from lws_testbed.local import ClusterConfig, LocalCluster

# version, --feature-gates, --runtime-config, the gang API, podgroup-protection-controller
TABLE = [
    ("1.31.0", "", "", None, False),
    ("1.33.13", "", "", None, False),
    (
        "1.36.5",
        "GenericWorkload=true,GangScheduling=true",
        "scheduling.k8s.io/v1alpha2=true",
        "scheduling.k8s.io/v1alpha2",
        True,
    ),
    (
        "1.37.2",
        "GenericWorkload=true",
        "scheduling.k8s.io/v1beta1=true",
        "scheduling.k8s.io/v1beta1",
        True,
    ),
]


@pytest.mark.parametrize(("version", "gates", "runtime", "gang", "podgroup_ctrl"), TABLE)
def test_settings_per_version(
    version: str, gates: str, runtime: str, gang: str | None, podgroup_ctrl: bool
) -> None:
    kv = for_version(version)
    assert kv.version == version
    assert kv.feature_gates == gates
    assert kv.runtime_config == runtime
    assert (kv.gang_api.group_version if kv.gang_api else None) == gang
    assert ("podgroup-protection-controller" in kv.kcm_controllers) is podgroup_ctrl
    # What every version runs (LWS needs StatefulSets and garbage collection; the tests of lost
    # nodes need node lifecycle and taint eviction).
    for name in (
        "statefulset-controller",
        "garbage-collector-controller",
        "node-lifecycle-controller",
        "taint-eviction-controller",
    ):
        assert name in kv.kcm_controllers
    assert len(set(kv.kcm_controllers)) == len(kv.kcm_controllers)


@pytest.mark.parametrize(("version", "gates", "runtime", "gang", "podgroup_ctrl"), TABLE)
def test_flags_are_left_out_when_empty(
    version: str, gates: str, runtime: str, gang: str | None, podgroup_ctrl: bool
) -> None:
    kv = for_version(version)
    api = kv.component_flags(apiserver=True)
    other = kv.component_flags()
    if gang is None:
        assert api == other == []
    else:
        assert api == [f"--feature-gates={gates}", f"--runtime-config={runtime}"]
        assert other == [f"--feature-gates={gates}"]


def test_maxunavailable_statefulset_is_never_passed() -> None:
    # Each version's default: the operator detects the gate at run time.
    for version in binaries.supported_kube_versions():
        assert "MaxUnavailableStatefulSet" not in for_version(version).feature_gates


def test_every_supported_version_has_a_row() -> None:
    assert binaries.supported_kube_versions() == tuple(row[0] for row in TABLE)


@pytest.mark.parametrize("version", ["1.34.1", "1.36.4", "1.36", "v1.36.5", "2.36.5", ""])
def test_an_unsupported_version_is_one_line(version: str) -> None:
    with pytest.raises(UnsupportedKubeVersion) as err:
        for_version(version)
    assert str(err.value) == (
        f"Kubernetes {version} is not supported (KUBE_VERSION): pick one of "
        "1.31.0, 1.33.13, 1.36.5, 1.37.2"
    )


def test_a_minor_without_settings_is_refused_even_if_listed() -> None:
    with pytest.raises(UnsupportedKubeVersion):
        for_version("1.35.7", supported=("1.35.7",))


def test_selected_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(binaries.KUBE_VERSION_ENV, raising=False)
    assert kube_versions.selected().version == binaries.pins()["KUBE_VERSION"] == "1.36.5"
    monkeypatch.setenv(binaries.KUBE_VERSION_ENV, "1.33.13")
    assert kube_versions.selected().version == "1.33.13"
    assert binaries.bin_dir().name.startswith("kube-v1.33.13-")
    monkeypatch.setenv(binaries.KUBE_VERSION_ENV, "1.30.0")
    with pytest.raises(UnsupportedKubeVersion):
        kube_versions.selected()


def test_the_cli_refuses_an_unsupported_version_in_one_line() -> None:
    # Before any build: the version is checked first.
    proc = subprocess.run(
        [sys.executable, "-m", "lws_testbed", "build"],
        env={"LWS_KUBE_VERSION": "1.34.0", "PATH": "/nonexistent"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert proc.stderr == (
        "error: Kubernetes 1.34.0 is not supported (KUBE_VERSION): pick one of "
        "1.31.0, 1.33.13, 1.36.5, 1.37.2\n"
    )


@pytest.mark.parametrize(("version", "gates", "runtime", "gang", "podgroup_ctrl"), TABLE)
def test_the_local_cluster_passes_them(
    version: str,
    gates: str,
    runtime: str,
    gang: str | None,
    podgroup_ctrl: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(binaries.KUBE_VERSION_ENV, version)
    cluster = LocalCluster(ClusterConfig(state_dir=tmp_path))
    cluster.ports = {"apiserver": 1, "etcd": 2, "kcm": 3, "scheduler": 4}
    argv: dict[str, list[str]] = {}
    monkeypatch.setattr(cluster, "_spawn", lambda name, args: argv.__setitem__(name, args))
    cluster._start_apiserver(tmp_path)
    cluster._start_kcm(tmp_path)
    cluster._start_scheduler(tmp_path)
    gate_flag = [f"--feature-gates={gates}"] if gates else []
    runtime_flag = [f"--runtime-config={runtime}"] if runtime else []
    for name, want in (
        ("kube-apiserver", gate_flag + runtime_flag),
        ("kube-controller-manager", gate_flag),
        ("kube-scheduler", gate_flag),
    ):
        got = [a for a in argv[name] if a.startswith(("--feature-gates=", "--runtime-config="))]
        assert got == want, name
    controllers = next(a for a in argv["kube-controller-manager"] if a.startswith("--controllers="))
    assert ("podgroup-protection-controller" in controllers) is podgroup_ctrl
