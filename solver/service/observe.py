"""Every RPC a gangplace server answers, observed once: the standard gRPC server metrics as
go-grpc-prometheus names them (``grpc_server_started_total``, ``grpc_server_handled_total``,
``grpc_server_handling_seconds``) and one JSON log line with the method, the status code,
the latency and the peer, for calls that fail as well as those that succeed.

The interceptor wraps the handler the server found, so an unknown method (answered
UNIMPLEMENTED by grpc itself, with no handler) is neither counted nor logged.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

import grpc
from prometheus_client import CollectorRegistry, Counter, Histogram

from solver.core.errors import one_line

LOG = logging.getLogger("gangplace.rpc")
_LABELS = ["grpc_type", "grpc_service", "grpc_method"]
# (request streaming, response streaming) -> grpc_type, as go-grpc-prometheus spells it
_TYPES = {(False, False): "unary", (False, True): "server_stream", (True, False): "client_stream",
          (True, True): "bidi_stream"}
_ERRORS = {grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL, grpc.StatusCode.DATA_LOSS}


def go_code(code: grpc.StatusCode) -> str:
    """A status code as Go's ``codes.Code.String()`` spells it, the ``grpc_code`` label's
    values in go-grpc-prometheus and the dashboards and alerts written for it: OK, Canceled,
    InvalidArgument, NotFound, Unauthenticated, ..."""
    if code is grpc.StatusCode.CANCELLED:
        return "Canceled"
    return "OK" if code is grpc.StatusCode.OK else "".join(w.capitalize() for w in code.name.split("_"))


DEADLINE_SLACK = 0.25  # seconds: a call ended this close to its deadline is DEADLINE_EXCEEDED


def status_of(context: grpc.ServicerContext, failed: bool) -> grpc.StatusCode:
    """The status a call ends with, seen from its handler as it returns or raises: the code it
    aborted with; CANCELLED or DEADLINE_EXCEEDED when the caller went away; else UNKNOWN when the
    handler raised (what grpc answers) and OK when it returned."""
    code: grpc.StatusCode | None = context.code()  # type: ignore[attr-defined]  # grpcio has it since 1.38; types-grpcio lacks it
    if code is not None and code != grpc.StatusCode.OK:
        return code
    if not context.is_active():
        # the caller's deadline ends the call on both sides; the client's timer and its
        # cancellation often arrive before the server's own timer fires (a request still being
        # read, clocks a little apart), so a call ended within DEADLINE_SLACK of its deadline
        # was ended by the deadline, not cancelled
        remaining = context.time_remaining()
        return grpc.StatusCode.DEADLINE_EXCEEDED if remaining is not None and remaining <= DEADLINE_SLACK \
            else grpc.StatusCode.CANCELLED
    return grpc.StatusCode.UNKNOWN if failed else grpc.StatusCode.OK


MAX_REQUEST_ID = 128  # characters of a caller's request_id kept in logs and echoed


def request_id(rid: str) -> str:
    """A caller's request_id as logged and echoed: one line, at most ``MAX_REQUEST_ID``
    characters (a 1 MB id would otherwise be a 1 MB log line)."""
    return one_line(rid[:MAX_REQUEST_ID])


class RpcObserver(grpc.ServerInterceptor):
    """Count, time and log every call to a handler of the server it is installed on; put it
    first among the interceptors so that it sees what the others answer (UNAUTHENTICATED)."""

    def __init__(self, registry: CollectorRegistry,
                 buckets: tuple[float, ...] = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
                 ) -> None:
        self.started = Counter("grpc_server_started", "Total number of RPCs started on the server.", _LABELS,
                               registry=registry)
        self.handled = Counter("grpc_server_handled",
                               "Total number of RPCs completed on the server, regardless of success or failure.",
                               [*_LABELS, "grpc_code"], registry=registry)
        self.seconds = Histogram("grpc_server_handling_seconds",
                                 "Histogram of response latency (seconds) of gRPC that had been application-level "
                                 "handled by the server.", _LABELS, buckets=buckets, registry=registry)

    def intercept_service(self, continuation: Any, details: grpc.HandlerCallDetails) -> Any:
        handler = continuation(details)
        if handler is None:
            return None
        kind = _TYPES[(handler.request_streaming, handler.response_streaming)]
        call = _Observed(self, details.method, kind)
        if kind == "unary":
            return grpc.unary_unary_rpc_method_handler(
                call.returning(handler.unary_unary), handler.request_deserializer, handler.response_serializer)
        if kind == "server_stream":
            return grpc.unary_stream_rpc_method_handler(
                call.streaming(handler.unary_stream), handler.request_deserializer, handler.response_serializer)
        if kind == "client_stream":
            return grpc.stream_unary_rpc_method_handler(
                call.returning(handler.stream_unary), handler.request_deserializer, handler.response_serializer)
        return grpc.stream_stream_rpc_method_handler(
            call.streaming(handler.stream_stream), handler.request_deserializer, handler.response_serializer)


class _Observed:
    """One method's handler, wrapped: started when called, handled when it returns or raises."""

    def __init__(self, observer: RpcObserver, method: str, kind: str) -> None:
        self.o, self.method, self.kind = observer, method, kind
        service, _, name = method.lstrip("/").rpartition("/")
        self.labels = (kind, service, name)

    def returning(self, behaviour: Callable[[Any, grpc.ServicerContext], Any]) -> Callable[..., Any]:
        def observed(request: Any, context: grpc.ServicerContext) -> Any:
            start, failed = self._start(), True
            try:
                reply = behaviour(request, context)
                failed = False
                return reply
            finally:
                self._done(request, context, start, failed)
        return observed

    def streaming(self, behaviour: Callable[[Any, grpc.ServicerContext], Iterator[Any]]
                  ) -> Callable[..., Iterator[Any]]:
        def observed(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
            start, failed = self._start(), True
            try:
                yield from behaviour(request, context)
                failed = False
            finally:  # also when grpc closes the generator: the caller cancelled
                self._done(request, context, start, failed)
        return observed

    def _start(self) -> float:
        self.o.started.labels(*self.labels).inc()
        return time.perf_counter()

    def _done(self, request: Any, context: grpc.ServicerContext, start: float, failed: bool) -> None:
        seconds = time.perf_counter() - start
        code = status_of(context, failed)
        self.o.handled.labels(*self.labels, go_code(code)).inc()
        self.o.seconds.labels(*self.labels).observe(seconds)
        line: dict[str, Any] = {"event": "rpc", "method": self.method, "code": code.name,
                                "latencyMs": round(seconds * 1000, 3), "peer": context.peer()}
        rid = getattr(request, "request_id", "")  # a SolveRequest's, when the caller set one
        if isinstance(rid, str) and rid:
            line["requestId"] = request_id(rid)
        if code != grpc.StatusCode.OK:
            details = context.details()  # type: ignore[attr-defined]  # grpcio has it since 1.38
            if details:
                line["details"] = details if isinstance(details, str) else details.decode(errors="replace")
        LOG.log(logging.ERROR if code in _ERRORS else logging.INFO, json.dumps(line))
