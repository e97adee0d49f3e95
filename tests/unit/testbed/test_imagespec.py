"""One description of the operator image (image.yaml): the Dockerfile is generated from it
(and must not drift), and the local builder's image configuration comes from it."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from lws_testbed import imagespec
from lws_testbed.realnode import images


def test_the_dockerfile_is_generated_from_image_yaml() -> None:
    want = imagespec.dockerfile(imagespec.load())
    assert imagespec.DOCKERFILE.read_text() == want, (
        "the Dockerfile drifted from image.yaml: run `make dockerfile`"
    )


def test_both_builders_run_the_same_entrypoint_user_and_environment() -> None:
    spec = imagespec.load()
    text = imagespec.DOCKERFILE.read_text()
    config = spec.config()
    assert f"ENTRYPOINT {json.dumps(config['Entrypoint'])}" in text
    assert f"CMD {json.dumps(config['Cmd'])}" in text
    assert f"USER {config['User']}\n" in text
    for line in config["Env"]:
        key, value = line.split("=", 1)
        assert f"{key}={json.dumps(value)}" in text
    # The entrypoint and PATH point into the virtualenv both builders install into.
    assert config["Entrypoint"][0].startswith(spec.venv + "/bin/")
    assert dict(e.split("=", 1) for e in config["Env"])["PATH"].startswith(spec.venv + "/bin")
    assert spec.user.isdigit() and spec.user != "0"
    # What the wheel is made of: the Dockerfile copies exactly that, .dockerignore agrees.
    ignore = (imagespec.REPO / ".dockerignore").read_text().split()
    for source in imagespec.SOURCES:
        assert f"!{source}" in ignore or f"!{source}/" in ignore
        assert f"COPY {source} " in text


def test_a_bad_user_is_refused_naming_the_field(tmp_path: Path) -> None:
    text = imagespec.SPEC.read_text().replace('user: "1001"', 'user: "root"')
    bad = tmp_path / "image.yaml"
    bad.write_text(text)
    with pytest.raises(ValueError, match="user must be a numeric, non-root UID"):
        imagespec.load(bad)


def test_layers_are_reproducible_and_archives_name_their_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LWS_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "rootfs"
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "tool").write_text("#!/bin/sh\n")
    (root / "bin" / "tool").chmod(0o755)
    (root / "link").symlink_to("bin")
    first = images._layer(root, tmp_path / "a.tar")
    (root / "bin" / "tool").touch()  # a new mtime: clamped, so the same layer
    assert images._layer(root, tmp_path / "b.tar") == first
    with tarfile.open(tmp_path / "a.tar") as tar:
        assert sorted(tar.getnames()) == ["bin", "bin/tool", "link"]
        assert tar.getmember("link").issym()
    out = tmp_path / "image.tar"
    image = images.write_archive(root, "example.local/thing:1-abc", {"User": "1"}, out)
    with tarfile.open(image.archive) as tar:
        manifest = json.loads(tar.extractfile("manifest.json").read())  # type: ignore[union-attr]
        config = json.loads(tar.extractfile(manifest[0]["Config"]).read())  # type: ignore[union-attr]
    assert manifest[0]["RepoTags"] == ["example.local/thing:1-abc"]
    assert config["rootfs"]["diff_ids"] == [f"sha256:{first}"]
    assert config["config"] == {"User": "1"}
    again = images.retagged(image, "example.local/thing:2-abc")
    with tarfile.open(again.archive) as tar:
        manifest = json.loads(tar.extractfile("manifest.json").read())  # type: ignore[union-attr]
    assert manifest[0]["RepoTags"] == ["example.local/thing:2-abc"]


def test_the_operator_image_key_follows_the_package(tmp_path: Path) -> None:
    source = tmp_path / "src"
    (source / "lws_operator").mkdir(parents=True)
    (source / "pyproject.toml").write_text('[project]\nversion = "0.1.0"\n')
    (source / "README.md").write_text("x\n")
    (source / "lws_operator" / "a.py").write_text("A = 1\n")
    key = images.operator_key(source)
    (source / "lws_operator" / "__pycache__").mkdir()
    (source / "lws_operator" / "__pycache__" / "a.pyc").write_bytes(b"cache")
    assert images.operator_key(source) == key  # caches are not content
    (source / "lws_operator" / "a.py").write_text("A = 2\n")
    assert images.operator_key(source) != key


def test_the_image_holds_the_dependency_versions_the_tests_run() -> None:
    pins = dict(p.split("==") for p in images.runtime_pins())
    assert "kopf" in pins and "pydantic" in pins and "cryptography" in pins
    assert "pytest" not in pins and "lws-operator" not in pins  # dev extras, itself


def test_references_are_normalized_as_containerd_names_them() -> None:
    assert images._normalized("lws-operator:0.1.0-x") == "docker.io/library/lws-operator:0.1.0-x"
    assert images._normalized("lws-testbed.local/pause:1") == "lws-testbed.local/pause:1"
    assert images._normalized("team/app:1") == "docker.io/team/app:1"


def test_the_debian_mirror_is_read_from_enabled_sources(tmp_path: Path) -> None:
    d = tmp_path / "sources.list.d"
    d.mkdir()
    (d / "other.sources").write_text(
        "Types: deb\nURIs: http://elsewhere.example/x\nSuites: nodistro\nComponents: main\n"
    )
    (d / "debian.sources").write_text(
        "Types: deb\nURIs: http://disabled.example/debian\nSuites: bookworm\n"
        "Components: main\nEnabled: no\n\n"
        "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\n"
        "Components: main\n"
    )
    assert images.debian_mirror("bookworm", tmp_path) == "http://mirror.example/debian"
    with pytest.raises(images.ImageError, match="no apt source for Debian trixie"):
        images.debian_mirror("trixie", tmp_path)
