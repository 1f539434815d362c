"""capacity: on each node, the pods placed there plus the running pods that stay must
fit in allocatable for every resource the placed pods request; and a pending pod is
bound at most once (a class places no more pods than it has)."""

from __future__ import annotations

from ortools.sat.python import cp_model

from solver.model.constraints import capacity, preemption
from solver.model.vars import PlacementVars
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


def test_two_pods_that_share_no_node_land_one_per_node() -> None:
    # each 3-cpu node takes one 2-cpu pod; a and b are two classes (two standalone pods
    # of two priorities: alike ones would pool into one class), so the per-class
    # pre-filtering (candidates) lets each class on both nodes
    problem = problem_of(
        node("n1").cpu_m(3000),
        node("n2").cpu_m(3000),
        pod("a").cpu_m(2000),
        pod("b").cpu_m(2000).priority(1),
    )
    a, b = cls(problem, "a"), cls(problem, "b")

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        model.add(v.placed([a, b]) == 2)
        model.add(at(v, a, "n1") == 1)

    out = solve(problem, [capacity.add], demand)
    assert out.status == OPTIMAL
    assert (out.counts(a), out.counts(b)) == ({"n1": 1}, {"n2": 1})


def test_two_pods_do_not_fit_on_one_node_together() -> None:
    problem = problem_of(
        node("n1").cpu_m(3000), pod("a").cpu_m(2000), pod("b").cpu_m(2000).priority(1)
    )
    a, b = cls(problem, "a"), cls(problem, "b")
    # each fits alone
    assert problem.candidates[a] == problem.candidates[b] == {"n1": 1}

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        model.add(v.placed([a, b]) == 2)

    assert solve(problem, [capacity.add], demand).status == INFEASIBLE
    without = solve(problem, [], demand)
    assert without.status == OPTIMAL
    assert (without.counts(a), without.counts(b)) == ({"n1": 1}, {"n1": 1})


def test_a_pending_pod_is_bound_at_most_once() -> None:
    problem = problem_of(node("n1"), node("n2"), pod("p"))
    p = cls(problem, "p")

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        model.add(v.placed([p]) >= 2)

    assert solve(problem, [capacity.add], demand).status == INFEASIBLE
    without = solve(problem, [], demand)
    assert (without.status, without.counts(p)) == (OPTIMAL, {"n1": 1, "n2": 1})


# preemption is a prerequisite: it creates evict[u] for the running pod a pending class
# may preempt, which capacity then reads to free the victim's room


def test_room_held_by_a_running_pod_comes_back_only_when_it_is_evicted() -> None:
    problem = problem_of(
        node("n1").cpu_m(4000),
        pod("low").on("n1").cpu_m(3000).priority(10),
        pod("p").cpu_m(2000).priority(100),
    )
    p, low = cls(problem, "p"), unit(problem, "low")

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        model.add(at(v, p, "n1") == 1)

    out = solve(problem, [preemption.add, capacity.add], demand)
    assert out.status == OPTIMAL
    assert out.value(out.vars.evicts(low)) == 1


def test_a_running_pod_that_stays_keeps_its_room() -> None:
    problem = problem_of(
        node("n1").cpu_m(4000),
        pod("low").on("n1").cpu_m(3000).priority(10),
        pod("p").cpu_m(2000).priority(100),
    )
    p, low = cls(problem, "p"), unit(problem, "low")

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        model.add(at(v, p, "n1") == 1)
        model.add(v.evicts(low) == 0)

    assert solve(problem, [preemption.add, capacity.add], demand).status == INFEASIBLE
    assert solve(problem, [preemption.add], demand).status == OPTIMAL
