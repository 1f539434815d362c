"""The greedy state's room on every node at once (``State.rooms``, ``State.rooms_by_domain``):
the same numbers as ``room_for`` and ``room_evicting`` node by node, after placements,
evictions and their rollback; and the hint's walk the same with and without it, under both
PDB policies (contention-5000's hint spent 90 % of its time summing room node by node)."""

from __future__ import annotations

import pytest

from solver import reading
from solver.baseline import greedy
from solver.baseline.state import State
from solver.bench import generate
from solver.problem.build import Problem, build_problem

RACK = "topology.kubernetes.io/rack"


def _contention(policy: str) -> Problem:
    return build_problem(reading.read(generate.contention(nodes=96, workloads=12)), pdb_policy=policy)


def _agree(state: State) -> None:
    problem = state.problem
    names = [n.name for n in problem.nodes if any(n.name in cand for cand in problem.candidates)]
    for cls in problem.classes:
        assert state.requests_only(cls)
        assert state.rooms(cls).tolist() == [state.room_for(cls, n) for n in names]
        if cls.power is not None:
            assert state.rooms(cls, evicting=True).tolist() == [state.room_evicting(cls, n) for n in names]
    for w in problem.workloads:
        by_node = {}
        for c in w.classes:
            for n in problem.candidates[c]:
                value = state.nodes[n].labels.get(RACK)
                if value is not None:
                    by_node[value] = by_node.get(value, 0) + state.room_for(problem.classes[c], n)
        assert {v: room for v, _, room in state.rooms_by_domain(RACK, w.classes)} == by_node


@pytest.mark.parametrize("policy", ["strict", "soft"])
def test_rooms_at_once_are_room_for_node_by_node_through_changes_and_rollback(policy: str) -> None:
    problem = _contention(policy)
    state = State(problem)
    _agree(state)
    point = state.savepoint()
    victims = [u.index for u in problem.units if not u.protected][:40]
    for u in victims:
        state.evict(u)
    _agree(state)
    cls = problem.classes[0]
    for name in [n.name for n in problem.nodes][:30]:
        if room := state.room_for(cls, name):
            state.place(cls.index, name, min(room, 2))
    assert state.dirty  # the changes wait to be read
    _agree(state)
    state.rollback(point)
    _agree(state)


@pytest.mark.parametrize("policy", ["strict", "soft"])
def test_the_hint_is_the_same_with_rooms_at_once(policy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    problem = _contention(policy)
    fast = greedy.hint(problem)
    monkeypatch.setattr(State, "requests_only", lambda self, cls: False)  # node by node, as before
    slow = greedy.hint(problem)
    assert (fast.counts, fast.evicted) == (slow.counts, slow.evicted)
    assert fast.evicted  # the walk preempted: both ways of summing were used


def test_a_domains_sub_problem_sums_its_own_nodes_only() -> None:
    """A decomposition's sub-problem keeps the cluster's nodes with the candidates cut to one
    domain: its arrays hold that domain's rows (59 zones of scale-15000 each built arrays over
    all 15,000 nodes, five times the hint's walk), and give the same rooms as the whole."""
    from solver.model import decompose

    problem = _contention("soft")
    whole = State(problem)
    for value, sub in decompose.split(problem, RACK).items():
        state = State(sub)
        _agree(state)
        mine = {n for cand in sub.candidates for n in cand}
        assert set(state._arrays().names) == mine
        for w in sub.workloads:
            got = {v: room for v, _, room in state.rooms_by_domain(RACK, w.classes)}
            assert got == {v: room for v, _, room in whole.rooms_by_domain(RACK, w.classes) if v == value} or \
                not any(sub.candidates[c] for c in w.classes)
