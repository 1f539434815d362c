"""Fuzz the typed request (issue 32, item 7): a hostile client's ``ClusterState``, mutated field
by field through protobuf's reflection, sent to a real server on loopback. Every call ends in
a verified plan (the service verifies each plan; a failure would be INTERNAL) or a refusal the
caller can act on (INVALID_ARGUMENT or NOT_FOUND naming the object, RESOURCE_EXHAUSTED), with a
message of at most 1 KB; never INTERNAL or UNKNOWN, and the server serves on.

Mutations: a scalar set to an extreme (int64 bounds, 0, -1, NaN for floats), a string to
empty, to 100 KB or to NUL and lone-surrogate-free oddities, an enum to a number no version
defines, a repeated field emptied or its entry duplicated, a map given a hostile key. The
``kubernetes_objects`` form goes through the same reader the CLI fuzz covers (tests/test_fuzz.py).
``FUZZ_EXAMPLES`` runs more.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from google.protobuf.descriptor import FieldDescriptor
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from solver.core.errors import MAX_MESSAGE
from solver.gen.gangplace.v1 import placement_pb2 as pb
from solver.gen.gangplace.v1 import placement_pb2_grpc as pb_grpc
from solver.service import server

RACK = "topology.kubernetes.io/rack"


def _seeds() -> list[pb.ClusterState]:
    gang = pb.ClusterState(
        nodes=[pb.Node(name=f"n{i}", labels={RACK: f"r{i // 2}", "zone": "a"},
                       allocatable={"cpu": 4000, "memory": 8 << 30, "pods": 110},
                       taints=[pb.Taint(key="t", value="v", effect=pb.TAINT_EFFECT_NO_SCHEDULE)] if i == 3 else [])
               for i in range(4)],
        pods=[pb.Pod(namespace="d", name="bg", node="n0", requests={"cpu": 3000}, priority=1, labels={"app": "bg"}),
              *[pb.Pod(namespace="d", name=f"g-{k}", requests={"cpu": 2000}, group="g", priority=100,
                       tolerations=[pb.Toleration(key="t", operator=pb.TOLERATION_OPERATOR_EXISTS)],
                       affinity=[pb.NodeSelectorTerm(match_expressions=[pb.SelectorRequirement(
                           key="zone", operator=pb.SELECTOR_OPERATOR_IN, values=["a"])])])
                for k in range(4)]],
        groups=[pb.Group(namespace="d", name="g", kind=pb.Group.POD_GROUP, min_count=4, priority=100,
                         topology_key=RACK)],
        pdbs=[pb.PodDisruptionBudget(namespace="d", name="bg", match_labels={"app": "bg"}, disruptions_allowed=1,
                                     generation=1, observed_generation=1)])
    parts = [("gpu-0", "40Gi"), ("gpu-0-half-0", "20Gi"), ("gpu-0-half-1", "20Gi")]
    devices = pb.ClusterState(
        nodes=[pb.Node(name="n1", allocatable={"cpu": 4000, "pods": 110}),
               pb.Node(name="n2", allocatable={"cpu": 4000, "pods": 110})],
        pods=[pb.Pod(namespace="d", name="p", requests={"cpu": 500},
                     claims=[pb.PodClaimRef(name="gpu", template="t")]),
              pb.Pod(namespace="d", name="x", requests={"cpu": 500, "example.com/gpu": 1})],
        devices=[pb.Device(driver="gpu.example.com", pool="n1", name=name, node="n1", consumes_counters=[
            pb.CounterConsumption(counter_set="gpu-0", counters={"memory": memory})]) for name, memory in parts]
        + [pb.Device(driver="gpu.example.com", pool="n2", name=f"gpu-{k}", node="n2") for k in range(2)],
        counter_sets=[pb.CounterSet(driver="gpu.example.com", pool="n1", name="gpu-0", counters={"memory": "40Gi"})],
        device_classes=[pb.DeviceClass(name="gpu", selectors=['device.driver == "gpu.example.com"'],
                                       extended_resource_name="example.com/gpu")],
        claim_templates=[pb.ResourceClaim(namespace="d", name="t", requests=[pb.DeviceRequest(
            name="gpu", exactly=pb.DeviceSubRequest(device_class="gpu", count=2))])])
    return [gang, devices]


SEEDS = _seeds()
TYPE_NAMES = {FieldDescriptor.TYPE_STRING: "string", FieldDescriptor.TYPE_BOOL: "bool",
              FieldDescriptor.TYPE_ENUM: "enum", FieldDescriptor.TYPE_INT64: "int64",
              FieldDescriptor.TYPE_INT32: "int32", FieldDescriptor.TYPE_DOUBLE: "double",
              FieldDescriptor.TYPE_BYTES: "bytes", FieldDescriptor.TYPE_UINT32: "uint32"}
INTS = [0, -1, 1, 2**31 - 1, -(2**31), 2**63 - 1, -(2**63)]
STRINGS = ["", "x" * 100_000, "\x00", "a/b", "..", "é" * 10, "1e60", "-5m", "*", " "]


def _fields(msg: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every (message, field, index-or-None) reachable in ``msg``, set fields and unset scalars."""
    out: list[tuple[Any, ...]] = []
    for f in msg.DESCRIPTOR.fields:
        out.append((msg, f, None))
        if f.type != FieldDescriptor.TYPE_MESSAGE:
            continue
        value = getattr(msg, f.name)
        if f.label == FieldDescriptor.LABEL_REPEATED:
            if f.message_type.GetOptions().map_entry:
                continue
            for item in value:
                out.extend(_fields(item))
        elif msg.HasField(f.name):
            out.extend(_fields(value))
    return out


def _hostile_scalar(draw: Any, f: FieldDescriptor) -> Any:
    if f.type == FieldDescriptor.TYPE_ENUM:
        return draw(st.sampled_from([99, -1, 2**31 - 1]))
    if f.type == FieldDescriptor.TYPE_BOOL:
        return draw(st.booleans())
    if f.type in (FieldDescriptor.TYPE_STRING,):
        return draw(st.sampled_from(STRINGS))
    if f.type == FieldDescriptor.TYPE_BYTES:
        return draw(st.sampled_from([b"", b"\xff" * 10, b"{}", b"[]"]))
    if f.type in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return draw(st.sampled_from([float("nan"), float("inf"), -1.0, 1e300]))
    if f.type in (FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_FIXED32):
        return draw(st.sampled_from([0, 1, 2**32 - 1]))
    if f.type in (FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_FIXED64):
        return draw(st.sampled_from([0, 1, 2**64 - 1]))
    if f.type in (FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_SINT32, FieldDescriptor.TYPE_SFIXED32):
        return draw(st.sampled_from([v for v in INTS if -(2**31) <= v < 2**31]))
    return draw(st.sampled_from(INTS))


def _mutate(draw: Any, state: pb.ClusterState) -> str:
    msg, f, _ = draw(st.sampled_from(_fields(state)))
    value = getattr(msg, f.name)
    if f.label == FieldDescriptor.LABEL_REPEATED:
        if f.type == FieldDescriptor.TYPE_MESSAGE and f.message_type.GetOptions().map_entry:
            key_f, value_f = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
            if value_f.type == FieldDescriptor.TYPE_MESSAGE:
                return "map of messages (left)"
            value[_hostile_scalar(draw, key_f)] = _hostile_scalar(draw, value_f)
            return "map entry"
        if len(value) and draw(st.booleans()):
            if f.type == FieldDescriptor.TYPE_MESSAGE:
                value.add().CopyFrom(value[draw(st.integers(0, len(value) - 1))])
            else:
                value.append(value[draw(st.integers(0, len(value) - 1))])
            return "duplicate"
        del value[:]
        return "empty list"
    if f.type == FieldDescriptor.TYPE_MESSAGE:
        msg.ClearField(f.name)
        return "clear message"
    try:
        setattr(msg, f.name, _hostile_scalar(draw, f))
    except (ValueError, TypeError):  # a value protobuf itself will not hold (a closed enum)
        return "refused by protobuf"
    return f"hostile {TYPE_NAMES.get(f.type, f.type)}"


@pytest.fixture(scope="module")
def served() -> Iterator[server.Running]:
    run = server.start(server.ServerConfig(address="127.0.0.1:0", metrics_address=None, max_inflight=1))
    yield run
    run.stop(5)


ACTIONABLE = {grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND,
              grpc.StatusCode.RESOURCE_EXHAUSTED}


@settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "100")),
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_a_mutated_typed_state_ends_in_a_plan_or_a_refusal_naming_the_input(data: Any,
                                                                             served: server.Running) -> None:
    state = pb.ClusterState()
    state.CopyFrom(data.draw(st.sampled_from(SEEDS)))
    for _ in range(data.draw(st.integers(1, 3))):
        event(f"mutation: {_mutate(data.draw, state)}")
    with grpc.insecure_channel(f"127.0.0.1:{served.port}") as ch:
        stub = pb_grpc.PlacementServiceStub(ch)  # type: ignore[no-untyped-call]  # protoc writes no types
        try:
            reply = stub.Solve(pb.SolveRequest(state=state, options=pb.SolveOptions(time_limit_seconds=5)),
                               timeout=60)
            code, details = grpc.StatusCode.OK, ""
        except grpc.RpcError as exc:
            call: Any = exc
            code, details = call.code(), call.details() or ""
    event(f"code {code.name}")
    assert code in ACTIONABLE, details
    assert len(details.encode()) <= MAX_MESSAGE + 64, details[:200]
    if code == grpc.StatusCode.OK:
        assert reply.plan.status in (pb.PLAN_STATUS_OPTIMAL, pb.PLAN_STATUS_FEASIBLE)
