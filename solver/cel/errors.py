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
    """The plan's time limit passed while a selector was compiled or evaluated: the problem
    cannot be built in time, so no plan is made (never one from a half-evaluated selector).
    ``expression`` is the selector then running, ``limit`` the time limit. Over gRPC:
    RESOURCE_EXHAUSTED, reason CEL_TIME_LIMIT."""

    device, seconds, evaluations, total = "", 0.0, 0, 0.0  # of an evaluation (``evaluating``)

    def __init__(self, expression: str, limit: float, what: str) -> None:
        self.expression, self.limit = expression, limit
        super().__init__(f"the plan cannot be made within its time limit of {limit:g} s: CEL selectors took "
                         f"too long. {what}")

    @staticmethod
    def shown(expression: str) -> str:
        return repr(expression if len(expression) <= 200 else expression[:200] + "...")

    @classmethod
    def evaluating(cls, expression: str, device: str, seconds: float, evaluations: int, total: float,
                   limit: float) -> CelTimeLimitError:
        """``device`` the device it ran on, ``seconds`` how long that selector had taken in this
        plan over ``evaluations`` devices, ``total`` every selector's time in this plan."""
        exc = cls(expression, limit,
                  f"Selector {cls.shown(expression)} was evaluating on device {device} when the limit passed, "
                  f"after {seconds:.2f} s on {evaluations} device{'s' if evaluations != 1 else ''} "
                  f"({total:.2f} s evaluating CEL selectors in all); raise the time limit or simplify the selector")
        exc.device, exc.seconds, exc.evaluations, exc.total = device, seconds, evaluations, total
        return exc

    @classmethod
    def compiling(cls, expression: str, estimate: float, left: float, limit: float,
                  where: str = "") -> CelTimeLimitError:
        """Compiling ``expression`` would take about ``estimate`` seconds with ``left`` seconds
        of the limit left (a compile cannot be cut short, so it is not started); ``where``
        names the object and field it was read from."""
        return cls(expression, limit,
                   f"Selector {cls.shown(expression)}{f' ({where})' if where else ''}, {len(expression)} "
                   f"characters, was not compiled: that takes up to {estimate:.2f} s and "
                   f"{max(left, 0):.2f} s of the limit were left; raise the time limit or shorten the selectors")
