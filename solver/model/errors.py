"""Errors of the pure core.

    SolverError
     ├── SnapshotInvalidError   bad input: names the object and the field
     └── ModelTooLargeError     the model would exceed a configured size limit

Callers branch on the fields, never on the message.
"""

from __future__ import annotations


class SolverError(Exception):
    """Base of every error raised by ``solver``."""


class SnapshotInvalidError(SolverError):
    """An input object is malformed.

    ``obj`` is ``Kind/namespace/name`` (or ``Kind/name`` for cluster-scoped
    objects), ``field`` the JSON path inside it, ``reason`` what is wrong.
    """

    def __init__(self, obj: str, field: str, reason: str) -> None:
        self.obj = obj
        self.field = field
        self.reason = reason
        super().__init__(f"{self.where}: {reason}")

    @property
    def where(self) -> str:
        return self.place(self.obj, self.field)

    @staticmethod
    def place(obj: str, field: str) -> str:
        """``obj: field``, or ``obj`` alone when the whole object (or document) is wrong."""
        return f"{obj}: {field}" if field else obj


class ModelTooLargeError(SolverError):
    """The model would have more variables than the configured limit."""

    def __init__(self, variables: int, limit: int) -> None:
        self.variables = variables
        self.limit = limit
        super().__init__(f"model would have {variables} variables, limit is {limit}")
