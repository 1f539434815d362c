"""gang: a PodGroup with minCount places enough new pods to reach it (running members
count) or none at all; a CompositePodGroup with minGroupCount needs that many
children whose rule holds, or places nothing below it; a workload is satisfied only
when its root's rule holds and the plan adds at least one pod to it."""

from __future__ import annotations

from ortools.sat.python import cp_model

from solver.model.constraints import gang
from solver.model.vars import PlacementVars
from solver.problem.build import Problem
from tests.builders import composite, node, pod, pod_group
from tests.model.constraints.helpers import (
    INFEASIBLE,
    OPTIMAL,
    at,
    cls,
    problem_of,
    solve,
)


def _only_workload(problem: Problem) -> int:
    (w,) = problem.workloads
    return w.index


def test_a_satisfied_gang_places_all_its_pods() -> None:
    problem = problem_of(
        node("n1"),
        pod_group("g", 2).priority(100),
        pod("g-0").group("g"),
        pod("g-1").group("g"),
    )
    g = cls(problem, "g-0")
    w = _only_workload(problem)

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        model.add(v.satisfied(w) == 1)

    out = solve(problem, [gang.add], demand)
    assert out.status == OPTIMAL
    assert out.counts(g) == {"n1": 2}
    assert out.value(out.vars.group_ok(problem.workloads[w].groups[0])) == 1


def test_a_gang_that_cannot_reach_min_count_places_nothing() -> None:
    # n1 holds one of the two 1-cpu pods (candidates: at most 1), minCount is 2
    problem = problem_of(
        node("n1").cpu_m(1000),
        pod_group("g", 2).priority(100),
        pod("g-0").group("g").cpu_m(1000),
        pod("g-1").group("g").cpu_m(1000),
    )
    g = cls(problem, "g-0")
    assert problem.candidates[g] == {"n1": 1}

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        model.add(v.placed([g]) >= 1)

    assert solve(problem, [gang.add], demand).status == INFEASIBLE
    without = solve(problem, [], demand)
    assert (without.status, without.counts(g)) == (OPTIMAL, {"n1": 1})


def test_running_members_count_toward_min_count() -> None:
    # minCount 3 with one member running: the two pending pods complete the gang
    problem = problem_of(
        node("n1"),
        pod_group("g", 3).priority(100),
        pod("g-run").group("g").on("n1"),
        pod("g-0").group("g"),
        pod("g-1").group("g"),
    )
    g = cls(problem, "g-0")
    w = _only_workload(problem)

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        model.add(v.satisfied(w) == 1)

    out = solve(problem, [gang.add], demand)
    assert (out.status, out.counts(g)) == (OPTIMAL, {"n1": 2})

    def one_short(model: cp_model.CpModel, v: PlacementVars) -> None:
        model.add(v.satisfied(w) == 1)
        model.add(at(v, g, "n1") <= 1)

    assert solve(problem, [gang.add], one_short).status == INFEASIBLE
    assert solve(problem, [], one_short).status == OPTIMAL


def test_a_workload_already_whole_is_not_satisfied_by_placing_nothing() -> None:
    # one running member meets minCount 1, so ok[g] holds, but a plan must add a pod
    problem = problem_of(
        node("n1"),
        pod_group("g", 1).priority(100),
        pod("g-run").group("g").on("n1"),
        pod("g-0").group("g"),
    )
    g = cls(problem, "g-0")
    w = _only_workload(problem)

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        model.add(v.satisfied(w) == 1)
        model.add(v.placed([g]) == 0)

    assert solve(problem, [gang.add], demand).status == INFEASIBLE
    assert solve(problem, [], demand).status == OPTIMAL


def _two_children(min_group_count: int | None) -> Problem:
    return problem_of(
        node("n1"),
        composite("job", min_group_count).priority(100),
        pod_group("a", 1).parent("job"),
        pod_group("b", 1).parent("job"),
        pod("a-0").group("a"),
        pod("b-0").group("b"),
    )


def test_a_composite_gang_places_its_children_together() -> None:
    problem = _two_children(2)
    a, b = cls(problem, "a-0"), cls(problem, "b-0")

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        model.add(v.placed([a]) >= 1)

    out = solve(problem, [gang.add], demand)
    assert out.status == OPTIMAL
    assert (out.counts(a), out.counts(b)) == ({"n1": 1}, {"n1": 1})


def test_a_composite_gang_does_not_place_one_child_of_two() -> None:
    problem = _two_children(2)
    a, b = cls(problem, "a-0"), cls(problem, "b-0")

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        model.add(v.placed([a]) >= 1)
        model.add(v.placed([b]) == 0)

    assert solve(problem, [gang.add], demand).status == INFEASIBLE
    assert solve(problem, [], demand).status == OPTIMAL
    # a basic composite takes any one child
    basic = _two_children(None)
    assert (cls(basic, "a-0"), cls(basic, "b-0")) == (a, b)
    assert solve(basic, [gang.add], demand).status == OPTIMAL
