"""The tier order is defined once, by plan.Tiers; the staged objective optimises the same
tiers in the same order, and the plan's Objective compares through Tiers."""

from __future__ import annotations

import dataclasses

import pytest

from solver import reading
from solver.core.plan import Objective, Tiers
from solver.model import objective
from solver.model.build import build_model
from solver.problem.build import build_problem
from tests.builders import node, pdb, pod, pod_group


def _fields_in_stage_order(stages: list[objective.Stage]) -> list[str]:
    return [f for stage in stages for f in objective.STAGE_TIERS[stage.kind]]


@pytest.mark.parametrize("soft", [True, False])
def test_the_stages_decide_the_tiers_in_the_order_tiers_compares_them(soft: bool) -> None:
    objs = [node("n0").cpu_m(2000).build(), pod("low").on("n0").cpu_m(2000).priority(1).label("app", "a").build(),
            pdb("a", 0, app="a").build(), pod_group("g", 1).priority(100).build(),
            pod("g-0").group("g").cpu_m(1000).priority(100).build()]
    problem = build_problem(reading.read(objs), pdb_policy="soft" if soft else "strict")
    stages = list(build_model(problem).stages)
    order = [f.name for f in dataclasses.fields(Tiers)]
    decided = _fields_in_stage_order(stages)
    assert decided == [f for f in order if f in decided]  # a subsequence of Tiers' order
    assert decided[:2] == ["satisfied", "placed"] and decided[-1] == "evicted"
    assert ("pdb_violations" in decided) is soft  # strict: a hard rule, no stage


def test_tiers_compare_lexicographically_and_objective_uses_them() -> None:
    best = Tiers(((100, 1), (0, 0)), 4, 0, 500, 2)
    assert best > Tiers(((100, 0), (0, 9)), 99, 0, 0, 0)  # a higher priority's workload first
    assert best > Tiers(((100, 1), (0, 0)), 3, 0, 0, 0)  # then pods placed
    assert best > Tiers(((100, 1), (0, 0)), 4, 1, 0, 0)  # then fewer PDB violations
    assert best > Tiers(((100, 1), (0, 0)), 4, 0, 501, 0)  # then a lower cost
    assert best > Tiers(((100, 1), (0, 0)), 4, 0, 500, 3)  # then fewer evictions
    assert best.head == Tiers(((100, 1), (0, 0)), 4, 0) and best.head >= best
    o = Objective(satisfied_workloads=1, satisfied_by_priority={0: 0, 100: 1}, placed_pods=4, pdb_violations=0,
                  preemption_cost=0.5, evicted_pods=2, preemption_cost_bound=0.5, gap=0.0)
    assert o.tiers == best
