"""The one description of the operator image (``image.yaml`` at the repository root) and the
Dockerfile generated from it. The local builder (``realnode.images``) reads the same
description, so both images hold the same files and run the same way.

    python -m lws_testbed.imagespec > Dockerfile      # what `make dockerfile` runs
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
SPEC = REPO / "image.yaml"
DOCKERFILE = REPO / "Dockerfile"
# What the wheel is built from (the Dockerfile copies exactly these; .dockerignore agrees).
SOURCES = ("pyproject.toml", "README.md", "lws_operator")


@dataclass(frozen=True)
class ImageSpec:
    name: str
    labels: dict[str, str]
    venv: str
    user: str
    workdir: str
    env: dict[str, str]
    expose: tuple[int, ...]
    entrypoint: tuple[str, ...]
    cmd: tuple[str, ...]
    ubi_base: str
    debian_packages: tuple[str, ...]

    def config(self) -> dict[str, Any]:
        """The OCI image configuration's ``config`` object."""
        return {
            "User": self.user,
            "WorkingDir": self.workdir,
            "Env": [f"{k}={v}" for k, v in self.env.items()],
            "Entrypoint": list(self.entrypoint),
            "Cmd": list(self.cmd),
            "ExposedPorts": {f"{p}/tcp": {} for p in self.expose},
            "Labels": dict(self.labels),
        }


def load(path: Path = SPEC) -> ImageSpec:
    raw = yaml.safe_load(path.read_text())
    try:
        user = str(raw["user"])
        if not user.isdigit() or user == "0":
            raise ValueError(f"{path}: user must be a numeric, non-root UID (got {user!r})")
        return ImageSpec(
            name=str(raw["name"]),
            labels={str(k): str(v) for k, v in raw["labels"].items()},
            venv=str(raw["venv"]),
            user=user,
            workdir=str(raw["workdir"]),
            env={str(k): str(v) for k, v in raw["env"].items()},
            expose=tuple(int(p) for p in raw["expose"]),
            entrypoint=tuple(str(a) for a in raw["entrypoint"]),
            cmd=tuple(str(a) for a in raw["cmd"]),
            ubi_base=str(raw["bases"]["ubi"]),
            debian_packages=tuple(str(p) for p in raw["bases"]["debian"]),
        )
    except (KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"{path}: missing or malformed field {e}") from None


def dockerfile(spec: ImageSpec) -> str:
    labels = " \\\n      ".join(f"{k}={json.dumps(v)}" for k, v in spec.labels.items())
    env = " \\\n    ".join(f"{k}={json.dumps(v)}" for k, v in spec.env.items())
    sources = "\n".join(f"COPY {s} ./{s}" if "." not in s else f"COPY {s} ./" for s in SOURCES)
    return f"""\
# GENERATED from image.yaml by `make dockerfile` (python -m lws_testbed.imagespec): edit that
# file, not this one; a unit test fails when they drift. The test bed's local builder makes the
# same image from the same description on Debian (make e2e-images).
# lws-operator image: Red Hat UBI 9 with Python, non-root, runs under any UID (OpenShift's
# restricted-v2 assigns an arbitrary one, always with GID 0).
#   make docker-build IMG=lws-operator:dev
ARG BASE_IMAGE={spec.ubi_base}

FROM ${{BASE_IMAGE}} AS build
USER 0
WORKDIR /src
{sources}
RUN python -m pip wheel --no-cache-dir --wheel-dir /wheels .

FROM ${{BASE_IMAGE}}
LABEL {labels}
USER 0
COPY --from=build /wheels /wheels
# The virtualenv {spec.venv} receives the package; group 0 gets the owner's permissions so that
# an arbitrary UID can read everything (nothing is written there at run time: the root
# filesystem is read-only in the Deployment, /tmp is an emptyDir).
RUN ([ -x {spec.venv}/bin/python ] || python3 -m venv {spec.venv}) \\
    && {spec.venv}/bin/python -m pip install --no-cache-dir --no-index --find-links /wheels \\
        /wheels/{spec.name.replace("-", "_")}-*.whl \\
    && rm -rf /wheels \\
    && chgrp -R 0 {spec.venv} \\
    && chmod -R g=u {spec.venv}
ENV {env}
WORKDIR {spec.workdir}
USER {spec.user}
EXPOSE {" ".join(str(p) for p in spec.expose)}
ENTRYPOINT {json.dumps(list(spec.entrypoint))}
CMD {json.dumps(list(spec.cmd))}
"""


def main() -> int:
    sys.stdout.write(dockerfile(load()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
