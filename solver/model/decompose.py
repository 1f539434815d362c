"""Solve a single workload with a root topology constraint one domain at a time.

When exactly one workload is pending and its root group has a topology key,
every pod it places lands in one domain of that key, and only victims inside
that domain can be evicted (an eviction must be necessary for a pod beside
it). The problem therefore separates exactly: the optimum is the best of the
per-domain optima, each a model over one domain's nodes. Each sub-model is
built by the same ``build_model`` and solved by the same staged ``solve``.

Proven OPTIMAL only when every domain is proven: optimal, or worse on tiers
1-3, or pruned by the cost cutoff. The bound on tier 4 is the least bound among
the domains that reach the best tiers 1-3 (0 when one might, but was cut short).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from solver.model import bounds, greedy
from solver.model import snapshot as s
from solver.model.assignment import Assignment, score
from solver.model.build import BuiltModel, build_model
from solver.model.plan import FEASIBLE, OPTIMAL, Tiers
from solver.model.problem import Problem
from solver.model.solve import SolveParams, SolveResult, solve


@dataclass(frozen=True, slots=True, kw_only=True)
class DecomposedResult:
    result: SolveResult
    domains: int
    variables: int  # of the largest sub-model
    constraints: int
    build_seconds: float  # all sub-models together


def root_key(problem: Problem) -> str | None:
    """The topology key the problem separates on, or None."""
    if len(problem.workloads) != 1 or problem.workloads[0].kind == s.STANDALONE_POD:
        return None
    return problem.groups[problem.workloads[0].groups[0]].topology_key


def domains(problem: Problem, key: str) -> list[str]:
    labels = {n.name: n.labels for n in problem.nodes}
    return sorted({labels[n][key] for cand in problem.candidates for n in cand})


def restrict(problem: Problem, key: str, value: str) -> Problem:
    labels = {n.name: n.labels for n in problem.nodes}
    candidates = [{n: k for n, k in cand.items() if labels[n].get(key) == value} for cand in problem.candidates]
    return replace(problem, candidates=tuple(candidates))


def solve_by_domain(problem: Problem, params: SolveParams, key: str) -> DecomposedResult:
    """Branch and bound over the domains.

    Pass 1 solves tiers 1-3 in every domain (cheap). Pass 2 solves the cost tiers
    only in the domains that reach the best tiers 1-3, cheapest greedy first, each
    asked to match or beat the incumbent's cost, so most are pruned by the solver's
    own proof instead of being optimised.
    """
    start = time.perf_counter()
    values = domains(problem, key)
    subs = {v: restrict(problem, key, v) for v in values}
    floors = {v: bounds.pdb_floor(sub) for v, sub in subs.items()}
    hints = {v: _better(sub, greedy.hint(sub), floors[v]) for v, sub in subs.items()}
    sizes = _Sizes(floors)
    certain = True
    first: dict[str, tuple[Tiers, bool]] = {}  # domain -> (tiers 1-3, proven)
    incumbent: list[tuple[int, int]] = []  # (stage-1 value, PDB violations) of the best domain so far

    def pdb_cutoff(i: int, found: list[tuple[int, bool]]) -> int | None:
        """Branch and bound on tier 3: a domain must match the incumbent's violations."""
        if i != 1 or not incumbent:
            return None
        (value, proven), (best_value, best_pdb) = found[0], incumbent[0]
        if value == best_value:
            return best_pdb
        return -1 if value < best_value and proven else None  # -1: proven worse, prune

    # best greedy tiers 1-3 first, so the incumbent is good early (a stable sort: ties keep their order)
    values.sort(key=lambda v: score(problem, hints[v]).head, reverse=True)
    pruned13: list[str] = []  # domains proven worse on tier 3 by the cutoff
    for i, v in enumerate(values):
        share = _share(params, start, len(values) - i, 0.5)
        if share is None:
            certain = False
            break
        result = solve(sizes.build(subs[v], v), share, hint=hints[v], upto_cost=True, stage_cutoff=pdb_cutoff)
        if result.pruned:
            pruned13.append(v)
            continue
        if result.assignment is None:
            certain = False
            continue
        found = score(problem, result.assignment)
        first[v] = (found.head, result.status == OPTIMAL)
        if found > score(problem, hints[v]):
            hints[v] = result.assignment  # pass 2 starts from what pass 1 found
        # the incumbent is the returned solution itself: its stage-1 value and its own violations
        stage1 = result.stages[0].get("objective") if result.stages else None
        if isinstance(stage1, float):
            pdb = found.pdb_violations
            if not incumbent or stage1 > incumbent[0][0] or (stage1 == incumbent[0][0] and pdb < incumbent[0][1]):
                incumbent[:] = [(round(stage1), pdb)]
    if not first:
        empty = SolveResult(assignment=Assignment(counts={}, evicted=frozenset()), status=FEASIBLE,
                            cost_bound_milli=0, solve_seconds=time.perf_counter() - start)
        return sizes.result(empty, len(values))
    best13 = max(k for k, _ in first.values())
    certain = certain and all(proven for k, proven in first.values() if k < best13)
    finalists = [v for v, (k, _) in first.items() if k == best13]
    # a proven floor on each finalist's cost (solver/model/bounds.py), when tiers 1-3 place every pod
    costs = {v: _cost_floor(problem, subs[v], best13) for v in finalists}
    cost_floors = {v: None if c is None else c.cost for v, c in costs.items()}
    for v, c in costs.items():
        if c is not None and c.plan is not None:
            hints[v] = _better_plan(subs[v], hints[v], c.plan)
    finalists.sort(key=lambda v: (cost_floors[v] or 0, _greedy_cost(problem, hints[v], best13)))
    reports: list[dict[str, object]] = [{"domain": v, "status": "PRUNED", "tier": 3} for v in pruned13]
    done: list[tuple[Tiers, SolveResult]] = []
    best: tuple[Tiers, Assignment] | None = None
    unsolved: list[str] = []
    for i, v in enumerate(finalists):
        share = _share(params, start, len(finalists) - i, 1.0)
        if share is None:
            certain = False
            unsolved = finalists[i:]
            break
        # the cost cutoff only applies where tiers 1-3 are proven equal to the incumbent's
        cutoff = None if best is None else (best[0].head, best[0].cost_milli)
        if best is not None and first[v][1] and _cannot_beat(best[0], cost_floors[v], floors[v]):
            reports.append({"domain": v, "status": "PRUNED", "tier": 4, "floor": cost_floors[v]})
            continue  # proven by its floors: at best as costly as the incumbent
        result = solve(sizes.build(subs[v], v, {best13.pdb_violations: costs[v]}), share, hint=hints[v],
                       cost_cutoff=cutoff)
        reports.append({"domain": v, "status": "PRUNED" if result.pruned else result.status,
                        "seconds": round(result.solve_seconds, 4)})
        if result.pruned:
            continue  # proven: same tiers 1-3, costlier than the incumbent
        if result.assignment is None:
            certain = False
            continue
        full = score(problem, result.assignment)
        done.append((full, result))
        if best is None or full > best[0]:
            best = (full, result.assignment)
    if best is None:  # every finalist cut short: fall back on the best pass-1 domain's greedy
        assignment = hints[finalists[0]]
        full = score(problem, assignment)
        least = 0
    else:
        full, assignment = best
        # a finalist never solved is bounded by its floor; a domain cut short in pass 1, by 0
        lows = [] if certain or unsolved else [0]
        lows += [cost_floors[v] or 0 for v in unsolved]
        for tiers, result in done:
            proven = result.status == OPTIMAL
            certain = certain and proven
            if tiers.head < full.head:
                if not proven:
                    lows.append(0)  # cut short: it might still reach the best tiers, at any cost
                continue
            lows.append(tiers.cost_milli if result.cost_bound_milli is None else result.cost_bound_milli)
        least = min(lows) if lows else full.cost_milli
    combined = SolveResult(
        assignment=assignment,
        status=OPTIMAL if certain and best is not None else FEASIBLE,
        cost_bound_milli=None if least >= full.cost_milli else least,
        solve_seconds=time.perf_counter() - start - sizes.build_seconds,
        stages=tuple(reports),
    )
    return sizes.result(combined, len(values))


def _better(sub: Problem, hint: Assignment, floor: bounds.PdbFloor | None) -> Assignment:
    """The floor's plan when it leads the greedy hint on the tiers."""
    return hint if floor is None or floor.plan is None else _better_plan(sub, hint, floor.plan)


def _cannot_beat(incumbent: Tiers, cost: int | None, floor: bounds.PdbFloor | None) -> bool:
    """True when a domain with these floors (tiers 1-3 equal) cannot beat the incumbent."""
    if cost is None:
        return False
    best_cost, best_evicted = incumbent.cost_milli, incumbent.evicted
    pods = floor.evicted_pods if floor is not None else 0
    return cost > best_cost or (cost == best_cost and pods >= best_evicted)


def _better_plan(sub: Problem, hint: Assignment, plan: Assignment) -> Assignment:
    return plan if score(sub, plan) > score(sub, hint) else hint


def _cost_floor(problem: Problem, sub: Problem, best13: Tiers) -> bounds.CostFloor | None:
    """The domain's floor on cost at tiers 1-3 ``best13``, when those place every pending pod."""
    if best13.placed != sum(len(c.pods) for c in problem.classes):
        return None
    return bounds.cost_floor(sub, best13.pdb_violations)


class _Sizes:
    """Builds sub-models and remembers the largest and the total build time."""

    def __init__(self, floors: dict[str, bounds.PdbFloor | None]) -> None:
        self.variables = self.constraints = 0
        self.build_seconds = 0.0
        self._floors = floors

    def build(self, sub: Problem, domain: str,
              cost_floors: dict[int, bounds.CostFloor | None] | None = None) -> BuiltModel:
        built = build_model(sub, pdb_floor=self._floors[domain], cost_floors=cost_floors)
        self.build_seconds += built.build_seconds
        self.variables = max(self.variables, built.variables)
        self.constraints = max(self.constraints, built.constraints)
        return built

    def result(self, result: SolveResult, domains: int) -> DecomposedResult:
        return DecomposedResult(result=result, domains=domains, variables=self.variables,
                                constraints=self.constraints, build_seconds=self.build_seconds)


def _share(params: SolveParams, start: float, left: int, fraction: float) -> SolveParams | None:
    remaining = (params.time_limit - (time.perf_counter() - start)) * fraction
    if remaining <= 0.01:
        return None
    return replace(params, time_limit=remaining / left)


def _greedy_cost(problem: Problem, hint: Assignment, best13: Tiers) -> tuple[int, int]:
    tiers = score(problem, hint)
    return (0 if tiers.head == best13 else 1, tiers.cost_milli)
