"""A proven bound on the first tier that knows a gang lives in one domain (issue 51, item 2).

The room bound (``room``) pools every node's room: two gangs that each need most of a rack
both fit by volume even when only one rack has room for either. Here each pending workload
whose root has a topology key is placed, in a relaxation, in one domain of that key or not at
all, and what the workloads placed in a domain need (``room._need``: the requests of the
fewest new pods that satisfy them, and their slots) stays within that domain's room
(``room._Tables.room`` over its nodes: allocatable less what no preemptor may evict, under
strict budgets what they allow added back). A domain's room also bounds every workload placed
in a domain inside it (a rack in its block); the cluster's room bounds them all, workloads
without a key too.

Per priority, strongest first, a small CP-SAT over workloads × domains (not nodes) finds the
most satisfied (their ``gangplace.io/value`` summed) with every stronger priority at its own
bound, proven or not used: each level is solved within what is left of ``seconds`` and the
first level not proven ends the bound there; building the model past half of ``seconds`` gives
no bound at all. Every step relaxes (node boundaries beyond the
slots, inter-pod rules, devices, eviction necessity, which victims a priority may evict: the
strongest preemptor's room serves all), so no plan satisfies more. ``room.satisfied_bound``
takes the levels as caps. Pure: no I/O.
"""

from __future__ import annotations

import time
from collections import defaultdict

import numpy as np
from ortools.sat.python import cp_model

from solver.core import snapshot as s
from solver.model.bounds import room
from solver.problem.build import Problem
from solver.problem.workloads import Workload

Domain = tuple[str, str]  # (topology key, value)


def satisfied_caps(problem: Problem, seconds: float) -> dict[int, int]:
    """Per priority, strongest first and as far as each level is proven within ``seconds``,
    the most any plan satisfies at it (values summed) when every stronger priority satisfies
    its cap. Empty when no pending workload's root has a topology key (the room bound is
    then as good) or the first level is not proven in time."""
    start = time.perf_counter()
    keyed = {w.index: key for w in problem.workloads
             if not w.rejected and (key := _key(problem, w)) is not None}
    if not keyed:
        return {}
    resources = sorted({r for c in problem.classes for r in c.requests})
    tables = room._Tables(problem, resources)
    strongest = room._power(problem, problem.workloads)
    domains = _domains(problem, set(keyed.values()))

    def late() -> bool:  # half of ``seconds`` is kept for the first level's search
        return time.perf_counter() - start > seconds / 2

    rooms: dict[Domain, np.ndarray] = {}
    for d, nodes in domains.items():
        rooms[d] = tables.room(set(nodes), strongest)
        if late():
            return {}
    everywhere = tables.room({n.name for n in problem.nodes}, strongest)
    inside = _inside(domains)
    width = len(resources) + 1

    model = cp_model.CpModel()
    placed: dict[int, list[cp_model.IntVar]] = defaultdict(list)  # workload -> its choices
    in_domain: dict[Domain, list[tuple[list[int], cp_model.IntVar]]] = defaultdict(list)
    every: list[tuple[list[int], cp_model.IntVar]] = []
    for w in problem.workloads:
        if w.rejected:
            continue
        if late():
            return {}
        need = room._need(problem, w, resources)
        key = keyed.get(w.index)
        where: list[Domain | None] = [None] if key is None else [
            d for d in domains if d[0] == key and all(n <= int(r) for n, r in zip(need, rooms[d], strict=True))]
        for at in where:
            x = model.new_bool_var("")
            placed[w.index].append(x)
            every.append((need, x))
            if at is not None:
                in_domain[at].append((need, x))
        if len(placed[w.index]) > 1:
            model.add(sum(placed[w.index]) <= 1)
    for outer in domains:
        terms = [t for d in inside[outer] for t in in_domain[d]]
        _within(model, terms, rooms[outer], width)
    _within(model, every, everywhere, width)

    caps: dict[int, int] = {}
    for level in sorted({w.priority for w in problem.workloads}, reverse=True):
        mine = [(w.value, x) for w in problem.workloads if w.priority == level for x in placed.get(w.index, ())]
        if not mine:
            caps[level] = 0
            continue
        left = seconds - (time.perf_counter() - start)
        if left <= 0:
            break
        objective = sum(v * x for v, x in mine)
        model.maximize(objective)
        solver = cp_model.CpSolver()
        solver.parameters.max_time_in_seconds = left
        solver.parameters.num_workers = 1
        if solver.solve(model) != cp_model.OPTIMAL:
            break
        caps[level] = round(solver.objective_value)
        model.add(objective >= caps[level])
    return caps


def _key(problem: Problem, w: Workload) -> str | None:
    """The topology key of the workload's root group: its pods live in one domain of it."""
    if w.kind == s.STANDALONE_POD:
        return None
    return problem.groups[w.groups[0]].topology_key


def _domains(problem: Problem, keys: set[str]) -> dict[Domain, frozenset[s.NodeName]]:
    """Each domain of ``keys``: the nodes labelled with that value (a node without the label
    is in no domain of its key: a gang that needs one cannot use it)."""
    nodes: dict[Domain, set[s.NodeName]] = defaultdict(set)
    for n in problem.nodes:
        for key in keys:
            if key in n.labels:
                nodes[key, n.labels[key]].add(n.name)
    return {d: frozenset(v) for d, v in sorted(nodes.items())}


def _inside(domains: dict[Domain, frozenset[s.NodeName]]) -> dict[Domain, list[Domain]]:
    """Per domain, the domains whose nodes are all among its own (itself included): found
    through one node of each, so with a few subset tests per domain, not one per pair."""
    by_node: dict[s.NodeName, list[Domain]] = defaultdict(list)
    for d, nodes in domains.items():
        for n in nodes:
            by_node[n].append(d)
    out: dict[Domain, list[Domain]] = {d: [] for d in domains}
    for d, nodes in domains.items():
        for outer in by_node[next(iter(nodes))]:
            if nodes <= domains[outer]:
                out[outer].append(d)
    return out


def _within(model: cp_model.CpModel, terms: list[tuple[list[int], cp_model.IntVar]], room_left: np.ndarray,
            width: int) -> None:
    """Per resource (and the slots), what the chosen terms need is at most ``room_left``."""
    for r in range(width):
        parts = [(need[r], x) for need, x in terms if need[r]]
        have = int(room_left[r])
        if parts and sum(n for n, _ in parts) > have:
            model.add(sum(n * x for n, x in parts) <= have)
