"""What every object reader shares: the kinds read, the bounds, the field readers (each error
names the object and field), quantities and label selectors."""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import Context
from typing import Any

from solver.core import snapshot as s
from solver.core.errors import SnapshotInvalidError
from solver.core.quantity import parse_quantity

COST_ANNOTATION = "gangplace.io/preemption-cost"
# a workload's worth in the first tier (docs/design.md, "Objective"): on a standalone pod or a
# workload's root group; 1 when absent
VALUE_ANNOTATION = "gangplace.io/value"
MAX_DEPTH = 4  # docs/design.md: a workload tree is at most 4 levels deep

GROUP_KINDS = {"PodGroup", "CompositePodGroup"}
DRA_KINDS = {"ResourceSlice", "ResourceClaim", "ResourceClaimTemplate", "DeviceClass", "DeviceTaintRule"}
# Workload objects are templates (the runtime objects are PodGroups): counted as skipped.
# PersistentVolumeClaim, PersistentVolume, StorageClass: a pending pod's claims (kube/volumes.py)
VOLUME_KINDS = {"PersistentVolumeClaim", "PersistentVolume", "StorageClass", "CSINode", "CSIDriver", "VolumeAttachment",
                "CSIStorageCapacity"}
READ_KINDS = ({"Node", "Pod", "PriorityClass", "PodDisruptionBudget", "Namespace", "RuntimeClass"}
              | GROUP_KINDS | DRA_KINDS | VOLUME_KINDS)

Obj = Mapping[str, Any]


# Bounds on what is read (each named in its error message): CP-SAT works in int64, and its
# linear rows sum products of these, so one quantity stays far below 2^63; Kubernetes itself
# keeps counts and priorities in int32.
MAX_QUANTITY = 2**50  # base units: ~1.1e12 cores in millicores, 1 PiB in bytes
MAX_COST = 10**9  # gangplace.io/preemption-cost
MAX_VALUE = 10**6  # gangplace.io/value: with 10^4 workloads a priority's sum stays below 2^34
INT32_MAX = 2**31 - 1


def ident_of(obj: Obj) -> str:
    if type(obj) is dict and type(meta := obj.get("metadata")) is dict:  # the common case, cheaply
        kind, ns, name = obj.get("kind", "?"), meta.get("namespace") or "", meta.get("name", "?")
        if type(kind) is str and type(ns) is str and type(name) is str and (kind + ns + name).isascii():
            return f"{kind}/{ns}/{name}" if ns else f"{kind}/{name}"
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    meta = meta if isinstance(meta, Mapping) else {}
    kind = obj.get("kind", "?") if isinstance(obj, Mapping) else "?"

    def part(value: Any) -> str:
        return value if isinstance(value, str) and encodable(value) else "?"

    ns, name = part(meta.get("namespace") or ""), part(meta.get("name", "?"))
    return f"{part(kind)}/{ns}/{name}" if ns else f"{part(kind)}/{name}"


def encodable(text: str) -> bool:
    """No lone surrogate (a JSON "\\ud800"): the text can be written out as UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def text_field(obj: Obj, field: str, raw: Any) -> str:
    """A string field: a str that UTF-8 can carry."""
    if type(raw) is str and raw.isascii():
        return raw
    if not isinstance(raw, str):
        raise invalid(obj, field, f"expected a string, got {type(raw).__name__}")
    if not encodable(raw):
        raise invalid(obj, field, "not valid Unicode (a lone surrogate)")
    return raw


def opt_text_field(obj: Obj, field: str, raw: Any) -> str:
    """An optional string field: absent or null is ""; anything else must be a string."""
    return "" if raw is None else text_field(obj, field, raw)


def string_map_field(obj: Obj, field: str, raw: Any) -> dict[str, str]:
    """A map of strings to strings (labels, nodeSelector, matchLabels); absent is empty."""
    if raw is None:
        return {}
    if type(raw) is dict and all(type(k) is str and type(v) is str and k.isascii() and v.isascii()
                                 for k, v in raw.items()):
        return dict(raw)
    if not isinstance(raw, Mapping):
        raise invalid(obj, field, f"expected a map of strings, got {type(raw).__name__}")
    out = {}
    for k, v in raw.items():
        out[text_field(obj, f"{field}", k)] = text_field(obj, f"{field}[{k}]", v)
    return out


def entry_map(obj: Obj, field: str, raw: Any, what: str) -> Mapping[str, Any]:
    """An entry of a list that must be an object."""
    if not isinstance(raw, Mapping):
        raise invalid(obj, field, f"expected {what}, got {type(raw).__name__}")
    return raw


def invalid(obj: Obj, field: str, reason: str) -> SnapshotInvalidError:
    return SnapshotInvalidError(ident_of(obj), field, reason)


_PATHS: dict[str, tuple[str, ...]] = {}


def get_field(obj: Obj, path: str, kind: type | tuple[type, ...], default: Any = None) -> Any:
    parts = _PATHS.get(path)
    if parts is None:
        parts = _PATHS[path] = tuple(path.split("."))
    cur: Any = obj
    for part in parts:
        if type(cur) is not dict and not isinstance(cur, Mapping):
            raise invalid(obj, path, "expected an object")
        cur = cur.get(part)
        if cur is None:
            return default
    if type(cur) is kind or (kind is Mapping and type(cur) is dict):  # the common cases, cheaply
        return cur
    if not isinstance(cur, kind) or (kind is int and isinstance(cur, bool)):
        raise invalid(obj, path, f"expected {getattr(kind, '__name__', kind)}, got {type(cur).__name__}")
    return cur


def workload_value(obj: Obj, below: str = "") -> int | None:
    """``gangplace.io/value`` on a pod or group: a decimal integer from 0 to ``MAX_VALUE``, or
    None when absent. ``below``: why the object is not a workload's root (then a value on it
    is refused with that reason), "" for a root."""
    raw = get_field(obj, "metadata.annotations", Mapping, {})
    if VALUE_ANNOTATION not in raw:
        return None
    field, text = f"metadata.annotations[{VALUE_ANNOTATION}]", raw[VALUE_ANNOTATION]
    if not isinstance(text, str) or not text.isascii() or not text.isdigit() or int(text) > MAX_VALUE:
        raise invalid(obj, field, f"must be an integer from 0 to {MAX_VALUE}, got {text!r}")
    if below:
        raise invalid(obj, field, below)
    return int(text)


def quantity(obj: Obj, field: str, resource: str, raw: Any) -> int:
    """A resource.Quantity in base units: millicores for cpu, else rounded up to an integer.

    Example: cpu "250m" -> 250, cpu "1.5" -> 1500, memory "1Gi" -> 1073741824.
    """
    if type(raw) is str:
        known = _BASE_UNITS.get((raw, resource == "cpu"))
        if known is not None:
            return known
    try:
        value = parse_quantity(raw)
    except ValueError as exc:
        raise invalid(obj, field, f"unparsable quantity {raw!r}") from exc
    if value < 0:
        raise invalid(obj, field, f"negative quantity {raw!r}")
    if resource == "cpu":
        value = value.scaleb(3, Context(prec=200))
    if value > MAX_QUANTITY:
        raise invalid(obj, field,
                      f"quantity {raw!r} is beyond {MAX_QUANTITY} base units (the most gangplace plans with)")
    units = math.ceil(value)
    if type(raw) is str and len(_BASE_UNITS) < 65536:
        _BASE_UNITS[raw, resource == "cpu"] = units
    return units


# (quantity text, is cpu) -> base units: a snapshot repeats a few quantities many times
_BASE_UNITS: dict[tuple[str, bool], int] = {}


def string_list(obj: Obj, field: str) -> list[str]:
    """An optional list of strings at ``field``."""
    out: list[str] = []
    for i, v in enumerate(get_field(obj, field, list, [])):
        if not isinstance(v, str):
            raise invalid(obj, f"{field}[{i}]", f"expected a string, got {type(v).__name__}")
        out.append(v)
    return out


def resource_list(obj: Obj, field: str, raw: Any) -> dict[str, int]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise invalid(obj, field, "expected a map of resource quantities")
    return {text_field(obj, field, name): quantity(obj, f"{field}.{name}", name, q) for name, q in raw.items()}


def name_of(obj: Obj, namespaced: bool) -> tuple[str, str]:
    name = get_field(obj, "metadata.name", str)
    if not name:
        raise invalid(obj, "metadata.name", "missing")
    text_field(obj, "metadata.name", name)
    ns = text_field(obj, "metadata.namespace", get_field(obj, "metadata.namespace", str, "")) if namespaced else ""
    if namespaced and not ns:
        ns = "default"
    return ns, name


# ---- selectors -------------------------------------------------------------------


def list_field(obj: Obj, field: str, raw: Any) -> list[Any]:
    """An optional list field: [] when absent."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise invalid(obj, field, "expected a list")
    return raw


def requirements(obj: Obj, field: str, raw: Any) -> tuple[s.SelectorRequirement, ...]:
    out = []
    for i, req in enumerate(list_field(obj, field, raw)):
        op = req.get("operator") if isinstance(req, Mapping) else None
        if op not in ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"):
            raise invalid(obj, f"{field}[{i}].operator", f"unknown operator {op!r}")
        key = req.get("key")
        if not isinstance(key, str):
            raise invalid(obj, f"{field}[{i}].key", "missing")
        values = list_field(obj, f"{field}[{i}].values", req.get("values"))
        out.append(s.SelectorRequirement(key=key, operator=op, values=tuple(
            text_field(obj, f"{field}[{i}].values[{j}]", v) for j, v in enumerate(values))))
    return tuple(out)


def label_selector(obj: Obj, field: str, raw: Any) -> s.LabelSelector:
    if not isinstance(raw, Mapping):
        raise invalid(obj, field, "expected a label selector")
    labels = raw.get("matchLabels") or {}
    if not isinstance(labels, Mapping):
        raise invalid(obj, f"{field}.matchLabels", "expected a map")
    return s.LabelSelector(
        match_labels={str(k): str(v) for k, v in labels.items()},
        match_expressions=requirements(obj, f"{field}.matchExpressions", raw.get("matchExpressions")),
    )
