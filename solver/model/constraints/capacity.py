"""Node capacity for every requested resource, with the priority rule.

For node n, resource r and every preemption level λ among the classes that may
land on n (power None counts as -∞):

    Σ_{c: power(c) ≤ λ} req[c, r]·count[c, n]
      + Σ_{u on n} use[u, n, r]·(1 - evict[u] if u is eligible at λ else 1)  ≤  alloc[n, r]

An eviction frees room only for the preemptors allowed to cause it: pods of a
lower level must fit beside every running pod they could not preempt themselves.
With one level (one workload, the usual case) this is plain capacity.

Like kube-scheduler's NodeResourcesFit, a resource a pod does not request is not
checked for that pod. When the running pods alone already exceed a node's
allocatable (it can happen when allocatable shrinks), the row is enforced only
if a pod that requests r at that level is placed there.
"""

from __future__ import annotations

from collections import defaultdict

from ortools.sat.python import cp_model

from solver.model import snapshot as s
from solver.model.problem import Problem, PodClass
from solver.model.vars import PlacementVars

NEVER = float("-inf")


def level(cls: PodClass) -> float:
    return NEVER if cls.power is None else cls.power


def add(problem: Problem, vars: PlacementVars) -> None:
    on_node: dict[s.NodeName, list[PodClass]] = defaultdict(list)
    for cls in problem.classes:
        for node in vars.nodes_of(cls.index):
            on_node[node].append(cls)
    nodes = {n.name: n for n in problem.nodes}
    for name in sorted(on_node):
        _add_node(problem, vars, nodes[name], on_node[name])


def _add_node(problem: Problem, vars: PlacementVars, node: s.Node, classes: list[PodClass]) -> None:
    units = [problem.units[u] for u in problem.units_on_node.get(node.name, ())]
    for lam in sorted({level(c) for c in classes}):
        below = [c for c in classes if level(c) <= lam]
        for res in sorted({r for c in below for r in c.requests}):
            alloc = node.allocatable.get(res, 0)
            requesting = [c for c in below if c.requests.get(res, 0) > 0]
            terms: list[cp_model.LinearExprT] = []
            most = 0
            for c in requesting:
                var = vars.count(c.index, node.name)
                assert var is not None
                terms.append(c.requests[res] * var)
                most += c.requests[res] * problem.candidates[c.index][node.name]
            constant = 0
            for unit in units:
                use = unit.usage[node.name].get(res, 0)
                if not use:
                    continue
                constant += use
                if not unit.protected and unit.priority < lam and vars.has_evict(unit.index):
                    terms.append(-use * vars.evicts(unit.index))
            if most + constant <= alloc:
                continue  # redundant: cannot be violated
            row = vars.model.add(cp_model.LinearExpr.sum(terms) <= alloc - constant)
            if constant > alloc:
                hosts = vars.model.new_bool_var(f"hosts[{node.name},{res},{lam}]")
                for c in requesting:
                    var = vars.count(c.index, node.name)
                    assert var is not None
                    vars.model.add(var == 0).only_enforce_if(~hosts)
                row.only_enforce_if(hosts)
