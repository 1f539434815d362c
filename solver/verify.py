"""The independent plan checker: the specification, written without the model.

``verify(snapshot, plan)`` recomputes every rule of docs/design.md from the
snapshot and the plan alone and returns every violation it finds. It must not
import the model builder, its variables, the greedy baseline or
``solver.model.problem`` (import-linter enforces this): a bug in the
aggregated model cannot hide behind the same bug here. It shares only the
snapshot types and the label/taint predicates of ``solver.model.selectors``.

One ``check_*`` function per rule; each returns ``list[Violation]``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from solver.model import cel, selectors
from solver.model import snapshot as s
from solver.model.features import FeatureGates
from solver.model.plan import AllocatedDevice as PlannedDevice
from solver.model.plan import DeviceAllocation, Plan

NEVER = float("-inf")  # preemption power of a `Never` preemptor


@dataclass(frozen=True, slots=True, kw_only=True)
class Violation:
    rule: str
    subject: str
    detail: str
    requested: float = 0
    used: float = 0
    capacity: float = 0

    def __str__(self) -> str:
        return f"{self.rule}: {self.subject}: {self.detail}"


class _View:
    """The snapshot and plan, indexed once."""

    def __init__(self, snapshot: s.ClusterSnapshot, plan: Plan, gates: FeatureGates = FeatureGates(),
                 dra_preemption: bool = True) -> None:
        self.snapshot = snapshot
        self.plan = plan
        self.gates = gates
        self.dra_preemption = dra_preemption
        self._policy: dict[str, str] = {}
        self._ongoing: dict[str, bool] = {}
        self._pending_by_root: dict[str, list[s.Pod]] | None = None
        self._present: list[s.Pod] | None = None
        self.nodes = snapshot.node_by_name()
        self.pods = {p.key: p for p in snapshot.pods}
        self.groups = snapshot.group_by_key()
        self.children: dict[str, list[str]] = defaultdict(list)
        for g in snapshot.groups:
            if g.parent:
                self.children[g.parent].append(g.key)
        self.bound = {b.pod: b.node for b in plan.bindings}
        self.evicted = {e.pod for e in plan.evictions}
        self.members: dict[str, list[s.Pod]] = defaultdict(list)  # direct members of a group
        for p in snapshot.pods:
            if p.group:
                self.members[p.group].append(p)
        self.new_pods = [self.pods[s.PodKey(k)] for k in sorted(self.bound) if s.PodKey(k) in self.pods]
        self.new_on: dict[str, list[s.Pod]] = defaultdict(list)  # node -> pods the plan binds there
        for pod_key, node in self.bound.items():
            if pod_key in self.pods:
                self.new_on[node].append(self.pods[s.PodKey(pod_key)])
        self.running_on: dict[str, list[s.Pod]] = defaultdict(list)  # node -> pods running there
        self.units: dict[str, list[s.Pod]] = defaultdict(list)  # victim unit -> its running pods
        for p in snapshot.pods:
            if p.node:
                self.running_on[p.node].append(p)
                self.units[self.victim_unit(p)].append(p)
        self.dra = _DraView(self)

    def chain(self, group: str) -> list[str]:
        out = []
        cur: str | None = group
        while cur:
            out.append(cur)
            cur = self.groups[cur].parent
        return out

    def root(self, pod: s.Pod) -> str:
        return self.chain(pod.group)[-1] if pod.group else pod.key

    def subtree_pods(self, group: str) -> list[s.Pod]:
        out = list(self.members.get(group, ()))
        for child in self.children.get(group, ()):
            out.extend(self.subtree_pods(child))
        return out

    def schedulable(self, pod: s.Pod) -> bool:
        """A pending pod upstream would try: not gated, not being deleted."""
        return pod.node is None and not pod.scheduling_gates and not pod.terminating

    def planned_roots(self) -> set[str]:
        return {self.root(p) for p in self.snapshot.pods if self.schedulable(p)}

    def root_pods(self, root: str) -> tuple[list[s.Pod], list[s.Pod]]:
        """(schedulable pending, running) pods under a root group, tree order, by name."""
        order: list[str] = []

        def walk(key: str) -> None:
            order.append(key)
            for child in sorted(self.children.get(key, ())):
                walk(child)

        walk(root)
        pending = [p for g in order for p in sorted(self.members.get(g, ()), key=lambda p: p.name)
                   if self.schedulable(p)]
        running = [p for g in order for p in sorted(self.members.get(g, ()), key=lambda p: p.name)
                   if p.node is not None]
        return pending, running

    def policy(self, root: str) -> str:
        """A root group's preemption policy: the group's with PodGroupPreemptionPolicy, else
        Never as soon as one schedulable pod says Never."""
        if root in self._policy:
            return self._policy[root]
        group = self.groups[s.GroupKey(root)]
        if self.gates.pod_group_preemption_policy:
            policy = group.preemption_policy or s.PREEMPT_LOWER
        else:
            pending, _ = self.root_pods(root)
            policy = s.PREEMPT_NEVER if any(p.preemption_policy == s.PREEMPT_NEVER for p in pending) else s.PREEMPT_LOWER
        self._policy[root] = policy
        return policy

    def refused(self, root: str) -> bool:
        """validatePodGroup fails: a pod with another schedulerName than the first, another
        priority than the root group, or another preemption policy (than the root's with the
        gate, than the first pod's without)."""
        group = self.groups[s.GroupKey(root)]
        pending, running = self.root_pods(root)
        pods = pending + running
        if not pods:
            return False
        want_policy = (group.preemption_policy or s.PREEMPT_LOWER) if self.gates.pod_group_preemption_policy \
            else pods[0].preemption_policy
        return any(p.scheduler_name != pods[0].scheduler_name or p.priority != group.priority
                   or p.preemption_policy != want_policy for p in pods)

    def priority_of_root(self, root: str) -> int:
        group = self.groups.get(s.GroupKey(root))
        return group.priority if group else self.pods[s.PodKey(root)].priority

    def power(self, pod: s.Pod) -> float:
        """Preemption power of a pending pod: its workload's priority, -inf for Never."""
        root = self.root(pod)
        policy = self.policy(root) if s.GroupKey(root) in self.groups else pod.preemption_policy
        if policy == s.PREEMPT_NEVER or self.preempting_already(root):
            return NEVER
        return self.priority_of_root(root)

    def preempting_already(self, root: str) -> bool:
        """An earlier preemption for the root's pods is under way: on a pod's nominated node a
        lower-priority pod terminates because it was preempted. No new victim may go for it."""
        if root in self._ongoing:
            return self._ongoing[root]
        prio = self.priority_of_root(root)
        if self._pending_by_root is None:
            self._pending_by_root = defaultdict(list)
            for p in self.snapshot.pods:
                if self.schedulable(p):
                    self._pending_by_root[self.root(p)].append(p)
        pending = self._pending_by_root.get(root, [])
        out = any(q.preempted and q.priority < prio for p in pending if p.nominated_node
                  for q in self.running_on.get(p.nominated_node, ()))
        self._ongoing[root] = out
        return out

    def victim_priority(self, pod: s.Pod) -> int:
        return self.groups[self.chain(pod.group)[-1]].priority if pod.group else pod.priority

    def victim_unit(self, pod: s.Pod) -> str:
        if not pod.group or pod.terminating:
            return pod.key
        tops = [g for g in self.chain(pod.group) if self.groups[g].disruption_all]
        return tops[-1] if tops else pod.key

    def is_running(self, pod: s.Pod) -> bool:
        return pod.node is not None

    def running_after(self, pod: s.Pod) -> bool:
        return self.is_running(pod) and pod.key not in self.evicted

    def running_after_all(self) -> list[s.Pod]:
        return [p for p in self.snapshot.pods if self.running_after(p)]

    def present(self) -> list[s.Pod]:
        """The plan's end state: running pods not evicted, and the pods it binds (read once)."""
        if self._present is None:
            self._present = self.running_after_all() + self.new_pods
        return self._present


def verify(snapshot: s.ClusterSnapshot, plan: Plan, *, strict_pdbs: bool = False,
           gates: FeatureGates = FeatureGates(), dra_preemption: bool = True) -> list[Violation]:
    """Every rule the plan breaks; with ``strict_pdbs`` a PDB violation is one too. ``gates``
    are the scheduler's feature gates the plan was made under; without ``dra_preemption`` no
    evicted pod's devices go free."""
    view = _View(snapshot, plan, gates, dra_preemption)
    out: list[Violation] = []
    if strict_pdbs:
        out.extend(check_pdbs_strict(view))
    for check in (check_bindings, check_admission, check_pod_anti_affinity, check_pod_affinity,
                  check_topology_spread, check_host_ports, check_evictions, check_capacity, check_victims_necessary, check_gangs,
                  check_topology, check_objective, check_device_allocations, check_allocated_claims,
                  check_devices, check_device_reach, check_device_counts, check_device_conflicts,
                  check_device_constraints):
        out.extend(check(view))
    return out


def check_bindings(view: _View) -> list[Violation]:
    out = []
    seen: set[str] = set()
    for b in view.plan.bindings:
        pod = view.pods.get(s.PodKey(b.pod))
        node = view.nodes.get(s.NodeName(b.node))
        if b.pod in seen:
            out.append(Violation(rule="binding", subject=b.pod, detail="bound twice"))
        seen.add(b.pod)
        if pod is None or node is None:
            out.append(Violation(rule="binding", subject=b.pod, detail=f"unknown pod or node {b.node}"))
            continue
        if pod.node is not None:
            out.append(Violation(rule="binding", subject=b.pod, detail="pod is already running"))
        if pod.scheduling_gates:
            out.append(Violation(rule="binding", subject=b.pod, detail=f"gated by {list(pod.scheduling_gates)}"))
        if pod.terminating:
            out.append(Violation(rule="binding", subject=b.pod, detail="pod is being deleted"))
        if not selectors.statically_feasible(pod, node):
            out.append(Violation(rule="binding", subject=b.pod, detail=f"node {b.node} fails selector/affinity/taints"))
    return out


def check_admission(view: _View) -> list[Violation]:
    """No pod of a workload that upstream's validatePodGroup refuses is bound."""
    out = []
    for root in sorted(view.planned_roots()):
        if s.GroupKey(root) not in view.groups or not view.refused(root):
            continue
        bound = sorted(p.key for p in view.subtree_pods(root) if p.key in view.bound)
        if bound:
            out.append(Violation(rule="admission", subject=root,
                                 detail=f"validatePodGroup refuses the workload, yet {bound} are bound"))
    return out


# ---- inter-pod rules ----------------------------------------------------------------
# Read on the plan's end state: the running pods not evicted and the pods it binds, each on
# its node ("present"). Running pods are never checked against each other (upstream filters
# only the pod being placed).


def _where_now(view: _View, pod: s.Pod) -> s.Node | None:
    name = view.bound.get(pod.key) or pod.node
    return view.nodes.get(s.NodeName(name)) if name else None


def _ns(view: _View, pod: s.Pod) -> Mapping[str, str]:
    return selectors.namespace_labels(view.snapshot.namespace_labels, pod.namespace)


def _same_domain(key: str, a: s.Node | None, b: s.Node | None) -> bool:
    return a is not None and b is not None and key in a.labels and a.labels[key] == b.labels.get(key)


def _anti_conflict(view: _View, owner: s.Pod, other: s.Pod) -> bool:
    """``owner``'s required anti-affinity refuses ``other`` where they now are."""
    if owner.key == other.key or not owner.pod_anti_affinity:
        return False
    a, b = _where_now(view, owner), _where_now(view, other)
    return any(_same_domain(t.topology_key, a, b) and selectors.pod_term_matches(t, other, _ns(view, other))
               for t in owner.pod_anti_affinity)


def _port_conflict(view: _View, a: s.Pod, b: s.Pod) -> bool:
    """One host port asked for by two pods on one node (NodePorts)."""
    if a.key == b.key or not a.host_ports or not b.host_ports:
        return False
    na, nb = _where_now(view, a), _where_now(view, b)
    return na is not None and nb is not None and na.name == nb.name and selectors.host_ports_clash(
        a.host_ports, b.host_ports)


def _in_conflict(view: _View, a: s.Pod, b: s.Pod) -> bool:
    return _anti_conflict(view, a, b) or _anti_conflict(view, b, a) or _port_conflict(view, a, b)


def check_pod_anti_affinity(view: _View) -> list[Violation]:
    """InterPodAffinity (plugins/interpodaffinity/filtering.go): no bound pod's anti-affinity
    term matches another present pod in its domain (satisfyPodAntiAffinity), and no present
    pod's term matches a bound pod in its (satisfyExistingPodsAntiAffinity)."""
    out = []
    present = view.present()
    owners = [q for q in present if q.pod_anti_affinity]
    by_domain: dict[tuple[str, str], list[s.Pod]] = {}  # (key, value) -> present pods there
    for key in {t.topology_key for p in view.new_pods for t in p.pod_anti_affinity}:
        for q in present:
            node = _where_now(view, q)
            if node is not None and key in node.labels:
                by_domain.setdefault((key, node.labels[key]), []).append(q)
    for p in view.new_pods:
        for q in owners:
            if _anti_conflict(view, q, p):
                out.append(Violation(rule="pod-anti-affinity", subject=p.key,
                                     detail=f"refused by {q.key}'s required anti-affinity in its domain"))
        node = _where_now(view, p)
        near = {q.key: q for t in p.pod_anti_affinity if node is not None and t.topology_key in node.labels
                for q in by_domain.get((t.topology_key, node.labels[t.topology_key]), ())}
        for q in near.values():
            if _anti_conflict(view, p, q):
                out.append(Violation(rule="pod-anti-affinity", subject=p.key,
                                     detail=f"its required anti-affinity refuses {q.key} in its domain"))
    return out


def _spread_counts(view: _View, c: s.SpreadConstraint, owner: s.Pod, also: Iterable[s.Pod] = ()
                   ) -> tuple[dict[str, int], int, set[str]]:
    """(matching pods per eligible domain of ``owner``'s constraint, the fewest: 0 below
    minDomains, the eligible nodes) on the end state, with ``also`` (evicted pods put back)
    counted too."""
    eligible = {n.name: n for n in view.snapshot.nodes if selectors.spread_eligible(c, owner, n)}
    counts = {n.labels[c.topology_key]: 0 for n in eligible.values()}
    for q in [p for p in view.present() if not p.terminating] + list(also):
        where = _where_now(view, q)
        if where is not None and where.name in eligible and selectors.spread_matches(c, owner, q):
            counts[where.labels[c.topology_key]] += 1
    low = 0 if len(counts) < (c.min_domains or 1) else min(counts.values(), default=0)
    return counts, low, set(eligible)


def _needed_for_spread(view: _View, members: list[s.Pod], prio: int) -> bool:
    """Put back, the victim would push a bound pod's domain past maxSkew, and that pod may
    preempt it (upstream's reprieve keeps only victims whose return passes every filter)."""
    for p in view.new_pods:
        if not p.spread or view.power(p) <= prio:
            continue
        node = _where_now(view, p)
        for c in p.spread:
            if node is None or not any(selectors.spread_matches(c, p, q) for q in members):
                continue
            counts, low, _ = _spread_counts(view, c, p, members)
            value = node.labels.get(c.topology_key)
            if value in counts and counts[value] - low > c.max_skew:
                return True
    return False


def check_host_ports(view: _View) -> list[Violation]:
    """NodePorts: no bound pod asks for a host port another present pod on its node holds."""
    out = []
    on_node: dict[str, list[s.Pod]] = defaultdict(list)
    for q in view.present():
        if q.host_ports and (node := _where_now(view, q)) is not None:
            on_node[node.name].append(q)
    for p in view.new_pods:
        node = _where_now(view, p)
        for q in on_node.get(node.name, ()) if p.host_ports and node is not None else ():
            if _port_conflict(view, p, q):
                out.append(Violation(rule="host-port", subject=p.key, detail=f"a host port of {q.key} on {node.name}"))
    return out


def _matches_all(view: _View, terms: tuple[s.PodAffinityTerm, ...], pod: s.Pod) -> bool:
    return all(selectors.pod_term_matches(t, pod, _ns(view, pod)) for t in terms)


def check_pod_affinity(view: _View) -> list[Violation]:
    """Required pod affinity, as the pods would be bound one at a time: each bound pod with
    terms has, in every term's domain, a pod already there matching all its terms; or it is
    the first such pod anywhere and matches its own terms (satisfyPodAffinity). The order is
    found greedily: every pod that is supported, and one first pod only when none is."""
    todo = sorted((p for p in view.new_pods if p.pod_affinity), key=lambda p: p.key)
    if not todo:
        return []
    out = []
    for p in todo:
        node = _where_now(view, p)
        if node is None or any(t.topology_key not in node.labels for t in p.pod_affinity):
            out.append(Violation(rule="pod-affinity", subject=p.key,
                                 detail="its node lacks a topology key of its required pod affinity"))
    if out:
        return out
    term_sets = {p.pod_affinity for p in todo}
    # per term set: the (key, value) domains holding a pod matching all of it
    support: dict[tuple[s.PodAffinityTerm, ...], set[tuple[str, str]]] = {terms: set() for terms in term_sets}

    def place(q: s.Pod) -> None:
        node = _where_now(view, q)
        if node is None:
            return
        for terms, domains in support.items():
            if _matches_all(view, terms, q):
                domains.update((t.topology_key, node.labels[t.topology_key]) for t in terms
                               if t.topology_key in node.labels)

    for q in view.running_after_all() + [p for p in view.new_pods if not p.pod_affinity]:
        place(q)
    while todo:
        def supported(p: s.Pod) -> bool:
            labels = _where_now(view, p).labels  # type: ignore[union-attr]
            return all((t.topology_key, labels[t.topology_key]) in support[p.pod_affinity] for t in p.pod_affinity)

        ready = [p for p in todo if supported(p)]
        if not ready:
            ready = [p for p in todo if not support[p.pod_affinity] and _matches_all(view, p.pod_affinity, p)][:1]
        if not ready:
            return [Violation(rule="pod-affinity", subject=p.key,
                              detail="no pod matching its required affinity is in its domain") for p in todo]
        for p in ready:
            place(p)
        todo = [p for p in todo if p not in ready]
    return out


def check_topology_spread(view: _View) -> list[Violation]:
    """PodTopologySpread DoNotSchedule (plugins/podtopologyspread/filtering.go), on the end
    state: for each bound pod's constraint, the matching pods in its domain exceed the fewest
    in any eligible domain (0 when there are fewer than minDomains) by at most maxSkew."""
    out = []
    # pods alike in namespace and node eligibility see the same counts: read them once
    cache: dict[tuple[object, ...], tuple[dict[str, int], int, set[str]]] = {}
    for p in (p for p in view.new_pods if p.spread):
        node = _where_now(view, p)
        for c in p.spread:
            key = (c, p.namespace, tuple(sorted(p.node_selector.items())), p.affinity_terms, p.tolerations,
                   tuple(x.topology_key for x in p.spread))
            if key not in cache:
                cache[key] = _spread_counts(view, c, p)
            counts, low, eligible = cache[key]
            if node is None or node.name not in eligible:
                out.append(Violation(rule="topology-spread", subject=p.key,
                                     detail=f"node lacks {c.topology_key} or is not one of its domains"))
                continue
            have = counts[node.labels[c.topology_key]]
            if have - low > c.max_skew:
                out.append(Violation(rule="topology-spread", subject=p.key,
                                     detail=f"{have} matching pods in {c.topology_key}="
                                            f"{node.labels[c.topology_key]}, {low} in the emptiest domain, "
                                            f"maxSkew {c.max_skew}"))
    return out


def check_evictions(view: _View) -> list[Violation]:
    out = []
    planned = view.planned_roots()
    evicted_units = set()
    for key in view.evicted:
        pod = view.pods.get(s.PodKey(key))
        if pod is None or not view.is_running(pod):
            out.append(Violation(rule="eviction", subject=key, detail="not a running pod"))
            continue
        evicted_units.add(view.victim_unit(pod))
        if pod.terminating:
            out.append(Violation(rule="eviction", subject=key, detail="is being deleted already"))
        if view.root(pod) in planned:
            out.append(Violation(rule="eviction", subject=key, detail="belongs to a workload being planned"))
    for unit in sorted(evicted_units):
        members = view.units[unit]
        missing = [p.key for p in members if p.key not in view.evicted]
        if missing:
            out.append(Violation(rule="victim-unit", subject=unit, detail=f"disruptionMode all: {missing} not evicted"))
    return out


def check_capacity(view: _View) -> list[Violation]:
    """Per node and resource requested by a pod bound there:
    Σ new pods + Σ running pods not evicted ≤ allocatable."""
    out = []
    for node_name, new in sorted(view.new_on.items()):
        node = view.nodes.get(s.NodeName(node_name))
        if node is None:
            continue
        for res in sorted({r for p in new for r, v in p.requests.items() if v > 0}):
            used = sum(p.requests.get(res, 0) for p in new)
            used += sum(p.requests.get(res, 0) for p in view.running_on[node_name] if p.key not in view.evicted)
            cap = node.allocatable.get(res, 0)
            if used > cap:
                out.append(Violation(rule="capacity", subject=f"{node_name}/{res}",
                                     detail=f"{used} > {cap}", used=used, capacity=cap))
    return out


def check_victims_necessary(view: _View) -> list[Violation]:
    """Every evicted victim unit is necessary: on one of its nodes, putting it back
    overflows a resource for the new pods of higher priority there, and one of
    those may preempt it (kube-scheduler evicts only victims it cannot reprieve);
    or putting it back keeps one of its claims' devices held while the plan gives
    that device to a pod (or PodGroup) that may preempt it."""
    out = []
    evicted_units = sorted({view.victim_unit(view.pods[s.PodKey(k)]) for k in view.evicted
                            if s.PodKey(k) in view.pods and view.is_running(view.pods[s.PodKey(k)])})
    for unit in evicted_units:
        members = view.units[unit]
        prio = view.victim_priority(members[0])
        necessary = False
        for node_name in sorted({p.node for p in members if p.node}):
            node = view.nodes[s.NodeName(node_name)]
            higher = [p for p in view.new_on.get(node_name, []) if view.priority_of_root(view.root(p)) > prio]
            if not any(view.power(p) > prio for p in higher):
                continue
            for res in {r for p in members if p.node == node_name for r in p.requests}:
                demand = sum(p.requests.get(res, 0) for p in higher)
                if demand == 0:
                    continue
                back = sum(p.requests.get(res, 0) for p in view.running_on[node_name]
                           if p.key not in view.evicted or view.victim_unit(p) == unit)
                if demand + back > node.allocatable.get(res, 0):
                    necessary = True
        necessary = necessary or _needed_for_devices(view, members, prio) or any(
            _in_conflict(view, p, q) for q in members for p in view.new_pods
            if (p.pod_anti_affinity or p.host_ports or q.pod_anti_affinity) and view.power(p) > prio) or \
            _needed_for_spread(view, members, prio)
        if not necessary:
            out.append(Violation(rule="victim-necessary", subject=unit,
                                 detail="could be put back: no higher-priority pod that may preempt it needs its room"))
    return out


def _group_state(view: _View) -> tuple[dict[str, int], dict[str, bool]]:
    """new pods bound and gang rule per group, every group of the snapshot."""
    new: dict[str, int] = {}
    ok: dict[str, bool] = {}

    def visit(key: str) -> None:
        group = view.groups[s.GroupKey(key)]
        for child in view.children.get(key, ()):
            visit(child)
        pods = view.subtree_pods(key)
        new[key] = sum(1 for p in pods if p.key in view.bound)
        floor = group.min_count if group.min_count is not None else 1
        if group.kind == s.POD_GROUP:
            running = sum(1 for p in view.members.get(key, ()) if view.running_after(p))
            ok[key] = running + new[key] >= floor
        else:
            ok[key] = sum(ok[c] for c in view.children.get(key, ())) >= floor

    for g in view.snapshot.groups:
        if g.parent is None:
            visit(g.key)
    return new, ok


def _satisfied_roots(view: _View) -> dict[str, bool]:
    new, ok = _group_state(view)
    out = {}
    for root in view.planned_roots():
        if s.GroupKey(root) in view.groups:
            out[root] = ok[root] and new[root] >= 1
        else:
            out[root] = root in view.bound
    return out


def check_gangs(view: _View) -> list[Violation]:
    out = []
    new, ok = _group_state(view)
    for key, group in view.groups.items():
        if new.get(key, 0) > 0 and group.min_count is not None and not ok[key]:
            out.append(Violation(rule="gang", subject=key,
                                 detail=f"binds {new[key]} pods but its gang rule (min {group.min_count}) fails"))
    return out


def check_topology(view: _View) -> list[Violation]:
    out = []
    for key, group in view.groups.items():
        if group.topology_key is None:
            continue
        pods = view.subtree_pods(key)
        nodes = {p.node for p in pods if view.running_after(p)} | {view.bound[p.key] for p in pods if p.key in view.bound}
        if not any(p.key in view.bound for p in pods):
            continue
        values = {view.nodes[s.NodeName(n)].labels.get(group.topology_key) for n in nodes if n}
        if None in values or len(values) > 1:
            out.append(Violation(rule="topology", subject=key,
                                 detail=f"pods span {sorted(map(str, values))} of {group.topology_key}"))
    return out


def _evicted_by_pdb(view: _View) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for pdb in view.snapshot.pdbs:
        for key in view.evicted:
            pod = view.pods.get(s.PodKey(key))
            if pod and pod.namespace == pdb.namespace and selectors.label_selector_matches(pdb.selector, pod.labels):
                out[pdb.key] += 1
    return out


def check_pdbs_strict(view: _View) -> list[Violation]:
    taken = _evicted_by_pdb(view)
    return [Violation(rule="pdb", subject=p.key, detail=f"evicts {taken[p.key]}, disruptionsAllowed is "
                      f"{max(0, p.disruptions_allowed)}")
            for p in view.snapshot.pdbs if taken[p.key] > max(0, p.disruptions_allowed)]


def check_objective(view: _View) -> list[Violation]:
    out = []
    o = view.plan.objective
    sat = _satisfied_roots(view)
    by_priority: Mapping[int, int] = defaultdict(int)
    for root, ok in sat.items():
        by_priority[view.priority_of_root(root)] += int(ok)  # type: ignore[index]
    cost = 0.0
    for key in view.evicted:
        pod = view.pods.get(s.PodKey(key))
        if pod is None:
            continue
        prio = view.victim_priority(pod)
        cost += pod.preemption_cost_milli / 1000 if pod.preemption_cost_milli is not None else 1 + max(0, prio)
    evicted_by_pdb = _evicted_by_pdb(view)
    violations = sum(max(0, evicted_by_pdb[p.key] - max(0, p.disruptions_allowed)) for p in view.snapshot.pdbs)
    want = {
        "satisfiedWorkloads": (o.satisfied_workloads, sum(sat.values())),
        "placedPods": (o.placed_pods, len(view.bound)),
        "pdbViolations": (o.pdb_violations, violations),
        "evictedPods": (o.evicted_pods, len(view.evicted)),
    }
    for name, (have, expect) in want.items():
        if have != expect:
            out.append(Violation(rule="objective", subject=name, detail=f"plan says {have}, recomputed {expect}"))
    if abs(o.preemption_cost - cost) > 1e-6 * max(1.0, cost):
        out.append(Violation(rule="objective", subject="preemptionCost", detail=f"plan says {o.preemption_cost}, recomputed {cost}"))
    if {p: n for p, n in by_priority.items() if n} != {p: n for p, n in o.satisfied_by_priority.items() if n}:
        out.append(Violation(rule="objective", subject="satisfiedByPriority", detail="does not match the workloads"))
    if o.preemption_cost_bound > o.preemption_cost + 1e-9:
        out.append(Violation(rule="objective", subject="preemptionCostBound", detail="bound above the plan's cost"))
    return out


# ---- DRA ----------------------------------------------------------------------------
# A plan allocation's owner: (False, "ns/pod") for a per-pod claim, (True, "ns/pg") for a
# PodGroup's shared claim. Requests are named as in the plan: the request's name for
# `exactly`, "request/sub" for a firstAvailable entry (SubRequest.name either way).

Owner = tuple[bool, str]


def _where(claim: str, request: str | None = None) -> str:
    return f"claim {claim}" if request is None else f"claim {claim} request {request}"


def _device_key(d: PlannedDevice) -> s.DeviceKey:
    return s.DeviceKey(f"{d.driver}/{d.pool}/{d.device}")


def _alloc_name(a: DeviceAllocation) -> str:
    owner = f"podGroup {a.pod_group}" if a.pod_group else f"pod {a.pod}"
    return f"{owner} {_where(a.claim, a.request)}"


def _attribute(dev: s.Device, qualified: str) -> s.AttributeValue | None:
    domain, _, name = qualified.rpartition("/")
    return dev.attributes.get(domain or dev.driver, {}).get(name)


def _typed(value: s.AttributeValue) -> tuple[str, object]:
    return type(value).__name__, value  # True and 1 are different attribute values


@dataclass(frozen=True, slots=True)
class _Resolved:
    """A plan allocation naming a claim the plan must allocate, and one of its request's alternatives."""

    alloc: DeviceAllocation
    owner: Owner
    claim: s.Claim
    request: s.Request
    sub: s.SubRequest
    nodes: tuple[str, ...]  # every device must be reachable from each: the sharers' nodes
    sites: tuple[str, ...]  # where the claim gets allocated (a bound pod's node): All mode's reference


class _DraView:
    """Claims, devices and the plan's allocations, indexed once (part of ``_View``)."""

    def __init__(self, view: _View) -> None:
        dra = view.snapshot.dra
        self.state = dra
        self.devices = dra.device_by_key()
        self.local: dict[str, list[s.Device]] = defaultdict(list)  # node -> its node-local devices
        self.network: list[s.Device] = []
        for dev in dra.devices:
            if dev.node is not None:
                self.local[dev.node].append(dev)
            else:
                self.network.append(dev)
        self.entries = {pod: {pc.name: pc for pc in pcs} for pod, pcs in dra.pod_claims.items()}
        self.sharers: dict[tuple[str, str], list[s.Pod]] = defaultdict(list)  # (group, entry) -> its pods
        self.shared_claim: dict[tuple[str, str], s.ClaimKey] = {}
        for pod_key, pcs in dra.pod_claims.items():
            for pc in pcs:
                if pc.shared_by:
                    self.shared_claim.setdefault((pc.shared_by, pc.name), pc.claim)
                    if s.PodKey(pod_key) in view.pods:
                        self.sharers[pc.shared_by, pc.name].append(view.pods[s.PodKey(pod_key)])
        self.problems: list[Violation] = []  # what the plan's allocations fail to name
        # what the plan must allocate: every unallocated claim of a pending pod it binds
        self.expected: dict[tuple[Owner, str], s.Claim] = {}
        used_by_bound: set[s.ClaimKey] = set()
        for pod_key in sorted(view.bound):
            pod = view.pods.get(s.PodKey(pod_key))
            if pod is None or pod.node is not None:
                continue
            for pc in dra.pod_claims.get(pod_key, ()):
                used_by_bound.add(pc.claim)
                claim = dra.claims.get(pc.claim)
                if claim is None:
                    self.problems.append(Violation(rule="device-allocation", subject=pod_key,
                                                   detail=f"{_where(pc.name)}: ResourceClaim {pc.claim} is not in the snapshot"))
                elif claim.allocation is None:
                    owner: Owner = (True, pc.shared_by) if pc.shared_by else (False, pod_key)
                    self.expected[owner, pc.name] = claim
        # existing allocations: a claim goes free when every consumer is evicted and no pod
        # the plan binds uses it; an allocated claim nobody reserves, or one reserved by
        # another kind of consumer, stays held
        self.consumers: dict[s.ClaimKey, list[str]] = {}
        self.freed: set[s.ClaimKey] = set()
        self.held: dict[s.DeviceKey, list[s.ClaimKey]] = defaultdict(list)
        for key in sorted(dra.claims):
            claim = dra.claims[key]
            if claim.allocation is None:
                continue
            consumers = list(claim.reserved_pods) + [p.key for g in claim.reserved_groups
                                                     for p in view.members.get(s.GroupKey(g), ()) if p.node]
            self.consumers[key] = consumers
            if (view.dra_preemption and consumers and not claim.reserved_other
                    and all(c in view.evicted for c in consumers) and key not in used_by_bound):
                self.freed.add(key)
            else:
                for ad in claim.allocation:
                    self.held[ad.device].append(key)
        # the plan's allocations
        self.users: dict[s.DeviceKey, list[DeviceAllocation]] = defaultdict(list)
        self.resolved: list[_Resolved] = []
        counts: dict[tuple[Owner, str, str], int] = defaultdict(int)
        for a in view.plan.device_allocations:
            for ad in a.devices:
                self.users[_device_key(ad)].append(a)
            owner, why = self._owner(view, a)
            if owner is None:
                self.problems.append(Violation(rule="device-allocation", subject=a.pod or a.pod_group or "?",
                                               detail=f"{_where(a.claim, a.request)}: {why}"))
                continue
            claim = self.expected[owner, a.claim]
            base = a.request.split("/", 1)[0]
            request = next((r for r in claim.spec.requests if r.name == base), None)
            if request is None:
                self.problems.append(Violation(rule="device-allocation", subject=owner[1],
                                               detail=f"{_where(a.claim, a.request)}: the claim has no request {base}"))
                continue
            counts[owner, a.claim, request.name] += 1
            sub = next((x for x in request.alternatives if x.name == a.request), None)
            if sub is None:
                names = [x.name for x in request.alternatives]
                self.problems.append(Violation(rule="device-allocation", subject=owner[1],
                                               detail=f"{_where(a.claim, a.request)}: not one of request "
                                                      f"{request.name}'s alternatives {names}"))
                continue
            if owner[0]:
                pods = self.sharers[owner[1], a.claim]
                sites = sorted({view.bound[p.key] for p in pods if p.key in view.bound and p.node is None})
                nodes = sorted(set(sites) | {p.node for p in pods if p.node and view.running_after(p)})
            else:
                sites = nodes = [view.bound[a.pod]]
            self.resolved.append(_Resolved(alloc=a, owner=owner, claim=claim, request=request, sub=sub,
                                           nodes=tuple(nodes), sites=tuple(sites)))
        for (owner, entry), claim in sorted(self.expected.items()):
            for request in claim.spec.requests:
                n = counts.get((owner, entry, request.name), 0)
                if n != 1:
                    self.problems.append(Violation(
                        rule="device-allocation", subject=owner[1],
                        detail=f"{_where(entry, request.name)}: " + ("no device allocation" if n == 0 else
                                                                      f"allocated {n} times")))
        self._selects: dict[tuple[str, s.DeviceKey], bool | str] = {}
        self._matching: dict[tuple[s.SubRequest, str],
                             tuple[list[s.DeviceKey], list[tuple[s.DeviceKey, str]]]] = {}

    def _owner(self, view: _View, a: DeviceAllocation) -> tuple[Owner | None, str]:
        """The owner of an allocation the plan must make, or None and why the allocation is not one."""
        if a.pod and a.pod_group:
            return None, f"names both pod {a.pod} and podGroup {a.pod_group}"
        if not a.pod and not a.pod_group:
            return None, "names neither a pod nor a podGroup"
        if a.pod:
            owner: Owner = (False, a.pod)
            if (owner, a.claim) in self.expected:
                return owner, ""
            pod = view.pods.get(s.PodKey(a.pod))
            if pod is None or pod.node is not None or a.pod not in view.bound:
                return None, "the pod is not a pending pod bound by the plan"
            pc = self.entries.get(a.pod, {}).get(a.claim)
            if pc is None:
                return None, "the pod has no such claim"
            if pc.shared_by:
                return None, f"the claim is PodGroup {pc.shared_by}'s shared claim: allocate it once for the group"
            return None, "the claim is already allocated"
        owner = (True, a.pod_group)
        if (owner, a.claim) in self.expected:
            return owner, ""
        claim_key = self.shared_claim.get((a.pod_group, a.claim))
        if claim_key is None:
            return None, "the PodGroup has no such shared claim"
        claim = self.state.claims.get(claim_key)
        if claim is not None and claim.allocation is not None:
            return None, "the claim is already allocated"
        return None, "no pod using the claim is bound by the plan"

    def selects(self, expr: str, dev: s.Device) -> bool | str:
        """Whether the CEL selector holds for ``dev``, or why its evaluation fails."""
        key = (expr, dev.key)
        if key not in self._selects:
            try:
                self._selects[key] = cel.selects(expr, dev)
            except cel.CelRuntimeError as e:
                self._selects[key] = f"CEL runtime error: {e.reason}"
            except cel.CelError as e:  # the snapshot's parser rejects these; never crash on them here
                self._selects[key] = f"does not compile: {e.reason}"
        return self._selects[key]

    def reaches(self, view: _View, dev: s.Device, node_name: str) -> bool:
        if dev.node is not None:
            return dev.node == node_name
        if dev.all_nodes:
            return True
        node = view.nodes.get(s.NodeName(node_name))
        return node is not None and any(selectors.term_matches(t, node) for t in dev.node_selector)

    def untolerated(self, sub: s.SubRequest, dev: s.Device) -> list[s.Taint]:
        return [t for t in dev.taints if t.effect in ("NoSchedule", "NoExecute")
                and not any(selectors.tolerates(tol, t) for tol in sub.tolerations)]

    def selector_failure(self, sub: s.SubRequest, dev: s.Device) -> tuple[str, bool]:
        """Why ``sub``'s class and selectors do not take ``dev`` ("" when they do), and whether
        that is a CEL runtime error (upstream aborts the allocation then). Upstream's order:
        the class's selectors, then the request's, up to the first false or failing one."""
        dclass = self.state.classes.get(sub.device_class)
        if dclass is None:
            return f"DeviceClass {sub.device_class} does not exist", False
        for origin, exprs in ((f"DeviceClass {dclass.name} selector", dclass.selectors),
                              ("the request's selector", sub.selectors)):
            for e in exprs:
                result = self.selects(e, dev)
                if result is True:
                    continue
                if result is False:
                    return f"fails {origin} {e}", False
                return f"breaks {origin} {e} ({result})", True
        return "", False

    def matching(self, view: _View, sub: s.SubRequest,
                 node: str) -> tuple[list[s.DeviceKey], list[tuple[s.DeviceKey, str]]]:
        """Every device reachable from ``node`` that ``sub`` may take (class, selectors, taints),
        sorted, and the reachable devices on which a selector fails to evaluate (with why)."""
        key = (sub, node)
        if key not in self._matching:
            takes, broken = [], []
            for d in self.local.get(node, []) + [d for d in self.network if self.reaches(view, d, node)]:
                why, error = self.selector_failure(sub, d)
                if error:
                    broken.append((d.key, why))
                elif not why and not self.untolerated(sub, d):
                    takes.append(d.key)
            self._matching[key] = sorted(takes), sorted(broken)
        return self._matching[key]

    def power(self, view: _View, a: DeviceAllocation) -> float:
        """Preemption power of an allocation's owner: its pending pod, or the group's bound pods."""
        if a.pod_group:
            pods = [p for p in view.members.get(s.GroupKey(a.pod_group), ()) if p.key in view.bound and p.node is None]
        else:
            pod = view.pods.get(s.PodKey(a.pod))
            pods = [pod] if pod is not None and pod.key in view.bound and pod.node is None else []
        return max((view.power(p) for p in pods), default=NEVER)


def check_device_allocations(view: _View) -> list[Violation]:
    """One allocation per request of every unallocated claim of each pending pod the plan binds
    (a shared claim: once for its PodGroup), none else; a firstAvailable entry of the request."""
    return list(view.dra.problems)


def check_allocated_claims(view: _View) -> list[Violation]:
    """A pod bound with an already allocated claim lands where that allocation is usable."""
    out = []
    dv = view.dra
    for pod_key in sorted(view.bound):
        pod = view.pods.get(s.PodKey(pod_key))
        node = view.nodes.get(s.NodeName(view.bound[pod_key]))
        if pod is None or pod.node is not None or node is None:
            continue
        for pc in dv.state.pod_claims.get(pod_key, ()):
            claim = dv.state.claims.get(pc.claim)
            if claim is None or claim.allocation is None:
                continue
            if claim.allocation_nodes and not any(selectors.term_matches(t, node) for t in claim.allocation_nodes):
                out.append(Violation(rule="device-reach", subject=pod_key,
                                     detail=f"{_where(pc.name)}: node {node.name} is outside the allocation "
                                            f"nodeSelector of ResourceClaim {claim.key}"))
            for ad in claim.allocation:
                dev = dv.devices.get(ad.device)
                if dev is not None and not dv.reaches(view, dev, node.name):
                    out.append(Violation(rule="device-reach", subject=pod_key,
                                         detail=f"{_where(pc.name)}: device {ad.device} of ResourceClaim {claim.key}'s "
                                                f"allocation is not reachable from node {node.name}"))
    return out


def check_devices(view: _View) -> list[Violation]:
    """Each allocated device exists, matches its DeviceClass and request selectors (CEL), and
    its NoSchedule/NoExecute taints are tolerated by the request."""
    out = []
    dv = view.dra
    for r in dv.resolved:
        where = _where(r.alloc.claim, r.alloc.request)
        missing_class = r.sub.device_class not in dv.state.classes
        if missing_class:
            out.append(Violation(rule="device-selector", subject=r.owner[1],
                                 detail=f"{where}: DeviceClass {r.sub.device_class} does not exist"))
        for ad in r.alloc.devices:
            key = _device_key(ad)
            dev = dv.devices.get(key)
            if dev is None:
                out.append(Violation(rule="device-unknown", subject=r.owner[1], detail=f"{where}: device {key} does not exist"))
                continue
            why, _ = dv.selector_failure(r.sub, dev)
            if why and not missing_class:
                out.append(Violation(rule="device-selector", subject=r.owner[1], detail=f"{where}: device {key} {why}"))
            for t in dv.untolerated(r.sub, dev):
                out.append(Violation(rule="device-taint", subject=r.owner[1],
                                     detail=f"{where}: device {key} taint {t.key}={t.value}:{t.effect} is not tolerated"))
        # a selector failing at run time on a device the allocator meets aborts the allocation:
        # on any device reachable from the claim's node (every candidate node of a shared claim)
        taken = {_device_key(ad) for ad in r.alloc.devices}
        sites = [n for n in r.sites if s.NodeName(n) in view.nodes]
        broken = {n: [(k, why) for k, why in dv.matching(view, r.sub, n)[1] if k not in taken] for n in sites}
        if sites and all(broken.values()):
            k, why = broken[sites[0]][0]
            out.append(Violation(rule="device-selector", subject=r.owner[1],
                                 detail=f"{where}: the allocation aborts on node {sites[0]}: device {k} {why}"))
    return out


def check_device_reach(view: _View) -> list[Violation]:
    """Each device is reachable from the pod's node; a shared claim's from every node where
    a pod using it is bound or keeps running."""
    out = []
    dv = view.dra
    for r in dv.resolved:
        for ad in r.alloc.devices:
            dev = dv.devices.get(_device_key(ad))
            if dev is None:
                continue
            for n in r.nodes:
                if s.NodeName(n) in view.nodes and not dv.reaches(view, dev, n):
                    out.append(Violation(rule="device-reach", subject=r.owner[1],
                                         detail=f"{_where(r.alloc.claim, r.alloc.request)}: device {dev.key} "
                                                f"is not reachable from node {n}"))
    return out


def check_device_counts(view: _View) -> list[Violation]:
    """ExactCount: exactly ``count`` devices. All: exactly every device the request may take
    that is reachable from the node the claim is allocated on (at least one); for a shared
    claim, from the node of one of the pods the plan binds."""
    out = []
    dv = view.dra
    for r in dv.resolved:
        got = sorted(_device_key(ad) for ad in r.alloc.devices)
        where = _where(r.alloc.claim, r.alloc.request)
        if not r.sub.all_mode:
            if len(got) != r.sub.count:
                out.append(Violation(rule="device-count", subject=r.owner[1],
                                     detail=f"{where}: {len(got)} devices, the request asks for exactly {r.sub.count}"))
            continue
        sites = [n for n in r.sites if s.NodeName(n) in view.nodes]
        want = {n: dv.matching(view, r.sub, n) for n in sites}
        if not sites or any(w and w == got for w, _ in want.values()):
            continue
        if len(sites) == 1:
            n, (w, _) = sites[0], want[sites[0]]
            if not w:
                detail = f"allocationMode All, but no matching device is reachable from node {n}"
            else:
                missing, extra = sorted(set(w) - set(got)), sorted(set(got) - set(w))
                detail = (f"allocationMode All takes every matching device reachable from node {n}: "
                          + (f"missing {missing}, extra {extra}" if missing or extra else "a device is listed twice"))
        else:
            detail = (f"allocationMode All takes every matching device reachable from the claim's node: "
                      f"no node of {sites} gives exactly {got}")
        out.append(Violation(rule="device-count", subject=r.owner[1], detail=f"{where}: {detail}"))
    return out


def check_device_conflicts(view: _View) -> list[Violation]:
    """No device (unless allowMultipleAllocations) is allocated twice: across the plan, and
    against existing allocations whose claims the plan does not free."""
    out = []
    dv = view.dra
    for key, allocs in dv.users.items():
        dev = dv.devices.get(key)
        if dev is None or dev.allow_multiple:
            continue
        users = [_alloc_name(a) for a in allocs] + [f"ResourceClaim {c} (allocated)" for c in dv.held.get(key, ())]
        if len(users) > 1:
            out.append(Violation(rule="device-conflict", subject=key,
                                 detail=f"allocated {len(users)} times: {'; '.join(users)}"))
    return out


def check_device_constraints(view: _View) -> list[Violation]:
    """matchAttribute: the devices of the listed requests (all when none are listed) share one
    value of the attribute; distinctAttribute: pairwise different values. A device without
    the attribute violates either."""
    out = []
    dv = view.dra
    by_claim: dict[tuple[Owner, str], list[_Resolved]] = defaultdict(list)
    for r in dv.resolved:
        by_claim[r.owner, r.alloc.claim].append(r)
    for (owner, entry), rs in by_claim.items():
        for con in rs[0].claim.spec.constraints:
            covered = [r for r in rs if not con.requests or r.request.name in con.requests or r.sub.name in con.requests]
            devices = [dv.devices[k] for r in covered for k in map(_device_key, r.alloc.devices) if k in dv.devices]
            for kind, attr in (("matchAttribute", con.match_attribute), ("distinctAttribute", con.distinct_attribute)):
                if attr is None:
                    continue
                values: list[tuple[s.Device, s.AttributeValue]] = []
                for dev in devices:
                    v = _attribute(dev, attr)
                    if v is None:
                        out.append(Violation(rule="device-constraint", subject=owner[1],
                                             detail=f"{_where(entry)}: {kind} {attr}: device {dev.key} has no such attribute"))
                    else:
                        values.append((dev, v))
                by_value: dict[tuple[str, object], list[s.Device]] = defaultdict(list)
                for dev, v in values:
                    by_value[_typed(v)].append(dev)
                if kind == "matchAttribute" and len(by_value) > 1:
                    shown = ", ".join(f"{dev.key}={v!r}" for dev, v in values)
                    out.append(Violation(rule="device-constraint", subject=owner[1],
                                         detail=f"{_where(entry)}: {kind} {attr}: the devices differ: {shown}"))
                if kind == "distinctAttribute":
                    for (_, v), devs in by_value.items():
                        if len(devs) > 1:
                            out.append(Violation(rule="device-constraint", subject=owner[1],
                                                 detail=f"{_where(entry)}: {kind} {attr}: devices "
                                                        f"{[d.key for d in devs]} share {v!r}"))
    return out


def _needed_for_devices(view: _View, members: list[s.Pod], prio: int) -> bool:
    """Putting the victim back keeps a claim of it held, and the plan gives one of that
    claim's devices to an owner that may preempt the victim."""
    dv = view.dra
    keys = {p.key for p in members}
    for claim_key in sorted(dv.freed):
        if not keys.intersection(dv.consumers[claim_key]):
            continue
        for ad in dv.state.claims[claim_key].allocation or ():
            dev = dv.devices.get(ad.device)
            if dev is None or dev.allow_multiple:
                continue
            if any(dv.power(view, a) > prio for a in dv.users.get(ad.device, ())):
                return True
    return False
