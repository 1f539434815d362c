"""The greedy walk's state: what is placed and evicted on each node, the room left, the
devices taken and the inter-pod rules, with the log that undoes a try (``State``); and the
node order upstream walks (``node_tree_order``). Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable, Mapping

import numpy as np

from solver.baseline.devices import Devices, Load, Take
from solver.baseline.fragment import Fragmentation, score
from solver.baseline.interpod import InterPodRules
from solver.baseline.victims import PerUnits
from solver.core import snapshot as s
from solver.filters import attach, localpv
from solver.problem.assignment import Assignment
from solver.problem.build import Problem
from solver.problem.workloads import PodClass, VictimUnit


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
        # requests of the pods placed, per node (fill.py reads them for the node scores)
        self.new_requests: dict[s.NodeName, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        # what the non-zero defaults add to those requests, for the node scores (baseline only)
        self._unit_nonzero, self._base_nonzero = _base_nonzero(problem) if spread else ([], {})
        self._nonzero: dict[s.NodeName, dict[str, int]] = {}
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
        # the hint's memory of a pooled class (``freed_since``): class -> the savepoint at which
        # no node had room for one more of its pods without preemption
        self.no_room: dict[int, int] = {}
        self.no_preempt: dict[int, int] = {}  # likewise, with preemption (``preempt_pod_hint``)
        self.preempt_start: dict[int, int] = {}  # class -> where its next preemption walk starts
        self.dirty: set[s.NodeName] = set()  # nodes whose rows in ``_rooms`` are out of date
        self._rooms: _Rooms | None = None

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
            self.dirty.add(node)
            running = self._own(self._running, self._base_running, node)
            for res, amount in usage.items():
                running[res] += sign * amount
        if self._unit_nonzero:
            for node, extra in self._unit_nonzero[u].items():
                nonzero = self._own(self._nonzero, self._base_nonzero, node)
                for res, amount in extra.items():
                    nonzero[res] += sign * amount

    def _bump_class(self, cls: int, node: s.NodeName, n: int) -> None:
        self.dirty.add(node)
        new = self.new_requests[node]
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
        if self.no_room:  # a memory of a state this undoes no longer holds
            self.no_room = {c: at for c, at in self.no_room.items() if at <= point}
        if self.no_preempt:
            self.no_preempt = {c: at for c, at in self.no_preempt.items() if at <= point}
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

    def remembers(self, cls: PodClass) -> bool:
        """Whether ``no_room`` may be kept for ``cls``: its room on a node grows only with an
        eviction there or a placement taken back (no inter-pod rule, no devices, no claim
        whose holder or sharer elsewhere decides it)."""
        pod = cls.pods[0]
        return not (self.rules.active or self.problem.dra.active or pod.once_holders or pod.shared_local)

    def freed_since(self, c: int) -> set[s.NodeName] | None:
        """The nodes that may have room for one more pod of class ``c`` without preemption, when
        ``no_room`` remembers a state in which none had: those with an eviction since. None
        without a memory (every node may)."""
        at = self.no_room.get(c)
        if at is None:
            return None
        units = self.problem.units
        return {node for op, u, _, _ in self.log[at:] if op == "evict" for node in units[u].usage}

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
        return running + self.new_requests[node].get(res, 0) if placed else running

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
        if most and not self.once_free(cls.index):
            return 0  # a ReadWriteOncePod claim it needs is held by a pod still there
        if most and cls.pods[0].csi_volumes and not self.volumes_fit(cls, node):
            return 0
        if most and cls.pods[0].shared_local and not self._shared_fits(cls, node):
            return 0
        if most and cls.pods[0].local_claims:  # a node-local volume for each claim (localpv.py)
            beside = [(self.problem.classes[c].pods[0], n) for c, n in self.placed.get(node, {}).items()]
            if bound := self._shared_on(node):  # claims shared and bound there take a volume each
                claims = tuple(bound.values())
                beside.append((dataclasses.replace(cls.pods[0], local_claims=claims, shared_local=()), 1))
            most = min(most, localpv.room(self.nodes[node], cls.pods[0], beside) or 0)
        if most and self.problem.dra.reserve_caps:
            most = min(most, self.reserve_room(cls))
        if most and self.problem.dra.active and own_devices:
            most = self.device_room(cls, node, most)
        if most and self.rules.active:
            most = self.rules.room(cls, node, most)
        return most

    def _shared_on(self, node: s.NodeName) -> dict[str, tuple[str, frozenset[str], int]]:
        """The claims pending pods share bound on ``node`` by a pod placed there, once each, by key."""
        seen: dict[str, tuple[str, frozenset[str], int]] = {}
        for c, n in self.placed.get(node, {}).items():
            if n > 0:
                for key, cls_name, modes, size in self.problem.classes[c].pods[0].shared_local:
                    seen[key] = (cls_name, modes, size)
        return {k: seen[k] for k in sorted(seen)}

    def shared_elsewhere(self, cls: PodClass, node: s.NodeName) -> bool:
        """A claim the pods of ``cls`` share is bound, by a pod placed before them, on another
        node than ``node``: VolumeBinding finds it bound there (the scheduler assumes each binding)."""
        mine = {key for key, *_ in cls.pods[0].shared_local}
        return any(n > 0 and other != node and mine & {k for k, *_ in self.problem.classes[c].pods[0].shared_local}
                   for other, placed in self.placed.items() for c, n in placed.items())

    def _shared_fits(self, cls: PodClass, node: s.NodeName) -> bool:
        """Pods of ``cls`` may go to ``node`` as far as the claims they share go: a claim
        bound elsewhere by a pod placed there keeps them there; one not bound yet needs a
        volume of the node's own beside the claims already taking one (localpv.shared_room)."""
        if self.shared_elsewhere(cls, node):
            return False
        mine = {key for key, *_ in cls.pods[0].shared_local}
        taken = [(cls_name, modes, size) for c, n in self.placed.get(node, {}).items()
                 for cls_name, modes, size in self.problem.classes[c].pods[0].local_claims for _ in range(n)]
        taken += [claim for key, claim in self._shared_on(node).items() if key not in mine]
        return localpv.shared_room(self.nodes[node], cls.pods[0], taken)

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

    def requests_only(self, cls: PodClass) -> bool:
        """Whether ``room_for`` a pod of ``cls`` is its requests' alone (no inter-pod rule, device,
        claim or volume), so that ``rooms`` gives it on every node at once."""
        pod = cls.pods[0]
        return not (self.rules.active or self.problem.dra.active or self.problem.dra.reserve_caps
                    or self.problem.once_units.get(cls.index) or pod.csi_volumes or pod.shared_local
                    or pod.local_claims)

    def rooms(self, cls: PodClass, *, evicting: bool = False) -> np.ndarray:
        """``_requests_room`` on every candidate node at once (a node some class may use, in
        ``problem.nodes`` order: a domain's sub-problem has its domain's rows): ``room_for`` when
        ``requests_only(cls)``, or ``room_evicting`` with ``evicting``. The nodes changed since
        the last call are read again, so a walk of many workloads pays per change, not per node."""
        return self._arrays().of(cls, evicting)

    def _arrays(self) -> _Rooms:
        if self._rooms is None:
            self._rooms = _Rooms(self)
        return self._rooms

    def rooms_by_domain(self, key: str, classes: Iterable[int], *, evicting: bool = False,
                        fixed: str | None = None) -> list[tuple[str, set[s.NodeName], int]]:
        """Per value of ``key`` (``fixed`` alone, if given) where a node is a candidate of one of
        ``classes``: the value, its nodes, and the room of those classes on its candidate nodes
        summed (``rooms``): ``room_for`` each (``requests_only``) or ``room_evicting``."""
        arrays = self._arrays()
        values, value_of, members = arrays.domains(key)
        only = (values.index(fixed) if fixed in values else -2) if fixed is not None else None
        total = np.zeros(len(values), dtype=np.int64)
        seen = np.zeros(len(values), dtype=bool)
        for c in classes:
            rows = arrays.candidate_rows(c)
            at = value_of[rows]
            keep = at >= 0 if only is None else at == only
            total += np.bincount(at[keep], weights=self.rooms(self.problem.classes[c], evicting=evicting)[rows][keep],
                                 minlength=len(values)).astype(np.int64)
            seen[at[keep]] = True
        return [(values[i], members[i], int(total[i])) for i in np.flatnonzero(seen)]

    def room_evicting(self, cls: PodClass, node: s.NodeName) -> int:
        """How many more pods of ``cls`` would fit on ``node`` were every unit it may preempt
        evicted (requested resources only: the hint's estimate of where preemption can help)."""
        assert cls.power is not None
        return self._requests_room(cls, node, self.held_by(cls.power).get(node, _EMPTY))

    def _requests_room(self, cls: PodClass, node: s.NodeName, running: Mapping[str, int]) -> int:
        """How many more pods of ``cls`` fit in the allocatable less ``running`` and the pods placed."""
        alloc, new = self.nodes[node].allocatable, self.new_requests.get(node)
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
        problem = self.problem
        per_power = _HELD.get(problem, dict)  # every domain's sub-problem shares its cluster's
        held = per_power.get(power)
        if held is None:
            held = per_power[power] = _sum_by_node(u.usage for u in problem.units if u.protected or u.priority >= power)
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
        return all(self.used(node, res) <= alloc.get(res, 0) for res in requested) and \
            all(self.once_free(c) for c in self.placed[node])

    def once_free(self, c: int) -> bool:
        """Every running holder of a ReadWriteOncePod claim class ``c`` needs is evicted
        (``Problem.once_units``; none: true)."""
        return all(u in self.evicted for u in self.problem.once_units.get(c, ()))

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
                    or self.rules.needed(unit) or self._needed_for_once(unit):
                continue
            lower = [problem.classes[c] for node in unit.usage for c in self.placed[node]
                     if problem.classes[c].priority <= unit.priority or problem.classes[c].power is None]
            if lower:
                return min(lower, key=lambda c: (c.priority, -c.workload)).index
        return None

    def _needed_for_once(self, unit: VictimUnit) -> bool:
        """A placed pod needs a ReadWriteOncePod claim ``unit`` holds."""
        return any(unit.index in self.problem.once_units.get(c, ()) and n > 0
                   for node in unit.usage for c, n in self.placed[node].items())

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
        alloc, running, new = self.nodes[node].allocatable, self.running_on(node), self.new_requests.get(node)
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
        running, new = self.running_on(node), self.new_requests.get(node)
        score = 0.0
        for res in ("cpu", "memory"):
            total = alloc.get(res, 0)
            if total > 0:
                score += (running.get(res, 0) + (new.get(res, 0) if new else 0)) / total
        return self.dev.fullness(node), score


class _Rooms:
    """``State``'s requests as arrays (nodes × resources): the allocatable, what the running pods
    not evicted and the pods placed hold (rows brought up to date from ``State.dirty``), and per
    preemptor power what it may not evict."""

    def __init__(self, state: State) -> None:
        self.state = state
        problem = state.problem
        used = {name for cand in problem.candidates for name in cand}
        nodes = [n for n in problem.nodes if n.name in used]
        self.nodes = nodes
        self.names = [n.name for n in nodes]
        self.at = {name: i for i, name in enumerate(self.names)}
        self.resources = sorted({r for c in problem.classes for r in c.requests})
        self.column = {r: i for i, r in enumerate(self.resources)}
        self.alloc = self._table(n.allocatable for n in nodes)
        self.running = self._table(state.running_on(name) for name in self.names)
        self.new = self._table(state.new_requests.get(name, _EMPTY) for name in self.names)
        self.held: dict[int, np.ndarray] = {}
        self.candidates: dict[int, np.ndarray] = {}
        self.keys: dict[str, tuple[list[str], np.ndarray, list[set[s.NodeName]]]] = {}
        state.dirty.clear()

    def domains(self, key: str) -> tuple[list[str], np.ndarray, list[set[s.NodeName]]]:
        """The values of ``key`` (sorted), each node's value's index (-1: no label), and each
        value's nodes."""
        if key not in self.keys:
            labels = [n.labels.get(key) for n in self.nodes]
            values = sorted({v for v in labels if v is not None})
            index = {v: i for i, v in enumerate(values)}
            members: list[set[s.NodeName]] = [set() for _ in values]
            for name, v in zip(self.names, labels, strict=True):
                if v is not None:
                    members[index[v]].add(name)
            self.keys[key] = (values, np.array([index[v] if v is not None else -1 for v in labels], dtype=np.int64),
                              members)
        return self.keys[key]

    def candidate_rows(self, c: int) -> np.ndarray:
        if c not in self.candidates:
            self.candidates[c] = np.array([self.at[n] for n in self.state.problem.candidates[c] if n in self.at],
                                          dtype=np.int64)
        return self.candidates[c]

    def _table(self, rows: Iterable[Mapping[str, int]]) -> np.ndarray:
        return np.array([[row.get(r, 0) for r in self.resources] for row in rows], dtype=np.int64).reshape(
            -1, len(self.resources))

    def of(self, cls: PodClass, evicting: bool) -> np.ndarray:
        state = self.state
        for name in state.dirty:
            i = self.at.get(name)
            if i is not None:
                running, new = state.running_on(name), state.new_requests.get(name, _EMPTY)
                self.running[i] = [running.get(r, 0) for r in self.resources]
                self.new[i] = [new.get(r, 0) for r in self.resources]
        state.dirty.clear()
        if evicting:
            assert cls.power is not None
            if cls.power not in self.held:
                held = state.held_by(cls.power)
                self.held[cls.power] = self._table(held.get(name, _EMPTY) for name in self.names)
            used = self.held[cls.power]
        else:
            used = self.running
        most = np.full(len(self.names), len(cls.pods), dtype=np.int64)
        for res, amount in cls.requests.items():
            free = self.alloc[:, self.column[res]] - used[:, self.column[res]] - self.new[:, self.column[res]]
            most = np.minimum(most, np.where(free < amount, 0, free // max(amount, 1)))
        return most


_RUNNING: PerUnits[dict[s.NodeName, dict[str, int]]] = PerUnits()
_HELD: PerUnits[dict[int, dict[s.NodeName, dict[str, int]]]] = PerUnits()  # per power: held_by
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
