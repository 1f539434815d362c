"""A pending pod's reason is kube-scheduler's, word for word: the sixteen pods of
tests/solver/reason_cases.py, left pending by the real kube-scheduler 1.37.2, carry in their
PodScheduled condition exactly what gangplace's plan (and its baseline) says of them."""

from __future__ import annotations

from solver import api, kube
from solver.bench import upstream
from tests.builders import admitted
from tests.solver import reason_cases


def test_every_pending_pod_is_told_what_the_real_scheduler_tells_it() -> None:
    docs = admitted([o.build() if hasattr(o, "build") else o for o in reason_cases.cluster()])
    snap = kube.snapshot_from_objects(docs)
    for options in (api.PlanOptions(time_limit=10), api.PlanOptions(baseline_only=True)):
        plan = api.plan(snap, options)
        assert not plan.bindings
        assert {w.name: w.reason for w in plan.workloads} == reason_cases.EXPECTED
    outcome = upstream.run_kube_scheduler(kube.flatten(docs), settle=3, pending_first=True, timeout=60)
    assert outcome.bindings == {}
    assert outcome.reasons == reason_cases.EXPECTED
