"""The placement problem derived from a snapshot: workloads, pod classes, victim units.

This is the structural view that both the CP-SAT builder and the greedy
baseline read, so that they agree on what a class, a workload and a victim are.
Pure: no I/O, no solver.

Decisions where docs/design.md is silent (each mirrors kube-scheduler 1.37 where it
has an opinion):

- A workload's priority and preemptionPolicy are its root group's; a group that
  sets no priority inherits its parent's (see ``solver.kube``). A preemptor
  with ``preemptionPolicy: Never`` has no preemption power at all.
- Running pods that belong to a workload that is itself being planned are never
  victims of this plan: evicting part of a gang one is placing is never useful
  for that gang and would make its running count depend on the plan.
- A pending pod outside any group is a one-pod workload of kind ``Pod``.

Admission, as kube-scheduler 1.37 decides before it tries a workload:

- ``validatePodGroup`` (pkg/scheduler/schedule_one_podgroup.go): every pod of the tree,
  pending and running, has the first pod's schedulerName and the root group's priority;
  with the PodGroupPreemptionPolicy gate on each pod's preemptionPolicy equals the root's,
  with it off (1.37's default) the pods' policies agree. A workload that fails is rejected
  with upstream's message: placed nowhere, evicting nothing.
- The workload's preemption policy is ``resolvePreemptionPolicy`` /
  ``resolveCompositePreemptionPolicy`` (pkg/scheduler/framework/preemption/types.go): the
  root's with the gate on, else Never when any pending pod says Never.
- A pod with ``spec.schedulingGates`` (SchedulingGates PreEnqueue) or being deleted
  (``skipPodSchedule``, pkg/scheduler/schedule_one.go) is never placed: it is ``held``, and
  counts for nothing, so a gang needs minCount pods among the others and its running ones.
- A running pod being deleted is never a victim (it is going already) and holds its room
  until it is gone: its own protected unit.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from solver import cel
from solver.core import snapshot as s
from solver.core.features import FeatureGates
from solver.core.stopping import checkpoint
from solver.filters import attach, localpv, selectors
from solver.filters import interpod as ip
from solver.problem import dra as dra_mod
from solver.problem.workloads import PodClass, VictimUnit, Workload, may_preempt

MILLI = 1000  # preemption costs are held in thousandths
NO_GATES = FeatureGates()  # every gate at its default


# How PodDisruptionBudgets bind a plan, one name for every entry point (CLI --pdb-policy, gRPC
# SolveOptions.pdb_policy, the adapter). "strict" is the default: a plan carried out through the
# Eviction API, which refuses an eviction beyond disruptionsAllowed (429), is never refused.
PdbPolicy = Literal["strict", "soft"]
PDB_POLICIES: tuple[PdbPolicy, ...] = ("strict", "soft")
DEFAULT_PDB_POLICY: PdbPolicy = "strict"


@dataclass(frozen=True, slots=True, kw_only=True)
class Problem:
    snapshot: s.ClusterSnapshot
    nodes: tuple[s.Node, ...]
    groups: Mapping[s.GroupKey, s.Group]
    running_in_group: Mapping[s.GroupKey, Sequence[s.Pod]]  # direct running members of each group
    workloads: tuple[Workload, ...]
    classes: tuple[PodClass, ...]
    units: tuple[VictimUnit, ...]
    units_on_node: Mapping[s.NodeName, Sequence[int]]
    # per class: node -> most pods of the class the node could ever take
    candidates: tuple[Mapping[s.NodeName, int], ...]
    dra: dra_mod.DraProblem
    interpod: ip.InterPod
    vectors: tuple[tuple[bool, ...], ...]  # per class: which matchers its pods match
    # "strict": no eviction beyond a PDB's disruptionsAllowed (a hard rule), as the Eviction API
    # refuses such evictions; "soft": a violation is tier 3, as kube-scheduler's preemption,
    # which deletes its victims (docs/design.md "PodDisruptionBudgets")
    pdb_policy: PdbPolicy = DEFAULT_PDB_POLICY
    gates: FeatureGates = field(default_factory=FeatureGates)
    # a victim's devices go free when it is evicted (gangplace's default); False: they stay held,
    # as upstream 1.37 plans (dynamicresources has no PreFilterExtensions: KEP-5690 is open)
    dra_preemption: bool = True
    # pending pods never placed, with why: scheduling gates, being deleted (sorted by pod)
    held: tuple[tuple[s.PodKey, str], ...] = ()
    # the pods expected to arrive (PlanOptions.expected): the hint places against their
    # fragmentation, equal scores in an order of the nodes drawn from ``seed``
    expected: tuple[s.ExpectedPod, ...] = ()
    seed: int = 0
    # per node with a CSI volume limit: the volumes its pods and VolumeAttachments hold, and
    # those its running pods hold with the pods (attach.py)
    held_volumes: Mapping[s.NodeName, frozenset[attach.Volume]] = field(default_factory=dict)
    volume_holders: Mapping[s.NodeName, Mapping[attach.Volume, tuple[s.PodKey, ...]]] = field(default_factory=dict)
    # a gang no domain of its topology key has room for: (the domain with the most room, the
    # pods it takes there, the pods the gang needs), for its reason
    short_domains: Mapping[s.GroupKey, tuple[str, int, int]] = field(default_factory=dict)
    # class -> the victim units holding a ReadWriteOncePod claim it needs (Pod.once_holders):
    # it may be placed, on their node only, when every one of them is evicted
    once_units: Mapping[int, tuple[int, ...]] = field(default_factory=dict)

    @property
    def strict_pdbs(self) -> bool:
        return self.pdb_policy == "strict"

    # ---- tree queries -------------------------------------------------------------
    @property
    def tree(self) -> s.WorkloadTree:
        return self.snapshot.tree

    def classes_under(self, key: s.GroupKey) -> list[int]:
        return _classes_under(self.tree, self.classes, key)

    def pending_pods(self, workload: Workload) -> int:
        """The pods ``workload`` places when all of it lands: its classes' pods (a standalone pod's
        class may pool its alike pods: one is its own)."""
        if workload.kind == s.STANDALONE_POD:
            return 1
        return sum(len(self.classes[c].pods) for c in workload.classes)

    def running_under(self, key: s.GroupKey) -> list[s.Pod]:
        return _running_under(self.tree, self.running_in_group, key)

    def least_new_pods(self, key: s.GroupKey) -> int:
        """The fewest new pods that can satisfy the group: its floor less its running members,
        or for a CompositePodGroup the sum over its floor's smallest children."""
        group = self.groups[key]
        if group.kind == s.POD_GROUP:
            return max(0, group.floor - len(self.running_in_group.get(key, ())))
        children = sorted(self.least_new_pods(child) for child in self.tree.children(key))
        return sum(children[:group.floor])

    def eligible(self, cls: PodClass, unit: VictimUnit) -> bool:
        """May pods of ``cls`` preempt ``unit``? Strictly lower priority, policy not Never."""
        return may_preempt(cls.power, unit)


def _classes_under(tree: s.WorkloadTree, classes: Sequence[PodClass], key: s.GroupKey) -> list[int]:
    keys = set(tree.subtree(key))
    return [c.index for c in classes if c.group in keys]


def _running_under(tree: s.WorkloadTree, running_in_group: Mapping[s.GroupKey, Sequence[s.Pod]],
                   key: s.GroupKey) -> list[s.Pod]:
    return [p for g in tree.subtree(key) for p in running_in_group.get(g, ())]


def is_running(pod: s.Pod) -> bool:
    return pod.node is not None


def default_cost_milli(priority: int) -> int:
    """docs/design.md: a victim's cost is 1 + max(0, priority) without the annotation."""
    return MILLI * (1 + max(0, priority))


def held_reason(pod: s.Pod) -> str:
    """Why a pending pod is never placed, "" when it may be."""
    if pod.terminating:
        return "being deleted (metadata.deletionTimestamp is set)"
    if pod.scheduling_gates:
        return f"waiting for scheduling gates: [{', '.join(pod.scheduling_gates)}]"
    return ""


# a pending workload's or a victim unit's root: a group tree or a standalone pod, by kind and
# "namespace/name" (a pod and a PodGroup may share a namespace and a name)
GROUP_ROOT, POD_ROOT = "group", "pod"
Root = tuple[str, str]


def root_of(tree: s.WorkloadTree, pod: s.Pod) -> Root:
    """The root of the workload a pending pod belongs to."""
    return (GROUP_ROOT, tree.root(pod.group)) if pod.group else (POD_ROOT, pod.key)


def build_problem(snapshot: s.ClusterSnapshot, *, pdb_policy: PdbPolicy = DEFAULT_PDB_POLICY,
                  gates: FeatureGates = NO_GATES, dra_preemption: bool = True,
                  expected: Sequence[s.ExpectedPod] = (), seed: int = 0) -> Problem:
    dra_mod.compile_selectors(snapshot.dra)
    groups = snapshot.group_by_key()
    tree = snapshot.tree
    running_in_group: dict[s.GroupKey, list[s.Pod]] = defaultdict(list)
    pending_by_root: dict[Root, list[s.Pod]] = defaultdict(list)
    held: list[tuple[s.PodKey, str]] = []
    for pod in snapshot.pods:
        if is_running(pod):
            if pod.group is not None:
                running_in_group[pod.group].append(pod)
        elif why := held_reason(pod):
            held.append((pod.key, why))
        else:
            pending_by_root[root_of(tree, pod)].append(pod)

    preempted_on: dict[s.NodeName, list[s.Pod]] = defaultdict(list)
    for pod in snapshot.pods:
        if pod.node is not None and pod.preempted:
            preempted_on[pod.node].append(pod)
    interpod = ip.collect(snapshot)
    several = dra_mod.pod_shared(snapshot.dra, [p.key for pods in pending_by_root.values() for p in pods])
    workloads, classes = _workloads_and_classes(pending_by_root, groups, tree, running_in_group,
                                                snapshot.dra, gates, preempted_on, interpod, frozenset(several))
    planned_roots = {(GROUP_ROOT if w.kind != s.STANDALONE_POD else POD_ROOT, w.key) for w in workloads}
    units, units_on_node = _victim_units(snapshot, groups, planned_roots, pdb_policy == "strict")
    dra = dra_mod.analyse(snapshot, classes, units, several=several, free_on_eviction=dra_preemption,
                          expected=expected)
    vectors = tuple(interpod.vector(c.pods[0]) for c in classes)
    held_volumes = attach.held(snapshot)
    candidates = _all_candidates(snapshot, workloads, classes, units, units_on_node, dra, interpod, vectors,
                                 held_volumes)
    short = _prune_topology(candidates, snapshot, groups, workloads, classes, running_in_group)
    once = _once_units(classes, units, candidates)
    return Problem(
        short_domains=short,
        once_units=once,
        snapshot=snapshot,
        nodes=snapshot.nodes,
        groups=groups,
        running_in_group=dict(running_in_group),
        workloads=workloads,
        classes=classes,
        units=units,
        units_on_node=units_on_node,
        candidates=tuple(candidates),
        dra=dra,
        interpod=interpod,
        vectors=vectors,
        pdb_policy=pdb_policy,
        gates=gates,
        dra_preemption=dra_preemption,
        held=tuple(held),
        expected=tuple(expected),
        seed=seed,
        held_volumes=held_volumes,
        volume_holders=attach.holders(snapshot) if held_volumes else {},
    )


def _all_candidates(snapshot: s.ClusterSnapshot, workloads: Sequence[Workload], classes: Sequence[PodClass],
                    units: Sequence[VictimUnit], units_on_node: Mapping[s.NodeName, Sequence[int]],
                    dra: dra_mod.DraProblem, interpod: ip.InterPod, vectors: Sequence[tuple[bool, ...]],
                    held_volumes: Mapping[s.NodeName, frozenset[attach.Volume]],
                    ) -> list[dict[s.NodeName, int]]:
    """Per class, its candidate nodes (``_candidate_nodes``) before topology pruning."""
    powers = [c.power for c in classes if c.power is not None]
    strongest = max(powers) if powers else None
    # the same for every class: computed once per node, not once per (class, node)
    fixed = {node.name: _fixed_usage(units, units_on_node.get(node.name, ()), node.name, strongest)
             for node in snapshot.nodes} if classes else {}
    # running pods no plan evicts, with their nodes: their anti-affinity and host ports block for good
    unmoved = _unmoved(snapshot.nodes, units, strongest) \
        if interpod.active or any(selectors.exclusive(c.pods[0]) for c in classes) else []
    # classes that differ only in their group filter the nodes the same way: filter once per shape
    shapes: dict[tuple[object, ...], dict[s.NodeName, int]] = {}
    rejected = {w.index for w in workloads if w.rejected}
    out: list[dict[s.NodeName, int]] = []
    for cls in classes:
        checkpoint("the candidate nodes")
        if cls.workload in rejected:
            out.append({})
            continue
        rep = cls.pods[0]
        shared = tuple(dra.shared[i].slots for i in dra.shared_of_class.get(cls.index, ()))
        shape = (tuple(sorted(cls.requests.items())), tuple(sorted(rep.node_selector.items())),
                 rep.affinity_terms, rep.tolerations, rep.required_features, rep.volume_block, rep.volume_terms,
                 rep.once_holders, rep.once_node, rep.csi_volumes, rep.csi_required, rep.local_claims,
                 rep.shared_local,
                 len(cls.pods), dra.class_slots[cls.index],
                 tuple(dra.pinned.get(cls.index, ())), shared, ip.own_signature(rep), vectors[cls.index])
        if shape not in shapes:
            shapes[shape] = _candidate_nodes(snapshot.nodes, interpod, dra, cls, fixed, unmoved, held_volumes)
        out.append(dict(shapes[shape]))  # a copy: topology pruning edits it per class
    return out


def _once_units(classes: Sequence[PodClass], units: Sequence[VictimUnit],
                candidates: list[dict[s.NodeName, int]]) -> dict[int, tuple[int, ...]]:
    """Per class whose ReadWriteOncePod claim running pods hold (``Pod.once_holders``), their
    victim units; a class that may not preempt each of them (priority, Never, a unit being
    planned) keeps no candidate node, and one that may keeps one pod on their node: the claim
    serves one pod (VolumeRestrictions)."""
    unit_of = {p.key: u.index for u in units for p in u.members}
    out: dict[int, tuple[int, ...]] = {}
    for c in classes:
        holders = c.pods[0].once_holders
        if not holders:
            continue
        found = tuple(sorted({unit_of[h] for h in holders if h in unit_of}))
        if len(found) < len({unit_of.get(h) for h in holders}) or \
                not all(may_preempt(c.power, units[u]) for u in found):
            candidates[c.index].clear()
            continue
        for node in candidates[c.index]:
            candidates[c.index][node] = min(1, candidates[c.index][node])
        out[c.index] = found
    return out


def _claims_signature(pod: s.Pod, dra_state: s.DraState, several: frozenset[s.ClaimKey]) -> tuple[object, ...]:
    out = []
    for pc in dra_state.pod_claims.get(pod.key, ()):
        claim = dra_state.claims[pc.claim]
        # a per-pod claim still to allocate is its spec; a shared or allocated one is itself, and
        # so is one that several pending pods name (``several``: dra.pod_shared)
        ident = claim.key if pc.shared_by or claim.allocation is not None or claim.key in several else claim.spec
        # a pod the claim is reserved for already joins no reservedFor (dra._reserve_caps)
        out.append((pc.name, pc.shared_by, ident, pod.key in claim.reserved_pods))
    return tuple(out)


def class_shape(pod: s.Pod, dra_state: s.DraState, interpod: ip.InterPod,
                several: frozenset[s.ClaimKey] = frozenset()) -> tuple[object, ...]:
    """Everything about a pending pod that the model reads, but its name and group: pods of one
    group with the same shape form one class; sibling groups whose classes have the same shapes
    are interchangeable (constraints/symmetry.py)."""
    return (
        ip.own_signature(pod),
        interpod.vector(pod),
        _claims_signature(pod, dra_state, several),
        tuple(sorted((k, v) for k, v in pod.requests.items() if v > 0)),
        tuple(sorted(pod.node_selector.items())),
        pod.affinity_terms,
        pod.tolerations,
        pod.required_features,
        pod.volume_block,
        pod.volume_stage,
        pod.volume_terms,
        pod.volume_reasons,
        pod.once_holders,
        pod.once_node,
        pod.local_claims,
        pod.shared_local,
        pod.csi_volumes,
        pod.csi_required,
    )


def _class_signature(pod: s.Pod, dra_state: s.DraState, interpod: ip.InterPod,
                     several: frozenset[s.ClaimKey]) -> tuple[object, ...]:
    return (*class_shape(pod, dra_state, interpod, several), pod.group)


def _workloads_and_classes(
    pending_by_root: Mapping[Root, list[s.Pod]],
    groups: Mapping[s.GroupKey, s.Group],
    tree: s.WorkloadTree,
    running_in_group: Mapping[s.GroupKey, list[s.Pod]],
    dra_state: s.DraState,
    gates: FeatureGates,
    preempted_on: Mapping[s.NodeName, list[s.Pod]],
    interpod: ip.InterPod,
    several: frozenset[s.ClaimKey],
) -> tuple[tuple[Workload, ...], tuple[PodClass, ...]]:
    workloads: list[Workload] = []
    classes: list[PodClass] = []
    roots = sorted(pending_by_root, key=lambda r: (r[1], r[0]))
    pools = _standalone_pools([pending_by_root[r][0] for r in roots if r[0] == POD_ROOT],
                              dra_state, interpod, several)
    pooled: dict[int, int] = {}  # id of a pool's pod list -> its class
    for index, root in enumerate(roots):
        pods = sorted(pending_by_root[root], key=lambda p: p.name)
        tag, key = root
        pool, rank = pools.get(pods[0].key, (None, 0)) if tag == POD_ROOT else (None, 0)
        root_group = groups.get(s.GroupKey(key)) if tag == GROUP_ROOT else None
        rejected = ""
        if root_group is not None:
            priority = root_group.priority
            kind = root_group.kind
            under = tree.subtree(root_group.key)
            rejected, policy = admission(root_group, under, pods, running_in_group, gates)
        else:  # a standalone pod
            priority, policy, kind, under = pods[0].priority, pods[0].preemption_policy, s.STANDALONE_POD, []
        ongoing = ongoing_preemption(pods, priority, preempted_on)
        power = None if policy == s.PREEMPT_NEVER or ongoing else priority
        if pool is not None and id(pool) in pooled:  # its pool's class is made already
            class_ids = [pooled[id(pool)]]
        else:
            if pool is not None:  # one of several alike standalone pods: one class for them all
                alike = [pool]
            else:
                by_signature: dict[tuple[object, ...], list[s.Pod]] = {}
                for pod in pods:
                    by_signature.setdefault(_class_signature(pod, dra_state, interpod, several), []).append(pod)
                alike = list(by_signature.values())
            class_ids = []
            for members in alike:
                rep = members[0]
                class_ids.append(len(classes))
                classes.append(
                    PodClass(
                        index=len(classes),
                        workload=index,
                        group=rep.group,
                        pods=tuple(members),
                        requests={k: v for k, v in rep.requests.items() if v > 0},
                        priority=priority,
                        power=power,
                    )
                )
            if pool is not None:
                pooled[id(pool)] = class_ids[0]
        workloads.append(
            Workload(
                index=index, key=key, kind=kind, priority=priority, power=power,
                groups=tuple(under), classes=tuple(class_ids), rejected=rejected, ongoing=ongoing,
                pod=pods[0] if kind == s.STANDALONE_POD else None, rank=rank,
                value=_value(root_group.value if root_group is not None else pods[0].value),
            )
        )
    return tuple(workloads), tuple(classes)


def _value(annotated: int | None) -> int:
    """A workload's worth in the first tier: its root's ``gangplace.io/value``, else 1."""
    return 1 if annotated is None else annotated


def _standalone_pools(pods: Sequence[s.Pod], dra_state: s.DraState, interpod: ip.InterPod,
                      several: frozenset[s.ClaimKey]) -> dict[s.PodKey, tuple[list[s.Pod], int]]:
    """Pending standalone pods (in key order) that pool into one class, each to its pool and its
    place in it (only pools of two or more): the same namespace, priority, preemption policy,
    value and shape (``class_shape``), and no nominated node (a nominated pod's ongoing preemption is its own).
    A ReplicaSet's pending replicas are one class, not one per pod: the model's variables grow
    with nodes x classes (docs/design.md, "Scale")."""
    by_signature: dict[tuple[object, ...], list[s.Pod]] = {}
    for pod in pods:
        if pod.nominated_node is None:
            sig = (pod.namespace, pod.priority, pod.preemption_policy, pod.value,
                   class_shape(pod, dra_state, interpod, several))
            by_signature.setdefault(sig, []).append(pod)
    return {p.key: (pool, rank) for pool in by_signature.values() if len(pool) > 1 for rank, p in enumerate(pool)}


def ongoing_preemption(pending: list[s.Pod], priority: int,
                       preempted_on: Mapping[s.NodeName, list[s.Pod]]) -> str:
    """Why a preemption for these pods is still under way, or "": on a pod's nominated node a
    pod of lower priority is terminating by preemption. Upstream then picks no new victims
    (``isOngoingPreemption``, framework/preemption/podgrouppreemption.go; for a single pod
    ``PodEligibleToPreemptOthers``, plugins/defaultpreemption/default_preemption.go)."""
    for pod in pending:
        if pod.nominated_node is None:
            continue
        going = sorted(p.key for p in preempted_on.get(pod.nominated_node, ()) if p.priority < priority)
        if going:
            return (f"ongoing preemption on nominated node {pod.nominated_node} of {pod.key}: waiting for "
                    f"{', '.join(going)} to terminate")
    return ""


def admission(root: s.Group, tree: list[s.GroupKey], pending: list[s.Pod],
              running_in_group: Mapping[s.GroupKey, list[s.Pod]], gates: FeatureGates) -> tuple[str, str]:
    """(why the workload is refused or "", its preemption policy), as upstream's
    ``validatePodGroup`` and ``resolvePreemptionPolicy``: pending pods first, in tree order and
    by name within a group, then the running ones; the first pod sets the reference."""
    by_group: dict[s.GroupKey, list[s.Pod]] = defaultdict(list)
    for pod in pending:
        if pod.group is not None:
            by_group[pod.group].append(pod)
    ordered = [p for g in tree for p in by_group.get(g, ())]
    ordered += [p for g in tree for p in sorted(running_in_group.get(g, ()), key=lambda p: p.name)]
    root_policy = root.preemption_policy or s.PREEMPT_LOWER
    scheduler = ordered[0].scheduler_name
    first_policy = ordered[0].preemption_policy
    for pod in ordered:
        why = ""
        if pod.scheduler_name != scheduler:
            why = ("all pods in a single pod group should have the same .spec.schedulerName set, "
                   f'got: "{pod.scheduler_name}" and "{scheduler}"')
        elif pod.priority != root.priority:
            why = ("all pods in a single pod group should have the same priority as the pod group's "
                   f"priority, got {pod.priority} and {root.priority}")
        elif gates.pod_group_preemption_policy and pod.preemption_policy != root_policy:
            why = ("all pods in a single pod group should have the same preemption policy as the pod "
                   f"group's preemption policy, got {pod.preemption_policy} and {root_policy}")
        elif not gates.pod_group_preemption_policy and pod.preemption_policy != first_policy:
            why = ("all pods in a single pod group should have the same preemption policy, "
                   f"got {pod.preemption_policy} and {first_policy}")
        if why:
            return f"{root.key}: pod {pod.key}: {why}", s.PREEMPT_LOWER
    if gates.pod_group_preemption_policy:
        return "", root_policy
    never = any(p.preemption_policy == s.PREEMPT_NEVER for p in pending)
    return "", s.PREEMPT_NEVER if never else s.PREEMPT_LOWER


def eviction_api(pod: s.Pod, pdbs: Sequence[s.PodDisruptionBudget]) -> tuple[str, s.PdbKey | None]:
    """What the Eviction API does with a running pod (pkg/registry/core/pod/storage/eviction.go,
    EvictionREST.Create): ``(refusal, counted)``. It matches the budgets of the pod's namespace
    by selector (getPodDisruptionBudgets: an empty selector matches every pod); with more than one
    it refuses (500); a pod that is not Ready is let go without spending its budget when the
    budget says AlwaysAllow, or IfHealthyBudget with currentHealthy ≥ desiredHealthy > 0; any
    other eviction spends one of its budget's disruptionsAllowed (``counted``), and is refused
    (429) while the budget's status is older than its spec (checkAndDecrement). Running as a
    planned eviction only: a terminating pod is never a victim. A pod in phase Pending goes
    without asking any budget (canIgnorePDB)."""
    if pod.starting:
        return "", None
    mine = [b for b in pdbs
            if b.namespace == pod.namespace and selectors.label_selector_matches(b.selector, pod.labels)]
    if len(mine) > 1:
        return f"more than one PodDisruptionBudget ({', '.join(sorted(b.key for b in mine))})", None
    if not mine:
        return "", None
    budget = mine[0]
    if not pod.ready and (budget.unhealthy_policy == "AlwaysAllow" or
                          budget.current_healthy >= budget.desired_healthy > 0):
        return "", None
    if budget.observed_generation < budget.generation:
        return f"PodDisruptionBudget {budget.key} not observed at its generation yet", None
    return "", budget.key


def _victim_units(
    snapshot: s.ClusterSnapshot,
    groups: Mapping[s.GroupKey, s.Group],
    planned_roots: set[Root],
    strict: bool,
) -> tuple[tuple[VictimUnit, ...], dict[s.NodeName, list[int]]]:
    """Walk up from each running pod to its highest `disruptionMode: all` ancestor. Under
    strict budgets a unit counts against a budget what the Eviction API spends, and a unit it
    would refuse is never a victim (``eviction_api``)."""
    # units and roots by kind and name: a pod and a group of one namespace/name are two things
    by_unit: dict[Root, list[s.Pod]] = defaultdict(list)
    unit_priority: dict[Root, int] = {}
    unit_root: dict[Root, Root] = {}
    terminating: set[Root] = set()
    for i, pod in enumerate(snapshot.pods):
        if not i & 1023:
            checkpoint("the victims")
        if not is_running(pod):
            continue
        key: Root  # the unit: the pod, or its highest `disruptionMode: all` group
        top: Root  # the unit's root: its root group, or the pod itself
        if pod.terminating:  # going already: never a victim, its room held until it is gone
            key, priority, top = (POD_ROOT, pod.key), (groups[snapshot.tree.root(pod.group)].priority
                                                       if pod.group else pod.priority), (POD_ROOT, pod.key)
            terminating.add(key)
        elif pod.group is None:
            key, priority, top = (POD_ROOT, pod.key), pod.priority, (POD_ROOT, pod.key)
        else:
            chain = snapshot.tree.ancestors(pod.group)
            all_ancestors = [g for g in chain if groups[g].disruption_all]
            key = (GROUP_ROOT, all_ancestors[-1]) if all_ancestors else (POD_ROOT, pod.key)
            top = (GROUP_ROOT, chain[-1])
            priority = groups[chain[-1]].priority
        by_unit[key].append(pod)
        unit_priority[key] = priority
        unit_root[key] = top
    pdbs = snapshot.pdbs
    budgets = _Budgets(pdbs)
    units: list[VictimUnit] = []
    units_on_node: dict[s.NodeName, list[int]] = defaultdict(list)
    for n, key in enumerate(sorted(by_unit, key=lambda r: (r[1], r[0]))):
        if not n & 255:
            checkpoint("the victims")
        pods = by_unit[key]
        members = tuple(pods) if len(pods) == 1 else tuple(sorted(pods, key=lambda p: p.key))
        priority = unit_priority[key]
        usage: dict[s.NodeName, dict[str, int]] = {}
        for pod in members:
            assert pod.node is not None
            here = usage.setdefault(pod.node, {})
            for res, amount in pod.requests.items():
                here[res] = here.get(res, 0) + amount
        refused = False
        if strict:
            counted: dict[s.PdbKey, int] = defaultdict(int)
            for p in members:
                refusal, budget = eviction_api(p, pdbs)
                refused = refused or bool(refusal)
                if budget is not None:
                    counted[budget] += 1
            pdb_counts = dict(counted)
        else:
            pdb_counts = {}
            for p in members:
                for budget in budgets.of(p):
                    pdb_counts[budget] = pdb_counts.get(budget, 0) + 1
            if len(members) > 1 and len(pdb_counts) > 1:  # in the snapshot's order, as one pod's
                pdb_counts = {pdb.key: pdb_counts[pdb.key] for pdb in pdbs if pdb.key in pdb_counts}
        cost = sum(
            p.preemption_cost_milli if p.preemption_cost_milli is not None else default_cost_milli(priority)
            for p in members
        )
        index = len(units)
        units.append(
            VictimUnit(
                index=index, key=key[1], members=members, priority=priority,
                protected=unit_root[key] in planned_roots or key in terminating or refused, cost_milli=cost,
                usage=usage, pdb_counts=pdb_counts,
                start_time=min(p.start_time for p in members),
            )
        )
        for node in usage:
            units_on_node[node].append(index)
    return tuple(units), dict(units_on_node)


class _Budgets:
    """The budgets whose selector takes a pod, in the snapshot's order, worked out once per
    namespace and set of labels (a cluster's 180,000 pods carry a few hundred)."""

    def __init__(self, pdbs: Sequence[s.PodDisruptionBudget]) -> None:
        self.pdbs = pdbs
        self.seen: dict[tuple[str, frozenset[tuple[str, str]]], tuple[s.PdbKey, ...]] = {}

    def of(self, pod: s.Pod) -> tuple[s.PdbKey, ...]:
        if not self.pdbs:
            return ()
        key = (pod.namespace, frozenset(pod.labels.items()))
        found = self.seen.get(key)
        if found is None:
            found = self.seen[key] = tuple(pdb.key for pdb in self.pdbs if pdb.namespace == pod.namespace
                                           and selectors.label_selector_matches(pdb.selector, pod.labels))
        return found


def _fixed_usage(units: Sequence[VictimUnit], on_node: Sequence[int], node: s.NodeName,
                 power: int | None) -> dict[str, int]:
    """Usage on ``node`` (hosting units ``on_node``) of running pods a preemptor with ``power``
    cannot evict."""
    out: dict[str, int] = defaultdict(int)
    for u in on_node:
        unit = units[u]
        if unit.protected or power is None or unit.priority >= power:
            for res, amount in unit.usage[node].items():
                out[res] += amount
    return out


def _unmoved(nodes: Sequence[s.Node], units: Sequence[VictimUnit], strongest: int | None
             ) -> list[tuple[s.Pod, s.Node]]:
    by_name = {n.name: n for n in nodes}
    return [(p, by_name[p.node]) for u in units if u.protected or strongest is None or u.priority >= strongest
            for p in u.members if p.node is not None]


def _candidate_nodes(
    nodes: Sequence[s.Node], interpod: ip.InterPod, dra: dra_mod.DraProblem, cls: PodClass,
    fixed: Mapping[s.NodeName, Mapping[str, int]], unmoved: Sequence[tuple[s.Pod, s.Node]],
    held_volumes: Mapping[s.NodeName, frozenset[attach.Volume]],
) -> dict[s.NodeName, int]:
    """Nodes where ``cls`` could land, each with the most pods of it the node could take.

    A node is dropped when its labels, taints or schedulability exclude the class,
    or when even after evicting every victim that any preemptor may evict (``fixed``:
    per node, the usage of running pods even the strongest preemptor may not evict),
    one pod does not fit. Not only the class's own victims:
    room freed for a stronger preemptor may be used by any pod once it is free.
    Worked example: allocatable cpu 8000m, a pod nobody may evict using 3000m, a class
    requesting 2000m cpu -> floor((8000 - 3000) / 2000) = 2 pods at most.
    """
    rep = cls.pods[0]
    out: dict[s.NodeName, int] = {}
    if dra.active and _dra_aborts(dra, cls, nodes):
        return out
    if any(cls.index in cap.classes and cap.room == 0 for cap in dra.reserve_caps):
        return out  # a claim it names is reserved for as many consumers as it may be (PreFilter)
    relevant = [(q, n) for q, n in unmoved if rep.pod_anti_affinity or q.pod_anti_affinity or selectors.exclusive(q)]
    shut = ip.blocked(interpod, rep, relevant) if relevant else set()
    checks = bool(shut or rep.pod_affinity or rep.spread)
    for i, node in enumerate(nodes):
        if not i & 255:
            checkpoint("the candidate nodes")
        if not selectors.statically_feasible(rep, node):
            continue
        if rep.csi_volumes and attach.refuses(node, held_volumes.get(node.name, frozenset()), rep.csi_volumes):
            continue  # NodeVolumeLimits: its own new volumes pass a limit (evictions free none: attach.py)
        if checks and not ip.node_allowed(rep, node, shut):
            continue
        most = 1 if selectors.pods_clash(rep, rep) else len(cls.pods)  # one pod per host port (or disk) and node
        if rep.local_claims:  # a volume of the node's own for each claim (localpv.py)
            most = min(most, localpv.room(node, rep) or 0)
        if rep.shared_local and not localpv.shared_room(node, rep):
            continue  # a claim it shares finds no volume of the node's own
        for res, amount in cls.requests.items():
            free = node.allocatable.get(res, 0) - fixed[node.name].get(res, 0)
            most = min(most, max(0, free) // amount)
        if most > 0 and dra.active:
            most = _device_most(dra, cls, node.name, most)
        if most > 0:
            out[node.name] = most
    return out


def _dra_aborts(dra: dra_mod.DraProblem, cls: PodClass, nodes: Sequence[s.Node]) -> bool:
    """Whether upstream's allocator may meet a selector failing at run time for a pod of
    ``cls`` (``Slot.broken``): on a node the filters before DynamicResources could leave it,
    here the nodes its static filters admit and whose allocatable holds its requests. The
    error aborts the pod's scheduling, so the class is placed nowhere. (Upstream meets the
    device only if it tries it, so this refuses more than upstream; never less.)"""
    broken = frozenset[s.NodeName]().union(*(b for sl in _dra_slots(dra, cls) for b in sl.broken))
    return bool(broken) and any(node.name in broken and _reaches_dra(cls, node) for node in nodes)


def _dra_slots(dra: dra_mod.DraProblem, cls: PodClass) -> list[dra_mod.Slot]:
    """The class's own claims' slots and its group's shared claims'."""
    return list(dra.class_slots[cls.index]) + [sl for i in dra.shared_of_class.get(cls.index, ())
                                               for sl in dra.shared[i].slots]


def _reaches_dra(cls: PodClass, node: s.Node) -> bool:
    """Whether the filters before DynamicResources could leave ``node`` to a pod of ``cls``, as
    far as the snapshot says: its static filters admit it and its allocatable holds the pod."""
    return selectors.statically_feasible(cls.pods[0], node) and all(
        node.allocatable.get(r, 0) >= a for r, a in cls.requests.items())


def dra_abort_reason(problem: Problem, cls: PodClass) -> str:
    """What upstream's Filter error says when ``_dra_aborts``: the first device (by key) a
    node past the other filters reaches whose selector fails at run time; "" when none."""
    nodes = [n for n in problem.nodes if _reaches_dra(cls, n)]
    state = problem.snapshot.dra
    for sl in _dra_slots(problem.dra, cls):
        for sub, broken in zip(sl.request.alternatives, sl.broken, strict=True):
            near = [n for n in nodes if n.name in broken]
            dclass = state.classes.get(sub.device_class)
            if not near or dclass is None:
                continue
            for dev in sorted(state.devices, key=lambda d: d.key):
                if not any(dra_mod.reaches(dev, n) for n in near) or (
                        dev.key in problem.dra.in_use_for_good and not sub.admin_access):
                    continue  # the allocator skips a device in use before its selectors
                for owner, exprs in ((f"class {dclass.name}", dclass.selectors),
                                     (f"claim {sl.claim_entry}", sub.selectors)):
                    for i, expr in enumerate(exprs):
                        try:
                            if not cel.selects(expr, dev):
                                break
                        except cel.CelRuntimeError as exc:
                            return (f'running "DynamicResources" filter plugin: {owner}: selector #{i} on device '
                                    f"{dev.key}: CEL runtime error: {exc.reason}")
                    else:
                        continue
                    break
    return ""


def _device_most(dra: dra_mod.DraProblem, cls: PodClass, node: s.NodeName, most: int) -> int:
    """``most`` cut by devices: the class's own claims, its pinned allocations, and its group's
    shared claims (which must be reachable from the node at all)."""
    if any(node not in allowed for allowed in dra.pinned.get(cls.index, ())):
        return 0
    by_devices = dra.most_on(dra.class_slots[cls.index], node)
    if by_devices is not None:
        most = min(most, by_devices)
    for i in dra.shared_of_class.get(cls.index, ()):
        if dra.most_on(dra.shared[i].slots, node) == 0:
            return 0
    return most


def topology_groups(problem: Problem) -> list[s.Group]:
    return _topology_groups(problem.workloads, problem.groups)


def _topology_groups(workloads: Sequence[Workload], groups: Mapping[s.GroupKey, s.Group]) -> list[s.Group]:
    return [groups[g] for w in workloads for g in w.groups if groups[g].topology_key is not None]


def fixed_domain(problem: Problem, group: s.Group) -> tuple[bool, str | None]:
    """(possible, value): the domain running members fix, if any.

    Not possible when running members sit on nodes without the label or in two domains.
    """
    return _fixed_domain(problem.snapshot.node_by_name(), problem.running_under(group.key), group)


def _fixed_domain(nodes: Mapping[s.NodeName, s.Node], running: Sequence[s.Pod],
                  group: s.Group) -> tuple[bool, str | None]:
    key = group.topology_key
    assert key is not None
    values = set()
    for pod in running:
        node = nodes.get(pod.node) if pod.node else None
        value = node.labels.get(key) if node else None
        if value is None:
            return False, None
        values.add(value)
    if len(values) > 1:
        return False, None
    return True, (values.pop() if values else None)


def _prune_topology(candidates: list[dict[s.NodeName, int]], snapshot: s.ClusterSnapshot,
                    groups: Mapping[s.GroupKey, s.Group], workloads: Sequence[Workload],
                    classes: Sequence[PodClass], running_in_group: Mapping[s.GroupKey, Sequence[s.Pod]]
                    ) -> dict[s.GroupKey, tuple[str, int, int]]:
    """Drop, per class in place, the candidate nodes its topology-constrained groups cannot use;
    for each gang no domain has room for, the domain with the most and how much it takes."""
    short: dict[s.GroupKey, tuple[str, int, int]] = {}
    labels = {n.name: n.labels for n in snapshot.nodes}
    nodes = snapshot.node_by_name()
    for group in _topology_groups(workloads, groups):
        key = group.topology_key
        assert key is not None
        possible, fixed = _fixed_domain(nodes, _running_under(snapshot.tree, running_in_group, group.key), group)
        under = _classes_under(snapshot.tree, classes, group.key)
        for c in under:
            cand = candidates[c]
            for node in list(cand):
                value = labels[node].get(key)
                if not possible or value is None or (fixed is not None and value != fixed):
                    del cand[node]
        if group.kind == s.POD_GROUP and group.min_count is not None:
            need = group.min_count - len(running_in_group.get(group.key, ()))
            room: dict[str, int] = defaultdict(int)
            for c in under:
                for node, most in candidates[c].items():
                    room[labels[node][key]] += most
            too_small = {v for v, total in room.items() if total < need}
            if too_small == set(room) and need > 0:
                best = max(sorted(room), key=lambda v: room[v], default="")
                short[group.key] = (best, room.get(best, 0), need)
            for c in under:
                cand = candidates[c]
                for node in [n for n in cand if labels[n][key] in too_small]:
                    del cand[node]
    return short
