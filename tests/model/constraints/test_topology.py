"""topology: every pod under a group with a topology key lands in one domain of that key
(one rack, say), chosen by the plan among the domains left after pre-filtering."""

from __future__ import annotations

from ortools.sat.python import cp_model

from solver.model.constraints import topology
from solver.model.vars import PlacementVars
from solver.problem.build import Problem
from tests.builders import RACK, node, pod, pod_group
from tests.model.constraints.helpers import INFEASIBLE, OPTIMAL, cls, problem_of, solve

GROUP = "default/g"


def _two_racks(a1_cpu_m: int) -> Problem:
    # a basic PodGroup (no minCount): pre-filtering drops no rack as too small for it
    return problem_of(
        node("a1").rack("ra").cpu_m(a1_cpu_m),
        node("b1").rack("rb").cpu_m(1000),
        pod_group("g").topology(RACK).priority(100),
        pod("g-0").group("g").cpu_m(1000),
        pod("g-1").group("g").cpu_m(1000),
    )


def test_the_group_lands_in_the_one_rack_that_holds_it() -> None:
    problem = _two_racks(2000)
    g = cls(problem, "g-0")
    assert problem.candidates[g] == {"a1": 2, "b1": 1}

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        model.add(v.placed([g]) == 2)

    out = solve(problem, [topology.add], demand)
    assert out.status == OPTIMAL
    assert out.counts(g) == {"a1": 2}
    assert {
        value: out.value(var)
        for (key, value), var in out.vars.domains()
        if key == GROUP
    } == {"ra": 1, "rb": 0}


def test_the_group_is_not_split_over_two_racks() -> None:
    problem = _two_racks(1000)
    g = cls(problem, "g-0")
    assert problem.candidates[g] == {"a1": 1, "b1": 1}

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        model.add(v.placed([g]) == 2)

    assert solve(problem, [topology.add], demand).status == INFEASIBLE
    without = solve(problem, [], demand)
    assert (without.status, without.counts(g)) == (OPTIMAL, {"a1": 1, "b1": 1})
