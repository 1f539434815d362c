"""Assignments: what a solver decides, and how it scores.

An ``Assignment`` is how many pods of each class go to each node, which victim units are
evicted, and (DRA) which devices each placed class and each shared claim takes, in device
types. ``evaluate`` and ``score`` read every tier from the assignment itself, for the CP-SAT
model and the greedy baseline alike (the solver's objective value is never trusted for it).
Pure: no I/O.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from solver.core import snapshot as s
from solver.core.plan import BudgetNeed, Tiers
from solver.problem.build import Problem
from solver.problem.dra import AllocKey, Counts


@dataclass(frozen=True, slots=True, kw_only=True)
class Assignment:
    counts: Mapping[tuple[int, s.NodeName], int]  # (class, node) -> pods bound, only > 0
    evicted: frozenset[int]  # victim unit indices
    # DRA: (class, node) -> devices taken per allocation key, only > 0
    devices: Mapping[tuple[int, s.NodeName], Counts] = field(default_factory=dict)
    # shared claim index -> devices taken per allocation key, only > 0
    shared: Mapping[int, Counts] = field(default_factory=dict)


# ---- evaluation ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Evaluation:
    new: dict[s.GroupKey, int]  # pods bound under each group (subtree)
    ok: dict[s.GroupKey, bool]
    satisfied: dict[int, bool]  # per workload index
    placed: int
    pdb_violations: int
    cost_milli: int
    evicted_pods: int
    first_available: int = 0  # Σ rank of the firstAvailable entry each claim request takes


def evaluate(problem: Problem, assignment: Assignment) -> Evaluation:
    per_class: dict[int, int] = defaultdict(int)
    for (c, _), n in assignment.counts.items():
        per_class[c] += n
    new: dict[s.GroupKey, int] = {}
    ok: dict[s.GroupKey, bool] = {}
    satisfied: dict[int, bool] = {}
    for w in problem.workloads:
        for key in reversed(w.groups):
            group = problem.groups[key]
            new[key] = sum(per_class[c] for c in problem.classes_under(key) if c in per_class)
            ok[key] = group_ok(problem, group, new[key], ok)
        if w.kind == s.STANDALONE_POD:  # the first pods of its (maybe pooled) class are the ones bound
            satisfied[w.index] = sum(per_class[c] for c in w.classes) > w.rank
            continue
        total = sum(per_class[c] for c in w.classes)
        satisfied[w.index] = total >= 1 and ok[w.groups[0]]
    evicted_by_pdb = pdb_taken(problem, assignment.evicted)
    violations = sum(max(0, evicted_by_pdb[p.key] - p.allowed) for p in problem.snapshot.pdbs)
    return Evaluation(
        new=new, ok=ok, satisfied=satisfied, placed=sum(per_class.values()),
        pdb_violations=violations,
        cost_milli=sum(problem.units[u].cost_milli for u in assignment.evicted),
        evicted_pods=sum(len(problem.units[u].members) for u in assignment.evicted),
        first_available=first_available(problem, assignment),
    )


def first_available(problem: Problem, assignment: Assignment) -> int:
    """The firstAvailable tier of ``assignment``: for every pod (or shared claim) and request
    with ``firstAvailable`` entries, the rank of the entry it takes among those usable where it
    runs (0: the first usable one), summed. The same sum the model's last stage minimises
    (constraints/devices.py), read back from the devices the assignment takes."""
    dra = problem.dra
    if not any(len(sl.request.alternatives) > 1 for slots in dra.class_slots for sl in slots) and \
            not any(len(sl.request.alternatives) > 1 for sh in dra.shared for sl in sh.slots):
        return 0
    total = 0
    for (c, node), took in assignment.devices.items():
        for j, slot in enumerate(dra.class_slots[c]):
            if len(slot.request.alternatives) < 2:
                continue
            opts = dra.options(slot, node)
            ranks = {a: r for r, a in enumerate(sorted({o.alt for o in opts}))}
            for o in opts:
                if not ranks[o.alt]:
                    continue
                taken = [took.get(AllocKey(j, o.alt, o.value, t), 0) for t in o.types]
                if slot.request.alternatives[o.alt].all_mode:
                    size = dra.types[o.types[0]].size
                    pods = taken[0] // size if size else 0
                else:
                    pods = sum(taken) // o.need if o.need else 0
                total += ranks[o.alt] * pods
    for i, took in assignment.shared.items():
        shared = dra.shared[i]
        sites = sorted({n for c in shared.users for n in problem.candidates[c]})
        for j, slot in enumerate(shared.slots):
            if len(slot.request.alternatives) < 2:
                continue
            alts = {o.alt for o in dra.options(slot, None) if not slot.request.alternatives[o.alt].all_mode}
            alts |= {o.alt for n in sites for o in dra.options(slot, n) if slot.request.alternatives[o.alt].all_mode}
            ranks = {a: r for r, a in enumerate(sorted(alts))}
            total += sum(ranks.get(a, 0) for a in {k.alt for k in took if k.slot == j})
    return total


def pdb_taken(problem: Problem, evicted: Iterable[int]) -> defaultdict[str, int]:
    """PDB key -> how many of its pods the evicted units take."""
    taken: defaultdict[str, int] = defaultdict(int)
    for u in evicted:
        for pdb, n in problem.units[u].pdb_counts.items():
            taken[pdb] += n
    return taken


def group_ok(problem: Problem, group: s.Group, new: int, ok: Mapping[s.GroupKey, bool]) -> bool:
    """The gang rule of one group, children already evaluated in ``ok``."""
    if group.kind == s.POD_GROUP:
        running = len(problem.running_in_group.get(group.key, ()))
        return running + new >= group.floor
    return sum(ok[child] for child in problem.tree.children(group.key)) >= group.floor


def budget_needs(problem: Problem, evicted: Iterable[int]) -> tuple[BudgetNeed, ...]:
    """The budgets the evicted units break, by key: each with its disruptionsAllowed and the
    pods of it they take."""
    taken = pdb_taken(problem, evicted)
    return tuple(BudgetNeed(budget=b.key, allowed=b.allowed, needed=taken[b.key])
                 for b in sorted(problem.snapshot.pdbs, key=lambda b: b.key) if taken[b.key] > b.allowed)


def satisfied_value(problem: Problem, ev: Evaluation) -> dict[int, int]:
    """Priority -> the satisfied workloads' values summed (every priority with a workload)."""
    by_priority: dict[int, int] = defaultdict(int)
    for w in problem.workloads:
        by_priority[w.priority] += w.value * ev.satisfied[w.index]
    return by_priority


def tiers(problem: Problem, ev: Evaluation) -> Tiers:
    by_priority = satisfied_value(problem, ev)
    return Tiers(tuple(sorted(by_priority.items(), reverse=True)), ev.placed, ev.pdb_violations, ev.cost_milli,
                 ev.evicted_pods, ev.first_available)


def score(problem: Problem, assignment: Assignment) -> Tiers:
    """The tiers of ``assignment``, compared as plans are (``Tiers``)."""
    return tiers(problem, evaluate(problem, assignment))


def trivial_bound(problem: Problem) -> Tiers:
    """The best tiers any plan could have: every workload satisfied, every pending pod placed,
    nothing evicted, every claim on its first entry. Proven by nothing, true of every plan."""
    levels: dict[int, int] = defaultdict(int)
    for w in problem.workloads:
        levels[w.priority] += w.value
    return Tiers(tuple(sorted(levels.items(), reverse=True)), sum(len(c.pods) for c in problem.classes))
