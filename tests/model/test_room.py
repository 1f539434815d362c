"""The first tier's bound from room alone (solver/model/bounds/room.py): exact on the shapes it is
built for, an upper bound on every plan (the property tests compare it with the naive model),
and what turns a many-workload plan's gap from the trivial bound into a measured one."""

from __future__ import annotations

from typing import Any

from solver import api
from solver.model.bounds import room
from solver.problem.build import build_problem
from tests.builders import node, pdb, pod, pod_group, snapshot


def _bound(*objs: Any, policy: str = "soft") -> tuple[tuple[int, int], ...]:
    return room.satisfied_bound(build_problem(snapshot(*objs), pdb_policy=policy))


def _gang(name: str, pods: int, cpu_m: int, priority: int) -> list[Any]:
    return [pod_group(name, pods).priority(priority),
            *(pod(f"{name}-{i}").group(name).cpu_m(cpu_m).priority(priority) for i in range(pods))]


def test_a_node_holds_whole_pods_only() -> None:
    # 3 nodes of 4 cores and gangs of two 3-core pods: 12 cores would take two gangs, but
    # each node holds one such pod, so three pods, one gang
    nodes = [node(f"n{i}").cpu_m(4000) for i in range(3)]
    assert _bound(*nodes, *_gang("a", 2, 3000, 10), *_gang("b", 2, 3000, 10)) == ((10, 1),)


def test_stronger_priorities_take_their_room_first() -> None:
    # 4 one-pod slots; the high gang takes 2 of them, so of the two low gangs of 2 one fits
    nodes = [node(f"n{i}").cpu_m(4000) for i in range(4)]
    objs = [*nodes, *_gang("hi", 2, 3000, 100), *_gang("lo1", 2, 3000, 10), *_gang("lo2", 2, 3000, 10)]
    assert _bound(*objs) == ((100, 1), (10, 1))


def test_the_smallest_workloads_count_first() -> None:
    # 8 cores: one gang of 8 one-core pods, or a gang of 4 and one of 2 (and not the 8)
    objs = [node("n").cpu_m(8000), *_gang("big", 8, 1000, 5), *_gang("mid", 4, 1000, 5), *_gang("small", 2, 1000, 5)]
    assert _bound(*objs) == ((5, 2),)


def test_room_held_by_pods_it_may_not_preempt_is_not_counted() -> None:
    # the node's 4 cores: 3 held by a pod of a higher priority, 1 by one of a lower priority
    objs = [node("n").cpu_m(4000), pod("vip").on("n").cpu_m(3000).priority(1000),
            pod("low").on("n").cpu_m(1000).priority(1), *_gang("g", 1, 2000, 10)]
    assert _bound(*objs) == ((10, 0),)
    assert _bound(*objs[:2], pod("low").on("n").cpu_m(1000).priority(1), *_gang("g", 1, 1000, 10)) == ((10, 1),)


def test_strict_budgets_keep_the_pods_they_cover() -> None:
    # two nodes full of low pods, one under a budget that allows nothing, one under a budget
    # that allows one eviction: under strict budgets only the second node's room can be freed
    objs = [node("a").cpu_m(4000), node("b").cpu_m(4000),
            pod("x").on("a").cpu_m(4000).priority(1).label("app", "x"), pdb("px", 0, app="x"),
            pod("y").on("b").cpu_m(4000).priority(1).label("app", "y"), pdb("py", 1, app="y"),
            *_gang("g1", 1, 4000, 10), *_gang("g2", 1, 4000, 10)]
    assert _bound(*objs, policy="soft") == ((10, 2),)
    assert _bound(*objs, policy="strict") == ((10, 1),)


def test_a_plan_without_a_model_reports_the_room_bound(monkeypatch: Any) -> None:
    # no model (its build estimate is over the limit): the hint is the plan, and its first
    # tier is proven by room, not left against every workload
    monkeypatch.setattr(api, "BUILD_SECONDS_PER_VARIABLE", 1e6)
    nodes = [node(f"n{i}").cpu_m(4000) for i in range(3)]
    snap = snapshot(*nodes, *_gang("a", 2, 3000, 10), *_gang("b", 2, 3000, 10))
    plan = api.plan(snap, api.PlanOptions(time_limit=10))
    assert plan.stats["cut"] == ["model"]
    o = plan.objective
    assert (o.satisfied_workloads, o.satisfied_bound) == (1, 1)
    assert (plan.status, o.gap_tier, o.placed_bound) == ("FEASIBLE", "placedPods", 4)


def test_room_another_workload_frees_counts_for_one_that_may_not_preempt() -> None:
    # the node is full of a low pod; the low-priority gang may preempt it, the high one (Never)
    # may not, yet once it is gone both fit: the high one's room is what any preemptor frees
    objs = [node("n").cpu_m(2000), pod("bg").on("n").cpu_m(2000).priority(0),
            pod_group("hi", 1).priority(100), pod("hi-0").group("hi").cpu_m(500).priority(100).never_preempt(),
            *_gang("lo", 1, 500, 20)]
    assert _bound(*objs) == ((100, 1), (20, 1))
    plan = api.plan(snapshot(*objs), api.PlanOptions(time_limit=10, pdb_policy="soft"))
    assert plan.objective.satisfied_by_priority == {100: 1, 20: 1}
