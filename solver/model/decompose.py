"""Solve a single workload with a root topology constraint one domain at a time.

When exactly one workload is pending and its root group has a topology key,
every pod it places lands in one domain of that key, and only victims inside
that domain can be evicted (an eviction must be necessary for a pod beside
it). The problem therefore separates exactly: the optimum is the best of the
per-domain optima, each a model over one domain's nodes. Each sub-model is
built by the same ``build_model`` and solved by the same staged ``solve``.

Proven OPTIMAL only when every domain's solve is. The bound on tier 4 is the
least bound among the domains that reach the best tiers 1-3 (or might, when
their solve was cut short).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from solver.model import greedy
from solver.model import snapshot as s
from solver.model.build import build_model
from solver.model.decode import Assignment, evaluate, tier_key
from solver.model.plan import FEASIBLE, OPTIMAL
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
    return replace(problem, candidates=candidates)


def solve_by_domain(problem: Problem, params: SolveParams, key: str) -> DecomposedResult:
    start = time.perf_counter()
    values = domains(problem, key)
    best: tuple[object, Assignment, SolveResult] | None = None
    results: list[tuple[str, object, SolveResult]] = []
    variables = constraints = 0
    build_seconds = 0.0
    all_optimal = True
    for i, value in enumerate(values):
        remaining = params.time_limit - (time.perf_counter() - start)
        if remaining <= 0.01:
            all_optimal = False
            break
        sub = restrict(problem, key, value)
        built = build_model(sub)
        build_seconds += built.build_seconds
        variables, constraints = max(variables, built.variables), max(constraints, built.constraints)
        share = replace(params, time_limit=remaining / (len(values) - i))
        result = solve(built, share, hint=greedy.baseline(sub))
        if result.assignment is None:
            all_optimal = False
            continue
        all_optimal = all_optimal and result.status == OPTIMAL
        key_ = tier_key(problem, evaluate(problem, result.assignment))
        results.append((value, key_, result))
        if best is None or key_ > best[0]:
            best = (key_, result.assignment, result)
    if best is None:
        empty = SolveResult(assignment=Assignment(counts={}, evicted=frozenset()), status=FEASIBLE,
                            cost_bound_milli=0, solve_seconds=time.perf_counter() - start)
        return DecomposedResult(result=empty, domains=len(values), variables=variables,
                                constraints=constraints, build_seconds=build_seconds)
    best_key, assignment, _ = best
    bound = _cost_bound(best_key, results)
    combined = SolveResult(
        assignment=assignment,
        status=OPTIMAL if all_optimal else FEASIBLE,
        cost_bound_milli=bound,
        solve_seconds=time.perf_counter() - start - build_seconds,
        stages=tuple({"domain": v, "status": r.status, "seconds": round(r.solve_seconds, 4)} for v, _, r in results),
    )
    return DecomposedResult(result=combined, domains=len(values), variables=variables,
                            constraints=constraints, build_seconds=build_seconds)


def _cost_bound(best_key: object, results: list[tuple[str, object, SolveResult]]) -> int | None:
    """Least tier-4 bound over the domains that reach (or may reach) the best tiers 1-3."""
    assert isinstance(best_key, tuple)
    bounds = []
    for _, key, result in results:
        assert isinstance(key, tuple) and result.assignment is not None
        if key[:3] < best_key[:3]:
            if result.status == OPTIMAL:
                continue  # proven worse above the cost tier
            bounds.append(0)  # cut short: it might still reach the best tiers, at any cost
            continue
        own = -key[3]
        bounds.append(own if result.cost_bound_milli is None else min(own, result.cost_bound_milli))
    least = min(bounds) if bounds else 0
    return None if least >= -best_key[3] else least
