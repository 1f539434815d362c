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
