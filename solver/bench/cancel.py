"""How fast a cancelled call frees its slot (``gangplace bench --cancel-after S,S``).

Each case is sent whole (a JSON List) to a ``gangplace serve`` started in this process on a
loopback port with one slot; once the call is admitted it is cancelled after each of the given
delays, and the time from the cancel to the slot being free (the in-flight gauge at 0) is
measured, with the phase the plan was in (the server's ``stopped`` log line; "reading" when it
was still reading the request, "done" when it had answered already). Issue 32's target: at most
1 s in every phase.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import grpc

from solver.gen.gangplace.v1 import placement_pb2 as pb
from solver.gen.gangplace.v1 import placement_pb2_grpc as pb_grpc
from solver.service import server


@dataclass(frozen=True, slots=True)
class Cancelled:
    case: str
    after: float  # seconds after admission the call was cancelled
    freed: float  # seconds from the cancel to the slot free
    phase: str


class _Phases(logging.Handler):
    """The phase of each ``stopped`` line the server logs."""

    def __init__(self) -> None:
        super().__init__()
        self.last = ""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            event = json.loads(record.getMessage())
        except (ValueError, TypeError):
            return
        if isinstance(event, dict) and event.get("event") == "stopped" and "during" in event:
            self.last = str(event["during"])


def measure(case: str, objects: list[dict[str, Any]], delays: Sequence[float], *,
            time_limit: float = 60.0, soft: bool = False) -> Iterator[Cancelled]:
    """``soft``: the request asks ``--pdb-policy soft`` (else the default, strict)."""
    body = json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}).encode()
    phases = _Phases()
    log = logging.getLogger("gangplace.server")
    log.addHandler(phases)
    level = log.level
    log.setLevel(logging.INFO)
    run = server.start(server.ServerConfig(address="127.0.0.1:0", metrics_address=None, max_inflight=1,
                                           max_message_bytes=max(64 << 20, len(body) * 2)))
    try:
        for after in delays:
            phases.last = ""
            with grpc.insecure_channel(f"127.0.0.1:{run.port}",
                                       options=[("grpc.max_send_message_length", len(body) + (1 << 20))]) as ch:
                call = pb_grpc.PlacementServiceStub(ch).Solve.future(  # type: ignore[no-untyped-call]  # protoc writes no types
                    pb.SolveRequest(kubernetes_objects=body, options=pb.SolveOptions(
                        time_limit_seconds=time_limit,
                        pdb_policy=pb.PDB_POLICY_SOFT if soft else pb.PDB_POLICY_STRICT)),
                    timeout=time_limit * 5)
                while run.metrics.in_flight._value.get() < 1 and not call.done():
                    time.sleep(0.002)
                time.sleep(after)
                done = call.done()
                start = time.perf_counter()
                call.cancel()
                while run.metrics.in_flight._value.get() > 0:
                    time.sleep(0.002)
                freed = time.perf_counter() - start
            yield Cancelled(case=case, after=after, freed=round(freed, 3),
                            phase="done" if done else phases.last or "reading")
    finally:
        run.stop(5)
        log.removeHandler(phases)
        log.setLevel(level)


def table(rows: Sequence[Cancelled]) -> str:
    lines = [f"{'case':<24}{'cancelled after s':>18}{'slot free after s':>18}  phase"]
    lines += [f"{r.case:<24}{r.after:>18.1f}{r.freed:>18.3f}  {r.phase}" for r in rows]
    if rows:
        lines.append(f"worst: {max(r.freed for r in rows):.3f} s")
    return "\n".join(lines)
