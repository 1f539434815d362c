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


def _zones() -> reading.Reading:
    """Three zones of 32 nodes, 90 % busy under budgets of 5; a CompositePodGroup (zone) of two
    rack gangs of 32: the PDB floors of the zones are 44, 45 and 47 violations."""
    from solver.bench.generate import GenerateSpec, generate

    return reading.read(generate(GenerateSpec(
        nodes=96, pods_per_node=10, utilisation=0.9, gang_pods=0, composite_groups=2, composite_pods=32,
        nodes_per_rack=8, racks_per_block=2, blocks_per_zone=2, seed=1)))


def test_a_zone_the_groundwork_does_not_reach_is_bounded_by_its_floor() -> None:
    """The whole problem's floor gives every zone its own before any zone's groundwork (a zone
    left unreached under a deadline kept the trivial bound: 100 % on the PDB tier at 15,000
    nodes), and a zone whose floor is behind the floor's own plan is pruned without a search."""
    from solver.model import decompose
    from solver.model.bounds import floors
    from solver.model.solve import SolveParams
    from solver.problem.assignment import score
    from solver.problem.build import build_problem

    problem = build_problem(_zones(), pdb_policy="soft")
    key = decompose.root_key(problem)
    assert key is not None
    own = {v: floors.pdb_floor(sub) for v, sub in decompose.split(problem, key).items()}
    assert {v: f.violations for v, f in own.items() if f is not None} == {"z0": 44, "z1": 45, "z2": 47}
    whole = floors.pdb_floor(problem)
    assert whole is not None and {v: f for v, (f, _) in whole.by_domain.items()} == {"z0": 44, "z1": 45, "z2": 47}

    search = decompose._ByDomain(problem, SolveParams(time_limit=60), key)
    search.whole_floor()  # the groundwork's first step, alone
    assert {v: b.pdb_violations for v, b in search.bounds.items()} == {"z0": 44, "z1": 45, "z2": 47}
    assert search.pending[0] == "z0"  # the fewest violations first
    result = search.combined()
    assert result.assignment is not None and result.bound.pdb_violations == 44
    # no domain's search ran: the floor's plan is the plan, and it meets the bound
    assert score(problem, result.assignment).pdb_violations == 44

    search.groundwork()
    pruned = {r["domain"]: r.get("floor") for r in search.reports if r["status"] == "PRUNED"}
    assert pruned == {"z1": 45, "z2": 47}  # behind the floor's plan: no floors, hint or search of their own
    assert set(search.tried) == {"z0"}


def test_the_zones_floors_prove_the_pdb_tier() -> None:
    from solver import api, verify

    snap = _zones()
    plan = api.plan(snap, api.PlanOptions(time_limit=20, pdb_policy="soft"))
    assert verify.verify(snap.facts, snap, plan) == []
    assert plan.objective.gap_tier in ("", "preemptionCost", "evictedPods")
    assert plan.objective.pdb_violations == plan.objective.pdb_violations_bound == 44


def test_a_zone_tied_on_the_pdb_tier_is_priced_even_unsearched() -> None:
    """A zone whose bound leads gets its cost floor at its bound's violations, and the PDB
    floor's evicted pods, without a search of its own (composite-topology-5000's 20 zones tie
    on 12 violations: the one never searched kept a cost bound of 0, a 100 % gap)."""
    from solver.model import decompose
    from solver.model.bounds import floors
    from solver.model.solve import SolveParams
    from solver.problem.build import build_problem

    problem = build_problem(_zones(), pdb_policy="soft")
    key = decompose.root_key(problem)
    assert key is not None
    search = decompose._ByDomain(problem, SolveParams(time_limit=60), key)
    search.whole_floor()
    search.open_cost_floors(set(), stop=lambda: False)
    own = floors.cost_floor(search.subs["z0"], 44)
    assert own is not None and own.cost > 0
    lead = search.bounds["z0"]
    # 44 violations past the four budgets' 5 allowed each: 64 counted pods, each evicted once
    assert (lead.pdb_violations, lead.cost_milli, lead.evicted) == (44, own.cost, 44 + 4 * 5)
