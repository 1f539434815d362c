"""plan(reading, options) -> Plan: the one pipeline behind every entry point.

problem -> greedy hint -> (done, when the hint meets every tier's trivial bound) ->
build_model -> staged solve -> decode -> verify. ``baseline_only`` answers with the
greedy baseline (upstream's choice of nodes) instead.
When a time limit leaves the solver with a plan worse than the hint's or the baseline's,
the better of those is returned (a hint alone does not guarantee it). A plan that fails
the verifier is an internal error, never a result.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial

from solver import cel
from solver import verify as verify_mod
from solver.baseline import greedy
from solver.core import snapshot as s
from solver.core import stopping
from solver.core.errors import BugError, InputError, Kind
from solver.core.features import FeatureGates, format_feature_gates
from solver.core.plan import OPTIMAL, TIER_NAMES, BudgetNeed, Plan, Tiers
from solver.gcpause import without_gc
from solver.model import decompose
from solver.model.bounds import domains, floors, room
from solver.model.build import build_model
from solver.model.solve import OnSolution as OnSolution  # re-exported: PlanOptions.on_solution's type
from solver.model.solve import SolveParams, SolveResult, solve
from solver.plan.decode import make_plan, without_taking
from solver.problem.assignment import Assignment, budget_needs, score, trivial_bound
from solver.problem.build import (
    DEFAULT_PDB_POLICY,
    GROUP_ROOT,
    PDB_POLICIES,
    POD_ROOT,
    PdbPolicy,
    Problem,
    build_problem,
    root_of,
)
from solver.reading import Reading, with_facts


class PlanInvalidError(BugError):
    """A decoded plan failed the independent verifier: a bug, reported as such."""

    def __init__(self, violations: list[verify_mod.Violation]) -> None:
        self.violations = violations
        super().__init__("plan failed verification: " + "; ".join(map(str, violations[:5])))


class OptionError(InputError):
    """A plan option out of range: ``option`` is the PlanOptions field, ``reason`` what is wrong."""

    def __init__(self, option: str, reason: str) -> None:
        self.option, self.reason = option, reason
        self.field = f"options.{option}"
        super().__init__(f"option {option}: {reason}")


MAX_WORKERS = 64
MAX_TIME_LIMIT = 7 * 24 * 3600.0
MAX_SEED = 2**31 - 1  # CP-SAT's random_seed is an int32
MAX_EXPECTED = 1000  # expected pods: each is asked of every device and scored on every node tried
DEFAULT_GATES = FeatureGates()  # kube-scheduler 1.37's defaults (frozen: one shared value)


class UnknownWorkloadError(InputError):
    kind = Kind.NOT_FOUND

    def __init__(self, workload: str, root: str | None = None) -> None:
        self.workload = workload
        self.root = root
        self.field = "workload"
        hint = f": it is a group under {root!r}; a workload is named by its root" if root else ""
        super().__init__(f"no pending workload {workload!r} in the snapshot{hint}")


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanOptions:
    workload: str | None = None  # "ns/root": plan only this pending workload
    time_limit: float = 10.0
    workers: int = 1
    seed: int = 0
    relative_gap: float = 0.0
    baseline_only: bool = False  # answer with the upstream-greedy plan
    max_variables: int | None = None
    decompose: bool = True  # one sub-model per root domain when that is exact (solver.model.decompose)
    ideal_shortcut: bool = True  # a baseline at every trivial bound is returned without a model
    stop: threading.Event | None = None  # set to end the search early with the best plan so far
    on_solution: OnSolution | None = None  # (stage, tiers, bounds) per improvement, in the plan's units
    # "strict": PDBs as a hard rule (no eviction beyond disruptionsAllowed), for a caller that
    # evicts through the Eviction API, which refuses exactly those; "soft": tier 3, as upstream
    pdb_policy: PdbPolicy = DEFAULT_PDB_POLICY
    gates: FeatureGates = DEFAULT_GATES  # the scheduler's feature gates (solver.core.features)

    def __post_init__(self) -> None:
        """Every number in range (raises OptionError): finite, positive where it must be."""
        def fits(value: object, lo: float, hi: float, integer: bool) -> bool:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                return False
            if integer:
                return isinstance(value, int) and lo <= value <= hi
            return math.isfinite(value) and lo <= value <= hi

        def number(name: str, value: object, lo: float, hi: float, integer: bool) -> None:
            if not fits(value, lo, hi, integer):
                kind = "an integer" if integer else "a number"
                def show(x: float) -> str:
                    return str(int(x)) if float(x).is_integer() else str(x)

                raise OptionError(name, f"must be {kind} from {show(lo)} to {show(hi)}, got {value!r}")

        number("time_limit", self.time_limit, 0.001, MAX_TIME_LIMIT, False)
        number("workers", self.workers, 1, MAX_WORKERS, True)
        number("seed", self.seed, 0, MAX_SEED, True)
        number("relative_gap", self.relative_gap, 0.0, 1.0, False)
        if self.max_variables is not None:
            number("max_variables", self.max_variables, 1, 2**62, True)
        if len(self.expected) > MAX_EXPECTED:
            raise OptionError("expected", f"at most {MAX_EXPECTED} expected pods, got {len(self.expected)}")
        for i, pod in enumerate(self.expected):
            if not fits(pod.weight, 1e-9, 1e9, False):
                raise OptionError(f"expected[{i}].weight", f"must be a number from 1e-09 to 1e+09, got {pod.weight!r}")
        if self.pdb_policy not in PDB_POLICIES:
            raise OptionError("pdb_policy", f"must be one of {', '.join(PDB_POLICIES)}, got {self.pdb_policy!r}")
    # a victim's DRA devices go free when it is evicted; False plans as upstream 1.37 can
    dra_preemption: bool = True
    # the pods expected to arrive, with their shares (docs/fragmentation.md): the hint places
    # each pod where it fragments the devices least for them, ties in an order drawn from seed
    expected: tuple[s.ExpectedPod, ...] = ()


def select_workload(snapshot: Reading, workload: str) -> Reading:
    """Drop every pending pod outside ``workload``: they hold nothing, so nothing else changes.
    A name that is both a root group and a pending pod outside any group names the group."""
    tree = snapshot.tree
    pending = [p for p in snapshot.pods if p.node is None]
    roots = {root_of(tree, p) for p in pending}
    chosen = (GROUP_ROOT, workload) if (GROUP_ROOT, workload) in roots else (POD_ROOT, workload)
    if chosen not in roots:
        top = tree.root(s.GroupKey(workload)) if workload in tree else workload
        raise UnknownWorkloadError(workload, root=top if top != workload else None)
    pods = tuple(p for p in snapshot.pods if p.node is not None or root_of(tree, p) == chosen)
    return replace(snapshot, pods=pods)


def reaches_ideal(problem: Problem, assignment: Assignment) -> bool:
    """True when ``assignment`` meets every tier's trivial bound (firstAvailable included), so
    it is optimal."""
    return score(problem, assignment) == trivial_bound(problem)


def plan(snapshot: Reading, options: PlanOptions = PlanOptions()) -> Plan:
    """The plan, verified. Once ``options.stop`` is set (the caller has gone) every phase ends
    at its next checkpoint with ``stopping.Stopped`` (a CEL evaluation with CelInterrupted):
    no plan. The time limit, not the stop, is how a caller asks for the best plan so far; CEL
    selectors still evaluating when it passes end the plan with ``cel.CelTimeLimitError`` (a
    LimitError naming the selector and the time it took)."""
    with stopping.watching(options.stop):
        return _plan(snapshot, options)


# The time limit is a deadline for the whole plan (docs/performance.md, "The deadline"). The
# hint may take this share of it; the model is built only when its estimated build time fits
# in half of what is left; the search ends early enough to leave this share for the fallback,
# decoding and verifying.
HINT_SHARE = 0.3
DOMAINS_HINT_SHARE = 0.1  # one workload solved per domain: the whole cluster's hint is for the ideal shortcut
RESERVE_SHARE = 0.1
BUILD_SECONDS_PER_VARIABLE = 50e-6  # twice the rate measured on contention-5000 (0.9 M in 21 s)
BUILD_SECONDS_PER_WORKLOAD = 25e-6  # twice the rate measured on 100,000 standalone pods (1.2 s)
BASELINE_PER_HINT = 5  # upstream's walk against the hint's, measured on scale-1000 (2.4 s and 0.47 s)
# the first tier's domain bound (bounds/domains.py) may take this share of the limit, out of
# what the fallback would have: on contention-5000 it takes 0.9 s (soft) to 2.5 s (strict), all
# three levels proven
DOMAIN_BOUND_SHARE = 0.2
CHOSEN_SHARE = 0.3  # at most this share of the limit for the chosen workloads' exact placement
DOMAIN_BOUND_MIN_SECONDS = 1.0  # less is not worth its build


_NOTHING = Assignment(counts={}, evicted=frozenset())  # nothing placed, nothing evicted


def _build_estimate(problem: Problem) -> float:
    """Seconds building the whole model should take, at BUILD_SECONDS_PER_VARIABLE a count and
    BUILD_SECONDS_PER_WORKLOAD a workload (its satisfied literal and tiers)."""
    return sum(len(c) for c in problem.candidates) * BUILD_SECONDS_PER_VARIABLE + \
        len(problem.workloads) * BUILD_SECONDS_PER_WORKLOAD


def _hint_share(problem: Problem, options: PlanOptions) -> float:
    """The share of the time limit the hint may take: HINT_SHARE; DOMAINS_HINT_SHARE when the
    problem is solved per domain; most of it when no model could be built in time anyway, so
    that the hint, which is then the plan, reaches as many workloads as it can."""
    if options.decompose and decompose.root_key(problem) is not None:
        return DOMAINS_HINT_SHARE  # each domain gets a hint of its own; this one is for the shortcut
    return HINT_SHARE if _build_estimate(problem) <= options.time_limit / 2 else 1 - RESERVE_SHARE * 2


class _Deadline:
    """The plan's clock: seconds left of the time limit, and whether the caller stopped."""

    def __init__(self, limit: float, stop: threading.Event | None) -> None:
        self.start, self.limit, self.stop = time.perf_counter(), limit, stop

    def left(self) -> float:
        return self.limit - (time.perf_counter() - self.start)

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def passed(self, share: float = 1.0) -> bool:
        """Past ``share`` of the limit, or stopped."""
        return (time.perf_counter() - self.start) >= self.limit * share or \
            (self.stop is not None and self.stop.is_set())


def _plan(snapshot: Reading, options: PlanOptions) -> Plan:
    if options.workload:
        snapshot = select_workload(snapshot, options.workload)
    start = time.perf_counter()
    clock = _Deadline(options.time_limit, options.stop)
    cut: list[str] = []  # what the deadline cut, in the order it was cut (stats.cut)
    with without_gc():  # not around the solve: a server's other threads keep collecting then
        stopping.checkpoint("reading")
        # CEL selectors are evaluated here, and cannot be cut short as the search can: past the
        # deadline the problem cannot be built, CelTimeLimitError naming the selector
        with cel.within(clock.start + options.time_limit, options.time_limit):
            problem = build_problem(snapshot, pdb_policy=options.pdb_policy, gates=options.gates,
                                    dra_preemption=options.dra_preemption, expected=options.expected,
                                    seed=options.seed)
        problem_done = time.perf_counter()
        stopping.checkpoint("the problem")
        # the solver's hint (fullest nodes first); with baseline_only, upstream's choice of nodes
        # the strict floor, given up (no proof) when the limit is near
        floor = None if options.baseline_only else \
            floors.strict_floor(problem, stop=lambda: clock.passed(1 - 1.5 * RESERVE_SHARE))
        blocked = floor is not None
        if options.baseline_only:
            baseline = greedy.baseline(problem)
        elif blocked:
            baseline = _NOTHING  # proven below: nothing can be placed
        else:
            share = _hint_share(problem, options)
            if clock.passed(share):
                # building the problem took the hint's share: the hint gets its share of what is
                # left, since without it the plan may place nothing where pods fit (issue 50:
                # 100,000 pods, 0 placed where 8 fit)
                done = clock.elapsed() / clock.limit
                share = done + (1 - done) * HINT_SHARE if done < 1 - 2 * RESERVE_SHARE else done
            baseline = _NOTHING if clock.passed(share) else \
                greedy.hint(problem, stop=lambda: clock.passed(share))
            if clock.passed(share):
                cut.append("hint")  # the workloads not reached by then are left out of the hint
        stopping.checkpoint("the hint")
    baseline_seconds = time.perf_counter() - start
    # where a plan's time goes, for the bench's profile (everything after the snapshot is read)
    phases: dict[str, float] = {"problem": problem_done - start, "hint": time.perf_counter() - problem_done}
    stats: dict[str, object] = {
        "nodes": len(snapshot.nodes),
        "runningPods": sum(1 for p in snapshot.pods if p.node is not None),
        "pendingPods": sum(1 for p in snapshot.pods if p.node is None),
        "podClasses": len(problem.classes),
        "victimUnits": len(problem.units),
        "skippedKinds": dict(snapshot.skipped_kinds),
        "workers": options.workers,
        "seed": options.seed,
        "pdbPolicy": options.pdb_policy,
        "featureGates": format_feature_gates(options.gates),
        "draPreemption": options.dra_preemption,
        "baselineSeconds": round(baseline_seconds, 4),
        "timeLimit": options.time_limit,
    }
    trivial = trivial_bound(problem)
    decode: Callable[[], Plan]
    if not options.baseline_only and options.ideal_shortcut and reaches_ideal(problem, baseline):
        # every workload satisfied, every pod placed, nothing evicted, every claim on its first
        # entry: no plan can be better, so this is proven optimal without a model
        stats.update({"solver": "baseline-at-ideal", "buildSeconds": 0.0, "solveSeconds": 0.0,
                      "variables": 0, "constraints": 0})
        decode = partial(make_plan, problem, baseline, bound=trivial, stats=stats)
    elif options.baseline_only:
        stats.update({"solver": "baseline", "buildSeconds": 0.0, "solveSeconds": 0.0, "variables": 0, "constraints": 0})
        # the greedy proves nothing: its bound is the trivial one
        decode = partial(make_plan, problem, baseline, bound=trivial, stats=stats)
    elif blocked:
        # strict: the one workload needs more budget-counted evictions than the budgets allow,
        # so the best plan places nothing (solver/model/bounds/floors.py), proven without a model
        stats.update({"solver": "strict-floor", "buildSeconds": 0.0, "solveSeconds": 0.0,
                      "variables": 0, "constraints": 0})
        assert floor is not None
        decode = partial(make_plan, problem, _NOTHING, bound=score(problem, _NOTHING), stats=stats,
                         would_take={problem.workloads[0].index: floors.would_take(problem, floor)})
    else:
        decode = _solved(problem, options, clock, baseline, stats, phases, cut)
    if cut:
        stats["cut"] = cut
    # decoding (a reason per workload) and verifying in one pause of the collector: 100,000
    # workloads spent 1.2 s of 2.1 in collections decoding, and a pause apiece started two
    # full collections of 0.2 s each
    with without_gc(collect=False):
        decode_start = time.perf_counter()
        result = decode()
        phases["decode"] = time.perf_counter() - decode_start
        stopping.checkpoint("decoding")
        verify_start = time.perf_counter()
        violations = verify_mod.verify(snapshot.facts, snapshot, result, strict_pdbs=options.pdb_policy == "strict",
                                       gates=options.gates, dra_preemption=options.dra_preemption)
    if violations:
        raise PlanInvalidError(violations)
    phases["verify"] = time.perf_counter() - verify_start
    stats["phaseSeconds"] = {name: round(seconds, 4) for name, seconds in phases.items()}
    return result


def _solved(problem: Problem, options: PlanOptions, clock: _Deadline, hint: Assignment, stats: dict[str, object],
            phases: dict[str, float], cut: list[str]) -> Callable[[], Plan]:
    """Build, solve within what the deadline leaves, fall back where that was cut short; the
    decoding of the plan chosen, to call. Degrades in this order as time runs out: the model not built (the hint is the
    plan), the search shortened, upstream's baseline not re-run for the fallback."""
    search = max(0.0, clock.left() - options.time_limit * RESERVE_SHARE)
    params = SolveParams(time_limit=max(search, 0.001), workers=options.workers, seed=options.seed,
                         relative_gap=options.relative_gap, stop=options.stop, on_solution=options.on_solution)
    key = decompose.root_key(problem) if options.decompose else None
    if key is not None and not decompose.domains(problem, key):
        key = None  # nothing can land anywhere: the whole model is trivial
    solved: SolveResult | None = None
    size = (0, 0, 0.0)
    if key is not None:
        parts = decompose.solve_by_domain(problem, params, key)
        solved = parts.result
        size = (parts.variables, parts.constraints, parts.build_seconds)
        stats["decomposedBy"] = {"key": key, "domains": parts.domains}
    elif search <= 0.01 or _build_estimate(problem) > search / 2 or clock.passed():
        cut.append("model")  # no time to build it, let alone search it: the hint is the plan
    else:
        built = build_model(problem, max_variables=options.max_variables)
        size = (built.variables, built.constraints, built.build_seconds)
        stopping.checkpoint("the model")
        left = clock.left() - options.time_limit * RESERVE_SHARE
        solved = solve(built, replace(params, time_limit=max(left, 0.001)), hint=hint)
    stopping.checkpoint("the search")
    trivial = trivial_bound(problem)
    stats.update({
        "solver": "cp-sat" if solved is not None else "hint",
        "buildSeconds": round(size[2], 4),
        "solveSeconds": round(solved.solve_seconds if solved else 0.0, 4),
        "variables": size[0],
        "constraints": size[1],
        "stages": list(solved.stages) if solved else [],
    })
    phases.update(build=size[2], solve=solved.solve_seconds if solved else 0.0)
    fallback_start = time.perf_counter()
    with without_gc(collect=False):  # scoring 100,000 workloads under the collector took 0.4 s more
        scored: dict[int, Tiers] = {}  # by the assignment's id: each is scored once (0.1 s at 100,000 workloads)

        def tiers_of(a: Assignment) -> Tiers:
            if id(a) not in scored:
                scored[id(a)] = score(problem, a)
            return scored[id(a)]

        assignment = solved.assignment if solved else None
        bound = solved.bound if solved else trivial
        if assignment is not None and assignment.evicted and (solved is None or solved.status != OPTIMAL):
            assignment = greedy.put_back(problem, assignment)  # see constraints/preemption.py
        cut_short = solved is None or solved.status != OPTIMAL
        fallbacks = [hint]
        # the first tier unproven: room bounds it, for every workload at once, and so do the
        # domains a gang must fit in (a relaxation whose solution also chooses workloads and
        # their domains), within a share of the limit and before the reserve
        unproven = tiers_of(assignment if assignment is not None else hint).satisfied != bound.satisfied
        choice = domains.Choice()
        if unproven and not clock.passed(1 - RESERVE_SHARE):
            tables = room.Tables(problem)  # the cluster's arrays, read by both bounds
            choice = _domain_choice(problem, options, clock, tables)
            bound = min(bound, replace(trivial, satisfied=room.satisfied_bound(problem, choice.caps, tables)))
            if choice.placed is not None:
                # a plan satisfying the caps at every priority places at most the relaxation's
                # most pods there (the later tiers then keep their trivial bounds)
                caps = tuple((p, choice.caps[p]) for p, _ in trivial.satisfied)
                bound = min(bound, Tiers(satisfied=caps, placed=choice.placed))
        # the two-level search (issue 51, item 3): the hint's walk again, the relaxation's
        # workloads first, each in the domain it chose, when a walk as long as the hint's fits
        # before half the reserve; then the chosen workloads alone, each on its domain's nodes,
        # placed exactly (a model of their classes × those nodes), when its build fits in half of
        # its share (CHOSEN_SHARE of the limit, before the reserve)
        guided: Assignment | None = None
        if cut_short and choice.where and \
                clock.left() - options.time_limit * RESERVE_SHARE / 2 > phases["hint"]:
            guided_start = time.perf_counter()
            fallbacks.append(guided := greedy.guided(problem, choice.where,
                                                     stop=lambda: clock.passed(1 - RESERVE_SHARE / 2)))
            stats["guidedSeconds"] = round(time.perf_counter() - guided_start, 4)  # inside the fallback phase
        chosen: Assignment | None = None
        share = min(CHOSEN_SHARE * options.time_limit, clock.left() - options.time_limit * RESERVE_SHARE)
        if cut_short and choice.where and share > 0 and \
                _build_estimate(sub := _chosen(problem, choice.where)) < share / 2:
            chosen_start = time.perf_counter()
            built_sub = build_model(sub)
            if (left := share - (time.perf_counter() - chosen_start)) > 0:
                exact = solve(built_sub, replace(params, time_limit=left, on_solution=None))
                if exact.assignment is not None:
                    fallbacks.append(chosen := exact.assignment)
            stats["chosenSeconds"] = round(time.perf_counter() - chosen_start, 4)  # inside the fallback phase
        # upstream's choice, as far as it gets before half the reserve is left; it cannot stop
        # inside a workload and scores every pod over sampled nodes (measured at up to 5 times
        # the hint's walk), so it is not started without that much time left (a hint the
        # deadline cut says nothing of how long a whole walk takes); an optimum is never worse
        walk = cut_short and "hint" not in cut and \
            clock.left() - options.time_limit * RESERVE_SHARE / 2 > BASELINE_PER_HINT * phases["hint"]
        if cut_short:
            if walk:
                fallbacks.append(greedy.baseline(problem, stop=lambda: clock.passed(1 - RESERVE_SHARE / 2)))
            if clock.passed(1 - RESERVE_SHARE / 2) or not walk:
                cut.append("baselineFallback")
        for fallback in fallbacks:
            if assignment is None or tiers_of(assignment) < tiers_of(fallback):
                # a hint alone does not guarantee the solver keeps the hint's or the baseline's quality
                assignment, stats["fromBaseline"] = fallback, True
        assert assignment is not None  # the fallbacks hold the hint at least
        for taken, flag in ((guided, "fromGuided"), (chosen, "fromChosen")):
            if taken is not None and assignment is taken:
                stats[flag] = True
    phases["fallback"] = time.perf_counter() - fallback_start
    found = tiers_of(assignment)
    # the bound is the problem's, whichever plan is returned; a fallback above it means the model
    # refused a plan the verifier accepts, and then nothing is claimed
    if bound < found:
        bound, stats["boundDropped"] = trivial, True
    return partial(make_plan, problem, assignment, bound=bound, stats=stats)


def _chosen(problem: Problem, where: dict[int, frozenset[s.NodeName] | None]) -> Problem:
    """The problem with only the chosen workloads' classes placeable, each on its domain's
    nodes (a keyless workload's on all its own)."""
    cut: list[dict[s.NodeName, int]] = [{} for _ in problem.candidates]
    for w, nodes in where.items():
        for c in problem.workloads[w].classes:
            cut[c] = {n: k for n, k in problem.candidates[c].items() if nodes is None or n in nodes}
    return replace(problem, candidates=tuple(cut))


def _domain_choice(problem: Problem, options: PlanOptions, clock: _Deadline,
                   tables: room.Tables | None) -> domains.Choice:
    """The domain bound's levels and choice (bounds/domains.py) in its share of the limit,
    before the reserve; none when that is under DOMAIN_BOUND_MIN_SECONDS."""
    seconds = min(DOMAIN_BOUND_SHARE * options.time_limit, clock.left() - options.time_limit * RESERVE_SHARE)
    if seconds < DOMAIN_BOUND_MIN_SECONDS:
        return domains.Choice()
    return domains.choose(problem, seconds, tables)


@dataclass(frozen=True, slots=True, kw_only=True)
class Size:
    """One gang size of an elastic gang (a PodGroup's minCount), planned alone: placed under the
    options' policy or not (``proven``: no plan can), and what its plan under soft budgets
    would take (the budgets it breaks, the pods it evicts)."""

    min_count: int
    satisfied: bool
    proven: bool
    reason: str
    budgets: tuple[BudgetNeed, ...] = ()
    evictions: int = 0

    def to_dict(self) -> dict[str, object]:
        return {"minCount": self.min_count, "satisfied": self.satisfied, "proven": self.proven,
                "reason": self.reason, "evictions": self.evictions, "budgets": _budgets(self.budgets)}


def _budgets(needs: tuple[BudgetNeed, ...]) -> list[dict[str, object]]:
    return [{"budget": b.budget, "allowed": b.allowed, "needed": b.needed} for b in needs]


@dataclass(frozen=True, slots=True, kw_only=True)
class Explanation:
    """What it would take to place one pending workload that strict budgets leave out: the
    least set of budget relaxations (from the soft optimum of that workload alone) and the
    evictions that plan makes. ``proven`` when that optimum's PDB tier is proven minimal."""

    workload: str
    satisfied: bool  # under the options' own policy
    satisfied_soft: bool  # by the soft plan of the workload alone
    budgets: tuple[BudgetNeed, ...]  # only those the soft plan breaks
    evictions: tuple[str, ...]
    proven: bool
    reason: str  # the workload's reason under the options' policy ("" when satisfied)
    # an elastic gang (a root PodGroup with a gang minCount above 1): its minCount, the largest
    # minCount that places it now under the options' policy (0: none), and the sizes above
    # that one by one, each planned alone (``Size``); None / () for any other workload
    min_count: int | None = None
    largest_min_count: int | None = None
    larger: tuple[Size, ...] = ()
    larger_omitted: int = 0  # sizes between those in ``larger`` not planned (MAX_SIZES; above the pod count)

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "workload": self.workload, "satisfied": self.satisfied, "satisfiedSoft": self.satisfied_soft,
            "budgets": _budgets(self.budgets), "evictions": list(self.evictions), "proven": self.proven,
            "reason": self.reason}
        if self.min_count is not None:
            out.update(minCount=self.min_count, largestMinCount=self.largest_min_count,
                       larger=[z.to_dict() for z in self.larger], largerOmitted=self.larger_omitted)
        return out


def explain(snapshot: Reading, workload: str, options: PlanOptions = PlanOptions()) -> Explanation:
    """Plan ``workload`` alone under the options' policy and under soft budgets: when soft
    places it, the budgets its plan breaks (allowed now, evicted by it) are the least
    relaxation that lets it in, proven so when the soft plan's PDB tier is proven. Each plan
    has the options' time limit and is verified."""
    alone = replace(options, workload=workload, on_solution=None)
    group = snapshot.group_by_key().get(s.GroupKey(workload))
    members = [p for p in snapshot.pods if group is not None and p.group == group.key]
    if group is not None and group.parent is None and members and all(p.node is not None for p in members):
        return _running(group, len(members))  # a gang that runs whole
    verdict = plan(snapshot, alone).workloads[0]
    soft, evicted, needs = _soft(snapshot, workload, alone)
    # proven when the soft plan's tiers 1-3 (satisfied, placed, PDB violations) equal their bounds
    proven = soft.workloads[0].satisfied and soft.objective.gap_tier not in TIER_NAMES[:3]
    found = Explanation(workload=workload, satisfied=verdict.satisfied, satisfied_soft=soft.workloads[0].satisfied,
                        budgets=needs, evictions=tuple(sorted(evicted)), proven=proven,
                        reason=without_taking(verdict))
    if group is None or group.kind != s.POD_GROUP or group.min_count is None or group.min_count < 2:
        return found
    largest, larger, omitted = _largest_min_count(snapshot, group, verdict.satisfied, alone)
    return replace(found, min_count=group.min_count, largest_min_count=largest, larger=larger,
                   larger_omitted=omitted)


MAX_SIZES = 8  # elastic sizes above the largest that fits planned one by one (each two plans)


def _running(group: s.Group, running: int) -> Explanation:
    """A root group every pod of which runs: nothing to place, so nothing to take; as an
    elastic gang, the largest minCount it meets now is the pods it runs, and a larger one
    needs pods it does not have."""
    elastic = group.kind == s.POD_GROUP and group.min_count is not None and group.min_count >= 2
    return Explanation(
        workload=str(group.key), satisfied=running >= (group.min_count or 1), satisfied_soft=True, budgets=(),
        evictions=(), proven=True,
        reason=f"every pod of it runs ({running}): a larger gang needs more pods; create them pending to ask "
               "what placing them would take",
        min_count=group.min_count if elastic else None, largest_min_count=running if elastic else None)


def _soft(snapshot: Reading, workload: str, alone: PlanOptions) -> tuple[Plan, set[str], tuple[BudgetNeed, ...]]:
    """``workload`` planned alone (``alone``) under soft budgets: the plan, the pods it evicts
    and the budgets those evictions break (allowed now, needed)."""
    soft = plan(snapshot, replace(alone, pdb_policy="soft"))
    evicted = {e.pod for e in soft.evictions}
    problem = build_problem(select_workload(snapshot, workload), pdb_policy="soft", gates=alone.gates,
                            dra_preemption=alone.dra_preemption)
    needs = budget_needs(problem, (u for u, unit in enumerate(problem.units)
                                   if any(p.key in evicted for p in unit.members)))
    return soft, evicted, needs


def _sized(snapshot: Reading, group: s.Group, min_count: int) -> Reading:
    """``snapshot`` with ``group``'s gang minCount set to ``min_count`` (both readers: the
    verifier judges the gang rule from the snapshot's groups)."""
    groups = tuple(replace(g, min_count=min_count) if g.key == group.key else g for g in snapshot.groups)
    return with_facts(replace(snapshot, groups=groups), snapshot.facts)


def _largest_min_count(snapshot: Reading, group: s.Group, satisfied: bool,
                       alone: PlanOptions) -> tuple[int, tuple[Size, ...], int]:
    """The largest minCount that places the elastic gang now (binary search: a gang that fits
    at k fits at every smaller k, its plan dropping pods; none above the group's pod count
    fits), then the sizes above it planned under the policy and under soft budgets (what each
    would take): the MAX_SIZES nearest ones the group has pods for, and its own minCount. And
    how many sizes in between were left out."""
    top = group.min_count or 1
    pods = sum(1 for p in snapshot.pods if p.group == group.key)  # running and pending: no size above fits
    # placed: from its own minCount up to every pod it has (a gang a controller shrank may grow
    # back); not: below its own
    low, high = (top, pods) if satisfied else (0, min(top - 1, pods))  # low fits (0: trivially)
    while low < high:
        mid = (low + high + 1) // 2
        if plan(_sized(snapshot, group, mid), alone).workloads[0].satisfied:
            low = mid
        else:
            high = mid - 1
    larger = []
    listed = range(low + 1, min(max(top - 1, pods) if satisfied else top - 1, pods, low + MAX_SIZES) + 1)
    for k in (*listed, *([top] if top > low else [])):  # the nearest sizes above, then the gang's own
        sized = _sized(snapshot, group, k)
        own = plan(sized, alone).workloads[0]
        soft, evicted, needs = _soft(sized, str(group.key), alone)
        fits_soft = soft.workloads[0].satisfied
        larger.append(Size(min_count=k, satisfied=own.satisfied, proven=own.proven, reason=without_taking(own),
                           budgets=needs if fits_soft else (), evictions=len(evicted) if fits_soft else 0))
    # a time limit may cut a search plan short of a size a later plan places: the largest placed wins
    omitted = max(0, (pods if satisfied else top) - low - len(larger))
    return max([low, *(z.min_count for z in larger if z.satisfied)]), tuple(larger), omitted
