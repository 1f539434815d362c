"""A proven floor on PDB violations for one gang tree, and a plan that meets it when it can.

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
so ``violations ≥ evictions − Σ allowed``. The solver adds that floor to the PDB stage
once stage 1 has placed every pod (``solve``): the stage is then proven as soon as it
meets it.

The same choice, taken back through the programs, is also built as a plan (each node's
evictions chosen for its tightest resource, checked on every resource) for the solver's
hint; victims it evicted without need are put back.

Applies to a problem of one workload whose pending pods share one shape, with no DRA
claims, no inter-pod rules and soft budgets, whose tree is a PodGroup or a
CompositePodGroup of PodGroups with the same key and the same number of pending pods.
Anything else gets no floor (None), never a wrong one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from solver.model import snapshot as s
from solver.model.decode import Assignment
from solver.model.problem import PodClass, Problem

_INF = 1 << 60


@dataclass(frozen=True, slots=True)
class PdbFloor:
    evictions: int  # fewest budget-counted evictions of a plan placing every pending pod
    violations: int  # the floor on tier 3: max(0, evictions − Σ disruptionsAllowed)
    plan: Assignment | None  # a plan with that many budget-counted evictions, if one was built


@dataclass(frozen=True, slots=True)
class _Node:
    name: s.NodeName
    caps: tuple[int, ...]  # caps[x]: most pods with x budget-counted evictions
    covered: tuple[tuple[int, int, dict[str, int]], ...]  # (unit, weight here, usage here)
    free_units: tuple[int, ...]  # eligible units no budget counts


def pdb_floor(problem: Problem) -> PdbFloor | None:
    """The floor on PDB violations of any plan that places every pending pod, or None."""
    tree = _shape(problem)
    if tree is None:
        return None
    root, leaves, pods = tree
    cls = problem.classes[problem.workloads[0].classes[0]]
    nodes = {n.name: n for n in problem.nodes}
    labels = {n.name: n.labels for n in problem.nodes}
    per_node = {name: _node(problem, cls, nodes[name], most) for name, most in _candidates(problem).items()}
    root_key = problem.groups[root].topology_key
    leaf_key = problem.groups[leaves[0]].topology_key if leaves[0] != root else None
    best: tuple[int, list[tuple[list[_Node], int]]] | None = None
    for outer in _split(per_node, root_key, labels).values():
        if leaves[0] == root:
            found = (_domain(outer, pods)[0], [(outer, 1)])
        else:
            found = _racks(_split({n.name: n for n in outer}, leaf_key, labels), len(leaves), pods)
        if found[0] < _INF and (best is None or found[0] < best[0]):
            best = found
    if best is None:
        return None
    allowed = sum(max(0, b.disruptions_allowed) for b in problem.snapshot.pdbs)
    plan = _build(problem, cls, root, leaves, best[1], pods, labels, leaf_key)
    return PdbFloor(evictions=best[0], violations=max(0, best[0] - allowed), plan=plan)


def _shape(problem: Problem) -> tuple[s.GroupKey, list[s.GroupKey], int] | None:
    """(root, leaf groups, pending pods per leaf) when the floor applies, else None."""
    if len(problem.workloads) != 1 or problem.strict_pdbs or not problem.snapshot.pdbs:
        return None
    if problem.dra.active or problem.interpod.active:
        return None
    workload = problem.workloads[0]
    classes = [problem.classes[c] for c in workload.classes]
    if workload.kind == s.STANDALONE_POD or not classes or workload.power is None:
        return None
    if len({tuple(sorted(c.requests.items())) for c in classes}) != 1 or not classes[0].requests:
        return None
    root = workload.groups[0]
    children = problem.children.get(root, [])
    if not children:
        return root, [root], sum(len(c.pods) for c in classes)
    if any(problem.children.get(g) for g in children):
        return None  # deeper trees: not handled
    if len({problem.groups[g].topology_key for g in children}) != 1:
        return None
    pending = {g: sum(len(c.pods) for c in classes if c.group == g) for g in children}
    if any(c.group not in pending for c in classes) or len(set(pending.values())) != 1:
        return None
    leaves = [g for g in children if pending[g]]  # in the children's order, as constraints/symmetry.py
    return (root, leaves, pending[leaves[0]]) if leaves else None


def _candidates(problem: Problem) -> dict[s.NodeName, int]:
    """Nodes any class may use, with the most pods all of them together may put there."""
    out: dict[s.NodeName, int] = {}
    for c in problem.workloads[0].classes:
        for node, most in problem.candidates[c].items():
            out[node] = most + out.get(node, 0)
    return out


def _node(problem: Problem, cls: PodClass, node: s.Node, most: int) -> _Node:
    """The node's room for pods of ``cls`` by the number of budget-counted evictions."""
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
    best = {r: _most_freed([(w, use[r]) for _, w, use in covered], total) for r in requests}
    caps = tuple(min(most, min(max(0, room[r] + best[r][x]) // requests[r] for r in requests))
                 for x in range(total + 1))
    return _Node(node.name, caps, tuple(covered), tuple(free_units))


def _most_freed(items: Sequence[tuple[int, int]], total: int) -> list[int]:
    """best[x]: the most of one resource freed by items of total weight ≤ x (0/1 knapsack)."""
    best = [0] * (total + 1)
    for weight, amount in items:
        for x in range(total, weight - 1, -1):
            best[x] = max(best[x], best[x - weight] + amount)
    return best


def _split(per_node: dict[s.NodeName, _Node], key: str | None,
           labels: dict[s.NodeName, dict[str, str]]) -> dict[str, list[_Node]]:
    """Nodes by their value of ``key`` (one domain without a key); unlabelled nodes left out."""
    out: dict[str, list[_Node]] = defaultdict(list)
    for name in sorted(per_node):
        value = "" if key is None else labels[name].get(key)
        if value is not None:
            out[value].append(per_node[name])
    return out


def _domain(nodes: list[_Node], pods: int) -> tuple[int, list[tuple[int, int]]]:
    """Fewest budget-counted evictions for ``pods`` pods on ``nodes``, and per node (x, pods)."""
    dp = [0] + [_INF] * pods
    choices: list[list[tuple[int, int]]] = []
    for node in nodes:
        options = [(x, cap) for x, cap in enumerate(node.caps) if cap and (x == 0 or cap > node.caps[x - 1])]
        new = dp[:]
        took = [(-1, 0)] * (pods + 1)  # (previous filled, option) per filled
        for filled in range(pods + 1):
            if dp[filled] >= _INF:
                continue
            for i, (x, cap) in enumerate(options):
                t = min(pods, filled + cap)
                if dp[filled] + x < new[t]:
                    new[t] = dp[filled] + x
                    took[t] = (filled, i + 1)
        choices.append([(p, options[i - 1][1] if i else 0) for p, i in took])
        dp = new
    if dp[pods] >= _INF:
        return _INF, []
    # walk back: which nodes took how many pods
    out: list[tuple[int, int]] = [(0, 0)] * len(nodes)
    filled = pods
    for i in range(len(nodes) - 1, -1, -1):
        prev, cap = choices[i][filled]
        if prev < 0:
            continue  # this node took nothing
        out[i] = (_x_for(nodes[i], cap), min(cap, filled - prev))
        filled = prev
    return dp[pods], out


def _x_for(node: _Node, cap: int) -> int:
    return next(x for x, c in enumerate(node.caps) if c >= cap)


def _racks(racks: dict[str, list[_Node]], groups: int, pods: int) -> tuple[int, list[tuple[list[_Node], int]]]:
    """Fewest budget-counted evictions for ``groups`` groups of ``pods`` pods, each inside one
    rack, and the racks used with their pods."""
    names = sorted(racks)
    cost = {r: [_domain(racks[r], j * pods)[0] if j else 0 for j in range(groups + 1)] for r in names}
    dp = [0] + [_INF] * groups
    took: list[list[tuple[int, int]]] = []
    for r in names:
        new = dp[:]
        step = [(-1, 0)] * (groups + 1)
        for done in range(groups + 1):
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
    out: list[tuple[list[_Node], int]] = []
    done = groups
    for i in range(len(names) - 1, -1, -1):
        prev, j = took[i][done]
        if prev >= 0:
            out.append((racks[names[i]], j))
            done = prev
    out.reverse()  # racks in value order, taken by the groups in order (constraints/symmetry.py)
    return dp[groups], out


def _build(problem: Problem, cls: PodClass, root: s.GroupKey, leaves: list[s.GroupKey],
           parts: list[tuple[list[_Node], int]], pods: int, labels: dict[s.NodeName, dict[str, str]],
           leaf_key: str | None) -> Assignment | None:
    """The plan behind the programs' choice, or None when a node's real room falls short."""
    from solver.model import greedy  # the greedy imports nothing from here; late to keep the core acyclic

    allocatable = {n.name: n.allocatable for n in problem.nodes}
    counts: dict[tuple[int, s.NodeName], int] = {}
    evicted: set[int] = set()
    by_group = {g: [c for c in problem.workloads[0].classes if problem.classes[c].group == g] for g in leaves}
    queue = list(leaves)
    for nodes, groups in parts:
        per_rack = groups if leaves[0] != root else 1
        want = per_rack * pods
        _, picks = _domain(nodes, want)
        if not picks:
            return None
        slots: list[tuple[s.NodeName, int]] = []
        for node, (x, k) in zip(nodes, picks, strict=True):
            if not k:
                continue
            chosen = _evictions(problem, cls, node, allocatable[node.name], x, k)
            if chosen is None:
                return None
            evicted.update(chosen)
            slots.append((node.name, k))
        for _ in range(per_rack):
            group = queue.pop(0)
            left = pods
            for i, (name, room) in enumerate(slots):
                for c in by_group[group] if leaves[0] != root else problem.workloads[0].classes:
                    take = min(room, left, len(problem.classes[c].pods) - _placed(counts, c))
                    if take > 0:
                        counts[c, name] = counts.get((c, name), 0) + take
                        room -= take
                        left -= take
                slots[i] = (name, room)
            if left:
                return None
    return greedy.put_back(problem, Assignment(counts=counts, evicted=frozenset(evicted)))


def _placed(counts: dict[tuple[int, s.NodeName], int], c: int) -> int:
    return sum(n for (cc, _), n in counts.items() if cc == c)


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
