"""A typed client of the gangplace.v1 PlacementService.

    with PlacementClient("127.0.0.1:50051") as client:
        plan = client.solve_objects(Path("snapshot.yaml").read_bytes(), SolveOptions(time_limit=10))
        for event in client.solve_stream(...):   # Progress, then the final Plan
            ...

Plans come back as ``solver.model.plan.Plan``, the type the in-process pipeline returns,
so ``plan.to_dict()`` is the same JSON either way. gRPC errors surface as
``PlacementError`` with the status code and the server's message.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from types import TracebackType

import grpc

from solver import grpc_convert as convert
from solver.gen.gangplace.v1 import placement_pb2 as pb
from solver.gen.gangplace.v1 import placement_pb2_grpc as pb_grpc
from solver.model.errors import SolverError
from solver.model.plan import Plan
from solver.model.problem import DEFAULT_PDB_POLICY, PdbPolicy
from solver.server import DEFAULT_MAX_MESSAGE


@dataclass(frozen=True, slots=True, kw_only=True)
class SolveOptions:
    workload: str = ""
    time_limit: float = 10.0
    workers: int = 1
    seed: int = 0
    relative_gap: float = 0.0
    baseline_only: bool = False
    no_decompose: bool = False
    pdb_policy: PdbPolicy = DEFAULT_PDB_POLICY  # "strict" | "soft" (solver.model.problem)
    no_dra_preemption: bool = False  # a victim's DRA devices stay held (upstream 1.37)
    feature_gates: str = ""  # "PodGroupPreemptionPolicy=true": kube-scheduler's gates; "" is 1.37's defaults
    deadline: float | None = None  # seconds for the whole call; None: time_limit + 30

    def message(self) -> pb.SolveOptions:
        return pb.SolveOptions(time_limit_seconds=self.time_limit, workers=self.workers, seed=self.seed,
                               relative_gap=self.relative_gap, baseline_only=self.baseline_only,
                               no_decompose=self.no_decompose,
                               pdb_policy=convert.pdb_policy_value(self.pdb_policy),
                               feature_gates=self.feature_gates, no_dra_preemption=self.no_dra_preemption)


@dataclass(frozen=True, slots=True)
class Progress:
    stage: str
    objective: float
    bound: float
    seconds: float


class PlacementError(SolverError):
    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        self.code = code
        self.details = details
        super().__init__(f"{code.name}: {details}")


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
        self.stub = pb_grpc.PlacementServiceStub(self.channel)

    def __enter__(self) -> "PlacementClient":
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self.channel.close()

    # ---- requests --------------------------------------------------------------------
    @staticmethod
    def request(cluster: bytes | pb.ClusterState, options: SolveOptions, request_id: str = "") -> pb.SolveRequest:
        req = pb.SolveRequest(workload=options.workload, options=options.message(), request_id=request_id)
        if isinstance(cluster, bytes):
            req.kubernetes_objects = cluster
        else:
            req.state.CopyFrom(cluster)
        return req

    def solve(self, cluster: bytes | pb.ClusterState, options: SolveOptions = SolveOptions(),
              request_id: str = "") -> Plan:
        """``cluster``: Kubernetes objects (a JSON List or YAML documents) as bytes, or typed state."""
        timeout = options.deadline if options.deadline is not None else options.time_limit + 30
        try:
            reply = self.stub.Solve(self.request(cluster, options, request_id), timeout=timeout, metadata=self.metadata)
        except grpc.RpcError as exc:
            raise PlacementError(exc.code(), exc.details()) from exc
        return convert.plan_from_proto(reply.plan)

    def solve_stream(self, cluster: bytes | pb.ClusterState, options: SolveOptions = SolveOptions(),
                     request_id: str = "") -> Iterator[Progress | Plan]:
        timeout = options.deadline if options.deadline is not None else options.time_limit + 30
        try:
            for event in self.stub.SolveStream(self.request(cluster, options, request_id), timeout=timeout,
                                               metadata=self.metadata):
                if event.WhichOneof("event") == "progress":
                    pr = event.progress
                    yield Progress(stage=pr.stage, objective=pr.objective, bound=pr.bound, seconds=pr.seconds)
                else:
                    yield convert.plan_from_proto(event.result.plan)
        except grpc.RpcError as exc:
            raise PlacementError(exc.code(), exc.details()) from exc
