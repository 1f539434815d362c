"""Why one pod of a class finds no node, in kube-scheduler's words.

kube-scheduler tells a pending pod why in its ``PodScheduled`` condition: each node's first
failing Filter plugin, counted by reason (``FitError.Error``, framework/types.go), then what
preemption found (``preemption: ...``, defaultpreemption's PostFilter):

    0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 2 Insufficient cpu.
    preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption
    victims found for incoming pod.

``Diagnoser.diagnose`` builds that for one pod of a class on the cluster as the snapshot has
it (every running pod in place, nothing of the plan placed), with the filters of the default
profile in its order and each plugin's own reason strings:

- NodeUnschedulable, TaintToleration, NodeAffinity: unresolvable (preemption cannot help);
- NodePorts, NodeResourcesFit (every insufficient resource, ``Too many pods`` for the pod
  count): resolvable;
- NodeVolumeLimits (a CSI driver the node lacks, a volume limit passed): resolvable;
- VolumeBinding: unresolvable;
- PodTopologySpread: a node without the key is unresolvable, a skew past maxSkew resolvable;
- InterPodAffinity: the pod's own affinity unresolvable, anti-affinity either way resolvable;
- NodeDeclaredFeatures, DynamicResources: unresolvable (as 1.37 returns them).

The preemption part is upstream's (preemption.Evaluator.findCandidates, SelectVictimsOnNode):
a node refused unresolvably (NodeResourcesFit too: a request over the node's allocatable) is
``Preemption is not helpful for scheduling``; a node without a pod of lower priority is ``No
preemption victims found for incoming pod``; a node where even evicting every such pod
leaves the pod out repeats the filter's reasons; a node where it would fit (the class is a
candidate there, problem.py ``_candidate_nodes``) ends the histogram: the pod would preempt,
and the plan's own reason says why it did not (budgets, the gang, the tiers). A pod that may
not preempt says ``not eligible due to preemptionPolicy=Never.``

``Diagnoser.diagnose_after`` does the same on the cluster as the plan leaves it (its pods
placed, its victims gone), for a pod that fits some node alone but not beside the plan's
other pods: upstream's queue tried it after them, so its words are about that cluster. A
node's victims there are the running pods it may preempt that the plan keeps, and the pods
the plan places at a lower priority (upstream may preempt a pod it bound before).

The reasons read the greedy's state (``baseline.state.State``) for the running pods' requests,
devices and inter-pod rules, so they judge a node as the baseline does. Pure: no I/O.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from solver.baseline.greedy import state_of
from solver.baseline.state import State
from solver.core import snapshot as s
from solver.core.stopping import checkpoint
from solver.filters import attach, localpv, selectors
from solver.problem.assignment import Assignment
from solver.problem.build import Problem
from solver.problem.workloads import PodClass

UNSCHEDULABLE = "node(s) were unschedulable"  # nodeunschedulable.ErrReasonUnschedulable
TAINTS = "node(s) had untolerated taint(s)"  # tainttoleration Filter
NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"  # nodeaffinity.ErrReasonPod
PORTS = "node(s) didn't have free ports for the requested pod ports"  # nodeports.ErrReason
TOO_MANY_PODS = "Too many pods"  # noderesources fit.go
DISK = "node(s) had no available disk"  # volumerestrictions ErrReasonDiskConflict
VOLUME_LIMIT = "node(s) exceed max volume count"  # nodevolumelimits ErrReasonMaxVolumeCountExceeded
SPREAD = "node(s) didn't match pod topology spread constraints"  # podtopologyspread ErrReasonConstraintsNotMatch
SPREAD_LABEL = SPREAD + " (missing required label)"  # ErrReasonNodeLabelNotMatch
AFFINITY = "node(s) didn't match pod affinity rules"  # interpodaffinity ErrReasonAffinityRulesNotMatch
ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"  # ErrReasonAntiAffinityRulesNotMatch
EXISTING_ANTI = "node(s) didn't satisfy existing pods anti-affinity rules"  # ErrReasonExistingAntiAffinity...
FEATURES = "node(s) didn't match Pod's required features"  # nodedeclaredfeatures
CLAIMS = "cannot allocate all claims"  # dynamicresources Filter
UNAVAILABLE_CLAIM = "resourceclaim not available on the node"  # the Filter: an allocation elsewhere
NO_VICTIMS = "No preemption victims found for incoming pod"  # defaultpreemption
NOT_HELPFUL = "Preemption is not helpful for scheduling"  # preemption.Evaluator
NEVER = "not eligible due to preemptionPolicy=Never."  # PodEligibleToPreemptOthers

# past this many (class, node) checks in one plan, a reason names no filters: they are made
# while decoding, inside the plan's reserve of time (about 10 µs a check: half a second at most)
CHECK_BUDGET = 50_000


def insufficient(resource: str) -> str:
    return TOO_MANY_PODS if resource == "pods" else f"Insufficient {resource}"


def histogram(total: int, reasons: Counter[str]) -> str:
    """``0/N nodes are available: ...`` with upstream's order (the "count reason" strings sorted)."""
    parts = sorted(f"{n} {reason}" for reason, n in reasons.items())
    return f"0/{total} nodes are available: {', '.join(parts)}." if parts else f"0/{total} nodes are available."


@dataclass(frozen=True, slots=True)
class Diagnosis:
    total: int  # nodes in the cluster
    fits: int  # nodes where one pod fits as the cluster is
    after_preemption: int  # of the others, nodes where it would fit once the pods it may evict are gone
    reasons: Counter[str]  # each refusing node's reasons (one node may give several: resources)
    preemption: Counter[str]  # NO_VICTIMS / NOT_HELPFUL per refusing node
    never: bool = False  # the pod may not preempt (preemptionPolicy Never)

    def message(self) -> str:
        """kube-scheduler's FitError for the pod: "" when some node takes it as things are."""
        if self.fits:
            return ""
        text = histogram(self.total, self.reasons)
        if self.never:
            text += f" preemption: {NEVER}"
        elif not self.after_preemption:
            text += f" preemption: {histogram(self.total, self.preemption)}"
        return text


class Diagnoser:
    """Diagnoses per class shape, made on first use and kept for one plan's reasons."""

    def __init__(self, problem: Problem, assignment: Assignment | None = None) -> None:
        self.problem = problem
        self.assignment = assignment  # the plan's, for diagnose_after
        self.checks = 0
        self._state: State | None = None
        self._after: State | None = None
        self._memo: dict[int, Diagnosis | None] = {}
        self._memo_after: dict[int, Diagnosis | None] = {}

    def diagnose(self, c: int) -> Diagnosis | None:
        """One pod of class ``c`` on every node; None past the plan's ``CHECK_BUDGET``."""
        if c not in self._memo:
            if not self._spend():
                return None
            if self._state is None:
                self._state = State(self.problem)
            self._memo[c] = self._diagnose(self._state, self.problem.classes[c], self._before)
        return self._memo[c]

    def diagnose_after(self, c: int) -> Diagnosis | None:
        """``diagnose`` on the cluster as the plan leaves it; None without a plan or past the
        plan's ``CHECK_BUDGET``."""
        if self.assignment is None:
            return None
        if c not in self._memo_after:
            if not self._spend():
                return None
            if self._after is None:
                self._after = state_of(self.problem, self.assignment)
            self._memo_after[c] = self._diagnose(self._after, self.problem.classes[c], self._after_plan)
        return self._memo_after[c]

    def _spend(self) -> bool:
        """Count one diagnosis's checks against ``CHECK_BUDGET``: False when past it."""
        if self.checks + len(self.problem.nodes) > CHECK_BUDGET:
            return False
        self.checks += len(self.problem.nodes)
        return True

    def _diagnose(self, state: State, cls: PodClass,
                  preempting: Callable[[State, PodClass, s.Node, list[str]], list[str] | None]) -> Diagnosis:
        """The filters' reasons per node; where preemption could resolve them, ``preempting``
        says what evicting every pod it may evict there leaves: None, no such pod; [], room
        (the pod would preempt there); else the filters' reasons again."""
        reasons: Counter[str] = Counter()
        preemption: Counter[str] = Counter()
        fits = after = 0
        for i, node in enumerate(self.problem.nodes):
            if not i & 255:
                checkpoint("the reasons")
            why, resolvable = _refusal(state, cls, node)
            if not why:
                fits += 1
                continue
            reasons.update(why)
            if not resolvable:
                preemption[NOT_HELPFUL] += 1
            elif (left := preempting(state, cls, node, why)) is None:
                preemption[NO_VICTIMS] += 1
            elif not left:
                after += 1
            else:
                preemption.update(left)
        return Diagnosis(total=len(self.problem.nodes), fits=fits, after_preemption=after, reasons=reasons,
                         preemption=preemption, never=cls.power is None)

    def _before(self, state: State, cls: PodClass, node: s.Node, why: list[str]) -> list[str] | None:
        """On the snapshot: the pod would fit once its victims are gone where the class is a
        candidate (problem.py ``_candidate_nodes``); elsewhere the filters say why again."""
        problem = self.problem
        if not any(problem.eligible(cls, problem.units[u]) for u in problem.units_on_node.get(node.name, ())):
            return None
        if node.name in problem.candidates[cls.index]:
            return []
        return _short(cls, node, state.held_by(cls.power or 0).get(node.name, {})) or why

    def _after_plan(self, state: State, cls: PodClass, node: s.Node, why: list[str]) -> list[str] | None:
        """As the plan leaves the cluster: the victims are the running pods it may preempt that
        the plan keeps and the pods the plan places at a lower priority; the rest holds room."""
        problem = self.problem
        kept: Counter[str] = Counter()  # what the pods it may not preempt hold there
        victims = False
        for u in problem.units_on_node.get(node.name, ()):
            if u in state.evicted:
                continue
            if problem.eligible(cls, problem.units[u]):
                victims = True
            else:
                kept.update(problem.units[u].usage.get(node.name, {}))
        for c, n in state.placed[node.name].items():
            if cls.power is not None and problem.classes[c].priority < cls.power:
                victims = True
            else:
                kept.update({r: v * n for r, v in problem.classes[c].requests.items()})
        return _short(cls, node, kept) if victims else None


# VolumeBinding's reasons in the order FindPodVolumes lists them (binder.go); VolumeZone's, a
# later plugin, only when VolumeBinding passes
_BINDING_ORDER = ("node(s) didn't match PersistentVolume's node affinity",
                  "node(s) didn't find available persistent volumes to bind",
                  "node(s) did not have enough free storage")


def _volume_reasons(pod: s.Pod, node: s.Node) -> list[str]:
    """Why the pod's claims leave ``node`` out: each claim's first entry the node fails gives
    its reason (kube/volumes.py), VolumeBinding's together, VolumeZone's alone after them."""
    failed: dict[int, str] = {}
    for terms, (claim, why) in zip(pod.volume_terms, pod.volume_reasons, strict=True):
        if claim not in failed and not any(selectors.term_matches(t, node) for t in terms):
            failed[claim] = why
    binding = sorted({w for w in failed.values() if w in _BINDING_ORDER}, key=_BINDING_ORDER.index)
    return binding or sorted(set(failed.values()))


def _ports_clash(a: s.Pod, b: s.Pod) -> bool:
    return selectors.host_ports_clash(a.host_ports, b.host_ports)


def _disks_clash(a: s.Pod, b: s.Pod) -> bool:
    return selectors.disks_clash(a.disks, b.disks)


def _refusal(state: State, cls: PodClass, node: s.Node) -> tuple[list[str], bool]:
    """The first refusing filter's reasons for one pod of ``cls`` on ``node`` (none: it fits),
    and whether preemption could resolve them."""
    pod = cls.pods[0]
    named = selectors.named_nodes(pod)
    if named is not None and node.name not in named:  # NodeAffinity's PreFilter left it out
        return ["node(s) didn't satisfy plugin(s) [NodeAffinity]"], False
    if node.unschedulable and not any(selectors.tolerates(t, selectors.UNSCHEDULABLE_TAINT) for t in pod.tolerations):
        return [UNSCHEDULABLE], False
    if not selectors.taints_tolerated(pod, node):  # the unschedulable taint is tolerated if we are here
        return [TAINTS], False
    if not selectors.affinity_matches(pod, node):
        return [NODE_AFFINITY], False
    rules = state.rules
    if pod.host_ports and not rules.ports_ok(cls, node, _ports_clash):
        return [PORTS], True
    short = _short(cls, node, {r: state.used(node.name, r) for r in cls.requests})
    if short:  # unresolvable when the node could not hold the pod even empty (fit.go)
        return short, all(node.allocatable.get(res, 0) >= amount for res, amount in cls.requests.items())
    if pod.disks and not rules.ports_ok(cls, node, _disks_clash):
        return [DISK], True
    if pod.volume_stage == s.VOLUME_RESTRICTED:  # VolumeRestrictions: a ReadWriteOncePod claim in use
        return [pod.volume_block], True
    if pod.csi_volumes:  # NodeVolumeLimits (attach.py), resolvable as upstream returns it
        missing = sorted(pod.csi_required - node.csi_drivers)
        if missing:
            return [f"{missing[0]} CSI driver is not installed on the node"], True
        if attach.refuses(node, state.problem.held_volumes.get(node.name, frozenset()), pod.csi_volumes):
            return [VOLUME_LIMIT], True
    if pod.volume_block:  # VolumeBinding's Filter (its PreFilter's and errors are the whole reason: decode.py)
        return [pod.volume_block], False
    if pod.local_claims and not localpv.room(node, pod, [  # no volume of the node's own left for a claim
            (state.problem.classes[c].pods[0], n) for c, n in state.placed.get(node.name, {}).items()]):
        return ["node(s) didn't find available persistent volumes to bind"], False
    if pod.shared_local and state.shared_elsewhere(cls, node.name):  # the claim binds with a pod placed elsewhere
        return ["node(s) didn't match PersistentVolume's node affinity"], False
    if not selectors.volumes_reachable(pod, node):
        return _volume_reasons(pod, node), False
    if pod.spread:
        if any(c.topology_key not in node.labels for c in pod.spread):
            return [SPREAD_LABEL], False
        if not rules.spread_ok(cls, node):
            return [SPREAD], True
    if pod.pod_affinity and not rules.affinity_ok(cls, node):
        return [AFFINITY], False
    if rules.active:
        if not rules.own_anti_ok(cls, node):
            return [ANTI_AFFINITY], True
        if not rules.existing_anti_ok(cls, node):
            return [EXISTING_ANTI], True
    if not selectors.features_declared(pod, node):
        return [FEATURES], False
    if _claim_elsewhere(state.problem, pod, node):
        return [UNAVAILABLE_CLAIM], False
    if state.problem.dra.active and (state.problem.dra.class_slots[cls.index]
                                     or state.problem.dra.shared_of_class.get(cls.index)) \
            and state.device_room(cls, node.name, 1) == 0:
        return [CLAIMS], False
    return [], False


def _claim_elsewhere(problem: Problem, pod: s.Pod, node: s.Node) -> bool:
    """One of the pod's claims is allocated already and its allocation's node selector leaves
    ``node`` out: DynamicResources' Filter names the claim unavailable there (not a failed
    allocation)."""
    if not pod.has_resource_claims:
        return False
    for entry in problem.snapshot.dra.pod_claims.get(pod.key, ()):
        claim = problem.snapshot.dra.claims.get(entry.claim)
        if claim is not None and claim.allocation is not None and claim.allocation_nodes and \
                not any(selectors.term_matches(t, node) for t in claim.allocation_nodes):
            return True
    return False


def _short(cls: PodClass, node: s.Node, used: Mapping[str, int]) -> list[str]:
    """NodeResourcesFit's reasons with ``used`` taken on ``node``."""
    return [insufficient(res) for res, amount in _fit_order(cls.requests)
            if node.allocatable.get(res, 0) - used.get(res, 0) < amount]


def _fit_order(requests: Mapping[str, int]) -> list[tuple[str, int]]:
    """NodeResourcesFit's order: pods, cpu, memory, ephemeral-storage, then the others by name."""
    first = ("pods", "cpu", "memory", "ephemeral-storage")
    return [(r, requests[r]) for r in first if r in requests] + sorted(
        (r, a) for r, a in requests.items() if r not in first)
