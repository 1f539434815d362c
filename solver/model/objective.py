"""The lexicographic objective of docs/design.md, as staged CP-SAT solves.

The tiers and their order are ``plan.Tiers``'s (satisfied workloads by priority, pods placed,
PDB violations, preemption cost in thousandths, evicted pods); the stages below optimise
them in that order, and ``STAGE_TIERS`` says which tiers each stage decides
(tests/solver/test_objective_order.py holds the two together).

Implementation: staged solves. Stage 1 maximises tiers 1+2 as one weighted sum,
stage 2 minimises tier 3 with stage 1's value fixed, stage 3 minimises tiers
4+5 with tiers 1-3 fixed. Within a stage the weights are derived, never tuned:
each weight exceeds the largest possible value of everything below it. Stage 3
splits in two when its weighted sum would not fit comfortably in int64.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from ortools.sat.python import cp_model

from solver.model.problem import Problem
from solver.model.vars import PlacementVars

INT64_SAFE = 2**62
PDB_STAGE = "pdbViolations"
COST_STAGE = "preemptionCost"  # the cost alone: split from the evicted pods, or reaching its floor first
# stage name -> the plan.Tiers fields it decides, in the order the stages run
STAGE_TIERS: dict[str, tuple[str, ...]] = {
    "workloads+pods": ("satisfied", "placed"),
    PDB_STAGE: ("pdb_violations",),
    "preemptionCost+evictedPods": ("cost_milli", "evicted"),
    COST_STAGE: ("cost_milli",),
    "evictedPods": ("evicted",),
}


@dataclass(frozen=True, slots=True)
class Stage:
    name: str  # tiers this stage decides, e.g. "workloads+pods"
    expr: cp_model.LinearExprT
    maximize: bool
    weights: tuple[int, ...]  # weight of each tier inside expr, highest first
    bounds: tuple[int, ...]  # largest possible value of each tier
    cost: cp_model.LinearExprT | None = None  # the preemption cost (tier 4), in the stage that decides it


def _tier1_levels(problem: Problem, vars: PlacementVars) -> list[tuple[int, list[cp_model.IntVar]]]:
    by_priority: dict[int, list[cp_model.IntVar]] = defaultdict(list)
    for w, sat in vars.all_satisfied():
        by_priority[problem.workloads[w].priority].append(sat)
    return sorted(by_priority.items())  # ascending priority


def stages(problem: Problem, vars: PlacementVars) -> list[Stage]:
    out = _tier_stages(problem, vars)
    picks = vars.alt_picks()
    if picks:  # below every tier: earlier firstAvailable entries (constraints/devices.py)
        most = sum(rank * list(var.proto.domain)[-1] for rank, var in picks)
        out.append(Stage("firstAvailable", cp_model.LinearExpr.sum([r * v for r, v in picks]), False,
                         (1,), (most,)))
    return out


def _tier_stages(problem: Problem, vars: PlacementVars) -> list[Stage]:
    out: list[Stage] = []
    total_pods = sum(len(c.pods) for c in problem.classes)
    placed = cp_model.LinearExpr.sum([v for _, v in vars.counts()])
    weight = total_pods + 1
    terms: list[cp_model.LinearExprT] = [placed]
    for _, sats in _tier1_levels(problem, vars):
        terms.append(weight * cp_model.LinearExpr.sum(sats))
        weight *= len(sats) + 1
    out.append(Stage("workloads+pods", cp_model.LinearExpr.sum(terms), True, (), (weight,)))

    evictions = list(vars.evictions())
    if not evictions:
        return out
    violations = vars.all_pdb_violations()
    if violations:
        most = sum(problem.units[u].pdb_counts.get(p.key, 0) for u, _ in evictions for p in problem.snapshot.pdbs)
        out.append(Stage(PDB_STAGE, cp_model.LinearExpr.sum(violations), False, (1,), (most,)))
    cost = cp_model.LinearExpr.sum([problem.units[u].cost_milli * e for u, e in evictions])
    evicted = cp_model.LinearExpr.sum([len(problem.units[u].members) * e for u, e in evictions])
    most_cost = sum(problem.units[u].cost_milli for u, _ in evictions)
    most_evicted = sum(len(problem.units[u].members) for u, _ in evictions)
    if most_cost * (most_evicted + 1) + most_evicted < INT64_SAFE:
        out.append(
            Stage("preemptionCost+evictedPods", (most_evicted + 1) * cost + evicted, False,
                  (most_evicted + 1, 1), (most_cost, most_evicted), cost)
        )
    else:
        out.append(Stage(COST_STAGE, cost, False, (1,), (most_cost,), cost))
        out.append(Stage("evictedPods", evicted, False, (1,), (most_evicted,)))
    return out
