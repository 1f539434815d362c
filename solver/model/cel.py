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
unknown type — an attribute value — passes compilation and is checked at run time.

Run time (``selects``): a result that is not a bool, or an evaluation error (a missing
attribute name, a failed ``quantity()`` / ``semver()`` parse, a type mismatch, division by
zero), raises ``CelRuntimeError`` (a ``CelError``). That is upstream's rule: the
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

# resource.k8s.io/v1 CELSelectorExpressionMaxCost (k8s.io/api/resource/v1/types.go): the cost
# limit of one selector evaluation, which kube-scheduler also applies at run time. Here the cost
# is one per evaluated node of the expression plus the size of every string or list a function
# or method returns (so a chain of replace() calls that grows its string is stopped early);
# past it the evaluation aborts, and the device does not match (upstream aborts the allocation).
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
    if (left & 1023) < amount or amount > 1023:  # about every thousand steps: has the caller gone?
        stop = getattr(_BUDGET, "stop", None)
        if stop is not None and stop.is_set():
            raise CelInterrupted()
    left -= amount
    _BUDGET.left = left
    if left < 0:
        raise _OverBudget()


def _size(value: Any) -> int:
    return len(value) if isinstance(value, (str, bytes, list, tuple, dict)) else 0


# a device has at most 32 attributes and capacities together (resource.k8s.io/v1
# ResourceSliceMaxAttributesAndCapacitiesPerDevice): the largest collection a selector reads,
# the bound taken for any collection whose size the text does not give
_COLLECTION_BOUND = 32


def estimate_cost(tree: lark.Tree) -> int:
    """An upper bound on the runtime charge of one evaluation, in the budget's unit (a visited
    node): a comprehension costs its range's size bound times its body. Worst case, so an
    expression is refused at parse time only when it could exceed the budget."""
    def size(node: Any) -> int:
        while isinstance(node, lark.Tree) and node.data != "list_lit" and len(node.children) == 1:
            node = node.children[0]
        if isinstance(node, lark.Tree) and node.data == "list_lit":
            items = node.children[0].children if node.children and isinstance(node.children[0], lark.Tree) else []
            return len(items)
        return _COLLECTION_BOUND

    def cost(node: Any) -> int:
        if not isinstance(node, lark.Tree):
            return 0
        kids = node.children
        if node.data == "member_dot_arg" and len(kids) >= 3 and str(kids[1]) in _MACROS \
                and isinstance(kids[2], lark.Tree):
            args = kids[2].children
            return 1 + cost(kids[0]) + size(kids[0]) * (1 + sum(cost(a) for a in args[1:]))
        return 1 + sum(cost(c) for c in kids)

    return cost(tree)


class _CostedEvaluator(celpy.evaluation.Evaluator):
    """celpy's evaluator, charging each visit and each function result to ``_BUDGET``."""

    def visit_children(self, tree: lark.Tree) -> Any:
        _charge(1)
        return super().visit_children(tree)

    def sub_evaluator(self, ast: lark.Tree) -> Any:
        return _CostedEvaluator(ast, activation=self.activation)

    def function_eval(self, name_token: Any, exprlist: Any = None) -> Any:
        result = super().function_eval(name_token, exprlist)
        _charge(_size(result))
        return result

    def method_eval(self, object: Any, method_ident: Any, exprlist: Any = None) -> Any:  # noqa: A002
        result = super().method_eval(object, method_ident, exprlist)
        _charge(_size(result))
        return result


class _CostedRunner(celpy.InterpretedRunner):
    def evaluate(self, context: Any) -> Any:
        _BUDGET.left = MAX_COST
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
        cost = estimate_cost(tree)
        if cost > MAX_COST:
            raise CelError(expr[:40] + ("..." if len(expr) > 40 else ""),
                           f"estimated cost {cost} exceeds the limit {MAX_COST} "
                           "(resource.k8s.io CELSelectorExpressionMaxCost)")
        result = _Checker(expr).visit(tree, {})
        if result not in (BOOL, DYN):
            raise CelError(expr, f"must evaluate to bool, not {result}")
        return _Program(_ENV.program(_rewrite(copy.deepcopy(tree)), functions=_FUNCTIONS), _footprint(tree))
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
