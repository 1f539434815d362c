"""The independent plan checker: the specification, written without the model.

``verify(facts, snapshot, plan)`` recomputes every rule of docs/design.md from its own
reading of the objects (``facts``: ``read.read(objects)``, made beside the snapshot by
``solver.reading``), the snapshot and the plan, and returns every violation it finds. It
imports nothing of kube, the filters, the problem, the baseline, the model or the plan
(import-linter enforces this, indirect imports included): a bug in the aggregated model cannot
hide behind the same bug here. It shares only the snapshot's types and the CEL runtime
(``solver.cel``) that evaluates DRA selectors.

One ``check_*`` function per rule; each returns ``list[Violation]``.

The package: ``violation`` (what a check returns), ``view`` (the snapshot and plan, indexed
once), ``rules`` (the core rules), ``dra`` (the DRA rules) and this module (``verify``: every
rule in turn).
"""

from __future__ import annotations

from solver.core import snapshot as s
from solver.core.features import FeatureGates
from solver.core.plan import Plan
from solver.core.stopping import checkpoint
from solver.verify.dra import (
    Owner,
    check_allocated_claims,
    check_claim_reservations,
    check_device_allocations,
    check_device_capacity,
    check_device_conflicts,
    check_device_constraints,
    check_device_counters,
    check_device_counts,
    check_device_reach,
    check_devices,
)
from solver.verify.read import Facts
from solver.verify.rules import (
    check_admission,
    check_bindings,
    check_capacity,
    check_evictions,
    check_gangs,
    check_host_ports,
    check_objective,
    check_pdbs_strict,
    check_pod_affinity,
    check_pod_anti_affinity,
    check_static_volumes,
    check_topology,
    check_topology_spread,
    check_victims_necessary,
    check_volume_limits,
    check_volume_restrictions,
    satisfied_roots,
)
from solver.verify.view import DEFAULT_GATES, View
from solver.verify.violation import NEVER, Violation

__all__ = [
    "NEVER",
    "Facts",
    "Owner",
    "View",
    "Violation",
    "check_admission",
    "check_allocated_claims",
    "check_bindings",
    "check_capacity",
    "check_claim_reservations",
    "check_device_allocations",
    "check_device_capacity",
    "check_device_conflicts",
    "check_device_constraints",
    "check_device_counters",
    "check_device_counts",
    "check_device_reach",
    "check_devices",
    "check_evictions",
    "check_gangs",
    "check_host_ports",
    "check_objective",
    "check_pdbs_strict",
    "check_pod_affinity",
    "check_pod_anti_affinity",
    "check_static_volumes",
    "check_topology",
    "check_topology_spread",
    "check_victims_necessary",
    "check_volume_limits",
    "check_volume_restrictions",
    "satisfied_roots",
    "verify",
]


def verify(facts: Facts, snapshot: s.ClusterSnapshot, plan: Plan, *, strict_pdbs: bool = False,
           gates: FeatureGates = DEFAULT_GATES, dra_preemption: bool = True) -> list[Violation]:
    """Every rule the plan breaks, judged on the verifier's own ``facts`` of the objects the
    snapshot was read from; with ``strict_pdbs`` a PDB violation is one too. ``gates`` are
    the scheduler's feature gates the plan was made under; without ``dra_preemption`` no
    evicted pod's devices go free."""
    view = View(facts, snapshot, plan, gates, dra_preemption, strict_pdbs)
    out: list[Violation] = []
    if strict_pdbs:
        out.extend(check_pdbs_strict(view))
    for check in (check_bindings, check_admission, check_pod_anti_affinity, check_pod_affinity,
                  check_topology_spread, check_host_ports, check_volume_restrictions, check_volume_limits,
                  check_static_volumes, check_evictions, check_capacity,
                  check_victims_necessary,
                  check_gangs,
                  check_topology, check_objective, check_device_allocations, check_allocated_claims,
                  check_claim_reservations,
                  check_devices, check_device_reach, check_device_counts, check_device_conflicts,
                  check_device_constraints, check_device_counters, check_device_capacity):
        checkpoint("verifying")
        out.extend(check(view))
    return out
