"""The first tier's bound that knows a gang lives in one domain (solver/model/bounds/domains.py):
tighter than room alone where the room is split over domains, merged with the room bound level
by level, and an upper bound on every plan (the property tests compare it with the naive model
under both PDB policies)."""

from __future__ import annotations

from typing import Any

import pytest

from solver import api
from solver.model.bounds import domains, room
from solver.problem.build import Problem, build_problem
from tests.builders import RACK, node, pod, pod_group, snapshot


def _gang(name: str, pods: int, cpu_m: int, priority: int, key: str | None = RACK) -> list[Any]:
    group = pod_group(name, pods).priority(priority)
    return [group.topology(key) if key else group,
            *(pod(f"{name}-{i}").group(name).cpu_m(cpu_m).priority(priority) for i in range(pods))]


def _split_racks(policy: str = "soft") -> tuple[list[Any], Problem]:
    """Two racks, each of a 4-core and a 6-core node: 5 slots of 2 cores a rack. Three gangs of
    three 2-core pods, each in one rack: by volume (10 slots, 9 asked) all three fit; a rack
    takes one (two would ask 6 of its 5 slots), so two do."""
    objs = [node("n0").rack("r0").cpu_m(4000), node("n1").rack("r0").cpu_m(6000),
            node("n2").rack("r1").cpu_m(4000), node("n3").rack("r1").cpu_m(6000),
            *_gang("a", 3, 2000, 10), *_gang("b", 3, 2000, 10), *_gang("c", 3, 2000, 10)]
    return objs, build_problem(snapshot(*objs), pdb_policy=policy)


@pytest.mark.parametrize("policy", ["strict", "soft"])
def test_gangs_that_fit_by_volume_but_not_one_rack_each_are_bounded_by_the_racks(policy: str) -> None:
    _, problem = _split_racks(policy)
    assert room.satisfied_bound(problem) == ((10, 3),)
    assert domains.satisfied_caps(problem, 10) == {10: 2}
    assert room.satisfied_bound(problem, domains.satisfied_caps(problem, 10)) == ((10, 2),)


def test_without_a_topology_key_the_gangs_fit_in_the_pooled_room_and_there_is_no_cap() -> None:
    objs, _ = _split_racks()
    free = objs[:4] + [o for g in "abc" for o in _gang(g, 3, 2000, 10, key=None)]
    problem = build_problem(snapshot(*free), pdb_policy="soft")
    assert domains.satisfied_caps(problem, 10) == {}
    assert room.satisfied_bound(problem, {}) == ((10, 3),)


def test_a_rack_gang_counts_against_its_block_too() -> None:
    """Block B holds racks r0 and r1 (one 4-core node each, 2 slots of 2 cores); a rack gang of
    two pods fits each rack, a block gang of four the block, but not a rack gang and the block
    gang together: 6 slots asked of the block's 4."""
    block = "topology.kubernetes.io/block"
    objs = [node("n0").rack("r0").label(block, "B").cpu_m(4000), node("n1").rack("r1").label(block, "B").cpu_m(4000),
            *_gang("r", 2, 2000, 10), *_gang("k", 4, 2000, 10, key=block)]
    problem = build_problem(snapshot(*objs), pdb_policy="soft")
    assert room.satisfied_bound(problem) == ((10, 1),)  # by volume too: 6 slots of 4
    assert domains.satisfied_caps(problem, 10) == {10: 1}


def test_caps_under_a_level_room_bounds_lower_are_not_used() -> None:
    """A cap is made with every stronger level at its cap; where room bounds a stronger level
    lower, a plan there may leave the weaker level more room than the cap assumed."""
    objs, problem = _split_racks()
    assert room.satisfied_bound(problem, {10: 2}) == ((10, 2),)
    two = build_problem(snapshot(*objs, *_gang("hi", 1, 4000, 100)), pdb_policy="soft")
    plain = room.satisfied_bound(two)
    assert plain[0] == (100, 1)
    # a cap above room's at 100 is not taken there, and the cap of 0 below it is not used
    assert room.satisfied_bound(two, {100: 5, 10: 0}) == plain
    assert room.satisfied_bound(two, {100: 1, 10: 0}) == ((100, 1), (10, 0))


def test_a_plan_without_a_model_reports_the_domain_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(api, "BUILD_SECONDS_PER_VARIABLE", 1e6)  # no model: the hint is the plan
    objs, _ = _split_racks()
    plan = api.plan(snapshot(*objs), api.PlanOptions(time_limit=10, pdb_policy="soft"))
    assert plan.stats["cut"] == ["model"]
    o = plan.objective
    assert (o.satisfied_workloads, o.satisfied_bound, o.gap_tier) == (2, 2, "placedPods")
