"""symmetry: of two interchangeable sibling PodGroups (same rule, same topology key, pod
classes equal but for names, nothing running), the earlier one is placed whenever the
later one is, and takes a domain that sorts no later; this only removes mirror-image
solutions."""

from __future__ import annotations

from ortools.sat.python import cp_model

from solver import reading
from solver.model.constraints import gang, symmetry, topology
from solver.model.vars import PlacementVars
from solver.problem.build import Problem
from tests.builders import RACK, composite, node, pod, pod_group
from tests.model.constraints.helpers import (
    INFEASIBLE,
    OPTIMAL,
    at,
    cls,
    host_port,
    problem_of,
    solve,
)

# gang is a prerequisite: symmetry orders ok[a] and ok[b], which only gang ties to what
# is placed; topology is one where the groups have a topology key: it creates the
# in_domain variables whose order symmetry constrains


def _siblings(*nodes: object, topology_key: str | None = None) -> Problem:
    a, b = pod_group("a", 1).parent("job"), pod_group("b", 1).parent("job")
    if topology_key:
        a, b = a.topology(topology_key), b.topology(topology_key)
    return problem_of(
        *nodes,
        composite("job").priority(100),
        a,
        b,
        pod("a-0").group("a"),
        pod("b-0").group("b"),
    )


def test_one_of_two_twins_is_the_first() -> None:
    problem = _siblings(node("n1"))
    a, b = cls(problem, "a-0"), cls(problem, "b-0")

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        model.add(v.placed([a, b]) == 1)

    out = solve(problem, [gang.add, symmetry.add], demand)
    assert out.status == OPTIMAL
    assert (out.counts(a), out.counts(b)) == ({"n1": 1}, {})


def test_the_second_twin_is_not_placed_without_the_first() -> None:
    problem = _siblings(node("n1"))
    a, b = cls(problem, "a-0"), cls(problem, "b-0")

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        model.add(v.placed([a]) == 0)
        model.add(v.placed([b]) == 1)

    assert solve(problem, [gang.add, symmetry.add], demand).status == INFEASIBLE
    assert solve(problem, [gang.add], demand).status == OPTIMAL


def _racked() -> Problem:
    return _siblings(node("a1").rack("ra"), node("b1").rack("rb"), topology_key=RACK)


def test_the_first_twin_takes_the_earlier_rack() -> None:
    problem = _racked()
    a, b = cls(problem, "a-0"), cls(problem, "b-0")

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        # b in ra, the first rack: a may only be there too
        model.add(at(v, b, "a1") == 1)

    out = solve(problem, [gang.add, topology.add, symmetry.add], demand)
    assert out.status == OPTIMAL
    assert (out.counts(a), out.counts(b)) == ({"a1": 1}, {"a1": 1})


def test_the_twins_do_not_take_racks_out_of_order() -> None:
    problem = _racked()
    a, b = cls(problem, "a-0"), cls(problem, "b-0")

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        model.add(at(v, a, "b1") == 1)
        model.add(at(v, b, "a1") == 1)

    families = [gang.add, topology.add, symmetry.add]
    assert solve(problem, families, demand).status == INFEASIBLE
    assert solve(problem, [gang.add, topology.add], demand).status == OPTIMAL


def test_a_sibling_kept_off_by_a_host_port_does_not_hold_back_its_twin() -> None:
    # siblings that differ only in host ports (or inter-pod rules, or claims) are no twins:
    # symmetry once took them for twins, and the later one was held back by the earlier
    # a-0 needs host port 80, which a pod nobody may evict holds on the only node:
    # pre-filtering leaves a-0 no candidate. b-0 fits, and the basic composite is
    # satisfied by b alone.
    problem = problem_of(
        node("n1"),
        host_port(pod("guard").on("n1").priority(1000), 80),
        composite("job").priority(100),
        pod_group("a", 1).parent("job"),
        pod_group("b", 1).parent("job"),
        host_port(pod("a-0").group("a"), 80),
        pod("b-0").group("b"),
    )
    a, b = cls(problem, "a-0"), cls(problem, "b-0")
    assert (problem.candidates[a], problem.candidates[b]) == ({}, {"n1": 1})

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        model.add(v.placed([b]) == 1)

    assert solve(problem, [gang.add], demand).status == OPTIMAL
    assert solve(problem, [gang.add, symmetry.add], demand).status == OPTIMAL


def test_the_whole_pipeline_places_the_sibling_whose_twin_cannot_go() -> None:
    """The same cluster through api.plan: the model itself proves b-0 placed (before the fix
    it proved nothing placeable and the baseline's plan came back, status FEASIBLE)."""
    from solver import api
    from tests.builders import admitted

    objs = admitted([o.build() for o in (node("n1"), host_port(pod("guard").on("n1").priority(1000), 80),
                                         composite("job").priority(100), pod_group("a", 1).parent("job"),
                                         pod_group("b", 1).parent("job"), host_port(pod("a-0").group("a"), 80),
                                         pod("b-0").group("b"))])
    plan = api.plan(reading.read(objs))
    assert plan.status == "OPTIMAL" and not plan.stats.get("fromBaseline")
    assert [(b.pod, b.node) for b in plan.bindings] == [("default/b-0", "n1")]
