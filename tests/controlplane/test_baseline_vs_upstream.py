"""The greedy baseline against the real kube-scheduler 1.37.2, on small snapshots where
upstream's choice is deterministic (no score ties): the same pods evicted, the same nodes.
Each case pins one rule of upstream's workload-aware preemption that the baseline mirrors
(solver/baseline/greedy.py names the upstream function)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from solver import api, kube, reading
from solver.bench import upstream
from tests.builders import RACK, ZONE, admitted, composite, node, pdb, pod, pod_group, priority_class

Objs = list[dict[str, Any]]


def _preemptor() -> Objs:
    # a gang of one, priority 100, that only the target pool takes
    return [pod_group("pre", 1).priority(100).build(),
            pod("pre-0").group("pre").priority(100).cpu_m(2000).selector("pool", "target").build()]


def rank_case() -> Objs:
    """MoreImportantVictim's rank: a pod of a `single` PodGroup outranks a plain pod of the same
    priority, size and start, so it is reprieved first and the plain pod goes (name order, the
    old tie-break, would have kept the plain one)."""
    return [node("b").label("pool", "target").cpu_m(4000).build(),
            pod("a-plain").on("b").cpu_m(2000).priority(1).build(),
            pod_group("bg").priority(1).build(),
            pod("b-grouped").on("b").cpu_m(2000).group("bg").priority(1).build(),
            *_preemptor()]


def pdb_spending_case() -> Objs:
    """FilterVictimsWithPDBViolation spends a budget over every potential victim cluster-wide in
    importance order: p1, elsewhere and started first, takes the one disruption allowed, so p2 is
    classified violating, tried first, reprieved, and r goes (the old rule judged p2 by the
    victims on the target nodes alone, found it within budget, reprieved r and evicted p2)."""
    return [node("a").label("pool", "other").cpu_m(2000).build(),
            node("b").label("pool", "target").cpu_m(4000).build(),
            pod("p1").on("a").cpu_m(2000).priority(1).label("app", "db").started("2026-12-01T00:00:00Z").build(),
            pod("r").on("b").cpu_m(2000).priority(1).started("2026-12-01T00:01:00Z").build(),
            pod("p2").on("b").cpu_m(2000).priority(1).label("app", "db").started("2026-12-01T00:02:00Z").build(),
            pdb("db", 1, app="db").build(),
            *_preemptor()]


def unlabelled_case() -> Objs:
    """FilterVictimsWithPDBViolation never counts a pod without labels, whatever the budget's
    selector: "u" (no labels, started first, so the more important) and "l" both match the budget
    (app DoesNotExist, nothing allowed), but only l is classified violating, tried first and
    reprieved, so u goes (counting u too, both violate, u is reprieved first and l goes)."""
    budget = pdb("no-app", 0).build()
    budget["spec"]["selector"] = {"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}
    return [node("b").label("pool", "target").cpu_m(4000).build(),
            pod("u").on("b").cpu_m(2000).priority(1).started("2026-12-01T00:00:00Z").build(),
            pod("l").on("b").cpu_m(2000).priority(1).label("tier", "web").started("2026-12-01T00:01:00Z").build(),
            budget, *_preemptor()]


def single_pod_case() -> Objs:
    """A pod outside any group preempts through DefaultPreemption: pickOneNodeForPreemption
    prefers b, whose victim violates no budget, to a, the emptier node once its victim is gone,
    where the baseline's placement scores would put it (as it did, evicting va)."""
    return [node("a").label("pool", "target").cpu_m(8000).build(),
            node("b").label("pool", "target").cpu_m(4000).build(),
            pod("va").on("a").cpu_m(6000).priority(1).label("app", "db").build(),
            pod("vb").on("b").cpu_m(3000).priority(5).build(),
            pdb("db", 0, app="db").build(),
            pod("p").priority(100).cpu_m(3000).selector("pool", "target").build()]


def remainder_case() -> Objs:
    """A gang's next cycle: minCount 1 is met by the pod that fits, and the cycle after preempts
    r for the second pod (the old baseline stopped at minCount)."""
    return [node("b").label("pool", "target").cpu_m(4000).build(),
            pod("r").on("b").cpu_m(2000).priority(1).build(),
            *_preemptor(),
            pod("pre-1").group("pre").priority(100).cpu_m(2000).selector("pool", "target").build()]


def spread_case() -> Objs:
    """The default profile's node scores (NodeResourcesFit LeastAllocated + BalancedAllocation):
    a pod goes to the emptier node (the old baseline packed it beside the running one)."""
    return [node("a").cpu_m(4000).build(), node("b").cpu_m(4000).build(),
            pod("busy").on("a").cpu_m(1000).memory_mi(1024).priority(1).build(),
            pod_group("solo").priority(100).build(),
            pod("solo-0").group("solo").priority(100).cpu_m(1000).memory_mi(1024).build()]


def _rack_gang(n: int, cpu_m: int, memory_mi: int) -> Objs:
    return [pod_group("g", 2).priority(100).topology(RACK).build(),
            *(pod(f"g-{i}").group("g").priority(100).cpu_m(cpu_m).memory_mi(memory_mi).build() for i in range(n))]


def placement_count_case() -> Objs:
    """PodGroupPodsCount: rack r1 holds 2 of the gang's 4 pods (its minCount), r2 all 4; upstream
    evaluates both placements and takes r2 (the old baseline took the least free room, r1)."""
    return [node("a").rack("r1").cpu_m(2000).build(), node("b").rack("r2").cpu_m(4000).build(),
            *_rack_gang(4, 1000, 100)]


def placement_packing_case() -> Objs:
    """NodeResourcesFit's ScorePlacement (MostAllocated over the rack): r1 has the least room for
    the gang (2 pods) but ends half used, its memory idle; r2 (room for 3) ends about 72 % used,
    so upstream takes r2 where best fit took r1."""
    return [node("a").rack("r1").cpu_m(2000).memory_mi(65536).build(),
            node("b").rack("r2").cpu_m(4000).memory_mi(1024).build(),
            pod("busy").on("b").cpu_m(1000).memory_mi(512).priority(1000).build(),
            *_rack_gang(2, 1000, 100)]


def composite_placement_case() -> Objs:
    """The CompositePodGroup's own placements: each zone is evaluated with its child gang's rack
    placements inside it and scored on all the pods proposed; zone z2 holds all 4 pods, z1 only
    minCount's 2 (the old baseline took the zone with the least free room, z1)."""
    pipeline = composite("c", 1).priority(100).topology(ZONE).build()
    child = pod_group("g", 2).priority(100).topology(RACK).parent("c").build()
    for group in (pipeline, child):  # the API server requires a child's Workload (validatePodGroup)
        group["spec"]["workloadRef"] = {"workloadName": "c", "templateName": group["metadata"]["name"]}
    return [node("a").zone("z1").rack("r1").cpu_m(2000).build(),
            node("b").zone("z2").rack("r2").cpu_m(4000).build(),
            pipeline, child,
            *(pod(f"g-{i}").group("g").priority(100).cpu_m(1000).memory_mi(100).build() for i in range(4))]


def never_retried_case() -> Objs:
    """A preemptionPolicy Never gang, tried first (priority 200), finds no room and waits; the
    gang after it (priority 100) preempts v; v's deletion sends the Never gang back to the
    queue, and it takes the room v left beside the preemptor. The model takes both at once."""
    never = priority_class("never-200", 200).build()
    never["preemptionPolicy"] = "Never"  # where Priority admission takes a pod's policy from
    waiting = pod("nv-0").group("nv").priority(200).never_preempt().cpu_m(2000).selector("pool", "target").build()
    waiting["spec"]["priorityClassName"] = "never-200"
    return [node("b").label("pool", "target").cpu_m(4000).build(), never,
            pod("v").on("b").cpu_m(4000).priority(1).build(),
            pod_group("nv", 1).priority(200).never_preempt().build(), waiting, *_preemptor()]


def read_write_once_case() -> Objs:
    """A ReadWriteOncePod claim held by a lower-priority running pod on b (issue 50, item 2):
    VolumeRestrictions refuses the pending pod everywhere; the preemption dry run on b removes
    the holder, which lifts the conflict there only, so the holder goes and the pod lands on b,
    though a has room."""
    from tests.pipeline.test_refusals import _network_volume, _once_pod, _with_claim

    return [node("a").cpu_m(4000).build(), node("b").cpu_m(4000).build(), _network_volume(), _once_pod(),
            _with_claim(pod("user").on("b").cpu_m(500).priority(1), "data").build(),
            _with_claim(pod("p").cpu_m(500).priority(100), "data").build()]


def shared_claim_case() -> Objs:
    """A WaitForFirstConsumer claim two pending pods name, only node-local volumes serving it
    (one on a, one on b; issue 50, item 1): the first pod binds it to b's volume (b is emptier),
    and the second can only go where that volume is, b."""
    from tests.pipeline.test_refusals import _class, _pv, _pvc, _with_claim

    return [node("a").cpu_m(1000).build(), node("b").cpu_m(4000).build(), _class("local", "WaitForFirstConsumer"),
            _pv("pv-a", "a"), _pv("pv-b", "b"), _pvc("data"),
            *(_with_claim(pod(f"reader-{x}").cpu_m(1000), "data").build() for x in "ab")]


CASES: dict[str, tuple[Callable[[], Objs], set[str], dict[str, str]]] = {
    # case: (objects, evicted pods, bindings)
    "victim rank": (rank_case, {"default/a-plain"}, {"default/pre-0": "b"}),
    "pdb spending": (pdb_spending_case, {"default/r"}, {"default/pre-0": "b"}),
    "spread": (spread_case, set(), {"default/solo-0": "b"}),
    "composite placement": (composite_placement_case, set(), {f"default/g-{i}": "b" for i in range(4)}),
    "placement count": (placement_count_case, set(), {f"default/g-{i}": "b" for i in range(4)}),
    "placement packing": (placement_packing_case, set(), {"default/g-0": "b", "default/g-1": "b"}),
    "remainder": (remainder_case, {"default/r"}, {"default/pre-0": "b", "default/pre-1": "b"}),
    "unlabelled pod": (unlabelled_case, {"default/u"}, {"default/pre-0": "b"}),
    "single pod node choice": (single_pod_case, {"default/vb"}, {"default/p": "b"}),
    "never retried": (never_retried_case, {"default/v"}, {"default/pre-0": "b", "default/nv-0": "b"}),
    "read-write-once preemption": (read_write_once_case, {"default/user"}, {"default/p": "b"}),
    "shared claim": (shared_claim_case, set(), {"default/reader-a": "b", "default/reader-b": "b"}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_baseline_evicts_and_binds_what_the_real_scheduler_does(name: str) -> None:
    build, evicted, bindings = CASES[name]
    docs = admitted(build())
    snap = reading.read(docs)
    base = api.plan(snap, api.PlanOptions(baseline_only=True, pdb_policy="soft"))  # upstream deletes its victims
    assert ({e.pod for e in base.evictions}, {b.pod: b.node for b in base.bindings}) == (evicted, bindings)
    if name in ("never retried", "read-write-once preemption", "shared claim"):  # the model, jointly
        plan = api.plan(snap, api.PlanOptions(time_limit=10, pdb_policy="soft"))
        assert ({e.pod for e in plan.evictions}, {b.pod: b.node for b in plan.bindings}) == (evicted, bindings)
    outcome = upstream.run_kube_scheduler(kube.flatten(docs), settle=3, pending_first=True, timeout=120)
    assert (set(outcome.deleted), outcome.bindings) == (evicted, bindings)
