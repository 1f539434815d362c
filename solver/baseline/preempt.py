"""Preemption in the greedy walk: candidate victims, a try with them removed, the reprieve in
upstream's order (PDB-violating first, then by importance), the domains a hint tries, and the
remainder of a placed tree. Pure: no I/O.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from datetime import datetime

from solver.baseline.fill import fill
from solver.baseline.place import place_workload, topology_domains
from solver.baseline.state import State
from solver.baseline.victims import Potential, breaks_a_pdb, importance_rank, pdb_violating, within_budgets
from solver.core import snapshot as s
from solver.core.stopping import checkpoint
from solver.problem.assignment import group_ok
from solver.problem.build import Problem, fixed_domain
from solver.problem.workloads import Workload

# how many domains of its root's key the hint's preemption tries for one workload
HINT_DOMAINS = 8


def preemption_domains(state: State, workload: Workload) -> list[set[s.NodeName]] | None:
    """Where the hint's preemption tries a workload whose root has a topology key: the
    domains of that key where the gang's floor would fit were every pod it may preempt gone
    (an estimate: requested resources only), the most free room first (the fewest evictions),
    at most ``HINT_DOMAINS``. None when the root has no key or its running members span
    domains: the whole cluster is tried at once."""
    if workload.kind == s.STANDALONE_POD:
        return None
    problem = state.problem
    root = problem.groups[workload.groups[0]]
    if root.topology_key is None:
        return None
    possible, fixed = fixed_domain(problem, root)
    if not possible:
        return None
    least = problem.least_new_pods(root.key)
    ranked = []
    evicting = {value: most for value, _, most in state.rooms_by_domain(root.topology_key, workload.classes,
                                                                          evicting=True, fixed=fixed)}
    for value, nodes, room in topology_domains(state, root, None, fixed):
        if evicting.get(value, 0) >= least:
            ranked.append((-room, value, nodes))
    return [nodes for _, _, nodes in sorted(ranked, key=lambda r: (r[0], r[1]))][:HINT_DOMAINS]


def preempt_in_domains(state: State, workload: Workload, domains: list[set[s.NodeName]], point: int) -> bool:
    """The hint's preemption one domain at a time: the candidates on the domain's nodes
    evicted, the workload placed there, the victims reprieved (and under strict budgets,
    when that breaks one, only the victims the budgets allow). Evicting every candidate in
    the cluster and reprieving them one by one costs about a second a workload on 5,000
    nodes; a domain's candidates are a few hundred."""
    problem = state.problem
    for nodes in domains:
        checkpoint("the greedy walk")
        victims = candidate_victims(problem, workload, state, nodes)
        if not victims:
            continue
        if try_with(state, workload, victims, point, nodes):
            return True
        if problem.strict_pdbs and try_with(
                state, workload, within_budgets(problem, state.evicted, victims), point, nodes):
            return True
    return False


def preempt_pod(state: State, workload: Workload) -> bool:
    """DefaultPreemption for a pod outside any group (plugins/defaultpreemption;
    framework/preemption/preemption.go, DryRunPreemption and pickOneNodeForPreemption): on
    every node where it fits with every pod it may preempt there gone, selectVictimsOnNode's
    reprieve (``reprieve``); then the node with the fewest PDB-violating victims, the lowest
    highest-priority victim, the smallest sum of victim priorities, the fewest victims, the
    latest start of its highest-priority victims; the pod goes there. The dry run stops, as
    upstream's does, once it has ``candidates_to_find`` candidates, one at least without a
    PDB-violating victim. Upstream starts at a random offset, checks nodes in parallel and
    breaks the last ties at random: here it starts at the first node in node order, checks them
    in that order, and the first wins a tie."""
    problem = state.problem
    (c,) = workload.classes
    best: tuple[tuple[object, ...], s.NodeName] | None = None
    potential = Potential.of(problem, workload, state.evicted)  # each try is taken back: one for all
    nodes = state.ordered(set(problem.candidates[c]))
    wanted, found, clean = candidates_to_find(len(nodes)), 0, 0
    for node in nodes:
        key = _victims_on(state, workload, c, node, keep=False, potential=potential)
        if key is None:
            continue
        found += 1
        clean += key[0] == 0
        if best is None or key < best[0]:
            best = (key, node)
        if clean and found >= wanted:
            break
    return best is not None and _victims_on(state, workload, c, best[1], keep=True, potential=potential) is not None


def candidates_to_find(nodes: int) -> int:
    """DefaultPreemption's calculateNumCandidates with the default args (minCandidateNodesPercentage
    10, minCandidateNodesAbsolute 100): a tenth of the nodes preemption might help on, at least
    100, at most all of them."""
    return min(nodes, max(nodes * 10 // 100, 100))


# how many nodes where a pod outside any group fits by preempting the hint compares; upstream's
# dry run compares at least 100 (or a tenth of the nodes) from a random offset
HINT_PREEMPTION_NODES = 4


def preempt_pod_hint(state: State, workload: Workload) -> bool:
    """The hint's preemption for a pod outside any group: its candidate nodes one at a time,
    each with that node's victims only (``_victims_on``, as upstream's dry run), starting where
    its class's last walk stopped (upstream's next search starts where the last one ended); of
    the first ``HINT_PREEMPTION_NODES`` where it fits, the one whose victims, after the
    reprieve, break the fewest budgets, cost least and are fewest. Evicting every candidate in
    the cluster and reprieving them one by one took seconds a pod on 5,000 nodes. A walk that
    finds no node is remembered (``State.no_preempt``, taken back with the state): placements and
    evictions do not make room by preempting, so the class's next pod does not walk again."""
    problem = state.problem
    (c,) = workload.classes
    cls = problem.classes[c]
    at = state.savepoint()
    if c in state.no_preempt:  # no node had room by preempting, and none has since
        return False
    order, cand = state.order, problem.candidates[c]
    start = state.preempt_start.get(c, 0) % max(1, len(order))
    potential = Potential.of(problem, workload, state.evicted) if problem.snapshot.pdbs else None
    found: list[tuple[tuple[object, ...], int, s.NodeName]] = []
    last = start
    for step in range(len(order)):
        if not step % 256:
            checkpoint("the greedy walk")
        node = order[(start + step) % len(order)]
        if node not in cand or state.room_evicting(cls, node) < 1:
            continue
        last = start + step
        key = _victims_on(state, workload, c, node, keep=False, potential=potential, cheapest=True)
        if key is not None:
            found.append((key, step, node))
            if len(found) == HINT_PREEMPTION_NODES:
                break
    if not found:
        state.no_preempt[c] = at
        return False
    state.preempt_start[c] = last + 1
    _, _, node = min(found)
    return _victims_on(state, workload, c, node, keep=True, potential=potential, cheapest=True) is not None


def _victims_on(state: State, workload: Workload, c: int, node: s.NodeName, *, keep: bool,
                potential: Potential | None, cheapest: bool = False) -> tuple[object, ...] | None:
    """selectVictimsOnNode for the pod of class ``c``: its preference key for
    pickOneNodeForPreemption (smaller is preferred; ``cheapest``: the hint's, by budgets
    broken, cost and count), None when it does not fit; taken back unless ``keep``.
    ``potential``: the PDB classification's (``Potential.of`` before the preemption)."""
    problem = state.problem
    cls = problem.classes[c]
    victims = [u for u in problem.units_on_node.get(node, ())
               if u not in state.evicted and problem.eligible(cls, problem.units[u])]
    if problem.strict_pdbs:
        victims = within_budgets(problem, state.evicted, victims)
    if not victims:
        return None
    point = state.savepoint()
    for u in victims:
        state.evict(u)
    if state.room_for(cls, node) < 1:
        state.rollback(point)
        return None
    state.place(c, node, 1)
    if not state.rules.holds():
        state.rollback(point)
        return None
    reprieve(state, victims, potential)
    gone = [u for u in victims if u in state.evicted]
    violating = pdb_violating(problem, gone, potential)
    if cheapest:
        key: tuple[object, ...] = (sum(len(problem.units[u].members) for u in violating),
                                   sum(problem.units[u].cost_milli for u in gone), len(gone))
        if not keep:
            state.rollback(point)
        return key
    pods = [(problem.units[u].priority, p.start_time) for u in gone for p in problem.units[u].members]
    top = max(prio for prio, _ in pods)
    earliest = min(start for prio, start in pods if prio == top)
    key = (sum(len(problem.units[u].members) for u in violating), top, sum(prio for prio, _ in pods),
           len(pods), _later_first(earliest))
    if not keep:
        state.rollback(point)
    return key


def _later_first(stamp: str) -> float:
    """An RFC 3339 time as a key that sorts the later one first (no time: last)."""
    try:
        return -datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return math.inf


def candidate_victims(problem: Problem, workload: Workload, state: State,
                       within: set[s.NodeName] | None = None) -> list[int]:
    nodes = {n for c in workload.classes for n in problem.candidates[c] if within is None or n in within}
    out = set()
    for node in nodes:
        for u in problem.units_on_node.get(node, ()):
            unit = problem.units[u]
            if u not in state.evicted and any(problem.eligible(problem.classes[c], unit) for c in workload.classes):
                out.add(u)
    return sorted(out)


def try_with(state: State, workload: Workload, victims: list[int], point: int,
              allowed: set[s.NodeName] | None = None) -> bool:
    potential = Potential.of(state.problem, workload, state.evicted)
    for u in victims:
        state.evict(u)
    if place_workload(state, workload, allowed):
        reprieve(state, victims, potential)
        if not (state.problem.strict_pdbs and breaks_a_pdb(state.problem, state.evicted)):
            return True
    state.rollback(point)
    return False


def preempt_for_remainder(state: State, workload: Workload) -> None:
    """Upstream's next cycle for a gang whose minCount is met but whose other pods are still
    pending: they are scheduled as a group again, and when they do not fit the group preempts
    (PodGroupPostFilter, framework/preemption/podgrouppreemption.go), inside the domains its
    placed pods already fix. Kept only if it places at least one more pod."""
    problem = state.problem
    if workload.kind == s.STANDALONE_POD:  # one pod, placed: nothing remains
        return
    placed: Counter[int] = Counter()
    for by_class in state.placed.values():
        placed.update({c: n for c, n in by_class.items() if c in workload.classes})
    left = {c: len(problem.classes[c].pods) - placed[c] for c in workload.classes}
    if not any(left.values()):
        return
    victims = candidate_victims(problem, workload, state)
    if not victims:
        return
    point = state.savepoint()
    potential = Potential.of(problem, workload, state.evicted)
    for u in victims:
        state.evict(u)
    more = 0
    by_group: dict[s.GroupKey | None, list[int]] = defaultdict(list)
    for c, n in left.items():
        if n:
            by_group[problem.classes[c].group].append(c)
    for key, classes in sorted(by_group.items(), key=lambda item: str(item[0])):
        group_point = state.savepoint()
        got = sum(fill(state, [c], _fixed_nodes(state, key), limit=left[c]) for c in classes)
        # the leaf's gang rule holds for what it binds, and its pods share one domain of every
        # key above them (a group none of whose pods had landed has no domain fixed), or none of it lands
        if key is not None and got and (not group_ok(
                problem, problem.groups[key], sum(placed[c] for c in problem.classes_under(key)) + got, {})
                or not _in_one_domain(state, key)):
            state.rollback(group_point)
            got = 0
        more += got
    if more and state.rules.holds():
        reprieve(state, victims, potential)
        if not (problem.strict_pdbs and breaks_a_pdb(problem, state.evicted)):
            return
    state.rollback(point)


def _in_one_domain(state: State, group: s.GroupKey) -> bool:
    """Do the placed and running pods under each topology group above ``group`` (itself
    included) share one value of its key?"""
    problem = state.problem
    for key in problem.tree.ancestors(group):
        g = problem.groups[key]
        if g.topology_key is None:
            continue
        under = set(problem.classes_under(key))
        nodes = [n for n, by_class in state.placed.items() if any(c in under and k for c, k in by_class.items())]
        nodes += [p.node for p in problem.running_under(key) if p.node]
        if len({state.nodes[n].labels.get(g.topology_key) for n in nodes}) > 1:
            return False
    return True


def _fixed_nodes(state: State, group: s.GroupKey | None) -> set[s.NodeName] | None:
    """The nodes a pod of ``group`` may still use: those in every topology domain its ancestors'
    placed or running pods fix (None: no domain is fixed)."""
    problem = state.problem
    allowed: set[s.NodeName] | None = None
    for key in problem.tree.ancestors(group) if group is not None else ():
        g = problem.groups[key]
        if g.topology_key is not None:
            under = set(problem.classes_under(g.key))
            nodes = [n for n, by_class in state.placed.items() if any(c in under for c in by_class)]
            nodes += [p.node for p in problem.running_under(g.key) if p.node]
            values = {state.nodes[n].labels.get(g.topology_key) for n in nodes if n in state.nodes}
            if values:
                keep = {n for n, node in state.nodes.items() if node.labels.get(g.topology_key) in values}
                allowed = keep if allowed is None else allowed & keep
    return allowed


def reprieve(state: State, victims: list[int], potential: Potential | None = None) -> None:
    """selectVictimsOnDomain's reprieve (framework/preemption/podgrouppreemption.go): the
    victims classified by pdb_violating over every ``potential`` victim (default: these alone);
    the violating ones tried first, then the others, each most important first, and each put
    back when everything placed still fits."""
    problem = state.problem
    order = sorted(victims, key=importance_rank(problem).__getitem__)
    violating = pdb_violating(problem, victims, potential)
    order = [u for u in order if u in violating] + [u for u in order if u not in violating]
    for i, u in enumerate(order):
        if not i % 64:
            checkpoint("the greedy walk (reprieves)")
        state.unevict(u)
        if all(state.node_feasible(node) for node in problem.units[u].usage) and state.dev.feasible(
                list(problem.dra.unit_types.get(u, {}))) and not state.rules.blocks_return(problem.units[u]):
            continue  # reprieved
        state.evict(u, logged=False)
