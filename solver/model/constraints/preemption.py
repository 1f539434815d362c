"""Victim units: which running pods may be evicted, and only when it is necessary.

evict[u] exists only where a class c that may preempt u (power(c) > priority(u))
can land on a node hosting a member of u. An eviction must be necessary in
kube-scheduler's sense (a victim that could be reprieved is not evicted):

    evict[u] ⇒ ∨_{n ∈ nodes(u), r} need[u, n, r]
    need[u, n, r] ⇒ Σ_{c: prio(c) > prio(u)} req[c, r]·count[c, n]
                      + Σ_{u' ≠ u on n} use[u', n, r]·(1 − evict[u']) + use[u, n, r] > alloc[n, r]
    need[u, n, r] ⇒ Σ_{c may preempt u} count[c, n] ≥ 1

or a pod placed needs a ReadWriteOncePod claim u holds (``Problem.once_units``): such a pod
lands only on u's node, and only when u is evicted (count[c, n] > 0 ⇒ evict[u]), as
upstream's dry run lifts VolumeRestrictions' refusal by removing the holder there.

i.e. on some node, putting u back would overflow a resource for the pods of
higher priority placed there, one of which is allowed to preempt u. Pods of
priority ≤ prio(u) do not count: upstream schedules them later, so they can
never be the reason u goes. (n, r) pairs where even the largest demand cannot
overflow get no literal.

The rows are only needed for a unit on whose nodes a pod that may not preempt
it can land (priority ≤ prio(u), or preemptionPolicy Never). Everywhere else
every pod placed beside u may preempt it, so "u would fit back" means putting
it back is feasible and strictly cheaper: an optimal
plan never does it, and ``greedy.put_back`` puts such victims back in a
plan a time limit cut short. This keeps the single-workload model free of them.
"""

from __future__ import annotations

from ortools.sat.python import cp_model

from solver.core import snapshot as s
from solver.model.vars import Conflicts, PlacementVars
from solver.problem.build import Problem
from solver.problem.workloads import PodClass


def add(problem: Problem, vars: PlacementVars, conflicts: Conflicts | None = None) -> None:
    """Eviction literals and their necessity rows; ``conflicts`` is what ``interpod.add``
    returned (None: a model without inter-pod rules)."""
    conflicts = conflicts or Conflicts()
    on_node = vars.classes_by_node()
    by_type = _device_takers(problem, vars)
    candidates: set[int] = {u for u, _ in vars.evictions()}  # device holders (constraints/devices.py)
    for node, classes in on_node.items():
        for u in problem.units_on_node.get(node, ()):
            if any(problem.eligible(c, problem.units[u]) for c in classes):
                candidates.add(u)
    for u in sorted(candidates):
        vars.evicts(u)  # every eviction literal exists before any row reads one
    once_needs = _once(problem, vars)
    nodes = {n.name: n for n in problem.nodes}
    for u in sorted(candidates):
        if not _may_host_ineligible(problem, u, on_node) and not _devices_to_ineligible(problem, u, by_type) \
                and u not in conflicts.needs and u not in conflicts.forced:
            continue
        needs = [lit for node in sorted(problem.units[u].usage)
                 for lit in _need_literals(problem, vars, u, nodes[node], on_node.get(node, []))]
        needs += _device_need_literals(problem, vars, u, by_type)
        needs += conflicts.needs.get(u, [])
        needs += once_needs.get(u, [])
        evict = vars.evicts(u)
        if needs:
            vars.model.add_bool_or(needs).only_enforce_if(evict)
        else:
            vars.model.add(evict == 0)


def _once(problem: Problem, vars: PlacementVars) -> dict[int, list[cp_model.IntVar]]:
    """A class needing a ReadWriteOncePod claim running units hold is placed only once they
    are all evicted; per unit, the literal that some such class is placed (its need)."""
    users: dict[int, list[cp_model.LinearExprT]] = {}
    for c, units in sorted(problem.once_units.items()):
        for node in sorted(problem.candidates[c]):
            count = vars.count_on(c, node)
            for u in units:
                if vars.has_evict(u):
                    vars.model.add(count == 0).only_enforce_if(vars.evicts(u).Not())
                    users.setdefault(u, []).append(count)
                else:
                    vars.model.add(count == 0)
    out: dict[int, list[cp_model.IntVar]] = {}
    for u, counts in users.items():
        need = vars.model.new_bool_var(f"need_once[{problem.units[u].key}]")
        vars.model.add(cp_model.LinearExpr.sum(counts) >= 1).only_enforce_if(need)
        out[u] = [need]
    return out


def _device_takers(problem: Problem, vars: PlacementVars) -> dict[int, list[tuple[PodClass, cp_model.IntVar]]]:
    """type -> (class, alloc var) of every allocation that may take a device of the type."""
    return {t: [(problem.classes[c], var) for c, var in takers] for t, takers in vars.device_takers().items()}


def _devices_to_ineligible(problem: Problem, u: int, by_type: dict[int, list[tuple[PodClass, cp_model.IntVar]]]
                           ) -> bool:
    unit = problem.units[u]
    return any(not problem.eligible(c, unit) for t in problem.dra.unit_types.get(u, {}) for c, _ in by_type.get(t, ()))


def _device_need_literals(problem: Problem, vars: PlacementVars, u: int,
                          by_type: dict[int, list[tuple[PodClass, cp_model.IntVar]]]) -> list[cp_model.IntVar]:
    """need_dev[u, t]: u's devices of type t are taken by a pod that may preempt it (put back,
    u would hold them again); with several holders, all of them are evicted."""
    unit = problem.units[u]
    out = []
    for t in sorted(problem.dra.unit_types.get(u, {})):
        holders = [problem.units[h] for h in problem.dra.types[t].holder or (u,)]
        # the devices come free only when every holder goes: the taker must be allowed to evict each
        takers = [var for c, var in by_type.get(t, ()) if all(problem.eligible(c, h) for h in holders)]
        if not takers or not all(vars.has_evict(h.index) for h in holders):
            continue
        need = vars.model.new_bool_var(f"need_dev[{unit.key},{t}]")
        vars.model.add(cp_model.LinearExpr.sum(takers) >= 1).only_enforce_if(need)
        for other in problem.dra.types[t].holder or ():
            if other != u:
                vars.model.add(vars.evicts(other) == 1).only_enforce_if(need)
        out.append(need)
    return out


def _may_host_ineligible(problem: Problem, u: int, on_node: dict[s.NodeName, list[PodClass]]) -> bool:
    unit = problem.units[u]
    return any(not problem.eligible(c, unit) for node in unit.usage for c in on_node.get(node, ()))


def _need_literals(
    problem: Problem, vars: PlacementVars, u: int, node: s.Node, classes: list[PodClass]
) -> list[cp_model.IntVar]:
    unit = problem.units[u]
    eligible = [c for c in classes if problem.eligible(c, unit)]
    if not eligible:
        return []
    higher = [c for c in classes if c.priority > unit.priority]
    others = [problem.units[o] for o in problem.units_on_node[node.name] if o != u]
    out = []
    for res, use in sorted(unit.usage[node.name].items()):
        requesting = [c for c in higher if c.requests.get(res, 0) > 0]
        if not use or not requesting:
            continue
        alloc = node.allocatable.get(res, 0)
        running = sum(o.usage[node.name].get(res, 0) for o in others) + use
        most = sum(c.requests[res] * problem.candidates[c.index][node.name] for c in requesting)
        if most + running <= alloc:
            continue  # u can always be put back as far as r goes
        terms: list[cp_model.LinearExprT] = [c.requests[res] * vars.count_on(c.index, node.name)
                                               for c in requesting]
        for other in others:
            o_use = other.usage[node.name].get(res, 0)
            if o_use and vars.has_evict(other.index):
                terms.append(-o_use * vars.evicts(other.index))
        need = vars.model.new_bool_var(f"need[{unit.key},{node.name},{res}]")
        vars.model.add(cp_model.LinearExpr.sum(terms) >= alloc + 1 - running).only_enforce_if(need)
        vars.model.add(
            cp_model.LinearExpr.sum([vars.count_on(c.index, node.name) for c in eligible]) >= 1
        ).only_enforce_if(need)
        out.append(need)
    return out
