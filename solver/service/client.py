"""A typed client of the gangplace.v1 PlacementService.

    with PlacementClient("127.0.0.1:50051") as client:
        plan = client.solve(Path("snapshot.yaml").read_bytes(), api.PlanOptions(time_limit=10))
        for event in client.solve_stream(...):   # Progress, then the final Plan
            ...

The options are ``solver.api.PlanOptions``, the in-process pipeline's (those only a process can
hold, ``stop``, ``on_solution``, ``max_variables`` and ``ideal_shortcut``, must keep their
defaults); ``deadline`` is the call's own: seconds for the whole call, None for the time
limit plus ``DEADLINE_SLACK``. Plans come back as ``solver.core.plan.Plan``, the type the in-process pipeline returns,
so ``plan.to_dict()`` is the same JSON either way. gRPC errors surface as
``PlacementError`` with the status code and the server's message: by its class in the error tree
(``solver.service.status``), and with the object and field at fault read from its details.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import TracebackType

import grpc

from solver import api
from solver.core.plan import TIER_NAMES, Plan
from solver.gen.gangplace.v1 import placement_pb2 as pb
from solver.gen.gangplace.v1 import placement_pb2_grpc as pb_grpc
from solver.service import convert
from solver.service.server import DEFAULT_MAX_MESSAGE
from solver.service.status import PlacementError as PlacementError  # re-exported: what every failed call raises
from solver.service.status import from_rpc

DEADLINE_SLACK = 30.0  # seconds past the time limit a call may take when no deadline is given
DEFAULT_OPTIONS = api.PlanOptions()


@dataclass(frozen=True, slots=True)
class Progress:
    """An improving solution (``Progress`` in proto/): the tiers its stage decides and their
    bounds, in the plan's units, by the plan objective's names; ``objective`` and ``bound`` the
    first of them."""

    stage: str
    objective: float
    bound: float
    seconds: float
    tiers: Mapping[str, float] = field(default_factory=dict)
    bounds: Mapping[str, float] = field(default_factory=dict)


class PlacementClient:
    def __init__(self, target: str, *, max_message_bytes: int = DEFAULT_MAX_MESSAGE, tls_ca: str | None = None,
                 tls_cert: str | None = None, tls_key: str | None = None, token: str | None = None) -> None:
        """``tls_ca``: TLS, trusting that CA (PEM file); ``tls_cert`` and ``tls_key``: this
        client's certificate for mutual TLS; ``token``: sent as ``authorization: Bearer``."""
        options = [("grpc.max_receive_message_length", max_message_bytes),
                   ("grpc.max_send_message_length", max_message_bytes)]
        if tls_ca or tls_cert:
            def read(path: str | None) -> bytes | None:
                if path is None:
                    return None
                with open(path, "rb") as fh:
                    return fh.read()

            creds = grpc.ssl_channel_credentials(read(tls_ca), read(tls_key), read(tls_cert))
            self.channel = grpc.secure_channel(target, creds, options=options)
        else:
            self.channel = grpc.insecure_channel(target, options=options)
        self.metadata = [("authorization", f"Bearer {token}")] if token else None
        self.stub = pb_grpc.PlacementServiceStub(self.channel)  # type: ignore[no-untyped-call]  # protoc's plugin writes no types

    def __enter__(self) -> PlacementClient:
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self.channel.close()

    # ---- requests --------------------------------------------------------------------
    @staticmethod
    def request(cluster: bytes | pb.ClusterState, options: api.PlanOptions, request_id: str = "") -> pb.SolveRequest:
        req = pb.SolveRequest(workload=options.workload or "", options=convert.options_to_proto(options),
                              request_id=request_id)
        if isinstance(cluster, bytes):
            req.kubernetes_objects = cluster
        else:
            req.state.CopyFrom(cluster)
        return req

    def solve(self, cluster: bytes | pb.ClusterState, options: api.PlanOptions = DEFAULT_OPTIONS,
              request_id: str = "", *, deadline: float | None = None) -> Plan:
        """``cluster``: Kubernetes objects (a JSON List or YAML documents) as bytes, or typed state."""
        timeout = _timeout(options, deadline)
        try:
            reply = self.stub.Solve(self.request(cluster, options, request_id), timeout=timeout, metadata=self.metadata)
        except grpc.RpcError as exc:
            raise from_rpc(exc) from exc
        return convert.plan_from_proto(reply.plan)

    def explain(self, cluster: bytes | pb.ClusterState, workload: str, options: api.PlanOptions = DEFAULT_OPTIONS,
                request_id: str = "", *, deadline: float | None = None) -> api.Explanation:
        """What it would take to place ``workload`` (``api.explain`` over the wire). Without a
        ``deadline``, room for a dozen plans of the options' time limit: an elastic gang's
        search plans several sizes, two plans each."""
        request = self.request(cluster, options, request_id)
        request.workload = workload
        timeout = deadline if deadline is not None else 12 * options.time_limit + DEADLINE_SLACK
        try:
            reply = self.stub.Explain(request, timeout=timeout, metadata=self.metadata)
        except grpc.RpcError as exc:
            raise from_rpc(exc) from exc
        return convert.explanation_from_proto(reply)

    def solve_stream(self, cluster: bytes | pb.ClusterState, options: api.PlanOptions = DEFAULT_OPTIONS,
                     request_id: str = "", *, deadline: float | None = None) -> Iterator[Progress | Plan]:
        timeout = _timeout(options, deadline)
        try:
            for event in self.stub.SolveStream(self.request(cluster, options, request_id), timeout=timeout,
                                               metadata=self.metadata):
                if event.WhichOneof("event") == "progress":
                    pr = event.progress
                    yield Progress(stage=pr.stage, objective=pr.objective, bound=pr.bound, seconds=pr.seconds,
                                   tiers=_in_tier_order(pr.tiers), bounds=_in_tier_order(pr.tier_bounds))
                else:
                    yield convert.plan_from_proto(event.result.plan)
        except grpc.RpcError as exc:
            raise from_rpc(exc) from exc


def _in_tier_order(tiers: Mapping[str, float]) -> dict[str, float]:
    """A proto map, in the tiers' order again (the wire keeps none)."""
    return {name: tiers[name] for name in TIER_NAMES if name in tiers}


def _timeout(options: api.PlanOptions, deadline: float | None) -> float:
    return deadline if deadline is not None else options.time_limit + DEADLINE_SLACK
