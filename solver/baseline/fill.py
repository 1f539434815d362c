"""Which nodes a class's pods take inside an allowed set: upstream's node scores over a sample
of feasible nodes (``spread``, the baseline), fullest first (the hint), or least fragmenting
(the hint with expected pods). Pure: no I/O.
"""

from __future__ import annotations

import heapq
import zlib
from collections.abc import Iterable, Iterator, Mapping

from solver.baseline.devices import Take
from solver.baseline.fragment import tie_order
from solver.baseline.state import NON_ZERO_DEFAULTS, State
from solver.core import snapshot as s
from solver.problem.workloads import PodClass


def _fullest_first(state: State, cand: Mapping[s.NodeName, int],
                   allowed: set[s.NodeName] | None) -> Iterator[s.NodeName]:
    """Candidate nodes by (-fullness, name). Only touched nodes can be nonempty; the empty
    rest is walked lazily in name order, so a class that fits on the first few empty nodes
    never looks at the others."""
    def fullest(scores: Mapping[s.NodeName, tuple[float, float]]) -> list[s.NodeName]:
        return sorted(scores, key=lambda n: (-scores[n][0], -scores[n][1], n))

    if allowed is not None:
        yield from fullest({n: state.fullness(n) for n in allowed if n in cand})
        return
    scores = {n: state.fullness(n) for n in state.touched if n in cand}
    empty = (0.0, 0.0)
    yield from fullest({n: f for n, f in scores.items() if f > empty})
    yield from (n for n in state.by_name if n in cand and scores.get(n, empty) == empty)


def _node_score(state: State, cls: PodClass, node: s.NodeName) -> int:
    """The default profile's score of one more pod of ``cls`` on ``node``, weight 1 each
    (plugins/noderesources): NodeResourcesFit LeastAllocated over cpu and memory with the
    non-zero defaults (least_allocated.go), plus NodeResourcesBalancedAllocation over the real
    requests, 50 + (50 + balance with the pod - balance without it) / 2 (balanced_allocation.go,
    balancedResourceScorer; a pod without requests scores 0)."""
    alloc = state.nodes[node].allocatable
    running, new, nonzero = state.running_on(node), state.new_requests.get(node, {}), state.nonzero_on(node)
    least, weights = 0, 0
    with_pod, without = [], []
    for res, default in NON_ZERO_DEFAULTS:
        capacity = alloc.get(res, 0)
        if capacity <= 0:
            continue
        used = running.get(res, 0) + new.get(res, 0)
        asked = cls.requests.get(res, 0)
        requested = used + nonzero.get(res, 0) + (asked or default)
        least += (capacity - requested) * 100 // capacity if requested <= capacity else 0
        weights += 1
        without.append(min(1.0, used / capacity))
        with_pod.append(min(1.0, (used + asked) / capacity))
    score = least // weights if weights else 0
    if any(cls.requests.get(res) for res, _ in NON_ZERO_DEFAULTS):
        score += 50 + (50 + _balance(with_pod) - _balance(without)) // 2
    return score


def _draw(sample: int, node: s.NodeName) -> int:
    """The tie-break of ``node`` in the ``sample``-th search: upstream draws a random number per
    scored node (NodePluginScores.Randomizer, schedule_one.go); this is a fixed pseudo-random
    one, so the baseline is reproducible yet spreads over tied nodes as upstream does, rather
    than taking them in a row."""
    return zlib.crc32(f"{sample}/{node}".encode())


def _balance(fractions: list[float]) -> int:
    """balancedResourceScore for up to two resources: (1 - std) * 100."""
    std = abs(fractions[0] - fractions[1]) / 2 if len(fractions) == 2 else 0.0
    return int((1 - std) * 100)


def nodes_to_score(all_nodes: int) -> int:
    """numFeasibleNodesToFind (schedule_one.go), percentageOfNodesToScore unset: every node of
    a cluster under 100, else (50 - nodes/125) % of them, at least 5 % and at least 100."""
    if all_nodes < 100:
        return all_nodes
    percentage = max(5, 50 - all_nodes // 125)
    return max(100, all_nodes * percentage // 100)


def spread_fill(state: State, c: int, allowed: set[s.NodeName] | None, left: int) -> int:
    """Pods of class ``c`` one at a time, each on the feasible node with the best _node_score.
    As upstream (schedule_one.go, findNodesThatPassFilters), the nodes of the placement are
    walked in the snapshot's order from nextStartNodeIndex until ``nodes_to_score`` of them
    are feasible, and the walk moves the index on. As upstream's OpportunisticBatching (beta,
    on by default; framework/runtime/batch.go), the next pod of the class takes the best of
    the same candidates with the chosen node scored again, and a new search starts only when
    they are used up. Ties go by ``_draw``, where upstream draws at random. Returns pods
    placed."""
    cls = state.problem.classes[c]
    cand = state.problem.candidates[c]
    nodes = state.ordered(allowed)
    total = len(nodes)
    want = nodes_to_score(total)
    placed, seen = 0, 0
    constrained = c in state.rules.constrained
    while left and seen < total:
        start = state.next_start
        sample: list[s.NodeName] = []
        walked = 0
        while len(sample) < want and seen < total:
            node = nodes[(start + walked) % total]
            walked += 1
            seen += 1
            # a class under inter-pod rules may fit later where it does not yet: keep every node
            if node in cand and (constrained or state.room_for(cls, node) > 0):
                sample.append(node)
        state.next_start = (start + walked) % total
        state.draws += 1
        rank = {n: _draw(state.draws, n) for n in sample}
        heap = [(-_node_score(state, cls, n), rank[n], n) for n in sample
                if not constrained or state.room_for(cls, n) > 0]
        heapq.heapify(heap)
        while left and heap:
            score, i, node = heapq.heappop(heap)
            if state.room_for(cls, node) <= 0:
                continue
            now = -_node_score(state, cls, node)
            if now != score:  # stale: this node took pods since
                heapq.heappush(heap, (now, i, node))
                continue
            state.place(c, node, 1)
            left -= 1
            placed += 1
            if state.room_for(cls, node) > 0:
                heapq.heappush(heap, (-_node_score(state, cls, node), i, node))
            if constrained:  # placing may change where its class can go: look again
                heap = [(-_node_score(state, cls, n), rank[n], n) for n in sample if state.room_for(cls, n) > 0]
                heapq.heapify(heap)
    return placed


def _fragmentation_fill(state: State, c: int, allowed: set[s.NodeName] | None, left: int) -> int:
    """Up to ``left`` pods of class ``c``, one at a time, each on the node it fragments least
    (``fragment.score``, highest first); among equal scores a node in use before an empty one,
    then the seeded node order. A node's rank changes only when a pod lands on it; a popped
    rank is worked out again before it is used."""
    problem = state.problem
    cls = problem.classes[c]
    seed = problem.seed
    shared = bool(problem.dra.shared_of_class.get(c))

    def ranked(node: s.NodeName) -> tuple[tuple[int, bool], Take | None] | None:
        # the class's own devices are fitted by placement(); a shared claim only by room_for
        room = state.room_for(cls, node) if shared else state.room_for(cls, node, own_devices=False)
        got = state.placement(c, node) if room > 0 else None
        if got is None:
            return None
        return (-got[0], state.fullness(node) == (0.0, 0.0)), got[1]

    heap: list[tuple[tuple[int, bool], bytes, s.NodeName]] = []
    for node in problem.candidates[c]:
        if allowed is not None and node not in allowed:
            continue
        if (got := ranked(node)) is not None:
            heap.append((got[0], tie_order(seed, node), node))
    heapq.heapify(heap)
    placed = 0
    while placed < left and heap:
        key, order, node = heapq.heappop(heap)
        got = ranked(node)
        if got is None:
            continue
        if got[0] != key:  # its rank changed since: back in line
            heapq.heappush(heap, (got[0], order, node))
            continue
        state.place(c, node, 1, take=got[1] if problem.dra.class_slots[c] else None)
        placed += 1
        if (again := ranked(node)) is not None:
            heapq.heappush(heap, (again[0], order, node))
    return placed


def fill(state: State, classes: Iterable[int], allowed: set[s.NodeName] | None, *, limit: int | None = None) -> int:
    """Place as many pods of the classes as fit (at most ``limit`` of each): on upstream's best
    scored node one pod at a time (baseline), or fullest nodes first (hint); returns pods placed."""
    problem = state.problem
    total = 0
    for c in classes:
        cls = problem.classes[c]
        left = len(cls.pods) if limit is None else limit
        if state.spread:
            total += spread_fill(state, c, allowed, left)
            continue
        if state.frag is not None:
            total += _fragmentation_fill(state, c, allowed, left)
            continue
        again = c in state.rules.constrained  # such a class takes a node one pod at a time, in rounds
        while True:
            before = left
            for node in _fullest_first(state, problem.candidates[c], allowed):
                if left == 0:
                    break
                while left and (k := min(left, state.room_for(cls, node))) > 0:
                    state.place(c, node, k)
                    left -= k
                    if again:
                        break
            if not again or left in (0, before):
                break
        total += (len(cls.pods) if limit is None else limit) - left
    return total
