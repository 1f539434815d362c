"""A proven bound on the first tier for many workloads at once: how many of each priority
could be satisfied were room the only limit.

The per-workload floors (``bounds``) prove one gang tree; a cluster with hundreds of pending
workloads gets its first tier's bound from volume instead. Per priority, strongest first:

- the room that priority may use is, per node a pod of it may run on, the allocatable less
  what running units it may not preempt hold (a higher or equal priority, protected, or,
  under strict budgets, covered by a budget that allows nothing);
- a workload needs at least the requests of the fewest new pods that can satisfy it (its
  gang floors, the smallest children of a CompositePodGroup, at least one pod);
- the stronger priorities' satisfied workloads take at least the smallest such needs, and
  what they take beyond the room this priority cannot use comes out of its room;
- the most workloads that fit is then counted smallest first, per resource, and the least
  count over the resources is the bound; when a workload there is worth other than 1
  (``gangplace.io/value``), the bound is the least of the values of that many workloads (the
  greatest first) and, per resource, a fractional knapsack of the values into the room.

Every step relaxes (topology, node boundaries, inter-pod rules, devices and eviction
necessity are all ignored), so no plan satisfies more at a priority once every stronger
priority is at its bound: a lexicographic upper bound on the satisfied tier. Pure: no I/O.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence

import numpy as np

from solver.core import snapshot as s
from solver.problem.build import Problem
from solver.problem.workloads import Workload

Volume = dict[str, int]


SLOTS = "#slots"  # pods of the smallest request that fit, per node, summed: the pseudo-resource


def satisfied_bound(problem: Problem, caps: Mapping[int, int] | None = None,
                    tables: Tables | None = None) -> tuple[tuple[int, int], ...]:
    """Per priority (strongest first), the most workloads (their values summed) any plan
    satisfies when every stronger priority satisfies its bound: the shape of ``Tiers.satisfied``.
    ``caps`` (``domains.satisfied_caps``) bound the strongest levels likewise, each under its
    stronger levels at their caps: a cap is taken where it is the lower, and once room alone
    bounds a level lower than its cap, the caps below it were made under a stronger premise
    than the bound's and are not used. ``tables``: the cluster's, when the caller has them."""
    tables = tables if tables is not None else Tables(problem)
    resources = tables.resources
    by_level: dict[int, list[Workload]] = defaultdict(list)
    for w in problem.workloads:
        by_level[w.priority].append(w)
    levels = sorted(by_level, reverse=True)
    nodes = {p: _nodes(problem, by_level[p]) for p in levels}
    every = set().union(*nodes.values()) if nodes else set()
    # room any preemption frees is room for every workload, whatever its own power (a pod that
    # may not preempt can take what a stronger workload's victims left): the strongest power
    # decides what may be freed, for every priority
    strongest = _power(problem, problem.workloads)
    union = tables.room(every, strongest)
    taken = np.zeros(len(union), dtype=np.int64)
    out = []
    for p in levels:
        room = tables.room(nodes[p], strongest)
        left = room - np.maximum(0, taken - (union - room))
        admitted = [w for w in by_level[p] if not w.rejected]
        needs = _table([_need(problem, w, resources) for w in admitted], len(union))
        ordered = np.sort(needs, axis=0)  # each resource's needs, smallest first
        fits = np.cumsum(ordered, axis=0) <= left  # the first k smallest fit, per resource
        most = int(fits.all(axis=1).sum()) if len(needs) else 0
        values = [w.value for w in admitted]
        if any(v != 1 for v in values):  # workloads worth more than one (gangplace.io/value)
            value, most = _most_value(values, needs, left, most)
        else:
            value = most
        cap = caps.get(p) if caps is not None else None
        if cap is not None and cap <= value:
            value, most = cap, _fewest(values, cap)
        else:  # no cap here, or room is lower: the caps below were made above this bound
            caps = None
        out.append((p, value))
        taken += ordered[:most].sum(axis=0)
    return tuple(out)


def _fewest(values: Sequence[int], value: int) -> int:
    """The fewest workloads of these values that reach ``value`` (the largest first): what a
    level satisfying that much takes at least."""
    fewest, reached = 0, 0
    for v in sorted(values, reverse=True):
        if reached >= value:
            break
        reached += v
        fewest += 1
    return fewest


def _most_value(values: Sequence[int], needs: np.ndarray, left: np.ndarray, most: int) -> tuple[int, int]:
    """The greatest satisfied value of workloads with these values and needs in room ``left``,
    relaxed: at most ``most`` of them (the most that fit), and per resource a fractional
    knapsack (by value per unit needed, the greatest first). Returns it, and the fewest
    workloads any plan reaching it satisfies (the largest values first): their smallest needs
    are what this level takes at least."""
    order = sorted(values, reverse=True)
    best = sum(order[:most])
    for r in range(needs.shape[1]):
        need = needs[:, r]
        free = [v for v, n in zip(values, need, strict=True) if n <= 0]
        room, total = int(left[r]), float(sum(free))
        for v, n in sorted(((v, int(n)) for v, n in zip(values, need, strict=True) if n > 0),
                           key=lambda vn: vn[0] / vn[1], reverse=True):
            if room <= 0:
                break
            take = min(1.0, room / n)
            total += v * take
            room -= n
        best = min(best, math.floor(total + 1e-9))
    return best, _fewest(values, best)


def _table(rows: Sequence[Sequence[int]], width: int) -> np.ndarray:
    return np.array(rows, dtype=np.int64).reshape(len(rows), width)


def _power(problem: Problem, workloads: Sequence[Workload]) -> int | None:
    powers = [q for w in workloads for c in w.classes if (q := problem.classes[c].power) is not None]
    return max(powers, default=None)


def _nodes(problem: Problem, workloads: Sequence[Workload]) -> set[s.NodeName]:
    return {n for w in workloads for c in w.classes for n in problem.candidates[c]}


class Tables:
    """The cluster as arrays: what each node has, what each unit holds where, and what it
    frees; columns are the resources the pending pods ask for, then ``SLOTS``. Built once per
    plan (0.5 s at 5,000 nodes), read by this bound and the domain bound."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        self.resources = resources = sorted({r for c in problem.classes for r in c.requests})
        self.names = [n.name for n in problem.nodes]
        at = {name: i for i, name in enumerate(self.names)}
        r_count = len(resources)
        self.alloc = _table([[n.allocatable.get(r, 0) for r in resources] for n in problem.nodes], r_count)
        # every pending pod asks at least this much of each resource: a node's room holds at most
        # its least ratio of them, and each pod placed there takes one such slot
        self.smallest = np.array([min(c.requests.get(r, 0) for c in problem.classes) for r in resources],
                                 dtype=np.int64)
        rows = [(u.index, at[node], [here.get(r, 0) for r in resources])
                for u in problem.units for node, here in u.usage.items() if node in at]
        self.entry_unit = np.array([u for u, _, _ in rows], dtype=np.int64)
        self.entry_node = np.array([n for _, n, _ in rows], dtype=np.int64)
        self.usage = _table([v for _, _, v in rows], r_count)
        units = problem.units
        self.priority = np.array([u.priority for u in units], dtype=np.int64)
        self.protected = np.array([u.protected for u in units], dtype=bool)
        self.covered = np.array([bool(u.pdb_counts) for u in units], dtype=bool)
        # per unit: its requests summed over its nodes, and the slots they can add (on a node,
        # a unit's room adds at most ceil(room / smallest) slots of each resource)
        asks = self.smallest > 0
        slots = np.zeros(len(rows), dtype=np.int64)
        if asks.any() and len(rows):
            slots = (-(-self.usage[:, asks] // self.smallest[asks])).max(axis=1)
        self.volume = np.zeros((len(units), r_count + 1), dtype=np.int64)
        np.add.at(self.volume, self.entry_unit, np.column_stack([self.usage, slots]))
        self.pdb_units: dict[s.PdbKey, tuple[np.ndarray, np.ndarray]] = {}
        by_pdb: dict[s.PdbKey, list[tuple[int, int]]] = defaultdict(list)
        for u in units:
            for pdb, n in u.pdb_counts.items():
                by_pdb[pdb].append((u.index, n))
        for pdb, pairs in by_pdb.items():
            self.pdb_units[pdb] = (np.array([u for u, _ in pairs], dtype=np.int64),
                                   np.array([n for _, n in pairs], dtype=np.int64))
        self.allowed = {p.key: p.allowed for p in problem.snapshot.pdbs}

    def room(self, nodes: set[s.NodeName], power: int | None) -> np.ndarray:
        """Over ``nodes``, per resource, the allocatable less what running units a preemptor of
        ``power`` may not evict hold, summed; and the slots. Under strict budgets a unit a
        budget covers stays, and what the budgets allow to go is added back as a whole: per
        budget, the units it covers with the most room per pod first, up to its allowed pods (a
        fractional knapsack, rounded up: an overestimate), all their room counted."""
        r_count = self.alloc.shape[1]
        inside = np.array([n in nodes for n in self.names], dtype=bool)
        movable = self.movable(power)
        free_to_go = movable & ~self.covered if self.problem.strict_pdbs else movable
        stays = ~free_to_go[self.entry_unit] & inside[self.entry_node]
        held = np.zeros_like(self.alloc)
        np.add.at(held, self.entry_node[stays], self.usage[stays])
        free = np.maximum(0, self.alloc - held)[inside]
        total = np.zeros(r_count + 1, dtype=np.int64)
        total[:r_count] = free.sum(axis=0)
        total[r_count] = self.slots(free).sum() if (self.smallest > 0).any() else 1 << 40
        if self.problem.strict_pdbs:
            for pdb, (units, counts) in self.pdb_units.items():
                keep = movable[units]
                total += _most_freed(self.volume[units[keep]], counts[keep], self.allowed.get(pdb, 0))
        return total

    def movable(self, power: int | None) -> np.ndarray:
        """Per unit, whether a preemptor of ``power`` may evict it (None: it may evict none)."""
        if power is None:
            return np.zeros(len(self.priority), dtype=bool)
        movable: np.ndarray = ~self.protected & (self.priority < power)
        return movable

    def slots(self, free: np.ndarray) -> np.ndarray:
        """Per row of ``free`` (a node's free room, per resource), the pods of the smallest
        request that fit there (every pending pod asks at least that much); unbounded when no
        pending pod asks for anything."""
        asks = self.smallest > 0
        if not asks.any():
            return np.full(len(free), 1 << 40, dtype=np.int64)
        slots: np.ndarray = (free[..., asks] // self.smallest[asks]).min(axis=-1)
        return slots


def _most_freed(volume: np.ndarray, counts: np.ndarray, pods: int) -> np.ndarray:
    """Per column, the most that evicting at most ``pods`` of these units' pods frees (a
    fractional knapsack, rounded up)."""
    out = np.zeros(volume.shape[1], dtype=np.int64)
    if pods <= 0 or not len(counts):
        return out
    for col in range(volume.shape[1]):
        order = np.argsort(-volume[:, col] / np.maximum(counts, 1), kind="stable")
        n, v = counts[order], volume[order, col]
        before = np.concatenate([[0], np.cumsum(n)[:-1]])
        take = np.clip(pods - before, 0, n)
        out[col] = int(np.ceil((v * take / np.maximum(n, 1)).sum()))
    return out


def _need(problem: Problem, workload: Workload, resources: Sequence[str]) -> list[int]:
    """A floor on the requests of the new pods that satisfy ``workload`` (at least one pod),
    per resource and then in slots."""
    one = {r: min(problem.classes[c].requests.get(r, 0) for c in workload.classes) for r in resources}
    one[SLOTS] = 1
    if workload.kind != s.STANDALONE_POD:
        tree = _group_need(problem, workload.groups[0], resources)
        one = {r: max(one[r], tree[r]) for r in one}
    return [one[r] for r in [*resources, SLOTS]]


def _group_need(problem: Problem, key: s.GroupKey, resources: Sequence[str]) -> Volume:
    group = problem.groups[key]
    if group.kind == s.POD_GROUP:
        pods = problem.least_new_pods(key)
        classes = [problem.classes[c] for c in problem.classes_under(key)]
        if not pods or not classes:
            return dict.fromkeys([*resources, SLOTS], 0)
        need = {r: pods * min(c.requests.get(r, 0) for c in classes) for r in resources}
        need[SLOTS] = pods
        return need
    children = [_group_need(problem, child, resources) for child in problem.tree.children(key)]
    return {r: sum(sorted(ch[r] for ch in children)[:group.floor]) for r in [*resources, SLOTS]}
