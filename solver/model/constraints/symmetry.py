"""Symmetry breaking between interchangeable sibling PodGroups.

Two PodGroups under the same parent are interchangeable when they have the same
gang rule and topology key, no running members, and pod classes that are
identical but for the pods' names and group: the same shape (``problem.class_shape``:
requests, node selection, tolerations, inter-pod rules, host ports, the labels other
pods' rules match, claims) and the same candidate nodes. Any plan can then swap their placements
without changing a tier, so for consecutive interchangeable siblings a < b:

    ok[a] ≥ ok[b]                                            (placed ones first)
    ok[b] ⇒ Σ_v idx(v)·in_domain[a, v] ≤ Σ_v idx(v)·in_domain[b, v]   (domains in order)

These rows exist only to cut the search: a composite of eight identical
rack-constrained groups otherwise has 8! copies of every solution.
"""

from __future__ import annotations

import itertools
from collections import defaultdict

from ortools.sat.python import cp_model

from solver.core import snapshot as s
from solver.model.vars import PlacementVars
from solver.problem.build import Problem, class_shape


def _signature(problem: Problem, group: s.Group) -> tuple[object, ...] | None:
    if group.kind != s.POD_GROUP or problem.running_in_group.get(group.key) or problem.tree.children(group.key):
        return None
    classes = sorted((  # by repr: shapes hold frozen dataclasses, which do not order
        (class_shape(c.pods[0], problem.snapshot.dra, problem.interpod, problem.dra.pod_shared), len(c.pods),
         tuple(sorted(problem.candidates[c.index].items())))
        for c in problem.classes if c.group == group.key
    ), key=repr)
    return (group.min_count, group.topology_key, tuple(classes))


def add(problem: Problem, vars: PlacementVars) -> None:
    for workload in problem.workloads:
        for parent in workload.groups:
            twins: dict[tuple[object, ...], list[s.GroupKey]] = defaultdict(list)
            for child in problem.tree.children(parent):
                sig = _signature(problem, problem.groups[child])
                if sig is not None:
                    twins[sig].append(child)
            for sig, keys in twins.items():
                for a, b in itertools.pairwise(keys):
                    _order(vars, a, b, sig[1])


def _order(vars: PlacementVars, a: s.GroupKey, b: s.GroupKey, key: object) -> None:
    model = vars.model
    model.add_implication(vars.group_ok(b), vars.group_ok(a))
    if key is None:
        return
    values = sorted({v for (g, v), _ in vars.domains() if g in (a, b)})
    if not values:
        return
    index = {v: i for i, v in enumerate(values)}
    rank_a = cp_model.LinearExpr.sum([index[v] * var for (g, v), var in vars.domains() if g == a])
    rank_b = cp_model.LinearExpr.sum([index[v] * var for (g, v), var in vars.domains() if g == b])
    model.add(rank_a <= rank_b).only_enforce_if(vars.group_ok(b))
