"""The ``gangplace`` command.

    gangplace solve SNAPSHOT|- [--workload NS/NAME] [--time-limit S] [--workers N]
                    [--seed N] [--baseline] [--no-decompose] [-o PLAN.json|-]
    gangplace --version
    gangplace bench [SNAPSHOT|DIR ...] [--suite NAME] [--alibaba TRACE_DIR] [--repeat N] [--time-limit S]
                    [--workers N] [--out results.jsonl] [--plot PATH.png]
    gangplace bench --fgd WORKLOAD --trace TRACE_DIR [--seeds 42-51] [--fgd-policy P] [--fgd-window K] [--fgd-offline]
    gangplace solve SNAPSHOT --server HOST:PORT [...]
    gangplace serve [--port 50051] [--metrics-port 9090] [--health-port PORT] [--reuse-port] [--max-inflight N]
                    [--max-message-mb MB] [--cel-cache-mb MB]
    gangplace replan SNAPSHOT|DIR ... [--shard I/N] [--out DIR] [--time-limit S]
    gangplace generate --nodes N [...] -o SNAPSHOT.json
    gangplace generate --suite NAME -o DIR

Exit 0 whenever a plan was produced (an unsatisfied workload is a plan with a
reason), 2 with one clear message on bad input, 1 on an internal error.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, TextIO

from solver import api, kube, reading
from solver.baseline.fragment import tie_order
from solver.bench import generate, plot, runner
from solver.core.about import version
from solver.core.errors import Kind, SnapshotInvalidError, SolverError
from solver.core.features import (
    GATE_NAMES,
    FeatureGateError,
    FeatureGates,
    parse_feature_gates,
)
from solver.core.words import counted
from solver.kube import loader
from solver.problem.build import DEFAULT_PDB_POLICY, PDB_POLICIES
from solver.reading import Reading


def _pdb_policy_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pdb-policy", choices=PDB_POLICIES, default=DEFAULT_PDB_POLICY,
                   help="strict (default): never evict beyond a PDB's disruptionsAllowed, as the Eviction API "
                        "enforces; soft: a violation is the third tier, as kube-scheduler's preemption")


def _feature_gates_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--feature-gates", default="", metavar="GATE=BOOL,...", type=_gates,
                   help="kube-scheduler feature gates that change plans, as its --feature-gates "
                        f"({', '.join(sorted(GATE_NAMES))}); default: 1.37's")


def port_arg(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text} is not a port (0-65535)")
    return port


def _whole(least: int) -> Any:
    """An argparse type: a whole number ≥ ``least``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = least - 1
        if value < least:
            raise argparse.ArgumentTypeError(f"{text} is not a whole number >= {least}")
        return value
    return parse


_positive, _count = _whole(1), _whole(0)


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text} is not a fraction between 0 and 1")
    return value


def needs_extra(name: str, why: str) -> int:
    """Say that command ``name`` needs its extra installed (and why); exit status 2."""
    print(f"gangplace: {name} needs its extra: pip install 'gangplace[{name}]' ({why})", file=sys.stderr)
    return 2


class _Output(argparse.Action):
    """An output path: kept as given, with the option string it was given with (``-o`` or
    ``--output``), so that a path that cannot be written is named as the user spelled it."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        setattr(namespace, f"{self.dest}_flag", option_string)


# every output of each command: (dest, its first option string, what it is). A file's directory must exist and be
# writable; a directory is created with its parents, so its nearest existing ancestor must be a
# writable directory. Checked before any work, so that a plan is never computed and then lost.
_FILE, _DIR = "file", "directory"
_OUTPUTS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "solve": (("output", "-o", _FILE),), "bench": (("out", "--out", _FILE), ("plot", "--plot", _FILE)),
    "replan": (("out", "--out", _DIR),), "generate": (("output", "-o", _FILE),)}


def unwritable(path: str, kind: str) -> str | None:
    """Why ``path`` (a file, or a directory made if missing) cannot be written; None if it can."""
    target = Path(path)
    if kind == _DIR:
        if target.exists():
            if not target.is_dir():
                return "not a directory"
            return None if os.access(target, os.W_OK | os.X_OK) else "directory not writable"
        ancestor = target.parent
        while not ancestor.exists() and ancestor != ancestor.parent:
            ancestor = ancestor.parent
        if not ancestor.is_dir():
            return f"cannot be created: {ancestor} is not a directory"
        return None if os.access(ancestor, os.W_OK | os.X_OK) else f"cannot be created: {ancestor} is not writable"
    if target.is_dir():
        return "is a directory"
    parent = target.parent
    if not parent.exists():
        return "no such directory"
    if not parent.is_dir():
        return f"{parent} is not a directory"
    if target.exists():
        return None if os.access(target, os.W_OK) else "not writable"
    return None if os.access(parent, os.W_OK | os.X_OK) else "directory not writable"


def _check_outputs(args: argparse.Namespace) -> str | None:
    """The first output of the command that cannot be written, as "FLAG PATH: why"."""
    for dest, first, kind in _OUTPUTS.get(args.command, ()):
        path = getattr(args, dest, None)
        if path is None or (args.command == "solve" and path == "-"):
            continue
        if args.command == "generate" and args.suite:
            kind = _DIR
        if why := unwritable(path, kind):
            return f"{getattr(args, f'{dest}_flag', None) or first} {path}: {why}"
    return None




def _cache_mb(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 1 << 20:
        raise argparse.ArgumentTypeError(f"{text} is not a number of MiB (an integer from 0 to 1048576)")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"{text} is not a number of seconds (finite, >= 0)")
    return value


def _upstream_args(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--upstream", choices=["kube-scheduler", "kube-scheduler+plugin"],
                   help=f"{what} (the real kube-scheduler 1.37 in a fresh control plane per snapshot, binaries "
                        "from scripts/build-control-plane.sh); kube-scheduler+plugin: also kube-scheduler with "
                        "the gangplace plugin and its advisor (scripts/build-scheduler-plugin.sh)")
    p.add_argument("--upstream-settle", type=_seconds, default=10.0, metavar="S",
                   help="the real scheduler's run ends once for S seconds nothing was bound or deleted and it "
                        "was idle or only retrying pods it cannot place (10)")
    p.add_argument("--upstream-timeout", type=_seconds, default=300.0, metavar="S",
                   help="a run that has not settled after S seconds ends there, marked unsettled (300)")


def _gates(text: str) -> FeatureGates:
    try:
        return parse_feature_gates(text)
    except FeatureGateError as exc:
        raise argparse.ArgumentTypeError(exc.reason) from None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gangplace", description="Optimal gang placement for Kubernetes.")
    parser.add_argument("--version", action="version", version=version())
    sub = parser.add_subparsers(dest="command", required=True)
    solve = sub.add_parser("solve", help="plan the pending workloads of a recorded snapshot")
    solve.add_argument("snapshot", help="a JSON List or multi-document YAML file, or a directory holding exactly one "
                                        "(.json, .yaml or .yml; a directory is one case per file, as in bench and "
                                        "replan); - reads standard input")
    solve.add_argument("--workload", metavar="NS/NAME", help="plan only this pending workload (its root group)")
    solve.add_argument("--explain", metavar="NS/NAME",
                       help="what it would take to place this pending workload: the budgets to relax (JSON)")
    solve.add_argument("--time-limit", type=float, default=10.0, metavar="S",
                       help="deadline for the whole plan after the snapshot is read (10)")
    solve.add_argument("--workers", type=int, default=1, metavar="N", help="CP-SAT workers (1: reproducible)")
    solve.add_argument("--seed", type=int, default=0, metavar="N", help="CP-SAT random seed (0)")
    solve.add_argument("--baseline", action="store_true", help="answer with the upstream-greedy baseline plan")
    solve.add_argument("--no-decompose", action="store_true",
                       help="one monolithic model even where per-domain sub-models are exact")
    _pdb_policy_arg(solve)
    _feature_gates_arg(solve)
    solve.add_argument("--no-dra-preemption", action="store_true",
                       help="a victim's DRA devices stay held, as upstream 1.37 plans (default: evicting "
                            "every holder frees them)")
    solve.add_argument("--expected-pods", metavar="FILE",
                       help="the pods expected to arrive, with weights (docs/fragmentation.md): each pod goes "
                            "where it fragments the devices least for them")
    solve.add_argument("-o", "--output", action=_Output, metavar="PLAN.json",
                       help="write the plan (with --explain, the explanation) here instead of stdout, in a "
                            "directory that exists (-: stdout)")
    solve.add_argument("--server", metavar="HOST:PORT", help="ask a running `gangplace serve` instead of solving here")
    solve.add_argument("--scheduler-name", metavar="NAME",
                       help="plan only the pending pods of spec.schedulerName NAME, of trees complete enough to "
                            "try, as `gangplace adapter --scheduler-name NAME` selects them (default: every "
                            "pending pod)")
    solve.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                       help="print each improving solution to stderr (default: when stderr is a terminal; "
                            "not with --server)")
    serve = sub.add_parser("serve", help="run the gRPC placement service")
    serve.add_argument("--port", type=port_arg, default=50051, help="gRPC port (50051)")
    serve.add_argument("--host", default="0.0.0.0", help="address to listen on (0.0.0.0)")
    serve.add_argument("--metrics-port", type=port_arg, default=9090, metavar="PORT",
                       help="Prometheus metrics port (9090; 0: none)")
    serve.add_argument("--max-inflight", type=int, default=2, metavar="N",
                       help="solves at once; more get RESOURCE_EXHAUSTED (2)")
    serve.add_argument("--max-message-mb", type=int, default=512, metavar="MB", help="largest request/reply (512)")
    serve.add_argument("--time-limit", type=float, default=10.0, metavar="S",
                       help="deadline for a plan when the request sets none (10)")
    serve.add_argument("--cel-cache-mb", type=_cache_mb, default=256, metavar="MB",
                       help="compiled CEL selectors kept in memory, least recently used out first (256)")
    serve.add_argument("--memory-limit-mb", type=_cache_mb, default=None, metavar="MB",
                       help="memory the server may hold: a call that would not fit is refused, a call running "
                            "past it is stopped, both RESOURCE_EXHAUSTED MEMORY (80%% of the container's limit or "
                            "of the machine's memory; 0: no guard)")
    serve.add_argument("--grace", type=float, default=30.0, metavar="S",
                       help="seconds in-flight solves get to finish on SIGTERM (30)")
    serve.add_argument("--health-port", type=port_arg, default=0, metavar="PORT",
                       help="also serve grpc.health.v1 and reflection, plaintext, on this port, for kubelet's gRPC "
                            "probe when the main port speaks TLS or wants a token (0: none)")
    serve.add_argument("--reuse-port", action="store_true",
                       help="share the gRPC ports with another process (SO_REUSEPORT); by default a port in use "
                            "is an error (exit 2)")
    serve.add_argument("--tls-cert", metavar="PEM", help="serve TLS with this certificate (read again on change)")
    serve.add_argument("--tls-key", metavar="PEM", help="the certificate's private key")
    serve.add_argument("--tls-client-ca", metavar="PEM", help="require client certificates this CA signed (mTLS)")
    serve.add_argument("--token-file", metavar="FILE",
                       help="require 'authorization: Bearer <the file's token>' on every PlacementService call "
                            "(health and reflection stay open; read again on change)")
    bench = sub.add_parser("bench", help="gangplace against the upstream-greedy baseline")
    bench.add_argument("snapshots", nargs="*", help="snapshot files or directories (each file is one case)")
    bench.add_argument("--suite", action="append", default=[], choices=sorted(runner.SUITES),
                       help="add a generated suite (repeatable)")
    bench.add_argument("--alibaba", metavar="TRACE_DIR",
                       help="add cases converted from the Alibaba GPU trace (cluster-trace-gpu-v2023) there")
    bench.add_argument("--cancel-after", metavar="S,S", type=_delays,
                       help="instead of planning, send each case to a served solver, cancel it this many seconds "
                            "after it is admitted (each delay in turn) and time until its slot is free")
    bench.add_argument("--served-memory", action="append", choices=["json", "yaml"], default=[], metavar="FORM",
                       help="instead of planning, send each case as FORM (json, yaml; repeatable) to its own "
                            "`gangplace serve` process and report the process's peak resident size against the "
                            "request's size")
    bench.add_argument("--fgd", metavar="WORKLOAD",
                       help="run the FGD GPU-sharing protocol on this openb pod list (openb_pod_list_default) "
                            "instead: needs --trace")
    bench.add_argument("--trace", metavar="TRACE_DIR",
                       help="the openb trace (cluster-trace-gpu-v2023: csv/, fgd-expected-results/) for --fgd")
    bench.add_argument("--seeds", default="42-51", metavar="A-B",
                       help="--fgd: the protocol's seeds (42-51, as the paper)")
    bench.add_argument("--fgd-policy", action="append", choices=["gangplace", "gangplace-plain", "baseline", "fgd"],
                       default=[], help="--fgd: who places each task (repeatable): gangplace, given the typical "
                                        "tasks as expected pods (the default); gangplace-plain, not; baseline; "
                                        "fgd, FGD's own score on the cluster's state (no plan)")
    bench.add_argument("--fgd-window", type=_positive, default=1, metavar="K",
                       help="--fgd: plan the arrivals K at a time, jointly (1: online, each on arrival)")
    bench.add_argument("--fgd-offline", action="store_true",
                       help="--fgd: every arrival known at once: whole-GPU tasks largest first, then the shares "
                            "node by node, each node's plan weighing them by the GPU milli they ask, then each node "
                            "with GPU milli idle again with a donor node, then CPU-only")
    bench.add_argument("--repeat", type=_positive, default=3, metavar="N", help="gangplace solves per case (3)")
    bench.add_argument("--time-limit", type=float, default=60.0, metavar="S",
                       help="deadline per plan after the snapshot is read (60)")
    bench.add_argument("--workers", type=int, default=1, metavar="N", help="CP-SAT workers (1: reproducible)")
    bench.add_argument("--seed", type=int, default=0, metavar="N", help="CP-SAT random seed (0)")
    bench.add_argument("--out", action=_Output, metavar="results.jsonl",
                       help="append one JSON line per case (--fgd: per policy and seed)")
    bench.add_argument("--plot", action=_Output, metavar="PATH.png",
                       help="latency against nodes, cost ratio per case (matplotlib: pip install "
                            "'gangplace[bench]'; not with --fgd)")
    _pdb_policy_arg(bench)
    _upstream_args(bench, "also run each case upstream and show every tier three ways: gangplace / "
                          "kube-scheduler / baseline")
    rp = sub.add_parser("replan", help="plan every pending workload of each snapshot; write one report each")
    rp.add_argument("snapshots", nargs="+", help="snapshot files or directories (each file is one snapshot)")
    rp.add_argument("--shard", default="0/1", metavar="I/N", help="take the I-th of N shards (an Indexed Job's index)")
    rp.add_argument("--out", action=_Output, default="replan", metavar="DIR",
                    help="reports go here as NAME.json, the directory made if missing (replan/)")
    rp.add_argument("--time-limit", type=float, default=60.0, metavar="S", help="seconds per snapshot (60)")
    rp.add_argument("--workers", type=int, default=1, metavar="N", help="CP-SAT workers (1: reproducible)")
    _upstream_args(rp, "add what upstream does to each snapshot (report key `upstream`)")
    _pdb_policy_arg(rp)
    _feature_gates_arg(rp)
    for entry in metadata.entry_points(group="gangplace.commands"):  # e.g. `adapter`, from the adapter package
        try:
            register = entry.load()
        except ImportError as exc:  # its extra is not installed: the command says which
            missing = sub.add_parser(entry.name, help=f"(needs pip install 'gangplace[{entry.name}]')")
            missing.set_defaults(func=lambda _args, name=entry.name, why=str(exc): needs_extra(name, why),
                                 any_arguments=True)
            continue
        register(sub)
    gen = sub.add_parser("generate", help="write a deterministic synthetic snapshot (a JSON List)")
    gen.add_argument("--nodes", type=_positive, default=1000, metavar="N", help="nodes (1000), 256 per zone")
    gen.add_argument("--pods-per-node", type=_count, default=10, metavar="N",
                     help="running background pods per node, on average (10)")
    gen.add_argument("--utilisation", type=_fraction, default=0.7, metavar="F",
                     help="share of each node's cpu the background requests (0.7)")
    gen.add_argument("--gang-pods", type=_count, default=64, metavar="N",
                     help="pods of the pending PodGroup (64; 0: none)")
    gen.add_argument("--gang-cpu-m", type=_positive, default=8000, metavar="MILLI", help="cpu of each gang pod (8000)")
    gen.add_argument("--gang-gpus", type=_count, default=1, metavar="N", help="GPUs of each gang pod (1)")
    gen.add_argument("--gang-topology", default=generate.RACK, metavar="KEY",
                     help="node label key of the gang's domain")
    gen.add_argument("--composite-groups", type=_count, default=0, metavar="N",
                     help="add a CompositePodGroup (zone) of N PodGroups (rack) of 8 pods (0: none)")
    gen.add_argument("--seed", type=int, default=0, metavar="N", help="random seed (0): the same seed, the same bytes")
    gen.add_argument("--suite", choices=sorted(runner.SUITES),
                     help="write every case of a bench suite instead, one NAME.json each, into -o DIR")
    gen.add_argument("-o", "--output", action=_Output, metavar="SNAPSHOT.json|DIR", required=True,
                     help="the snapshot file; with --suite, a directory of one file per case")
    return parser


def _delays(text: str) -> list[float]:
    try:
        out = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not like 0.5,2,10") from None
    if not out or any(not 0 <= x <= 3600 for x in out):
        raise argparse.ArgumentTypeError(f"{text[:40]!r}: give delays from 0 to 3600 s, like 0.5,2,10")
    return out


def _bench_cases(args: argparse.Namespace) -> list[runner.Case]:
    cases = [runner.Case(name=path.stem, load=functools.partial(reading.load, path),
                         objects=functools.partial(loader.read_documents, path))
             for arg in args.snapshots for path in loader.snapshot_files(Path(arg))]
    suites = [runner.SUITES[s] for s in args.suite]
    if args.alibaba:
        suites.append(runner.alibaba_suite(Path(args.alibaba)))
    for suite in suites:
        for name, build in suite:
            cases.append(runner.Case(name=name, load=functools.partial(_built_snapshot, build), objects=build))
    return cases


def _built_snapshot(build: Callable[[], runner.Objects]) -> Reading:
    return reading.read(build())


def _progress(done: int, total: int, name: str) -> None:
    width = 30
    filled = width * done // max(total, 1)
    print(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {name:<24}", end="", file=sys.stderr)
    if done == total:
        print(file=sys.stderr)


def _waiting_line(case: str, w: Any) -> None:
    """How the real scheduler's run of ``case`` goes (an upstream.Waiting), one line on stderr."""
    print(f"\r{case}: kube-scheduler {w.elapsed:.0f} s, {w.bound} bound / {w.waiting} pending "
          f"({w.unschedulable} unschedulable), {w.phase}, quiet {w.quiet:.0f} s", file=sys.stderr)


def _fgd(args: argparse.Namespace) -> int:
    from solver.bench import fgd

    if not args.trace:
        print("gangplace: bench --fgd needs --trace TRACE_DIR (the openb trace)", file=sys.stderr)
        return 2
    try:
        seeds = fgd.seeds_arg(args.seeds)
    except ValueError as e:
        print(f"gangplace: --{e}", file=sys.stderr)
        return 2
    nodes, tasks = fgd.load_nodes(Path(args.trace)), fgd.load_tasks(Path(args.trace), args.fgd)
    runs = []
    bounds: dict[int, fgd.Bound] = {}
    mix = fgd.expected_pods(fgd.typical(tasks))
    for policy in args.fgd_policy or ["gangplace"]:
        for seed in seeds:
            # gangplace is given the typical tasks as FGD is; gangplace-plain is not
            place = fgd.planner(baseline=policy == "baseline", time_limit=args.time_limit, pdb_policy=args.pdb_policy,
                                expected=mix if policy == "gangplace" else (), seed=seed)
            if seed not in bounds:
                order = fgd.arrivals(tasks, fgd.Cluster.of(nodes).capacity, seed)
                bounds[seed] = fgd.bound(nodes, order)
            name = policy if args.fgd_window == 1 else f"{policy} window {args.fgd_window}"
            name += " offline" if args.fgd_offline else ""
            # with expected pods, equal scores go in the seed's node order: alike nodes are stood
            # for by the one first in it, the node the plan would pick among them all
            rank = functools.partial(tie_order, seed) if policy == "gangplace" else None
            # FGD's own rule in the same harness: its score on the cluster's state, no plan
            direct = fgd.FgdRule(fgd.typical(tasks), seed) if policy == "fgd" else None
            r = fgd.run(nodes, tasks, seed, name, place, window=args.fgd_window, offline=args.fgd_offline,
                        rank=rank, direct=direct)
            r.bound = bounds[seed].percent
            runs.append(r)
            print(f"{args.fgd} {name} seed {seed}: alloc {r.alloc.get(100)} % @100, "
                  f"{r.alloc.get(round(fgd.TUNE * 100))} % @130, final {r.final} % (bound {r.bound} %), "
                  f"frag {r.frag.get(100)} % @100, {r.placed}/{r.arrived} placed, {r.seconds:.0f} s", file=sys.stderr)
            if args.out:
                with open(args.out, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(fgd.to_json(args.fgd, r)) + "\n")
    print(fgd.table(args.fgd, runs, fgd.published(Path(args.trace), args.fgd), len(nodes),
                    sum(n.gpus for n in nodes), fgd.published_seeds(Path(args.trace), args.fgd)))
    return 0


def _bench(args: argparse.Namespace) -> int:
    if args.fgd:
        return _fgd(args)
    cases = _bench_cases(args)
    if not cases:
        print("gangplace: bench needs snapshots or --suite", file=sys.stderr)
        return 2
    if args.cancel_after:
        from solver.bench import cancel

        measured: list[cancel.Cancelled] = []
        for case in cases:
            objects = case.objects() if case.objects is not None else []
            for one in cancel.measure(case.name, objects, args.cancel_after, time_limit=args.time_limit,
                                      soft=args.pdb_policy == "soft"):
                measured.append(one)
                print(f"{one.case}: cancelled {one.after:.1f} s in ({one.phase}): slot free after {one.freed:.3f} s",
                      file=sys.stderr)
        print(cancel.table(measured))
        return 0
    if args.served_memory:
        from solver.bench import served

        answered: list[served.Served] = []
        for case in cases:
            objects = case.objects() if case.objects is not None else []
            for got in served.measure(case.name, objects, args.served_memory, time_limit=args.time_limit,
                                      soft=args.pdb_policy == "soft"):
                answered.append(got)
                print(f"{got.case} ({got.form}, {got.input_mib:.2f} MiB): peak {got.peak_mib:.1f} MiB "
                      f"(idle {got.idle_mib:.1f}), {got.status}", file=sys.stderr)
        print(served.table(answered))
        return 0
    if args.plot:
        plot.require()
    options = api.PlanOptions(time_limit=args.time_limit, workers=args.workers, seed=args.seed,
                              pdb_policy=args.pdb_policy)
    up = None
    if args.upstream:
        from solver.bench import controlplane

        controlplane.find_binaries()  # ControlPlaneError: exit 2 saying how to build them
        up = runner.Upstream(settle=args.upstream_settle, timeout=args.upstream_timeout, report=_waiting_line,
                             plugin=args.upstream == "kube-scheduler+plugin")
    rows = []
    for row in runner.run(cases, repeat=args.repeat, options=options, progress=_progress, up=up):
        rows.append(row)
        print(f"\r{runner.row_line(row):<80}", file=sys.stderr)  # each case as it ends; the table at the end
        if args.out:
            with open(args.out, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(row) + "\n")
    print(runner.table(rows))
    if args.plot:
        plot.render(rows, args.plot)
        print(f"plot written to {args.plot}", file=sys.stderr)
    for row in rows:  # the real scheduler's outcome against our rules: a finding, not our bug
        if "upstreamError" in row:
            print(f"gangplace: {row['case']}: kube-scheduler not run: {row['upstreamError']}", file=sys.stderr)
        if row.get("upstreamSettled") is False:
            print(f"gangplace: {row['case']}: kube-scheduler did not settle within --upstream-timeout "
                  f"{row['upstreamTimeout']:g} s: its row is what it had done by then", file=sys.stderr)
        for what in row.get("upstreamViolations", []) + row.get("upstreamUnplanned", []):
            print(f"gangplace: {row['case']}: kube-scheduler: {what}", file=sys.stderr)
    return 0 if all(r["verified"] for r in rows) else 1


def _write_list(objs: list[dict[str, Any]], path: str | Path) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        json.dump({"apiVersion": "v1", "kind": "List", "items": objs}, fh, separators=(",", ":"))
        fh.write("\n")


def _generate(args: argparse.Namespace) -> int:
    if args.suite:
        out = Path(args.output)
        out.mkdir(parents=True, exist_ok=True)
        for name, build in runner.SUITES[args.suite]:
            _write_list(build(), out / f"{name}.json")
        print(f"wrote {len(runner.SUITES[args.suite])} snapshots to {out}", file=sys.stderr)
        return 0
    spec = generate.GenerateSpec(
        nodes=args.nodes, pods_per_node=args.pods_per_node, utilisation=args.utilisation,
        gang_pods=args.gang_pods, gang_cpu_m=args.gang_cpu_m, gang_gpus=args.gang_gpus,
        gang_topology=args.gang_topology, composite_groups=args.composite_groups, seed=args.seed,
    )
    objs = generate.generate(spec)
    _write_list(objs, args.output)
    print(f"wrote {len(objs)} objects to {args.output}", file=sys.stderr)
    return 0


_LISTED = 8  # past this many evictions, the summary counts them per node


def summary(plan: dict[str, Any], out: TextIO) -> None:
    o, st = plan["objective"], plan["stats"]
    print(f"status {plan['status']}: {o['satisfiedWorkloads']}/{len(plan['workloads'])} workloads satisfied, "
          f"{o['placedPods']} pods placed, {o['evictedPods']} evicted (cost {o['preemptionCost']:g}), "
          f"{o['pdbViolations']} PDB violations", file=out)
    gap = f"gap {o['gap']:.2%} on {o['gapTier']}" if o["gapTier"] else "every tier proven"
    print(f"  bounds: satisfied <= {o['satisfiedBound']}, placed <= {o['placedBound']}, PDB violations >= "
          f"{o['pdbViolationsBound']}, cost >= {o['preemptionCostBound']:g}, evicted >= {o['evictedPodsBound']}"
          f"{', firstAvailable >= ' + str(o['firstAvailableBound']) if o['firstAvailable'] else ''}; {gap}",
          file=out)
    for w in plan["workloads"]:
        proven = " (proven: no plan satisfies it)" if w.get("proven") else ""
        verdict = "satisfied" if w["satisfied"] else f"unsatisfied{proven}: {w['reason']}"
        print(f"  {w['kind']} {w['name']} (priority {w['priority']}): {verdict}", file=out)
        for g in w["groups"]:
            domain = "".join(f" {k}={v}" for k, v in g["domain"].items())
            floor = "" if g["minCount"] is None else f", minCount {g['minCount']}"
            print(f"    {g['kind']} {g['name']}: +{g['placedPods']} placed, {g['runningPods']} running{floor}"
                  f"{domain}", file=out)
    evictions = plan["evictions"]
    if len(evictions) <= _LISTED:
        for e in evictions:
            print(f"  evict {e['pod']} on {e['node']} (cost {e['cost']:g})", file=out)
    else:
        per_node = Counter(e["node"] for e in evictions)
        most = ", ".join(f"{node} {n}" for node, n in per_node.most_common(5))
        print(f"  evict {len(evictions)} pods on {len(per_node)} nodes (most: {most}; every one in the plan's "
              f"evictions)", file=out)
    allocations = plan.get("deviceAllocations", ())
    if allocations:
        devices = sum(len(a["devices"]) for a in allocations)
        drivers = sorted({d["driver"] for a in allocations for d in a["devices"]})
        print(f"  allocate {devices} devices ({', '.join(drivers)}) to {len(allocations)} claim requests", file=out)
    for h in plan.get("heldPods", ()):
        print(f"  held {h['pod']}: {h['reason']}", file=out)
    for w in plan.get("warnings", ()):
        print(f"  warning: {w}", file=out)
    print(f"  {st['variables']} variables, {st['constraints']} constraints, build {st['buildSeconds']:.3f}s, "
          f"solve {st['solveSeconds']:.3f}s, baseline {st['baselineSeconds']:.3f}s", file=out)


def _progress_line(out: TextIO) -> Any:
    """PlanOptions.on_solution: one line per improving solution on ``out``."""
    import time

    start = time.perf_counter()

    def report(stage: str, tiers: Mapping[str, float], bounds: Mapping[str, float]) -> None:
        found = ", ".join(f"{name} {value:g}" for name, value in tiers.items())
        best = ", ".join(f"{value:g}" for value in bounds.values())
        print(f"  {time.perf_counter() - start:7.2f}s {stage}: {found} (bound {best})", file=out, flush=True)
    return report


def _solve(args: argparse.Namespace) -> int:
    if args.server and args.explain:  # the server's Explain
        return _explain(_solve_remote(args, explain=args.explain), args)
    if args.server:
        plan = _solve_remote(args).to_dict()
    else:
        snapshot = _read_snapshot(args.snapshot, args.scheduler_name)
        options = _solve_options(args, on_solution=_progress_line(sys.stderr) if _shows_progress(args) else None)
        if args.explain:
            return _explain(api.explain(snapshot, args.explain, options), args)
        plan = api.plan(snapshot, options).to_dict()
    _write_json(plan, args.output)
    summary(plan, sys.stderr)
    return 0


def _write_json(body: object, output: str | None) -> None:
    """``body`` as indented JSON to the file ``output``, or to stdout when it is None or -."""
    text = json.dumps(body, indent=2)
    if output and output != "-":
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
    else:
        print(text)


def _explain(found: api.Explanation, args: argparse.Namespace) -> int:
    """``solve --explain``: the explanation as JSON on -o (stdout), in words on stderr."""
    _write_json(found.to_dict(), args.output)
    err = sys.stderr
    if found.satisfied:
        print(f"{found.workload} is placed under --pdb-policy {args.pdb_policy}: nothing to relax", file=err)
    elif not found.satisfied_soft:
        print(f"{found.workload} stays pending even with budgets soft: {found.reason}", file=err)
    else:
        proof = "the fewest violations, proven" if found.proven else "not proven the fewest"
        print(f"{found.workload} is pending: {found.reason}", file=err)
        print(f"  placing it alone needs these budgets relaxed ({proof}):", file=err)
        for b in found.budgets:
            print(f"    PodDisruptionBudget {b.budget}: {counted(b.needed, 'eviction')}, {b.allowed} allowed",
                  file=err)
        print(f"  and evicts {counted(len(found.evictions), 'pod')}", file=err)
    if found.min_count is not None and found.largest_min_count is not None:
        print(f"  its gang's minCount is {found.min_count}; the largest that places it now under --pdb-policy "
              f"{args.pdb_policy}: {found.largest_min_count or 'none'}", file=err)
        for z in found.larger:
            if z.min_count == found.min_count:
                if found.larger_omitted:
                    print(f"    ({found.larger_omitted} sizes between not planned: past the nearest "
                          f"{api.MAX_SIZES}, or more pods than the group has)", file=err)
                print(f"    minCount {z.min_count}: as above", file=err)
                continue
            if z.satisfied:
                print(f"    minCount {z.min_count}: placed", file=err)
                continue
            said = "proven not to fit" if z.proven else "not placed (not proven impossible)"
            soft = (f"; with budgets soft it evicts {counted(z.evictions, 'pod')}"
                    + "".join(f", PodDisruptionBudget {b.budget}: {counted(b.needed, 'eviction')}, "
                              f"{b.allowed} allowed" for b in z.budgets)) if z.evictions or z.budgets else ""
            print(f"    minCount {z.min_count}: {said}: {z.reason}{soft}", file=err)
    return 0


def _solve_options(args: argparse.Namespace, on_solution: api.OnSolution | None = None
                   ) -> api.PlanOptions:
    """``gangplace solve``'s options, the same in process and with ``--server``."""
    return api.PlanOptions(workload=args.workload, time_limit=args.time_limit, workers=args.workers, seed=args.seed,
                           baseline_only=args.baseline, decompose=not args.no_decompose, pdb_policy=args.pdb_policy,
                           gates=args.feature_gates or FeatureGates(), dra_preemption=not args.no_dra_preemption,
                           expected=loader.load_expected_pods(args.expected_pods), on_solution=on_solution)


def _shows_progress(args: argparse.Namespace) -> bool:
    return bool(args.progress) if args.progress is not None else sys.stderr.isatty()


def _documents(source: str, scheduler_name: str | None = None) -> list[Any]:
    """The documents at ``source``: a file, a directory of them, or - (standard input). With
    ``scheduler_name``, only the pending pods that scheduler plans, as the adapter selects
    them (``solver.kube.selection``); the trees that wait are named on stderr."""
    if source == "-":
        docs = loader.documents_from_bytes(sys.stdin.buffer.read(), "<stdin>")
    else:
        docs = loader.read_documents(_one_case(source))
    if scheduler_name is None:
        return docs
    from solver.kube import selection

    chosen = selection.select([dict(o) for o in kube.flatten(docs)], scheduler_name)
    for root, why in sorted(chosen.waiting.items()):
        print(f"gangplace: {root} waits: {why}", file=sys.stderr)
    return chosen.objects


def _one_case(source: str) -> Path:
    """The one snapshot file ``solve`` plans. A directory is one case per file in every
    command (``bench`` and ``replan`` take each), so one holding several is an error naming
    them rather than unrelated clusters merged into one."""
    files = loader.snapshot_files(Path(source))
    if len(files) != 1:
        names = ", ".join(f.name for f in files[:5]) + (f" and {len(files) - 5} more" if len(files) > 5 else "")
        raise SnapshotInvalidError(source, "", (
            f"a directory is one case per file and this one holds {len(files)} ({names}): solve one file, "
            "or give the directory to replan or bench" if files else "a directory with no .json, .yaml or .yml file"))
    return files[0]


def _read_snapshot(source: str, scheduler_name: str | None = None) -> Any:
    """The snapshot at ``source`` (- : standard input); one with no Node and no Pod is an error
    naming it, with the kinds it did hold."""
    if scheduler_name is not None:
        snapshot = reading.read(_documents(source, scheduler_name))
    elif source == "-":
        snapshot = reading.from_bytes(sys.stdin.buffer.read(), source="<stdin>")
    else:
        snapshot = reading.load(_one_case(source))
    if why := loader.nothing_to_plan(snapshot):
        raise SnapshotInvalidError("<stdin>" if source == "-" else source, "", why)
    return snapshot


def _replan_upstream(path: Path, snapshot: Any, options: api.PlanOptions, settle: float,
                     timeout: float) -> dict[str, Any]:
    """The real kube-scheduler on the snapshot, reported in the plan's own terms."""
    from solver import replan
    from solver.bench import upstream

    docs = kube.flatten(loader.read_documents(path))
    gates = {"PodGroupPreemptionPolicy": options.gates.pod_group_preemption_policy}
    outcome = upstream.run_kube_scheduler(docs, gates=gates, settle=settle, timeout=timeout,
                                          report=lambda w: _waiting_line(str(path), w))
    scored = upstream.score(snapshot, outcome, gates=options.gates, dra_preemption=False)
    body = replan.report(str(path), snapshot, scored.plan)
    keep = ("admitted", "notAdmitted", "evictions", "preemptionCost", "pdbViolations", "fragmentationAfter")
    return {**{k: body[k] for k in keep}, "secondsToLastBinding": outcome.seconds_to_last_binding,
            "settled": outcome.settled, "violations": scored.violations, "unplanned": scored.unplanned,
            "skippedKinds": outcome.skipped_kinds}


def _replan(args: argparse.Namespace) -> int:
    from solver import replan

    index, count = replan.parse_shard(args.shard)
    files = sorted({f for arg in args.snapshots for f in loader.snapshot_files(Path(arg))})
    mine = replan.shard(files, index, count)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    options = api.PlanOptions(time_limit=args.time_limit, workers=args.workers, pdb_policy=args.pdb_policy,
                              gates=args.feature_gates or FeatureGates())
    if args.upstream:
        from solver.bench import controlplane

        controlplane.find_binaries()  # ControlPlaneError: exit 2 saying how to build them
    for path in mine:
        snapshot = reading.load(path)
        plan = api.plan(snapshot, options)
        body = replan.report(str(path), snapshot, plan)
        if args.upstream:
            body["upstream"] = _replan_upstream(path, snapshot, options, args.upstream_settle,
                                                args.upstream_timeout)
        (out / f"{path.stem}.json").write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")
        print(f"{path}: {plan.status}, {len(body['admitted'])}/{len(plan.workloads)} admitted, "
              f"{len(body['evictions'])} evicted", file=sys.stderr)
    print(f"shard {index}/{count}: {len(mine)} of {len(files)} snapshots -> {out}", file=sys.stderr)
    return 0


def _solve_remote(args: argparse.Namespace, explain: str | None = None) -> Any:
    """The server's plan of the snapshot, or with ``explain`` its Explain of that workload."""
    from solver.service import client

    if args.snapshot == "-" and not args.scheduler_name:
        body = sys.stdin.buffer.read()
    else:
        docs = _documents(args.snapshot, args.scheduler_name)
        body = json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}).encode()
    options = _solve_options(args)  # built before connecting: a bad option is said without a call
    with client.PlacementClient(args.server) as c:
        return c.explain(body, explain, options) if explain else c.solve(body, options)


# a listener's ServerConfig field -> the option giving its port
_LISTENERS = {"address": "port", "metrics_address": "metrics_port", "health_address": "health_port"}


def _serve(args: argparse.Namespace) -> int:
    import os
    import signal
    import threading

    # grpc's C core writes its own, non-JSON lines to stderr (a failed bind among them): silent
    # unless asked (GRPC_VERBOSITY=debug); read once, when grpc loads
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")
    from solver.service import server, telemetry

    telemetry.log_json_to_stderr(also=("grpc",))
    config = server.ServerConfig(
        address=f"{args.host}:{args.port}", max_inflight=args.max_inflight, default_time_limit=args.time_limit,
        max_message_bytes=args.max_message_mb * 1024 * 1024,
        metrics_address=f"{args.host}:{args.metrics_port}" if args.metrics_port else None,
        tls_cert=args.tls_cert, tls_key=args.tls_key, tls_client_ca=args.tls_client_ca, token_file=args.token_file,
        health_address=f"{args.host}:{args.health_port}" if args.health_port else None, reuse_port=args.reuse_port,
        cel_cache_bytes=args.cel_cache_mb * 1024 * 1024,
        memory_budget=None if args.memory_limit_mb is None else args.memory_limit_mb * 1024 * 1024)
    try:
        running = server.start(config)
    except server.ListenError as exc:
        option = _LISTENERS[exc.option]
        print(f"gangplace: --{option.replace('_', '-')} {getattr(args, option)}: {exc.reason}", file=sys.stderr)
        return 2
    stopped = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        def stop() -> None:
            running.stop(args.grace, cause=signal.Signals(signum).name)
            stopped.set()

        threading.Thread(target=stop, daemon=True).start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    stopped.wait()
    return 0


# Exit codes, by what the caller should do (solver.core.errors.Kind): the one table the CLI
# reads, documented in docs/cli.md. Anything outside the error tree is a bug (1).
EXIT: dict[Kind, int] = {
    Kind.BUG: 1,  # report it; a plan the verifier refused, here or on the server
    Kind.INPUT: 2,  # fix the input or the arguments
    Kind.NOT_FOUND: 2,
    Kind.LIMIT: 2,  # a smaller input or a larger limit
    Kind.SETUP: 2,  # install or build what the message names
    Kind.BUSY: 3,  # retry later
    Kind.UNAVAILABLE: 3,
    Kind.STOPPED: 4,  # cancelled or past its deadline
    Kind.DEADLINE: 4,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    if extra and not getattr(args, "any_arguments", False):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if problem := _check_outputs(args):
        print(f"gangplace: {problem}", file=sys.stderr)
        return 2
    try:
        if args.command == "solve":
            return _solve(args)
        if args.command == "generate":
            return _generate(args)
        if args.command == "bench":
            return _bench(args)
        if args.command == "serve":
            return _serve(args)
        if args.command == "replan":
            return _replan(args)
        if hasattr(args, "func"):
            return int(args.func(args))
    except SolverError as exc:
        internal = "internal error: " if exc.kind is Kind.BUG else ""
        print(f"gangplace: {internal}{exc}", file=sys.stderr)
        return EXIT[exc.kind]
    except RecursionError:
        print(f"gangplace: {_input(args)}: input nested too deeply", file=sys.stderr)
        return EXIT[Kind.INPUT]
    except OSError as exc:
        print(f"gangplace: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # a bug: said as one, never as a traceback
        print(f"gangplace: internal error, please report: {type(exc).__name__}: {exc} "
              f"(command {args.command}, input {_input(args)})", file=sys.stderr)
        return 1
    return 2


def _input(args: argparse.Namespace) -> str:
    return str(getattr(args, "snapshot", None) or getattr(args, "snapshots", None) or "-")


if __name__ == "__main__":
    sys.exit(main())
