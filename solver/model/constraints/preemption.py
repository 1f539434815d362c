"""Victim units: which running pods may be evicted, and only when it helps.

Rule: evict[u] exists only if some class c with power(c) > priority(u) may land
on a node hosting a member of u, and

    evict[u] ⇒ Σ_{n ∈ nodes(u), c eligible for u} count[c, n] ≥ 1

(an eviction must make room for a preemptor that is allowed to cause it).
"""

from __future__ import annotations

from collections import defaultdict

from ortools.sat.python import cp_model

from solver.model.problem import Problem
from solver.model.vars import PlacementVars


def add(problem: Problem, vars: PlacementVars) -> None:
    helpers: dict[int, list[cp_model.IntVar]] = defaultdict(list)
    for cls in problem.classes:
        if cls.power is None:
            continue
        for node, count in vars.nodes_of(cls.index).items():
            for u in problem.units_on_node.get(node, ()):
                if problem.eligible(cls, problem.units[u]):
                    helpers[u].append(count)
    for u, counts in sorted(helpers.items()):
        evict = vars.evicts(u)
        vars.model.add(cp_model.LinearExpr.sum(counts) >= 1).only_enforce_if(evict)
