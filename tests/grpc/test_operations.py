"""``gangplace serve`` as a Kubernetes operator runs it (issue 31, item 4): a port in use is an
error naming its flag, every RPC is one JSON log line and counted in the standard
grpc_server_* metrics, stderr carries JSON alone, the drain is logged, and the health port
answers reflection too."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase
from prometheus_client.parser import text_string_to_metric_families

from solver.gen.gangplace.v1 import placement_pb2 as pb
from solver.gen.gangplace.v1 import placement_pb2_grpc as pb_grpc
from solver.service import server, telemetry

ROOT = Path(__file__).resolve().parent.parent.parent
BODY = (ROOT / "examples" / "gang-preemption.yaml").read_bytes()
SERVICE = "gangplace.v1.PlacementService"


def _serve_cli(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "solver.cli", "serve", "--host", "127.0.0.1", *args],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})


@pytest.fixture()
def held() -> Iterator[socket.socket]:
    """A port another server listens on with SO_REUSEPORT, as grpc's servers do by default."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s


@pytest.mark.parametrize("flag", ["--port", "--metrics-port", "--health-port"])
def test_a_port_in_use_is_exit_2_naming_its_flag(held: socket.socket, flag: str) -> None:
    port = held.getsockname()[1]
    ports = {"--port": "0", "--metrics-port": "0", "--health-port": "0", flag: str(port)}
    proc = _serve_cli(*[a for f, p in ports.items() for a in (f, p)])
    try:
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert (proc.returncode, out, err) == (2, "", f"gangplace: {flag} {port}: address already in use\n")


def test_reuse_port_lets_two_servers_share_a_port() -> None:
    first = server.start(server.ServerConfig(address="127.0.0.1:0", reuse_port=True))
    try:
        second = server.start(server.ServerConfig(address=f"127.0.0.1:{first.port}", reuse_port=True))
        assert second.port == first.port
        second.stop(0)
        with pytest.raises(server.ListenError) as refused:
            server.start(server.ServerConfig(address=f"127.0.0.1:{first.port}"))
    finally:
        first.stop(0)
    assert (refused.value.option, refused.value.reason) == ("address", "address already in use")


@pytest.fixture()
def guarded(tmp_path: Path) -> Iterator[server.Running]:
    (tmp_path / "token").write_text("s3cret\n")
    run = server.start(server.ServerConfig(address="127.0.0.1:0", metrics_address="127.0.0.1:0",
                                           health_address="127.0.0.1:0", token_file=str(tmp_path / "token")))
    yield run
    run.stop(5)


TOKEN = (("authorization", "Bearer s3cret"),)


def _calls(run: server.Running) -> None:
    """One call of each outcome: OK (unary and stream), NOT_FOUND, INVALID_ARGUMENT, UNAUTHENTICATED."""
    with grpc.insecure_channel(f"127.0.0.1:{run.port}") as ch:
        stub = pb_grpc.PlacementServiceStub(ch)
        stub.Solve(pb.SolveRequest(kubernetes_objects=BODY, request_id="ok-1"), metadata=TOKEN, timeout=30)
        assert list(stub.SolveStream(pb.SolveRequest(kubernetes_objects=BODY), metadata=TOKEN, timeout=30))
        for request, metadata, code in [
            (pb.SolveRequest(workload="d/none", state=pb.ClusterState(nodes=[pb.Node(name="n1")]), request_id="nf-1"), TOKEN,
             grpc.StatusCode.NOT_FOUND),
            (pb.SolveRequest(), TOKEN, grpc.StatusCode.INVALID_ARGUMENT),
            (pb.SolveRequest(kubernetes_objects=BODY), (), grpc.StatusCode.UNAUTHENTICATED),
        ]:
            with pytest.raises(grpc.RpcError) as err:
                stub.Solve(request, metadata=metadata, timeout=30)
            assert err.value.code() == code


def test_every_rpc_is_one_json_log_line(guarded: server.Running, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", logger="gangplace.rpc")
    _calls(guarded)
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "gangplace.rpc"]
    solve, stream = f"/{SERVICE}/Solve", f"/{SERVICE}/SolveStream"
    assert [(e["event"], e["method"], e["code"], e.get("requestId"), e.get("details")) for e in lines] == [
        ("rpc", solve, "OK", "ok-1", None),
        ("rpc", stream, "OK", None, None),
        ("rpc", solve, "NOT_FOUND", "nf-1", "workload: no pending workload 'd/none' in the snapshot"),
        ("rpc", solve, "INVALID_ARGUMENT", None, "cluster: set state or kubernetes_objects"),
        ("rpc", solve, "UNAUTHENTICATED", None, "a valid bearer token is required"),
    ]
    assert all(e["peer"].startswith("ipv4:127.0.0.1:") and isinstance(e["latencyMs"], float) for e in lines)
    assert lines[0]["latencyMs"] > 0


def _families(run: server.Running) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{run.metrics_port}/metrics") as reply:
        text = reply.read().decode()
    return {f.name: f for f in text_string_to_metric_families(text)}


def test_the_standard_grpc_server_metrics_parse_and_count_by_code(guarded: server.Running) -> None:
    _calls(guarded)
    with grpc.insecure_channel(f"127.0.0.1:{guarded.health_port}") as ch:
        health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=3)
    families = _families(guarded)
    started, handled, seconds = (families[n] for n in ("grpc_server_started", "grpc_server_handled",
                                                        "grpc_server_handling_seconds"))
    assert (started.type, handled.type, seconds.type) == ("counter", "counter", "histogram")
    counts = {(s.labels["grpc_service"], s.labels["grpc_method"], s.labels["grpc_type"], s.labels["grpc_code"]):
              s.value for s in handled.samples if s.name == "grpc_server_handled_total"}
    assert counts == {
        (SERVICE, "Solve", "unary", "OK"): 1.0,
        (SERVICE, "SolveStream", "server_stream", "OK"): 1.0,
        (SERVICE, "Solve", "unary", "NotFound"): 1.0,
        (SERVICE, "Solve", "unary", "InvalidArgument"): 1.0,
        (SERVICE, "Solve", "unary", "Unauthenticated"): 1.0,
        ("grpc.health.v1.Health", "Check", "unary", "OK"): 1.0,
    }
    assert {(s.labels["grpc_method"], s.value) for s in started.samples if s.name == "grpc_server_started_total"} \
        == {("Solve", 4.0), ("SolveStream", 1.0), ("Check", 1.0)}
    assert [s.value for s in seconds.samples if s.name == "grpc_server_handling_seconds_count"
            and s.labels["grpc_method"] == "Solve"] == [4.0]
    assert "gangplace_solves" not in families and "gangplace_plans" in families  # the RPC counter is grpc_server_*


def test_the_health_port_serves_reflection_too(guarded: server.Running) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{guarded.health_port}") as ch:
        db = ProtoReflectionDescriptorDatabase(ch)
        services = set(db.get_services())
        health = db.FindFileContainingSymbol("grpc.health.v1.Health")
    assert services == {"grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection",
                        "grpc.reflection.v1alpha.ServerReflection"}
    assert (health.name, health.package) == ("grpc_health/v1/health.proto", "grpc.health.v1")  # as grpcio-health-checking names it


def test_grpc_library_logs_become_json_lines(capsys: pytest.CaptureFixture[str]) -> None:
    handler = telemetry.log_json_to_stderr(also=("grpc",))
    try:
        try:
            raise ValueError("boom")
        except ValueError:
            logging.getLogger("grpc._server").exception("Exception calling application: %s", "boom")
    finally:
        for name in ("gangplace", "grpc"):
            logging.getLogger(name).removeHandler(handler)
        logging.getLogger("grpc").propagate = True
    (line,) = capsys.readouterr().err.splitlines()
    record = json.loads(line)
    assert (record["level"], record["logger"], record["message"]) == (
        "ERROR", "grpc._server", "Exception calling application: boom")
    assert record["exception"].endswith("ValueError: boom")


def test_serve_writes_json_alone_on_stderr_and_logs_the_drain() -> None:
    proc = _serve_cli("--port", "0", "--metrics-port", "0", "--grace", "7")
    try:
        assert proc.stderr is not None
        serving = json.loads(proc.stderr.readline())
        assert serving["event"] == "serving" and serving["reusePort"] is False
        with grpc.insecure_channel(f"127.0.0.1:{serving['port']}") as ch, pytest.raises(grpc.RpcError):
            pb_grpc.PlacementServiceStub(ch).Solve(pb.SolveRequest(workload="d/none", state=pb.ClusterState(nodes=[pb.Node(name="n1")])),
                                                   timeout=30)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    lines = [json.loads(line) for line in err.splitlines()]  # every line is JSON
    events = [(e["event"], e.get("code"), e.get("cause"), e.get("graceSeconds")) for e in lines]
    assert events == [("admitted", None, None, None), ("rpc", "NOT_FOUND", None, None), ("draining", None, "SIGTERM", 7.0),
                      ("stopped", None, "SIGTERM", 7.0)]
    assert proc.returncode == 0


class _Ended:
    """A servicer context whose call has ended, ``remaining`` seconds before its deadline."""

    def __init__(self, remaining: float | None) -> None:
        self.remaining = remaining

    def code(self) -> None:
        return None

    def is_active(self) -> bool:
        return False

    def time_remaining(self) -> float | None:
        return self.remaining


@pytest.mark.parametrize("remaining, code", [
    (-0.5, grpc.StatusCode.DEADLINE_EXCEEDED),
    (0.0, grpc.StatusCode.DEADLINE_EXCEEDED),
    (0.1, grpc.StatusCode.DEADLINE_EXCEEDED),  # the client's cancel came before the server's timer
    (30.0, grpc.StatusCode.CANCELLED),
    (None, grpc.StatusCode.CANCELLED),  # no deadline at all
])
def test_a_call_ended_at_its_deadline_is_counted_deadline_exceeded_not_cancelled(
        remaining: float | None, code: grpc.StatusCode) -> None:
    # issue 50, item 8: a deadline that expired while a request was read was counted Canceled
    from solver.service.observe import status_of

    assert status_of(_Ended(remaining), failed=False) == code  # type: ignore[arg-type]
