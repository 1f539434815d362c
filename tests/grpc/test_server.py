"""The gRPC service on a real server on a loopback port, through the real client."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import descriptor_pb2, struct_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

from solver import api, cli, reading, verify
from solver.bench import generate
from solver.core.plan import Plan
from solver.gen.gangplace.v1 import placement_pb2 as pb
from solver.gen.gangplace.v1 import placement_pb2_grpc as pb_grpc
from solver.service import client, server, telemetry
from solver.service import status as rpc_errors
from tests.builders import facts_and
from tests.grpc.conftest import _target

ROOT = Path(__file__).resolve().parent.parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))


def _without_stats(plan: Any) -> dict[str, Any]:
    d = plan.to_dict()
    d.pop("stats")
    return d


def _hard() -> bytes:
    """200 full nodes, 200 `all` victim groups, a 20-pod gang: not proven optimal in seconds."""
    objs = generate.podgroup_preemption(nodes=200, groups=200, group_size=10, mode="all", preemptors=20)
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}).encode()


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_solve_and_stream_give_the_in_process_plan(running: server.Running, example: Path) -> None:
    snap = reading.load(example)
    local = api.plan(snap)
    with client.PlacementClient(_target(running)) as c:
        remote = c.solve(example.read_bytes())
        events = list(c.solve_stream(example.read_bytes()))
    assert _without_stats(remote) == _without_stats(local)
    assert verify.verify(snap.facts, snap, remote) == []
    *progress, final = events
    assert isinstance(final, type(local)) and _without_stats(final) == _without_stats(local)
    assert all(isinstance(p, client.Progress) and p.seconds >= 0 for p in progress)
    assert remote.stats["variables"] == local.stats["variables"]


def test_stream_reports_improving_solutions_before_the_plan(running: server.Running) -> None:
    with client.PlacementClient(_target(running)) as c:
        events = list(c.solve_stream((ROOT / "examples" / "gang-preemption.yaml").read_bytes(),
                                     api.PlanOptions(decompose=False)))
    stages = [e.stage for e in events[:-1]]  # type: ignore[union-attr]
    assert stages and stages[0] == "workloads+pods" and "preemptionCost+evictedPods" in stages
    cost = [e for e in events[:-1] if e.stage == "preemptionCost+evictedPods"]  # type: ignore[union-attr]
    assert all(a.objective >= b.objective for a, b in itertools.pairwise(cost))  # improving
    assert events[-1].status == "OPTIMAL"  # type: ignore[union-attr]


def test_stream_progress_is_in_the_plan_units(running: server.Running) -> None:
    """Each stage's last improvement reads as the plan does: cost 404 (not 404000 thousandths,
    nor the cost and evicted pods as one weighted sum), its bound the plan's bound."""
    with client.PlacementClient(_target(running)) as c:
        *progress, plan = list(c.solve_stream((ROOT / "examples" / "gang-preemption.yaml").read_bytes(),
                                              api.PlanOptions(decompose=False)))
    assert isinstance(plan, Plan) and plan.status == "OPTIMAL"
    last = {p.stage: p for p in progress}  # type: ignore[union-attr]
    o = plan.objective
    assert {stage: (dict(p.tiers), dict(p.bounds)) for stage, p in last.items()} == {
        "workloads+pods": ({"satisfiedWorkloads": 1, "placedPods": 4}, {"satisfiedWorkloads": 1, "placedPods": 4}),
        "preemptionCost": ({"preemptionCost": 404.0}, {"preemptionCost": 404.0}),
        "preemptionCost+evictedPods": ({"preemptionCost": o.preemption_cost, "evictedPods": o.evicted_pods},
                                       {"preemptionCost": o.preemption_cost_bound, "evictedPods": o.evicted_pods_bound}),
    }
    assert (o.preemption_cost, o.evicted_pods) == (404.0, 4)
    assert all((p.objective, p.bound) == (next(iter(p.tiers.values())), next(iter(p.bounds.values())))  # type: ignore[union-attr]
               for p in progress)


def test_typed_state_solves_like_the_same_objects(running: server.Running) -> None:
    state = pb.ClusterState(
        nodes=[pb.Node(name=f"n{i}", labels={"topology.kubernetes.io/rack": f"r{i // 2}"},
                       allocatable={"cpu": 4000, "memory": 8 << 30, "pods": 110}) for i in range(4)],
        pods=[pb.Pod(namespace="d", name="bg", node="n0", requests={"cpu": 3000}, priority=1),
              *[pb.Pod(namespace="d", name=f"g-{k}", requests={"cpu": 2000}, group="g", priority=100)
                for k in range(4)]],
        groups=[pb.Group(namespace="d", name="g", kind=pb.Group.POD_GROUP, min_count=4, priority=100,
                         topology_key="topology.kubernetes.io/rack")])
    with client.PlacementClient(_target(running)) as c:
        plan = c.solve(state)
    assert plan.status == "OPTIMAL" and plan.objective.placed_pods == 4 and plan.objective.evicted_pods == 0
    assert sorted(b.node for b in plan.bindings) == ["n2", "n2", "n3", "n3"]


def _volume_state(*, ready: bool, not_started: bool = False) -> pb.ClusterState:
    """p's claim is bound to a local volume on n2, where v (app=db) fills the node; v's budget
    allows no disruption but lets an unready pod go (AlwaysAllow)."""
    return pb.ClusterState(
        nodes=[pb.Node(name=f"n{i}", labels={"kubernetes.io/hostname": f"n{i}"},
                       allocatable={"cpu": 4000, "pods": 110}) for i in (1, 2)],
        pods=[pb.Pod(namespace="d", name="v", node="n2", requests={"cpu": 4000}, labels={"app": "db"},
                     ready=ready, not_started=not_started),
              pb.Pod(namespace="d", name="p", requests={"cpu": 2000}, priority=100, volume_claims=["data"])],
        pdbs=[pb.PodDisruptionBudget(namespace="d", name="db", match_labels={"app": "db"}, disruptions_allowed=0,
                                     unhealthy_pod_eviction_policy="AlwaysAllow", generation=2,
                                     observed_generation=2)],
        volume_claims=[pb.PersistentVolumeClaim(namespace="d", name="data", storage_class_name="local",
                                                volume_name="pv-2", bind_completed=True, storage="1Gi",
                                                access_modes=["ReadWriteOnce"])],
        volumes=[pb.PersistentVolume(name="pv-2", storage_class_name="local", capacity="10Gi",
                                     access_modes=["ReadWriteOnce"], claim_namespace="d", claim_name="data",
                                     node_affinity=[pb.NodeSelectorTerm(match_expressions=[pb.SelectorRequirement(
                                         key="kubernetes.io/hostname", operator=pb.SELECTOR_OPERATOR_IN,
                                         values=["n2"])])])],
        storage_classes=[pb.StorageClass(name="local", provisioner="kubernetes.io/no-provisioner",
                                         volume_binding_mode="WaitForFirstConsumer")])


def test_typed_csi_limits_reach_the_solver(running: server.Running) -> None:
    """n1's CSINode lets it attach one volume of the driver, and a VolumeAttachment holds it: p's
    new volume goes to n2 though n1 is emptier; with the limit unset it stays on n1."""
    def state(count: int | None) -> pb.ClusterState:
        driver = "csi.example.com"
        return pb.ClusterState(
            nodes=[pb.Node(name="n1", allocatable={"cpu": 4000, "pods": 110}),
                   pb.Node(name="n2", allocatable={"cpu": 1000, "pods": 110})],
            pods=[pb.Pod(namespace="d", name="p", requests={"cpu": 500}, volume_claims=["new"])],
            volume_claims=[pb.PersistentVolumeClaim(namespace="d", name="new", volume_name="pv-new",
                                                    bind_completed=True, access_modes=["ReadWriteOnce"])],
            volumes=[pb.PersistentVolume(name=f"pv-{n}", access_modes=["ReadWriteOnce"], csi_driver=driver,
                                         csi_volume_handle=n, claim_namespace="d", claim_name=n)
                     for n in ("old", "new")],
            csi_nodes=[pb.CsiNode(name="n1", drivers=[pb.CsiNodeDriver(name=driver, allocatable_count=count)])],
            volume_attachments=[pb.VolumeAttachment(name="va", attacher=driver, node_name="n1",
                                                    persistent_volume_name="pv-old")])

    with client.PlacementClient(_target(running)) as c:
        assert {b.pod: b.node for b in c.solve(state(1)).bindings} == {"d/p": "n2"}
        assert {b.pod: b.node for b in c.solve(state(None)).bindings} == {"d/p": "n1"}


def test_typed_inline_disks_storage_capacity_and_claim_fields_reach_the_solver(running: server.Running) -> None:
    """Over the typed state, as over the objects: a running pod's read-write GCE PD keeps a
    pending pod mounting it off n1 (VolumeRestrictions); a claim the driver tracks capacity for
    goes where a CSIStorageCapacity holds it (n2's zone); a claim's selector takes only the
    volume whose labels match, and a Block claim only a Block volume."""
    disk = struct_pb2.Struct()
    disk.update({"name": "d", "gcePersistentDisk": {"pdName": "d9"}})
    nodes = [pb.Node(name=f"n{i}", labels={"kubernetes.io/hostname": f"n{i}", "topology.kubernetes.io/zone": z},
                     allocatable={"cpu": 4000, "pods": 110}) for i, z in ((1, "a"), (2, "b"))]

    def on_n(name: str) -> list[pb.NodeSelectorTerm]:
        return [pb.NodeSelectorTerm(match_expressions=[pb.SelectorRequirement(
            key="kubernetes.io/hostname", operator=pb.SELECTOR_OPERATOR_IN, values=[name])])]

    state = pb.ClusterState(
        nodes=nodes,
        pods=[pb.Pod(namespace="d", name="holder", node="n1", requests={"cpu": 100}, volumes=[disk]),
              pb.Pod(namespace="d", name="clash", requests={"cpu": 100}, volumes=[disk]),
              pb.Pod(namespace="d", name="tracked", requests={"cpu": 100}, volume_claims=["big"]),
              pb.Pod(namespace="d", name="picky", requests={"cpu": 100}, volume_claims=["labelled"]),
              pb.Pod(namespace="d", name="raw", requests={"cpu": 100}, volume_claims=["block"])],
        volume_claims=[
            pb.PersistentVolumeClaim(namespace="d", name="big", storage_class_name="made", storage="10Gi",
                                     access_modes=["ReadWriteOnce"]),
            pb.PersistentVolumeClaim(namespace="d", name="labelled", storage_class_name="local", storage="1Gi",
                                     access_modes=["ReadWriteOnce"],
                                     selector=pb.LabelSelector(match_labels={"tier": "gold"})),
            pb.PersistentVolumeClaim(namespace="d", name="block", storage_class_name="local", storage="1Gi",
                                     access_modes=["ReadWriteOnce"], volume_mode="Block")],
        volumes=[pb.PersistentVolume(name="pv-1", storage_class_name="local", capacity="5Gi",
                                     access_modes=["ReadWriteOnce"], node_affinity=on_n("n1")),
                 pb.PersistentVolume(name="pv-gold", storage_class_name="local", capacity="5Gi",
                                     labels={"tier": "gold"}, access_modes=["ReadWriteOnce"],
                                     node_affinity=on_n("n2")),
                 pb.PersistentVolume(name="pv-block", storage_class_name="local", capacity="5Gi",
                                     volume_mode="Block", access_modes=["ReadWriteOnce"], node_affinity=on_n("n2"))],
        storage_classes=[pb.StorageClass(name="local", provisioner="kubernetes.io/no-provisioner",
                                         volume_binding_mode="WaitForFirstConsumer"),
                         pb.StorageClass(name="made", provisioner="csi.example.com",
                                         volume_binding_mode="WaitForFirstConsumer")],
        csi_drivers=[pb.CsiDriver(name="csi.example.com", storage_capacity=True)],
        storage_capacities=[pb.CsiStorageCapacity(
            namespace="d", name="zone-b", storage_class_name="made", capacity="100Gi",
            node_topology=pb.LabelSelector(match_labels={"topology.kubernetes.io/zone": "b"}))])
    with client.PlacementClient(_target(running)) as c:
        plan = c.solve(state)
    assert {b.pod: b.node for b in plan.bindings} == {"d/clash": "n2", "d/tracked": "n2", "d/picky": "n2",
                                                      "d/raw": "n2"}


def test_typed_values_reach_the_solver(running: server.Running) -> None:
    """A node of 2 cores: three 600m pods, or a gang of two 1-core pods worth 5 (Group.value),
    or a pod of 1.5 cores worth 4 (Pod.value): the gang, then the 1.5-core pod, then the three."""
    def state(gang: int | None, big: int | None) -> pb.ClusterState:
        group = pb.Group(namespace="d", name="g", kind=pb.Group.POD_GROUP, min_count=2)
        if gang is not None:
            group.value = gang
        large = pb.Pod(namespace="d", name="big", requests={"cpu": 1500})
        if big is not None:
            large.value = big
        return pb.ClusterState(
            nodes=[pb.Node(name="n", allocatable={"cpu": 2000, "pods": 110})], groups=[group],
            pods=[*(pb.Pod(namespace="d", name=f"g-{i}", group="g", requests={"cpu": 1000}) for i in range(2)),
                  *(pb.Pod(namespace="d", name=f"s-{i}", requests={"cpu": 600}) for i in range(3)), large])

    with client.PlacementClient(_target(running)) as c:
        placed = [sorted(b.pod for b in c.solve(state(*values)).bindings)
                  for values in ((5, 4), (None, 4), (None, None))]
        with pytest.raises(client.PlacementError) as err:
            c.solve(state(None, -1))
    assert placed == [["d/g-0", "d/g-1"], ["d/big"], ["d/s-0", "d/s-1", "d/s-2"]]
    assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "(Pod/d/big): metadata.annotations[gangplace.io/value]: must be an integer from 0 to 1000000, got '-1'" \
        in err.value.details


def test_typed_volumes_and_budgets_reach_the_solver(running: server.Running) -> None:
    """The claim's volume pins p to n2; under strict budgets (the default) v goes only while it
    is unready (AlwaysAllow) or not started (the Eviction API asks no budget)."""
    with client.PlacementClient(_target(running)) as c:
        unready = c.solve(_volume_state(ready=False))
        ready = c.solve(_volume_state(ready=True))
        starting = c.solve(_volume_state(ready=True, not_started=True))
    for plan in (unready, starting):
        assert ({b.pod: b.node for b in plan.bindings}, [e.pod for e in plan.evictions]) == ({"d/p": "n2"}, ["d/v"])
    assert (ready.bindings, ready.evictions) == ((), ())


def test_typed_extended_resources_a_device_class_serves_reach_the_solver(running: server.Running) -> None:
    """DRAExtendedResource over the typed state: no node advertises example.com/gpu, the class
    serves it, and the pod goes where the class's devices are."""
    state = pb.ClusterState(
        nodes=[pb.Node(name=f"n{i}", allocatable={"cpu": 4000, "pods": 110}) for i in (1, 2)],
        pods=[pb.Pod(namespace="d", name="p", requests={"cpu": 500, "example.com/gpu": 2})],
        devices=[pb.Device(driver="gpu.example.com", pool="n2", name=f"gpu-{k}", node="n2") for k in range(2)],
        device_classes=[pb.DeviceClass(name="gpu", selectors=['device.driver == "gpu.example.com"'],
                                       extended_resource_name="example.com/gpu")])
    with client.PlacementClient(_target(running)) as c:
        plan = c.solve(state)
    assert {b.pod: b.node for b in plan.bindings} == {"d/p": "n2"}
    assert [(a.claim, sorted(d.device for d in a.devices)) for a in plan.device_allocations] == [
        ("<extended-resources>", ["gpu-0", "gpu-1"])]


@pytest.mark.parametrize(("count", "devices"), [(2, ["gpu-0-half-0", "gpu-0-half-1"]), (3, [])])
def test_typed_partitionable_devices_share_their_counters(running: server.Running, count: int,
                                                          devices: list[str]) -> None:
    """A GPU as a whole device and two halves over one 40Gi counter, typed: two devices fit
    only as the halves, three never."""
    parts = [("gpu-0", "40Gi"), ("gpu-0-half-0", "20Gi"), ("gpu-0-half-1", "20Gi")]
    state = pb.ClusterState(
        nodes=[pb.Node(name="n1", allocatable={"cpu": 4000, "pods": 110})],
        pods=[pb.Pod(namespace="d", name="p", requests={"cpu": 500}, claims=[pb.PodClaimRef(name="gpu", template="t")])],
        devices=[pb.Device(driver="gpu.example.com", pool="n1", name=name, node="n1", consumes_counters=[
            pb.CounterConsumption(counter_set="gpu-0", counters={"memory": memory})]) for name, memory in parts],
        counter_sets=[pb.CounterSet(driver="gpu.example.com", pool="n1", name="gpu-0", counters={"memory": "40Gi"})],
        device_classes=[pb.DeviceClass(name="gpu", selectors=['device.driver == "gpu.example.com"'])],
        claim_templates=[pb.ResourceClaim(namespace="d", name="t", requests=[pb.DeviceRequest(
            name="gpu", exactly=pb.DeviceSubRequest(device_class="gpu", count=count))])])
    with client.PlacementClient(_target(running)) as c:
        plan = c.solve(state)
    assert sorted(d.device for a in plan.device_allocations for d in a.devices) == devices
    assert len(plan.bindings) == (1 if devices else 0)


def test_typed_taints_tolerations_and_operators_are_enums_and_stats_a_struct(running: server.Running) -> None:
    """n0 is tainted (its gang pod tolerates it), n1 carries the wrong zone (NotIn), n2 the
    right one but too little cpu (Gt on a label): the plan puts p on n0; the stats arrive as
    a Struct whose integers come back as integers."""
    state = pb.ClusterState(
        nodes=[pb.Node(name="n0", labels={"zone": "a", "gen": "5"}, allocatable={"cpu": 4000, "pods": 110},
                       taints=[pb.Taint(key="gpu", value="yes", effect=pb.TAINT_EFFECT_NO_SCHEDULE)]),
               pb.Node(name="n1", labels={"zone": "b", "gen": "5"}, allocatable={"cpu": 4000, "pods": 110}),
               pb.Node(name="n2", labels={"zone": "a", "gen": "3"}, allocatable={"cpu": 4000, "pods": 110})],
        pods=[pb.Pod(namespace="d", name="p", requests={"cpu": 1000}, priority=1,
                     tolerations=[pb.Toleration(key="gpu", operator=pb.TOLERATION_OPERATOR_EXISTS,
                                                effect=pb.TAINT_EFFECT_NO_SCHEDULE)],
                     affinity=[pb.NodeSelectorTerm(match_expressions=[
                         pb.SelectorRequirement(key="zone", operator=pb.SELECTOR_OPERATOR_NOT_IN, values=["b"]),
                         pb.SelectorRequirement(key="gen", operator=pb.SELECTOR_OPERATOR_GT, values=["4"])])])])
    untolerated = pb.ClusterState()
    untolerated.CopyFrom(state)
    del untolerated.pods[0].tolerations[:]
    with grpc.insecure_channel(_target(running)) as ch:
        from solver.gen.gangplace.v1 import placement_pb2_grpc as pb_grpc

        raw = pb_grpc.PlacementServiceStub(ch).Solve(pb.SolveRequest(state=state), timeout=30).plan
    with client.PlacementClient(_target(running)) as c:
        plan, blocked = c.solve(state), c.solve(untolerated)
    assert raw.status == pb.PLAN_STATUS_OPTIMAL and raw.stats.fields["nodes"].number_value == 3
    assert plan.status == "OPTIMAL" and [(b.pod, b.node) for b in plan.bindings] == [("d/p", "n0")]
    assert plan.stats["nodes"] == 3 and isinstance(plan.stats["nodes"], int)
    assert plan.stats["pdbPolicy"] == "strict" and isinstance(plan.stats["phaseSeconds"]["problem"], float | int)
    assert blocked.bindings == () and blocked.status == "OPTIMAL"


def test_typed_inter_pod_rules_gates_and_held_pods_reach_the_solver(running: server.Running) -> None:
    # anti-affinity (namespaceSelector over a Namespace), spread and a host port, typed; a gated
    # pod comes back held; the group's Never counts only with PodGroupPreemptionPolicy on
    ml = pb.LabelSelector(match_labels={"team": "ml"})
    state = pb.ClusterState(
        nodes=[pb.Node(name=f"n{i}", labels={"kubernetes.io/hostname": f"n{i}", "zone": f"z{i % 2}"},
                       allocatable={"cpu": 4000, "memory": 8 << 30, "pods": 110}) for i in range(4)],
        namespaces=[pb.Namespace(name="data", labels={"team": "ml"})],
        pods=[pb.Pod(namespace="data", name="db", node="n0", requests={"cpu": 500}, priority=1000,
                     labels={"app": "db"}, host_ports=[pb.HostPort(port=9000)]),
              *[pb.Pod(namespace="d", name=f"g-{k}", requests={"cpu": 1000}, group="g", priority=100,
                       labels={"app": "w"},
                       pod_anti_affinity=[pb.PodAffinityTerm(label_selector=pb.LabelSelector(match_labels={"app": "db"}),
                                                             namespace_selector=ml, topology_key="kubernetes.io/hostname")],
                       topology_spread=[pb.TopologySpreadConstraint(
                           max_skew=1, topology_key="zone", when_unsatisfiable="DoNotSchedule",
                           label_selector=pb.LabelSelector(match_labels={"app": "w"}))],
                       host_ports=[pb.HostPort(port=8080)]) for k in range(2)],
              pb.Pod(namespace="d", name="g-2", requests={"cpu": 1000}, group="g", priority=100,
                     scheduling_gates=["example.com/hold"])],
        groups=[pb.Group(namespace="d", name="g", kind=pb.Group.POD_GROUP, min_count=2, priority=100)])
    with client.PlacementClient(_target(running)) as c:
        plan = c.solve(state)
        unknown = c.request(state, api.PlanOptions())  # PlanOptions holds known gates only: a newer client's
        unknown.options.feature_gates = "Nope=true"
        with pytest.raises(grpc.RpcError) as bad:
            c.stub.Solve(unknown)
    nodes = {b.pod: b.node for b in plan.bindings}
    assert plan.status == "OPTIMAL" and set(nodes) == {"d/g-0", "d/g-1"}
    assert "n0" not in nodes.values() and len({int(n[1]) % 2 for n in nodes.values()}) == 2  # one per zone
    assert [(h.pod, h.reason) for h in plan.held] == [("d/g-2", "waiting for scheduling gates: [example.com/hold]")]
    assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
    assert bad.value.details().startswith("options.feature_gates: unknown feature gate 'Nope'")  # type: ignore[attr-defined]


def test_the_pdb_policy_reaches_the_solver(running: server.Running) -> None:
    # one full node, its only pod under an exhausted budget: soft evicts it, strict (the default) does not
    state = pb.ClusterState(
        nodes=[pb.Node(name="n0", allocatable={"cpu": 4000, "memory": 8 << 30, "pods": 110})],
        pods=[pb.Pod(namespace="d", name="db", node="n0", requests={"cpu": 3000}, priority=1, labels={"app": "db"}),
              pb.Pod(namespace="d", name="g-0", requests={"cpu": 2000}, group="g", priority=100)],
        groups=[pb.Group(namespace="d", name="g", kind=pb.Group.POD_GROUP, min_count=1, priority=100)],
        pdbs=[pb.PodDisruptionBudget(namespace="d", name="db", match_labels={"app": "db"}, disruptions_allowed=0)])
    with client.PlacementClient(_target(running)) as c:
        strict = c.solve(state)
        soft = c.solve(state, api.PlanOptions(pdb_policy="soft"))
        with pytest.raises(grpc.RpcError) as bad:  # a number this server does not know
            c.stub.Solve(pb.SolveRequest(state=state, options=pb.SolveOptions(pdb_policy=7)))  # type: ignore[arg-type]
    assert [e.pod for e in soft.evictions] == ["d/db"] and soft.objective.pdb_violations == 1
    assert soft.stats["pdbPolicy"] == "soft"
    assert list(strict.evictions) == [] and list(strict.bindings) == [] and strict.stats["pdbPolicy"] == "strict"
    assert "disruptionsAllowed of PodDisruptionBudget d/db (0 allowed)" in strict.workloads[0].reason
    assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
    assert bad.value.details() == "options.pdb_policy: unknown PdbPolicy value 7"  # type: ignore[attr-defined]


def test_health_and_reflection_answer(running: server.Running) -> None:
    with grpc.insecure_channel(_target(running)) as ch:
        stub = health_pb2_grpc.HealthStub(ch)
        for name in ("", server.SERVICE):
            assert stub.Check(health_pb2.HealthCheckRequest(service=name)).status == \
                health_pb2.HealthCheckResponse.SERVING
        services = ProtoReflectionDescriptorDatabase(ch).get_services()
        v1 = ch.stream_stream("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
                              request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
                              response_deserializer=reflection_pb2.ServerReflectionResponse.FromString)
        listed, described, itself = v1(iter([
            reflection_pb2.ServerReflectionRequest(list_services=""),
            reflection_pb2.ServerReflectionRequest(file_containing_symbol="gangplace.v1.PlacementService"),
            reflection_pb2.ServerReflectionRequest(file_containing_symbol="grpc.reflection.v1.ServerReflection")]))
    assert server.SERVICE == "gangplace.v1.PlacementService"
    want = {"gangplace.v1.PlacementService", "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection",
            "grpc.reflection.v1alpha.ServerReflection"}
    assert set(services) == want  # v1alpha, as older clients ask
    assert {s.name for s in listed.list_services_response.service} == want  # v1, as grpcurl asks first
    files = [descriptor_pb2.FileDescriptorProto.FromString(b)
             for b in described.file_descriptor_response.file_descriptor_proto]
    assert files[0].name == "gangplace/v1/placement.proto"
    assert [m.name for m in files[0].service[0].method] == ["Solve", "SolveStream", "Advise", "Explain"]  # Advise: the adapter answers it
    (own,) = [descriptor_pb2.FileDescriptorProto.FromString(b)
              for b in itself.file_descriptor_response.file_descriptor_proto]
    assert (own.package, own.service[0].method[0].input_type) == (
        "grpc.reflection.v1", ".grpc.reflection.v1.ServerReflectionRequest")


def test_an_expiring_deadline_returns_the_best_plan_so_far(running: server.Running) -> None:
    body = _hard()
    start = time.perf_counter()
    with client.PlacementClient(_target(running)) as c:
        plan = c.solve(body, api.PlanOptions(time_limit=60), deadline=3.0)
    assert time.perf_counter() - start < 3.0
    assert plan.status == "FEASIBLE" and plan.objective.placed_pods == 20
    assert verify.verify(*facts_and(reading.from_bytes(body)), plan) == []


def test_a_deadline_shorter_than_the_reply_margin_is_refused_saying_so(running: server.Running) -> None:
    # with 0.5 s kept for replying, a call whose deadline leaves less after reading was told "the
    # deadline passed while the request was read", which it had not
    with grpc.insecure_channel(_target(running)) as ch, pytest.raises(grpc.RpcError) as err:
        pb_grpc.PlacementServiceStub(ch).Solve(pb.SolveRequest(kubernetes_objects=_hard()),
                                               timeout=server.MARGIN * 0.9)
    assert err.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert f"less than the {server.MARGIN} s kept for decoding, verifying and replying" in err.value.details()


@pytest.mark.slow
def test_overload_is_refused_while_the_admitted_solve_finishes(running: server.Running) -> None:
    body = _hard()
    results: list[Any] = []
    with client.PlacementClient(_target(running)) as c:
        first = threading.Thread(target=lambda: results.append(c.solve(body, api.PlanOptions(time_limit=3))))
        first.start()
        deadline = time.monotonic() + 10
        while running.metrics.in_flight._value.get() < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        with pytest.raises(client.PlacementError) as refused:
            c.solve((ROOT / "examples" / "gang-preemption.yaml").read_bytes())
        first.join()
    assert refused.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "1 solves in flight" in refused.value.details
    assert [p.status for p in results] == ["FEASIBLE"]
    with urllib.request.urlopen(f"http://127.0.0.1:{running.metrics_port}/metrics") as reply:
        text = reply.read().decode()
    assert 'grpc_server_handled_total{grpc_code="ResourceExhausted",grpc_method="Solve",grpc_service="gangplace.v1.PlacementService",grpc_type="unary"} 1.0' in text
    assert 'grpc_server_handled_total{grpc_code="OK",grpc_method="Solve",grpc_service="gangplace.v1.PlacementService",grpc_type="unary"} 1.0' in text
    assert "gangplace_solves_in_flight 0.0" in text
    assert 'gangplace_solve_seconds_count{method="Solve"} 1.0' in text
    assert 'gangplace_plans_total{status="FEASIBLE"} 1.0' in text  # the plan's status, not the call's
    assert "process_resident_memory_bytes " in text and "python_info{" in text
    assert re.search(r'gangplace_build_info\{grpcio="1\.81[^"]*",ortools="9\.15[^"]*",protobuf="6[^"]*",'
                     r'version="\d[^"]*"\} 1\.0', text), text


def test_graceful_shutdown_finishes_the_solve_in_flight() -> None:
    run = server.start(server.ServerConfig(address="127.0.0.1:0"))
    results: list[Any] = []
    with client.PlacementClient(_target(run)) as c:
        solving = threading.Thread(target=lambda: results.append(c.solve(_hard(), api.PlanOptions(time_limit=2))))
        solving.start()
        while run.metrics.in_flight._value.get() < 1:
            time.sleep(0.02)
        run.stop(grace=20)
        solving.join()
    assert [p.status for p in results] == ["FEASIBLE"]


@pytest.mark.parametrize("make, expected", [
    (lambda: pb.SolveRequest(), "cluster: set state or kubernetes_objects"),
    (lambda: pb.SolveRequest(state=pb.ClusterState(
        nodes=[pb.Node(name="n0", allocatable={"cpu": 1000})],
        pods=[pb.Pod(namespace="d", name="p", requests={"cpu": -5})])),
     "state: pods[0] (Pod/d/p): spec.containers[0].resources.requests.cpu: negative quantity '-5m'"),
    (lambda: pb.SolveRequest(state=pb.ClusterState(pods=[pb.Pod(namespace="d", name="p", node="ghost")])),
     "state: pods[0] (Pod/d/p): spec.nodeName: Node ghost not found"),
    (lambda: pb.SolveRequest(state=pb.ClusterState(groups=[pb.Group(namespace="d", name="g")])),
     "groups[0].kind: must be POD_GROUP or COMPOSITE_POD_GROUP"),
    (lambda: pb.SolveRequest(state=pb.ClusterState(nodes=[pb.Node(name="n0", taints=[pb.Taint(key="k")])])),
     "state: nodes[0] (Node/n0): spec.taints[0].effect: unknown effect 'TaintEffect unspecified'"),
    (lambda: pb.SolveRequest(state=pb.ClusterState(pods=[pb.Pod(namespace="d", name="p", tolerations=[
        pb.Toleration(key="k", operator=9)])])),  # type: ignore[arg-type]  # a newer client's number
     "state: pods[0] (Pod/d/p): spec.tolerations[0].operator: unknown operator 'TolerationOperator value 9'"),
    (lambda: pb.SolveRequest(state=pb.ClusterState(pods=[pb.Pod(namespace="d", name="p", affinity=[
        pb.NodeSelectorTerm(match_expressions=[pb.SelectorRequirement(key="zone", values=["a"])])])])),
     "state: pods[0] (Pod/d/p): spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
     ".nodeSelectorTerms[0].matchExpressions[0].operator: unknown operator 'SelectorOperator unspecified'"),
    (lambda: pb.SolveRequest(kubernetes_objects=b"{not json"), "kubernetes_objects: request: not valid JSON"),
    (lambda: pb.SolveRequest(kubernetes_objects=b"[" * 100000), "kubernetes_objects: request: not valid JSON: "
     "nested too deeply"),
    (lambda: pb.SolveRequest(state=pb.ClusterState(), options=pb.SolveOptions(time_limit_seconds=float("nan"))),
     "options.time_limit: must be a number from 0.001 to 604800, got nan"),
    (lambda: pb.SolveRequest(state=pb.ClusterState(), options=pb.SolveOptions(workers=2**31 - 1)),
     "options.workers: must be an integer from 1 to 64, got 2147483647"),
    (lambda: pb.SolveRequest(state=pb.ClusterState(), options=pb.SolveOptions(relative_gap=-1)),
     "options.relative_gap: must be a number from 0 to 1, got -1.0"),
    (lambda: pb.SolveRequest(state=pb.ClusterState(), options=pb.SolveOptions(seed=-5)),
     "options.seed: must be an integer from 0 to 2147483647, got -5"),
])
def test_bad_input_is_invalid_argument_naming_the_field(running: server.Running, make: Any, expected: str) -> None:
    with grpc.insecure_channel(_target(running)) as ch:
        from solver.gen.gangplace.v1 import placement_pb2_grpc as pb_grpc

        with pytest.raises(grpc.RpcError) as err:
            pb_grpc.PlacementServiceStub(ch).Solve(make(), timeout=30)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert expected in err.value.details()


def test_an_unknown_workload_is_not_found(running: server.Running) -> None:
    with grpc.insecure_channel(_target(running)) as ch:
        from solver.gen.gangplace.v1 import placement_pb2_grpc as pb_grpc

        with pytest.raises(grpc.RpcError) as err:
            pb_grpc.PlacementServiceStub(ch).Solve(pb.SolveRequest(workload="d/none", state=pb.ClusterState(nodes=[pb.Node(name="n1")])),
                                                   timeout=30)
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
    assert "workload: no pending workload 'd/none'" in err.value.details()


def test_a_15000_node_cluster_is_accepted(running: server.Running) -> None:
    objs = generate.gang_scheduling(nodes=15000, gangs=1, size=3)
    body = json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}).encode()
    assert len(body) > 4 * 1024 * 1024  # more than gRPC's default limit
    with client.PlacementClient(_target(running)) as c:
        plan = c.solve(body, api.PlanOptions(time_limit=60))
    assert plan.status == "OPTIMAL" and plan.stats["nodes"] == 15000 and plan.objective.placed_pods == 3
    assert verify.verify(*facts_and(reading.read(objs)), plan) == []


def test_cli_solve_with_server_writes_the_in_process_plan(running: server.Running, tmp_path: Path) -> None:
    example = ROOT / "examples" / "dra-gpus.yaml"
    remote, local = tmp_path / "remote.json", tmp_path / "local.json"
    assert cli.main(["solve", str(example), "--server", _target(running), "-o", str(remote)]) == 0
    assert cli.main(["solve", str(example), "-o", str(local)]) == 0
    a, b = json.loads(remote.read_text()), json.loads(local.read_text())
    a.pop("stats"), b.pop("stats")
    assert a == b


def test_generated_code_is_current() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_proto.py"), "--check"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_logs_are_json_lines_with_the_request_id(running: server.Running, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", logger="gangplace.server")
    with client.PlacementClient(_target(running)) as c:
        c.solve((ROOT / "examples" / "gang-preemption.yaml").read_bytes(), request_id="req-42")
    events = [json.loads(r.getMessage()) for r in caplog.records if r.name == "gangplace.server"]
    solved = [e for e in events if e.get("requestId") == "req-42"]
    assert [e["event"] for e in solved] == ["admitted", "solved"]
    assert solved[1]["status"] == "OPTIMAL" and solved[1]["nodes"] == 4
    line = telemetry.JsonLines().format(caplog.records[-1])
    assert json.loads(line)["level"] == "INFO"


def test_a_huge_request_id_is_logged_and_echoed_cut_to_one_short_line(running: server.Running,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO")
    with grpc.insecure_channel(_target(running)) as ch:
        reply = pb_grpc.PlacementServiceStub(ch).Solve(pb.SolveRequest(
            kubernetes_objects=(ROOT / "examples" / "gang-preemption.yaml").read_bytes(),
            request_id="a\nb" + "x" * 1_000_000), timeout=60)
    assert reply.request_id == "a\\nb" + "x" * 125  # 128 characters of the id, the newline escaped
    for r in caplog.records:
        assert "\n" not in r.getMessage() and len(r.getMessage()) < 4096, r.getMessage()[:200]


def _metrics(run: server.Running) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{run.metrics_port}/metrics") as reply:
        return reply.read().decode()


def test_bytes_that_are_no_request_are_invalid_argument_and_take_no_slot(running: server.Running) -> None:
    with grpc.insecure_channel(_target(running)) as ch:
        raw = ch.unary_unary("/gangplace.v1.PlacementService/Solve", request_serializer=lambda b: b,
                             response_deserializer=lambda b: b)
        with pytest.raises(grpc.RpcError) as err:
            raw(b"\xff\xff\xff\xff garbage", timeout=10)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.value.details().startswith("request: not a SolveRequest: DecodeError")
    assert 'grpc_server_handled_total{grpc_code="InvalidArgument",grpc_method="Solve",grpc_service="gangplace.v1.PlacementService",grpc_type="unary"} 1.0' in _metrics(running)
    assert running.metrics.in_flight._value.get() == 0


def test_a_cancelled_call_is_counted_cancelled_and_frees_its_slot(running: server.Running) -> None:
    body = _hard()
    with grpc.insecure_channel(_target(running)) as ch:
        from solver.gen.gangplace.v1 import placement_pb2_grpc as pb_grpc

        call = pb_grpc.PlacementServiceStub(ch).Solve.future(
            pb.SolveRequest(kubernetes_objects=body, options=pb.SolveOptions(time_limit_seconds=60)), timeout=60)
        deadline = time.monotonic() + 10
        while running.metrics.in_flight._value.get() < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        start = time.monotonic()
        call.cancel()
        while running.metrics.in_flight._value.get() > 0 and time.monotonic() < start + 10:
            time.sleep(0.02)
        freed = time.monotonic() - start
    assert freed < 5  # the solve stops at the cancellation, not at its 60 s limit
    assert 'grpc_server_handled_total{grpc_code="Canceled",grpc_method="Solve",grpc_service="gangplace.v1.PlacementService",grpc_type="unary"} 1.0' in _metrics(running)


def test_the_client_sends_plan_options_and_refuses_those_the_wire_cannot_carry() -> None:
    from solver.core.features import FeatureGates

    gates = FeatureGates(pod_group_preemption_policy=True)
    req = client.PlacementClient.request(b"{}", api.PlanOptions(
        workload="d/g", time_limit=3, workers=2, seed=7, relative_gap=0.1, baseline_only=True, decompose=False,
        pdb_policy="soft", gates=gates, dra_preemption=False), request_id="r1")
    assert (req.workload, req.request_id, req.kubernetes_objects) == ("d/g", "r1", b"{}")
    o = req.options
    assert (o.time_limit_seconds, o.workers, o.seed, o.relative_gap, o.baseline_only, o.no_decompose,
            o.pdb_policy, o.feature_gates, o.no_dra_preemption) == (
        3, 2, 7, 0.1, True, True, pb.PDB_POLICY_SOFT, "PodGroupPreemptionPolicy=true", True)
    default = client.PlacementClient.request(b"{}", api.PlanOptions())
    assert default.workload == "" and default.options == pb.SolveOptions(
        time_limit_seconds=10, workers=1, pdb_policy=pb.PDB_POLICY_STRICT)  # empty gates: the defaults
    for local in (api.PlanOptions(max_variables=10), api.PlanOptions(ideal_shortcut=False),
                  api.PlanOptions(stop=threading.Event()), api.PlanOptions(on_solution=lambda *a: None)):
        with pytest.raises(api.OptionError, match="in-process only"):
            client.PlacementClient.request(b"{}", local)


def test_a_deadline_stops_the_solve_inside_a_slow_cel_selector(running: server.Running) -> None:
    # a selector of 10^4 iterations, within the cost limit, read for each of 12 devices that
    # differ in the attribute it reads: 20 s and more of cel-python. The call's 2 s deadline caps
    # the plan's time limit (2 s less the margin, 0.5 s): when it passes inside the selector, the answer
    # says so, naming the selector (RESOURCE_EXHAUSTED, reason CEL_TIME_LIMIT), before the
    # deadline, and the slot is free again at once
    start = time.perf_counter()
    with client.PlacementClient(_target(running)) as c, pytest.raises(client.PlacementError) as err:
        c.solve(_one_class(_SLOW, devices=12), api.PlanOptions(time_limit=60), deadline=2.0)
    assert err.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED and err.value.reason == "CEL_TIME_LIMIT"
    assert isinstance(err.value, rpc_errors.RemoteLimitError)
    assert re.match(r"the plan cannot be made within its time limit of [01]\.\d+ s: ", err.value.details)
    assert f"CEL selectors took too long. Selector {_SLOW!r} was evaluating on device d.example.com/n0/g" \
        in err.value.details
    deadline = time.monotonic() + 3
    while running.metrics.in_flight._value.get() > 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert running.metrics.in_flight._value.get() == 0 and time.perf_counter() - start < 5


def test_a_call_cancelled_inside_a_slow_cel_selector_stops_it(running: server.Running) -> None:
    # the stop event, not the time limit (60 s), ends the evaluation: CANCELLED, slot freed
    with grpc.insecure_channel(_target(running)) as ch:
        from solver.gen.gangplace.v1 import placement_pb2_grpc as pb_grpc

        call = pb_grpc.PlacementServiceStub(ch).Solve.future(
            pb.SolveRequest(kubernetes_objects=_one_class(_SLOW, devices=12),
                            options=pb.SolveOptions(time_limit_seconds=60)), timeout=60)
        deadline = time.monotonic() + 10
        while running.metrics.in_flight._value.get() < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.5)  # inside the first device's evaluation
        start = time.monotonic()
        call.cancel()
        while running.metrics.in_flight._value.get() > 0 and time.monotonic() < start + 10:
            time.sleep(0.02)
        freed = time.monotonic() - start
    assert freed < 5
    assert 'grpc_server_handled_total{grpc_code="Canceled",grpc_method="Solve",grpc_service="gangplace.v1.PlacementService",grpc_type="unary"} 1.0' in _metrics(running)


_TEN = "[1,2,3,4,5,6,7,8,9,10]"
_SLOW = (f'device.attributes["d.example.com"].v >= 0 && '
         f"{_TEN}.all(a, {_TEN}.all(b, {_TEN}.all(c, {_TEN}.all(d, a+b+c+d > 0))))")


def _one_class(expr: str, devices: int = 1) -> bytes:
    """A node with ``devices`` devices (attribute v = 0, 1, ...), a DeviceClass of ``expr`` and a
    pod claiming one device of it."""
    objs = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n0"}, "status": {"allocatable": {"cpu": "8", "pods": "10"}}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "c"},
         "spec": {"selectors": [{"cel": {"expression": expr}}]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
         "spec": {"driver": "d.example.com", "pool": {"name": "n0", "generation": 1, "resourceSliceCount": 1},
                  "nodeName": "n0", "devices": [{"name": f"g{i}", "attributes": {"v": {"int": i}}}
                                                for i in range(devices)]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "t", "namespace": "d"},
         "spec": {"spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "c"}}]}}}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "d"},
         "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
                  "resourceClaims": [{"name": "g", "resourceClaimTemplateName": "t"}]}, "status": {"phase": "Pending"}},
    ]
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}).encode()


def test_the_servers_cel_cache_keeps_to_its_limit() -> None:
    # --cel-cache-mb: room for two compiled selectors; four requests with a new selector each
    # leave the last two in the cache, the first two dropped
    from solver import cel
    from solver.cel.cache import program_bytes

    exprs = [f'device.driver == "d.example.com" && device.attributes["d.example.com"].v != {i}' for i in range(4)]
    program = cel._compile(exprs[0])
    assert isinstance(program, cel.Program)
    one = program_bytes(program.runner.ast) + len(exprs[0])
    before = cel.cache_stats()
    cel._COMPILED.clear()
    run = server.start(server.ServerConfig(address="127.0.0.1:0", cel_cache_bytes=2 * one + one // 2))
    try:
        with client.PlacementClient(_target(run)) as c:
            for e in exprs:
                assert c.solve(_one_class(e), api.PlanOptions(time_limit=5)).status == "OPTIMAL"
        stats = cel.cache_stats()
        assert cel._COMPILED.keys() == exprs[2:]
        assert (stats.entries, stats.bytes, stats.limit, stats.evicted) == (2, 2 * one, 2 * one + one // 2,
                                                                            before.evicted + 2)
    finally:
        run.stop(5)
        cel.set_cache_limit(before.limit)


def test_a_solving_server_answers_advise_unimplemented(running: server.Running) -> None:
    """Advise is the adapter's (``gangplace adapter --advise``, tests/adapter/test_advise.py): a
    server that only solves keeps no plan to advise from."""
    with grpc.insecure_channel(f"127.0.0.1:{running.port}") as ch, pytest.raises(grpc.RpcError) as err:
        pb_grpc.PlacementServiceStub(ch).Advise(pb.AdviseRequest(kind="PodGroup", namespace="d", name="g"),
                                                timeout=5)
    assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED
