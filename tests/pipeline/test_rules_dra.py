"""One hand-written case per DRA rule, each asserting the exact bindings, evictions and devices.

Every snapshot goes through solver.kube (real resource.k8s.io/v1 object dicts) and every
plan through solver.verify.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from solver import api, reading, verify
from tests.builders import RACK, node, pod, pod_group, snapshot
from tests.dra_builders import (
    DRIVER,
    PCIE,
    claim,
    claim_template,
    device,
    device_class,
    first_available,
    gpu_slice,
    group_claims,
    request,
    resource_slice,
    with_claims,
)

GPU_CLASS = device_class("gpu", f'device.driver == "{DRIVER}"')


def _plan(*objs: Any) -> tuple[dict[str, str], list[str], list[dict[str, Any]], Any]:
    snap = snapshot(*objs)
    # the CP-SAT model decides (no shortcut through a baseline at the trivial bound)
    plan = api.plan(snap, api.PlanOptions(time_limit=30, ideal_shortcut=False))
    assert plan.stats["solver"] == "cp-sat"
    assert verify.verify(snap.facts, snap, plan) == []
    base = api.plan(snap, api.PlanOptions(baseline_only=True))  # the greedy handles devices too
    assert verify.verify(snap.facts, snap, base) == []
    assert plan.objective.tiers >= base.objective.tiers
    allocs = [dict(d.to_dict().items()) for d in plan.device_allocations]
    return {b.pod: b.node for b in plan.bindings}, [e.pod for e in plan.evictions], allocs, plan


def _devices(alloc: dict[str, Any]) -> list[str]:
    return [f"{d['pool']}/{d['device']}" for d in alloc["devices"]]


def _gpu_pod(name: str, template: str) -> Any:
    return with_claims(pod(name).cpu_m(1000).priority(100), gpu=template)


def test_device_class_selector_picks_its_driver_only() -> None:
    fpga = resource_slice("n0-fpga", [device("fpga-0"), device("fpga-1")], node="n0", driver="fpga.example.com")
    bindings, _, allocs, _ = _plan(node("n0").cpu_m(8000), gpu_slice("n0", 2), fpga, GPU_CLASS,
                                   claim_template("two", request("gpu", count=2)), _gpu_pod("p", "two"))
    assert bindings == {"default/p": "n0"}
    assert allocs == [{"pod": "default/p", "claim": "gpu", "request": "gpu", "devices": [
        {"driver": DRIVER, "pool": "n0", "device": "gpu-0"}, {"driver": DRIVER, "pool": "n0", "device": "gpu-1"}]}]


def test_request_selector_narrows_the_class() -> None:
    mixed = resource_slice("n0-gpu", [device("gpu-0", model="A100"), device("gpu-1", model="T4")], node="n0")
    t4 = request("gpu", count=1, selectors=(f'device.attributes["{DRIVER}"].model == "T4"',))
    _, _, allocs, _ = _plan(node("n0").cpu_m(8000), mixed, GPU_CLASS, claim_template("t4", t4), _gpu_pod("p", "t4"))
    assert [_devices(a) for a in allocs] == [["n0/gpu-1"]]


def test_count_takes_exactly_that_many() -> None:
    _, _, allocs, _ = _plan(node("n0").cpu_m(8000), gpu_slice("n0", 4), GPU_CLASS,
                            claim_template("three", request("gpu", count=3)), _gpu_pod("p", "three"))
    assert [_devices(a) for a in allocs] == [["n0/gpu-0", "n0/gpu-1", "n0/gpu-2"]]


def test_all_mode_takes_every_matching_device_and_needs_them_all_free() -> None:
    # n0's only GPU is held by a pod that may not be preempted: All cannot be met there
    held = claim("held", request("gpu"), allocated=[("n0", "gpu-0")], node="n0", reserved_for=["vip"])
    objs = [node("n0").cpu_m(8000), node("n1").cpu_m(8000), gpu_slice("n0", 1), gpu_slice("n1", 3), GPU_CLASS, held,
            with_claims(pod("vip").on("n0").cpu_m(500).priority(1000), gpu="claim:held"),
            claim_template("all", request("gpu", all_mode=True)), _gpu_pod("p", "all")]
    bindings, evictions, allocs, _ = _plan(*objs)
    assert bindings == {"default/p": "n1"} and evictions == []
    assert [_devices(a) for a in allocs] == [["n1/gpu-0", "n1/gpu-1", "n1/gpu-2"]]


def test_first_available_falls_back_to_the_next_entry_that_fits() -> None:
    big, small = request("big", count=4), request("small", count=1)
    _, _, allocs, _ = _plan(node("n0").cpu_m(8000), gpu_slice("n0", 2), GPU_CLASS,
                            claim_template("fa", first_available("gpu", big, small)), _gpu_pod("p", "fa"))
    assert [(a["request"], _devices(a)) for a in allocs] == [("gpu/small", ["n0/gpu-0"])]


def test_first_available_prefers_the_first_entry_when_both_fit() -> None:
    big, small = request("big", count=2), request("small", count=1)
    _, _, allocs, plan = _plan(node("n0").cpu_m(8000), gpu_slice("n0", 2), GPU_CLASS,
                               claim_template("fa", first_available("gpu", big, small)), _gpu_pod("p", "fa"))
    assert [(a["request"], _devices(a)) for a in allocs] == [("gpu/big", ["n0/gpu-0", "n0/gpu-1"])]
    assert plan.status == "OPTIMAL"


def test_match_attribute_keeps_a_claim_on_one_pcie_root() -> None:
    # gpu-0 (pci0) is held for good, so 4 GPUs on one root can only come from pci1
    held = claim("held", request("gpu"), allocated=[("n0", "gpu-0")], node="n0", reserved_for=["vip"])
    objs = [node("n0").cpu_m(8000), gpu_slice("n0", 8, pcie=4), GPU_CLASS, held,
            with_claims(pod("vip").on("n0").cpu_m(500).priority(1000), gpu="claim:held"),
            claim_template("four", request("gpu", count=4), match=PCIE), _gpu_pod("p", "four")]
    _, _, allocs, _ = _plan(*objs)
    assert [_devices(a) for a in allocs] == [["n0/gpu-4", "n0/gpu-5", "n0/gpu-6", "n0/gpu-7"]]


def test_distinct_attribute_spreads_a_claim_over_pcie_roots() -> None:
    _, _, allocs, _ = _plan(node("n0").cpu_m(8000), gpu_slice("n0", 4, pcie=2), GPU_CLASS,
                            claim_template("spread", request("gpu", count=2), distinct=PCIE), _gpu_pod("p", "spread"))
    assert [_devices(a) for a in allocs] == [["n0/gpu-0", "n0/gpu-2"]]


def test_distinct_attribute_that_cannot_hold_leaves_the_pod_pending() -> None:
    bindings, _, allocs, plan = _plan(
        node("n0").cpu_m(8000), gpu_slice("n0", 4, pcie=4), GPU_CLASS,
        claim_template("spread", request("gpu", count=2), distinct=PCIE), _gpu_pod("p", "spread"))
    assert bindings == {} and allocs == [] and plan.objective.placed_pods == 0


def test_shared_group_claim_on_a_node_local_pool_puts_the_group_on_that_node() -> None:
    objs = [node("n0").cpu_m(8000), node("n1").cpu_m(8000), gpu_slice("n1", 1), GPU_CLASS,
            claim_template("one", request("gpu", count=1)),
            group_claims(pod_group("g", 2).priority(100), gpu="one"),
            with_claims(pod("g-0").group("g").cpu_m(1000), gpu="one"),
            with_claims(pod("g-1").group("g").cpu_m(1000), gpu="one")]
    bindings, _, allocs, _ = _plan(*objs)
    assert bindings == {"default/g-0": "n1", "default/g-1": "n1"}
    assert allocs == [{"podGroup": "default/g", "claim": "gpu", "request": "gpu",
                       "devices": [{"driver": DRIVER, "pool": "n1", "device": "gpu-0"}]}]


def test_shared_group_claim_on_a_network_pool_keeps_the_group_where_the_pool_reaches() -> None:
    fabric = resource_slice("fabric", [device("link-0")], pool="fabric",
                            node_selector={"nodeSelectorTerms": [{"matchExpressions": [
                                {"key": RACK, "operator": "In", "values": ["r1"]}]}]})
    objs = [node("n0").rack("r0").cpu_m(8000), node("n1").rack("r1").cpu_m(8000),
            node("n2").rack("r1").cpu_m(8000), fabric, GPU_CLASS,
            claim_template("link", request("gpu", count=1)),
            group_claims(pod_group("g", 2).priority(100), link="link"),
            with_claims(pod("g-0").group("g").cpu_m(6000), link="link"),
            with_claims(pod("g-1").group("g").cpu_m(6000), link="link")]
    bindings, _, allocs, _ = _plan(*objs)
    assert sorted(bindings.values()) == ["n1", "n2"]  # 6 cpu each: one per node, both in r1
    assert [(a["podGroup"], _devices(a)) for a in allocs] == [("default/g", ["fabric/link-0"])]


def test_a_shared_all_claim_is_allocated_on_one_sharers_node_and_reached_from_the_others() -> None:
    """All mode from n0 is {link-0}, from n1 or n2 it is {link-0} plus that node's GPUs. The
    group's claim is allocated once, on one sharer's node (upstream's PodGroup cycle: the first
    pod allocates it, the next ones are pinned to that allocation and are not asked All
    again): allocated from n0 it is just the link, which n1 and n2 reach, so the second sharer
    (6 cpu each, one per node) runs on either (the property test's naive model found the
    stricter rule that every sharer's own All set be the same)."""
    fabric = resource_slice("fabric", [device("link-0")], pool="fabric", all_nodes=True)
    objs = [node("n0").cpu_m(8000), node("n1").cpu_m(8000), node("n2").cpu_m(8000),
            gpu_slice("n1", 2), gpu_slice("n2", 2), fabric, GPU_CLASS,
            claim_template("every", request("gpu", all_mode=True)),
            group_claims(pod_group("g", 2).priority(100), dev="every"),
            with_claims(pod("g-0").group("g").cpu_m(6000), dev="every"),
            with_claims(pod("g-1").group("g").cpu_m(6000), dev="every")]
    bindings, _, allocs, _ = _plan(*objs)
    assert len(bindings) == 2 and "n0" in bindings.values()
    assert [(a["podGroup"], _devices(a)) for a in allocs] == [("default/g", ["fabric/link-0"])]
    # without n0 no node's All set is one every other sharer reaches (each holds its own GPUs)
    bindings, _, allocs, _ = _plan(*objs[1:])
    assert bindings == {} and allocs == []


def test_devices_held_by_a_victim_go_free_when_it_is_evicted() -> None:
    held = claim("bg-gpu", request("gpu"), allocated=[("n0", "gpu-0")], node="n0", reserved_for=["bg"])
    objs = [node("n0").cpu_m(8000), gpu_slice("n0", 1), GPU_CLASS, held,
            with_claims(pod("bg").on("n0").cpu_m(500).priority(1), gpu="claim:bg-gpu"),
            claim_template("one", request("gpu", count=1)), _gpu_pod("p", "one")]
    bindings, evictions, allocs, _ = _plan(*objs)
    assert bindings == {"default/p": "n0"} and evictions == ["default/bg"]
    assert [_devices(a) for a in allocs] == [["n0/gpu-0"]]


def test_a_pending_pod_naming_the_held_claim_keeps_its_devices_held() -> None:
    # p shares bg's allocated claim, so placing p keeps gpu-0 allocated to it: evicting bg frees
    # nothing, and p's own All-mode claim (every GPU on n0) cannot be met
    held = claim("bg-gpu", request("gpu"), allocated=[("n0", "gpu-0")], node="n0", reserved_for=["bg"])
    objs = [node("n0").cpu_m(8000), gpu_slice("n0", 1), GPU_CLASS, held,
            with_claims(pod("bg").on("n0").cpu_m(500).priority(1), gpu="claim:bg-gpu"),
            claim_template("all", request("gpu", all_mode=True)),
            with_claims(pod("p").cpu_m(1000).priority(100), gpu="all", old="claim:bg-gpu")]
    bindings, evictions, allocs, plan = _plan(*objs)
    assert bindings == {} and evictions == [] and allocs == []
    assert plan.objective.placed_pods == 0


def test_a_held_claim_is_freed_for_another_pod_when_its_pending_user_stays_pending() -> None:
    # q (priority 100) needs n0's only GPU; w (priority 50) names bg's claim. Evicting bg and
    # leaving w pending frees gpu-0 for q: the higher priority wins
    held = claim("bg-gpu", request("gpu"), allocated=[("n0", "gpu-0")], node="n0", reserved_for=["bg"])
    objs = [node("n0").cpu_m(8000), gpu_slice("n0", 1), GPU_CLASS, held,
            with_claims(pod("bg").on("n0").cpu_m(500).priority(1), gpu="claim:bg-gpu"),
            with_claims(pod("w").cpu_m(500).priority(50), old="claim:bg-gpu"),
            claim_template("one", request("gpu", count=1)), _gpu_pod("q", "one")]
    bindings, evictions, allocs, _ = _plan(*objs)
    assert bindings == {"default/q": "n0"} and evictions == ["default/bg"]
    assert [(a["pod"], _devices(a)) for a in allocs] == [("default/q", ["n0/gpu-0"])]


def test_a_free_device_elsewhere_is_taken_instead_of_evicting() -> None:
    held = claim("bg-gpu", request("gpu"), allocated=[("n0", "gpu-0")], node="n0", reserved_for=["bg"])
    objs = [node("n0").cpu_m(8000), node("n1").cpu_m(8000), gpu_slice("n0", 1), gpu_slice("n1", 1), GPU_CLASS, held,
            with_claims(pod("bg").on("n0").cpu_m(500).priority(1), gpu="claim:bg-gpu"),
            claim_template("one", request("gpu", count=1)), _gpu_pod("p", "one")]
    bindings, evictions, allocs, _ = _plan(*objs)
    assert bindings == {"default/p": "n1"} and evictions == []
    assert [_devices(a) for a in allocs] == [["n1/gpu-0"]]


def test_a_device_taint_keeps_claims_off_unless_tolerated() -> None:
    tainted = gpu_slice("n0", 1, taint={"key": "broken", "value": "ecc", "effect": "NoSchedule"})
    base = [node("n0").cpu_m(8000), tainted, GPU_CLASS]
    bindings, _, _, plan = _plan(*base, claim_template("one", request("gpu", count=1)), _gpu_pod("p", "one"))
    assert bindings == {} and plan.objective.placed_pods == 0
    tolerant = request("gpu", count=1, tolerations=[{"key": "broken", "operator": "Exists", "effect": "NoSchedule"}])
    bindings, _, allocs, _ = _plan(*base, claim_template("one", tolerant), _gpu_pod("p", "one"))
    assert bindings == {"default/p": "n0"} and [_devices(a) for a in allocs] == [["n0/gpu-0"]]


def _taint_rule(name: str, effect: str, **selector: str) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": name},
            "spec": {"deviceSelector": selector, "taint": {"key": "maintenance", "effect": effect}}}


def test_a_device_taint_rule_taints_the_devices_it_selects() -> None:
    """DeviceTaintRule (GA in 1.37): gpu-0 tainted by a rule, so the claim gets gpu-1; a rule
    over the whole pool leaves the pod pending; effect None only records; a toleration lets the
    claim take a tainted device."""
    base = [node("n0").cpu_m(8000), gpu_slice("n0", 2), GPU_CLASS, claim_template("one", request("gpu", count=1)),
            _gpu_pod("p", "one")]
    _, _, allocs, _ = _plan(*base, _taint_rule("r", "NoSchedule", driver=DRIVER, pool="n0", device="gpu-0"))
    assert [_devices(a) for a in allocs] == [["n0/gpu-1"]]
    bindings, _, _, _ = _plan(*base, _taint_rule("r", "NoExecute", pool="n0"))
    assert bindings == {}
    bindings, _, _, _ = _plan(*base, _taint_rule("r", "None", pool="n0"))
    assert bindings == {"default/p": "n0"}
    tolerant = request("gpu", count=1, tolerations=[{"key": "maintenance", "operator": "Exists"}])
    bindings, _, _, _ = _plan(*base[:3], claim_template("one", tolerant), _gpu_pod("p", "one"),
                              _taint_rule("r", "NoSchedule", pool="n0"))
    assert bindings == {"default/p": "n0"}


def _partitioned_gpu(node_name: str = "n0") -> list[Any]:
    """One GPU as partitionable devices (DRAPartitionableDevices): the whole GPU consumes its
    40Gi of memory counter, each of two halves 20Gi; a counter set in its own slice."""
    counters = resource_slice(f"{node_name}-counters", [], node=node_name)
    del counters.obj["spec"]["devices"]
    counters.obj["spec"]["sharedCounters"] = [{"name": "gpu-0", "counters": {"memory": {"value": "40Gi"}}}]
    counters.obj["spec"]["pool"]["resourceSliceCount"] = 2
    devices = []
    for name, memory in (("gpu-0", "40Gi"), ("gpu-0-half-0", "20Gi"), ("gpu-0-half-1", "20Gi")):
        devices.append({"name": name, "attributes": {"whole": {"bool": name == "gpu-0"}},
                        "consumesCounters": [{"counterSet": "gpu-0", "counters": {"memory": {"value": memory}}}]})
    parts = resource_slice(f"{node_name}-devices", devices, node=node_name)
    parts.obj["spec"]["pool"]["resourceSliceCount"] = 2
    return [counters, parts]


def test_partitionable_devices_share_their_counters() -> None:
    """Two devices fit the GPU's counters only as the two halves; three never do; a running pod
    holding the whole GPU leaves nothing until it is evicted."""
    base = [node("n0").cpu_m(8000), *_partitioned_gpu(), GPU_CLASS]
    bindings, _, allocs, plan = _plan(*base, claim_template("two", request("gpu", count=2)), _gpu_pod("p", "two"))
    assert bindings == {"default/p": "n0"} and [_devices(a) for a in allocs] == [["n0/gpu-0-half-0", "n0/gpu-0-half-1"]]
    bindings, _, _, plan = _plan(*base, claim_template("three", request("gpu", count=3)), _gpu_pod("p", "three"))
    assert bindings == {}
    _naive_agrees(snapshot(*base, claim_template("three", request("gpu", count=3)), _gpu_pod("p", "three")), plan)
    whole = 'device.attributes["gpu.example.com"].whole'
    held = [claim("r-gpu", request("gpu", selectors=(whole,)), allocated=[("n0", "gpu-0")], node="n0",
                  reserved_for=["r"]),
            with_claims(pod("r").on("n0").cpu_m(1000).priority(1), gpu="claim:r-gpu")]
    low = claim_template("one", request("gpu", count=1))
    bindings, evicted, _, plan = _plan(*base, *held, low, with_claims(pod("p").cpu_m(1000).priority(0), gpu="one"))
    assert (bindings, evicted) == ({}, [])
    bindings, evicted, allocs, plan = _plan(*base, *held, low, _gpu_pod("p", "one"))
    assert (bindings, evicted) == ({"default/p": "n0"}, ["default/r"])
    _naive_agrees(snapshot(*base, *held, low, _gpu_pod("p", "one")), plan)


def _naive_agrees(snap: Any, plan: Any) -> None:
    """The property test's naive model (one boolean per device) reaches the same tiers."""
    from tests.pipeline.naive import naive_tiers

    want, o = naive_tiers(snap), plan.objective
    assert (want.placed, want.evicted, want.cost_milli) == (o.placed_pods, o.evicted_pods,
                                                            round(o.preemption_cost * 1000))


def test_the_shipped_dra_example_keeps_every_claim_on_one_root_and_evicts_one_pod() -> None:
    from pathlib import Path


    snap = reading.load(Path(__file__).resolve().parent.parent.parent / "examples" / "dra-gpus.yaml")
    plan = api.plan(snap)
    assert plan.status == "OPTIMAL" and verify.verify(snap.facts, snap, plan) == []
    assert plan.objective.placed_pods == 4 and plan.objective.evicted_pods == 1
    assert plan.objective.preemption_cost == 11.0
    # gpu-node-2 (all free) takes two trainers, gpu-node-1 its free pci0, gpu-node-0 the root freed
    assert sorted(plan.bindings[i].node for i in range(4)) == ["gpu-node-0", "gpu-node-1", "gpu-node-2", "gpu-node-2"]
    by_pod = {d.pod: [x.device for x in d.devices] for d in plan.device_allocations}
    roots = {tuple(devs) for devs in by_pod.values()}
    assert roots <= {("gpu-0", "gpu-1", "gpu-2", "gpu-3"), ("gpu-4", "gpu-5", "gpu-6", "gpu-7")}


def test_a_claim_also_held_by_a_higher_priority_pod_stays_held_and_that_pod_stays() -> None:
    # lo and hi share one allocated claim; p (priority 20) may evict lo but not hi (priority 50),
    # so gpu-0 never comes free, and hi (cost 0) is no victim for q, which may not preempt at all
    shared = claim("h", request("gpu"), allocated=[("n0", "gpu-0")], node="n0", reserved_for=["lo", "hi"])
    objs = [node("n0").cpu_m(8000).pods(2), gpu_slice("n0", 2), GPU_CLASS, shared,
            with_claims(pod("lo").on("n0").cpu_m(500).priority(0), gpu="claim:h"),
            with_claims(pod("hi").on("n0").cpu_m(500).priority(50).cost("0"), gpu="claim:h"),
            claim_template("one", request("gpu", count=1)),
            with_claims(pod("p").cpu_m(500).priority(20), gpu="one"),
            pod("q").cpu_m(500).priority(20).never_preempt()]
    bindings, evictions, allocs, _ = _plan(*objs)
    assert bindings == {"default/p": "n0"} and evictions == ["default/lo"]
    assert [(a["pod"], _devices(a)) for a in allocs] == [("default/p", ["n0/gpu-1"])]


def test_no_dra_preemption_keeps_every_held_device_held_as_upstream_plans() -> None:
    # the shipped example places its trainers only by evicting a batch pod for its GPUs; upstream
    # 1.37's DRA plugin cannot free them (no PreFilterExtensions, KEP-5690), and neither can the
    # baseline, nor gangplace with --no-dra-preemption
    from solver import api, verify

    snap = reading.load(Path(__file__).resolve().parents[2] / "examples" / "dra-gpus.yaml")
    freed = api.plan(snap, api.PlanOptions())
    assert freed.objective.placed_pods == 4 and [e.pod for e in freed.evictions] == ["default/infer-b"]
    for options in (api.PlanOptions(dra_preemption=False), api.PlanOptions(baseline_only=True)):
        plan = api.plan(snap, options)
        assert plan.bindings == () and plan.evictions == () and plan.device_allocations == ()
        assert verify.verify(snap.facts, snap, plan, dra_preemption=False) == []
    # the freeing plan breaks the rule it does not follow
    assert [v.rule for v in verify.verify(snap.facts, snap, freed, dra_preemption=False)] != []


def test_pods_of_one_class_may_take_different_first_available_entries_on_one_node() -> None:
    # one model-A GPU and two model-B GPUs: the first pod takes entry a (1 x A), the second
    # entry b (2 x B). The node's bound by devices once took the best single entry (1 pod)
    model = f'device.attributes["{DRIVER}"].model'
    objs = [node("n0"), device_class("gpu", f'device.driver == "{DRIVER}"'),
            resource_slice("n0-gpu", [device("g0", model="A"), device("g1", model="B"), device("g2", model="B")],
                           node="n0"),
            claim_template("t", first_available("r", request("a", count=1, selectors=(f'{model} == "A"',)),
                                                request("b", count=2, selectors=(f'{model} == "B"',)))),
            pod_group("g", 2).priority(5)]
    objs += [with_claims(pod(f"g-{k}").group("g"), gpu="t") for k in range(2)]
    snap = snapshot(*objs)
    for options in (api.PlanOptions(ideal_shortcut=False), api.PlanOptions(baseline_only=True)):
        plan = api.plan(snap, options)
        assert plan.status == ("FEASIBLE" if options.baseline_only else "OPTIMAL")
        assert "fromBaseline" not in plan.stats  # the model itself places both
        assert {b.pod: b.node for b in plan.bindings} == {"default/g-0": "n0", "default/g-1": "n0"}
        assert sorted((a.request, len(a.devices)) for a in plan.device_allocations) == [("r/a", 1), ("r/b", 2)]
        assert verify.verify(snap.facts, snap, plan) == []


def _named_by_two(*nodes: Any, slices: list[Any]) -> list[Any]:
    """Two standalone pods, a and b, whose entries (of different names) name one ResourceClaim c."""
    return [*nodes, *slices, GPU_CLASS, claim("c", request("gpu")),
            with_claims(pod("a").cpu_m(1500), gpu="claim:c"), with_claims(pod("b").cpu_m(1500), dev="claim:c")]


def test_a_claim_several_pending_pods_name_is_allocated_once_for_the_first_bound() -> None:
    """Upstream allocates such a claim for the first pod it schedules and pins the others to
    that allocation (once refused as not modelled). n1's one GPU serves both, where both fit;
    where only one fits, the other stays pending; a network device serves them on two nodes."""
    both = _named_by_two(node("n1").cpu_m(4000), node("n2").cpu_m(4000), slices=[gpu_slice("n1", 1)])
    bindings, _, allocs, _ = _plan(*both)
    assert bindings == {"default/a": "n1", "default/b": "n1"}
    assert [(a["pod"], a["claim"], _devices(a)) for a in allocs] == [("default/a", "gpu", ["n1/gpu-0"])]
    one = _named_by_two(node("n1").cpu_m(2000), node("n2").cpu_m(4000), slices=[gpu_slice("n1", 1)])
    bindings, _, allocs, _ = _plan(*one)
    assert len(bindings) == 1 and set(bindings.values()) == {"n1"}
    fabric = resource_slice("fabric", [device("link-0")], pool="fabric", all_nodes=True)
    apart = _named_by_two(node("n1").cpu_m(2000), node("n2").cpu_m(2000), slices=[fabric])
    bindings, _, allocs, _ = _plan(*apart)
    assert sorted(bindings.values()) == ["n1", "n2"]
    assert [(a["pod"], _devices(a)) for a in allocs] == [("default/a", ["fabric/link-0"])]


def test_the_verifier_wants_one_allocation_reachable_from_every_pod_naming_the_claim() -> None:
    from tests.verify.test_verify_dra import alloc, plan

    snap = snapshot(*_named_by_two(node("n1").cpu_m(4000), node("n2").cpu_m(4000),
                                   slices=[gpu_slice("n1", 1), gpu_slice("n2", 1)]))
    a, b = "default/a", "default/b"

    def broken(bindings: dict[str, str], *allocs: Any) -> list[str]:
        return sorted({v.rule for v in verify.verify(snap.facts, snap, plan(snap, bindings, *allocs))})

    assert broken({a: "n1", b: "n1"}, alloc(a, "gpu", "gpu", f"{DRIVER}/n1/gpu-0")) == []
    # b's node does not reach a's allocation
    assert broken({a: "n1", b: "n2"}, alloc(a, "gpu", "gpu", f"{DRIVER}/n1/gpu-0")) == ["device-reach"]
    # allocated twice, or for the second pod by name
    assert broken({a: "n1", b: "n2"}, alloc(a, "gpu", "gpu", f"{DRIVER}/n1/gpu-0"),
                  alloc(b, "dev", "gpu", f"{DRIVER}/n2/gpu-0")) == ["device-allocation", "device-reach"]
    assert broken({a: "n1", b: "n1"}, alloc(b, "dev", "gpu", f"{DRIVER}/n1/gpu-0")) == ["device-allocation"]


def test_any_pod_naming_a_claim_several_name_may_be_the_one_that_preempts_for_it() -> None:
    """a (which never preempts) and b (priority 100) name c; n1's one GPU is held by r's claim.
    A plan that evicts r and gives c's allocation to a, the first by name, is valid: b could
    have been scheduled first, and its preemption frees the GPU (the property test found the
    verifier judging by a's power alone). The model does the same: the claim's allocation may
    evict for it when a placed pod naming it may preempt. So it places both and evicts r (as
    upstream would: a fails first, b preempts and allocates c, then a joins it); with b alone
    Never too, it evicts nothing (the property test found the model attributing the claim to
    its weakest sharer, a, and proving a worse plan optimal)."""
    from tests.verify.test_verify_dra import alloc, plan

    objs = [node("n1").cpu_m(4000), gpu_slice("n1", 1), GPU_CLASS,
            claim("held", request("gpu"), allocated=[("n1", "gpu-0")], node="n1", reserved_for=["r"]),
            with_claims(pod("r").on("n1").cpu_m(500), gpu="claim:held"), claim("c", request("gpu")),
            with_claims(pod("a").cpu_m(500).priority(100).never_preempt(), gpu="claim:c"),
            with_claims(pod("b").cpu_m(500).priority(100), dev="claim:c")]
    snap = snapshot(*objs)
    hand = plan(snap, {"default/a": "n1", "default/b": "n1"}, alloc("default/a", "gpu", "gpu", f"{DRIVER}/n1/gpu-0"),
                evict=["default/r"])
    assert verify.verify(snap.facts, snap, hand) == []
    assert _plan(*objs)[:2] == ({"default/a": "n1", "default/b": "n1"}, ["default/r"])
    objs[-1] = with_claims(pod("b").cpu_m(500).priority(100).never_preempt(), dev="claim:c")
    assert _plan(*objs)[:2] == ({}, [])


def _reserved_for(count: int) -> list[Any]:
    """n1's GPU allocated to claim "held", reserved for r and ``count`` - 1 other consumers;
    three pending pods name it."""
    held = claim("held", request("gpu"), allocated=[("n1", "gpu-0")], node="n1", reserved_for=["r"])
    held.obj["status"]["reservedFor"] += [{"resource": "widgets", "apiGroup": "example.com", "name": f"x{i}",
                                           "uid": f"uid-x{i}"} for i in range(count - 1)]
    return [node("n1").cpu_m(4000), gpu_slice("n1", 1), GPU_CLASS, held,
            with_claims(pod("r").on("n1").cpu_m(500), gpu="claim:held"),
            *(with_claims(pod(f"p{i}").cpu_m(500), gpu="claim:held") for i in range(3))]


def test_a_claims_reservations_stop_at_256_consumers() -> None:
    """Each pod bound with an allocated claim joins its reservedFor, which holds at most 256
    (ResourceClaimReservedForMaxSize; kube-apiserver refuses more): with 255 listed one more
    pod binds; with 256 none does, and the pod says what upstream's PreFilter says."""
    bindings, _, _, _ = _plan(*_reserved_for(255))
    assert list(bindings.values()) == ["n1"]
    bindings, _, _, plan = _plan(*_reserved_for(256))
    assert bindings == {}
    # the real scheduler's words (its PreBind fails to reserve the claim; compared on the real control plane)
    assert {w.reason for w in plan.workloads} == {
        'running PreBind plugin "DynamicResources": add reservation to claim default/held: ResourceClaim.resource'
        '.k8s.io "held" is invalid: status.reservedFor: Too many: 257: must have at most 256 items'}
    from tests.verify.test_verify_dra import plan as hand

    snap = snapshot(*_reserved_for(255))
    assert sorted({v.rule for v in verify.verify(snap.facts, snap, hand(snap, {"default/p0": "n1", "default/p1": "n1"}))}) == [
        "claim-reservations"]


def _admin(name: str = "gpu") -> dict[str, Any]:
    r = request(name)
    r["exactly"]["adminAccess"] = True
    return r


def test_admin_access_takes_a_device_in_use_and_uses_nothing_up() -> None:
    """DRAAdminAccess (GA, locked on): allocateDevice skips the in-use check for an adminAccess
    request and marks the result; such a result is "not considered as allocated"
    (allocateddevices.go). Two monitoring pods share the GPU r holds, without evicting it;
    the verifier wants the flag on admin results only; an admin result holds nothing."""
    from tests.verify.test_verify_dra import alloc, plan

    held = claim("held", request("gpu"), allocated=[("n1", "gpu-0")], node="n1", reserved_for=["r"])
    objs = [node("n1").cpu_m(4000), gpu_slice("n1", 1), GPU_CLASS, held,
            with_claims(pod("r").on("n1").cpu_m(500), gpu="claim:held"), claim_template("mon", _admin()),
            with_claims(pod("m1").cpu_m(500).priority(100), gpu="mon"),
            with_claims(pod("m2").cpu_m(500).priority(100), gpu="mon")]
    bindings, evicted, allocs, found = _plan(*objs)
    assert bindings == {"default/m1": "n1", "default/m2": "n1"} and evicted == []
    assert not found.stats.get("fromBaseline")  # the model's own plan
    assert [(a["pod"], a["devices"]) for a in allocs] == [
        (f"default/m{i}", [{"driver": DRIVER, "pool": "n1", "device": "gpu-0", "adminAccess": True}]) for i in (1, 2)]
    snap = snapshot(*objs)
    plain = alloc("default/m1", "gpu", "gpu", f"{DRIVER}/n1/gpu-0")
    assert sorted({v.rule for v in verify.verify(snap.facts, snap, plan(snap, {"default/m1": "n1"}, plain))}) == [
        "device-allocation", "device-conflict"]
    # an ordinary request waits for the GPU; once held by an admin result only, it takes it
    ordinary = [*objs[:5], claim_template("one", request("gpu")), with_claims(pod("p").cpu_m(500), gpu="one")]
    assert _plan(*ordinary)[0] == {}
    adm = claim("held", _admin(), allocated=[("n1", "gpu-0")], node="n1", reserved_for=["r"])
    adm.obj["status"]["allocation"]["devices"]["results"][0]["adminAccess"] = True
    assert _plan(*ordinary[:3], adm, *ordinary[4:])[0] == {"default/p": "n1"}


def test_a_selector_error_is_named_on_a_device_the_allocator_meets() -> None:
    """gpu-0, in use by r for good, and gpu-1 both lack the attribute p's selector reads: the
    allocator skips gpu-0 (in use) and aborts on gpu-1, so the reason names gpu-1."""
    sel = f'device.attributes["{DRIVER}"].x == "1"'
    objs = [node("n1").cpu_m(4000), resource_slice("n1-gpu", [device("gpu-0"), device("gpu-1")], node="n1"),
            GPU_CLASS, claim("held", request("gpu"), allocated=[("n1", "gpu-0")], node="n1", reserved_for=["r"]),
            with_claims(pod("r").on("n1").cpu_m(500).priority(1000), gpu="claim:held"),
            claim_template("x", request("gpu", selectors=(sel,))), with_claims(pod("p").cpu_m(500), gpu="x")]
    bindings, _, _, plan = _plan(*objs)
    assert bindings == {}
    (reason,) = {w.reason for w in plan.workloads if not w.satisfied}
    assert f"on device {DRIVER}/n1/gpu-1: CEL runtime error" in reason


def test_an_admin_share_of_a_partitionable_shared_device_charges_its_counters() -> None:
    """Two shareable devices (allowMultipleAllocations, with a capacity) each consume the one
    slot of counter set "chip": an admin-access request on a and an ordinary one on b cannot
    both be served (the allocator checks the counters for the admin share too; once, the plan
    bound both and failed its own verifier)."""
    counters = resource_slice("n0-counters", [], node="n0")
    del counters.obj["spec"]["devices"]
    counters.obj["spec"]["sharedCounters"] = [{"name": "chip", "counters": {"slots": {"value": "1"}}}]
    counters.obj["spec"]["pool"]["resourceSliceCount"] = 2
    devices = [{"name": name, "attributes": {"name": {"string": name}}, "allowMultipleAllocations": True,
                "capacity": {"memory": {"value": "8Gi"}},
                "consumesCounters": [{"counterSet": "chip", "counters": {"slots": {"value": "1"}}}]}
               for name in ("a", "b")]
    parts = resource_slice("n0-devices", devices, node="n0")
    parts.obj["spec"]["pool"]["resourceSliceCount"] = 2
    on = 'device.attributes["gpu.example.com"].name == "{}"'
    admin = request("gpu", selectors=(on.format("a"),))
    admin["exactly"]["adminAccess"] = True
    objs = [node("n0").cpu_m(8000), counters, parts, GPU_CLASS, claim_template("mon", admin),
            claim_template("one", request("gpu", selectors=(on.format("b"),))),
            with_claims(pod("m").cpu_m(500).priority(100), gpu="mon"), with_claims(pod("p").cpu_m(500), gpu="one")]
    bindings, _, _, plan = _plan(*objs)
    assert len(bindings) == 1
    _naive_agrees(snapshot(*objs), plan)


def test_a_pod_a_full_claim_is_reserved_for_already_still_binds() -> None:
    """PreFilter passes a pod the claim is reserved for (IsReservedForPod): with 256 listed, p0
    among them, p0 binds and the other two stay pending."""
    objs = _reserved_for(255)
    objs[3].obj["status"]["reservedFor"].append({"resource": "pods", "name": "p0", "uid": "uid-p0"})
    bindings = _plan(*objs)[0]
    assert bindings == {"default/p0": "n1"}


def test_one_pod_naming_a_claim_twice_is_refused_naming_the_field() -> None:
    from solver.core.errors import SnapshotInvalidError

    objs = [node("n1").cpu_m(4000), gpu_slice("n1", 1), GPU_CLASS, claim("c", request("gpu")),
            with_claims(pod("a").cpu_m(500), gpu="claim:c", dev="claim:c")]
    with pytest.raises(SnapshotInvalidError, match=r"Pod/default/a: spec\.resourceClaims\[dev\].*a second time"):
        api.plan(snapshot(*objs), api.PlanOptions(time_limit=10))


def test_a_claim_two_pods_name_is_preempted_for_by_the_one_placed_when_the_other_never_preempts() -> None:
    """The thorough property profile's case (tests/data/property/): w0 (Never, and kept off n1
    by a disk bg3 mounts) and w1 name claim "both", two GPUs of n1 where bg3 holds two of the
    three whole. w1 alone, placed, may evict bg3 for them: the naive model's optimum, which the
    model once proved worse (0 satisfied, OPTIMAL) by counting the claim for w0 only."""
    import json
    from pathlib import Path

    from tests.pipeline.naive import naive_tiers

    data = Path(__file__).resolve().parents[1] / "data" / "property" / "claim-several-name-preempted-for-by-the-one-placed.json"
    snap = snapshot(*json.loads(data.read_text()))
    plan = api.plan(snap, api.PlanOptions(time_limit=30))
    assert verify.verify(snap.facts, snap, plan, strict_pdbs=True) == []
    assert (plan.status, dict(plan.objective.satisfied_by_priority)) == ("OPTIMAL", {20: 1})
    assert [(b.pod, b.node) for b in plan.bindings] == [("default/w1", "n1")]
    assert [e.pod for e in plan.evictions] == ["default/bg3"]
    assert naive_tiers(snap, strict_pdbs=True).satisfied_by_priority == ((20, 1),)
