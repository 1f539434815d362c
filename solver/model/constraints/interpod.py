"""Inter-pod filters: required pod (anti-)affinity, topology spread (DoNotSchedule), host ports.

Semantics and the upstream functions they mirror: ``solver.filters.interpod``. With
N[C, K, v] = Σ_{c ∈ C, n: K(n) = v} count[c, n] and present[C, K, v] ⇔ N[C, K, v] ≥ 1
(one boolean per class set and domain, ``vars.present``), and run(v) the running pods not
evicted there:

- anti-affinity term T of class c, matched by classes M and running pods R, per domain v:
      present[c, K, v] ⇒ Σ_{c' ∈ M} N[c', K, v] ≤ [c ∈ M]        (placed pods)
      present[c, K, v] ⇒ evict[u]   for every unit u with a member of R in v
  and a running pod's own term T matching class c, in its domain v:
      present[c, K, v] ⇒ evict[u]
  (a conflict no plan can evict is pruned from the candidates in ``problem``);
- host ports on node n: count[c, n] ≤ 1 (pruning), count[c, n] + count[c', n] ≤ 1 when
  their ports conflict, count[c, n] ≤ evict[u] for a running pod's conflicting port;
- affinity family F (classes with the same terms S), per term (key K) and domain v:
      present[F, K, v] ⇒ Σ_{c' ∈ B} N[c', K, v] + Σ_{q ∈ R_S in v} (1 − evict[u_q]) + Σ_{n ∈ v} first[F, n] ≥ 1
  B: classes without required affinity whose pods match S; R_S: running pods matching S;
  first[F, n] ≤ Σ_{c ∈ F} count[c, n], Σ_n first[F, n] ≤ 1, only where nothing outside F
  matches S and F's pods do;
- spread constraint of class c over its eligible domains D, with
  cnt[v] = Σ_{c' matching} N[c', K, v ∩ E] + Σ_{q matching, not terminating, in v ∩ E} (1 − evict[u_q]):
      min ≤ cnt[v] ∀ v ∈ D (min = 0 when |D| < minDomains),
      present[c, K, v] ⇒ cnt[v] ≤ min + maxSkew.

Every present literal of a class that may preempt a conflicting unit is a reason its
eviction is necessary (``Conflicts.needs``, returned for ``preemption``), and so is a counted victim whose return
would break a spread constraint of such a class in its domain (``spread_needs``); a unit in
any conflict or spread count gets necessity rows whatever lands beside it
(``Conflicts.forced``).
"""

from __future__ import annotations

from collections import defaultdict

from ortools.sat.python import cp_model

from solver.core import snapshot as s
from solver.filters import interpod as ip
from solver.filters import selectors
from solver.model.vars import Conflicts, PlacementVars
from solver.problem.build import Problem
from solver.problem.workloads import PodClass


def add(problem: Problem, vars: PlacementVars) -> Conflicts:
    """The inter-pod rules; returns the evictions they make necessary, for ``preemption.add``."""
    conflicts = Conflicts()
    has_ports = any(selectors.exclusive(c.pods[0]) for c in problem.classes)
    if not problem.interpod.active and not has_ports:
        return conflicts
    ctx = _Context(problem, vars, conflicts)
    ctx.anti_affinity()
    if has_ports:
        ctx.host_ports()
    ctx.affinity()
    ctx.spread()
    return conflicts


class _Context:
    def __init__(self, problem: Problem, vars: PlacementVars, conflicts: Conflicts) -> None:
        self.problem, self.vars, self.model, self.conflicts = problem, vars, vars.model, conflicts
        self.nodes = {n.name: n for n in problem.nodes}
        self.unit_of: dict[str, int] = {p.key: u.index for u in problem.units for p in u.members}
        self.running = [p for u in problem.units for p in u.members if p.node is not None]
        self.ip = problem.interpod
        powers = [c.power for c in problem.classes if c.power is not None]
        self.strongest = max(powers) if powers else None

    def still(self, pod: s.Pod) -> cp_model.LinearExprT:
        """1 while the running pod stays: a constant when no plan may evict it."""
        unit = self.problem.units[self.unit_of[pod.key]]
        if unit.protected or self.strongest is None or unit.priority >= self.strongest:
            return 1
        return 1 - self.vars.evicts(unit.index)

    # ---- helpers ----------------------------------------------------------------------
    def matching(self, matcher: ip.Matcher) -> list[int]:
        i = self.ip.index[matcher]
        return [c.index for c in self.problem.classes if self.problem.vectors[c.index][i]]

    def conflict(self, cls: int, key: str, value: str, pod: s.Pod) -> None:
        """A pod of ``cls`` in the domain (a node when ``key`` is "") conflicts with running ``pod``:
        its presence evicts the pod's unit, and a pod of it landing there makes that eviction
        necessary when the class may preempt it (presence alone is no reason: it may be 1 with
        no pod there)."""
        u = self.unit_of[pod.key]
        unit = self.problem.units[u]
        self.model.add_implication(self.vars.present((cls,), key, value), self.vars.evicts(u))
        self.conflicts.forced.add(u)  # an ineligible class's conflict is no reason to evict
        if self.problem.eligible(self.problem.classes[cls], unit):
            self.conflicts.need(u, self.vars.landed(cls, key, value))

    def domain_of(self, pod: s.Pod, key: str) -> str | None:
        return self.nodes[pod.node].labels.get(key) if pod.node else None

    # ---- families -----------------------------------------------------------------------
    def anti_affinity(self) -> None:
        vectors = self.problem.vectors
        for cls in self.problem.classes:
            for term in cls.pods[0].pod_anti_affinity:
                key, i = term.topology_key, self.ip.index[term]
                matching = self.matching(term)
                by_value = self.ip.running_matches(term, key, self.running, self.nodes)
                for value in sorted(self.vars.by_value(cls.index, key)):
                    here = self.vars.present((cls.index,), key, value)
                    placed = self.vars.in_domain_counts(matching, key, value)
                    if placed:
                        self.model.add(cp_model.LinearExpr.sum(placed) <= int(vectors[cls.index][i])
                                       ).only_enforce_if(here)
                    for q in by_value.get(value, ()):
                        self.conflict(cls.index, key, value, q)
        # the running pods' own terms against the pending classes
        for q in self.running:
            for term in q.pod_anti_affinity:
                domain = self.domain_of(q, term.topology_key)
                if domain is None:
                    continue
                for c in self.matching(term):
                    if self.vars.by_value(c, term.topology_key).get(domain):
                        self.conflict(c, term.topology_key, domain, q)

    def host_ports(self) -> None:
        """Host ports (NodePorts) and inline disks (VolumeRestrictions): two pods that clash
        never share a node (a class that clashes with itself has one pod a node: its candidates)."""
        classes = [c for c in self.problem.classes if selectors.exclusive(c.pods[0])]
        running_ports: dict[s.NodeName, list[s.Pod]] = defaultdict(list)
        for q in self.running:
            if selectors.exclusive(q) and q.node is not None:
                running_ports[q.node].append(q)

        for i, a in enumerate(classes):
            pa = a.pods[0]
            for node, var in self.vars.nodes_of(a.index).items():
                for b in classes[i + 1:]:
                    other = self.vars.count(b.index, node)
                    if other is None or not selectors.pods_clash(pa, b.pods[0]):
                        continue
                    if selectors.pods_clash(pa, pa) and selectors.pods_clash(b.pods[0], b.pods[0]):
                        self.model.add(var + other <= 1)
                    else:  # read-only mounts of one disk share a node: one class or the other
                        theirs = self.model.new_bool_var(f"disk[{a.index},{b.index},{node}]")
                        self.model.add(other <= self.problem.candidates[b.index][node] * theirs)
                        self.model.add(var <= self.problem.candidates[a.index][node] * (1 - theirs))
                for q in running_ports.get(node, ()):
                    if selectors.pods_clash(pa, q):
                        self.conflict(a.index, "", node, q)

    def affinity(self) -> None:
        problem, vectors = self.problem, self.problem.vectors
        families: dict[tuple[s.PodAffinityTerm, ...], list[int]] = defaultdict(list)
        for cls in problem.classes:
            if cls.pods[0].pod_affinity:
                families[cls.pods[0].pod_affinity].append(cls.index)
        for terms, family in families.items():
            idx = [self.ip.index[t] for t in terms]
            matching = [c.index for c in problem.classes if all(vectors[c.index][i] for i in idx)]
            base = [c for c in matching if not problem.classes[c].pods[0].pod_affinity]
            anchors = [q for q in self.running if self.ip.matches_all(terms, q)]
            firsts: dict[s.NodeName, list[cp_model.IntVar]] = defaultdict(list)
            if not anchors and set(matching) == set(family):  # the family's first pod may be anywhere
                for c in family:
                    for node, count in self.vars.nodes_of(c).items():
                        first = self.model.new_bool_var(f"first[{c},{node}]")
                        self.model.add(count >= 1).only_enforce_if(first)
                        firsts[node].append(first)
                if firsts:
                    self.model.add(cp_model.LinearExpr.sum([f for fs in firsts.values() for f in fs]) <= 1)
            fam = tuple(family)
            for term in terms:
                key = term.topology_key
                anchored: dict[str, list[s.Pod]] = defaultdict(list)
                for q in anchors:
                    if (v := self.domain_of(q, key)) is not None:
                        anchored[v].append(q)
                values = sorted({v for c in family for v in self.vars.by_value(c, key)})
                for value in values:
                    support: list[cp_model.LinearExprT] = list(self.vars.in_domain_counts(base, key, value))
                    stays = [self.still(q) for q in anchored.get(value, ())]
                    if any(isinstance(x, int) for x in stays):
                        continue  # a pod no plan moves supports the domain
                    support += stays
                    support += [f for c in family for node, _ in self.vars.by_value(c, key).get(value, ())
                                for f in firsts.get(node, ())]
                    here = self.vars.present(fam, key, value)
                    if support:
                        self.model.add(cp_model.LinearExpr.sum(support) >= 1).only_enforce_if(here)
                    else:
                        self.model.add(here == 0)

    def spread(self) -> None:
        problem = self.problem
        for cls in problem.classes:
            rep = cls.pods[0]
            for constraint in rep.spread:
                matcher = ip.SpreadMatcher(constraint, rep.namespace)
                key = constraint.topology_key
                eligible = {n.name for n in problem.nodes if selectors.spread_eligible(constraint, rep, n)}
                domains = sorted({self.nodes[n].labels[key] for n in eligible})
                matching = self.matching(matcher)
                counted: dict[str, list[s.Pod]] = defaultdict(list)
                for q in self.running:
                    if q.node in eligible and self.ip.matches(matcher, q):
                        counted[self.nodes[q.node].labels[key]].append(q)
                        self.conflicts.forced.add(self.unit_of[q.key])
                counts: dict[str, cp_model.LinearExprT] = {}
                most = 0
                for value in domains:
                    terms: list[cp_model.LinearExprT] = list(self.vars.in_domain_counts(matching, key, value, eligible))
                    terms += [self.still(q) for q in counted.get(value, ())]
                    counts[value] = cp_model.LinearExpr.sum(terms)
                    most = max(most, len(terms) + sum(len(problem.classes[c].pods) for c in matching))
                if len(domains) < (constraint.min_domains or 1):
                    low: cp_model.LinearExprT = 0
                else:
                    low = self.model.new_int_var(0, most, f"spread_min[{cls.index},{key}]")
                    for value in domains:
                        self.model.add(low <= counts[value])
                for value in sorted(self.vars.by_value(cls.index, key)):
                    if value in counts:
                        here = self.vars.present((cls.index,), key, value)
                        self.model.add(counts[value] <= low + constraint.max_skew).only_enforce_if(here)
                self.spread_needs(cls, constraint, counted, counts, len(domains) < (constraint.min_domains or 1), most)

    def spread_needs(self, cls: PodClass, constraint: s.SpreadConstraint, counted: dict[str, list[s.Pod]],
                     counts: dict[str, cp_model.LinearExprT], few: bool, most: int) -> None:
        """A counted victim is needed away when, put back, the skew in its domain would exceed
        maxSkew for a pod of ``cls`` there that may preempt it (upstream's reprieve keeps only
        victims whose return passes every filter): need ⇒ present[c, K, v] ∧
        cnt[v] + k_u(v) ≥ min_w(cnt[w] + k_u(w)) + maxSkew + 1."""
        key = constraint.topology_key
        per_unit: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for value, pods in counted.items():
            for q in pods:
                per_unit[self.unit_of[q.key]][value] += 1
        for u, back_in in sorted(per_unit.items()):
            unit = self.problem.units[u]
            if not self.vars.has_evict(u) or not self.problem.eligible(cls, unit):
                continue
            back = {v: counts[v] + back_in.get(v, 0) for v in counts}
            low: cp_model.LinearExprT = 0
            if not few:
                low = self.model.new_int_var(0, most + len(unit.members), f"spread_back_min[{cls.index},{u}]")
                self.model.add_min_equality(low, list(back.values()))
            for value in sorted(back_in):
                if not self.vars.by_value(cls.index, key).get(value):
                    continue
                need = self.model.new_bool_var(f"need_spread[{unit.key},{cls.index},{value}]")
                self.model.add_implication(need, self.vars.landed(cls.index, key, value))
                self.model.add(back[value] >= low + constraint.max_skew + 1).only_enforce_if(need)
                self.conflicts.need(u, need)
