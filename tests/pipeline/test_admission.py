"""Admission as kube-scheduler 1.37 decides it before a workload is tried, for the solver and
the greedy baseline alike (each case runs both; every plan goes through solver.verify):

- validatePodGroup (pkg/scheduler/schedule_one_podgroup.go): one schedulerName, the root
  group's priority, one preemption policy (the root's with PodGroupPreemptionPolicy on);
- resolvePreemptionPolicy (pkg/scheduler/framework/preemption/types.go): the workload's policy;
- SchedulingGates PreEnqueue (framework/plugins/schedulinggates): a gated pod is never placed;
- skipPodSchedule (pkg/scheduler/schedule_one.go): a pod being deleted is never placed;
- gangscheduling PreEnqueue (framework/plugins/gangscheduling): a pod whose PodGroup, or whose
  group's parent, does not exist yet waits; nothing else is held up by it;
- PodPriority (k8s.io/component-helpers/scheduling/corev1): spec.priority is what counts, so a
  PriorityClass deleted after admission changes nothing.
"""

from __future__ import annotations

import pytest

from solver import api, cli
from solver.core.features import FeatureGates, parse_feature_gates
from tests.builders import composite, node, pod, pod_group, priority_class
from tests.pipeline.conftest import run_plan

BOTH = pytest.mark.parametrize("baseline", [False, True], ids=["cp-sat", "baseline"])
GATE_ON = FeatureGates(pod_group_preemption_policy=True)


def _low_on_n1() -> list:
    return [node("n1").cpu_m(4000), pod("low").on("n1").cpu_m(3000).priority(10)]


@BOTH
def test_pods_with_another_priority_than_the_group_refuse_the_whole_group(baseline: bool) -> None:
    # the pods name a PriorityClass, the group none: upstream fails the group, evicts nothing
    objs = [*_low_on_n1(), priority_class("high", 1000), pod_group("g", 2)]
    for k in range(2):
        p = pod(f"g-{k}").group("g").cpu_m(1000)
        p.obj["spec"]["priorityClassName"] = "high"
        objs.append(p)
    plan, _ = run_plan(*objs, baseline_only=baseline)
    assert plan.bindings == () and plan.evictions == ()
    [w] = plan.workloads
    assert not w.satisfied
    assert w.reason == ("default/g: pod default/g-0: all pods in a single pod group should have the same "
                        "priority as the pod group's priority, got 1000 and 0")


@BOTH
def test_a_running_member_with_another_priority_refuses_the_group_too(baseline: bool) -> None:
    # validateScheduledPods: the scheduled pods of the tree are checked after the pending ones
    plan, _ = run_plan(node("n1"), composite("job", 1).priority(50), pod_group("a", 1).parent("job"),
                       pod_group("b", 1).parent("job"), pod("a-0").group("a").on("n1").priority(7),
                       pod("b-0").group("b"), baseline_only=baseline)
    assert plan.bindings == ()
    assert plan.workloads[0].reason.endswith("pod default/a-0: all pods in a single pod group should have "
                                             "the same priority as the pod group's priority, got 7 and 50")


@BOTH
def test_pods_of_two_schedulers_refuse_the_group(baseline: bool) -> None:
    other = pod("g-1").group("g")
    other.obj["spec"]["schedulerName"] = "gangplace"
    plan, _ = run_plan(node("n1"), pod_group("g", 2).priority(5), pod("g-0").group("g"), other,
                       baseline_only=baseline)
    assert plan.bindings == ()
    assert plan.workloads[0].reason == (
        'default/g: pod default/g-1: all pods in a single pod group should have the same '
        '.spec.schedulerName set, got: "gangplace" and "default-scheduler"')


@BOTH
def test_gate_off_pods_must_agree_on_the_policy(baseline: bool) -> None:
    plan, _ = run_plan(*_low_on_n1(), pod_group("g", 2).priority(100), pod("g-0").group("g").cpu_m(500),
                       pod("g-1").group("g").cpu_m(500).never_preempt(), baseline_only=baseline)
    assert plan.bindings == ()
    assert plan.workloads[0].reason == ("default/g: pod default/g-1: all pods in a single pod group should have "
                                        "the same preemption policy, got Never and PreemptLowerPriority")


@BOTH
def test_gate_off_a_group_whose_pods_say_never_does_not_preempt(baseline: bool) -> None:
    # the group's own PreemptLowerPriority is ignored without the gate: the pods' Never wins
    plan, _ = run_plan(*_low_on_n1(), pod_group("g", 1).priority(100),
                       pod("g-0").group("g").cpu_m(2000).never_preempt(), baseline_only=baseline)
    assert plan.bindings == () and plan.evictions == ()
    assert plan.workloads[0].reason == ("default/g: pod default/g-0: 0/1 nodes are available: 1 Insufficient cpu. "
                                        "preemption: not eligible due to preemptionPolicy=Never.")


@BOTH
def test_gate_on_every_pod_must_carry_the_groups_policy(baseline: bool) -> None:
    g = pod_group("g", 1).priority(100)
    g.obj["spec"]["preemptionPolicy"] = "PreemptLowerPriority"
    plan, _ = run_plan(*_low_on_n1(), g, pod("g-0").group("g").cpu_m(2000).never_preempt(),
                       baseline_only=baseline, gates=GATE_ON)
    assert plan.bindings == ()
    assert plan.workloads[0].reason == (
        "default/g: pod default/g-0: all pods in a single pod group should have the same preemption policy "
        "as the pod group's preemption policy, got Never and PreemptLowerPriority")


@BOTH
def test_gate_on_the_groups_never_is_the_workloads(baseline: bool) -> None:
    g = pod_group("g", 1).priority(100).never_preempt()
    plan, _ = run_plan(*_low_on_n1(), g, pod("g-0").group("g").cpu_m(2000).never_preempt(),
                       baseline_only=baseline, gates=GATE_ON)
    assert plan.bindings == () and plan.evictions == ()
    assert plan.workloads[0].reason == ("default/g: pod default/g-0: 0/1 nodes are available: 1 Insufficient cpu. "
                                        "preemption: not eligible due to preemptionPolicy=Never.")
    # the same cluster with PreemptLowerPriority on group and pod preempts
    plan, _ = run_plan(*_low_on_n1(), pod_group("g", 1).priority(100), pod("g-0").group("g").cpu_m(2000),
                       baseline_only=baseline, gates=GATE_ON)
    assert {b.pod: b.node for b in plan.bindings} == {"default/g-0": "n1"}
    assert [e.pod for e in plan.evictions] == ["default/low"]


@BOTH
def test_a_gated_pod_is_never_placed_and_the_gang_needs_min_count_among_the_others(baseline: bool) -> None:
    gated = pod("g-2").group("g")
    gated.obj["spec"]["schedulingGates"] = [{"name": "kueue.x-k8s.io/admission"}]
    plan, out = run_plan(node("n1"), pod_group("g", 3).priority(5), pod("g-0").group("g"), pod("g-1").group("g"),
                         gated, baseline_only=baseline)
    assert plan.bindings == ()
    assert plan.workloads[0].reason == ("default/g: minCount (3) cannot be satisfied: 0 running, 2 pending, "
                                        "1 held (default/g-2)")
    assert out["heldPods"] == [{"pod": "default/g-2", "reason": "waiting for scheduling gates: "
                                                                "[kueue.x-k8s.io/admission]"}]
    # minCount 2: the two ungated pods go, the gated one stays
    plan, _ = run_plan(node("n1"), pod_group("g", 2).priority(5), pod("g-0").group("g"), pod("g-1").group("g"),
                       gated, baseline_only=baseline)
    assert {b.pod for b in plan.bindings} == {"default/g-0", "default/g-1"}


@BOTH
def test_a_pod_being_deleted_is_never_placed(baseline: bool) -> None:
    going = pod("p")
    going.obj["metadata"]["deletionTimestamp"] = "2026-12-01T00:00:00Z"
    plan, out = run_plan(node("n1"), going, pod("q"), baseline_only=baseline)
    assert [b.pod for b in plan.bindings] == ["default/q"]
    assert out["heldPods"] == [{"pod": "default/p", "reason": "being deleted (metadata.deletionTimestamp is set)"}]


@BOTH
def test_a_pod_whose_group_is_missing_waits_and_the_rest_is_planned(baseline: bool) -> None:
    plan, out = run_plan(node("n1"), pod("orphan").group("ghost"), pod_group("g", 1).priority(5),
                         pod("g-0").group("g"), baseline_only=baseline)
    assert [b.pod for b in plan.bindings] == ["default/g-0"]
    assert out["heldPods"] == [{"pod": "default/orphan", "reason": (
        "PodGroup default/ghost not found: waiting for the pod's pod group to appear in the scheduling queue")}]


@BOTH
def test_a_group_whose_parent_is_missing_waits_with_its_subtree(baseline: bool) -> None:
    plan, out = run_plan(node("n1"), composite("mid", 1).parent("gone"), pod_group("a", 1).parent("mid"),
                         pod("a-0").group("a"), pod("solo"), baseline_only=baseline)
    assert [b.pod for b in plan.bindings] == ["default/solo"]
    assert out["heldPods"] == [{"pod": "default/a-0", "reason": (
        "CompositePodGroup/default/gone not found: waiting for the parent of CompositePodGroup/default/mid "
        "to appear")}]


@BOTH
def test_a_running_pod_whose_group_is_gone_is_a_victim_on_its_own(baseline: bool) -> None:
    plan, out = run_plan(node("n1").cpu_m(2000), pod("old").group("ghost").on("n1").cpu_m(2000).priority(1),
                         pod("new").cpu_m(2000).priority(100), baseline_only=baseline)
    assert [b.pod for b in plan.bindings] == ["default/new"] and [e.pod for e in plan.evictions] == ["default/old"]
    assert out["warnings"] == ["Pod/default/old: spec.schedulingGroup.podGroupName: PodGroup default/ghost not "
                               "found: waiting for the pod's pod group to appear in the scheduling queue; the "
                               "running pod counts as a pod outside any group"]


@BOTH
def test_a_deleted_priority_class_with_spec_priority_set_plans_at_spec_priority(baseline: bool) -> None:
    p = pod("p").cpu_m(2000).priority(100)
    p.obj["spec"]["priorityClassName"] = "deleted"
    plan, out = run_plan(node("n1").cpu_m(2000), pod("low").on("n1").cpu_m(2000).priority(1), p,
                         baseline_only=baseline)
    assert [b.pod for b in plan.bindings] == ["default/p"] and [e.pod for e in plan.evictions] == ["default/low"]
    assert out["warnings"] == ["Pod/default/p: spec.priorityClassName: PriorityClass 'deleted' not found; "
                               "spec.priority 100 is used"]


def test_feature_gates_parse_like_kube_scheduler_flags() -> None:
    assert parse_feature_gates("") == FeatureGates()
    assert parse_feature_gates("PodGroupPreemptionPolicy=true") == GATE_ON
    assert parse_feature_gates(" PodGroupPreemptionPolicy=False ,") == FeatureGates()


@pytest.mark.parametrize("text, message", [
    ("Nope=true", "unknown feature gate 'Nope' (known: PodGroupPreemptionPolicy)"),
    ("PodGroupPreemptionPolicy", "PodGroupPreemptionPolicy: expected =true or =false"),
    ("PodGroupPreemptionPolicy=yes", "PodGroupPreemptionPolicy: expected =true or =false"),
])
def test_a_bad_feature_gate_is_a_usage_error(text: str, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["solve", "examples/gang-preemption.yaml", "--feature-gates", text])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_the_plan_records_the_gates_it_was_made_under() -> None:
    from tests.builders import snapshot
    plan = api.plan(snapshot(node("n1"), pod("p")), api.PlanOptions(gates=GATE_ON))
    assert plan.stats["featureGates"] == "PodGroupPreemptionPolicy=true"


def _terminating(builder, *, preempted: bool = False):
    builder.obj["metadata"]["deletionTimestamp"] = "2026-12-01T00:00:30Z"
    if preempted:
        builder.obj["status"]["conditions"] = [{"type": "DisruptionTarget", "status": "True",
                                                "reason": "PreemptionByScheduler"}]
    return builder


@BOTH
def test_a_terminating_pod_is_never_a_victim_and_its_room_stays_held(baseline: bool) -> None:
    # its room is not free until it is gone (NodeInfo counts it); evicting it again would be
    # charged for nothing: the live victim on n2 goes instead
    plan, _ = run_plan(node("n1").cpu_m(4000), node("n2").cpu_m(4000),
                       _terminating(pod("going").on("n1").cpu_m(3000).priority(1)),
                       pod("live").on("n2").cpu_m(3000).priority(1), pod("p").cpu_m(2000).priority(100),
                       baseline_only=baseline)
    assert {b.pod: b.node for b in plan.bindings} == {"default/p": "n2"}
    assert [e.pod for e in plan.evictions] == ["default/live"]
    # alone, it leaves the pod pending
    plan, _ = run_plan(node("n1").cpu_m(4000), _terminating(pod("going").on("n1").cpu_m(3000).priority(1)),
                       pod("p").cpu_m(2000).priority(100), baseline_only=baseline)
    assert plan.bindings == () and plan.evictions == ()


@BOTH
def test_a_terminating_member_of_an_all_group_stays_out_of_its_unit(baseline: bool) -> None:
    plan, _ = run_plan(node("n1").cpu_m(4000), node("n2").cpu_m(4000), pod_group("inf", 2).disruption_all().priority(1),
                       _terminating(pod("inf-0").group("inf").on("n1").cpu_m(1000)),
                       pod("inf-1").group("inf").on("n2").cpu_m(3000), pod("p").cpu_m(3500).priority(100),
                       baseline_only=baseline)
    assert {b.pod: b.node for b in plan.bindings} == {"default/p": "n2"}
    assert [e.pod for e in plan.evictions] == ["default/inf-1"]


@BOTH
def test_an_ongoing_preemption_evicts_nothing_new_and_waits(baseline: bool) -> None:
    # p was nominated to n1 by an earlier preemption whose victim still terminates there:
    # upstream (isOngoingPreemption / PodEligibleToPreemptOthers) picks no new victim
    nominated = pod("p").cpu_m(2000).priority(100)
    nominated.obj["status"]["nominatedNodeName"] = "n1"
    objs = [node("n1").cpu_m(4000), node("n2").cpu_m(4000),
            _terminating(pod("going").on("n1").cpu_m(3000).priority(1), preempted=True),
            pod("live").on("n2").cpu_m(3000).priority(1)]
    plan, _ = run_plan(*objs, nominated, baseline_only=baseline)
    assert plan.bindings == () and plan.evictions == ()
    assert plan.workloads[0].reason == ("ongoing preemption on nominated node n1 of default/p: waiting for "
                                        "default/going to terminate")
    # a gang: the same, through any member's nomination
    member = pod("g-1").group("g").cpu_m(2000)
    member.obj["status"]["nominatedNodeName"] = "n1"
    plan, _ = run_plan(*objs, pod_group("g", 2).priority(100), pod("g-0").group("g").cpu_m(2000), member,
                       baseline_only=baseline)
    assert plan.bindings == () and plan.evictions == ()
    assert plan.workloads[0].reason.startswith("ongoing preemption on nominated node n1 of default/g-1")
    # without the nomination it is a fresh preemption
    plan, _ = run_plan(*objs, pod("p").cpu_m(2000).priority(100), baseline_only=baseline)
    assert [e.pod for e in plan.evictions] == ["default/live"]
