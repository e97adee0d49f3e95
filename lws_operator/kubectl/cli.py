"""``kubectl lws``: a kubectl plugin (the ``kubectl-lws`` command, installed with the package).

* ``kubectl lws status NAME [-n NS]``, ``logs NAME GROUP``, ``recreate NAME GROUP...`` and
  ``plan NAME -f new.yaml`` for LeaderWorkerSets: :mod:`lws_operator.kubectl.lws`.
* The same for DisaggregatedSets (:mod:`lws_operator.kubectl.ds`): ``status
  disaggregatedset/NAME`` (or a NAME that is no LeaderWorkerSet), and ``plan`` with a
  DisaggregatedSet in ``new.yaml``.

This module is the command line: it parses the arguments, connects, and hands each command to
the half for its kind.

Credentials and namespace as kubectl's: ``--kubeconfig``, else ``$KUBECONFIG``, else
``~/.kube/config``; the namespace of the current context unless ``-n`` is given.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from lws_operator.api import constants as c
from lws_operator.api import ds_constants as dc
from lws_operator.kube.client import ApiError, Kube
from lws_operator.kubectl import ds, lws


def _kubeconfig_path(explicit: Path | None) -> Path:
    if explicit is not None:
        return explicit
    env = os.environ.get("KUBECONFIG", "")
    first = next((p for p in env.split(os.pathsep) if p), None)
    return Path(first) if first else Path.home() / ".kube" / "config"


def context_namespace(kubeconfig: Path) -> str:
    """The namespace of the kubeconfig's current context, or ``default``."""
    try:
        cfg = yaml.safe_load(kubeconfig.read_text()) or {}
    except (OSError, yaml.YAMLError):
        return "default"
    current = cfg.get("current-context")
    for ctx in cfg.get("contexts") or []:
        if ctx.get("name") == current:
            return str((ctx.get("context") or {}).get("namespace") or "default")
    return "default"


def _load_new(path: str) -> dict[str, Any]:
    text = sys.stdin.read() if path == "-" else Path(path).read_text()
    for doc in yaml.safe_load_all(text):
        if isinstance(doc, dict) and doc.get("kind") in (c.KIND, dc.KIND):
            return doc
    raise SystemExit(f"kubectl-lws: {path}: no {c.KIND} or {dc.KIND} found")


async def _plan(kube: Kube, ns: str, name: str, new_file: str) -> str:
    """``plan``: a LeaderWorkerSet's rollout, or a DisaggregatedSet's (by the kind in the file)."""
    new = _load_new(new_file)
    if new.get("kind") == dc.KIND:
        return await ds.cmd_plan(kube, ns, name, new)
    return await lws.cmd_plan(kube, ns, name, new)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kubectl lws",
        description="Inspect LeaderWorkerSets group by group, and DisaggregatedSets child by "
        "child.",
    )
    parser.add_argument("--kubeconfig", type=Path, default=None)
    parser.add_argument("-n", "--namespace", default=None)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    status = sub.add_parser(
        "status",
        help="one row per group of a LeaderWorkerSet, or per child of a DisaggregatedSet",
    )
    status.add_argument(
        "name", help="NAME, lws/NAME or disaggregatedset/NAME (NAME: an LWS, else a set)"
    )
    plan = sub.add_parser("plan", help="the rollout steps a change would take")
    plan.add_argument("name")
    plan.add_argument(
        "-f",
        "--filename",
        required=True,
        help="the new LeaderWorkerSet or DisaggregatedSet (- stdin)",
    )
    logs = sub.add_parser("logs", help="the log tails kept of a group's failed containers")
    logs.add_argument("name")
    logs.add_argument("group", type=int)
    recreate = sub.add_parser("recreate", help="ask the operator to recreate groups now")
    recreate.add_argument("name")
    recreate.add_argument("groups", type=int, nargs="+", metavar="GROUP")
    for p in (status, plan, logs, recreate):
        p.add_argument("--kubeconfig", type=Path, default=argparse.SUPPRESS)
        p.add_argument("-n", "--namespace", default=argparse.SUPPRESS)
    return parser


async def _run(args: argparse.Namespace) -> str:
    kubeconfig = _kubeconfig_path(args.kubeconfig)
    ns = args.namespace or context_namespace(kubeconfig)
    kube = await Kube.connect(kubeconfig, user_agent="kubectl-lws")
    try:
        kind, _, name = args.name.rpartition("/")
        if args.command == "status":
            return await _status(kube, ns, kind, name)
        if args.command == "logs":
            return await lws.cmd_logs(kube, ns, args.name, args.group)
        if args.command == "recreate":
            return await lws.cmd_recreate(kube, ns, args.name, args.groups)
        return await _plan(kube, ns, name, args.filename)
    finally:
        await kube.close()


_LWS_NAMES = ("", "lws", "leaderworkerset", "leaderworkersets", f"{c.PLURAL}.{c.GROUP}")
_DS_NAMES = (dc.SINGULAR, dc.PLURAL, f"{dc.PLURAL}.{dc.GROUP}")


async def _status(kube: Kube, ns: str, kind: str, name: str) -> str:
    """A LeaderWorkerSet's groups, or a DisaggregatedSet's children (by ``kind``, or a bare
    NAME that is no LeaderWorkerSet)."""
    if kind not in _LWS_NAMES + _DS_NAMES:
        raise SystemExit(f"kubectl-lws: unknown kind {kind!r}: lws or disaggregatedset")
    if kind in _DS_NAMES or (
        not kind
        and await kube.get_or_none(lws.lws_path(ns, name)) is None
        and await kube.get_or_none(ds.ds_path(ns, name)) is not None
    ):
        return await ds.cmd_status(kube, ns, name)
    return await lws.cmd_status(kube, ns, name)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        sys.stdout.write(asyncio.run(_run(args)))
    except ApiError as e:
        print(f"kubectl-lws: {e}", file=sys.stderr)
        return 1
    return 0
