"""The errors of CEL selectors: one that does not compile, fails to run, or is stopped."""

from __future__ import annotations

from solver.model.errors import InputError, StoppedError


class CelError(InputError):
    """A CEL selector that does not compile, or (``CelRuntimeError``) fails to evaluate."""

    def __init__(self, expression: str, reason: str) -> None:
        self.expression = expression
        self.reason = reason
        super().__init__(f"CEL expression {expression!r}: {reason}")


class CelRuntimeError(CelError):
    """Evaluation failed or gave a non-bool: upstream aborts the allocation (see module doc)."""


class CelInterrupted(StoppedError):
    """The caller's stop event was set during an evaluation (a cancelled or expired call): no
    result, cached or returned; the plan is abandoned, not answered with a wrong match."""

    def __init__(self) -> None:
        super().__init__("stopped during a CEL evaluation")
