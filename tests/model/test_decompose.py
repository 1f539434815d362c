"""Per-domain branch and bound: exact, and pruning by the solver's own proof."""

from __future__ import annotations

import pytest

from solver import reading
from tests.builders import RACK, node, pdb, pod, pod_group
from tests.pipeline.conftest import run_plan


def _racks() -> list:
    objs: list = []
    for rack, cost in (("ra", "30"), ("rb", "5"), ("rc", "12")):
        objs.append(node(f"{rack}-n").rack(rack).cpu_m(4000))
        objs.append(pod(f"{rack}-victim").on(f"{rack}-n").cpu_m(3000).priority(1).cost(cost).label("app", rack))
    objs += [pod_group("g", 2).topology(RACK).priority(100),
             pod("g-0").group("g").cpu_m(1000), pod("g-1").group("g").cpu_m(1000)]
    return objs


def test_cheapest_domain_wins_and_the_others_are_pruned() -> None:
    plan, out = run_plan(*_racks())
    assert plan.status == "OPTIMAL"
    assert out["stats"]["decomposedBy"] == {"key": RACK, "domains": 3}
    assert {b.node for b in plan.bindings} == {"rb-n"}
    assert [e.pod for e in plan.evictions] == ["default/rb-victim"]
    assert plan.objective.preemption_cost == 5.0 == plan.objective.preemption_cost_bound
    statuses = {s["domain"]: s["status"] for s in out["stats"]["stages"]}
    assert statuses == {"rb": "OPTIMAL", "rc": "PRUNED", "ra": "PRUNED"}


def test_pdb_tier_prunes_before_the_cost_tier() -> None:
    # the cheap rack's victim is under an exhausted budget: the PDB tier decides first
    plan, _ = run_plan(*_racks(), pdb("b", 0, app="rb"))
    assert plan.status == "OPTIMAL"
    assert {b.node for b in plan.bindings} == {"rc-n"}
    assert plan.objective.pdb_violations == 0 and plan.objective.preemption_cost == 12.0


def test_monolithic_model_agrees() -> None:
    whole, out = run_plan(*_racks(), decompose=False)
    assert "decomposedBy" not in out["stats"]
    assert whole.status == "OPTIMAL" and {b.node for b in whole.bindings} == {"rb-n"}


def test_optimal_is_never_claimed_for_a_worse_plan_under_any_time_limit() -> None:
    from solver import api, verify
    from solver.bench.generate import GenerateSpec, generate

    snap = reading.read(generate(GenerateSpec(nodes=250, pods_per_node=9, gang_pods=64)))
    reference = api.plan(snap, api.PlanOptions(time_limit=120))
    assert reference.status == "OPTIMAL"
    for limit in (0.3, 0.8, 2.0):
        plan = api.plan(snap, api.PlanOptions(time_limit=limit))
        assert verify.verify(snap.facts, snap, plan) == []
        assert plan.objective.tiers <= reference.objective.tiers
        if plan.status == "OPTIMAL":
            assert plan.objective.tiers == reference.objective.tiers
        assert plan.objective.preemption_cost_bound <= plan.objective.preemption_cost


def test_a_stop_set_before_the_plan_starts_ends_it_at_the_first_checkpoint() -> None:
    """The stop means the caller has gone: no phase runs on, and no plan is made."""
    import threading

    from solver.core.stopping import Stopped

    stop = threading.Event()
    stop.set()
    with pytest.raises(Stopped, match="stopped during reading"):
        run_plan(*_racks(), stop=stop)
