"""Kubernetes objects (dicts, as ``kubectl get -o json`` prints them) -> ClusterSnapshot.

This is the edge where quantities become integers and every field is validated;
a malformed object raises ``SnapshotInvalidError`` naming the object
(``Kind/namespace/name``) and the field. Kinds that play no part are counted
in ``ClusterSnapshot.skipped_kinds``. No I/O: ``solver.kube.loader`` reads files.

Field names are the upstream ones (kubernetes client 37.x models,
scheduling.k8s.io/v1beta1 and v1alpha3, resource.k8s.io/v1). ResourceSlices,
DeviceClasses, ResourceClaims, ResourceClaimTemplates and the claim references of pods
and PodGroups become ``ClusterSnapshot.dra`` (the DRA section below lists the choices
made where the API leaves room); CEL selectors are compiled here, so one that does not
compile names its object and field.

The package: ``objects`` (the kinds read, bounds and field readers every object shares),
``pods`` (nodes and pods), ``groups`` (the workload tree and PDBs), ``dra`` (the DRA objects)
and this module (``flatten`` and ``snapshot_from_objects``: the whole snapshot).
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from solver.core import snapshot as s
from solver.core.errors import SnapshotInvalidError
from solver.core.stopping import checkpoint
from solver.kube.dra import (
    DRA_TAINT_EFFECTS,
    DraBuilder,
    parse_device_class,
    parse_resource_claim,
    parse_resource_slice,
)
from solver.kube.groups import parse_group, parse_pdb, resolve_tree
from solver.kube.objects import (
    COST_ANNOTATION,
    DRA_KINDS,
    GROUP_KINDS,
    INT32_MAX,
    MAX_COST,
    MAX_DEPTH,
    MAX_QUANTITY,
    READ_KINDS,
    VALUE_ANNOTATION,
    Obj,
    get_field,
    ident_of,
    invalid,
    name_of,
    quantity,
    resource_list,
    string_map_field,
)
from solver.kube.pods import PREEMPTION_REASONS, Priorities, parse_node, parse_pod, pod_requests
from solver.kube.volumes import Volumes

__all__ = [
    "COST_ANNOTATION",
    "DRA_KINDS",
    "DRA_TAINT_EFFECTS",
    "GROUP_KINDS",
    "INT32_MAX",
    "MAX_COST",
    "MAX_DEPTH",
    "MAX_QUANTITY",
    "PREEMPTION_REASONS",
    "READ_KINDS",
    "VALUE_ANNOTATION",
    "Obj",
    "flatten",
    "parse_device_class",
    "parse_group",
    "parse_node",
    "parse_pdb",
    "parse_pod",
    "parse_resource_claim",
    "parse_resource_slice",
    "pod_requests",
    "quantity",
    "read_objects",
    "snapshot_from_objects",
]


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
            obj = {**obj, "kind": item_kind,
                   **({"apiVersion": item_api} if item_api and "apiVersion" not in obj else {})}
        kind = obj.get("kind")
        if isinstance(obj.get("items"), list) and (kind == "List" or str(kind).endswith("List")):
            typed = str(kind)[: -len("List")] if kind != "List" else None
            out.extend(flatten(obj["items"], item_kind=typed or None, item_api=obj.get("apiVersion")))
        else:
            if not isinstance(kind, str) or not kind:
                raise SnapshotInvalidError(ident_of({**obj, "kind": "?"}), "kind", "missing")
            out.append(obj)
    return out


class _RuntimeClasses:
    """What the RuntimeClass admission plugin does to a pod naming a class when it is created
    (plugin/pkg/admission/runtimeclass/admission.go): ``overhead.podFixed`` becomes the pod's
    ``spec.overhead`` (one already set must equal it), ``scheduling.nodeSelector`` is merged
    into the pod's (a conflicting value is refused) and ``scheduling.tolerations`` are added.
    A pod recorded from a cluster carries all of it already; a written one gets it here. A class
    the snapshot lacks leaves the pod as it is, with a warning."""

    def __init__(self, objs: list[Obj], *, warnings: list[str]) -> None:
        self.classes = {name_of(o, namespaced=False)[1]: o for o in objs}
        self.warnings = warnings

    def admit(self, obj: Obj) -> Obj:
        raw = obj.get("spec")
        name = raw.get("runtimeClassName") if type(raw) is dict else None
        if not name or type(raw) is not dict:
            return obj
        cls = self.classes.get(name)
        if cls is None:
            self.warnings.append(f"{ident_of(obj)}: spec.runtimeClassName: RuntimeClass {name} is not in the snapshot; "
                                 "its overhead and scheduling are not applied")
            return obj
        spec: dict[str, Any] = dict(raw)
        fixed = get_field(cls, "overhead.podFixed", Mapping)
        if fixed is not None:
            amounts = resource_list(cls, "overhead.podFixed", fixed)  # a bad quantity names the class
            if spec.get("overhead") is None:
                spec["overhead"] = dict(fixed)
            elif resource_list(obj, "spec.overhead", spec["overhead"]) != amounts:
                raise invalid(obj, "spec.overhead", f"does not match RuntimeClass {name}'s overhead.podFixed "
                            "(the RuntimeClass admission plugin refuses the pod)")
        selector = string_map_field(cls, "scheduling.nodeSelector",
                                    get_field(cls, "scheduling.nodeSelector", Mapping, {}))
        if selector:
            mine = dict(spec.get("nodeSelector") or {})
            for key, value in selector.items():
                if key in mine and mine[key] != value:
                    raise invalid(obj, f"spec.nodeSelector[{key}]", f"conflicts with RuntimeClass {name}'s "
                                f"scheduling.nodeSelector ({value!r})")
                mine[key] = value
            spec["nodeSelector"] = mine
        tolerations = get_field(cls, "scheduling.tolerations", list, [])
        if tolerations:
            have = list(spec.get("tolerations") or [])
            spec["tolerations"] = have + [t for t in tolerations if t not in have]
        return {**obj, "spec": spec}


def snapshot_from_objects(objects: Iterable[Any]) -> s.ClusterSnapshot:
    """The snapshot of ``objects`` (every field checked; SnapshotInvalidError names the first
    object and field at fault)."""
    return read_objects(objects)[0]


def read_objects(objects: Iterable[Any]) -> tuple[s.ClusterSnapshot, list[Obj]]:
    """The snapshot of ``objects``, and the objects it read (of the kinds it reads, each once),
    for a second reader of the same objects (``solver.reading``: the verifier's)."""
    by_kind: dict[str, list[Obj]] = defaultdict(list)
    skipped: Counter[str] = Counter()
    seen: set[str] = set()
    for i, obj in enumerate(flatten(objects)):
        if not i & 1023:
            checkpoint("reading")
        kind = obj["kind"]
        if kind not in READ_KINDS:
            skipped[kind] += 1
            continue
        ident = ident_of(obj)
        if ident in seen:
            raise invalid(obj, "metadata.name", "duplicate object")
        seen.add(ident)
        by_kind[kind].append(obj)
    priorities = Priorities(by_kind["PriorityClass"])
    volumes = Volumes(by_kind)
    nodes = volumes.localize(tuple(sorted((volumes.node(parse_node(o)) for o in by_kind["Node"]),
                                          key=lambda n: n.name)))
    raw_groups: dict[s.GroupKey, tuple[s.Group, int | None, Obj]] = {}
    for obj in by_kind["PodGroup"] + by_kind["CompositePodGroup"]:
        group, prio = parse_group(obj, priorities)
        raw_groups[group.key] = (group, prio, obj)  # a kind's keys are its own (s.group_key)
    groups, incomplete = resolve_tree(raw_groups)
    group_kind = {g.key: g.kind for g in groups}
    node_names = {n.name for n in nodes}
    dra = DraBuilder(by_kind)
    advertised = {r for n in nodes for r, amount in n.allocatable.items() if amount > 0}
    pods = []
    waiting: list[s.WaitingPod] = []
    warnings = priorities.warnings
    runtime = _RuntimeClasses(by_kind["RuntimeClass"], warnings=priorities.warnings)
    for i, obj in enumerate(by_kind["Pod"]):
        if not i & 1023:
            checkpoint("reading")
        pod = parse_pod(runtime.admit(obj), priorities)
        if pod is None:
            skipped["Pod(finished)"] += 1
            continue
        if pod.node is not None and pod.node not in node_names:
            raise invalid(obj, "spec.nodeName", f"Node {pod.node} not found")
        if pod.group is not None and pod.group not in group_kind:  # a pod's group is a PodGroup's key
            why = incomplete.get(pod.group) or (f"PodGroup {pod.group} not found: waiting for the pod's "
                                                "pod group to appear in the scheduling queue")
            if pod.node is None:
                # upstream holds the pod at PreEnqueue until its group (tree) exists
                waiting.append(s.WaitingPod(pod=pod.key, reason=why))
                continue
            # a running pod outlives its group: it runs, holds its room and is a victim on its own
            warnings.append(f"{ident_of(obj)}: spec.schedulingGroup.podGroupName: {why}; "
                            "the running pod counts as a pod outside any group")
            pod = dataclasses.replace(pod, group=None)
        if pod.node is None and isinstance(obj.get("spec"), Mapping) and obj["spec"].get("volumes"):
            block, stage, entries, local, held, shared = volumes.demand(obj, pod.namespace, pod.name)
            where = {node for _, node in held}
            pod = dataclasses.replace(pod, volume_block=block, volume_stage=stage,
                                      volume_terms=tuple(terms for terms, _, _ in entries),
                                      volume_reasons=tuple((claim, why) for _, claim, why in entries),
                                      local_claims=local, shared_local=shared,
                                      once_holders=tuple(s.PodKey(k) for k, _ in held),
                                      once_node=s.NodeName(where.pop()) if len(where) == 1 else None)
        if isinstance(obj.get("spec"), Mapping) and obj["spec"].get("volumes"):
            csi, required = volumes.attachable(obj, pod.namespace, pod.name)
            pod = dataclasses.replace(pod, csi_volumes=csi, csi_required=required)
            if pod.node is not None and (why := volumes.untranslatable(obj)):
                warnings.append(f"{ident_of(obj)}: spec.volumes: {why.partition(': ')[2]}; the volume is not counted "
                                f"on {pod.node} (upstream's NodeVolumeLimits fails there with that error)")
        if why := dra.waits(obj, pod):  # upstream holds it at PreEnqueue
            waiting.append(s.WaitingPod(pod=pod.key, reason=why))
            continue
        dra.pod(obj, pod)
        pod = dra.extended(obj, pod, advertised)
        pods.append(pod)
    pdbs = tuple(p for o in by_kind["PodDisruptionBudget"] if (p := parse_pdb(o)) is not None)
    namespaces = {}
    for obj in by_kind["Namespace"]:  # their labels: namespaceSelector of pod affinity terms
        _, name = name_of(obj, namespaced=False)
        namespaces[name] = {"kubernetes.io/metadata.name": name,
                            **string_map_field(obj, "metadata.labels", get_field(obj, "metadata.labels", Mapping, {}))}
    snapshot = s.ClusterSnapshot(
        nodes=nodes,
        pods=tuple(sorted(pods, key=lambda p: p.key)),
        groups=groups,
        pdbs=tuple(sorted(pdbs, key=lambda p: p.key)),
        dra=dra.state(),
        skipped_kinds=dict(sorted(skipped.items())),
        namespace_labels=dict(sorted(namespaces.items())),
        waiting=tuple(sorted(waiting, key=lambda w: w.pod)),
        warnings=tuple(warnings) + tuple(dra.warnings),
    )
    return snapshot, [o for objs in by_kind.values() for o in objs]
