"""What the placement problem is made of: workloads, their pending pod classes, victim units.

A leaf: it imports only the snapshot, so that ``solver.problem.build`` (which builds these)
and ``solver.problem.dra`` (which reads them) both depend on it and not on each other.
Pure: no I/O, no solver.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from solver.core import snapshot as s


@dataclass(frozen=True, slots=True, kw_only=True)
class PodClass:
    """Identical pending pods of one leaf group: same requests, selectors, tolerations. Alike
    standalone pods (same namespace, priority, preemption policy and shape, none nominated)
    are pooled into one class too: each stays its own workload (``Workload.rank``)."""

    index: int  # dense index into Problem.classes
    workload: int  # index into Problem.workloads (a pooled class: its first pod's workload)
    group: s.GroupKey | None  # leaf PodGroup, None for a standalone pod
    pods: tuple[s.Pod, ...]  # sorted by name; decode binds them in this order
    requests: Mapping[str, int]  # per pod, base units, only entries > 0
    priority: int  # the workload's priority
    power: int | None  # may evict victims of strictly lower priority; None: Never


@dataclass(frozen=True, slots=True, kw_only=True)
class Workload:
    """One root of a workload tree with at least one pending pod."""

    index: int
    key: str  # "ns/root" (a group key, or a standalone pod's key)
    kind: str  # kind of the root
    priority: int
    power: int | None
    groups: tuple[s.GroupKey, ...]  # every group of the tree, parents before children
    classes: tuple[int, ...]
    rejected: str = ""  # why admission refused the workload (upstream's message), "" if admitted
    # an earlier preemption for it is still under way: its victims terminate on the nominated
    # nodes of its pods, so it evicts nothing new (power None) and waits for that room
    ongoing: str = ""
    # a standalone pod: the pod, and its place among its class's pods. Each pod of a pooled
    # class is its own workload; the first ``n`` of the class's pods are the ones a plan that
    # places ``n`` of the class binds, so the workload of rank r is satisfied iff n > r
    pod: s.Pod | None = None
    rank: int = 0
    # its worth in the first tier: gangplace.io/value on its root (the pod, or the root group), 1
    # when absent (docs/design.md, "Objective")
    value: int = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class VictimUnit:
    """Running pods evicted all together (a ``disruptionMode: all`` subtree) or one pod."""

    index: int
    key: str  # group key of the `all` ancestor, or the pod key
    members: tuple[s.Pod, ...]
    priority: int  # root group's priority, or the pod's own outside any group
    protected: bool  # member of a workload being planned: never evicted
    cost_milli: int  # sum of members' costs, thousandths
    usage: Mapping[s.NodeName, Mapping[str, int]]  # per node, summed member requests
    pdb_counts: Mapping[s.PdbKey, int]  # members matching each PDB
    start_time: str  # earliest member start


def may_preempt(power: int | None, unit: VictimUnit) -> bool:
    """May a pod of preemption ``power`` (None: policy Never) evict ``unit``? Strictly lower
    priority, and the unit not protected."""
    return not unit.protected and power is not None and unit.priority < power
