"""Errors over gRPC by what the caller should do (solver.service.status): bad input names the
object and field in google.rpc details, a limit is RESOURCE_EXHAUSTED, a bug INTERNAL, and
the client raises the matching class of the error tree, read from the details, not the text."""

from __future__ import annotations

import json
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2  # type: ignore[import-untyped]
from grpc_status import rpc_status  # type: ignore[import-untyped]

from solver import api
from solver.core.errors import BugError, InputError, LimitError, ModelTooLargeError, UnavailableError
from solver.gen.gangplace.v1 import placement_pb2 as pb
from solver.gen.gangplace.v1 import placement_pb2_grpc as pb_grpc
from solver.service import client, server
from solver.service.status import limit_reason
from tests.builders import node, pod
from tests.grpc.conftest import _target


def _objects(*objs: Any) -> bytes:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": [o.build() for o in objs]}).encode()


def _bad_pod() -> bytes:
    bad = pod("p").cpu_m(500)
    bad.obj["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    return _objects(node("n1"), bad)


def test_a_bad_object_is_named_in_the_details_and_raised_as_input(running: server.Running) -> None:
    with client.PlacementClient(_target(running)) as c, pytest.raises(InputError) as err:
        c.solve(_bad_pod())
    e = err.value
    assert isinstance(e, client.PlacementError) and e.code == grpc.StatusCode.INVALID_ARGUMENT
    assert (e.obj, e.field) == ("Pod/default/p", "spec.containers[0].resources.requests.cpu")
    # what any gRPC client reads: the standard google.rpc.Status trailer
    with grpc.insecure_channel(_target(running)) as ch:
        stub = pb_grpc.PlacementServiceStub(ch)  # type: ignore[no-untyped-call]
        with pytest.raises(grpc.RpcError) as raw:
            stub.Solve(pb.SolveRequest(kubernetes_objects=_bad_pod()), timeout=30)
    st = rpc_status.from_call(raw.value)
    found = {}
    for detail in st.details:
        for kind in (error_details_pb2.ResourceInfo, error_details_pb2.BadRequest):
            msg = kind()
            if detail.Is(msg.DESCRIPTOR):
                detail.Unpack(msg)
                found[kind.__name__] = msg
    assert (found["ResourceInfo"].resource_type, found["ResourceInfo"].resource_name) == ("Pod", "default/p")
    assert found["BadRequest"].field_violations[0].field == "spec.containers[0].resources.requests.cpu"


def test_an_option_out_of_range_names_its_field(running: server.Running) -> None:
    with client.PlacementClient(_target(running)) as c, pytest.raises(InputError) as err:
        c.solve(_objects(node("n1")), api.PlanOptions(workers=65))
    assert (err.value.obj, err.value.field) == ("", "options.workers")


def test_a_model_over_its_limit_is_resource_exhausted_not_bad_input(running: server.Running,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    def too_large(*_: Any, **__: Any) -> Any:
        raise ModelTooLargeError(5_000_000, 1_000_000)

    monkeypatch.setattr(server.api, "plan", too_large)
    with client.PlacementClient(_target(running)) as c, pytest.raises(LimitError) as err:
        c.solve(_objects(node("n1"), pod("p").cpu_m(500)))
    assert err.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED and not isinstance(err.value, UnavailableError)
    assert err.value.reason == limit_reason(ModelTooLargeError(1, 1)) == "MODEL_TOO_LARGE"


def test_a_plan_the_verifier_refuses_is_a_bug_not_bad_input(running: server.Running,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*_: Any, **__: Any) -> Any:
        raise api.PlanInvalidError([])

    monkeypatch.setattr(server.api, "plan", refused)
    with client.PlacementClient(_target(running)) as c, pytest.raises(BugError) as err:
        c.solve(_objects(node("n1"), pod("p").cpu_m(500)))
    assert err.value.code == grpc.StatusCode.INTERNAL and not isinstance(err.value, InputError)


@pytest.mark.slow
def test_a_busy_server_is_unavailable_for_now(running: server.Running) -> None:
    """max_inflight 1: a second call while one runs is RESOURCE_EXHAUSTED, reason BUSY: retry."""
    import threading

    from tests.grpc.test_server import _hard

    with client.PlacementClient(_target(running)) as c:
        first = threading.Thread(target=lambda: c.solve(_hard(), api.PlanOptions(time_limit=5)))
        first.start()
        try:
            for _ in range(200):
                if running.metrics.in_flight._value.get() >= 1:  # the gauge's own value
                    break
                threading.Event().wait(0.05)
            with pytest.raises(UnavailableError) as err:
                c.solve(_objects(node("n1")))
        finally:
            first.join(60)
    assert err.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED and err.value.reason == "BUSY"


@pytest.mark.parametrize("body", [b"", b"# only a comment\n", b'{"apiVersion": "v1", "kind": "List", "items": []}',
                                  b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"],
                         ids=["empty", "comment", "empty-list", "only-skipped"])
def test_an_input_with_nothing_to_plan_is_refused_as_the_cli_refuses_it(running: server.Running, body: bytes,
                                                                         tmp_path: Any) -> None:
    with client.PlacementClient(_target(running)) as c, pytest.raises(InputError) as err:
        c.solve(body)
    assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT and "no Node and no Pod to plan" in err.value.details
    from solver import cli

    path = tmp_path / "s.yaml"
    path.write_bytes(body)
    assert cli.main(["solve", str(path), "-o", str(tmp_path / "plan.json")]) == 2


def test_an_empty_typed_cluster_is_refused(running: server.Running) -> None:
    with grpc.insecure_channel(_target(running)) as ch:
        stub = pb_grpc.PlacementServiceStub(ch)  # type: ignore[no-untyped-call]
        with pytest.raises(grpc.RpcError) as raw:
            stub.Solve(pb.SolveRequest(state=pb.ClusterState()), timeout=30)
    assert raw.value.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
    assert "no Node and no Pod to plan" in raw.value.details()  # type: ignore[attr-defined]


def test_every_kind_of_error_has_one_status_code() -> None:
    from solver.core.errors import Kind
    from solver.service import status

    assert set(status.CODES) == set(Kind)
    assert status.CODES[Kind.INPUT] == grpc.StatusCode.INVALID_ARGUMENT
    assert status.CODES[Kind.BUSY] == status.CODES[Kind.LIMIT] == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert status.CODES[Kind.BUG] == grpc.StatusCode.INTERNAL
