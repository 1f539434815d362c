"""solver.verify's DRA checks, on snapshots built from the dataclasses and hand-written plans.

One test per check: a correct plan verifies clean (``== []``), each broken one yields
exactly the expected violation. Selectors are CEL, evaluated by ``solver.cel``.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Mapping, Sequence

import pytest

from solver import cel, verify
from solver.core import plan as pl
from solver.core import snapshot as s
from solver.reading import Reading
from solver.verify import read

GPU = "gpu.example.com"
NIC = "nic.example.com"
IS_GPU = 'device.driver == "gpu.example.com"'
# guarded: on a device of another driver, `.model` would be a CEL runtime error
A100 = 'device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].model == "a100"'
H100 = 'device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].model == "h100"'
HOSTNAME = "kubernetes.io/hostname"
RACK = "topology.kubernetes.io/rack"

# ---- snapshot pieces ------------------------------------------------------------------

def node(name: str, **labels: str) -> s.Node:
    return s.Node(name=s.NodeName(name), labels={HOSTNAME: name, **labels},
                  allocatable={"cpu": 8000, "pods": 110})


def pod(name: str, *, on: str | None = None, priority: int = 100, group: str | None = None,
        policy: str = s.PREEMPT_LOWER) -> s.Pod:
    return s.Pod(key=s.PodKey(f"default/{name}"), namespace="default", name=name, node=s.NodeName(on) if on else None,
                 requests={"cpu": 1000, "pods": 1}, priority=priority, preemption_policy=policy,
                 group=s.GroupKey(group) if group else None, has_resource_claims=True)


def gpu(node_name: str, i: int, model: str = "a100", **kw: object) -> s.Device:
    attrs: dict[str, dict[str, s.AttributeValue]] = {GPU: {"model": model, "numa": i // 2}}
    return s.Device(driver=GPU, pool=node_name, name=f"gpu-{i}", attributes=attrs,  # type: ignore[arg-type]
                    node=s.NodeName(node_name), **kw)  # type: ignore[arg-type]


def exactly(name: str, count: int = 1, *, sel: tuple[str, ...] = (), all_mode: bool = False,
            tolerations: tuple[s.Toleration, ...] = ()) -> s.Request:
    return s.Request(name=name, alternatives=(s.SubRequest(name=name, device_class="gpu", selectors=sel, count=count,
                                                           all_mode=all_mode, tolerations=tolerations),))


def claim(key: str, *requests: s.Request, constraints: tuple[s.Constraint, ...] = (),
          allocation: tuple[str, ...] | None = None, allocation_nodes: tuple[s.NodeSelectorTerm, ...] = (),
          reserved_pods: tuple[str, ...] = (), reserved_groups: tuple[str, ...] = (),
          reserved_other: tuple[str, ...] = ()) -> s.Claim:
    return s.Claim(key=s.ClaimKey(key), namespace="default", name=key.split("/")[1],
                   spec=s.ClaimSpec(requests=requests, constraints=constraints),
                   allocation=None if allocation is None else tuple(
                       s.AllocationResult(request=requests[0].name, device=s.DeviceKey(d)) for d in allocation),
                   allocation_nodes=allocation_nodes, reserved_pods=reserved_pods, reserved_groups=reserved_groups,
                   reserved_other=reserved_other)


def snapshot(nodes: Sequence[s.Node], pods: Sequence[s.Pod], devices: Sequence[s.Device], claims: Sequence[s.Claim],
             pod_claims: Mapping[str, Sequence[s.PodClaim]], groups: Sequence[s.Group] = ()) -> Reading:
    dra = s.DraState(devices=tuple(devices), classes={"gpu": s.DeviceClass(name="gpu", selectors=(IS_GPU,))},
                     claims={c.key: c for c in claims}, pod_claims={k: tuple(v) for k, v in pod_claims.items()})
    return Reading(nodes=tuple(nodes), pods=tuple(pods), groups=tuple(groups), dra=dra, facts=_facts(nodes, pods))


def _facts(nodes: Sequence[s.Node], pods: Sequence[s.Pod]) -> read.Facts:
    """What the verifier reads from the objects these nodes and pods stand for (the DRA rules
    read the snapshot's DRA state; the core rules read the objects)."""
    objs: list[dict[str, object]] = [
        {"kind": "Node", "metadata": {"name": n.name, "labels": dict(n.labels)},
         "status": {"allocatable": {k: f"{v}m" if k == "cpu" else str(v) for k, v in n.allocatable.items()}}}
        for n in nodes]
    objs.extend({"kind": "Pod", "metadata": {"name": p.name, "namespace": p.namespace},
                 "spec": {"nodeName": p.node or "", "containers": [{"resources": {"requests": {
                     k: f"{v}m" if k == "cpu" else str(v) for k, v in p.requests.items() if k != "pods"}}}]}}
                for p in pods)
    return read.read(objs)


def entry(name: str, claim_key: str, shared_by: str | None = None) -> s.PodClaim:
    return s.PodClaim(name=name, claim=s.ClaimKey(claim_key), shared_by=shared_by)


# ---- plans ----------------------------------------------------------------------------

def alloc(owner: str, claim_entry: str, request: str, *devices: str, group: bool = False) -> pl.DeviceAllocation:
    devs = tuple(pl.PlanDevice(driver=d.split("/")[0], pool=d.split("/")[1], device=d.split("/")[2])
                 for d in devices)
    if group:
        return pl.DeviceAllocation(pod_group=owner, claim=claim_entry, request=request, devices=devs)
    return pl.DeviceAllocation(pod=owner, claim=claim_entry, request=request, devices=devs)


def shares(a: pl.DeviceAllocation, share_id: str, **consumed: str) -> pl.DeviceAllocation:
    """``a`` with each of its devices a share: ``share_id`` and what it consumes."""
    return dataclasses.replace(a, devices=tuple(dataclasses.replace(
        d, share_id=share_id, consumed=tuple(sorted(consumed.items()))) for d in a.devices))


def plan(snap: s.ClusterSnapshot, bindings: Mapping[str, str], *allocations: pl.DeviceAllocation,
         evict: Sequence[str] = ()) -> pl.Plan:
    """A plan with these bindings, evictions and allocations; its objective is filled in
    from the snapshot (these tests are about devices, not the objective)."""
    pods = {p.key: p for p in snap.pods}
    evictions = tuple(pl.Eviction(pod=k, node=pods[s.PodKey(k)].node or "", cost=1 + max(0, pods[s.PodKey(k)].priority),
                                  group="") for k in evict)
    draft = pl.Plan(status=pl.FEASIBLE, workloads=(), stats={}, device_allocations=tuple(allocations),
                    bindings=tuple(pl.Binding(pod=p, node=n) for p, n in bindings.items()), evictions=evictions,
                    objective=pl.Objective(satisfied_workloads=0, satisfied_by_priority={}, placed_pods=0,
                                           pdb_violations=0, preemption_cost=0, evicted_pods=0,
                                           preemption_cost_bound=0, gap=0))
    view = verify.View(snap.facts, snap, draft)
    sat = verify.satisfied_roots(view)
    by_priority: dict[int, int] = defaultdict(int)
    for root, ok in sat.items():
        by_priority[view.priority_of_root(root)] += int(ok)
    cost = sum(e.cost for e in evictions)
    objective = pl.Objective(satisfied_workloads=sum(sat.values()), satisfied_by_priority=dict(by_priority),
                             placed_pods=len(bindings), pdb_violations=0, preemption_cost=cost,
                             evicted_pods=len(evictions), preemption_cost_bound=cost, gap=0)
    return pl.Plan(status=pl.FEASIBLE, workloads=(), stats={}, device_allocations=tuple(allocations),
                   bindings=draft.bindings, evictions=evictions, objective=objective)


def problems(snap: s.ClusterSnapshot, p: pl.Plan) -> list[str]:
    return [str(v) for v in verify.verify(snap.facts, snap, p)]


P, Q = "default/p", "default/q"
N1 = "gpu.example.com/n1"
N2 = "gpu.example.com/n2"


def one_gpu_pod(*, request: s.Request | None = None, devices: Sequence[s.Device] = (),
                constraints: tuple[s.Constraint, ...] = (), requests: tuple[s.Request, ...] = ()) -> s.ClusterSnapshot:
    """Pending pod p with one claim entry `gpus` (ResourceClaim default/p#gpus) on nodes n1, n2."""
    reqs = requests or (request or exactly("gpu"),)
    return snapshot([node("n1", **{RACK: "r1"}), node("n2", **{RACK: "r2"})], [pod("p")],
                    devices or [gpu("n1", 0), gpu("n1", 1), gpu("n2", 0)],
                    [claim("default/p#gpus", *reqs, constraints=constraints)], {P: [entry("gpus", "default/p#gpus")]})


# ---- (1) one allocation per request of each unallocated claim ------------------------

def test_every_request_of_every_unallocated_claim_is_allocated_once() -> None:
    snap = snapshot([node("n1")], [pod("p"), pod("q"), pod("r", on="n1", priority=0)],
                    [gpu("n1", i) for i in range(4)],
                    [claim("default/p#gpus", exactly("gpu"), exactly("spare")), claim("default/q#gpus", exactly("gpu")),
                     claim("default/r#gpus", exactly("gpu"))],
                    {P: [entry("gpus", "default/p#gpus")], Q: [entry("gpus", "default/q#gpus")],
                     "default/r": [entry("gpus", "default/r#gpus")]})
    good = [alloc(P, "gpus", "gpu", f"{N1}/gpu-0"), alloc(P, "gpus", "spare", f"{N1}/gpu-1")]
    assert problems(snap, plan(snap, {P: "n1"}, *good)) == []
    assert problems(snap, plan(snap, {P: "n1"}, good[0])) == [
        "device-allocation: default/p: claim gpus request spare: no device allocation"]
    assert problems(snap, plan(snap, {P: "n1"}, *good, alloc(P, "gpus", "spare", f"{N1}/gpu-2"))) == [
        "device-allocation: default/p: claim gpus request spare: allocated 2 times"]
    # q is not bound, r is running, p has no entry `other`, and the claim has no request `nic`
    assert problems(snap, plan(snap, {P: "n1"}, *good, alloc(Q, "gpus", "gpu", f"{N1}/gpu-2"))) == [
        "device-allocation: default/q: claim gpus request gpu: the pod is not a pending pod bound by the plan"]
    assert problems(snap, plan(snap, {P: "n1"}, *good, alloc("default/r", "gpus", "gpu", f"{N1}/gpu-2"))) == [
        "device-allocation: default/r: claim gpus request gpu: the pod is not a pending pod bound by the plan"]
    assert problems(snap, plan(snap, {P: "n1"}, *good, alloc(P, "other", "gpu", f"{N1}/gpu-2"))) == [
        "device-allocation: default/p: claim other request gpu: the pod has no such claim"]
    assert problems(snap, plan(snap, {P: "n1"}, *good, alloc(P, "gpus", "nic", f"{N1}/gpu-2"))) == [
        "device-allocation: default/p: claim gpus request nic: the claim has no request nic"]
    both = pl.DeviceAllocation(pod=P, pod_group="default/pg", claim="gpus", request="gpu", devices=())
    assert problems(snap, plan(snap, {P: "n1"}, *good, both)) == [
        "device-allocation: default/p: claim gpus request gpu: names both pod default/p and podGroup default/pg"]


def test_an_allocated_claim_gets_no_allocation_and_pins_the_pod() -> None:
    term = s.NodeSelectorTerm(match_expressions=(s.SelectorRequirement(key=RACK, operator="In", values=("r1",)),))
    net = s.Device(driver=NIC, pool="fabric", name="nic-0", node_selector=(term,))
    snap = snapshot([node("n1", **{RACK: "r1"}), node("n2", **{RACK: "r2"})], [pod("p")], [gpu("n1", 0), net],
                    [claim("default/c", exactly("gpu"), allocation=(f"{NIC}/fabric/nic-0",), allocation_nodes=(term,))],
                    {P: [entry("gpus", "default/c")]})
    assert problems(snap, plan(snap, {P: "n1"})) == []
    assert problems(snap, plan(snap, {P: "n1"}, alloc(P, "gpus", "gpu", f"{N1}/gpu-0"))) == [
        "device-allocation: default/p: claim gpus request gpu: the claim is already allocated"]
    assert problems(snap, plan(snap, {P: "n2"})) == [
        "device-reach: default/p: claim gpus: node n2 is outside the allocation nodeSelector of ResourceClaim default/c",
        ("device-reach: default/p: claim gpus: device nic.example.com/fabric/nic-0 of ResourceClaim default/c's "
         "allocation is not reachable from node n2")]


# ---- (2) the device exists --------------------------------------------------------------

def test_allocated_devices_exist() -> None:
    snap = one_gpu_pod()
    assert problems(snap, plan(snap, {P: "n1"}, alloc(P, "gpus", "gpu", f"{N1}/gpu-0"))) == []
    assert problems(snap, plan(snap, {P: "n1"}, alloc(P, "gpus", "gpu", f"{N1}/gpu-7"))) == [
        "device-unknown: default/p: claim gpus request gpu: device gpu.example.com/n1/gpu-7 does not exist"]


# ---- (3) DeviceClass and request selectors ----------------------------------------------

def test_devices_match_the_class_and_the_request_selectors() -> None:
    nic = s.Device(driver=NIC, pool="n1", name="nic-0", node=s.NodeName("n1"))
    snap = one_gpu_pod(request=exactly("gpu", sel=(H100,)), devices=[gpu("n1", 0), gpu("n1", 1, "h100"), nic])
    assert problems(snap, plan(snap, {P: "n1"}, alloc(P, "gpus", "gpu", f"{N1}/gpu-1"))) == []
    assert problems(snap, plan(snap, {P: "n1"}, alloc(P, "gpus", "gpu", f"{N1}/gpu-0"))) == [
        (f"device-selector: default/p: claim gpus request gpu: device gpu.example.com/n1/gpu-0 "
         f"fails the request's selector {H100}")]
    # upstream order: the class's selectors first, up to the first false one
    assert problems(snap, plan(snap, {P: "n1"}, alloc(P, "gpus", "gpu", f"{NIC}/n1/nic-0"))) == [
        (f"device-selector: default/p: claim gpus request gpu: device nic.example.com/n1/nic-0 "
         f"fails DeviceClass gpu selector {IS_GPU}")]
    no_class = s.Request(name="gpu", alternatives=(s.SubRequest(name="gpu", device_class="tpu"),))
    snap = one_gpu_pod(request=no_class)
    assert problems(snap, plan(snap, {P: "n1"}, alloc(P, "gpus", "gpu", f"{N1}/gpu-0"))) == [
        "device-selector: default/p: claim gpus request gpu: DeviceClass tpu does not exist"]
    # a selector that fails to evaluate (this GPU has no `model`) allocates nothing
    bare = s.Device(driver=GPU, pool="n1", name="bare", node=s.NodeName("n1"))
    with pytest.raises(cel.CelRuntimeError) as error:
        cel.selects(H100, bare)
    reason = error.value.reason
    snap = one_gpu_pod(request=exactly("gpu", sel=(H100,)), devices=[bare])
    assert problems(snap, plan(snap, {P: "n1"}, alloc(P, "gpus", "gpu", f"{N1}/bare"))) == [
        (f"device-selector: default/p: claim gpus request gpu: device gpu.example.com/n1/bare breaks the request's "
         f"selector {H100} (CEL runtime error: {reason})")]
    # ... and the allocator meets every device reachable from the node: it aborts there
    for all_mode in (False, True):
        snap = one_gpu_pod(request=exactly("gpu", sel=(H100,), all_mode=all_mode),
                           devices=[gpu("n1", 1, "h100"), gpu("n2", 1, "h100"), bare])
        assert problems(snap, plan(snap, {P: "n2"}, alloc(P, "gpus", "gpu", f"{N2}/gpu-1"))) == []
        assert problems(snap, plan(snap, {P: "n1"}, alloc(P, "gpus", "gpu", f"{N1}/gpu-1"))) == [
            (f"device-selector: default/p: claim gpus request gpu: the allocation aborts on node n1: "
             f"device gpu.example.com/n1/bare breaks the request's selector {H100} (CEL runtime error: {reason})")]


# ---- (4) device taints ------------------------------------------------------------------

def test_device_taints_are_tolerated() -> None:
    devices = [gpu("n1", 0, taints=(s.Taint(key="broken", value="ecc", effect="NoExecute"),)),
               gpu("n1", 1, taints=(s.Taint(key="slow", effect="PreferNoSchedule"),))]
    snap = one_gpu_pod(devices=devices)
    assert problems(snap, plan(snap, {P: "n1"}, alloc(P, "gpus", "gpu", f"{N1}/gpu-1"))) == []
    assert problems(snap, plan(snap, {P: "n1"}, alloc(P, "gpus", "gpu", f"{N1}/gpu-0"))) == [
        ("device-taint: default/p: claim gpus request gpu: device gpu.example.com/n1/gpu-0 taint broken=ecc:NoExecute "
         "is not tolerated")]
    tolerant = one_gpu_pod(devices=devices, request=exactly(
        "gpu", tolerations=(s.Toleration(key="broken", operator="Exists", effect="NoExecute"),)))
    assert problems(tolerant, plan(tolerant, {P: "n1"}, alloc(P, "gpus", "gpu", f"{N1}/gpu-0"))) == []


# ---- (5) reachable from the pod's node, a shared claim from every sharer's -------------

def test_devices_are_reachable_from_the_pods_node() -> None:
    term = s.NodeSelectorTerm(match_expressions=(s.SelectorRequirement(key=RACK, operator="In", values=("r1",)),))
    rack = s.Device(driver=GPU, pool="rack-r1", name="gpu-0", node_selector=(term,))
    anywhere = s.Device(driver=GPU, pool="fabric", name="gpu-0", all_nodes=True)
    snap = one_gpu_pod(devices=[gpu("n1", 0), gpu("n2", 0), rack, anywhere])
    for node_name, device in (("n1", f"{N1}/gpu-0"), ("n1", f"{GPU}/rack-r1/gpu-0"), ("n2", f"{GPU}/fabric/gpu-0")):
        assert problems(snap, plan(snap, {P: node_name}, alloc(P, "gpus", "gpu", device))) == []
    assert problems(snap, plan(snap, {P: "n1"}, alloc(P, "gpus", "gpu", f"{N2}/gpu-0"))) == [
        "device-reach: default/p: claim gpus request gpu: device gpu.example.com/n2/gpu-0 is not reachable from node n1"]
    assert problems(snap, plan(snap, {P: "n2"}, alloc(P, "gpus", "gpu", f"{GPU}/rack-r1/gpu-0"))) == [
        ("device-reach: default/p: claim gpus request gpu: device gpu.example.com/rack-r1/gpu-0 "
         "is not reachable from node n2")]


def shared_snapshot(request: s.Request, devices: Sequence[s.Device], *, running: bool = False) -> s.ClusterSnapshot:
    """PodGroup pg (minCount 2) with pods a, b pending (and c running on n3) sharing entry `gpus`."""
    members = [pod("a", group="default/pg"), pod("b", group="default/pg")]
    if running:
        members.append(pod("c", group="default/pg", on="n3"))
    share = entry("gpus", "default/pg-gpus", shared_by="default/pg")
    return snapshot([node("n1"), node("n2"), node("n3")], members, devices,
                    [claim("default/pg-gpus", request)], {p.key: [share] for p in members},
                    groups=[s.Group(key=s.GroupKey("default/pg"), kind=s.POD_GROUP, min_count=2, priority=100)])


def test_a_shared_claim_is_allocated_once_and_reachable_from_every_sharer() -> None:
    anywhere = s.Device(driver=GPU, pool="fabric", name="gpu-0", all_nodes=True)
    snap = shared_snapshot(exactly("gpu"), [gpu("n1", 0), anywhere], running=True)
    both = {"default/a": "n1", "default/b": "n2"}
    good = alloc("default/pg", "gpus", "gpu", f"{GPU}/fabric/gpu-0", group=True)
    assert problems(snap, plan(snap, both, good)) == []
    assert problems(snap, plan(snap, both, alloc("default/pg", "gpus", "gpu", f"{N1}/gpu-0", group=True))) == [
        "device-reach: default/pg: claim gpus request gpu: device gpu.example.com/n1/gpu-0 is not reachable from node n2",
        "device-reach: default/pg: claim gpus request gpu: device gpu.example.com/n1/gpu-0 is not reachable from node n3"]
    assert problems(snap, plan(snap, both)) == [
        "device-allocation: default/pg: claim gpus request gpu: no device allocation"]
    assert problems(snap, plan(snap, both, alloc("default/a", "gpus", "gpu", f"{GPU}/fabric/gpu-0"))) == [
        ("device-allocation: default/a: claim gpus request gpu: the claim is PodGroup default/pg's shared claim: "
         "allocate it once for the group"),
        "device-allocation: default/pg: claim gpus request gpu: no device allocation"]
    assert problems(snap, plan(snap, {}, good)) == [
        "device-allocation: default/pg: claim gpus request gpu: no pod using the claim is bound by the plan"]
    assert problems(snap, plan(snap, both, good, alloc("default/pg", "nics", "gpu", group=True))) == [
        "device-allocation: default/pg: claim nics request gpu: the PodGroup has no such shared claim"]


# ---- (6) counts: ExactCount and All -----------------------------------------------------

def test_exact_count_takes_exactly_count_devices() -> None:
    snap = one_gpu_pod(request=exactly("gpu", 2))
    assert problems(snap, plan(snap, {P: "n1"}, alloc(P, "gpus", "gpu", f"{N1}/gpu-0", f"{N1}/gpu-1"))) == []
    assert problems(snap, plan(snap, {P: "n1"}, alloc(P, "gpus", "gpu", f"{N1}/gpu-0"))) == [
        "device-count: default/p: claim gpus request gpu: 1 devices, the request asks for exactly 2"]


def test_all_mode_takes_every_matching_reachable_device() -> None:
    anywhere = s.Device(driver=GPU, pool="fabric", name="gpu-0", attributes={GPU: {"model": "a100"}}, all_nodes=True)
    devices = [gpu("n1", 0), gpu("n1", 1), gpu("n1", 2, "h100"), gpu("n2", 0), anywhere]
    snap = one_gpu_pod(request=exactly("gpu", sel=(A100,), all_mode=True), devices=devices)
    every = (f"{N1}/gpu-0", f"{N1}/gpu-1", f"{GPU}/fabric/gpu-0")
    assert problems(snap, plan(snap, {P: "n1"}, alloc(P, "gpus", "gpu", *every))) == []
    # a selected device with a taint the request does not tolerate is one All must take, and
    # cannot (upstream's allocateDevice, must=true): no allocation on n1 passes
    tainted = one_gpu_pod(request=exactly("gpu", sel=(A100,), all_mode=True),
                          devices=[*devices, gpu("n1", 3, taints=(s.Taint(key="broken", effect="NoSchedule"),))])
    assert problems(tainted, plan(tainted, {P: "n1"}, alloc(P, "gpus", "gpu", *every))) == [
        ("device-count: default/p: claim gpus request gpu: allocationMode All takes every matching device reachable "
         "from node n1: missing ['gpu.example.com/n1/gpu-3'], extra []")]
    assert problems(tainted, plan(tainted, {P: "n1"}, alloc(P, "gpus", "gpu", *every, f"{N1}/gpu-3"))) == [
        "device-taint: default/p: claim gpus request gpu: device gpu.example.com/n1/gpu-3 taint broken=:NoSchedule "
        "is not tolerated"]
    assert problems(snap, plan(snap, {P: "n1"}, alloc(P, "gpus", "gpu", *every[:2], f"{N1}/gpu-2"))) == [
        ("device-selector: default/p: claim gpus request gpu: device gpu.example.com/n1/gpu-2 "
         f"fails the request's selector {A100}"),
        ("device-count: default/p: claim gpus request gpu: allocationMode All takes every matching device reachable "
         "from node n1: missing ['gpu.example.com/fabric/gpu-0'], extra ['gpu.example.com/n1/gpu-2']")]
    h100 = one_gpu_pod(request=exactly("gpu", sel=(H100,), all_mode=True), devices=devices)
    assert problems(h100, plan(h100, {P: "n2"}, alloc(P, "gpus", "gpu"))) == [
        ("device-count: default/p: claim gpus request gpu: allocationMode All, but no matching device is reachable "
         "from node n2")]


def test_all_mode_of_a_shared_claim_is_every_device_reachable_from_one_sharer() -> None:
    anywhere = s.Device(driver=GPU, pool="fabric", name="gpu-0", all_nodes=True)
    snap = shared_snapshot(exactly("gpu", all_mode=True), [gpu("n1", 0), anywhere])
    both = {"default/a": "n1", "default/b": "n2"}
    # allocated where b lands (n2 reaches only the fabric GPU), a on n1 reaches it too
    assert problems(snap, plan(snap, both, alloc("default/pg", "gpus", "gpu", f"{GPU}/fabric/gpu-0", group=True))) == []
    assert problems(snap, plan(snap, both, alloc("default/pg", "gpus", "gpu", group=True))) == [
        ("device-count: default/pg: claim gpus request gpu: allocationMode All takes every matching device reachable "
         "from the claim's node: no node of ['n1', 'n2'] gives exactly []")]
    on_n1 = {"default/a": "n1", "default/b": "n1"}
    assert problems(snap, plan(snap, on_n1, alloc("default/pg", "gpus", "gpu", f"{GPU}/fabric/gpu-0", group=True))) == [
        ("device-count: default/pg: claim gpus request gpu: allocationMode All takes every matching device reachable "
         "from node n1: missing ['gpu.example.com/n1/gpu-0'], extra []")]


# ---- (7) no device twice ----------------------------------------------------------------

def test_no_device_is_allocated_twice() -> None:
    shareable = s.Device(driver=GPU, pool="n1", name="mig", node=s.NodeName("n1"), allow_multiple=True)
    snap = snapshot([node("n1")], [pod("p"), pod("q")], [gpu("n1", 0), gpu("n1", 1), shareable],
                    [claim("default/p#gpus", exactly("gpu")), claim("default/q#gpus", exactly("gpu"))],
                    {P: [entry("gpus", "default/p#gpus")], Q: [entry("gpus", "default/q#gpus")]})
    bound = {P: "n1", Q: "n1"}
    assert problems(snap, plan(snap, bound, alloc(P, "gpus", "gpu", f"{N1}/gpu-0"),
                               alloc(Q, "gpus", "gpu", f"{N1}/gpu-1"))) == []
    assert problems(snap, plan(snap, bound, shares(alloc(P, "gpus", "gpu", f"{N1}/mig"), "a"),
                               shares(alloc(Q, "gpus", "gpu", f"{N1}/mig"), "b"))) == []
    # a share names itself: a shareID, its own on the device
    assert problems(snap, plan(snap, bound, shares(alloc(P, "gpus", "gpu", f"{N1}/mig"), "a"),
                               shares(alloc(Q, "gpus", "gpu", f"{N1}/mig"), "a"))) == [
        "device-capacity: default/q: claim gpus request gpu: a share of device gpu.example.com/n1/mig needs a "
        "shareID of its own, got 'a'"]
    assert problems(snap, plan(snap, bound, alloc(P, "gpus", "gpu", f"{N1}/gpu-0"),
                               alloc(Q, "gpus", "gpu", f"{N1}/gpu-0"))) == [
        ("device-conflict: gpu.example.com/n1/gpu-0: allocated 2 times: pod default/p claim gpus request gpu; "
         "pod default/q claim gpus request gpu")]


GIB = 2**30 * 1000  # a GiB in milli-units, as the snapshot keeps consumable capacity


def _metered_snapshot(*, held_gib: int = 0) -> s.ClusterSnapshot:
    """Pending p and q each ask a share of 15Gi of memory; n1 has a shareable GPU of 40Gi (requests
    rounded up to whole Gi from 1Gi) and an ordinary one of 10Gi. ``held_gib``: running r holds a
    share of that much (claim default/r-gpu)."""
    policy = s.CapacityPolicy(min=GIB, step=GIB)
    shared = s.Device(driver=GPU, pool="n1", name="gpu-s", node=s.NodeName("n1"), allow_multiple=True,
                      consumable=(s.Consumable(name="memory", value=40 * GIB, policy=policy),))
    small = gpu("n1", 0, consumable=(s.Consumable(name="memory", value=10 * GIB),))
    ask = s.Request(name="gpu", alternatives=(s.SubRequest(name="gpu", device_class="gpu",
                                                            capacity=(("memory", 15 * GIB - 7),)),))
    claims = [claim("default/p#gpus", ask), claim("default/q#gpus", ask)]
    pods = [pod("p"), pod("q")]
    if held_gib:
        claims.append(dataclasses.replace(
            claim("default/r-gpu", ask, reserved_pods=("default/r",)),
            allocation=(s.AllocationResult(request="gpu", device=s.DeviceKey(f"{N1}/gpu-s"), share_id="r-share",
                                           consumed=(("memory", held_gib * GIB),)),)))
        pods.append(pod("r", on="n1", priority=0))
    return snapshot([node("n1")], pods, [shared, small], claims,
                    {P: [entry("gpus", "default/p#gpus")], Q: [entry("gpus", "default/q#gpus")]})


def test_shares_of_a_device_stay_within_its_capacity_and_say_what_they_consume() -> None:
    """DRAConsumableCapacity as consumable_capacity.go computes it: 15Gi less a little, rounded up
    to the next whole Gi from min (15Gi); each share carries it and a shareID of its own."""
    snap = _metered_snapshot()
    p_share = shares(alloc(P, "gpus", "gpu", f"{N1}/gpu-s"), "a", memory="15Gi")
    q_share = shares(alloc(Q, "gpus", "gpu", f"{N1}/gpu-s"), "b", memory=str(15 * 2**30))
    assert problems(snap, plan(snap, {P: "n1", Q: "n1"}, p_share, q_share)) == []
    wrong = shares(alloc(Q, "gpus", "gpu", f"{N1}/gpu-s"), "b", memory="14Gi")
    assert problems(snap, plan(snap, {P: "n1", Q: "n1"}, p_share, wrong)) == [
        "device-capacity: default/q: claim gpus request gpu: device gpu.example.com/n1/gpu-s: consumedCapacity "
        f"{{'memory': '14Gi'}}, upstream consumes {{'memory': {15 * GIB}}} (milli-units)"]
    # an ordinary device with 10Gi does not fit the request at all
    assert problems(snap, plan(snap, {P: "n1"}, alloc(P, "gpus", "gpu", f"{N1}/gpu-0"))) == [
        f"device-capacity: default/p: claim gpus request gpu: device gpu.example.com/n1/gpu-0: capacity memory: "
        f"{15 * GIB - 7}m is more than the device's {10 * GIB}m"]
    # a running pod's share of 20Gi leaves room for one more 15Gi share, not two, until it is evicted
    held = _metered_snapshot(held_gib=20)
    assert problems(held, plan(held, {P: "n1"}, p_share)) == []
    assert problems(held, plan(held, {P: "n1", Q: "n1"}, p_share, q_share)) == [
        f"device-capacity: gpu.example.com/n1/gpu-s: capacity memory: the shares in use consume {50 * GIB}m, "
        f"the device has {40 * GIB}m"]
    assert problems(held, plan(held, {P: "n1", Q: "n1"}, p_share, q_share, evict=["default/r"])) == []


def held_snapshot(*, reserved: tuple[str, ...] = ("default/r",), policy: str = s.PREEMPT_LOWER,
                  other: tuple[str, ...] = ()) -> s.ClusterSnapshot:
    """Pending p (priority 100) needs a GPU; running r (priority 0) on n1 holds gpu-0 (claim default/r-gpu)."""
    return snapshot([node("n1"), node("n2")], [pod("p", policy=policy), pod("r", on="n1", priority=0)],
                    [gpu("n1", 0), gpu("n2", 0)],
                    [claim("default/p#gpus", exactly("gpu")),
                     claim("default/r-gpu", exactly("gpu"), allocation=(f"{N1}/gpu-0",), reserved_pods=reserved,
                           reserved_other=other)],
                    {P: [entry("gpus", "default/p#gpus")]})


def test_a_held_device_is_free_only_when_every_consumer_is_evicted() -> None:
    snap = held_snapshot()
    take = alloc(P, "gpus", "gpu", f"{N1}/gpu-0")
    assert problems(snap, plan(snap, {P: "n2"}, alloc(P, "gpus", "gpu", f"{N2}/gpu-0"))) == []
    assert problems(snap, plan(snap, {P: "n1"}, take, evict=["default/r"])) == []
    assert problems(snap, plan(snap, {P: "n1"}, take)) == [
        ("device-conflict: gpu.example.com/n1/gpu-0: allocated 2 times: pod default/p claim gpus request gpu; "
         "ResourceClaim default/r-gpu (allocated)")]
    # an allocated claim nobody reserves stays held, and so does one another kind of consumer reserves
    for held in (held_snapshot(reserved=()), held_snapshot(other=("jobs.batch/default/j",))):
        assert problems(held, plan(held, {P: "n1"}, take, evict=["default/r"])) == [
            "victim-necessary: default/r: could be put back: no higher-priority pod that may preempt it needs its room",
            ("device-conflict: gpu.example.com/n1/gpu-0: allocated 2 times: pod default/p claim gpus request gpu; "
             "ResourceClaim default/r-gpu (allocated)")]


# ---- victims necessary because of devices -----------------------------------------------

def test_an_eviction_is_necessary_when_the_plan_gives_the_victims_device_away() -> None:
    snap = held_snapshot()
    assert problems(snap, plan(snap, {P: "n1"}, alloc(P, "gpus", "gpu", f"{N1}/gpu-0"), evict=["default/r"])) == []
    # p takes n2's GPU: r's could stay
    assert problems(snap, plan(snap, {P: "n2"}, alloc(P, "gpus", "gpu", f"{N2}/gpu-0"), evict=["default/r"])) == [
        "victim-necessary: default/r: could be put back: no higher-priority pod that may preempt it needs its room"]
    never = held_snapshot(policy=s.PREEMPT_NEVER)
    assert problems(never, plan(never, {P: "n1"}, alloc(P, "gpus", "gpu", f"{N1}/gpu-0"), evict=["default/r"])) == [
        "victim-necessary: default/r: could be put back: no higher-priority pod that may preempt it needs its room"]


# ---- (8) claim constraints --------------------------------------------------------------

def test_match_attribute_over_the_listed_requests() -> None:
    devices = [gpu("n1", 0), gpu("n1", 1, "h100"), gpu("n1", 2),
               s.Device(driver=NIC, pool="n1", name="nic-0", node=s.NodeName("n1"))]
    con = (s.Constraint(requests=("a", "b"), match_attribute=f"{GPU}/model"),)
    snap = one_gpu_pod(devices=devices, requests=(exactly("a"), exactly("b"), exactly("c")), constraints=con)
    ok = [alloc(P, "gpus", "a", f"{N1}/gpu-0"), alloc(P, "gpus", "b", f"{N1}/gpu-2"),
          alloc(P, "gpus", "c", f"{N1}/gpu-1")]
    assert problems(snap, plan(snap, {P: "n1"}, *ok)) == []
    differ = [alloc(P, "gpus", "a", f"{N1}/gpu-0"), alloc(P, "gpus", "b", f"{N1}/gpu-1"),
              alloc(P, "gpus", "c", f"{N1}/gpu-2")]
    assert problems(snap, plan(snap, {P: "n1"}, *differ)) == [
        ("device-constraint: default/p: claim gpus: matchAttribute gpu.example.com/model: the devices differ: "
         "gpu.example.com/n1/gpu-0='a100', gpu.example.com/n1/gpu-1='h100'")]
    no_class = s.DeviceClass(name="gpu")  # lets the NIC in, which has no GPU model
    bare = Reading(nodes=snap.nodes, pods=snap.pods, dra=s.DraState(
        devices=snap.dra.devices, classes={"gpu": no_class}, claims=snap.dra.claims, pod_claims=snap.dra.pod_claims),
        facts=snap.facts)
    lacking = [alloc(P, "gpus", "a", f"{N1}/gpu-0"), alloc(P, "gpus", "b", f"{NIC}/n1/nic-0"),
               alloc(P, "gpus", "c", f"{N1}/gpu-2")]
    assert problems(bare, plan(bare, {P: "n1"}, *lacking)) == [
        ("device-constraint: default/p: claim gpus: matchAttribute gpu.example.com/model: "
         "device nic.example.com/n1/nic-0 has no such attribute")]


def test_distinct_attribute_over_every_request() -> None:
    snap = one_gpu_pod(devices=[gpu("n1", i) for i in range(4)], request=exactly("gpu", 2),
                       constraints=(s.Constraint(distinct_attribute=f"{GPU}/numa"),))
    assert problems(snap, plan(snap, {P: "n1"}, alloc(P, "gpus", "gpu", f"{N1}/gpu-0", f"{N1}/gpu-2"))) == []
    assert problems(snap, plan(snap, {P: "n1"}, alloc(P, "gpus", "gpu", f"{N1}/gpu-0", f"{N1}/gpu-1"))) == [
        ("device-constraint: default/p: claim gpus: distinctAttribute gpu.example.com/numa: devices "
         "['gpu.example.com/n1/gpu-0', 'gpu.example.com/n1/gpu-1'] share 0")]


# ---- (9) firstAvailable -----------------------------------------------------------------

def test_the_chosen_first_available_entry_is_one_of_the_requests_alternatives() -> None:
    request = s.Request(name="gpu", alternatives=(s.SubRequest(name="gpu/big", device_class="gpu", selectors=(H100,)),
                                                  s.SubRequest(name="gpu/small", device_class="gpu", selectors=(A100,),
                                                               count=2)))
    snap = one_gpu_pod(request=request)
    assert problems(snap, plan(snap, {P: "n1"}, alloc(P, "gpus", "gpu/small", f"{N1}/gpu-0", f"{N1}/gpu-1"))) == []
    for name in ("gpu/huge", "gpu"):
        assert problems(snap, plan(snap, {P: "n1"}, alloc(P, "gpus", name, f"{N1}/gpu-0", f"{N1}/gpu-1"))) == [
            (f"device-allocation: default/p: claim gpus request {name}: not one of request gpu's alternatives "
             "['gpu/big', 'gpu/small']")]
    assert problems(snap, plan(snap, {P: "n1"}, alloc(P, "gpus", "gpu/big", f"{N1}/gpu-0"))) == [
        (f"device-selector: default/p: claim gpus request gpu/big: device gpu.example.com/n1/gpu-0 "
         f"fails the request's selector {H100}")]


def test_a_claim_reserved_for_a_pod_group_goes_free_with_all_its_running_pods() -> None:
    old = s.Group(key=s.GroupKey("default/old"), kind=s.POD_GROUP, priority=0)
    snap = snapshot([node("n1")], [pod("p"), pod("r1", on="n1", priority=0, group="default/old"),
                                   pod("r2", on="n1", priority=0, group="default/old")], [gpu("n1", 0)],
                    [claim("default/p#gpus", exactly("gpu")),
                     claim("default/old-gpu", exactly("gpu"), allocation=(f"{N1}/gpu-0",),
                           reserved_groups=("default/old",))],
                    {P: [entry("gpus", "default/p#gpus")]}, groups=[old])
    take = alloc(P, "gpus", "gpu", f"{N1}/gpu-0")
    assert problems(snap, plan(snap, {P: "n1"}, take, evict=["default/r1", "default/r2"])) == []
    assert problems(snap, plan(snap, {P: "n1"}, take, evict=["default/r1"])) == [
        "victim-necessary: default/r1: could be put back: no higher-priority pod that may preempt it needs its room",
        ("device-conflict: gpu.example.com/n1/gpu-0: allocated 2 times: pod default/p claim gpus request gpu; "
         "ResourceClaim default/old-gpu (allocated)")]
