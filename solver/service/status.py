"""Errors over gRPC: the error tree of ``solver.core.errors`` as status codes with
``google.rpc`` details, and back.

The server answers each kind of error (``solver.core.errors.Kind``) with one code, the table
``CODES``, and a bad input also with the object and field at fault, as a ``google.rpc.Status``
in the ``grpc-status-details-bin`` trailer (AIP-193):

    Kind.INPUT             INVALID_ARGUMENT + ResourceInfo (the object: Kind, namespace/name)
    Kind.NOT_FOUND         NOT_FOUND          and BadRequest (its field, and what is wrong)
    Kind.LIMIT             RESOURCE_EXHAUSTED + ErrorInfo (reason, e.g. MODEL_TOO_LARGE, MEMORY)
    Kind.BUSY              RESOURCE_EXHAUSTED + ErrorInfo (reason BUSY, or MEMORY)
    Kind.UNAVAILABLE       UNAVAILABLE
    Kind.STOPPED           CANCELLED
    Kind.DEADLINE          DEADLINE_EXCEEDED
    Kind.SETUP             FAILED_PRECONDITION
    Kind.BUG, the rest     INTERNAL

and the client turns a failed call into the matching class again (``from_rpc``), with the
object and field read from the details, never from the message: the adapter leaves that
object out of planning and plans the rest.
"""

from __future__ import annotations

from typing import Any

import grpc
from google.rpc import error_details_pb2, status_pb2  # type: ignore[import-untyped]  # googleapis-common-protos: no types
from grpc_status import rpc_status  # type: ignore[import-untyped]  # grpcio-status: no types

from solver.core.errors import BugError, InputError, Kind, LimitError, SolverError, StoppedError, UnavailableError

DOMAIN = "gangplace.io"
BUSY = "BUSY"  # ErrorInfo.reason of a RESOURCE_EXHAUSTED answered because every slot is taken


CODES: dict[Kind, grpc.StatusCode] = {
    Kind.INPUT: grpc.StatusCode.INVALID_ARGUMENT,
    Kind.NOT_FOUND: grpc.StatusCode.NOT_FOUND,
    Kind.LIMIT: grpc.StatusCode.RESOURCE_EXHAUSTED,
    Kind.BUSY: grpc.StatusCode.RESOURCE_EXHAUSTED,
    Kind.UNAVAILABLE: grpc.StatusCode.UNAVAILABLE,
    Kind.STOPPED: grpc.StatusCode.CANCELLED,
    Kind.DEADLINE: grpc.StatusCode.DEADLINE_EXCEEDED,
    Kind.SETUP: grpc.StatusCode.FAILED_PRECONDITION,
    Kind.BUG: grpc.StatusCode.INTERNAL,
}


def answer(kind: Kind, message: str, *, obj: str = "", field: str = "", reason: str = "",
           description: str = "") -> grpc.Status:
    """The status a ``kind`` of error is answered with (``CODES``), with its details; a busy
    server says ``BUSY`` unless a ``reason`` is given."""
    if kind is Kind.BUSY and not reason:
        reason = BUSY
    return status(CODES[kind], message, obj=obj, field=field, reason=reason, description=description)


def limit_reason(exc: LimitError) -> str:
    """``ModelTooLargeError`` -> ``MODEL_TOO_LARGE``."""
    name = type(exc).__name__.removesuffix("Error")
    return "".join(f"_{c}" if c.isupper() and i else c for i, c in enumerate(name)).upper()


def status(code: grpc.StatusCode, message: str, *, obj: str = "", field: str = "", reason: str = "",
           description: str = "") -> grpc.Status:
    """A status with its details: the object (ResourceInfo) and field (BadRequest) of a bad
    input, or an ErrorInfo ``reason``."""
    st = status_pb2.Status(code=code.value[0], message=message)
    if obj:
        kind, _, name = obj.partition("/")
        st.details.add().Pack(error_details_pb2.ResourceInfo(resource_type=kind, resource_name=name,
                                                             description=description))
    if obj or field:
        st.details.add().Pack(error_details_pb2.BadRequest(field_violations=[
            error_details_pb2.BadRequest.FieldViolation(field=field, description=description)]))
    if reason:
        st.details.add().Pack(error_details_pb2.ErrorInfo(reason=reason, domain=DOMAIN))
    out: grpc.Status = rpc_status.to_status(st)
    return out


class PlacementError(SolverError):
    """A call the service refused: ``code`` and ``details`` as answered, ``obj`` and
    ``field`` from its ``google.rpc`` details ("" when none), ``reason`` its ErrorInfo's."""

    def __init__(self, code: grpc.StatusCode, details: str | None, *, obj: str = "", field: str = "",
                 reason: str = "") -> None:
        self.code = code
        self.details = details or ""
        self.obj, self.field, self.reason = obj, field, reason
        super().__init__(f"{code.name}: {details}")

    kind = Kind.BUG  # a code this client does not know


class RemoteInputError(PlacementError, InputError):
    """INVALID_ARGUMENT or NOT_FOUND: the input is at fault (``obj`` and ``field`` say where)."""

    kind = Kind.INPUT


class RemoteLimitError(PlacementError, LimitError):
    """RESOURCE_EXHAUSTED over a configured limit: a smaller input or a larger limit."""

    kind = Kind.LIMIT


class RemoteUnavailableError(PlacementError, UnavailableError):
    """UNAVAILABLE, or RESOURCE_EXHAUSTED because the server is busy: retry later."""

    kind = Kind.UNAVAILABLE


class RemoteStoppedError(PlacementError, StoppedError):
    """DEADLINE_EXCEEDED or CANCELLED."""

    kind = Kind.STOPPED


class RemoteBugError(PlacementError, BugError):
    """INTERNAL: a bug on the server (a plan that failed its verifier, or an exception)."""

    kind = Kind.BUG


def from_rpc(exc: grpc.RpcError) -> PlacementError:
    """The failed call as the class of the error tree its code and details name."""
    call: Any = exc  # a failed call is a grpc.Call too
    code: grpc.StatusCode = call.code()
    details: str | None = call.details()
    obj = field = reason = ""
    try:
        st = rpc_status.from_call(call)
    except ValueError:  # details that disagree with the code or message: read none of them
        st = None
    for any_ in st.details if st is not None else ():
        obj, field, reason = _detail(any_, obj, field, reason)
    cls: type[PlacementError] = PlacementError
    if code in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND):
        cls = RemoteInputError
    elif code == grpc.StatusCode.RESOURCE_EXHAUSTED:
        cls = RemoteLimitError if reason and reason != BUSY else RemoteUnavailableError
    elif code == grpc.StatusCode.UNAVAILABLE:
        cls = RemoteUnavailableError
    elif code in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED):
        cls = RemoteStoppedError
    elif code == grpc.StatusCode.INTERNAL:
        cls = RemoteBugError
    return cls(code, details, obj=obj, field=field, reason=reason)


def _detail(any_: Any, obj: str, field: str, reason: str) -> tuple[str, str, str]:
    resource, bad = error_details_pb2.ResourceInfo(), error_details_pb2.BadRequest()
    info = error_details_pb2.ErrorInfo()
    if any_.Is(resource.DESCRIPTOR) and any_.Unpack(resource):
        obj = f"{resource.resource_type}/{resource.resource_name}" if resource.resource_type else obj
    elif any_.Is(bad.DESCRIPTOR) and any_.Unpack(bad) and bad.field_violations:
        field = bad.field_violations[0].field
    elif any_.Is(info.DESCRIPTOR) and any_.Unpack(info):
        reason = info.reason
    return obj, field, reason
