"""A proven bound on the first tier that knows a gang lives in one domain (issue 51, item 2).

The room bound (``room``) pools every node's room: two gangs that each need most of a rack
both fit by volume even when only one rack has room for either. Here each pending workload
whose root has a topology key is placed, in a relaxation, in one domain of that key or not at
all, and what the workloads placed in a domain need (``room._need``: the requests of the
fewest new pods that satisfy them, and their slots) stays within that domain's room. A
domain's room also bounds every workload placed in a domain inside it (a rack in its block);
the cluster's room bounds them all, workloads without a key too.

The room comes from one pass over the nodes, split into cells (nodes with the same values of
the keys: a rack inside its block is one cell; ``_Cells``): per cell the allocatable less what
no preemptor may evict holds, and the slots, node by node. Under strict budgets every pod a
budget covers is held, and what the budgets let go is shared by every cell: per budget and
cell a count of evicted pods, together at most what the budget allows, and per cell what k
evicted pods free at most (per resource a fractional knapsack; in slots the best split of k
over the cell's nodes, each node's slots counted from its own free room, not the evicted
pods' requests cut into slots), entered as its concave hull so that the LP relaxation keeps it.

Alike workloads (key, need, priority, value) are one class, and per class and domain an
integer counts how many are placed there: the model grows with classes × domains, not with
workloads. Per priority, strongest first, it finds the most satisfied (their
``gangplace.io/value`` summed) with every stronger priority at its own bound, proven or not
used: each level is solved within what is left of ``seconds`` and the first level not proven
ends the bound there; building past three quarters of ``seconds`` gives no bound at all. Every step
relaxes (node boundaries beyond the slots, inter-pod rules, devices, eviction necessity,
which victims a priority may evict: the strongest preemptor's room serves all), so no plan
satisfies more. ``room.satisfied_bound`` takes the levels as caps. Pure: no I/O.
"""

from __future__ import annotations

import itertools
import math
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
from ortools.sat.python import cp_model

from solver.core import snapshot as s
from solver.model.bounds import room
from solver.problem.build import Problem
from solver.problem.workloads import Workload

Domain = tuple[str, str]  # (topology key, value)
_Term = tuple[Sequence[int], cp_model.IntVar, int]  # a class's need, how many of it are placed, at most


@dataclass(frozen=True, slots=True)
class Choice:
    """The bound's levels (``caps``) and the relaxation's last solution: the workloads it
    satisfies, each with the nodes of the domain it put it in (None: a workload without a
    key), for a walk to try first (``greedy.guided``; issue 51, item 3)."""

    caps: dict[int, int] = field(default_factory=dict)
    where: dict[int, frozenset[s.NodeName] | None] = field(default_factory=dict)
    # with every level at its cap (each proven), the most pods the workloads satisfied may have
    # (a workload not satisfied places none): a bound on placed pods of a plan at the caps
    placed: int | None = None


def satisfied_caps(problem: Problem, seconds: float) -> dict[int, int]:
    """Per priority, strongest first and as far as each level is proven within ``seconds``,
    the most any plan satisfies at it (values summed) when every stronger priority satisfies
    its cap. Empty when no pending workload's root has a topology key (the room bound is
    then as good) or the first level is not proven in time."""
    return choose(problem, seconds).caps


def choose(problem: Problem, seconds: float, tables: room.Tables | None = None) -> Choice:
    """``satisfied_caps``, and where the relaxation's last solution (proven or not) puts the
    workloads it satisfies. ``tables``: the cluster's, when the caller has them."""
    start = time.perf_counter()
    keyed = {w.index: key for w in problem.workloads
             if not w.rejected and (key := _key(problem, w)) is not None}
    if not keyed:
        return Choice()
    tables = tables if tables is not None else room.Tables(problem)
    resources = tables.resources
    inner = {w: found for w in keyed if (found := _inner(problem, problem.workloads[w], resources)) is not None}
    cells = _Cells(problem, tables, sorted(set(keyed.values()) | {k for k, _ in inner.values()}))
    domains = cells.domains()
    inside = _inside(domains)
    width = len(resources) + 1

    def late() -> bool:  # a quarter of ``seconds`` is kept for the first level's search (0.2 s here)
        return time.perf_counter() - start > seconds * 3 / 4

    most = {d: cells.most(its) for d, its in domains.items()}
    # per domain and finer key, the slots of each domain of that key inside it
    slots_in: dict[tuple[Domain, str], list[int]] = defaultdict(list)
    for outer, nested in inside.items():
        for d in nested:
            slots_in[outer, d[0]].append(int(most[d][-1]))
    if late():
        return Choice()
    model = cp_model.CpModel()
    # under strict budgets: per budget and cell, how many of its pods go there (together at most
    # what the budget allows); per cell, what as many pods free at most, per column (the table's
    # concave hull: linear pieces, which the LP relaxation keeps)
    evicted = {bc: model.new_int_var(0, top, "") for bc, top in cells.evictable.items()}
    freed: dict[int, list[cp_model.LinearExprT]] = {}
    in_cell: dict[int, list[cp_model.IntVar]] = defaultdict(list)
    in_budget: dict[s.PdbKey, list[tuple[s.PdbKey, int]]] = defaultdict(list)
    for (b, c), e in evicted.items():
        in_cell[c].append(e)
        in_budget[b].append((b, c))
    for cell, table in cells.freed.items():
        k = sum(in_cell[cell])
        freed[cell] = []
        for col in table:
            f = model.new_int_var(0, max(col), "")
            for run, rise, offset in _hull(col):
                model.add(run * f <= offset + rise * k)
            freed[cell].append(f)
    # alike workloads (key, need, priority, value) are one class: per class and domain, how many
    # of them are placed there
    alike: dict[tuple[str | None, tuple[int, ...], int, int, tuple[str, tuple[int, ...]] | None], list[int]] = \
        defaultdict(list)
    for w in problem.workloads:
        if not w.rejected:
            need = tuple(room._need(problem, w, resources))
            alike[keyed.get(w.index), need, w.priority, w.value, inner.get(w.index)].append(w.index)
    choices: list[tuple[list[int], Domain | None, cp_model.IntVar]] = []  # a class's workloads, where, how many
    pods: list[tuple[int, cp_model.IntVar]] = []  # (the most pods of a class's workload, how many) per choice
    placed: dict[int, list[tuple[int, cp_model.IntVar]]] = defaultdict(list)  # priority -> (value, count)
    in_domain: dict[Domain, list[_Term]] = defaultdict(list)
    every: list[_Term] = []
    for (key, need, priority, value, child), members in alike.items():
        count = len(members)
        if late():
            return Choice()
        where: list[Domain | None] = [None] if key is None else [
            d for d in domains if d[0] == key and all(n <= int(r) for n, r in zip(need, most[d], strict=True))
            and (child is None or _children_fit(child[1], slots_in[d, child[0]]))]
        mine = []
        most_pods = max(problem.pending_pods(problem.workloads[w]) for w in members)
        for at in where:
            y = model.new_int_var(0, count, "")
            mine.append(y)
            choices.append((members, at, y))
            pods.append((most_pods, y))
            placed[priority].append((value, y))
            every.append((need, y, count))
            if at is not None:
                in_domain[at].append((need, y, count))
        if len(mine) > 1:
            model.add(sum(mine) <= count)
    for outer, its in domains.items():
        terms = [t for d in inside[outer] for t in in_domain[d]]
        _within(model, terms, cells, its, most[outer], freed, width)
    everywhere = range(len(cells.base))
    _within(model, every, cells, everywhere, cells.most(everywhere), freed, width)
    for budget, mine_e in in_budget.items():
        if sum(cells.evictable[bc] for bc in mine_e) > cells.allowed[budget]:
            model.add(sum(evicted[bc] for bc in mine_e) <= cells.allowed[budget])

    caps: dict[int, int] = {}
    counts: list[int] = []  # the last solution's, per choice
    levels = sorted({w.priority for w in problem.workloads}, reverse=True)
    for level in levels:
        mine_x = placed.get(level, [])
        if not mine_x:
            caps[level] = 0
            continue
        left = seconds - (time.perf_counter() - start)
        if left <= 0:
            break
        objective = sum(v * x for v, x in mine_x)
        model.maximize(objective)
        solver = cp_model.CpSolver()
        solver.parameters.max_time_in_seconds = left
        solver.parameters.num_workers = 1
        solver.parameters.cp_model_presolve = False  # on contention-5000 it took 2-3.5 s of 2.1-3.9 a level
        status = solver.solve(model)
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            counts = [int(solver.value(y)) for _, _, y in choices]
        if status != cp_model.OPTIMAL:
            break
        caps[level] = round(solver.objective_value)
        model.add(objective >= caps[level])
    most_placed = None
    if len(caps) == len(levels) and (left := seconds - (time.perf_counter() - start)) > 0:
        # every level at its cap: the most pods (the walk's choice stays the levels'); the search's
        # proven bound on it counts once it has a solution, whether or not it ends (on
        # contention-5000 the search needs 0.4 s of the 0.3-0.4 s the levels leave)
        model.maximize(sum(n * y for n, y in pods))
        for (_, _, y), count in zip(choices, counts, strict=True):
            model.add_hint(y, count)  # the last level's solution: the search starts feasible
        solver = cp_model.CpSolver()
        solver.parameters.max_time_in_seconds = left
        solver.parameters.num_workers = 1
        solver.parameters.cp_model_presolve = False
        # with no solution found (UNKNOWN) CP-SAT's bound means nothing (it may read 0)
        if solver.solve(model) in (cp_model.OPTIMAL, cp_model.FEASIBLE) and math.isfinite(solver.best_objective_bound):
            most_placed = math.floor(solver.best_objective_bound + 1e-6)
    return Choice(caps, _where(problem, cells, domains, choices, counts), most_placed)



def _where(problem: Problem, cells: _Cells, domains: dict[Domain, list[int]],
           choices: list[tuple[list[int], Domain | None, cp_model.IntVar]],
           counts: list[int]) -> dict[int, frozenset[s.NodeName] | None]:
    """Each workload the solution satisfies, with its domain's nodes: a class's workloads are
    given out in order to the domains it counts there."""
    names: dict[int, list[s.NodeName]] = defaultdict(list)
    for n, cell in zip(problem.nodes, cells.of_node, strict=True):
        names[int(cell)].append(n.name)
    nodes: dict[Domain, frozenset[s.NodeName]] = {}
    given: dict[int, int] = defaultdict(int)  # by the class's first workload: how many given out
    out: dict[int, frozenset[s.NodeName] | None] = {}
    for (members, at, _), count in zip(choices, counts, strict=True):
        if at is not None and at not in nodes:
            nodes[at] = frozenset(name for c in domains[at] for name in names[c])
        for w in members[given[members[0]]:given[members[0]] + count]:
            out[w] = None if at is None else nodes[at]
        given[members[0]] += count
    return out


class _Cells:
    """The nodes split by their values of the keys (a rack inside its block is one cell), and
    per cell the room a preemptor of the strongest pending power has, from one pass over the
    nodes: the allocatable less what running units it may not evict hold (under strict budgets
    every unit a budget covers is held), and the slots.

    Under strict budgets what the budgets let go is shared by every cell: per budget and cell
    at most ``evictable[budget, cell]`` pods go (together at most what the budget allows), and
    per cell ``freed[cell][col][k]`` is the most evicting ``k`` of the pods counted there
    frees of each column: a fractional knapsack per resource (rounded up), and for the slots
    the best split of the ``k`` over the cell's nodes (``_freed``)."""

    def __init__(self, problem: Problem, tables: room.Tables, keys: list[str]) -> None:
        resources = tables.resources
        power = room._power(problem, problem.workloads)
        r_count = len(resources)
        signature: dict[tuple[str | None, ...], int] = {}
        self.of_node = np.array([signature.setdefault(tuple(n.labels.get(k) for k in keys), len(signature))
                                 for n in problem.nodes], dtype=np.int64)
        self.signatures = list(signature)
        self.keys = keys
        movable = tables.movable(power)
        shared = movable & tables.covered if problem.strict_pdbs else np.zeros_like(movable)
        self.allowed = {p.key: p.allowed for p in problem.snapshot.pdbs}
        free_parts, counted = self._items(problem, tables, shared) if shared.any() else ([], [])
        stays = ~(movable & ~shared)[tables.entry_unit]
        held = np.zeros_like(tables.alloc)
        np.add.at(held, tables.entry_node[stays], tables.usage[stays])
        for node, usage in free_parts:  # counted against no budget: free to go
            held[node] -= usage
        free = np.maximum(0, tables.alloc - held)
        self.tables = tables
        slots = tables.slots(free)
        self.base = np.zeros((len(signature), r_count + 1), dtype=np.int64)
        np.add.at(self.base, self.of_node, np.column_stack([free, slots]))
        self.evictable: dict[tuple[s.PdbKey, int], int] = {}
        self.freed: dict[int, list[list[int]]] = {}
        by_cell: dict[int, list[tuple[int, int, np.ndarray]]] = defaultdict(list)
        for node, budget, charge, usage in counted:
            cell = int(self.of_node[node])
            self.evictable[budget, cell] = self.evictable.get((budget, cell), 0) + charge
            by_cell[cell].append((node, charge, usage))
        self.evictable = {bc: min(n, self.allowed[bc[0]]) for bc, n in self.evictable.items()}
        most: dict[int, int] = defaultdict(int)  # per cell, the pods every budget may evict there
        for (_, c), n in self.evictable.items():
            most[c] += n
        for cell, its in by_cell.items():
            self.freed[cell] = self._freed(its, free, slots, most[cell])

    def _items(self, problem: Problem, tables: room.Tables,
               shared: np.ndarray) -> tuple[list[tuple[int, np.ndarray]], list[tuple[int, s.PdbKey, int, np.ndarray]]]:
        """The units a budget covers, node by node: each counted against one budget it is
        under (the one allowing most: dropping the others only relaxes), a node charged its
        share of the unit's count by the members there, rounded down (so the charges add up
        to no more than the count). Returns the parts charged nothing, free to go (node,
        usage), and the others (node, budget, charge, usage); a unit whose budget allows none
        stays."""
        at = {n.name: i for i, n in enumerate(problem.nodes)}
        free: list[tuple[int, np.ndarray]] = []
        counted: list[tuple[int, s.PdbKey, int, np.ndarray]] = []
        for row in np.flatnonzero(shared[tables.entry_unit]):
            unit = problem.units[int(tables.entry_unit[row])]
            node = int(tables.entry_node[row])
            budget = max(unit.pdb_counts, key=lambda b: (self.allowed.get(b, 0), b))
            if self.allowed.get(budget, 0) <= 0:
                continue  # no pod of it may go: it stays held
            if len(unit.members) == 1:  # a pod alone: all of it here
                charge = unit.pdb_counts[budget]
            else:
                here = sum(1 for m in unit.members if m.node is not None and at.get(m.node) == node)
                charge = unit.pdb_counts[budget] * here // len(unit.members)
            if charge > 0:
                counted.append((node, budget, charge, tables.usage[row]))
            else:
                free.append((node, tables.usage[row]))
        return free, counted

    def _freed(self, items: list[tuple[int, int, np.ndarray]], free: np.ndarray, slots: np.ndarray,
               most: int) -> list[list[int]]:
        """Per column, for k = 0..most pods counted: the most evicting k of these items frees."""
        charges = [c for _, c, _ in items]
        columns = [[int(u[r]) for _, _, u in items] for r in range(len(items[0][2]))]
        out = [_knapsack(col, charges, most) for col in columns]
        extra = np.zeros(most + 1, dtype=np.int64)  # the best split of k over the nodes so far
        k = np.arange(most + 1)
        by_node: dict[int, list[int]] = defaultdict(list)
        for i, (node, _, _) in enumerate(items):
            by_node[node].append(i)
        for node, mine in by_node.items():
            best = np.array([_knapsack([col[i] for i in mine], [charges[i] for i in mine], most)
                             for col in columns], dtype=np.int64).T
            gain = np.maximum(0, self.tables.slots(free[node] + best) - slots[node])  # k -> slots it frees here
            if not gain[-1]:
                continue
            split = extra[k[:, None] - k[None, :]] + gain[None, :]  # [k, j]: j of the k on this node
            extra = np.where(k[None, :] <= k[:, None], split, -1).max(axis=1)
        out.append([int(v) for v in extra])
        return out

    def domains(self) -> dict[Domain, list[int]]:
        """Each domain of the keys: its cells (a node without a key's label is in no domain of
        it: a gang that needs one cannot use it)."""
        out: dict[Domain, list[int]] = defaultdict(list)
        for c, values in enumerate(self.signatures):
            for key, value in zip(self.keys, values, strict=True):
                if value is not None:
                    out[key, value].append(c)
        return dict(sorted(out.items()))

    def most(self, cells: Sequence[int]) -> np.ndarray:
        """The most room these cells have: their own, and all the pods counted there could free."""
        out: np.ndarray = self.base[list(cells)].sum(axis=0)
        for c in cells:
            if c in self.freed:
                out = out + np.array([col[-1] for col in self.freed[c]], dtype=np.int64)
        return out


def _hull(table: Sequence[int]) -> list[tuple[int, int, int]]:
    """The pieces of the least concave function on or above ``table`` (k -> most freed), each
    as ``(run, rise, at)``: ``run * f <= run * at + rise * k`` for every k, exact in integers."""
    points: list[tuple[int, int]] = []
    for k, v in enumerate(table):
        while len(points) >= 2 and (points[-1][1] - points[-2][1]) * (k - points[-1][0]) <= \
                (v - points[-1][1]) * (points[-1][0] - points[-2][0]):
            points.pop()
        points.append((k, v))
    return [(k1 - k0, v1 - v0, v0 * (k1 - k0) - (v1 - v0) * k0)
            for (k0, v0), (k1, v1) in itertools.pairwise(points)]


def _knapsack(usage: Sequence[int], charges: Sequence[int], most: int) -> list[int]:
    """For k = 0..most: the most these items (``usage``, each counting ``charges`` pods) free
    within k pods counted, fractional (the most per pod first; a part rounded up): exact in
    integers, an overestimate of any whole choice."""
    out = [0] * (most + 1)
    k, whole = 0, 0
    for u, c in sorted(zip(usage, charges, strict=True), key=lambda uc: -uc[0] / uc[1]):
        for t in range(1, c + 1):
            if k == most:
                return out
            k += 1
            out[k] = whole - (-(t * u) // c)
        whole += u
    for rest in range(k + 1, most + 1):
        out[rest] = whole
    return out


def _key(problem: Problem, w: Workload) -> str | None:
    """The topology key of the workload's root group: its pods live in one domain of it."""
    if w.kind == s.STANDALONE_POD:
        return None
    return problem.groups[w.groups[0]].topology_key


def _inner(problem: Problem, w: Workload, resources: Sequence[str]) -> tuple[str, tuple[int, ...]] | None:
    """For a root whose children all have one finer topology key: that key, and the slots each
    of its ``floor`` smallest children needs (the largest first). Any ``floor`` children that
    satisfy the root need at least as much, child by child, each in one domain of that key
    inside the root's (``_children_fit``)."""
    if w.kind == s.STANDALONE_POD:
        return None
    root = problem.groups[w.groups[0]]
    children = list(problem.tree.children(root.key))
    keys = {problem.groups[c].topology_key for c in children}
    if root.kind == s.POD_GROUP or not children or len(keys) != 1 or None in keys or root.topology_key in keys \
            or root.floor < 1 or root.floor > len(children):
        return None
    (key,) = keys
    assert key is not None
    slots = sorted(room._group_need(problem, c, resources)[room.SLOTS] for c in children)[:root.floor]
    return key, tuple(sorted(slots, reverse=True))


def _children_fit(children: Sequence[int], domains: Sequence[int]) -> bool:
    """Whether children needing these slots (the largest first) may go into domains of these
    slots, each child in one: for every j, the j largest children go only into domains of at
    least the j-th largest's slots, so those domains hold their sum (Hall's condition on a
    threshold; a necessary one)."""
    need = 0
    for child in children:
        need += child
        if sum(d for d in domains if d >= child) < need:
            return False
    return True


def _inside(domains: dict[Domain, list[int]]) -> dict[Domain, list[Domain]]:
    """Per domain, the domains whose cells are all among its own (itself included): found
    through one cell of each, so with a few subset tests per domain, not one per pair."""
    by_cell: dict[int, list[Domain]] = defaultdict(list)
    for d, cells in domains.items():
        for c in cells:
            by_cell[c].append(d)
    sets = {d: set(cells) for d, cells in domains.items()}
    out: dict[Domain, list[Domain]] = {d: [] for d in domains}
    for d, cells in domains.items():
        for outer in by_cell[cells[0]]:
            if sets[d] <= sets[outer]:
                out[outer].append(d)
    return out


def _within(model: cp_model.CpModel, terms: list[_Term], cells: _Cells, its: Iterable[int], most: np.ndarray,
            freed: dict[int, list[cp_model.LinearExprT]], width: int) -> None:
    """Per resource (and the slots), what the chosen terms need is at most the room of the
    cells ``its``: their own, and what the pods evicted there free (``most``: all of it, which
    terms that cannot exceed it need no constraint)."""
    mine = list(its)
    base = cells.base[mine].sum(axis=0)
    shared = [freed[c] for c in mine if c in freed]
    for r in range(width):
        parts = [(need[r], y, top) for need, y, top in terms if need[r]]
        if not parts or sum(n * top for n, _, top in parts) <= int(most[r]):
            continue
        model.add(sum(n * y for n, y, _ in parts) <= int(base[r]) + sum(f[r] for f in shared))
