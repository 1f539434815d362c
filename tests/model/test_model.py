"""Structural assertions on the built CP-SAT model (model.proto)."""

from __future__ import annotations

from solver.model.build import build_model
from solver.problem.build import build_problem
from tests.builders import RACK, node, pod, pod_group, snapshot


def _cluster(gang_pods: int) -> list:
    objs: list = [node(f"n{i}").rack(f"r{i % 3}").cpu_m(64000) for i in range(12)]
    objs += [pod(f"bg{i}").on(f"n{i}").cpu_m(1000).priority(1) for i in range(12)]
    objs.append(pod_group("g", gang_pods).topology(RACK).priority(100))
    objs += [pod(f"g-{i}").group("g").cpu_m(1000) for i in range(gang_pods)]
    return objs


def test_identical_pods_are_one_class_so_variables_do_not_grow_with_pods() -> None:
    small = build_model(build_problem(snapshot(*_cluster(4))))
    large = build_model(build_problem(snapshot(*_cluster(40))))
    assert len(small.problem.classes) == len(large.problem.classes) == 1
    assert small.variables == large.variables
    counts = [v for v in large.model.proto.variables if v.name.startswith("count[")]
    assert len(counts) == 12  # one integer per (class, node)
    assert max(list(v.domain)[-1] for v in counts) == 40


def test_topology_emits_one_at_most_one_over_the_domains() -> None:
    built = build_model(build_problem(snapshot(*_cluster(4))))
    amos = [c for c in built.model.proto.constraints if c.has_at_most_one()]
    assert len(amos) == 1
    names = sorted(built.model.proto.variables[abs(i)].name for i in amos[0].at_most_one.literals)
    assert names == [f"in_domain[default/g,r{i}]" for i in range(3)]


def test_single_workload_has_no_necessity_rows() -> None:
    built = build_model(build_problem(snapshot(*_cluster(4))))
    assert not [v for v in built.model.proto.variables if v.name.startswith("need[")]


def test_a_baseline_at_every_trivial_bound_is_optimal_without_a_model() -> None:
    from solver import api

    roomy = [node(f"n{i}").rack("r0").cpu_m(8000) for i in range(2)]
    roomy += [pod_group("g", 2).topology(RACK).priority(100), pod("g-0").group("g").cpu_m(1000),
              pod("g-1").group("g").cpu_m(1000)]
    plan = api.plan(snapshot(*roomy))
    assert (plan.status, plan.stats["solver"], plan.stats["variables"]) == ("OPTIMAL", "baseline-at-ideal", 0)
    assert plan.objective.gap == 0 and plan.objective.placed_pods == 2
    # the same gang needing an eviction: the baseline proves nothing, the model decides
    tight = roomy + [pod("bg").on("n0").cpu_m(7500).priority(1), pod("bg2").on("n1").cpu_m(7500).priority(1)]
    plan = api.plan(snapshot(*tight))
    assert (plan.status, plan.stats["solver"]) == ("OPTIMAL", "cp-sat")
    assert plan.objective.evicted_pods == 1 and len({b.node for b in plan.bindings}) == 1  # one node freed holds both


def test_solve_leaves_its_built_model_as_it_found_it_so_it_can_be_solved_again() -> None:
    from solver.baseline import greedy
    from solver.model.solve import SolveParams, solve

    built = build_model(build_problem(snapshot(*_cluster(8))))
    before = str(built.model.proto)
    params = SolveParams(time_limit=10, workers=1, seed=0)
    first = solve(built, params, hint=greedy.hint(built.problem))
    assert str(built.model.proto) == before  # no stage's rows, objective or hint left behind
    again = solve(built, params, hint=greedy.hint(built.problem))
    assert first.status == again.status == "OPTIMAL"
    assert first.assignment == again.assignment
