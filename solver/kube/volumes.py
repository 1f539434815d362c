"""PersistentVolumeClaims of pending pods, as kube-scheduler's VolumeBinding plugin reads them
(pkg/scheduler/framework/plugins/volumebinding: volume_binding.go ``podHasPVCs``, binder.go
``GetPodVolumeClaims``, ``FindPodVolumes``, ``checkBoundClaims``, ``findMatchingVolumes``,
``checkVolumeProvisions``).

What a pod's claims demand becomes part of the pod (``Pod.volume_block``, ``Pod.volume_terms``),
so every node filter (model, baseline, verifier, naive model) applies it through
``selectors.statically_feasible``:

- a claim that does not exist, is being deleted or is Lost: no node (PreFilter refuses);
- a claim bound (``spec.volumeName`` and the bind-completed annotation): its PersistentVolume
  must exist, and a node must match the volume's required node affinity;
- a claim not bound whose class binds at once (no class, an unknown class, Immediate, or
  ``volumeName`` set without the annotation: pre-bound): no node ("pod has unbound immediate
  PersistentVolumeClaims");
- a claim not bound whose class waits for the first consumer: a node where an available
  volume of the class (no claimRef, or one to this claim; enough capacity; the access modes)
  matches by node affinity, or, when the class provisions (a provisioner other than
  ``kubernetes.io/no-provisioner``), a node its allowedTopologies admit and, when the driver
  tracks storage capacity (CSIDriver ``storageCapacity``, binder.go ``hasEnoughCapacity``), that
  a CSIStorageCapacity of the class whose maximumVolumeSize (else capacity) holds the claim's
  request reaches by its nodeTopology; a claim annotated ``volume.kubernetes.io/selected-node``
  is being provisioned for that node and no other (``FindPodVolumes``' fast path).

Each claim's node terms carry the reason upstream gives a node they leave out
(``Pod.volume_reasons``: node affinity conflict, no volume to bind, not enough free storage,
no volume zone), and a refusal where upstream makes it (``Pod.volume_stage``: VolumeBinding's
PreFilter, VolumeRestrictions' Filter, VolumeBinding's Filter, or a Filter's error).

VolumeZone (plugins/volumezone ``getPVbyPod``, ``Filter``) adds, for a persistentVolumeClaim
volume whose claim names its volume, the volume's zone and region labels (``__`` separates
several zones): a node carrying any of the four zone and region labels must carry each of
the volume's, with a value among its zones (a beta key may be met by its GA twin).

VolumeRestrictions (plugins/volumerestrictions ``readWriteOncePodPVCsForPod``,
``satisfyReadWriteOncePod``): a claim with the ReadWriteOncePod access mode serves one pod. A
pod running with it keeps it unless preempted: the first pending pod by name that asks for it
may take it on the holder's node once the holder is evicted (``Pod.once_holders``, as
upstream's preemption dry run lifts the conflict only by removing the holder from the node it
tries); else the first pending pod by name that asks for it may have it, and the others wait.

NodeVolumeLimits (plugins/nodevolumelimits/csi.go ``Filter``, ``filterAttachableVolumes``,
``getCSIDriverInfo``, ``getCSIDriverInfoFromSC``, ``getNodeVolumeAttachmentInfo``,
``checkCSIDriverOnNode``): a pod's CSI volumes (``Pod.csi_volumes``) are its claims' (a
persistentVolumeClaim or a generic ephemeral volume): a claim naming a volume whose
PersistentVolume exists is that volume's ``spec.csi`` (driver, ``driver/volumeHandle``), a
volume of another kind is not counted; a claim naming no volume, or a missing one, is its
class's provisioner with a name of the claim's own. A node's CSINode gives, per driver, the
volumes it may attach (``allocatable.count``); VolumeAttachments on the node count too
(``Node.attached_volumes``). A pod with CSI volumes whose CSIDriver sets
``preventPodSchedulingIfMissing`` (VolumeLimitScaling, beta and on in 1.37) fits no node whose
CSINode lacks that driver (``Pod.csi_required``).

CSI migration (csi.go ``checkAttachableInlineVolume``, ``getCSIDriverInfo``; utils.go
``isCSIMigrationOn``; csi-translation-lib's plugins): an in-tree volume of the five plugins
whose migration is on (``MIGRATION``: AWS EBS, GCE PD, Azure Disk, Cinder, Portworx), inline in
the pod or as a claim's PersistentVolume, counts under its CSI driver with the handle the
translation gives (``_in_tree``); a claim not bound whose class provisions with one of those
plugins counts under the CSI driver; Azure File and vSphere are migratable but off in the
scheduler, so never counted. Upstream translates only where the node has a CSINode; a node
without one has no limit, and gangplace applies ``preventPodSchedulingIfMissing`` for a
migrated driver on it too (stricter than upstream, which skips the volume there). A PV the
translation refuses is not counted, as upstream; an inline volume it refuses makes upstream's
Filter fail with an error, so a pending pod with one is placed nowhere (when any node has a
CSINode), and a running pod's is not counted, with a warning.

A volume serves a claim as ``FindMatchingVolume`` says (``_Volume.serves``: room, access modes,
volume mode, attributes class, the claim's selector, phase Available). Two claims never take one
volume local to a node (``Pod.local_claims``, ``Node.local_volumes``:
model/localpv.py; a claim with a selector is not counted there). Not read: two claims choosing
one volume several nodes reach (each pod alone may take it): the plan can then bind a pod the
real scheduler would leave pending. Upstream does not count one pod's provisioning against the
next pod's storage capacity either, and neither does gangplace.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from solver.core import snapshot as s
from solver.filters import selectors
from solver.kube.objects import (
    INT32_MAX,
    Obj,
    get_field,
    invalid,
    label_selector,
    name_of,
    opt_text_field,
    quantity,
    requirements,
    string_list,
    string_map_field,
    text_field,
)
from solver.kube.pods import node_selector_terms

BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ONCE_POD = "ReadWriteOncePod"  # an access mode: one pod at a time (VolumeRestrictions)
ONCE_POD_IN_USE = ("node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already "
                   "in-use by another pod")  # volumerestrictions ErrReasonReadWriteOncePodConflict
BETA_CLASS = "volume.beta.kubernetes.io/storage-class"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
# CSI migration on in kube-scheduler 1.37 (nodevolumelimits/utils.go isCSIMigrationOn): the in-tree
# volume source -> (its plugin, the CSI driver it is counted under), csi-translation-lib/plugins
MIGRATION = {
    "awsElasticBlockStore": ("kubernetes.io/aws-ebs", "ebs.csi.aws.com"),
    "gcePersistentDisk": ("kubernetes.io/gce-pd", "pd.csi.storage.gke.io"),
    "azureDisk": ("kubernetes.io/azure-disk", "disk.csi.azure.com"),
    "cinder": ("kubernetes.io/cinder", "cinder.csi.openstack.org"),
    "portworxVolume": ("kubernetes.io/portworx-volume", "pxd.portworx.com"),
}
MIGRATED_PROVISIONERS = dict(MIGRATION.values())
# migratable, but isCSIMigrationOn says no: their volumes are never counted
NOT_MIGRATED = frozenset({"kubernetes.io/azure-file", "kubernetes.io/vsphere-volume"})
BETA_ZONE, ZONE = "failure-domain.beta.kubernetes.io/zone", "topology.kubernetes.io/zone"
SELECTED_NODE = "volume.kubernetes.io/selected-node"  # a claim being provisioned for that node
# VolumeBinding's Filter reasons (binder.go ConflictReasons, in the order FindPodVolumes lists
# them) and VolumeZone's, for a node a claim's terms leave out
NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
ZONE_CONFLICT = "node(s) had no available volume zone"


@dataclass(frozen=True, slots=True)
class _Claim:
    key: str
    volume: str
    bound: bool
    class_name: str
    size: int
    modes: frozenset[str]
    going: str  # why PreFilter refuses it ("" when it does not)
    selected: str = ""  # the node its provisioning was started for (SELECTED_NODE), "" when none
    mode: str = "Filesystem"  # spec.volumeMode
    vac: str = ""  # spec.volumeAttributesClassName
    selector: s.LabelSelector | None = None  # spec.selector: the volumes' labels it takes


@dataclass(frozen=True, slots=True)
class _Volume:
    name: str
    class_name: str
    size: int
    modes: frozenset[str]
    claim: str  # spec.claimRef namespace/name, "" when available
    terms: tuple[s.NodeSelectorTerm, ...]  # required node affinity ((): any node)
    available: bool
    zones: tuple[s.NodeSelectorTerm, ...]  # what VolumeZone asks of a node ((): nothing)
    csi: tuple[str, str] | None = None  # spec.csi: (driver, volumeHandle)
    migrated: tuple[str, str] | None = None  # an in-tree source as CSI migration counts it
    mode: str = "Filesystem"  # spec.volumeMode
    vac: str = ""  # spec.volumeAttributesClassName
    labels: Mapping[str, str] = dataclasses.field(default_factory=dict)
    phase_ok: bool = True  # status.phase Available (or not written yet)

    def serves(self, claim: _Claim) -> bool:
        """``FindMatchingVolume`` (component-helpers pv_helpers.go) on everything but the node:
        a volume pre-bound to the claim needs only room, volume mode and attributes class; any
        other must be unclaimed, Available, of the claim's class, match its selector and carry
        its access modes."""
        if (self.claim and self.claim != claim.key) or self.size < claim.size or self.mode != claim.mode \
                or self.vac != claim.vac or not self.available:
            return False
        if self.claim == claim.key:
            return True
        return self.phase_ok and self.class_name == claim.class_name and claim.modes <= self.modes and (
            claim.selector is None or selectors.label_selector_matches(claim.selector, self.labels))


@dataclass(frozen=True, slots=True)
class _Capacity:
    """A CSIStorageCapacity: what its driver may provision for a class, where."""

    class_name: str
    limit: int | None  # maximumVolumeSize, else capacity (bytes); None: neither, so never enough
    where: tuple[s.NodeSelectorTerm, ...] | None  # nodeTopology as terms (None: every node; (): none)


@dataclass(frozen=True, slots=True)
class _Class:
    name: str
    provisioner: str
    wait: bool  # volumeBindingMode WaitForFirstConsumer
    topologies: tuple[s.NodeSelectorTerm, ...]  # allowedTopologies as node selector terms


class Volumes:
    """The claims, volumes and classes of a snapshot, and what each pending pod's claims demand."""

    def __init__(self, by_kind: Mapping[str, Sequence[Obj]]) -> None:
        self.claims = {c.key: c for c in (_claim(o) for o in by_kind.get("PersistentVolumeClaim", ()))}
        self.volumes = {v.name: v for v in (_volume(o) for o in by_kind.get("PersistentVolume", ()))}
        self.classes = {c.name: c for c in (_class(o) for o in by_kind.get("StorageClass", ()))}
        self.holders, self.running_holders, self.first_askers = self._once_pod_holders(by_kind.get("Pod", ()))
        self.pending_users = _pending_users(by_kind.get("Pod", ()))
        self.required = frozenset(d for d in (_driver(o) for o in by_kind.get("CSIDriver", ())) if d)
        # drivers that opt into storage capacity tracking (CSIDriver spec.storageCapacity)
        self.tracked = frozenset(name_of(o, namespaced=False)[1] for o in by_kind.get("CSIDriver", ())
                                 if get_field(o, "spec.storageCapacity", bool))
        self.capacities = [_capacity(o) for o in by_kind.get("CSIStorageCapacity", ())]
        self.local: set[str] = set()  # the volumes local to one node (localize)
        self._served: dict[str, list[_Volume]] = {}  # claim key -> the volumes serving it (_serving)
        self.csi_nodes = {n: (drivers, limits) for n, drivers, limits in map(_csi_node, by_kind.get("CSINode", ()))}
        self.attached: dict[str, set[tuple[str, str]]] = {}
        for obj in by_kind.get("VolumeAttachment", ()):
            node, attacher, volume = _attachment(obj)
            source = self.volumes.get(volume)
            if node and attacher and source is not None and source.csi is not None:
                self.attached.setdefault(node, set()).add((attacher, f"{attacher}/{source.csi[1]}"))

    def localize(self, nodes: tuple[s.Node, ...]) -> tuple[s.Node, ...]:
        """The nodes with their local volumes: each available volume (no claimRef) whose node
        affinity matches one node alone (``Node.local_volumes``; localpv.py)."""
        found: dict[str, dict[str, list[tuple[int, frozenset[str]]]]] = {}
        by_label: dict[tuple[str, str], list[s.Node]] = {}  # a term's In values narrow the nodes to try
        for n in nodes:
            for key, value in n.labels.items():
                by_label.setdefault((key, value), []).append(n)
            by_label.setdefault(("metadata.name", n.name), []).append(n)

        def near(term: s.NodeSelectorTerm) -> Iterable[s.Node]:
            for req in (*term.match_fields, *term.match_expressions):
                if req.operator == "In":
                    return [n for v in req.values for n in by_label.get((req.key, v), ())]
            return nodes

        for volume in self.volumes.values():
            if not volume.available or not volume.phase_ok or volume.claim or not volume.terms:
                continue
            where = sorted({n.name for t in volume.terms for n in near(t) if selectors.term_matches(t, n)})
            if len(where) == 1:
                self.local.add(volume.name)
                found.setdefault(where[0], {}).setdefault(_pool(volume.class_name, volume.mode, volume.vac), []).append(
                    (volume.size, volume.modes))
        return tuple(dataclasses.replace(n, local_volumes={c: tuple(sorted(v, key=lambda x: (x[0], sorted(x[1]))))
                                                           for c, v in sorted(found[n.name].items())})
                     if n.name in found else n for n in nodes)

    def node(self, node: s.Node) -> s.Node:
        """The node with what NodeVolumeLimits reads of it: its CSINode's drivers and limits (none
        without a CSINode) and the CSI volumes its VolumeAttachments hold."""
        drivers, limits = self.csi_nodes.get(node.name, (frozenset(), {}))
        return dataclasses.replace(node, csi_drivers=drivers, volume_limits=limits,
                                   attached_volumes=frozenset(self.attached.get(node.name, ())))

    def attachable(self, obj: Obj, namespace: str, name: str) -> tuple[tuple[tuple[str, str], ...], frozenset[str]]:
        """The pod's CSI volumes (driver, unique name), sorted, and the drivers among them whose
        CSIDriver prevents scheduling where a node lacks them (``getCSIDriverInfo``)."""
        out: set[tuple[str, str]] = set()
        for vol in get_field(obj, "spec.volumes", list, []):
            if not isinstance(vol, Mapping):
                continue  # demand() names it for a pending pod; a running pod's is not counted
            ref = vol.get("persistentVolumeClaim")
            if isinstance(ref, Mapping) and isinstance(ref.get("claimName"), str):
                claim_name = ref["claimName"]
            elif vol.get("ephemeral") is not None:
                claim_name = f"{name}-{vol.get('name', '')}"
            else:
                migrated = _inline(obj, vol)
                if isinstance(migrated, tuple):
                    out.add(migrated)
                continue
            claim = self.claims.get(f"{namespace}/{claim_name}")
            if claim is None:
                continue
            found = self._csi_of(claim)
            if found is not None:
                out.add(found)
        return tuple(sorted(out)), frozenset(d for d, _ in out if d in self.required)

    def _csi_of(self, claim: _Claim) -> tuple[str, str] | None:
        volume = self.volumes.get(claim.volume) if claim.volume else None
        if volume is not None:  # neither CSI nor migrated: not counted
            found = volume.csi or volume.migrated
            return None if found is None else (found[0], f"{found[0]}/{found[1]}")
        cls = self.classes.get(claim.class_name) if claim.class_name else None
        if cls is None or not cls.provisioner or cls.provisioner in NOT_MIGRATED:
            return None
        driver = MIGRATED_PROVISIONERS.get(cls.provisioner, cls.provisioner)
        return driver, f"{driver}/ claim {claim.key}"  # a name no volume handle has

    def untranslatable(self, obj: Obj) -> str:
        """Upstream's Filter error for the pod's first inline volume CSI migration cannot
        translate, when some node has a CSINode (where upstream translates); else ""."""
        if not self.csi_nodes:
            return ""
        for vol in get_field(obj, "spec.volumes", list, []):
            if isinstance(vol, Mapping) and isinstance(why := _inline(obj, vol), str):
                return f'running "NodeVolumeLimits" filter plugin: converting volume({vol.get("name", "")}) ' \
                       f"from inline to csi: {why}"
        return ""

    def _once_pod_holders(self, pods: Iterable[Obj]
                          ) -> tuple[dict[str, str], dict[str, list[tuple[str, str]]], dict[str, str]]:
        """Per ReadWriteOncePod claim: the one pod that may use it (a pod running with it, the
        first by name, else the first pending pod by name that asks for it); the running pods
        that use it, with their nodes; and the first pending pod by name that asks for it."""
        users: dict[str, list[tuple[bool, str]]] = {}
        running: dict[str, list[tuple[str, str]]] = {}
        for obj in pods:
            meta, spec = obj.get("metadata"), obj.get("spec")
            status = obj.get("status")
            if type(meta) is not dict or type(spec) is not dict or type(spec.get("volumes")) is not list \
                    or (type(status) is dict and status.get("phase") in ("Succeeded", "Failed")):
                continue
            ns = meta.get("namespace") or "default"
            for vol in spec["volumes"]:
                ref = vol.get("persistentVolumeClaim") if type(vol) is dict else None
                claim = self.claims.get(f"{ns}/{ref.get('claimName')}") if type(ref) is dict else None
                if claim is not None and ONCE_POD in claim.modes:
                    users.setdefault(claim.key, []).append((not spec.get("nodeName"), f"{ns}/{meta.get('name')}"))
                    if spec.get("nodeName"):
                        running.setdefault(claim.key, []).append((f"{ns}/{meta.get('name')}", str(spec["nodeName"])))
        first = {claim: min(k for pending, k in found if pending) for claim, found in users.items()
                 if any(pending for pending, _ in found)}
        return {claim: min(found)[1] for claim, found in users.items()}, running, first

    def demand(self, obj: Obj, namespace: str, name: str) -> Demand:
        """(why no node can host the pod, or ""; where upstream says so, an ``s.VOLUME_*`` stage;
        per claim, node selector terms one of which a node must match, each with the claim's
        number and the reason a node it leaves out is given). A PreFilter's refusal comes before
        any Filter's, as upstream runs them. And the running pods (key, node) holding a
        ReadWriteOncePod claim the pod is the first pending pod to ask for, when they are all its
        volumes refuse: upstream may preempt them (``Pod.once_holders``)."""
        untranslatable = self.untranslatable(obj)
        if untranslatable:
            return untranslatable, s.VOLUME_ERROR, (), (), (), ()
        entries: list[tuple[tuple[s.NodeSelectorTerm, ...], int, str]] = []
        local: list[tuple[str, frozenset[str], int]] = []
        shared: list[tuple[str, str, frozenset[str], int]] = []
        refused: list[tuple[str, str]] = []  # (stage, why), in volume order
        held: list[tuple[str, str]] = []  # running holders of claims whose refusal preemption may lift
        for i, claim_name, ephemeral in _claim_volumes(obj, name):
            claim = self.claims.get(f"{namespace}/{claim_name}")
            if claim is None:
                refused.append((s.VOLUME_PREFILTER, (
                    f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{claim_name}"'
                    if ephemeral else f'persistentvolumeclaim "{claim_name}" not found')))
                continue
            if claim.going:
                refused.append((s.VOLUME_PREFILTER, claim.going))
                continue
            holder = self.holders.get(claim.key)
            if not ephemeral and holder is not None and holder != f"{namespace}/{name}":
                if self.first_askers.get(claim.key) == f"{namespace}/{name}" and claim.key in self.running_holders:
                    held += self.running_holders[claim.key]  # lifted once they are evicted
                else:
                    refused.append((s.VOLUME_RESTRICTED, ONCE_POD_IN_USE))
            stage, why, needs = self._claim_demand(claim)
            if why:
                refused.append((stage, why))
                continue
            entries += [(terms, i, reason) for terms, reason in needs]
            if self._only_local(claim):
                pool = _pool(claim.class_name, claim.mode, claim.vac)
                if not ephemeral and self.pending_users.get(claim.key, 0) > 1:
                    shared.append((claim.key, pool, claim.modes, claim.size))
                else:
                    local.append((pool, claim.modes, claim.size))
            volume = self.volumes.get(claim.volume) if claim.volume and not ephemeral else None
            if volume is not None and volume.zones:
                entries.append((volume.zones, i, ZONE_CONFLICT))
        if refused:  # the PreFilter's first, else the first Filter's in upstream's order
            order = (s.VOLUME_PREFILTER, s.VOLUME_RESTRICTED, s.VOLUME_BINDING)
            stage, why = min(refused + [(s.VOLUME_RESTRICTED, ONCE_POD_IN_USE)] * bool(held),
                             key=lambda r: order.index(r[0]))
            return why, stage, (), (), (), ()
        local_sorted = tuple(sorted(local, key=lambda c: (c[0], sorted(c[1]), c[2])))
        shared_sorted = tuple(sorted(set(shared), key=lambda c: c[0]))
        if held:  # refused only by holders upstream may preempt: on every node, in these words
            return (ONCE_POD_IN_USE, s.VOLUME_RESTRICTED, tuple(entries), local_sorted, tuple(sorted(set(held))),
                    shared_sorted)
        return "", "", tuple(entries), local_sorted, (), shared_sorted

    def _serving(self, claim: _Claim) -> list[_Volume]:
        """The volumes that serve ``claim`` anywhere (``_Volume.serves``), found once per claim."""
        found = self._served.get(claim.key)
        if found is None:
            found = self._served[claim.key] = [v for v in self.volumes.values() if v.serves(claim)]
        return found

    def _only_local(self, claim: _Claim) -> bool:
        """A claim not bound, waiting for its first consumer, of a class that does not provision,
        that only node-local volumes serve (one each: localpv.py)."""
        if claim.bound or claim.volume or claim.selected or claim.selector is not None:
            return False  # (a claim with a selector takes only some volumes: not counted, lenient)
        cls = self.classes.get(claim.class_name) if claim.class_name else None
        if cls is None or not cls.wait or (cls.provisioner and cls.provisioner != NO_PROVISIONER):
            return False
        serving = self._serving(claim)
        return bool(serving) and all(v.name in self.local for v in serving)

    def _claim_demand(self, claim: _Claim) -> tuple[str, str, list[tuple[tuple[s.NodeSelectorTerm, ...], str]]]:
        """(a refusal's stage and words, or "" and "" and the terms a node must match, each
        with the reason a node they leave out gets, the first failing one counting)."""
        if claim.bound:
            volume = self.volumes.get(claim.volume)
            if volume is None:
                return s.VOLUME_BINDING, PV_NOT_EXIST, []
            return "", "", [(volume.terms, NODE_CONFLICT)] if volume.terms else []
        cls = self.classes.get(claim.class_name) if claim.class_name else None
        if cls is None or not cls.wait or claim.volume:
            return s.VOLUME_PREFILTER, "pod has unbound immediate PersistentVolumeClaims", []
        provisions = bool(cls.provisioner) and cls.provisioner != NO_PROVISIONER
        # allowedTopologies (None: any node; a term without expressions matches none)
        allowed = tuple(t for t in cls.topologies if t.match_expressions) if cls.topologies else None
        space = self._space(cls, claim) if provisions else None
        if claim.selected:  # provisioning started for that node: no other (checkVolumeProvisions there)
            if not provisions:
                return s.VOLUME_BINDING, BIND_CONFLICT, []
            here = (s.NodeSelectorTerm(match_fields=(
                s.SelectorRequirement(key="metadata.name", operator="In", values=(claim.selected,)),)),)
            out = [(here if allowed is None else _both(here, allowed), BIND_CONFLICT)]
            if space is not None:
                out.append((_both(out[0][0], space), NOT_ENOUGH_SPACE))
            return "", "", out
        options: list[s.NodeSelectorTerm] = []
        for volume in self._serving(claim):
            if not volume.terms:
                return "", "", []  # a volume any node may use
            options.extend(volume.terms)
        if not provisions:
            return ("", "", [(tuple(options), BIND_CONFLICT)]) if options else (s.VOLUME_BINDING, BIND_CONFLICT, [])
        out = [] if allowed is None else [(tuple(options) + allowed, BIND_CONFLICT)]
        if space is not None:  # where no volume matches, the driver must have room where the node is
            out.append((tuple(options) + (space if allowed is None else _both(allowed, space)), NOT_ENOUGH_SPACE))
        return "", "", out

    def _space(self, cls: _Class, claim: _Claim) -> tuple[s.NodeSelectorTerm, ...] | None:
        """Where the class's CSI driver has room for the claim (binder.go ``hasEnoughCapacity``):
        None when it does not track capacity (any node), else the nodeTopology of each of its
        CSIStorageCapacity objects for the class whose maximumVolumeSize (or capacity) holds
        the claim's request."""
        if cls.provisioner not in self.tracked or not claim.size:
            return None
        out: list[s.NodeSelectorTerm] = []
        for cap in self.capacities:
            if cap.class_name == cls.name and cap.limit is not None and cap.limit >= claim.size:
                if cap.where is None:
                    return None
                out.extend(cap.where)
        return tuple(out)


Demand = tuple[str, str, tuple[tuple[tuple[s.NodeSelectorTerm, ...], int, str], ...],
               tuple[tuple[str, frozenset[str], int], ...], tuple[tuple[str, str], ...],
               tuple[tuple[str, str, frozenset[str], int], ...]]


def _pending_users(pods: Iterable[Obj]) -> dict[str, int]:
    """Per claim, the pending pods naming it in a persistentVolumeClaim volume."""
    out: dict[str, int] = {}
    for obj in pods:
        meta, spec, status = obj.get("metadata"), obj.get("spec"), obj.get("status")
        if type(meta) is not dict or type(spec) is not dict or spec.get("nodeName") \
                or type(spec.get("volumes")) is not list \
                or (type(status) is dict and status.get("phase") in ("Succeeded", "Failed")):
            continue
        ns = meta.get("namespace") or "default"
        for claim in {f"{ns}/{v['persistentVolumeClaim'].get('claimName')}" for v in spec["volumes"]
                      if type(v) is dict and type(v.get("persistentVolumeClaim")) is dict}:
            out[claim] = out.get(claim, 0) + 1
    return out


def _claim_volumes(obj: Obj, name: str) -> Iterator[tuple[int, str, bool]]:
    """A pod's volumes that are claims: (number among its volumes, claim name, ephemeral). A
    generic ephemeral volume's claim is named ``<pod>-<volume>`` (ephemeral.VolumeClaimName)."""
    for i, vol in enumerate(get_field(obj, "spec.volumes", list, [])):
        if not isinstance(vol, Mapping):
            raise invalid(obj, f"spec.volumes[{i}]", "expected a volume")
        if isinstance(vol.get("persistentVolumeClaim"), Mapping):
            claim_name = vol["persistentVolumeClaim"].get("claimName")
            if not isinstance(claim_name, str) or not claim_name:
                raise invalid(obj, f"spec.volumes[{i}].persistentVolumeClaim.claimName", "missing")
            yield i, claim_name, False
        elif vol.get("ephemeral") is not None:
            yield i, f"{name}-{vol.get('name', '')}", True


def _key(obj: Obj) -> str:
    """A namespaced object's ``namespace/name``."""
    ns, name = name_of(obj, namespaced=True)
    return f"{ns}/{name}"


def _pool(class_name: str, mode: str, vac: str) -> str:
    """The volumes a claim of a class may take alike: its class, volume mode and attributes class."""
    return class_name if (mode, vac) == ("Filesystem", "") else f"{class_name} ({mode}, {vac or '-'})"


Terms = tuple[s.NodeSelectorTerm, ...]


def _both(a: Terms | None, b: Terms) -> Terms:
    """Terms a node matches when it matches one of ``a`` (None: any node) and one of ``b``."""
    if a is None:
        return b
    return tuple(s.NodeSelectorTerm(match_expressions=x.match_expressions + y.match_expressions,
                                    match_fields=x.match_fields + y.match_fields) for x in a for y in b)


def _capacity(obj: Obj) -> _Capacity:
    name_of(obj, namespaced=True)
    name = get_field(obj, "storageClassName", str)
    if not name:
        raise invalid(obj, "storageClassName", "missing")
    limit = None
    for field in ("maximumVolumeSize", "capacity"):
        if get_field(obj, field, (str, int, float)) is not None:
            limit = quantity(obj, field, "storage", obj[field])
            break
    raw = get_field(obj, "nodeTopology", Mapping)
    where: tuple[s.NodeSelectorTerm, ...] | None = ()
    if raw is not None:  # only matching by label: a label selector as one node selector term
        selector = label_selector(obj, "nodeTopology", raw)
        exprs = tuple(s.SelectorRequirement(key=k, operator="In", values=(v,))
                      for k, v in sorted(selector.match_labels.items()))
        exprs += selector.match_expressions
        where = (s.NodeSelectorTerm(match_expressions=exprs),) if exprs else None
    return _Capacity(class_name=name, limit=limit, where=where)


def _claim(obj: Obj) -> _Claim:
    ns, name = name_of(obj, namespaced=True)
    annotations = get_field(obj, "metadata.annotations", Mapping, {})
    volume = get_field(obj, "spec.volumeName", str) or ""
    class_name = (opt_text_field(obj, f"metadata.annotations[{BETA_CLASS}]", annotations[BETA_CLASS])
                  if BETA_CLASS in annotations else get_field(obj, "spec.storageClassName", str))
    going = ""
    if get_field(obj, "status.phase", str) == "Lost":
        going = f'persistentvolumeclaim "{name}" bound to non-existent persistentvolume "{volume}"'
    elif get_field(obj, "metadata.deletionTimestamp", str):
        going = f'persistentvolumeclaim "{name}" is being deleted'
    selected = opt_text_field(obj, f"metadata.annotations[{SELECTED_NODE}]", annotations.get(SELECTED_NODE))
    raw_selector = get_field(obj, "spec.selector", Mapping)
    return _Claim(key=f"{ns}/{name}", volume=volume, bound=bool(volume) and BIND_COMPLETED in annotations,
                  selected=selected, mode=get_field(obj, "spec.volumeMode", str) or "Filesystem",
                  vac=get_field(obj, "spec.volumeAttributesClassName", str) or "",
                  selector=None if raw_selector is None else label_selector(obj, "spec.selector", raw_selector),
                  class_name=str(class_name or ""), modes=frozenset(string_list(obj, "spec.accessModes")),
                  size=_size(obj, "spec.resources.requests"), going=going)


def _volume(obj: Obj) -> _Volume:
    _, name = name_of(obj, namespaced=False)
    annotations = get_field(obj, "metadata.annotations", Mapping, {})
    class_name = (opt_text_field(obj, f"metadata.annotations[{BETA_CLASS}]", annotations[BETA_CLASS])
                  if BETA_CLASS in annotations else get_field(obj, "spec.storageClassName", str))
    ref = get_field(obj, "spec.claimRef", Mapping)
    field = "spec.nodeAffinity.required.nodeSelectorTerms"
    return _Volume(name=name, class_name=str(class_name or ""), size=_size(obj, "spec.capacity"),
                   modes=frozenset(string_list(obj, "spec.accessModes")),
                   claim=f"{ref.get('namespace', '')}/{ref.get('name', '')}" if ref else "",
                   terms=node_selector_terms(obj, field, get_field(obj, field, list, [])),
                   available=not get_field(obj, "metadata.deletionTimestamp", str),
                   zones=_zone_terms(get_field(obj, "metadata.labels", Mapping, {})), csi=_csi_source(obj),
                   migrated=_persistent(obj), mode=get_field(obj, "spec.volumeMode", str) or "Filesystem",
                   vac=get_field(obj, "spec.volumeAttributesClassName", str) or "",
                   labels=string_map_field(obj, "metadata.labels", get_field(obj, "metadata.labels", Mapping, {})),
                   phase_ok=(get_field(obj, "status.phase", str) or "Available") == "Available")


def _persistent(obj: Obj) -> tuple[str, str] | None:
    """A PersistentVolume's in-tree source as CSI migration counts it (driver, handle); None
    when it has none or the translation refuses it (``getCSIDriverInfo`` then counts nothing)."""
    spec = get_field(obj, "spec", Mapping, {})
    labels = get_field(obj, "metadata.labels", Mapping, {})
    for source in MIGRATION:
        if isinstance(spec.get(source), Mapping):
            found = _in_tree(obj, f"spec.{source}", source, spec[source], labels)
            return found if isinstance(found, tuple) else None
    return None


def _inline(obj: Obj, vol: Mapping[str, Any]) -> tuple[str, str] | str | None:
    """An inline volume as CSI migration counts it: (driver, driver/handle), the translation's
    error, or None when it is not a migrated in-tree source."""
    for source in MIGRATION:
        if isinstance(vol.get(source), Mapping):
            found = _in_tree(obj, f"spec.volumes[{vol.get('name', '')}].{source}", source, vol[source], None)
            return (found[0], f"{found[0]}/{found[1]}") if isinstance(found, tuple) else found
    return None


def _in_tree(obj: Obj, field: str, source: str, raw: Mapping[str, Any],
             labels: Mapping[str, Any] | None) -> tuple[str, str] | str:
    """(CSI driver, volume handle) of an in-tree source, as csi-translation-lib translates it (a
    PersistentVolume's ``labels``, None inline), or the translation's error."""
    driver = MIGRATION[source][1]
    if source == "awsElasticBlockStore":  # aws_ebs.go KubernetesVolumeIDToEBSVolumeID
        volume_id = text_field(obj, f"{field}.volumeID", raw.get("volumeID"))
        if not volume_id.startswith("aws://"):
            return driver, volume_id
        path = volume_id[len("aws://"):].partition("/")[2].strip("/")
        if not path.startswith("vol-") or "/" in path:
            return ("failed to translate Kubernetes ID to EBS Volume ID "
                    f"Invalid format for AWS volume ({volume_id})")
        return driver, path
    if source == "gcePersistentDisk":  # gce_pd.go: zonal, regional or unspecified
        disk = text_field(obj, f"{field}.pdName", raw.get("pdName"))
        zones = str((labels or {}).get(BETA_ZONE) or (labels or {}).get(ZONE) or "").split("__")
        if len(zones) == 1:
            return driver, f"projects/UNSPECIFIED/zones/{zones[0] or 'UNSPECIFIED'}/disks/{disk}"
        regions = {"-".join(z.split("-")[:2]) for z in zones if len(z.split("-")) == 3}
        if len(regions) != 1 or any(len(z.split("-")) != 3 for z in zones):
            return f"failed to get region from zones: {zones}"
        return driver, f"projects/UNSPECIFIED/regions/{regions.pop()}/disks/{disk}"
    if source == "azureDisk":  # azure_disk.go: only managed disks migrate
        kind = opt_text_field(obj, f"{field}.kind", raw.get("kind"))
        if raw.get("kind") is not None and kind.lower() != "managed":
            return f"kind({kind}) is not supported in csi migration"
        return driver, text_field(obj, f"{field}.diskURI", raw.get("diskURI"))
    return driver, text_field(obj, f"{field}.volumeID", raw.get("volumeID"))  # cinder, portworx


def _csi_source(obj: Obj) -> tuple[str, str] | None:
    raw = get_field(obj, "spec.csi", Mapping)
    if raw is None:
        return None
    driver = text_field(obj, "spec.csi.driver", raw.get("driver"))
    handle = text_field(obj, "spec.csi.volumeHandle", raw.get("volumeHandle"))
    if not driver or not handle:
        raise invalid(obj, "spec.csi.driver" if not driver else "spec.csi.volumeHandle", "missing")
    return driver, handle


def _driver(obj: Obj) -> str:
    """A CSIDriver's name when it sets preventPodSchedulingIfMissing, else ""."""
    _, name = name_of(obj, namespaced=False)
    prevent = get_field(obj, "spec.preventPodSchedulingIfMissing", bool)
    return name if prevent else ""


def _csi_node(obj: Obj) -> tuple[str, frozenset[str], dict[str, int]]:
    _, name = name_of(obj, namespaced=False)
    drivers: set[str] = set()
    limits: dict[str, int] = {}
    for i, d in enumerate(get_field(obj, "spec.drivers", list, [])):
        field = f"spec.drivers[{i}]"
        if not isinstance(d, Mapping):
            raise invalid(obj, field, "expected a driver")
        driver = text_field(obj, f"{field}.name", d.get("name"))
        drivers.add(driver)
        allocatable = d.get("allocatable")
        count = allocatable.get("count") if isinstance(allocatable, Mapping) else None
        if count is not None:
            if type(count) is not int or not 0 <= count <= INT32_MAX:
                raise invalid(obj, f"{field}.allocatable.count",
                              f"must be a 32-bit integer of at least 0, got {count!r}")
            limits[driver] = count
    return name, frozenset(drivers), limits


def _attachment(obj: Obj) -> tuple[str, str, str]:
    """A VolumeAttachment's node, attacher and PersistentVolume ("" for each not set)."""
    name_of(obj, namespaced=False)
    return (get_field(obj, "spec.nodeName", str) or "", get_field(obj, "spec.attacher", str) or "",
            get_field(obj, "spec.source.persistentVolumeName", str) or "")


BETA_ZONE, BETA_REGION = "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region"
ZONE, REGION = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"
ZONE_LABELS = (BETA_ZONE, BETA_REGION, ZONE, REGION)  # VolumeZone's topologyLabels
_GA = {BETA_ZONE: ZONE, BETA_REGION: REGION}  # translateToGALabel


def _zone_terms(labels: Mapping[str, Any]) -> tuple[s.NodeSelectorTerm, ...]:
    """VolumeZone's Filter as node selector terms, one of which a node must match: it carries
    none of the four labels; or for each of the volume's, the node's value of that key (of its
    GA twin when the node lacks a beta key) is one of the volume's zones. A label whose zones
    (``LabelZonesToSet``: split on ``__``) include an empty one is ignored, as upstream does."""
    options: list[list[tuple[s.SelectorRequirement, ...]]] = []
    for key in ZONE_LABELS:
        raw = labels.get(key)
        if not isinstance(raw, str):
            continue
        zones = [z.strip() for z in raw.split("__")]
        if not all(zones):
            continue
        values = tuple(sorted(set(zones)))
        ways: list[tuple[s.SelectorRequirement, ...]] = [(s.SelectorRequirement(key=key, operator="In",
                                                                                 values=values),)]
        if key in _GA:
            ways.append((s.SelectorRequirement(key=key, operator="DoesNotExist"),
                         s.SelectorRequirement(key=_GA[key], operator="In", values=values)))
        options.append(ways)
    if not options:
        return ()
    combined: list[tuple[s.SelectorRequirement, ...]] = [()]
    for alternatives in options:
        combined = [have + way for have in combined for way in alternatives]
    bare = tuple(s.SelectorRequirement(key=k, operator="DoesNotExist") for k in ZONE_LABELS)
    return tuple(s.NodeSelectorTerm(match_expressions=t) for t in [bare, *combined])


def _class(obj: Obj) -> _Class:
    _, name = name_of(obj, namespaced=False)
    mode = get_field(obj, "volumeBindingMode", str) or "Immediate"
    if mode not in ("Immediate", "WaitForFirstConsumer"):
        raise invalid(obj, "volumeBindingMode", f"must be Immediate or WaitForFirstConsumer, got {mode!r}")
    topologies = []
    for i, term in enumerate(get_field(obj, "allowedTopologies", list, [])):
        field = f"allowedTopologies[{i}].matchLabelExpressions"
        raw = term.get("matchLabelExpressions") if isinstance(term, Mapping) else None
        # a topology selector term: each key's value In the list (MatchTopologySelectorTerms)
        exprs = [{"key": e.get("key"), "operator": "In", "values": e.get("values", [])}
                 for e in (raw or []) if isinstance(e, Mapping)]
        topologies.append(s.NodeSelectorTerm(match_expressions=requirements(obj, field, exprs)))
    return _Class(name=name, provisioner=get_field(obj, "provisioner", str) or "", wait=mode == "WaitForFirstConsumer",
                  topologies=tuple(topologies))


def _size(obj: Obj, field: str) -> int:
    raw: Any = get_field(obj, field, Mapping, {})
    return quantity(obj, f"{field}.storage", "storage", raw["storage"]) if "storage" in raw else 0


@dataclass(frozen=True, slots=True)
class VolumeBinding:
    """What kube-scheduler's VolumeBinding PreBind writes before a pod's binding (binder.go
    ``BindPodVolumes``), for one claim of the pod: the volume it takes (``volume`` set: the
    volume's spec.claimRef names the claim, as ``GetBindVolumeToClaim`` writes it), or the node
    its provisioning is for (``node``: the claim's selected-node annotation)."""

    namespace: str
    claim: str
    claim_uid: str
    claim_version: str  # the claim's resourceVersion as read
    volume: str = ""
    volume_version: str = ""
    node: str = ""


def prebind(by_kind: Mapping[str, Sequence[Obj]], bindings: Iterable[tuple[str, str]],
            nodes: Mapping[s.NodeName, s.Node]) -> list[VolumeBinding]:
    """For pods about to be bound (``bindings``: pod key, node, in order), each claim not bound
    yet that waits for its first consumer: the smallest available volume on that node serving it
    that no earlier claim took (``findMatchingVolumes``), else, when its class provisions, the
    node to provision it on. A claim being provisioned already, or that nothing serves, gets
    nothing (the plan placed the pod where one serves it)."""
    vols = Volumes(by_kind)
    claims_obj = {_key(o): o for o in by_kind.get("PersistentVolumeClaim", ())}
    volume_obj = {name_of(o, namespaced=False)[1]: o for o in by_kind.get("PersistentVolume", ())}
    pods = {_key(o): o for o in by_kind.get("Pod", ())}
    taken: set[str] = set()
    out: list[VolumeBinding] = []
    for pod_key, node_name in bindings:
        pod, node = pods.get(pod_key), nodes.get(s.NodeName(node_name))
        if pod is None or node is None:
            continue
        ns, name = pod_key.split("/", 1)
        for _, claim_name, _ in _claim_volumes(pod, name):  # a generic ephemeral volume's claim too
            claim = vols.claims.get(f"{ns}/{claim_name}")
            cls = vols.classes.get(claim.class_name) if claim is not None and claim.class_name else None
            if claim is None or claim.bound or claim.volume or claim.selected or cls is None or not cls.wait:
                continue
            raw = claims_obj[claim.key]
            meta = raw["metadata"]
            fits = sorted((v for v in vols.volumes.values() if v.name not in taken and v.serves(claim) and (
                not v.terms or any(selectors.term_matches(t, node) for t in v.terms))),
                key=lambda v: (v.claim != claim.key, v.size, v.name))
            base = {"namespace": ns, "claim": str(meta["name"]), "claim_uid": str(meta.get("uid") or ""),
                    "claim_version": str(meta.get("resourceVersion") or "")}
            if fits:
                taken.add(fits[0].name)
                out.append(VolumeBinding(**base, volume=fits[0].name, volume_version=str(
                    volume_obj[fits[0].name]["metadata"].get("resourceVersion") or "")))
            elif cls.provisioner and cls.provisioner != NO_PROVISIONER:
                out.append(VolumeBinding(**base, node=node_name))
    return out
