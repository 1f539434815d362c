"""The frozen cluster snapshot: the only thing the model builder reads.

Everything here is already converted to integer base units at the edge
(``solver.kube``): CPU in millicores, memory and storage in bytes, every other
resource (``pods``, extended resources) as an integer count. This module must
not import ``kubernetes``, ``grpc`` or do any I/O.

Collections are tuples, and mappings are never mutated after construction.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import NewType

NodeName = NewType("NodeName", str)
PodKey = NewType("PodKey", str)  # "namespace/name"
# a PodGroup's "namespace/name" (the name its pods give), a CompositePodGroup's
# "CompositePodGroup/namespace/name": the API lets the two kinds share a name (group_key)
GroupKey = NewType("GroupKey", str)
PdbKey = NewType("PdbKey", str)  # "namespace/name"

Resources = Mapping[str, int]  # resource name -> amount in base units

POD_GROUP = "PodGroup"
COMPOSITE_POD_GROUP = "CompositePodGroup"
STANDALONE_POD = "Pod"  # a pending pod outside any group is its own one-pod workload



def group_key(kind: str, namespace: str, name: str) -> GroupKey:
    """The key of a PodGroup (``namespace/name``) or a CompositePodGroup
    (``CompositePodGroup/namespace/name``, the kind first as an object is named in messages):
    the two kinds are apart in the API, so one of each may have the same name."""
    return GroupKey(f"{namespace}/{name}" if kind == POD_GROUP else f"{kind}/{namespace}/{name}")


def qualified(kind: str, key: str) -> str:
    """``Kind/namespace/name`` of a group's key, a pod's key or a workload's name (a
    CompositePodGroup's key already carries its kind)."""
    return key if kind == COMPOSITE_POD_GROUP else f"{kind}/{key}"


DEFAULT_SCHEDULER = "default-scheduler"
PREEMPT_LOWER = "PreemptLowerPriority"
PREEMPT_NEVER = "Never"
# Where upstream refuses a pod's volumes (Pod.volume_stage), for the reason's words:
# VolumeBinding's PreFilter, before any node (a claim missing, being deleted, Lost, not bound
# and binding at once): "0/N nodes are available: <why>." and, as the DynamicResources PostFilter
# then finds no state of its own, " not found."
VOLUME_PREFILTER = "prefilter"
# VolumeRestrictions' Filter, per node and resolvable (a ReadWriteOncePod claim another pod uses)
VOLUME_RESTRICTED = "restrictions"
# VolumeBinding's Filter, per node (no volume to bind, a claim bound to a missing volume)
VOLUME_BINDING = "binding"
# a filter plugin's error, which ends the attempt whatever the node: CSI migration could not
# translate one of the pod's inline volumes (NodeVolumeLimits)
VOLUME_ERROR = "error"


@dataclass(frozen=True, slots=True, kw_only=True)
class Taint:
    key: str
    value: str = ""
    effect: str  # NoSchedule | PreferNoSchedule | NoExecute


@dataclass(frozen=True, slots=True, kw_only=True)
class Toleration:
    key: str = ""  # empty with operator Exists tolerates every taint
    operator: str = "Equal"  # Equal | Exists
    value: str = ""
    effect: str = ""  # empty tolerates every effect


@dataclass(frozen=True, slots=True, kw_only=True)
class SelectorRequirement:
    key: str
    operator: str  # In | NotIn | Exists | DoesNotExist | Gt | Lt
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeSelectorTerm:
    """One term of required node affinity: every requirement must hold (AND)."""

    match_expressions: tuple[SelectorRequirement, ...] = ()
    match_fields: tuple[SelectorRequirement, ...] = ()  # only metadata.name upstream


@dataclass(frozen=True, slots=True, kw_only=True)
class LabelSelector:
    """metav1.LabelSelector; an empty selector matches everything."""

    match_labels: Mapping[str, str] = field(default_factory=dict)
    match_expressions: tuple[SelectorRequirement, ...] = ()

    def __hash__(self) -> int:  # a term holding it is a dict key (solver.filters.interpod)
        return hash((tuple(sorted(self.match_labels.items())), self.match_expressions))


@dataclass(frozen=True, slots=True, kw_only=True)
class PodAffinityTerm:
    """One required (anti-)affinity term, namespaces resolved at the edge: ``namespaces`` are
    the listed names, or the owner's own namespace when neither names nor a namespace selector
    are set; ``namespace_selector`` None matches no namespace beyond the names, an empty one
    every namespace. ``selector`` None (unset labelSelector) matches no pod. matchLabelKeys and
    mismatchLabelKeys are merged into ``selector`` (as kube-apiserver does at pod creation)."""

    selector: LabelSelector | None
    namespaces: frozenset[str] = frozenset()
    namespace_selector: LabelSelector | None = None
    topology_key: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SpreadConstraint:
    """A topologySpreadConstraint with whenUnsatisfiable DoNotSchedule (ScheduleAnyway is a
    score only). ``selector`` None matches no pod; matchLabelKeys are merged into it."""

    max_skew: int
    topology_key: str
    selector: LabelSelector | None
    min_domains: int | None = None
    honor_node_affinity: bool = True  # nodeAffinityPolicy Honor (the default)
    honor_node_taints: bool = False  # nodeTaintsPolicy Honor (the default is Ignore)


@dataclass(frozen=True, slots=True, kw_only=True)
class HostPort:
    protocol: str  # TCP (the default) | UDP | SCTP
    ip: str  # hostIP, "0.0.0.0" when unset
    port: int


@dataclass(frozen=True, slots=True, order=True)
class Disk:
    """An inline volume VolumeRestrictions keeps to one pod per node (volume_restrictions.go
    ``isVolumeConflict``): two pods on a node conflict when volumes of one ``source`` share an
    id, unless both mount read-only (an EBS volume conflicts read-only too). An RBD image has
    one id per Ceph monitor (monitor, pool, image), so sharing any monitor is sharing the image."""

    source: str  # gcePersistentDisk | awsElasticBlockStore | iscsi | rbd
    ids: frozenset[str]
    read_only: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Node:
    name: NodeName
    labels: Mapping[str, str]  # topology lives here
    allocatable: Resources  # status.allocatable in base units, `pods` included
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False  # spec.unschedulable
    declared_features: frozenset[str] = frozenset()  # status.declaredFeatures (NodeDeclaredFeatures)
    # NodeVolumeLimits (kube/volumes.py): the CSI drivers its CSINode names, the volumes each may
    # attach (allocatable.count; a driver without one has no limit), and the CSI volumes
    # VolumeAttachments hold on it, as (driver, unique name)
    csi_drivers: frozenset[str] = frozenset()
    volume_limits: Mapping[str, int] = field(default_factory=dict)
    attached_volumes: frozenset[tuple[str, str]] = frozenset()
    # available PersistentVolumes whose node affinity matches this node alone, per storage class:
    # (size, access modes) each (VolumeBinding's static volumes: localpv.py)
    local_volumes: Mapping[str, tuple[tuple[int, frozenset[str]], ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class Pod:
    key: PodKey  # namespace/name
    namespace: str
    name: str
    uid: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    node: NodeName | None = None  # spec.nodeName; None for a pending pod
    requests: Resources  # effective request (init/sidecar rule + overhead), `pods`=1
    group: GroupKey | None = None  # leaf PodGroup from spec.schedulingGroup
    priority: int = 0  # resolved pod priority (spec.priority / PriorityClass)
    preemption_policy: str = PREEMPT_LOWER  # the pod's own policy (used outside groups)
    node_selector: Mapping[str, str] = field(default_factory=dict)
    affinity_terms: tuple[NodeSelectorTerm, ...] = ()  # required node affinity, ORed
    tolerations: tuple[Toleration, ...] = ()
    preemption_cost_milli: int | None = None  # gangplace.io/preemption-cost x 1000
    value: int | None = None  # gangplace.io/value (a standalone pod's worth in the first tier)
    start_time: str = ""  # status.startTime (RFC 3339) or creationTimestamp; for ordering
    has_resource_claims: bool = False  # spec.resourceClaims present (its claims: ClusterSnapshot.dra.pod_claims)
    scheduler_name: str = DEFAULT_SCHEDULER  # spec.schedulerName
    scheduling_gates: tuple[str, ...] = ()  # spec.schedulingGates names: a gated pod is never placed
    # metadata.deletionTimestamp is set: a running one holds its room until it is gone and is
    # never a victim; a pending one is never placed (upstream skips pods being deleted)
    terminating: bool = False
    # terminating because a preemption evicted it: condition DisruptionTarget=True with reason
    # PreemptionByScheduler (upstream's PodTerminatingByPreemption) or EvictionByEvictionAPI
    # (how gangplace's adapter preempts)
    preempted: bool = False
    nominated_node: NodeName | None = None  # status.nominatedNodeName (an ongoing preemption)
    pod_affinity: tuple[PodAffinityTerm, ...] = ()  # required podAffinity terms
    pod_anti_affinity: tuple[PodAffinityTerm, ...] = ()  # required podAntiAffinity terms
    spread: tuple[SpreadConstraint, ...] = ()  # DoNotSchedule topologySpreadConstraints
    host_ports: tuple[HostPort, ...] = ()  # containers' and sidecars' hostPorts
    disks: tuple[Disk, ...] = ()  # inline disks VolumeRestrictions keeps apart (Disk)
    ready: bool = False  # running with condition Ready=True (the Eviction API's "healthy")
    # bound but in phase Pending (not started yet): the Eviction API deletes it without asking
    # any budget (canIgnorePDB, eviction.go)
    starting: bool = False
    # node features the pod needs to be scheduled (NodeDeclaredFeatures, kube/pods.py)
    required_features: tuple[str, ...] = ()
    # its PersistentVolumeClaims (kube/volumes.py): why no node can host it ("" if some can),
    # and per claim the node selector terms one of which a node must match
    volume_block: str = ""
    volume_stage: str = ""  # where upstream refuses them: VOLUME_PREFILTER, _RESTRICTED, _BINDING, _ERROR
    volume_terms: tuple[tuple[NodeSelectorTerm, ...], ...] = ()
    # per entry of volume_terms: the claim's number among the pod's volumes, and the reason a
    # node the entry leaves out is given (a claim's first failing entry counts)
    volume_reasons: tuple[tuple[int, str], ...] = ()
    # VolumeRestrictions' preemption: the running pods holding a ReadWriteOncePod claim of its
    # (it is the first pending pod asking), and their node: upstream's dry run frees the claim
    # only by removing its holder from the node it tries, so the pod may go there alone, once
    # they are evicted (kube/volumes.py); volume_block keeps the words for every other node
    once_holders: tuple[PodKey, ...] = ()
    once_node: NodeName | None = None
    # its claims only node-local volumes serve: (storage class, access modes, size) each (localpv.py)
    local_claims: tuple[tuple[str, frozenset[str], int], ...] = ()
    # such claims other pending pods name too: (claim, storage class, access modes, size) each.
    # The claim binds once, to one volume of one node: every pod naming it goes to that node,
    # and it takes one volume there, not one per pod (localpv.py)
    shared_local: tuple[tuple[str, str, frozenset[str], int], ...] = ()
    # its CSI volumes a node attaches (NodeVolumeLimits), as (driver, unique name), sorted; and
    # the drivers among them whose CSIDriver bars a node whose CSINode lacks them
    csi_volumes: tuple[tuple[str, str], ...] = ()
    csi_required: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True, kw_only=True)
class Group:
    """A PodGroup or a CompositePodGroup: one node of a workload tree."""

    key: GroupKey
    kind: str  # POD_GROUP | COMPOSITE_POD_GROUP
    parent: GroupKey | None = None  # parentCompositePodGroupName, None for a root
    # PodGroup: gang.minCount, None for `basic`. CompositePodGroup: gang.minGroupCount.
    min_count: int | None = None
    topology_key: str | None = None  # schedulingConstraints.topology[0].key
    disruption_all: bool = False  # disruptionMode.all
    priority: int = 0  # resolved spec.priority / priorityClassName
    preemption_policy: str | None = None  # None: not set on this group
    value: int | None = None  # gangplace.io/value, on a root only (its workload's worth in the first tier)

    @property
    def floor(self) -> int:
        """The gang floor: members (pods, or child groups) that must all be placed or running
        together; a `basic` PodGroup (no minCount) needs one."""
        return self.min_count if self.min_count is not None else 1


class WorkloadTree:
    """The CompositePodGroup → PodGroup hierarchy, built once from each group's parent: the one
    place that walks it (kube-scheduler keeps the same in its workload hierarchy tracker). A
    parent not among the groups ends the walk (kube refuses such trees before they get here,
    and a cycle is cut where it closes)."""

    __slots__ = ("_children", "_parent")

    def __init__(self, parents: Mapping[GroupKey, GroupKey | None]) -> None:
        self._parent = dict(parents)
        children: dict[GroupKey, list[GroupKey]] = {}
        for key, parent in sorted(self._parent.items()):
            if parent is not None and parent in self._parent:
                children.setdefault(parent, []).append(key)
        self._children = {k: tuple(v) for k, v in children.items()}

    @classmethod
    def of(cls, groups: Iterable[Group]) -> WorkloadTree:
        return cls({g.key: g.parent for g in groups})

    def children(self, key: GroupKey) -> tuple[GroupKey, ...]:
        return self._children.get(key, ())

    def ancestors(self, key: GroupKey) -> list[GroupKey]:
        """``key`` and every group above it, the root last."""
        out = [key]
        seen = {key}
        while (parent := self._parent.get(out[-1])) is not None and parent in self._parent and parent not in seen:
            out.append(parent)
            seen.add(parent)
        return out

    def root(self, key: GroupKey) -> GroupKey:
        return self.ancestors(key)[-1]

    def subtree(self, key: GroupKey) -> list[GroupKey]:
        """``key`` and every group below it, in preorder (children by name)."""
        out: list[GroupKey] = []
        stack = [key]
        seen: set[GroupKey] = set()
        while stack:
            cur = stack.pop()
            if cur in seen:
                continue
            seen.add(cur)
            out.append(cur)
            stack.extend(reversed(self.children(cur)))
        return out

    def __contains__(self, key: object) -> bool:
        return key in self._parent


@dataclass(frozen=True, slots=True, kw_only=True)
class PodDisruptionBudget:
    key: PdbKey
    namespace: str
    selector: LabelSelector
    disruptions_allowed: int  # status.disruptionsAllowed
    # what the Eviction API reads besides (pkg/registry/core/pod/storage/eviction.go)
    generation: int = 0  # metadata.generation
    observed_generation: int = 0  # status.observedGeneration: older than generation, no eviction it counts
    unhealthy_policy: str = "IfHealthyBudget"  # spec.unhealthyPodEvictionPolicy
    current_healthy: int = 0  # status.currentHealthy
    desired_healthy: int = 0  # status.desiredHealthy

    @property
    def allowed(self) -> int:
        """Evictions it still allows: ``disruptions_allowed``, never below 0 (a budget already
        broken allows none)."""
        return max(0, self.disruptions_allowed)


# ---- DRA (resource.k8s.io/v1) -------------------------------------------------------
# Attribute and capacity names are fully qualified: an unqualified name in a ResourceSlice
# belongs to its driver's domain, so ``attributes["gpu.example.com"]["model"]`` is what CEL
# reads as ``device.attributes["gpu.example.com"].model``. Capacities are base-unit integers.

ClaimKey = NewType("ClaimKey", str)  # "namespace/name"; a per-pod claim from a template: "ns/pod#claim"
DeviceKey = NewType("DeviceKey", str)  # "driver/pool/device"


@dataclass(frozen=True, slots=True)
class Version:
    """A semantic version attribute (``version`` in the API), compared as CEL's semver()."""

    text: str


AttributeValue = bool | int | str | Version


@dataclass(frozen=True, slots=True, kw_only=True)
class CapacityPolicy:
    """A device capacity's ``requestPolicy`` (DRAConsumableCapacity), amounts in milli-units."""

    default: int | None = None
    valid_values: tuple[int, ...] = ()  # ascending
    min: int | None = None  # validRange (min is required when the range is set)
    max: int | None = None
    step: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Consumable:
    """One entry of a device's ``capacity`` as the allocator charges it: under the name as
    written in the slice (a request names it the same way), the value in milli-units."""

    name: str
    value: int
    policy: CapacityPolicy | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Device:
    driver: str
    pool: str
    name: str
    attributes: Mapping[str, Mapping[str, AttributeValue]] = field(default_factory=dict)  # domain -> name -> v
    capacity: Mapping[str, Mapping[str, int]] = field(default_factory=dict)  # domain -> name -> amount
    allow_multiple: bool = False  # allowMultipleAllocations
    taints: tuple[Taint, ...] = ()  # NoSchedule / NoExecute taints keep new claims off
    # DRAPartitionableDevices: (counter set "driver/pool/set", counter, amount) it consumes
    consumes: tuple[tuple[str, str, int], ...] = ()
    # DRAConsumableCapacity: every capacity entry, sorted by name (what a request's capacity
    # must fit, and what a share of an allowMultipleAllocations device uses up)
    consumable: tuple[Consumable, ...] = ()
    # where it is reachable: exactly one of node (node-local), node_selector, all_nodes
    node: NodeName | None = None
    node_selector: tuple[NodeSelectorTerm, ...] = ()
    all_nodes: bool = False

    @property
    def key(self) -> DeviceKey:
        return DeviceKey(f"{self.driver}/{self.pool}/{self.name}")

    def signature(self) -> tuple[object, ...]:
        """What a selector can see: two devices with one signature are interchangeable."""
        return (self.driver, _frozen(self.attributes), _frozen(self.capacity), self.allow_multiple, self.taints)


def _frozen(m: Mapping[str, Mapping[str, object]]) -> tuple[object, ...]:
    return tuple(sorted((d, tuple(sorted(inner.items(), key=lambda kv: kv[0]))) for d, inner in m.items()))


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceClass:
    name: str
    selectors: tuple[str, ...] = ()  # CEL expressions, all must be true
    extended_resource: str = ""  # spec.extendedResourceName: a container request it serves
    created: str = ""  # metadata.creationTimestamp: the newest class wins a shared extended resource


@dataclass(frozen=True, slots=True, kw_only=True)
class SubRequest:
    """``exactly`` or one entry of ``firstAvailable``."""

    name: str  # the request's name, or "request/sub" for a firstAvailable entry
    device_class: str
    selectors: tuple[str, ...] = ()
    all_mode: bool = False  # allocationMode All: every matching device (count ignored)
    count: int = 1
    tolerations: tuple[Toleration, ...] = ()
    # DRAConsumableCapacity: capacity.requests, (name as written, milli-units), sorted
    capacity: tuple[tuple[str, int], ...] = ()
    # DRAAdminAccess (GA): ``exactly.adminAccess``: devices taken whether in use or not, and
    # used up by nobody (upstream: allocateDevice skips the in-use check, and an admin result
    # is "not considered as allocated")
    admin_access: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpectedPod:
    """A pod shape the caller expects to arrive, and its share of arrivals (``PlanOptions.expected``,
    docs/fragmentation.md): the hint keeps the devices it could use unfragmented."""

    name: str  # for messages: "expected[3]" or the name the caller gave
    weight: float  # > 0; shares are the weights over their sum
    requests: tuple[tuple[str, int], ...] = ()  # (resource, canonical amount: cpu in milli), sorted
    device: SubRequest | None = None  # one device request (as a claim's ``exactly``); None: none


@dataclass(frozen=True, slots=True, kw_only=True)
class Request:
    name: str
    alternatives: tuple[SubRequest, ...]  # (exactly,) or firstAvailable in preference order


@dataclass(frozen=True, slots=True, kw_only=True)
class Constraint:
    requests: tuple[str, ...] = ()  # empty: every request of the claim
    match_attribute: str | None = None  # fully qualified "domain/name"
    distinct_attribute: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ClaimSpec:
    requests: tuple[Request, ...]
    constraints: tuple[Constraint, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class AllocationResult:
    request: str
    device: DeviceKey
    share_id: str | None = None  # shareID: one share of an allowMultipleAllocations device
    consumed: tuple[tuple[str, int], ...] = ()  # consumedCapacity, (name, milli-units), sorted
    admin_access: bool = False  # adminAccess: the device is not held by it


@dataclass(frozen=True, slots=True, kw_only=True)
class Claim:
    """A ResourceClaim, or the claim a pending pod's template will create."""

    key: ClaimKey
    namespace: str
    name: str
    spec: ClaimSpec
    allocation: tuple[AllocationResult, ...] | None = None  # status.allocation.devices.results
    allocation_nodes: tuple[NodeSelectorTerm, ...] = ()  # status.allocation.nodeSelector; () = any node
    reserved_pods: tuple[str, ...] = ()  # status.reservedFor pods, "ns/name"
    reserved_groups: tuple[str, ...] = ()  # status.reservedFor podgroups, "ns/name"
    # status.reservedFor consumers that are neither: "resource[.apiGroup]/ns/name"; they never go away
    reserved_other: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class PodClaim:
    """One entry of a pod's spec.resourceClaims, resolved to the claim it uses."""

    name: str  # the entry's name in the pod
    claim: ClaimKey
    shared_by: str | None = None  # "ns/pg" when it is its PodGroup's shared claim


@dataclass(frozen=True, slots=True, kw_only=True)
class DraState:
    """Every device, class and claim of the snapshot; empty without DRA objects."""

    devices: tuple[Device, ...] = ()
    classes: Mapping[str, DeviceClass] = field(default_factory=dict)
    claims: Mapping[ClaimKey, Claim] = field(default_factory=dict)
    pod_claims: Mapping[str, tuple[PodClaim, ...]] = field(default_factory=dict)  # pod key -> its claims
    # DRAPartitionableDevices: counter set "driver/pool/set" -> counter -> amount (sharedCounters)
    counters: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    # every CEL selector read -> (object, field) where it was first read; compiled under the
    # plan's deadline (solver.problem.dra.compile_selectors), not while reading
    selectors: Mapping[str, tuple[str, str]] = field(default_factory=dict)

    def device_by_key(self) -> dict[DeviceKey, Device]:
        return {d.key: d for d in self.devices}


@dataclass(frozen=True, slots=True, kw_only=True)
class WaitingPod:
    """A pending pod left out of the snapshot's pods, as upstream holds it at PreEnqueue: its
    PodGroup, or an ancestor CompositePodGroup, does not exist (yet)."""

    pod: PodKey
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterSnapshot:
    """Nodes, pods, workload trees and budgets, sorted by name. The verifier reads the same
    objects its own way (``solver.reading.Reading`` holds both)."""

    nodes: tuple[Node, ...]
    pods: tuple[Pod, ...]
    groups: tuple[Group, ...] = ()
    pdbs: tuple[PodDisruptionBudget, ...] = ()
    dra: DraState = field(default_factory=DraState)
    # kind -> number of objects read but playing no part (Service, ConfigMap, ...)
    skipped_kinds: Mapping[str, int] = field(default_factory=dict)
    namespace_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # Namespace objects
    waiting: tuple[WaitingPod, ...] = ()  # pending pods of incomplete workloads, sorted by pod
    # what was read but is incomplete and planned around, one sentence naming the object each
    # (a running pod whose PodGroup is gone, a PriorityClass deleted after admission)
    warnings: tuple[str, ...] = ()
    _tree: WorkloadTree | None = field(default=None, init=False, repr=False, compare=False)
    _nodes: Mapping[NodeName, Node] | None = field(default=None, init=False, repr=False, compare=False)

    def node_by_name(self) -> Mapping[NodeName, Node]:
        """Nodes by name, built on first use and shared (read only)."""
        if self._nodes is None:
            object.__setattr__(self, "_nodes", {node.name: node for node in self.nodes})
        assert self._nodes is not None
        return self._nodes

    def group_by_key(self) -> dict[GroupKey, Group]:
        return {group.key: group for group in self.groups}

    @property
    def tree(self) -> WorkloadTree:
        """The workload hierarchy of ``groups``, built on first use."""
        if self._tree is None:
            object.__setattr__(self, "_tree", WorkloadTree.of(self.groups))
        assert self._tree is not None
        return self._tree
