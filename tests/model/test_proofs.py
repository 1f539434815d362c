"""Honest proofs: every tier compared (firstAvailable included), a bound for every tier, strict
budgets proven, and the time limit bounding the whole plan.

The three firstAvailable shapes are the ones a differential check found claimed OPTIMAL when
they were not (issue 28): a domain that needs no eviction pruned as if its firstAvailable stage
were the PDB stage, the ideal shortcut ignoring firstAvailable, and two domains tied on tiers
1-5 kept in order without comparing it. Every node has 2 GPUs, so the claim's first entry (2
GPUs) is usable everywhere; on a node where a pod that cannot be preempted holds one of them,
only the second entry (1 GPU) fits: rank 1 there.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver import api, verify
from solver.core.plan import OPTIMAL, BudgetNeed, Tiers, WouldTake
from solver.model import objective
from solver.service import convert as grpc_convert
from tests.builders import RACK, node, pdb, pod, pod_group, snapshot
from tests.dra_builders import (
    DRIVER,
    claim,
    claim_template,
    device_class,
    first_available,
    gpu_slice,
    request,
    with_claims,
)

GPU_CLASS = device_class("gpu", f'device.driver == "{DRIVER}"')
TEMPLATE = claim_template("fa", first_available("gpu", request("two", count=2), request("one", count=1)))


def _gang(*, pods: int = 1) -> list[Any]:
    objs: list[Any] = [pod_group("g", pods).topology(RACK).priority(100), GPU_CLASS, TEMPLATE]
    objs += [with_claims(pod(f"g-{i}").group("g").cpu_m(1000).priority(100), gpu="fa") for i in range(pods)]
    return objs


def _held(name: str) -> list[Any]:
    """gpu-0 of node ``name`` held for good by a pod of a higher priority than the gang's."""
    held = claim(f"{name}-held", request("gpu"), allocated=[(name, "gpu-0")], node=name, reserved_for=[f"{name}-vip"])
    return [held, with_claims(pod(f"{name}-vip").on(name).cpu_m(500).priority(1000), gpu=f"claim:{name}-held")]


def _rack(rack: str, held: bool, victim_cost: str | None) -> list[Any]:
    objs: list[Any] = [node(f"{rack}-n").rack(rack).cpu_m(4000), gpu_slice(f"{rack}-n", 2)]
    if held:
        objs += _held(f"{rack}-n")
    if victim_cost is not None:  # the node is busy: the gang's pod needs this victim gone
        objs.append(pod(f"{rack}-victim").on(f"{rack}-n").cpu_m(3500).priority(1).cost(victim_cost).label("app", rack))
    return objs


def _plan(*objs: Any, **options: Any) -> tuple[Any, dict[str, Any]]:
    snap = snapshot(*objs)
    opts = api.PlanOptions(**{"time_limit": 30, **options})
    plan = api.plan(snap, opts)
    assert verify.verify(snap.facts, snap, plan, strict_pdbs=opts.pdb_policy == "strict") == []
    return plan, plan.to_dict()


@pytest.mark.parametrize("decomposed", [True, False])
def test_a_domain_that_needs_no_eviction_is_not_pruned_by_its_first_available_stage(decomposed: bool) -> None:
    # rack ra: the first entry, but one eviction (cost 2); rack rb: no eviction, the second entry
    plan, out = _plan(*_rack("ra", False, "2"), *_rack("rb", True, None), *_gang(), decompose=decomposed)
    assert ("decomposedBy" in out["stats"]) is decomposed
    assert plan.status == OPTIMAL
    assert {b.node for b in plan.bindings} == {"rb-n"} and plan.evictions == ()
    assert (plan.objective.preemption_cost, plan.objective.first_available) == (0.0, 1)
    assert plan.objective.gap_tier == ""


def test_the_ideal_shortcut_compares_first_available_too() -> None:
    # the hint packs the fuller node, where only the second entry fits; the emptier one takes
    # the first: a plan at tiers 1-5's ideal is not optimal while another takes the first entry
    full = [node("n0").cpu_m(4000), gpu_slice("n0", 2), *_held("n0")]
    plan, out = _plan(*full, node("n1").cpu_m(4000), gpu_slice("n1", 2), GPU_CLASS, TEMPLATE,
                      with_claims(pod("p").cpu_m(1000).priority(100), gpu="fa"))
    assert out["stats"]["solver"] == "cp-sat"  # not "baseline-at-ideal"
    assert plan.status == OPTIMAL and [b.node for b in plan.bindings] == ["n1"]
    assert plan.objective.first_available == 0


def test_domains_tied_on_every_other_tier_are_told_apart_by_first_available() -> None:
    # the same eviction cost in both racks; ra (sorted first) only has the second entry
    plan, _ = _plan(*_rack("ra", True, "3"), *_rack("rb", False, "3"), *_gang())
    assert plan.status == OPTIMAL
    assert {b.node for b in plan.bindings} == {"rb-n"}
    assert (plan.objective.preemption_cost, plan.objective.first_available) == (3.0, 0)


def test_stage_cutoffs_key_on_the_kind_not_the_position() -> None:
    assert [k.value for k in objective.StageKind] == [
        "workloads+pods", "workloads", "pdbViolations", "preemptionCost+evictedPods", "preemptionCost",
        "evictedPods", "firstAvailable"]
    from solver.core.plan import Tiers as T  # the tier every kind decides is one of Tiers' fields
    fields = set(T.__dataclass_fields__)
    assert all(set(tiers) <= fields for tiers in objective.STAGE_TIERS.values())


def _budgeted_racks(allowed: int) -> list[Any]:
    """Two racks, each one node busy with a budgeted victim; a 2-pod gang needs one rack."""
    objs: list[Any] = [pdb("keep", allowed, app="batch")]
    for rack in ("ra", "rb"):
        objs += [node(f"{rack}-n").rack(rack).cpu_m(4000),
                 pod(f"{rack}-victim").on(f"{rack}-n").cpu_m(3000).priority(1).label("app", "batch")]
    objs += [pod_group("g", 2).topology(RACK).priority(100),
             pod("g-0").group("g").cpu_m(1000).priority(100), pod("g-1").group("g").cpu_m(1000).priority(100)]
    return objs


@pytest.mark.parametrize("decomposed", [True, False])
def test_strict_proves_a_gang_unplaceable_when_every_rack_needs_more_than_the_budgets_allow(decomposed: bool) -> None:
    plan, _ = _plan(*_budgeted_racks(0), pdb_policy="strict", decompose=decomposed)
    assert plan.status == OPTIMAL and plan.bindings == () and plan.evictions == ()
    (w,) = plan.workloads
    assert not w.satisfied and w.proven
    o = plan.objective
    assert (o.satisfied_bound, o.placed_bound, o.gap, o.gap_tier) == (0, 0, 0.0, "")
    # what it would take, in the plan, over gRPC and in the reason the adapter's condition shows
    want = WouldTake(violations_at_least=1, budgets=(BudgetNeed(budget="default/keep", allowed=0, needed=1),),
                     evictions=1, proven=True)
    assert w.would_take == want
    assert grpc_convert.plan_from_proto(grpc_convert.plan_to_proto(plan)).workloads[0].would_take == want
    assert w.reason.endswith("placing it needs at least 1 eviction beyond the budgets (PodDisruptionBudget "
                             "default/keep: 1 eviction, 0 allowed, 1 pod evicted, the fewest violations), "
                             "which pdbPolicy soft allows")
    # soft: the same cluster is placed with one violation, proven too
    soft, _ = _plan(*_budgeted_racks(0), pdb_policy="soft", decompose=decomposed)
    assert soft.status == OPTIMAL and len(soft.bindings) == 2 and soft.objective.pdb_violations == 1
    assert not soft.workloads[0].proven


def test_strict_with_budget_to_spare_places_the_gang() -> None:
    plan, _ = _plan(*_budgeted_racks(1), pdb_policy="strict")
    assert plan.status == OPTIMAL and len(plan.bindings) == 2 and len(plan.evictions) == 1
    assert not plan.workloads[0].proven


def test_every_plan_names_a_bound_per_tier_and_the_first_unproven_tier() -> None:
    # the baseline proves nothing: its bounds are the trivial ones, and the gap is on the
    # first tier it falls short of
    plan, out = _plan(*_budgeted_racks(0), pdb_policy="soft", baseline_only=True)
    o = out["objective"]
    assert plan.status != OPTIMAL or plan.objective.tiers == Tiers(((100, 1),), 2)
    assert (o["satisfiedBound"], o["placedBound"], o["pdbViolationsBound"], o["preemptionCostBound"],
            o["evictedPodsBound"], o["firstAvailableBound"]) == (1, 2, 0, 0, 0, 0)
    assert o["gapTier"] == "pdbViolations" and o["gap"] == 1.0


def test_lex_bound_decodes_stage_one_into_tiers() -> None:
    # two priority levels (100: 2 workloads, 5: 3 workloads), 10 pods: weights 1, 11, 11*4
    stage = objective.Stage(objective.StageKind.WORKLOADS_PODS, 0, True, (), (0,),
                            levels=((100, 44, 2), (5, 11, 3)), pods=10)
    trivial = Tiers(((100, 2), (5, 3)), 10)
    done = objective.StageBound(stage, found=44 + 2 * 11 + 7, bound=2 * 44 + 3)  # unproven
    bound = objective.lex_bound_from(trivial, [done])
    assert bound == Tiers(((100, 2), (5, 0)), 3)
    assert bound > Tiers(((100, 1), (5, 2)), 7)  # what was found: below its bound


def test_a_deadline_spent_before_the_hint_still_gives_a_verified_plan_and_says_what_was_cut() -> None:
    plan, out = _plan(*_rack("ra", False, "2"), *_rack("rb", True, None), *_gang(), time_limit=0.001)
    assert "hint" in out["stats"]["cut"]
    assert plan.objective.tiers <= decompose_free_optimum()


def decompose_free_optimum() -> Tiers:
    plan, _ = _plan(*_rack("ra", False, "2"), *_rack("rb", True, None), *_gang(), decompose=False)
    return plan.objective.tiers


def test_explain_names_the_least_budget_relaxation_that_places_a_strict_pending_gang(
        tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from solver import cli
    from tests.builders import _Builder, admitted

    def build_all(*objs: Any) -> list[Any]:
        return admitted([o.build() if isinstance(o, _Builder) else o for o in objs])

    path = tmp_path / "snap.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": build_all(*_budgeted_racks(0))}))
    assert cli.main(["solve", str(path), "--explain", "default/g"]) == 0
    out = capsys.readouterr()
    found = json.loads(out.out)
    assert found["satisfied"] is False and found["satisfiedSoft"] is True and found["proven"] is True
    assert found["budgets"] == [{"budget": "default/keep", "allowed": 0, "needed": 1}]
    assert len(found["evictions"]) == 1 and found["evictions"][0] in ("default/ra-victim", "default/rb-victim")
    # one breakdown of what it would take, not the plan's reason's and the explanation's both
    assert out.err.count("PodDisruptionBudget default/keep: 1 eviction, 0 allowed") == 1, out.err
    assert "placing it needs at least" not in found["reason"]
    # with budget to spare there is nothing to relax
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": build_all(*_budgeted_racks(1))}))
    assert cli.main(["solve", str(path), "--explain", "default/g"]) == 0
    assert json.loads(capsys.readouterr().out)["budgets"] == []


@st.composite
def _rack_choices(draw: Any) -> list[Any]:
    """2-4 racks of one node with 2 GPUs: busy (a victim of some cost must go) or not, with a
    GPU held for good or not (only the claim's second entry fits there), costs often tied;
    one gang of 1-2 pods under a rack constraint whose pods take the firstAvailable claim,
    maybe a budget over some victims."""
    objs: list[Any] = []
    for r in range(draw(st.integers(2, 4))):
        cost = draw(st.sampled_from([None, None, "1", "1", "2"]))
        objs += _rack(f"r{r}", draw(st.booleans()), cost)
    if draw(st.booleans()):
        objs.append(pdb("b", draw(st.integers(0, 1)), app=f"r{draw(st.integers(0, 1))}"))
    return objs + _gang(pods=draw(st.integers(1, 2)))


@settings(max_examples=60, deadline=None)
@given(_rack_choices(), st.sampled_from(["strict", "soft"]))
def test_decomposed_monolithic_and_shortcut_answers_agree_on_every_tier(objs: list[Any], policy: str) -> None:
    """Domains that need no eviction beside domains that do, ties between them, firstAvailable
    claims: every way of solving gives the same six tiers, each proven."""
    answers = [_plan(*objs, pdb_policy=policy, **flags)[0]
               for flags in ({}, {"decompose": False}, {"ideal_shortcut": False})]
    assert all(p.status == OPTIMAL for p in answers)
    assert len({p.objective.tiers for p in answers}) == 1, [p.objective.tiers for p in answers]
    assert all(p.objective.gap_tier == "" for p in answers)


def test_a_deadline_too_short_for_a_model_plans_from_the_hint_and_says_so() -> None:
    # two workloads (no decomposition); 10 ms leave no time to build a model: the plan is the
    # hint's (what it reached), verified, and the bound proves nothing it did not reach
    objs = [node("n0").cpu_m(4000), node("n1").cpu_m(4000),
            pod_group("a", 1).priority(100), pod("a-0").group("a").cpu_m(1000).priority(100),
            pod_group("b", 1).priority(50), pod("b-0").group("b").cpu_m(1000).priority(50)]
    plan, out = _plan(*objs, time_limit=0.01, ideal_shortcut=False)
    assert "model" in out["stats"]["cut"] and out["stats"]["solver"] == "hint"
    assert out["stats"]["variables"] == 0
    assert plan.objective.tiers <= Tiers(((100, 1), (50, 1)), 2)
    assert plan.status == OPTIMAL or plan.objective.gap_tier != ""


def test_a_floor_stopped_part_way_is_no_floor_and_a_plan_stopped_keeps_the_floor() -> None:
    from solver.model.bounds import floors
    from solver.problem.build import build_problem

    problem = build_problem(snapshot(*_budgeted_racks(0)), pdb_policy="soft")
    whole = floors.pdb_floor(problem)
    assert whole is not None and whole.violations == 1 and whole.plan is not None
    assert floors.pdb_floor(problem, stop=lambda: True) is None  # never a floor over some domains
    counted = iter(range(1000))
    floors.pdb_floor(problem, stop=lambda: next(counted) < 0)
    checks = next(counted)  # how many times a whole run asks
    calls = iter(range(1000))
    # true only at the last check, after the programs: the floor stands, its plan is not built
    late = floors.pdb_floor(problem, stop=lambda: next(calls) >= checks - 1)
    assert late is not None and late.violations == whole.violations and late.plan is None


def test_a_problem_that_took_the_hints_share_still_gets_a_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 50: 100,000 pods took half of a 2 s limit to read into a problem, past the hint's
    share, and the plan placed 0 pods where 8 fit. The hint now gets its share of what is left."""
    from solver import api

    monkeypatch.setattr(api, "_hint_share", lambda problem, options: 0.0)  # as if the problem took it
    monkeypatch.setattr(api, "_build_estimate", lambda problem: 1e9)  # and no model is built
    objs = [node("n0").cpu_m(4000), *(pod(f"p{i:02d}").cpu_m(1000) for i in range(20))]
    plan, out = _plan(*objs, time_limit=10, ideal_shortcut=False)
    assert out["stats"]["solver"] == "hint" and "model" in out["stats"]["cut"]
    assert len(plan.bindings) == 4
