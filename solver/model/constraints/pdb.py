"""PodDisruptionBudgets: evictions beyond status.disruptionsAllowed are violations.

    pdb_violations[b] ≥ Σ_u members(u, b)·evict[u] − allowed(b),   pdb_violations[b] ≥ 0

With ``problem.strict_pdbs`` the budget is hard instead: Σ_u members(u, b)·evict[u] ≤ allowed(b).
"""

from __future__ import annotations

from ortools.sat.python import cp_model

from solver.model.vars import PlacementVars
from solver.problem.build import Problem


def add(problem: Problem, vars: PlacementVars) -> None:
    for pdb in problem.snapshot.pdbs:
        terms = []
        most = 0
        for u, evict in vars.evictions():
            n = problem.units[u].pdb_counts.get(pdb.key, 0)
            if n:
                terms.append(n * evict)
                most += n
        allowed = pdb.allowed
        if most <= allowed:
            continue
        if problem.strict_pdbs:
            vars.model.add(cp_model.LinearExpr.sum(terms) <= allowed)
            continue
        violations = vars.pdb_violations(pdb.key, most - allowed)
        vars.model.add(violations >= cp_model.LinearExpr.sum(terms) - allowed)
