"""interpod: required pod anti-affinity keeps matching pods out of a pod's domain
(running ones must be evicted), required pod affinity needs a matching pod in the
domain, a DoNotSchedule spread constraint bounds the skew between domains, and two
pods with the same host port never share a node."""

from __future__ import annotations

from ortools.sat.python import cp_model

from solver.model import build
from solver.model.constraints import interpod, preemption
from solver.model.vars import PlacementVars
from solver.problem.build import Problem
from tests.builders import node, pod, pod_group
from tests.model.constraints.helpers import (
    HOST,
    INFEASIBLE,
    OPTIMAL,
    affine,
    anti,
    at,
    cls,
    host_port,
    problem_of,
    solve,
    spread,
    term,
    unit,
)

# interpod has no prerequisite: it creates the eviction variables of the running pods a
# class conflicts with (preemption would only add the rows that make them necessary)


def _pair(*nodes: str, rule: str) -> Problem:
    """A gang of two pods labelled app=w, each carrying ``rule`` over hostname."""
    members = []
    for k in range(2):
        p = pod(f"g-{k}").group("g").label("app", "w")
        if rule == "anti":
            anti(
                p, {"labelSelector": {"matchLabels": {"app": "w"}}, "topologyKey": HOST}
            )
        else:
            spread(p, HOST, max_skew=1, app="w")
        members.append(p)
    return problem_of(
        *(node(n) for n in nodes), pod_group("g", 2).priority(100), *members
    )


def test_self_anti_affinity_puts_one_pod_per_node() -> None:
    problem = _pair("n0", "n1", rule="anti")
    g = cls(problem, "g-0")

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        model.add(v.placed([g]) == 2)

    out = solve(problem, [interpod.add], demand)
    assert (out.status, out.counts(g)) == (OPTIMAL, {"n0": 1, "n1": 1})


def test_self_anti_affinity_keeps_two_pods_off_one_node() -> None:
    problem = _pair("n0", rule="anti")
    g = cls(problem, "g-0")
    assert problem.candidates[g] == {"n0": 2}

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        model.add(v.placed([g]) == 2)

    assert solve(problem, [interpod.add], demand).status == INFEASIBLE
    assert solve(problem, [], demand).status == OPTIMAL


def _beside_db(db_priority: int) -> Problem:
    return problem_of(
        node("n0"),
        pod("db").on("n0").priority(db_priority).label("app", "db"),
        anti(
            pod("p").priority(100),
            {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": HOST},
        ),
    )


def test_anti_affinity_to_a_running_pod_evicts_it() -> None:
    problem = _beside_db(10)
    p, db = cls(problem, "p"), unit(problem, "db")

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        model.add(at(v, p, "n0") == 1)

    out = solve(problem, [interpod.add], demand)
    assert out.status == OPTIMAL
    assert out.value(out.vars.evicts(db)) == 1


def test_anti_affinity_to_a_running_pod_that_stays_refuses_the_node() -> None:
    problem = _beside_db(10)
    p, db = cls(problem, "p"), unit(problem, "db")

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        model.add(at(v, p, "n0") == 1)
        model.add(v.evicts(db) == 0)

    assert solve(problem, [interpod.add], demand).status == INFEASIBLE
    assert solve(problem, [], demand).status == OPTIMAL


def _affine_to_db() -> Problem:
    # db (priority 1000) is never evicted; p needs an app=db pod on its node
    return problem_of(
        node("n0"),
        node("n1"),
        pod("db").on("n0").priority(1000).label("app", "db"),
        affine(
            pod("p").priority(10),
            {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": HOST},
        ),
    )


def test_affinity_lands_beside_the_pod_it_needs() -> None:
    problem = _affine_to_db()
    p = cls(problem, "p")
    assert problem.candidates[p] == {"n0": 1, "n1": 1}

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        model.add(v.placed([p]) == 1)

    out = solve(problem, [interpod.add], demand)
    assert (out.status, out.counts(p)) == (OPTIMAL, {"n0": 1})


def test_affinity_refuses_a_node_without_the_pod_it_needs() -> None:
    problem = _affine_to_db()
    p = cls(problem, "p")

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        model.add(at(v, p, "n1") == 1)

    assert solve(problem, [interpod.add], demand).status == INFEASIBLE
    assert solve(problem, [], demand).status == OPTIMAL


def test_spread_with_max_skew_one_splits_two_pods() -> None:
    problem = _pair("n0", "n1", rule="spread")
    g = cls(problem, "g-0")

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        model.add(v.placed([g]) == 2)

    out = solve(problem, [interpod.add], demand)
    assert (out.status, out.counts(g)) == (OPTIMAL, {"n0": 1, "n1": 1})


def test_spread_with_max_skew_one_refuses_both_pods_on_one_node() -> None:
    problem = _pair("n0", "n1", rule="spread")
    g = cls(problem, "g-0")
    assert problem.candidates[g] == {"n0": 2, "n1": 2}

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        model.add(v.placed([g]) == 2)
        model.add(at(v, g, "n0") == 2)

    assert solve(problem, [interpod.add], demand).status == INFEASIBLE
    assert solve(problem, [], demand).status == OPTIMAL


def _two_port_80_pods(*nodes: str) -> Problem:
    # a and b are two classes (two standalone pods of two priorities: alike ones would pool
    # into one class): pre-filtering caps each at one pod per node, not the two together
    return problem_of(
        *(node(n) for n in nodes), host_port(pod("a"), 80), host_port(pod("b").priority(1), 80)
    )


def test_two_pods_with_one_host_port_take_two_nodes() -> None:
    problem = _two_port_80_pods("n0", "n1")
    a, b = cls(problem, "a"), cls(problem, "b")

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        # without capacity, a class could exceed its one pod
        model.add(v.placed([a]) == 1)
        model.add(v.placed([b]) == 1)
        model.add(at(v, a, "n1") == 1)

    out = solve(problem, [interpod.add], demand)
    assert out.status == OPTIMAL
    assert (out.counts(a), out.counts(b)) == ({"n1": 1}, {"n0": 1})


def test_two_pods_with_one_host_port_do_not_share_a_node() -> None:
    problem = _two_port_80_pods("n0")
    a, b = cls(problem, "a"), cls(problem, "b")
    assert problem.candidates[a] == problem.candidates[b] == {"n0": 1}

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        model.add(v.placed([a, b]) == 2)

    assert solve(problem, [interpod.add], demand).status == INFEASIBLE
    assert solve(problem, [], demand).status == OPTIMAL


def test_the_conflicts_interpod_returns_are_what_makes_preemption_allow_the_eviction() -> None:
    # "q" (below "low") may land on n0, so low's eviction needs a reason: capacity gives none
    # (everything fits), the anti-affinity conflict with p does, but only as interpod hands it on
    problem = problem_of(node("n0"), pod("low").on("n0").cpu_m(500).priority(1).label("app", "x"),
                         anti(pod("p").cpu_m(1000).priority(100), term(HOST, app="x")), pod("q").cpu_m(500).priority(0))
    p = cls(problem, "p")

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        model.add(at(v, p, "n0") == 1)

    assert solve(problem, [build.constrain], demand).status == OPTIMAL
    dropped = solve(problem, [interpod.add, preemption.add], demand)  # the handoff left out
    assert dropped.status == INFEASIBLE
