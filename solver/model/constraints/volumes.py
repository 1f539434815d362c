"""NodeVolumeLimits (solver/filters/attach.py), and VolumeBinding's static local volumes
(solver/filters/localpv.py: per node, pool and size asked, ``Σ_c need(c)·count[c, n] ≤ have(n)``).

NodeVolumeLimits: per node and CSI driver with a limit,

    Σ_{v ∈ new(n, d)} on[n, v] ≤ limit[n, d] − |held(n, d)|
    count[c, n] ≤ most[c, n]·on[n, v]                        for every class c with volume v

held(n, d): the driver's volumes that the pods bound to n and its VolumeAttachments hold;
new(n, d): the other volumes of d of the classes with a count on n. A volume two classes
share counts once, as upstream counts a volume once per node. Rows that cannot bind are left
out; problem.py has already dropped the nodes where one class alone would pass a limit.

A node already past a driver's limit takes only classes whose volumes of it are all held
(the others are not candidates there), and each such volume must stay free: a pod holding it
is not evicted (attach.py):

    count[c, n] ≤ most[c, n]·free[n, v],   free[n, v] ≤ Σ_{u holds v} (1 − evict[u])
"""

from __future__ import annotations

from collections import defaultdict

from ortools.sat.python import cp_model

from solver.core import snapshot as s
from solver.filters import attach, localpv
from solver.model.vars import PlacementVars
from solver.problem.build import Problem
from solver.problem.workloads import PodClass


def add(problem: Problem, vars: PlacementVars) -> None:
    _local_volumes(problem, vars)
    nodes = {n.name: n for n in problem.nodes if n.volume_limits}
    if not nodes:
        return
    for name, classes in sorted(vars.classes_by_node().items()):
        node = nodes.get(name)
        if node is None:
            continue
        have = problem.held_volumes.get(name, frozenset())
        users: dict[attach.Volume, list[int]] = {}
        for cls in classes:
            for volumes in attach.new_volumes(node, have, cls.pods[0].csi_volumes).values():
                for vol in volumes:
                    users.setdefault(vol, []).append(cls.index)
        left = attach.room(node, have)
        _keep_free(problem, vars, node, classes, {d for d, n in left.items() if n < 0})
        for driver in sorted({v[0] for v in users}):
            mine = sorted(v for v in users if v[0] == driver)
            if len(mine) <= left[driver]:
                continue  # every one of them fits
            on = []
            for vol in mine:
                used = vars.model.new_bool_var(f"attached[{name},{vol[1]}]")
                for c in users[vol]:
                    vars.model.add(vars.count_on(c, name) <= problem.candidates[c][name] * used)
                on.append(used)
            vars.model.add(cp_model.LinearExpr.sum(on) <= max(0, left[driver]))


def _keep_free(problem: Problem, vars: PlacementVars, node: s.Node, classes: list[PodClass], past: set[str]) -> None:
    """On a node past the limits of the drivers ``past``: a class asking a volume of one keeps a
    pod holding it from being evicted."""
    if not past:
        return
    holders = problem.volume_holders.get(node.name, {})
    unit_of = {p.key: u.index for u in problem.units for p in u.members}
    free: dict[attach.Volume, cp_model.IntVar | None] = {}
    for cls in classes:
        for vol in cls.pods[0].csi_volumes:
            if vol[0] not in past or vol in node.attached_volumes:
                continue
            if vol not in free:
                units = {unit_of.get(p) for p in holders.get(vol, ())}
                if None in units or not units or not all(vars.has_evict(u) for u in units if u is not None):
                    free[vol] = None  # a holder no plan evicts
                else:
                    kept = vars.model.new_bool_var(f"free[{node.name},{vol[1]}]")
                    vars.model.add(kept <= cp_model.LinearExpr.sum([1 - vars.evicts(u) for u in sorted(
                        u for u in units if u is not None)]))
                    free[vol] = kept
            held = free[vol]
            if held is not None:
                vars.model.add(vars.count_on(cls.index, node.name) <= problem.candidates[cls.index][node.name] * held)


def _shared_claims(problem: Problem, vars: PlacementVars
                   ) -> dict[s.NodeName, list[tuple[tuple[str, frozenset[str]], int, cp_model.IntVar]]]:
    """A claim pending pods share that only node-local volumes serve (``Pod.shared_local``)
    binds once, to one volume of one node: bound[X, n] for at most one node n, every pod naming
    X placed only there. Per node, the claims that may take a volume there: (pool, size, bound)."""
    users: dict[str, list[int]] = defaultdict(list)
    asked: dict[str, tuple[tuple[str, frozenset[str]], int]] = {}
    for cls in problem.classes:
        for key, cls_name, modes, size in cls.pods[0].shared_local:
            users[key].append(cls.index)
            asked[key] = ((cls_name, modes), size)
    out: dict[s.NodeName, list[tuple[tuple[str, frozenset[str]], int, cp_model.IntVar]]] = defaultdict(list)
    for key, classes in sorted(users.items()):
        nodes = sorted({n for c in classes for n in vars.nodes_of(c)})
        bound = {n: vars.model.new_bool_var(f"bound[{key},{n}]") for n in nodes}
        vars.model.add_at_most_one(bound.values())
        for c in classes:
            for n, count in vars.nodes_of(c).items():
                vars.model.add(count <= problem.candidates[c][n] * bound[n])
        for n in nodes:
            out[n].append((*asked[key], bound[n]))
    return out


def _local_volumes(problem: Problem, vars: PlacementVars) -> None:
    """VolumeBinding's static local volumes (localpv.py): per node, pool and size t asked, the
    pool's claims of at least t placed there are at most the node's volumes of at least t; a
    claim pods share counts once, where it binds (``_shared_claims``)."""
    if not any(c.pods[0].local_claims or c.pods[0].shared_local for c in problem.classes):
        return
    shared = _shared_claims(problem, vars)
    nodes = {n.name: n for n in problem.nodes}
    for name, classes in sorted(vars.classes_by_node().items()):
        mine = [c for c in classes if c.pods[0].local_claims]
        pools: dict[tuple[str, frozenset[str]], set[int]] = {p: set(sizes) for p, sizes in
                                                            localpv.pools(c.pods[0] for c in mine).items()}
        for pool, size, _ in shared.get(name, ()):
            pools.setdefault(pool, set()).add(size)
        for pool in sorted(pools, key=lambda p: (p[0], sorted(p[1]))):
            for size in sorted(pools[pool]):
                asks = [(c, k) for c in mine if (k := localpv.need(c.pods[0], pool, size))]
                binds = [b for p, want, b in shared.get(name, ()) if p == pool and want >= size]
                supply = localpv.have(nodes[name], pool, size)
                if sum(k * problem.candidates[c.index][name] for c, k in asks) + len(binds) <= supply:
                    continue  # every pod that may go there has its volume
                vars.model.add(cp_model.LinearExpr.weighted_sum(
                    [vars.count_on(c.index, name) for c, _ in asks] + binds,
                    [k for _, k in asks] + [1] * len(binds)) <= supply)
