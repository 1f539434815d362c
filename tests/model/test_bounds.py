"""The floors on PDB violations, cost and evicted pods (solver/model/bounds/floors.py): never above
the optimum, met where they are exact, and the plan built from them valid.

The naive model (tests/pipeline/naive.py) knows nothing of the floor's programs: on random
single-gang clusters the floor stays at or under its optimum, and the plan the programs
build passes the independent verifier.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from solver import api, verify
from solver.baseline import greedy
from solver.bench import generate
from solver.model.bounds import floors
from solver.model.build import build_model
from solver.model.solve import SolveParams, solve
from solver.plan.decode import make_plan
from solver.problem.assignment import evaluate
from solver.problem.build import build_problem
from tests import builders as b
from tests.pipeline.naive import naive_tiers


@st.composite
def single_gangs(draw: Any) -> list[Any]:
    """One pending gang (a PodGroup, or a CompositePodGroup of equal PodGroups) on a few racks in two zones,
    over running pods some budgets count, some priorities it may not preempt, `all` units."""
    objs: list[Any] = []
    n_nodes = draw(st.integers(2, 5))
    nodes = [f"n{i}" for i in range(n_nodes)]
    for i, name in enumerate(nodes):
        objs.append(b.node(name).cpu_m(draw(st.sampled_from([3000, 4000]))).rack(f"r{i // 2}").zone(f"z{i // 2 % 2}"))
    bg = 0
    for name in nodes:  # one to three running pods per node
        for _ in range(draw(st.integers(1, 3))):
            p = b.pod(f"bg{bg}").on(name).cpu_m(draw(st.sampled_from([500, 1000, 2000])))
            p.priority(draw(st.sampled_from([0, 0, 10, 500])))
            if draw(st.integers(0, 4)):
                p.label("app", draw(st.sampled_from(["db", "web"])))
            objs.append(p)
            bg += 1
    if draw(st.booleans()):  # an `all` unit over two nodes, counted by a budget or not
        objs.append(b.pod_group("svc", 2).disruption_all().priority(0))
        for k in range(2):
            p = b.pod(f"svc-{k}").group("svc").on(nodes[k]).cpu_m(500)
            if draw(st.booleans()):
                p.label("app", "db")
            objs.append(p)
    objs.append(b.pdb("db", draw(st.sampled_from([0, 0, 1])), app="db"))
    if draw(st.booleans()):
        objs.append(b.pdb("web", draw(st.integers(0, 1)), app="web"))
    cpu = draw(st.sampled_from([1000, 2000, 2500]))
    pods = draw(st.integers(1, 3))
    if draw(st.booleans()):
        objs.append(b.pod_group("job", pods).priority(100).topology(b.RACK))
        objs += [b.pod(f"job-{j}").group("job").cpu_m(cpu) for j in range(pods)]
    else:
        objs.append(b.composite("job").priority(100).topology(b.ZONE))
        for k in range(2):
            objs.append(b.pod_group(f"job-{k}", pods).parent("job").topology(b.RACK))
            objs += [b.pod(f"job-{k}-{j}").group(f"job-{k}").cpu_m(cpu) for j in range(pods)]
    return objs


@pytest.mark.slow
@given(single_gangs())
@settings(max_examples=150)
def test_the_floor_never_exceeds_the_optimum_and_its_plan_is_valid(objs: list[Any]) -> None:
    snap = b.snapshot(*objs)
    problem = build_problem(snap, pdb_policy="soft")
    floor = floors.pdb_floor(problem)
    want = naive_tiers(snap)
    every = want.placed == sum(1 for p in snap.pods if p.node is None)
    event(f"floor applies: {floor is not None}; every pod placed: {every}")
    if floor is None or not every:
        return
    event(f"floor > 0: {floor.violations > 0}")
    assert floor.violations <= want.pdb_violations
    assert floor.evicted_pods <= want.evicted
    event(f"floor is the optimum: {floor.violations == want.pdb_violations}")
    cost = floors.cost_floor(problem, want.pdb_violations)
    assert cost is not None and cost.cost <= want.cost_milli
    event(f"cost floor is the optimum: {cost.cost == want.cost_milli}")
    if cost.plan is not None:
        event("cost plan built")
        assert verify.verify(snap.facts, snap, make_plan(problem, cost.plan, stats={})) == []
        got = evaluate(problem, cost.plan)
        # it may break more budgets than the optimum, never beat it
        assert got.placed == want.placed
        assert (got.pdb_violations, got.cost_milli, got.evicted_pods) >= \
            (want.pdb_violations, want.cost_milli, want.evicted)
        event(f"cost plan is the optimum: {(got.pdb_violations, got.cost_milli) == (want.pdb_violations, want.cost_milli)}")
    if floor.plan is not None:
        event("plan built")
        plan = make_plan(problem, floor.plan, stats={})
        assert verify.verify(snap.facts, snap, plan) == []
        assert evaluate(problem, floor.plan).placed == want.placed
    # the solver with the floor in its PDB stage still finds the naive model's tiers
    o = api.plan(snap, api.PlanOptions(time_limit=60, pdb_policy="soft")).objective
    assert (o.placed_pods, o.pdb_violations, round(o.preemption_cost * 1000)) == \
        (want.placed, want.pdb_violations, want.cost_milli)
    # and its bounds (the domains' floors, whole or one by one, priced or not) never pass the
    # optimum, given all the time or almost none
    for limit in (60, 0.2):
        o = api.plan(snap, api.PlanOptions(time_limit=limit, pdb_policy="soft")).objective
        assert o.pdb_violations_bound <= want.pdb_violations
        if o.pdb_violations_bound == want.pdb_violations:
            assert round(o.preemption_cost_bound * 1000) <= want.cost_milli
            if round(o.preemption_cost_bound * 1000) == want.cost_milli:
                assert o.evicted_pods_bound <= want.evicted


def _composite_cluster() -> Any:
    # one zone of 8 racks of 16 nodes, 90 % busy; a CompositePodGroup of three rack gangs of 32
    spec = generate.GenerateSpec(nodes=128, pods_per_node=6, utilisation=0.9, gang_pods=0,
                                 composite_groups=3, composite_pods=32)
    return b.snapshot(*generate.generate(spec))


@pytest.mark.slow
def test_the_floor_is_the_proven_optimum_on_a_composite_of_rack_gangs() -> None:
    snap = _composite_cluster()
    problem = build_problem(snap, pdb_policy="soft")
    floor = floors.pdb_floor(problem)
    assert floor is not None
    # the cheapest racks need 48 budget-counted pods out; the budgets allow 4 × 5 of them
    assert (floor.evictions, floor.violations) == (48, 28)
    # without the floor, CP-SAT alone proves the same optimum of the PDB stage
    built = dataclasses.replace(build_model(problem), pdb_floor=None)
    alone = solve(built, SolveParams(time_limit=120), upto_cost=True)
    assert alone.status == "OPTIMAL"
    assert evaluate(problem, alone.assignment).pdb_violations == floor.violations
    assert floor.plan is not None
    assert evaluate(problem, floor.plan).pdb_violations == floor.violations
    # at those violations, the cost floor; CP-SAT proves 884000 optimal in about a minute
    cost = floors.cost_floor(problem, floor.violations)
    assert cost is not None and cost.cost == 763000
    assert floor.evicted_pods == 48


def test_no_floor_outside_its_shape() -> None:
    two = [b.node("n0").cpu_m(4000).rack("r0"), b.pdb("db", 0, app="db"),
           b.pod("bg").on("n0").cpu_m(3000).label("app", "db"),
           b.pod_group("a", 1).priority(100), b.pod("a-0").group("a").cpu_m(2000),
           b.pod_group("c", 1).priority(100), b.pod("c-0").group("c").cpu_m(2000)]
    assert floors.pdb_floor(build_problem(b.snapshot(*two), pdb_policy="soft")) is None  # two workloads
    one = two[:5]
    assert floors.pdb_floor(build_problem(b.snapshot(*one), pdb_policy="soft")) is not None
    assert floors.pdb_floor(build_problem(b.snapshot(*one), pdb_policy="strict")) is None  # hard budgets
    mixed = one + [b.pod("a-1").group("a").cpu_m(1000)]
    assert floors.pdb_floor(build_problem(b.snapshot(*mixed), pdb_policy="soft")) is None  # two shapes


def test_the_rest_of_a_composite_is_not_spread_over_two_racks() -> None:
    # found by the floor's property test: with job-0 placed, the greedy's next cycle for the rest
    # put job-1's two pods in r0 and r1, a plan api.plan then refused as invalid
    objs = [b.node("n0").cpu_m(3000).rack("r0").zone("z0"), b.node("n1").cpu_m(4000).rack("r0").zone("z0"),
            b.node("n2").cpu_m(3000).rack("r1").zone("z0"), b.node("n3").cpu_m(3000).rack("r1").zone("z0"),
            b.pod("bg0").on("n0").cpu_m(500).priority(0), b.pod("bg1").on("n1").cpu_m(500).priority(0),
            b.pod("bg2").on("n2").cpu_m(500).priority(0),
            b.pod("bg3").on("n3").cpu_m(2000).priority(0).label("app", "db"), b.pdb("db", 0, app="db"),
            b.composite("job").priority(100).topology(b.ZONE)]
    for k in range(2):
        objs.append(b.pod_group(f"job-{k}", 2).parent("job").topology(b.RACK))
        objs += [b.pod(f"job-{k}-{j}").group(f"job-{k}").cpu_m(2000) for j in range(2)]
    snap = b.snapshot(*objs)
    problem = build_problem(snap, pdb_policy="soft")
    for assignment in (greedy.hint(problem), greedy.baseline(problem)):
        assert verify.verify(snap.facts, snap, make_plan(problem, assignment, stats={})) == []
    o = api.plan(snap, api.PlanOptions(time_limit=60, pdb_policy="soft")).objective
    assert (o.placed_pods, o.pdb_violations, o.evicted_pods) == (4, 1, 1)


def test_host_ports_keep_the_floors_out_and_a_plan_is_taken_only_if_the_model_accepts_it() -> None:
    # found by the thorough property test: the cost floor's plan ignored bg1's host port and
    # put w0-0 beside it without evicting it; the cost stage took that plan without a search
    def port(pb: Any) -> Any:
        pb.obj["spec"]["containers"][0]["ports"] = [{"containerPort": 8080, "hostPort": 8080}]
        return pb

    snap = b.snapshot(
        b.node("n0").cpu_m(2000).pods(3).taint("dedicated", "x"), b.node("n1").cpu_m(2000).pods(3),
        b.pod("bg0").on("n0").cpu_m(500).priority(0), port(b.pod("bg1").on("n1").cpu_m(500).priority(0)),
        b.pod_group("w0", 1).priority(20), port(b.pod("w0-0").group("w0").cpu_m(500)),
        b.pod("w0-run").group("w0").on("n0").cpu_m(500))
    assert floors.cost_floor(build_problem(snap, pdb_policy="soft"), 0) is None
    plan = api.plan(snap, api.PlanOptions(time_limit=60, pdb_policy="soft"))
    assert verify.verify(snap.facts, snap, plan) == []
    o = plan.objective
    assert (plan.status, o.placed_pods, o.evicted_pods, o.preemption_cost) == ("OPTIMAL", 1, 1, 1.0)


@given(st.lists(st.lists(st.tuples(st.integers(0, 6), st.integers(1, 5)), min_size=1, max_size=3),
                min_size=0, max_size=6),
       st.integers(1, 4), st.integers(1, 4))
def test_one_program_gives_every_count_the_rack_program_asks_for(nodes: list[list[tuple[int, int]]],
                                                                 pods: int, groups: int) -> None:
    """``_by_count`` (one program, its suffix minima) against ``_domain`` run per count."""
    names = [f"n{i}" for i in range(len(nodes))]
    options = {name: tuple((float(w), cap) for w, cap in opts) for name, opts in zip(names, nodes, strict=True)}
    expected = [floors._domain(names, options, j * pods)[0] if j else 0.0 for j in range(groups + 1)]
    assert floors._by_count(names, options, pods, groups) == expected


def test_no_floor_when_a_gang_short_of_pods_can_place_none() -> None:
    """A gang of minCount 2 with one pending pod places nothing in any plan, so "every pending
    pod placed" has no plan and no floor. The floor's plan once placed the pod alone, and the
    decomposed solve (a rack topology) took that plan, which breaks the gang (found by the
    property test's thorough profile)."""
    objs = [b.node("n2").cpu_m(2000).rack("r1"), b.node("n3").cpu_m(2000).rack("r1"),
            b.pod_group("w0", 2).priority(20).topology(b.RACK), b.pod("w0-0").group("w0").cpu_m(500),
            b.pdb("db", 0, app="db")]
    snap = b.snapshot(*objs)
    assert floors.pdb_floor(build_problem(snap, pdb_policy="soft")) is None
    plan = api.plan(snap, api.PlanOptions(time_limit=10, pdb_policy="soft"))
    assert plan.bindings == () and verify.verify(snap.facts, snap, plan) == []


def test_the_floor_lays_a_class_only_on_its_own_nodes() -> None:
    """w0-0 and w0-1 ask the same cpu, but only w0-1 may use n0 and n1 (w0-0's volume needs a
    CSI driver no node has). The floor's programs lay any class's pods on any class's nodes,
    so they do not apply: the plan once bound w0-0 on n0 (found by the thorough profile)."""
    from tests.pipeline.test_volume_limits import _uses, _volume

    driver = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": "csi.example.com"},
              "spec": {"preventPodSchedulingIfMissing": True}}
    objs = [b.node("n0").cpu_m(2000).pods(3), b.node("n1").cpu_m(2000).pods(3), b.pod_group("vic", 1).priority(0),
            _uses(b.pod("vic-0").group("vic").on("n0").cpu_m(500).label("app", "db"), "vol0"),
            b.pod_group("w0").priority(20), _uses(b.pod("w0-0").group("w0").cpu_m(500), "vol0"),
            b.pod("w0-1").group("w0").cpu_m(500), _uses(b.pod("w0-run").group("w0").on("n0").cpu_m(500), "vol0"),
            driver, *_volume("vol0", "vol0"), b.pdb("db", 0, app="db")]
    snap = b.snapshot(*objs)
    assert floors.pdb_floor(build_problem(snap, pdb_policy="soft")) is None
    plan = api.plan(snap, api.PlanOptions(time_limit=10, pdb_policy="soft"))
    assert [x.pod for x in plan.bindings] == ["default/w0-1"] and verify.verify(snap.facts, snap, plan) == []


@settings(max_examples=200)
@given(st.lists(st.tuples(st.integers(1, 3), st.integers(0, 5)), max_size=14), st.integers(0, 12))
def test_the_node_knapsack_of_alike_victims_equals_the_item_by_item_one(items: list[tuple[int, int]],
                                                                         total: int) -> None:
    """floors._most_freed takes equal (weight, amount) victims as one item split in powers of
    two (a node of 3,000 alike pods took 6 s item by item): the same table as the plain 0/1
    knapsack over every item."""
    plain = [0] * (total + 1)
    for weight, amount in items:
        for x in range(total, weight - 1, -1):
            plain[x] = max(plain[x], plain[x - weight] + amount)
    assert floors._most_freed(items, total) == plain


def test_the_node_knapsack_stops_when_asked() -> None:
    assert floors._most_freed([(1, 1)] * 5, 5, stop=lambda: True) is None
    assert floors._most_freed([(1, 1)] * 5, 5, stop=lambda: False) == [0, 1, 2, 3, 4, 5]


def test_the_cost_floor_stops_when_asked() -> None:
    """The decomposition prices a finalist's cost floor inside its deadline (0.5-1.7 s for one
    zone of scale-15000): stopped, it gives no floor rather than one over some nodes."""
    problem = build_problem(_composite_cluster(), pdb_policy="soft")
    calls = []

    def stop_at_the_tenth() -> bool:
        calls.append(1)
        return len(calls) >= 10

    assert floors.cost_floor(problem, 28, stop=stop_at_the_tenth) is None and len(calls) == 10
    cost = floors.cost_floor(problem, 28, stop=lambda: False)
    assert cost is not None and cost.cost == 763000
