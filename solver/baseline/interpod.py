"""Inter-pod filters for the greedy baseline: anti-affinity, affinity, spread, host ports.

The rules are ``solver.filters.interpod``'s, read on the greedy's state: ``room`` bounds how
many more pods of a class a node takes now (the filter upstream runs per pod), ``holds``
checks the whole state's end (spread counts move as later pods land and victims come back),
``blocks_return`` tells the reprieve that a victim put back would break a rule, ``needed``
that an evicted victim conflicts with a placed pod that may preempt it. Pure: no I/O.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from functools import cached_property

from solver.core import snapshot as s
from solver.filters import interpod as ip
from solver.filters import selectors
from solver.problem.build import Problem
from solver.problem.workloads import PodClass, VictimUnit

Placed = Mapping[s.NodeName, Mapping[int, int]]  # node -> class -> pods placed
Clash = Callable[[s.Pod, s.Pod], bool]  # whether two pods cannot share a node
_Spread = tuple[set[s.NodeName], list[str], list[tuple[s.Pod, str]], set[int]]


class InterPodRules:
    def __init__(self, problem: Problem, evicted: set[int], placed: Placed,
                 log: Callable[[], list[tuple[str, int, s.NodeName, int]]]) -> None:
        self.problem = problem
        self.evicted = evicted  # the greedy's sets, shared (read only here)
        self.placed = placed
        self.log = log
        self.ip = problem.interpod
        self.nodes = {n.name: n for n in problem.nodes}
        self._in_domain: dict[str, dict[str, list[s.Pod]]] = {}
        # (class, spread constraint) -> (eligible nodes, their values, counted running pods, matching classes)
        self._spread_cache: dict[tuple[int, int], _Spread] = {}
        classes = problem.classes
        self.active = self.ip.active or any(selectors.exclusive(c.pods[0]) for c in classes)
        self.constrained = {c.index for c in classes if self._rules_of(c)}
        # classes whose pods can clash with a returning victim, and those the end state checks
        self.clashing = {c.index for c in classes if c.pods[0].pod_anti_affinity or selectors.exclusive(c.pods[0])}
        self.end_checked = {c.index for c in classes if c.pods[0].spread or c.pods[0].pod_affinity}
        families: dict[tuple[s.PodAffinityTerm, ...], list[int]] = defaultdict(list)
        for c in classes:
            if c.pods[0].pod_affinity:
                families[c.pods[0].pod_affinity].append(c.index)
        self.family = {c: tuple(f) for f in families.values() for c in f}
        self.first_allowed: dict[tuple[int, ...], bool] = {}
        self.base: dict[tuple[int, ...], set[int]] = {}  # classes without affinity matching the terms
        for terms, fam in families.items():
            matching = {c.index for c in classes if self.ip.matches_all(terms, c.pods[0])}
            self.first_allowed[tuple(fam)] = matching == set(fam) and not any(
                self.ip.matches_all(terms, q) for q in self.running)
            self.base[tuple(fam)] = {c for c in matching if not classes[c].pods[0].pod_affinity}

    # what the running pods are, worked out on first use: a cluster without inter-pod rules or
    # host ports never needs it, and each domain's greedy would otherwise walk every pod
    @cached_property
    def unit_of(self) -> dict[s.PodKey, int]:
        return {p.key: u.index for u in self.problem.units for p in u.members}

    @cached_property
    def running(self) -> list[s.Pod]:
        return [p for u in self.problem.units for p in u.members if p.node is not None]

    @cached_property
    def owners(self) -> list[s.Pod]:
        """Running pods with anti-affinity terms."""
        return [p for p in self.running if p.pod_anti_affinity]

    @cached_property
    def port_holders(self) -> dict[s.NodeName, list[s.Pod]]:
        out: dict[s.NodeName, list[s.Pod]] = defaultdict(list)
        for p in self.running:
            if selectors.exclusive(p) and p.node is not None:
                out[p.node].append(p)
        return out

    @staticmethod
    def _rules_of(cls: PodClass) -> bool:
        rep = cls.pods[0]
        return bool(rep.pod_anti_affinity or rep.pod_affinity or rep.spread or selectors.exclusive(rep))

    # ---- the state ------------------------------------------------------------------
    def _stays(self, pod: s.Pod) -> bool:
        return self.unit_of[pod.key] not in self.evicted

    def _node_of_running(self, pod: s.Pod) -> s.Node:
        node = pod.node
        assert node is not None, f"{pod.key} is running"
        return self.nodes[node]

    def _same(self, key: str, a: s.Node, b: s.Node) -> bool:
        return key in a.labels and a.labels[key] == b.labels.get(key)

    def running_in(self, key: str, node: s.Node) -> list[s.Pod]:
        """The running pods whose node has the node's value of ``key``."""
        index = self._in_domain.get(key)
        if index is None:
            index = self._in_domain[key] = defaultdict(list)
            for q in self.running:
                value = self._node_of_running(q).labels.get(key)
                if value is not None:
                    index[value].append(q)
        value = node.labels.get(key)
        return index.get(value, []) if value is not None else []

    def _placed_in(self, classes: set[int] | tuple[int, ...], key: str, node: s.Node) -> int:
        total = 0
        for name, by_class in self.placed.items():
            if by_class and self._same(key, self.nodes[name], node):
                total += sum(n for c, n in by_class.items() if c in classes)
        return total

    def _matching(self, matcher: ip.Matcher) -> set[int]:
        i = self.ip.index[matcher]
        return {c.index for c in self.problem.classes if self.problem.vectors[c.index][i]}

    # ---- the filter: how many more pods of a class a node takes ------------------------
    def room(self, cls: PodClass, name: s.NodeName, most: int) -> int:
        if not self.active:
            return most
        node = self.nodes[name]
        if not self._anti_ok(cls, node) or not self._ports_ok(cls, node) or not self._affinity_ok(cls, node) \
                or not self._spread_ok(cls, node, adding=True):
            return 0
        if cls.index in self.constrained:
            return min(most, 1)  # one at a time: each pod changes what the next may do
        return most

    def _anti_ok(self, cls: PodClass, node: s.Node) -> bool:
        return self.own_anti_ok(cls, node) and self.existing_anti_ok(cls, node)

    def own_anti_ok(self, cls: PodClass, node: s.Node) -> bool:
        """The class's own anti-affinity terms find no matching pod in their domains."""
        for t in cls.pods[0].pod_anti_affinity:
            if t.topology_key not in node.labels:
                continue
            if self._placed_in(self._matching(t), t.topology_key, node):
                return False
            if any(self._stays(q) and self.ip.matches(t, q) for q in self.running_in(t.topology_key, node)):
                return False
        return True

    def existing_anti_ok(self, cls: PodClass, node: s.Node) -> bool:
        """No running or placed pod's anti-affinity term refuses the class in its domain."""
        rep = cls.pods[0]
        for q in self.owners:
            if self._stays(q) and any(
                    self._same(t.topology_key, self._node_of_running(q), node) and self.ip.matches(t, rep)
                    for t in q.pod_anti_affinity):
                return False
        return not self._refused_by_placed(cls, node)

    def ports_ok(self, cls: PodClass, node: s.Node, clash: Clash = selectors.pods_clash) -> bool:
        """No pod there clashes with one of ``cls`` (a host port or a disk; ``clash`` may
        narrow it to one of them, for the reason)."""
        return self._ports_ok(cls, node, clash)

    def affinity_ok(self, cls: PodClass, node: s.Node) -> bool:
        return self._affinity_ok(cls, node)

    def spread_ok(self, cls: PodClass, node: s.Node) -> bool:
        """Upstream's filter for one more pod of the class on ``node``."""
        return self._spread_ok(cls, node, adding=True)

    def _refused_by_placed(self, cls: PodClass, node: s.Node) -> bool:
        """A placed class's anti-affinity term matches this class in its domain."""
        vector = self.problem.vectors[cls.index]
        for name, by_class in self.placed.items():
            for c, n in by_class.items():
                if n <= 0:
                    continue
                for t in self.problem.classes[c].pods[0].pod_anti_affinity:
                    if vector[self.ip.index[t]] and self._same(t.topology_key, self.nodes[name], node):
                        return True
        return False

    def _ports_ok(self, cls: PodClass, node: s.Node, clash: Clash = selectors.pods_clash) -> bool:
        rep = cls.pods[0]
        if not selectors.exclusive(rep):
            return True
        placed = self.placed.get(node.name, {})
        if any(n > 0 and clash(rep, self.problem.classes[c].pods[0]) for c, n in placed.items()):
            return False
        return not any(self._stays(q) and clash(rep, q) for q in self.port_holders.get(node.name, ()))

    def _first_node(self, family: tuple[int, ...]) -> s.NodeName | None:
        for op, c, name, _ in self.log():
            if op == "place" and c in family:
                return name
        return None

    def _affinity_ok(self, cls: PodClass, node: s.Node) -> bool:
        terms = cls.pods[0].pod_affinity
        if not terms:
            return True
        if any(t.topology_key not in node.labels for t in terms):
            return False
        family = self.family[cls.index]
        first_free = self.first_allowed[family] and self._first_node(family) is None
        return first_free or self._supported(cls, node)  # the family's first pod, or supported

    # ---- the end state --------------------------------------------------------------
    def holds(self) -> bool:
        """Every placed pod's rules hold on the state as it is now."""
        if not self.active or not self.end_checked:
            return True
        for name, by_class in self.placed.items():
            node = self.nodes[name]
            for c, n in by_class.items():
                if n <= 0 or c not in self.end_checked:
                    continue
                cls = self.problem.classes[c]
                if not self._spread_ok(cls, node) or not self._supported(cls, node):
                    return False
        return True

    def _supported(self, cls: PodClass, node: s.Node) -> bool:
        """A placed pod's affinity still holds: a base pod in each term's domain (a later
        eviction may have taken it), or the family's first pod there."""
        terms = cls.pods[0].pod_affinity
        if not terms:
            return True
        family = self.family[cls.index]
        first = self._first_node(family) if self.first_allowed[family] else None
        base = self.base[family]
        return all((first is not None and self._same(t.topology_key, node, self.nodes[first]))
                   or self._placed_in(base, t.topology_key, node)
                   or any(self._stays(q) and self.ip.matches_all(terms, q)
                          for q in self.running_in(t.topology_key, node))
                   for t in terms)

    def _spread_ok(self, cls: PodClass, node: s.Node, *, adding: bool = False) -> bool:
        """The skew in the node's domain is within maxSkew; ``adding``: as upstream's filter
        sees one more pod of the class there (matchNum + selfMatchNum − minMatchNum)."""
        rep = cls.pods[0]
        for i, constraint in enumerate(rep.spread):
            key = constraint.topology_key
            if (cls.index, i) not in self._spread_cache:
                matcher = ip.SpreadMatcher(constraint, rep.namespace)
                eligible = [n for n in self.problem.nodes if selectors.spread_eligible(constraint, rep, n)]
                eligible_names = {n.name for n in eligible}
                counted = [(q, self.nodes[q.node].labels[key]) for q in self.running
                           if q.node in eligible_names and self.ip.matches(matcher, q)]
                self._spread_cache[cls.index, i] = (eligible_names, sorted({n.labels[key] for n in eligible}),
                                                    counted, self._matching(matcher))
            names, values, counted, matching = self._spread_cache[cls.index, i]
            counts = dict.fromkeys(values, 0)
            for q, value in counted:
                if self._stays(q):
                    counts[value] += 1
            for name, by_class in self.placed.items():
                if name in names:
                    counts[self.nodes[name].labels[key]] += sum(k for c, k in by_class.items() if c in matching)
            if node.labels.get(key) not in counts:
                return False
            low = 0 if len(counts) < (constraint.min_domains or 1) else min(counts.values())
            own = int(adding and cls.index in matching)
            if counts[node.labels[key]] + own - low > constraint.max_skew:
                return False
        return True

    # ---- victims --------------------------------------------------------------------
    def _conflicts(self, unit: VictimUnit, cls: PodClass, name: s.NodeName) -> bool:
        """A pod of ``cls`` on ``name`` and a member of ``unit`` break anti-affinity or ports."""
        node = self.nodes[name]
        rep = cls.pods[0]
        for q in unit.members:
            qn = self._node_of_running(q)
            if any(self._same(t.topology_key, node, qn) and self.ip.matches(t, q) for t in rep.pod_anti_affinity):
                return True
            if any(self._same(t.topology_key, qn, node) and self.ip.matches(t, rep) for t in q.pod_anti_affinity):
                return True
            if q.node == name and selectors.pods_clash(rep, q):
                return True
        return False

    def blocks_return(self, unit: VictimUnit) -> bool:
        """Putting the victim back breaks a rule of a placed pod (the caller has put it back)."""
        if not self.active:
            return False
        every = any(q.pod_anti_affinity for q in unit.members)  # its own terms may refuse any class
        for name, by_class in self.placed.items():
            for c, n in by_class.items():
                if n > 0 and (every or c in self.clashing) and self._conflicts(unit, self.problem.classes[c], name):
                    return True
        return not self.holds()

    def needed(self, unit: VictimUnit) -> bool:
        """A placed pod that may preempt the victim conflicts with it, or would see its domain
        pushed past maxSkew by the victim's return."""
        if not self.active:
            return False
        mine = [(self.nodes[name], self.problem.classes[c]) for name, by_class in self.placed.items()
                for c, n in by_class.items() if n > 0 and self.problem.eligible(self.problem.classes[c], unit)]
        if any(self._conflicts(unit, cls, node.name) for node, cls in mine):
            return True
        spreading = [(node, cls) for node, cls in mine if cls.pods[0].spread]
        if not spreading or unit.index not in self.evicted:
            return False
        self.evicted.discard(unit.index)  # as if put back, for the count only
        try:
            return any(not self._spread_ok(cls, node) for node, cls in spreading)
        finally:
            self.evicted.add(unit.index)
