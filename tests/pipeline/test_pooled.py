"""Alike standalone pods (a ReplicaSet's pending replicas) are one pod class, each its own
workload: the model's variables grow with nodes x classes, not with the pods, and the plan
is the one of the pods planned one class each (docs/design.md, "Scale")."""

from __future__ import annotations

from typing import Any

import pytest

from solver.model.build import build_model
from solver.problem.build import build_problem
from tests.builders import node, pdb, pod, snapshot
from tests.pipeline.conftest import run_plan


def _replicas(n: int, cpu_m: int = 1500, priority: int = 0, prefix: str = "web") -> list[Any]:
    return [pod(f"{prefix}-{i}").cpu_m(cpu_m).priority(priority).label("app", prefix) for i in range(n)]


@pytest.mark.parametrize("baseline", [False, True])
def test_alike_standalone_pods_are_one_class_and_each_its_own_workload(baseline: bool) -> None:
    # six 2-cpu nodes take one 1.5-cpu replica each: six of the ten are placed, the first six
    # by name, and each of the other four is its own pending workload
    objs = [node(f"n{i}").cpu_m(2000) for i in range(6)] + _replicas(10)
    problem = build_problem(snapshot(*objs))
    assert len(problem.classes) == 1 and len(problem.workloads) == 10
    assert [w.rank for w in problem.workloads] == list(range(10))
    built = build_model(problem)
    assert len([v for v in built.model.proto.variables if v.name.startswith("count[")]) == 6

    plan, _ = run_plan(*objs, baseline_only=baseline)
    assert plan.status == ("FEASIBLE" if baseline else "OPTIMAL")  # the baseline proves nothing
    assert (plan.objective.satisfied_workloads, plan.objective.placed_pods) == (6, 6)
    assert plan.objective.satisfied_bound == (10 if baseline else 6)
    assert sorted(b.pod for b in plan.bindings) == [f"default/web-{i}" for i in range(6)]
    assert len({b.node for b in plan.bindings}) == 6
    verdicts = {w.name: w for w in plan.workloads}
    assert sorted(verdicts) == sorted(f"default/web-{i}" for i in range(10))
    for i in range(10):
        w = verdicts[f"default/web-{i}"]
        assert w.kind == "Pod" and w.satisfied == (i < 6)
        assert [(g.name, g.placed_pods) for g in w.groups] == [(f"default/web-{i}", int(i < 6))]
        # it fits a node alone, not beside the six placed: upstream's words for that cluster
        assert w.reason == ("" if i < 6 else "0/6 nodes are available: 6 Insufficient cpu. preemption: 0/6 nodes "
                            "are available: 6 No preemption victims found for incoming pod.")


def test_a_pooled_class_preempts_for_each_pod_within_the_budget() -> None:
    # three 2-cpu nodes each run a low-priority 1.5-cpu pod that a budget lets one go; three
    # high-priority replicas: strict, one victim goes and one replica lands; soft, all three
    objs = [node(f"n{i}").cpu_m(2000) for i in range(3)]
    objs += [pod(f"low-{i}").on(f"n{i}").cpu_m(1500).priority(1).label("app", "low") for i in range(3)]
    objs += [pdb("low", 1, app="low"), *_replicas(3, priority=100)]
    plan, _ = run_plan(*objs)
    assert plan.status == "OPTIMAL"
    assert (plan.objective.satisfied_workloads, plan.objective.evicted_pods, plan.objective.pdb_violations) == (1, 1, 0)
    assert [b.pod for b in plan.bindings] == ["default/web-0"]
    plan, _ = run_plan(*objs, pdb_policy="soft")
    assert plan.status == "OPTIMAL"
    assert (plan.objective.satisfied_workloads, plan.objective.evicted_pods, plan.objective.pdb_violations) == (3, 3, 2)


def _in_namespace(p: Any, namespace: str) -> Any:
    p.obj["metadata"]["namespace"] = namespace
    return p


def _nominated(p: Any, node_name: str) -> Any:
    p.obj["status"]["nominatedNodeName"] = node_name
    return p


@pytest.mark.parametrize("other,why", [
    (pod("web-9").cpu_m(1000).label("app", "web"), "another request"),
    (pod("web-9").cpu_m(1500).priority(5).label("app", "web"), "another priority"),
    (pod("web-9").cpu_m(1500).never_preempt().label("app", "web"), "another preemption policy"),
    (_nominated(pod("web-9").cpu_m(1500).label("app", "web"), "n0"), "nominated"),
    (_in_namespace(pod("web-9").cpu_m(1500).label("app", "web"), "other"), "another namespace"),
])
def test_only_alike_pods_pool(other: Any, why: str) -> None:
    problem = build_problem(snapshot(node("n0").cpu_m(8000), *_replicas(2), other))
    assert len(problem.classes) == 2, why
    assert [len(c.pods) for c in problem.classes] == [2, 1], why


def left_out_by_the_plan() -> list[Any]:
    """n1 and n2 (2 cpu) empty, n3 (2 cpu) running vip (priority 1000, 1.5 cpu); three replicas
    of 1.5 cpu at priority 100: two land, and the third fits no node beside them."""
    return [node("n1").cpu_m(2000), node("n2").cpu_m(2000), node("n3").cpu_m(2000),
            pod("vip").on("n3").cpu_m(1500).priority(1000), *_replicas(3, priority=100)]


# kube-scheduler 1.37.2's words for the third replica (tests/controlplane/test_reasons_vs_upstream.py)
LEFT_OUT = ("0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: "
            "3 No preemption victims found for incoming pod.")


@pytest.mark.parametrize("baseline", [False, True])
def test_a_pod_that_fits_alone_but_not_beside_the_plans_pods_gets_upstreams_words_for_that_cluster(
        baseline: bool) -> None:
    plan, _ = run_plan(*left_out_by_the_plan(), baseline_only=baseline)
    assert sorted(b.pod for b in plan.bindings) == ["default/web-0", "default/web-1"]
    assert {w.name: w.reason for w in plan.workloads if not w.satisfied} == {"default/web-2": LEFT_OUT}


def test_a_victim_the_budget_keeps_ends_the_histogram_and_the_plan_says_why() -> None:
    # n3 runs low (priority 0) under a budget that allows no disruption: strict, the third
    # replica would preempt it there and may not; soft, it does
    objs = [node("n1").cpu_m(2000), node("n2").cpu_m(2000), node("n3").cpu_m(2000),
            pod("low").on("n3").cpu_m(1500).label("app", "low"), pdb("low", 0, app="low"),
            *_replicas(3, priority=100)]
    plan, _ = run_plan(*objs)
    assert {w.name: w.reason for w in plan.workloads if not w.satisfied} == {"default/web-2": (
        "0/3 nodes are available: 3 Insufficient cpu. preemption: not enough free capacity for the pod, even after "
        "evicting every lower-priority pod this plan could take for it, within the "
        "disruptionsAllowed of PodDisruptionBudget default/low (0 allowed)")}
    plan, _ = run_plan(*objs, pdb_policy="soft")
    assert len(plan.bindings) == 3 and [e.pod for e in plan.evictions] == ["default/low"]
