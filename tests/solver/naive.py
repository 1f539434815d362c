"""A naive reference model: one boolean per (pending pod, node), straight from DESIGN.md.

Written independently of ``solver.model``: no classes, no aggregation, no
pruning, one weighted objective with Python-integer weights (instances are
tiny). Used by the property test to check the aggregated model's tiers.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from ortools.sat.python import cp_model

from solver.model import selectors
from solver.model import snapshot as s


@dataclass(frozen=True)
class Tiers:
    satisfied_by_priority: tuple[tuple[int, int], ...]  # (priority, count), highest first
    placed: int
    pdb_violations: int
    cost_milli: int
    evicted: int


def naive_tiers(snap: s.ClusterSnapshot) -> Tiers:
    groups = snap.group_by_key()
    children: dict[str, list[str]] = defaultdict(list)
    for g in snap.groups:
        if g.parent:
            children[g.parent].append(g.key)

    def chain(key: str) -> list[str]:
        out = [key]
        while groups[out[-1]].parent:
            out.append(groups[out[-1]].parent)
        return out

    def root(pod: s.Pod) -> str:
        return chain(pod.group)[-1] if pod.group else pod.key

    def subtree(key: str) -> list[str]:
        out = [key]
        for c in children.get(key, ()):
            out += subtree(c)
        return out

    pending = [p for p in snap.pods if p.node is None]
    running = [p for p in snap.pods if p.node is not None]
    roots = sorted({root(p) for p in pending})
    prio = {r: (groups[r].priority if r in groups else next(p.priority for p in pending if p.key == r)) for r in roots}
    policy = {r: ((groups[r].preemption_policy or "PreemptLowerPriority") if r in groups
                  else next(p.preemption_policy for p in pending if p.key == r)) for r in roots}

    def pod_prio(p: s.Pod) -> int:
        return prio[root(p)]

    def pod_power(p: s.Pod) -> float:
        return float("-inf") if policy[root(p)] == "Never" else prio[root(p)]

    # victim units
    unit_of: dict[str, str] = {}
    for p in running:
        tops = [g for g in chain(p.group) if groups[g].disruption_all] if p.group else []
        unit_of[p.key] = tops[-1] if tops else p.key
    members: dict[str, list[s.Pod]] = defaultdict(list)
    for p in running:
        members[unit_of[p.key]].append(p)
    unit_prio = {u: (groups[chain(ms[0].group)[-1]].priority if ms[0].group else ms[0].priority)
                 for u, ms in members.items()}
    protected = {u for u, ms in members.items() if any(root(p) in roots for p in ms)}

    m = cp_model.CpModel()
    nodes = {n.name: n for n in snap.nodes}
    x = {}
    for p in pending:
        for n in snap.nodes:
            if selectors.statically_feasible(p, n):
                x[p.key, n.name] = m.new_bool_var(f"x[{p.key},{n.name}]")
    for p in pending:
        m.add_at_most_one([v for (pk, _), v in x.items() if pk == p.key])
    e = {u: m.new_bool_var(f"e[{u}]") for u in members if u not in protected}

    def evicted_expr(u: str):
        return e[u] if u in e else 0

    # capacity, enforced where a pod requesting r lands
    for n in snap.nodes:
        here = [p for p in pending if (p.key, n.name) in x]
        for r in sorted({r for p in here for r, v in p.requests.items() if v > 0}):
            req = [p for p in here if p.requests.get(r, 0) > 0]
            row = sum(p.requests[r] * x[p.key, n.name] for p in req) + sum(
                p.requests.get(r, 0) * (1 - evicted_expr(unit_of[p.key])) for p in running if p.node == n.name)
            for p in req:
                m.add(row <= n.allocatable.get(r, 0)).only_enforce_if(x[p.key, n.name])

    # necessity of every eviction
    for u, ev in e.items():
        lits = []
        for nn in sorted({p.node for p in members[u]}):
            n = nodes[nn]
            here = [p for p in pending if (p.key, nn) in x]
            eligible = [p for p in here if pod_power(p) > unit_prio[u]]
            higher = [p for p in here if pod_prio(p) > unit_prio[u]]
            for r in sorted({r for p in members[u] if p.node == nn for r in p.requests}):
                if not any(p.requests.get(r, 0) > 0 for p in higher):
                    continue
                lit = m.new_bool_var("")
                demand = sum(p.requests.get(r, 0) * x[p.key, nn] for p in higher)
                back = sum(p.requests.get(r, 0) * (1 - evicted_expr(unit_of[p.key]))
                           for p in running if p.node == nn and unit_of[p.key] != u)
                back += sum(p.requests.get(r, 0) for p in members[u] if p.node == nn)
                m.add(demand + back >= n.allocatable.get(r, 0) + 1).only_enforce_if(lit)
                m.add(sum(x[p.key, nn] for p in eligible) >= 1).only_enforce_if(lit)
                lits.append(lit)
        m.add_bool_or(lits).only_enforce_if(ev) if lits else m.add(ev == 0)

    # gangs
    new = {}
    ok = {}

    def pods_under(key: str) -> list[s.Pod]:
        keys = set(subtree(key))
        return [p for p in snap.pods if p.group in keys]

    def visit(key: str) -> None:
        g = groups[key]
        for c in children.get(key, ()):
            visit(c)
        new[key] = sum(v for (pk, _), v in x.items() if any(p.key == pk for p in pods_under(key) if p.node is None))
        ok[key] = m.new_bool_var(f"ok[{key}]")
        floor = g.min_count if g.min_count is not None else 1
        if g.kind == "PodGroup":
            run = sum(1 for p in running if p.group == key)
            m.add(new[key] + run >= floor).only_enforce_if(ok[key])
            m.add(new[key] + run <= floor - 1).only_enforce_if(~ok[key])
            if g.min_count is not None:
                m.add(new[key] == 0).only_enforce_if(~ok[key])
        else:
            kids = sum(ok[c] for c in children.get(key, ()))
            m.add(kids >= floor).only_enforce_if(ok[key])
            m.add(kids <= floor - 1).only_enforce_if(~ok[key])
            if g.min_count is not None:
                m.add(new[key] == 0).only_enforce_if(~ok[key])

    sat = {}
    for r in roots:
        sat[r] = m.new_bool_var(f"sat[{r}]")
        if r in groups:
            visit(r)
            m.add_implication(sat[r], ok[r])
            m.add(new[r] >= 1).only_enforce_if(sat[r])
        else:
            m.add(sum(v for (pk, _), v in x.items() if pk == r) >= 1).only_enforce_if(sat[r])

    # topology
    for key, g in groups.items():
        if g.topology_key is None or root_of_group(groups, key) not in roots:
            continue
        under = pods_under(key)
        fixed = {nodes[p.node].labels.get(g.topology_key) for p in under if p.node is not None}
        values = sorted({n.labels[g.topology_key] for n in snap.nodes if g.topology_key in n.labels})
        y = {v: m.new_bool_var(f"y[{key},{v}]") for v in values}
        m.add_at_most_one(list(y.values()))
        if None in fixed or len(fixed) > 1:
            for v in y.values():
                m.add(v == 0)
        elif fixed:
            for v, var in y.items():
                if v not in fixed:
                    m.add(var == 0)
        for p in under:
            if p.node is not None:
                continue
            for n in snap.nodes:
                if (p.key, n.name) not in x:
                    continue
                v = n.labels.get(g.topology_key)
                if v is None:
                    m.add(x[p.key, n.name] == 0)
                else:
                    m.add_implication(x[p.key, n.name], y[v])

    # PDBs and costs
    viol = []
    for b in snap.pdbs:
        matched = [p for p in running if p.namespace == b.namespace and selectors.label_selector_matches(b.selector, p.labels)]
        if not matched:
            continue
        v = m.new_int_var(0, len(matched), "")
        m.add(v >= sum(evicted_expr(unit_of[p.key]) for p in matched) - max(0, b.disruptions_allowed))
        viol.append(v)

    def cost_milli(p: s.Pod) -> int:
        return p.preemption_cost_milli if p.preemption_cost_milli is not None else 1000 * (1 + max(0, unit_prio[unit_of[p.key]]))

    cost = sum(cost_milli(p) * e[unit_of[p.key]] for p in running if unit_of[p.key] in e)
    evicted = sum(e[unit_of[p.key]] for p in running if unit_of[p.key] in e)
    placed = sum(x.values())

    max_evicted = len(running) + 1
    max_cost = sum(cost_milli(p) for p in running) + 1
    w_evicted = 1
    w_cost = max_evicted
    w_pdb = w_cost * max_cost
    w_placed = w_pdb * (len(running) + 1)
    weight = w_placed * (len(pending) + 1)
    obj = -w_pdb * sum(viol) - w_cost * cost - w_evicted * evicted + w_placed * placed
    by_level: dict[int, list] = defaultdict(list)
    for r in roots:
        by_level[prio[r]].append(sat[r])
    for level in sorted(by_level):
        obj = obj + weight * sum(by_level[level])  # never +=: it mutates the summed expression in place
        weight *= len(by_level[level]) + 1
    assert weight < 2**62
    m.maximize(obj)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = 60
    status = solver.solve(m)
    assert status == cp_model.OPTIMAL, solver.status_name(status)
    levels = tuple((lvl, sum(int(solver.value(v)) for v in by_level[lvl])) for lvl in sorted(by_level, reverse=True))
    return Tiers(
        satisfied_by_priority=levels,
        placed=int(solver.value(placed)) if x else 0,
        pdb_violations=sum(int(solver.value(v)) for v in viol),
        cost_milli=int(solver.value(cost)) if e else 0,
        evicted=int(solver.value(evicted)) if e else 0,
    )


def root_of_group(groups: dict[str, s.Group], key: str) -> str:
    while groups[key].parent:
        key = groups[key].parent
    return key
