"""A naive reference model: one boolean per (pending pod, node), straight from docs/design.md.

Written independently of ``solver.model``: no classes, no aggregation, no
pruning, one weighted objective with Python-integer weights (instances are
tiny). Used by the property test to check the aggregated model's tiers.

DRA (``_Dra``), written from docs/design.md and the resource.k8s.io/v1 semantics, not from
``solver.problem.dra``: one boolean per (claim owner, request, alternative, device), where an
owner is a pending pod's unallocated per-pod claim, a PodGroup's shared claim, or a claim
several pending pods name (allocated once, like a PodGroup's: upstream pins the pods after the
first to the first one's allocation). It shares
only ``solver.cel.selects`` (CEL) and the node/taint predicates of ``selectors``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from ortools.sat.python import cp_model

from solver import cel
from solver.core import snapshot as s
from solver.filters import selectors


@dataclass(frozen=True)
class Tiers:
    satisfied_by_priority: tuple[tuple[int, int], ...]  # (priority, satisfied value), highest first
    placed: int
    pdb_violations: int
    cost_milli: int
    evicted: int


def naive_tiers(snap: s.ClusterSnapshot, *, strict_pdbs: bool = False, group_policy_gate: bool = False,
                dra_preemption: bool = True) -> Tiers:
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

    # gated pods and pods being deleted are never tried (SchedulingGates, skipPodSchedule)
    pending = [p for p in snap.pods if p.node is None and not p.scheduling_gates and not p.terminating]
    running = [p for p in snap.pods if p.node is not None]
    roots = sorted({root(p) for p in pending})
    prio = {r: (groups[r].priority if r in groups else next(p.priority for p in pending if p.key == r)) for r in roots}

    def root_policy(r: str) -> str:
        if r not in groups:
            return next(p.preemption_policy for p in pending if p.key == r)
        if group_policy_gate:
            return groups[r].preemption_policy or "PreemptLowerPriority"
        return "Never" if any(p.preemption_policy == "Never" for p in pending if root(p) == r) else "PreemptLowerPriority"

    policy = {r: root_policy(r) for r in roots}
    for r in roots:  # a preemption under way (victims terminating on a nominated node): no new one
        if any(q.preempted and q.node == p.nominated_node and q.priority < prio[r]
               for p in pending if root(p) == r and p.nominated_node for q in running):
            policy[r] = "Never"

    def refused(r: str) -> bool:  # validatePodGroup: one schedulerName, the root's priority, one policy
        if r not in groups:
            return False
        pods = [p for p in pending if root(p) == r] + [p for p in running if p.group and root(p) == r]
        names = {p.scheduler_name for p in pods}
        policies = {p.preemption_policy for p in pods}
        if group_policy_gate:
            policies.add(groups[r].preemption_policy or "PreemptLowerPriority")
        return len(names) > 1 or len(policies) > 1 or any(p.priority != groups[r].priority for p in pods)

    refused_roots = {r for r in roots if refused(r)}

    def pod_prio(p: s.Pod) -> int:
        return prio[root(p)]

    def pod_power(p: s.Pod) -> float:
        return float("-inf") if policy[root(p)] == "Never" else prio[root(p)]

    # victim units
    unit_of: dict[str, str] = {}
    for p in running:
        tops = [g for g in chain(p.group) if groups[g].disruption_all] if p.group and not p.terminating else []
        unit_of[p.key] = tops[-1] if tops else p.key
    members: dict[str, list[s.Pod]] = defaultdict(list)
    for p in running:
        members[unit_of[p.key]].append(p)
    unit_prio = {u: (groups[chain(ms[0].group)[-1]].priority if ms[0].group else ms[0].priority)
                 for u, ms in members.items()}
    # a pod being deleted is going already: never a victim
    protected = {u for u, ms in members.items() if any(root(p) in roots or p.terminating for p in ms)}

    m = cp_model.CpModel()
    nodes = {n.name: n for n in snap.nodes}
    x = {}
    for p in pending:
        if root(p) in refused_roots:
            continue
        for n in snap.nodes:
            if selectors.statically_feasible(p, n):
                x[p.key, n.name] = m.new_bool_var(f"x[{p.key},{n.name}]")
    for p in pending:
        m.add_at_most_one([v for (pk, _), v in x.items() if pk == p.key])
    e = {u: m.new_bool_var(f"e[{u}]") for u in members if u not in protected}

    def evicted_expr(u: str):
        return e.get(u, 0)

    # VolumeRestrictions' preemption: a pod whose ReadWriteOncePod claim running pods hold goes
    # only where they run (its static filter), and only once each is evicted by it
    for p in pending:
        for h in p.once_holders:
            u = unit_of.get(h)
            for n in snap.nodes:
                if (p.key, n.name) not in x:
                    continue
                if u is None or u not in e or pod_power(p) <= unit_prio[u]:
                    m.add(x[p.key, n.name] == 0)
                else:
                    m.add_implication(x[p.key, n.name], e[u])

    # capacity, enforced where a pod requesting r lands
    for n in snap.nodes:
        here = [p for p in pending if (p.key, n.name) in x]
        for r in sorted({r for p in here for r, v in p.requests.items() if v > 0}):
            req = [p for p in here if p.requests.get(r, 0) > 0]
            row = sum(p.requests[r] * x[p.key, n.name] for p in req) + sum(
                p.requests.get(r, 0) * (1 - evicted_expr(unit_of[p.key])) for p in running if p.node == n.name)
            for p in req:
                m.add(row <= n.allocatable.get(r, 0)).only_enforce_if(x[p.key, n.name])

    # NodeVolumeLimits, pod by pod: a node's CSI volumes per driver (each once) within its
    # CSINode's count; what its pods and VolumeAttachments hold stays counted (victims' too),
    # and a pod asking only held volumes passes a node past the limit while a holder stays
    for n in snap.nodes:
        held = set(n.attached_volumes).union(*(p.csi_volumes for p in running if p.node == n.name))
        for driver, limit in sorted(n.volume_limits.items()):
            left = limit - sum(1 for d, _ in held if d == driver)
            users: dict[str, list[s.Pod]] = defaultdict(list)
            for p in pending:
                for d, v in p.csi_volumes:
                    if d == driver and (p.key, n.name) in x:
                        users[v].append(p)
            used = []
            for v, ps in sorted(users.items()):
                if (driver, v) in held:
                    if left < 0 and (driver, v) not in n.attached_volumes:
                        kept = [1 - evicted_expr(unit_of[q.key]) for q in running
                                if q.node == n.name and (driver, v) in q.csi_volumes]
                        for p in ps:
                            m.add(sum(kept) >= 1).only_enforce_if(x[p.key, n.name])
                    continue
                on = m.new_bool_var("")
                for p in ps:
                    m.add_implication(x[p.key, n.name], on)
                used.append(on)
            if used:
                m.add(sum(used) <= max(0, left))

    # VolumeBinding's static local volumes: each claim of a pod placed on n takes a volume of n
    # of its own (the claim's pool, access modes within the volume's, room), no volume twice; a
    # claim pods share takes one volume, of one node, and every pod naming it is on that node
    shared: dict[str, list[s.Pod]] = defaultdict(list)
    shared_ask: dict[str, tuple[str, frozenset[str], int]] = {}
    for p in pending:
        for key, pool, modes, size in p.shared_local:
            shared[key].append(p)
            shared_ask[key] = (pool, modes, size)
    shared_takes: dict[str, list] = defaultdict(list)  # claim -> its (node, volume) takes
    for n in snap.nodes:
        volumes = [(pool, i, size, modes) for pool, held_here in n.local_volumes.items()
                   for i, (size, modes) in enumerate(held_here)]
        takers: dict[tuple[str, int], list] = defaultdict(list)

        def takes(pool: str, modes: frozenset[str], size: int, volumes: list = volumes,
                  takers: dict = takers) -> list:
            """A literal per volume of n a claim of (pool, modes, size) may take."""
            out = []
            for vpool, i, vsize, vmodes in volumes:
                if vpool == pool and vsize >= size and modes <= vmodes:
                    out.append(m.new_bool_var(""))
                    takers[vpool, i].append(out[-1])
            return out

        for key, users in sorted(shared.items()):
            here = takes(*shared_ask[key])
            shared_takes[key].append(here)
            for p in users:
                if (p.key, n.name) in x:
                    m.add(x[p.key, n.name] <= sum(here))
        for p in pending:
            if (p.key, n.name) not in x:
                continue
            for pool, modes, size in p.local_claims:
                m.add(sum(takes(pool, modes, size)) == x[p.key, n.name])
        for takes in takers.values():
            m.add(sum(takes) <= 1)
    for per_node in shared_takes.values():
        m.add(sum(t for here in per_node for t in here) <= 1)

    dra = _Dra(m, snap, pending, running, x, e, unit_of, pod_power, dra_preemption)
    conflict_lits = _inter_pod(m, snap, pending, running, x, e, unit_of, unit_prio, pod_power)

    # necessity of every eviction
    for u, ev in e.items():
        lits = list(dra.need_literals(u, unit_prio[u])) + conflict_lits.get(u, [])
        lits += [v for (pk, nn), v in x.items() for p in pending if p.key == pk and pod_power(p) > unit_prio[u]
                 and any(unit_of.get(h) == u for h in p.once_holders)]
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

    # PDBs and costs; under strict budgets as the Eviction API spends them: a pod two budgets
    # select is never evicted, an unready pod its budget lets go spends nothing, and a budget
    # whose status lags its generation refuses every pod that would spend
    def selecting(p: s.Pod) -> list[s.PodDisruptionBudget]:
        return [b for b in snap.pdbs if p.namespace == b.namespace and selectors.label_selector_matches(b.selector, p.labels)]

    def spends(p: s.Pod, b: s.PodDisruptionBudget) -> bool:
        if not strict_pdbs:
            return True
        if p.starting:
            return False  # phase Pending: the Eviction API asks no budget
        lets_go = b.unhealthy_policy == "AlwaysAllow" or (b.desired_healthy > 0 and b.current_healthy >= b.desired_healthy)
        return p.ready or not lets_go

    if strict_pdbs:
        for p in running:
            mine = selecting(p)
            if unit_of[p.key] in e and not p.starting and (len(mine) > 1 or (len(mine) == 1 and spends(p, mine[0])
                                        and mine[0].observed_generation < mine[0].generation)):
                m.add(e[unit_of[p.key]] == 0)
    viol = []
    max_viol = 0  # a pod two budgets select counts against each
    for b in snap.pdbs:
        matched = [p for p in running if b in selecting(p) and spends(p, b)]
        if not matched:
            continue
        max_viol += len(matched)
        v = m.new_int_var(0, len(matched), "")
        m.add(v >= sum(evicted_expr(unit_of[p.key]) for p in matched) - max(0, b.disruptions_allowed))
        if strict_pdbs:
            m.add(v == 0)
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
    w_placed = w_pdb * (max_viol + 1)
    weight = w_placed * (len(pending) + 1)
    obj = -w_pdb * sum(viol) - w_cost * cost - w_evicted * evicted + w_placed * placed
    # a workload's worth: gangplace.io/value on its root (the group, or the standalone pod), else 1
    def worth(r: str) -> int:
        annotated = groups[r].value if r in groups else next(p.value for p in pending if p.key == r)
        return 1 if annotated is None else annotated

    by_level: dict[int, list] = defaultdict(list)
    for r in roots:
        by_level[prio[r]].append(worth(r) * sat[r])
    for level in sorted(by_level):
        obj = obj + weight * sum(by_level[level])  # never +=: it mutates the summed expression in place
        weight *= sum(worth(r) for r in roots if prio[r] == level) + 1
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


def _inter_pod(m: cp_model.CpModel, snap: s.ClusterSnapshot, pending: list[s.Pod], running: list[s.Pod],
               x: dict, e: dict, unit_of: dict[str, str], unit_prio: dict[str, int], pod_power
               ) -> dict[str, list]:
    """Required pod (anti-)affinity, DoNotSchedule spread and host ports, pod by pod and node by
    node, on the plan's end state (running pods not evicted and the placed ones; two running
    pods are never checked against each other). Returns, per victim unit, the literals that
    make its eviction necessary: a pod that may preempt it lands where they conflict.

    - anti-affinity: a term of A matching B forbids A and B in one domain of its key;
    - host ports: two pods asking for conflicting ports (same protocol and port, one IP or
      0.0.0.0) never share a node; nor do two pods with one inline disk, unless both mount it
      read-only (VolumeRestrictions);
    - affinity: a pod's node has every term's key; per group of pending pods with the same
      terms, in each term's domain holding one of them: a running pod (not evicted) matching
      all the terms, or a placed pending pod without affinity terms matching them, or the
      group's single first pod (allowed when no running pod and no pending pod outside the
      group matches, and the group's pods match their own terms);
    - spread: in a placed pod's domain the matching pods (same namespace, selector, not
      terminating; on the nodes eligible for it) exceed the fewest of any eligible domain (0
      with fewer domains than minDomains) by at most maxSkew.
    """
    ns_labels = snap.namespace_labels
    nodes = {n.name: n for n in snap.nodes}

    def nsl(p: s.Pod):
        return ns_labels.get(p.namespace) or {"kubernetes.io/metadata.name": p.namespace}

    def at(p: s.Pod, n: str):
        """1 when pod p is on node n in the end state (an expression)."""
        if p.node is not None:
            if p.node != n:
                return 0
            u = unit_of[p.key]
            return 1 - e[u] if u in e else 1
        return x.get((p.key, n), 0)

    def same(key: str, a: str, b: str) -> bool:
        return key in nodes[a].labels and nodes[a].labels[key] == nodes[b].labels.get(key)

    def term_matches(t: s.PodAffinityTerm, p: s.Pod) -> bool:
        if t.selector is None:
            return False
        if p.namespace not in t.namespaces and (t.namespace_selector is None or not
                                                selectors.label_selector_matches(t.namespace_selector, nsl(p))):
            return False
        return selectors.label_selector_matches(t.selector, p.labels)

    def clash(a: s.Pod, b: s.Pod) -> bool:
        return any(x_.protocol == y.protocol and x_.port == y.port and (x_.ip == y.ip or "0.0.0.0" in (x_.ip, y.ip))
                   for x_ in a.host_ports for y in b.host_ports)

    def disk_clash(a: s.Pod, b: s.Pod) -> bool:  # one disk (an id of one source), not both read-only
        return any(d.source == f.source and not (d.read_only and f.read_only) and set(d.ids) & set(f.ids)
                   for d in a.disks for f in b.disks)

    everyone = pending + running
    needs: dict[str, list] = defaultdict(list)

    def forbid(a: s.Pod, na: str, b: s.Pod, nb: str) -> None:
        va, vb = at(a, na), at(b, nb)
        if isinstance(va, int) and isinstance(vb, int):
            if va and vb:
                raise AssertionError("two fixed pods in conflict")  # only running ones: never checked
            return
        m.add(va + vb <= 1)
        # p pending on n, q running on its node qn: a reason to evict q, if q is where it conflicts
        for p, q, n, qn in ((a, b, na, nb), (b, a, nb, na)):
            if p.node is None and q.node == qn and unit_of[q.key] in e and \
                    pod_power(p) > unit_prio[unit_of[q.key]] and (p.key, n) in x:
                needs[unit_of[q.key]].append(x[p.key, n])

    for a in everyone:
        for b in everyone:
            if a.key == b.key or (a.node is not None and b.node is not None):
                continue
            for t in a.pod_anti_affinity:
                if not term_matches(t, b):
                    continue
                for na in nodes:
                    for nb in nodes:
                        if same(t.topology_key, na, nb):
                            forbid(a, na, b, nb)
            if (a.key < b.key or b.node is not None) and ((a.host_ports and b.host_ports and clash(a, b))
                                                          or (a.disks and b.disks and disk_clash(a, b))):
                for n in nodes:
                    forbid(a, n, b, n)

    # affinity
    groups: dict[tuple, list[s.Pod]] = defaultdict(list)
    for p in pending:
        if p.pod_affinity:
            groups[p.pod_affinity].append(p)
    for terms, group in groups.items():
        def all_match(q: s.Pod, terms: tuple = terms) -> bool:
            return all(term_matches(t, q) for t in terms)

        base = [q for q in running if all_match(q)] + [q for q in pending if not q.pod_affinity and all_match(q)]
        first_ok = (not any(all_match(q) for q in running)
                    and all(q.pod_affinity == terms for q in pending if all_match(q))
                    and all(all_match(q) for q in group))
        first = {}
        if first_ok:
            first = {(p.key, n): m.new_bool_var("") for p in group for n in nodes if (p.key, n) in x}
            for (pk, n), f in first.items():
                m.add_implication(f, x[pk, n])
            m.add(sum(first.values()) <= 1)
        for p in group:
            for n in nodes:
                if (p.key, n) not in x:
                    continue
                if any(t.topology_key not in nodes[n].labels for t in terms):
                    m.add(x[p.key, n] == 0)
                    continue
                for t in terms:
                    dom = [n2 for n2 in nodes if same(t.topology_key, n, n2)]
                    support = [at(q, n2) for q in base for n2 in dom if q.key != p.key]
                    support += [f for (qk, n2), f in first.items() if n2 in dom]
                    m.add(sum(support) >= 1).only_enforce_if(x[p.key, n])

    # spread
    for p in pending:
        for c in p.spread:
            eligible = [n for n in nodes if c.topology_key in nodes[n].labels
                        and all(o.topology_key in nodes[n].labels for o in p.spread)
                        and (not c.honor_node_affinity or selectors.affinity_matches(p, nodes[n]))
                        and (not c.honor_node_taints or selectors.taints_tolerated(p, nodes[n]))]
            counted = [q for q in everyone if q.namespace == p.namespace and not q.terminating
                       and c.selector is not None and selectors.label_selector_matches(c.selector, q.labels)]
            values = sorted({nodes[n].labels[c.topology_key] for n in eligible})
            cnt = {v: sum(at(q, n) for q in counted for n in eligible if nodes[n].labels[c.topology_key] == v)
                   for v in values}
            if len(values) < (c.min_domains or 1):
                low = 0
            else:
                low = m.new_int_var(0, len(everyone), "")
                for v in values:
                    m.add(low <= cnt[v])
            for n in nodes:
                if (p.key, n) not in x:
                    continue
                if n not in eligible:
                    m.add(x[p.key, n] == 0)
                else:
                    m.add(cnt[nodes[n].labels[c.topology_key]] <= low + c.max_skew).only_enforce_if(x[p.key, n])
            # a victim counted here, put back, would push p's domain past maxSkew: it is needed
            for u in sorted({unit_of[q.key] for q in counted if q.node is not None and unit_of[q.key] in e}):
                if pod_power(p) <= unit_prio[u]:
                    continue
                k = {v: sum(1 for q in counted if q.node in eligible and unit_of.get(q.key) == u
                            and nodes[q.node].labels[c.topology_key] == v) for v in values}
                back = {v: cnt[v] + k[v] for v in values}
                if len(values) < (c.min_domains or 1):
                    low_back = 0
                else:
                    low_back = m.new_int_var(0, 2 * len(everyone), "")
                    m.add_min_equality(low_back, list(back.values()))
                for n in eligible:
                    if (p.key, n) in x and k[nodes[n].labels[c.topology_key]]:
                        lit = m.new_bool_var("")
                        m.add_implication(lit, x[p.key, n])
                        m.add(back[nodes[n].labels[c.topology_key]] >= low_back + c.max_skew + 1).only_enforce_if(lit)
                        needs[u].append(lit)
    return needs


def root_of_group(groups: dict[str, s.Group], key: str) -> str:
    while groups[key].parent:
        key = groups[key].parent
    return key


# ---- DRA ---------------------------------------------------------------------------------

DRA_TAINT_EFFECTS = ("NoSchedule", "NoExecute")


def _typed_attribute(dev: s.Device, qualified: str) -> tuple[str, object] | None:
    """A device attribute by its qualified name (an unqualified one is in the driver's domain),
    typed so that True and 1 differ; None when the device does not have it."""
    domain, _, name = qualified.rpartition("/")
    value = dev.attributes.get(domain or dev.driver, {}).get(name)
    return None if value is None else (type(value).__name__, value)


class _Dra:
    """Device booleans z[owner, request, alternative, device] and their rules.

    - An owner's claim is allocated iff its gate holds: the pod is placed (per-pod claim), or
      any sharer of a PodGroup's shared claim is placed.
    - Per request exactly one alternative (firstAvailable entry) is chosen; ExactCount takes
      ``count`` devices (distinct ones, except that an allowMultipleAllocations device may be
      given again: it is never used up), All every device the alternative selects (class and request
      CEL, untolerated NoSchedule/NoExecute taints) that is reachable from the claim's node
      (a shared claim: the node of one of its placed sharers), at least one.
    - A device taken must be reachable from the node of every placed pod using the claim.
    - matchAttribute: the covered devices share one value; distinctAttribute: pairwise
      different values; a device without the attribute cannot be taken for covered requests.
    - Each device (unless allowMultipleAllocations) is taken at most once, and only when free:
      a device of an existing allocation is free once every consumer in its claim's
      reservedFor (pods; running pods of reserved PodGroups) is evicted; an allocation with no
      consumer, or one that is not an evictable running pod, holds it for good.
    - A pending pod using an already allocated claim lands where that allocation is usable.
    - Consumable capacity: a request fits a device only if every capacity it names exists and
      the amount consumed of each of the device's capacities (asked, rounded up by the
      requestPolicy; else the default; else all of it) obeys the policy and the capacity. An
      allowMultipleAllocations device is shared: per capacity, the new shares plus the existing
      shares (results with a shareID) still held stay within it; it consumes its counters once
      while any share uses it. One holding a result without a shareID is in use whole.
    """

    def __init__(self, m: cp_model.CpModel, snap: s.ClusterSnapshot, pending: list[s.Pod],
                 running: list[s.Pod], x: dict, e: dict, unit_of: dict[str, str], pod_power,
                 dra_preemption: bool = True) -> None:
        self.m = m
        state = snap.dra
        self.state = state
        self.devices = list(state.devices)
        self.by_key = {d.key: d for d in self.devices}
        names = {n.name for n in snap.nodes}
        self.reach: dict[s.DeviceKey, set[str]] = {}
        for d in self.devices:
            if d.node is not None:
                self.reach[d.key] = {d.node} & names
            elif d.all_nodes:
                self.reach[d.key] = set(names)
            else:
                self.reach[d.key] = {n.name for n in snap.nodes
                                     if any(selectors.term_matches(t, n) for t in d.node_selector)}
        self.x_of: dict[str, dict[str, cp_model.IntVar]] = defaultdict(dict)
        for (pk, nn), v in x.items():
            self.x_of[pk][nn] = v
        self.takers: dict[s.DeviceKey, list[tuple[float, cp_model.IntVar]]] = defaultdict(list)
        self.admin: dict[s.DeviceKey, list[cp_model.IntVar]] = defaultdict(list)  # admin-access takes
        self.uses: dict[s.DeviceKey, list[tuple[cp_model.IntVar, dict[str, int]]]] = defaultdict(list)
        # existing shares of shareable devices: (the units whose eviction frees it, or None for
        # good; the pending pods' placements keeping its claim; what it consumes)
        self.shares: dict[s.DeviceKey, list[tuple[set[str] | None, list[cp_model.IntVar], dict[str, int]]]] = \
            defaultdict(list)
        self._answers: dict[tuple[s.SubRequest, s.DeviceKey], bool | None] = {}

        # existing allocations: which units free each held device (a pending pod placed with the
        # claim keeps it allocated)
        self.holders: dict[s.DeviceKey, set[str]] = defaultdict(set)
        kept: dict[s.DeviceKey, list[cp_model.IntVar]] = defaultdict(list)
        for_good: set[s.DeviceKey] = set()
        self.for_good = for_good
        for claim in state.claims.values():
            if claim.allocation is None:
                continue
            consumers = list(claim.reserved_pods) + [p.key for p in running if p.group in claim.reserved_groups]
            units = {unit_of.get(c) for c in consumers}
            freeable = dra_preemption and bool(consumers) and not claim.reserved_other and \
                all(u is not None and u in e for u in units)
            users = [v for p in pending if any(pc.claim == claim.key for pc in state.pod_claims.get(p.key, ()))
                     for v in self.x_of[p.key].values()]
            for a in claim.allocation:
                if a.admin_access:
                    continue  # an admin-access result holds nothing
                if a.share_id is not None:
                    self.shares[a.device].append((units if freeable else None, users, dict(a.consumed)))  # type: ignore[arg-type]
                    continue
                if freeable:
                    self.holders[a.device] |= units  # type: ignore[arg-type]
                    kept[a.device] += users
                else:
                    for_good.add(a.device)

        # owners
        sharers: dict[tuple[str, str], list[s.Pod]] = defaultdict(list)
        shared_claim: dict[tuple[str, str], s.Claim] = {}
        # a per-pod claim several pending pods name is allocated once, as a PodGroup's is
        naming = Counter(pc.claim for p in pending for pc in state.pod_claims.get(p.key, ()) if pc.shared_by is None)
        for p in pending:
            for pc in state.pod_claims.get(p.key, ()):
                claim = state.claims[pc.claim]
                if claim.allocation is not None:
                    self._pin(snap, p, claim)
                elif pc.shared_by is not None:
                    sharers[pc.shared_by, pc.name].append(p)
                    shared_claim[pc.shared_by, pc.name] = claim
                elif naming[pc.claim] > 1:
                    sharers["", str(pc.claim)].append(p)
                    shared_claim["", str(pc.claim)] = claim
                else:
                    gate = cp_model.LinearExpr.sum(list(self.x_of[p.key].values()))
                    self._owner(claim, gate, dict(self.x_of[p.key]), [p], pod_power(p))
        # reservedFor holds at most 256 consumers: each pod bound with a per-pod claim that is
        # allocated, or that several pending pods name, joins it unless listed already, directly
        # or through its PodGroup
        joining: dict[str, list[s.Pod]] = defaultdict(list)
        for p in pending:
            for pc in state.pod_claims.get(p.key, ()):
                claim = state.claims[pc.claim]
                if pc.shared_by is None and (claim.allocation is not None or naming[pc.claim] > 1) \
                        and p.key not in claim.reserved_pods and str(p.group) not in claim.reserved_groups:
                    joining[str(pc.claim)].append(p)
        for key, pods in sorted(joining.items()):
            claim = state.claims[s.ClaimKey(key)]
            room = 256 - len(claim.reserved_pods) - len(claim.reserved_groups) - len(claim.reserved_other)
            m.add(cp_model.LinearExpr.sum([v for p in pods for v in self.x_of[p.key].values()]) <= room)
        for key in sorted(sharers):
            pods = sharers[key]
            xs = [v for p in pods for v in self.x_of[p.key].values()]
            used = m.new_bool_var(f"used[{key}]")
            for v in xs:
                m.add_implication(v, used)
            m.add(cp_model.LinearExpr.sum(xs) >= 1).only_enforce_if(used)
            site_nodes = sorted({nn for p in pods for nn in self.x_of[p.key]})
            sites = {nn: m.new_bool_var(f"site[{key},{nn}]") for nn in site_nodes}
            m.add(cp_model.LinearExpr.sum(list(sites.values())) == used)
            for nn, sv in sites.items():
                m.add(cp_model.LinearExpr.sum([self.x_of[p.key][nn] for p in pods if nn in self.x_of[p.key]]) >= 1
                      ).only_enforce_if(sv)
            self._owner(shared_claim[key], used, sites, pods, max(pod_power(p) for p in pods))

        # supply; and per device whether it is in use at the end (partitionable devices' counters)
        in_use: dict[s.DeviceKey, cp_model.LinearExprT] = {}
        for d in self.devices:
            if d.allow_multiple and d.key not in self.holders and d.key not in for_good:
                self._shared_device(d, e, in_use)
                continue
            if not self.takers.get(d.key) and not d.consumes:
                continue
            row = cp_model.LinearExpr.sum([z for _, z in self.takers.get(d.key, ())])
            # admin-access takes use nothing up, but their counters are charged, each one
            admin = cp_model.LinearExpr.sum(self.admin.get(d.key, []))
            if d.key in for_good:
                m.add(row == 0)
                in_use[d.key] = 1 + admin
            elif d.key in self.holders:
                freed = m.new_bool_var(f"freed[{d.key}]")
                for u in sorted(self.holders[d.key]):
                    m.add_implication(freed, e[u])
                for v in kept.get(d.key, ()):
                    m.add_implication(freed, ~v)
                m.add(row <= freed)
                in_use[d.key] = row + 1 - freed + admin
            else:
                m.add(row <= 1)
                in_use[d.key] = row + admin
        # counters: what the devices in use consume, per counter of each counter set
        for set_key, amounts in state.counters.items():
            for counter, amount in amounts.items():
                terms = [in_use[d.key] * need for d in self.devices if d.key in in_use
                         for k, c, need in d.consumes if (k, c) == (set_key, counter)]
                if terms:
                    m.add(cp_model.LinearExpr.sum(terms) <= amount)

    def _shared_device(self, d: s.Device, e: dict, in_use: dict[s.DeviceKey, cp_model.LinearExprT]) -> None:
        m = self.m
        held: list[tuple[cp_model.LinearExprT, dict[str, int]]] = []  # (1 while held, what it consumes)
        for k, (units, keepers, used) in enumerate(self.shares.get(d.key, ())):
            if units is None:
                held.append((1, used))
                continue
            freed = m.new_bool_var(f"share_freed[{d.key},{k}]")
            for u in sorted(units):
                m.add_implication(freed, e[u])
            for v in keepers:
                m.add_implication(freed, ~v)
            held.append((1 - freed, used))
        for cap in d.consumable:
            row = [z * use.get(cap.name, 0) for z, use in self.uses.get(d.key, ())]
            row += [h * used.get(cap.name, 0) for h, used in held]
            m.add(cp_model.LinearExpr.sum(row) <= cap.value)
        if d.consumes:
            busy = m.new_bool_var(f"busy[{d.key}]")
            for z, _ in self.uses.get(d.key, ()):
                m.add_implication(z, busy)
            for h, _ in held:
                m.add(busy >= h)
            in_use[d.key] = busy

    def fits(self, sub: s.SubRequest, dev: s.Device) -> dict[str, int] | None:
        """What one allocation of ``dev`` for ``sub`` consumes, per capacity; None: it does not fit."""
        asked = dict(sub.capacity)
        caps = {c.name: c for c in dev.consumable}
        if not set(asked) <= set(caps):
            return None
        out = {}
        for name, cap in caps.items():
            pol = cap.policy
            if name not in asked:
                use = pol.default if pol is not None and pol.default is not None else cap.value
            elif pol is not None and pol.min is not None:
                use = max(asked[name], pol.min)
                if pol.step is not None and asked[name] >= pol.min:  # the next whole step from min, in
                    low, step = -(-pol.min // 1000), -(-pol.step // 1000)  # whole units (the fractional
                    use = (low + (-(-asked[name] // 1000) - low + step - 1) // step * step) * 1000  # gate is off)
            elif pol is not None and pol.valid_values:
                use = min((v for v in pol.valid_values if v >= asked[name]), default=asked[name])
            else:
                use = asked[name]
            ok = use <= cap.value
            if pol is not None and use != pol.default:
                if pol.min is not None:
                    ok = ok and (pol.max is None or use <= pol.max)
                elif pol.valid_values:
                    ok = ok and use in pol.valid_values
            if not ok:
                return None
            out[name] = use
        return out

    def _judge(self, sub: s.SubRequest, dev: s.Device) -> bool | str | None:
        """The selectors (None: one fails at run time), then whether the request fits the device
        on its own, then its taints ("tainted": selected, but a taint is not tolerated)."""
        key = (sub, dev.key)
        if key not in self._answers:
            dclass = self.state.classes.get(sub.device_class)
            answer: bool | str | None = False
            if dclass is not None:
                try:
                    answer = all(cel.selects(expr, dev) for expr in (*dclass.selectors, *sub.selectors))
                except cel.CelRuntimeError:
                    answer = None
                if answer and self.fits(sub, dev) is None:
                    answer = False
                if answer and any(t.effect in DRA_TAINT_EFFECTS and not any(selectors.tolerates(tol, t)
                                                                            for tol in sub.tolerations)
                                  for t in dev.taints):
                    answer = "tainted"
            self._answers[key] = answer
        return self._answers[key]

    def takes(self, sub: s.SubRequest, dev: s.Device) -> bool | None:
        """Does the alternative take the device? None: a CEL selector fails on it at run time."""
        answer = self._judge(sub, dev)
        return None if answer is None else answer is True

    def tainted(self, sub: s.SubRequest, dev: s.Device) -> bool:
        """Selected, but with a taint the alternative does not tolerate (All mode cannot take it)."""
        return self._judge(sub, dev) == "tainted"

    def _pin(self, snap: s.ClusterSnapshot, pod: s.Pod, claim: s.Claim) -> None:
        for n in snap.nodes:
            v = self.x_of[pod.key].get(n.name)
            if v is None:
                continue
            ok = not claim.allocation_nodes or any(selectors.term_matches(t, n) for t in claim.allocation_nodes)
            ok = ok and all(n.name in self.reach[a.device] for a in claim.allocation or () if a.device in self.reach)
            if not ok:
                self.m.add(v == 0)

    def _owner(self, claim: s.Claim, gate, sites: dict[str, cp_model.IntVar], pods: list[s.Pod],
               power: float) -> None:
        """The claim is allocated iff ``gate``; ``sites``: node -> the claim is allocated from there
        (exactly one when allocated); ``pods``: every pod that must reach its devices."""
        m = self.m
        spec = claim.spec

        def covers(con: s.Constraint, req: s.Request) -> bool:
            return not con.requests or req.name in con.requests

        taken: dict[int, list[tuple[s.Device, cp_model.IntVar]]] = defaultdict(list)
        for j, req in enumerate(spec.requests):
            attrs = {a for con in spec.constraints if covers(con, req)
                     for a in (con.match_attribute, con.distinct_attribute) if a}
            alts = []
            for a, sub in enumerate(req.alternatives):
                alt = m.new_bool_var(f"alt[{claim.key},{j},{a}]")
                alts.append(alt)
                answers = {d.key: self.takes(sub, d) for d in self.devices}
                if any(v is None for v in answers.values()):
                    m.add(alt == 0)  # upstream aborts the allocation on a selector's run-time error
                    continue
                selected = [d for d in self.devices if answers[d.key]]
                usable = [d for d in selected if all(_typed_attribute(d, at) is not None for at in attrs)]
                # a request takes a device at most once, shareable or not (the allocator moves past it)
                z = {d.key: m.new_bool_var(f"z[{claim.key},{j},{a},{d.key}]") for d in usable}
                for d in usable:
                    m.add(z[d.key] <= alt)
                    # admin access takes a device in use or not and uses nothing up, its counters
                    # aside (charged, as the product does); a share of a shared device is a share
                    if sub.admin_access and not (d.allow_multiple and d.key not in self.holders
                                                 and d.key not in self.for_good):
                        self.admin[d.key].append(z[d.key])
                    else:
                        self.takers[d.key].append((power, z[d.key]))
                        self.uses[d.key].append((z[d.key], self.fits(sub, d) or {}))
                    taken[j].append((d, z[d.key]))
                    for p in pods:  # reachable from every placed pod using the claim
                        for nn, xv in self.x_of[p.key].items():
                            if nn not in self.reach[d.key]:
                                m.add(z[d.key] == 0).only_enforce_if(xv)
                if sub.all_mode:
                    barred = [d for d in self.devices if self.tainted(sub, d)]
                    for nn, sv in sites.items():
                        here = [d for d in selected if nn in self.reach[d.key]]
                        if not here or any(d.key not in z for d in here) or any(nn in self.reach[d.key]
                                                                                for d in barred):
                            m.add(sv + alt <= 1)  # nothing there, or a device the constraint cannot take
                            continue
                        for d in here:
                            m.add(z[d.key] >= sv + alt - 1)
                else:
                    m.add(cp_model.LinearExpr.sum(list(z.values())) == sub.count * alt)
            m.add(cp_model.LinearExpr.sum(alts) == gate)
        for k, con in enumerate(spec.constraints):
            covered = [dz for j, req in enumerate(spec.requests) if covers(con, req) for dz in taken[j]]
            if con.match_attribute:
                values = sorted({_typed_attribute(d, con.match_attribute) for d, _ in covered}, key=repr)
                mv = {v: m.new_bool_var(f"match[{claim.key},{k},{v}]") for v in values}
                m.add_at_most_one(list(mv.values()))
                for d, zv in covered:
                    m.add(zv == 0).only_enforce_if(~mv[_typed_attribute(d, con.match_attribute)])
            if con.distinct_attribute:
                by_value: dict[object, list[cp_model.IntVar]] = defaultdict(list)
                for d, zv in covered:
                    by_value[_typed_attribute(d, con.distinct_attribute)].append(zv)
                for group in by_value.values():
                    m.add(cp_model.LinearExpr.sum(group) <= 1)

    def need_literals(self, unit: str, prio: int):
        """Literals "a device the unit's claims hold is taken by an owner that may preempt it"."""
        for key in sorted(set(self.holders) | set(self.shares)):
            dev = self.by_key.get(key)
            holds = unit in self.holders.get(key, ()) or any(unit in (units or ()) for units, _, _ in
                                                             self.shares.get(key, ()))
            if not holds or dev is None:
                continue
            takers = [z for power, z in self.takers.get(key, ()) if power > prio]
            if not takers:
                continue
            lit = self.m.new_bool_var(f"need_dev[{unit},{key}]")
            self.m.add(cp_model.LinearExpr.sum(takers) >= 1).only_enforce_if(lit)
            yield lit
