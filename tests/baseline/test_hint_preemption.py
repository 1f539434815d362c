"""Preemption for pods outside any group at scale (issue 51, item 4). The hint: each pod tries
its nodes one at a time with that node's victims only, and a pooled class remembers that its
last pod found no room without preempting. The baseline: DefaultPreemption's dry run stops at
upstream's number of candidates. Exact outcomes and bounds on the work done (counted calls,
never times), under both PDB policies; each plan passes the verifier."""

from __future__ import annotations

from typing import Any

import pytest

from solver import reading, verify
from solver.baseline import greedy
from solver.baseline.preempt import HINT_PREEMPTION_NODES
from solver.baseline.state import State
from solver.bench import generate
from solver.plan.decode import make_plan
from solver.problem.build import Problem, build_problem
from tests import builders as b

NODES = 40
PER_NODE = 4  # victims of 900m on each 4-cpu node; a preemptor of 3970m needs all four gone


def _preemption_basic(policy: str) -> tuple[Any, Problem]:
    snap = reading.read(generate.preemption_basic(nodes=NODES, init_pods=NODES * PER_NODE, pods=NODES))
    return snap, build_problem(snap, pdb_policy=policy)


def _counting(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    calls = [0]
    real = getattr(State, name)

    def counted(self: State, *args: Any, **kw: Any) -> Any:
        calls[0] += 1
        return real(self, *args, **kw)

    monkeypatch.setattr(State, name, counted)
    return calls


@pytest.mark.parametrize("policy", ["strict", "soft"])
def test_each_preemptor_evicts_on_the_few_nodes_it_tries_not_on_every_node(
        monkeypatch: pytest.MonkeyPatch, policy: str) -> None:
    snap, problem = _preemption_basic(policy)
    evictions = _counting(monkeypatch, "evict")
    assignment = greedy.hint(problem)
    # every preemptor placed, one to a node, every victim of those nodes gone (each is needed)
    per_node: dict[str, int] = {}
    for (_, node), n in assignment.counts.items():
        per_node[node] = per_node.get(node, 0) + n
    assert sorted(per_node.values()) == [1] * NODES and len(assignment.evicted) == NODES * PER_NODE
    assert verify.verify(snap.facts, snap, make_plan(problem, assignment, stats={})) == []
    # per pod, at most HINT_PREEMPTION_NODES tries and the one kept, each evicting its node's
    # victims and evicting again those the reprieve cannot return; then the walk's last reprieve,
    # once a victim. Evicting every candidate in the cluster and reprieving them (the walk
    # before) took 3,600 here
    assert evictions[0] <= NODES * (HINT_PREEMPTION_NODES + 1) * 2 * PER_NODE + NODES * PER_NODE


@pytest.mark.parametrize("policy", ["strict", "soft"])
def test_a_pooled_class_that_found_no_room_tries_only_the_nodes_freed_since(
        monkeypatch: pytest.MonkeyPatch, policy: str) -> None:
    _, problem = _preemption_basic(policy)
    rooms = _counting(monkeypatch, "room_for")
    assert sum(greedy.hint(problem).counts.values()) == NODES
    # without the memory every pod asks every node first: 40 pods x 40 nodes, and more
    assert rooms[0] <= NODES * (HINT_PREEMPTION_NODES + 1 + PER_NODE + 1)


def test_the_memory_is_taken_back_with_the_state_it_described() -> None:
    snap = b.snapshot(b.node("n0").cpu_m(1000), b.pod("p").cpu_m(500))
    state = State(build_problem(snap))
    state.place(0, "n0", 1)
    at = state.savepoint()
    state.no_room[0] = at
    state.no_preempt[0] = at
    state.place(0, "n0", 1)
    state.rollback(at)  # what came after: the memory holds
    assert state.no_room == {0: at} and state.no_preempt == {0: at} and state.freed_since(0) == set()
    state.rollback(at - 1)  # the state it described is undone: forgotten
    assert state.no_room == {} and state.no_preempt == {} and state.freed_since(0) is None


@pytest.mark.parametrize("policy", ["strict", "soft"])
def test_the_hint_takes_the_cheaper_of_the_nodes_it_compares(policy: str) -> None:
    """n0 comes first, but its victim is worth more (priority 50) than n1's (priority 10)."""
    snap = b.snapshot(b.node("n0").cpu_m(1000), b.node("n1").cpu_m(1000),
                      b.pod("dear").on("n0").cpu_m(800).priority(50), b.pod("cheap").on("n1").cpu_m(800).priority(10),
                      b.pod("p").cpu_m(800).priority(100))
    problem = build_problem(snap, pdb_policy=policy)
    assignment = greedy.hint(problem)
    assert [node for (_, node), n in assignment.counts.items() if n] == ["n1"]
    assert [problem.units[u].key for u in assignment.evicted] == ["default/cheap"]
    assert verify.verify(snap.facts, snap, make_plan(problem, assignment, stats={})) == []


@pytest.mark.parametrize("policy", ["strict", "soft"])
def test_the_baselines_dry_run_stops_at_upstreams_number_of_candidates(policy: str) -> None:
    """150 nodes, each with one victim; the last one's is the cheapest (the lowest priority).
    DefaultPreemption compares max(10 %, 100) = 100 candidates: the baseline, starting at the
    first node, never reaches the last, and takes the best of the first 100 (the first: ties)."""
    from solver.baseline.preempt import candidates_to_find

    assert [candidates_to_find(n) for n in (50, 100, 150, 1000, 5000)] == [50, 100, 100, 100, 500]
    objs: list[Any] = []
    for k in range(150):
        objs += [b.node(f"n{k:03d}").cpu_m(1000),
                 b.pod(f"v{k:03d}").on(f"n{k:03d}").cpu_m(800).priority(10 if k == 149 else 50)]
    snap = b.snapshot(*objs, b.pod("p").cpu_m(800).priority(100))
    problem = build_problem(snap, pdb_policy=policy)
    assignment = greedy.baseline(problem)
    assert [node for (_, node), n in assignment.counts.items() if n] == ["n000"]
    assert [problem.units[u].key for u in assignment.evicted] == ["default/v000"]
    assert verify.verify(snap.facts, snap, make_plan(problem, assignment, stats={})) == []
