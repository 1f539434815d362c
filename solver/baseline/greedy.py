"""The upstream-greedy baseline: kube-scheduler 1.37 workload-aware scheduling, in bulk.

Workloads are taken one at a time, highest priority first (then by name). For each:

1. place the whole tree without preemption. ``baseline`` follows upstream's placement
   algorithm (schedule_one_podgroup.go): a group with a topology key is placed in each domain
   in turn, nested for CompositePodGroups, and the feasible placements are scored by the
   default PlacementScore plugins (``_best_placement``); inside a placement each pod goes to
   the node the default profile scores best (NodeResourcesFit LeastAllocated +
   BalancedAllocation, ``_node_score``) among the ``nodes_to_score`` feasible nodes found
   walking the snapshot's node order (``node_tree_order``) from where the last search
   stopped. ``hint`` (the solver's hint, not upstream's choice) takes domains best-fit first
   (least free room) and packs each class on the fullest nodes (MostAllocated);
2. if that fails and the workload may preempt: remove every candidate victim
   (strictly lower priority, on a node the workload could use), place the tree once,
   then reprieve victims one at a time as upstream's selectVictimsOnDomain does
   (framework/preemption/podgrouppreemption.go): the victims are classified by
   FilterVictimsWithPDBViolation (each budget spent over every potential victim
   cluster-wide in importance order; ``victims.pdb_violating``), the violating ones are tried
   first, then the others, each in MoreImportantVictim order (priority, victim rank —
   CompositePodGroup > PodGroup > pod, a pod of a `single` group ranking as a PodGroup —
   more pods, earlier start; ``victims.importance``), keeping each one whose return still leaves
   every node's placement feasible;
3. when the tree was placed without preemption but some of its pods were not, preempt for
   those as upstream's next cycle does, inside the domains the placed pods fix
   (``_preempt_for_remainder``).

Where it still differs from kube-scheduler 1.37, and why (the cross-check against the real
scheduler is tests/controlplane/test_baseline_vs_upstream.py):

- random tie-breaks made deterministic: between nodes of equal score upstream draws at random
  (sorted_nodes.go, Randomizer), here a fixed pseudo-random draw per node and search
  (``_draw``), so that tied pods spread over the cluster as upstream's do (taking tied nodes in
  a row evicted a third of what upstream did on podgroup-preemption-1000-all); between
  placements of equal score (findBestPlacement) the domain first by name; victims sort.Slice
  leaves equal go by key;
- queue order: workloads of equal priority go by name; upstream's queue goes by the time each
  was queued, which a snapshot does not record, and a gang's first cycle may start before all
  its pods exist (the cross-check creates them first);
- node order: nodes are taken as added in name order (the informer's first list); a cluster
  whose nodes were added over time lists them in creation order;
- node scores: only the resource plugins are scored; TaintToleration (PreferNoSchedule),
  preferred node and pod affinity, PodTopologySpread's soft and default constraints, image
  locality and DynamicResources scoring are not, as a snapshot's pending pods rarely carry
  them. A pod's non-zero defaults apply per pod, where upstream applies them per container
  (a snapshot keeps pod totals). A pod of a class takes the best of one sample of candidates
  until they are used up, as OpportunisticBatching does for pods of one signature; a pod under
  inter-pod rules has no signature and upstream searches afresh for it, here the same sample
  is scored again;
- kept because every plan must pass the verifier: a final reprieve over all workloads'
  victims, dropping and re-running a workload whose victim became unnecessary (upstream
  evicts in sequence and never looks back), and with strict PDBs the retry within the
  budgets;
- not upstream: ``hint`` packs fullest first and takes best-fit domains; it is the solver's
  starting point only.

It honours the rules the CP-SAT model encodes (capacity, gangs, topology,
victim units; a victim that cannot be reprieved is exactly a necessary one),
so its Assignment is a valid plan and serves as the solver's complete hint.
Pure: no I/O.
"""

from __future__ import annotations

import heapq
import math
import zlib
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime

from solver.baseline.devices import Devices, Load, Take
from solver.baseline.fragment import Fragmentation, score, tie_order
from solver.baseline.interpod import InterPodRules
from solver.baseline.victims import PerUnits, Potential, breaks_a_pdb, importance_rank, pdb_violating, within_budgets
from solver.core import snapshot as s
from solver.core.stopping import checkpoint
from solver.filters import attach, localpv
from solver.problem.assignment import Assignment, group_ok
from solver.problem.build import Problem, fixed_domain
from solver.problem.workloads import PodClass, VictimUnit, Workload


class State:
    def __init__(self, problem: Problem, *, frees_devices: bool = False, spread: bool = False) -> None:
        self.problem = problem
        self.spread = spread  # upstream's node scores (baseline) instead of fullest first (hint)
        self.next_start = 0  # where upstream's next search for feasible nodes starts
        self.draws = 0  # samples of feasible nodes taken: each breaks its score ties afresh
        self.nodes = {n.name: n for n in problem.nodes}
        self.placed: dict[s.NodeName, dict[int, int]] = defaultdict(dict)
        self.evicted: set[int] = set()  # change it only through evict / unevict
        self.log: list[tuple[str, int, s.NodeName, int]] = []
        # requests of the running pods not evicted, per node: what every running pod holds (worked
        # out once per set of units and shared, never written), and a node's own copy once one of
        # its victims was evicted; a sub-problem of one domain so pays only for the nodes it touches
        self._base_running = _base_running(problem)
        self._running: dict[s.NodeName, dict[str, int]] = {}
        self._new: dict[s.NodeName, dict[str, int]] = defaultdict(lambda: defaultdict(int))  # of the pods placed
        # what the non-zero defaults add to those requests, for the node scores (baseline only)
        self._unit_nonzero, self._base_nonzero = _base_nonzero(problem) if spread else ([], {})
        self._nonzero: dict[s.NodeName, dict[str, int]] = {}
        self._held: dict[int, dict[s.NodeName, dict[str, int]]] = {}  # per power: _held_by
        # upstream's allocator takes the first device that fits; the hint packs shares best fit
        self.dev = Devices(problem.dra, self.evicted, frees=frees_devices, best_fit=not spread)
        # the hint with expected pods: each pod where it fragments least (solver.baseline.fragment)
        self.frag = Fragmentation(problem, self.dev) if problem.expected and not spread else None
        self._takes: list[Take] = []  # device takes of the "dev" log entries
        # nodes that hold or held something: every other node is empty (fullness 0)
        self.touched: set[s.NodeName] = set(self._base_running)
        self.by_name = sorted(self.nodes)
        self.order = node_tree_order(problem.nodes) if spread else self.by_name
        self.position = {n: i for i, n in enumerate(self.order)}
        self.rules = InterPodRules(problem, self.evicted, self.placed, lambda: self.log)
        self._unit_of: dict[s.PodKey, int] | None = None  # running pod -> its victim unit (volume limits)

    def running_on(self, node: s.NodeName) -> Mapping[str, int]:
        """Requests of the running pods on ``node`` that are not evicted."""
        own = self._running.get(node)
        return own if own is not None else self._base_running.get(node, _EMPTY)

    def nonzero_on(self, node: s.NodeName) -> Mapping[str, int]:
        """What the non-zero defaults add on ``node`` (baseline only)."""
        own = self._nonzero.get(node)
        return own if own is not None else self._base_nonzero.get(node, _EMPTY)

    @staticmethod
    def _own(mine: dict[s.NodeName, dict[str, int]], base: Mapping[s.NodeName, Mapping[str, int]],
             node: s.NodeName) -> dict[str, int]:
        """``node``'s own copy in ``mine``, made from ``base`` on the first write."""
        own = mine.get(node)
        if own is None:
            own = mine[node] = defaultdict(int, base.get(node, _EMPTY))
        return own

    def _bump_unit(self, u: int, sign: int) -> None:
        for node, usage in self.problem.units[u].usage.items():
            running = self._own(self._running, self._base_running, node)
            for res, amount in usage.items():
                running[res] += sign * amount
        if self._unit_nonzero:
            for node, extra in self._unit_nonzero[u].items():
                nonzero = self._own(self._nonzero, self._base_nonzero, node)
                for res, amount in extra.items():
                    nonzero[res] += sign * amount

    def _bump_class(self, cls: int, node: s.NodeName, n: int) -> None:
        new = self._new[node]
        requests = self.problem.classes[cls].requests
        for res, amount in requests.items():
            new[res] += amount * n
        if self.spread:
            for res, default in NON_ZERO_DEFAULTS:
                if not requests.get(res):
                    self._own(self._nonzero, self._base_nonzero, node)[res] += default * n

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
                # allocated here (All: this node's set); the other sharers need only reach it
                reach = frozenset.intersection(*(dra.types[t].reach for (_, _, _, t) in shared_take))
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
        """Evict ``unit``, unless (``logged``: a new eviction, not a reprieved victim's again) a
        pod placed relies on a volume only it holds (``strands_a_volume``): then it stays."""
        if logged and self.problem.volume_holders and self.strands_a_volume(unit):
            return
        if unit not in self.evicted:
            self.evicted.add(unit)
            self._bump_unit(unit, -1)
            if self.frag is not None:
                self.frag.forget()
            if logged:
                self.log.append(("evict", unit, s.NodeName(""), 0))

    def unevict(self, unit: int) -> None:
        if unit in self.evicted:
            self.evicted.discard(unit)
            self._bump_unit(unit, 1)
            if self.frag is not None:
                self.frag.forget()

    # ---- capacity -----------------------------------------------------------------
    def used(self, node: s.NodeName, res: str, *, placed: bool = True) -> int:
        """Requests on ``node`` of placed pods (unless ``placed`` is False) and running pods left."""
        running = self.running_on(node).get(res, 0)
        return running + self._new[node].get(res, 0) if placed else running

    def nonzero_used(self, node: s.NodeName, res: str) -> int:
        """``used`` as the node scores count it: a pod without a cpu or memory request counts
        the non-zero default (NodeInfo.NonZeroRequested)."""
        return self.used(node, res) + self.nonzero_on(node).get(res, 0)

    def ordered(self, nodes: set[s.NodeName] | None) -> list[s.NodeName]:
        """``nodes`` (every node if None) in the order upstream's snapshot lists them."""
        if nodes is None:
            return self.order
        return sorted(nodes, key=self.position.__getitem__)

    def room_for(self, cls: PodClass, node: s.NodeName, *, own_devices: bool = True) -> int:
        """How many more pods of ``cls`` fit on ``node`` (NodeResourcesFit, requested resources only).
        Without ``own_devices``, the devices of the class's own claims are not counted (its caller
        fits them itself)."""
        most = self._requests_room(cls, node, self.running_on(node))
        if most and cls.pods[0].csi_volumes and not self.volumes_fit(cls, node):
            return 0
        if most and cls.pods[0].local_claims:  # a node-local volume for each claim (localpv.py)
            beside = [(self.problem.classes[c].pods[0], n) for c, n in self.placed.get(node, {}).items()]
            most = min(most, localpv.room(self.nodes[node], cls.pods[0], beside) or 0)
        if most and self.problem.dra.reserve_caps:
            most = min(most, self.reserve_room(cls))
        if most and self.problem.dra.active and own_devices:
            most = self.device_room(cls, node, most)
        if most and self.rules.active:
            most = self.rules.room(cls, node, most)
        return most

    def reserve_room(self, cls: PodClass) -> int:
        """How many more pods of ``cls`` the reservedFor of the claims it names takes
        (dra.ReserveCap), with the pods placed so far."""
        most = len(cls.pods)
        for cap in self.problem.dra.reserve_caps:
            if cls.index in cap.classes:
                taken = sum(n for by_class in self.placed.values() for c, n in by_class.items() if c in cap.classes)
                most = min(most, cap.room - taken)
        return max(0, most)

    def volumes_fit(self, cls: PodClass, node: s.NodeName) -> bool:
        """NodeVolumeLimits on ``node`` with the pods placed there so far (attach.py): a volume
        is free while a pod holding it is not evicted."""
        where = self.nodes[node]
        if not where.volume_limits:
            return True
        placed: set[attach.Volume] = set()
        for c in self.placed.get(node, ()):
            placed.update(self.problem.classes[c].pods[0].csi_volumes)
        free = set(where.attached_volumes) | placed
        unit_of = self.unit_of()
        for vol, pods in self.problem.volume_holders.get(node, {}).items():
            if any(p not in unit_of or unit_of[p] not in self.evicted for p in pods):
                free.add(vol)
        have = set(self.problem.held_volumes.get(node, ())) | placed
        return not attach.refuses(where, have, cls.pods[0].csi_volumes, free)

    def unit_of(self) -> Mapping[s.PodKey, int]:
        """Running pod -> its victim unit (worked out on first use: only volume limits ask)."""
        if self._unit_of is None:
            self._unit_of = {p.key: u.index for u in self.problem.units for p in u.members}
        return self._unit_of

    def strands_a_volume(self, unit: int) -> bool:
        """Would evicting ``unit`` leave a placed pod with a volume that is its own again on a
        node past the volume's driver limit (attach.py)? A pod placed beside a holder of its
        volume added none; without every holder it adds it, as upstream's Filter would see it
        bound after the evictions (the verifier's order). Counted on the safe side: the
        volumes held as if nothing were evicted, and those of the pods placed."""
        problem, unit_of = self.problem, self.unit_of()
        members = problem.units[unit].members
        for node in sorted({p.node for p in members if p.node is not None}):
            holders = problem.volume_holders.get(node)
            if not holders:
                continue
            placed: set[attach.Volume] = set()
            for c in self.placed.get(node, ()):
                placed.update(problem.classes[c].pods[0].csi_volumes)
            left = attach.room(self.nodes[node], set(problem.held_volumes.get(node, ())) | placed)
            for vol, pods in holders.items():
                if vol in placed and left.get(vol[0], 0) < 0 and all(
                        unit_of.get(p) == unit or unit_of.get(p) in self.evicted for p in pods):
                    return True
        return False

    def room_evicting(self, cls: PodClass, node: s.NodeName) -> int:
        """How many more pods of ``cls`` would fit on ``node`` were every unit it may preempt
        evicted (requested resources only: the hint's estimate of where preemption can help)."""
        assert cls.power is not None
        return self._requests_room(cls, node, self.held_by(cls.power).get(node, _EMPTY))

    def _requests_room(self, cls: PodClass, node: s.NodeName, running: Mapping[str, int]) -> int:
        """How many more pods of ``cls`` fit in the allocatable less ``running`` and the pods placed."""
        alloc, new = self.nodes[node].allocatable, self._new.get(node)
        most = len(cls.pods)
        for res, amount in cls.requests.items():
            free = alloc.get(res, 0) - running.get(res, 0) - (new.get(res, 0) if new else 0)
            if free < amount:
                return 0
            most = min(most, free // amount)
        return most

    def held_by(self, power: int) -> Mapping[s.NodeName, Mapping[str, int]]:
        """Requests per node of the running units a preemptor of ``power`` may not evict (those
        an earlier workload evicted still counted: an estimate on the safe side)."""
        held = self._held.get(power)
        if held is None:
            held = self._held[power] = _sum_by_node(
                u.usage for u in self.problem.units if u.protected or u.priority >= power)
        return held

    def device_room(self, cls: PodClass, node: s.NodeName, most: int) -> int:
        dra = self.problem.dra
        pending = Load()  # shared claims place() would take first, here
        for i in dra.shared_of_class.get(cls.index, ()):
            if i in self.dev.shared:
                if node not in self.dev.shared_reach[i]:
                    return 0
                continue
            got, take = self.dev.fit(dra.shared[i].slots, node, 1, start=pending)
            if got == 0:
                return 0
            self.dev.add_take(pending, dra.shared[i].slots, take)
        if dra.class_slots[cls.index]:
            most = self.dev.fit(dra.class_slots[cls.index], node, most, start=pending)[0]
        return most

    def node_feasible(self, node: s.NodeName) -> bool:
        alloc = self.nodes[node].allocatable
        requested = {r for c in self.placed[node] for r in self.problem.classes[c].requests}
        return all(self.used(node, res) <= alloc.get(res, 0) for res in requested)

    def blame_unnecessary(self) -> int | None:
        """The class of a workload to drop when some eviction is no longer necessary, else None.

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
                return min(lower, key=lambda c: (c.priority, -c.workload)).index
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

    def free_requests(self, node: s.NodeName, resources: Iterable[str]) -> dict[str, int]:
        alloc, running, new = self.nodes[node].allocatable, self.running_on(node), self._new.get(node)
        return {r: alloc.get(r, 0) - running.get(r, 0) - (new.get(r, 0) if new else 0) for r in resources}

    def placement(self, c: int, node: s.NodeName) -> tuple[int, Take | None] | None:
        """One more pod of class ``c`` on ``node`` (which has room for it): its fragmentation
        score, and the devices it would take (shares where they fragment least); None when
        its devices do not fit after all."""
        frag = self.frag
        assert frag is not None
        cls = self.problem.classes[c]
        free = self.free_requests(node, frag.resources)
        before = frag.of(frag.node_state(node, free))
        slots = self.problem.dra.class_slots[c]
        take: Take | None = None
        extra: Load | None = None
        if slots:
            self.dev.prefer = frag.after_share(free)
            try:
                got, take = self.dev.fit(slots, node, 1)
            finally:
                self.dev.prefer = None
            if got != 1:
                return None
            extra = Load()
            self.dev.add_take(extra, slots, take)
        after_free = {r: f - cls.requests.get(r, 0) for r, f in free.items()}
        return score(before, frag.of(frag.node_state(node, after_free, extra))), take

    def fullness(self, node: s.NodeName) -> tuple[float, float]:
        """How full ``node`` is, for packing: its own DRA devices first (the share in use), then
        cpu and memory (MostAllocated). Devices first, as a node's devices are what is scarce on
        it: on the FGD GPU-sharing protocol (openb, 130 %, seed 42, a tenth of the nodes) devices
        first allocated 95.5 % of the GPU milli, cpu and memory only 90.5 % (docs/fgd.md)."""
        alloc = self.nodes[node].allocatable
        running, new = self.running_on(node), self._new.get(node)
        score = 0.0
        for res in ("cpu", "memory"):
            total = alloc.get(res, 0)
            if total > 0:
                score += (running.get(res, 0) + (new.get(res, 0) if new else 0)) / total
        return self.dev.fullness(node), score


def baseline(problem: Problem, stop: Callable[[], bool] | None = None) -> Assignment:
    """Upstream's plan as this module follows it: each pod on the node the default profile
    scores best (``_spread_fill``). The bench's and ``--baseline``'s yardstick. ``stop`` as
    for ``hint``: once true, no further workload is tried."""
    return _run(problem, spread=True, stop=stop)


def hint(problem: Problem, stop: Callable[[], bool] | None = None) -> Assignment:
    """The solver's complete hint: the same walk, but each class packed on the fullest nodes
    first, which leaves more room for later workloads and usually evicts less. Not upstream's
    choice of node, so never reported as the baseline. Once ``stop()`` is true the walk tries
    no further workload (in priority order): the hint is then the plan of those it reached."""
    return _run(problem, spread=False, stop=stop)


def _run(problem: Problem, *, spread: bool, stop: Callable[[], bool] | None = None) -> Assignment:
    """A lower-priority workload may lean on room a victim left for a higher one; when a later
    eviction then makes that victim unnecessary, the lowest-priority workload on its node is
    dropped and the greedy run again (every eviction of a plan must be necessary). A run cut
    by ``stop`` is run again over the same workloads only."""
    skip: set[int] = set()
    upto: int | None = None
    while True:
        state, reached, done = _greedy(problem, skip, spread, stop=stop if upto is None else None, upto=upto)
        blamed = state.blame_unnecessary()
        if blamed is None:
            return state.assignment()
        cls = problem.classes[blamed]
        # a pooled class's pods are workloads of their own: drop the last one placed
        pooled = [w for w in done if problem.workloads[w].pod is not None and problem.workloads[w].classes == (blamed,)]
        skip.add(max(pooled, key=lambda w: problem.workloads[w].rank) if pooled else cls.workload)
        if stop is not None and stop():
            upto = reached


def _greedy(problem: Problem, skip: set[int], spread: bool = False, *, stop: Callable[[], bool] | None = None,
            upto: int | None = None) -> tuple[State, int, set[int]]:
    """The walk over the workloads in priority order; it ends early when ``stop()`` is true or
    after ``upto`` of them. Returns the state, how many workloads it went through and the ones
    it placed."""
    state = State(problem, spread=spread)
    if spread:  # upstream's queue: priority, then (here) the name
        order = sorted(problem.workloads, key=lambda w: (-w.priority, w.key))
    else:  # the hint: within a priority the smallest first, the most workloads for the room
        order = sorted(problem.workloads, key=lambda w: (-w.priority, _size(problem, w), w.key))
    reached = 0
    done: set[int] = set()  # workloads placed
    for workload in order[:upto]:
        checkpoint("the greedy walk")  # the caller has gone: raise (a deadline only ends the walk)
        if stop is not None and stop():
            break
        reached += 1
        if workload.index in skip or workload.rejected:
            continue
        point = state.savepoint()
        if _place_workload(state, workload):
            done.add(workload.index)
            if workload.power is not None:
                _preempt_for_remainder(state, workload)
            continue
        state.rollback(point)
        if workload.power is None:
            continue
        if not spread and (domains := _preemption_domains(state, workload)) is not None:
            placed = _preempt_in_domains(state, workload, domains, point)
        elif spread and workload.kind == s.STANDALONE_POD:
            placed = _preempt_pod(state, workload)
        else:
            victims = _candidate_victims(problem, workload, state)
            placed = bool(victims) and _try_with(state, workload, victims, point)
            if victims and not placed and problem.strict_pdbs:
                # the reprieves were not enough: only the victims the budgets allow
                placed = _try_with(state, workload, within_budgets(problem, state.evicted, victims), point)
        if placed:
            done.add(workload.index)
    # Upstream tries a pending workload again once a pod is deleted (the preemptions' victims):
    # one left pending before a later workload's preemption freed room (a preemptionPolicy Never
    # one above all) may now fit, and takes it without preempting.
    if state.evicted and not (stop is not None and stop()):
        for workload in order[:reached]:
            if workload.index in done or workload.index in skip or workload.rejected:
                continue
            checkpoint("the greedy walk (retries)")
            point = state.savepoint()
            if _place_workload(state, workload):
                done.add(workload.index)
            else:
                state.rollback(point)
    # A later workload's evictions can make room that an earlier victim no longer
    # needs to leave: put back every victim that fits again (the plan is joint).
    _reprieve(state, sorted(state.evicted))
    return state, reached, done


def state_of(problem: Problem, assignment: Assignment) -> State:
    """The cluster as ``assignment`` leaves it: its pods placed, with their devices and shared
    claims, and its victims evicted."""
    state = State(problem, frees_devices=problem.dra_preemption)
    dra = problem.dra
    for i, take in assignment.shared.items():
        reach = frozenset.intersection(*(dra.types[t].reach for (_, _, _, t) in take))
        owner = min(dra.shared[i].users)
        state.dev.commit_shared(i, dict(take), reach, owner)
    for (c, node), n in assignment.counts.items():
        state.place(c, node, n, take=dict(assignment.devices.get((c, node), {})) or None)
    for u in assignment.evicted:
        state.evict(u, logged=False)
    return state


def put_back(problem: Problem, assignment: Assignment) -> Assignment:
    """Put back, in reprieve order, every evicted victim that fits again.

    Never worse on any tier; used on a solver plan a time limit cut short.
    """
    state = state_of(problem, assignment)
    _reprieve(state, sorted(state.evicted))
    return state.assignment()


def _size(problem: Problem, workload: Workload) -> int:
    if workload.kind == s.STANDALONE_POD:
        return 1
    return sum(len(problem.classes[c].pods) for c in workload.classes)


# how many domains of its root's key the hint's preemption tries for one workload
HINT_DOMAINS = 8


def _preemption_domains(state: State, workload: Workload) -> list[set[s.NodeName]] | None:
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
    for value, nodes, room in _domains(state, root, None, fixed):
        most = sum(state.room_evicting(problem.classes[c], node)
                   for c in workload.classes for node in nodes if node in problem.candidates[c])
        if most >= least:
            ranked.append((-room, value, nodes))
    return [nodes for _, _, nodes in sorted(ranked, key=lambda r: (r[0], r[1]))][:HINT_DOMAINS]


def _preempt_in_domains(state: State, workload: Workload, domains: list[set[s.NodeName]], point: int) -> bool:
    """The hint's preemption one domain at a time: the candidates on the domain's nodes
    evicted, the workload placed there, the victims reprieved (and under strict budgets,
    when that breaks one, only the victims the budgets allow). Evicting every candidate in
    the cluster and reprieving them one by one costs about a second a workload on 5,000
    nodes; a domain's candidates are a few hundred."""
    problem = state.problem
    for nodes in domains:
        checkpoint("the greedy walk")
        victims = _candidate_victims(problem, workload, state, nodes)
        if not victims:
            continue
        if _try_with(state, workload, victims, point, nodes):
            return True
        if problem.strict_pdbs and _try_with(
                state, workload, within_budgets(problem, state.evicted, victims), point, nodes):
            return True
    return False


def _preempt_pod(state: State, workload: Workload) -> bool:
    """DefaultPreemption for a pod outside any group (plugins/defaultpreemption;
    framework/preemption/preemption.go, DryRunPreemption and pickOneNodeForPreemption): on
    every node where it fits with every pod it may preempt there gone, selectVictimsOnNode's
    reprieve (``_reprieve``); then the node with the fewest PDB-violating victims, the lowest
    highest-priority victim, the smallest sum of victim priorities, the fewest victims, the
    latest start of its highest-priority victims; the pod goes there. Upstream samples the
    candidate nodes of a large cluster from a random offset and breaks the last ties at random:
    here every node is tried, and the first in node order wins a tie."""
    problem = state.problem
    (c,) = workload.classes
    best: tuple[tuple[object, ...], s.NodeName] | None = None
    for node in state.ordered(set(problem.candidates[c])):
        found = _victims_on(state, workload, c, node, keep=False)
        if found is not None and (best is None or found < best[0]):
            best = (found, node)
    return best is not None and _victims_on(state, workload, c, best[1], keep=True) is not None


def _victims_on(state: State, workload: Workload, c: int, node: s.NodeName, *, keep: bool
                ) -> tuple[object, ...] | None:
    """selectVictimsOnNode for the pod of class ``c``: its preference key for
    pickOneNodeForPreemption (smaller is preferred), None when it does not fit; taken back
    unless ``keep``."""
    problem = state.problem
    cls = problem.classes[c]
    victims = [u for u in problem.units_on_node.get(node, ())
               if u not in state.evicted and problem.eligible(cls, problem.units[u])]
    if problem.strict_pdbs:
        victims = within_budgets(problem, state.evicted, victims)
    if not victims:
        return None
    point = state.savepoint()
    potential = Potential.of(problem, workload, state.evicted)
    for u in victims:
        state.evict(u)
    if state.room_for(cls, node) < 1:
        state.rollback(point)
        return None
    state.place(c, node, 1)
    if not state.rules.holds():
        state.rollback(point)
        return None
    _reprieve(state, victims, potential)
    gone = [u for u in victims if u in state.evicted]
    violating = pdb_violating(problem, gone, potential)
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


def _candidate_victims(problem: Problem, workload: Workload, state: State,
                       within: set[s.NodeName] | None = None) -> list[int]:
    nodes = {n for c in workload.classes for n in problem.candidates[c] if within is None or n in within}
    out = set()
    for node in nodes:
        for u in problem.units_on_node.get(node, ()):
            unit = problem.units[u]
            if u not in state.evicted and any(problem.eligible(problem.classes[c], unit) for c in workload.classes):
                out.add(u)
    return sorted(out)


def _try_with(state: State, workload: Workload, victims: list[int], point: int,
              allowed: set[s.NodeName] | None = None) -> bool:
    potential = Potential.of(state.problem, workload, state.evicted)
    for u in victims:
        state.evict(u)
    if _place_workload(state, workload, allowed):
        _reprieve(state, victims, potential)
        if not (state.problem.strict_pdbs and breaks_a_pdb(state.problem, state.evicted)):
            return True
    state.rollback(point)
    return False


def _preempt_for_remainder(state: State, workload: Workload) -> None:
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
    victims = _candidate_victims(problem, workload, state)
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
        got = sum(_fill(state, [c], _fixed_nodes(state, key), limit=left[c]) for c in classes)
        # the leaf's gang rule holds for what it binds, and its pods share one domain of every
        # key above them (a group none of whose pods had landed has no domain fixed), or none of it lands
        if key is not None and got and (not group_ok(
                problem, problem.groups[key], sum(placed[c] for c in problem.classes_under(key)) + got, {})
                or not _in_one_domain(state, key)):
            state.rollback(group_point)
            got = 0
        more += got
    if more and state.rules.holds():
        _reprieve(state, victims, potential)
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


_RUNNING: PerUnits[dict[s.NodeName, dict[str, int]]] = PerUnits()
_NONZERO: PerUnits[tuple[list[dict[s.NodeName, dict[str, int]]], dict[s.NodeName, dict[str, int]]]] = PerUnits()
_EMPTY: Mapping[str, int] = {}


def _sum_by_node(parts: Iterable[Mapping[s.NodeName, Mapping[str, int]]]) -> dict[s.NodeName, dict[str, int]]:
    out: dict[s.NodeName, dict[str, int]] = {}
    for part in parts:
        for node, amounts in part.items():
            total = out.setdefault(node, {})
            for res, amount in amounts.items():
                total[res] = total.get(res, 0) + amount
    return out


def _base_running(problem: Problem) -> Mapping[s.NodeName, Mapping[str, int]]:
    """Every running pod's requests per node, before any eviction: once per set of units (every
    domain's sub-problem shares its cluster's), read by every greedy state and written by none."""
    return _RUNNING.get(problem, lambda: _sum_by_node(unit.usage for unit in problem.units))


def _base_nonzero(problem: Problem
                  ) -> tuple[list[dict[s.NodeName, dict[str, int]]], Mapping[s.NodeName, Mapping[str, int]]]:
    """Per unit, and summed per node, what the non-zero defaults add (the baseline's scores)."""
    def work() -> tuple[list[dict[s.NodeName, dict[str, int]]], dict[s.NodeName, dict[str, int]]]:
        per_unit = [_nonzero_extra(unit.members) for unit in problem.units]
        return per_unit, _sum_by_node(per_unit)

    return _NONZERO.get(problem, work)


def _reprieve(state: State, victims: list[int], potential: Potential | None = None) -> None:
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


# ---- placing a tree ---------------------------------------------------------------


def _place_workload(state: State, workload: Workload, allowed: set[s.NodeName] | None = None) -> bool:
    """Place the tree (on ``allowed`` nodes only, if given); True iff its root's rules hold
    and at least one new pod landed."""
    point = state.savepoint()
    if workload.kind == s.STANDALONE_POD:  # its own pod: one of its (maybe pooled) class
        ok = _fill(state, workload.classes, allowed, limit=1) >= 1
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
        domains = _domains(state, group, allowed, fixed)
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


def _domains(
    state: State, group: s.Group, allowed: set[s.NodeName] | None, fixed: str | None
) -> list[tuple[str, set[s.NodeName], int]]:
    """Domains of the group's key that some pod under it may use, each with every node of
    the domain inside ``allowed`` and its free room (pods of each class that fit, summed);
    least free room first (the hint's best fit)."""
    problem = state.problem
    key = group.topology_key
    assert key is not None
    classes = problem.classes_under(group.key)
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
        placed = _fill(state, classes, allowed)
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


# scheduler/util DefaultMilliCPURequest, DefaultMemoryRequest
NON_ZERO_DEFAULTS = (("cpu", 100), ("memory", 200 * 1024 * 1024))


def _nonzero_extra(pods: Iterable[s.Pod]) -> dict[s.NodeName, dict[str, int]]:
    """What the non-zero defaults add, per node, for running pods without a cpu or memory request."""
    out: dict[s.NodeName, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for pod in pods:
        for res, default in NON_ZERO_DEFAULTS:
            if pod.node is not None and not pod.requests.get(res):
                out[pod.node][res] += default
    return {n: dict(extra) for n, extra in out.items()}


ZONE_LABELS = (("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region"),
               ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone"))


def node_tree_order(nodes: Iterable[s.Node]) -> list[s.NodeName]:
    """The order kube-scheduler's snapshot lists nodes in (backend/cache/node_tree.go,
    nodeTree.list): zones (region and zone labels, utilnode.GetZoneKey) in the order their first
    node was added, one node of each zone in turn. Nodes are taken as added in name order, the
    order of the informer's first list (etcd keys); a cluster that grew later added them in
    creation order, which a snapshot does not record."""
    zones: dict[tuple[str, str], list[s.NodeName]] = {}
    for node in sorted(nodes, key=lambda n: n.name):
        region, zone = (next((node.labels[k] for k in keys if node.labels.get(k)), "") for keys in ZONE_LABELS)
        zones.setdefault((region, zone), []).append(node.name)
    out: list[s.NodeName] = []
    lists = list(zones.values())
    for i in range(max((len(z) for z in lists), default=0)):
        out.extend(z[i] for z in lists if i < len(z))
    return out


def _node_score(state: State, cls: PodClass, node: s.NodeName) -> int:
    """The default profile's score of one more pod of ``cls`` on ``node``, weight 1 each
    (plugins/noderesources): NodeResourcesFit LeastAllocated over cpu and memory with the
    non-zero defaults (least_allocated.go), plus NodeResourcesBalancedAllocation over the real
    requests, 50 + (50 + balance with the pod - balance without it) / 2 (balanced_allocation.go,
    balancedResourceScorer; a pod without requests scores 0)."""
    alloc = state.nodes[node].allocatable
    running, new, nonzero = state.running_on(node), state._new.get(node, {}), state.nonzero_on(node)
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


def _spread_fill(state: State, c: int, allowed: set[s.NodeName] | None, left: int) -> int:
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


def _fill(state: State, classes: Iterable[int], allowed: set[s.NodeName] | None, *, limit: int | None = None) -> int:
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
