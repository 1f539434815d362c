"""CEL device selectors of DRA (DeviceClass and request ``selectors[].cel.expression``).

Evaluated with cel-python (``celpy``, a maintained pure-Python CEL implementation) in the
environment Kubernetes gives DRA selectors (k8s.io/dynamic-resource-allocation/cel):

- one variable, ``device``: ``driver`` (string), ``attributes`` (domain -> name -> bool,
  int, string or a semver value), ``capacity`` (domain -> name -> quantity) and
  ``allowMultipleAllocations`` (bool). ``device.attributes["unknown.domain"]`` is an empty
  map, as upstream (a default-valued map), while ``"d" in device.attributes`` tests
  presence; a missing *name* (``device.attributes["d"].missing``) is a runtime error.
- the standard CEL library, ``cel.bind(var, init, expr)``, the Kubernetes quantity library
  (``quantity()``, ``isQuantity()``, ``isInteger``, ``asInteger``, ``asApproximateFloat``,
  ``sign``, ``add``, ``sub``, ``isLessThan``, ``isGreaterThan``, ``compareTo``), the
  semver library (``semver(s[, normalize])``, ``isSemver``, ``major``, ``minor``,
  ``patch``, ``isLessThan``, ``isGreaterThan``, ``compareTo``) and the common string and
  list extensions (``lowerAscii``, ``upperAscii``, ``trim``, ``charAt``, ``indexOf``,
  ``lastIndexOf``, ``replace``, ``split``, ``substring``, ``join``, ``isSorted``,
  ``sum``, ``min``, ``max``). Equality is CEL's heterogeneous equality (``"a" == 1`` is
  false at run time when the types are only known then), numeric comparisons cross
  int/uint/double.

Compile time (``compile_expression``, cached per expression text, at most 256 MiB of programs
by default, least recently used out first: ``cache``, ``set_cache_limit``): a parse error, an
unknown function, macro or variable, a wrong number of arguments, an overload that cannot
match the statically known types (``device.driver > 1``, ``quantity(1)``) and a result type
known not to be bool (``device.driver``) raise ``CelError`` naming the problem. As upstream
(``CompileCELExpression``: "must evaluate to bool or the unknown type"), a result of the
unknown type — an attribute value — passes compilation and is checked at run time. A
selector whose estimated worst-case cost is above 1,000,000 (CELSelectorExpressionMaxCost)
is refused too: ``estimate_cost`` follows cel-go's cost estimator with DRA's declared size
bounds, so it gives kube-apiserver's number.

Run time (``selects``): a result that is not a bool, or an evaluation error (a missing
attribute name, a failed ``quantity()`` / ``semver()`` parse, a type mismatch, division by
zero, the run-time cost budget exhausted), raises ``CelRuntimeError`` (a ``CelError``). That is upstream's rule: the
structured allocator (k8s.io/dynamic-resource-allocation/structured, ``selectorsMatch``)
returns ``"class %s: selector #%d: CEL runtime error: %w"`` (resp. ``claim %s: ...``) and
aborts the allocation, and the scheduler's DynamicResources Filter turns that error into
an error status that aborts the scheduling attempt of the pod ("This should only fail if
there is something wrong with the claim or class. Return an error to abort scheduling of
it."). The CEL type docs say the same: "Any other result is an error and causes allocation
of devices to abort." So an erroring selector does *not* mean "device not selected": a
caller must treat the request as one that cannot be allocated. Upstream evaluates the
class's selectors before the request's and stops at the first false one, so a selector
after a false one is never evaluated (``all(selects(e, d) for e in exprs)`` keeps that).

Results are cached per expression and what it can see of a device: the full
``Device.signature()``, or, when the expression only makes literal look-ups
(``device.attributes["d"].name``, ``"d" in device.attributes``), just those values, so GPUs
that differ only in a uuid attribute are evaluated once. Pure: no I/O.

The package, along its seams: ``errors`` (CelError, CelRuntimeError, CelInterrupted),
``values`` (the quantity and semver values), ``library`` (the functions of the environment),
``checker`` (the static checks and the rewrite of ``cel.bind``), ``cost`` (the compile-time
cost estimate), ``cache`` (the compiled selectors, bounded by bytes), ``charge`` (the run-time
budget, the deadline and the charging evaluator), ``program`` (what a compiled selector sees of
a device) and this module: compiling, evaluating and caching, the public face.
"""

from __future__ import annotations

import copy
import time
from decimal import InvalidOperation
from typing import Any, NamedTuple

import celpy
import celpy.celtypes as ct
import lark
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError

from solver.cel.cache import DEFAULT_LIMIT, ERROR_BYTES, ByteLru, program_bytes
from solver.cel.charge import (
    COSTED_FUNCTIONS,
    MAX_COST,
    CostedRunner,
    OverBudget,
    PastDeadline,
    clock,
    within,
)
from solver.cel.checker import BOOL, DYN, Checker, desugar
from solver.cel.cost import estimate_cost
from solver.cel.errors import CelError, CelInterrupted, CelRuntimeError, CelTimeLimitError
from solver.cel.program import Program, device_view, eval_reason, footprint_of, projection
from solver.cel.values import Quantity, Semver, parse_semver, type_name
from solver.core.snapshot import Device

__all__ = [
    "MAX_COST",
    "MAX_EXPRESSION_LENGTH",
    "CacheStats",
    "CelError",
    "CelInterrupted",
    "CelRuntimeError",
    "CelTimeLimitError",
    "Quantity",
    "Semver",
    "cache_stats",
    "check_length",
    "compile_expression",
    "estimate_cost",
    "parse_semver",
    "selects",
    "set_cache_limit",
    "within",
]


# ---- compile and evaluate --------------------------------------------------------------

_ENV = celpy.Environment(runner_class=CostedRunner)
# expression -> its Program, or the CelError it raised; bounded by bytes (cache.py)
_COMPILED: ByteLru[str, Any] = ByteLru(DEFAULT_LIMIT)
_RESULTS: dict[tuple[str, tuple[object, ...]], bool | str] = {}  # a str: the runtime error's reason
_VIEWS: dict[tuple[object, ...], ct.MapType] = {}
_CACHE_LIMIT = 1 << 18  # entries of _RESULTS and _VIEWS; a cache past it starts over


class CacheStats(NamedTuple):
    entries: int
    bytes: int  # the estimated sizes of the programs held (cache.program_bytes)
    limit: int
    evicted: int  # programs dropped to make room, since the process started


def set_cache_limit(limit_bytes: int) -> None:
    """Hold at most ``limit_bytes`` of compiled selectors in this process (``gangplace serve
    --cel-cache-mb``); the least recently used leave first."""
    if limit_bytes < 0:
        raise ValueError(f"a cache limit is a number of bytes >= 0, not {limit_bytes}")
    _COMPILED.resize(limit_bytes)


def cache_stats() -> CacheStats:
    return CacheStats(len(_COMPILED), _COMPILED.bytes, _COMPILED.limit, _COMPILED.evicted)


# A compile cannot be cut short (lark's parser, then the checker), so under a deadline
# (``within``) one is started only when it should end in time: at most this many seconds a
# character, about 1.5 times the slowest shape measured here (a 10 KiB list literal, 40 us a
# character; docs/performance.md, "The deadline").
COMPILE_SECONDS_PER_CHAR = 60e-6


def compile_expression(expr: str, where: str = "") -> object:
    """The compiled program of ``expr`` (cached by text); ``CelError`` when it does not compile;
    under ``within``, ``CelTimeLimitError`` when compiling it might not end before the deadline
    (``where``: the object and field it was read from, for that message)."""
    found = _COMPILED.get(expr)
    if found is None:
        deadline = clock()
        if deadline is not None:
            estimate, left = len(expr) * COMPILE_SECONDS_PER_CHAR, deadline.at - time.perf_counter()
            if estimate > left:
                raise CelTimeLimitError.compiling(expr, estimate, left, deadline.limit, where)
        try:
            found = _compile(expr)
        except CelError as exc:
            found = exc
        size = ERROR_BYTES if not isinstance(found, Program) else program_bytes(found.runner.ast)
        _COMPILED.put(expr, found, size + len(expr))
    if isinstance(found, CelError):
        raise found
    return found


# resource.k8s.io/v1 CELSelectorExpressionMaxLength (k8s.io/api/resource/v1/types.go)
MAX_EXPRESSION_LENGTH = 10 * 1024


def check_length(expr: str) -> None:
    """``CelError`` for an empty selector or one longer than upstream allows: what can be
    checked of a selector without compiling it."""
    if not isinstance(expr, str) or not expr.strip():
        raise CelError(str(expr), "empty expression")
    if len(expr) > MAX_EXPRESSION_LENGTH:
        raise CelError(expr[:40] + "...", f"longer than {MAX_EXPRESSION_LENGTH} characters "
                                          "(resource.k8s.io CELSelectorExpressionMaxLength)")


def _compile(expr: str) -> object:
    check_length(expr)
    try:
        tree = _ENV.compile(expr)
        result = Checker(expr).visit(tree, {})
        if result not in (BOOL, DYN):
            raise CelError(expr, f"must evaluate to bool, not {result}")
        cost = estimate_cost(tree)
        if cost > MAX_COST:
            raise CelError(expr[:40] + ("..." if len(expr) > 40 else ""),
                           f"estimated cost {cost} exceeds the limit {MAX_COST} "
                           "(resource.k8s.io CELSelectorExpressionMaxCost)")
        return Program(_ENV.program(desugar(copy.deepcopy(tree)), functions=COSTED_FUNCTIONS), footprint_of(tree))
    except (CELParseError, lark.exceptions.LarkError) as exc:
        line, column = getattr(exc, "line", None), getattr(exc, "column", None)
        where = f" at line {line}, column {column}" if "\n" in expr else f" at column {column}"
        raise CelError(expr, "syntax error" + (where if column is not None else "")) from None
    except RecursionError:
        raise CelError(expr[:40] + ("..." if len(expr) > 40 else ""), "nested too deeply") from None


def selects(expr: str, device: Device, program: object | None = None) -> bool:
    """Whether the selector ``expr`` is true for ``device``.

    ``CelError`` when it does not compile; ``CelRuntimeError`` when evaluation fails or the
    result is not a bool (upstream aborts the allocation then: see the module docstring).
    ``program``: ``compile_expression(expr)``, held by a caller that evaluates many selectors
    over many devices, so that none is compiled twice however small the cache.
    """
    if program is None:
        program = compile_expression(expr)
    assert isinstance(program, Program)
    key = (expr, device.signature() if program.footprint is None else projection(program.footprint, device))
    found = _RESULTS.get(key)
    if found is None:
        limit = clock()
        start = time.perf_counter()
        try:
            found = _evaluate(program.runner, device, device.signature())
        except PastDeadline:
            assert limit is not None
            seconds, evaluations = limit.add(expr, time.perf_counter() - start)
            total = sum(spent for spent, _ in limit.spent.values())
            raise CelTimeLimitError.evaluating(expr, device.key, seconds, evaluations, total, limit.limit) from None
        if limit is not None:
            limit.add(expr, time.perf_counter() - start)
        if len(_RESULTS) >= _CACHE_LIMIT:
            _RESULTS.clear()
        _RESULTS[key] = found
    if isinstance(found, str):
        raise CelRuntimeError(expr, f"device {device.key}: {found}")
    return found


def _evaluate(program: Any, device: Device, sig: tuple[object, ...]) -> bool | str:
    """The result, or the reason of the runtime error (the same for every device of ``sig``)."""
    try:
        view = _VIEWS.get(sig)
        if view is None:
            view = device_view(device)
            if len(_VIEWS) >= _CACHE_LIMIT:
                _VIEWS.clear()
            _VIEWS[sig] = view
        result = program.evaluate({"device": view}, MAX_COST)  # this module's MAX_COST: the one knob
    except OverBudget:
        return f"cost limit {MAX_COST} exceeded (resource.k8s.io CELSelectorExpressionMaxCost)"
    except RecursionError:
        return "nested too deeply"
    except ValueError as exc:  # a version attribute that is no semver
        return str(exc)
    except (CELEvalError, TypeError, ArithmeticError, LookupError, InvalidOperation) as exc:
        return eval_reason(exc)
    if not isinstance(result, ct.BoolType):
        return f"result of type {type_name(result)} is not bool"
    return bool(result)
