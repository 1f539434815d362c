"""Structural assertions on the built CP-SAT model (model.proto)."""

from __future__ import annotations

from solver.model.build import build_model
from solver.model.problem import build_problem
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
