"""Node capacity for every requested resource, and each pending pod bound at most once.

    Σ_n count[c, n] ≤ |pods(c)|                                   for every class c
    Σ_c req[c, r]·count[c, n] + Σ_{u on n} use[u, n, r]·(1 − evict[u]) ≤ alloc[n, r]

Like kube-scheduler's NodeResourcesFit, a resource a pod does not request is not
checked for that pod. When the running pods alone already exceed a node's
allocatable for r (it can happen when allocatable shrinks), the row is enforced
only if a pod that requests r is placed there.
"""

from __future__ import annotations

from ortools.sat.python import cp_model

from solver.core import snapshot as s
from solver.model.vars import PlacementVars
from solver.problem.build import Problem
from solver.problem.workloads import PodClass


def add(problem: Problem, vars: PlacementVars) -> None:
    for cls in problem.classes:
        if sum(problem.candidates[cls.index].values()) > len(cls.pods):
            vars.model.add(cp_model.LinearExpr.sum(list(vars.nodes_of(cls.index).values())) <= len(cls.pods))
    on_node = vars.classes_by_node()
    nodes = {n.name: n for n in problem.nodes}
    for name in sorted(on_node):
        _add_node(problem, vars, nodes[name], on_node[name])


def _add_node(problem: Problem, vars: PlacementVars, node: s.Node, classes: list[PodClass]) -> None:
    units = [problem.units[u] for u in problem.units_on_node.get(node.name, ())]
    for res in sorted({r for c in classes for r in c.requests}):
        alloc = node.allocatable.get(res, 0)
        requesting = [c for c in classes if c.requests.get(res, 0) > 0]
        counts = [vars.count_on(c.index, node.name) for c in requesting]
        terms: list[cp_model.LinearExprT] = [c.requests[res] * v for c, v in zip(requesting, counts, strict=True)]
        most = sum(c.requests[res] * problem.candidates[c.index][node.name] for c in requesting)
        constant = 0
        for unit in units:
            use = unit.usage[node.name].get(res, 0)
            if use:
                constant += use
                if vars.has_evict(unit.index):
                    terms.append(-use * vars.evicts(unit.index))
        if most + constant <= alloc:
            continue  # redundant: cannot be violated
        row = vars.model.add(cp_model.LinearExpr.sum(terms) <= alloc - constant)
        if constant > alloc:
            hosts = vars.model.new_bool_var(f"hosts[{node.name},{res}]")
            for var in counts:
                vars.model.add(var == 0).only_enforce_if(~hosts)
            row.only_enforce_if(hosts)
