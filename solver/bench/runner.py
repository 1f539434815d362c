"""``gangplace bench``: gangplace against the upstream-greedy baseline, snapshot by snapshot.

Each case is solved ``repeat`` times by gangplace (the full pipeline of
``solver.api``) and once by the baseline; both plans are verified. A row holds
the medians and every tier of both plans, and goes out as one JSON line with
the versions, seed and parameters that produced it.
"""

from __future__ import annotations

import platform
import statistics
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from solver import api, verify
from solver.bench import alibaba, generate, memory, tiers, upstream
from solver.core.errors import SolverError
from solver.reading import Reading

Objects = list[dict[str, Any]]


def _spec(spec: generate.GenerateSpec) -> Callable[[], Objects]:
    return lambda: generate.generate(spec)


# name -> (case name, object builder) of the synthetic suites: built in memory from fixed seeds
SUITES: dict[str, tuple[tuple[str, Callable[[], Objects]], ...]] = {
    # 512 pods needing preemption under two levels: a CompositePodGroup in one zone
    # whose 8 PodGroups of 64 pods each need one rack
    "scale": tuple(
        (f"scale-{n}", _spec(generate.GenerateSpec(nodes=n, pods_per_node=10, gang_pods=0,
                                                   composite_groups=8, composite_pods=64)))
        for n in (1000, 5000, 15000)
    ),
    "rack-gang": tuple(
        (f"rack-gang-{n}", _spec(generate.GenerateSpec(nodes=n, pods_per_node=9, gang_pods=64)))
        for n in (250, 1000)
    ),
    # shaped like upstream scheduler_perf's workload-aware cases
    "scheduler-perf": (
        ("gang-scheduling-5000", lambda: generate.gang_scheduling(nodes=5000, gangs=1000, size=3)),
        ("podgroup-preemption-1000-all", lambda: generate.podgroup_preemption(nodes=1000, mode="all")),
        ("podgroup-preemption-1000-single", lambda: generate.podgroup_preemption(nodes=1000, mode="single")),
        ("preemption-basic-1000", lambda: generate.preemption_basic(nodes=1000, init_pods=4000, pods=1000)),
        # zone on the composite, rack on its 4 groups of 16; 90 % busy nodes, so it must preempt
        ("composite-topology-5000", _spec(generate.GenerateSpec(
            nodes=5000, pods_per_node=6, utilisation=0.9, gang_pods=0, composite_groups=4, composite_pods=16))),
    ),
}
# GPUs as DRA devices (8 per GPU node, two PCIe roots; background GPU pods hold allocated
# claims) next to the same cluster with GPUs as the extended resource nvidia.com/gpu
SUITES["dra"] = tuple(
    (f"{name}-1000", _spec(generate.GenerateSpec(nodes=1000, pods_per_node=9, gang_pods=64, dra=dra)))
    for name, dra in (("rack-gang-ext", False), ("rack-gang-dra", True))
)
# the same shapes, small: recorded under tests/data/bench/ (the tests check the files are current)
SUITES["mini"] = (
    ("mini-gang-scheduling-50", lambda: generate.gang_scheduling(nodes=50, gangs=20, size=3)),
    ("mini-podgroup-preemption-20-all", lambda: generate.podgroup_preemption(
        nodes=20, groups=20, group_size=4, mode="all", preemptors=4)),
    ("mini-podgroup-preemption-20-single", lambda: generate.podgroup_preemption(
        nodes=20, groups=20, group_size=4, mode="single", preemptors=4)),
    ("mini-rack-gang-64", _spec(generate.GenerateSpec(nodes=64, pods_per_node=9, utilisation=0.9, gang_pods=16))),
)
# 200 workloads (PodGroups and CompositePodGroups, rack and block, three priorities) asking 130 %
# of what can fit on a 70 %-busy 5,000-node cluster: planned jointly
SUITES["contention"] = (("contention-5000", lambda: generate.contention(nodes=5000, workloads=200)),)
SUITES["all"] = SUITES["rack-gang"] + SUITES["dra"] + SUITES["scheduler-perf"] + SUITES["scale"]


def alibaba_suite(trace_dir: Path) -> tuple[tuple[str, Callable[[], Objects]], ...]:
    """Cases from the Alibaba GPU trace (``solver.bench.alibaba``): the recorded state (Running
    tasks as background, Pending whole-GPU tasks as the gang), gang under a zone or a rack."""
    tables = alibaba.load_trace(trace_dir)
    return (
        ("alibaba-openb-zone-256", lambda: alibaba.convert(*tables, alibaba.AlibabaSpec(
            by_phase=True, gang_pods=256, gang_topology=alibaba.ZONE)).objects),
        ("alibaba-openb-rack-64", lambda: alibaba.convert(*tables, alibaba.AlibabaSpec(
            by_phase=True, gang_pods=64, gang_topology=alibaba.RACK)).objects),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    name: str
    load: Callable[[], Reading]
    objects: Callable[[], Objects] | None = None  # the Kubernetes objects, for the real scheduler


@dataclass(frozen=True, slots=True, kw_only=True)
class Upstream:
    """Run each case through the real kube-scheduler too (``solver.bench.upstream``)."""

    settle: float = 10.0  # seconds settled (upstream.Settling) that end its run
    timeout: float = upstream.DEFAULT_TIMEOUT  # seconds at most per case; a case cut there is unsettled
    # told (case name, how its run goes) every 10 s while the scheduler runs
    report: Callable[[str, upstream.Waiting], None] | None = None
    # also kube-scheduler with the gangplace plugin and its advisor (a second control plane)
    plugin: bool = False


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in ("gangplace", "ortools", "kubernetes"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "unknown"
    return out


def _tiers(plan: Any) -> dict[str, Any]:
    o = plan.objective
    return {"satisfiedWorkloads": o.satisfied_workloads,
            "satisfiedByPriority": {str(p): n for p, n in sorted(o.satisfied_by_priority.items(), reverse=True)},
            "placedPods": o.placed_pods, "pdbViolations": o.pdb_violations, "preemptionCost": o.preemption_cost,
            "evictedPods": o.evicted_pods, "firstAvailable": o.first_available}


def run_upstream(case: Case, snap: Reading, options: api.PlanOptions, up: Upstream) -> dict[str, Any]:
    """The real kube-scheduler's outcome on the case, scored on the same snapshot."""
    from solver import kube

    if case.objects is None:
        raise upstream.LoadError(f"{case.name}: no objects to load into a control plane")
    gates = {"PodGroupPreemptionPolicy": options.gates.pod_group_preemption_policy}
    report = up.report
    outcome = upstream.run_kube_scheduler(
        kube.flatten(case.objects()), gates=gates, settle=up.settle, timeout=up.timeout,
        report=None if report is None else (lambda waiting: report(case.name, waiting)))
    scored = upstream.score(snap, outcome, gates=options.gates, dra_preemption=False)
    return {"upstream": _tiers(scored.plan), "upstreamSeconds": outcome.seconds_to_last_binding,
            # False: the case hit the cap (upstreamTimeout) before it settled; its tiers are
            # what the scheduler had done by then
            "upstreamSettled": outcome.settled, "upstreamWaitSeconds": outcome.seconds_waited,
            "upstreamSettle": up.settle, "upstreamTimeout": up.timeout, "upstreamVerified": not scored.violations,
            "upstreamViolations": scored.violations[:20], "upstreamUnplanned": scored.unplanned[:20],
            "podGroupAttempts": outcome.podgroup_attempts,
            "podGroupAttemptSeconds": outcome.podgroup_attempt_seconds_mean,
            "podGroupP50": outcome.podgroup_attempt_seconds_p50, "podGroupP99": outcome.podgroup_attempt_seconds_p99,
            "upstreamGates": outcome.gates, "upstreamSkippedKinds": outcome.skipped_kinds,
            **(run_plugin(case, snap, options, up) if up.plugin else {})}


def run_plugin(case: Case, snap: Reading, options: api.PlanOptions, up: Upstream) -> dict[str, Any]:
    """kube-scheduler with the gangplace plugin on the case (its advisor plans at the case's time
    limit and policy), scored on the same snapshot: keys ``plugin*``."""
    from solver import kube

    assert case.objects is not None
    gates = {"PodGroupPreemptionPolicy": options.gates.pod_group_preemption_policy}
    try:
        outcome = upstream.run_kube_scheduler(
            kube.flatten(case.objects()), gates=gates, settle=up.settle, timeout=up.timeout,
            plugin=upstream.WithPlugin(time_limit=options.time_limit, pdb_policy=options.pdb_policy))
    except SolverError as exc:
        return {"pluginError": str(exc)}
    # the plan the plugin followed evicts a claim holder's devices with it (options.dra_preemption),
    # and kube-scheduler then allocates them: scored under that rule
    scored = upstream.score(snap, outcome, gates=options.gates, dra_preemption=options.dra_preemption)
    return {"plugin": _tiers(scored.plan), "pluginSeconds": outcome.seconds_to_last_binding,
            "pluginSettled": outcome.settled, "pluginVerified": not scored.violations,
            "pluginViolations": scored.violations[:20], "pluginUnplanned": scored.unplanned[:20],
            "pluginPodGroupAttempts": outcome.podgroup_attempts,
            "pluginPodGroupP50": outcome.podgroup_attempt_seconds_p50,
            "pluginPodGroupP99": outcome.podgroup_attempt_seconds_p99, "pluginAdvice": outcome.advice}


def run_case(case: Case, *, repeat: int, options: api.PlanOptions, up: Upstream | None = None) -> dict[str, Any]:
    peak = memory.Peak()
    peak.start()
    load_start = time.perf_counter()
    snap = case.load()
    load_seconds = time.perf_counter() - load_start
    totals, plans = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        plan = api.plan(snap, options)
        totals.append(time.perf_counter() - start)
        plans.append(plan)
    plan = plans[len(plans) // 2]
    start = time.perf_counter()
    # the baseline under the same rules: the same PDB policy, gates and DRA preemption
    base = api.plan(snap, api.PlanOptions(workload=options.workload, baseline_only=True, pdb_policy=options.pdb_policy,
                                          gates=options.gates, dra_preemption=options.dra_preemption))
    base_seconds = time.perf_counter() - start
    strict = options.pdb_policy == "strict"
    ok = not verify.verify(snap.facts, snap, plan, strict_pdbs=strict) and \
        not verify.verify(snap.facts, snap, base, strict_pdbs=strict)
    mine, theirs = _tiers(plan), _tiers(base)
    ratio = (mine["preemptionCost"] / theirs["preemptionCost"]) if theirs["preemptionCost"] else None
    better = plan.objective.tiers > base.objective.tiers
    worse = plan.objective.tiers < base.objective.tiers
    st = plan.stats
    peak_mib = peak.mib()  # before the real kube-scheduler's run, which loads objects from here
    extra: dict[str, Any] = {}
    if up is not None:
        try:
            extra = run_upstream(case, snap, options, up)
        except SolverError as exc:  # the case could not be run upstream: say why, keep the others
            extra = {"upstreamError": str(exc)}
    return {
        "case": case.name,
        "nodes": st["nodes"], "runningPods": st["runningPods"], "pendingPods": st["pendingPods"],
        "variables": st["variables"], "constraints": st["constraints"],
        "buildSeconds": statistics.median(float(p.stats["buildSeconds"]) for p in plans),
        "solveSeconds": statistics.median(float(p.stats["solveSeconds"]) for p in plans),
        "totalSeconds": statistics.median(totals),
        "loadSeconds": round(load_seconds, 4),
        # median of each phase over the repeats: problem, hint, build, solve, fallback, decode, verify
        "phaseSeconds": {name: statistics.median(float(p.stats["phaseSeconds"].get(name, 0.0)) for p in plans)
                         for name in plans[0].stats["phaseSeconds"]},
        "status": plan.status, "gap": plan.objective.gap, "gapTier": plan.objective.gap_tier,
        "bounds": {k: v for k, v in plan.to_dict()["objective"].items() if k.endswith("Bound")},
        "cut": list(st.get("cut", [])),
        "gangplace": mine, "baseline": theirs, "baselineSeconds": round(base_seconds, 4),
        # the cost ratio compares like with like only where tiers 1-3 tie: decidedBy is the first
        # tier where the two plans differ (None: every tier ties), betterThanBaseline who wins it
        "costRatio": ratio, "betterThanBaseline": better, "worseThanBaseline": worse,
        "decidedBy": tiers.decide(mine, theirs).tier,
        "verified": ok, "repeat": repeat,
        # did every repeat reach the same tiers and status? (the row reports the middle plan)
        "repeatsAgree": len({(p.status, p.objective.tiers) for p in plans}) == 1,
        # the resident peak while this case loaded, solved, ran its baseline and was verified;
        # peakScope "process" where the mark cannot be reset (solver.bench.memory)
        "peakRssMiB": peak_mib, "peakScope": peak.scope,
        "params": {"timeLimit": options.time_limit, "workers": options.workers, "seed": options.seed,
                   "decompose": options.decompose, "pdbPolicy": options.pdb_policy},
        "decomposedBy": st.get("decomposedBy"),
        "solver": st.get("solver"),
        "versions": versions(),
        **extra,
    }


def run(cases: Iterable[Case], *, repeat: int, options: api.PlanOptions,
        progress: Callable[[int, int, str], None] | None = None, up: Upstream | None = None
        ) -> Iterator[dict[str, Any]]:
    listed = list(cases)
    for i, case in enumerate(listed):
        if progress:
            progress(i, len(listed), case.name)
        yield run_case(case, repeat=repeat, options=options, up=up)
    if progress:
        progress(len(listed), len(listed), "done")


def row_line(row: dict[str, Any]) -> str:
    """One finished case in a line: status, gap, median total seconds, tiers 3-4 against the baseline."""
    g, b = row["gangplace"], row["baseline"]
    tier = f" on {row['gapTier']}" if row.get("gapTier") else ""
    return (f"{row['case']}: {row['status']} gap {row['gap']:.2%}{tier}, {row['totalSeconds']:.1f} s, "
            f"pdb {g['pdbViolations']}/{b['pdbViolations']}, cost {g['preemptionCost']:g}/{b['preemptionCost']:g}"
            f"{'' if row['verified'] else ', NOT VERIFIED'}")


COLUMNS = (
    ("case", "{case}"), ("nodes", "{nodes}"), ("running", "{runningPods}"), ("pending", "{pendingPods}"),
    ("vars", "{variables}"), ("build s", "{buildSeconds:.3f}"), ("solve s", "{solveSeconds:.3f}"),
    ("total s", "{totalSeconds:.3f}"), ("in limit", "{in_limit}"), ("status", "{status}"), ("gap", "{gap:.2%}"),
    ("gap tier", "{gap_tier}"),
    ("sat gp/bl", "{gangplace[satisfiedWorkloads]}/{baseline[satisfiedWorkloads]}"),
    ("placed gp/bl", "{gangplace[placedPods]}/{baseline[placedPods]}"),
    ("pdb gp/bl", "{gangplace[pdbViolations]}/{baseline[pdbViolations]}"),
    ("cost gp/bl", "{gangplace[preemptionCost]:g}/{baseline[preemptionCost]:g}"),
    ("evicted gp/bl", "{gangplace[evictedPods]}/{baseline[evictedPods]}"),
    ("cost ratio", "{ratio}"), ("peak MiB", "{peakRssMiB}"), ("verified", "{verified}"),
)


# with the real kube-scheduler: each tier three ways (gangplace / kube-scheduler / baseline)
# and the time each took (kube-scheduler: first pending pod created to last binding)
THREE_WAY = (
    ("case", "{case}"), ("nodes", "{nodes}"), ("running", "{runningPods}"), ("pending", "{pendingPods}"),
    ("status", "{status}"), ("gap", "{gap:.2%}"),
    ("sat gp/ks/bl", "{gangplace[satisfiedWorkloads]}/{upstream[satisfiedWorkloads]}/{baseline[satisfiedWorkloads]}"),
    ("placed gp/ks/bl", "{gangplace[placedPods]}/{upstream[placedPods]}/{baseline[placedPods]}"),
    ("pdb gp/ks/bl", "{gangplace[pdbViolations]}/{upstream[pdbViolations]}/{baseline[pdbViolations]}"),
    ("cost gp/ks/bl", "{gangplace[preemptionCost]:g}/{upstream[preemptionCost]:g}/{baseline[preemptionCost]:g}"),
    ("evicted gp/ks/bl", "{gangplace[evictedPods]}/{upstream[evictedPods]}/{baseline[evictedPods]}"),
    ("s gp/ks/bl", "{totalSeconds:.2f}/{upstreamSeconds:.2f}/{baselineSeconds:.2f}"),
    ("ks podgroup ms", "{pg_ms}"), ("ks settled", "{ks_settled}"),
    ("verified gp/ks/bl", "{verified}/{upstreamVerified}/{verified}"),
)


# ... and kube-scheduler with the gangplace plugin (kp) beside it: each tier four ways, and each
# scheduler's PodGroup cycle latency (p50/p99 of its own attempt histogram, ms)
FOUR_WAY: tuple[tuple[str, str], ...] = (
    ("case", "{case}"), ("pending", "{pendingPods}"), ("status", "{status}"),
    ("sat gp/ks/kp/bl", "{gangplace[satisfiedWorkloads]}/{upstream[satisfiedWorkloads]}/"
                        "{plugin[satisfiedWorkloads]}/{baseline[satisfiedWorkloads]}"),
    ("placed gp/ks/kp/bl", "{gangplace[placedPods]}/{upstream[placedPods]}/{plugin[placedPods]}/"
                           "{baseline[placedPods]}"),
    ("pdb gp/ks/kp/bl", "{gangplace[pdbViolations]}/{upstream[pdbViolations]}/{plugin[pdbViolations]}/"
                        "{baseline[pdbViolations]}"),
    ("cost gp/ks/kp/bl", "{gangplace[preemptionCost]:g}/{upstream[preemptionCost]:g}/{plugin[preemptionCost]:g}/"
                         "{baseline[preemptionCost]:g}"),
    ("evicted gp/ks/kp/bl", "{gangplace[evictedPods]}/{upstream[evictedPods]}/{plugin[evictedPods]}/"
                            "{baseline[evictedPods]}"),
    ("ks pg ms p50/p99", "{ks_pg}"), ("kp pg ms p50/p99", "{kp_pg}"),
    ("verified gp/ks/kp", "{verified}/{upstreamVerified}/{pluginVerified}"),
)


def _ms(p50: float | None, p99: float | None) -> str:
    return "-" if p50 is None or p99 is None else f"{p50 * 1000:.1f}/{p99 * 1000:.1f}"


DEADLINE_SLACK = 0.10  # a plan is on time within its limit and 10 % more (after the snapshot is read)


def within_deadline(row: dict[str, Any]) -> str:
    """"yes" when the median plan took at most the time limit + 10 %, else the overrun."""
    limit = float(row["params"]["timeLimit"])
    over = row["totalSeconds"] - limit * (1 + DEADLINE_SLACK)
    return "yes" if over <= 0 else f"+{over:.1f} s"


def ratio_cell(row: dict[str, Any]) -> str:
    """The cost ratio where it means something: only when tiers 1-3 tie, else "- (pdb)" naming
    the tier that decided before the cost."""
    decision = tiers.decide(row["gangplace"], row["baseline"])
    if not decision.cost_comparable:
        return f"- ({decision.short})"
    return "-" if row["costRatio"] is None else f"{row['costRatio']:.3f}"


def settled_cell(row: dict[str, Any]) -> str:
    """"yes" when the real scheduler's run settled, "NO (cap S s)" when the cap ended it (its
    tiers are then what it had done by the cap), "!" when it did not run."""
    if "upstreamSettled" not in row:
        return "!"
    return "yes" if row["upstreamSettled"] else f"NO (cap {row['upstreamTimeout']:g} s)"


def table(rows: list[dict[str, Any]]) -> str:
    columns: tuple[tuple[str, str], ...] = COLUMNS
    if rows and any("upstream" in r or "upstreamError" in r for r in rows):
        columns = THREE_WAY
    if rows and any("plugin" in r or "pluginError" in r for r in rows):
        columns = FOUR_WAY
    failed = {"preemptionCost": float("nan")}
    cells = [[h for h, _ in columns]]
    for row in rows:
        if columns is not COLUMNS and "upstream" not in row:  # upstream failed on it: "!" in its place
            row = {**row, "upstream": {**dict.fromkeys(row["baseline"], "!"), **failed},
                   "upstreamSeconds": float("nan"), "upstreamVerified": "!"}
        if columns is FOUR_WAY and "plugin" not in row:
            row = {**row, "plugin": {**dict.fromkeys(row["baseline"], "!"), **failed}, "pluginVerified": "!"}
        ratio = ratio_cell(row)
        pg = row.get("podGroupAttemptSeconds")
        pg_ms = "-" if pg is None else f"{pg * 1000:.1f} x{row['podGroupAttempts']}"
        gap_tier = row.get("gapTier") or "-"
        in_limit = within_deadline(row)
        ks_settled = settled_cell(row)
        ks_pg = _ms(row.get("podGroupP50"), row.get("podGroupP99"))
        kp_pg = _ms(row.get("pluginPodGroupP50"), row.get("pluginPodGroupP99"))
        cells.append([fmt.format(**row, ratio=ratio, pg_ms=pg_ms, gap_tier=gap_tier, in_limit=in_limit,
                                 ks_settled=ks_settled, ks_pg=ks_pg, kp_pg=kp_pg) for _, fmt in columns])
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    lines = [" | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)
