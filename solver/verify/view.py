"""The snapshot and plan, indexed once: what every rule reads."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from solver.core import snapshot as s
from solver.core.features import FeatureGates
from solver.core.plan import Plan
from solver.verify import read
from solver.verify.dra import DraView
from solver.verify.violation import NEVER

DEFAULT_GATES = FeatureGates()  # frozen: one instance serves every default



POD_ROOT = "Pod/"  # prefixes a standalone pod's key as its root (``View.root``)

class View:
    """The snapshot and plan, indexed once."""

    def __init__(self, facts: read.Facts, snapshot: s.ClusterSnapshot, plan: Plan,
                 gates: FeatureGates = DEFAULT_GATES, dra_preemption: bool = True, strict_pdbs: bool = False) -> None:
        self.snapshot = snapshot
        self.facts = facts
        self.node_facts = self.facts.nodes
        self._requests: dict[int, dict[str, int]] = {}
        self.strict_pdbs = strict_pdbs  # evictions go through the Eviction API (and count as it spends)
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
        self.dra = DraView(self)

    def spec(self, pod: s.Pod) -> read.PodFacts:
        """What the verifier read from the pod's own object."""
        return self.facts.pods[pod.key]

    def req(self, pod: s.Pod) -> dict[str, int]:
        """The pod's effective request as the verifier reads it (read only)."""
        facts = self.facts.pods[pod.key]
        out = self._requests.get(id(facts))
        if out is None:
            out = self._requests[id(facts)] = dict(facts.requests)
        return out

    def labels(self, pod: s.Pod) -> Mapping[str, str]:
        return self.facts.labels[pod.key]

    def chain(self, group: s.GroupKey) -> list[s.GroupKey]:
        out = []
        cur: s.GroupKey | None = group
        while cur:
            out.append(cur)
            cur = self.groups[cur].parent
        return out

    def root(self, pod: s.Pod) -> str:
        """The root group's "namespace/name", or ``Pod/namespace/name`` for a pod outside any
        group: a pod and a PodGroup may share a namespace and a name, and "Pod" is never a
        namespace (namespaces are lower-case DNS labels)."""
        return self.chain(pod.group)[-1] if pod.group else POD_ROOT + pod.key

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
            never = any(p.preemption_policy == s.PREEMPT_NEVER for p in pending)
            policy = s.PREEMPT_NEVER if never else s.PREEMPT_LOWER
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
        if root.startswith(POD_ROOT):
            return self.pods[s.PodKey(root.removeprefix(POD_ROOT))].priority
        return self.groups[s.GroupKey(root)].priority

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
