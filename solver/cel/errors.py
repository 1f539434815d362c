"""The errors of CEL selectors: one that does not compile, fails to run, or is stopped."""

from __future__ import annotations

from solver.core.errors import InputError, LimitError, StoppedError


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


class CelTimeLimitError(LimitError):
    """The plan's time limit passed while a selector was evaluated: the problem cannot be built
    in time, so no plan is made (never one from a half-evaluated selector). ``expression`` is
    the selector then running, ``device`` the device it ran on, ``seconds`` how long that
    selector had taken in this plan over ``evaluations`` devices, ``total`` every selector's
    time in this plan, ``limit`` the time limit. Over gRPC: RESOURCE_EXHAUSTED, reason
    CEL_TIME_LIMIT."""

    def __init__(self, expression: str, device: str, seconds: float, evaluations: int, total: float,
                 limit: float) -> None:
        self.expression, self.device, self.seconds, self.evaluations = expression, device, seconds, evaluations
        self.total, self.limit = total, limit
        shown = expression if len(expression) <= 200 else expression[:200] + "..."
        super().__init__(
            f"the plan cannot be made within its time limit of {limit:g} s: CEL selectors took too long. "
            f"Selector {shown!r} was evaluating on device {device} when the limit passed, after "
            f"{seconds:.2f} s on {evaluations} device{'s' if evaluations != 1 else ''} "
            f"({total:.2f} s evaluating CEL selectors in all); raise the time limit or simplify the selector")
