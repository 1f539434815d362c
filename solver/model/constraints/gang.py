"""Gang rules of PodGroups and CompositePodGroups, and workload satisfaction.

With new(g) = pods this plan binds under g and run(g) = g's running members:

- PodGroup, gang minCount m:  ok[g] ⇔ new(g) ≥ m − run(g), and ¬ok[g] ⇒ new(g) = 0.
- PodGroup, basic:            ok[g] ⇔ run(g) + new(g) ≥ 1 (no floor, no all-or-nothing).
- CompositePodGroup, gang k:  ok[G] ⇔ Σ_{children h} ok[h] ≥ k, and ¬ok[G] ⇒ new(G) = 0.
- CompositePodGroup, basic:   ok[G] ⇔ Σ_h ok[h] ≥ 1.
- Workload w with root R:     satisfied[w] ⇒ ok[R] ∧ new(R) ≥ 1
  (a placement that adds no new pod is no placement).
- Standalone pod of rank r in its class c (alike standalone pods share one class):
                              satisfied[w] ⇒ new(c) ≥ r + 1, and satisfied[w] ⇒ satisfied[w']
                              for the pod w' of rank r − 1.
"""

from __future__ import annotations

from ortools.sat.python import cp_model

from solver.core import snapshot as s
from solver.model.vars import PlacementVars
from solver.problem.build import Problem


def add(problem: Problem, vars: PlacementVars) -> None:
    # pooled class -> the pods it places (one sum, not one per pod), satisfied[] of its last pod so far
    pools: dict[int, tuple[cp_model.LinearExprT, cp_model.IntVar]] = {}
    for workload in problem.workloads:
        satisfied = vars.satisfied(workload.index)
        if workload.kind == s.STANDALONE_POD and len(problem.classes[workload.classes[0]].pods) > 1:
            # the pod of rank r in its class is satisfied only if more than r of the class land;
            # in rank order, which cuts the search and is how decoding binds them
            (c,) = workload.classes
            if c in pools:
                total, previous = pools[c]
                vars.model.add_implication(satisfied, previous)
            else:
                cls = problem.classes[c]
                total = vars.model.new_int_var(0, len(cls.pods), f"pooled[{cls.pods[0].key}]")
                vars.model.add(total == vars.placed(workload.classes))
            vars.model.add(total >= workload.rank + 1).only_enforce_if(satisfied)
            pools[c] = (total, satisfied)
            continue
        new_total = vars.placed(workload.classes)
        vars.model.add(new_total >= 1).only_enforce_if(satisfied)
        if workload.kind == s.STANDALONE_POD:
            continue
        # children before parents, so ok[child] exists when the parent reads it
        for key in reversed(workload.groups):
            _add_group(problem, vars, problem.groups[key])
        vars.model.add_implication(satisfied, vars.group_ok(workload.groups[0]))


def _add_group(problem: Problem, vars: PlacementVars, group: s.Group) -> None:
    model = vars.model
    ok = vars.group_ok(group.key)
    new = vars.placed(problem.classes_under(group.key))
    if group.kind == s.POD_GROUP:
        running = len(problem.running_in_group.get(group.key, ()))
        pending = sum(len(problem.classes[c].pods) for c in problem.classes_under(group.key))
        need = group.floor - running
        if need <= 0:
            model.add(ok == 1)
        elif pending < need:
            model.add(ok == 0)
            model.add(new == 0)
        else:
            model.add(new >= need).only_enforce_if(ok)
            model.add(new == 0).only_enforce_if(~ok)
        return
    kids = [vars.group_ok(child) for child in problem.tree.children(group.key)]
    need = group.floor
    kids_ok = cp_model.LinearExpr.sum(kids)
    model.add(kids_ok >= need).only_enforce_if(ok)
    model.add(kids_ok <= need - 1).only_enforce_if(~ok)
    if group.min_count is not None:  # gang: all-or-nothing over the subtree
        model.add(new == 0).only_enforce_if(~ok)
