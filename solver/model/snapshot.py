"""The frozen cluster snapshot: the only thing the model builder reads.

Everything here is already converted to integer base units at the edge
(``solver.kube``): CPU in millicores, memory and storage in bytes, every other
resource (``pods``, extended resources) as an integer count. This module must
not import ``kubernetes``, ``grpc`` or do any I/O.

Collections are tuples, and mappings are never mutated after construction.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NewType

NodeName = NewType("NodeName", str)
PodKey = NewType("PodKey", str)  # "namespace/name"
GroupKey = NewType("GroupKey", str)  # "namespace/name" of a PodGroup or CompositePodGroup
PdbKey = NewType("PdbKey", str)  # "namespace/name"

Resources = Mapping[str, int]  # resource name -> amount in base units

POD_GROUP = "PodGroup"
COMPOSITE_POD_GROUP = "CompositePodGroup"
STANDALONE_POD = "Pod"  # a pending pod outside any group is its own one-pod workload

PREEMPT_LOWER = "PreemptLowerPriority"
PREEMPT_NEVER = "Never"


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


@dataclass(frozen=True, slots=True, kw_only=True)
class Node:
    name: NodeName
    labels: Mapping[str, str]  # topology lives here
    allocatable: Resources  # status.allocatable in base units, `pods` included
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False  # spec.unschedulable


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
    start_time: str = ""  # status.startTime (RFC 3339) or creationTimestamp; for ordering
    has_resource_claims: bool = False  # spec.resourceClaims present (DRA: issue 4)


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


@dataclass(frozen=True, slots=True, kw_only=True)
class PodDisruptionBudget:
    key: PdbKey
    namespace: str
    selector: LabelSelector
    disruptions_allowed: int  # status.disruptionsAllowed


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterSnapshot:
    """Nodes, pods, workload trees and budgets, sorted by name."""

    nodes: tuple[Node, ...]
    pods: tuple[Pod, ...]
    groups: tuple[Group, ...] = ()
    pdbs: tuple[PodDisruptionBudget, ...] = ()
    # kind -> number of objects read but playing no part (Service, ConfigMap, ...)
    skipped_kinds: Mapping[str, int] = field(default_factory=dict)

    def node_by_name(self) -> dict[NodeName, Node]:
        return {node.name: node for node in self.nodes}

    def group_by_key(self) -> dict[GroupKey, Group]:
        return {group.key: group for group in self.groups}
