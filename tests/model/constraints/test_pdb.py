"""pdb: the running pods a plan evicts that a PodDisruptionBudget selects may not exceed
its disruptionsAllowed; with the strict policy that is a hard limit, with the soft
one every eviction beyond it is a counted violation."""

from __future__ import annotations

from ortools.sat.python import cp_model

from solver.model.constraints import pdb, preemption
from solver.model.vars import PlacementVars
from solver.problem.build import PdbPolicy, Problem
from tests.builders import node, pod, pod_group
from tests.builders import pdb as budget
from tests.model.constraints.helpers import (
    INFEASIBLE,
    OPTIMAL,
    problem_of,
    solve,
    unit,
)

# preemption is a prerequisite: pdb counts only the eviction variables that exist, and
# preemption creates them (for running pods a pending class may preempt)


def _two_batch_pods(allowed: int, pdb_policy: PdbPolicy = "strict") -> Problem:
    return problem_of(
        node("n1"),
        pod("r1").on("n1").priority(10).label("app", "batch"),
        pod("r2").on("n1").priority(10).label("app", "batch"),
        pod("hi").priority(100),
        budget("batch", allowed, app="batch"),
        pdb_policy=pdb_policy,
    )


def test_evictions_within_the_budget_are_allowed() -> None:
    problem = _two_batch_pods(1)
    r1, r2 = unit(problem, "r1"), unit(problem, "r2")

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        model.maximize(v.evicts(r1) + v.evicts(r2))  # as many as the budget allows

    out = solve(problem, [preemption.add, pdb.add], demand)
    assert out.status == OPTIMAL
    assert out.solver.objective_value == 1


def test_no_eviction_beyond_the_budget_when_strict() -> None:
    problem = _two_batch_pods(1)
    r1, r2 = unit(problem, "r1"), unit(problem, "r2")

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        model.add(v.evicts(r1) + v.evicts(r2) == 2)

    assert solve(problem, [preemption.add, pdb.add], demand).status == INFEASIBLE
    assert solve(problem, [preemption.add], demand).status == OPTIMAL


def test_a_unit_counts_each_member_the_budget_selects() -> None:
    # one disruptionMode: all unit of two batch pods against a budget of one
    problem = problem_of(
        node("n1"),
        pod_group("old", 2).disruption_all().priority(10),
        pod("old-0").group("old").on("n1").label("app", "batch"),
        pod("old-1").group("old").on("n1").label("app", "batch"),
        pod("hi").priority(100),
        budget("batch", 1, app="batch"),
    )
    old = unit(problem, "old")
    assert problem.units[old].pdb_counts == {"default/batch": 2}

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        model.add(v.evicts(old) == 1)

    assert solve(problem, [preemption.add, pdb.add], demand).status == INFEASIBLE
    assert solve(problem, [preemption.add], demand).status == OPTIMAL


def test_soft_budgets_count_the_evictions_beyond_them() -> None:
    problem = _two_batch_pods(1, "soft")
    r1, r2 = unit(problem, "r1"), unit(problem, "r2")

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        model.add(v.evicts(r1) + v.evicts(r2) == 2)

    out = solve(problem, [preemption.add, pdb.add], demand)
    assert out.status == OPTIMAL
    assert [out.value(var) for var in out.vars.all_pdb_violations()] == [1]


def test_soft_budgets_admit_no_free_violation() -> None:
    problem = _two_batch_pods(1, "soft")
    r1, r2 = unit(problem, "r1"), unit(problem, "r2")

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        model.add(v.evicts(r1) + v.evicts(r2) == 2)
        (batch,) = problem.snapshot.pdbs
        model.add(v.pdb_violations(batch.key, 1) == 0)

    assert solve(problem, [preemption.add, pdb.add], demand).status == INFEASIBLE
    assert solve(problem, [preemption.add], demand).status == OPTIMAL


def test_soft_budgets_count_by_namespace_and_labels_each_pod_alike() -> None:
    """The budgets a pod's labels select are worked out once per namespace and labels: a pod of
    another namespace with the same labels is not counted, two budgets over one pod both count
    it, and a unit's counts follow the snapshot's budgets in order."""
    other = pod("r3").on("n1").priority(10).label("app", "batch").label("tier", "a").build()
    other["metadata"]["namespace"] = "elsewhere"
    problem = problem_of(
        node("n1"),
        pod_group("old", 2).disruption_all().priority(10),
        pod("old-0").group("old").on("n1").label("app", "batch"),
        pod("old-1").group("old").on("n1").label("app", "batch").label("tier", "a"),
        pod("r1").on("n1").priority(10).label("app", "batch").label("tier", "a"),
        other,
        pod("hi").priority(100),
        budget("tier", 5, tier="a"),
        budget("batch", 1, app="batch"),
        pdb_policy="soft",
    )
    order = [b.key for b in problem.snapshot.pdbs]
    assert order == ["default/batch", "default/tier"]
    assert list(problem.units[unit(problem, "old")].pdb_counts.items()) == [("default/batch", 2), ("default/tier", 1)]
    assert problem.units[unit(problem, "r1")].pdb_counts == {"default/tier": 1, "default/batch": 1}
    (r3,) = [u for u in problem.units if u.key == "elsewhere/r3"]
    assert r3.pdb_counts == {}
