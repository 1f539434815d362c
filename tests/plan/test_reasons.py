"""A pod left pending says why in kube-scheduler's words (solver/plan/reasons.py): each
node's first refusing filter counted by reason, then what preemption found; a gang puts the
pod's words first and its own reason after ``preemption:``."""

from __future__ import annotations

import pytest

from solver import api, reading
from solver.plan.reasons import histogram
from tests.builders import RACK, node, pdb, pod, pod_group
from tests.plan import reason_cases


def _reasons(objs: list[object], **options: object) -> dict[str, str]:
    snap = reading.read([o.build() if hasattr(o, "build") else o for o in objs])
    plan = api.plan(snap, api.PlanOptions(time_limit=10, **options))  # type: ignore[arg-type]
    assert not plan.bindings
    return {w.name: w.reason for w in plan.workloads if not w.satisfied}


@pytest.mark.parametrize("baseline", [False, True], ids=["cp-sat", "baseline"])
def test_each_pod_is_told_what_kube_scheduler_tells_it(baseline: bool) -> None:
    assert _reasons(reason_cases.cluster(), baseline_only=baseline) == reason_cases.EXPECTED


def test_counts_sort_as_strings_as_upstream_sorts_them() -> None:
    from collections import Counter

    assert histogram(12, Counter({"Insufficient cpu": 10, "node(s) were unschedulable": 2})) == (
        "0/12 nodes are available: 10 Insufficient cpu, 2 node(s) were unschedulable.")


def test_a_gang_says_which_pod_finds_no_node_then_why_preemption_did_not_help() -> None:
    """The gang's pod fits nowhere as things are; evicting db would make room, but its budget
    allows no disruption: the budget is named after ``preemption:``."""
    objs = [node("n1").cpu_m(4000), pod("db").on("n1").cpu_m(3000).priority(1).label("app", "db"),
            pdb("db", 0, app="db"), pod_group("g", 1).priority(100), pod("g-0").group("g").priority(100).cpu_m(2000)]
    why = _reasons(objs)["default/g"]
    assert why.startswith("default/g: pod default/g-0: 0/1 nodes are available: 1 Insufficient cpu. preemption: "
                          "not enough free capacity for the gang, even after evicting every lower-priority pod this "
                          "plan could take for it, within the disruptionsAllowed of "
                          "PodDisruptionBudget default/db (0 allowed)")
    # soft budgets: the same gang is placed, evicting db
    snap = reading.read([o.build() for o in objs])
    assert [b.pod for b in api.plan(snap, api.PlanOptions(time_limit=10, pdb_policy="soft")).bindings] == [
        "default/g-0"]


def test_a_pod_whose_gang_cannot_fit_together_gets_the_gangs_reason() -> None:
    """Each pod fits alone, the three together do not fit one rack: no histogram, the gang's reason."""
    objs = [node(n).rack(r).cpu_m(4000) for n, r in (("n0", "r0"), ("n1", "r0"), ("n2", "r1"))]
    objs += [pod_group("train", 3).topology(RACK).priority(100)]
    objs += [pod(f"train-{k}").group("train").priority(100).cpu_m(3000) for k in range(3)]
    why = _reasons(objs)["default/train"]
    assert why == ("default/train: no single topology.kubernetes.io/rack domain has room for the gang's pods of "
                   "default/train-0's shape, even after evicting every victim this plan may evict "
                   "(default/train needs 3 pods in one domain; at most 2 fit, in topology.kubernetes.io/rack=r0)")
