"""A compiled selector and what it sees of a device: the footprint of its literal look-ups, the
CEL view of a device, and the reasons of runtime errors."""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal
from typing import Any

import celpy.celtypes as ct
import lark
from celpy.evaluation import CELEvalError

from solver.cel.checker import Tree, call_args, child_tree, single_ident, token_of
from solver.cel.values import Quantity, parse_semver
from solver.core.snapshot import Device, Version


class Program:
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
        token = token_of(tree.children[0])
        text = str(token)
        if token.type == "STRING_LIT" and len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'" \
                and "\\" not in text:
            return text[1:-1]
    return None


def footprint_of(tree: Tree) -> tuple[tuple[str, str, str | None], ...] | None:
    """What of a device the expression can see, when it is only literal look-ups.

    Entries (``attributes`` | ``capacity``, domain, name | _WHOLE | _PRESENT). None when the
    expression uses ``device`` in any other way (iterates a map, indexes with a computed key,
    binds ``device`` ...): then results are cached per full ``Device.signature()``. With a
    footprint, devices that differ only elsewhere (a per-device uuid) share one evaluation.
    """
    parent: dict[int, Tree] = {}
    for node in tree.iter_subtrees():
        for child in node.children:
            if isinstance(child, lark.Tree):
                parent[id(child)] = node
    out: set[tuple[str, str, str | None]] = set()
    for node in tree.iter_subtrees():
        if node.data == "member_dot_arg" and any(single_ident(a) == "device" for a in call_args(node, 2)[:1]):
            return None  # a macro or cel.bind variable named device shadows it
        if node.data == "dot_ident" and str(node.children[0]) == "device":
            return None
        if node.data != "ident" or str(node.children[0]) != "device":
            continue
        path: list[str | None] = []
        cur: Tree = parent[id(node)]  # primary
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


def _in_operand(member: Tree, parent: dict[int, Tree]) -> str | None:
    """For ``"lit" in <member>``: the literal, else None."""
    cur: Tree = member
    while True:
        up = parent.get(id(cur))
        if up is None:
            return None
        if up.data == "relation" and len(up.children) == 2 and up.children[1] is cur:
            op = child_tree(up.children[0])
            return _literal_string(op.children[0]) if op.data == "relation_in" else None
        if len(up.children) != 1:
            return None
        cur = up


def projection(footprint: tuple[tuple[str, str, str | None], ...], device: Device) -> tuple[object, ...]:
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


def device_view(device: Device) -> ct.MapType:
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


def eval_reason(exc: BaseException) -> str:
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
