"""The independent plan checker: the specification, written without the model.

``verify(snapshot, plan)`` recomputes every rule of DESIGN.md from the
snapshot and the plan alone and returns every violation it finds. It must not
import the model builder, its variables, the greedy baseline or
``solver.model.problem`` (import-linter enforces this): a bug in the
aggregated model cannot hide behind the same bug here. It shares only the
snapshot types and the label/taint predicates of ``solver.model.selectors``.

One ``check_*`` function per rule; each returns ``list[Violation]``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from solver.model import selectors
from solver.model import snapshot as s
from solver.model.plan import Plan

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

    def __init__(self, snapshot: s.ClusterSnapshot, plan: Plan) -> None:
        self.snapshot = snapshot
        self.plan = plan
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

    def planned_roots(self) -> set[str]:
        return {self.root(p) for p in self.snapshot.pods if p.node is None}

    def priority_of_root(self, root: str) -> int:
        group = self.groups.get(s.GroupKey(root))
        return group.priority if group else self.pods[s.PodKey(root)].priority

    def power(self, pod: s.Pod) -> float:
        """Preemption power of a pending pod: its workload's priority, -inf for Never."""
        root = self.root(pod)
        group = self.groups.get(s.GroupKey(root))
        policy = (group.preemption_policy or s.PREEMPT_LOWER) if group else pod.preemption_policy
        return NEVER if policy == s.PREEMPT_NEVER else self.priority_of_root(root)

    def victim_priority(self, pod: s.Pod) -> int:
        return self.groups[self.chain(pod.group)[-1]].priority if pod.group else pod.priority

    def victim_unit(self, pod: s.Pod) -> str:
        if not pod.group:
            return pod.key
        tops = [g for g in self.chain(pod.group) if self.groups[g].disruption_all]
        return tops[-1] if tops else pod.key

    def is_running(self, pod: s.Pod) -> bool:
        return pod.node is not None

    def running_after(self, pod: s.Pod) -> bool:
        return self.is_running(pod) and pod.key not in self.evicted


def verify(snapshot: s.ClusterSnapshot, plan: Plan) -> list[Violation]:
    view = _View(snapshot, plan)
    out: list[Violation] = []
    for check in (check_bindings, check_evictions, check_capacity, check_victims_necessary, check_gangs,
                  check_topology, check_objective):
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
        if not selectors.statically_feasible(pod, node):
            out.append(Violation(rule="binding", subject=b.pod, detail=f"node {b.node} fails selector/affinity/taints"))
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
    those may preempt it (kube-scheduler evicts only victims it cannot reprieve)."""
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
    evicted_by_pdb = defaultdict(int)
    for pdb in view.snapshot.pdbs:
        for key in view.evicted:
            pod = view.pods.get(s.PodKey(key))
            if pod and pod.namespace == pdb.namespace and selectors.label_selector_matches(pdb.selector, pod.labels):
                evicted_by_pdb[pdb.key] += 1
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
