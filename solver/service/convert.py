"""gangplace.v1 messages <-> the core's types. The edge of the gRPC service.

A typed ``ClusterState`` becomes the Kubernetes objects it stands for and goes through
``solver.kube`` like a recorded snapshot: one translation into the Snapshot, one set of
validation rules, one model builder. An input error names the request field
(``state.pods[3]``) and the Kubernetes object and field kube found wrong in it.

A ``Plan`` goes out field by field (docs/design.md's JSON plan; ``stats`` as a
``google.protobuf.Struct``, since its fields vary by solver) and comes back to the same dataclass in the client.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from google.protobuf import json_format, struct_pb2

from solver import api, kube, reading
from solver.core import plan as p
from solver.core import snapshot as s
from solver.core.errors import InputError, SnapshotInvalidError
from solver.core.features import FeatureGates, format_feature_gates
from solver.gen.gangplace.v1 import placement_pb2 as pb
from solver.kube import expected, loader
from solver.kube.volumes import BIND_COMPLETED, SELECTED_NODE
from solver.problem.build import DEFAULT_PDB_POLICY, PdbPolicy
from solver.reading import Reading

CPU = "cpu"


class RequestInvalidError(InputError):
    """A request field is malformed; ``path`` is its field path in the request."""

    def __init__(self, path: str, reason: str, *, obj: str = "", field: str | None = None) -> None:
        """``obj`` and ``field``: the Kubernetes object at fault and the path inside it, when the
        request carries one (``field`` defaults to ``path``)."""
        self.path = path
        self.obj, self.field = obj, path if field is None else field
        self.reason = reason
        super().__init__(f"{path}: {reason}")


# ---- options ------------------------------------------------------------------------------

_PDB_POLICY: dict[int, PdbPolicy] = {pb.PDB_POLICY_UNSPECIFIED: DEFAULT_PDB_POLICY,
                                     pb.PDB_POLICY_STRICT: "strict", pb.PDB_POLICY_SOFT: "soft"}


def pdb_policy(value: int) -> PdbPolicy:
    """``SolveOptions.pdb_policy`` as the core names it; an unknown number (a newer client's
    enum, proto3 keeps it) is a RequestInvalidError, never silently the default."""
    if value not in _PDB_POLICY:
        raise RequestInvalidError("options.pdb_policy", f"unknown PdbPolicy value {value}")
    return _PDB_POLICY[value]


def pdb_policy_value(policy: PdbPolicy) -> pb.PdbPolicy:
    return pb.PDB_POLICY_STRICT if policy == "strict" else pb.PDB_POLICY_SOFT


# PlanOptions fields that stay in the process: gangplace.v1 has no field for them, so a remote
# call refuses a value other than the default instead of dropping it
_LOCAL_ONLY = {"max_variables": None, "ideal_shortcut": True, "stop": None, "on_solution": None}


def expected_from_proto(raw: bytes) -> tuple[s.ExpectedPod, ...]:
    """``SolveOptions.expected_pods``: a JSON or YAML list (SnapshotInvalidError naming the entry)."""
    if not raw:
        return ()
    return expected.expected_pods(loader.documents_from_bytes(raw, "options.expected_pods"),
                                  source="options.expected_pods")


def options_to_proto(options: api.PlanOptions) -> pb.SolveOptions:
    """``PlanOptions`` as a request's ``SolveOptions`` (``workload`` travels in the request
    itself); an option the wire cannot carry (``_LOCAL_ONLY``) set is an OptionError."""
    for name, default in _LOCAL_ONLY.items():
        if getattr(options, name) != default:
            raise api.OptionError(name, "in-process only: gangplace.v1 does not carry it")
    # empty gates: the defaults, which a server that knows fewer gates reads too
    gates = "" if options.gates == FeatureGates() else format_feature_gates(options.gates)
    return pb.SolveOptions(time_limit_seconds=options.time_limit, workers=options.workers, seed=options.seed,
                           relative_gap=options.relative_gap, baseline_only=options.baseline_only,
                           no_decompose=not options.decompose, pdb_policy=pdb_policy_value(options.pdb_policy),
                           feature_gates=gates, no_dra_preemption=not options.dra_preemption,
                           expected_pods=json.dumps(expected.document(options.expected)).encode()
                           if options.expected else b"")


# ---- request -> snapshot ------------------------------------------------------------------


def snapshot_from_request(request: pb.SolveRequest) -> Reading:
    which = request.WhichOneof("cluster")
    if which == "kubernetes_objects":
        try:
            return reading.from_bytes(request.kubernetes_objects)
        except SnapshotInvalidError as exc:
            raise RequestInvalidError(f"kubernetes_objects: {exc.where}", exc.reason, obj=exc.obj,
                                      field=exc.field) from exc
    if which != "state":
        raise RequestInvalidError("cluster", "set state or kubernetes_objects")
    objects, origin = objects_from_state(request.state)
    try:
        return reading.read(objects)
    except SnapshotInvalidError as exc:
        where = origin.get(exc.obj)
        path = f"{where} ({exc.obj})" if where else exc.obj
        raise RequestInvalidError(f"state: {SnapshotInvalidError.place(path, exc.field)}", exc.reason, obj=exc.obj,
                                  field=exc.field) from exc


def _quantity(res: str, amount: int) -> str:
    return f"{amount}m" if res == CPU else str(amount)


def _resources(raw: Any) -> dict[str, str]:
    return {k: _quantity(k, v) for k, v in sorted(raw.items())}


# The enums as Kubernetes spells them. An unspecified or unknown number (a newer client's,
# proto3 keeps it) becomes a word kube refuses, so the error names the object and field.
_EFFECT: dict[int, str] = {
    pb.TAINT_EFFECT_NO_SCHEDULE: "NoSchedule", pb.TAINT_EFFECT_PREFER_NO_SCHEDULE: "PreferNoSchedule",
    pb.TAINT_EFFECT_NO_EXECUTE: "NoExecute"}
_TOLERATION_OPERATOR: dict[int, str] = {
    pb.TOLERATION_OPERATOR_UNSPECIFIED: "Equal", pb.TOLERATION_OPERATOR_EQUAL: "Equal",
    pb.TOLERATION_OPERATOR_EXISTS: "Exists"}
_SELECTOR_OPERATOR: dict[int, str] = {
    pb.SELECTOR_OPERATOR_IN: "In", pb.SELECTOR_OPERATOR_NOT_IN: "NotIn", pb.SELECTOR_OPERATOR_EXISTS: "Exists",
    pb.SELECTOR_OPERATOR_DOES_NOT_EXIST: "DoesNotExist", pb.SELECTOR_OPERATOR_GT: "Gt", pb.SELECTOR_OPERATOR_LT: "Lt"}


def _word(table: dict[int, str], enum: str, value: int) -> str:
    if value in table:
        return table[value]
    return f"{enum} {'unspecified' if value == 0 else f'value {value}'}"


def _taints(raw: Iterable[pb.Taint]) -> list[dict[str, str]]:
    return [{"key": t.key, "value": t.value, "effect": _word(_EFFECT, "TaintEffect", t.effect)} for t in raw]


def _tolerations(raw: Iterable[pb.Toleration]) -> list[dict[str, str]]:
    out = []
    for t in raw:
        tol = {"key": t.key, "operator": _word(_TOLERATION_OPERATOR, "TolerationOperator", t.operator),
               "value": t.value}
        if t.effect:  # unspecified: every effect
            tol["effect"] = _word(_EFFECT, "TaintEffect", t.effect)
        out.append(tol)
    return out


def _requirements(raw: Iterable[pb.SelectorRequirement]) -> list[dict[str, Any]]:
    return [{"key": r.key, "operator": _word(_SELECTOR_OPERATOR, "SelectorOperator", r.operator),
             "values": list(r.values)} for r in raw]


def _label_selector(raw: pb.LabelSelector) -> dict[str, Any]:
    return {"matchLabels": dict(raw.match_labels), "matchExpressions": _requirements(raw.match_expressions)}


def _pod_terms(raw: Iterable[pb.PodAffinityTerm]) -> list[dict[str, Any]]:
    out = []
    for t in raw:
        term: dict[str, Any] = {"topologyKey": t.topology_key, "namespaces": list(t.namespaces),
                                "matchLabelKeys": list(t.match_label_keys),
                                "mismatchLabelKeys": list(t.mismatch_label_keys)}
        if t.HasField("label_selector"):
            term["labelSelector"] = _label_selector(t.label_selector)
        if t.HasField("namespace_selector"):
            term["namespaceSelector"] = _label_selector(t.namespace_selector)
        out.append(term)
    return out


def _spread(raw: Iterable[pb.TopologySpreadConstraint]) -> list[dict[str, Any]]:
    out = []
    for c in raw:
        entry: dict[str, Any] = {"maxSkew": c.max_skew, "topologyKey": c.topology_key,
                                 "whenUnsatisfiable": c.when_unsatisfiable,
                                 "matchLabelKeys": list(c.match_label_keys)}
        if c.HasField("label_selector"):
            entry["labelSelector"] = _label_selector(c.label_selector)
        if c.HasField("min_domains"):
            entry["minDomains"] = c.min_domains
        entry.update({name: value for name, value in (("nodeAffinityPolicy", c.node_affinity_policy),
                                                      ("nodeTaintsPolicy", c.node_taints_policy)) if value})
        out.append(entry)
    return out


def _terms(raw: Iterable[pb.NodeSelectorTerm]) -> list[dict[str, Any]]:
    out = []
    for t in raw:
        term: dict[str, Any] = {}
        if t.match_expressions:
            term["matchExpressions"] = _requirements(t.match_expressions)
        if t.match_fields:
            term["matchFields"] = _requirements(t.match_fields)
        out.append(term)
    return out


def _claim_refs(path: str, refs: Iterable[pb.PodClaimRef]) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    spec, statuses = [], []
    for i, ref in enumerate(refs):
        if bool(ref.claim) == bool(ref.template):
            raise RequestInvalidError(f"{path}.claims[{i}]", "set exactly one of claim and template")
        entry = {"name": ref.name}
        entry["resourceClaimName" if ref.claim else "resourceClaimTemplateName"] = ref.claim or ref.template
        spec.append(entry)
        if ref.generated:
            statuses.append({"name": ref.name, "resourceClaimName": ref.generated})
    return spec, statuses


def _sub_request(sub: pb.DeviceSubRequest) -> dict[str, Any]:
    out: dict[str, Any] = {"deviceClassName": sub.device_class}
    if sub.all:
        out["allocationMode"] = "All"
    elif sub.count:
        out["count"] = sub.count
    if sub.selectors:
        out["selectors"] = [{"cel": {"expression": e}} for e in sub.selectors]
    if sub.tolerations:
        out["tolerations"] = _tolerations(sub.tolerations)
    if sub.capacity_requests:
        out["capacity"] = {"requests": dict(sorted(sub.capacity_requests.items()))}
    if sub.admin_access:
        out["adminAccess"] = True
    return out


def _claim_devices(claim: pb.ResourceClaim) -> dict[str, Any]:
    requests: list[dict[str, Any]] = []
    for r in claim.requests:
        if r.first_available:
            requests.append({"name": r.name, "firstAvailable": [
                {"name": sub.name, **_sub_request(sub)} for sub in r.first_available]})
        else:
            requests.append({"name": r.name, "exactly": _sub_request(r.exactly)})
    out: dict[str, Any] = {"requests": requests}
    constraints = []
    for c in claim.constraints:
        con: dict[str, Any] = {}
        if c.requests:
            con["requests"] = list(c.requests)
        if c.match_attribute:
            con["matchAttribute"] = c.match_attribute
        if c.distinct_attribute:
            con["distinctAttribute"] = c.distinct_attribute
        constraints.append(con)
    if constraints:
        out["constraints"] = constraints
    return out


def _attribute(value: pb.AttributeValue) -> dict[str, Any]:
    which = value.WhichOneof("value")
    return {} if which is None else {which: getattr(value, which)}


def objects_from_state(state: pb.ClusterState) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The Kubernetes objects, and for each "Kind/ns/name" the request field it came from."""
    objs: list[dict[str, Any]] = []
    origin: dict[str, str] = {}

    def add(obj: dict[str, Any], path: str) -> None:
        meta = obj["metadata"]
        key = f"{obj['kind']}/{meta['namespace']}/{meta['name']}" if meta.get("namespace") else \
            f"{obj['kind']}/{meta['name']}"
        origin[key] = path
        objs.append(obj)

    for i, n in enumerate(state.nodes):
        add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": n.name, "labels": dict(n.labels)},
             "spec": {"taints": _taints(n.taints), "unschedulable": n.unschedulable},
             "status": {"allocatable": _resources(n.allocatable)}}, f"nodes[{i}]")
    for i, pod in enumerate(state.pods):
        add(_pod_object(f"pods[{i}]", pod), f"pods[{i}]")
    for i, g in enumerate(state.groups):
        add(_group_object(f"groups[{i}]", g), f"groups[{i}]")
    for i, ns in enumerate(state.namespaces):
        add({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns.name, "labels": dict(ns.labels)}},
            f"namespaces[{i}]")
    for i, b in enumerate(state.pdbs):
        spec: dict[str, Any] = {"selector": {"matchLabels": dict(b.match_labels),
                                             "matchExpressions": _requirements(b.match_expressions)}}
        if b.unhealthy_pod_eviction_policy:
            spec["unhealthyPodEvictionPolicy"] = b.unhealthy_pod_eviction_policy
        add({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
             "metadata": {"name": b.name, "namespace": b.namespace, "generation": b.generation}, "spec": spec,
             "status": {"disruptionsAllowed": b.disruptions_allowed, "observedGeneration": b.observed_generation,
                        "currentHealthy": b.current_healthy, "desiredHealthy": b.desired_healthy}}, f"pdbs[{i}]")
    _add_volumes(state, add)
    for i, c in enumerate(state.device_classes):
        cls: dict[str, Any] = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": c.name},
                               "spec": {"selectors": [{"cel": {"expression": e}} for e in c.selectors]}}
        if c.extended_resource_name:
            cls["spec"]["extendedResourceName"] = c.extended_resource_name
        if c.creation_timestamp:
            cls["metadata"]["creationTimestamp"] = c.creation_timestamp
        add(cls, f"device_classes[{i}]")
    _add_slices(state, add)
    for i, t in enumerate(state.claim_templates):
        add({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
             "metadata": {"name": t.name, "namespace": t.namespace},
             "spec": {"spec": {"devices": _claim_devices(t)}}}, f"claim_templates[{i}]")
    for i, claim in enumerate(state.claims):
        add(_claim_object(claim), f"claims[{i}]")
    return objs, origin


def _add_volumes(state: pb.ClusterState, add: Any) -> None:
    """PersistentVolumeClaims, PersistentVolumes and StorageClasses as core/v1 and storage/v1
    give them."""
    for i, c in enumerate(state.volume_claims):
        meta: dict[str, Any] = {"name": c.name, "namespace": c.namespace}
        if c.bind_completed:
            meta["annotations"] = {BIND_COMPLETED: "yes"}
        if c.deleting:
            meta["deletionTimestamp"] = "1970-01-01T00:00:00Z"
        spec: dict[str, Any] = {"accessModes": list(c.access_modes)}
        if c.storage_class_name:
            spec["storageClassName"] = c.storage_class_name
        if c.volume_name:
            spec["volumeName"] = c.volume_name
        if c.storage:
            spec["resources"] = {"requests": {"storage": c.storage}}
        if c.HasField("selector"):
            spec["selector"] = _label_selector(c.selector)
        if c.volume_mode:
            spec["volumeMode"] = c.volume_mode
        if c.volume_attributes_class_name:
            spec["volumeAttributesClassName"] = c.volume_attributes_class_name
        if c.selected_node:
            meta.setdefault("annotations", {})[SELECTED_NODE] = c.selected_node
        add({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec,
             "status": {"phase": "Lost" if c.lost else ("Bound" if c.bind_completed else "Pending")}},
            f"volume_claims[{i}]")
    for i, v in enumerate(state.volumes):
        meta = {"name": v.name, "labels": dict(v.labels)}
        if v.deleting:
            meta["deletionTimestamp"] = "1970-01-01T00:00:00Z"
        spec = {"accessModes": list(v.access_modes)}
        if v.storage_class_name:
            spec["storageClassName"] = v.storage_class_name
        if v.capacity:
            spec["capacity"] = {"storage": v.capacity}
        if v.claim_name:
            spec["claimRef"] = {"namespace": v.claim_namespace, "name": v.claim_name}
        if v.node_affinity:
            spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": _terms(v.node_affinity)}}
        if v.csi_driver or v.csi_volume_handle:
            spec["csi"] = {"driver": v.csi_driver, "volumeHandle": v.csi_volume_handle}
        if v.volume_mode:
            spec["volumeMode"] = v.volume_mode
        if v.volume_attributes_class_name:
            spec["volumeAttributesClassName"] = v.volume_attributes_class_name
        add({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": meta, "spec": spec,
             **({"status": {"phase": v.phase}} if v.phase else {})}, f"volumes[{i}]")
    for i, sc in enumerate(state.storage_classes):
        obj: dict[str, Any] = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": sc.name},
                               "provisioner": sc.provisioner,
                               "volumeBindingMode": sc.volume_binding_mode or "Immediate"}
        if sc.allowed_topologies:
            obj["allowedTopologies"] = [{"matchLabelExpressions": [{"key": r.key, "values": list(r.values)}
                                                                   for r in t.match_expressions]}
                                        for t in sc.allowed_topologies]
        add(obj, f"storage_classes[{i}]")
    for i, n in enumerate(state.csi_nodes):
        drivers = [{"name": d.name, "nodeID": n.name,
                    **({"allocatable": {"count": d.allocatable_count}} if d.HasField("allocatable_count") else {})}
                   for d in n.drivers]
        add({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": n.name},
             "spec": {"drivers": drivers}}, f"csi_nodes[{i}]")
    for i, d in enumerate(state.csi_drivers):
        add({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": d.name},
             "spec": {"preventPodSchedulingIfMissing": d.prevent_pod_scheduling_if_missing,
                      "storageCapacity": d.storage_capacity}}, f"csi_drivers[{i}]")
    for i, cap in enumerate(state.storage_capacities):
        found: dict[str, Any] = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
                                 "metadata": {"name": cap.name, "namespace": cap.namespace},
                                 "storageClassName": cap.storage_class_name}
        if cap.capacity:
            found["capacity"] = cap.capacity
        if cap.maximum_volume_size:
            found["maximumVolumeSize"] = cap.maximum_volume_size
        if cap.HasField("node_topology"):
            found["nodeTopology"] = _label_selector(cap.node_topology)
        add(found, f"storage_capacities[{i}]")
    for i, a in enumerate(state.volume_attachments):
        add({"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": {"name": a.name},
             "spec": {"attacher": a.attacher, "nodeName": a.node_name,
                      "source": {"persistentVolumeName": a.persistent_volume_name}}}, f"volume_attachments[{i}]")


def _pod_object(path: str, pod: pb.Pod) -> dict[str, Any]:
    """A Pod as the API server would return it: spec, status, and the annotations gangplace reads."""
    spec: dict[str, Any] = {
        "containers": [{"name": "main", "resources": {"requests": _resources(
            {k: v for k, v in pod.requests.items() if k != "pods"})}}],
        "priority": pod.priority,
        "nodeSelector": dict(pod.node_selector),
        "tolerations": _tolerations(pod.tolerations),
    }
    if pod.preemption_policy:
        spec["preemptionPolicy"] = pod.preemption_policy
    if pod.node:
        spec["nodeName"] = pod.node
    if pod.scheduler_name:
        spec["schedulerName"] = pod.scheduler_name
    if pod.scheduling_gates:
        spec["schedulingGates"] = [{"name": g} for g in pod.scheduling_gates]
    if pod.group:
        spec["schedulingGroup"] = {"podGroupName": pod.group}
    if pod.affinity:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": _terms(pod.affinity)}}}
    for kind, terms in (("podAffinity", pod.pod_affinity), ("podAntiAffinity", pod.pod_anti_affinity)):
        if terms:
            spec.setdefault("affinity", {})[kind] = {
                "requiredDuringSchedulingIgnoredDuringExecution": _pod_terms(terms)}
    if pod.topology_spread:
        spec["topologySpreadConstraints"] = _spread(pod.topology_spread)
    if pod.host_ports:
        spec["containers"][0]["ports"] = [{"containerPort": h.port, "hostPort": h.port,
                                           "protocol": h.protocol or "TCP", "hostIP": h.host_ip}
                                          for h in pod.host_ports]
    if pod.volume_claims:
        spec["volumes"] = [{"name": f"claim-{i}", "persistentVolumeClaim": {"claimName": name}}
                           for i, name in enumerate(pod.volume_claims)]
    if pod.volumes:  # as JSON objects: a Struct holds numbers as doubles (an iSCSI lun 0.0 is 0)
        spec.setdefault("volumes", []).extend(_integral(json_format.MessageToDict(v)) for v in pod.volumes)
    status: dict[str, Any] = {"phase": "Running" if pod.node and not pod.not_started else "Pending"}
    if pod.ready and pod.node:
        status["conditions"] = [{"type": "Ready", "status": "True"}]
    if pod.start_time:
        status["startTime"] = pod.start_time
    if pod.nominated_node:
        status["nominatedNodeName"] = pod.nominated_node
    if pod.claims:
        spec["resourceClaims"], statuses = _claim_refs(path, pod.claims)
        spec["containers"][0]["resources"]["claims"] = [{"name": c.name} for c in pod.claims]
        if statuses:
            status["resourceClaimStatuses"] = statuses
    meta: dict[str, Any] = {"name": pod.name, "namespace": pod.namespace, "labels": dict(pod.labels)}
    if pod.HasField("preemption_cost"):
        meta["annotations"] = {kube.COST_ANNOTATION: repr(pod.preemption_cost)}
    if pod.HasField("value"):
        meta.setdefault("annotations", {})[kube.VALUE_ANNOTATION] = str(pod.value)
    if pod.terminating:
        meta["deletionTimestamp"] = pod.start_time or "1970-01-01T00:00:00Z"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def _group_object(path: str, g: pb.Group) -> dict[str, Any]:
    """A PodGroup or CompositePodGroup (by ``kind``)."""
    if g.kind == pb.Group.POD_GROUP:
        api, kind, floor = "scheduling.k8s.io/v1beta1", "PodGroup", "minCount"
    elif g.kind == pb.Group.COMPOSITE_POD_GROUP:
        api, kind, floor = "scheduling.k8s.io/v1alpha3", "CompositePodGroup", "minGroupCount"
    else:
        raise RequestInvalidError(f"{path}.kind", "must be POD_GROUP or COMPOSITE_POD_GROUP")
    gspec: dict[str, Any] = {"schedulingPolicy": {"gang": {floor: g.min_count}} if g.HasField("min_count")
                             else {"basic": {}}}
    if g.HasField("priority"):
        gspec["priority"] = g.priority
    if g.preemption_policy:
        gspec["preemptionPolicy"] = g.preemption_policy
    if g.parent:
        gspec["parentCompositePodGroupName"] = g.parent
    if g.topology_key:
        gspec["schedulingConstraints"] = {"topology": [{"key": g.topology_key}]}
    if g.disruption_all:
        gspec["disruptionMode"] = {"all": {}}
    if g.claims:
        gspec["resourceClaims"], _ = _claim_refs(path, g.claims)
    meta: dict[str, Any] = {"name": g.name, "namespace": g.namespace}
    if g.HasField("value"):
        meta["annotations"] = {kube.VALUE_ANNOTATION: str(g.value)}
    return {"apiVersion": api, "kind": kind, "metadata": meta, "spec": gspec}


def _claim_object(claim: pb.ResourceClaim) -> dict[str, Any]:
    """A ResourceClaim, with its allocation and reservations when it has them."""
    obj: dict[str, Any] = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                           "metadata": {"name": claim.name, "namespace": claim.namespace},
                           "spec": {"devices": _claim_devices(claim)}}
    if claim.allocation:
        alloc: dict[str, Any] = {"devices": {"results": [_allocation_result(a) for a in claim.allocation]}}
        if claim.allocation_nodes:
            alloc["nodeSelector"] = {"nodeSelectorTerms": _terms(claim.allocation_nodes)}
        reserved = [{"resource": "pods", "name": n} for n in claim.reserved_pods]
        reserved += [{"resource": "podgroups", "apiGroup": "scheduling.k8s.io", "name": n}
                     for n in claim.reserved_groups]
        for other in claim.reserved_other:
            what, _, name = other.partition("/")
            resource, _, group = what.partition(".")
            reserved.append({"resource": resource, **({"apiGroup": group} if group else {}), "name": name})
        obj["status"] = {"allocation": alloc, "reservedFor": reserved}
    return obj


def _allocation_result(a: pb.AllocatedDevice) -> dict[str, Any]:
    """One ``status.allocation.devices.results`` entry; a share of a device with its shareID
    and consumedCapacity (DRAConsumableCapacity)."""
    out: dict[str, Any] = {"request": a.request, "driver": a.driver, "pool": a.pool, "device": a.device}
    if a.share_id:
        out["shareID"] = a.share_id
    if a.consumed_capacity:
        out["consumedCapacity"] = dict(sorted(a.consumed_capacity.items()))
    if a.admin_access:
        out["adminAccess"] = True
    return out


def _capacity(path: str, d: pb.Device) -> dict[str, Any]:
    """A device's ``capacity``, each entry with its ``requestPolicy`` when it has one."""
    for name in sorted(d.capacity_policies):
        if name not in d.capacity:
            raise RequestInvalidError(f"{path}.capacity_policies[{name}]", "names no capacity of the device")
    out: dict[str, Any] = {}
    for name, value in sorted(d.capacity.items()):
        entry: dict[str, Any] = {"value": value}
        if name in d.capacity_policies:
            entry["requestPolicy"] = _request_policy(d.capacity_policies[name])
        out[name] = entry
    return out


def _request_policy(raw: pb.CapacityRequestPolicy) -> dict[str, Any]:
    policy: dict[str, Any] = {}
    if raw.HasField("default"):
        policy["default"] = raw.default
    if raw.valid_values:
        policy["validValues"] = list(raw.valid_values)
    if raw.HasField("valid_range"):
        rng = raw.valid_range
        valid_range: dict[str, str] = {}
        if rng.min:  # unset: kube names validRange.min missing
            valid_range["min"] = rng.min
        if rng.HasField("max"):
            valid_range["max"] = rng.max
        if rng.HasField("step"):
            valid_range["step"] = rng.step
        policy["validRange"] = valid_range
    return policy


def _add_slices(state: pb.ClusterState, add: Any) -> None:
    """One ResourceSlice per (driver, pool); devices carry their own reach when they differ."""
    pools: dict[tuple[str, str], list[tuple[int, pb.Device]]] = defaultdict(list)
    for i, d in enumerate(state.devices):
        pools[d.driver, d.pool].append((i, d))
    sets: dict[tuple[str, str], list[pb.CounterSet]] = defaultdict(list)
    for cs in state.counter_sets:
        sets[cs.driver, cs.pool].append(cs)
    for i, ((driver, pool), counter_sets) in enumerate(sorted(sets.items())):
        # a slice of its own, as the API wants it; reached from everywhere (counters are no device)
        add({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
             "metadata": {"name": f"{driver}-{pool}-counters"},
             "spec": {"driver": driver, "pool": {"name": pool, "generation": 0,
                                                 "resourceSliceCount": 2 if (driver, pool) in pools else 1},
                      "allNodes": True,
                      "sharedCounters": [{"name": cs.name,
                                          "counters": {k: {"value": v} for k, v in sorted(cs.counters.items())}}
                                         for cs in counter_sets]}}, f"counter_sets[{i}]")
    for (driver, pool), members in sorted(pools.items()):
        devices = []
        for i, d in members:
            chosen = [x for x in (d.node, d.node_selector, d.all_nodes) if x]
            if len(chosen) != 1:
                raise RequestInvalidError(f"state.devices[{i}]", "set exactly one of node, node_selector, all_nodes")
            dev: dict[str, Any] = {"name": d.name,
                                   "attributes": {k: _attribute(v) for k, v in sorted(d.attributes.items())},
                                   "capacity": _capacity(f"state.devices[{i}]", d)}
            if d.allow_multiple_allocations:
                dev["allowMultipleAllocations"] = True
            if d.taints:
                dev["taints"] = _taints(d.taints)
            if d.consumes_counters:
                dev["consumesCounters"] = [{"counterSet": c.counter_set,
                                            "counters": {k: {"value": v} for k, v in sorted(c.counters.items())}}
                                           for c in d.consumes_counters]
            if d.node:
                dev["nodeName"] = d.node
            elif d.node_selector:
                dev["nodeSelector"] = {"nodeSelectorTerms": _terms(d.node_selector)}
            else:
                dev["allNodes"] = True
            devices.append(dev)
        add({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
             "metadata": {"name": f"{driver}-{pool}"},
             "spec": {"driver": driver, "pool": {"name": pool, "generation": 0,
                                                 "resourceSliceCount": 2 if (driver, pool) in sets else 1},
                      "perDeviceNodeSelection": True, "devices": devices}},
            f"devices[{members[0][0]}]")


# ---- plan <-> message ------------------------------------------------------------------------


_PLAN_STATUS = {"OPTIMAL": pb.PLAN_STATUS_OPTIMAL, "FEASIBLE": pb.PLAN_STATUS_FEASIBLE,
                "INFEASIBLE": pb.PLAN_STATUS_INFEASIBLE, "UNKNOWN": pb.PLAN_STATUS_UNKNOWN,
                "INVALID": pb.PLAN_STATUS_INVALID}
_PLAN_STATUS_NAME = {v: k for k, v in _PLAN_STATUS.items()}


def _stats_struct(stats: Mapping[str, Any]) -> struct_pb2.Struct:
    out = struct_pb2.Struct()
    out.update(json.loads(json.dumps(dict(stats))))  # plain JSON values: tuples as lists, keys as text
    return out


def _integral(value: Any) -> Any:
    """A Struct holds numbers as doubles: give back the integers the plan wrote (3.0 -> 3)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, dict):
        return {k: _integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral(v) for v in value]
    return value


def _needs_to_proto(needs: Iterable[p.BudgetNeed]) -> list[pb.BudgetNeed]:
    return [pb.BudgetNeed(budget=b.budget, allowed=b.allowed, needed=b.needed) for b in needs]


def _needs_from_proto(needs: Iterable[pb.BudgetNeed]) -> tuple[p.BudgetNeed, ...]:
    return tuple(p.BudgetNeed(budget=b.budget, allowed=b.allowed, needed=b.needed) for b in needs)


def _would_take_to_proto(took: p.WouldTake | None) -> pb.WouldTake | None:
    if took is None:
        return None
    return pb.WouldTake(violations_at_least=took.violations_at_least, evictions=took.evictions, proven=took.proven,
                        budgets=_needs_to_proto(took.budgets))


def _would_take_from_proto(w: pb.WorkloadVerdict) -> p.WouldTake | None:
    if not w.HasField("would_take"):
        return None
    took = w.would_take
    return p.WouldTake(violations_at_least=took.violations_at_least, evictions=took.evictions, proven=took.proven,
                       budgets=_needs_from_proto(took.budgets))


def explanation_to_proto(found: api.Explanation, request_id: str = "") -> pb.ExplainResponse:
    """``api.Explanation`` as Explain answers it, field by field."""
    return pb.ExplainResponse(
        workload=found.workload, satisfied=found.satisfied, satisfied_soft=found.satisfied_soft,
        budgets=_needs_to_proto(found.budgets), evictions=list(found.evictions), proven=found.proven,
        reason=found.reason, min_count=found.min_count, largest_min_count=found.largest_min_count,
        larger=[pb.GangSize(min_count=z.min_count, satisfied=z.satisfied, proven=z.proven, reason=z.reason,
                            budgets=_needs_to_proto(z.budgets), evictions=z.evictions) for z in found.larger],
        larger_omitted=found.larger_omitted, request_id=request_id)


def explanation_from_proto(msg: pb.ExplainResponse) -> api.Explanation:
    return api.Explanation(
        workload=msg.workload, satisfied=msg.satisfied, satisfied_soft=msg.satisfied_soft,
        budgets=_needs_from_proto(msg.budgets), evictions=tuple(msg.evictions), proven=msg.proven, reason=msg.reason,
        min_count=msg.min_count if msg.HasField("min_count") else None,
        largest_min_count=msg.largest_min_count if msg.HasField("largest_min_count") else None,
        larger=tuple(api.Size(min_count=z.min_count, satisfied=z.satisfied, proven=z.proven, reason=z.reason,
                              budgets=_needs_from_proto(z.budgets), evictions=z.evictions) for z in msg.larger),
        larger_omitted=msg.larger_omitted)


def plan_to_proto(plan: p.Plan) -> pb.Plan:
    o = plan.objective
    return pb.Plan(
        status=_PLAN_STATUS[plan.status],
        workloads=[pb.WorkloadVerdict(
            name=w.name, kind=w.kind, priority=w.priority, satisfied=w.satisfied, reason=w.reason, proven=w.proven,
            would_take=_would_take_to_proto(w.would_take),
            groups=[pb.GroupVerdict(name=g.name, kind=g.kind, placed_pods=g.placed_pods, running_pods=g.running_pods,
                                    min_count=g.min_count, satisfied=g.satisfied, domain=dict(g.domain))
                    for g in w.groups]) for w in plan.workloads],
        bindings=[pb.Binding(pod=b.pod, node=b.node) for b in plan.bindings],
        evictions=[pb.Eviction(pod=e.pod, node=e.node, cost=e.cost, group=e.group) for e in plan.evictions],
        device_allocations=[pb.DeviceAllocation(
            pod=d.pod, pod_group=d.pod_group, claim=d.claim, request=d.request,
            devices=[pb.PlanDevice(driver=x.driver, pool=x.pool, device=x.device, share_id=x.share_id,
                                   consumed_capacity=dict(x.consumed), admin_access=x.admin_access)
                     for x in d.devices])
            for d in plan.device_allocations],
        objective=pb.Objective(
            satisfied_workloads=o.satisfied_workloads, satisfied_by_priority=dict(o.satisfied_by_priority),
            placed_pods=o.placed_pods, pdb_violations=o.pdb_violations, preemption_cost=o.preemption_cost,
            evicted_pods=o.evicted_pods, preemption_cost_bound=o.preemption_cost_bound, gap=o.gap,
            first_available=o.first_available, satisfied_bound=o.satisfied_bound,
            satisfied_by_priority_bound=dict(o.satisfied_by_priority_bound), placed_bound=o.placed_bound,
            pdb_violations_bound=o.pdb_violations_bound, evicted_pods_bound=o.evicted_pods_bound,
            first_available_bound=o.first_available_bound, gap_tier=o.gap_tier),
        stats=_stats_struct(plan.stats),
        held_pods=[pb.HeldPod(pod=h.pod, reason=h.reason) for h in plan.held],
        warnings=list(plan.warnings),
    )


def plan_from_proto(msg: pb.Plan) -> p.Plan:
    o = msg.objective
    return p.Plan(
        status=_PLAN_STATUS_NAME.get(msg.status, f"PlanStatus value {msg.status}"),
        workloads=tuple(p.WorkloadVerdict(
            name=w.name, kind=w.kind, priority=w.priority, satisfied=w.satisfied, reason=w.reason,
            groups=tuple(p.GroupVerdict(name=g.name, kind=g.kind, placed_pods=g.placed_pods,
                                        running_pods=g.running_pods,
                                        min_count=g.min_count if g.HasField("min_count") else None,
                                        satisfied=g.satisfied, domain=dict(g.domain)) for g in w.groups),
            proven=w.proven, would_take=_would_take_from_proto(w))
            for w in msg.workloads),
        bindings=tuple(p.Binding(pod=b.pod, node=b.node) for b in msg.bindings),
        evictions=tuple(p.Eviction(pod=e.pod, node=e.node, cost=e.cost, group=e.group) for e in msg.evictions),
        device_allocations=tuple(p.DeviceAllocation(
            pod=d.pod, pod_group=d.pod_group, claim=d.claim, request=d.request,
            devices=tuple(p.PlanDevice(driver=x.driver, pool=x.pool, device=x.device, share_id=x.share_id,
                                       consumed=tuple(sorted(x.consumed_capacity.items())),
                                       admin_access=x.admin_access) for x in d.devices))
            for d in msg.device_allocations),
        objective=p.Objective(
            satisfied_workloads=o.satisfied_workloads, satisfied_by_priority=dict(o.satisfied_by_priority),
            placed_pods=o.placed_pods, pdb_violations=o.pdb_violations, preemption_cost=o.preemption_cost,
            evicted_pods=o.evicted_pods, preemption_cost_bound=o.preemption_cost_bound, gap=o.gap,
            first_available=o.first_available, satisfied_bound=o.satisfied_bound,
            satisfied_by_priority_bound=dict(o.satisfied_by_priority_bound), placed_bound=o.placed_bound,
            pdb_violations_bound=o.pdb_violations_bound, evicted_pods_bound=o.evicted_pods_bound,
            first_available_bound=o.first_available_bound, gap_tier=o.gap_tier),
        stats=_integral(json_format.MessageToDict(msg.stats)),
        held=tuple(p.Held(pod=h.pod, reason=h.reason) for h in msg.held_pods),
        warnings=tuple(msg.warnings),
    )
