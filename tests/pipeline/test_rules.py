"""One small hand-written scenario per rule of docs/design.md, asserting exact outcomes.

Every plan goes through ``solver.verify`` (in ``run_plan``) and must be OPTIMAL.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.builders import RACK, ZONE, composite, node, pdb, pod, pod_group, priority_class
from tests.pipeline.conftest import run_plan


@dataclass
class Case:
    id: str
    objects: list[Any]
    want_bindings: dict[str, str] | None  # exact pod -> node (None: checked by want_nodes)
    want_evictions: set[str] = field(default_factory=set)
    want_satisfied: int = 1
    want_placed: int | None = None
    want_pdb_violations: int = 0
    want_cost: float = 0.0
    want_nodes: set[str] | None = None  # the set of nodes used, when several assignments tie
    want_reason: str = ""  # substring of the first unsatisfied workload's reason
    pdb_policy: str = "strict"  # the default; "soft" where a violation is the point


def gang(name: str, n: int, min_count: int | None, cpu_m: int, **pod_kw: Any) -> list[Any]:
    objs: list[Any] = [pod_group(name, min_count).priority(pod_kw.pop("priority", 100))]
    for i in range(n):
        objs.append(pod(f"{name}-{i}").group(name).cpu_m(cpu_m))
    return objs


CASES = [
    Case("capacity-fits", [node("n1"), *gang("g", 2, 2, 4000)],
         {"default/g-0": "n1", "default/g-1": "n1"}),
    Case("capacity-too-small-places-nothing", [node("n1"), *gang("g", 3, 3, 4000)],
         {}, want_satisfied=0, want_reason="not enough free capacity"),
    Case("extended-resource", [node("n1"), node("n2").gpus(2),
                               pod_group("g", 1), pod("p").group("g").request("example.com/gpu", "2")],
         {"default/p": "n2"}),
    Case("pods-allocatable-counts", [node("n1").pods(1), node("n2").cpu_m(2000),
                                     pod("r").on("n1").cpu_m(100).priority(1000),
                                     *gang("g", 1, 1, 1500)],
         {"default/g-0": "n2"}),
    Case("node-selector", [node("n1"), node("n2").label("disk", "ssd"),
                           pod_group("g", 1), pod("p").group("g").selector("disk", "ssd")],
         {"default/p": "n2"}),
    Case("required-affinity-notin", [node("n1"), node("n2"),
                                     pod_group("g", 1), pod("p").group("g").affinity("kubernetes.io/hostname", "NotIn", "n1")],
         {"default/p": "n2"}),
    Case("taint-not-tolerated", [node("n1").taint("gpu", "true"), node("n2").cpu_m(1000),
                                 *gang("g", 1, 1, 1000)],
         {"default/g-0": "n2"}),
    Case("taint-tolerated", [node("n1").taint("gpu", "true"), node("n2").cpu_m(500),
                             pod_group("g", 1), pod("p").group("g").tolerate("gpu", "true", "NoSchedule")],
         {"default/p": "n1"}),
    Case("prefer-no-schedule-is-not-a-filter", [node("n1").taint("x", effect="PreferNoSchedule"),
                                                *gang("g", 1, 1, 1000)],
         {"default/g-0": "n1"}),
    Case("unschedulable-node", [node("n1").unschedulable(), node("n2").cpu_m(1000), *gang("g", 1, 1, 1000)],
         {"default/g-0": "n2"}),
    Case("running-members-count-toward-min-count",
         [node("n1").cpu_m(4000), pod_group("g", 3).priority(100),
          pod("g-run").group("g").on("n1").cpu_m(2000), pod("g-0").group("g").cpu_m(1000),
          pod("g-1").group("g").cpu_m(1000)],
         {"default/g-0": "n1", "default/g-1": "n1"}),
    Case("fewer-pods-than-min-count-is-unsatisfied", [node("n1"), *gang("g", 2, 3, 1000)],
         {}, want_satisfied=0, want_reason="minCount (3) cannot be satisfied: 0 running, 2 pending"),
    Case("basic-group-places-what-fits", [node("n1").cpu_m(2000), *gang("g", 3, None, 1000)],
         None, want_placed=2, want_nodes={"n1"}),
    Case("composite-min-group-count-takes-two-of-three",
         [node("n1").cpu_m(4000), composite("job", 2).priority(100),
          pod_group("a", 1).parent("job"), pod_group("b", 1).parent("job"), pod_group("c", 1).parent("job"),
          pod("a-0").group("a").cpu_m(2000), pod("b-0").group("b").cpu_m(2000), pod("c-0").group("c").cpu_m(3000)],
         {"default/a-0": "n1", "default/b-0": "n1"}),
    Case("identical-sibling-groups-one-per-rack",
         [node("a1").rack("ra").cpu_m(2000), node("b1").rack("rb").cpu_m(2000), node("c1").rack("rc").cpu_m(1000),
          composite("job", 2).priority(100),
          *[o for k in "xyz" for o in (pod_group(k, 2).parent("job").topology(RACK),
                                         pod(f"{k}-0").group(k).cpu_m(1000), pod(f"{k}-1").group(k).cpu_m(1000))]],
         None, want_nodes={"a1", "b1"}, want_placed=4),
    Case("composite-gang-unsatisfiable-places-nothing",
         [node("n1").cpu_m(4000), composite("job", 2).priority(100),
          pod_group("a", 1).parent("job"), pod_group("b", 1).parent("job"),
          pod("a-0").group("a").cpu_m(3000), pod("b-0").group("b").cpu_m(3000)],
         {}, want_satisfied=0),
    Case("rack-topology-keeps-gang-in-one-rack",
         [node("a1").rack("ra").cpu_m(4000), node("a2").rack("ra").cpu_m(2000),
          node("b1").rack("rb").cpu_m(4000), node("b2").rack("rb").cpu_m(4000), node("nolabel").cpu_m(8000),
          pod_group("g", 2).topology(RACK), pod("g-0").group("g").cpu_m(4000), pod("g-1").group("g").cpu_m(4000)],
         None, want_nodes={"b1", "b2"}),
    Case("running-members-fix-the-domain",
         [node("a1").rack("ra").cpu_m(1000), node("a2").rack("ra").cpu_m(4000),
          node("b1").rack("rb").cpu_m(8000),
          pod_group("g", 2).topology(RACK).priority(100), pod("g-run").group("g").on("a1").cpu_m(1000),
          pod("g-0").group("g").cpu_m(3000)],
         {"default/g-0": "a2"}),
    Case("nested-zone-and-rack",
         [node("z1a").zone("z1").rack("r1").cpu_m(4000), node("z1b").zone("z1").rack("r2").cpu_m(4000),
          node("z2a").zone("z2").rack("r3").cpu_m(4000), node("z2b").zone("z2").rack("r4").cpu_m(2000),
          composite("job", 2).topology(ZONE).priority(100),
          pod_group("a", 1).parent("job").topology(RACK), pod_group("b", 1).parent("job").topology(RACK),
          pod("a-0").group("a").cpu_m(4000), pod("b-0").group("b").cpu_m(4000)],
         None, want_nodes={"z1a", "z1b"}),
    Case("preempts-lower-priority-only",
         [node("n1").cpu_m(4000), node("n2").cpu_m(4000),
          pod("low").on("n1").cpu_m(3000).priority(10), pod("high").on("n2").cpu_m(3000).priority(1000),
          *gang("g", 1, 1, 2000, priority=100)],
         {"default/g-0": "n1"}, want_evictions={"default/low"}, want_cost=11.0),
    # PodGroupPreemptionPolicy off (1.37's default): the pods' policy is the workload's
    # (resolvePreemptionPolicy, pkg/scheduler/framework/preemption/types.go)
    Case("preemption-policy-never-evicts-nothing",
         [node("n1").cpu_m(4000), pod("low").on("n1").cpu_m(3000).priority(10),
          pod_group("g", 1).priority(100), pod("g-0").group("g").cpu_m(2000).never_preempt()],
         {}, want_satisfied=0),
    Case("group-preemption-policy-is-ignored-with-the-gate-off",
         [node("n1").cpu_m(4000), pod("low").on("n1").cpu_m(3000).priority(10),
          pod_group("g", 1).priority(100).never_preempt(), pod("g-0").group("g").cpu_m(2000)],
         {"default/g-0": "n1"}, want_evictions={"default/low"}, want_cost=11.0),
    Case("disruption-mode-all-evicts-the-whole-unit",
         [node("n1").cpu_m(4000), node("n2").cpu_m(4000),
          pod_group("inf", 2).disruption_all().priority(10),
          pod("inf-0").group("inf").on("n1").cpu_m(3000), pod("inf-1").group("inf").on("n2").cpu_m(1000),
          pod("solo").on("n2").cpu_m(2000).priority(10),
          *gang("g", 1, 1, 3000, priority=100)],
         {"default/g-0": "n2"}, want_evictions={"default/solo"}, want_cost=11.0),
    Case("unit-evicted-when-it-is-the-only-way",
         [node("n1").cpu_m(4000), pod_group("inf", 2).disruption_all().priority(10),
          node("n2").cpu_m(4000),
          pod("inf-0").group("inf").on("n1").cpu_m(3000), pod("inf-1").group("inf").on("n2").cpu_m(3000),
          *gang("g", 1, 1, 3000, priority=100)],
         None, want_evictions={"default/inf-0", "default/inf-1"}, want_cost=22.0, want_placed=1),
    Case("pdb-violations-before-cost",
         [node("n1").cpu_m(4000), node("n2").cpu_m(4000),
          pod("guarded").on("n1").cpu_m(3000).priority(1).label("app", "db"),
          pod("pricey").on("n2").cpu_m(3000).priority(1).cost("1000"),
          pdb("db", 0, app="db"), *gang("g", 1, 1, 2000, priority=100)],
         {"default/g-0": "n2"}, want_evictions={"default/pricey"}, want_cost=1000.0),
    Case("pdb-violation-when-unavoidable",
         [node("n1").cpu_m(4000), pod("guarded").on("n1").cpu_m(3000).priority(1).label("app", "db"),
          pdb("db", 0, app="db"), *gang("g", 1, 1, 2000, priority=100)],
         {"default/g-0": "n1"}, want_evictions={"default/guarded"}, want_pdb_violations=1, want_cost=2.0,
         pdb_policy="soft"),
    Case("strict-pdb-leaves-the-gang-pending-and-names-the-budget",
         [node("n1").cpu_m(4000), pod("guarded").on("n1").cpu_m(3000).priority(1).label("app", "db"),
          pdb("db", 0, app="db"), pdb("other", 0, app="web"), *gang("g", 1, 1, 2000, priority=100)],
         {}, want_satisfied=0, want_placed=0,
         want_reason=", within the disruptionsAllowed of PodDisruptionBudget default/db (0 allowed)"),
    Case("cost-annotation-picks-the-cheap-victim",
         [node("n1").cpu_m(4000), node("n2").cpu_m(4000),
          pod("a").on("n1").cpu_m(3000).priority(50).cost("1.5"), pod("b").on("n2").cpu_m(3000).priority(1),
          *gang("g", 1, 1, 2000, priority=100)],
         {"default/g-0": "n1"}, want_evictions={"default/a"}, want_cost=1.5),
    Case("fewest-evicted-pods-on-equal-cost",
         [node("n1").cpu_m(4000), node("n2").cpu_m(4000),
          pod("a1").on("n1").cpu_m(1500).cost("1"), pod("a2").on("n1").cpu_m(1500).cost("1"),
          pod("b").on("n2").cpu_m(3000).cost("2"),
          *gang("g", 1, 1, 3000, priority=100)],
         {"default/g-0": "n2"}, want_evictions={"default/b"}, want_cost=2.0),
    Case("higher-priority-workload-wins",
         [node("n1").cpu_m(4000), *gang("big", 3, 3, 1000, priority=10), *gang("vip", 1, 1, 3000, priority=500)],
         {"default/vip-0": "n1"}, want_placed=1),
    Case("standalone-pending-pod", [node("n1").cpu_m(500), node("n2"), pod("p").cpu_m(1000)],
         {"default/p": "n2"}),
    Case("lower-priority-cannot-use-room-freed-for-higher",
         [node("n1").cpu_m(4000), pod("mid").on("n1").cpu_m(2000).priority(50),
          *gang("top", 1, 1, 2000, priority=100), *gang("low", 1, 1, 2000, priority=10)],
         {"default/top-0": "n1"}, want_placed=1),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_rule(case: Case) -> None:
    plan, out = run_plan(*case.objects, time_limit=30, pdb_policy=case.pdb_policy)
    assert plan.status == "OPTIMAL"
    bindings = {b.pod: b.node for b in plan.bindings}
    if case.want_bindings is not None:
        assert bindings == case.want_bindings
    if case.want_nodes is not None:
        assert set(bindings.values()) == case.want_nodes
    assert {e.pod for e in plan.evictions} == case.want_evictions
    o = plan.objective
    assert o.satisfied_workloads == case.want_satisfied
    if case.want_placed is not None:
        assert o.placed_pods == case.want_placed
    assert o.pdb_violations == case.want_pdb_violations
    assert o.preemption_cost == pytest.approx(case.want_cost)
    assert o.preemption_cost_bound == pytest.approx(case.want_cost)
    assert o.gap == 0.0
    if case.want_reason:
        reasons = [w["reason"] for w in out["workloads"] if not w["satisfied"]]
        assert reasons and case.want_reason in reasons[0]


def test_priority_class_and_global_default_resolve() -> None:
    plan, _ = run_plan(
        priority_class("high", 1000), priority_class("default", 5, global_default=True),
        node("n1").cpu_m(2000), pod("victim").on("n1").cpu_m(2000),
        pod_group("g", 1).label("x", "y"), pod("g-0").group("g").cpu_m(1000),
    )
    # the group has no priority: global default 5 == victim's 5 -> no preemption
    assert plan.objective.satisfied_workloads == 0
    g_obj = pod_group("g", 1)
    g_obj.obj["spec"]["priorityClassName"] = "high"
    member = pod("g-0").group("g").cpu_m(1000)
    member.obj["spec"]["priorityClassName"] = "high"
    plan, _ = run_plan(
        priority_class("high", 1000), priority_class("default", 5, global_default=True),
        node("n1").cpu_m(2000), pod("victim").on("n1").cpu_m(2000), g_obj, member,
    )
    assert [e.pod for e in plan.evictions] == ["default/victim"]
    assert plan.evictions[0].cost == 6.0  # 1 + priority 5


def test_init_containers_and_overhead_count() -> None:
    p = pod("p").cpu_m(500)
    p.obj["spec"]["initContainers"] = [{"name": "init", "resources": {"requests": {"cpu": "1500m"}}}]
    p.obj["spec"]["overhead"] = {"cpu": "250m"}
    p.group("g")
    # 1500m init + 250m overhead = 1750m: does not fit n1 (1700m), fits n2
    plan, _ = run_plan(node("n1").cpu_m(1700), node("n2").cpu_m(1750), pod_group("g", 1), p)
    assert {b.pod: b.node for b in plan.bindings} == {"default/p": "n2"}


def test_baseline_flag_gives_a_verified_greedy_plan() -> None:
    objs = [node("n1").cpu_m(4000), pod("low").on("n1").cpu_m(3000).priority(10), *gang("g", 1, 1, 2000)]
    plan, out = run_plan(*objs, baseline_only=True)
    assert out["stats"]["solver"] == "baseline"
    assert {b.pod for b in plan.bindings} == {"default/g-0"}
    assert {e.pod for e in plan.evictions} == {"default/low"}


def test_workload_option_plans_only_that_workload() -> None:
    objs = [node("n1").cpu_m(4000), *gang("a", 1, 1, 1000), *gang("b", 1, 1, 1000)]
    plan, _ = run_plan(*objs, workload="default/b")
    assert [w.name for w in plan.workloads] == ["default/b"]
    assert {b.pod for b in plan.bindings} == {"default/b-0"}
