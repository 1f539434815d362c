"""What one request costs a served solver in memory (``gangplace bench --served-memory``).

Each case is sent whole, as a JSON List (and, with ``yaml``, as multi-document YAML), to its
own ``gangplace serve`` process on a loopback port: a fresh process per request, so the
kernel's high-water mark (``VmHWM``) of that process is the request's peak, with the idle
server's resident size (``idle``) as its floor. The rows give the peak against the request's
size; docs/performance.md turns them into the bound the server's memory guard uses
(``solver.service.server.MemoryGuard``).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import grpc
import yaml

from solver.bench.memory import status_mib
from solver.gen.gangplace.v1 import placement_pb2 as pb
from solver.gen.gangplace.v1 import placement_pb2_grpc as pb_grpc


@dataclass(frozen=True, slots=True)
class Served:
    case: str
    form: str  # "json" or "yaml"
    input_mib: float
    idle_mib: float  # the server's resident size before the request
    peak_mib: float  # its high-water mark after the answer
    status: str  # the plan's status, or the gRPC code of a refusal

    @property
    def per_input(self) -> float:
        """Peak above idle, per MiB of request."""
        return (self.peak_mib - self.idle_mib) / self.input_mib if self.input_mib else 0.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def encode(objects: list[dict[str, Any]], form: str) -> bytes:
    if form == "yaml":
        return yaml.dump_all(objects, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper)).encode()
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}).encode()


def measure(case: str, objects: list[dict[str, Any]], forms: Sequence[str] = ("json",), *,
            time_limit: float = 60.0, soft: bool = False, extra_args: Sequence[str] = ()) -> list[Served]:
    rows = []
    for form in forms:
        body = encode(objects, form)
        port = _free_port()
        limit_mb = max(64, 2 * len(body) >> 20)
        proc = subprocess.Popen(
            [sys.executable, "-m", "solver.cli", "serve", "--host", "127.0.0.1", "--port", str(port),
             "--metrics-port", "0", "--max-inflight", "1", "--max-message-mb", str(limit_mb), *extra_args],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        try:
            with grpc.insecure_channel(f"127.0.0.1:{port}", options=[
                    ("grpc.max_send_message_length", len(body) + (1 << 20)),
                    ("grpc.max_receive_message_length", 1 << 30)]) as ch:
                grpc.channel_ready_future(ch).result(timeout=60)
                idle = status_mib("VmRSS", proc.pid) or 0.0
                stub = pb_grpc.PlacementServiceStub(ch)  # type: ignore[no-untyped-call]  # protoc writes no types
                request = pb.SolveRequest(kubernetes_objects=body, options=pb.SolveOptions(
                    time_limit_seconds=time_limit, pdb_policy=pb.PDB_POLICY_SOFT if soft else pb.PDB_POLICY_STRICT))
                try:
                    status = pb.PlanStatus.Name(stub.Solve(request, timeout=time_limit * 10).plan.status)
                except grpc.RpcError as exc:
                    status = exc.code().name
                time.sleep(0.2)
                peak = status_mib("VmHWM", proc.pid) or 0.0
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        rows.append(Served(case=case, form=form, input_mib=round(len(body) / (1 << 20), 2),
                           idle_mib=round(idle, 1), peak_mib=round(peak, 1), status=status))
    return rows


def table(rows: Sequence[Served]) -> str:
    lines = [f"{'case':<36}{'form':>6}{'input MiB':>11}{'idle MiB':>10}{'peak MiB':>10}{'(peak-idle)/input':>19}"
             "  status"]
    lines += [f"{r.case:<36}{r.form:>6}{r.input_mib:>11.2f}{r.idle_mib:>10.1f}{r.peak_mib:>10.1f}"
              f"{r.per_input:>19.1f}  {r.status}" for r in rows]
    if rows:
        worst = max(rows, key=lambda r: r.per_input)
        lines.append(f"worst: {worst.per_input:.1f} MiB per MiB of request ({worst.case}, {worst.form})")
    return "\n".join(lines)
