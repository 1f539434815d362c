"""preemption: a running unit may be evicted only by a pending class of strictly higher
priority (policy not Never) that can land beside it, and where a pod that may not
preempt it could land too, only when it is necessary: put back, it would overflow a
resource on one of its nodes for the higher-priority pods placed there, one of which
may preempt it."""

from __future__ import annotations

from ortools.sat.python import cp_model

from solver.model.constraints import preemption
from solver.model.vars import PlacementVars
from solver.problem.build import Problem
from tests.builders import node, pod
from tests.model.constraints.helpers import (
    INFEASIBLE,
    OPTIMAL,
    at,
    cls,
    problem_of,
    solve,
    unit,
)


def test_only_strictly_lower_priority_units_beside_a_preemptor_are_candidates() -> None:
    problem = problem_of(
        node("n1"),
        node("n2").cpu_m(500),
        pod("low").on("n1").priority(10),
        pod("peer").on("n1").priority(100),
        pod("far").on("n2").cpu_m(100).priority(10),  # p cannot land on n2
        pod("p").priority(100),
    )
    # n2 is too small for p even emptied
    assert problem.candidates[cls(problem, "p")] == {"n1": 1}

    out = solve(problem, [preemption.add], lambda model, v: None)
    assert out.status == OPTIMAL
    candidates = {
        problem.units[u].key for u in range(len(problem.units)) if out.vars.has_evict(u)
    }
    assert candidates == {"default/low"}


def _beside_a_weak_pod(hi_cpu_m: int) -> Problem:
    # weak (priority 1) may land on n1 but not preempt low: low's eviction needs a cause
    return problem_of(
        node("n1").cpu_m(4000),
        pod("low").on("n1").cpu_m(2000).priority(10),
        pod("hi").cpu_m(hi_cpu_m).priority(100),
        pod("weak").cpu_m(1000).priority(1),
    )


def test_a_victim_goes_when_the_preemptor_needs_its_room() -> None:
    # hi's 2001m and low's 2000m overflow 4000m, by 1m: the boundary next door to the
    # case below, where hi's 2000m and low's fit exactly
    problem = _beside_a_weak_pod(2001)
    hi, weak, low = cls(problem, "hi"), cls(problem, "weak"), unit(problem, "low")

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        model.add(at(v, hi, "n1") == 1)
        model.add(at(v, weak, "n1") == 1)
        model.add(v.evicts(low) == 1)

    assert solve(problem, [preemption.add], demand).status == OPTIMAL


def test_a_victim_that_would_fit_back_is_not_evicted() -> None:
    # hi's 2000m and low's 2000m fit in 4000m (weak's 1000m beside them do not)
    problem = _beside_a_weak_pod(2000)
    hi, weak, low = cls(problem, "hi"), cls(problem, "weak"), unit(problem, "low")

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        model.add(at(v, hi, "n1") == 1)
        # weak's priority is below low's: never a reason to evict it
        model.add(at(v, weak, "n1") == 1)
        model.add(v.evicts(low) == 1)

    assert solve(problem, [preemption.add], demand).status == INFEASIBLE
    assert solve(problem, [], demand).status == OPTIMAL


def test_the_victim_evicted_is_the_one_beside_the_preemptor() -> None:
    # two like victims on two nodes; hi lands on n1: only low1's eviction is necessary
    problem = problem_of(
        node("n1").cpu_m(4000),
        node("n2").cpu_m(4000),
        pod("low1").on("n1").cpu_m(2000).priority(10),
        pod("low2").on("n2").cpu_m(2000).priority(10),
        pod("hi").cpu_m(3000).priority(100),
        pod("weak").cpu_m(1000).priority(1),
    )
    hi, low1, low2 = cls(problem, "hi"), unit(problem, "low1"), unit(problem, "low2")

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        model.add(v.placed([hi]) == 1)  # hi's only pod, on n1
        model.add(at(v, hi, "n1") == 1)
        model.add(v.evicts(low1) + v.evicts(low2) == 1)

    out = solve(problem, [preemption.add], demand)
    assert out.status == OPTIMAL
    evicted = [out.value(out.vars.evicts(u)) for u in (low1, low2)]
    assert evicted == [1, 0]
