"""The static checker: the types and overloads of the environment, checked before a selector runs,
and the rewrite of ``cel.bind`` and the three-argument ``map`` into what celpy evaluates."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, NamedTuple, TypeAlias

import celpy
import lark

from solver.cel.errors import CelError

Tree: TypeAlias = lark.Tree[lark.Token]  # what celpy's parser makes: tokens at the leaves

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
NUMBERS = {INT, UINT, DOUBLE}
_DEVICE_FIELDS = {"driver": STRING, "attributes": ATTRS, "capacity": CAPS, "allowMultipleAllocations": BOOL}


class Overload(NamedTuple):
    receiver: str | None  # None for a global call
    params: tuple[str, ...]
    result: str


_SIZED = (STRING, BYTES, LIST, MAP)
_TIME_GETTERS = ("getDate", "getDayOfMonth", "getDayOfWeek", "getDayOfYear", "getFullYear", "getMonth",
                 "getHours", "getMilliseconds", "getMinutes", "getSeconds")
# name -> (receiver or None for a global call, parameter types, result type)
_TABLE: dict[str, list[tuple[str | None, tuple[str, ...], str]]] = {
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
OVERLOADS = {name: [Overload(*o) for o in overloads] for name, overloads in _TABLE.items()}
MACROS = {"all": BOOL, "exists": BOOL, "exists_one": BOOL, "map": LIST, "filter": LIST}

_TEMPLATE_ENV = celpy.Environment()
_BIND_TEMPLATE = _TEMPLATE_ENV.compile("[__init].map(__var, __body)[0]")
_MAP3_TEMPLATE = _TEMPLATE_ENV.compile("(__target).filter(__var, __pred).map(__var, __body)")


def _norm(t: str) -> str:
    return MAP if t in _MAPS else t


def _fits(actual: str, wanted: str) -> bool:
    return wanted == ANY or actual == DYN or _norm(actual) == _norm(wanted)


def single_ident(tree: Any) -> str | None:
    """The name when ``tree`` is nothing but one identifier (``x``), else None."""
    while isinstance(tree, lark.Tree):
        if tree.data == "ident":
            return str(tree.children[0])
        if len(tree.children) != 1:
            return None
        tree = tree.children[0]
    return None


def child_tree(node: Tree | lark.Token) -> Tree:
    """A child the grammar makes a subtree (an operator, an expression), narrowed from a token."""
    if not isinstance(node, lark.Tree):
        raise TypeError(f"expected a subtree, found the token {node!r}")
    return node


def token_of(node: Tree | lark.Token) -> lark.Token:
    """A child the grammar makes a token (a literal), narrowed from a subtree."""
    if not isinstance(node, lark.Token):
        raise TypeError(f"expected a token, found the subtree {node.data!r}")
    return node


def call_args(tree: Tree, at: int) -> list[Tree]:
    if len(tree.children) > at and isinstance(exprlist := tree.children[at], lark.Tree):
        return [child_tree(a) for a in exprlist.children]  # an exprlist
    return []


class Checker:
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

    def _pass(self, tree: Tree, scope: dict[str, str]) -> str:
        return self.visit(tree.children[0], scope)

    _member = _primary = _paren_expr = _pass

    def _expr(self, tree: Tree, scope: dict[str, str]) -> str:
        if len(tree.children) == 1:
            return self.visit(tree.children[0], scope)
        cond, yes, no = (self.visit(c, scope) for c in tree.children)
        if cond not in (BOOL, DYN):
            raise self.fail(f"found no matching overload for '_?_:_' applied to '({cond}, ...)'")
        return yes if yes == no else DYN

    def _logical(self, op: str) -> Callable[[Tree, dict[str, str]], str]:
        def visit(tree: Tree, scope: dict[str, str]) -> str:
            if len(tree.children) == 1:
                return self.visit(tree.children[0], scope)
            types = [self.visit(c, scope) for c in tree.children]
            if any(t not in (BOOL, DYN) for t in types):
                raise self.fail(f"found no matching overload for '{op}' applied to '({', '.join(types)})'")
            return BOOL
        return visit

    def _conditionalor(self, tree: Tree, scope: dict[str, str]) -> str:
        return self._logical("_||_")(tree, scope)

    def _conditionaland(self, tree: Tree, scope: dict[str, str]) -> str:
        return self._logical("_&&_")(tree, scope)

    def _relation(self, tree: Tree, scope: dict[str, str]) -> str:
        if len(tree.children) == 1:
            return self.visit(tree.children[0], scope)
        op_tree, right_tree = child_tree(tree.children[0]), tree.children[1]
        op = {"relation_lt": "_<_", "relation_le": "_<=_", "relation_gt": "_>_", "relation_ge": "_>=_",
              "relation_eq": "_==_", "relation_ne": "_!=_", "relation_in": "@in"}[op_tree.data]
        left, right = self.visit(op_tree.children[0], scope), self.visit(right_tree, scope)
        bad = False
        if op in ("_==_", "_!=_"):
            bad = DYN not in (left, right) and _norm(left) != _norm(right) and not (
                left in NUMBERS and right in NUMBERS)
        elif op == "@in":
            bad = right != DYN and _norm(right) not in (LIST, MAP)
        else:
            ordered = NUMBERS | {STRING, BYTES, BOOL, TIMESTAMP, DURATION, DYN}
            bad = left not in ordered or right not in ordered or (
                DYN not in (left, right) and left != right and not (left in NUMBERS and right in NUMBERS))
        if bad:
            raise self.fail(f"found no matching overload for '{op}' applied to '({left}, {right})'")
        return BOOL

    def _arith(self, tree: Tree, scope: dict[str, str]) -> str:
        if len(tree.children) == 1:
            return self.visit(tree.children[0], scope)
        op_tree, right_tree = child_tree(tree.children[0]), tree.children[1]
        op = {"addition_add": "_+_", "addition_sub": "_-_", "multiplication_mul": "_*_",
              "multiplication_div": "_/_", "multiplication_mod": "_%_"}[op_tree.data]
        left, right = self.visit(op_tree.children[0], scope), self.visit(right_tree, scope)
        if DYN in (left, right):
            return DYN
        allowed = {"_+_": NUMBERS | {STRING, BYTES, LIST, DURATION}, "_-_": NUMBERS | {DURATION},
                   "_*_": NUMBERS, "_/_": NUMBERS, "_%_": {INT, UINT}}[op]
        if TIMESTAMP in (left, right) and op in ("_+_", "_-_"):
            return DYN  # timestamp arithmetic: left to the run time
        if left != right or left not in allowed:
            raise self.fail(f"found no matching overload for '{op}' applied to '({left}, {right})'")
        return left

    _addition = _multiplication = _arith

    def _unary(self, tree: Tree, scope: dict[str, str]) -> str:
        if len(tree.children) == 1:
            return self.visit(tree.children[0], scope)
        op, operand = child_tree(tree.children[0]).data, self.visit(tree.children[1], scope)
        if op == "unary_not" and operand not in (BOOL, DYN):
            raise self.fail(f"found no matching overload for '!_' applied to '({operand})'")
        if op == "unary_neg" and operand not in {INT, DOUBLE, DURATION, DYN}:
            raise self.fail(f"found no matching overload for '-_' applied to '({operand})'")
        return operand

    def _member_dot(self, tree: Tree, scope: dict[str, str]) -> str:
        target, name = self.visit(tree.children[0], scope), str(tree.children[1])
        if target == DEVICE:
            if name not in _DEVICE_FIELDS:
                raise self.fail(f"undefined field '{name}' of device")
            return _DEVICE_FIELDS[name]
        return self._element(target, f"field selection '.{name}'")

    def _member_index(self, tree: Tree, scope: dict[str, str]) -> str:
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

    def _member_object(self, tree: Tree, scope: dict[str, str]) -> str:
        raise self.fail("message construction is not supported")

    def _member_dot_arg(self, tree: Tree, scope: dict[str, str]) -> str:
        target_tree, name = tree.children[0], str(tree.children[1])
        args = call_args(tree, 2)
        receiver = single_ident(target_tree)
        if receiver is not None and receiver not in scope and receiver != "device":
            if f"{receiver}.{name}" == "cel.bind":
                return self._bind(args, scope)
            raise self.fail(f"unknown function '{receiver}.{name}'")
        if name in MACROS:
            return self._macro(name, target_tree, args, scope)
        if name not in OVERLOADS:
            raise self.fail(f"unknown function '{name}'")
        target = self.visit(target_tree, scope)
        return self._call(name, target, [self.visit(a, scope) for a in args])

    def _macro(self, name: str, target_tree: Any, args: list[Any], scope: dict[str, str]) -> str:
        arity = (2, 3) if name == "map" else (2,)
        if len(args) not in arity:
            raise self.fail(f"macro '{name}' takes {' or '.join(map(str, arity))} arguments, got {len(args)}")
        var = single_ident(args[0])
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
        return MACROS[name]

    def _bind(self, args: list[Any], scope: dict[str, str]) -> str:
        if len(args) != 3:
            raise self.fail(f"cel.bind takes 3 arguments, got {len(args)}")
        var = single_ident(args[0])
        if var is None:
            raise self.fail("the first argument of cel.bind must be a simple identifier")
        init = self.visit(args[1], scope)
        return self.visit(args[2], {**scope, var: init})

    def _call(self, name: str, target: str | None, args: list[str]) -> str:
        overloads = OVERLOADS.get(name)
        if overloads is None:
            raise self.fail(f"unknown function '{name}'")
        matching = [o for o in overloads
                    if (o.receiver is None) == (target is None) and len(o.params) == len(args)
                    and (target is None or (o.receiver is not None and _fits(target, o.receiver)))
                    and all(_fits(a, w) for a, w in zip(args, o.params, strict=True))]
        if not matching:
            shown = ", ".join(args)
            call = f"{target}.{name}({shown})" if target is not None else f"{name}({shown})"
            raise self.fail(f"found no matching overload for {call}")
        results = {o.result for o in matching}
        return results.pop() if len(results) == 1 else DYN

    def _ident_arg(self, tree: Tree, scope: dict[str, str]) -> str:
        name, args = str(tree.children[0]), call_args(tree, 1)
        if name == "has":
            if len(args) != 1:
                raise self.fail(f"macro 'has' takes 1 argument, got {len(args)}")
            inner: Tree | lark.Token = args[0]
            while isinstance(inner, lark.Tree) and inner.data != "member_dot" and len(inner.children) == 1:
                inner = inner.children[0]
            if not isinstance(inner, lark.Tree) or inner.data != "member_dot":
                raise self.fail("invalid argument to has() macro: it takes a field selection (a.b)")
            self.visit(inner, scope)
            return BOOL
        if name in MACROS:
            raise self.fail(f"macro '{name}' must be called as a method (list.{name}(x, ...))")
        if name not in OVERLOADS:
            raise self.fail(f"unknown function '{name}'")
        return self._call(name, None, [self.visit(a, scope) for a in args])

    _dot_ident_arg = _ident_arg

    def _ident(self, tree: Tree, scope: dict[str, str]) -> str:
        name = str(tree.children[0])
        if name in scope:
            return scope[name]
        if name == "device":
            return DEVICE
        if name in ("bool", "int", "uint", "double", "string", "bytes", "list", "map", "null_type", "type"):
            return TYPE
        raise self.fail(f"undeclared reference to '{name}'")

    _dot_ident = _ident

    def _list_lit(self, tree: Tree, scope: dict[str, str]) -> str:
        for a in call_args(tree, 0):
            self.visit(a, scope)
        return LIST

    def _map_lit(self, tree: Tree, scope: dict[str, str]) -> str:
        for a in call_args(tree, 0):
            self.visit(a, scope)
        return MAP

    def _literal(self, tree: Tree, scope: dict[str, str]) -> str:
        token = token_of(tree.children[0])
        return {"INT_LIT": INT, "UINT_LIT": UINT, "FLOAT_LIT": DOUBLE, "STRING_LIT": STRING,
                "MLSTRING_LIT": STRING, "BYTES_LIT": BYTES, "BOOL_LIT": BOOL, "NULL_LIT": NULL}[token.type]


def _as_expr(member: Tree) -> Tree:
    """Wrap a ``member`` subtree into a full ``expr`` subtree."""
    tree = member
    for data in ("unary", "multiplication", "addition", "relation", "conditionaland", "conditionalor", "expr"):
        tree = lark.Tree(data, [tree])
    return tree


def _substitute(template: Tree, values: dict[str, Tree]) -> Tree:
    out = copy.deepcopy(template)
    for node in out.iter_subtrees():
        for i, child in enumerate(node.children):
            if isinstance(child, lark.Tree) and child.data == "expr" and (name := single_ident(child)) is not None \
                    and name in values:
                node.children[i] = values[name]
    return out


def desugar(tree: Tree) -> Tree:
    """Desugar what celpy lacks: ``cel.bind(v, i, e)`` -> ``[i].map(v, e)[0]`` and the
    three-argument ``l.map(v, p, e)`` -> ``l.filter(v, p).map(v, e)``. Bottom-up."""
    for i, child in enumerate(tree.children):
        if isinstance(child, lark.Tree):
            tree.children[i] = desugar(child)
    if tree.data != "member":
        return tree
    call = tree.children[0]
    if not isinstance(call, lark.Tree) or call.data != "member_dot_arg":
        return tree
    target, name, args = child_tree(call.children[0]), str(call.children[1]), call_args(call, 2)
    if single_ident(target) == "cel" and name == "bind":
        new = _substitute(_BIND_TEMPLATE, {"__var": args[0], "__init": args[1], "__body": args[2]})
    elif name == "map" and len(args) == 3:
        new = _substitute(_MAP3_TEMPLATE, {"__target": _as_expr(target), "__var": args[0],
                                           "__pred": args[1], "__body": args[2]})
    else:
        return tree
    return lark.Tree("member", [lark.Tree("primary", [lark.Tree("paren_expr", [new])])])
