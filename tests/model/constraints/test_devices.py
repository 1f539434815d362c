"""devices: every claim request of a placed pod takes its devices from types its node
reaches, and no device type hands out more devices than it has free, counting those a
running holder frees when the plan evicts it."""

from __future__ import annotations

from ortools.sat.python import cp_model

from solver.model.constraints import devices
from solver.model.vars import PlacementVars
from solver.problem.build import Problem
from tests.builders import node, pod
from tests.dra_builders import (
    DRIVER,
    claim,
    claim_template,
    device_class,
    gpu_slice,
    request,
    with_claims,
)
from tests.model.constraints.helpers import (
    INFEASIBLE,
    OPTIMAL,
    at,
    cls,
    problem_of,
    solve,
    unit,
)

GPU = device_class("gpu", f'device.driver == "{DRIVER}"')
ONE_GPU = claim_template("one", request("gpu", count=1))


def _two_gpu_pods(*nodes: str) -> Problem:
    # p and q are two classes (two standalone pods of two priorities: alike ones would pool
    # into one class): the pre-filtering counts each class's own claims only, so on a
    # one-GPU node each fits alone
    objs: list[object] = [
        GPU,
        ONE_GPU,
        with_claims(pod("p"), gpu="one"),
        with_claims(pod("q").priority(1), gpu="one"),
    ]
    for name in nodes:
        objs += [node(name), gpu_slice(name, 1)]
    return problem_of(*objs)


def test_two_pods_take_one_gpu_each_on_two_nodes() -> None:
    problem = _two_gpu_pods("n0", "n1")
    p, q = cls(problem, "p"), cls(problem, "q")

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        # without capacity, a class could exceed its one pod
        model.add(v.placed([p]) == 1)
        model.add(v.placed([q]) == 1)
        model.add(at(v, p, "n0") == 1)

    out = solve(problem, [devices.add], demand)
    assert out.status == OPTIMAL
    assert (out.counts(p), out.counts(q)) == ({"n0": 1}, {"n1": 1})
    taken = {(c, node): out.value(var) for c, node, _, var in out.vars.pod_allocs()}
    assert {k: n for k, n in taken.items() if n} == {(p, "n0"): 1, (q, "n1"): 1}


def test_two_pods_do_not_share_the_one_gpu() -> None:
    problem = _two_gpu_pods("n0")
    p, q = cls(problem, "p"), cls(problem, "q")
    assert problem.candidates[p] == problem.candidates[q] == {"n0": 1}

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        model.add(v.placed([p, q]) == 2)

    assert solve(problem, [devices.add], demand).status == INFEASIBLE
    assert solve(problem, [], demand).status == OPTIMAL


def _held_gpu() -> Problem:
    # n0's only GPU is allocated to low's claim; hi, of higher priority, may evict low
    held = claim(
        "held",
        request("gpu"),
        allocated=[("n0", "gpu-0")],
        node="n0",
        reserved_for=["low"],
    )
    return problem_of(
        node("n0"),
        gpu_slice("n0", 1),
        GPU,
        ONE_GPU,
        held,
        with_claims(pod("low").on("n0").priority(10), gpu="claim:held"),
        with_claims(pod("hi").priority(100), gpu="one"),
    )


def test_a_held_gpu_is_taken_by_evicting_its_holder() -> None:
    problem = _held_gpu()
    hi, low = cls(problem, "hi"), unit(problem, "low")

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        model.add(at(v, hi, "n0") == 1)

    out = solve(problem, [devices.add], demand)
    assert out.status == OPTIMAL
    assert out.value(out.vars.evicts(low)) == 1


def test_a_held_gpu_is_not_taken_while_its_holder_stays() -> None:
    problem = _held_gpu()
    hi, low = cls(problem, "hi"), unit(problem, "low")

    def demand(model: cp_model.CpModel, v: PlacementVars) -> None:
        model.add(at(v, hi, "n0") == 1)
        model.add(v.evicts(low) == 0)

    assert solve(problem, [devices.add], demand).status == INFEASIBLE
    assert solve(problem, [], demand).status == OPTIMAL
