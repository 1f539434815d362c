"""Consumable capacity (DRAConsumableCapacity, beta and on in 1.37): shares of an
allowMultipleAllocations device, from the objects to the plan, in the model, the greedy
baseline, the verifier and the naive model.

Upstream: dynamic-resource-allocation/structured/internal/incubating/consumable_capacity.go
(CmpRequestOverCapacity, calculateConsumedCapacity, violatesPolicy) and the allocator's
allocateDevice (a shareID per share, consumedCapacity in the result, counters charged once).
"""

from __future__ import annotations

from typing import Any

import pytest

from solver import api, reading
from solver.core.errors import SnapshotInvalidError
from tests.builders import node, pod, snapshot
from tests.dra_builders import DRIVER, claim, claim_template, device, device_class, request, resource_slice, with_claims
from tests.pipeline.test_rules_dra import _naive_agrees, _plan

GPU_CLASS = device_class("gpu", f'device.driver == "{DRIVER}"')
GI = 2**30


def shared_gpu(name: str = "gpu-s", memory: str = "40Gi", policy: dict[str, Any] | None = None,
               **extra: Any) -> dict[str, Any]:
    d = device(name)
    d["allowMultipleAllocations"] = True
    d["capacity"] = {"memory": {"value": memory, **({"requestPolicy": policy} if policy else {})}}
    d.update(extra)
    return d


def _pods(n: int, template: str, priority: int = 100) -> list[Any]:
    return [with_claims(pod(f"p{i}").cpu_m(100).priority(priority), gpu=template) for i in range(n)]


def _shares(allocs: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(pod, device, memory consumed) of each planned device; the shareIDs all differ."""
    ids = [d["shareID"] for a in allocs for d in a["devices"] if "shareID" in d]
    assert len(set(ids)) == len(ids)
    return sorted((a["pod"], d["device"], d.get("consumedCapacity", {}).get("memory", "-"))
                  for a in allocs for d in a["devices"])


RANGE = {"default": "1Gi", "validRange": {"min": "1Gi", "step": "1Gi"}}


def test_shares_fill_a_device_up_to_its_capacity() -> None:
    """40Gi shared by requests of 15Gi less a byte, each rounded up to 15Gi: two fit, the third
    stays pending; the naive model (one variable per device) reaches the same tiers."""
    objs = [node("n0").cpu_m(8000), resource_slice("n0-gpus", [shared_gpu(policy=RANGE)], node="n0"), GPU_CLASS,
            claim_template("t", _with_capacity(request("gpu"), f"{15 * GI - 1}")), *_pods(3, "t")]
    bindings, evicted, allocs, plan = _plan(*objs)
    assert (len(bindings), evicted) == (2, [])
    assert _shares(allocs) == [(p, "gpu-s", str(15 * GI)) for p in sorted(bindings)]
    _naive_agrees(snapshot(*objs), plan)


def _with_capacity(r: dict[str, Any], memory: str) -> dict[str, Any]:
    r["exactly"]["capacity"] = {"requests": {"memory": memory}}
    return r


@pytest.mark.parametrize(("policy", "ask", "fit", "each"), [
    (None, None, 1, str(40 * GI)),  # nothing asked, no default: the whole device
    ({"default": "10Gi"}, None, 4, str(10 * GI)),  # nothing asked: the default
    ({"validValues": ["10Gi", "20Gi", "40Gi"]}, "15Gi", 2, str(20 * GI)),  # up to the next valid value
    ({"validRange": {"min": "8Gi", "max": "16Gi"}}, "4Gi", 5, str(8 * GI)),  # up to min
    ({"validRange": {"min": "8Gi", "max": "16Gi"}}, "17Gi", 0, "-"),  # over max: no device
    ({"validValues": ["10Gi", "20Gi"]}, "30Gi", 0, "-"),  # beyond every valid value
])
def test_the_request_policy_decides_what_a_share_consumes(policy: dict[str, Any] | None, ask: str | None,
                                                          fit: int, each: str) -> None:
    r = request("gpu")
    if ask is not None:
        _with_capacity(r, ask)
    objs = [node("n0").cpu_m(8000), resource_slice("n0-gpus", [shared_gpu(policy=policy)], node="n0"), GPU_CLASS,
            claim_template("t", r), *_pods(6, "t")]
    bindings, _, allocs, plan = _plan(*objs)
    assert len(bindings) == fit
    assert {m for _, _, m in _shares(allocs)} <= {each}
    _naive_agrees(snapshot(*objs), plan)


def test_an_ordinary_device_takes_a_request_only_if_it_fits_whole() -> None:
    """The capacity check runs on every device: 15Gi never fits a 10Gi GPU, and an ordinary device
    is used whole (no shareID, no consumedCapacity)."""
    small = device("gpu-0")
    small["capacity"] = {"memory": {"value": "10Gi"}}
    base = [node("n0").cpu_m(8000), resource_slice("n0-gpus", [small], node="n0"), GPU_CLASS]
    bindings, _, _, _ = _plan(*base, claim_template("t", _with_capacity(request("gpu"), "15Gi")), *_pods(1, "t"))
    assert bindings == {}
    bindings, _, allocs, _ = _plan(*base, claim_template("t", _with_capacity(request("gpu"), "10Gi")), *_pods(2, "t"))
    assert len(bindings) == 1 and allocs[0]["devices"] == [{"driver": DRIVER, "pool": "n0", "device": "gpu-0"}]
    cores = request("gpu")
    cores["exactly"]["capacity"] = {"requests": {"cores": "1"}}
    bindings, _, _, _ = _plan(*base, claim_template("t", cores), *_pods(1, "t"))
    assert bindings == {}  # asks a capacity the device does not have


def test_a_request_takes_distinct_devices_even_shareable_ones() -> None:
    """Upstream's allocator moves past each device it takes for a request: count 2 needs two
    devices, however much the one shareable GPU could give."""
    one = [node("n0").cpu_m(8000), resource_slice("n0-gpus", [shared_gpu(policy=RANGE)], node="n0"), GPU_CLASS]
    two = _with_capacity(request("gpu", count=2), "1Gi")
    assert _plan(*one, claim_template("t", two), *_pods(1, "t"))[0] == {}
    both = [node("n0").cpu_m(8000), resource_slice("n0-gpus", [shared_gpu("a", policy=RANGE),
                                                               shared_gpu("b", policy=RANGE)], node="n0"), GPU_CLASS]
    bindings, _, allocs, _ = _plan(*both, claim_template("t", _with_capacity(request("gpu", count=2), "1Gi")),
                                   *_pods(3, "t"))
    assert len(bindings) == 3
    assert all(sorted(d["device"] for d in a["devices"]) == ["a", "b"] for a in allocs)


def _held_share(gib: int) -> list[Any]:
    """Running r (priority 0) holds a share of ``gib`` Gi of gpu-s."""
    held = claim("r-gpu", request("gpu"), allocated=[("n0", "gpu-s")], node="n0", reserved_for=["r"])
    result = held.obj["status"]["allocation"]["devices"]["results"][0]
    result.update({"shareID": "8f0a3c1e-1b2d-4e5f-8a9b-0c1d2e3f4a5b", "consumedCapacity": {"memory": f"{gib}Gi"}})
    return [held, with_claims(pod("r").on("n0").cpu_m(100).priority(0), gpu="claim:r-gpu")]


def test_an_existing_share_holds_its_capacity_until_its_pod_is_evicted() -> None:
    base = [node("n0").cpu_m(8000), resource_slice("n0-gpus", [shared_gpu(policy=RANGE)], node="n0"), GPU_CLASS,
            *_held_share(30), claim_template("t", _with_capacity(request("gpu"), "15Gi"))]
    # 30Gi held: a 15Gi share fits only once r's share is gone, so r is evicted for it
    bindings, evicted, _, plan = _plan(*base, *_pods(1, "t"))
    assert (bindings, evicted) == ({"default/p0": "n0"}, ["default/r"])
    _naive_agrees(snapshot(*base, *_pods(1, "t")), plan)
    # a pod that may not preempt r leaves it, and stays pending
    bindings, evicted, _, plan = _plan(*base, *_pods(1, "t", priority=0))
    assert (bindings, evicted) == ({}, [])
    # with 20Gi held, one share fits beside it and nobody is evicted
    base[3:5] = _held_share(20)
    bindings, evicted, _, plan = _plan(*base, *_pods(1, "t"))
    assert (bindings, evicted) == ({"default/p0": "n0"}, [])
    _naive_agrees(snapshot(*base, *_pods(1, "t")), plan)


def test_a_shared_device_charges_its_counters_once() -> None:
    """Two shareable GPUs each consuming the whole of one counter set: only one can be in use,
    and it takes every share (the allocator skips the counter check for a device in use)."""
    counters = resource_slice("n0-counters", [], node="n0")
    del counters.obj["spec"]["devices"]
    counters.obj["spec"]["sharedCounters"] = [{"name": "chip", "counters": {"slots": {"value": "1"}}}]
    counters.obj["spec"]["pool"]["resourceSliceCount"] = 2
    uses = [{"counterSet": "chip", "counters": {"slots": {"value": "1"}}}]
    gpus = resource_slice("n0-gpus", [shared_gpu("a", policy=RANGE, consumesCounters=uses),
                                      shared_gpu("b", policy=RANGE, consumesCounters=uses)], node="n0")
    gpus.obj["spec"]["pool"]["resourceSliceCount"] = 2
    objs = [node("n0").cpu_m(8000), counters, gpus, GPU_CLASS,
            claim_template("t", _with_capacity(request("gpu"), "10Gi")), *_pods(5, "t")]
    bindings, _, allocs, plan = _plan(*objs)
    assert len(bindings) == 4 and len({d for _, d, _ in _shares(allocs)}) == 1
    _naive_agrees(snapshot(*objs), plan)


@pytest.mark.parametrize(("capacity", "field", "why"), [
    ({"value": "1Gi", "requestPolicy": "x"}, "capacity[memory].requestPolicy", "expected a request policy"),
    ({"value": "1Gi", "requestPolicy": {"validRange": {"max": "2Gi"}}},
     "capacity[memory].requestPolicy.validRange.min", "missing"),
    ({"value": "1Gi", "requestPolicy": {"validValues": ["2Gi", "1Gi"]}},
     "capacity[memory].requestPolicy.validValues[1]", "ascending"),
    ({"value": "1Gi", "requestPolicy": {"validRange": {"min": "1", "step": "0"}}},
     "capacity[memory].requestPolicy.validRange.step", "must be positive"),
    ({"value": "1Gi", "requestPolicy": {"default": "lots"}}, "capacity[memory].requestPolicy.default",
     "unparsable quantity"),
])
def test_a_bad_request_policy_names_its_field(capacity: dict[str, Any], field: str, why: str) -> None:
    d = device("gpu-0")
    d["capacity"] = {"memory": capacity}
    with pytest.raises(SnapshotInvalidError) as err:
        reading.read([node("n0").obj, resource_slice("n0-gpus", [d], node="n0").obj])
    assert field in str(err.value) and why in str(err.value)


def test_a_bad_capacity_request_or_consumed_amount_names_its_field() -> None:
    bad = request("gpu")
    bad["exactly"]["capacity"] = {"requests": {"memory": "-1Gi"}}
    with pytest.raises(SnapshotInvalidError, match=r"capacity\.requests\[memory\].*negative"):
        reading.read([GPU_CLASS.obj, claim_template("t", bad).obj])
    held = _held_share(10)[0]
    held.obj["status"]["allocation"]["devices"]["results"][0]["consumedCapacity"] = ["10Gi"]
    with pytest.raises(SnapshotInvalidError, match=r"consumedCapacity.*expected a map"):
        reading.read([GPU_CLASS.obj, held.obj])


def test_the_plan_of_one_snapshot_names_the_same_shares_every_time() -> None:
    objs = [node("n0").cpu_m(8000), resource_slice("n0-gpus", [shared_gpu(policy=RANGE)], node="n0"), GPU_CLASS,
            claim_template("t", _with_capacity(request("gpu"), "5Gi")), *_pods(3, "t")]
    first, second = (api.plan(snapshot(*objs)).to_dict()["deviceAllocations"] for _ in range(2))
    assert first == second


def shared_case(*asks: str | None, node_name: str = "n1") -> list[Any]:
    """``node_name`` has one shareable GPU of 40Gi (requests rounded up to whole Gi from 1Gi,
    default 1Gi); pod i asks ``asks[i]`` of its memory (None: nothing, so the default). For the
    real control plane: the same objects, scheduled by kube-scheduler or by the adapter."""
    objs: list[Any] = [node("n1").cpu_m(8000), node("n2").cpu_m(8000),
                       resource_slice(f"{node_name}-gpus", [shared_gpu(policy=RANGE)], node=node_name), GPU_CLASS]
    for i, ask in enumerate(asks):
        r = request("gpu")
        if ask is not None:
            _with_capacity(r, ask)
        objs += [claim_template(f"t{i}", r), with_claims(pod(f"p{i}").cpu_m(100), gpu=f"t{i}")]
    return objs


def test_the_control_plane_case_shares_one_device() -> None:
    """The case the real scheduler also runs (tests/controlplane): 16e9 bytes round up to 15Gi,
    nothing asked takes the default 1Gi, both on n1's one GPU."""
    bindings, _, allocs, _ = _plan(*shared_case("16e9", None))
    assert bindings == {"default/p0": "n1", "default/p1": "n1"}
    assert _shares(allocs) == [("default/p0", "gpu-s", str(15 * GI)), ("default/p1", "gpu-s", str(GI))]
    assert _plan(*shared_case("41Gi"))[0] == {}



def test_shares_pack_onto_the_fullest_device_that_still_takes_them() -> None:
    """The solver's hint (and so a plan with nothing else to decide) packs: a 600-milli share goes
    to the node whose devices are fuller (though the other node's cpu is fuller), not to the
    node with a whole GPU; and inside a node to the GPU it fills best, keeping whole GPUs whole.
    Both are only preferences: every choice here is as good on every tier."""
    def gpu(name: str) -> dict[str, Any]:
        d = device(name)
        d["allowMultipleAllocations"] = True
        d["capacity"] = {"milli": {"value": "1000"}}
        return d

    def used(node_name: str, device_name: str, milli: int) -> list[Any]:
        held = claim(f"r-{node_name}", request("gpu"), allocated=[(node_name, device_name)], node=node_name,
                     reserved_for=[f"r-{node_name}"])
        held.obj["status"]["allocation"]["devices"]["results"][0].update(
            {"shareID": f"share-{node_name}", "consumedCapacity": {"milli": str(milli)}})
        return [held, with_claims(pod(f"r-{node_name}").on(node_name).cpu_m(100).priority(1000),
                                  gpu=f"claim:r-{node_name}")]

    ask = request("gpu")
    ask["exactly"]["capacity"] = {"requests": {"milli": "600"}}
    across = [node("n0").cpu_m(8000), node("n1").cpu_m(8000), GPU_CLASS,
              resource_slice("n0-gpus", [gpu("gpu-0")], node="n0"), resource_slice("n1-gpus", [gpu("gpu-0")], node="n1"),
              *used("n1", "gpu-0", 400), pod("busy").on("n0").cpu_m(6000).priority(1000),  # n0: cpu fuller
              claim_template("t", ask), *_pods(1, "t")]
    plan = api.plan(snapshot(*across))
    assert [(b.node, d.device) for b in plan.bindings for a in plan.device_allocations for d in a.devices] == [
        ("n1", "gpu-0")]
    inside = [node("n0").cpu_m(8000), GPU_CLASS, resource_slice("n0-gpus", [gpu("gpu-0"), gpu("gpu-1")], node="n0"),
              *used("n0", "gpu-1", 400), claim_template("t", ask), *_pods(1, "t")]
    plan = api.plan(snapshot(*inside))
    assert [d.device for a in plan.device_allocations for d in a.devices] == ["gpu-1"]
    # upstream's allocator (and so the baseline) takes the first device that fits
    base = api.plan(snapshot(*inside), api.PlanOptions(baseline_only=True))
    assert [d.device for a in base.device_allocations for d in a.devices] == ["gpu-0"]


def test_a_shareable_device_freed_from_a_whole_allocation_is_taken_with_a_share_id() -> None:
    """h0 holds two allowMultipleAllocations devices whole (results without a shareID, as with
    the gate off); evicting its pod frees them and w1 takes them. Upstream gives every new
    allocation of such a device a shareID: the plan did not, and failed its own verifier
    (found by the property test's thorough profile; tests/data/property/)."""
    import json
    from pathlib import Path

    from solver import verify

    data = Path(__file__).resolve().parents[1] / "data" / "property" / "freed-whole-allocation-of-a-shareable-device.json"
    snap = reading.read(json.loads(data.read_text()))
    for options in (api.PlanOptions(time_limit=10, pdb_policy="soft"), api.PlanOptions(baseline_only=True,
                                                                                     pdb_policy="soft")):
        plan = api.plan(snap, options)
        assert verify.verify(snap.facts, snap, plan) == []
        assert all(d.share_id for a in plan.device_allocations for d in a.devices)
    assert {b.pod: b.node for b in api.plan(snap, api.PlanOptions(time_limit=10, pdb_policy="soft")).bindings} == {
        "default/w1": "n1"}
