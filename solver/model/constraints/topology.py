"""Hard topology constraints: every pod under group g shares one value of key(g).

Pruning (in ``solver.problem.build``, before variables exist): nodes without the label, nodes outside the
domain that running members already fix, and domains that cannot hold a
PodGroup's missing pods even after every eligible eviction are removed from the
candidates of the classes under g. Then, with one boolean per remaining domain:

    Σ_v in_domain[g, v] ≤ 1,   Σ_{c under g, n: key(n) = v} count[c, n] ≤ M_g · in_domain[g, v]

A child's domain lies inside its parent's because each pod obeys both rows.
"""

from __future__ import annotations

from collections import defaultdict

from ortools.sat.python import cp_model

from solver.model.vars import PlacementVars
from solver.problem.build import Problem, topology_groups


def add(problem: Problem, vars: PlacementVars) -> None:
    labels = {n.name: n.labels for n in problem.nodes}
    for group in topology_groups(problem):
        key = group.topology_key
        assert key is not None
        classes = problem.classes_under(group.key)
        big_m = sum(len(problem.classes[c].pods) for c in classes)
        by_value: dict[str, list[cp_model.IntVar]] = defaultdict(list)
        for c in classes:
            for node, var in vars.nodes_of(c).items():
                by_value[labels[node][key]].append(var)
        chosen = []
        for value in sorted(by_value):
            in_domain = vars.in_domain(group.key, value)
            chosen.append(in_domain)
            vars.model.add(cp_model.LinearExpr.sum(by_value[value]) <= big_m * in_domain)
        if len(chosen) > 1:
            vars.model.add_at_most_one(chosen)
