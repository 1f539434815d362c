"""A pending pod's reason is kube-scheduler's, word for word: the sixteen pods of
tests/plan/reason_cases.py, left pending by the real kube-scheduler 1.37.2, carry in their
PodScheduled condition exactly what gangplace's plan (and its baseline) says of them."""

from __future__ import annotations

from solver import api, kube, reading
from solver.bench import upstream
from tests.builders import admitted
from tests.plan import reason_cases


def test_every_pending_pod_is_told_what_the_real_scheduler_tells_it() -> None:
    docs = admitted([o.build() if hasattr(o, "build") else o for o in reason_cases.cluster()])
    snap = reading.read(docs)
    for options in (api.PlanOptions(time_limit=10), api.PlanOptions(baseline_only=True)):
        plan = api.plan(snap, options)
        assert not plan.bindings
        assert {w.name: w.reason for w in plan.workloads} == reason_cases.EXPECTED
    outcome = upstream.run_kube_scheduler(kube.flatten(docs), settle=3, pending_first=True, timeout=60)
    assert outcome.bindings == {}
    assert outcome.reasons == reason_cases.EXPECTED


def test_a_pod_left_out_by_the_others_is_told_what_the_real_scheduler_tells_it() -> None:
    """Three alike replicas, room for two: the one left (whichever the queue took last, upstream)
    is told of the cluster with the other two bound, in kube-scheduler's words."""
    from tests.pipeline import test_pooled

    docs = admitted([o.build() for o in test_pooled.left_out_by_the_plan()])
    snap = reading.read(docs)
    for options in (api.PlanOptions(time_limit=10), api.PlanOptions(baseline_only=True)):
        plan = api.plan(snap, options)
        assert [w.reason for w in plan.workloads if not w.satisfied] == [test_pooled.LEFT_OUT]
    outcome = upstream.run_kube_scheduler(kube.flatten(docs), settle=3, pending_first=True, timeout=60)
    assert len(outcome.bindings) == 2
    assert list(outcome.reasons.values()) == [test_pooled.LEFT_OUT]


def test_a_pod_sharing_a_claim_bound_elsewhere_is_told_what_the_real_scheduler_tells_it() -> None:
    """Two pods name one WaitForFirstConsumer claim, a node-local volume on each of two nodes
    of room for one pod (issue 50, item 1): the claim binds with the first pod placed, and the
    other is told its node is full and the other node misses the volume's node affinity."""
    from tests.builders import node, pod
    from tests.pipeline.test_refusals import _class, _pv, _pvc, _with_claim

    docs = admitted([node("a").cpu_m(1000).build(), node("b").cpu_m(1000).build(),
                     _class("local", "WaitForFirstConsumer"), _pv("pv-a", "a"), _pv("pv-b", "b"), _pvc("data"),
                     *(_with_claim(pod(f"reader-{x}").cpu_m(1000), "data").build() for x in "ab")])
    want = ("0/2 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match PersistentVolume's node affinity. "
            "preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, 1 Preemption is "
            "not helpful for scheduling.")
    _one_left_out_is_told(docs, want)


def test_a_pod_whose_claim_finds_the_one_local_volume_taken_is_told_what_the_real_scheduler_tells_it() -> None:
    """Two pods, two WaitForFirstConsumer claims, one node-local volume (issue 50, item 4): the
    pod left is told no volume is left to bind (the plan's other pod took it), not that the
    node is full."""
    from tests.builders import node, pod
    from tests.pipeline.test_refusals import _class, _pv, _pvc, _with_claim

    docs = admitted([node("n1").build(), _class("local", "WaitForFirstConsumer"), _pv("pv-1", "n1"),
                     _pvc("a"), _pvc("b"), _with_claim(pod("pa").cpu_m(100), "a").build(),
                     _with_claim(pod("pb").cpu_m(100), "b").build()])
    want = ("0/1 nodes are available: 1 node(s) didn't find available persistent volumes to bind. preemption: "
            "0/1 nodes are available: 1 Preemption is not helpful for scheduling.")
    _one_left_out_is_told(docs, want)


def _one_left_out_is_told(docs: list[dict[str, object]], want: str) -> None:
    """Of the snapshot's pods one is placed and the other told ``want``: by the plan, by its
    baseline and by the real kube-scheduler."""
    snap = reading.read(docs)
    for options in (api.PlanOptions(time_limit=10), api.PlanOptions(baseline_only=True)):
        plan = api.plan(snap, options)
        assert len(plan.bindings) == 1
        assert [w.reason for w in plan.workloads if not w.satisfied] == [want]
    outcome = upstream.run_kube_scheduler(kube.flatten(docs), settle=3, pending_first=True, timeout=60)
    assert len(outcome.bindings) == 1
    assert list(outcome.reasons.values()) == [want]
