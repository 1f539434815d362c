"""Placing a workload's tree: a group with a topology key in each domain in turn, the feasible
placements scored as upstream's default PlacementScore plugins do (the baseline) or best fit
first (the hint), nested for CompositePodGroups. Pure: no I/O.
"""

from __future__ import annotations

from collections import defaultdict

from solver.baseline.fill import fill
from solver.baseline.state import NON_ZERO_DEFAULTS, State
from solver.core import snapshot as s
from solver.core.stopping import checkpoint
from solver.problem.build import fixed_domain
from solver.problem.workloads import Workload

# ---- placing a tree ---------------------------------------------------------------


def place_workload(state: State, workload: Workload, allowed: set[s.NodeName] | None = None) -> bool:
    """Place the tree (on ``allowed`` nodes only, if given); True iff its root's rules hold
    and at least one new pod landed."""
    point = state.savepoint()
    if workload.kind == s.STANDALONE_POD:  # its own pod: one of its (maybe pooled) class
        ok = fill(state, workload.classes, allowed, limit=1) >= 1
    else:
        ok = _place_group(state, workload.groups[0], allowed)
    if ok and any(op == "place" for op, *_ in state.log[point:]) and state.rules.holds():
        return True
    state.rollback(point)
    return False


def _place_group(state: State, key: s.GroupKey, allowed: set[s.NodeName] | None) -> bool:
    problem = state.problem
    group = problem.groups[key]
    if group.topology_key is None:
        return _place_inner(state, group, allowed)
    possible, fixed = fixed_domain(problem, group)
    if possible:
        domains = topology_domains(state, group, allowed, fixed)
        if state.spread:
            if _best_placement(state, group, domains):
                return True
        else:
            least = problem.least_new_pods(group.key)
            for _, nodes, room in domains:
                checkpoint("the greedy walk")
                if room < least:  # even every class alone would not reach the gang's floor here
                    continue
                point = state.savepoint()
                if _place_inner(state, group, nodes):
                    return True
                state.rollback(point)
    # nothing new may land under the group; its running members may still satisfy it
    return _place_inner(state, group, set())


def _best_placement(state: State, group: s.Group, domains: list[tuple[str, set[s.NodeName], int]]) -> bool:
    """Upstream's placement algorithm (schedule_one_podgroup.go,
    podGroupSchedulingPlacementAlgorithm and its CompositePodGroup twin): the group is placed
    in each domain of its topology key in turn (TopologyPlacementGenerator), each result taken
    back, and the feasible ones scored (``_placement_scores``); the best is placed again from
    the same search position and tie-breaks, so the same way. Ties go to the domain first by
    name, where upstream draws at random. The search position afterwards is where the last
    evaluation left it, as upstream's nextStartNodeIndex is."""
    # per feasible domain: its value, nodes, search position and tie-break count, placement
    feasible: list[tuple[str, set[s.NodeName], tuple[int, int], list[tuple[int, s.NodeName, int]]]] = []
    for value, nodes, _ in domains:
        checkpoint("the greedy walk")
        start, draws, point = state.next_start, state.draws, state.savepoint()
        if _place_inner(state, group, nodes):
            proposed = [(c, node, n) for op, c, node, n in state.log[point:] if op == "place"]
            feasible.append((value, nodes, (start, draws), proposed))
        state.rollback(point)
    if not feasible:
        return False
    scores = _placement_scores(state, group, [(nodes, proposed) for _, nodes, _, proposed in feasible])
    best = min(range(len(feasible)), key=lambda i: (-scores[i], feasible[i][0]))
    end, draws = state.next_start, state.draws
    _, nodes, (state.next_start, state.draws), _ = feasible[best]
    placed = _place_inner(state, group, nodes)  # with the evaluation's own tie-breaks
    assert placed, "a placement evaluated feasible is placed again the same way"
    state.next_start, state.draws = end, max(draws, state.draws)
    return True


def _placement_scores(state: State, group: s.Group,
                      placements: list[tuple[set[s.NodeName], list[tuple[int, s.NodeName, int]]]]) -> list[int]:
    """The default PlacementScore plugins, weight 1 each (apis/config/v1/default_plugins.go):
    NodeResourcesFit's ScorePlacement (plugins/noderesources/resource_allocation.go,
    scorePlacement: MostAllocated over the placement's nodes summed, cpu and memory, with the
    proposed pods added and non-zero defaults) plus PodGroupPodsCount (scheduled pods of the
    group plus those proposed, normalised to 0-100 by the best placement's count)."""
    problem = state.problem
    scheduled = len(problem.running_under(group.key))
    counts, fits = [], []
    for nodes, proposed in placements:
        total = 0
        weights = 0
        for res, default in NON_ZERO_DEFAULTS:
            allocatable = sum(state.nodes[n].allocatable.get(res, 0) for n in nodes)
            if allocatable == 0:
                continue
            requested = sum(state.nonzero_used(n, res) for n in nodes)
            requested += sum((problem.classes[c].requests.get(res) or default) * k for c, _, k in proposed)
            total += min(requested, allocatable) * 100 // allocatable
            weights += 1
        fits.append(total // weights if weights else 0)
        counts.append(scheduled + sum(k for _, _, k in proposed))
    most = max(counts)
    return [fit + (count * 100 // most if most else 0) for fit, count in zip(fits, counts, strict=True)]


def topology_domains(
    state: State, group: s.Group, allowed: set[s.NodeName] | None, fixed: str | None
) -> list[tuple[str, set[s.NodeName], int]]:
    """Domains of the group's key that some pod under it may use, each with every node of
    the domain inside ``allowed`` and its free room (pods of each class that fit, summed);
    least free room first (the hint's best fit)."""
    problem = state.problem
    key = group.topology_key
    assert key is not None
    classes = problem.classes_under(group.key)
    if allowed is None and all(state.requests_only(problem.classes[c]) for c in classes):
        # the same on every node at once (5,000 nodes a call: 90 % of contention-5000's hint)
        return sorted(state.rooms_by_domain(key, classes, fixed=fixed), key=lambda d: (d[2], d[0]))
    room: dict[str, int] = defaultdict(int)
    for c in classes:
        cand = problem.candidates[c]
        for node in (cand if allowed is None else [n for n in allowed if n in cand]):
            value = state.nodes[node].labels.get(key)
            if value is None or (fixed is not None and value != fixed):
                continue
            room[value] += state.room_for(problem.classes[c], node)
    by_value: dict[str, set[s.NodeName]] = defaultdict(set)
    for name in (state.nodes if allowed is None else allowed):
        value = state.nodes[name].labels.get(key)
        if value in room:
            by_value[value].add(name)
    return sorted(((value, nodes, room[value]) for value, nodes in by_value.items()), key=lambda d: (d[2], d[0]))


def _place_inner(state: State, group: s.Group, allowed: set[s.NodeName] | None) -> bool:
    problem = state.problem
    point = state.savepoint()
    if group.kind == s.POD_GROUP:
        classes = [c.index for c in problem.classes if c.group == group.key]
        placed = fill(state, classes, allowed)
        running = len(problem.running_in_group.get(group.key, ()))
        floor = group.floor
        if running + placed >= floor:
            return True
        state.rollback(point)
        return False
    ok_children = 0
    for child in problem.tree.children(group.key):
        if _place_group(state, child, allowed):
            ok_children += 1
    floor = group.floor
    if ok_children >= floor:
        return True
    if group.min_count is not None:
        state.rollback(point)
    return False
