"""The run-time cost charge: the per-thread budget, the plan's stop (``stopping.watching``) and
deadline (``within``), and celpy's evaluator charging cel-go's cost units as it goes."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import celpy

from solver.cel.checker import Tree, child_tree
from solver.cel.cost import LIST_CREATE, MAP_CREATE, REGEX, TRAVERSAL, by_factor
from solver.cel.errors import CelInterrupted
from solver.cel.library import FUNCTIONS
from solver.cel.values import Quantity, Semver
from solver.core import stopping

# resource.k8s.io/v1 CELSelectorExpressionMaxCost (k8s.io/api/resource/v1/types.go): the limit
# of a selector's estimated cost (estimate_cost, at compile time) and of the cost of one
# evaluation, which kube-scheduler also applies at run time. The run-time charge (_charge,
# _CostedEvaluator) is in the same cel-go units, after cel-go's CostTracker: since the estimate
# bounds it, a selector that compiles does not run out on a device within the declared bounds,
# and the budget only stops a runaway evaluation; past it the evaluation aborts with a runtime
# error (upstream aborts the allocation).
MAX_COST = 1_000_000
_BUDGET = threading.local()


class OverBudget(Exception):
    pass


class PastDeadline(Exception):
    """The deadline of ``within`` passed during an evaluation (``selects`` names the selector)."""


class Clock:
    """The deadline of this thread's evaluations (``within``), and the time each selector took."""

    def __init__(self, at: float, limit: float) -> None:
        self.at, self.limit = at, limit  # time.perf_counter() value; the time limit it ends, in seconds
        self.spent: dict[str, tuple[float, int]] = {}  # expression -> (seconds, evaluations)

    def add(self, expr: str, seconds: float) -> tuple[float, int]:
        before = self.spent.get(expr, (0.0, 0))
        now = self.spent[expr] = (before[0] + seconds, before[1] + 1)
        return now


def within(at: float, limit: float) -> Any:
    """A context in which this thread's evaluations stop (``PastDeadline``, which ``selects``
    raises as CelTimeLimitError) once ``time.perf_counter()`` reaches ``at``: the plan's
    deadline, ``limit`` seconds after its start."""
    import contextlib

    @contextlib.contextmanager
    def scope() -> Any:
        before = getattr(_BUDGET, "clock", None)
        _BUDGET.clock = Clock(at, limit)
        try:
            yield
        finally:
            _BUDGET.clock = before
    return scope()


def clock() -> Clock | None:
    """The deadline this thread's evaluations run under, if any."""
    found: Clock | None = getattr(_BUDGET, "clock", None)
    return found


def _charge(amount: int) -> None:
    left = getattr(_BUDGET, "left", None)
    if left is None:
        return
    ticks = _BUDGET.ticks + 1
    _BUDGET.ticks = ticks
    if not ticks & 1023 or amount > 1023:  # about every thousand steps: has the caller gone, or the time?
        if stopping.stopped():  # the plan's stop (``stopping.watching``)
            raise CelInterrupted()
        limit = getattr(_BUDGET, "clock", None)
        if limit is not None and time.perf_counter() >= limit.at:
            raise PastDeadline()
    left -= amount
    _BUDGET.left = left
    if left < 0:
        raise OverBudget()


# ---- run-time charge --------------------------------------------------------------------
# cel-go's CostTracker (interpreter/runtimecost.go: Observe, costCall) with Kubernetes'
# CallCost (k8s.io/apiserver pkg/cel/library/cost.go) first, on the values met: an identifier
# and each field or index selection 1, a constant nothing, a list 10 and a map 30 to create,
# &&, || and ?: nothing of their own, a call or an operator by the rule of its function (string
# work by a tenth of the length, ``in`` a list by its length, the others 1); and 1 for each
# step of a comprehension (a little under the loop condition and step cel-go charges).


def _actual_size(value: Any) -> int:
    """runtimecost.go actualSize: the size() of a string, bytes, list or map, else 1."""
    return len(value) if isinstance(value, (str, bytes, list, tuple, dict)) else 1


def _traversal_cost(value: Any) -> int:
    """library/cost.go traversalCost: a tenth of each string's length (in bytes, rounded down),
    summed over a list's items or a map's keys and values; 1 for anything else."""
    if isinstance(value, str):
        return int(len(value.encode("utf-8", "surrogatepass")) * TRAVERSAL)
    if isinstance(value, bytes):
        return int(len(value) * TRAVERSAL)
    if isinstance(value, (list, tuple)):
        return sum(_traversal_cost(v) for v in value)
    if isinstance(value, dict):
        return sum(_traversal_cost(k) + _traversal_cost(v) for k, v in value.items())
    return 1


def _call_charge(name: str, args: Sequence[Any], result: Any) -> int:
    """The charge of one call (a method's receiver is ``args[0]``): library/cost.go CallCost
    where it has a rule, else runtimecost.go costCall."""
    first = args[0] if args else None
    if name in ("isSorted", "sum", "max", "min", "indexOf", "lastIndexOf"):
        return _traversal_cost(first)
    if name in ("lowerAscii", "upperAscii", "substring", "trim", "quantity", "isQuantity", "semver", "isSemver"):
        return by_factor(_actual_size(first), TRAVERSAL)
    if name in ("replace", "split"):
        return by_factor(_actual_size(first), 2 * TRAVERSAL)
    if name == "join":
        return by_factor(_actual_size(result), 2 * TRAVERSAL)
    if name in ("startsWith", "endsWith") and len(args) > 1:
        return by_factor(_actual_size(args[1]), TRAVERSAL)
    if (name == "string" and isinstance(first, bytes)) or (name == "bytes" and isinstance(first, str)):
        return by_factor(_actual_size(first), TRAVERSAL)
    if name == "matches" and len(args) > 1:
        return by_factor(1 + _actual_size(first), TRAVERSAL) * by_factor(_actual_size(args[1]), REGEX)
    if name == "contains" and len(args) > 1:
        return by_factor(_actual_size(first), TRAVERSAL) * by_factor(_actual_size(args[1]), TRAVERSAL)
    return 1


def _operator_charge(name: str, args: Sequence[Any]) -> int:
    if name in ("_==_", "_!=_"):
        if isinstance(args[0], (Quantity, Semver)):
            return 1  # library/cost.go CallCost "_==_"
        return by_factor(min(_actual_size(args[0]), _actual_size(args[1])), TRAVERSAL)
    text = all(isinstance(a, str) for a in args) or all(isinstance(a, bytes) for a in args)
    if name in ("_<_", "_<=_", "_>_", "_>=_") and text:
        return by_factor(min(_actual_size(args[0]), _actual_size(args[1])), TRAVERSAL)
    if name == "_in_":
        return _actual_size(args[1]) if isinstance(args[1], (list, tuple)) else 1
    if name == "_+_" and text:
        return by_factor(_actual_size(args[0]) + _actual_size(args[1]), TRAVERSAL)
    return 1


def _charged(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def operator(*args: Any) -> Any:
        _charge(_operator_charge(name, args))
        return function(*args)
    return operator


_OPERATORS = ("_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_", "_in_", "_+_", "_-_", "_*_", "_/_", "_%_", "!_", "-_")
COSTED_FUNCTIONS = {**FUNCTIONS, **{
    op: _charged(op, FUNCTIONS.get(op) or celpy.evaluation.base_functions[op]) for op in _OPERATORS}}
_PRIMARY_CHARGE = {"ident": 1, "dot_ident": 1, "list_lit": LIST_CREATE, "map_lit": MAP_CREATE}


class _CostedEvaluator(celpy.evaluation.Evaluator):
    """celpy's evaluator, charging ``_BUDGET`` as above: primaries and selections here, calls
    in function_eval / method_eval, operators in COSTED_FUNCTIONS."""

    step = False  # evaluates a comprehension's body: each evaluation is a step

    def _visit_tree(self, tree: Tree) -> Any:
        data = tree.data
        if data == "primary":
            _charge(_PRIMARY_CHARGE.get(child_tree(tree.children[0]).data, 0))
        elif data in ("member_dot", "member_index"):
            _charge(1)
        return super()._visit_tree(tree)

    def evaluate(self, context: Any = None) -> Any:
        if self.step:
            _charge(1)
        return super().evaluate(context)

    def sub_evaluator(self, ast: Tree) -> Any:
        nested = _CostedEvaluator(ast, activation=self.activation)
        nested.step = True
        return nested

    def function_eval(self, name_token: Any, exprlist: Any = None) -> Any:
        result = super().function_eval(name_token, exprlist)
        _charge(_call_charge(str(name_token), exprlist if isinstance(exprlist, list) else [], result))
        return result

    def method_eval(self, object: Any, method_ident: Any, exprlist: Any = None) -> Any:
        result = super().method_eval(object, method_ident, exprlist)
        _charge(_call_charge(str(method_ident), [object, *(exprlist if isinstance(exprlist, list) else [])], result))
        return result


class CostedRunner(celpy.InterpretedRunner):
    def evaluate(self, context: Any, limit: int = MAX_COST) -> Any:
        # the step count runs on across evaluations: many short ones are checked as one long one
        _BUDGET.left, _BUDGET.ticks = limit, getattr(_BUDGET, "ticks", 0)
        try:
            return _CostedEvaluator(ast=self.ast, activation=self.new_activation()).evaluate(context)
        finally:
            _BUDGET.left = None
