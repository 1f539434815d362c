"""Errors of the pure core, by what the caller should do about them.

    SolverError
     ├── InputError             bad input: fix it, never retry it as it is (INVALID_ARGUMENT)
     │    └── SnapshotInvalidError   names the object and the field
     ├── LimitError             over a configured limit: a smaller input or a larger limit
     │    └── ModelTooLargeError      (RESOURCE_EXHAUSTED)
     ├── UnavailableError       the service is down or busy: retry later (UNAVAILABLE)
     ├── StoppedError           cancelled or past its deadline: nothing to answer
     └── BugError               a bug, e.g. a plan the verifier refused: report it, never
                                retry it (INTERNAL)

Each error elsewhere derives from one of these (a CEL selector that does not compile is an
``InputError``, a plan failing the verifier a ``BugError``). ``InputError`` carries ``obj``
(``Kind/namespace/name``, "" when it is the request as a whole) and ``field``: the gRPC
service sends them as a ``google.rpc.BadRequest`` and the adapter leaves that object out by
them. Callers branch on the class and the fields, never on the message.
"""

from __future__ import annotations

MAX_MESSAGE = 1024  # bytes of UTF-8: any message, however large the value it quotes


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` bytes of UTF-8, saying how much was left out."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text
    keep = data[:max(0, limit - 40)].decode("utf-8", "ignore")
    return f"{keep}... ({len(data) - len(keep.encode('utf-8', 'surrogatepass'))} more bytes)"


class SolverError(Exception):
    """Base of every error raised by ``solver``. Its message is at most ``MAX_MESSAGE`` bytes:
    a value quoted in it is cut, never sent or printed whole (a gRPC status travels in a
    trailer a few KiB long; a terminal line should stay readable)."""

    def __init__(self, *args: object) -> None:
        if args and isinstance(args[0], str):
            args = (clip(args[0], MAX_MESSAGE), *args[1:])
        super().__init__(*args)


class InputError(SolverError):
    """Bad input. ``obj`` is the object at fault (``Kind/namespace/name``, or "" for the
    request or file as a whole), ``field`` the path inside it ("" when the whole of it)."""

    obj: str = ""
    field: str = ""


class LimitError(SolverError):
    """The input is valid but over a configured limit."""


class UnavailableError(SolverError):
    """The service could not be reached, or had no room for the call: retry later."""


class StoppedError(SolverError):
    """The call was cancelled or its deadline passed before an answer."""


class BugError(SolverError):
    """An internal error: a bug to report, never an input's fault, never retried."""


class SnapshotInvalidError(InputError):
    """An input object is malformed.

    ``obj`` is ``Kind/namespace/name`` (or ``Kind/name`` for cluster-scoped
    objects), ``field`` the JSON path inside it, ``reason`` what is wrong.
    """

    def __init__(self, obj: str, field: str, reason: str) -> None:
        # each part bounded, so the field is always named however long the value quoted
        self.obj = clip(obj, 256)
        self.field = clip(field, 256)
        self.reason = clip(reason, MAX_MESSAGE - 2 * 256 - 4)
        super().__init__(f"{self.where}: {self.reason}")

    @property
    def where(self) -> str:
        return self.place(self.obj, self.field)

    @staticmethod
    def place(obj: str, field: str) -> str:
        """``obj: field``, or ``obj`` alone when the whole object (or document) is wrong."""
        return f"{obj}: {field}" if field else obj


class ModelTooLargeError(LimitError):
    """The model would have more variables than the configured limit."""

    def __init__(self, variables: int, limit: int) -> None:
        self.variables = variables
        self.limit = limit
        super().__init__(f"model would have {variables} variables, limit is {limit}")
