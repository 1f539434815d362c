"""DRA consumable capacity (DRAConsumableCapacity) over the typed gRPC state, on a real
server on a loopback port, through the real client."""

from __future__ import annotations

from collections.abc import Callable

import grpc
import pytest

from solver import reading, verify
from solver.core import plan as p
from solver.core import snapshot as s
from solver.gen.gangplace.v1 import placement_pb2 as pb
from solver.service import client, server
from solver.service import convert as grpc_convert
from tests.builders import facts_and
from tests.grpc.conftest import _target

GIB = 1 << 30
DRIVER = "gpu.example.com"


def _state(pods: int) -> pb.ClusterState:
    """One node, one shareable GPU with 40Gi of memory in whole-Gi steps; ``pods`` pending
    pods, each with its own claim (from a template) asking 15Gi of it."""
    return pb.ClusterState(
        nodes=[pb.Node(name="n1", allocatable={"cpu": 4000, "pods": 110})],
        pods=[pb.Pod(namespace="d", name=f"p{k}", requests={"cpu": 500},
                     claims=[pb.PodClaimRef(name="gpu", template="t")]) for k in range(pods)],
        devices=[pb.Device(driver=DRIVER, pool="n1", name="gpu-0", node="n1", allow_multiple_allocations=True,
                           capacity={"memory": "40Gi"}, capacity_policies={"memory": pb.CapacityRequestPolicy(
                               valid_range=pb.CapacityRequestPolicyRange(min="1Gi", step="1Gi"))})],
        device_classes=[pb.DeviceClass(name="gpu", selectors=[f'device.driver == "{DRIVER}"'])],
        claim_templates=[pb.ResourceClaim(namespace="d", name="t", requests=[pb.DeviceRequest(
            name="gpu", exactly=pb.DeviceSubRequest(device_class="gpu", capacity_requests={"memory": "15Gi"}))])])


def _snapshot(state: pb.ClusterState) -> s.ClusterSnapshot:
    return reading.read(grpc_convert.objects_from_state(state)[0])


def test_typed_state_carries_capacity_policies_requests_and_shares_as_kubernetes_objects() -> None:
    state = _state(1)
    state.claims.append(pb.ResourceClaim(
        namespace="d", name="old", requests=[pb.DeviceRequest(name="gpu", exactly=pb.DeviceSubRequest(
            device_class="gpu", capacity_requests={"memory": "2Gi"}))],
        allocation=[pb.AllocatedDevice(request="gpu", driver=DRIVER, pool="n1", device="gpu-0", share_id="s-1",
                                       consumed_capacity={"memory": "2Gi"})]))
    state.devices[0].capacity_policies["memory"].CopyFrom(pb.CapacityRequestPolicy(
        default="1Gi", valid_range=pb.CapacityRequestPolicyRange(min="1Gi", max="32Gi", step="1Gi")))
    objs, _ = grpc_convert.objects_from_state(state)
    by_kind = {(o["kind"], o["metadata"]["name"]): o for o in objs}
    device = by_kind["ResourceSlice", f"{DRIVER}-n1"]["spec"]["devices"][0]
    assert device["capacity"] == {"memory": {"value": "40Gi", "requestPolicy": {
        "default": "1Gi", "validRange": {"min": "1Gi", "max": "32Gi", "step": "1Gi"}}}}
    template = by_kind["ResourceClaimTemplate", "t"]["spec"]["spec"]["devices"]["requests"][0]
    assert template["exactly"]["capacity"] == {"requests": {"memory": "15Gi"}}
    assert by_kind["ResourceClaim", "old"]["status"]["allocation"]["devices"]["results"] == [
        {"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-0", "shareID": "s-1",
         "consumedCapacity": {"memory": "2Gi"}}]
    # kube reads them: the device's consumable capacity, the request's, the existing share
    snap = _snapshot(state)
    (dev,) = snap.dra.devices
    (cap,) = dev.consumable
    assert (cap.name, cap.value) == ("memory", 40 * GIB * 1000)
    assert cap.policy is not None and (cap.policy.default, cap.policy.min, cap.policy.max, cap.policy.step) == (
        GIB * 1000, GIB * 1000, 32 * GIB * 1000, GIB * 1000)
    old = snap.dra.claims[s.ClaimKey("d/old")]
    assert old.allocation is not None
    assert [(a.share_id, a.consumed) for a in old.allocation] == [("s-1", (("memory", 2 * GIB * 1000),))]


def test_an_unset_policy_part_is_left_out() -> None:
    state = _state(1)
    state.devices[0].capacity_policies["memory"].CopyFrom(pb.CapacityRequestPolicy(valid_values=["8Gi", "16Gi"]))
    objs, _ = grpc_convert.objects_from_state(state)
    (device,) = next(o for o in objs if o["metadata"]["name"] == f"{DRIVER}-n1")["spec"]["devices"]
    assert device["capacity"] == {"memory": {"value": "40Gi", "requestPolicy": {"validValues": ["8Gi", "16Gi"]}}}
    plain = _state(1)
    plain.devices[0].ClearField("capacity_policies")
    plain.claims.append(pb.ResourceClaim(namespace="d", name="c", allocation=[
        pb.AllocatedDevice(request="gpu", driver=DRIVER, pool="n1", device="gpu-0")]))
    objs, _ = grpc_convert.objects_from_state(plain)
    (device,) = next(o for o in objs if o["metadata"]["name"] == f"{DRIVER}-n1")["spec"]["devices"]
    assert device["capacity"] == {"memory": {"value": "40Gi"}}
    claim = next(o for o in objs if o["kind"] == "ResourceClaim")
    assert claim["status"]["allocation"]["devices"]["results"] == [
        {"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}]


def test_two_pods_share_one_device_by_its_capacity(running: server.Running) -> None:
    with client.PlacementClient(_target(running)) as c:
        plan = c.solve(_state(2))
    assert plan.status == "OPTIMAL" and verify.verify(*facts_and(_snapshot(_state(2))), plan) == []
    assert {b.pod: b.node for b in plan.bindings} == {"d/p0": "n1", "d/p1": "n1"}
    devices = [d for a in plan.device_allocations for d in a.devices]
    assert sorted(a.pod for a in plan.device_allocations) == ["d/p0", "d/p1"]
    assert [(d.driver, d.pool, d.device) for d in devices] == [(DRIVER, "n1", "gpu-0")] * 2
    assert all(d.share_id for d in devices) and len({d.share_id for d in devices}) == 2
    assert int(dict(devices[0].consumed)["memory"]) == 15 * GIB  # 15Gi, whole units: a plain integer
    assert [d.consumed for d in devices] == [(("memory", "16106127360"),)] * 2


def test_a_third_share_does_not_fit(running: server.Running) -> None:
    """3 × 15Gi > 40Gi: exactly two of the three pods get a share."""
    with client.PlacementClient(_target(running)) as c:
        plan = c.solve(_state(3))
    assert plan.status == "OPTIMAL" and verify.verify(*facts_and(_snapshot(_state(3))), plan) == []
    assert len(plan.bindings) == 2 and {b.node for b in plan.bindings} == {"n1"}
    devices = [d for a in plan.device_allocations for d in a.devices]
    assert sorted(a.pod for a in plan.device_allocations) == sorted(b.pod for b in plan.bindings)
    assert len({d.share_id for d in devices}) == 2 and {d.device for d in devices} == {"gpu-0"}


def test_an_existing_share_holds_its_capacity(running: server.Running) -> None:
    """A running pod's claim holds a 15Gi share of the device: of two pending pods one fits."""
    state = _state(2)
    state.pods.append(pb.Pod(namespace="d", name="r", node="n1", requests={"cpu": 500},
                             claims=[pb.PodClaimRef(name="gpu", claim="old")]))
    state.claims.append(pb.ResourceClaim(
        namespace="d", name="old", requests=state.claim_templates[0].requests, reserved_pods=["r"],
        allocation=[pb.AllocatedDevice(request="gpu", driver=DRIVER, pool="n1", device="gpu-0", share_id="s-1",
                                       consumed_capacity={"memory": "15Gi"})]))
    with client.PlacementClient(_target(running)) as c:
        plan = c.solve(state)
    assert plan.status == "OPTIMAL" and verify.verify(*facts_and(_snapshot(state)), plan) == []
    assert len(plan.bindings) == 1 and plan.evictions == ()
    (alloc,) = plan.device_allocations
    (device,) = alloc.devices
    assert alloc.pod == plan.bindings[0].pod and device.share_id not in ("", "s-1")


def test_the_plan_keeps_share_id_and_consumed_both_ways() -> None:
    plan = p.Plan(
        status="OPTIMAL", workloads=(), bindings=(), evictions=(), stats={},
        objective=p.Objective(satisfied_workloads=0, satisfied_by_priority={}, placed_pods=0, pdb_violations=0,
                              preemption_cost=0.0, evicted_pods=0, preemption_cost_bound=0.0, gap=0.0),
        device_allocations=(p.DeviceAllocation(pod="d/p0", claim="gpu", request="gpu", devices=(
            p.PlanDevice(driver=DRIVER, pool="n1", device="gpu-0", share_id="a1b2",
                         consumed=(("cores", "1500m"), ("memory", "16106127360"))),
            p.PlanDevice(driver=DRIVER, pool="n1", device="gpu-1"))),))
    msg = grpc_convert.plan_to_proto(plan)
    first = msg.device_allocations[0].devices[0]
    assert first.share_id == "a1b2" and dict(first.consumed_capacity) == {"cores": "1500m", "memory": "16106127360"}
    back = grpc_convert.plan_from_proto(pb.Plan.FromString(msg.SerializeToString()))
    assert back.device_allocations == plan.device_allocations
    assert [d.to_dict() for d in back.device_allocations] == [d.to_dict() for d in plan.device_allocations]


def _policy_for_no_capacity(state: pb.ClusterState) -> None:
    state.devices[0].capacity_policies["cores"].CopyFrom(pb.CapacityRequestPolicy(default="1"))


def _range_without_min(state: pb.ClusterState) -> None:
    state.devices[0].capacity_policies["memory"].valid_range.min = ""


def _negative_request(state: pb.ClusterState) -> None:
    state.claim_templates[0].requests[0].exactly.capacity_requests["memory"] = "-1Gi"


def _bad_consumed(state: pb.ClusterState) -> None:
    state.claims.append(pb.ResourceClaim(namespace="d", name="old", allocation=[pb.AllocatedDevice(
        request="gpu", driver=DRIVER, pool="n1", device="gpu-0", share_id="s-1", consumed_capacity={"memory": "x"})]))


@pytest.mark.parametrize(("spoil", "expected"), [
    (_policy_for_no_capacity, "state.devices[0].capacity_policies[cores]: names no capacity of the device"),
    (_range_without_min, "state: devices[0] (ResourceSlice/gpu.example.com-n1): "
     "spec.devices[0].capacity[memory].requestPolicy.validRange.min: missing"),
    (_negative_request, "state: claim_templates[0] (ResourceClaimTemplate/d/t): "
     "spec.spec.devices.requests[0].exactly.capacity.requests[memory]: negative quantity '-1Gi'"),
    (_bad_consumed, "state: claims[0] (ResourceClaim/d/old): "
     "status.allocation.devices.results[0].consumedCapacity[memory]: unparsable quantity 'x'"),
], ids=["policy_for_no_capacity", "range_without_min", "negative_request", "bad_consumed"])
def test_bad_capacity_input_is_invalid_argument_naming_the_field(running: server.Running, spoil: Callable[[pb.ClusterState], None],
                                                                  expected: str) -> None:
    state = _state(1)
    spoil(state)
    with client.PlacementClient(_target(running)) as c, pytest.raises(grpc.RpcError) as bad:
        c.stub.Solve(pb.SolveRequest(state=state))
    assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert bad.value.details() == expected


def test_expected_pods_travel_and_decide_the_device_as_in_process(running: server.Running) -> None:
    """Two shareable GPUs of 40Gi, one with 20Gi held: a 15Gi share packs best fit on the held
    one, leaving 5Gi no 20Gi pod can use; with 20Gi pods expected it goes on the free one,
    where 25Gi stay of use to them. The same through the server as in process; a bad expected document is
    INVALID_ARGUMENT naming the entry and its field."""
    from solver import api
    from solver.kube import expected

    state = _state(1)
    state.devices.append(pb.Device(driver=DRIVER, pool="n1", name="gpu-1", node="n1", allow_multiple_allocations=True,
                                   capacity={"memory": "40Gi"}))
    state.claims.append(pb.ResourceClaim(
        namespace="d", name="old", requests=[pb.DeviceRequest(name="gpu", exactly=pb.DeviceSubRequest(
            device_class="gpu", capacity_requests={"memory": "20Gi"}))],
        allocation=[pb.AllocatedDevice(request="gpu", driver=DRIVER, pool="n1", device="gpu-1", share_id="s-1",
                                       consumed_capacity={"memory": "20Gi"})]))
    mix = expected.expected_pods([[{"weight": 1, "device": {"deviceClassName": "gpu",
                                                           "capacity": {"requests": {"memory": "20Gi"}}}}]])

    def device(plan: p.Plan) -> list[str]:
        return [d.device for a in plan.device_allocations for d in a.devices]

    local = {e: device(api.plan(_snapshot(state), api.PlanOptions(expected=e))) for e in ((), mix)}
    assert local == {(): ["gpu-1"], mix: ["gpu-0"]}
    with client.PlacementClient(_target(running)) as c:
        assert {e: device(c.solve(state, api.PlanOptions(expected=e))) for e in ((), mix)} == local
        bad = c.request(state, api.PlanOptions())
        bad.options.expected_pods = b"- {weight: 1, device: {count: 1}}"
        with pytest.raises(grpc.RpcError) as err:
            c.stub.Solve(bad)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
    assert "ExpectedPod/expected[0]: device.deviceClassName: missing" in err.value.details()  # type: ignore[attr-defined]


def test_admin_access_travels_both_ways_and_takes_a_held_device(running: server.Running) -> None:
    """DRAAdminAccess over typed gRPC: a running pod's claim holds the GPU whole; an admin
    request of a pending pod takes it too, and the plan's device says adminAccess. An existing
    admin result (``AllocatedDevice.admin_access``) holds nothing."""
    state = _state(1)
    state.claim_templates[0].requests[0].exactly.admin_access = True
    del state.claim_templates[0].requests[0].exactly.capacity_requests["memory"]
    state.pods.append(pb.Pod(namespace="d", name="r", node="n1", requests={"cpu": 500},
                             claims=[pb.PodClaimRef(name="gpu", claim="old")]))
    state.claims.append(pb.ResourceClaim(
        namespace="d", name="old", requests=[pb.DeviceRequest(name="gpu", exactly=pb.DeviceSubRequest(
            device_class="gpu"))], reserved_pods=["r"],
        allocation=[pb.AllocatedDevice(request="gpu", driver=DRIVER, pool="n1", device="gpu-0")]))
    with client.PlacementClient(_target(running)) as c:
        plan = c.solve(state)
    assert verify.verify(*facts_and(_snapshot(state)), plan) == []
    (alloc,) = plan.device_allocations
    assert [(d.device, d.admin_access) for d in alloc.devices] == [("gpu-0", True)]
    msg = grpc_convert.plan_to_proto(plan)
    assert msg.device_allocations[0].devices[0].admin_access
    assert grpc_convert.plan_from_proto(pb.Plan.FromString(msg.SerializeToString())).device_allocations == \
        plan.device_allocations
    old = next(c for c in _snapshot(state).dra.claims.values() if c.key == "d/old")
    assert [a.admin_access for a in old.allocation or ()] == [False]
    state.claims[0].allocation[0].admin_access = True
    held = next(c for c in _snapshot(state).dra.claims.values() if c.key == "d/old")
    assert [a.admin_access for a in held.allocation or ()] == [True]


def test_other_consumers_of_a_claim_travel_and_keep_it_held() -> None:
    """``ResourceClaim.reserved_other``: a consumer neither a pod nor a PodGroup ("widgets" of
    example.com here) keeps the claim held whoever is evicted, and counts toward reservedFor."""
    state = _state(0)
    state.claims.append(pb.ResourceClaim(
        namespace="d", name="old", requests=[pb.DeviceRequest(name="gpu", exactly=pb.DeviceSubRequest(
            device_class="gpu"))], reserved_pods=["r"], reserved_other=["widgets.example.com/w1", "jobs/j1"],
        allocation=[pb.AllocatedDevice(request="gpu", driver=DRIVER, pool="n1", device="gpu-0")]))
    (claim,) = _snapshot(state).dra.claims.values()
    assert claim.reserved_pods == ("d/r",)
    assert claim.reserved_other == ("widgets.example.com/d/w1", "jobs/d/j1")
