"""``gangplace adapter``'s arguments, importable without the adapter extra (the Kubernetes
client). The ``gangplace.commands`` entry point names :func:`register`, so ``gangplace adapter
--help`` prints every option whether or not the extra is installed, and says what to install
when it is not; only running the command imports :mod:`adapter.main`.

    gangplace adapter (--kubeconfig PATH | --in-cluster | --api-server URL)
                      (--solver HOST:PORT | --in-process) [--scheduler-name NAME] [--dry-run]
                      [--advise HOST:PORT]
"""

from __future__ import annotations

import argparse
import importlib.util
from typing import Any

from solver.cli import needs_extra, port_arg
from solver.problem.build import DEFAULT_PDB_POLICY, PDB_POLICIES

NAME = "adapter"
HELP = "schedule pods of schedulerName gangplace on a cluster"


def missing_extra() -> str | None:
    """Why the adapter cannot run here (the Kubernetes client is not installed), or None."""
    try:
        found = importlib.util.find_spec("kubernetes")
    except (ImportError, ValueError):  # a broken or half-imported package
        found = None
    return None if found is not None else "No module named 'kubernetes'"


def arguments(p: argparse.ArgumentParser, *, required: bool = True) -> None:
    where = p.add_mutually_exclusive_group(required=required)
    where.add_argument("--kubeconfig", metavar="PATH", help="reach the cluster with this kubeconfig")
    where.add_argument("--in-cluster", action="store_true", help="use the pod's service account")
    where.add_argument("--api-server", metavar="URL", help="an API server without auth (tests, kubectl proxy)")
    how = p.add_mutually_exclusive_group(required=required)
    how.add_argument("--solver", metavar="HOST:PORT", help="a running `gangplace serve`")
    how.add_argument("--in-process", action="store_true", help="solve in this process")
    p.add_argument("--solver-ca", metavar="PEM", help="reach the solver over TLS, trusting this CA")
    p.add_argument("--solver-cert", metavar="PEM", help="this adapter's client certificate (mutual TLS)")
    p.add_argument("--solver-key", metavar="PEM", help="its private key")
    p.add_argument("--solver-token-file", metavar="FILE", help="a bearer token the solver requires")
    p.add_argument("--scheduler-name", default="gangplace", metavar="NAME",
                   help="plan the pods whose spec.schedulerName is NAME (gangplace)")
    p.add_argument("--time-limit", type=float, default=10.0, metavar="S", help="seconds per plan (10)")
    p.add_argument("--lease-namespace", default="kube-system", metavar="NS",
                   help="namespace of the leader-election Lease (kube-system)")
    p.add_argument("--pdb-policy", choices=PDB_POLICIES, default=DEFAULT_PDB_POLICY,
                   help="strict (default): plan within every PDB's disruptionsAllowed and evict through the "
                        "Eviction API; soft: a violation is the third tier, victims are deleted as "
                        "kube-scheduler's preemption does")
    p.add_argument("--expected-pods", metavar="FILE",
                   help="the pods expected to arrive, with weights (docs/fragmentation.md): each pod goes where "
                        "it leaves the devices least fragmented for them")
    p.add_argument("--dry-run", action="store_true", help="print the plan it would carry out, write nothing")
    p.add_argument("--advise", metavar="HOST:PORT",
                   help="advise kube-scheduler instead of scheduling: keep a plan of the pods of --scheduler-name "
                        "(default-scheduler for the plugin) from the watch, replan on every change, and answer the "
                        "Advise RPC on HOST:PORT from it; bind, evict and write nothing")
    p.add_argument("--advise-tls-cert", metavar="PEM", help="serve --advise over TLS with this certificate")
    p.add_argument("--advise-tls-key", metavar="PEM", help="the certificate's private key")
    p.add_argument("--advise-tls-client-ca", metavar="PEM",
                   help="require client certificates this CA signed on --advise (mTLS)")
    p.add_argument("--advise-token-file", metavar="FILE",
                   help="require 'authorization: Bearer <the file's token>' on every Advise call")
    p.add_argument("--metrics-port", type=port_arg, default=0, metavar="PORT",
                   help="serve /metrics, /healthz and /readyz on PORT (0, the default: none)")
    p.add_argument("--metrics-host", default="0.0.0.0", metavar="HOST", help="address to serve them on (0.0.0.0)")


def register(sub: Any) -> None:
    """Add ``adapter`` to the ``gangplace`` subcommands. Without its extra the full help is still
    printed, under a line saying what to install, and any invocation exits 2 saying it."""
    missing = missing_extra()
    if missing is None:
        p = sub.add_parser(NAME, help=HELP, description=HELP)
        arguments(p)
        p.set_defaults(func=run)
        return
    description = f"{HELP}. Not installed here: pip install 'gangplace[{NAME}]' ({missing})."
    probe = argparse.ArgumentParser(prog=f"gangplace {NAME}", add_help=True)
    arguments(probe)  # the usage as it is with the extra: the required choices stay required
    usage = probe.format_usage().removeprefix("usage: ").strip()
    p = sub.add_parser(NAME, help=f"{HELP} (needs pip install 'gangplace[{NAME}]')", description=description,
                       usage=usage)
    arguments(p, required=False)  # any arguments: the missing extra is what is said
    p.set_defaults(func=lambda _args: needs_extra(NAME, missing), any_arguments=True)


def run(args: argparse.Namespace) -> int:
    try:
        from adapter import main
    except ImportError as exc:  # installed but broken: say which extra, as when it is missing
        return needs_extra(NAME, str(exc))
    return main.main(args)
