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

Compile time (``compile_expression``, cached per expression text): a parse error, an
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
"""

from __future__ import annotations

import copy
import math
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

import celpy
import celpy.celtypes as ct
import lark
from celpy.evaluation import CELEvalError

from solver.model.errors import SolverError
from solver.model.quantity import parse_quantity
from solver.model.snapshot import Device, Version

__all__ = [
    "CelError",
    "CelRuntimeError",
    "Quantity",
    "Semver",
    "compile_expression",
    "parse_semver",
    "selects",
]


class CelError(SolverError):
    """A CEL selector that does not compile, or (``CelRuntimeError``) fails to evaluate."""

    def __init__(self, expression: str, reason: str) -> None:
        self.expression = expression
        self.reason = reason
        super().__init__(f"CEL expression {expression!r}: {reason}")


class CelRuntimeError(CelError):
    """Evaluation failed or gave a non-bool: upstream aborts the allocation (see module doc)."""


# ---- quantity and semver values -------------------------------------------------------

_INT64 = (-(2**63), 2**63 - 1)


class Quantity:
    """A ``kubernetes.Quantity`` CEL value: an exact decimal."""

    __slots__ = ("value",)

    def __init__(self, value: Decimal) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"Quantity({self.value})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            raise TypeError(f"no such overload: kubernetes.Quantity == {_type_name(other)}")
        return self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)


_SEMVER = re.compile(
    r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
    r"(?:-((?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?"
)


class Semver:
    """A ``kubernetes.Semver`` CEL value (semver.org 2.0.0 precedence; build metadata ignored)."""

    __slots__ = ("major", "minor", "patch", "pre", "text")

    def __init__(self, text: str, major: int, minor: int, patch: int, pre: tuple[str, ...]) -> None:
        self.text, self.major, self.minor, self.patch, self.pre = text, major, minor, patch, pre

    def __repr__(self) -> str:
        return f"Semver({self.text})"

    def _key(self) -> tuple[object, ...]:
        # A release ranks above its pre-releases; numeric identifiers rank below alphanumeric ones.
        pre = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in self.pre)
        return (self.major, self.minor, self.patch, 0 if self.pre else 1, pre)

    def compare(self, other: Semver) -> int:
        a, b = self._key(), other._key()
        return (a > b) - (a < b)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Semver):
            raise TypeError(f"no such overload: kubernetes.Semver == {_type_name(other)}")
        return self.compare(other) == 0

    def __hash__(self) -> int:
        return hash(self._key())


def parse_semver(text: str) -> Semver:
    """A strict semver.org 2.0.0 version; ``ValueError`` otherwise (as blang/semver Parse)."""
    m = _SEMVER.fullmatch(text) if isinstance(text, str) else None
    if m is None:
        raise ValueError(f"not a semantic version: {text!r}")
    pre = tuple(m.group(4).split(".")) if m.group(4) else ()
    return Semver(text, int(m.group(1)), int(m.group(2)), int(m.group(3)), pre)


def _normalize_semver(text: str) -> str:
    """Upstream normalizeAndParse: drop a "v", leading zeros, fill up minor and patch."""
    text = text.removeprefix("v")
    parts = text.split(".", 2)
    for i, p in enumerate(parts):
        if len(p) > 1:
            p = p.lstrip("0")
            if not p or not p[0].isdigit():
                p = "0" + p
            parts[i] = p
    if len(parts) < 3:
        if any(c in parts[-1] for c in "+-"):
            raise ValueError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return ".".join(parts)


# ---- functions of the environment ------------------------------------------------------

_NUMERIC = (ct.IntType, ct.UintType, ct.DoubleType)


def _type_name(value: object) -> str:
    names: Sequence[tuple[type, str]] = (
        (ct.BoolType, "bool"), (ct.IntType, "int"), (ct.UintType, "uint"), (ct.DoubleType, "double"),
        (ct.StringType, "string"), (ct.BytesType, "bytes"), (ct.ListType, "list"), (ct.MapType, "map"),
        (Quantity, "kubernetes.Quantity"), (Semver, "kubernetes.Semver"),
        (ct.TimestampType, "google.protobuf.Timestamp"), (ct.DurationType, "google.protobuf.Duration"),
        (type(None), "null_type"), (ct.NullType, "null_type"), (type, "type"),
    )
    for cls, name in names:
        if isinstance(value, cls):
            return name
    return type(value).__name__


def _is_num(v: object) -> bool:
    return isinstance(v, _NUMERIC) and not isinstance(v, ct.BoolType)


def _num(v: Any) -> int | float:
    return float(v) if isinstance(v, ct.DoubleType) else int(v)


def _category(v: object) -> str:
    if _is_num(v):
        return "number"
    return _type_name(v)


def _equal(a: object, b: object) -> bool:
    """CEL heterogeneous equality; Quantity and Semver only compare with their own kind."""
    if isinstance(a, (Quantity, Semver)) or isinstance(b, (Quantity, Semver)):
        return a == b  # raises TypeError on a mismatch: no such overload
    if _is_num(a) and _is_num(b):
        return _num(a) == _num(b)  # exact across int and double; NaN equals nothing
    if _category(a) != _category(b):
        return False
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        if len(a) != len(b):
            return False
        for k, v in a.items():
            match = [bk for bk in b if _safe_equal(k, bk)]
            if not match or not _equal(v, b[match[0]]):
                return False
        return True
    return bool(a == b)


def _safe_equal(a: object, b: object) -> bool:
    try:
        return _equal(a, b)
    except TypeError:
        return False


def _eq(a: Any, b: Any) -> Any:
    for v in (a, b):
        if isinstance(v, CELEvalError):
            return v
    return ct.BoolType(_equal(a, b))


def _ne(a: Any, b: Any) -> Any:
    for v in (a, b):
        if isinstance(v, CELEvalError):
            return v
    return ct.BoolType(not _equal(a, b))


def _ordering(name: str, op: Callable[[Any, Any], bool]) -> Callable[[Any, Any], Any]:
    def compare(a: Any, b: Any) -> Any:
        for v in (a, b):
            if isinstance(v, CELEvalError):
                return v
        if _is_num(a) and _is_num(b):
            return ct.BoolType(op(_num(a), _num(b)))
        ordered = (ct.StringType, ct.BytesType, ct.BoolType, ct.TimestampType, ct.DurationType)
        if _category(a) == _category(b) and isinstance(a, ordered):
            return ct.BoolType(op(a, b))
        raise TypeError(f"found no matching overload for '{name}' applied to '({_type_name(a)}, {_type_name(b)})'")

    return compare


def _in(item: Any, container: Any) -> Any:
    for v in (item, container):
        if isinstance(v, CELEvalError):
            return v
    if isinstance(container, (list, dict)):
        return ct.BoolType(any(_safe_equal(item, c) for c in container))
    raise TypeError(f"no such overload: in {_type_name(container)}")


def _quantity(text: Any) -> Quantity:
    if not isinstance(text, str):
        raise TypeError("quantity() takes a string")
    return Quantity(parse_quantity(str(text)))  # ValueError -> CEL error


def _is_quantity(text: Any) -> ct.BoolType:
    if not isinstance(text, str):
        raise TypeError("isQuantity() takes a string")
    try:
        parse_quantity(str(text))
    except ValueError:
        return ct.BoolType(False)
    return ct.BoolType(True)


def _semver(text: Any, normalize: Any = False) -> Semver:
    if not isinstance(text, str) or not isinstance(normalize, (bool, ct.BoolType)):
        raise TypeError("semver() takes a string and an optional bool")
    return parse_semver(_normalize_semver(str(text)) if normalize else str(text))


def _is_semver(text: Any, normalize: Any = False) -> ct.BoolType:
    try:
        _semver(text, normalize)
    except ValueError:
        return ct.BoolType(False)
    return ct.BoolType(True)


def _q(v: Any, name: str) -> Quantity:
    if not isinstance(v, Quantity):
        raise TypeError(f"{name}() applies to a kubernetes.Quantity, not {_type_name(v)}")
    return v


def _as_integer(q: Any) -> ct.IntType:
    v = _q(q, "asInteger").value
    if v != v.to_integral_value() or not _INT64[0] <= v <= _INT64[1]:
        raise ValueError("cannot convert value to integer")
    return ct.IntType(int(v))


def _is_integer(q: Any) -> ct.BoolType:
    v = _q(q, "isInteger").value
    return ct.BoolType(v == v.to_integral_value() and _INT64[0] <= v <= _INT64[1])


def _operand(v: Any, name: str) -> Decimal:
    if isinstance(v, Quantity):
        return v.value
    if isinstance(v, ct.IntType) and not isinstance(v, ct.BoolType):
        return Decimal(int(v))
    raise TypeError(f"{name}() takes a kubernetes.Quantity or an int, not {_type_name(v)}")


def _compare(a: Any, b: Any, name: str) -> int:
    if isinstance(a, Quantity) and isinstance(b, Quantity):
        return (a.value > b.value) - (a.value < b.value)
    if isinstance(a, Semver) and isinstance(b, Semver):
        return a.compare(b)
    raise TypeError(f"found no matching overload for {_type_name(a)}.{name}({_type_name(b)})")


def _string(v: Any, name: str) -> str:
    if not isinstance(v, str):
        raise TypeError(f"{name}() applies to a string, not {_type_name(v)}")
    return str(v)


def _index_of(target: Any, item: Any, start: Any = None, *, last: bool = False) -> ct.IntType:
    if isinstance(target, list):
        idx = [i for i, x in enumerate(target) if _safe_equal(x, item)]
        return ct.IntType((idx[-1] if last else idx[0]) if idx else -1)
    s, sub = _string(target, "indexOf"), _string(item, "indexOf")
    if start is None:
        return ct.IntType(s.rfind(sub) if last else s.find(sub))
    if not 0 <= int(start) <= len(s):
        raise IndexError(f"index out of range: {start}")
    return ct.IntType(s.rfind(sub, 0, int(start) + len(sub)) if last else s.find(sub, int(start)))


def _substring(target: Any, start: Any, end: Any = None) -> ct.StringType:
    s = _string(target, "substring")
    stop = len(s) if end is None else int(end)
    if not 0 <= int(start) <= stop <= len(s):
        raise IndexError(f"substring({start}, {end}) out of range")
    return ct.StringType(s[int(start):stop])


def _char_at(target: Any, i: Any) -> ct.StringType:
    s = _string(target, "charAt")
    if not 0 <= int(i) <= len(s):
        raise IndexError(f"index out of range: {i}")
    return ct.StringType(s[int(i):int(i) + 1])


def _replace(target: Any, old: Any, new: Any, n: Any = -1) -> ct.StringType:
    s = _string(target, "replace")
    return ct.StringType(s.replace(_string(old, "replace"), _string(new, "replace"), int(n)))


def _split(target: Any, sep: Any, n: Any = -1) -> ct.ListType:
    s, d, limit = _string(target, "split"), _string(sep, "split"), int(n)
    if limit == 0:
        return ct.ListType([])
    parts = (list(s) if limit < 0 else list(s[: limit - 1]) + ([s[limit - 1:]] if len(s) >= limit else [])) \
        if d == "" else s.split(d, -1 if limit < 0 else limit - 1)
    return ct.ListType([ct.StringType(p) for p in parts])


def _join(target: Any, sep: Any = "") -> ct.StringType:
    if not isinstance(target, list) or not all(isinstance(x, str) for x in target):
        raise TypeError("join() applies to a list of strings")
    return ct.StringType(_string(sep, "join").join(str(x) for x in target))


def _list(target: Any, name: str) -> list[Any]:
    if not isinstance(target, list):
        raise TypeError(f"{name}() applies to a list, not {_type_name(target)}")
    return list(target)


def _is_sorted(target: Any) -> ct.BoolType:
    items = _list(target, "isSorted")
    lt = _ordering("_<_", lambda a, b: a < b)
    return ct.BoolType(all(not lt(items[i + 1], items[i]) for i in range(len(items) - 1)))


def _sum(target: Any) -> Any:
    items = _list(target, "sum")
    if not items:
        return ct.IntType(0)
    total = items[0]
    for x in items[1:]:
        total = total + x
    return total


def _max(target: Any) -> Any:
    items = _list(target, "max")
    if not items:
        raise ValueError("max() of an empty list")
    lt = _ordering("_<_", lambda a, b: a < b)
    best = items[0]
    for x in items[1:]:
        if lt(best, x):
            best = x
    return best


def _dyn(v: Any) -> Any:
    return v


_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "_==_": _eq,
    "_!=_": _ne,
    "_<_": _ordering("_<_", lambda a, b: a < b),
    "_<=_": _ordering("_<=_", lambda a, b: a <= b),
    "_>_": _ordering("_>_", lambda a, b: a > b),
    "_>=_": _ordering("_>=_", lambda a, b: a >= b),
    "_in_": _in,
    "dyn": _dyn,
    "quantity": _quantity,
    "isQuantity": _is_quantity,
    "semver": _semver,
    "isSemver": _is_semver,
    "isInteger": _is_integer,
    "asInteger": _as_integer,
    "asApproximateFloat": lambda q: ct.DoubleType(float(_q(q, "asApproximateFloat").value)),
    "sign": lambda q: ct.IntType((_q(q, "sign").value > 0) - (_q(q, "sign").value < 0)),
    "add": lambda q, o: Quantity(_q(q, "add").value + _operand(o, "add")),
    "sub": lambda q, o: Quantity(_q(q, "sub").value - _operand(o, "sub")),
    "isLessThan": lambda a, b: ct.BoolType(_compare(a, b, "isLessThan") < 0),
    "isGreaterThan": lambda a, b: ct.BoolType(_compare(a, b, "isGreaterThan") > 0),
    "compareTo": lambda a, b: ct.IntType(_compare(a, b, "compareTo")),
    "major": lambda v: ct.IntType(_sv(v, "major").major),
    "minor": lambda v: ct.IntType(_sv(v, "minor").minor),
    "patch": lambda v: ct.IntType(_sv(v, "patch").patch),
    "lowerAscii": lambda s: ct.StringType(re.sub("[A-Z]+", lambda m: m.group(0).lower(), _string(s, "lowerAscii"))),
    "upperAscii": lambda s: ct.StringType(re.sub("[a-z]+", lambda m: m.group(0).upper(), _string(s, "upperAscii"))),
    "trim": lambda s: ct.StringType(_string(s, "trim").strip()),
    "charAt": _char_at,
    "indexOf": _index_of,
    "lastIndexOf": lambda t, i, start=None: _index_of(t, i, start, last=True),
    "replace": _replace,
    "split": _split,
    "substring": _substring,
    "join": _join,
    "isSorted": _is_sorted,
    "sum": _sum,
    "max": _max,
}


def _sv(v: Any, name: str) -> Semver:
    if not isinstance(v, Semver):
        raise TypeError(f"{name}() applies to a kubernetes.Semver, not {_type_name(v)}")
    return v


# ---- static checks ---------------------------------------------------------------------
# Types the checker knows. DYN is the unknown type (an attribute value, a list element).

BOOL, INT, UINT, DOUBLE, STRING, BYTES, NULL = "bool", "int", "uint", "double", "string", "bytes", "null_type"
LIST, MAP, TYPE, TIMESTAMP, DURATION, DYN = "list", "map", "type", "google.protobuf.Timestamp", \
    "google.protobuf.Duration", "dyn"
QUANTITY, SEMVER, DEVICE = "kubernetes.Quantity", "kubernetes.Semver", "kubernetes.DRADevice"
ATTRS, ATTR_DOMAIN = "map(string, map(string, dyn))", "map(string, dyn)"
CAPS, CAP_DOMAIN = "map(string, map(string, kubernetes.Quantity))", "map(string, kubernetes.Quantity)"
ANY = "*"  # an overload parameter that takes every type

_MAPS = {MAP, ATTRS, ATTR_DOMAIN, CAPS, CAP_DOMAIN}
_NUMBERS = {INT, UINT, DOUBLE}
_DEVICE_FIELDS = {"driver": STRING, "attributes": ATTRS, "capacity": CAPS, "allowMultipleAllocations": BOOL}

# name -> overloads (receiver or None for a global call, parameter types, result type)
Overload = tuple[str | None, tuple[str, ...], str]
_SIZED = (STRING, BYTES, LIST, MAP)
_TIME_GETTERS = ("getDate", "getDayOfMonth", "getDayOfWeek", "getDayOfYear", "getFullYear", "getMonth",
                 "getHours", "getMilliseconds", "getMinutes", "getSeconds")
_OVERLOADS: dict[str, list[Overload]] = {
    "size": [(None, (t,), INT) for t in _SIZED] + [(t, (), INT) for t in _SIZED],
    "int": [(None, (ANY,), INT)], "uint": [(None, (ANY,), UINT)], "double": [(None, (ANY,), DOUBLE)],
    "string": [(None, (ANY,), STRING)], "bytes": [(None, (ANY,), BYTES)], "bool": [(None, (ANY,), BOOL)],
    "dyn": [(None, (ANY,), DYN)], "type": [(None, (ANY,), TYPE)],
    "duration": [(None, (STRING,), DURATION)], "timestamp": [(None, (STRING,), TIMESTAMP)],
    "matches": [(None, (STRING, STRING), BOOL), (STRING, (STRING,), BOOL)],
    "contains": [(STRING, (STRING,), BOOL)],
    "startsWith": [(STRING, (STRING,), BOOL)],
    "endsWith": [(STRING, (STRING,), BOOL)],
    "quantity": [(None, (STRING,), QUANTITY)],
    "isQuantity": [(None, (STRING,), BOOL)],
    "semver": [(None, (STRING,), SEMVER), (None, (STRING, BOOL), SEMVER)],
    "isSemver": [(None, (STRING,), BOOL), (None, (STRING, BOOL), BOOL)],
    "isInteger": [(QUANTITY, (), BOOL)],
    "asInteger": [(QUANTITY, (), INT)],
    "asApproximateFloat": [(QUANTITY, (), DOUBLE)],
    "sign": [(QUANTITY, (), INT)],
    "add": [(QUANTITY, (QUANTITY,), QUANTITY), (QUANTITY, (INT,), QUANTITY)],
    "sub": [(QUANTITY, (QUANTITY,), QUANTITY), (QUANTITY, (INT,), QUANTITY)],
    "isLessThan": [(QUANTITY, (QUANTITY,), BOOL), (SEMVER, (SEMVER,), BOOL)],
    "isGreaterThan": [(QUANTITY, (QUANTITY,), BOOL), (SEMVER, (SEMVER,), BOOL)],
    "compareTo": [(QUANTITY, (QUANTITY,), INT), (SEMVER, (SEMVER,), INT)],
    "major": [(SEMVER, (), INT)], "minor": [(SEMVER, (), INT)], "patch": [(SEMVER, (), INT)],
    "lowerAscii": [(STRING, (), STRING)], "upperAscii": [(STRING, (), STRING)], "trim": [(STRING, (), STRING)],
    "charAt": [(STRING, (INT,), STRING)],
    "indexOf": [(STRING, (STRING,), INT), (STRING, (STRING, INT), INT), (LIST, (ANY,), INT)],
    "lastIndexOf": [(STRING, (STRING,), INT), (STRING, (STRING, INT), INT), (LIST, (ANY,), INT)],
    "replace": [(STRING, (STRING, STRING), STRING), (STRING, (STRING, STRING, INT), STRING)],
    "split": [(STRING, (STRING,), LIST), (STRING, (STRING, INT), LIST)],
    "substring": [(STRING, (INT,), STRING), (STRING, (INT, INT), STRING)],
    "join": [(LIST, (), STRING), (LIST, (STRING,), STRING)],
    "isSorted": [(LIST, (), BOOL)], "sum": [(LIST, (), DYN)], "min": [(LIST, (), DYN)], "max": [(LIST, (), DYN)],
    **{g: [(t, (), INT) for t in (TIMESTAMP, DURATION)] + [(TIMESTAMP, (STRING,), INT)] for g in _TIME_GETTERS},
}
_MACROS = {"all": BOOL, "exists": BOOL, "exists_one": BOOL, "map": LIST, "filter": LIST}

_TEMPLATE_ENV = celpy.Environment()
_BIND_TEMPLATE = _TEMPLATE_ENV.compile("[__init].map(__var, __body)[0]")
_MAP3_TEMPLATE = _TEMPLATE_ENV.compile("(__target).filter(__var, __pred).map(__var, __body)")


def _norm(t: str) -> str:
    return MAP if t in _MAPS else t


def _fits(actual: str, wanted: str) -> bool:
    return wanted == ANY or actual == DYN or _norm(actual) == _norm(wanted)


def _single_ident(tree: Any) -> str | None:
    """The name when ``tree`` is nothing but one identifier (``x``), else None."""
    while isinstance(tree, lark.Tree):
        if tree.data == "ident":
            return str(tree.children[0])
        if len(tree.children) != 1:
            return None
        tree = tree.children[0]
    return None


def _args(tree: lark.Tree, at: int) -> list[lark.Tree]:
    if len(tree.children) > at and isinstance(tree.children[at], lark.Tree):
        return list(tree.children[at].children)  # an exprlist
    return []


class _Checker:
    """Type inference just deep enough for upstream's compile-time errors."""

    def __init__(self, expression: str) -> None:
        self.expression = expression

    def fail(self, reason: str) -> CelError:
        return CelError(self.expression, reason)

    def visit(self, tree: Any, scope: dict[str, str]) -> str:
        handler = getattr(self, f"_{tree.data}", None)
        if handler is None:
            raise self.fail(f"unsupported syntax {tree.data!r}")
        result: str = handler(tree, scope)
        return result

    def _pass(self, tree: lark.Tree, scope: dict[str, str]) -> str:
        return self.visit(tree.children[0], scope)

    _member = _primary = _paren_expr = _pass

    def _expr(self, tree: lark.Tree, scope: dict[str, str]) -> str:
        if len(tree.children) == 1:
            return self.visit(tree.children[0], scope)
        cond, yes, no = (self.visit(c, scope) for c in tree.children)
        if cond not in (BOOL, DYN):
            raise self.fail(f"found no matching overload for '_?_:_' applied to '({cond}, ...)'")
        return yes if yes == no else DYN

    def _logical(self, op: str) -> Callable[[lark.Tree, dict[str, str]], str]:
        def visit(tree: lark.Tree, scope: dict[str, str]) -> str:
            if len(tree.children) == 1:
                return self.visit(tree.children[0], scope)
            types = [self.visit(c, scope) for c in tree.children]
            if any(t not in (BOOL, DYN) for t in types):
                raise self.fail(f"found no matching overload for '{op}' applied to '({', '.join(types)})'")
            return BOOL
        return visit

    def _conditionalor(self, tree: lark.Tree, scope: dict[str, str]) -> str:
        return self._logical("_||_")(tree, scope)

    def _conditionaland(self, tree: lark.Tree, scope: dict[str, str]) -> str:
        return self._logical("_&&_")(tree, scope)

    def _relation(self, tree: lark.Tree, scope: dict[str, str]) -> str:
        if len(tree.children) == 1:
            return self.visit(tree.children[0], scope)
        op_tree, right_tree = tree.children
        op = {"relation_lt": "_<_", "relation_le": "_<=_", "relation_gt": "_>_", "relation_ge": "_>=_",
              "relation_eq": "_==_", "relation_ne": "_!=_", "relation_in": "@in"}[op_tree.data]
        left, right = self.visit(op_tree.children[0], scope), self.visit(right_tree, scope)
        bad = False
        if op in ("_==_", "_!=_"):
            bad = DYN not in (left, right) and _norm(left) != _norm(right) and not (
                left in _NUMBERS and right in _NUMBERS)
        elif op == "@in":
            bad = right != DYN and _norm(right) not in (LIST, MAP)
        else:
            ordered = _NUMBERS | {STRING, BYTES, BOOL, TIMESTAMP, DURATION, DYN}
            bad = left not in ordered or right not in ordered or (
                DYN not in (left, right) and left != right and not (left in _NUMBERS and right in _NUMBERS))
        if bad:
            raise self.fail(f"found no matching overload for '{op}' applied to '({left}, {right})'")
        return BOOL

    def _arith(self, tree: lark.Tree, scope: dict[str, str]) -> str:
        if len(tree.children) == 1:
            return self.visit(tree.children[0], scope)
        op_tree, right_tree = tree.children
        op = {"addition_add": "_+_", "addition_sub": "_-_", "multiplication_mul": "_*_",
              "multiplication_div": "_/_", "multiplication_mod": "_%_"}[op_tree.data]
        left, right = self.visit(op_tree.children[0], scope), self.visit(right_tree, scope)
        if DYN in (left, right):
            return DYN
        allowed = {"_+_": _NUMBERS | {STRING, BYTES, LIST, DURATION}, "_-_": _NUMBERS | {DURATION},
                   "_*_": _NUMBERS, "_/_": _NUMBERS, "_%_": {INT, UINT}}[op]
        if TIMESTAMP in (left, right) and op in ("_+_", "_-_"):
            return DYN  # timestamp arithmetic: left to the run time
        if left != right or left not in allowed:
            raise self.fail(f"found no matching overload for '{op}' applied to '({left}, {right})'")
        return left

    _addition = _multiplication = _arith

    def _unary(self, tree: lark.Tree, scope: dict[str, str]) -> str:
        if len(tree.children) == 1:
            return self.visit(tree.children[0], scope)
        op, operand = tree.children[0].data, self.visit(tree.children[1], scope)
        if op == "unary_not" and operand not in (BOOL, DYN):
            raise self.fail(f"found no matching overload for '!_' applied to '({operand})'")
        if op == "unary_neg" and operand not in {INT, DOUBLE, DURATION, DYN}:
            raise self.fail(f"found no matching overload for '-_' applied to '({operand})'")
        return operand

    def _member_dot(self, tree: lark.Tree, scope: dict[str, str]) -> str:
        target, name = self.visit(tree.children[0], scope), str(tree.children[1])
        if target == DEVICE:
            if name not in _DEVICE_FIELDS:
                raise self.fail(f"undefined field '{name}' of device")
            return _DEVICE_FIELDS[name]
        return self._element(target, f"field selection '.{name}'")

    def _member_index(self, tree: lark.Tree, scope: dict[str, str]) -> str:
        target, index = self.visit(tree.children[0], scope), self.visit(tree.children[1], scope)
        if target == LIST:
            if index not in (INT, UINT, DYN):
                raise self.fail(f"found no matching overload for '_[_]' applied to '(list, {index})'")
            return DYN
        if _norm(target) == MAP and target != MAP and index not in (STRING, DYN):
            raise self.fail(f"found no matching overload for '_[_]' applied to '({target}, {index})'")
        return self._element(target, "indexing '_[_]'")

    def _element(self, target: str, what: str) -> str:
        inner = {ATTRS: ATTR_DOMAIN, ATTR_DOMAIN: DYN, CAPS: CAP_DOMAIN, CAP_DOMAIN: QUANTITY, MAP: DYN, DYN: DYN}
        if target not in inner:
            raise self.fail(f"type '{target}' does not support {what}")
        return inner[target]

    def _member_object(self, tree: lark.Tree, scope: dict[str, str]) -> str:
        raise self.fail("message construction is not supported")

    def _member_dot_arg(self, tree: lark.Tree, scope: dict[str, str]) -> str:
        target_tree, name = tree.children[0], str(tree.children[1])
        args = _args(tree, 2)
        receiver = _single_ident(target_tree)
        if receiver is not None and receiver not in scope and receiver != "device":
            if f"{receiver}.{name}" == "cel.bind":
                return self._bind(args, scope)
            raise self.fail(f"unknown function '{receiver}.{name}'")
        if name in _MACROS:
            return self._macro(name, target_tree, args, scope)
        if name not in _OVERLOADS:
            raise self.fail(f"unknown function '{name}'")
        target = self.visit(target_tree, scope)
        return self._call(name, target, [self.visit(a, scope) for a in args])

    def _macro(self, name: str, target_tree: Any, args: list[Any], scope: dict[str, str]) -> str:
        arity = (2, 3) if name == "map" else (2,)
        if len(args) not in arity:
            raise self.fail(f"macro '{name}' takes {' or '.join(map(str, arity))} arguments, got {len(args)}")
        var = _single_ident(args[0])
        if var is None:
            raise self.fail(f"the first argument of macro '{name}' must be a simple identifier")
        target = self.visit(target_tree, scope)
        if target != DYN and _norm(target) not in (LIST, MAP):
            raise self.fail(f"macro '{name}' applies to a list or a map, not {target}")
        element = {ATTRS: STRING, ATTR_DOMAIN: STRING, CAPS: STRING, CAP_DOMAIN: STRING}.get(target, DYN)
        inner = {**scope, var: element}
        predicate = None if name == "map" and len(args) == 2 else args[1]
        for a in args[1:]:
            t = self.visit(a, inner)
            if a is predicate and t not in (BOOL, DYN):
                raise self.fail(f"the predicate of macro '{name}' must be bool, not {t}")
        return _MACROS[name]

    def _bind(self, args: list[Any], scope: dict[str, str]) -> str:
        if len(args) != 3:
            raise self.fail(f"cel.bind takes 3 arguments, got {len(args)}")
        var = _single_ident(args[0])
        if var is None:
            raise self.fail("the first argument of cel.bind must be a simple identifier")
        init = self.visit(args[1], scope)
        return self.visit(args[2], {**scope, var: init})

    def _call(self, name: str, target: str | None, args: list[str]) -> str:
        overloads = _OVERLOADS.get(name)
        if overloads is None:
            raise self.fail(f"unknown function '{name}'")
        matching = [o for o in overloads
                    if (o[0] is None) == (target is None) and len(o[1]) == len(args)
                    and (target is None or _fits(target, o[0]))  # type: ignore[arg-type]
                    and all(_fits(a, w) for a, w in zip(args, o[1]))]
        if not matching:
            shown = ", ".join(args)
            call = f"{target}.{name}({shown})" if target is not None else f"{name}({shown})"
            raise self.fail(f"found no matching overload for {call}")
        results = {o[2] for o in matching}
        return results.pop() if len(results) == 1 else DYN

    def _ident_arg(self, tree: lark.Tree, scope: dict[str, str]) -> str:
        name, args = str(tree.children[0]), _args(tree, 1)
        if name == "has":
            if len(args) != 1:
                raise self.fail(f"macro 'has' takes 1 argument, got {len(args)}")
            inner = args[0]
            while isinstance(inner, lark.Tree) and inner.data != "member_dot" and len(inner.children) == 1:
                inner = inner.children[0]
            if not isinstance(inner, lark.Tree) or inner.data != "member_dot":
                raise self.fail("invalid argument to has() macro: it takes a field selection (a.b)")
            self.visit(inner, scope)
            return BOOL
        if name in _MACROS:
            raise self.fail(f"macro '{name}' must be called as a method (list.{name}(x, ...))")
        if name not in _OVERLOADS:
            raise self.fail(f"unknown function '{name}'")
        return self._call(name, None, [self.visit(a, scope) for a in args])

    _dot_ident_arg = _ident_arg

    def _ident(self, tree: lark.Tree, scope: dict[str, str]) -> str:
        name = str(tree.children[0])
        if name in scope:
            return scope[name]
        if name == "device":
            return DEVICE
        if name in ("bool", "int", "uint", "double", "string", "bytes", "list", "map", "null_type", "type"):
            return TYPE
        raise self.fail(f"undeclared reference to '{name}'")

    _dot_ident = _ident

    def _list_lit(self, tree: lark.Tree, scope: dict[str, str]) -> str:
        for a in _args(tree, 0):
            self.visit(a, scope)
        return LIST

    def _map_lit(self, tree: lark.Tree, scope: dict[str, str]) -> str:
        for a in _args(tree, 0):
            self.visit(a, scope)
        return MAP

    def _literal(self, tree: lark.Tree, scope: dict[str, str]) -> str:
        token = tree.children[0]
        return {"INT_LIT": INT, "UINT_LIT": UINT, "FLOAT_LIT": DOUBLE, "STRING_LIT": STRING,
                "MLSTRING_LIT": STRING, "BYTES_LIT": BYTES, "BOOL_LIT": BOOL, "NULL_LIT": NULL}[token.type]


def _as_expr(member: lark.Tree) -> lark.Tree:
    """Wrap a ``member`` subtree into a full ``expr`` subtree."""
    tree = member
    for data in ("unary", "multiplication", "addition", "relation", "conditionaland", "conditionalor", "expr"):
        tree = lark.Tree(data, [tree])
    return tree


def _substitute(template: lark.Tree, values: dict[str, lark.Tree]) -> lark.Tree:
    out = copy.deepcopy(template)
    for node in out.iter_subtrees():
        for i, child in enumerate(node.children):
            if isinstance(child, lark.Tree) and child.data == "expr" and _single_ident(child) in values:
                node.children[i] = values[_single_ident(child)]  # type: ignore[index]
    return out


def _rewrite(tree: lark.Tree) -> lark.Tree:
    """Desugar what celpy lacks: ``cel.bind(v, i, e)`` -> ``[i].map(v, e)[0]`` and the
    three-argument ``l.map(v, p, e)`` -> ``l.filter(v, p).map(v, e)``. Bottom-up."""
    for i, child in enumerate(tree.children):
        if isinstance(child, lark.Tree):
            tree.children[i] = _rewrite(child)
    if tree.data != "member" or tree.children[0].data != "member_dot_arg":  # type: ignore[union-attr]
        return tree
    call = tree.children[0]
    target, name, args = call.children[0], str(call.children[1]), _args(call, 2)  # type: ignore[union-attr]
    if _single_ident(target) == "cel" and name == "bind":
        new = _substitute(_BIND_TEMPLATE, {"__var": args[0], "__init": args[1], "__body": args[2]})
    elif name == "map" and len(args) == 3:
        new = _substitute(_MAP3_TEMPLATE, {"__target": _as_expr(target), "__var": args[0],  # type: ignore[arg-type]
                                           "__pred": args[1], "__body": args[2]})
    else:
        return tree
    return lark.Tree("member", [lark.Tree("primary", [lark.Tree("paren_expr", [new])])])


# ---- compile and evaluate --------------------------------------------------------------

# resource.k8s.io/v1 CELSelectorExpressionMaxCost (k8s.io/api/resource/v1/types.go): the limit
# of a selector's estimated cost (estimate_cost, at compile time) and of the cost of one
# evaluation, which kube-scheduler also applies at run time. The run-time charge (_charge,
# _CostedEvaluator) is in the same cel-go units, after cel-go's CostTracker: since the estimate
# bounds it, a selector that compiles does not run out on a device within the declared bounds,
# and the budget only stops a runaway evaluation; past it the evaluation aborts with a runtime
# error (upstream aborts the allocation).
MAX_COST = 1_000_000
_BUDGET = threading.local()


class _OverBudget(Exception):
    pass


class CelInterrupted(SolverError):
    """The caller's stop event was set during an evaluation (a cancelled or expired call): no
    result, cached or returned; the plan is abandoned, not answered with a wrong match."""

    def __init__(self) -> None:
        super().__init__("stopped during a CEL evaluation")


def interruptible(stop: threading.Event | None) -> Any:
    """A context in which this thread's evaluations stop (CelInterrupted) once ``stop`` is set."""
    import contextlib

    @contextlib.contextmanager
    def scope() -> Any:
        before = getattr(_BUDGET, "stop", None)
        _BUDGET.stop = stop
        try:
            yield
        finally:
            _BUDGET.stop = before
    return scope()


def _charge(amount: int) -> None:
    left = getattr(_BUDGET, "left", None)
    if left is None:
        return
    ticks = _BUDGET.ticks + 1
    _BUDGET.ticks = ticks
    if not ticks & 1023 or amount > 1023:  # about every thousand steps: has the caller gone?
        stop = getattr(_BUDGET, "stop", None)
        if stop is not None and stop.is_set():
            raise CelInterrupted()
    left -= amount
    _BUDGET.left = left
    if left < 0:
        raise _OverBudget()




# ---- compile-time cost estimate --------------------------------------------------------
# What kube-apiserver computes when it validates a selector (k8s.io/dynamic-resource-allocation
# v0.37.2, cel/compile.go: CompileCELExpression calls env.EstimateCost with newCostEstimator):
# cel-go's checker cost estimator (github.com/google/cel-go v0.29.2, checker/cost.go) over the
# macro-expanded expression, with Kubernetes' function costs (k8s.io/apiserver v0.37.2,
# pkg/cel/library/cost.go: CostEstimator.EstimateCallCost) and DRA's size bounds of what
# ``device`` holds (compile.go: sizeEstimator.EstimateSize over the declared device type). The
# result is the worst case in cel-go cost units; above MAX_COST the selector is refused.
# Own code implementing the same rules; only the maximum of cel-go's (min, max) cost ranges is
# kept, sizes keep both ends because some rules (replace) read the minimum.

_U64 = 2**64 - 1  # cel-go's costs and sizes are uint64s that saturate
Size = tuple[int, int]  # checker.SizeEstimate (Min, Max)
_UNKNOWN: Size = (0, _U64)  # checker.UnknownSizeEstimate
_TRAVERSAL = 0.1  # common/cost.go StringTraversalCostFactor
_REGEX = 0.25  # common/cost.go RegexStringLengthCostFactor
_LIST_CREATE, _MAP_CREATE = 10, 30  # common/cost.go ListCreateBaseCost, MapCreateBaseCost


def _sadd(a: int, b: int) -> int:
    return min(a + b, _U64)


def _smul(a: int, b: int) -> int:
    return min(a * b, _U64)


def _by_factor(x: int, factor: float) -> int:
    """checker/cost.go multiplyByCostFactor: ``x * factor`` in float64, rounded up, saturating."""
    xf = float(x)
    if xf > 0 and factor > 0 and xf > float(_U64) / factor:
        return _U64
    up = math.ceil(xf * factor)
    return _U64 if up >= 2**64 else int(up)


def _union(a: Size, b: Size) -> Size:
    return (min(a[0], b[0]), max(a[1], b[1]))


def _size_add(a: Size, b: Size) -> Size:
    return (_sadd(a[0], b[0]), _sadd(a[1], b[1]))


def _size_mul(a: Size, b: Size) -> Size:
    return (_smul(a[0], b[0]), _smul(a[1], b[1]))


# The bounds DRA declares for what ``device`` holds (compile.go newCompiler and its package
# variables; the constants are k8s.io/api/resource/v1's): driver DriverNameMaxLength 63, domains
# DeviceMaxDomainLength 63, names DeviceMaxIDLength 32, an attribute value
# DeviceAttributeMaxValueLength 64 (with list-type attributes max(64,
# ResourceSliceMaxAttributeValuesPerDevice 48), the same), allowMultipleAllocations 1, both maps
# ResourceSliceMaxAttributesAndCapacitiesPerDevice 32 entries, a quantity declares none (0).
# A node: (MaxElements, key node, element node, fields).
_Decl = tuple[int, Any, Any, dict[str, Any]]
_DOMAIN_DECL: _Decl = (63, None, None, {})
_ID_DECL: _Decl = (32, None, None, {})
_ATTRIBUTE_DECL: _Decl = (64, None, None, {})
_QUANTITY_DECL: _Decl = (0, None, None, {})
_DEVICE_DECL: _Decl = (0, None, None, {
    "driver": (63, None, None, {}),
    "allowMultipleAllocations": (1, None, None, {}),
    "attributes": (32, _DOMAIN_DECL, (32, _ID_DECL, _ATTRIBUTE_DECL, {}), {}),
    "capacity": (32, _DOMAIN_DECL, (32, _ID_DECL, _QUANTITY_DECL, {}), {}),
})


def _declared_size(path: tuple[str, ...] | None) -> Size | None:
    """compile.go sizeEstimator.EstimateSize: follow a field path from ``device`` (fields,
    ``@items``/``@values`` for elements, ``@keys``) to its declared MaxElements."""
    if not path or path[0] != "device":
        return None
    node = _DEVICE_DECL
    for step in path[1:]:
        if step in ("@items", "@values"):
            nxt = node[2]
        elif step == "@keys":
            nxt = node[1]
        elif step in node[3]:
            nxt = node[3][step]
        elif node[2] is _ATTRIBUTE_DECL:  # any name in an attribute domain: an attribute value
            nxt = _ATTRIBUTE_DECL
        else:
            nxt = None
        if nxt is None:
            return None
        node = nxt
    return (0, node[0])


# Types as far as costs depend on them: a name, ("list", elem) or ("map", key, value).
CType = Any
_SCALAR_TYPES = {BOOL, INT, UINT, DOUBLE, DURATION, TIMESTAMP}  # checker/cost.go isScalar: size 1
_STRUCT_TYPES = {DEVICE, QUANTITY, SEMVER}
_ATTRS_T: CType = ("map", STRING, ("map", STRING, DYN))
_CAPS_T: CType = ("map", STRING, ("map", STRING, QUANTITY))
_DEVICE_FIELD_TYPES: dict[str, CType] = {"driver": STRING, "attributes": _ATTRS_T, "capacity": _CAPS_T,
                                         "allowMultipleAllocations": BOOL}


def _kind(t: CType) -> str:
    return t[0] if isinstance(t, tuple) else t


# (container kind, key size, value size): checker/cost.go entrySizeEstimate
Entry = tuple[str, Size, Size]


def _entry_union(a: Entry | None, b: Entry | None) -> Entry | None:
    if a is None or b is None:
        return None
    return (a[0], _union(a[1], b[1]), _union(a[2], b[2]))


class _Est:
    """One expression's estimate: type, maximum cost, computed size, field path, entry sizes
    (checker/cost.go keeps the last three per expression id: computedSizes, exprPaths,
    computedEntrySizes)."""

    __slots__ = ("cost", "entry", "literal", "path", "size", "type")

    def __init__(self, t: CType, cost: int, size: Size | None = None, path: tuple[str, ...] | None = None,
                 entry: Entry | None = None, literal: object = None) -> None:
        self.type, self.cost, self.path, self.entry, self.literal = t, cost, path, entry, literal
        # checker/cost.go computeSize: a size already known, else the declared size of the
        # path, else 1 for a scalar type
        if size is None:
            size = _declared_size(path)
        if size is None and t in _SCALAR_TYPES:
            size = (1, 1)
        self.size = size

    def sized(self) -> Size:  # sizeOrUnknown
        return self.size if self.size is not None else _UNKNOWN


class _Local:
    __slots__ = ("entry", "path", "size", "type")

    def __init__(self, t: CType, path: tuple[str, ...] | None, size: Size | None, entry: Entry | None) -> None:
        self.type, self.path, self.size, self.entry = t, path, size, entry


_Scope = dict[str, _Local]


class _Coster:
    """checker/cost.go ``coster``: the cost of each expression, bottom up, over celpy's tree
    read as the cel-go AST it parses to (a grammar chain level is no expression of its own)."""

    def visit(self, tree: Any, scope: _Scope) -> _Est:
        method = getattr(self, f"_{tree.data}", None)
        if method is None:  # not reached after _Checker: nothing it lets through is left out
            raise CelError("", f"no cost rule for {tree.data!r}")
        result: _Est = method(tree, scope)
        return result

    def _pass(self, tree: lark.Tree, scope: _Scope) -> _Est:
        return self.visit(tree.children[0], scope)

    _member = _primary = _paren_expr = _pass

    def _expr(self, tree: lark.Tree, scope: _Scope) -> _Est:
        if len(tree.children) == 1:
            return self.visit(tree.children[0], scope)
        # functionCost, overloads.Conditional: the condition plus the dearer branch
        cond, yes, no = (self.visit(c, scope) for c in tree.children)
        return _Est(yes.type if yes.type == no.type else DYN, _sadd(cond.cost, max(yes.cost, no.cost)),
                    size=_union(yes.sized(), no.sized()), entry=_entry_union(yes.entry, no.entry))

    def _logical(self, tree: lark.Tree, scope: _Scope) -> _Est:
        if len(tree.children) == 1:
            return self.visit(tree.children[0], scope)
        # functionCost, overloads.LogicalOr/LogicalAnd: at most both sides, no cost of its own
        left, right = (self.visit(c, scope) for c in tree.children)
        return _Est(BOOL, _sadd(left.cost, right.cost))

    _conditionalor = _conditionaland = _logical

    def _relation(self, tree: lark.Tree, scope: _Scope) -> _Est:
        if len(tree.children) == 1:
            return self.visit(tree.children[0], scope)
        op_tree, right_tree = tree.children
        left, right = self.visit(op_tree.children[0], scope), self.visit(right_tree, scope)
        op = op_tree.data
        if op == "relation_in":
            return self._call("@in", None, [left, right])
        name = {"relation_lt": "_<_", "relation_le": "_<=_", "relation_gt": "_>_", "relation_ge": "_>=_",
                "relation_eq": "_==_", "relation_ne": "_!=_"}[op]
        return self._call(name, None, [left, right])

    def _arith(self, tree: lark.Tree, scope: _Scope) -> _Est:
        if len(tree.children) == 1:
            return self.visit(tree.children[0], scope)
        op_tree, right_tree = tree.children
        left, right = self.visit(op_tree.children[0], scope), self.visit(right_tree, scope)
        name = {"addition_add": "_+_", "addition_sub": "_-_", "multiplication_mul": "_*_",
                "multiplication_div": "_/_", "multiplication_mod": "_%_"}[op_tree.data]
        return self._call(name, None, [left, right])

    _addition = _multiplication = _arith

    def _unary(self, tree: lark.Tree, scope: _Scope) -> _Est:
        if len(tree.children) == 1:
            return self.visit(tree.children[0], scope)
        # cel-go's parser (VisitLogicalNot, VisitNegate) drops an even run of the same operator
        op, count, node = tree.children[0].data, 0, tree
        while isinstance(node, lark.Tree) and node.data == "unary" and len(node.children) == 2 \
                and node.children[0].data == op:
            count, node = count + 1, node.children[1]
        operand = self.visit(node, scope)
        if count % 2 == 0:
            return operand
        return self._call("!_" if op == "unary_not" else "-_", None, [operand])

    def _member_dot(self, tree: lark.Tree, scope: _Scope) -> _Est:
        # costSelect: the operand, plus 1 when it is a map or a struct (not for dyn); the path
        # grows by the field name
        operand, name = self.visit(tree.children[0], scope), str(tree.children[1])
        t = operand.type
        cost = operand.cost
        if _kind(t) == "map" or t in _STRUCT_TYPES:
            cost = _sadd(cost, 1)
        if t == DEVICE:
            result = _DEVICE_FIELD_TYPES.get(name, DYN)
        elif _kind(t) == "map":
            result = t[2]
        else:
            result = DYN
        return _Est(result, cost, path=(operand.path or ()) + (name,))

    def _member_index(self, tree: lark.Tree, scope: _Scope) -> _Est:
        target, index = self.visit(tree.children[0], scope), self.visit(tree.children[1], scope)
        return self._call("_[_]", None, [target, index])

    def _member_object(self, tree: lark.Tree, scope: _Scope) -> _Est:
        raise CelError("", "message construction is not supported")

    def _member_dot_arg(self, tree: lark.Tree, scope: _Scope) -> _Est:
        target_tree, name = tree.children[0], str(tree.children[1])
        args = _args(tree, 2)
        receiver = _single_ident(target_tree)
        if receiver == "cel" and "cel" not in scope and name == "bind":
            return self._bind(args, scope)
        if name in _MACROS:
            return self._comprehension(name, self.visit(target_tree, scope), args, scope)
        arg_ests = [self.visit(a, scope) for a in args]
        return self._call(name, self.visit(target_tree, scope), arg_ests)

    def _ident_arg(self, tree: lark.Tree, scope: _Scope) -> _Est:
        name, args = str(tree.children[0]), _args(tree, 1)
        if name == "has":
            # parser/macro.go MakeHas -> a presence test; costSelect charges its operand and
            # presenceTestCost, 0 in Kubernetes (environment/base.go PresenceTestHasCost(false))
            inner = args[0]
            while isinstance(inner, lark.Tree) and inner.data != "member_dot" and len(inner.children) == 1:
                inner = inner.children[0]
            return _Est(BOOL, self.visit(inner.children[0], scope).cost)
        return self._call(name, None, [self.visit(a, scope) for a in args])

    _dot_ident_arg = _ident_arg

    def _ident(self, tree: lark.Tree, scope: _Scope) -> _Est:
        # costIdent: 1; a local variable carries the path, size and entry sizes it was bound with
        name = str(tree.children[0])
        local = scope.get(name)
        if local is not None:
            est = _Est(local.type, 1, path=local.path, entry=local.entry)
            if est.size is None:
                est.size = local.size
            return est
        if name == "device":
            return _Est(DEVICE, 1, path=("device",))
        return _Est(TYPE, 1, path=(name,))

    _dot_ident = _ident

    def _list_lit(self, tree: lark.Tree, scope: _Scope) -> _Est:
        # costCreateList: the elements plus ListCreateBaseCost; size and entry sizes are exact
        items = [self.visit(a, scope) for a in _args(tree, 0)]
        cost, item_size = _LIST_CREATE, ((0, 0) if not items else (_U64, 0))
        for item in items:
            cost = _sadd(cost, item.cost)
            item_size = _union(item_size, item.sized())
        types = {repr(i.type) for i in items}
        elem = items[0].type if len(types) == 1 else DYN
        return _Est(("list", elem), cost, size=(len(items), len(items)), entry=("list", (1, 1), item_size))

    def _map_lit(self, tree: lark.Tree, scope: _Scope) -> _Est:
        # costCreateMap: keys and values plus MapCreateBaseCost
        parts = [self.visit(a, scope) for a in _args(tree, 0)]
        keys, values = parts[0::2], parts[1::2]
        cost = _MAP_CREATE
        key_size, value_size = ((0, 0), (0, 0)) if not keys else ((_U64, 0), (_U64, 0))
        for k, v in zip(keys, values):
            cost = _sadd(_sadd(cost, k.cost), v.cost)
            key_size, value_size = _union(key_size, k.sized()), _union(value_size, v.sized())
        kt = keys[0].type if keys and len({repr(k.type) for k in keys}) == 1 else DYN
        vt = values[0].type if values and len({repr(v.type) for v in values}) == 1 else DYN
        return _Est(("map", kt, vt), cost, size=(len(keys), len(keys)), entry=("map", key_size, value_size))

    def _literal(self, tree: lark.Tree, scope: _Scope) -> _Est:
        # ConstCost 0; computeExprSize: a string's length in code points, a byte string's in
        # bytes, 1 for any other constant
        token = tree.children[0]
        t = {"INT_LIT": INT, "UINT_LIT": UINT, "FLOAT_LIT": DOUBLE, "STRING_LIT": STRING, "MLSTRING_LIT": STRING,
             "BYTES_LIT": BYTES, "BOOL_LIT": BOOL, "NULL_LIT": NULL}[token.type]
        value: object = None
        size = 1
        if t == STRING:
            size = len(str(celpy.evaluation.celstr(token)))
        elif t == BYTES:
            size = len(bytes(celpy.evaluation.celbytes(token)))
        elif t == INT:
            try:
                value = int(str(token), 0)
            except ValueError:  # leading zeros
                value = int(str(token), 10)
        return _Est(t, 0, size=(size, size), literal=value)

    # -- comprehensions ------------------------------------------------------------------

    def _bind(self, args: list[Any], scope: _Scope) -> _Est:
        # ext/bindings.go: cel.bind(v, init, e) is a comprehension over an empty list;
        # costBind: that list (ListCreateBaseCost), init and e; v has init's path and sizes
        var = _single_ident(args[0]) or ""
        init = self.visit(args[1], scope)
        body = self.visit(args[2], {**scope, var: _Local(init.type, init.path, init.size, init.entry)})
        return _Est(body.type, _sadd(_sadd(_LIST_CREATE, init.cost), body.cost), size=body.size, entry=body.entry)

    def _comprehension(self, name: str, target: _Est, args: list[Any], scope: _Scope) -> _Est:
        """costComprehension over the expansion of parser/macro.go (makeQuantifier, MakeMap,
        MakeFilter): range + init + result + range size x (loop condition + loop step)."""
        var = _single_ident(args[0]) or ""
        # pushIterSingle: over a list the element (size from the list's entry sizes, path
        # @items), over a map or dyn the key (path @keys)
        t = target.type
        container = target.entry[0] if target.entry is not None else _kind(t)
        if container == "list":
            local = _Local(t[1] if _kind(t) == "list" else DYN, (target.path or ()) + ("@items",),
                           target.entry[2] if target.entry is not None else None, None)
        else:
            local = _Local(t[1] if _kind(t) == "map" else DYN, (target.path or ()) + ("@keys",),
                           target.entry[1] if target.entry is not None else None, None)
        inner = {**scope, var: local}
        parts = [self.visit(a, inner) for a in args[1:]]
        count = target.sized()[1]  # sizeOrUnknown(iterRange)
        accu = 1  # the accumulator identifier: costIdent
        entry: Entry | None = None
        size: Size = (1, 1)
        if name == "all":
            # init true; condition @not_strictly_false(accu): 1 + accu; step accu && p; result accu
            init, cond, step, result, out = 0, 1 + accu, accu + parts[0].cost, accu, BOOL
        elif name == "exists":
            # init false; condition @not_strictly_false(!accu): 1 + 1 + accu; step accu || p
            init, cond, step, result, out = 0, 2 + accu, accu + parts[0].cost, accu, BOOL
        elif name == "exists_one":
            # init 0; condition true; step p ? accu + 1 : accu; result accu == 1 (1 + accu)
            init, cond, step, result, out = 0, 0, parts[0].cost + 1 + accu, 1 + accu, BOOL
        else:
            # map / filter: init [] (ListCreateBaseCost); condition true; step accu + [x]
            # (1 for the list concatenation + accu + ListCreateBaseCost + x), under
            # `p ? ... : accu` when there is a filter p; result accu; the result's size is the range's
            body = parts[-1] if name == "map" else _Est(local.type, 1, size=local.size, path=local.path)
            append = _sadd(1 + accu + _LIST_CREATE, body.cost)
            step = append if name == "map" and len(parts) == 1 else _sadd(parts[0].cost, append)
            init, cond, result, out = _LIST_CREATE, 0, accu, ("list", body.type)
            size = target.sized()
            entry = ("list", (1, 1), (0, body.sized()[1]))
        total = _sadd(_sadd(_sadd(target.cost, init), result), _smul(count, _sadd(cond, step)))
        return _Est(out, total, size=size, entry=entry)

    # -- calls -----------------------------------------------------------------------------

    def _call(self, name: str, target: _Est | None, args: list[_Est]) -> _Est:
        """costCall: target and arguments plus the dearest overload the types leave open
        (functionCost, or Kubernetes' CostEstimator.EstimateCallCost where it has a rule)."""
        arg_cost = 0
        for a in args:
            arg_cost = _sadd(arg_cost, a.cost)
        if target is not None:
            arg_cost = _sadd(arg_cost, target.cost)
        if name == "dyn" and args:  # maybeUnwrapDynCall: 1 + the argument, its sizes kept
            return _Est(DYN, _sadd(1, args[0].cost), size=args[0].size, entry=args[0].entry)
        own, result_size, result_type, path, entry = self._overloads(name, target, args)
        return _Est(result_type, _sadd(arg_cost, own), size=result_size, path=path, entry=entry)

    def _overloads(self, name: str, target: _Est | None, args: list[_Est]) \
            -> tuple[int, Size | None, CType, tuple[str, ...] | None, Entry | None]:
        """(own cost, result size, result type, result path, result entry sizes)."""
        def sz(e: _Est) -> Size:
            return e.sized()

        def kinds(e: _Est) -> set[str]:
            k = _kind(e.type)
            return {STRING, BYTES, "list", "map", INT, UINT, DOUBLE, BOOL, TIMESTAMP, DURATION,
                    QUANTITY, SEMVER, NULL} if k == DYN else {k}

        if name in ("_==_", "_!=_"):
            a, b = args
            if a.type == b.type and a.type in (QUANTITY, SEMVER):  # library/cost.go: O(1) equality
                return 1, None, BOOL, None, None
            # functionCost, overloads.Equals: the shorter side's traversal
            return _by_factor(min(sz(a)[1], sz(b)[1]), _TRAVERSAL), None, BOOL, None, None
        if name in ("_<_", "_<=_", "_>_", "_>=_"):
            a, b = args
            common = kinds(a) & kinds(b) | ({DOUBLE} if kinds(a) & _NUMBERS and kinds(b) & _NUMBERS else set())
            cost = 0
            if common & {STRING, BYTES}:  # LessString...: like equality
                cost = _by_factor(min(sz(a)[1], sz(b)[1]), _TRAVERSAL)
            if common - {STRING, BYTES} or not common:  # numbers, bool, time: 1
                cost = max(cost, 1)
            return cost, None, BOOL, None, None
        if name == "_+_":
            a, b = args
            common = kinds(a) & kinds(b)
            total = _size_add(sz(a), sz(b))
            cost, size, entry = 0, None, None
            if common & {STRING, BYTES}:  # AddString, AddBytes: traversal of the result
                cost, size = _by_factor(total[1], _TRAVERSAL), total
            if "list" in common:  # AddList: 1, sizes add up, entry sizes unite
                cost, size = max(cost, 1), total
                entry = _entry_union(a.entry, b.entry)
            if common - {STRING, BYTES, "list"} or not common:  # numbers, time: 1
                cost = max(cost, 1)
            t = a.type if a.type == b.type else DYN
            return cost, size, t, None, entry
        if name == "@in":
            container = args[1]
            cost = 0
            if kinds(container) & {"list"}:  # InList: O(n)
                cost = sz(container)[1]
            if kinds(container) & {"map"}:
                cost = max(cost, 1)
            return cost, None, BOOL, None, None
        if name == "_[_]":
            operand = args[0]
            k = _kind(operand.type)
            value = operand.entry[2] if operand.entry is not None else None
            # costCall: IndexList / IndexMap extend the path by @items / @values
            step = "@items" if k == "list" else "@values"
            t = operand.type[1] if k == "list" else operand.type[2] if k == "map" else DYN
            return 1, value, t, (operand.path or ()) + (step,), None
        if name in ("startsWith", "endsWith") and args:  # StartsWithString: the prefix's traversal
            return _by_factor(sz(args[0])[1], _TRAVERSAL), None, BOOL, None, None
        if name == "contains" and target is not None and args:  # ContainsString: product of traversals
            return _smul(_by_factor(sz(target)[1], _TRAVERSAL), _by_factor(sz(args[0])[1], _TRAVERSAL)), \
                None, BOOL, None, None
        if name == "matches":  # Matches: (string + 1) traversal x regex length / 4
            text, regex = (target, args[0]) if target is not None else (args[0], args[1])
            return _smul(_by_factor(_sadd(sz(text)[1], 1), _TRAVERSAL), _by_factor(sz(regex)[1], _REGEX)), \
                None, BOOL, None, None
        if name == "string" and args and kinds(args[0]) & {BYTES}:  # BytesToString
            s = sz(args[0])
            return max(1, _by_factor(s[1], _TRAVERSAL)), (s[0] // 4, s[1]), STRING, None, None
        if name == "bytes" and args and kinds(args[0]) & {STRING}:  # StringToBytes
            s = sz(args[0])
            return max(1, _by_factor(s[1], _TRAVERSAL)), (s[0], _smul(s[1], 4)), BYTES, None, None
        # Kubernetes' library/cost.go CostEstimator.EstimateCallCost
        if name in ("quantity", "isQuantity", "semver", "isSemver") and args:
            return _by_factor(sz(args[0])[1], _TRAVERSAL), None, \
                {"quantity": QUANTITY, "semver": SEMVER}.get(name, BOOL), None, None
        if name in ("sign", "asInteger", "isInteger", "asApproximateFloat", "isGreaterThan", "isLessThan",
                    "compareTo", "add", "sub", "major", "minor", "patch"):
            return 1, None, self._result_type(name, target, args), None, None
        if target is not None and name in ("lowerAscii", "upperAscii", "substring", "trim"):
            s = sz(target)
            return _by_factor(s[1], _TRAVERSAL), s, STRING, None, None
        if target is not None and name == "replace" and len(args) >= 2:
            return (*self._replace(sz(target), sz(args[0]), sz(args[1])), STRING, None, None)
        if target is not None and name == "split":
            s = sz(target)
            limit = args[1].literal if len(args) > 1 and isinstance(args[1].literal, int) else None
            top = s[1] if limit is None else limit % 2**64
            return _by_factor(s[1], 2 * _TRAVERSAL), (0, top), ("list", STRING), None, None
        if target is not None and name == "join":
            count = sz(target)
            joined: Size = (0, 0)
            element = self._element_size(target)
            if element is not None:
                joined = _size_mul(count, element[1])
            if args:
                seps = (max(count[0] - 1, 0), max(count[1] - 1, 0))
                joined = _size_add(joined, _size_mul(sz(args[0]), seps))
            return _by_factor(joined[1], _TRAVERSAL), joined, STRING, None, None
        if target is not None and name in ("isSorted", "sum", "max", "min", "indexOf", "lastIndexOf"):
            element = self._element_size(target)
            t = self._result_type(name, target, args)
            if element is None:  # a string (or dyn): its traversal
                return _by_factor(sz(target)[1], _TRAVERSAL), None, t, None, None
            each = 1
            if element[0] in (STRING, BYTES):
                each = _sadd(1, _by_factor(element[1][1], _TRAVERSAL))
            return _smul(sz(target)[1], each), None, t, None, None
        # every other overload: O(1), 1 (functionCost's default)
        return 1, None, self._result_type(name, target, args), None, None

    @staticmethod
    def _element_size(target: _Est) -> tuple[CType, Size] | None:
        """library/cost.go listElementNode + sizeEstimate: a typed list's element, sized by the
        declared bound of the list's path + @items (unknown without one)."""
        if _kind(target.type) not in ("list", "map"):
            return None
        declared = _declared_size((target.path or ()) + ("@items",)) if target.path else None
        return target.type[1], declared if declared is not None else _UNKNOWN

    @staticmethod
    def _replace(s: Size, old: Size, new: Size) -> tuple[int, Size]:
        """library/cost.go "replace": traversal twice; result size from the replacement count."""
        count, kept = [0, 0], [0, 0]
        if old[0] == 0:
            count[1], kept[1] = (_sadd(s[1], 1) if s[1] < _U64 else s[1]), s[1]
        elif new[1] <= old[0]:
            count[1], kept[1] = 0, s[1]
        else:
            count[1] = min(math.ceil(float(s[1]) / float(old[0])), _U64)
        if old[1] == 0:
            count[0], kept[0] = (_sadd(s[0], 1) if s[0] < _U64 else s[0]), s[0]
        elif old[1] <= new[0]:
            count[0], kept[0] = 0, s[0]
        else:
            count[0] = min(math.ceil(float(s[0]) / float(old[1])), _U64)
        size = _size_add(_size_mul((count[0], count[1]), new), (kept[0], kept[1]))
        return _by_factor(s[1], 2 * _TRAVERSAL), size

    @staticmethod
    def _result_type(name: str, target: _Est | None, args: list[_Est]) -> CType:
        if name in ("sum", "max", "min") and target is not None and _kind(target.type) == "list":
            return target.type[1]
        if name in ("_-_", "_*_", "_/_", "_%_", "-_") and args:
            return args[0].type if all(a.type == args[0].type for a in args) else DYN
        if name == "!_":
            return BOOL
        results = {o[2] for o in _OVERLOADS.get(name, ())
                   if (o[0] is None) == (target is None) and len(o[1]) == len(args)}
        if len(results) != 1:
            return DYN
        result = results.pop()
        return ("list", DYN) if result == LIST else ("map", DYN, DYN) if result == MAP else result


def estimate_cost(tree: lark.Tree) -> int:
    """The worst-case cost kube-apiserver estimates for the selector (see above), in cel-go cost
    units; the tree must have passed ``_Checker``."""
    return _Coster().visit(tree, {}).cost


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
        return int(len(value.encode("utf-8", "surrogatepass")) * _TRAVERSAL)
    if isinstance(value, bytes):
        return int(len(value) * _TRAVERSAL)
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
        return _by_factor(_actual_size(first), _TRAVERSAL)
    if name in ("replace", "split"):
        return _by_factor(_actual_size(first), 2 * _TRAVERSAL)
    if name == "join":
        return _by_factor(_actual_size(result), 2 * _TRAVERSAL)
    if name in ("startsWith", "endsWith") and len(args) > 1:
        return _by_factor(_actual_size(args[1]), _TRAVERSAL)
    if (name == "string" and isinstance(first, bytes)) or (name == "bytes" and isinstance(first, str)):
        return _by_factor(_actual_size(first), _TRAVERSAL)
    if name == "matches" and len(args) > 1:
        return _by_factor(1 + _actual_size(first), _TRAVERSAL) * _by_factor(_actual_size(args[1]), _REGEX)
    if name == "contains" and len(args) > 1:
        return _by_factor(_actual_size(first), _TRAVERSAL) * _by_factor(_actual_size(args[1]), _TRAVERSAL)
    return 1


def _operator_charge(name: str, args: Sequence[Any]) -> int:
    if name in ("_==_", "_!=_"):
        if isinstance(args[0], (Quantity, Semver)):
            return 1  # library/cost.go CallCost "_==_"
        return _by_factor(min(_actual_size(args[0]), _actual_size(args[1])), _TRAVERSAL)
    text = all(isinstance(a, str) for a in args) or all(isinstance(a, bytes) for a in args)
    if name in ("_<_", "_<=_", "_>_", "_>=_") and text:
        return _by_factor(min(_actual_size(args[0]), _actual_size(args[1])), _TRAVERSAL)
    if name == "_in_":
        return _actual_size(args[1]) if isinstance(args[1], (list, tuple)) else 1
    if name == "_+_" and text:
        return _by_factor(_actual_size(args[0]) + _actual_size(args[1]), _TRAVERSAL)
    return 1


def _charged(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def operator(*args: Any) -> Any:
        _charge(_operator_charge(name, args))
        return function(*args)
    return operator


_OPERATORS = ("_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_", "_in_", "_+_", "_-_", "_*_", "_/_", "_%_", "!_", "-_")
_COSTED_FUNCTIONS = {**_FUNCTIONS, **{
    op: _charged(op, _FUNCTIONS.get(op) or celpy.evaluation.base_functions[op]) for op in _OPERATORS}}
_PRIMARY_CHARGE = {"ident": 1, "dot_ident": 1, "list_lit": _LIST_CREATE, "map_lit": _MAP_CREATE}


class _CostedEvaluator(celpy.evaluation.Evaluator):
    """celpy's evaluator, charging ``_BUDGET`` as above: primaries and selections here, calls
    in function_eval / method_eval, operators in _COSTED_FUNCTIONS."""

    step = False  # evaluates a comprehension's body: each evaluation is a step

    def _visit_tree(self, tree: lark.Tree) -> Any:
        data = tree.data
        if data == "primary":
            _charge(_PRIMARY_CHARGE.get(tree.children[0].data, 0))
        elif data in ("member_dot", "member_index"):
            _charge(1)
        return super()._visit_tree(tree)

    def evaluate(self, context: Any = None) -> Any:
        if self.step:
            _charge(1)
        return super().evaluate(context)

    def sub_evaluator(self, ast: lark.Tree) -> Any:
        nested = _CostedEvaluator(ast, activation=self.activation)
        nested.step = True
        return nested

    def function_eval(self, name_token: Any, exprlist: Any = None) -> Any:
        result = super().function_eval(name_token, exprlist)
        _charge(_call_charge(str(name_token), exprlist if isinstance(exprlist, list) else [], result))
        return result

    def method_eval(self, object: Any, method_ident: Any, exprlist: Any = None) -> Any:  # noqa: A002
        result = super().method_eval(object, method_ident, exprlist)
        _charge(_call_charge(str(method_ident), [object, *(exprlist if isinstance(exprlist, list) else [])], result))
        return result


class _CostedRunner(celpy.InterpretedRunner):
    def evaluate(self, context: Any) -> Any:
        _BUDGET.left, _BUDGET.ticks = MAX_COST, 0
        try:
            return _CostedEvaluator(ast=self.ast, activation=self.new_activation()).evaluate(context)
        finally:
            _BUDGET.left = None


_ENV = celpy.Environment(runner_class=_CostedRunner)
_COMPILED: dict[str, Any] = {}  # expression -> runner, or the CelError it raised
_RESULTS: dict[tuple[str, tuple[object, ...]], bool | str] = {}  # a str: the runtime error's reason
_VIEWS: dict[tuple[object, ...], ct.MapType] = {}
_CACHE_LIMIT = 1 << 18  # entries; a cache past it starts over


def compile_expression(expr: str) -> object:
    """The compiled program of ``expr`` (cached by text); ``CelError`` when it does not compile."""
    found = _COMPILED.get(expr)
    if found is None:
        try:
            found = _compile(expr)
        except CelError as exc:
            found = exc
        if len(_COMPILED) >= _CACHE_LIMIT:
            _COMPILED.clear()
        _COMPILED[expr] = found
    if isinstance(found, CelError):
        raise found
    return found


# resource.k8s.io/v1 CELSelectorExpressionMaxLength (k8s.io/api/resource/v1/types.go)
MAX_EXPRESSION_LENGTH = 10 * 1024


def _compile(expr: str) -> object:
    if not isinstance(expr, str) or not expr.strip():
        raise CelError(str(expr), "empty expression")
    if len(expr) > MAX_EXPRESSION_LENGTH:
        raise CelError(expr[:40] + "...", f"longer than {MAX_EXPRESSION_LENGTH} characters "
                                          "(resource.k8s.io CELSelectorExpressionMaxLength)")
    try:
        tree = _ENV.compile(expr)
        result = _Checker(expr).visit(tree, {})
        if result not in (BOOL, DYN):
            raise CelError(expr, f"must evaluate to bool, not {result}")
        cost = estimate_cost(tree)
        if cost > MAX_COST:
            raise CelError(expr[:40] + ("..." if len(expr) > 40 else ""),
                           f"estimated cost {cost} exceeds the limit {MAX_COST} "
                           "(resource.k8s.io CELSelectorExpressionMaxCost)")
        return _Program(_ENV.program(_rewrite(copy.deepcopy(tree)), functions=_COSTED_FUNCTIONS), _footprint(tree))
    except (celpy.CELParseError, lark.exceptions.LarkError) as exc:
        line, column = getattr(exc, "line", None), getattr(exc, "column", None)
        where = f" at line {line}, column {column}" if "\n" in expr else f" at column {column}"
        raise CelError(expr, "syntax error" + (where if column is not None else "")) from None
    except RecursionError:
        raise CelError(expr[:40] + ("..." if len(expr) > 40 else ""), "nested too deeply") from None


class _Program:
    __slots__ = ("footprint", "runner")

    def __init__(self, runner: Any, footprint: tuple[tuple[str, str, str | None], ...] | None) -> None:
        self.runner, self.footprint = runner, footprint


_WHOLE = None  # a footprint entry's name for "the whole domain map"
_PRESENT = "?"  # ... for "is the domain present" (``"d" in device.attributes``)


def _literal_string(tree: Any) -> str | None:
    """The value of a tree that is nothing but a plain string literal, else None."""
    while isinstance(tree, lark.Tree) and len(tree.children) == 1 and tree.data != "literal":
        tree = tree.children[0]
    if isinstance(tree, lark.Tree) and tree.data == "literal":
        token = tree.children[0]
        text = str(token)
        if token.type == "STRING_LIT" and len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'" \
                and "\\" not in text:
            return text[1:-1]
    return None


def _footprint(tree: lark.Tree) -> tuple[tuple[str, str, str | None], ...] | None:
    """What of a device the expression can see, when it is only literal look-ups.

    Entries (``attributes`` | ``capacity``, domain, name | _WHOLE | _PRESENT). None when the
    expression uses ``device`` in any other way (iterates a map, indexes with a computed key,
    binds ``device`` ...): then results are cached per full ``Device.signature()``. With a
    footprint, devices that differ only elsewhere (a per-device uuid) share one evaluation.
    """
    parent: dict[int, lark.Tree] = {}
    for node in tree.iter_subtrees():
        for child in node.children:
            if isinstance(child, lark.Tree):
                parent[id(child)] = node
    out: set[tuple[str, str, str | None]] = set()
    for node in tree.iter_subtrees():
        if node.data == "member_dot_arg" and any(_single_ident(a) == "device" for a in _args(node, 2)[:1]):
            return None  # a macro or cel.bind variable named device shadows it
        if node.data == "dot_ident" and str(node.children[0]) == "device":
            return None
        if node.data != "ident" or str(node.children[0]) != "device":
            continue
        path: list[str | None] = []
        cur: lark.Tree = parent[id(node)]  # primary
        cur = parent[id(cur)]  # member
        while True:
            up = parent.get(id(cur))
            if up is None or up.children[0] is not cur or up.data not in ("member_dot", "member_index"):
                break
            path.append(str(up.children[1]) if up.data == "member_dot" else _literal_string(up.children[1]))
            cur = parent[id(up)]  # the member around it
        if not path:
            return None
        if path[0] in ("driver", "allowMultipleAllocations"):
            continue
        if path[0] not in ("attributes", "capacity"):
            return None
        if len(path) == 1:
            left = _in_operand(cur, parent)
            if left is None:
                return None
            out.add((str(path[0]), left, _PRESENT))
            continue
        if path[1] is None:
            return None
        out.add((str(path[0]), path[1], path[2] if len(path) > 2 and path[2] is not None else _WHOLE))
    return tuple(sorted(out, key=repr))


def _in_operand(member: lark.Tree, parent: dict[int, lark.Tree]) -> str | None:
    """For ``"lit" in <member>``: the literal, else None."""
    cur: lark.Tree = member
    while True:
        up = parent.get(id(cur))
        if up is None:
            return None
        if up.data == "relation" and len(up.children) == 2 and up.children[1] is cur:
            op = up.children[0]
            return _literal_string(op.children[0]) if op.data == "relation_in" else None
        if len(up.children) != 1:
            return None
        cur = up


def _projection(footprint: tuple[tuple[str, str, str | None], ...], device: Device) -> tuple[object, ...]:
    values: list[object] = [device.driver, device.allow_multiple]
    for kind, domain, name in footprint:
        table = device.attributes if kind == "attributes" else device.capacity
        if name is _PRESENT:
            values.append(domain in table)
        elif name is _WHOLE:
            values.append(tuple(sorted(table.get(domain, {}).items(), key=lambda kv: kv[0])))
        else:
            inner = table.get(domain, {})
            values.append((True, inner[name]) if name in inner else (False,))
    return tuple(values)


class _Domains(ct.MapType):
    """``device.attributes`` / ``device.capacity``: an unknown domain reads as an empty map."""

    def __missing__(self, key: Any) -> ct.MapType:
        return ct.MapType()


def _value(v: object) -> object:
    if isinstance(v, bool):
        return ct.BoolType(v)
    if isinstance(v, int):
        return ct.IntType(v)
    if isinstance(v, Version):
        return parse_semver(v.text)
    return ct.StringType(str(v))


def _view(device: Device) -> ct.MapType:
    attrs = _Domains()
    for domain, names in device.attributes.items():
        attrs[ct.StringType(domain)] = ct.MapType({ct.StringType(n): _value(v) for n, v in names.items()})
    caps = _Domains()
    for domain, names in device.capacity.items():
        caps[ct.StringType(domain)] = ct.MapType({ct.StringType(n): Quantity(Decimal(v)) for n, v in names.items()})
    return ct.MapType({
        ct.StringType("driver"): ct.StringType(device.driver),
        ct.StringType("attributes"): attrs,
        ct.StringType("capacity"): caps,
        ct.StringType("allowMultipleAllocations"): ct.BoolType(device.allow_multiple),
    })


def _reason(exc: BaseException) -> str:
    if isinstance(exc, CELEvalError) and exc.args:
        message = str(exc.args[0])
        detail = exc.args[2] if len(exc.args) > 2 else None
        if len(exc.args) > 1 and exc.args[1] is ValueError and detail:
            return "; ".join(str(d) for d in detail)  # a failed quantity() / semver() parse
        if len(exc.args) > 1 and exc.args[1] is TypeError and detail and str(
                next(iter(detail), "")).startswith("found no matching overload"):
            return str(next(iter(detail)))  # one of our overloads, already in CEL words
        if isinstance(detail, Iterable) and not isinstance(detail, (str, bytes)):
            parts = [str(d) for d in detail if not isinstance(d, type)]
            if parts and not any(p in message for p in parts):
                message = f"{message}: {', '.join(parts)}"
        return message
    return f"{type(exc).__name__}: {exc}"


def selects(expr: str, device: Device) -> bool:
    """Whether the selector ``expr`` is true for ``device``.

    ``CelError`` when it does not compile; ``CelRuntimeError`` when evaluation fails or the
    result is not a bool (upstream aborts the allocation then: see the module docstring).
    """
    program = compile_expression(expr)
    assert isinstance(program, _Program)
    key = (expr, device.signature() if program.footprint is None else _projection(program.footprint, device))
    found = _RESULTS.get(key)
    if found is None:
        found = _evaluate(program.runner, device, device.signature())
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
            view = _view(device)
            if len(_VIEWS) >= _CACHE_LIMIT:
                _VIEWS.clear()
            _VIEWS[sig] = view
        result = program.evaluate({"device": view})
    except _OverBudget:
        return f"cost limit {MAX_COST} exceeded (resource.k8s.io CELSelectorExpressionMaxCost)"
    except RecursionError:
        return "nested too deeply"
    except ValueError as exc:  # a version attribute that is no semver
        return str(exc)
    except (CELEvalError, TypeError, ArithmeticError, LookupError, InvalidOperation) as exc:
        return _reason(exc)
    if not isinstance(result, ct.BoolType):
        return f"result of type {_type_name(result)} is not bool"
    return bool(result)
