"""``gangplace serve``: the gangplace.v1 PlacementService over gRPC.

- Solve / SolveStream run ``solver.api.plan`` (the one pipeline) on the request's cluster;
  Explain runs ``solver.api.explain`` (plans of the same pipeline) on the request's workload.
- At most ``max_inflight`` solves run at once; another call is answered RESOURCE_EXHAUSTED
  at once instead of waiting in a queue (the thread pool has room for health checks).
- The call's deadline caps the solve: the time limit becomes min(options, deadline − a
  margin for decoding and the reply), so an expiring deadline returns the best plan found,
  status FEASIBLE, not an error. A cancelled call stops its search.
- Errors by their class in the error tree (``solver.service.status``): bad input is
  INVALID_ARGUMENT with the field path (``state: pods[3] (Pod/ns/p): spec.priority: ...``) and
  the object and field in google.rpc details; a limit RESOURCE_EXHAUSTED; a bug INTERNAL.
- Standard health checking (grpc.health.v1) and server reflection (v1 and v1alpha), on the main
  port and on the plaintext health port; graceful shutdown flips health to NOT_SERVING, refuses
  new calls and lets in-flight solves finish, logging its start and its end.
- Every listener refuses a port already bound (no SO_REUSEPORT unless asked): ``ListenError``
  names the listener and the operating system's reason.
- Prometheus metrics on an HTTP port: the standard grpc_server_* metrics (``solver.service.observe``),
  solve latency histogram, plans by plan status, in-flight gauge, process and build info. Logs
  are JSON lines: one per RPC (``solver.service.observe``), and the solves' with the request id.
"""

from __future__ import annotations

import dataclasses
import hmac
import json
import logging
import os
import queue
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from concurrent import futures
from dataclasses import dataclass
from typing import Any, NoReturn

import grpc
from grpc_health.v1 import (  # type: ignore[import-untyped]  # no py.typed; types-grpcio-health-checking not a dependency
    health,
    health_pb2,
    health_pb2_grpc,
)
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from solver import api, cel
from solver.cel import CelInterrupted
from solver.core import stopping
from solver.core.errors import BugError, InputError, Kind, LimitError, SolverError, StoppedError
from solver.core.features import FeatureGateError, parse_feature_gates
from solver.gen.gangplace.v1 import placement_pb2 as pb
from solver.gen.gangplace.v1 import placement_pb2_grpc as pb_grpc
from solver.kube import loader
from solver.service import convert, memguard, observe, reflection, telemetry
from solver.service import status as rpc_errors

SERVICE = pb.DESCRIPTOR.services_by_name["PlacementService"].full_name
DEFAULT_MAX_MESSAGE = 512 * 1024 * 1024  # a 15,000-node cluster is ~10 MiB as typed state, more as JSON
MARGIN = 0.5  # seconds of the deadline kept for decoding, verifying and replying (a loaded CI run missed 0.25)
LOG = logging.getLogger("gangplace.server")


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerConfig:
    address: str = "127.0.0.1:50051"
    max_inflight: int = 2
    default_time_limit: float = 10.0
    max_message_bytes: int = DEFAULT_MAX_MESSAGE
    metrics_address: str | None = None  # "host:port" for Prometheus; None: no metrics endpoint
    # TLS: PEM files, read again when they change (a rotated certificate is used by the next
    # connection); with tls_client_ca every client must present a certificate it signed (mTLS)
    tls_cert: str | None = None
    tls_key: str | None = None
    tls_client_ca: str | None = None
    token_file: str | None = None  # a bearer token every PlacementService call must carry
    # "host:port" of a second, plaintext listener that serves only grpc.health.v1 (the same
    # statuses): kubelet's native gRPC probe speaks neither TLS nor tokens. None: no listener.
    health_address: str | None = None
    # share a port another process listens on (SO_REUSEPORT, grpc's own default); off: a port in
    # use is an error, never a second server answering half the calls
    reuse_port: bool = False
    # bytes of compiled CEL selectors kept in this process (solver/cel/cache.py); the
    # least recently used leave first. None: leave the process's limit as it is (256 MiB)
    cel_cache_bytes: int | None = None
    # bytes this process may hold before it refuses or stops calls (solver/service/memguard.py); None:
    # a share of the container's memory limit (or the machine's), 0: no guard
    memory_budget: int | None = None


class ListenError(OSError):
    """A listener could not bind: ``option`` is the ServerConfig field of its address
    (``address``, ``metrics_address``, ``health_address``), ``reason`` what the OS said."""

    def __init__(self, option: str, address: str, reason: str) -> None:
        super().__init__(f"cannot listen on {address}: {reason}")
        self.option, self.address, self.reason = option, address, reason


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.latency = Histogram("gangplace_solve_seconds", "End-to-end solve latency", ["method"],
                                 registry=self.registry,
                                 buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120))
        self.in_flight = Gauge("gangplace_solves_in_flight", "Solves running now", registry=self.registry)
        self.plans = Counter("gangplace_plans", "Plans answered, by the plan's status (OPTIMAL, FEASIBLE, ...)",
                             ["status"], registry=self.registry)
        self.memory_refusals = Counter(
            "gangplace_memory_refusals", "Calls answered RESOURCE_EXHAUSTED MEMORY: refused at admission or stopped "
            "while running", ["when"], registry=self.registry)
        self.memory_budget = Gauge("gangplace_memory_budget_bytes", "The memory guard's budget (0: none)",
                                   registry=self.registry)
        self.rpcs = observe.RpcObserver(self.registry)  # grpc_server_*: calls by method and status code
        telemetry.standard_collectors(self.registry)


class PlacementService(pb_grpc.PlacementServiceServicer):
    def __init__(self, config: ServerConfig, metrics: Metrics) -> None:
        self.config = config
        self.metrics = metrics
        self._slots = threading.BoundedSemaphore(config.max_inflight)
        budget = memguard.default_budget() if config.memory_budget is None else config.memory_budget
        self.guard = memguard.Guard(budget)
        metrics.memory_budget.set(budget)

    # ---- the two RPCs ----------------------------------------------------------------
    def Solve(self, request: pb.SolveRequest, context: grpc.ServicerContext) -> pb.SolveResponse:
        self._refuse_malformed("Solve", request, context)
        rid = observe.request_id(request.request_id) or uuid.uuid4().hex[:12]
        with self._admitted("Solve", rid, context):
            plan = self._plan(request, rid, context, on_solution=None)
            return pb.SolveResponse(plan=convert.plan_to_proto(plan), request_id=rid)

    def SolveStream(self, request: pb.SolveRequest, context: grpc.ServicerContext) -> Iterator[pb.SolveEvent]:
        self._refuse_malformed("SolveStream", request, context)
        rid = observe.request_id(request.request_id) or uuid.uuid4().hex[:12]
        events: queue.Queue[pb.SolveEvent | BaseException | None] = queue.Queue()
        start = time.perf_counter()

        def progress(stage: str, tiers: Mapping[str, float], bounds: Mapping[str, float]) -> None:
            first = next(iter(tiers))
            events.put(pb.SolveEvent(progress=pb.Progress(stage=stage, objective=tiers[first], bound=bounds[first],
                                                          tiers=tiers, tier_bounds=bounds,
                                                          seconds=time.perf_counter() - start)))

        with self._admitted("SolveStream", rid, context):
            def run() -> None:
                try:
                    plan = self._plan(request, rid, context, on_solution=progress)
                    events.put(pb.SolveEvent(result=pb.SolveResponse(plan=convert.plan_to_proto(plan),
                                                                      request_id=rid)))
                except BaseException as exc:  # handed to the RPC thread, which reports it
                    events.put(exc)
                events.put(None)

            worker = threading.Thread(target=run, name=f"solve-{rid}", daemon=True)
            worker.start()
            while (event := events.get()) is not None:
                if isinstance(event, BaseException):
                    raise event
                yield event
            worker.join()

    def Explain(self, request: pb.SolveRequest, context: grpc.ServicerContext) -> pb.ExplainResponse:
        self._refuse_malformed("Explain", request, context)
        rid = observe.request_id(request.request_id) or uuid.uuid4().hex[:12]
        if not request.workload:
            _abort(context, Kind.INPUT, "workload: Explain needs the workload to explain (namespace/name)")
        with self._admitted("Explain", rid, context):
            found = self._plan(request, rid, context, on_solution=None,
                               run=lambda snapshot, options: api.explain(snapshot, request.workload, options))
            return convert.explanation_to_proto(found, rid)

    # ---- plumbing --------------------------------------------------------------------
    def _refuse_malformed(self, method: str, request: Any, context: grpc.ServicerContext) -> None:
        """Bytes that are no SolveRequest are bad input, not a server error (grpc's own
        deserializer would answer INTERNAL)."""
        if isinstance(request, _Malformed):
            _abort(context, Kind.INPUT, f"request: not a SolveRequest: {request.reason}")

    def _admitted(self, method: str, rid: str, context: grpc.ServicerContext) -> _Admission:
        return _Admission(self, method, rid, context)

    def _plan(self, request: pb.SolveRequest, rid: str, context: grpc.ServicerContext,
              on_solution: Any, run: Callable[[Any, api.PlanOptions], Any] | None = None) -> Any:
        """``run(snapshot, options)`` on the request (``api.plan``, or Explain's ``api.explain``),
        admitted by the memory guard, stopped when the call ends."""
        stop = threading.Event()
        if not context.add_callback(stop.set):  # cancelled, deadline passed, or server stopping
            stop.set()  # the call ended already
        need = memguard.estimate(request.ByteSize(), typed=request.WhichOneof("cluster") == "state")
        try:
            ticket = self.guard.admit(need, stop.set)
        except memguard.OverBudget as exc:
            self.metrics.memory_refusals.labels("admission").inc()
            LOG.warning(json.dumps({"event": "rejected", "requestId": rid, "reason": "memory",
                                    "needBytes": exc.need, "freeBytes": exc.free}))
            # one that could fit once the running calls end is "busy" (retry later); one that would
            # not fit an idle server is over a limit (a smaller input or a larger budget)
            context.abort_with_status(rpc_errors.answer(Kind.LIMIT if exc.never else Kind.BUSY, str(exc),
                                                        reason=memguard.REASON if exc.never else rpc_errors.BUSY))
            raise AssertionError("unreachable") from exc
        try:
            return self._plan_admitted(request, rid, context, on_solution, stop, ticket, run or api.plan)
        finally:
            self.guard.release(ticket)

    def _over_memory(self, context: grpc.ServicerContext, ticket: memguard.Ticket, where: str) -> None:
        """Answer a call the memory guard stopped (nothing when it did not)."""
        if ticket.stopped_at:
            self.metrics.memory_refusals.labels("running").inc()
            context.abort_with_status(rpc_errors.answer(
                Kind.LIMIT,
                f"stopped while {where}: the server's resident size reached {ticket.stopped_at >> 20} MiB, over its "
                f"{self.guard.budget >> 20} MiB budget, and this was the largest call running",
                reason=memguard.REASON))

    def _plan_admitted(self, request: pb.SolveRequest, rid: str, context: grpc.ServicerContext, on_solution: Any,
                       stop: threading.Event, ticket: memguard.Ticket,
                       run: Callable[[Any, api.PlanOptions], Any]) -> Any:
        start = time.perf_counter()
        o = request.options
        try:
            with stopping.watching(stop):  # a request of many objects: reading stops too
                snapshot = convert.snapshot_from_request(request)
            gates = parse_feature_gates(o.feature_gates)
            policy = convert.pdb_policy(o.pdb_policy)
            expected_pods = convert.expected_from_proto(o.expected_pods)
        except FeatureGateError as exc:
            exc.field = "options.feature_gates"
            _refuse(context, exc, rid, f"options.feature_gates: {exc.reason}")
        except stopping.Stopped as exc:
            _reap(exc)  # what the reading held is freed off this thread: the slot is freed first
            stopped = True
        except Exception as exc:  # bad input, or a bug in reading the request
            _refuse(context, exc, rid)
        else:
            stopped = False
        if stopped or stop.is_set() or not context.is_active():
            self._over_memory(context, ticket, "reading the request")
            _abort(context, Kind.STOPPED, "the call ended while the request was read")
        try:
            options = api.PlanOptions(
                workload=request.workload or None, time_limit=o.time_limit_seconds or self.config.default_time_limit,
                workers=o.workers or 1, seed=o.seed, relative_gap=o.relative_gap, baseline_only=o.baseline_only,
                decompose=not o.no_decompose, pdb_policy=policy, gates=gates,
                dra_preemption=not o.no_dra_preemption, expected=expected_pods, stop=stop, on_solution=on_solution)
        except api.OptionError as exc:
            _refuse(context, exc, rid, f"options.{exc.option}: {exc.reason}")
        if why := loader.nothing_to_plan(snapshot):  # as the CLI: an empty input is no empty plan
            _refuse(context, convert.RequestInvalidError(request.WhichOneof("cluster") or "cluster", why), rid)
        limit = options.time_limit
        remaining = context.time_remaining()
        if remaining is not None and remaining < 1e9:  # no deadline reads as ~9e18 s
            if remaining <= MARGIN:  # no plan could be decoded, verified and sent back in what is left
                read = time.perf_counter() - start
                _abort(context, Kind.DEADLINE,
                       f"the deadline passed while the request was read ({read:.2f} s)" if remaining <= 0 else
                       f"{remaining:.2f} s of the deadline were left after reading the request ({read:.2f} s): "
                       f"less than the {MARGIN} s kept for decoding, verifying and replying")
            limit = max(0.05, min(limit, remaining - MARGIN))
            options = dataclasses.replace(options, time_limit=limit)
        try:
            plan = run(snapshot, options)
        except StoppedError as exc:  # the call ended: every phase stops at its next checkpoint
            remaining = context.time_remaining()
            expired = remaining is not None and remaining <= MARGIN
            where = "evaluating CEL selectors" if isinstance(exc, CelInterrupted) else getattr(exc, "where", "")
            message = f"stopped while {where}" if isinstance(exc, CelInterrupted) else str(exc)
            halted = True
            _reap(exc)  # the plan's problem and model are freed off this thread
        except api.UnknownWorkloadError as exc:
            _refuse(context, exc, rid, f"workload: {exc}")
        except Exception as exc:  # bad input, a limit, or a bug (a plan the verifier refused)
            _refuse(context, exc, rid)
        else:
            halted = False
        if halted:
            LOG.info(json.dumps({"event": "stopped", "requestId": rid, "during": where,
                                 "seconds": round(time.perf_counter() - start, 3),
                                 **({"residentBytes": ticket.stopped_at} if ticket.stopped_at else {})}))
            self._over_memory(context, ticket, where)
            _abort(context, Kind.DEADLINE if expired else Kind.STOPPED, message)
        if isinstance(plan, api.Explanation):
            LOG.info(json.dumps({"event": "explained", "requestId": rid, "workload": plan.workload,
                                 "satisfied": plan.satisfied, "largestMinCount": plan.largest_min_count,
                                 "seconds": round(time.perf_counter() - start, 4)}))
            return plan
        self.metrics.plans.labels(plan.status).inc()
        LOG.info(json.dumps({"event": "solved", "requestId": rid, "nodes": len(snapshot.nodes),
                             "pods": len(snapshot.pods), "status": plan.status,
                             "timeLimit": round(limit, 3), "seconds": round(time.perf_counter() - start, 4)}))
        return plan


_GRAVE: queue.SimpleQueue[BaseException] = queue.SimpleQueue()


def _reap(exc: BaseException) -> None:
    """Hand a stopped plan's exception (its traceback holds every frame's locals: the parsed
    request, the problem, the model) to a thread that drops it, so that freeing millions of
    objects (a second on a 15,000-node request) does not hold the call's slot."""
    _GRAVE.put(exc)
    if not any(t.name == "gangplace-reaper" for t in threading.enumerate()):
        threading.Thread(target=_reaper, name="gangplace-reaper", daemon=True).start()


def _reaper() -> None:
    while True:
        exc: BaseException | None = _GRAVE.get()
        exc = None  # noqa: F841  # the last reference: freed here, on this thread


class _Admission:
    """Admit a solve or answer RESOURCE_EXHAUSTED; time it and count it in flight while it runs."""

    def __init__(self, service: PlacementService, method: str, rid: str, context: grpc.ServicerContext) -> None:
        self.s, self.method, self.rid, self.context = service, method, rid, context
        self.start = 0.0

    def __enter__(self) -> _Admission:
        m = self.s.metrics
        if not self.s._slots.acquire(blocking=False):
            LOG.warning(json.dumps({"event": "rejected", "requestId": self.rid, "reason": "busy"}))
            self.context.abort_with_status(rpc_errors.answer(
                Kind.BUSY, f"{self.s.config.max_inflight} solves in flight; retry later"))
        m.in_flight.inc()
        self.start = time.perf_counter()
        LOG.info(json.dumps({"event": "admitted", "requestId": self.rid, "method": self.method}))
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        m = self.s.metrics
        m.in_flight.dec()
        self.s._slots.release()
        m.latency.labels(self.method).observe(time.perf_counter() - self.start)


def _refuse(context: grpc.ServicerContext, exc: BaseException, rid: str, message: str | None = None) -> NoReturn:
    """Answer ``exc`` by its kind (``solver.service.status.CODES``): bad input with the object and
    field at fault in ``google.rpc`` details, a limit with its reason; a bug, or anything outside
    the error tree, as INTERNAL, logged with the request id (the verifier's refusal included)."""
    if isinstance(exc, RecursionError):
        exc = RequestTooDeepError()
    if isinstance(exc, InputError):
        context.abort_with_status(rpc_errors.answer(exc.kind, message or str(exc), obj=exc.obj, field=exc.field,
                                                    description=str(getattr(exc, "reason", "")) or str(exc)))
    elif isinstance(exc, LimitError):
        context.abort_with_status(rpc_errors.answer(exc.kind, message or str(exc), reason=rpc_errors.limit_reason(exc)))
    elif isinstance(exc, SolverError) and exc.kind is not Kind.BUG:
        context.abort_with_status(rpc_errors.answer(exc.kind, message or str(exc)))
    LOG.error(json.dumps({"event": "internal", "requestId": rid, "error": str(exc) if isinstance(exc, SolverError)
                          else repr(exc)}))
    detail = f"{exc} (request {rid})" if isinstance(exc, BugError) else f"internal error, please report (request {rid})"
    context.abort_with_status(rpc_errors.answer(Kind.BUG, detail))  # raises
    raise AssertionError("unreachable")


class RequestTooDeepError(InputError):
    def __init__(self) -> None:
        super().__init__("request: nested too deeply")


def _abort(context: grpc.ServicerContext, kind: Kind, message: str) -> Any:
    context.abort_with_status(rpc_errors.answer(kind, message))  # raises
    raise AssertionError("unreachable")


@dataclass(slots=True)
class Running:
    server: grpc.Server
    port: int
    health: health.HealthServicer
    metrics: Metrics
    metrics_port: int | None
    health_port: int | None = None
    guard: memguard.Guard | None = None  # the service's memory guard
    _httpd: Any = None
    _health_server: grpc.Server | None = None

    def stop(self, grace: float = 30.0, *, cause: str = "stop") -> None:
        """Refuse new calls, let in-flight solves finish (up to ``grace`` seconds); the health
        listener answers NOT_SERVING throughout and closes last. ``cause`` (a signal's name)
        goes into the two log lines, at the start of the drain and at its end."""
        start = time.perf_counter()
        LOG.info(json.dumps({"event": "draining", "cause": cause, "graceSeconds": grace,
                             "inFlight": int(self.metrics.in_flight._value.get())}))
        self.health.enter_graceful_shutdown()
        self.server.stop(grace).wait()
        LOG.info(json.dumps({"event": "stopped", "cause": cause, "graceSeconds": grace,
                             "seconds": round(time.perf_counter() - start, 3)}))
        if self._health_server is not None:
            self._health_server.stop(0).wait()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()


class _Malformed:
    """What the request deserializer hands on for bytes that do not parse."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


def _parse_request(data: bytes) -> pb.SolveRequest | _Malformed:
    try:
        return pb.SolveRequest.FromString(data)
    except Exception as exc:  # protobuf's DecodeError, or a message nested past its limit
        return _Malformed(f"{type(exc).__name__}: {exc}")


def _register(service: PlacementService, server: grpc.Server) -> None:
    """The generated registration, with a request deserializer that never raises."""
    handlers = {
        "Solve": grpc.unary_unary_rpc_method_handler(
            service.Solve, request_deserializer=_parse_request,
            response_serializer=pb.SolveResponse.SerializeToString),
        "SolveStream": grpc.unary_stream_rpc_method_handler(
            service.SolveStream, request_deserializer=_parse_request,
            response_serializer=pb.SolveEvent.SerializeToString),
        "Explain": grpc.unary_unary_rpc_method_handler(
            service.Explain, request_deserializer=_parse_request,
            response_serializer=pb.ExplainResponse.SerializeToString),
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
    server.add_registered_method_handlers(SERVICE, handlers)


class _Watched:
    """A file's bytes, read again when its modification time or size changes."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._stamp: tuple[float, int] | None = None
        self.data = b""
        self.changed()

    def changed(self) -> bool:
        st = os.stat(self.path)
        stamp = (st.st_mtime, st.st_size)
        if stamp == self._stamp:
            return False
        with open(self.path, "rb") as fh:
            self.data = fh.read()
        self._stamp = stamp
        return True


def _credentials(config: ServerConfig) -> grpc.ServerCredentials:
    files = [_Watched(p) for p in (config.tls_key, config.tls_cert) if p]
    ca = _Watched(config.tls_client_ca) if config.tls_client_ca else None

    def current() -> Any:
        key, cert = (f.data for f in files)
        return grpc.ssl_server_certificate_configuration([(key, cert)], root_certificates=ca.data if ca else None)

    def fetch() -> Any:  # called for each new connection: a new configuration only when a file changed
        try:
            changed = [f.changed() for f in [*files, *([ca] if ca else [])]]
        except OSError as exc:  # mid-rotation: keep serving with what was read before
            LOG.warning(json.dumps({"event": "tls-reload-failed", "error": str(exc)}))
            return None
        if any(changed):
            LOG.info(json.dumps({"event": "tls-reloaded"}))
            return current()
        return None

    return grpc.dynamic_ssl_server_credentials(current(), fetch, require_client_authentication=ca is not None)


class TokenCheck(grpc.ServerInterceptor):
    """Every PlacementService call carries ``authorization: Bearer <token>`` (health checks and
    reflection stay open for probes); the token file is read again when it changes."""

    def __init__(self, path: str) -> None:
        self.token = _Watched(path)

    def intercept_service(self, continuation: Any, details: grpc.HandlerCallDetails) -> Any:
        handler = continuation(details)
        if handler is None or not details.method.startswith(f"/{SERVICE}/"):
            return handler
        try:
            self.token.changed()
        except OSError:
            pass
        want = b"Bearer " + self.token.data.strip()
        got = dict(details.invocation_metadata or ()).get("authorization", "")
        sent = got.encode() if isinstance(got, str) else got  # bytes only under a "-bin" key
        if hmac.compare_digest(sent, want) and self.token.data.strip():
            return handler

        def refuse(request: Any, context: grpc.ServicerContext) -> Any:
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "a valid bearer token is required")

        if handler.response_streaming:
            return grpc.unary_stream_rpc_method_handler(refuse, request_deserializer=handler.request_deserializer)
        return grpc.unary_unary_rpc_method_handler(refuse, request_deserializer=handler.request_deserializer)


def _why_not(address: str) -> str | None:
    """Why ``address`` cannot be listened on, as the operating system says it (grpc's own error
    names no cause): a plain bind of the same address, tried once grpc's failed. None: it can."""
    host, _, port = address.rpartition(":")
    try:
        family, kind, proto, _, where = socket.getaddrinfo(host.strip("[]") or None, int(port),
                                                           type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as grpc binds: TIME_WAIT is no clash
            probe.bind(where)
    except (OSError, ValueError) as exc:
        return _reason(exc)
    return None


def _reason(exc: Exception) -> str:
    """"address already in use", not "[Errno 98] Address already in use"."""
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return reason[:1].lower() + reason[1:]


def _grpc_server(config: ServerConfig, workers: int, prefix: str, interceptors: list[grpc.ServerInterceptor],
                 options: list[tuple[str, Any]]) -> grpc.Server:
    return grpc.server(futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix=prefix),
                       options=[*options, ("grpc.so_reuseport", int(config.reuse_port))], interceptors=interceptors)


def tls(config: ServerConfig, flags: str = "--") -> tuple[grpc.ServerCredentials | None, str]:
    """The credentials ``config`` serves with (None: plaintext) and the error to give if grpc
    refuses them when it binds (``listen``'s ``unusable``). A certificate without its key, or a
    client CA without both, is an OSError naming the options (``flags``: their prefix)."""
    if bool(config.tls_cert) != bool(config.tls_key):
        raise OSError(f"{flags}tls-cert and {flags}tls-key go together")
    if config.tls_client_ca and not config.tls_cert:
        raise OSError(f"{flags}tls-client-ca needs {flags}tls-cert and {flags}tls-key")
    if not config.tls_cert:
        return None, ""
    unusable = f"cannot serve TLS on {config.address} with {config.tls_cert} and {config.tls_key}: " \
               "not a usable PEM certificate and key"
    try:
        return _credentials(config), unusable
    except RuntimeError as exc:  # grpc refuses the credentials when they are not usable PEM
        raise OSError(unusable) from exc


def listen(server: grpc.Server, option: str, address: str, credentials: grpc.ServerCredentials | None = None,
           unusable: str = "") -> int:
    """Bind ``address``; ``unusable`` is the error when the address is free but grpc refused
    (the credentials, which grpc reads only here)."""
    try:
        port = server.add_secure_port(address, credentials) if credentials else server.add_insecure_port(address)
    except RuntimeError:  # "Failed to bind to address ..."
        port = 0
    if port == 0:
        reason = _why_not(address)
        if reason is None and unusable:
            raise OSError(unusable)
        raise ListenError(option, address, reason or "grpc could not listen there")
    return port


def _metrics_http(metrics: Metrics, address: str) -> Any:
    host, _, port = address.rpartition(":")
    try:
        httpd, _ = start_http_server(int(port), addr=host or "0.0.0.0", registry=metrics.registry)
    except (OSError, ValueError) as exc:  # in use, no such host, a port that is no number
        raise ListenError("metrics_address", address, _reason(exc)) from None
    return httpd


def start(config: ServerConfig) -> Running:
    """Bind every listener (a ListenError names the first that cannot), then serve."""
    size = config.max_message_bytes
    creds, unusable = tls(config)
    if config.cel_cache_bytes is not None:
        cel.set_cache_limit(config.cel_cache_bytes)
    metrics = Metrics()
    checks: list[grpc.ServerInterceptor] = [TokenCheck(config.token_file)] if config.token_file else []
    server = _grpc_server(config, config.max_inflight + 8, "grpc", [metrics.rpcs, *checks],
                          [("grpc.max_receive_message_length", size), ("grpc.max_send_message_length", size)])
    service = PlacementService(config, metrics)
    _register(service, server)
    hs = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(hs, server)
    reflection.enable(server, (SERVICE, health.SERVICE_NAME))
    bound: list[Any] = [server]
    try:
        port = listen(server, "address", config.address, creds, unusable)
        health_server = health_port = None
        if config.health_address:
            health_server = _grpc_server(config, 2, "health", [metrics.rpcs], [])
            bound.append(health_server)
            health_pb2_grpc.add_HealthServicer_to_server(hs, health_server)
            reflection.enable(health_server, (health.SERVICE_NAME,))
            health_port = listen(health_server, "health_address", config.health_address)
        httpd = metrics_port = None
        if config.metrics_address:
            httpd = _metrics_http(metrics, config.metrics_address)
            metrics_port = httpd.server_port
    except BaseException:
        for grpc_server in bound:
            grpc_server.stop(0)
        raise
    if health_server is not None:
        health_server.start()
    server.start()
    for name in ("", SERVICE):
        hs.set(name, health_pb2.HealthCheckResponse.SERVING)
    LOG.info(json.dumps({"event": "serving", "port": port, "metricsPort": metrics_port, "healthPort": health_port,
                         "tls": bool(config.tls_cert), "maxInflight": config.max_inflight,
                         "reusePort": config.reuse_port, "memoryBudgetBytes": service.guard.budget}))
    return Running(server=server, port=port, health=hs, metrics=metrics, metrics_port=metrics_port,
                   health_port=health_port, guard=service.guard, _httpd=httpd, _health_server=health_server)
