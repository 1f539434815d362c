"""Upstream's order of victims and its PDB classification, for the greedy (framework/preemption/
util.go): which victim is more important (``importance``, ``victim_rank``), which victims a
preemption counts as violating a budget (``pdb_violating``), and which fit the budgets
(``within_budgets``). Worked out once per set of victim units where it can be (``PerUnits``):
every domain's sub-problem of a decomposition shares its cluster's units.

Pure: no I/O.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

from solver.core import snapshot as s
from solver.core.stopping import checkpoint
from solver.filters import selectors
from solver.problem.assignment import pdb_taken
from solver.problem.build import Problem
from solver.problem.workloads import VictimUnit, Workload

T = TypeVar("T")


def victim_rank(problem: Problem, unit: VictimUnit) -> int:
    """victimRank (framework/preemption/util.go): a CompositePodGroup victim 3, a PodGroup 2, a
    pod 1; a pod with a scheduling group that is its own victim (a `single` group) ranks as a
    PodGroup, as NewPodVictim types it."""
    group = problem.groups.get(s.GroupKey(unit.key))
    if group is not None:
        return 3 if group.kind == s.COMPOSITE_POD_GROUP else 2
    return 2 if unit.members[0].group is not None else 1


def importance(problem: Problem, u: int) -> tuple[object, ...]:
    """MoreImportantVictim's order (framework/preemption/util.go), most important first:
    higher priority, then victim rank, then more pods, then the earlier start; the unit key
    breaks the ties upstream leaves to sort.Slice."""
    unit = problem.units[u]
    return (-unit.priority, -victim_rank(problem, unit), -len(unit.members), unit.start_time, unit.key)


class PerUnits(Generic[T]):
    """A value worked out for one set of units, kept with them: the per-domain sub-problems of
    a decomposition share their Problem's units, so it is worked out once, not once per
    preemption. Read and replaced as one tuple, so a concurrent solve never sees another's."""

    def __init__(self) -> None:
        self._hit: tuple[tuple[VictimUnit, ...], T] | None = None

    def get(self, problem: Problem, work: Callable[[], T]) -> T:
        hit = self._hit
        if hit is not None and hit[0] is problem.units:
            return hit[1]
        value = work()
        self._hit = (problem.units, value)
        return value


_RANK: PerUnits[list[int]] = PerUnits()


_COVERED: PerUnits[dict[s.PdbKey, _Ranked]] = PerUnits()
_COUNTED: PerUnits[list[dict[s.PdbKey, int]]] = PerUnits()


def classified_counts(problem: Problem) -> list[dict[s.PdbKey, int]]:
    """Per unit, its pods each budget counts in FilterVictimsWithPDBViolation (util.go): a
    budget with an empty selector matches nothing, and a pod without labels is never counted,
    whatever its budgets' selectors say (``podIsViolating``). The scheduler's own view, under
    either policy: not what the Eviction API would spend (``problem.eviction_api``)."""

    def work() -> list[dict[s.PdbKey, int]]:
        live = [b for b in problem.snapshot.pdbs if b.selector.match_labels or b.selector.match_expressions]
        out = []
        for unit in problem.units:
            if not unit.index % 256:
                checkpoint("the victims' budgets")  # a stop leaves nothing cached: get stores on return
            counts: dict[s.PdbKey, int] = defaultdict(int)
            for pod in unit.members:
                if not pod.labels:
                    continue
                for b in live:
                    if b.namespace == pod.namespace and selectors.label_selector_matches(b.selector, pod.labels):
                        counts[b.key] += 1
            out.append(dict(counts))
        return out

    return _COUNTED.get(problem, work)


def importance_rank(problem: Problem) -> list[int]:
    """rank[u]: the unit's place in ``importance`` order, worked out once per set of units."""

    def work() -> list[int]:
        rank = [0] * len(problem.units)
        for i, u in enumerate(sorted(range(len(problem.units)), key=lambda u: importance(problem, u))):
            rank[u] = i
        return rank

    return _RANK.get(problem, work)


def pdb_violating(problem: Problem, victims: Iterable[int], potential: Potential | None = None) -> set[int]:
    """Which ``victims`` FilterVictimsWithPDBViolation (framework/preemption/util.go) classifies
    as violating: each budget's disruptionsAllowed is spent over the pods of every potential
    victim (``potential``, else the victims alone) in importance order, and a victim with a pod
    beyond a budget violates. A budget with an empty selector matches nothing there. Spent per
    victim from its per-budget counts: a pod under two budgets spends both, where upstream stops
    at the first one it exhausts (the only difference, and only for such pods)."""
    units = problem.units
    counted = classified_counts(problem)
    live = {p.key: p.disruptions_allowed for p in problem.snapshot.pdbs
            if p.selector.match_labels or p.selector.match_expressions}
    mine = sorted(set(victims), key=importance_rank(problem).__getitem__)
    out: set[int] = set()
    if potential is None:  # only the victims spend, most important first
        for u in mine:
            for pdb, n in counted[u].items():
                if pdb in live:
                    live[pdb] -= n
                    if live[pdb] < 0:
                        out.add(u)
        return out
    ranked = _covered_in_order(problem)
    gone: dict[s.PdbKey, tuple[list[int], list[int]]] = {}  # per budget: positions evicted before, cumulated counts

    def spent_before(pdb: s.PdbKey, r: _Ranked, lo: int, hi: int) -> int:
        if pdb not in gone:
            pairs = sorted((r.pos[b], counted[b][pdb]) for b in potential.before
                           if b in r.pos and not units[b].protected)
            cumulated = [0]
            for _, n in pairs:
                cumulated.append(cumulated[-1] + n)
            gone[pdb] = ([j for j, _ in pairs], cumulated)
        positions, cumulated = gone[pdb]
        return cumulated[bisect.bisect_left(positions, hi)] - cumulated[bisect.bisect_left(positions, lo)]

    for u in mine:
        for pdb, n in counted[u].items():
            if pdb not in live:
                continue
            r = ranked[pdb]
            i = r.pos[u]
            # the potential victims before u under this budget: below the preemptor's power (a
            # suffix of the priority-descending order), not protected, not evicted already
            first = min(bisect.bisect_left(r.neg_priority, -potential.top + 1), i)
            spent = r.prefix[i] - r.prefix[first] - spent_before(pdb, r, first, i)
            if live[pdb] - spent - n < 0:
                out.add(u)
    return out


@dataclass(frozen=True, slots=True)
class _Ranked:
    """The units one budget covers, in importance order: each unit's position, the cumulated
    counts of the unprotected ones before each position, and the (descending) priorities."""

    pos: dict[int, int]
    prefix: list[int]
    neg_priority: list[int]


def _covered_in_order(problem: Problem) -> dict[s.PdbKey, _Ranked]:
    """Per budget, the units it covers ranked (once per set of units)."""

    def work() -> dict[s.PdbKey, _Ranked]:
        counted = classified_counts(problem)
        by_pdb: dict[s.PdbKey, list[int]] = defaultdict(list)
        for u in sorted((u.index for u in problem.units if counted[u.index]), key=importance_rank(problem).__getitem__):
            for pdb in counted[u]:
                by_pdb[pdb].append(u)
        ranked = {}
        for pdb, order in by_pdb.items():
            checkpoint("the victims' budgets")
            prefix = [0]
            for u in order:
                unit = problem.units[u]
                prefix.append(prefix[-1] + (0 if unit.protected else counted[u][pdb]))
            ranked[pdb] = _Ranked(pos={u: i for i, u in enumerate(order)}, prefix=prefix,
                                  neg_priority=[-problem.units[u].priority for u in order])
        return ranked

    return _COVERED.get(problem, work)


@dataclass(frozen=True, slots=True)
class Potential:
    """Upstream's potential victims for the PDB classification: every unit cluster-wide that the
    preemptor may preempt (below its strongest power, not protected) and that was not evicted
    before this preemption, plus the candidates themselves."""

    top: int
    before: frozenset[int]  # evicted before this preemption (by earlier workloads)

    @staticmethod
    def of(problem: Problem, workload: Workload, evicted: Iterable[int]) -> Potential | None:
        powers = [p for c in workload.classes if (p := problem.classes[c].power) is not None]
        return Potential(max(powers), frozenset(evicted)) if powers else None


def within_budgets(problem: Problem, evicted: Iterable[int], victims: list[int]) -> list[int]:
    """The victims, lowest priority first, each taken while every budget it is under has room
    (``evicted`` already spent theirs)."""
    order = sorted(victims, key=lambda u: (problem.units[u].priority, problem.units[u].key))
    if not any(problem.units[u].pdb_counts for u in order):  # under no budget: every one (and no
        return order  # count of what the evictions before spent, which grows with them)
    taken = pdb_taken(problem, evicted)
    allowed = _allowed(problem)
    out = []
    for u in order:
        counts = problem.units[u].pdb_counts
        if all(taken[p] + n <= allowed[p] for p, n in counts.items()):
            out.append(u)
            for p, n in counts.items():
                taken[p] += n
    return out


def breaks_a_pdb(problem: Problem, evicted: Iterable[int]) -> bool:
    """Do these evictions take more from some budget than it allows?"""
    allowed = _allowed(problem)
    return any(n > allowed[p] for p, n in pdb_taken(problem, evicted).items())


def _allowed(problem: Problem) -> dict[str, int]:
    return {p.key: p.allowed for p in problem.snapshot.pdbs}
