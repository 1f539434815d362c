"""The first tier's bound that knows a gang lives in one domain (solver/model/bounds/domains.py):
tighter than room alone where the room is split over domains, merged with the room bound level
by level, and an upper bound on every plan (the property tests compare it with the naive model
under both PDB policies)."""

from __future__ import annotations

from typing import Any

import pytest

from solver import api, reading, verify
from solver.api import score
from solver.baseline import greedy
from solver.bench import generate
from solver.model.bounds import domains, room
from solver.problem.build import Problem, build_problem
from tests.builders import RACK, composite, facts_and, node, pdb, pod, pod_group, snapshot


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
    # two gangs of three: their 6 pods are all two satisfied workloads may place, so the
    # placed pods are proven too (the bound was every pending pod, 9), and nothing is evicted
    assert (o.satisfied_workloads, o.satisfied_bound, o.placed_pods, o.placed_bound) == (2, 2, 6, 6)
    assert plan.status == "OPTIMAL" and o.gap_tier == ""


def _one_budget_three_racks() -> list[Any]:
    """Racks r0, r1 and r2: each an empty 4-core node (2 slots of 2 cores) and a 4-core node
    full of two 2-core pods a budget allowing 2 covers. Gangs a, b and c of four 2-core pods,
    one rack each: each needs both its rack's budget pods gone."""
    objs: list[Any] = [pdb("db", 2, app="db")]
    for r in ("r0", "r1", "r2"):
        objs += [node(f"{r}-empty").rack(r).cpu_m(4000), node(f"{r}-full").rack(r).cpu_m(4000),
                 *(pod(f"{r}-db{i}").on(f"{r}-full").cpu_m(2000).label("app", "db") for i in range(2))]
    return objs + [o for g in "abc" for o in _gang(g, 4, 2000, 10)]


@pytest.mark.parametrize("policy, pooled, most", [("strict", 2, 1), ("soft", 3, 3)])
def test_a_budget_is_shared_by_the_racks_it_spans(policy: str, pooled: int, most: int) -> None:
    """What a budget lets go is counted once over the cluster, not once per rack: under strict
    budgets its two evictions empty one rack's full node (by volume 6 free slots and 2 freed
    hold two gangs, and each rack alone with the budget's two holds one); under soft ones every
    rack's pods go."""
    objs = _one_budget_three_racks()
    problem = build_problem(snapshot(*objs), pdb_policy=policy)
    assert room.satisfied_bound(problem) == ((10, pooled),)
    assert domains.satisfied_caps(problem, 10) == {10: most}
    plan = api.plan(snapshot(*objs), api.PlanOptions(time_limit=10, pdb_policy=policy))
    assert plan.objective.satisfied_workloads == most


def test_the_slots_an_eviction_frees_are_counted_on_its_node() -> None:
    """Rack r0: n0, n1 and n2 each hold a 1-core pod that stays, n0 a 3-core pod a budget
    covers too. Gangs a and b of two 2-core pods each fit alone; together they ask 4 slots, and
    evicting the budget's pod leaves n0 3 cores, one slot: 3 in all, though the rack's cores
    (9) hold 4 pods' and the evicted pod, cut into 2-core slots, rounds up to two."""
    objs = [pdb("db", 1, app="db"), *(node(f"n{i}").rack("r0").cpu_m(4000) for i in range(3)),
            *(pod(f"stay{i}").on(f"n{i}").cpu_m(1000).priority(100) for i in range(3)),
            pod("db").on("n0").cpu_m(3000).label("app", "db"), *_gang("a", 2, 2000, 10), *_gang("b", 2, 2000, 10)]
    problem = build_problem(snapshot(*objs), pdb_policy="strict")
    assert room.satisfied_bound(problem) == ((10, 2),)
    assert domains.satisfied_caps(problem, 10) == {10: 1}
    assert api.plan(snapshot(*objs), api.PlanOptions(time_limit=10)).objective.satisfied_workloads == 1


def _block_and_a_small_gang() -> list[Any]:
    """Block B: rack r0 of 5 slots (a 4-core and a 6-core node, 2-core pods), rack r1 of 2 (a
    4-core node). A CompositePodGroup c (block) of x (2 pods) and y (4 pods), each in a rack,
    and a gang g of 1 pod (rack). All fit (x in r1; y and g in r0); the hint, smallest first,
    puts g in r1 (the tightest rack), then x in r0, and y finds no rack."""
    block = "topology.kubernetes.io/block"
    objs: list[Any] = [node("n0").rack("r0").label(block, "B").cpu_m(4000),
                       node("n1").rack("r0").label(block, "B").cpu_m(6000),
                       node("n2").rack("r1").label(block, "B").cpu_m(4000),
                       composite("c", 2).topology(block).priority(10)]
    for child, pods in (("x", 2), ("y", 4)):
        objs += [pod_group(child, pods).parent("c").topology(RACK).priority(10),
                 *(pod(f"{child}-{i}").group(child).cpu_m(2000).priority(10) for i in range(pods))]
    return objs + _gang("g", 1, 2000, 10)


@pytest.mark.parametrize("policy", ["strict", "soft"])
def test_the_walk_guided_by_the_domain_choice_places_what_the_hint_does_not(policy: str) -> None:
    """The relaxation chooses c (in B) and g; the guided walk places its choice first, the
    largest first, c's children each in the tightest rack that holds it: both are satisfied,
    the bound is reached and the plan is proven, where the hint's walk alone satisfied one."""
    problem = build_problem(snapshot(*_block_and_a_small_gang()), pdb_policy=policy)
    choice = domains.choose(problem, 10)
    assert choice.caps == {10: 2}
    assert sorted(problem.workloads[w].key for w in choice.where) == ["CompositePodGroup/default/c", "default/g"]
    assert score(problem, greedy.hint(problem)).satisfied == ((10, 1),)
    guided = greedy.guided(problem, choice.where)
    assert score(problem, guided).satisfied == ((10, 2),)
    on = {(problem.classes[c].group[-1], node): n for (c, node), n in guided.counts.items()}
    assert on == {("x", "n2"): 2, ("y", "n0"): 2, ("y", "n1"): 2, ("g", "n1"): 1}


def test_a_plan_without_a_model_walks_the_domain_choice_and_proves_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(api, "BUILD_SECONDS_PER_VARIABLE", 1e6)  # no model: the hint is the plan
    snap = snapshot(*_block_and_a_small_gang())
    plan = api.plan(snap, api.PlanOptions(time_limit=10, pdb_policy="soft"))
    assert plan.stats["cut"] == ["model"] and "guidedSeconds" in plan.stats
    assert (plan.objective.satisfied_workloads, plan.objective.satisfied_bound) == (2, 2)
    # upstream's walk (run too, with the time there is) reaches it as well and is compared first;
    # without it the guided walk's plan is the one taken
    monkeypatch.setattr(api, "BASELINE_PER_HINT", 1e9)
    plan = api.plan(snap, api.PlanOptions(time_limit=10, pdb_policy="soft"))
    assert plan.stats["fromGuided"] and plan.objective.satisfied_workloads == 2
    assert verify.verify(*facts_and(snap), plan) == []


def test_a_composite_whose_children_fit_no_set_of_its_racks_is_not_counted() -> None:
    """Block B: racks of 4, 3 and 3 slots; block B2: a rack of 3. A CompositePodGroup (block)
    of two 4-pod PodGroups (rack), and a 3-pod gang g (rack). By volume both fit (11 of 13
    slots) and each of c's children fits rack r0 alone, but only r0 holds 4: c fits no block,
    and the bound knows (its two largest children need racks of 4 that hold 8)."""
    block = "topology.kubernetes.io/block"
    objs: list[Any] = [node("n0").rack("r0").label(block, "B").cpu_m(8000),
                       node("n1").rack("r1").label(block, "B").cpu_m(6000),
                       node("n2").rack("r2").label(block, "B").cpu_m(6000),
                       node("n3").rack("r3").label(block, "B2").cpu_m(6000),
                       composite("c", 2).topology(block).priority(10), *_gang("g", 3, 2000, 10)]
    for child in ("x", "y"):
        objs += [pod_group(child, 4).parent("c").topology(RACK).priority(10),
                 *(pod(f"{child}-{i}").group(child).cpu_m(2000).priority(10) for i in range(4))]
    problem = build_problem(snapshot(*objs), pdb_policy="soft")
    assert room.satisfied_bound(problem) == ((10, 2),)
    assert domains.satisfied_caps(problem, 10) == {10: 1}
    assert api.plan(snapshot(*objs), api.PlanOptions(time_limit=10)).objective.satisfied_workloads == 1


def test_the_chosen_workloads_placed_exactly_in_their_domains_reach_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """The second level exactly: on a small contention case under strict budgets (64 nodes, 6
    workloads) both walks satisfy one training workload where two fit within the budgets; a
    model of the chosen workloads' classes on their domains' nodes finds them, and the first
    tier is proven."""
    snap = reading.read(generate.contention(nodes=64, workloads=6, seed=5))
    problem = build_problem(snap, pdb_policy="strict")
    choice = domains.choose(problem, 10)
    assert choice.caps == {1000: 2, 100: 0}
    assert score(problem, greedy.hint(problem)).satisfied == ((1000, 1), (100, 0))
    assert score(problem, greedy.guided(problem, choice.where)).satisfied == ((1000, 1), (100, 0))
    real = api._build_estimate
    whole = sum(map(len, problem.candidates))
    # the whole problem too large to build in time, the chosen part not
    monkeypatch.setattr(api, "_build_estimate", lambda p: 1e9 if sum(map(len, p.candidates)) >= whole else real(p))
    plan = api.plan(snap, api.PlanOptions(time_limit=10))
    assert plan.stats["cut"] == ["model"] and plan.stats["fromChosen"]
    o = plan.objective
    assert (o.satisfied_by_priority, o.pdb_violations) == ({1000: 2, 100: 0}, 0)
    assert o.gap_tier != "satisfiedWorkloads"  # the first tier is proven
    assert verify.verify(snap.facts, snap, plan, strict_pdbs=True) == []


@pytest.mark.parametrize("policy", ["strict", "soft"])
def test_without_a_model_the_pods_placed_are_bounded_by_the_workloads_the_caps_allow(
        policy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """With every priority at its proven cap, a plan places pods only of the workloads it
    satisfies: the relaxation's most pods under the caps bounds the second tier (it was the
    trivial one, every pending pod: contention-5000's 99.9 % on placedPods). Here c and g fill
    the block, and a 6-pod gang of a lower priority finds no room in any plan."""
    monkeypatch.setattr(api, "BUILD_SECONDS_PER_VARIABLE", 1e6)  # no model: the hint is the plan
    snap = snapshot(*_block_and_a_small_gang(), *_gang("big", 6, 2000, 5))
    problem = build_problem(snap, pdb_policy=policy)
    choice = domains.choose(problem, 10)
    assert (choice.caps, choice.placed) == ({10: 2, 5: 0}, 7)
    plan = api.plan(snap, api.PlanOptions(time_limit=10, pdb_policy=policy))
    assert plan.stats["cut"] == ["model"]
    assert (plan.objective.placed_pods, plan.objective.placed_bound) == (7, 7)
    assert plan.status == "OPTIMAL" and verify.verify(*facts_and(snap), plan) == []
