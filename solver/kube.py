"""Kubernetes objects (dicts, as ``kubectl get -o json`` prints them) -> ClusterSnapshot.

This is the edge where quantities become integers and every field is validated;
a malformed object raises ``SnapshotInvalidError`` naming the object
(``Kind/namespace/name``) and the field. Kinds that play no part are counted
in ``ClusterSnapshot.skipped_kinds``. No I/O: ``solver.loader`` reads files.

Field names are the upstream ones (kubernetes client 37.x models,
scheduling.k8s.io/v1beta1 and v1alpha3, resource.k8s.io/v1). ResourceSlices,
DeviceClasses, ResourceClaims, ResourceClaimTemplates and the claim references of pods
and PodGroups become ``ClusterSnapshot.dra`` (the DRA section below lists the choices
made where the API leaves room); CEL selectors are compiled here, so one that does not
compile names its object and field.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from decimal import Context
from typing import Any

from solver.model import cel
from solver.model import snapshot as s
from solver.model.errors import SnapshotInvalidError
from solver.model.quantity import parse_quantity

COST_ANNOTATION = "gangplace.io/preemption-cost"
MAX_DEPTH = 4  # docs/design.md: a workload tree is at most 4 levels deep

GROUP_KINDS = {"PodGroup", "CompositePodGroup"}
DRA_KINDS = {"ResourceSlice", "ResourceClaim", "ResourceClaimTemplate", "DeviceClass"}
# Workload objects are templates (the runtime objects are PodGroups): counted as skipped.
READ_KINDS = {"Node", "Pod", "PriorityClass", "PodDisruptionBudget", "Namespace"} | GROUP_KINDS | DRA_KINDS

Obj = Mapping[str, Any]


# Bounds on what is read (each named in its error message): CP-SAT works in int64, and its
# linear rows sum products of these, so one quantity stays far below 2^63; Kubernetes itself
# keeps counts and priorities in int32.
MAX_QUANTITY = 2**50  # base units: ~1.1e12 cores in millicores, 1 PiB in bytes
MAX_COST = 10**9  # gangplace.io/preemption-cost
INT32_MAX = 2**31 - 1


def _ident(obj: Obj) -> str:
    if type(obj) is dict and type(meta := obj.get("metadata")) is dict:  # the common case, cheaply
        kind, ns, name = obj.get("kind", "?"), meta.get("namespace") or "", meta.get("name", "?")
        if type(kind) is str and type(ns) is str and type(name) is str and (kind + ns + name).isascii():
            return f"{kind}/{ns}/{name}" if ns else f"{kind}/{name}"
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    meta = meta if isinstance(meta, Mapping) else {}
    kind = obj.get("kind", "?") if isinstance(obj, Mapping) else "?"

    def part(value: Any) -> str:
        return value if isinstance(value, str) and _encodable(value) else "?"

    ns, name = part(meta.get("namespace") or ""), part(meta.get("name", "?"))
    return f"{part(kind)}/{ns}/{name}" if ns else f"{part(kind)}/{name}"


def _encodable(text: str) -> bool:
    """No lone surrogate (a JSON "\\ud800"): the text can be written out as UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _text(obj: Obj, field: str, raw: Any) -> str:
    """A string field: a str that UTF-8 can carry."""
    if type(raw) is str and raw.isascii():
        return raw
    if not isinstance(raw, str):
        raise _fail(obj, field, f"expected a string, got {type(raw).__name__}")
    if not _encodable(raw):
        raise _fail(obj, field, "not valid Unicode (a lone surrogate)")
    return raw


def _string_map(obj: Obj, field: str, raw: Any) -> dict[str, str]:
    """A map of strings to strings (labels, nodeSelector, matchLabels); absent is empty."""
    if raw is None:
        return {}
    if type(raw) is dict and all(type(k) is str and type(v) is str and k.isascii() and v.isascii()
                                 for k, v in raw.items()):
        return dict(raw)
    if not isinstance(raw, Mapping):
        raise _fail(obj, field, f"expected a map of strings, got {type(raw).__name__}")
    out = {}
    for k, v in raw.items():
        out[_text(obj, f"{field}", k)] = _text(obj, f"{field}[{k}]", v)
    return out


def _entry_map(obj: Obj, field: str, raw: Any, what: str) -> Mapping[str, Any]:
    """An entry of a list that must be an object."""
    if not isinstance(raw, Mapping):
        raise _fail(obj, field, f"expected {what}, got {type(raw).__name__}")
    return raw


def _fail(obj: Obj, field: str, reason: str) -> SnapshotInvalidError:
    return SnapshotInvalidError(_ident(obj), field, reason)


_PATHS: dict[str, tuple[str, ...]] = {}


def _get(obj: Obj, path: str, kind: type | tuple[type, ...], default: Any = None) -> Any:
    parts = _PATHS.get(path)
    if parts is None:
        parts = _PATHS[path] = tuple(path.split("."))
    cur: Any = obj
    for part in parts:
        if type(cur) is not dict and not isinstance(cur, Mapping):
            raise _fail(obj, path, "expected an object")
        cur = cur.get(part)
        if cur is None:
            return default
    if type(cur) is kind or (kind is Mapping and type(cur) is dict):  # the common cases, cheaply
        return cur
    if not isinstance(cur, kind) or (kind is int and isinstance(cur, bool)):
        raise _fail(obj, path, f"expected {getattr(kind, '__name__', kind)}, got {type(cur).__name__}")
    return cur


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
        raise _fail(obj, field, f"unparsable quantity {raw!r}") from exc
    if value < 0:
        raise _fail(obj, field, f"negative quantity {raw!r}")
    if resource == "cpu":
        value = value.scaleb(3, Context(prec=200))
    if value > MAX_QUANTITY:
        raise _fail(obj, field, f"quantity {raw!r} is beyond {MAX_QUANTITY} base units (the most gangplace plans with)")
    units = math.ceil(value)
    if type(raw) is str and len(_BASE_UNITS) < 65536:
        _BASE_UNITS[raw, resource == "cpu"] = units
    return units


# (quantity text, is cpu) -> base units: a snapshot repeats a few quantities many times
_BASE_UNITS: dict[tuple[str, bool], int] = {}


def _resources(obj: Obj, field: str, raw: Any) -> dict[str, int]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise _fail(obj, field, "expected a map of resource quantities")
    return {_text(obj, field, name): quantity(obj, f"{field}.{name}", name, q) for name, q in raw.items()}


def _meta(obj: Obj, namespaced: bool) -> tuple[str, str]:
    name = _get(obj, "metadata.name", str)
    if not name:
        raise _fail(obj, "metadata.name", "missing")
    _text(obj, "metadata.name", name)
    ns = _text(obj, "metadata.namespace", _get(obj, "metadata.namespace", str, "")) if namespaced else ""
    if namespaced and not ns:
        ns = "default"
    return ns, name


# ---- selectors -------------------------------------------------------------------


def _items(obj: Obj, field: str, raw: Any) -> list[Any]:
    """An optional list field: [] when absent."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise _fail(obj, field, "expected a list")
    return raw


def _requirements(obj: Obj, field: str, raw: Any) -> tuple[s.SelectorRequirement, ...]:
    out = []
    for i, req in enumerate(_items(obj, field, raw)):
        op = req.get("operator") if isinstance(req, Mapping) else None
        if op not in ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"):
            raise _fail(obj, f"{field}[{i}].operator", f"unknown operator {op!r}")
        key = req.get("key")
        if not isinstance(key, str):
            raise _fail(obj, f"{field}[{i}].key", "missing")
        values = _items(obj, f"{field}[{i}].values", req.get("values"))
        out.append(s.SelectorRequirement(key=key, operator=op, values=tuple(str(v) for v in values)))
    return tuple(out)


def _label_selector(obj: Obj, field: str, raw: Any) -> s.LabelSelector:
    if not isinstance(raw, Mapping):
        raise _fail(obj, field, "expected a label selector")
    labels = raw.get("matchLabels") or {}
    if not isinstance(labels, Mapping):
        raise _fail(obj, f"{field}.matchLabels", "expected a map")
    return s.LabelSelector(
        match_labels={str(k): str(v) for k, v in labels.items()},
        match_expressions=_requirements(obj, f"{field}.matchExpressions", raw.get("matchExpressions")),
    )


# ---- nodes -----------------------------------------------------------------------


def parse_node(obj: Obj) -> s.Node:
    _, name = _meta(obj, namespaced=False)
    taints = []
    for i, t in enumerate(_get(obj, "spec.taints", list, [])):
        t = _entry_map(obj, f"spec.taints[{i}]", t, "a taint")
        effect = t.get("effect")
        if effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            raise _fail(obj, f"spec.taints[{i}].effect", f"unknown effect {effect!r}")
        taints.append(s.Taint(key=str(t.get("key", "")), value=str(t.get("value", "") or ""), effect=effect))
    return s.Node(
        name=s.NodeName(name),
        labels=_string_map(obj, "metadata.labels", _get(obj, "metadata.labels", Mapping, {})),
        allocatable=_resources(obj, "status.allocatable", _get(obj, "status.allocatable", Mapping, {})),
        taints=tuple(taints),
        unschedulable=bool(_get(obj, "spec.unschedulable", bool, False)),
    )


# ---- pods ------------------------------------------------------------------------


def _container_requests(obj: Obj, field: str, container: Any) -> dict[str, int]:
    """requests, falling back to limits per resource as API defaulting does."""
    container = _entry_map(obj, field, container, "a container")
    res = container.get("resources") or {}
    if not isinstance(res, Mapping):
        raise _fail(obj, f"{field}.resources", f"expected an object, got {type(res).__name__}")
    limits = _resources(obj, f"{field}.resources.limits", res.get("limits"))
    requests = _resources(obj, f"{field}.resources.requests", res.get("requests"))
    return {**limits, **requests}


def _add(into: dict[str, int], more: Mapping[str, int]) -> None:
    for k, v in more.items():
        into[k] = into.get(k, 0) + v


# (requests items, limits items) of a lone container -> the pod's effective request
_REQUESTS: dict[tuple[tuple[Any, ...], tuple[Any, ...]], dict[str, int]] = {}


def pod_requests(obj: Obj) -> dict[str, int]:
    """The Kubernetes effective request of a pod (resourcehelper.PodRequests).

    max(Σ containers + Σ sidecars, each init container + the sidecars started before it),
    then + spec.overhead, and `pods` = 1. Worked example: containers 500m + 250m, a
    sidecar init container 100m, then a regular init container 1000m:
    max(750 + 100, 1000 + 100) = 1100m.
    """
    spec = _get(obj, "spec", Mapping, {})
    containers = spec.get("containers")
    if type(containers) is list and len(containers) == 1 and not spec.get("initContainers") \
            and spec.get("overhead") is None and type(c0 := containers[0]) is dict \
            and type(res := c0.get("resources")) is dict and type(req := res.get("requests", {})) is dict \
            and type(lim := res.get("limits", {})) is dict \
            and all(type(v) is str for v in req.values()) and all(type(v) is str for v in lim.values()):
        # the common shape, one container: its requests are worked out once per distinct text
        key = (tuple(req.items()), tuple(lim.items()))  # text only: True and 1 would hash alike
        known = _REQUESTS.get(key)
        if known is not None:
            return dict(known)
        total = _container_requests(obj, "spec.containers[0]", c0)
        total["pods"] = 1
        if len(_REQUESTS) < 65536:
            _REQUESTS[key] = dict(total)
        return total
    total: dict[str, int] = {}
    for i, c in enumerate(_items(obj, "spec.containers", spec.get("containers"))):
        _add(total, _container_requests(obj, f"spec.containers[{i}]", c))
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for i, c in enumerate(_items(obj, "spec.initContainers", spec.get("initContainers"))):
        req = _container_requests(obj, f"spec.initContainers[{i}]", c)
        if isinstance(c, Mapping) and c.get("restartPolicy") == "Always":
            _add(sidecars, req)
            current = dict(sidecars)
        else:
            current = dict(sidecars)
            _add(current, req)
        for k, v in current.items():
            init_peak[k] = max(init_peak.get(k, 0), v)
    _add(total, sidecars)
    for k, v in init_peak.items():
        total[k] = max(total.get(k, 0), v)
    _add(total, _resources(obj, "spec.overhead", spec.get("overhead")))
    total["pods"] = 1
    return total


def _tolerations(obj: Obj) -> tuple[s.Toleration, ...]:
    out = []
    for i, t in enumerate(_get(obj, "spec.tolerations", list, [])):
        t = _entry_map(obj, f"spec.tolerations[{i}]", t, "a toleration")
        op = t.get("operator") or "Equal"
        if op not in ("Equal", "Exists"):
            raise _fail(obj, f"spec.tolerations[{i}].operator", f"unknown operator {op!r}")
        out.append(s.Toleration(key=str(t.get("key") or ""), operator=op, value=str(t.get("value") or ""),
                                effect=str(t.get("effect") or "")))
    return tuple(out)


def _terms(obj: Obj, field: str, terms: list[Any]) -> tuple[s.NodeSelectorTerm, ...]:
    out = []
    for i, t in enumerate(terms):
        if not isinstance(t, Mapping):
            raise _fail(obj, f"{field}[{i}]", "expected a node selector term")
        out.append(s.NodeSelectorTerm(
            match_expressions=_requirements(obj, f"{field}[{i}].matchExpressions", t.get("matchExpressions")),
            match_fields=_requirements(obj, f"{field}[{i}].matchFields", t.get("matchFields")),
        ))
    return tuple(out)


def _affinity_terms(obj: Obj) -> tuple[s.NodeSelectorTerm, ...]:
    field = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
    return _terms(obj, field, _get(obj, field, list, []))


def _with_label_keys(obj: Obj, field: str, selector: s.LabelSelector | None, raw: Mapping[str, Any],
                     names: tuple[str, ...]) -> s.LabelSelector | None:
    """matchLabelKeys (In) and mismatchLabelKeys (NotIn) merged with the pod's own label values,
    as kube-apiserver does at pod creation (applyLabelKeysToLabelSelector,
    pkg/registry/core/pod/strategy.go); keys the pod lacks are skipped; none with a nil selector."""
    labels = _get(obj, "metadata.labels", Mapping, {})
    extra = []
    for name, op in zip(names, ("In", "NotIn"), strict=False):
        for i, key in enumerate(_items(obj, f"{field}.{name}", raw.get(name))):
            if not isinstance(key, str) or not key:
                raise _fail(obj, f"{field}.{name}[{i}]", "expected a label key")
            if key in labels:
                extra.append(s.SelectorRequirement(key=key, operator=op, values=(str(labels[key]),)))
    if selector is None or not extra:
        return selector
    return s.LabelSelector(match_labels=selector.match_labels,
                           match_expressions=selector.match_expressions + tuple(extra))


def _entries(obj: Obj, field: str, what: str) -> list[tuple[str, Mapping[str, Any]]]:
    """(path, entry) of an optional list field whose entries must be objects."""
    out = []
    for i, raw in enumerate(_get(obj, field, list, [])):
        if not isinstance(raw, Mapping):
            raise _fail(obj, f"{field}[{i}]", f"expected {what}")
        out.append((f"{field}[{i}]", raw))
    return out


def _topology_key(obj: Obj, field: str, raw: Mapping[str, Any]) -> str:
    key = raw.get("topologyKey")
    if not isinstance(key, str) or not key:
        raise _fail(obj, f"{field}.topologyKey", "missing")
    return key


def _optional_selector(obj: Obj, field: str, raw: Any) -> s.LabelSelector | None:
    """None for an unset selector (a pod affinity term's or spread constraint's: it matches nothing)."""
    return None if raw is None else _label_selector(obj, field, raw)


def _int32(obj: Obj, field: str, raw: int) -> int:
    if not -INT32_MAX - 1 <= raw <= INT32_MAX:
        raise _fail(obj, field, f"must be a 32-bit integer, got {raw}")
    return raw


def _positive_int32(obj: Obj, field: str, raw: Any) -> int:
    if not isinstance(raw, int) or isinstance(raw, bool) or not 1 <= raw <= 2**31 - 1:
        raise _fail(obj, field, f"must be a positive 32-bit integer, got {raw!r}")
    return raw


def _pod_affinity_terms(obj: Obj, ns: str, kind: str) -> tuple[s.PodAffinityTerm, ...]:
    """spec.affinity.<kind>.requiredDuringSchedulingIgnoredDuringExecution, namespaces resolved
    (getNamespacesFromPodAffinityTerm: neither names nor a selector means the pod's own)."""
    out = []
    for tf, raw in _entries(obj, f"spec.affinity.{kind}.requiredDuringSchedulingIgnoredDuringExecution",
                            "a pod affinity term"):
        key = _topology_key(obj, tf, raw)
        selector = _optional_selector(obj, f"{tf}.labelSelector", raw.get("labelSelector"))
        names = [str(n) for n in _items(obj, f"{tf}.namespaces", raw.get("namespaces"))]
        ns_selector = _optional_selector(obj, f"{tf}.namespaceSelector", raw.get("namespaceSelector"))
        if not names and ns_selector is None:
            names = [ns]
        out.append(s.PodAffinityTerm(
            selector=_with_label_keys(obj, tf, selector, raw, ("matchLabelKeys", "mismatchLabelKeys")),
            namespaces=frozenset(names), namespace_selector=ns_selector, topology_key=key))
    return tuple(out)


def _spread(obj: Obj) -> tuple[s.SpreadConstraint, ...]:
    """spec.topologySpreadConstraints with whenUnsatisfiable DoNotSchedule (the filter);
    ScheduleAnyway ones only score and are checked for shape, then left out."""
    out = []
    for cf, raw in _entries(obj, "spec.topologySpreadConstraints", "a topology spread constraint"):
        skew = _positive_int32(obj, f"{cf}.maxSkew", raw.get("maxSkew"))
        key = _topology_key(obj, cf, raw)
        when = raw.get("whenUnsatisfiable")
        if when not in ("DoNotSchedule", "ScheduleAnyway"):
            raise _fail(obj, f"{cf}.whenUnsatisfiable", f"must be DoNotSchedule or ScheduleAnyway, got {when!r}")
        min_domains = raw.get("minDomains")
        if min_domains is not None:
            _positive_int32(obj, f"{cf}.minDomains", min_domains)
        policies = {}
        for name, default in (("nodeAffinityPolicy", "Honor"), ("nodeTaintsPolicy", "Ignore")):
            value = raw.get(name) or default
            if value not in ("Honor", "Ignore"):
                raise _fail(obj, f"{cf}.{name}", f"must be Honor or Ignore, got {value!r}")
            policies[name] = value == "Honor"
        selector = _with_label_keys(obj, cf, _optional_selector(obj, f"{cf}.labelSelector", raw.get("labelSelector")),
                                    raw, ("matchLabelKeys",))
        if when == "DoNotSchedule":
            out.append(s.SpreadConstraint(max_skew=skew, topology_key=key, selector=selector, min_domains=min_domains,
                                          honor_node_affinity=policies["nodeAffinityPolicy"],
                                          honor_node_taints=policies["nodeTaintsPolicy"]))
    return tuple(out)


def _host_ports(obj: Obj) -> tuple[s.HostPort, ...]:
    """hostPorts of the containers and of sidecar init containers (restartPolicy Always), as
    upstream GetHostPorts; hostPort 0 asks for none."""
    spec = obj.get("spec") or {}
    containers = spec.get("containers") if type(spec) is dict else None
    if type(containers) is list and not spec.get("initContainers") and all(
            type(c) is dict and "ports" not in c for c in containers):
        return ()  # no ports anywhere
    out = []
    for kind in ("containers", "initContainers"):
        for i, c in enumerate(_items(obj, f"spec.{kind}", spec.get(kind))):
            if not isinstance(c, Mapping) or (kind == "initContainers" and c.get("restartPolicy") != "Always"):
                continue
            for j, p in enumerate(_items(obj, f"spec.{kind}[{i}].ports", c.get("ports"))):
                pf = f"spec.{kind}[{i}].ports[{j}]"
                if not isinstance(p, Mapping):
                    raise _fail(obj, pf, "expected a container port")
                port = p.get("hostPort") or 0
                if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port <= 65535:
                    raise _fail(obj, f"{pf}.hostPort", f"must be a port number, got {port!r}")
                protocol = p.get("protocol") or "TCP"
                if protocol not in ("TCP", "UDP", "SCTP"):
                    raise _fail(obj, f"{pf}.protocol", f"must be TCP, UDP or SCTP, got {protocol!r}")
                ip = p.get("hostIP") or "0.0.0.0"
                if not isinstance(ip, str):
                    raise _fail(obj, f"{pf}.hostIP", "expected str")
                if port:
                    out.append(s.HostPort(protocol=protocol, ip=ip, port=port))
    return tuple(sorted(set(out), key=lambda h: (h.protocol, h.ip, h.port)))


def _cost(obj: Obj) -> int | None:
    raw = _get(obj, "metadata.annotations", Mapping, {})
    if COST_ANNOTATION not in raw:
        return None
    field = f"metadata.annotations[{COST_ANNOTATION}]"
    try:
        value = float(raw[COST_ANNOTATION])
    except (TypeError, ValueError) as exc:
        raise _fail(obj, field, f"not a number: {raw[COST_ANNOTATION]!r}") from exc
    if not math.isfinite(value) or value < 0 or value > MAX_COST:
        raise _fail(obj, field, f"must be a number from 0 to {MAX_COST}, got {raw[COST_ANNOTATION]!r}")
    return round(value * 1000)


class _Priorities:
    def __init__(self, classes: Iterable[Obj]) -> None:
        self.values: dict[str, tuple[int, str | None]] = {}
        self.default: tuple[int, str | None] | None = None
        self.warnings: list[str] = []
        for obj in classes:
            _, name = _meta(obj, namespaced=False)
            value = _get(obj, "value", int)
            if value is None:
                raise _fail(obj, "value", "missing")
            _int32(obj, "value", value)
            entry = (value, _get(obj, "preemptionPolicy", str))
            self.values[name] = entry
            if _get(obj, "globalDefault", bool, False):
                self.default = entry

    def resolve(self, obj: Obj, spec_path: str,
                spec: Mapping[str, Any] | None = None) -> tuple[int | None, str | None]:
        """(priority, preemptionPolicy) from spec.priority / priorityClassName / global default;
        ``spec``, when given, is the object at ``spec_path``."""
        if spec is None:
            spec = _get(obj, spec_path, Mapping, {})
        prio = _field(obj, spec, spec_path, "priority", int)
        if prio is not None:
            _int32(obj, f"{spec_path}.priority", prio)
        policy = _field(obj, spec, spec_path, "preemptionPolicy", str)
        if policy is not None and policy not in (s.PREEMPT_LOWER, s.PREEMPT_NEVER):
            raise _fail(obj, f"{spec_path}.preemptionPolicy", f"unknown policy {policy!r}")
        class_name = _field(obj, spec, spec_path, "priorityClassName", str)
        entry = None
        if class_name:
            entry = self.values.get(class_name)
            if entry is None and class_name in ("system-node-critical", "system-cluster-critical"):
                # built-in classes upstream creates
                entry = (2000001000 if class_name == "system-node-critical" else 2000000000, None)
            if entry is None and prio is None:
                raise _fail(obj, f"{spec_path}.priorityClassName", f"PriorityClass {class_name!r} not found")
            if entry is None:
                # deleted after admission: the scheduler reads only spec.priority (PodPriority,
                # k8s.io/component-helpers/scheduling/corev1), so the object is planned as it is
                self.warnings.append(f"{_ident(obj)}: {spec_path}.priorityClassName: PriorityClass "
                                     f"{class_name!r} not found; {spec_path}.priority {prio} is used")
        elif prio is None:
            entry = self.default
        if prio is None and entry is not None:
            prio = entry[0]
        if policy is None and entry is not None:
            policy = entry[1]
        return prio, policy


def _field(obj: Obj, section: Mapping[str, Any], prefix: str, key: str, kind: type, default: Any = None) -> Any:
    """``_get(obj, f"{prefix}.{key}", kind, default)`` where ``section`` is the object at prefix."""
    value = section.get(key)
    if value is None:
        return default
    if type(value) is kind or (kind is Mapping and type(value) is dict):
        return value
    return _get(obj, f"{prefix}.{key}", kind, default)


def parse_pod(obj: Obj, priorities: _Priorities) -> s.Pod | None:
    """None for a finished pod (phase Succeeded or Failed): it holds nothing."""
    meta = obj.get("metadata")
    name, ns = (meta.get("name"), meta.get("namespace") or "default") if type(meta) is dict else (None, None)
    if type(name) is not str or not name or not name.isascii() or type(ns) is not str or not ns.isascii():
        ns, name = _meta(obj, namespaced=True)  # the checking path names what is wrong
        meta = _get(obj, "metadata", Mapping, {})
    spec = _get(obj, "spec", Mapping, {})
    status = _get(obj, "status", Mapping, {})
    phase = _field(obj, status, "status", "phase", str, "")
    if phase in ("Succeeded", "Failed"):
        return None
    prio, policy = priorities.resolve(obj, "spec", spec)
    group = _get(obj, "spec.schedulingGroup.podGroupName", str) if "schedulingGroup" in spec else None
    start = _field(obj, status, "status", "startTime", str) or _field(obj, meta, "metadata", "creationTimestamp", str, "")
    node = _field(obj, spec, "spec", "nodeName", str)
    nominated = _field(obj, status, "status", "nominatedNodeName", str)
    affinity = spec.get("affinity") is not None
    return s.Pod(
        key=s.PodKey(f"{ns}/{name}"),
        namespace=ns,
        name=name,
        uid=_field(obj, meta, "metadata", "uid", str, ""),
        labels=_string_map(obj, "metadata.labels", _field(obj, meta, "metadata", "labels", Mapping, {})),
        node=s.NodeName(_text(obj, "spec.nodeName", node)) if node else None,
        requests=pod_requests(obj),
        group=s.GroupKey(f"{ns}/{group}") if group else None,
        priority=prio or 0,
        preemption_policy=policy or s.PREEMPT_LOWER,
        node_selector=_string_map(obj, "spec.nodeSelector", _field(obj, spec, "spec", "nodeSelector", Mapping, {})),
        affinity_terms=_affinity_terms(obj) if affinity else (),
        tolerations=_tolerations(obj) if spec.get("tolerations") is not None else (),
        preemption_cost_milli=_cost(obj) if meta.get("annotations") is not None else None,
        start_time=start,
        has_resource_claims=bool(_field(obj, spec, "spec", "resourceClaims", list, [])),
        scheduler_name=_field(obj, spec, "spec", "schedulerName", str) or s.DEFAULT_SCHEDULER,
        scheduling_gates=_scheduling_gates(obj) if spec.get("schedulingGates") is not None else (),
        terminating=(terminating := bool(_field(obj, meta, "metadata", "deletionTimestamp", str))),
        preempted=terminating and _preempted(obj),
        nominated_node=s.NodeName(nominated) if nominated and not node else None,
        pod_affinity=_pod_affinity_terms(obj, ns, "podAffinity") if affinity else (),
        pod_anti_affinity=_pod_affinity_terms(obj, ns, "podAntiAffinity") if affinity else (),
        spread=_spread(obj) if spec.get("topologySpreadConstraints") is not None else (),
        host_ports=_host_ports(obj),
    )


PREEMPTION_REASONS = ("PreemptionByScheduler", "EvictionByEvictionAPI")


def _preempted(obj: Obj) -> bool:
    """status.conditions holds DisruptionTarget=True for a preemption (PREEMPTION_REASONS)."""
    for i, c in enumerate(_get(obj, "status.conditions", list, [])):
        if not isinstance(c, Mapping):
            raise _fail(obj, f"status.conditions[{i}]", "expected a condition")
        if c.get("type") == "DisruptionTarget" and c.get("status") == "True" and c.get("reason") in PREEMPTION_REASONS:
            return True
    return False


def _scheduling_gates(obj: Obj) -> tuple[str, ...]:
    """spec.schedulingGates names. The API server refuses to bind a gated pod, and only a pod
    created with gates can have them (they can be removed, never added)."""
    out = []
    field = "spec.schedulingGates"
    for i, gate in enumerate(_get(obj, field, list, [])):
        name = gate.get("name") if isinstance(gate, Mapping) else None
        if not isinstance(name, str) or not name:
            raise _fail(obj, f"{field}[{i}].name", "missing")
        out.append(name)
    return tuple(out)


# ---- groups ----------------------------------------------------------------------


def parse_group(obj: Obj, priorities: _Priorities) -> tuple[s.Group, int | None]:
    """A PodGroup or CompositePodGroup, and its own priority (None: inherit the parent's)."""
    ns, name = _meta(obj, namespaced=True)
    kind = obj["kind"]
    policy = _get(obj, "spec.schedulingPolicy", Mapping)
    if policy is None:
        raise _fail(obj, "spec.schedulingPolicy", "missing")
    has_gang, has_basic = policy.get("gang") is not None, policy.get("basic") is not None
    if has_gang == has_basic:
        raise _fail(obj, "spec.schedulingPolicy", "exactly one of basic and gang must be set")
    min_count = None
    if has_gang:
        field = "minCount" if kind == "PodGroup" else "minGroupCount"
        min_count = _positive_int32(obj, f"spec.schedulingPolicy.gang.{field}",
                                    _get(obj, f"spec.schedulingPolicy.gang.{field}", int))
    topology = _get(obj, "spec.schedulingConstraints.topology", list, [])
    if len(topology) > 1:
        raise _fail(obj, "spec.schedulingConstraints.topology", "at most one topology constraint per group")
    topology_key = None
    if topology:
        topology_key = topology[0].get("key") if isinstance(topology[0], Mapping) else None
        if not isinstance(topology_key, str) or not topology_key:
            raise _fail(obj, "spec.schedulingConstraints.topology[0].key", "missing")
    mode = _get(obj, "spec.disruptionMode", Mapping, {})
    if mode.get("all") is not None and mode.get("single") is not None:
        raise _fail(obj, "spec.disruptionMode", "at most one of all and single")
    prio, preemption = priorities.resolve(obj, "spec")
    parent = _get(obj, "spec.parentCompositePodGroupName", str)
    group = s.Group(
        key=s.GroupKey(f"{ns}/{name}"),
        kind=kind,
        parent=s.GroupKey(f"{ns}/{parent}") if parent else None,
        min_count=min_count,
        topology_key=topology_key,
        disruption_all=mode.get("all") is not None,
        priority=prio or 0,
        preemption_policy=preemption,
    )
    return group, prio


def _resolve_tree(groups: dict[s.GroupKey, tuple[s.Group, int | None, Obj]]
                  ) -> tuple[tuple[s.Group, ...], dict[s.GroupKey, str]]:
    """Validate parents, cycles and depth; a group without a priority inherits its parent's.

    A group whose parent CompositePodGroup does not exist (yet), and every group under it, is
    incomplete: it is returned apart, group -> why, and left out of the tree (upstream holds its
    pods until the parent appears). A parent that exists but is a PodGroup is malformed.
    """
    incomplete: dict[s.GroupKey, str] = {}
    for group, _, obj in groups.values():
        if group.parent is None:
            continue
        parent = groups.get(group.parent)
        if parent is None:
            incomplete[group.key] = (f"CompositePodGroup {group.parent} not found: waiting for the "
                                     f"parent of PodGroup {group.key} to appear")
        elif parent[0].kind != "CompositePodGroup":
            raise _fail(obj, "spec.parentCompositePodGroupName",
                        f"{group.parent} is a PodGroup, not a CompositePodGroup")
    resolved: dict[s.GroupKey, s.Group] = {}
    for key in sorted(groups):
        if key in incomplete:
            continue
        chain = [key]
        while (parent := groups[chain[-1]][0].parent) is not None:
            if parent in chain:
                raise _fail(groups[key][2], "spec.parentCompositePodGroupName",
                            f"cycle of parents: {' -> '.join(chain + [parent])}")
            chain.append(parent)
            if parent in incomplete:
                break
        if chain[-1] in incomplete:
            incomplete[key] = incomplete[chain[-1]]
            continue
        if len(chain) > MAX_DEPTH:
            raise _fail(groups[key][2], "spec.parentCompositePodGroupName",
                        f"workload tree deeper than {MAX_DEPTH}: {' -> '.join(chain)}")
        priority = next((groups[g][1] for g in chain if groups[g][1] is not None), 0)
        group = groups[key][0]
        resolved[key] = s.Group(
            key=group.key, kind=group.kind, parent=group.parent, min_count=group.min_count,
            topology_key=group.topology_key, disruption_all=group.disruption_all,
            priority=priority, preemption_policy=group.preemption_policy,
        )
    return tuple(resolved[k] for k in sorted(resolved)), incomplete


# ---- PDBs ------------------------------------------------------------------------


def parse_pdb(obj: Obj) -> s.PodDisruptionBudget | None:
    """None for a budget without a selector: policy/v1 says it selects no pods."""
    ns, name = _meta(obj, namespaced=True)
    raw = _get(obj, "spec.selector", Mapping)
    if raw is None:
        return None
    allowed = _get(obj, "status.disruptionsAllowed", int, 0)
    return s.PodDisruptionBudget(
        key=s.PdbKey(f"{ns}/{name}"), namespace=ns,
        selector=_label_selector(obj, "spec.selector", raw),
        disruptions_allowed=allowed,
    )


# ---- DRA (resource.k8s.io/v1) ----------------------------------------------------
# Decisions where the API leaves room (selector semantics: solver.model.cel):
# - Only the slices of the newest pool.generation of each (driver, pool) count;
#   resourceSliceCount (incomplete pools) and sharedCounters / consumesCounters
#   (partitionable devices) are not modelled.
# - Device taints with an effect other than NoSchedule / NoExecute are dropped: upstream
#   treats None and unknown effects as no taint.
# - adminAccess and capacity requests (consumable capacity) are not modelled: such a
#   request is read as an ordinary, exclusive one (conservative: a plan stays feasible).
# - A pod's template claim: status.resourceClaimStatuses names the generated claim. A
#   running pod must have that entry and the claim must exist. A pending pod uses the
#   named claim when it exists, else the claim its template will create ("ns/pod#entry",
#   unallocated). An entry whose resourceClaimName is unset needs no claim (upstream: "can
#   be ignored") and is left out.
# - A PodGroup's shared template claim: the PodGroup's status.resourceClaimStatuses names
#   the generated claim (which must exist); without it, the claim the template will
#   create, "ns/pg#entry", unallocated.
# - status.reservedFor consumers other than pods and podgroups: Claim.reserved_other.

DRA_TAINT_EFFECTS = ("NoSchedule", "NoExecute")  # the effects that keep a device off new claims
_ATTRIBUTE_TYPES: dict[str, type] = {"bool": bool, "int": int, "string": str, "version": str}
_LIST_ATTRIBUTE_TYPES = ("bools", "ints", "strings", "versions")
_QUANTITIES: dict[str, int] = {}  # capacity text -> base units (valid, non-cpu): slices repeat a few values


def _qualify(driver: str, name: str) -> tuple[str, str]:
    """(domain, name): an unqualified name belongs to the driver's domain (the first "/" splits)."""
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


def _node_selector(obj: Obj, field: str, raw: Any) -> tuple[s.NodeSelectorTerm, ...]:
    if not isinstance(raw, Mapping):
        raise _fail(obj, field, "expected a node selector")
    terms = raw.get("nodeSelectorTerms")
    if not isinstance(terms, list) or not terms:
        raise _fail(obj, f"{field}.nodeSelectorTerms", "must be a non-empty list")
    return _terms(obj, f"{field}.nodeSelectorTerms", terms)


def _placement(obj: Obj, field: str, raw: Mapping[str, Any], options: tuple[str, ...]) -> str | None:
    """Which one of ``options`` (nodeName, nodeSelector, allNodes ...) is set; None for none."""
    chosen = [o for o in options if raw.get(o) not in (None, False, "")]
    if len(chosen) > 1:
        raise _fail(obj, field, f"exactly one of {', '.join(options)} must be set, got {' and '.join(chosen)}")
    return chosen[0] if chosen else None


def _attribute(obj: Obj, field: str, raw: Any) -> s.AttributeValue:
    if type(raw) is dict and len(raw) == 1:  # the usual shape, checked fast
        kind, value = next(iter(raw.items()))
        want = _ATTRIBUTE_TYPES.get(kind)
        if want is not None and type(value) is want:
            return _version(obj, field, value) if kind == "version" else value  # type: ignore[no-any-return]
    if not isinstance(raw, Mapping):
        raise _fail(obj, field, "expected a device attribute")
    if any(raw.get(k) is not None for k in _LIST_ATTRIBUTE_TYPES):
        raise _fail(obj, field, "list-valued attributes (DRAListTypeAttributes) are not supported")
    present = [k for k in _ATTRIBUTE_TYPES if raw.get(k) is not None]
    if len(present) != 1:
        raise _fail(obj, field, "exactly one of bool, int, string, version must be set")
    kind = present[0]
    value, want = raw[kind], _ATTRIBUTE_TYPES[kind]
    if not isinstance(value, want) or (want is int and isinstance(value, bool)):
        raise _fail(obj, f"{field}.{kind}", f"expected {want.__name__}, got {type(value).__name__}")
    return _version(obj, field, value) if kind == "version" else value  # type: ignore[no-any-return]


@functools.lru_cache(maxsize=4096)
def _is_semver(text: str) -> bool:
    try:
        cel.parse_semver(text)
    except ValueError:
        return False
    return True


def _version(obj: Obj, field: str, text: str) -> s.Version:
    if not _is_semver(text):
        raise _fail(obj, f"{field}.version", f"not a semantic version (semver.org 2.0.0): {text!r}")
    return s.Version(text)


def _device_taints(obj: Obj, field: str, raw: Any) -> tuple[s.Taint, ...]:
    out = []
    for i, t in enumerate(_items(obj, field, raw)):
        if not isinstance(t, Mapping) or not isinstance(t.get("key"), str) or not t["key"]:
            raise _fail(obj, f"{field}[{i}].key", "missing")
        effect = t.get("effect")
        if not isinstance(effect, str) or not effect:
            raise _fail(obj, f"{field}[{i}].effect", "missing")
        if effect in DRA_TAINT_EFFECTS:
            out.append(s.Taint(key=t["key"], value=str(t.get("value") or ""), effect=effect))
    return tuple(sorted(out, key=lambda t: (t.key, t.value, t.effect)))


def _device(obj: Obj, field: str, d: Any, driver: str, pool: str, per_device: bool,
            where: tuple[s.NodeName | None, tuple[s.NodeSelectorTerm, ...], bool]) -> s.Device:
    if not isinstance(d, Mapping):
        raise _fail(obj, field, "expected a device")
    name = d.get("name")
    if not isinstance(name, str) or not name:
        raise _fail(obj, f"{field}.name", "missing")
    values: dict[str, dict[str, dict[str, Any]]] = {"attributes": defaultdict(dict), "capacity": defaultdict(dict)}
    for kind, table in values.items():
        entries = d.get(kind)
        if entries is None:
            continue
        if not isinstance(entries, Mapping):
            raise _fail(obj, f"{field}.{kind}", "expected a map")
        first: dict[tuple[str, str], str] = {}
        for key, raw in entries.items():
            domain, ident = _qualify(driver, str(key))
            if not domain or not ident or "/" in ident:
                raise _fail(obj, f"{field}.{kind}[{key}]",
                            "a qualified name is a domain and a name separated by one slash")
            if (domain, ident) in first:
                raise _fail(obj, f"{field}.{kind}[{key}]",
                            f"the same name as {first[(domain, ident)]!r} once qualified")
            first[(domain, ident)] = str(key)
            if kind == "attributes":
                table[domain][ident] = _attribute(obj, f"{field}.{kind}[{key}]", raw)
            elif type(raw) is dict and type(raw.get("value")) is str and raw["value"] in _QUANTITIES:
                table[domain][ident] = _QUANTITIES[raw["value"]]
            else:
                if not isinstance(raw, Mapping) or raw.get("value") is None:
                    raise _fail(obj, f"{field}.{kind}[{key}].value", "missing")
                table[domain][ident] = quantity(obj, f"{field}.{kind}[{key}].value", "", raw["value"])
                if isinstance(raw["value"], str) and len(_QUANTITIES) < 4096:
                    _QUANTITIES[raw["value"]] = table[domain][ident]
    node, selector, all_nodes = where
    options = ("nodeName", "nodeSelector", "allNodes")
    chosen = _placement(obj, field, d, options)
    if per_device:
        if chosen is None:
            raise _fail(obj, field, "exactly one of nodeName, nodeSelector, allNodes must be set "
                                    "(spec.perDeviceNodeSelection is true)")
        if chosen == "nodeName" and not isinstance(d["nodeName"], str):
            raise _fail(obj, f"{field}.nodeName", "expected str")
        node = s.NodeName(d["nodeName"]) if chosen == "nodeName" else None
        selector = _node_selector(obj, f"{field}.nodeSelector", d["nodeSelector"]) if chosen == "nodeSelector" else ()
        all_nodes = chosen == "allNodes"
    elif chosen is not None:
        raise _fail(obj, f"{field}.{chosen}", "may only be set when spec.perDeviceNodeSelection is true")
    multiple = d.get("allowMultipleAllocations", False)
    if not isinstance(multiple, bool):
        raise _fail(obj, f"{field}.allowMultipleAllocations", f"expected bool, got {type(multiple).__name__}")
    return s.Device(
        driver=driver, pool=pool, name=name,
        attributes={dm: dict(sorted(v.items())) for dm, v in sorted(values["attributes"].items())},
        capacity={dm: dict(sorted(v.items())) for dm, v in sorted(values["capacity"].items())},
        allow_multiple=multiple,
        taints=_device_taints(obj, f"{field}.taints", d.get("taints")),
        node=node, node_selector=selector, all_nodes=all_nodes,
    )


def parse_resource_slice(obj: Obj) -> tuple[tuple[str, str], int, list[s.Device]]:
    """((driver, pool), pool generation, devices) of one ResourceSlice."""
    _meta(obj, namespaced=False)
    driver = _get(obj, "spec.driver", str)
    if not driver:
        raise _fail(obj, "spec.driver", "missing")
    pool = _get(obj, "spec.pool.name", str)
    if not pool:
        raise _fail(obj, "spec.pool.name", "missing")
    generation = _get(obj, "spec.pool.generation", int, 0)
    spec = obj["spec"]
    options = ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection")
    chosen = _placement(obj, "spec", spec, options)
    if chosen is None:
        raise _fail(obj, "spec", f"exactly one of {', '.join(options)} must be set")
    if chosen == "nodeName" and not isinstance(spec["nodeName"], str):
        raise _fail(obj, "spec.nodeName", "expected str")
    where = (
        s.NodeName(spec["nodeName"]) if chosen == "nodeName" else None,
        _node_selector(obj, "spec.nodeSelector", spec["nodeSelector"]) if chosen == "nodeSelector" else (),
        chosen == "allNodes",
    )
    devices: list[s.Device] = []
    seen: dict[str, int] = {}
    for i, d in enumerate(_get(obj, "spec.devices", list, [])):
        dev = _device(obj, f"spec.devices[{i}]", d, driver, pool, chosen == "perDeviceNodeSelection", where)
        if dev.name in seen:
            raise _fail(obj, f"spec.devices[{i}].name",
                        f"duplicate device name {dev.name!r} (also spec.devices[{seen[dev.name]}])")
        seen[dev.name] = i
        devices.append(dev)
    return (driver, pool), generation, devices


def _slices(objs: list[Obj]) -> tuple[s.Device, ...]:
    """Devices of the newest generation of every pool; a device key published twice is an error."""
    newest: dict[tuple[str, str], tuple[int, list[tuple[Obj, list[s.Device]]]]] = {}
    for obj in objs:
        pool, generation, devices = parse_resource_slice(obj)
        have = newest.get(pool)
        if have is None or generation > have[0]:
            newest[pool] = (generation, [(obj, devices)])
        elif generation == have[0]:
            have[1].append((obj, devices))
    out: dict[s.DeviceKey, s.Device] = {}
    owner: dict[s.DeviceKey, str] = {}
    for _, parts in newest.values():
        for obj, devices in sorted(parts, key=lambda p: _ident(p[0])):
            ident = _ident(obj)
            for i, dev in enumerate(devices):
                key = dev.key
                if key in out:
                    raise _fail(obj, f"spec.devices[{i}].name", f"device {key} is also published by {owner[key]}")
                out[key], owner[key] = dev, ident
    return tuple(out[k] for k in sorted(out))


def parse_device_class(obj: Obj) -> s.DeviceClass:
    _, name = _meta(obj, namespaced=False)
    return s.DeviceClass(name=name, selectors=_selectors(obj, "spec.selectors", _get(obj, "spec.selectors", list, [])))


def _selectors(obj: Obj, field: str, raw: Any) -> tuple[str, ...]:
    """CEL selectors, each compiled here so a bad one names its object and field."""
    out = []
    for i, sel in enumerate(_items(obj, field, raw)):
        spec = sel.get("cel") if isinstance(sel, Mapping) else None
        expr = spec.get("expression") if isinstance(spec, Mapping) else None
        if not isinstance(expr, str) or not expr:
            raise _fail(obj, f"{field}[{i}].cel.expression", "missing")
        try:
            cel.compile_expression(expr)
        except cel.CelError as exc:
            raise _fail(obj, f"{field}[{i}].cel.expression", f"CEL: {exc.reason}") from None
        out.append(expr)
    return tuple(out)


def _device_tolerations(obj: Obj, field: str, raw: Any) -> tuple[s.Toleration, ...]:
    out = []
    for i, t in enumerate(_items(obj, field, raw)):
        if not isinstance(t, Mapping):
            raise _fail(obj, f"{field}[{i}]", "expected a toleration")
        op = t.get("operator") or "Equal"
        if op not in ("Equal", "Exists"):
            raise _fail(obj, f"{field}[{i}].operator", f"unknown operator {op!r}")
        effect = t.get("effect") or ""
        if effect not in ("", *DRA_TAINT_EFFECTS):
            raise _fail(obj, f"{field}[{i}].effect", f"unknown effect {effect!r}")
        out.append(s.Toleration(key=str(t.get("key") or ""), operator=op, value=str(t.get("value") or ""),
                                effect=effect))
    return tuple(out)


def _sub_request(obj: Obj, field: str, raw: Any, name: str, classes: Mapping[str, s.DeviceClass]) -> s.SubRequest:
    if not isinstance(raw, Mapping):
        raise _fail(obj, field, "expected a device request")
    class_name = raw.get("deviceClassName")
    if not isinstance(class_name, str) or not class_name:
        raise _fail(obj, f"{field}.deviceClassName", "missing")
    if class_name not in classes:
        raise _fail(obj, f"{field}.deviceClassName", f"DeviceClass {class_name!r} not found")
    mode = raw.get("allocationMode") or "ExactCount"
    if mode not in ("ExactCount", "All"):
        raise _fail(obj, f"{field}.allocationMode", f"unknown allocation mode {mode!r}")
    count = raw.get("count")
    if count is None:
        count = 1
    _positive_int32(obj, f"{field}.count", count)
    return s.SubRequest(
        name=name, device_class=class_name,
        selectors=_selectors(obj, f"{field}.selectors", raw.get("selectors")),
        all_mode=mode == "All", count=count,
        tolerations=_device_tolerations(obj, f"{field}.tolerations", raw.get("tolerations")),
    )


def _new_name(obj: Obj, field: str, entry: object, seen: set[str], what: str) -> str:
    """``entry.name``: present, and not among ``seen`` (then added)."""
    name = entry.get("name") if isinstance(entry, Mapping) else None
    if not isinstance(name, str) or not name:
        raise _fail(obj, f"{field}.name", "missing")
    if name in seen:
        raise _fail(obj, f"{field}.name", f"duplicate {what} {name!r}")
    seen.add(name)
    return name


def _claim_spec(obj: Obj, prefix: str, classes: Mapping[str, s.DeviceClass]) -> s.ClaimSpec:
    """A ResourceClaimSpec at ``prefix`` (``spec`` of a claim, ``spec.spec`` of a template)."""
    field = f"{prefix}.devices"
    requests: list[s.Request] = []
    names: set[str] = set()  # requests and "request/sub"
    for i, r in enumerate(_get(obj, f"{field}.requests", list, [])):
        rf = f"{field}.requests[{i}]"
        name = _new_name(obj, rf, r, names, "request name")
        exactly, first = r.get("exactly"), r.get("firstAvailable")
        if (exactly is None) == (first is None):
            raise _fail(obj, rf, "exactly one of exactly and firstAvailable must be set")
        if exactly is not None:
            alternatives = [_sub_request(obj, f"{rf}.exactly", exactly, name, classes)]
        else:
            if not isinstance(first, list) or not first:
                raise _fail(obj, f"{rf}.firstAvailable", "must be a non-empty list")
            alternatives = []
            for j, sub in enumerate(first):
                sf = f"{rf}.firstAvailable[{j}]"
                sub_name = sub.get("name") if isinstance(sub, Mapping) else None
                if not isinstance(sub_name, str) or not sub_name:
                    raise _fail(obj, f"{sf}.name", "missing")
                if f"{name}/{sub_name}" in names:
                    raise _fail(obj, f"{sf}.name", f"duplicate subrequest name {sub_name!r}")
                names.add(f"{name}/{sub_name}")
                alternatives.append(_sub_request(obj, sf, sub, f"{name}/{sub_name}", classes))
        requests.append(s.Request(name=name, alternatives=tuple(alternatives)))
    constraints = []
    for i, c in enumerate(_get(obj, f"{field}.constraints", list, [])):
        cf = f"{field}.constraints[{i}]"
        if not isinstance(c, Mapping):
            raise _fail(obj, cf, "expected a constraint")
        refs = c.get("requests") or []
        if not isinstance(refs, list):
            raise _fail(obj, f"{cf}.requests", "expected a list")
        for j, ref in enumerate(refs):
            if ref not in names:
                raise _fail(obj, f"{cf}.requests[{j}]", f"no request or subrequest named {ref!r}")
        set_ = [k for k in ("matchAttribute", "distinctAttribute") if c.get(k) is not None]
        if len(set_) != 1:
            raise _fail(obj, cf, "exactly one of matchAttribute and distinctAttribute must be set")
        attr = c[set_[0]]
        domain, _, ident = attr.partition("/") if isinstance(attr, str) else ("", "", "")
        if not domain or not ident:
            raise _fail(obj, f"{cf}.{set_[0]}",
                        f"a fully qualified name must be a domain and a name separated by a slash, got {attr!r}")
        constraints.append(s.Constraint(
            requests=tuple(refs),
            match_attribute=attr if set_[0] == "matchAttribute" else None,
            distinct_attribute=attr if set_[0] == "distinctAttribute" else None,
        ))
    return s.ClaimSpec(requests=tuple(requests), constraints=tuple(constraints))


def parse_resource_claim(obj: Obj, classes: Mapping[str, s.DeviceClass]) -> s.Claim:
    ns, name = _meta(obj, namespaced=True)
    spec = _claim_spec(obj, "spec", classes)
    allocation: tuple[s.AllocatedDevice, ...] | None = None
    nodes: tuple[s.NodeSelectorTerm, ...] = ()
    raw = _get(obj, "status.allocation", Mapping)
    if raw is not None:
        results = []
        for i, r in enumerate(_get(obj, "status.allocation.devices.results", list, [])):
            rf = f"status.allocation.devices.results[{i}]"
            if not isinstance(r, Mapping):
                raise _fail(obj, rf, "expected an allocation result")
            for key in ("request", "driver", "pool", "device"):
                if not isinstance(r.get(key), str) or not r[key]:
                    raise _fail(obj, f"{rf}.{key}", "missing")
            results.append(s.AllocatedDevice(
                request=r["request"], device=s.DeviceKey(f"{r['driver']}/{r['pool']}/{r['device']}")))
        allocation = tuple(results)
        if raw.get("nodeSelector") is not None:
            nodes = _node_selector(obj, "status.allocation.nodeSelector", raw["nodeSelector"])
    pods, groups, other = [], [], []
    for i, ref in enumerate(_get(obj, "status.reservedFor", list, [])):
        rf = f"status.reservedFor[{i}]"
        if not isinstance(ref, Mapping) or not isinstance(ref.get("name"), str) or not ref["name"]:
            raise _fail(obj, f"{rf}.name", "missing")
        resource, group = str(ref.get("resource") or ""), str(ref.get("apiGroup") or "")
        if resource == "pods" and not group:
            pods.append(f"{ns}/{ref['name']}")
        elif resource == "podgroups":
            groups.append(f"{ns}/{ref['name']}")
        else:
            other.append(f"{resource}.{group}/{ns}/{ref['name']}" if group else f"{resource}/{ns}/{ref['name']}")
    return s.Claim(
        key=s.ClaimKey(f"{ns}/{name}"), namespace=ns, name=name, spec=spec,
        allocation=allocation, allocation_nodes=nodes,
        reserved_pods=tuple(pods), reserved_groups=tuple(groups), reserved_other=tuple(other),
    )


def _claim_refs(obj: Obj, field: str) -> list[tuple[int, str, str, str]]:
    """(index, entry name, "claim" | "template", target) of spec.resourceClaims (pod or PodGroup)."""
    out = []
    names: set[str] = set()
    for i, e in enumerate(_get(obj, field, list, [])):
        ef = f"{field}[{i}]"
        name = _new_name(obj, ef, e, names, "claim entry")
        claim, template = e.get("resourceClaimName"), e.get("resourceClaimTemplateName")
        if (claim is None) == (template is None) or not isinstance(claim or template, str) or not (claim or template):
            raise _fail(obj, ef, "exactly one of resourceClaimName and resourceClaimTemplateName must be set")
        out.append((i, name, "claim" if claim is not None else "template", claim or template))
    return out


def _claim_statuses(obj: Obj) -> dict[str, tuple[int, str | None]]:
    """status.resourceClaimStatuses: entry name -> (index, generated claim name or None)."""
    out: dict[str, tuple[int, str | None]] = {}
    for j, st in enumerate(_get(obj, "status.resourceClaimStatuses", list, [])):
        if not isinstance(st, Mapping) or not isinstance(st.get("name"), str):
            raise _fail(obj, f"status.resourceClaimStatuses[{j}].name", "missing")
        claim = st.get("resourceClaimName")
        if claim is not None and not isinstance(claim, str):
            raise _fail(obj, f"status.resourceClaimStatuses[{j}].resourceClaimName", "expected str")
        out[st["name"]] = (j, claim or None)
    return out


class _DraBuilder:
    """Resolves the claim references of pods and PodGroups into DraState.claims / pod_claims."""

    def __init__(self, by_kind: Mapping[str, list[Obj]]) -> None:
        self.classes = {c.name: c for c in sorted((parse_device_class(o) for o in by_kind["DeviceClass"]),
                                                  key=lambda c: c.name)}
        self.devices = _slices(by_kind["ResourceSlice"])
        self.claims: dict[s.ClaimKey, s.Claim] = {}
        for obj in by_kind["ResourceClaim"]:
            claim = parse_resource_claim(obj, self.classes)
            self.claims[claim.key] = claim
        self.templates: dict[str, s.ClaimSpec] = {}
        for obj in by_kind["ResourceClaimTemplate"]:
            ns, name = _meta(obj, namespaced=True)
            self.templates[f"{ns}/{name}"] = _claim_spec(obj, "spec.spec", self.classes)
        self.pod_claims: dict[str, tuple[s.PodClaim, ...]] = {}
        # PodGroup key -> entry name -> (kind, target, resolved claim key or None: not needed)
        self.group_refs: dict[str, dict[str, tuple[str, str, s.ClaimKey | None]]] = {}
        for obj in by_kind["PodGroup"]:
            self._group(obj)

    def _group(self, obj: Obj) -> None:
        ns, name = _meta(obj, namespaced=True)
        key = f"{ns}/{name}"
        statuses = _claim_statuses(obj)
        refs: dict[str, tuple[str, str, s.ClaimKey | None]] = {}
        for i, entry, kind, target in _claim_refs(obj, "spec.resourceClaims"):
            resolved: s.ClaimKey | None
            if kind == "claim":
                resolved = self._existing(obj, f"spec.resourceClaims[{i}]", ns, target)
            else:
                self._template(obj, f"spec.resourceClaims[{i}]", ns, target)
                j, generated = statuses.get(entry, (None, None))
                if j is not None and generated is None:
                    resolved = None  # upstream: generating a claim was not necessary
                elif generated is not None:
                    resolved = self._existing(obj, f"status.resourceClaimStatuses[{j}].resourceClaimName",
                                              ns, generated)
                else:
                    resolved = self._synthesize(ns, name, entry, target)
            refs[entry] = (kind, target, resolved)
        self.group_refs[key] = refs

    def _existing(self, obj: Obj, field: str, ns: str, name: str) -> s.ClaimKey:
        key = s.ClaimKey(f"{ns}/{name}")
        if key not in self.claims:
            raise _fail(obj, field, f"ResourceClaim {key} not found")
        return key

    def _template(self, obj: Obj, field: str, ns: str, name: str) -> s.ClaimSpec:
        spec = self.templates.get(f"{ns}/{name}")
        if spec is None:
            raise _fail(obj, field, f"ResourceClaimTemplate {ns}/{name} not found")
        return spec

    def _synthesize(self, ns: str, owner: str, entry: str, template: str) -> s.ClaimKey:
        """The claim a template will create for ``owner`` (a pod or a PodGroup), unallocated."""
        key = s.ClaimKey(f"{ns}/{owner}#{entry}")
        self.claims[key] = s.Claim(key=key, namespace=ns, name=f"{owner}#{entry}",
                                   spec=self.templates[f"{ns}/{template}"])
        return key

    def pod(self, obj: Obj, pod: s.Pod) -> None:
        refs = _claim_refs(obj, "spec.resourceClaims")
        if not refs:
            return
        ns, name = pod.namespace, pod.name
        statuses = _claim_statuses(obj)
        group_refs = self.group_refs.get(pod.group, {}) if pod.group is not None else {}
        out = []
        for i, entry, kind, target in refs:
            field = f"spec.resourceClaims[{i}]"
            shared = group_refs.get(entry)
            if shared is not None and shared[:2] == (kind, target):
                if shared[2] is not None:
                    out.append(s.PodClaim(name=entry, claim=shared[2], shared_by=pod.group))
                continue
            if kind == "claim":
                out.append(s.PodClaim(name=entry, claim=self._existing(obj, field, ns, target)))
                continue
            j, generated = statuses.get(entry, (None, None))
            if j is not None and generated is None:
                continue  # upstream: generating a claim was not necessary
            if generated is not None and (pod.node is not None or f"{ns}/{generated}" in self.claims):
                key = self._existing(obj, f"status.resourceClaimStatuses[{j}].resourceClaimName", ns, generated)
            elif pod.node is not None:
                raise _fail(obj, "status.resourceClaimStatuses",
                            f"a running pod needs the name of the claim generated for {field} ({entry!r})")
            else:
                self._template(obj, field, ns, target)
                key = self._synthesize(ns, name, entry, target)
            out.append(s.PodClaim(name=entry, claim=key))
        if out:
            self.pod_claims[pod.key] = tuple(out)

    def state(self) -> s.DraState:
        return s.DraState(
            devices=self.devices,
            classes=self.classes,
            claims={k: self.claims[k] for k in sorted(self.claims)},
            pod_claims={k: self.pod_claims[k] for k in sorted(self.pod_claims)},
        )


# ---- the whole snapshot ----------------------------------------------------------


def flatten(objects: Iterable[Any], *, item_kind: str | None = None, item_api: str | None = None) -> list[Obj]:
    """Expand `List` objects (kind List or *List with items) into their items. The items of a
    typed list as the API server returns it (a NodeList, a PodList) carry no kind or
    apiVersion: they take the list's, as kubectl does."""
    out: list[Obj] = []
    for obj in objects:
        if obj is None:
            continue
        if not isinstance(obj, Mapping):
            raise SnapshotInvalidError("<document>", "", f"expected a Kubernetes object, got {type(obj).__name__}")
        if item_kind is not None and "kind" not in obj:
            obj = {**obj, "kind": item_kind, **({"apiVersion": item_api} if item_api and "apiVersion" not in obj else {})}
        kind = obj.get("kind")
        if isinstance(obj.get("items"), list) and (kind == "List" or str(kind).endswith("List")):
            typed = str(kind)[: -len("List")] if kind != "List" else None
            out.extend(flatten(obj["items"], item_kind=typed or None, item_api=obj.get("apiVersion")))
        else:
            if not isinstance(kind, str) or not kind:
                raise SnapshotInvalidError(_ident({**obj, "kind": "?"}), "kind", "missing")
            out.append(obj)
    return out


def snapshot_from_objects(objects: Iterable[Any]) -> s.ClusterSnapshot:
    by_kind: dict[str, list[Obj]] = defaultdict(list)
    skipped: Counter[str] = Counter()
    seen: set[str] = set()
    for obj in flatten(objects):
        kind = obj["kind"]
        if kind not in READ_KINDS:
            skipped[kind] += 1
            continue
        ident = _ident(obj)
        if ident in seen:
            raise _fail(obj, "metadata.name", "duplicate object")
        seen.add(ident)
        by_kind[kind].append(obj)
    priorities = _Priorities(by_kind["PriorityClass"])
    nodes = tuple(sorted((parse_node(o) for o in by_kind["Node"]), key=lambda n: n.name))
    raw_groups: dict[s.GroupKey, tuple[s.Group, int | None, Obj]] = {}
    for obj in by_kind["PodGroup"] + by_kind["CompositePodGroup"]:
        group, prio = parse_group(obj, priorities)
        if group.key in raw_groups:
            raise _fail(obj, "metadata.name", f"a PodGroup and a CompositePodGroup share the name {group.key}")
        raw_groups[group.key] = (group, prio, obj)
    groups, incomplete = _resolve_tree(raw_groups)
    group_kind = {g.key: g.kind for g in groups}
    node_names = {n.name for n in nodes}
    dra = _DraBuilder(by_kind)
    pods = []
    waiting: list[s.WaitingPod] = []
    warnings = priorities.warnings
    for obj in by_kind["Pod"]:
        pod = parse_pod(obj, priorities)
        if pod is None:
            skipped["Pod(finished)"] += 1
            continue
        if pod.node is not None and pod.node not in node_names:
            raise _fail(obj, "spec.nodeName", f"Node {pod.node} not found")
        if pod.group is not None and group_kind.get(pod.group) != "PodGroup":
            if group_kind.get(pod.group) == "CompositePodGroup":
                raise _fail(obj, "spec.schedulingGroup.podGroupName",
                            f"{pod.group} is a CompositePodGroup: a pod belongs to a PodGroup")
            why = incomplete.get(pod.group) or (f"PodGroup {pod.group} not found: waiting for the pod's "
                                                "pod group to appear in the scheduling queue")
            if pod.node is None:
                # upstream holds the pod at PreEnqueue until its group (tree) exists
                waiting.append(s.WaitingPod(pod=pod.key, reason=why))
                continue
            # a running pod outlives its group: it runs, holds its room and is a victim on its own
            warnings.append(f"{_ident(obj)}: spec.schedulingGroup.podGroupName: {why}; "
                            "the running pod counts as a pod outside any group")
            pod = dataclasses.replace(pod, group=None)
        dra.pod(obj, pod)
        pods.append(pod)
    pdbs = tuple(p for o in by_kind["PodDisruptionBudget"] if (p := parse_pdb(o)) is not None)
    namespaces = {}
    for obj in by_kind["Namespace"]:  # their labels: namespaceSelector of pod affinity terms
        _, name = _meta(obj, namespaced=False)
        namespaces[name] = {"kubernetes.io/metadata.name": name,
                            **{str(k): str(v) for k, v in _get(obj, "metadata.labels", Mapping, {}).items()}}
    return s.ClusterSnapshot(
        nodes=nodes,
        pods=tuple(sorted(pods, key=lambda p: p.key)),
        groups=groups,
        pdbs=tuple(sorted(pdbs, key=lambda p: p.key)),
        dra=dra.state(),
        skipped_kinds=dict(sorted(skipped.items())),
        namespace_labels=dict(sorted(namespaces.items())),
        waiting=tuple(sorted(waiting, key=lambda w: w.pod)),
        warnings=tuple(warnings),
    )
