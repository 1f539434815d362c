"""The upstream-greedy baseline: kube-scheduler 1.37 workload-aware preemption, in bulk.

Workloads are taken one at a time, highest priority first (then by name). For each:

1. place the whole tree without preemption: ``baseline`` puts each pod on the node the
   default profile scores best (NodeResourcesFit LeastAllocated + BalancedAllocation,
   ``_node_score``), ``hint`` (the solver's hint) packs each class on the fullest nodes
   (MostAllocated); topology domains are tried best-fit first (least free room that may
   hold the group);
2. if that fails and the workload may preempt: remove every candidate victim
   (strictly lower priority, on a node the workload could use), place the tree once,
   then reprieve victims one at a time as upstream's selectVictimsOnDomain does
   (framework/preemption/podgrouppreemption.go): the victims are classified by
   FilterVictimsWithPDBViolation (each budget spent over every potential victim
   cluster-wide in importance order; ``pdb_violating``), the violating ones are tried
   first, then the others, each in MoreImportantVictim order (priority, victim rank —
   CompositePodGroup > PodGroup > pod, a pod of a `single` group ranking as a PodGroup —
   more pods, earlier start; ``importance``), keeping each one whose return still leaves
   every node's placement feasible;
3. when the tree was placed without preemption but some of its pods were not, preempt for
   those as upstream's next cycle does, inside the domains the placed pods fix
   (``_preempt_for_remainder``).

Where it still differs from kube-scheduler 1.37 (issue 16 closes these one by one; the
cross-check against the real scheduler is tests/controlplane/test_baseline_vs_upstream.py):

- node scores: the ``nodes_to_score`` feasible nodes are found walking the nodes in name
  order from where the last search stopped, where upstream walks its zone-interleaved node
  tree, and they are found once for all the pods of a class that fit on them, where upstream
  searches again for each pod; a running pod's real requests
  count, where upstream counts the non-zero defaults (100m cpu, 200Mi memory) for a container
  without requests; ties go by name, where upstream picks at random; the other score plugins
  (taints, preferred affinity and spread, image locality) are not scored;
- a topology domain is taken first-fit, least free room first; upstream generates every
  placement and scores them (PlacementScore: NodeResourcesFit bin-packing and
  PodGroupPodsCount);
- workloads of equal priority go by name; upstream's queue goes by the time each was queued,
  which a snapshot does not record;
- ties upstream leaves to sort.Slice or to random node choice are broken by key and name;
- kept in both because every plan must pass the verifier: a final reprieve over all
  workloads' victims, dropping and re-running a workload whose victim became unnecessary
  (upstream evicts in sequence and never looks back), and with strict PDBs the retry within
  the budgets.

It honours the rules the CP-SAT model encodes (capacity, gangs, topology,
victim units; a victim that cannot be reprieved is exactly a necessary one),
so its Assignment is a valid plan and serves as the solver's complete hint.
Pure: no I/O.
"""

from __future__ import annotations

import bisect
import heapq
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from solver.model import snapshot as s
from solver.model.decode import Assignment, group_ok, pdb_taken
from solver.model.greedy_devices import Devices, Take
from solver.model.greedy_interpod import InterPodRules
from solver.model.problem import PodClass, Problem, VictimUnit, Workload, fixed_domain


class _State:
    def __init__(self, problem: Problem, *, frees_devices: bool = False, spread: bool = False) -> None:
        self.problem = problem
        self.spread = spread  # upstream's node scores (baseline) instead of fullest first (hint)
        self.next_start = 0  # where upstream's next search for feasible nodes starts
        self.nodes = {n.name: n for n in problem.nodes}
        self.placed: dict[s.NodeName, dict[int, int]] = defaultdict(dict)
        self.evicted: set[int] = set()  # change it only through evict / unevict
        self.log: list[tuple[str, int, s.NodeName, int]] = []
        # running[n][r]: requests of the running pods not evicted; new[n][r]: of the pods placed
        self._running: dict[s.NodeName, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self._new: dict[s.NodeName, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for unit in problem.units:
            self._bump_unit(unit.index, 1)
        self.dev = Devices(problem.dra, self.evicted, frees=frees_devices)
        self._takes: list[Take] = []  # device takes of the "dev" log entries
        # nodes that hold or held something: every other node is empty (fullness 0)
        self.touched: set[s.NodeName] = set(self._running)
        self.by_name = sorted(self.nodes)
        self.rules = InterPodRules(problem, self.evicted, self.placed, lambda: self.log)

    def _bump_unit(self, u: int, sign: int) -> None:
        for node, usage in self.problem.units[u].usage.items():
            running = self._running[node]
            for res, amount in usage.items():
                running[res] += sign * amount

    def _bump_class(self, cls: int, node: s.NodeName, n: int) -> None:
        new = self._new[node]
        for res, amount in self.problem.classes[cls].requests.items():
            new[res] += amount * n

    # ---- transactions -------------------------------------------------------------
    def savepoint(self) -> int:
        return len(self.log)

    def rollback(self, point: int) -> None:
        while len(self.log) > point:
            op, a, node, n = self.log.pop()
            if op == "dev":
                self.dev.commit(a, node, self._takes.pop(), -1)
            elif op == "shared":
                self.dev.commit_shared(a, None, None, n)
            elif op == "place":
                left = self.placed[node][a] - n
                if left:
                    self.placed[node][a] = left
                else:
                    del self.placed[node][a]
                self._bump_class(a, node, -n)
            else:
                self.unevict(a)

    def place(self, cls: int, node: s.NodeName, n: int, take: Take | None = None) -> None:
        dra = self.problem.dra
        for i in dra.shared_of_class.get(cls, ()):
            if i not in self.dev.shared:
                got, shared_take = self.dev.fit(dra.shared[i].slots, node, 1)
                assert got == 1, "room_for promised the shared claim"
                reach = frozenset.intersection(*(dra.types[t].reach for (_, _, _, t) in shared_take))
                slots = dra.shared[i].slots
                for j, a in {(j, a) for (j, a, _, _) in shared_take if slots[j].request.alternatives[a].all_mode}:
                    reach &= dra.all_reach(slots[j], a, [t for (jj, aa, _, t) in shared_take if (jj, aa) == (j, a)])
                self.dev.commit_shared(i, shared_take, reach, cls)
                self.log.append(("shared", i, node, cls))
        if dra.class_slots[cls]:
            if take is None:
                got, take = self.dev.fit(dra.class_slots[cls], node, n)
                assert got == n, "room_for promised the devices"
            self.dev.commit(cls, node, take)
            self._takes.append(take)
            self.log.append(("dev", cls, node, n))
        self.touched.add(node)
        self.placed[node][cls] = self.placed[node].get(cls, 0) + n
        self._bump_class(cls, node, n)
        self.log.append(("place", cls, node, n))

    def assignment(self) -> Assignment:
        counts = {(c, node): n for node, by_class in self.placed.items() for c, n in by_class.items() if n}
        return Assignment(counts=counts, evicted=frozenset(self.evicted), devices=self.dev.devices(),
                          shared=dict(self.dev.shared))

    def evict(self, unit: int, *, logged: bool = True) -> None:
        if unit not in self.evicted:
            self.evicted.add(unit)
            self._bump_unit(unit, -1)
            if logged:
                self.log.append(("evict", unit, s.NodeName(""), 0))

    def unevict(self, unit: int) -> None:
        if unit in self.evicted:
            self.evicted.discard(unit)
            self._bump_unit(unit, 1)

    # ---- capacity -----------------------------------------------------------------
    def used(self, node: s.NodeName, res: str, *, placed: bool = True) -> int:
        """Requests on ``node`` of placed pods (unless ``placed`` is False) and running pods left."""
        running = self._running[node].get(res, 0)
        return running + self._new[node].get(res, 0) if placed else running

    def room_for(self, cls: PodClass, node: s.NodeName) -> int:
        """How many more pods of ``cls`` fit on ``node`` (NodeResourcesFit, requested resources only)."""
        alloc = self.nodes[node].allocatable
        running, new = self._running.get(node), self._new.get(node)
        most = len(cls.pods)
        for res, amount in cls.requests.items():
            free = alloc.get(res, 0) - (running.get(res, 0) if running else 0) - (new.get(res, 0) if new else 0)
            if free < amount:
                return 0
            most = min(most, free // amount)
        dra = self.problem.dra
        if most and dra.active:
            most = self._device_room(cls, node, most)
        if most and self.rules.active:
            most = self.rules.room(cls, node, most)
        return most

    def _device_room(self, cls: PodClass, node: s.NodeName, most: int) -> int:
        dra = self.problem.dra
        pending: Counter[int] = Counter()  # shared claims place() would take first, here
        for i in dra.shared_of_class.get(cls.index, ()):
            if i in self.dev.shared:
                if node not in self.dev.shared_reach[i]:
                    return 0
                continue
            got, take = self.dev.fit(dra.shared[i].slots, node, 1, start=pending)
            if got == 0:
                return 0
            for (_, _, _, t), n in take.items():
                pending[t] += n
        if dra.class_slots[cls.index]:
            most = self.dev.fit(dra.class_slots[cls.index], node, most, start=pending)[0]
        return most

    def node_feasible(self, node: s.NodeName) -> bool:
        alloc = self.nodes[node].allocatable
        requested = {r for c in self.placed[node] for r in self.problem.classes[c].requests}
        return all(self.used(node, res) <= alloc.get(res, 0) for res in requested)

    def blame_unnecessary(self) -> int | None:
        """A workload to drop when some eviction is no longer necessary, else None.

        Necessary (as in constraints/preemption.py): on one of the victim's nodes,
        putting it back overflows a resource for the placed pods of higher priority,
        one of which may preempt it.
        """
        problem = self.problem
        for u in sorted(self.evicted):
            unit = problem.units[u]
            if any(self._needed_on(unit, node) for node in unit.usage) or self._needed_for_devices(unit) \
                    or self.rules.needed(unit):
                continue
            lower = [problem.classes[c] for node in unit.usage for c in self.placed[node]
                     if problem.classes[c].priority <= unit.priority or problem.classes[c].power is None]
            if lower:
                return min(lower, key=lambda c: (c.priority, -c.workload)).workload
        return None

    def _needed_for_devices(self, unit: VictimUnit) -> bool:
        """A pod that may preempt ``unit`` took a device it held."""
        classes = self.problem.classes
        return any(n > 0 and self.problem.eligible(classes[c], unit)
                   for t in self.problem.dra.unit_types.get(unit.index, {})
                   for c, n in self.dev.by_class[t].items())

    def _needed_on(self, unit: VictimUnit, node: s.NodeName) -> bool:
        placed = [(self.problem.classes[c], n) for c, n in self.placed[node].items()]
        if not any(self.problem.eligible(c, unit) for c, _ in placed):
            return False
        alloc = self.nodes[node].allocatable
        for res, use in unit.usage[node].items():
            demand = sum(c.requests.get(res, 0) * n for c, n in placed if c.priority > unit.priority)
            if use and demand and demand + self.used(node, res, placed=False) + use > alloc.get(res, 0):
                return True
        return False

    def fullness(self, node: s.NodeName) -> float:
        alloc = self.nodes[node].allocatable
        running, new = self._running.get(node), self._new.get(node)
        score = 0.0
        for res in ("cpu", "memory"):
            total = alloc.get(res, 0)
            if total > 0:
                score += ((running.get(res, 0) if running else 0) + (new.get(res, 0) if new else 0)) / total
        return score


def baseline(problem: Problem) -> Assignment:
    """Upstream's plan as this module follows it: each pod on the node the default profile
    scores best (``_spread_fill``). The bench's and ``--baseline``'s yardstick."""
    return _run(problem, spread=True)


def hint(problem: Problem) -> Assignment:
    """The solver's complete hint: the same walk, but each class packed on the fullest nodes
    first, which leaves more room for later workloads and usually evicts less. Not upstream's
    choice of node, so never reported as the baseline."""
    return _run(problem, spread=False)


def _run(problem: Problem, *, spread: bool) -> Assignment:
    """A lower-priority workload may lean on room a victim left for a higher one; when a later
    eviction then makes that victim unnecessary, the lowest-priority workload on its node is
    dropped and the greedy run again (every eviction of a plan must be necessary)."""
    skip: set[int] = set()
    while True:
        state = _greedy(problem, skip, spread)
        blamed = state.blame_unnecessary()
        if blamed is None:
            return state.assignment()
        skip.add(blamed)


def _greedy(problem: Problem, skip: set[int], spread: bool = False) -> _State:
    state = _State(problem, spread=spread)
    for workload in sorted(problem.workloads, key=lambda w: (-w.priority, w.key)):
        if workload.index in skip or workload.rejected:
            continue
        point = state.savepoint()
        if _place_workload(state, workload):
            if workload.power is not None:
                _preempt_for_remainder(state, workload)
            continue
        state.rollback(point)
        if workload.power is None:
            continue
        victims = _candidate_victims(problem, workload, state)
        if not victims:
            continue
        if _try_with(state, workload, victims, point):
            continue
        if problem.strict_pdbs:  # the reprieves were not enough: only the victims the budgets allow
            _try_with(state, workload, _within_budgets(problem, state, victims), point)
    # A later workload's evictions can make room that an earlier victim no longer
    # needs to leave: put back every victim that fits again (the plan is joint).
    _reprieve(state, sorted(state.evicted))
    return state


def put_back(problem: Problem, assignment: Assignment) -> Assignment:
    """Put back, in reprieve order, every evicted victim that fits again.

    Never worse on any tier; used on a solver plan a time limit cut short.
    """
    state = _State(problem, frees_devices=problem.dra_preemption)
    dra = problem.dra
    for i, take in assignment.shared.items():
        reach = frozenset.intersection(*(dra.types[t].reach for (_, _, _, t) in take))
        owner = min(dra.shared[i].users)
        state.dev.commit_shared(i, dict(take), reach, owner)
    for (c, node), n in assignment.counts.items():
        state.place(c, node, n, take=dict(assignment.devices.get((c, node), {})) or None)
    for u in assignment.evicted:
        state.evict(u, logged=False)
    _reprieve(state, sorted(state.evicted))
    return state.assignment()


def _candidate_victims(problem: Problem, workload: Workload, state: _State) -> list[int]:
    nodes = {n for c in workload.classes for n in problem.candidates[c]}
    out = set()
    for node in nodes:
        for u in problem.units_on_node.get(node, ()):
            unit = problem.units[u]
            if u not in state.evicted and any(problem.eligible(problem.classes[c], unit) for c in workload.classes):
                out.add(u)
    return sorted(out)


@dataclass(frozen=True, slots=True)
class Potential:
    """Upstream's potential victims for the PDB classification: every unit cluster-wide that the
    preemptor may preempt (below its strongest power, not protected) and that was not evicted
    before this preemption, plus the candidates themselves."""

    top: int
    before: frozenset[int]  # evicted before this preemption (by earlier workloads)

    @staticmethod
    def of(problem: Problem, workload: Workload, state: _State) -> "Potential | None":
        powers = [p for c in workload.classes if (p := problem.classes[c].power) is not None]
        return Potential(max(powers), frozenset(state.evicted)) if powers else None


def _try_with(state: _State, workload: Workload, victims: list[int], point: int) -> bool:
    potential = Potential.of(state.problem, workload, state)
    for u in victims:
        state.evict(u)
    if _place_workload(state, workload):
        _reprieve(state, victims, potential)
        if not (state.problem.strict_pdbs and _breaks_a_pdb(state.problem, state.evicted)):
            return True
    state.rollback(point)
    return False


def _preempt_for_remainder(state: _State, workload: Workload) -> None:
    """Upstream's next cycle for a gang whose minCount is met but whose other pods are still
    pending: they are scheduled as a group again, and when they do not fit the group preempts
    (PodGroupPostFilter, framework/preemption/podgrouppreemption.go), inside the domains its
    placed pods already fix. Kept only if it places at least one more pod."""
    problem = state.problem
    placed: Counter[int] = Counter()
    for by_class in state.placed.values():
        placed.update({c: n for c, n in by_class.items() if c in workload.classes})
    left = {c: len(problem.classes[c].pods) - placed[c] for c in workload.classes}
    if not any(left.values()):
        return
    victims = _candidate_victims(problem, workload, state)
    if not victims:
        return
    point = state.savepoint()
    potential = Potential.of(problem, workload, state)
    for u in victims:
        state.evict(u)
    more = 0
    by_group: dict[s.GroupKey | None, list[int]] = defaultdict(list)
    for c, n in left.items():
        if n:
            by_group[problem.classes[c].group].append(c)
    for key, classes in sorted(by_group.items(), key=lambda item: str(item[0])):
        group_point = state.savepoint()
        got = sum(_fill(state, [c], _fixed_nodes(state, key), limit=left[c]) for c in classes)
        # the leaf's gang rule holds for what it binds, or none of it lands
        if key is not None and got and not group_ok(
                problem, problem.groups[key], sum(placed[c] for c in problem.classes_under(key)) + got, {}):
            state.rollback(group_point)
            got = 0
        more += got
    if more and state.rules.holds():
        _reprieve(state, victims, potential)
        if not (problem.strict_pdbs and _breaks_a_pdb(problem, state.evicted)):
            return
    state.rollback(point)


def _fixed_nodes(state: _State, group: s.GroupKey | None) -> set[s.NodeName] | None:
    """The nodes a pod of ``group`` may still use: those in every topology domain its ancestors'
    placed or running pods fix (None: no domain is fixed)."""
    problem = state.problem
    allowed: set[s.NodeName] | None = None
    while group is not None:
        g = problem.groups[group]
        if g.topology_key is not None:
            under = set(problem.classes_under(g.key))
            nodes = [n for n, by_class in state.placed.items() if any(c in under for c in by_class)]
            nodes += [p.node for p in problem.running_under(g.key) if p.node]
            values = {state.nodes[n].labels.get(g.topology_key) for n in nodes if n in state.nodes}
            if values:
                keep = {n for n, node in state.nodes.items() if node.labels.get(g.topology_key) in values}
                allowed = keep if allowed is None else allowed & keep
        group = g.parent
    return allowed


def _within_budgets(problem: Problem, state: _State, victims: list[int]) -> list[int]:
    """The victims, lowest priority first, each taken while every budget it is under has room."""
    taken = pdb_taken(problem, state.evicted)
    allowed = _allowed(problem)
    out = []
    for u in sorted(victims, key=lambda u: (problem.units[u].priority, problem.units[u].key)):
        counts = problem.units[u].pdb_counts
        if all(taken[p] + n <= allowed[p] for p, n in counts.items()):
            out.append(u)
            for p, n in counts.items():
                taken[p] += n
    return out


def _breaks_a_pdb(problem: Problem, evicted: Iterable[int]) -> bool:
    allowed = _allowed(problem)
    return any(n > allowed[p] for p, n in pdb_taken(problem, evicted).items())


def _allowed(problem: Problem) -> dict[str, int]:
    return {p.key: max(0, p.disruptions_allowed) for p in problem.snapshot.pdbs}


def victim_rank(problem: Problem, unit: VictimUnit) -> int:
    """victimRank (framework/preemption/util.go): a CompositePodGroup victim 3, a PodGroup 2, a
    pod 1; a pod with a scheduling group that is its own victim (a `single` group) ranks as a
    PodGroup, as NewPodVictim types it."""
    group = problem.groups.get(s.GroupKey(unit.key))
    if group is not None:
        return 3 if group.kind == s.COMPOSITE_POD_GROUP else 2
    return 2 if unit.members[0].group is not None else 1


def importance(problem: Problem, u: int) -> tuple[object, ...]:
    """MoreImportantVictim's order (framework/preemption/util.go), most important first:
    higher priority, then victim rank, then more pods, then the earlier start; the unit key
    breaks the ties upstream leaves to sort.Slice."""
    unit = problem.units[u]
    return (-unit.priority, -victim_rank(problem, unit), -len(unit.members), unit.start_time, unit.key)


def pdb_violating(problem: Problem, victims: Iterable[int], potential: Potential | None = None) -> set[int]:
    """Which ``victims`` FilterVictimsWithPDBViolation (framework/preemption/util.go) classifies
    as violating: each budget's disruptionsAllowed is spent over the pods of every potential
    victim (``potential``, else the victims alone) in importance order, and a victim with a pod
    beyond a budget violates. A budget with an empty selector matches nothing there. Spent per
    victim from its per-budget counts: a pod under two budgets spends both, where upstream stops
    at the first one it exhausts (the only difference, and only for such pods)."""
    units = problem.units
    live = {p.key: p.disruptions_allowed for p in problem.snapshot.pdbs
            if p.selector.match_labels or p.selector.match_expressions}
    mine = sorted(set(victims), key=lambda u: importance(problem, u))
    out: set[int] = set()
    if potential is None:  # only the victims spend, most important first
        for u in mine:
            for pdb, n in units[u].pdb_counts.items():
                if pdb in live:
                    live[pdb] -= n
                    if live[pdb] < 0:
                        out.add(u)
        return out
    ranked = _covered_in_order(problem)
    for u in mine:
        for pdb, n in units[u].pdb_counts.items():
            if pdb not in live:
                continue
            r = ranked[pdb]
            i = r.pos[u]
            # the potential victims before u under this budget: below the preemptor's power (a
            # suffix of the priority-descending order), not protected, not evicted already
            first = bisect.bisect_left(r.neg_priority, -potential.top + 1)
            spent = r.prefix[i] - r.prefix[min(first, i)]
            spent -= sum(units[b].pdb_counts[pdb] for b in potential.before
                         if (j := r.pos.get(b)) is not None and first <= j < i and not units[b].protected)
            if live[pdb] - spent - n < 0:
                out.add(u)
    return out


@dataclass(frozen=True, slots=True)
class _Ranked:
    """The units one budget covers, in importance order: each unit's position, the cumulated
    counts of the unprotected ones before each position, and the (descending) priorities."""

    pos: dict[int, int]
    prefix: list[int]
    neg_priority: list[int]


# per budget, for the last Problem's units (the per-domain sub-problems of a decomposition
# share them): ranked once, not once per preemption
_RANKED: list[object] = [None, {}]


def _covered_in_order(problem: Problem) -> dict[str, _Ranked]:
    if _RANKED[0] is not problem.units:
        by_pdb: dict[str, list[int]] = defaultdict(list)
        for u in sorted((u.index for u in problem.units if u.pdb_counts), key=lambda u: importance(problem, u)):
            for pdb in problem.units[u].pdb_counts:
                by_pdb[pdb].append(u)
        ranked = {}
        for pdb, order in by_pdb.items():
            prefix = [0]
            for u in order:
                unit = problem.units[u]
                prefix.append(prefix[-1] + (0 if unit.protected else unit.pdb_counts[pdb]))
            ranked[pdb] = _Ranked(pos={u: i for i, u in enumerate(order)}, prefix=prefix,
                                  neg_priority=[-problem.units[u].priority for u in order])
        _RANKED[:] = [problem.units, ranked]
    out = _RANKED[1]
    assert isinstance(out, dict)
    return out


def _reprieve(state: _State, victims: list[int], potential: Potential | None = None) -> None:
    """selectVictimsOnDomain's reprieve (framework/preemption/podgrouppreemption.go): the
    victims classified by pdb_violating over every ``potential`` victim (default: these alone);
    the violating ones tried first, then the others, each most important first, and each put
    back when everything placed still fits."""
    problem = state.problem
    order = sorted(victims, key=lambda u: importance(problem, u))
    violating = pdb_violating(problem, victims, potential)
    order = [u for u in order if u in violating] + [u for u in order if u not in violating]
    for u in order:
        state.unevict(u)
        if all(state.node_feasible(node) for node in problem.units[u].usage) and state.dev.feasible(
                list(problem.dra.unit_types.get(u, {}))) and not state.rules.blocks_return(problem.units[u]):
            continue  # reprieved
        state.evict(u, logged=False)


# ---- placing a tree ---------------------------------------------------------------


def _place_workload(state: _State, workload: Workload) -> bool:
    """Place the tree; True iff its root's rules hold and at least one new pod landed."""
    point = state.savepoint()
    if workload.kind == s.STANDALONE_POD:
        ok = _fill(state, workload.classes, None) >= 1
    else:
        ok = _place_group(state, workload.groups[0], None)
    if ok and any(op == "place" for op, *_ in state.log[point:]) and state.rules.holds():
        return True
    state.rollback(point)
    return False


def _place_group(state: _State, key: s.GroupKey, allowed: set[s.NodeName] | None) -> bool:
    problem = state.problem
    group = problem.groups[key]
    if group.topology_key is None:
        return _place_inner(state, group, allowed)
    possible, fixed = fixed_domain(problem, group)
    if possible:
        for _, nodes in _domains(state, group, allowed, fixed):
            point = state.savepoint()
            if _place_inner(state, group, nodes):
                return True
            state.rollback(point)
    # nothing new may land under the group; its running members may still satisfy it
    return _place_inner(state, group, set())


def _domains(
    state: _State, group: s.Group, allowed: set[s.NodeName] | None, fixed: str | None
) -> list[tuple[str, set[s.NodeName]]]:
    """Domains of the group's key, least free room first (best fit)."""
    problem = state.problem
    key = group.topology_key
    assert key is not None
    classes = problem.classes_under(group.key)
    by_value: dict[str, set[s.NodeName]] = defaultdict(set)
    room: dict[str, int] = defaultdict(int)
    for c in classes:
        for node in problem.candidates[c]:
            if allowed is not None and node not in allowed:
                continue
            value = state.nodes[node].labels.get(key)
            if value is None or (fixed is not None and value != fixed):
                continue
            by_value[value].add(node)
            room[value] += state.room_for(problem.classes[c], node)
    return sorted(((v, nodes) for v, nodes in by_value.items()), key=lambda item: (room[item[0]], item[0]))


def _place_inner(state: _State, group: s.Group, allowed: set[s.NodeName] | None) -> bool:
    problem = state.problem
    point = state.savepoint()
    if group.kind == s.POD_GROUP:
        classes = [c.index for c in problem.classes if c.group == group.key]
        placed = _fill(state, classes, allowed)
        running = len(problem.running_in_group.get(group.key, ()))
        floor = group.min_count if group.min_count is not None else 1
        if running + placed >= floor:
            return True
        state.rollback(point)
        return False
    ok_children = 0
    for child in problem.children.get(group.key, ()):
        if _place_group(state, child, allowed):
            ok_children += 1
    floor = group.min_count if group.min_count is not None else 1
    if ok_children >= floor:
        return True
    if group.min_count is not None:
        state.rollback(point)
    return False


def _fullest_first(state: _State, cand: dict[s.NodeName, int],
                   allowed: set[s.NodeName] | None) -> Iterator[s.NodeName]:
    """Candidate nodes by (-fullness, name). Only touched nodes can be nonempty; the empty
    rest is walked lazily in name order, so a class that fits on the first few empty nodes
    never looks at the others."""
    if allowed is not None:
        nodes = sorted((n for n in allowed if n in cand), key=lambda n: (-state.fullness(n), n))
        yield from nodes
        return
    scores = {n: state.fullness(n) for n in state.touched if n in cand}
    yield from sorted((n for n, f in scores.items() if f > 0), key=lambda n: (-scores[n], n))
    yield from (n for n in state.by_name if n in cand and scores.get(n, 0.0) == 0.0)


def _node_score(state: _State, cls: PodClass, node: s.NodeName) -> int:
    """The default profile's score of one more pod of ``cls`` on ``node``: NodeResourcesFit
    LeastAllocated plus NodeResourcesBalancedAllocation over cpu and memory, weight 1 each
    (plugins/noderesources least_allocated.go, balanced_allocation.go), with the non-zero
    defaults a pod without a request is scored with (100m cpu, 200Mi memory)."""
    alloc = state.nodes[node].allocatable
    fractions, least = [], 0
    for res, default in (("cpu", 100), ("memory", 200 * 1024 * 1024)):
        capacity = alloc.get(res, 0)
        requested = state.used(node, res) + (cls.requests.get(res) or default)
        least += (capacity - requested) * 100 // capacity if 0 < capacity and requested <= capacity else 0
        fractions.append(min(1.0, requested / capacity) if capacity > 0 else 1.0)
    balanced = int((1 - abs(fractions[0] - fractions[1]) / 2) * 100)
    return least // 2 + balanced


def nodes_to_score(all_nodes: int) -> int:
    """numFeasibleNodesToFind (schedule_one.go), percentageOfNodesToScore unset: every node of
    a cluster under 100, else (50 - nodes/125) % of them, at least 5 % and at least 100."""
    if all_nodes < 100:
        return all_nodes
    percentage = max(5, 50 - all_nodes // 125)
    return max(100, all_nodes * percentage // 100)


def _spread_fill(state: _State, c: int, allowed: set[s.NodeName] | None, left: int) -> int:
    """Pods of class ``c`` one at a time, each on the feasible node with the best _node_score.
    As upstream, only ``nodes_to_score`` feasible nodes are looked at, found walking the
    nodes (here in name order) from where the previous search stopped; ties go by name, where
    upstream picks at random among the best. Returns pods placed."""
    cls = state.problem.classes[c]
    cand = state.problem.candidates[c]
    nodes = [n for n in state.by_name if n in cand and (allowed is None or n in allowed)]
    want = nodes_to_score(len(state.nodes))
    placed, seen, start = 0, 0, state.next_start
    constrained = c in state.rules.constrained
    while left and seen < len(nodes):
        sample: list[s.NodeName] = []
        while len(sample) < want and seen < len(nodes):
            node = nodes[(start + seen) % len(nodes)]
            seen += 1
            # a class under inter-pod rules may fit later where it does not yet: keep every node
            if constrained or state.room_for(cls, node) > 0:
                sample.append(node)
        heap = [(-_node_score(state, cls, n), n) for n in sample if not constrained or state.room_for(cls, n) > 0]
        state.next_start = (start + seen) % max(1, len(nodes))
        heapq.heapify(heap)
        while left and heap:
            score, node = heapq.heappop(heap)
            if state.room_for(cls, node) <= 0:
                continue
            now = -_node_score(state, cls, node)
            if now != score:  # stale: this node took pods since
                heapq.heappush(heap, (now, node))
                continue
            state.place(c, node, 1)
            left -= 1
            placed += 1
            if state.room_for(cls, node) > 0:
                heapq.heappush(heap, (-_node_score(state, cls, node), node))
            if constrained:  # placing may change where its class can go: look again
                heap = [(-_node_score(state, cls, n), n) for n in sample if state.room_for(cls, n) > 0]
                heapq.heapify(heap)
    return placed


def _fill(state: _State, classes: Iterable[int], allowed: set[s.NodeName] | None, *, limit: int | None = None) -> int:
    """Place as many pods of the classes as fit (at most ``limit`` of each): on upstream's best
    scored node one pod at a time (baseline), or fullest nodes first (hint); returns pods placed."""
    problem = state.problem
    total = 0
    for c in classes:
        cls = problem.classes[c]
        left = len(cls.pods) if limit is None else limit
        if state.spread:
            total += _spread_fill(state, c, allowed, left)
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
