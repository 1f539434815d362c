"""Nodes and pods: a pod's effective requests, priority, affinities, spread, ports and gates."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from solver.core import snapshot as s
from solver.kube.objects import (
    COST_ANNOTATION,
    INT32_MAX,
    MAX_COST,
    Obj,
    entry_map,
    get_field,
    ident_of,
    invalid,
    label_selector,
    list_field,
    name_of,
    opt_text_field,
    requirements,
    resource_list,
    string_list,
    string_map_field,
    text_field,
    workload_value,
)

# ---- nodes -----------------------------------------------------------------------


def parse_node(obj: Obj) -> s.Node:
    _, name = name_of(obj, namespaced=False)
    taints = []
    for i, t in enumerate(get_field(obj, "spec.taints", list, [])):
        t = entry_map(obj, f"spec.taints[{i}]", t, "a taint")
        effect = t.get("effect")
        if effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            raise invalid(obj, f"spec.taints[{i}].effect", f"unknown effect {effect!r}")
        tf = f"spec.taints[{i}]"
        taints.append(s.Taint(key=opt_text_field(obj, f"{tf}.key", t.get("key")),
                              value=opt_text_field(obj, f"{tf}.value", t.get("value")), effect=effect))
    return s.Node(
        name=s.NodeName(name),
        labels=string_map_field(obj, "metadata.labels", get_field(obj, "metadata.labels", Mapping, {})),
        allocatable=resource_list(obj, "status.allocatable", get_field(obj, "status.allocatable", Mapping, {})),
        taints=tuple(taints),
        unschedulable=bool(get_field(obj, "spec.unschedulable", bool, False)),
        declared_features=frozenset(string_list(obj, "status.declaredFeatures")),
    )


# NodeDeclaredFeatures (GA): the features a pod needs at scheduling, as the registry of
# k8s.io/component-helpers/nodedeclaredfeatures/features infers them (InferForScheduling); the
# others of that registry infer nothing at scheduling time.
RESTART_ALL_CONTAINERS = "RestartAllContainersOnContainerExits"  # restartallcontainers
USER_NAMESPACES_HOST_NETWORK = "UserNamespacesHostNetworkSupport"  # usernamespaceshostnetwork
VOLUME_BIND_MOUNT_OPTIONS = "VolumeBindMountOptions"  # volumebindmountoptions (alpha gate, 1.37)


def _required_features(obj: Obj) -> tuple[str, ...]:
    """A container or init container with a restartPolicyRules action RestartAllContainers
    needs RestartAllContainersOnContainerExits; hostNetwork with hostUsers false needs
    UserNamespacesHostNetworkSupport; a volume mount with bindMountOptions (in a container, an
    init or an ephemeral container) needs VolumeBindMountOptions."""
    spec = obj.get("spec") or {}
    if type(spec) is not dict:
        return ()
    containers = spec.get("containers")
    if type(containers) is list and not spec.get("initContainers") and not spec.get("hostNetwork") \
            and not spec.get("ephemeralContainers") and all(
                type(c) is dict and "restartPolicyRules" not in c and not c.get("volumeMounts") for c in containers):
        return ()  # the common shape: nothing asks for a feature
    out = set()
    if spec.get("hostNetwork") is True and spec.get("hostUsers") is False:
        out.add(USER_NAMESPACES_HOST_NETWORK)
    for kind in ("containers", "initContainers", "ephemeralContainers"):
        for i, c in enumerate(list_field(obj, f"spec.{kind}", spec.get(kind))):
            if not isinstance(c, Mapping):
                continue
            if kind != "ephemeralContainers":
                rules = c.get("restartPolicyRules")
                for j, rule in enumerate(list_field(obj, f"spec.{kind}[{i}].restartPolicyRules", rules)):
                    if not isinstance(rule, Mapping):
                        raise invalid(obj, f"spec.{kind}[{i}].restartPolicyRules[{j}]", "expected a rule")
                    if rule.get("action") == "RestartAllContainers":
                        out.add(RESTART_ALL_CONTAINERS)
            for j, mount in enumerate(list_field(obj, f"spec.{kind}[{i}].volumeMounts", c.get("volumeMounts"))):
                if not isinstance(mount, Mapping):
                    raise invalid(obj, f"spec.{kind}[{i}].volumeMounts[{j}]", "expected a volume mount")
                if mount.get("bindMountOptions"):
                    out.add(VOLUME_BIND_MOUNT_OPTIONS)
    return tuple(sorted(out))


# ---- pods ------------------------------------------------------------------------


def _container_requests(obj: Obj, field: str, container: Any) -> dict[str, int]:
    """requests, falling back to limits per resource as API defaulting does."""
    container = entry_map(obj, field, container, "a container")
    res = container.get("resources") or {}
    if not isinstance(res, Mapping):
        raise invalid(obj, f"{field}.resources", f"expected an object, got {type(res).__name__}")
    limits = resource_list(obj, f"{field}.resources.limits", res.get("limits"))
    requests = resource_list(obj, f"{field}.resources.requests", res.get("requests"))
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
    spec = get_field(obj, "spec", Mapping, {})
    containers = spec.get("containers")
    if type(containers) is list and len(containers) == 1 and not spec.get("initContainers") \
            and spec.get("overhead") is None and spec.get("resources") is None and type(c0 := containers[0]) is dict \
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
    total = {}
    for i, c in enumerate(list_field(obj, "spec.containers", spec.get("containers"))):
        _add(total, _container_requests(obj, f"spec.containers[{i}]", c))
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for i, c in enumerate(list_field(obj, "spec.initContainers", spec.get("initContainers"))):
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
    total.update(_pod_level_requests(obj, spec, total))
    _add(total, resource_list(obj, "spec.overhead", spec.get("overhead")))
    total["pods"] = 1
    return total


def _pod_level(resource: str) -> bool:
    """IsSupportedPodLevelResource (component-helpers resource/helpers.go): cpu, memory, hugepages-*."""
    return resource in ("cpu", "memory") or resource.startswith("hugepages-")


def _pod_level_requests(obj: Obj, spec: Mapping[str, Any], containers: Mapping[str, int]) -> dict[str, int]:
    """PodLevelResources (beta, on in 1.37): ``spec.resources.requests`` of cpu, memory and
    hugepages replace what the containers ask (PodRequests, applyPodLevelResources). A pod-level
    limit without a request is its request where no container asks for that resource, as the
    API server defaults it (defaultPodRequests, pkg/apis/core/v1/defaults.go)."""
    raw = spec.get("resources")
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise invalid(obj, "spec.resources", f"expected an object, got {type(raw).__name__}")
    requests = resource_list(obj, "spec.resources.requests", raw.get("requests"))
    limits = resource_list(obj, "spec.resources.limits", raw.get("limits"))
    for res, amount in limits.items():
        if res not in requests and res not in containers:
            requests[res] = amount
    return {res: amount for res, amount in requests.items() if _pod_level(res)}


def _tolerations(obj: Obj) -> tuple[s.Toleration, ...]:
    out = []
    for i, t in enumerate(get_field(obj, "spec.tolerations", list, [])):
        t = entry_map(obj, f"spec.tolerations[{i}]", t, "a toleration")
        tf = f"spec.tolerations[{i}]"
        op = t.get("operator") or "Equal"
        if op not in ("Equal", "Exists"):
            raise invalid(obj, f"{tf}.operator", f"unknown operator {op!r}")
        effect = t.get("effect") or ""
        if effect not in ("", "NoSchedule", "PreferNoSchedule", "NoExecute"):
            raise invalid(obj, f"{tf}.effect", f"unknown effect {effect!r}")
        out.append(s.Toleration(key=opt_text_field(obj, f"{tf}.key", t.get("key")), operator=op,
                                value=opt_text_field(obj, f"{tf}.value", t.get("value")), effect=effect))
    return tuple(out)


def node_selector_terms(obj: Obj, field: str, terms: list[Any]) -> tuple[s.NodeSelectorTerm, ...]:
    out = []
    for i, t in enumerate(terms):
        if not isinstance(t, Mapping):
            raise invalid(obj, f"{field}[{i}]", "expected a node selector term")
        out.append(s.NodeSelectorTerm(
            match_expressions=requirements(obj, f"{field}[{i}].matchExpressions", t.get("matchExpressions")),
            match_fields=requirements(obj, f"{field}[{i}].matchFields", t.get("matchFields")),
        ))
    return tuple(out)


def _affinity_terms(obj: Obj) -> tuple[s.NodeSelectorTerm, ...]:
    field = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
    return node_selector_terms(obj, field, get_field(obj, field, list, []))


def _with_label_keys(obj: Obj, field: str, selector: s.LabelSelector | None, raw: Mapping[str, Any],
                     names: tuple[str, ...]) -> s.LabelSelector | None:
    """matchLabelKeys (In) and mismatchLabelKeys (NotIn) merged with the pod's own label values,
    as kube-apiserver does at pod creation (applyLabelKeysToLabelSelector,
    pkg/registry/core/pod/strategy.go); keys the pod lacks are skipped; none with a nil selector."""
    labels = get_field(obj, "metadata.labels", Mapping, {})
    extra = []
    for name, op in zip(names, ("In", "NotIn"), strict=False):
        for i, key in enumerate(list_field(obj, f"{field}.{name}", raw.get(name))):
            if not isinstance(key, str) or not key:
                raise invalid(obj, f"{field}.{name}[{i}]", "expected a label key")
            if key in labels:
                extra.append(s.SelectorRequirement(key=key, operator=op, values=(str(labels[key]),)))
    if selector is None or not extra:
        return selector
    return s.LabelSelector(match_labels=selector.match_labels,
                           match_expressions=selector.match_expressions + tuple(extra))


def _entries(obj: Obj, field: str, what: str) -> list[tuple[str, Mapping[str, Any]]]:
    """(path, entry) of an optional list field whose entries must be objects."""
    out = []
    for i, raw in enumerate(get_field(obj, field, list, [])):
        if not isinstance(raw, Mapping):
            raise invalid(obj, f"{field}[{i}]", f"expected {what}")
        out.append((f"{field}[{i}]", raw))
    return out


def _topology_key(obj: Obj, field: str, raw: Mapping[str, Any]) -> str:
    key = raw.get("topologyKey")
    if not isinstance(key, str) or not key:
        raise invalid(obj, f"{field}.topologyKey", "missing")
    return key


def _optional_selector(obj: Obj, field: str, raw: Any) -> s.LabelSelector | None:
    """None for an unset selector (a pod affinity term's or spread constraint's: it matches nothing)."""
    return None if raw is None else label_selector(obj, field, raw)


def _int32(obj: Obj, field: str, raw: int) -> int:
    if not -INT32_MAX - 1 <= raw <= INT32_MAX:
        raise invalid(obj, field, f"must be a 32-bit integer, got {raw}")
    return raw


def positive_int32(obj: Obj, field: str, raw: Any) -> int:
    if not isinstance(raw, int) or isinstance(raw, bool) or not 1 <= raw <= 2**31 - 1:
        raise invalid(obj, field, f"must be a positive 32-bit integer, got {raw!r}")
    return raw


def _pod_affinity_terms(obj: Obj, ns: str, kind: str) -> tuple[s.PodAffinityTerm, ...]:
    """spec.affinity.<kind>.requiredDuringSchedulingIgnoredDuringExecution, namespaces resolved
    (getNamespacesFromPodAffinityTerm: neither names nor a selector means the pod's own)."""
    out = []
    for tf, raw in _entries(obj, f"spec.affinity.{kind}.requiredDuringSchedulingIgnoredDuringExecution",
                            "a pod affinity term"):
        key = _topology_key(obj, tf, raw)
        selector = _optional_selector(obj, f"{tf}.labelSelector", raw.get("labelSelector"))
        names = [text_field(obj, f"{tf}.namespaces[{j}]", n)
                 for j, n in enumerate(list_field(obj, f"{tf}.namespaces", raw.get("namespaces")))]
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
        skew = positive_int32(obj, f"{cf}.maxSkew", raw.get("maxSkew"))
        key = _topology_key(obj, cf, raw)
        when = raw.get("whenUnsatisfiable")
        if when not in ("DoNotSchedule", "ScheduleAnyway"):
            raise invalid(obj, f"{cf}.whenUnsatisfiable", f"must be DoNotSchedule or ScheduleAnyway, got {when!r}")
        min_domains = raw.get("minDomains")
        if min_domains is not None:
            positive_int32(obj, f"{cf}.minDomains", min_domains)
        policies = {}
        for name, default in (("nodeAffinityPolicy", "Honor"), ("nodeTaintsPolicy", "Ignore")):
            value = raw.get(name) or default
            if value not in ("Honor", "Ignore"):
                raise invalid(obj, f"{cf}.{name}", f"must be Honor or Ignore, got {value!r}")
            policies[name] = value == "Honor"
        selector = _with_label_keys(obj, cf, _optional_selector(obj, f"{cf}.labelSelector", raw.get("labelSelector")),
                                    raw, ("matchLabelKeys",))
        if when == "DoNotSchedule":
            out.append(s.SpreadConstraint(max_skew=skew, topology_key=key, selector=selector, min_domains=min_domains,
                                          honor_node_affinity=policies["nodeAffinityPolicy"],
                                          honor_node_taints=policies["nodeTaintsPolicy"]))
    return tuple(out)


# the inline volumes VolumeRestrictions compares (needsRestrictionsCheck): source -> its id field
DISK_SOURCES = {"gcePersistentDisk": "pdName", "awsElasticBlockStore": "volumeID", "iscsi": "iqn", "rbd": "image"}


def _disks(obj: Obj) -> tuple[s.Disk, ...]:
    """The pod's inline disks as VolumeRestrictions' ``isVolumeConflict`` compares them: a GCE
    PD by name, an EBS volume by ID (read-only or not), an iSCSI target by IQN, an RBD image by
    (monitor, pool, image) per monitor (pool defaults to "rbd", as the API server sets it)."""
    out = []
    for i, vol in enumerate(get_field(obj, "spec.volumes", list, [])):
        if type(vol) is not dict:
            continue  # the volume checks name it (kube/volumes.py)
        for source, id_field in DISK_SOURCES.items():
            raw = vol.get(source)
            if raw is None:
                continue
            field = f"spec.volumes[{i}].{source}"
            if type(raw) is not dict:
                raise invalid(obj, field, "expected an object")
            read_only = raw.get("readOnly", False)
            if type(read_only) is not bool:
                raise invalid(obj, f"{field}.readOnly", f"expected a boolean, got {type(read_only).__name__}")
            name = text_field(obj, f"{field}.{id_field}", raw.get(id_field))
            if source == "rbd":
                pool = opt_text_field(obj, f"{field}.pool", raw.get("pool")) or "rbd"
                monitors = raw.get("monitors") or []
                if type(monitors) is not list or any(type(m) is not str for m in monitors):
                    raise invalid(obj, f"{field}.monitors", "expected a list of strings")
                ids = frozenset(f"{m}/{pool}/{name}" for m in monitors)
            else:
                ids = frozenset((name,))
            out.append(s.Disk(source=source, ids=ids, read_only=read_only and source != "awsElasticBlockStore"))
    return tuple(sorted(out))


def _host_ports(obj: Obj) -> tuple[s.HostPort, ...]:
    """hostPorts of the containers and of sidecar init containers (restartPolicy Always), as
    upstream GetHostPorts; hostPort 0 asks for none. With ``hostNetwork: true`` a port without
    a hostPort asks for its containerPort on the host: the API server defaults it so
    (SetDefaults_Pod, defaultHostNetworkPorts, pkg/apis/core/v1/defaults.go)."""
    spec = obj.get("spec") or {}
    host_network = type(spec) is dict and spec.get("hostNetwork") is True
    containers = spec.get("containers") if type(spec) is dict else None
    if type(containers) is list and not spec.get("initContainers") and all(
            type(c) is dict and "ports" not in c for c in containers):
        return ()  # no ports anywhere
    out = []
    for kind in ("containers", "initContainers"):
        for i, c in enumerate(list_field(obj, f"spec.{kind}", spec.get(kind))):
            if not isinstance(c, Mapping) or (kind == "initContainers" and c.get("restartPolicy") != "Always"):
                continue
            for j, p in enumerate(list_field(obj, f"spec.{kind}[{i}].ports", c.get("ports"))):
                pf = f"spec.{kind}[{i}].ports[{j}]"
                if not isinstance(p, Mapping):
                    raise invalid(obj, pf, "expected a container port")
                name = "containerPort" if host_network and not p.get("hostPort") else "hostPort"
                port = p.get(name) or 0
                if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port <= 65535:
                    raise invalid(obj, f"{pf}.{name}", f"must be a port number, got {port!r}")
                protocol = p.get("protocol") or "TCP"
                if protocol not in ("TCP", "UDP", "SCTP"):
                    raise invalid(obj, f"{pf}.protocol", f"must be TCP, UDP or SCTP, got {protocol!r}")
                ip = p.get("hostIP") or "0.0.0.0"
                if not isinstance(ip, str):
                    raise invalid(obj, f"{pf}.hostIP", "expected str")
                if port:
                    out.append(s.HostPort(protocol=protocol, ip=ip, port=port))
    return tuple(sorted(set(out), key=lambda h: (h.protocol, h.ip, h.port)))


def _cost(obj: Obj) -> int | None:
    raw = get_field(obj, "metadata.annotations", Mapping, {})
    if COST_ANNOTATION not in raw:
        return None
    field = f"metadata.annotations[{COST_ANNOTATION}]"
    try:
        value = float(raw[COST_ANNOTATION])
    except (TypeError, ValueError) as exc:
        raise invalid(obj, field, f"not a number: {raw[COST_ANNOTATION]!r}") from exc
    if not math.isfinite(value) or value < 0 or value > MAX_COST:
        raise invalid(obj, field, f"must be a number from 0 to {MAX_COST}, got {raw[COST_ANNOTATION]!r}")
    return round(value * 1000)


class Priorities:
    def __init__(self, classes: Iterable[Obj]) -> None:
        self.values: dict[str, tuple[int, str | None]] = {}
        self.default: tuple[int, str | None] | None = None
        self.warnings: list[str] = []
        for obj in classes:
            _, name = name_of(obj, namespaced=False)
            value = get_field(obj, "value", int)
            if value is None:
                raise invalid(obj, "value", "missing")
            _int32(obj, "value", value)
            entry = (value, get_field(obj, "preemptionPolicy", str))
            self.values[name] = entry
            if get_field(obj, "globalDefault", bool, False):
                self.default = entry

    def resolve(self, obj: Obj, spec_path: str,
                spec: Mapping[str, Any] | None = None) -> tuple[int | None, str | None]:
        """(priority, preemptionPolicy) from spec.priority / priorityClassName / global default;
        ``spec``, when given, is the object at ``spec_path``."""
        if spec is None:
            spec = get_field(obj, spec_path, Mapping, {})
        prio = _field(obj, spec, spec_path, "priority", int)
        if prio is not None:
            _int32(obj, f"{spec_path}.priority", prio)
        policy = _field(obj, spec, spec_path, "preemptionPolicy", str)
        if policy is not None and policy not in (s.PREEMPT_LOWER, s.PREEMPT_NEVER):
            raise invalid(obj, f"{spec_path}.preemptionPolicy", f"unknown policy {policy!r}")
        class_name = _field(obj, spec, spec_path, "priorityClassName", str)
        entry = None
        if class_name:
            entry = self.values.get(class_name)
            if entry is None and class_name in ("system-node-critical", "system-cluster-critical"):
                # built-in classes upstream creates
                entry = (2000001000 if class_name == "system-node-critical" else 2000000000, None)
            if entry is None and prio is None:
                raise invalid(obj, f"{spec_path}.priorityClassName", f"PriorityClass {class_name!r} not found")
            if entry is None:
                # deleted after admission: the scheduler reads only spec.priority (PodPriority,
                # k8s.io/component-helpers/scheduling/corev1), so the object is planned as it is
                self.warnings.append(f"{ident_of(obj)}: {spec_path}.priorityClassName: PriorityClass "
                                     f"{class_name!r} not found; {spec_path}.priority {prio} is used")
        elif prio is None:
            entry = self.default
        if prio is None and entry is not None:
            prio = entry[0]
        if policy is None and entry is not None:
            policy = entry[1]
        return prio, policy


def _field(obj: Obj, section: Mapping[str, Any], prefix: str, key: str, kind: type, default: Any = None) -> Any:
    """``get_field(obj, f"{prefix}.{key}", kind, default)`` where ``section`` is the object at prefix."""
    value = section.get(key)
    if value is None:
        return default
    if type(value) is kind or (kind is Mapping and type(value) is dict):
        return value
    return get_field(obj, f"{prefix}.{key}", kind, default)


def parse_pod(obj: Obj, priorities: Priorities) -> s.Pod | None:
    """None for a finished pod (phase Succeeded or Failed): it holds nothing."""
    raw_meta = obj.get("metadata")
    name, ns = (raw_meta.get("name"), raw_meta.get("namespace") or "default") if type(raw_meta) is dict \
        else (None, None)
    meta: Mapping[str, Any]
    if type(raw_meta) is dict and type(name) is str and name and name.isascii() and type(ns) is str and ns.isascii():
        meta = raw_meta
    else:
        ns, name = name_of(obj, namespaced=True)  # the checking path names what is wrong
        meta = get_field(obj, "metadata", Mapping, {})
    spec = get_field(obj, "spec", Mapping, {})
    status = get_field(obj, "status", Mapping, {})
    phase = _field(obj, status, "status", "phase", str, "")
    if phase in ("Succeeded", "Failed"):
        return None
    prio, policy = priorities.resolve(obj, "spec", spec)
    group = get_field(obj, "spec.schedulingGroup.podGroupName", str) if "schedulingGroup" in spec else None
    start = _field(obj, status, "status", "startTime", str) \
        or _field(obj, meta, "metadata", "creationTimestamp", str, "")
    node = _field(obj, spec, "spec", "nodeName", str)
    nominated = _field(obj, status, "status", "nominatedNodeName", str)
    affinity = spec.get("affinity") is not None
    return s.Pod(
        key=s.PodKey(f"{ns}/{name}"),
        namespace=ns,
        name=name,
        uid=_field(obj, meta, "metadata", "uid", str, ""),
        labels=string_map_field(obj, "metadata.labels", _field(obj, meta, "metadata", "labels", Mapping, {})),
        node=s.NodeName(text_field(obj, "spec.nodeName", node)) if node else None,
        requests=pod_requests(obj),
        group=s.GroupKey(f"{ns}/{group}") if group else None,
        priority=prio or 0,
        preemption_policy=policy or s.PREEMPT_LOWER,
        node_selector=string_map_field(obj, "spec.nodeSelector",
                                       _field(obj, spec, "spec", "nodeSelector", Mapping, {})),
        affinity_terms=_affinity_terms(obj) if affinity else (),
        tolerations=_tolerations(obj) if spec.get("tolerations") is not None else (),
        preemption_cost_milli=_cost(obj) if meta.get("annotations") is not None else None,
        value=workload_value(obj, f"the pod is in PodGroup {group}: a workload's value is read on its root group"
                             if group else "") if meta.get("annotations") is not None else None,
        start_time=start,
        has_resource_claims=bool(_field(obj, spec, "spec", "resourceClaims", list, [])),
        scheduler_name=_field(obj, spec, "spec", "schedulerName", str) or s.DEFAULT_SCHEDULER,
        scheduling_gates=_scheduling_gates(obj) if spec.get("schedulingGates") is not None else (),
        terminating=(terminating := bool(_field(obj, meta, "metadata", "deletionTimestamp", str))),
        preempted=terminating and _condition(obj, "DisruptionTarget", PREEMPTION_REASONS),
        ready=bool(node) and _condition(obj, "Ready"),
        starting=bool(node) and phase == "Pending",
        nominated_node=s.NodeName(nominated) if nominated and not node else None,
        pod_affinity=_pod_affinity_terms(obj, ns, "podAffinity") if affinity else (),
        pod_anti_affinity=_pod_affinity_terms(obj, ns, "podAntiAffinity") if affinity else (),
        spread=_spread(obj) if spec.get("topologySpreadConstraints") is not None else (),
        host_ports=_host_ports(obj),
        disks=_disks(obj) if spec.get("volumes") else (),
        required_features=_required_features(obj),
    )


PREEMPTION_REASONS = ("PreemptionByScheduler", "EvictionByEvictionAPI")


def _condition(obj: Obj, kind: str, reasons: tuple[str, ...] | None = None) -> bool:
    """status.conditions holds ``kind``=True (with one of ``reasons``, if given): DisruptionTarget
    for a preemption (PREEMPTION_REASONS), Ready as podutil.IsPodReady reads it."""
    status = obj.get("status")
    if type(status) is dict and not status.get("conditions"):
        return False  # the common shape of a recorded pod: no conditions at all
    for i, c in enumerate(get_field(obj, "status.conditions", list, [])):
        if not isinstance(c, Mapping):
            raise invalid(obj, f"status.conditions[{i}]", "expected a condition")
        if c.get("type") == kind and c.get("status") == "True" and (reasons is None or c.get("reason") in reasons):
            return True
    return False


def _scheduling_gates(obj: Obj) -> tuple[str, ...]:
    """spec.schedulingGates names. The API server refuses to bind a gated pod, and only a pod
    created with gates can have them (they can be removed, never added)."""
    out = []
    field = "spec.schedulingGates"
    for i, gate in enumerate(get_field(obj, field, list, [])):
        name = gate.get("name") if isinstance(gate, Mapping) else None
        if not isinstance(name, str) or not name:
            raise invalid(obj, f"{field}[{i}].name", "missing")
        out.append(name)
    return tuple(out)
