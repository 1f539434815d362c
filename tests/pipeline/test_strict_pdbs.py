"""The PDB policy. ``strict``, the default of every entry point: no plan evicts more of a
budget's pods than ``status.disruptionsAllowed``, so the Eviction API, which refuses exactly
those evictions (429), never refuses one. ``soft``: a violation is tier 3 of the objective,
placing the gang comes first, as in kube-scheduler's preemption, which deletes its victims.
"""

from __future__ import annotations

import pytest

from solver import api, verify
from solver.core.plan import Plan
from tests import builders
from tests.builders import RACK, node, pdb, pod, pod_group


def _guarded(allowed: int) -> list[object]:
    # two 4-CPU nodes, each full with one guarded pod; a 2-pod gang (minCount 1) of 3 CPU each
    return [node("n1").cpu_m(4000), node("n2").cpu_m(4000),
            pod("db-1").on("n1").cpu_m(3000).priority(1).label("app", "db"),
            pod("db-2").on("n2").cpu_m(3000).priority(1).label("app", "db"),
            pdb("db", allowed, app="db"),
            pod_group("g", 1).priority(100),
            pod("g-0").group("g").cpu_m(3000), pod("g-1").group("g").cpu_m(3000)]


def _plan(objs: list[object], **options: object) -> Plan:
    snap = builders.snapshot(*objs)
    opts = api.PlanOptions(**options)  # type: ignore[arg-type]
    plan = api.plan(snap, opts)
    assert plan.stats["pdbPolicy"] == opts.pdb_policy
    assert verify.verify(snap.facts, snap, plan, strict_pdbs=opts.pdb_policy == "strict") == []
    return plan


def test_soft_placement_comes_before_the_budget() -> None:
    plan = _plan(_guarded(1), pdb_policy="soft")
    assert plan.status == "OPTIMAL"
    assert plan.objective.placed_pods == 2 and plan.objective.pdb_violations == 1
    assert {e.pod for e in plan.evictions} == {"default/db-1", "default/db-2"}


@pytest.mark.parametrize("options", [{}, {"baseline_only": True}, {"decompose": False}], ids=["cp-sat", "greedy",
                                                                                             "monolithic"])
def test_strict_places_what_the_budget_allows(options: dict[str, object]) -> None:
    plan = _plan(_guarded(1), **options)  # strict: the default
    assert plan.objective.placed_pods == 1 and plan.objective.pdb_violations == 0
    assert len(plan.evictions) == 1 and plan.evictions[0].pod in {"default/db-1", "default/db-2"}
    assert plan.workloads[0].satisfied  # minCount 1
    if not options:
        assert plan.status == "OPTIMAL"


@pytest.mark.parametrize("baseline_only", [False, True], ids=["cp-sat", "greedy"])
def test_strict_leaves_the_gang_pending_with_a_reason_when_no_eviction_is_allowed(baseline_only: bool) -> None:
    objs = [node("n1").cpu_m(4000), pod("db-1").on("n1").cpu_m(3000).priority(1).label("app", "db"),
            pdb("db", 0, app="db"), pod_group("g", 1).priority(100), pod("g-0").group("g").cpu_m(3000)]
    plan = _plan(objs, baseline_only=baseline_only)
    assert list(plan.bindings) == []
    assert list(plan.evictions) == []
    assert not plan.workloads[0].satisfied
    why, _, took = plan.workloads[0].reason.partition("; placing it needs")
    assert why.endswith("within the disruptionsAllowed of PodDisruptionBudget default/db (0 allowed)")
    # proven by the strict floor (one gang, one shape): what it would take, in words too
    assert (took == " at least 1 eviction beyond the budgets (PodDisruptionBudget default/db: 1 eviction, "
            "0 allowed, 1 pod evicted, the fewest violations), which pdbPolicy soft allows") is not baseline_only
    soft = _plan(objs, baseline_only=baseline_only, pdb_policy="soft")
    assert [e.pod for e in soft.evictions] == ["default/db-1"] and soft.objective.pdb_violations == 1


def test_strict_in_the_per_rack_decomposition() -> None:
    # rack a's only victim is guarded by an exhausted budget, rack b's costs more: strict takes b
    objs = [node("a1").cpu_m(4000).label(RACK, "a"), node("b1").cpu_m(4000).label(RACK, "b"),
            pod("db").on("a1").cpu_m(3000).priority(1).label("app", "db"),
            pod("web").on("b1").cpu_m(3000).priority(1).cost("50"),
            pdb("db", 0, app="db"), pod_group("g", 1).priority(100).topology(RACK), pod("g-0").group("g").cpu_m(3000)]
    plan = _plan(objs)
    assert plan.status == "OPTIMAL" and "decomposedBy" in plan.stats
    assert [(b.pod, b.node) for b in plan.bindings] == [("default/g-0", "b1")]
    assert [e.pod for e in plan.evictions] == ["default/web"]


def test_the_verifier_flags_a_violation_only_when_strict() -> None:
    snap = builders.snapshot(*_guarded(1))
    soft = api.plan(snap, api.PlanOptions(pdb_policy="soft"))
    assert verify.verify(snap.facts, snap, soft) == []
    assert [(v.rule, v.subject) for v in verify.verify(snap.facts, snap, soft, strict_pdbs=True)] == [("pdb", "default/db")]


def test_a_reason_names_five_budgets_then_counts_the_rest() -> None:
    objs: list[object] = [node("n1").cpu_m(7000)]
    for k in range(7):  # seven 1-CPU pods, each under its own exhausted budget
        objs += [pod(f"app-{k}").on("n1").cpu_m(1000).priority(1).label("app", f"a{k}"), pdb(f"b{k}", 0, app=f"a{k}")]
    objs += [pod_group("g", 1).priority(100), pod("g-0").group("g").cpu_m(3000)]
    plan = _plan(objs)
    why, _, took = plan.workloads[0].reason.partition("; placing it needs")
    assert why.endswith(
        "PodDisruptionBudget default/b0 (0 allowed), default/b1 (0 allowed), default/b2 (0 allowed), "
        "default/b3 (0 allowed), default/b4 (0 allowed) and 2 more")
    # the floor's plan frees 3 CPUs with the fewest budgets broken: three of the seven
    assert plan.workloads[0].would_take is not None and len(plan.workloads[0].would_take.budgets) == 3
    assert took.startswith(" at least 3 evictions beyond the budgets")


def test_an_unknown_policy_is_an_option_error() -> None:
    with pytest.raises(api.OptionError, match="pdb_policy: must be one of strict, soft, got 'hard'"):
        api.PlanOptions(pdb_policy="hard")  # type: ignore[arg-type]


def test_the_naive_model_weighs_a_pod_two_budgets_select_twice() -> None:
    """Two budgets select the same three victims; placing the second pod of the gang takes
    all three, six violations under the soft policy. A pod placed outweighs any number of
    violations (tier 2 before tier 3): the naive model's weight once assumed one budget per
    pod and kept one pod fewer than the product (found by the thorough property profile;
    tests/data/property/)."""
    import json
    from pathlib import Path

    from tests.pipeline.naive import naive_tiers

    data = Path(__file__).resolve().parents[1] / "data" / "property" / "two-budgets-over-the-victims-soft.json"
    snap = builders.snapshot(*json.loads(data.read_text()))
    plan = api.plan(snap, api.PlanOptions(time_limit=30, pdb_policy="soft"))
    assert verify.verify(snap.facts, snap, plan) == []
    want = naive_tiers(snap)
    assert (plan.objective.placed_pods, plan.objective.pdb_violations, plan.objective.evicted_pods) == (2, 6, 3)
    assert (want.placed, want.pdb_violations, want.evicted) == (2, 6, 3)
