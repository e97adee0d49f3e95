"""Images for the real nodes, built on this machine without a registry or a base image:

- **pause**: ``pause.c`` beside this file, compiled with ``gcc -static``, alone in its image;
- **workload**: Debian's ``busybox-static`` and ``lws-probe`` (the e2e tests' leader/worker
  program, ``probe/main.go``);
- **operator**: ``debootstrap --variant=minbase`` of the machine's Debian suite, Debian's
  python3, and a virtualenv with this repository's wheel and the dependency versions of the
  environment running the build (the ones the tests run with), laid out as ``image.yaml``
  describes (the Dockerfile is generated from the same file).

Each is one layer in a ``docker save``-style archive, cached under ``<cache>/images/`` with a
name keyed by everything that goes in (the operator's key includes the package's content, so a
code change makes a new image), tagged with a version and that key (never ``latest``), and
imported with ``ctr -n k8s.io images import``.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from lws_testbed import binaries, imagespec

HERE = Path(__file__).resolve().parent
PAUSE_SOURCE = HERE / "images" / "pause.c"
PAUSE_VERSION = "1"
WORKLOAD_VERSION = "1"
BUSYBOX = Path("/bin/busybox")
# Clamped modification time of every file in a layer: the same inputs give the same layer.
EPOCH = 0
# What a minbase root filesystem carries that a container never uses.
TRIM = (
    "usr/share/doc",
    "usr/share/man",
    "usr/share/info",
    "usr/share/locale",
    "var/cache/apt",
    "var/cache/debconf",
    "var/lib/apt/lists",
    "var/log",
)
# Needed to make the virtualenv (ensurepip installs from there), not after.
AFTER_VENV = ("usr/share/python-wheels",)
# dpkg without an fsync per file while debootstrap installs (the root filesystem is a build
# product: a crash means building it again); removed afterwards.
UNSAFE_IO = "etc/dpkg/dpkg.cfg.d/lws-testbed-unsafe-io"


class ImageError(RuntimeError):
    """An image could not be built; one line naming the cause (and the tool's own output)."""


@dataclass(frozen=True)
class Image:
    ref: str  # name:tag, as pods name it
    archive: Path


def images_dir() -> Path:
    d = binaries.cache_root() / "images"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(hashlib.sha256(p).digest())
    return h.hexdigest()[:12]


def _run(*argv: str | Path, what: str, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(
        [str(a) for a in argv], capture_output=True, text=True, check=False, env=env
    )
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-15:])
        raise ImageError(f"{what} failed (exit {proc.returncode}):\n{tail}")
    return proc.stdout


# ---- layers and archives -------------------------------------------------------------------
def _layer(rootfs: Path, out: Path) -> str:
    """Write ``rootfs`` as one tar layer (sorted, numeric owners, clamped times; no device
    nodes or sockets: the runtime makes /dev); return its sha256 (the diff_id)."""
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tar:
        for path in _walk(rootfs):
            info = tar.gettarinfo(str(path), arcname=str(path.relative_to(rootfs)))
            if info is None or info.ischr() or info.isblk() or info.isfifo():
                continue
            info.mtime = EPOCH
            info.uname = info.gname = ""
            if info.isreg():
                with open(path, "rb") as f:
                    tar.addfile(info, f)
            else:
                tar.addfile(info)
    h = hashlib.sha256()
    with open(out, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _walk(root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        base = Path(dirpath)
        if base != root:
            yield base
        for name in sorted(filenames):
            yield base / name
        # Symlinks to directories are listed in dirnames but not walked into.
        for name in dirnames:
            if (base / name).is_symlink():
                yield base / name
        dirnames[:] = [d for d in dirnames if not (base / d).is_symlink()]


def write_archive(rootfs: Path, ref: str, config: dict[str, Any], out: Path) -> Image:
    """A ``docker save``-style archive of one layer, written atomically to ``out``."""
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".build-") as tmp:
        layer = Path(tmp) / "layer.tar"
        diff_id = _layer(rootfs, layer)
        body = {
            "architecture": "amd64",
            "os": "linux",
            "created": "1970-01-01T00:00:00Z",
            "config": config,
            "rootfs": {"type": "layers", "diff_ids": [f"sha256:{diff_id}"]},
            "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "lws-testbed"}],
        }
        config_bytes = json.dumps(body, sort_keys=True).encode()
        config_name = hashlib.sha256(config_bytes).hexdigest() + ".json"
        manifest = [{"Config": config_name, "RepoTags": [ref], "Layers": [f"{diff_id}/layer.tar"]}]
        partial = Path(tmp) / "image.tar"
        with tarfile.open(partial, "w") as tar:
            for name, data in (
                (config_name, config_bytes),
                ("manifest.json", json.dumps(manifest).encode()),
            ):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            tar.add(str(layer), arcname=f"{diff_id}/layer.tar")
        os.replace(partial, out)
    return Image(ref, out)


def retagged(image: Image, ref: str) -> Image:
    """The same image under another reference (its manifest rewritten; cached)."""
    out = images_dir() / f"{ref.replace('/', '_').replace(':', '_')}.tar"
    if out.is_file():
        return Image(ref, out)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".retag-") as tmp:
        partial = Path(tmp) / "image.tar"
        with tarfile.open(image.archive) as src, tarfile.open(partial, "w") as dst:
            for member in src.getmembers():
                data = src.extractfile(member) if member.isfile() else None
                if member.name == "manifest.json" and data is not None:
                    manifest = json.loads(data.read())
                    manifest[0]["RepoTags"] = [ref]
                    body = json.dumps(manifest).encode()
                    member.size = len(body)
                    dst.addfile(member, io.BytesIO(body))
                else:
                    dst.addfile(member, data)
        os.replace(partial, out)
    return Image(ref, out)


def _cached(name: str, tag: str) -> tuple[str, Path]:
    ref = f"{name}:{tag}"
    return ref, images_dir() / f"{ref.replace('/', '_').replace(':', '_')}.tar"


# ---- pause and workload ----------------------------------------------------------------------
def pause_image() -> Image:
    source = PAUSE_SOURCE.read_bytes()
    ref, out = _cached("lws-testbed.local/pause", f"{PAUSE_VERSION}-{_digest(source)}")
    if out.is_file():
        return Image(ref, out)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "rootfs"
        root.mkdir()
        _run(
            "gcc",
            "-static",
            "-Os",
            "-s",
            "-o",
            root / "pause",
            PAUSE_SOURCE,
            what="compiling pause.c",
        )
        return write_archive(root, ref, {"Entrypoint": ["/pause"], "User": "65535"}, out)


def workload_image() -> Image:
    probe = binaries.node_binaries()["lws-probe"]
    if not BUSYBOX.is_file():
        raise ImageError(f"{BUSYBOX} is missing: install Debian's busybox-static (make e2e-deps)")
    key = _digest(BUSYBOX.read_bytes(), probe.read_bytes())
    ref, out = _cached("lws-testbed.local/workload", f"{WORKLOAD_VERSION}-{key}")
    if out.is_file():
        return Image(ref, out)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "rootfs"
        for d in ("bin", "sbin", "usr/bin", "usr/sbin", "usr/local/bin", "etc", "tmp"):
            (root / d).mkdir(parents=True, exist_ok=True)
        (root / "tmp").chmod(0o1777)
        shutil.copy2(BUSYBOX, root / "bin" / "busybox")
        for applet in _run(BUSYBOX, "--list-full", what="busybox --list-full").split():
            link = root / applet
            if not link.exists():
                link.symlink_to("/bin/busybox")
        shutil.copy2(probe, root / "usr" / "local" / "bin" / "lws-probe")
        config = {
            "Entrypoint": ["/usr/local/bin/lws-probe"],
            "Env": ["PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"],
            "User": "65532",
        }
        return write_archive(root, ref, config, out)


# ---- the operator ----------------------------------------------------------------------------
def debian_suite() -> str:
    for line in Path("/etc/os-release").read_text().splitlines():
        if line.startswith("VERSION_CODENAME="):
            return line.split("=", 1)[1].strip().strip('"')
    raise ImageError("cannot tell this machine's Debian suite (no VERSION_CODENAME in os-release)")


def debian_mirror(suite: str, apt: Path = Path("/etc/apt")) -> str:
    """The mirror this machine's apt takes ``suite``'s main component from (its enabled
    sources name it), for debootstrap."""
    sources = apt / "sources.list.d"
    files = [apt / "sources.list", *sorted(sources.glob("*.list"))]
    for path in files:  # one-line style: deb [options] URI suite components...
        with contextlib.suppress(OSError):
            for line in path.read_text().splitlines():
                words = [w for w in line.split("#")[0].split() if not w.startswith("[")]
                if words[:1] == ["deb"] and words[2:3] == [suite] and "main" in words[3:]:
                    return words[1]
    for path in sorted(sources.glob("*.sources")):  # deb822 style: stanzas of fields
        with contextlib.suppress(OSError):
            for stanza in path.read_text().split("\n\n"):
                fields: dict[str, list[str]] = {}
                for line in stanza.splitlines():
                    if ":" in line and not line.startswith(("#", " ")):
                        key, _, value = line.partition(":")
                        fields[key.strip().lower()] = value.split()
                if (
                    "deb" in fields.get("types", [])
                    and suite in fields.get("suites", [])
                    and "main" in fields.get("components", [])
                    and fields.get("enabled", ["yes"]) != ["no"]
                    and fields.get("uris")
                ):
                    return fields["uris"][0]
    raise ImageError(
        f"no apt source for Debian {suite} main on this machine: debootstrap needs one"
    )


def _base_rootfs(packages: tuple[str, ...]) -> Path:
    """A tar of the minbase root filesystem with ``packages`` (debootstrap once; cached)."""
    suite = debian_suite()
    key = _digest(suite.encode(), " ".join(sorted(packages)).encode(), " ".join(TRIM).encode())
    out = images_dir() / f"debian-{suite}-minbase-{key}.tar"
    if out.is_file():
        return out
    if shutil.which("debootstrap") is None:
        raise ImageError("debootstrap is missing: install Debian's debootstrap (make e2e-deps)")
    debs = binaries.cache_root() / "debootstrap-debs"
    debs.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=images_dir(), prefix=".rootfs-") as tmp:
        root = Path(tmp) / "rootfs"
        (root / UNSAFE_IO).parent.mkdir(parents=True)
        (root / UNSAFE_IO).write_text("force-unsafe-io\n")
        print(f"debootstrap {suite} (minbase + {', '.join(packages)}) ...", file=sys.stderr)
        _run(
            "debootstrap",
            "--variant=minbase",
            f"--include={','.join(packages)}",
            f"--cache-dir={debs}",
            suite,
            root,
            debian_mirror(suite),
            what=f"debootstrap {suite}",
        )
        for rel in (UNSAFE_IO, "etc/hostname", "etc/resolv.conf"):  # the build machine's
            (root / rel).unlink(missing_ok=True)
        _empty(root, TRIM)
        partial = Path(tmp) / "rootfs.tar"
        _run("tar", "--numeric-owner", "-C", root, "-cf", partial, ".", what="tar rootfs")
        os.replace(partial, out)
    return out


def _empty(root: Path, dirs: tuple[str, ...]) -> None:
    """Remove what ``dirs`` (relative to ``root``) hold, keeping the directories."""
    for rel in dirs:
        target = root / rel
        if target.is_dir():
            for child in target.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                else:
                    child.unlink()


def runtime_pins(dist: str = "lws-operator") -> list[str]:
    """``name==version`` of every runtime dependency of ``dist`` (its requirement closure, for
    this platform), as installed here: the image runs what the tests run."""
    seen: dict[str, str] = {}
    todo = [dist]
    while todo:
        name = canonicalize_name(todo.pop())
        if name in seen:
            continue
        d = metadata.distribution(name)
        seen[name] = d.version
        for line in d.requires or []:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    del seen[canonicalize_name(dist)]
    return sorted(f"{n}=={v}" for n, v in seen.items())


def _source_files(source: Path) -> list[Path]:
    out = []
    for name in imagespec.SOURCES:
        p = source / name
        if p.is_dir():
            out += sorted(f for f in p.rglob("*") if f.is_file() and "__pycache__" not in f.parts)
        else:
            out.append(p)
    return out


def operator_key(source: Path, spec_path: Path = imagespec.SPEC) -> str:
    parts = [spec_path.read_bytes(), Path(__file__).read_bytes()]
    parts.append("\0".join(runtime_pins()).encode())
    for f in _source_files(source):
        parts += [str(f.relative_to(source)).encode(), f.read_bytes()]
    return _digest(*parts)


def _version(source: Path) -> str:
    import tomllib

    return str(tomllib.loads((source / "pyproject.toml").read_text())["project"]["version"])


def operator_image(source: Path = imagespec.REPO, *, name: str | None = None) -> Image:
    """The operator image of the package in ``source`` (a checkout, or an extracted older
    commit), tagged ``<version>-<key>``."""
    spec = imagespec.load()
    ref, out = _cached(name or spec.name, f"{_version(source)}-{operator_key(source)}")
    if out.is_file():
        return Image(ref, out)
    base = _base_rootfs(spec.debian_packages)
    with tempfile.TemporaryDirectory(dir=images_dir(), prefix=".operator-") as tmp:
        work = Path(tmp)
        root = work / "rootfs"
        root.mkdir()
        _run("tar", "--numeric-owner", "-C", root, "-xpf", base, what="unpacking the base")
        wheels = root / "tmp" / "wheels"
        wheels.mkdir(parents=True)
        print(f"building {ref} ...", file=sys.stderr)
        staged = work / "src"
        for rel in imagespec.SOURCES:  # only the wheel's sources (no caches, no test bed)
            src = source / rel
            if src.is_dir():
                shutil.copytree(src, staged / rel, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                staged.mkdir(exist_ok=True)
                shutil.copy2(src, staged / rel)
        pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
        _run(
            *pip,
            "wheel",
            "--no-deps",
            "--wheel-dir",
            wheels,
            staged,
            what="building the operator's wheel",
        )
        _run(
            *pip,
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--dest",
            wheels,
            *runtime_pins(),
            what="downloading the dependencies' wheels (PyPI)",
        )
        venv = spec.venv
        theirs = _chroot(
            root,
            "/usr/bin/python3",
            "-c",
            "import sys; print(*sys.version_info[:2])",
            what="asking the image's Python its version",
        ).split()
        if tuple(int(x) for x in theirs) != sys.version_info[:2]:
            raise ImageError(
                f"the image's Python ({'.'.join(theirs)}, Debian {debian_suite()}) is not this "
                f"Python ({sys.version_info[0]}.{sys.version_info[1]}): the wheels downloaded "
                "here would not fit; run with Debian's python3"
            )
        _chroot(root, "/usr/bin/python3", "-m", "venv", venv, what="creating the virtualenv")
        wheel = next(wheels.glob(f"{spec.name.replace('-', '_')}-*.whl"))
        _chroot(
            root,
            f"{venv}/bin/python",
            "-m",
            "pip",
            "install",
            "-q",
            "--no-cache-dir",
            "--no-index",
            "--find-links",
            "/tmp/wheels",
            f"/tmp/wheels/{wheel.name}",
            what="installing the wheel",
        )
        _chroot(
            root,
            f"{venv}/bin/python",
            "-m",
            "pip",
            "uninstall",
            "-q",
            "-y",
            "pip",
            what="removing pip",
        )
        shutil.rmtree(wheels)
        _empty(root, AFTER_VENV)
        venv_dir = root / venv.lstrip("/")
        for path in [venv_dir, *_walk(venv_dir)]:
            os.lchown(path, -1, 0)
            if not path.is_symlink():
                mode = path.stat().st_mode
                path.chmod((mode & ~0o070) | ((mode & 0o700) >> 3))  # chmod g=u
        return write_archive(root, ref, spec.config(), out)


def _chroot(root: Path, *argv: str, what: str) -> str:
    env = {"PATH": "/usr/bin:/bin", "HOME": "/root", "LC_ALL": "C.UTF-8"}
    chroot = shutil.which("chroot") or "/usr/sbin/chroot"  # found with our PATH, not env's
    return _run(chroot, root, *argv, what=what, env=env)


# ---- into containerd -------------------------------------------------------------------------
def import_images(socket: Path, images: list[Image]) -> None:
    have = set(
        _run(
            "ctr", "--address", socket, "-n", "k8s.io", "images", "ls", "-q", what="ctr images ls"
        ).split()
    )
    for image in images:
        if _normalized(image.ref) in have:
            continue
        _run(
            "ctr",
            "--address",
            socket,
            "-n",
            "k8s.io",
            "images",
            "import",
            "--snapshotter",
            "overlayfs",
            image.archive,
            what=f"importing {image.ref}",
        )


def _normalized(ref: str) -> str:
    """How containerd names ``ref`` (a bare name lives in docker.io/library/)."""
    first = ref.split("/", 1)[0]
    if "/" in ref and ("." in first or ":" in first or first == "localhost"):
        return ref
    return f"docker.io/{ref if '/' in ref else 'library/' + ref}"
