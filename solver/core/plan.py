"""The placement plan: docs/design.md's JSON as frozen types. Types only, no logic
beyond serialisation, so that the verifier can read plans without importing
anything of the model builder.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import total_ordering
from typing import Any

OPTIMAL, FEASIBLE, INFEASIBLE, UNKNOWN, INVALID = "OPTIMAL", "FEASIBLE", "INFEASIBLE", "UNKNOWN", "INVALID"
# every plan's JSON starts with these; a field removed or retyped needs a new version (docs/design.md)
API_VERSION, KIND = "gangplace.io/v1alpha1", "Plan"


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupVerdict:
    name: str
    kind: str
    placed_pods: int  # pods this plan binds in the group (its subtree for a composite)
    running_pods: int  # members already running (subtree for a composite)
    min_count: int | None  # minCount / minGroupCount; None for basic
    satisfied: bool
    domain: Mapping[str, str] = field(default_factory=dict)  # {topologyKey: value}


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetNeed:
    """One PodDisruptionBudget a workload would have to break: ``needed`` of its pods evicted
    where ``allowed`` (status.disruptionsAllowed) may go."""

    budget: str  # namespace/name
    allowed: int
    needed: int


@dataclass(frozen=True, slots=True, kw_only=True)
class WouldTake:
    """What placing a workload strict budgets leave out would take: at least
    ``violations_at_least`` evictions beyond the budgets' allowance (a proven floor), and a plan
    placing it under soft budgets that breaks ``budgets`` and evicts ``evictions`` pods
    (``proven`` when that plan meets the floor: no plan placing it breaks fewer)."""

    violations_at_least: int
    budgets: tuple[BudgetNeed, ...] = ()
    evictions: int = 0
    proven: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"violationsAtLeast": self.violations_at_least, "evictions": self.evictions, "proven": self.proven,
                "budgets": [{"budget": b.budget, "allowed": b.allowed, "needed": b.needed} for b in self.budgets]}


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkloadVerdict:
    name: str
    kind: str
    priority: int
    satisfied: bool
    reason: str
    groups: tuple[GroupVerdict, ...]
    proven: bool = False  # unsatisfied, and no plan can satisfy it (the bound says so, or its own objects)
    would_take: WouldTake | None = None  # strict: the budgets that keep it out, when they were proven to


@dataclass(frozen=True, slots=True, kw_only=True)
class Held:
    """A pending pod the plan leaves pending whatever the room: gated, being deleted, or its
    workload incomplete (a PodGroup or CompositePodGroup it needs does not exist)."""

    pod: str
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Binding:
    pod: str
    node: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Eviction:
    pod: str
    node: str
    cost: float
    group: str  # the victim unit's `all` group, or the pod's own group, or ""


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanDevice:
    driver: str
    pool: str
    device: str
    share_id: str = ""  # one share of an allowMultipleAllocations device (the result's shareID)
    consumed: tuple[tuple[str, str], ...] = ()  # consumedCapacity: (name, quantity), sorted
    admin_access: bool = False  # taken for an adminAccess request (the result's adminAccess)

    def to_dict(self) -> dict[str, Any]:
        """The allocation result's device fields (``request`` aside)."""
        out: dict[str, Any] = {"driver": self.driver, "pool": self.pool, "device": self.device}
        if self.share_id:
            out["shareID"] = self.share_id
        if self.consumed:
            out["consumedCapacity"] = dict(self.consumed)
        if self.admin_access:
            out["adminAccess"] = True
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceAllocation:
    """The devices one request of one claim gets. ``pod`` for a per-pod claim (the pod's own
    claim entry name in ``claim``); ``pod_group`` (and ``pod`` empty) for a PodGroup's shared
    claim. ``request`` is the request's name, or "request/sub" for a firstAvailable entry."""

    pod: str = ""
    pod_group: str = ""
    claim: str
    request: str
    devices: tuple[PlanDevice, ...]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"podGroup": self.pod_group} if self.pod_group else {"pod": self.pod}
        out.update({"claim": self.claim, "request": self.request,
                    "devices": [d.to_dict() for d in self.devices]})
        return out


@total_ordering
@dataclass(frozen=True, slots=True)
class Tiers:
    """A plan's five tiers, and their order: the one place it is defined (docs/design.md
    "Objective"; ``objective.stages`` optimises them in this order). A plan is better than
    another when its tiers compare greater: more satisfied workloads, priority by priority from
    the highest; then more pods placed; then fewer PDB violations; then a lower preemption
    cost; then fewer evicted pods; last, below the five, earlier ``firstAvailable`` entries
    (the sum of the ranks of the entries taken, 0 when every claim gets its first usable one).

    The same type carries a plan's bound: the best tiers any plan can reach, lexicographically
    (``OPTIMAL`` exactly when a plan's tiers equal it)."""

    satisfied: tuple[tuple[int, int], ...] = ()  # (priority, workloads satisfied), highest first
    placed: int = 0
    pdb_violations: int = 0
    cost_milli: int = 0
    evicted: int = 0
    first_available: int = 0

    def _key(self) -> tuple[tuple[tuple[int, int], ...], int, int, int, int, int]:
        return (self.satisfied, self.placed, -self.pdb_violations, -self.cost_milli, -self.evicted,
                -self.first_available)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Tiers):
            return NotImplemented
        return self._key() < other._key()

    @property
    def head(self) -> Tiers:
        """Tiers 1-3 (satisfied, placed, PDB violations): what is decided before the cost."""
        return Tiers(self.satisfied, self.placed, self.pdb_violations)


# the tiers as the plan's objective names them, in Tiers' order (gapTier is one of them)
TIER_NAMES = ("satisfiedWorkloads", "placedPods", "pdbViolations", "preemptionCost", "evictedPods", "firstAvailable")


@dataclass(frozen=True, slots=True, kw_only=True)
class Objective:
    """Each tier's value and its proven bound: the best any plan can reach, lexicographically
    (a tier after the first one not proven has its trivial bound). ``gap`` is the relative gap
    of the first tier not proven, ``gap_tier`` its name ("" when every tier is proven)."""

    satisfied_workloads: int
    satisfied_by_priority: Mapping[int, int]
    placed_pods: int
    pdb_violations: int
    preemption_cost: float
    evicted_pods: int
    preemption_cost_bound: float
    gap: float
    first_available: int = 0
    satisfied_bound: int = 0
    satisfied_by_priority_bound: Mapping[int, int] = field(default_factory=dict)
    placed_bound: int = 0
    pdb_violations_bound: int = 0
    evicted_pods_bound: int = 0
    first_available_bound: int = 0
    gap_tier: str = ""

    @property
    def tiers(self) -> Tiers:
        return Tiers(tuple(sorted(self.satisfied_by_priority.items(), reverse=True)), self.placed_pods,
                     self.pdb_violations, round(self.preemption_cost * 1000), self.evicted_pods,
                     self.first_available)


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    status: str
    workloads: tuple[WorkloadVerdict, ...]
    bindings: tuple[Binding, ...]
    evictions: tuple[Eviction, ...]
    objective: Objective
    stats: Mapping[str, Any]
    device_allocations: tuple[DeviceAllocation, ...] = ()
    held: tuple[Held, ...] = ()  # sorted by pod
    warnings: tuple[str, ...] = ()  # incomplete objects planned around (snapshot.warnings)

    def to_dict(self) -> dict[str, Any]:
        o = self.objective
        return {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "status": self.status,
            "workloads": [
                {
                    "name": w.name, "kind": w.kind, "priority": w.priority,
                    "satisfied": w.satisfied, "reason": w.reason, "proven": w.proven,
                    **({"wouldTake": w.would_take.to_dict()} if w.would_take is not None else {}),
                    "groups": [
                        {"name": g.name, "kind": g.kind, "placedPods": g.placed_pods,
                         "runningPods": g.running_pods, "minCount": g.min_count,
                         "satisfied": g.satisfied, "domain": dict(g.domain)}
                        for g in w.groups
                    ],
                }
                for w in self.workloads
            ],
            "bindings": [{"pod": b.pod, "node": b.node} for b in self.bindings],
            "evictions": [{"pod": e.pod, "node": e.node, "cost": e.cost, "group": e.group} for e in self.evictions],
            "deviceAllocations": [d.to_dict() for d in self.device_allocations],
            "heldPods": [{"pod": h.pod, "reason": h.reason} for h in self.held],
            "warnings": list(self.warnings),
            "objective": {
                "satisfiedWorkloads": o.satisfied_workloads,
                "satisfiedByPriority": {str(p): n for p, n in sorted(o.satisfied_by_priority.items(), reverse=True)},
                "placedPods": o.placed_pods,
                "pdbViolations": o.pdb_violations,
                "preemptionCost": o.preemption_cost,
                "evictedPods": o.evicted_pods,
                "firstAvailable": o.first_available,
                "satisfiedBound": o.satisfied_bound,
                "satisfiedByPriorityBound": {str(p): n for p, n in
                                             sorted(o.satisfied_by_priority_bound.items(), reverse=True)},
                "placedBound": o.placed_bound,
                "pdbViolationsBound": o.pdb_violations_bound,
                "preemptionCostBound": o.preemption_cost_bound,
                "evictedPodsBound": o.evicted_pods_bound,
                "firstAvailableBound": o.first_available_bound,
                "gap": o.gap,
                "gapTier": o.gap_tier,
            },
            "stats": dict(self.stats),
        }


