"""Which plan wins a bench case, and on which tier (solver.bench.tiers): the objective's order,
never the preemption cost alone."""

from __future__ import annotations

import random

import pytest

from solver.bench import runner
from solver.bench.tiers import ORDER, Decision, decide
from solver.core.plan import Tiers


def row(satisfied: dict[str, int], placed: int, pdb: int, cost: float, evicted: int,
        first_available: int = 0) -> dict[str, object]:
    return {"satisfiedWorkloads": sum(satisfied.values()), "satisfiedByPriority": satisfied, "placedPods": placed,
            "pdbViolations": pdb, "preemptionCost": cost, "evictedPods": evicted, "firstAvailable": first_available}


def test_fewer_pdb_violations_win_though_they_cost_more() -> None:
    # mini-rack-gang-64 under the soft policy: gangplace 16 placed, 0 violations, cost 176;
    # the baseline 16, 2, 578: decided on the budgets, not by a ratio of costs
    gp, bl = row({"100": 1}, 16, 0, 176.0, 16), row({"100": 1}, 16, 2, 578.0, 28)
    assert decide(gp, bl) == Decision("pdbViolations", 1, 0, 2)
    assert decide(bl, gp) == Decision("pdbViolations", -1, 2, 0)
    # and where gangplace keeps the budgets by paying more: still gangplace's, not "1.9x worse"
    gp, bl = row({"100": 1}, 16, 0, 1100.0, 30), row({"100": 1}, 16, 3, 578.0, 28)
    d = decide(gp, bl)
    assert (d.tier, d.sign, d.label(), d.cost_comparable) == ("pdbViolations", 1, "pdb 0 vs 3", False)


def test_a_higher_priority_workload_outweighs_any_number_below_it() -> None:
    gp, bl = row({"1000": 1, "0": 0}, 8, 0, 0.0, 0), row({"1000": 0, "0": 3}, 12, 0, 0.0, 0)
    d = decide(gp, bl)
    assert (d.tier, d.sign, d.label()) == ("satisfiedWorkloads", 1, "satisfied 1 vs 3")


def test_rows_without_the_priorities_compare_satisfied_totals() -> None:
    gp = {"satisfiedWorkloads": 2, "placedPods": 8, "pdbViolations": 0, "preemptionCost": 1.0, "evictedPods": 1}
    bl = {**gp, "satisfiedWorkloads": 3}
    assert decide(gp, bl) == Decision("satisfiedWorkloads", -1, 2, 3)


def test_the_cost_decides_only_once_tiers_one_to_three_tie() -> None:
    gp, bl = row({"10": 2}, 8, 1, 88.0, 8), row({"10": 2}, 8, 1, 178.0, 8)
    d = decide(gp, bl)
    assert (d.tier, d.sign, d.label(), d.cost_comparable) == ("preemptionCost", 1, "cost 88 vs 178", True)
    d = decide(row({"10": 2}, 8, 1, 88.0, 8), row({"10": 2}, 8, 1, 88.0004, 5))  # equal in milli-units
    assert (d.tier, d.sign, d.cost_comparable) == ("evictedPods", -1, True)
    d = decide(row({"10": 2}, 8, 1, 88.0, 8), row({"10": 2}, 8, 1, 88.0, 8))
    assert (d.tier, d.sign, d.label(), d.index, d.cost_comparable) == (None, 0, "tie", len(ORDER), True)


@pytest.mark.parametrize("seed", range(5))
def test_the_winner_is_the_plan_the_objective_ranks_higher(seed: int) -> None:
    # random tier vectors, many ties: decide's sign is Tiers' order, tier by tier
    rng = random.Random(seed)

    def draw() -> tuple[Tiers, dict[str, object]]:
        satisfied = {p: rng.randint(0, 2) for p in (100, 10, 0)}
        placed, pdb, cost, evicted, first = (rng.randint(0, 2) for _ in range(5))
        tiers = Tiers(tuple(sorted(satisfied.items(), reverse=True)), placed, pdb, cost * 500, evicted, first)
        return tiers, row({str(p): n for p, n in satisfied.items()}, placed, pdb, cost / 2, evicted, first)

    for _ in range(300):
        (a, ra), (b, rb) = draw(), draw()
        assert decide(ra, rb).sign == (a > b) - (a < b), (ra, rb)


def test_the_table_shows_a_cost_ratio_only_where_the_earlier_tiers_tie() -> None:
    base = {"costRatio": 0.305}
    assert runner.ratio_cell({**base, "gangplace": row({"1": 1}, 16, 0, 176.0, 16),
                              "baseline": row({"1": 1}, 16, 2, 578.0, 28)}) == "- (pdb)"
    assert runner.ratio_cell({**base, "gangplace": row({"1": 1}, 16, 0, 176.0, 16),
                              "baseline": row({"1": 1}, 16, 0, 578.0, 28)}) == "0.305"
    assert runner.ratio_cell({"costRatio": None, "gangplace": row({"1": 1}, 4, 0, 0.0, 0),
                              "baseline": row({"1": 1}, 4, 0, 0.0, 0)}) == "-"
