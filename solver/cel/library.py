"""The functions of the environment: CEL's operators with heterogeneous equality, the Kubernetes
quantity and semver libraries and the string and list extensions, as celpy functions."""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import celpy.celtypes as ct
from celpy.evaluation import CELEvalError

from solver.cel.values import INT64, Quantity, Semver, normalize_semver, parse_semver, type_name
from solver.core.quantity import parse_quantity

# ---- functions of the environment ------------------------------------------------------

_NUMERIC = (ct.IntType, ct.UintType, ct.DoubleType)


def _is_num(v: object) -> bool:
    return isinstance(v, _NUMERIC) and not isinstance(v, ct.BoolType)


def _num(v: Any) -> int | float:
    return float(v) if isinstance(v, ct.DoubleType) else int(v)


def _category(v: object) -> str:
    if _is_num(v):
        return "number"
    return type_name(v)


def _equal(a: object, b: object) -> bool:
    """CEL heterogeneous equality; Quantity and Semver only compare with their own kind."""
    if isinstance(a, (Quantity, Semver)) or isinstance(b, (Quantity, Semver)):
        return a == b  # raises TypeError on a mismatch: no such overload
    if _is_num(a) and _is_num(b):
        return _num(a) == _num(b)  # exact across int and double; NaN equals nothing
    if _category(a) != _category(b):
        return False
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
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
        raise TypeError(f"found no matching overload for '{name}' applied to '({type_name(a)}, {type_name(b)})'")

    return compare


def _in(item: Any, container: Any) -> Any:
    for v in (item, container):
        if isinstance(v, CELEvalError):
            return v
    if isinstance(container, (list, dict)):
        return ct.BoolType(any(_safe_equal(item, c) for c in container))
    raise TypeError(f"no such overload: in {type_name(container)}")


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
    return parse_semver(normalize_semver(str(text)) if normalize else str(text))


def _is_semver(text: Any, normalize: Any = False) -> ct.BoolType:
    try:
        _semver(text, normalize)
    except ValueError:
        return ct.BoolType(False)
    return ct.BoolType(True)


def _q(v: Any, name: str) -> Quantity:
    if not isinstance(v, Quantity):
        raise TypeError(f"{name}() applies to a kubernetes.Quantity, not {type_name(v)}")
    return v


def _as_integer(q: Any) -> ct.IntType:
    v = _q(q, "asInteger").value
    if v != v.to_integral_value() or not INT64[0] <= v <= INT64[1]:
        raise ValueError("cannot convert value to integer")
    return ct.IntType(int(v))


def _is_integer(q: Any) -> ct.BoolType:
    v = _q(q, "isInteger").value
    return ct.BoolType(v == v.to_integral_value() and INT64[0] <= v <= INT64[1])


def _operand(v: Any, name: str) -> Decimal:
    if isinstance(v, Quantity):
        return v.value
    if isinstance(v, ct.IntType) and not isinstance(v, ct.BoolType):
        return Decimal(int(v))
    raise TypeError(f"{name}() takes a kubernetes.Quantity or an int, not {type_name(v)}")


def _compare(a: Any, b: Any, name: str) -> int:
    if isinstance(a, Quantity) and isinstance(b, Quantity):
        return (a.value > b.value) - (a.value < b.value)
    if isinstance(a, Semver) and isinstance(b, Semver):
        return a.compare(b)
    raise TypeError(f"found no matching overload for {type_name(a)}.{name}({type_name(b)})")


def _string(v: Any, name: str) -> str:
    if not isinstance(v, str):
        raise TypeError(f"{name}() applies to a string, not {type_name(v)}")
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
        raise TypeError(f"{name}() applies to a list, not {type_name(target)}")
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


FUNCTIONS: dict[str, Callable[..., Any]] = {
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
        raise TypeError(f"{name}() applies to a kubernetes.Semver, not {type_name(v)}")
    return v
