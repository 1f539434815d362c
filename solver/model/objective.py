"""The lexicographic objective of docs/design.md, as staged CP-SAT solves.

The tiers and their order are ``plan.Tiers``'s (satisfied workloads by priority, pods placed,
PDB violations, preemption cost in thousandths, evicted pods); the stages below optimise
them in that order, and ``STAGE_TIERS`` says which tiers each stage decides
(tests/model/test_objective_order.py holds the two together).

Implementation: staged solves. Stage 1 maximises tiers 1+2 as one weighted sum,
stage 2 minimises tier 3 with stage 1's value fixed, stage 3 minimises tiers
4+5 with tiers 1-3 fixed. Within a stage the weights are derived, never tuned:
each weight exceeds the largest possible value of everything below it. A stage
splits when its weighted sum would not fit comfortably in int64: stage 3 in two,
stage 1 into runs of priority levels (the strongest first), the last one with the
pods placed.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import Enum

from ortools.sat.python import cp_model

from solver.core.plan import TIER_NAMES, Tiers
from solver.model.vars import PlacementVars
from solver.problem.assignment import trivial_bound
from solver.problem.build import MILLI, Problem

INT64_SAFE = 2**62


class StageKind(Enum):
    """What a stage decides. Cutoffs, pruning, floors and bounds key on the kind, never on a
    stage's position or shape: a domain with no eviction has no PDB stage, and its second
    stage is ``FIRST_AVAILABLE``."""

    WORKLOADS_PODS = "workloads+pods"
    WORKLOADS = "workloads"  # stronger priority levels than WORKLOADS_PODS's, when one sum would not fit
    PDB = "pdbViolations"
    COST_EVICTED = "preemptionCost+evictedPods"
    COST = "preemptionCost"  # the cost alone: split from the evicted pods, or reaching its floor first
    EVICTED = "evictedPods"
    FIRST_AVAILABLE = "firstAvailable"


# the kinds of the first tier's stages (tiers 1+2, or tier 1's stronger levels)
TIER1_KINDS = frozenset({StageKind.WORKLOADS_PODS, StageKind.WORKLOADS})

# stage kind -> the plan.Tiers fields it decides, in the order the stages run
STAGE_TIERS: dict[StageKind, tuple[str, ...]] = {
    StageKind.WORKLOADS: ("satisfied",),
    StageKind.WORKLOADS_PODS: ("satisfied", "placed"),
    StageKind.PDB: ("pdb_violations",),
    StageKind.COST_EVICTED: ("cost_milli", "evicted"),
    StageKind.COST: ("cost_milli",),
    StageKind.EVICTED: ("evicted",),
    StageKind.FIRST_AVAILABLE: ("first_available",),
}


@dataclass(frozen=True, slots=True)
class Stage:
    kind: StageKind
    expr: cp_model.LinearExprT
    maximize: bool
    weights: tuple[int, ...]  # weight of each tier inside expr, highest first
    bounds: tuple[int, ...]  # largest possible value of each tier
    cost: cp_model.LinearExprT | None = None  # the preemption cost (tier 4), in the stage that decides it
    # WORKLOADS(_PODS): (priority, weight, most) per level, highest priority first, ``most`` the
    # level's greatest satisfied value (its workloads' values summed); WORKLOADS_PODS's pods
    # placed have weight 1 and at most ``pods``. ``others``: the levels other such stages decide
    levels: tuple[tuple[int, int, int], ...] = ()
    pods: int = 0
    others: frozenset[int] = frozenset()

    @property
    def name(self) -> str:
        return self.kind.value


def _tier1_levels(problem: Problem, vars: PlacementVars) -> list[tuple[int, list[tuple[int, cp_model.IntVar]]]]:
    """Per priority, ascending: (value, satisfied) of each workload the model decides."""
    by_priority: dict[int, list[tuple[int, cp_model.IntVar]]] = defaultdict(list)
    for w, sat in vars.all_satisfied():
        workload = problem.workloads[w]
        by_priority[workload.priority].append((workload.value, sat))
    return sorted(by_priority.items())


def stages(problem: Problem, vars: PlacementVars) -> list[Stage]:
    out = _tier_stages(problem, vars)
    picks = vars.alt_picks()
    if picks:  # below every tier: earlier firstAvailable entries (constraints/devices.py)
        most = sum(rank * list(var.proto.domain)[-1] for rank, var in picks)
        out.append(Stage(StageKind.FIRST_AVAILABLE, cp_model.LinearExpr.sum([r * v for r, v in picks]), False,
                         (1,), (most,)))
    return out


def _tier_stages(problem: Problem, vars: PlacementVars) -> list[Stage]:
    out = _tier1_stages(problem, vars)

    evictions = list(vars.evictions())
    if not evictions:
        return out
    violations = vars.all_pdb_violations()
    if violations:
        most = sum(problem.units[u].pdb_counts.get(p.key, 0) for u, _ in evictions for p in problem.snapshot.pdbs)
        out.append(Stage(StageKind.PDB, cp_model.LinearExpr.sum(violations), False, (1,), (most,)))
    cost = cp_model.LinearExpr.sum([problem.units[u].cost_milli * e for u, e in evictions])
    evicted = cp_model.LinearExpr.sum([len(problem.units[u].members) * e for u, e in evictions])
    most_cost = sum(problem.units[u].cost_milli for u, _ in evictions)
    most_evicted = sum(len(problem.units[u].members) for u, _ in evictions)
    if most_cost * (most_evicted + 1) + most_evicted < INT64_SAFE:
        out.append(
            Stage(StageKind.COST_EVICTED, (most_evicted + 1) * cost + evicted, False,
                  (most_evicted + 1, 1), (most_cost, most_evicted), cost)
        )
    else:
        out.append(Stage(StageKind.COST, cost, False, (1,), (most_cost,), cost))
        out.append(Stage(StageKind.EVICTED, evicted, False, (1,), (most_evicted,)))
    return out


def _tier1_stages(problem: Problem, vars: PlacementVars) -> list[Stage]:
    """Tiers 1+2 as weighted sums: the pods placed (weight 1), then each priority level from the
    weakest, its weight above the largest value of everything below it. A level that would take
    the sum past ``INT64_SAFE`` starts a stage of its own (kind WORKLOADS), decided before."""
    total_pods = sum(len(c.pods) for c in problem.classes)
    runs: list[tuple[list[cp_model.LinearExprT], list[tuple[int, int, int]], int]] = []
    terms: list[cp_model.LinearExprT] = [cp_model.LinearExpr.sum([v for _, v in vars.counts()])]
    levels: list[tuple[int, int, int]] = []
    weight = total_pods + 1
    for priority, sats in _tier1_levels(problem, vars):
        most = sum(value for value, _ in sats)
        if levels and weight * (most + 1) >= INT64_SAFE:  # close this run; the level starts the next
            runs.append((terms, levels, weight))
            terms, levels, weight = [], [], 1
        terms.append(weight * cp_model.LinearExpr.sum([value * sat for value, sat in sats]))
        levels.append((priority, weight, most))
        weight *= most + 1
    runs.append((terms, levels, weight))
    every = frozenset(p for _, run, _ in runs for p, _, _ in run)
    out = []
    for i, (terms, levels, weight) in enumerate(reversed(runs)):  # the strongest levels first
        mine = frozenset(p for p, _, _ in levels)
        last = i == len(runs) - 1
        out.append(Stage(StageKind.WORKLOADS_PODS if last else StageKind.WORKLOADS, cp_model.LinearExpr.sum(terms),
                         True, (), (weight,), levels=tuple(reversed(levels)), pods=total_pods if last else 0,
                         others=every - mine))
    return out


# ---- bounds ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StageBound:
    """What one stage decided: the value it found, and its proven bound (an upper bound for a
    maximised stage, a lower one for a minimised stage; equal when proven optimal)."""

    stage: Stage
    found: int
    bound: float

    @property
    def proven(self) -> bool:
        best = math.floor(self.bound + 1e-6) if self.stage.maximize else math.ceil(self.bound - 1e-6)
        return best == self.found


def lex_bound(problem: Problem, decided: Sequence[StageBound]) -> Tiers:
    """``lex_bound_from`` the problem's trivial bound."""
    return lex_bound_from(trivial_bound(problem), decided)


def lex_bound_from(trivial: Tiers, decided: Sequence[StageBound]) -> Tiers:
    """A lexicographic bound on the optimum from the stages decided, in order: each proven stage
    fixes its tiers at what it found; the first unproven one gives its proven bound, and every
    tier after it keeps the trivial best. A tier no stage decides (no eviction possible: no PDB
    or cost stage) is 0 in every plan, which the trivial best already says."""
    bound = trivial
    for done in decided:
        proven = done.proven
        fields = stage_tiers(done.stage, bound, done.found if proven else done.bound, exact=proven)
        bound = replace(bound, **fields)  # type: ignore[arg-type]  # the keys are Tiers' field names
        if not proven:
            break
    return bound


def stage_tiers(stage: Stage, trivial: Tiers, value: float, *, exact: bool) -> dict[str, object]:
    """The tiers a stage's value stands for, by ``Tiers`` field (``STAGE_TIERS[stage.kind]``):
    a solution's value (``exact``) decoded as it is; a proven bound as the best tiers it allows
    (rounded down for a maximised stage, up for a minimised one). The one decoding of the stages'
    weighted sums: the plan's bound (``lex_bound_from``) and the progress a solve reports.
    ``trivial``: the tiers so far (a first-tier level another stage decides keeps its value)."""
    if stage.kind in TIER1_KINDS:
        whole = round(value) if exact else math.floor(value + 1e-6)
        satisfied, placed = _decode_tier1(trivial, stage, whole)
        return {"satisfied": satisfied, "placed": placed} if stage.kind is StageKind.WORKLOADS_PODS \
            else {"satisfied": satisfied}
    if stage.kind is StageKind.COST_EVICTED:
        w, most_evicted = stage.weights[0], stage.bounds[1]
        if exact:
            cost, evicted = divmod(round(value), w)
            return {"cost_milli": cost, "evicted": evicted}
        # the least (cost, evicted) with cost·w + evicted ≥ bound, evicted ≤ most
        low = math.ceil(value - 1e-6)
        cost = max(0, -((most_evicted - low) // w))
        return {"cost_milli": cost, "evicted": max(0, low - w * cost)}
    return {STAGE_TIERS[stage.kind][0]: round(value) if exact else max(0, math.ceil(value - 1e-6))}


# Tiers' fields in their order, beside the names the plan's objective gives them (TIER_NAMES)
_TIER_FIELDS = ("satisfied", "placed", "pdb_violations", "cost_milli", "evicted", "first_available")


def stage_values(stage: Stage, trivial: Tiers, value: float, *, exact: bool) -> dict[str, float]:
    """``stage_tiers`` in the plan's units, by the plan objective's names: satisfiedWorkloads
    (the sum over priorities, as ``satisfiedWorkloads`` and ``satisfiedBound``), placedPods,
    pdbViolations, preemptionCost (cost, not thousandths), evictedPods, firstAvailable."""
    fields = stage_tiers(stage, trivial, value, exact=exact)
    t = replace(trivial, **fields)  # type: ignore[arg-type]  # the keys are Tiers' field names
    every = {"satisfied": sum(n for _, n in t.satisfied), "placed": t.placed, "pdb_violations": t.pdb_violations,
             "cost_milli": t.cost_milli / MILLI, "evicted": t.evicted, "first_available": t.first_available}
    return {name: every[field] for field, name in zip(_TIER_FIELDS, TIER_NAMES, strict=True) if field in fields}


def _decode_tier1(trivial: Tiers, stage: Stage, value: int) -> tuple[tuple[tuple[int, int], ...], int]:
    """A first-tier stage's weighted sum as (satisfied value per priority, placed): the greatest
    vector, in the tiers' order, whose weighted sum is at most ``value`` (each level's weight
    exceeds everything below it, so the sum orders vectors as the tiers do). A level another
    stage decides keeps its value in ``trivial``; one no stage decides (its workloads all
    rejected) is 0."""
    left = max(0, value)
    satisfied = []
    for priority, weight, most in stage.levels:
        n = min(most, left // weight)
        satisfied.append((priority, n))
        left -= n * weight
    levels = dict(satisfied)
    return tuple((p, levels.get(p, n if p in stage.others else 0)) for p, n in trivial.satisfied), \
        min(stage.pods, left)
