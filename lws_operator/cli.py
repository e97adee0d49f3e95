"""The ``lws-operator`` command. One function per subcommand; each returns the exit status."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

from lws_operator.api import constants as c

Handler = Callable[[argparse.Namespace], int]


def cmd_crd(args: argparse.Namespace) -> int:
    """Print (or write) the CRD, or with --admission-policy the ValidatingAdmissionPolicy."""
    if args.admission_policy:
        from lws_operator.api.admission_policy import policy_yaml

        text = policy_yaml()
    else:
        from lws_operator.api.crd import crd_yaml

        text = crd_yaml()
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    """Check LeaderWorkerSet manifests offline; one line per error, exit status 1 on any."""
    from lws_operator.api.validation import FieldError, validate

    failed = False
    for name in args.files:
        try:
            text = sys.stdin.read() if name == "-" else Path(name).read_text()
            docs = [d for d in yaml.safe_load_all(text) if d is not None]
        except (OSError, yaml.YAMLError) as e:
            print(f"{name}: {_one_line(e)}")
            failed = True
            continue
        objects = [(i, d) for i, d in enumerate(docs) if _is_lws(d)]
        if not objects:
            print(f"{name}: no {c.KIND} found", file=sys.stderr)
        for index, doc in objects:
            where = name if len(docs) == 1 else f"{name}[{index}]"
            errors: list[FieldError] = validate(doc)
            for error in errors:
                print(f"{where}: {error}")
            failed = failed or bool(errors)
    return 1 if failed else 0


def _is_lws(doc: Any) -> bool:
    return isinstance(doc, dict) and doc.get("kind") == c.KIND


def _one_line(e: Exception) -> str:
    return " ".join(str(e).split())


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lws-operator",
        description="LeaderWorkerSet (leaderworkerset.x-k8s.io/v1) operator and tools.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    crd = sub.add_parser("crd", help="print the LeaderWorkerSet CRD as YAML")
    crd.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    crd.add_argument(
        "--admission-policy",
        action="store_true",
        help="print the ValidatingAdmissionPolicy (and binding) installed with the CRD instead",
    )
    crd.set_defaults(handler=cmd_crd)

    validate = sub.add_parser(
        "validate",
        help="check LeaderWorkerSet manifests offline",
        description="Check the LeaderWorkerSet documents of multi-document YAML files with the "
        "rules the API server applies. Prints FILE: FIELD: MESSAGE per error (FILE[N] for "
        "document N of a multi-document file) and exits 1 if there is any.",
    )
    validate.add_argument("files", nargs="+", metavar="FILE", help="YAML file, or - for stdin")
    validate.set_defaults(handler=cmd_validate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    return handler(args)


if __name__ == "__main__":
    raise SystemExit(main())
