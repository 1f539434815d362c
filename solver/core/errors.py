"""Errors of the pure core, by what the caller should do about them.

    SolverError
     ├── InputError             bad input: fix it, never retry it as it is       Kind.INPUT
     │    └── SnapshotInvalidError   names the object and the field
     ├── LimitError             over a configured limit: a smaller input or a    Kind.LIMIT
     │    └── ModelTooLargeError      larger limit
     ├── UnavailableError       the service is down or busy: retry later         Kind.UNAVAILABLE
     ├── StoppedError           cancelled or past its deadline: nothing to say   Kind.STOPPED
     ├── SetupError             this machine lacks something (a binary, an       Kind.SETUP
     │                          extra): fix the setup
     └── BugError               a bug, e.g. a plan the verifier refused: report  Kind.BUG
                                it, never retry it

Each error elsewhere derives from one of these (a CEL selector that does not compile is an
``InputError``, a plan failing the verifier a ``BugError``), or names its ``kind`` itself: a
class with no kind fails when it is defined. The edges map kinds, never classes, in one table
each: gRPC status codes in ``solver.service.status.CODES``, exit codes in ``solver.cli.EXIT``.
``InputError`` carries ``obj`` (``Kind/namespace/name``, "" when it is the request as a
whole) and ``field``: the gRPC service sends them as a ``google.rpc.BadRequest`` and the
adapter leaves that object out by them. Callers branch on the kind, the class and the fields,
never on the message.
"""

from __future__ import annotations

import enum
import re
from typing import Any, ClassVar

MAX_MESSAGE = 1024  # bytes of UTF-8: any message, however large the value it quotes
# what would break a message's one line: C0 controls, DEL, NEL and the Unicode line separators
_BREAKS = re.compile("[\x00-\x1f\x7f\x85\u2028\u2029]")


def one_line(text: str) -> str:
    """``text`` with every control character written as its escape (a name holding a newline
    reads ``a\\nb``): a message is one line however its values were spelt."""
    if not _BREAKS.search(text):
        return text
    return _BREAKS.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` bytes of UTF-8, saying how much was left out."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text
    keep = data[:max(0, limit - 40)].decode("utf-8", "ignore")
    return f"{keep}... ({len(data) - len(keep.encode('utf-8', 'surrogatepass'))} more bytes)"


class Kind(enum.Enum):
    """What the caller should do about an error: the one thing the edges read."""

    INPUT = "input"  # fix the input; retrying it as it is gives the same answer
    NOT_FOUND = "not found"  # the input names something the snapshot does not hold
    LIMIT = "limit"  # valid, but over a configured limit: a smaller input or a larger limit
    BUSY = "busy"  # the service has no room now: retry later
    UNAVAILABLE = "unavailable"  # the service could not be reached: retry later
    STOPPED = "stopped"  # cancelled before an answer
    DEADLINE = "deadline"  # its deadline passed before an answer
    SETUP = "setup"  # this machine lacks something the command needs
    BUG = "bug"  # report it; never retried


class SolverError(Exception):
    """Base of every error raised by ``solver``. Its message is at most ``MAX_MESSAGE`` bytes:
    a value quoted in it is cut, never sent or printed whole (a gRPC status travels in a
    trailer a few KiB long; a terminal line should stay readable). ``kind`` says what the
    caller should do; a subclass with none (inherited or its own) is refused when defined."""

    kind: ClassVar[Kind]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not isinstance(getattr(cls, "kind", None), Kind):
            raise TypeError(f"{cls.__module__}.{cls.__qualname__}: an error class must have a kind "
                            "(derive from a branch of solver.core.errors or set kind)")

    def __init__(self, *args: object) -> None:
        if args and isinstance(args[0], str):
            args = (clip(one_line(args[0]), MAX_MESSAGE), *args[1:])
        super().__init__(*args)


class InputError(SolverError):
    """Bad input. ``obj`` is the object at fault (``Kind/namespace/name``, or "" for the
    request or file as a whole), ``field`` the path inside it ("" when the whole of it)."""

    kind = Kind.INPUT
    obj: str = ""
    field: str = ""


class LimitError(SolverError):
    """The input is valid but over a configured limit."""

    kind = Kind.LIMIT


class UnavailableError(SolverError):
    """The service could not be reached, or had no room for the call: retry later."""

    kind = Kind.UNAVAILABLE


class StoppedError(SolverError):
    """The call was cancelled or its deadline passed before an answer."""

    kind = Kind.STOPPED


class SetupError(SolverError):
    """This machine lacks what the command needs: a binary to build, an extra to install."""

    kind = Kind.SETUP


class BugError(SolverError):
    """An internal error: a bug to report, never an input's fault, never retried."""

    kind = Kind.BUG


class SnapshotInvalidError(InputError):
    """An input object is malformed.

    ``obj`` is ``Kind/namespace/name`` (or ``Kind/name`` for cluster-scoped
    objects), ``field`` the JSON path inside it, ``reason`` what is wrong.
    """

    def __init__(self, obj: str, field: str, reason: str) -> None:
        # each part bounded, so the field is always named however long the value quoted
        self.obj = clip(one_line(obj), 256)
        self.field = clip(one_line(field), 256)
        self.reason = clip(one_line(reason), MAX_MESSAGE - 2 * 256 - 4)
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
