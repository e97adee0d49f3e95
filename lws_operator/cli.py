"""The ``lws-operator`` command. One function per subcommand; each returns the exit status."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

from lws_operator.api import constants as c
from lws_operator.api import ds_constants as dc

Handler = Callable[[argparse.Namespace], int]


def cmd_crd(args: argparse.Namespace) -> int:
    """Print (or write) a kind's CRD, or with --admission-policy its ValidatingAdmissionPolicy."""
    from lws_operator.api import admission_policy, crd, ds_admission_policy, ds_crd

    policy = "admission" if args.admission_policy else ""
    texts: dict[tuple[str, str], Callable[[], str]] = {
        (c.KIND, ""): crd.crd_yaml,
        (c.KIND, "admission"): admission_policy.policy_yaml,
        (dc.KIND, ""): ds_crd.crd_yaml,
        (dc.KIND, "admission"): ds_admission_policy.policy_yaml,
        (dc.SCALER_KIND, ""): ds_crd.scaler_crd_yaml,
    }
    if (args.kind, policy) not in texts:
        print(f"lws-operator crd: {args.kind} has no {policy} policy", file=sys.stderr)
        return 2
    text = texts[(args.kind, policy)]()
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    """Check LeaderWorkerSet, DisaggregatedSet and DisaggregatedSetRoleScaler manifests
    offline; one line per error (and per admission warning), exit status 1 on any error."""
    from lws_operator.api.validation import FieldError, validate, warnings

    failed = False
    for name in args.files:
        try:
            text = sys.stdin.read() if name == "-" else Path(name).read_text()
            docs = [d for d in yaml.safe_load_all(text) if d is not None]
        except (OSError, yaml.YAMLError) as e:
            print(f"{name}: {_one_line(e)}")
            failed = True
            continue
        objects = [(i, d) for i, d in enumerate(docs) if _is_ours(d)]
        if not objects:
            print(f"{name}: no {' or '.join(VALIDATED_KINDS)} found", file=sys.stderr)
        for index, doc in objects:
            where = name if len(docs) == 1 else f"{name}[{index}]"
            errors: list[FieldError] = validate(doc)
            for error in errors:
                print(f"{where}: {error}")
            for warning in warnings(doc):
                print(f"{where}: warning: {warning}")
            failed = failed or bool(errors)
    return 1 if failed else 0


def cmd_run(args: argparse.Namespace) -> int:
    """Run the operator until SIGINT/SIGTERM."""
    import asyncio
    import dataclasses
    import signal

    from lws_operator.controller.operator import OperatorConfig, run
    from lws_operator.controller.runtime.leader import LeadershipLost
    from lws_operator.controller.runtime.logs import configure as configure_logging

    configure_logging(fmt=args.log_format, verbose=args.verbose)
    from lws_operator.config import ConfigError, load

    try:
        file = load(args.config) if args.config is not None else None
    except ConfigError as e:
        print(f"lws-operator run: {e}", file=sys.stderr)
        return 2
    config = OperatorConfig(
        kubeconfig=args.kubeconfig,
        namespaces=tuple(args.namespace or ()),
        workers=args.workers,
        webhook_bind_host=args.webhook_host,
        webhook_port=args.webhook_port,
        webhook_service=args.webhook_service,
        **_operations_options(args),
        namespace=args.operator_namespace,
        # An explicit flag overrides the file.
        gang_provider=args.gang_provider or (file.gang_provider if file else None),
    )
    if file is not None:
        config = dataclasses.replace(
            config,
            backoff=file.backoff,
            history_limits=file.history_limits,
            failed_group_grace=file.failed_group_grace,
        )

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await run(config, stop)

    try:
        asyncio.run(main())
    except LeadershipLost:
        return 1  # the Lease was lost: exit, Kubernetes restarts us as a candidate
    return 0


VALIDATED_KINDS = (c.KIND, dc.KIND, dc.SCALER_KIND)


def _is_ours(doc: Any) -> bool:
    return isinstance(doc, dict) and doc.get("kind") in VALIDATED_KINDS


def _one_line(e: Exception) -> str:
    return " ".join(str(e).split())


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lws-operator",
        description="LeaderWorkerSet (leaderworkerset.x-k8s.io/v1) operator and tools.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    crd = sub.add_parser("crd", help="print a CRD (by default the LeaderWorkerSet's) as YAML")
    crd.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    crd.add_argument(
        "--kind",
        choices=VALIDATED_KINDS,
        default=c.KIND,
        help=f"the kind whose CRD (or policy) to print (default {c.KIND})",
    )
    crd.add_argument(
        "--admission-policy",
        action="store_true",
        help="print the ValidatingAdmissionPolicy (and binding) installed with the CRD instead",
    )
    crd.set_defaults(handler=cmd_crd)

    validate = sub.add_parser(
        "validate",
        help="check LeaderWorkerSet and DisaggregatedSet manifests offline",
        description="Check the LeaderWorkerSet, DisaggregatedSet and DisaggregatedSetRoleScaler "
        "documents of multi-document YAML files with the rules the API server applies. Prints "
        "FILE: FIELD: MESSAGE per error (FILE[N] for document N of a multi-document file), "
        "FILE: warning: MESSAGE per admission warning, and exits 1 if there is any error.",
    )
    validate.add_argument("files", nargs="+", metavar="FILE", help="YAML file, or - for stdin")
    validate.set_defaults(handler=cmd_validate)

    run = sub.add_parser(
        "run",
        help="run the operator",
        description="Run the operator against the cluster of --kubeconfig (or $KUBECONFIG, or "
        "in-cluster credentials). Out of cluster the pod webhook listens on --webhook-host and "
        "is registered by URL; in cluster give --webhook-service.",
    )
    run.add_argument("--kubeconfig", type=Path, default=None)
    run.add_argument(
        "--namespace", action="append", help="serve only this namespace (repeatable; default all)"
    )
    run.add_argument("--workers", type=int, default=8, help="concurrent reconciles (default 8)")
    run.add_argument("--webhook-host", default="127.0.0.1", help="address the webhook binds")
    run.add_argument("--webhook-port", type=int, default=9443, help="0 picks a free port")
    run.add_argument(
        "--webhook-service",
        default=None,
        help="in cluster: the Service in front of the webhook (certificate kept in a Secret)",
    )
    run.add_argument(
        "--operator-namespace",
        default=_operator_namespace(),
        help="namespace of the operator's own objects (default: the pod's, else lws-system)",
    )
    run.add_argument(
        "--config",
        type=Path,
        default=None,
        metavar="FILE",
        help="configuration file (docs/configuration.md); flags given explicitly override it",
    )
    run.add_argument("--gang-provider", choices=["volcano", "kubernetes"], default=None)
    _add_operations_flags(run)
    run.add_argument("-v", "--verbose", action="store_true")
    run.set_defaults(handler=cmd_run)
    return parser


def _flag_bool(value: str) -> bool:
    if value.lower() in ("true", "1", "yes"):
        return True
    if value.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, not {value!r}")


def _add_operations_flags(run: argparse.ArgumentParser) -> None:
    """High availability, certificates from elsewhere, metrics, probes, log format
    (docs/operations.md). Defaults follow upstream's manager in cluster; out of cluster,
    leader election, metrics and probes are off unless asked for."""
    run.add_argument(
        "--cert-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="serve DIR/tls.crt and DIR/tls.key (reloaded when they change), made by someone "
        "else (OpenShift service CA, cert-manager); the operator then writes neither the "
        "certificate Secret nor the webhook configuration",
    )
    run.add_argument(
        "--leader-elect",
        type=_flag_bool,
        nargs="?",
        const=True,
        default=None,
        metavar="BOOL",
        help="only the holder of the Lease lws-operator in the operator namespace reconciles "
        "(default: true in cluster, false out of cluster)",
    )
    run.add_argument("--leader-elect-lease-duration", type=float, default=15.0, metavar="S")
    run.add_argument("--leader-elect-renew-deadline", type=float, default=10.0, metavar="S")
    run.add_argument("--leader-elect-retry-period", type=float, default=2.0, metavar="S")
    run.add_argument(
        "--metrics-bind-address",
        default=None,
        metavar="ADDR",
        help="where /metrics is served, [HOST]:PORT or 0 for off "
        "(default :8443 in cluster, 0 out of cluster)",
    )
    run.add_argument(
        "--metrics-secure",
        type=_flag_bool,
        nargs="?",
        const=True,
        default=True,
        metavar="BOOL",
        help="serve /metrics over HTTPS to scrapes whose bearer token may get /metrics "
        "(TokenReview and SubjectAccessReview; default true); false: plain HTTP, no "
        "authorization",
    )
    run.add_argument(
        "--metrics-cert-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="serve /metrics with DIR/tls.crt and DIR/tls.key (reloaded when they change), "
        "made by someone else (OpenShift service CA, cert-manager)",
    )
    run.add_argument(
        "--metrics-service",
        default=None,
        metavar="NAME",
        help="in cluster: the Service in front of /metrics; its certificate is kept in the "
        "Secret lws-metrics-server-cert (default without --metrics-cert-dir: made in memory "
        "for the bind address)",
    )
    run.add_argument(
        "--health-probe-bind-address",
        default=None,
        metavar="ADDR",
        help="where /healthz and /readyz are served, [HOST]:PORT or 0 for off "
        "(default :8081 in cluster, 0 out of cluster)",
    )
    run.add_argument("--log-format", choices=["text", "json"], default="text")


def _operations_options(args: argparse.Namespace) -> dict[str, Any]:
    in_cluster = args.kubeconfig is None and _SA_DIR.joinpath("token").exists()
    return {
        "cert_dir": args.cert_dir,
        "leader_elect": in_cluster if args.leader_elect is None else args.leader_elect,
        "lease_duration": args.leader_elect_lease_duration,
        "renew_deadline": args.leader_elect_renew_deadline,
        "retry_period": args.leader_elect_retry_period,
        "metrics_bind_address": args.metrics_bind_address or (":8443" if in_cluster else "0"),
        "metrics_secure": args.metrics_secure,
        "metrics_cert_dir": args.metrics_cert_dir,
        "metrics_service": args.metrics_service,
        "health_probe_bind_address": args.health_probe_bind_address
        or (":8081" if in_cluster else "0"),
    }


_SA_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


def _operator_namespace() -> str:
    path = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
    try:
        return path.read_text().strip() or "lws-system"
    except OSError:
        return "lws-system"


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    return handler(args)


if __name__ == "__main__":
    raise SystemExit(main())
