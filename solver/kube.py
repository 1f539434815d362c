"""Kubernetes objects (dicts, as ``kubectl get -o json`` prints them) -> ClusterSnapshot.

This is the edge where quantities become integers and every field is validated;
a malformed object raises ``SnapshotInvalidError`` naming the object
(``Kind/namespace/name``) and the field. Kinds that play no part are counted
in ``ClusterSnapshot.skipped_kinds``. No I/O: ``solver.loader`` reads files.

Field names are the upstream ones (kubernetes client 37.x models,
scheduling.k8s.io/v1beta1 and v1alpha3).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from kubernetes.utils import parse_quantity

from solver.model import snapshot as s
from solver.model.errors import SnapshotInvalidError

COST_ANNOTATION = "gangplace.io/preemption-cost"
MAX_DEPTH = 4  # DESIGN.md: a workload tree is at most 4 levels deep

GROUP_KINDS = {"PodGroup", "CompositePodGroup"}
DRA_KINDS = {"ResourceSlice", "ResourceClaim", "ResourceClaimTemplate", "DeviceClass"}
# Workload objects are templates (the runtime objects are PodGroups): counted as skipped.
READ_KINDS = {"Node", "Pod", "PriorityClass", "PodDisruptionBudget"} | GROUP_KINDS

Obj = Mapping[str, Any]


def _ident(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    kind = obj.get("kind", "?")
    ns = meta.get("namespace")
    return f"{kind}/{ns}/{meta.get('name', '?')}" if ns else f"{kind}/{meta.get('name', '?')}"


def _fail(obj: Obj, field: str, reason: str) -> SnapshotInvalidError:
    return SnapshotInvalidError(_ident(obj), field, reason)


def _get(obj: Obj, path: str, kind: type | tuple[type, ...], default: Any = None) -> Any:
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, Mapping):
            raise _fail(obj, path, "expected an object")
        cur = cur.get(part)
        if cur is None:
            return default
    if not isinstance(cur, kind) or (kind is int and isinstance(cur, bool)):
        raise _fail(obj, path, f"expected {getattr(kind, '__name__', kind)}, got {type(cur).__name__}")
    return cur


def quantity(obj: Obj, field: str, resource: str, raw: Any) -> int:
    """A resource.Quantity in base units: millicores for cpu, else rounded up to an integer.

    Example: cpu "250m" -> 250, cpu "1.5" -> 1500, memory "1Gi" -> 1073741824.
    """
    try:
        value = parse_quantity(raw)
    except (ValueError, TypeError, InvalidOperation) as exc:
        raise _fail(obj, field, f"unparsable quantity {raw!r}") from exc
    if value < 0:
        raise _fail(obj, field, f"negative quantity {raw!r}")
    if resource == "cpu":
        value = value * 1000
    return int(math.ceil(Decimal(value)))


def _resources(obj: Obj, field: str, raw: Any) -> dict[str, int]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise _fail(obj, field, "expected a map of resource quantities")
    return {name: quantity(obj, f"{field}.{name}", name, q) for name, q in raw.items()}


def _meta(obj: Obj, namespaced: bool) -> tuple[str, str]:
    name = _get(obj, "metadata.name", str)
    if not name:
        raise _fail(obj, "metadata.name", "missing")
    ns = _get(obj, "metadata.namespace", str, "") if namespaced else ""
    if namespaced and not ns:
        ns = "default"
    return ns, name


# ---- selectors -------------------------------------------------------------------


def _requirements(obj: Obj, field: str, raw: Any) -> tuple[s.SelectorRequirement, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise _fail(obj, field, "expected a list")
    out = []
    for i, req in enumerate(raw):
        op = req.get("operator") if isinstance(req, Mapping) else None
        if op not in ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"):
            raise _fail(obj, f"{field}[{i}].operator", f"unknown operator {op!r}")
        key = req.get("key")
        if not isinstance(key, str):
            raise _fail(obj, f"{field}[{i}].key", "missing")
        values = req.get("values") or []
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
        effect = t.get("effect")
        if effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            raise _fail(obj, f"spec.taints[{i}].effect", f"unknown effect {effect!r}")
        taints.append(s.Taint(key=str(t.get("key", "")), value=str(t.get("value", "") or ""), effect=effect))
    return s.Node(
        name=s.NodeName(name),
        labels=dict(_get(obj, "metadata.labels", Mapping, {})),
        allocatable=_resources(obj, "status.allocatable", _get(obj, "status.allocatable", Mapping, {})),
        taints=tuple(taints),
        unschedulable=bool(_get(obj, "spec.unschedulable", bool, False)),
    )


# ---- pods ------------------------------------------------------------------------


def _container_requests(obj: Obj, field: str, container: Any) -> dict[str, int]:
    """requests, falling back to limits per resource as API defaulting does."""
    res = container.get("resources") or {} if isinstance(container, Mapping) else {}
    limits = _resources(obj, f"{field}.resources.limits", res.get("limits"))
    requests = _resources(obj, f"{field}.resources.requests", res.get("requests"))
    return {**limits, **requests}


def _add(into: dict[str, int], more: Mapping[str, int]) -> None:
    for k, v in more.items():
        into[k] = into.get(k, 0) + v


def pod_requests(obj: Obj) -> dict[str, int]:
    """The Kubernetes effective request of a pod (resourcehelper.PodRequests).

    max(Σ containers + Σ sidecars, each init container + the sidecars started before it),
    then + spec.overhead, and `pods` = 1. Worked example: containers 500m + 250m, a
    sidecar init container 100m, then a regular init container 1000m:
    max(750 + 100, 1000 + 100) = 1100m.
    """
    spec = obj.get("spec") or {}
    total: dict[str, int] = {}
    for i, c in enumerate(spec.get("containers") or []):
        _add(total, _container_requests(obj, f"spec.containers[{i}]", c))
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for i, c in enumerate(spec.get("initContainers") or []):
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
        op = t.get("operator") or "Equal"
        if op not in ("Equal", "Exists"):
            raise _fail(obj, f"spec.tolerations[{i}].operator", f"unknown operator {op!r}")
        out.append(s.Toleration(key=str(t.get("key") or ""), operator=op, value=str(t.get("value") or ""),
                                effect=str(t.get("effect") or "")))
    return tuple(out)


def _affinity_terms(obj: Obj) -> tuple[s.NodeSelectorTerm, ...]:
    field = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
    terms = _get(obj, field, list, [])
    return tuple(
        s.NodeSelectorTerm(
            match_expressions=_requirements(obj, f"{field}[{i}].matchExpressions", t.get("matchExpressions")),
            match_fields=_requirements(obj, f"{field}[{i}].matchFields", t.get("matchFields")),
        )
        for i, t in enumerate(terms)
    )


def _cost(obj: Obj) -> int | None:
    raw = (obj.get("metadata") or {}).get("annotations", {}) or {}
    if COST_ANNOTATION not in raw:
        return None
    field = f"metadata.annotations[{COST_ANNOTATION}]"
    try:
        value = float(raw[COST_ANNOTATION])
    except (TypeError, ValueError) as exc:
        raise _fail(obj, field, f"not a number: {raw[COST_ANNOTATION]!r}") from exc
    if not math.isfinite(value) or value < 0:
        raise _fail(obj, field, f"must be a non-negative number, got {raw[COST_ANNOTATION]!r}")
    return round(value * 1000)


class _Priorities:
    def __init__(self, classes: Iterable[Obj]) -> None:
        self.values: dict[str, tuple[int, str | None]] = {}
        self.default: tuple[int, str | None] | None = None
        for obj in classes:
            _, name = _meta(obj, namespaced=False)
            value = _get(obj, "value", int)
            if value is None:
                raise _fail(obj, "value", "missing")
            entry = (value, _get(obj, "preemptionPolicy", str))
            self.values[name] = entry
            if _get(obj, "globalDefault", bool, False):
                self.default = entry

    def resolve(self, obj: Obj, spec_path: str) -> tuple[int | None, str | None]:
        """(priority, preemptionPolicy) from spec.priority / priorityClassName / global default."""
        prio = _get(obj, f"{spec_path}.priority", int)
        policy = _get(obj, f"{spec_path}.preemptionPolicy", str)
        if policy is not None and policy not in (s.PREEMPT_LOWER, s.PREEMPT_NEVER):
            raise _fail(obj, f"{spec_path}.preemptionPolicy", f"unknown policy {policy!r}")
        class_name = _get(obj, f"{spec_path}.priorityClassName", str)
        entry = None
        if class_name:
            entry = self.values.get(class_name)
            if entry is None and class_name not in ("system-node-critical", "system-cluster-critical"):
                raise _fail(obj, f"{spec_path}.priorityClassName", f"PriorityClass {class_name!r} not found")
            if entry is None:  # built-in classes upstream creates
                entry = (2000001000 if class_name == "system-node-critical" else 2000000000, None)
        elif prio is None:
            entry = self.default
        if prio is None and entry is not None:
            prio = entry[0]
        if policy is None and entry is not None:
            policy = entry[1]
        return prio, policy


def parse_pod(obj: Obj, priorities: _Priorities) -> s.Pod | None:
    """None for a finished pod (phase Succeeded or Failed): it holds nothing."""
    ns, name = _meta(obj, namespaced=True)
    phase = _get(obj, "status.phase", str, "")
    if phase in ("Succeeded", "Failed"):
        return None
    prio, policy = priorities.resolve(obj, "spec")
    group = _get(obj, "spec.schedulingGroup.podGroupName", str)
    start = _get(obj, "status.startTime", str) or _get(obj, "metadata.creationTimestamp", str, "")
    return s.Pod(
        key=s.PodKey(f"{ns}/{name}"),
        namespace=ns,
        name=name,
        uid=_get(obj, "metadata.uid", str, ""),
        labels=dict(_get(obj, "metadata.labels", Mapping, {})),
        node=s.NodeName(n) if (n := _get(obj, "spec.nodeName", str)) else None,
        requests=pod_requests(obj),
        group=s.GroupKey(f"{ns}/{group}") if group else None,
        priority=prio or 0,
        preemption_policy=policy or s.PREEMPT_LOWER,
        node_selector={str(k): str(v) for k, v in _get(obj, "spec.nodeSelector", Mapping, {}).items()},
        affinity_terms=_affinity_terms(obj),
        tolerations=_tolerations(obj),
        preemption_cost_milli=_cost(obj),
        start_time=start,
        has_resource_claims=bool(_get(obj, "spec.resourceClaims", list, [])),
    )


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
        min_count = _get(obj, f"spec.schedulingPolicy.gang.{field}", int)
        if min_count is None or min_count < 1:
            raise _fail(obj, f"spec.schedulingPolicy.gang.{field}", "must be a positive integer")
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


def _resolve_tree(groups: dict[s.GroupKey, tuple[s.Group, int | None, Obj]]) -> tuple[s.Group, ...]:
    """Validate parents, cycles and depth; a group without a priority inherits its parent's."""
    for group, _, obj in groups.values():
        if group.parent is None:
            continue
        parent = groups.get(group.parent)
        if parent is None or parent[0].kind != "CompositePodGroup":
            raise _fail(obj, "spec.parentCompositePodGroupName",
                        f"CompositePodGroup {group.parent} not found")
    resolved: dict[s.GroupKey, s.Group] = {}
    for key in sorted(groups):
        chain = [key]
        while (parent := groups[chain[-1]][0].parent) is not None:
            if parent in chain:
                raise _fail(groups[key][2], "spec.parentCompositePodGroupName",
                            f"cycle of parents: {' -> '.join(chain + [parent])}")
            chain.append(parent)
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
    return tuple(resolved[k] for k in sorted(resolved))


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


# ---- the whole snapshot ----------------------------------------------------------


def flatten(objects: Iterable[Any]) -> list[Obj]:
    """Expand `List` objects (kind List or *List with items) into their items."""
    out: list[Obj] = []
    for obj in objects:
        if obj is None:
            continue
        if not isinstance(obj, Mapping):
            raise SnapshotInvalidError("<document>", "", f"expected a Kubernetes object, got {type(obj).__name__}")
        kind = obj.get("kind")
        if isinstance(obj.get("items"), list) and (kind == "List" or str(kind).endswith("List")):
            out.extend(flatten(obj["items"]))
        else:
            if not isinstance(kind, str) or not kind:
                raise SnapshotInvalidError(f"?/{(obj.get('metadata') or {}).get('name', '?')}", "kind", "missing")
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
    groups = _resolve_tree(raw_groups)
    group_kind = {g.key: g.kind for g in groups}
    node_names = {n.name for n in nodes}
    pods = []
    for obj in by_kind["Pod"]:
        pod = parse_pod(obj, priorities)
        if pod is None:
            skipped["Pod(finished)"] += 1
            continue
        if pod.group is not None and group_kind.get(pod.group) != "PodGroup":
            raise _fail(obj, "spec.schedulingGroup.podGroupName", f"PodGroup {pod.group} not found")
        if pod.node is not None and pod.node not in node_names:
            raise _fail(obj, "spec.nodeName", f"Node {pod.node} not found")
        if pod.node is None and pod.has_resource_claims:
            raise _fail(obj, "spec.resourceClaims", "DRA claims of pending pods are not modelled yet")
        pods.append(pod)
    pdbs = tuple(p for o in by_kind["PodDisruptionBudget"] if (p := parse_pdb(o)) is not None)
    return s.ClusterSnapshot(
        nodes=nodes,
        pods=tuple(sorted(pods, key=lambda p: p.key)),
        groups=groups,
        pdbs=tuple(sorted(pdbs, key=lambda p: p.key)),
        skipped_kinds=dict(sorted(skipped.items())),
    )
