"""The compile-time cost estimate: cel-go's estimator with Kubernetes' function costs and DRA's
declared size bounds (``estimate_cost``)."""

from __future__ import annotations

import math
from typing import Any, TypeAlias, TypeGuard

import celpy
import lark

from solver.cel.checker import (
    BOOL,
    BYTES,
    DEVICE,
    DOUBLE,
    DURATION,
    DYN,
    INT,
    LIST,
    MACROS,
    MAP,
    NULL,
    NUMBERS,
    OVERLOADS,
    QUANTITY,
    SEMVER,
    STRING,
    TIMESTAMP,
    TYPE,
    UINT,
    Tree,
    call_args,
    child_tree,
    single_ident,
    token_of,
)
from solver.cel.errors import CelError

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
TRAVERSAL = 0.1  # common/cost.go StringTraversalCostFactor
REGEX = 0.25  # common/cost.go RegexStringLengthCostFactor
LIST_CREATE, MAP_CREATE = 10, 30  # common/cost.go ListCreateBaseCost, MapCreateBaseCost


def _sadd(a: int, b: int) -> int:
    return min(a + b, _U64)


def _smul(a: int, b: int) -> int:
    return min(a * b, _U64)


def by_factor(x: int, factor: float) -> int:
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
CType: TypeAlias = "str | tuple[str, CType] | tuple[str, CType, CType]"  # a name, a list or a map
_SCALAR_TYPES = {BOOL, INT, UINT, DOUBLE, DURATION, TIMESTAMP}  # checker/cost.go isScalar: size 1
_STRUCT_TYPES = {DEVICE, QUANTITY, SEMVER}
_ATTRS_T: CType = ("map", STRING, ("map", STRING, DYN))
_CAPS_T: CType = ("map", STRING, ("map", STRING, QUANTITY))
_DEVICE_FIELD_TYPES: dict[str, CType] = {"driver": STRING, "attributes": _ATTRS_T, "capacity": _CAPS_T,
                                         "allowMultipleAllocations": BOOL}


def _kind(t: CType) -> str:
    return t[0] if isinstance(t, tuple) else t


def _is_map(t: CType) -> TypeGuard[tuple[str, CType, CType]]:
    return _kind(t) == "map"


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

    def _pass(self, tree: Tree, scope: _Scope) -> _Est:
        return self.visit(tree.children[0], scope)

    _member = _primary = _paren_expr = _pass

    def _expr(self, tree: Tree, scope: _Scope) -> _Est:
        if len(tree.children) == 1:
            return self.visit(tree.children[0], scope)
        # functionCost, overloads.Conditional: the condition plus the dearer branch
        cond, yes, no = (self.visit(c, scope) for c in tree.children)
        return _Est(yes.type if yes.type == no.type else DYN, _sadd(cond.cost, max(yes.cost, no.cost)),
                    size=_union(yes.sized(), no.sized()), entry=_entry_union(yes.entry, no.entry))

    def _logical(self, tree: Tree, scope: _Scope) -> _Est:
        if len(tree.children) == 1:
            return self.visit(tree.children[0], scope)
        # functionCost, overloads.LogicalOr/LogicalAnd: at most both sides, no cost of its own
        left, right = (self.visit(c, scope) for c in tree.children)
        return _Est(BOOL, _sadd(left.cost, right.cost))

    _conditionalor = _conditionaland = _logical

    def _relation(self, tree: Tree, scope: _Scope) -> _Est:
        if len(tree.children) == 1:
            return self.visit(tree.children[0], scope)
        op_tree, right_tree = child_tree(tree.children[0]), tree.children[1]
        left, right = self.visit(op_tree.children[0], scope), self.visit(right_tree, scope)
        op = op_tree.data
        if op == "relation_in":
            return self._call("@in", None, [left, right])
        name = {"relation_lt": "_<_", "relation_le": "_<=_", "relation_gt": "_>_", "relation_ge": "_>=_",
                "relation_eq": "_==_", "relation_ne": "_!=_"}[op]
        return self._call(name, None, [left, right])

    def _arith(self, tree: Tree, scope: _Scope) -> _Est:
        if len(tree.children) == 1:
            return self.visit(tree.children[0], scope)
        op_tree, right_tree = child_tree(tree.children[0]), tree.children[1]
        left, right = self.visit(op_tree.children[0], scope), self.visit(right_tree, scope)
        name = {"addition_add": "_+_", "addition_sub": "_-_", "multiplication_mul": "_*_",
                "multiplication_div": "_/_", "multiplication_mod": "_%_"}[op_tree.data]
        return self._call(name, None, [left, right])

    _addition = _multiplication = _arith

    def _unary(self, tree: Tree, scope: _Scope) -> _Est:
        if len(tree.children) == 1:
            return self.visit(tree.children[0], scope)
        # cel-go's parser (VisitLogicalNot, VisitNegate) drops an even run of the same operator
        op, count = child_tree(tree.children[0]).data, 0
        node: Tree | lark.Token = tree
        while isinstance(node, lark.Tree) and node.data == "unary" and len(node.children) == 2 \
                and isinstance(first := node.children[0], lark.Tree) and first.data == op:
            count, node = count + 1, node.children[1]
        operand = self.visit(node, scope)
        if count % 2 == 0:
            return operand
        return self._call("!_" if op == "unary_not" else "-_", None, [operand])

    def _member_dot(self, tree: Tree, scope: _Scope) -> _Est:
        # costSelect: the operand, plus 1 when it is a map or a struct (not for dyn); the path
        # grows by the field name
        operand, name = self.visit(tree.children[0], scope), str(tree.children[1])
        t = operand.type
        cost = operand.cost
        if _kind(t) == "map" or t in _STRUCT_TYPES:
            cost = _sadd(cost, 1)
        if t == DEVICE:
            result = _DEVICE_FIELD_TYPES.get(name, DYN)
        elif _is_map(t):
            result = t[2]
        else:
            result = DYN
        return _Est(result, cost, path=(operand.path or ()) + (name,))

    def _member_index(self, tree: Tree, scope: _Scope) -> _Est:
        target, index = self.visit(tree.children[0], scope), self.visit(tree.children[1], scope)
        return self._call("_[_]", None, [target, index])

    def _member_object(self, tree: Tree, scope: _Scope) -> _Est:
        raise CelError("", "message construction is not supported")

    def _member_dot_arg(self, tree: Tree, scope: _Scope) -> _Est:
        target_tree, name = tree.children[0], str(tree.children[1])
        args = call_args(tree, 2)
        receiver = single_ident(target_tree)
        if receiver == "cel" and "cel" not in scope and name == "bind":
            return self._bind(args, scope)
        if name in MACROS:
            return self._comprehension(name, self.visit(target_tree, scope), args, scope)
        arg_ests = [self.visit(a, scope) for a in args]
        return self._call(name, self.visit(target_tree, scope), arg_ests)

    def _ident_arg(self, tree: Tree, scope: _Scope) -> _Est:
        name, args = str(tree.children[0]), call_args(tree, 1)
        if name == "has":
            # parser/macro.go MakeHas -> a presence test; costSelect charges its operand and
            # presenceTestCost, 0 in Kubernetes (environment/base.go PresenceTestHasCost(false))
            inner: Tree | lark.Token = args[0]
            while isinstance(inner, lark.Tree) and inner.data != "member_dot" and len(inner.children) == 1:
                inner = inner.children[0]
            return _Est(BOOL, self.visit(child_tree(inner).children[0], scope).cost)
        return self._call(name, None, [self.visit(a, scope) for a in args])

    _dot_ident_arg = _ident_arg

    def _ident(self, tree: Tree, scope: _Scope) -> _Est:
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

    def _list_lit(self, tree: Tree, scope: _Scope) -> _Est:
        # costCreateList: the elements plus ListCreateBaseCost; size and entry sizes are exact
        items = [self.visit(a, scope) for a in call_args(tree, 0)]
        cost, item_size = LIST_CREATE, ((0, 0) if not items else (_U64, 0))
        for item in items:
            cost = _sadd(cost, item.cost)
            item_size = _union(item_size, item.sized())
        types = {repr(i.type) for i in items}
        elem = items[0].type if len(types) == 1 else DYN
        return _Est(("list", elem), cost, size=(len(items), len(items)), entry=("list", (1, 1), item_size))

    def _map_lit(self, tree: Tree, scope: _Scope) -> _Est:
        # costCreateMap: keys and values plus MapCreateBaseCost
        parts = [self.visit(a, scope) for a in call_args(tree, 0)]
        keys, values = parts[0::2], parts[1::2]
        cost = MAP_CREATE
        key_size, value_size = ((0, 0), (0, 0)) if not keys else ((_U64, 0), (_U64, 0))
        for k, v in zip(keys, values, strict=False):  # a map literal's pairs
            cost = _sadd(_sadd(cost, k.cost), v.cost)
            key_size, value_size = _union(key_size, k.sized()), _union(value_size, v.sized())
        kt = keys[0].type if keys and len({repr(k.type) for k in keys}) == 1 else DYN
        vt = values[0].type if values and len({repr(v.type) for v in values}) == 1 else DYN
        return _Est(("map", kt, vt), cost, size=(len(keys), len(keys)), entry=("map", key_size, value_size))

    def _literal(self, tree: Tree, scope: _Scope) -> _Est:
        # ConstCost 0; computeExprSize: a string's length in code points, a byte string's in
        # bytes, 1 for any other constant
        token = token_of(tree.children[0])
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
        var = single_ident(args[0]) or ""
        init = self.visit(args[1], scope)
        body = self.visit(args[2], {**scope, var: _Local(init.type, init.path, init.size, init.entry)})
        return _Est(body.type, _sadd(_sadd(LIST_CREATE, init.cost), body.cost), size=body.size, entry=body.entry)

    def _comprehension(self, name: str, target: _Est, args: list[Any], scope: _Scope) -> _Est:
        """costComprehension over the expansion of parser/macro.go (makeQuantifier, MakeMap,
        MakeFilter): range + init + result + range size x (loop condition + loop step)."""
        var = single_ident(args[0]) or ""
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
        out: CType
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
            append = _sadd(1 + accu + LIST_CREATE, body.cost)
            step = append if name == "map" and len(parts) == 1 else _sadd(parts[0].cost, append)
            init, cond, result, out = LIST_CREATE, 0, accu, ("list", body.type)
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
            return by_factor(min(sz(a)[1], sz(b)[1]), TRAVERSAL), None, BOOL, None, None
        if name in ("_<_", "_<=_", "_>_", "_>=_"):
            a, b = args
            common = kinds(a) & kinds(b) | ({DOUBLE} if kinds(a) & NUMBERS and kinds(b) & NUMBERS else set())
            cost = 0
            if common & {STRING, BYTES}:  # LessString...: like equality
                cost = by_factor(min(sz(a)[1], sz(b)[1]), TRAVERSAL)
            if common - {STRING, BYTES} or not common:  # numbers, bool, time: 1
                cost = max(cost, 1)
            return cost, None, BOOL, None, None
        if name == "_+_":
            a, b = args
            common = kinds(a) & kinds(b)
            total = _size_add(sz(a), sz(b))
            cost, size, entry = 0, None, None
            if common & {STRING, BYTES}:  # AddString, AddBytes: traversal of the result
                cost, size = by_factor(total[1], TRAVERSAL), total
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
            t = operand.type[1] if k == "list" else operand.type[2] if _is_map(operand.type) else DYN
            return 1, value, t, (operand.path or ()) + (step,), None
        if name in ("startsWith", "endsWith") and args:  # StartsWithString: the prefix's traversal
            return by_factor(sz(args[0])[1], TRAVERSAL), None, BOOL, None, None
        if name == "contains" and target is not None and args:  # ContainsString: product of traversals
            return _smul(by_factor(sz(target)[1], TRAVERSAL), by_factor(sz(args[0])[1], TRAVERSAL)), \
                None, BOOL, None, None
        if name == "matches":  # Matches: (string + 1) traversal x regex length / 4
            text, regex = (target, args[0]) if target is not None else (args[0], args[1])
            return _smul(by_factor(_sadd(sz(text)[1], 1), TRAVERSAL), by_factor(sz(regex)[1], REGEX)), \
                None, BOOL, None, None
        if name == "string" and args and kinds(args[0]) & {BYTES}:  # BytesToString
            s = sz(args[0])
            return max(1, by_factor(s[1], TRAVERSAL)), (s[0] // 4, s[1]), STRING, None, None
        if name == "bytes" and args and kinds(args[0]) & {STRING}:  # StringToBytes
            s = sz(args[0])
            return max(1, by_factor(s[1], TRAVERSAL)), (s[0], _smul(s[1], 4)), BYTES, None, None
        # Kubernetes' library/cost.go CostEstimator.EstimateCallCost
        if name in ("quantity", "isQuantity", "semver", "isSemver") and args:
            return by_factor(sz(args[0])[1], TRAVERSAL), None, \
                {"quantity": QUANTITY, "semver": SEMVER}.get(name, BOOL), None, None
        if name in ("sign", "asInteger", "isInteger", "asApproximateFloat", "isGreaterThan", "isLessThan",
                    "compareTo", "add", "sub", "major", "minor", "patch"):
            return 1, None, self._result_type(name, target, args), None, None
        if target is not None and name in ("lowerAscii", "upperAscii", "substring", "trim"):
            s = sz(target)
            return by_factor(s[1], TRAVERSAL), s, STRING, None, None
        if target is not None and name == "replace" and len(args) >= 2:
            return (*self._replace(sz(target), sz(args[0]), sz(args[1])), STRING, None, None)
        if target is not None and name == "split":
            s = sz(target)
            limit = args[1].literal if len(args) > 1 and isinstance(args[1].literal, int) else None
            top = s[1] if limit is None else limit % 2**64
            return by_factor(s[1], 2 * TRAVERSAL), (0, top), ("list", STRING), None, None
        if target is not None and name == "join":
            count = sz(target)
            joined: Size = (0, 0)
            element = self._element_size(target)
            if element is not None:
                joined = _size_mul(count, element[1])
            if args:
                seps = (max(count[0] - 1, 0), max(count[1] - 1, 0))
                joined = _size_add(joined, _size_mul(sz(args[0]), seps))
            return by_factor(joined[1], TRAVERSAL), joined, STRING, None, None
        if target is not None and name in ("isSorted", "sum", "max", "min", "indexOf", "lastIndexOf"):
            element = self._element_size(target)
            t = self._result_type(name, target, args)
            if element is None:  # a string (or dyn): its traversal
                return by_factor(sz(target)[1], TRAVERSAL), None, t, None, None
            each = 1
            if element[0] in (STRING, BYTES):
                each = _sadd(1, by_factor(element[1][1], TRAVERSAL))
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
        return by_factor(s[1], 2 * TRAVERSAL), size

    @staticmethod
    def _result_type(name: str, target: _Est | None, args: list[_Est]) -> CType:
        if name in ("sum", "max", "min") and target is not None and _kind(target.type) == "list":
            return target.type[1]
        if name in ("_-_", "_*_", "_/_", "_%_", "-_") and args:
            return args[0].type if all(a.type == args[0].type for a in args) else DYN
        if name == "!_":
            return BOOL
        results = {o.result for o in OVERLOADS.get(name, ())
                   if (o.receiver is None) == (target is None) and len(o.params) == len(args)}
        if len(results) != 1:
            return DYN
        result = results.pop()
        return ("list", DYN) if result == LIST else ("map", DYN, DYN) if result == MAP else result


def estimate_cost(tree: Tree) -> int:
    """The worst-case cost kube-apiserver estimates for the selector (see above), in cel-go cost
    units; the tree must have passed ``_Checker``."""
    return _Coster().visit(tree, {}).cost
