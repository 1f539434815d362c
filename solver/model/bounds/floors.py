"""Proven floors on PDB violations and cost for one gang tree, and plans that meet them when they can.

The LP relaxation of the placement model cannot see that a gang must fit inside one
rack: it spreads fractions of every group over every rack, finds room without evicting
anything a budget covers, and leaves the PDB stage's bound at 0 (docs/performance.md).
This module computes the floor the model cannot, from the workload tree, with exact
dynamic programs over small pieces:

- per node, the most pods of the workload's one shape that fit when every eligible victim
  no budget covers is gone and at most ``x`` budget-counted pods go, for each ``x``
  (each resource alone takes its best victims, so it can only overestimate the room);
- per domain of a leaf group's topology key (a rack), the fewest budget-counted evictions
  for ``k`` pods: a knapsack over the domain's nodes;
- per domain of the root's key (a zone), the fewest for its identical child groups, each
  in one rack of the zone, racks shared or not: a knapsack over racks.

Every step relaxes, so the result is a lower bound on the budget-counted evictions of any
plan that places every pending pod; each such eviction adds one to some budget's count,
so ``violations ≥ evictions − Σ allowed``. Once stage 1 has placed every pod, the solver
ends the PDB stage, proven, as soon as a plan meets that floor (``solve``); the floor is
never a constraint of the model. ``cost_floor`` does the same for the preemption cost.

The same choice, taken back through the programs, is also built as a plan (each node's
evictions chosen for its tightest resource, checked on every resource) for the solver's
hint; victims it evicted without need are put back.

Applies to a problem of one workload whose pending pods share one shape, with no DRA
claims and no inter-pod rules or host ports, whose tree is a PodGroup or a
CompositePodGroup of PodGroups with the same key and the same number of pending pods.
Anything else gets no floor (None), never a wrong one.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from solver.core import snapshot as s
from solver.core.plan import WouldTake
from solver.core.stopping import checkpoint
from solver.filters import selectors
from solver.problem.assignment import Assignment, budget_needs, evaluate
from solver.problem.build import Problem
from solver.problem.workloads import PodClass

_INF = float("inf")


@dataclass(frozen=True, slots=True)
class PdbFloor:
    evictions: int  # fewest budget-counted evictions of a plan placing every pending pod
    violations: int  # the floor on tier 3: max(0, evictions − Σ disruptionsAllowed)
    evicted_pods: int  # the floor on tier 5: evictions, when no pod is counted by two budgets, else 0
    plan: Assignment | None  # a plan with that many budget-counted evictions, if one was built
    # per domain of the root's key (one, "", without a key): the floors on PDB violations and
    # on evicted pods of a plan placing every pending pod there; a domain where they cannot all
    # go is left out
    by_domain: Mapping[str, tuple[int, int]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Node:
    name: s.NodeName
    caps: tuple[int, ...]  # caps[x]: most pods with x budget-counted evictions
    covered: tuple[tuple[int, int, dict[str, int]], ...]  # (unit, weight here, usage here)
    free_units: tuple[int, ...]  # eligible units no budget counts


def pdb_floor(problem: Problem, stop: Callable[[], bool] | None = None) -> PdbFloor | None:
    """The floor on PDB violations of any plan that places every pending pod, or None. Once
    ``stop()`` is true the programs give up (None: a floor over some domains only would be
    wrong), or, when the floor is known already, the plan behind it is not built."""
    tree = _shape(problem)
    if tree is None or problem.strict_pdbs or not problem.snapshot.pdbs:
        return None
    cls = problem.classes[problem.workloads[0].classes[0]]
    nodes = {n.name: n for n in problem.nodes}
    per_node: dict[s.NodeName, _Node] = {}
    for i, (name, most) in enumerate(_candidates(problem).items()):
        if stop is not None and i % 256 == 0 and stop():
            return None
        node = _node(problem, cls, nodes[name], most, stop)
        if node is None:
            return None
        per_node[name] = node
    options = {name: tuple((x, cap) for x, cap in enumerate(node.caps) if cap and (x == 0 or cap > node.caps[x - 1]))
               for name, node in per_node.items()}
    found = _tree(problem, tree, options, stop)
    if found is None:
        return None
    (evictions, parts), least = found
    if not _every_pod_may_go(problem):
        return None  # no plan places every pending pod: a gang short of pods takes none
    plan = None if stop is not None and stop() else _build(problem, cls, tree, parts, per_node, options)
    # only units on these nodes can be evicted (an eviction makes room beside a placed pod)
    reachable = {u for name in per_node for u in problem.units_on_node.get(name, ())}
    once = all(sum(problem.units[u].pdb_counts.values()) <= len(problem.units[u].members) for u in reachable)
    allowed = _allowed(problem)
    return PdbFloor(evictions=int(evictions), violations=max(0, int(evictions) - allowed),
                    evicted_pods=int(evictions) if once else 0, plan=plan,
                    by_domain={v: (max(0, int(w) - allowed), int(w) if once else 0) for v, w in least.items()})


def _every_pod_may_go(problem: Problem) -> bool:
    """Whether a plan may place every pending pod of the one workload: each PodGroup with a
    minCount reaches it with its running members, and each composite has enough children
    (a gang that cannot be met places no pod at all)."""
    for key in problem.workloads[0].groups:
        group = problem.groups[key]
        if group.min_count is None:
            continue
        if group.kind == s.POD_GROUP:
            have = len(problem.running_in_group.get(key, ())) + sum(
                len(problem.classes[c].pods) for c in problem.classes_under(key))
        else:
            have = len(problem.tree.children(key))
        if have < group.min_count:
            return False
    return True


def strict_blocks(problem: Problem) -> bool:
    """Under strict budgets, True when no plan can satisfy the problem's one workload
    (``strict_floor`` is not None)."""
    return strict_floor(problem) is not None


def strict_floor(problem: Problem, stop: Callable[[], bool] | None = None) -> PdbFloor | None:
    """Under strict budgets, the PDB floor that proves no plan can satisfy the problem's one
    workload, else None. It proves so when the workload needs every pending pod (each gang's
    minCount, each composite's minGroupCount, all of them) and placing every pending pod needs
    more budget-counted evictions than every budget together allows: the PDB floor of the same
    problem under soft budgets is above 0. A strict plan evicts at most ``disruptionsAllowed``
    of each budget's pods, so at most Σ allowed counted pods in all. None whenever the floor
    does not apply: never a wrong proof. The floor (and its plan, under soft budgets) also
    says what placing the workload would take."""
    if not problem.strict_pdbs or not problem.snapshot.pdbs or _shape(problem) is None:
        return None
    if not _needs_every_pod(problem):
        return None
    floor = pdb_floor(replace(problem, pdb_policy="soft"), stop)
    return floor if floor is not None and floor.violations > 0 else None


def would_take(problem: Problem, floor: PdbFloor) -> WouldTake:
    """What placing the one workload ``strict_floor`` keeps out would take: at least the floor's
    violations, and the floor's plan (under soft budgets): the budgets it breaks and the pods
    it evicts, proven the fewest violations when it meets the floor."""
    if floor.plan is None:
        return WouldTake(violations_at_least=floor.violations)
    soft = replace(problem, pdb_policy="soft")
    ev = evaluate(soft, floor.plan)
    needs = budget_needs(soft, floor.plan.evicted)
    placed_all = ev.placed == sum(len(c.pods) for c in problem.classes)
    return WouldTake(violations_at_least=floor.violations, budgets=needs, evictions=ev.evicted_pods,
                     proven=placed_all and ev.pdb_violations == floor.violations)


def _needs_every_pod(problem: Problem) -> bool:
    """Does satisfying the one workload take every one of its pending pods?"""
    workload = problem.workloads[0]
    for key in workload.groups:
        group = problem.groups[key]
        if group.min_count is None:
            return False  # basic: one pod (or one child) is enough
        if group.kind == s.POD_GROUP:
            running = len(problem.running_in_group.get(key, ()))
            pending = sum(len(problem.classes[c].pods) for c in workload.classes if problem.classes[c].group == key)
            if group.floor - running < pending:
                return False
        elif group.floor < len(problem.tree.children(key)):
            return False
    return True


@dataclass(frozen=True, slots=True)
class CostFloor:
    cost: int  # thousandths: no plan placing every pod at those violations costs less
    plan: Assignment | None  # the programs' choice built as a plan, when it could be


def cost_floor(problem: Problem, violations: int, stop: Callable[[], bool] | None = None) -> CostFloor | None:
    """A floor on the preemption cost (thousandths) of any plan that places every pending pod
    with ``violations`` PDB violations, and the plan behind it; None when the programs do
    not apply.

    Such a plan evicts at most ``X = violations + Σ allowed`` budget-counted pods, so the
    floor is the least cost over the relaxation with at most X of them. Per node every subset
    of its eligible units is tried (exact; a unit over several nodes is paid in shares by its
    members there, its budget count on its first node); per rack a program over its nodes
    gives the least cost of each number of groups for every count ≤ X (past ``_RACK_PODS``
    pods, more groups are priced as fewer: more pods never cost less); per zone a program
    over its racks. On a node with more than ``_EXACT_UNITS`` eligible units the cheapest
    are taken as gone for nothing (still a relaxation); an X beyond ``_MOST_COUNTED`` gives
    no floor, and neither does ``stop()`` turning true before every node is priced.

    The plan walks the programs back: each node's cheapest units for its pods, the groups in
    their racks, victims evicted without need put back. It is None when a rack was priced
    past ``_RACK_PODS``. A unit split by the relaxation is evicted whole, so the plan may cost
    more than the floor, or break more budgets: callers compare its tiers.
    """
    found = _cost_program(problem, violations, stop)
    if found is None:
        return None
    return CostFloor(cost=found.floor, plan=_cost_plan(problem, found) if found.parts is not None else None)


def _cost_plan(problem: Problem, found: _CostProgram) -> Assignment | None:
    tree, costs = found.tree, found.costs
    evicted: set[int] = set()
    placer = _Placer(problem, tree)
    assert found.parts is not None
    for names, groups, x in found.parts:
        pods = groups * tree.pods
        prefix: list[np.ndarray] = []
        table = _pods_table(names, {n: costs[n].table for n in names}, pods, found.most_counted, prefix)
        walk = _walk(prefix, [costs[n].table for n in names].__getitem__, pods,
                     x if table[pods, x] < _INF else found.most_counted, collects=True)
        if walk is None:
            return None
        slots: list[list[Any]] = []
        for i, k, x1 in walk:
            evicted.update(costs[names[i]].units_for(k, x1))
            slots.append([names[i], k])
        if not placer.place(slots, groups):
            return None
    return placer.plan(evicted)


@dataclass(frozen=True, slots=True)
class _CostProgram:
    floor: int
    tree: _Tree
    costs: dict[s.NodeName, _NodeCost]
    most_counted: int
    parts: list[tuple[list[s.NodeName], int, int]] | None  # (rack's nodes, groups, counted) chosen


def _cost_program(problem: Problem, violations: int, stop: Callable[[], bool] | None = None) -> _CostProgram | None:
    tree = _shape(problem)
    if tree is None:
        return None
    most_counted = violations + _allowed(problem)
    if most_counted > _MOST_COUNTED:
        return None
    cls = problem.classes[problem.workloads[0].classes[0]]
    nodes = {n.name: n for n in problem.nodes}
    costs: dict[s.NodeName, _NodeCost] = {}
    for name, most in _candidates(problem).items():
        checkpoint("the cost floor")  # up to 2^16 subsets a node: milliseconds each
        if stop is not None and stop():
            return None
        cost = _node_costs(problem, cls, nodes[name], most, most_counted)
        if cost is None:
            return None
        costs[name] = cost
    tables = {name: c.table for name, c in costs.items()}
    labels = {n.name: n.labels for n in problem.nodes}
    best = _INF
    parts: list[tuple[list[s.NodeName], int, int]] | None = None
    for outer in _split(sorted(tables), tree.root_key, labels).values():
        checkpoint("the cost floor")
        if tree.leaf_key is _ROOT:
            row = _pods_table(outer, tables, tree.pods, most_counted)[tree.pods]
            if float(row.min()) < best:
                best, parts = float(row.min()), [(outer, 1, int(row.argmin()))]
            continue
        split = _split(outer, tree.leaf_key, labels)
        racks = [split[v] for v in sorted(split)]  # in value order, as constraints/symmetry.py
        exact = _exact_groups(tree.pods, len(tree.leaves))
        rows = [_rack_table(r, tables, tree.pods, len(tree.leaves), most_counted) for r in racks]
        prefix: list[np.ndarray] = []
        found = _groups_table(rows, len(tree.leaves), most_counted, prefix)
        if float(found.min()) < best:
            best = float(found.min())
            walk = _walk(prefix, rows.__getitem__, len(tree.leaves), int(found.argmin()), collects=False)
            parts = None if walk is None or any(j > exact for _, j, _ in walk) else \
                [(racks[r], j, x) for r, j, x in sorted(walk)]
    if best == _INF:
        return None
    # a plan's cost is whole thousandths; the shares of a unit over several nodes need not be
    return _CostProgram(max(0, math.ceil(best - 1e-6)), tree, costs, most_counted, parts)


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-6 * max(1.0, abs(b))


Rows = Sequence[np.ndarray] | np.ndarray  # rows[k][x]: the cost of taking k with x counted (rows, or a 2-D table)


def _walk(prefix: list[np.ndarray], rows_of: Callable[[int], Rows], target: int, x: int,
          *, collects: bool) -> list[tuple[int, int, int]] | None:
    """Back through a program's tables, last step first, from row ``target`` at count ``x``:
    (step, amount, counted) for each step that took something. ``prefix[i]`` is the table
    after step i; ``rows_of(i)[k][x1]`` what taking k at step i costs with x1 counted. With
    ``collects`` the last row holds "at least ``target``" (``_pods_table``)."""
    out = []
    f = target
    for i in range(len(prefix) - 1, -1, -1):
        before = prefix[i - 1] if i else _start(target, prefix[0].shape[1])
        here = prefix[i][f, x]
        if _close(before[f, x], here):
            continue  # this step took nothing
        step = _step_back(rows_of(i), before, f, x, here, target if collects else None)
        if step is None:
            return None
        k, x1, f = step
        x -= x1
        out.append((i, k, x1))
    return out[::-1]


def _step_back(rows: Rows, before: np.ndarray, f: int, x: int, here: float, collect: int | None
               ) -> tuple[int, int, int] | None:
    """(amount, counted, row before) of the choice that made ``here``."""
    for k in range(1, len(rows)):
        for x1 in _steps(rows[k]):
            if x1 > x:
                break
            sources = range(max(0, collect - k), collect + 1) if f == collect else ([f - k] if f >= k else [])
            for g in sources:
                if _close(before[g, x - x1] + rows[k][x1], here):
                    return k, x1, g
    return None


def _start(rows: int, width: int) -> np.ndarray:
    dp = np.full((rows + 1, width), _INF)
    dp[0] = 0.0
    return dp


_EXACT_UNITS = 16  # 2^16 subsets of a node's units, at most
_MOST_COUNTED = 4096
_RACK_PODS = 128  # pods per rack priced exactly (more groups in one rack cost at least as much)


@dataclass(frozen=True, slots=True)
class _NodeCost:
    table: np.ndarray  # cost[k, x]: least cost so k pods fit with at most x counted (inf: impossible)
    pareto: tuple[tuple[tuple[int, float, int], ...], ...]  # per k: (counted, cost, subset), counted rising
    units: tuple[int, ...]  # the node's eligible units, bit i of a subset is units[i]
    free: tuple[int, ...]  # units taken as gone for nothing (past _EXACT_UNITS)

    def units_for(self, k: int, x: int) -> list[int]:
        """The units of the cheapest subset for k pods with at most x counted."""
        subset = [m for w, _, m in self.pareto[k] if w <= x][-1]
        return [u for i, u in enumerate(self.units) if subset >> i & 1] + list(self.free)


def _node_costs(problem: Problem, cls: PodClass, node: s.Node, most: int, most_counted: int) -> _NodeCost | None:
    """Every subset of the node's eligible units, tried for each number of pods."""
    resources = sorted(cls.requests)
    room = np.array([node.allocatable.get(r, 0) for r in resources], dtype=np.int64)
    need = np.array([cls.requests[r] for r in resources], dtype=np.int64)
    costs: list[float] = []
    weights: list[int] = []
    uses: list[list[int]] = []
    units: list[int] = []
    for u in problem.units_on_node.get(node.name, ()):
        unit = problem.units[u]
        use = [unit.usage[node.name].get(r, 0) for r in resources]
        room -= np.array(use, dtype=np.int64)
        if problem.eligible(cls, unit):
            here = sum(1 for p in unit.members if p.node == node.name)
            costs.append(unit.cost_milli * here / len(unit.members))
            weights.append(sum(unit.pdb_counts.values()) if node.name == min(unit.usage) else 0)
            uses.append(use)
            units.append(u)
    free: list[int] = []
    if len(costs) > _EXACT_UNITS:
        # too many subsets: the cheapest units are taken as gone for nothing, a relaxation
        cheap = sorted(range(len(costs)), key=lambda i: (costs[i], units[i]))[: len(costs) - _EXACT_UNITS]
        for i in cheap:
            room += np.array(uses[i], dtype=np.int64)
        free = [units[i] for i in cheap]
        keep = [i for i in range(len(costs)) if i not in set(cheap)]
        costs, weights = [costs[i] for i in keep], [weights[i] for i in keep]
        uses, units = [uses[i] for i in keep], [units[i] for i in keep]
    n = len(costs)
    bits = ((np.arange(1 << n)[:, None] >> np.arange(n)) & 1).astype(np.int64)
    freed = bits @ np.array(uses, dtype=np.int64).reshape(n, len(resources))
    paid = bits @ np.array(costs, dtype=np.float64).reshape(n)
    counted = bits @ np.array(weights, dtype=np.int64).reshape(n)
    table = np.full((most + 1, most_counted + 1), _INF)
    pareto: list[tuple[tuple[int, float, int], ...]] = []
    # the most pods each subset makes room for (-1: the node overflows even then), and the
    # subsets by counted, then cost: a number of pods takes those that fit, in that order
    slack = room + freed
    per_resource = np.where(need > 0, slack // np.maximum(need, 1), most)
    fits_most = np.where(np.all(slack >= 0, axis=1), np.min(per_resource, axis=1, initial=most), -1)
    ordered = np.flatnonzero(counted <= most_counted)
    ordered = ordered[np.lexsort((paid[ordered], counted[ordered]))]
    for k in range(most + 1):
        order = ordered[fits_most[ordered] >= k]
        if not len(order):
            break
        # the Pareto front: each subset cheaper than every one before it in that order
        cost = paid[order]
        before = np.concatenate(([_INF], np.minimum.accumulate(cost)[:-1]))
        front = order[cost < before]
        pareto.append(tuple(zip(counted[front].tolist(), paid[front].tolist(), front.tolist(), strict=True)))
        row = np.full(most_counted + 1, _INF)
        np.minimum.at(row, counted[front], paid[front])
        table[k] = np.minimum.accumulate(row)
    return _NodeCost(table, tuple(pareto), tuple(units), tuple(free))


def _steps(row: np.ndarray) -> list[int]:
    """The counts x where a non-increasing row drops (and 0): the only ones worth combining."""
    finite = row < _INF
    drops = np.flatnonzero(finite[1:] & (row[1:] < row[:-1])) + 1
    return ([0] if finite[0] else []) + drops.tolist()


def _pods_table(names: list[s.NodeName], tables: dict[s.NodeName, np.ndarray], pods: int, most_counted: int,
                prefix: list[np.ndarray] | None = None) -> np.ndarray:
    """cost[f, x]: the least cost for f pods (the last row: at least ``pods``) on the nodes with
    at most x budget-counted evictions."""
    dp = np.full((pods + 1, most_counted + 1), _INF)
    dp[0] = 0.0
    for name in names:
        table = tables[name]
        new = dp.copy()
        for k in range(1, table.shape[0]):
            row = table[k]
            if row[-1] == _INF:
                break
            for x in _steps(row):
                shifted = dp[:, : most_counted + 1 - x] + row[x]
                if k < pods:  # rows f land at f + k; those past the last row collect in it
                    np.minimum(new[k:, x:], shifted[: pods + 1 - k], out=new[k:, x:])
                np.minimum(new[pods, x:], shifted[max(0, pods - k):].min(axis=0), out=new[pods, x:])
        dp = new
        if prefix is not None:
            prefix.append(dp)
    return dp


def _rack_table(names: list[s.NodeName], tables: dict[s.NodeName, np.ndarray], pods: int, groups: int,
                most_counted: int) -> list[np.ndarray]:
    """cost[j][x] for j = 0..groups groups in the rack: exact up to ``_RACK_PODS`` pods (and
    for two groups at least), more groups priced as the most computed."""
    exact = _exact_groups(pods, groups)
    table = _pods_table(names, tables, exact * pods, most_counted)
    rows = [np.zeros(most_counted + 1)] + [table[j * pods] for j in range(1, exact + 1)]
    return rows + [rows[-1]] * (groups - exact)


def _exact_groups(pods: int, groups: int) -> int:
    """How many groups a rack's table prices exactly: up to ``_RACK_PODS`` pods, two at least."""
    return min(groups, max(2, _RACK_PODS // pods))


def _groups_table(racks: list[list[np.ndarray]], groups: int, most_counted: int,
                  prefix: list[np.ndarray] | None = None) -> np.ndarray:
    """cost[x]: the least cost for every group, each in one rack, with at most x counted."""
    dp = np.full((groups + 1, most_counted + 1), _INF)
    dp[0] = 0.0
    for rows in racks:
        new = dp.copy()
        for j in range(1, groups + 1):
            for x in _steps(rows[j]):
                shifted = dp[: groups + 1 - j, : most_counted + 1 - x] + rows[j][x]
                np.minimum(new[j:, x:], shifted, out=new[j:, x:])
        dp = new
        if prefix is not None:
            prefix.append(dp)
    last: np.ndarray = dp[groups]
    return last


def _allowed(problem: Problem) -> int:
    return sum(b.allowed for b in problem.snapshot.pdbs)


_ROOT = "\0root"  # leaf_key of a tree whose root is its only group


@dataclass(frozen=True, slots=True)
class _Tree:
    root_key: str | None  # every pod in one domain of it (None: anywhere)
    leaf_key: str | None  # each leaf group's pods in one domain of it; _ROOT: the root is the leaf
    leaves: tuple[s.GroupKey, ...]  # in the parent's order, as constraints/symmetry.py orders them
    pods: int  # pending pods of each leaf


def _shape(problem: Problem) -> _Tree | None:
    """The tree when the programs apply, else None."""
    if len(problem.workloads) != 1 or problem.dra.active or problem.interpod.active:
        return None
    workload = problem.workloads[0]
    classes = [problem.classes[c] for c in workload.classes]
    if workload.kind == s.STANDALONE_POD or not classes or workload.power is None:
        return None
    if len({tuple(sorted(c.requests.items())) for c in classes}) != 1 or not classes[0].requests:
        return None
    if any(problem.candidates[c.index] != problem.candidates[classes[0].index] for c in classes[1:]):
        return None  # the programs lay any class's pods on any class's nodes: they must be the same nodes
    if any(selectors.exclusive(c.pods[0]) for c in classes):
        return None  # host ports and disks are inter-pod rules too (constraints/interpod.py)
    root = workload.groups[0]
    root_key = problem.groups[root].topology_key
    children = problem.tree.children(root)
    if not children:
        return _Tree(root_key, _ROOT, (root,), sum(len(c.pods) for c in classes))
    if any(problem.tree.children(g) for g in children):
        return None  # deeper trees: not handled
    if len({problem.groups[g].topology_key for g in children}) != 1:
        return None
    pending = {g: sum(len(c.pods) for c in classes if c.group == g) for g in children}
    if any(c.group not in pending for c in classes) or len(set(pending.values())) != 1:
        return None
    leaves = tuple(g for g in children if pending[g])
    if not leaves:
        return None
    return _Tree(root_key, problem.groups[leaves[0]].topology_key, leaves, pending[leaves[0]])


def _candidates(problem: Problem) -> dict[s.NodeName, int]:
    """Nodes any class may use, with the most pods all of them together may put there."""
    out: dict[s.NodeName, int] = {}
    for c in problem.workloads[0].classes:
        for node, most in problem.candidates[c].items():
            out[node] = most + out.get(node, 0)
    return out


def _node(problem: Problem, cls: PodClass, node: s.Node, most: int,
          stop: Callable[[], bool] | None = None) -> _Node | None:
    """The node's room for pods of ``cls`` by the number of budget-counted evictions (None:
    ``stop()`` became true)."""
    requests = cls.requests
    room = dict.fromkeys(requests, 0)
    for r in requests:
        room[r] = node.allocatable.get(r, 0)
    covered: list[tuple[int, int, dict[str, int]]] = []
    free_units: list[int] = []
    for u in problem.units_on_node.get(node.name, ()):
        unit = problem.units[u]
        use = unit.usage[node.name]
        for r in requests:
            room[r] -= use.get(r, 0)
        if not problem.eligible(cls, unit):
            continue
        # a unit over several nodes is counted on its first node only: the relaxation may
        # free it elsewhere for nothing, which can only lower the floor
        weight = sum(unit.pdb_counts.values()) if node.name == min(unit.usage) else 0
        if weight:
            covered.append((u, weight, {r: use.get(r, 0) for r in requests}))
        else:
            free_units.append(u)
            for r in requests:
                room[r] += use.get(r, 0)
    total = sum(w for _, w, _ in covered)
    best: dict[str, list[int]] = {}
    for r in requests:
        freed = _most_freed([(w, use[r]) for _, w, use in covered], total, stop)
        if freed is None:
            return None
        best[r] = freed
    caps = tuple(min(most, min(max(0, room[r] + best[r][x]) // requests[r] for r in requests))
                 for x in range(total + 1))
    return _Node(node.name, caps, tuple(covered), tuple(free_units))


def _most_freed(items: Sequence[tuple[int, int]], total: int,
                stop: Callable[[], bool] | None = None) -> list[int] | None:
    """best[x]: the most of one resource freed by items of total weight ≤ x (0/1 knapsack), or
    None once ``stop()`` is true. Equal items are taken as one bounded item, split in powers
    of two (1, 2, 4, ... of them, then the rest: every count up to theirs is a sum of some
    parts), so a node of 3,000 alike victims is a dozen items, not 3,000 (issue 50: a node of
    3,000 running pods took 6 s here)."""
    best = [0] * (total + 1)
    parts: list[tuple[int, int]] = []
    for (weight, amount), count in sorted(Counter(items).items()):
        size = 1
        while count > 0:
            take = min(size, count)
            parts.append((weight * take, amount * take))
            count -= take
            size *= 2
    for i, (weight, amount) in enumerate(parts):
        if stop is not None and not i & 63 and stop():
            return None
        for x in range(total, weight - 1, -1):
            if best[x - weight] + amount > best[x]:
                best[x] = best[x - weight] + amount
    return best


Options = tuple[tuple[float, int], ...]  # per node: (weight, pods) of each way to use it


def _tree(problem: Problem, tree: _Tree, options: Mapping[s.NodeName, Options],
          stop: Callable[[], bool] | None = None
          ) -> tuple[tuple[float, list[tuple[list[s.NodeName], int]]], dict[str, float]] | None:
    """The least total weight placing every pending pod, and the domains (node lists) used with
    the number of leaf groups each takes, by the tree's keys: one domain of the root's key,
    each leaf group in one domain of the leaves' key; and the least weight in each domain of
    the root's key where every pending pod may go."""
    labels = {n.name: n.labels for n in problem.nodes}
    best: tuple[float, list[tuple[list[s.NodeName], int]]] | None = None
    least: dict[str, float] = {}
    for value, outer in _split(sorted(options), tree.root_key, labels).items():
        if stop is not None and stop():
            return None  # the least over some domains is no floor
        if tree.leaf_key is _ROOT:
            found = (_domain(outer, options, tree.pods)[0], [(outer, 1)])
        else:
            found = _racks(_split(outer, tree.leaf_key, labels), options, len(tree.leaves), tree.pods)
        if found[0] < _INF:
            least[value] = found[0]
            if best is None or found[0] < best[0]:
                best = found
    return None if best is None else (best, least)


def _split(names: list[s.NodeName], key: str | None,
           labels: Mapping[s.NodeName, Mapping[str, str]]) -> dict[str, list[s.NodeName]]:
    """Nodes by their value of ``key`` (one domain without a key); unlabelled nodes left out."""
    out: dict[str, list[s.NodeName]] = defaultdict(list)
    for name in names:
        value = "" if key is None else labels[name].get(key)
        if value is not None:
            out[value].append(name)
    return out


def _program(names: list[s.NodeName], options: Mapping[s.NodeName, Options], pods: int
             ) -> tuple[list[float], list[list[tuple[int, int]]]]:
    """dp[t]: the least total weight for exactly t pods on the nodes (t < ``pods``), and for at
    least ``pods`` (t = ``pods``), with each node's choices to walk the answer back (the values
    alone: ``_program_values``)."""
    dp = [0.0] + [_INF] * pods
    choices: list[list[tuple[int, int]]] = []
    for name in names:
        new = dp[:]
        took = [(-1, 0)] * (pods + 1)  # (previous filled, option + 1) per filled
        for filled in range(pods):
            if dp[filled] >= _INF:
                continue
            for i, (weight, cap) in enumerate(options[name]):
                t = min(pods, filled + cap)
                if dp[filled] + weight < new[t]:
                    new[t] = dp[filled] + weight
                    took[t] = (filled, i + 1)
        choices.append(took)
        dp = new
    return dp, choices


def _program_values(names: list[s.NodeName], options: Mapping[s.NodeName, Options], pods: int) -> np.ndarray:
    """``_program(names, options, pods)[0]``, a node at a time over whole arrays:
    an option (weight, cap) takes dp[t − cap] + weight to t for cap <= t < pods, and the least
    of dp[pods − cap .. pods − 1] + weight to ``pods`` (at least ``pods``). Measured on the 59
    zones of scale-15000: the strict floor's rack programs 6 s -> well under 1 s."""
    dp = np.full(pods + 1, _INF)
    dp[0] = 0.0
    for name in names:
        new = dp.copy()
        for weight, cap in options[name]:
            if cap < pods:
                np.minimum(new[cap:pods], dp[:pods - cap] + weight, out=new[cap:pods])
            low = dp[max(0, pods - cap):pods].min() + weight
            if low < new[pods]:
                new[pods] = low
        dp = new
    return dp


def _by_count(names: list[s.NodeName], options: Mapping[s.NodeName, Options], pods: int, groups: int
              ) -> list[float]:
    """``_domain(names, options, j * pods)[0]`` for j = 0..groups, from one program: with weights
    never negative, at least j·pods costs the least of exactly t for j·pods <= t < groups·pods
    and of at least groups·pods."""
    least = list(_program_values(names, options, groups * pods))
    for t in range(len(least) - 2, -1, -1):
        least[t] = min(least[t], least[t + 1])
    return [0.0] + [least[j * pods] for j in range(1, groups + 1)]


def _domain(names: list[s.NodeName], options: Mapping[s.NodeName, Options], pods: int
            ) -> tuple[float, list[tuple[float, int]]]:
    """The least total weight for ``pods`` pods on the nodes, and per node (weight, pods) taken."""
    dp, choices = _program(names, options, pods)
    if dp[pods] >= _INF:
        return _INF, []
    out: list[tuple[float, int]] = [(0.0, 0)] * len(names)
    filled = pods
    for i in range(len(names) - 1, -1, -1):
        prev, option = choices[i][filled]
        if prev < 0:
            continue  # this node took nothing
        weight, cap = options[names[i]][option - 1]
        out[i] = (weight, min(cap, filled - prev))
        filled = prev
    return dp[pods], out


def _racks(racks: dict[str, list[s.NodeName]], options: Mapping[s.NodeName, Options], groups: int, pods: int
           ) -> tuple[float, list[tuple[list[s.NodeName], int]]]:
    """The least total weight for ``groups`` groups of ``pods`` pods, each inside one rack, and
    the racks used with the groups each takes."""
    names = sorted(racks)
    cost = {r: _by_count(racks[r], options, pods, groups) for r in names}
    dp = [0.0] + [_INF] * groups
    took: list[list[tuple[int, int]]] = []
    for r in names:
        new = dp[:]
        step = [(-1, 0)] * (groups + 1)
        for done in range(groups):
            if dp[done] >= _INF:
                continue
            for j in range(1, groups - done + 1):
                if cost[r][j] < _INF and dp[done] + cost[r][j] < new[done + j]:
                    new[done + j] = dp[done] + cost[r][j]
                    step[done + j] = (done, j)
        took.append(step)
        dp = new
    if dp[groups] >= _INF:
        return _INF, []
    out: list[tuple[list[s.NodeName], int]] = []
    done = groups
    for i in range(len(names) - 1, -1, -1):
        prev, j = took[i][done]
        if prev >= 0:
            out.append((racks[names[i]], j))
            done = prev
    out.reverse()  # racks in value order, taken by the groups in order (constraints/symmetry.py)
    return dp[groups], out


def _build(problem: Problem, cls: PodClass, tree: _Tree, parts: list[tuple[list[s.NodeName], int]],
           per_node: dict[s.NodeName, _Node], options: Mapping[s.NodeName, Options]) -> Assignment | None:
    """The plan behind the programs' choice, or None when a node's real room falls short."""
    allocatable = {n.name: n.allocatable for n in problem.nodes}
    evicted: set[int] = set()
    placer = _Placer(problem, tree)
    for names, groups in parts:
        _, picks = _domain(names, options, groups * tree.pods)
        if not picks:
            return None
        slots: list[list[Any]] = []
        for name, (x, k) in zip(names, picks, strict=True):
            if not k:
                continue
            chosen = _evictions(problem, cls, per_node[name], allocatable[name], int(x), k)
            if chosen is None:
                return None
            evicted.update(chosen)
            slots.append([name, k])
        if not placer.place(slots, groups):
            return None
    return placer.plan(evicted)


class _Placer:
    """Lays the tree's groups, in order, into the pods a rack's nodes can take (both plans)."""

    def __init__(self, problem: Problem, tree: _Tree) -> None:
        self.problem = problem
        self.tree = tree
        self.queue = list(tree.leaves)  # the groups in the order constraints/symmetry.py expects
        self.counts: dict[tuple[int, s.NodeName], int] = {}
        self.placed: dict[int, int] = defaultdict(int)  # per class

    def place(self, slots: list[list[Any]], groups: int) -> bool:
        """The next ``groups`` groups into ``slots`` ([node, pods it can take]); False when
        they do not fit."""
        problem, tree = self.problem, self.tree
        for _ in range(groups):
            group = self.queue.pop(0)
            classes = [c for c in problem.workloads[0].classes
                       if tree.leaf_key is _ROOT or problem.classes[c].group == group]
            left = tree.pods
            for slot in slots:
                for c in classes:
                    take = min(slot[1], left, len(problem.classes[c].pods) - self.placed[c])
                    if take > 0:
                        self.counts[c, slot[0]] = self.counts.get((c, slot[0]), 0) + take
                        self.placed[c] += take
                        slot[1] -= take
                        left -= take
            if left:
                return False
        return True

    def plan(self, evicted: set[int]) -> Assignment:
        """The placed pods with those victims gone, less the victims that fit back."""
        from solver.baseline import greedy  # the greedy imports nothing from here; late to keep the core acyclic

        return greedy.put_back(self.problem, Assignment(counts=self.counts, evicted=frozenset(evicted)))


def _evictions(problem: Problem, cls: PodClass, node: _Node, alloc: Mapping[str, int], x: int, k: int
               ) -> set[int] | None:
    """Units to evict on ``node`` so ``k`` pods fit with ``x`` budget-counted evictions: the
    free ones and, for each resource in turn, the best covered set for it; None if none fits."""
    name = node.name
    for r in sorted(cls.requests):
        picked = _pick([(u, w, use.get(r, 0)) for u, w, use in node.covered], x)
        chosen = set(node.free_units) | picked
        room = {q: alloc.get(q, 0) for q in cls.requests}
        for u in problem.units_on_node.get(name, ()):
            if u not in chosen:
                for q in cls.requests:
                    room[q] -= problem.units[u].usage[name].get(q, 0)
        if all(room[q] >= k * cls.requests[q] for q in cls.requests):
            return chosen
    return None


def _pick(items: list[tuple[int, int, int]], total: int) -> set[int]:
    """The units of a weight ≤ ``total`` freeing the most of one resource."""
    best: list[tuple[int, frozenset[int]]] = [(0, frozenset())] * (total + 1)
    for unit, weight, amount in items:
        for x in range(total, weight - 1, -1):
            got = best[x - weight][0] + amount
            if got > best[x][0]:
                best[x] = (got, best[x - weight][1] | {unit})
    return set(max(best, key=lambda b: b[0])[1])
