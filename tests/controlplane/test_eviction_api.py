"""Strict budgets as the real Eviction API (kube-apiserver 1.37.2) judges them.

For each case one running pod and its budgets are created on the real API server; once the
disruption controller has computed the budgets' status, the objects are read back (as a
capture would), gangplace's rule (``problem.eviction_api`` and the budget's allowance) says
whether a strict plan may evict the pod, and the adapter's ``Cluster.evict`` asks the real
Eviction API. Both must agree, and agree with the case's expectation. A budget whose status
lags its spec (429) is not staged here: the disruption controller catches up within a
moment, so the window cannot be held open; tests/pipeline/test_refusals.py covers it.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from adapter.cluster import Cluster, Refused
from solver import reading
from solver.problem.build import eviction_api
from tests.builders import node, pod
from tests.controlplane.conftest import NS, Real


def _budget(name: str, min_available: int, policy: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"minAvailable": min_available, "selector": {"matchLabels": {"app": "db"}}}
    if policy:
        spec["unhealthyPodEvictionPolicy"] = policy
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": NS},
            "spec": spec}


CASES = {
    # (budgets, pod Ready?, evicted?)
    "one-budget-allowing-one": ([_budget("db", 0)], True, True),
    "one-budget-allowing-none": ([_budget("db", 1)], True, False),
    "two-budgets": ([_budget("db", 0), _budget("db-too", 0)], True, False),
    "unready-always-allow": ([_budget("db", 1, "AlwaysAllow")], False, True),
    "unready-if-healthy-budget-short": ([_budget("db", 1, "IfHealthyBudget")], False, False),
}


def _observed(real: Real, names: list[str]) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 30
    while True:
        found = [real.get(f"/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets/{n}") or {} for n in names]
        if all(b.get("status", {}).get("observedGeneration") == b["metadata"].get("generation") for b in found):
            return found
        assert time.monotonic() < deadline, "the disruption controller never computed the budgets"
        time.sleep(0.2)


@pytest.mark.parametrize("case", sorted(CASES))
def test_strict_evicts_exactly_what_the_eviction_api_accepts(real: Real, adapter_kubeconfig: Path, case: str) -> None:
    budgets, ready, evicted = CASES[case]
    real.put(node("n1").build())
    real.put(pod("v").on("n1").cpu_m(500).label("app", "db").build())
    if not ready:
        real.rest.call("PATCH", f"/api/v1/namespaces/{NS}/pods/v/status",
                       {"status": {"conditions": [{"type": "Ready", "status": "False"}]}},
                       content_type="application/merge-patch+json")
    for b in budgets:
        real.put(b)
    read = _observed(real, [b["metadata"]["name"] for b in budgets])
    if len(read) == 1:  # the controller counts the unready pod out of currentHealthy
        assert read[0]["status"]["currentHealthy"] == int(ready)
    snap = reading.read([real.get("/api/v1/nodes/n1"), real.pod("v"), *read])
    victim = next(p for p in snap.pods if p.name == "v")
    refusal, counted = eviction_api(victim, snap.pdbs)
    allowed = {b.key: b.allowed for b in snap.pdbs}
    rule = not refusal and (counted is None or allowed[counted] >= 1)
    try:
        Cluster.connect(str(adapter_kubeconfig)).evict(NS, "v")
        real_api = True
    except Refused:
        real_api = False
    assert (rule, real_api) == (evicted, evicted), (case, refusal, counted, allowed)
