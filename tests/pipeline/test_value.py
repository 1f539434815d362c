"""A workload's value (``gangplace.io/value`` on its root): the first tier sums the satisfied
workloads' values per priority, 1 each unless said (docs/design.md, "Objective"); and the first
tier's weighted sum splits into stages when it would not fit in int64."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from solver import api, verify
from solver.core.errors import SnapshotInvalidError
from solver.model.bounds import room
from solver.problem.build import build_problem
from tests.builders import composite, node, pod, pod_group, snapshot
from tests.pipeline.conftest import run_plan


def _shares(valued: bool) -> list[Any]:
    """A node of 1,000 millicores and five pods: three of 320, one of 810, one of 160."""
    sizes = {"a": 320, "b": 320, "c": 320, "big": 810, "small": 160}
    pods = [pod(name).cpu_m(m) for name, m in sizes.items()]
    return [node("n").cpu_m(1000), *(p.worth(sizes[p.obj["metadata"]["name"]]) if valued else p for p in pods)]


@pytest.mark.parametrize("pdb_policy", ["strict", "soft"])
def test_values_choose_the_workloads_worth_most_not_the_most_workloads(pdb_policy: str) -> None:
    # counted, three 320s (3 workloads, 960 millicores) beat an 810 and a 160 (2, 970); each
    # worth its millicores, the 810 and the 160 do
    plan, out = run_plan(*_shares(False), pdb_policy=pdb_policy)
    assert plan.status == "OPTIMAL"
    assert sorted(b.pod for b in plan.bindings) == ["default/a", "default/b", "default/c"]
    assert out["objective"]["satisfiedByPriority"] == {"0": 3} and out["objective"]["satisfiedBound"] == 3

    plan, out = run_plan(*_shares(True), pdb_policy=pdb_policy)
    assert plan.status == "OPTIMAL"
    assert sorted(b.pod for b in plan.bindings) == ["default/big", "default/small"]
    o = out["objective"]
    assert (o["satisfiedWorkloads"], o["satisfiedByPriority"], o["satisfiedBound"]) == (2, {"0": 970}, 970)


def test_the_greedy_baseline_reports_values_too() -> None:
    plan, out = run_plan(*_shares(True), baseline_only=True)
    satisfied = sum({"default/a": 320, "default/b": 320, "default/c": 320, "default/big": 810,
                     "default/small": 160}[b.pod] for b in plan.bindings)
    assert out["objective"]["satisfiedByPriority"] == {"0": satisfied}


def test_a_root_groups_value_is_its_gangs() -> None:
    # a node of 2 cores: a gang of two 1-core pods, or three standalone 600m pods; counted, the
    # three; the gang worth 5, the gang
    def objs(worth: int | None) -> list[Any]:
        gang = pod_group("g", 2)
        return [node("n").cpu_m(2000), gang if worth is None else gang.worth(worth),
                *(pod(f"g-{i}").group("g").cpu_m(1000) for i in range(2)),
                *(pod(f"s-{i}").cpu_m(600) for i in range(3))]

    plan, _ = run_plan(*objs(None))
    assert sorted(b.pod for b in plan.bindings) == ["default/s-0", "default/s-1", "default/s-2"]
    plan, out = run_plan(*objs(5))
    assert plan.status == "OPTIMAL"
    assert sorted(b.pod for b in plan.bindings) == ["default/g-0", "default/g-1"]
    assert out["objective"]["satisfiedByPriority"] == {"0": 5}


def test_alike_pods_of_other_values_are_other_classes() -> None:
    problem = build_problem(snapshot(node("n"), pod("a").cpu_m(100), pod("b").cpu_m(100).worth(2),
                                     pod("c").cpu_m(100).worth(2)))
    assert sorted(len(c.pods) for c in problem.classes) == [1, 2]
    assert sorted(w.value for w in problem.workloads) == [1, 2, 2]


def test_the_verifier_reads_the_values_itself() -> None:
    snap = snapshot(*_shares(True))
    plan = api.plan(snap, api.PlanOptions())
    assert verify.verify(snap.facts, snap, plan) == []
    counted = replace(plan, objective=replace(plan.objective, satisfied_by_priority={0: 2}))
    assert [(v.rule, v.subject) for v in verify.verify(snap.facts, snap, counted)] == [("objective", "satisfiedByPriority")]


def test_the_room_bound_weighs_values() -> None:
    # 1,000 millicores: at most three of the five fit (160 + 320 + 320), and at most 1,000
    # millicores' worth of them (each worth its millicores)
    assert room.satisfied_bound(build_problem(snapshot(*_shares(True)))) == ((0, 1000),)
    assert room.satisfied_bound(build_problem(snapshot(*_shares(False)))) == ((0, 3),)
    # worth 10 each, 3 fit: 30
    objs = [node("n").cpu_m(1000), *(pod(f"p{i}").cpu_m(300).worth(10) for i in range(5))]
    assert room.satisfied_bound(build_problem(snapshot(*objs))) == ((0, 30),)


@pytest.mark.parametrize(("where", "value", "message"), [
    ("pod", "many", "Pod/default/p: metadata.annotations[gangplace.io/value]: must be an integer from 0 to "
                    "1000000, got 'many'"),
    ("pod", "-1", "must be an integer from 0 to 1000000, got '-1'"),
    ("pod", "1000001", "got '1000001'"),
    ("member", "3", "Pod/default/m: metadata.annotations[gangplace.io/value]: the pod is in PodGroup g: a "
                    "workload's value is read on its root group"),
    ("child", "3", "PodGroup/default/g: metadata.annotations[gangplace.io/value]: the group is under "
                   "CompositePodGroup top: a workload's value is read on its root"),
])
def test_a_bad_value_is_refused_naming_the_field(where: str, value: str, message: str) -> None:
    objs: list[Any] = [node("n")]
    if where == "pod":
        p = pod("p")
        p.obj["metadata"]["annotations"] = {"gangplace.io/value": value}
        objs.append(p)
    elif where == "member":
        m = pod("m").group("g")
        m.obj["metadata"]["annotations"] = {"gangplace.io/value": value}
        objs += [pod_group("g", 1), m]
    else:
        g = pod_group("g", 1).parent("top")
        g.obj["metadata"]["annotations"] = {"gangplace.io/value": value}
        objs += [composite("top", 1), g, pod("m").group("g")]
    with pytest.raises(SnapshotInvalidError) as err:
        snapshot(*objs)
    assert message in str(err.value)


@pytest.mark.parametrize("pdb_policy", ["strict", "soft"])
def test_many_priority_levels_split_the_first_tier_into_stages(pdb_policy: str) -> None:
    # twelve priorities of sixty 100m pods each on one 1-core node: one weighted sum would need
    # 61^12 > 2^62, which CP-SAT refuses (it did: MODEL_INVALID, the greedy plan FEASIBLE); split,
    # the ten strongest pods are placed and proven
    objs = [node("n").cpu_m(1000)]
    objs += [pod(f"p{level}-{i}").cpu_m(100).priority(10 * level) for level in range(12) for i in range(60)]
    plan, out = run_plan(*objs, pdb_policy=pdb_policy)
    assert plan.status == "OPTIMAL"
    assert [r["stage"] for r in plan.stats["stages"]] == ["workloads", "workloads+pods"]
    assert out["objective"]["satisfiedByPriority"] == {str(10 * level): 10 if level == 11 else 0
                                                       for level in reversed(range(12))}
    assert out["objective"]["satisfiedByPriorityBound"] == out["objective"]["satisfiedByPriority"]
    assert all(b.pod.startswith("default/p11-") for b in plan.bindings) and len(plan.bindings) == 10
