"""The verifier's own reading of the Kubernetes objects.

The model reads a snapshot through ``solver.kube`` (and matches labels and taints with
``solver.filters.selectors``); the verifier must not, or a misreading there would pass here
too. This module reads what the node filters and the Eviction API look at straight from
the object dicts, written from upstream's rules and tested against upstream's behaviour
(tests/verify/test_verify_read.py), not against the parser:

- quantities (apimachinery ``resource.Quantity``: ``MilliValue`` for cpu, ``Value`` else,
  both rounded up) and a pod's effective request (component-helpers ``PodRequests``:
  sidecars, init containers, pod-level resources with the API server's defaulting, the
  RuntimeClass overhead);
- nodeSelector, required node affinity (labels.Requirement, ``strconv.ParseInt`` for
  Gt/Lt, matchFields on ``metadata.name``), taints and tolerations, spec.unschedulable;
- host ports (``GetHostPorts``; a hostNetwork pod's container ports, as ``SetDefaults_Pod``);
- the node features a pod needs (component-helpers nodedeclaredfeatures ``InferForScheduling``);
- PersistentVolumeClaims (VolumeBinding's PreFilter and Filter);
- label selectors, pod affinity terms and DoNotSchedule spread constraints;
- PodDisruptionBudget selectors as the Eviction API lists them.

The objects have passed ``solver.kube``'s validation before this reads them (a malformed one
never gets here), so this keeps to the rules and not to error messages. What it reads for one
pod is kept as a ``PodFacts``, shared by every pod with the same spec (a gang's pods are
alike), so the objects themselves need not be kept.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from solver.core.stopping import checkpoint

Obj = Mapping[str, Any]

# ---- quantities ------------------------------------------------------------------------

_QUANTITY = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?")
_POWERS = {"Ki": (2, 10), "Mi": (2, 20), "Gi": (2, 30), "Ti": (2, 40), "Pi": (2, 50), "Ei": (2, 60),
           "n": (10, -9), "u": (10, -6), "m": (10, -3), "": (10, 0), "k": (10, 3), "M": (10, 6),
           "G": (10, 9), "T": (10, 12), "P": (10, 15), "E": (10, 18)}


def amount(raw: Any) -> Fraction:
    """The exact value of a ``resource.Quantity`` (a string, or a JSON number)."""
    if isinstance(raw, int) and not isinstance(raw, bool):
        return Fraction(raw)
    if isinstance(raw, float):
        return Fraction(repr(raw))
    m = _QUANTITY.fullmatch(str(raw))
    if m is None or not (m.group(2) or m.group(3)):
        raise ValueError(f"not a quantity: {raw!r}")
    sign, whole, frac, suffix = m.group(1), m.group(2) or "0", m.group(3) or "", m.group(4) or ""
    value = Fraction(int(whole + frac), 10 ** len(frac))
    if suffix in _POWERS:
        base, power = _POWERS[suffix]
        value *= Fraction(base) ** power
    else:  # a decimal exponent, e3 or E-6
        value *= Fraction(10) ** int(suffix[1:])
    return -value if sign == "-" else value


_UNITS: dict[tuple[Any, bool], int] = {}


def units(resource: str, raw: Any) -> int:
    """What kube-scheduler's Fit compares: millicores for cpu, else the value, rounded up."""
    key = (raw, resource == "cpu")
    if type(raw) is str and key in _UNITS:
        return _UNITS[key]
    value = amount(raw) * (1000 if resource == "cpu" else 1)
    out = math.ceil(value)
    if type(raw) is str and len(_UNITS) < 65536:
        _UNITS[key] = out
    return out


def _resource_list(raw: Any) -> dict[str, int]:
    return {str(k): units(str(k), v) for k, v in (raw or {}).items()}


def _add(into: dict[str, int], more: Mapping[str, int]) -> None:
    for k, v in more.items():
        into[k] = into.get(k, 0) + v


def _at_least(into: dict[str, int], more: Mapping[str, int]) -> None:
    for k, v in more.items():
        if v > into.get(k, 0):
            into[k] = v


def _container_requests(c: Obj) -> dict[str, int]:
    """A container's requests, a limit standing in for a request it lacks (SetDefaults)."""
    res = c.get("resources") or {}
    return {**_resource_list(res.get("limits")), **_resource_list(res.get("requests"))}


def _pod_level(resource: str) -> bool:
    return resource in ("cpu", "memory") or resource.startswith("hugepages-")


def _overcommittable(resource: str) -> bool:
    return not resource.startswith("hugepages-")


def requests(spec: Obj) -> dict[str, int]:
    """PodRequests: containers plus sidecars, at least every init container's moment; then
    pod-level requests (as ``defaultPodRequests`` fills them from pod-level limits) replace
    cpu, memory and hugepages; then the overhead; and one ``pods``."""
    total: dict[str, int] = {}
    for c in spec.get("containers") or ():
        _add(total, _container_requests(c))
    sidecars: dict[str, int] = {}
    peak: dict[str, int] = {}
    for c in spec.get("initContainers") or ():
        own = _container_requests(c)
        if c.get("restartPolicy") == "Always":
            _add(total, own)
            _add(sidecars, own)
            _at_least(peak, sidecars)
        else:
            moment = dict(own)
            _add(moment, sidecars)
            _at_least(peak, moment)
    _at_least(total, peak)
    pod_res = spec.get("resources") or {}
    pod_requests = _resource_list(pod_res.get("requests"))
    pod_limits = _resource_list(pod_res.get("limits"))
    if pod_limits:  # defaultPodRequests runs only when pod-level limits are set
        for k, v in total.items():
            if k not in pod_requests and _pod_level(k) and _overcommittable(k):
                pod_requests[k] = v
        for k, v in pod_limits.items():
            if k not in pod_requests and _pod_level(k):
                pod_requests[k] = v
    total.update((k, v) for k, v in pod_requests.items() if _pod_level(k))
    _add(total, _resource_list(spec.get("overhead")))
    total["pods"] = 1
    return total


# ---- labels ----------------------------------------------------------------------------

Requirement = tuple[str, str, tuple[str, ...]]  # (key, operator, values)
_INT = re.compile(r"[+-]?[0-9]+")


def _int64(text: str) -> int | None:
    """strconv.ParseInt(text, 10, 64)."""
    if not _INT.fullmatch(text):
        return None
    value = int(text)
    return value if -(2 ** 63) <= value <= 2 ** 63 - 1 else None


def requirement_holds(req: Requirement, labels: Mapping[str, str]) -> bool:
    """labels.Requirement.Matches."""
    key, op, values = req
    if op in ("In", "="):
        return key in labels and labels[key] in values
    if op in ("NotIn", "!="):
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op in ("Gt", "Lt"):
        if key not in labels or len(values) != 1:
            return False
        have, than = _int64(labels[key]), _int64(values[0])
        if have is None or than is None:
            return False
        return have > than if op == "Gt" else have < than
    return False


def _requirements(raw: Any) -> tuple[Requirement, ...]:
    return tuple((str(e.get("key", "")), str(e.get("operator", "")), tuple(str(v) for v in e.get("values") or ()))
                 for e in raw or ())


@dataclass(frozen=True, slots=True)
class Selector:
    """A metav1.LabelSelector: every requirement holds (matchLabels become In)."""

    requirements: tuple[Requirement, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(requirement_holds(r, labels) for r in self.requirements)


def selector(raw: Any, labels: Mapping[str, str] | None = None, match_keys: Iterable[str] = (),
             mismatch_keys: Iterable[str] = ()) -> Selector | None:
    """LabelSelectorAsSelector: None (matches nothing) for a null selector; with ``labels``
    (the owning pod's), matchLabelKeys add ``key In (its value)`` and mismatchLabelKeys
    ``key NotIn (its value)`` for each key the pod carries."""
    if raw is None:
        return None
    reqs: list[Requirement] = [(str(k), "In", (str(v),)) for k, v in sorted((raw.get("matchLabels") or {}).items())]
    reqs.extend(_requirements(raw.get("matchExpressions")))
    have = labels or {}
    reqs.extend((key, "In", (have[key],)) for key in match_keys if key in have)
    reqs.extend((key, "NotIn", (have[key],)) for key in mismatch_keys if key in have)
    return Selector(tuple(reqs))


# ---- nodes -----------------------------------------------------------------------------

Taint = tuple[str, str, str]  # (key, value, effect)
UNSCHEDULABLE: Taint = ("node.kubernetes.io/unschedulable", "", "NoSchedule")


@dataclass(frozen=True, slots=True)
class NodeFacts:
    name: str
    labels: Mapping[str, str]
    allocatable: Mapping[str, int]
    taints: tuple[Taint, ...]  # NoSchedule and NoExecute ones, with spec.unschedulable's
    features: frozenset[str]


def read_node(obj: Obj) -> NodeFacts:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    taints = [(str(t.get("key", "")), str(t.get("value") or ""), str(t.get("effect", "")))
              for t in spec.get("taints") or () if t.get("effect") in ("NoSchedule", "NoExecute")]
    if spec.get("unschedulable") is True:
        taints.append(UNSCHEDULABLE)
    return NodeFacts(name=str(obj["metadata"]["name"]), labels=dict(obj["metadata"].get("labels") or {}),
                     allocatable=_resource_list(status.get("allocatable")), taints=tuple(taints),
                     features=frozenset(status.get("declaredFeatures") or ()))


# ---- pods ------------------------------------------------------------------------------

Term = tuple[tuple[Requirement, ...], tuple[Requirement, ...]]  # (matchExpressions, matchFields)
Toleration = tuple[str, str, str, str]  # (key, operator, value, effect)
HostPort = tuple[str, str, int]  # (protocol, host IP, port)


def term_holds(term: Term, node: NodeFacts) -> bool:
    """A node selector term: every expression on the labels and every field (metadata.name)
    holds; a term with neither matches no node."""
    exprs, fields = term
    if not exprs and not fields:
        return False
    return all(requirement_holds(r, node.labels) for r in exprs) and all(
        r[0] == "metadata.name" and requirement_holds(r, {"metadata.name": node.name}) for r in fields)


def tolerated(tol: Toleration, taint: Taint) -> bool:
    """v1.Toleration.ToleratesTaint."""
    key, op, value, effect = tol
    if effect and effect != taint[2]:
        return False
    if key and key != taint[0]:
        return False
    if op == "Exists":
        return True
    return op in ("", "Equal") and value == taint[1]


@dataclass(frozen=True, slots=True)
class PodTerm:
    """A required pod (anti-)affinity term, its namespaces resolved as far as the pod allows:
    the named ones (or the pod's own when none is named and there is no namespaceSelector),
    and a namespaceSelector over the Namespace objects' labels."""

    topology_key: str
    selector: Selector | None
    namespaces: frozenset[str]
    namespace_selector: Selector | None


@dataclass(frozen=True, slots=True)
class Spread:
    max_skew: int
    topology_key: str
    selector: Selector | None
    min_domains: int
    honor_affinity: bool
    honor_taints: bool


@dataclass(frozen=True, slots=True)
class Claim:
    """What VolumeBinding asks of a node for one of the pod's claims: a reason no node can
    serve it, or node selector terms one of which the node must match (None: any node)."""

    refusal: str = ""
    terms: tuple[Term, ...] | None = None
    # VolumeZone: the bound volume's zone and region labels, each with the zones it allows
    zones: tuple[tuple[str, frozenset[str]], ...] = ()


@dataclass(frozen=True, slots=True, eq=False)
class StaticClaim:
    key: str  # namespace/name
    obj: Obj  # the PersistentVolumeClaim
    want: Fraction  # the storage it requests


@dataclass(frozen=True, slots=True, eq=False)
class StaticVolume:
    name: str
    obj: Obj  # the PersistentVolume
    terms: tuple[Term, ...]  # required node affinity (() for any node)
    room: Fraction  # its capacity's storage


def volume_takes(volume: Obj, claim: Obj, room: Fraction, want: Fraction) -> bool:
    """component-helpers FindMatchingVolume for one volume and claim, but the node: room (the
    volume's capacity, read once by the caller) for ``want`` (the claim's request), the
    same volumeMode (Filesystem when unset) and volumeAttributesClassName, not being deleted;
    pre-bound to the claim, that is all; else unclaimed, in phase Available (or not written
    yet), matching the claim's selector, of its storage class, with its access modes."""
    vspec, cspec = volume.get("spec") or {}, claim.get("spec") or {}
    cmeta = claim["metadata"]
    ref = vspec.get("claimRef") or {}
    mine = bool(ref) and ref.get("name") == cmeta["name"] and \
        (ref.get("namespace") or "") == (cmeta.get("namespace") or "default")
    if (ref and not mine) or volume["metadata"].get("deletionTimestamp") \
            or room < want \
            or (vspec.get("volumeMode") or "Filesystem") != (cspec.get("volumeMode") or "Filesystem") \
            or (vspec.get("volumeAttributesClassName") or "") != (cspec.get("volumeAttributesClassName") or ""):
        return False
    if mine:
        return True
    wanted = selector(cspec["selector"]) if cspec.get("selector") is not None else None
    return ((volume.get("status") or {}).get("phase") or "Available") == "Available" \
        and (wanted is None or wanted.matches(volume["metadata"].get("labels") or {})) \
        and _class_of(volume) == _class_of(claim) \
        and set(cspec.get("accessModes") or ()) <= set(vspec.get("accessModes") or ())


@dataclass(frozen=True, slots=True)
class PodFacts:
    """What the verifier reads from one pod's spec (shared by every pod with the same)."""

    requests: tuple[tuple[str, int], ...]  # sorted by resource
    node_selector: tuple[tuple[str, str], ...]
    node_terms: tuple[Term, ...] | None  # required node affinity, ORed; None: none asked
    tolerations: tuple[Toleration, ...]
    host_ports: tuple[HostPort, ...]
    features: frozenset[str]
    affinity: tuple[PodTerm, ...] = ()
    anti_affinity: tuple[PodTerm, ...] = ()
    spread: tuple[Spread, ...] = ()
    claims: tuple[Claim, ...] = ()
    disks: tuple[Disk, ...] = ()  # the inline volumes VolumeRestrictions compares


# VolumeRestrictions' needsRestrictionsCheck: an inline volume of these sources is compared,
# read as (source, what names it, read-only); an RBD image is named by (its monitors, pool, image)
Disk = tuple[str, Any, bool]


def _disks(spec: Obj) -> tuple[Disk, ...]:
    out: list[Disk] = []
    for v in spec.get("volumes") or ():
        if (g := v.get("gcePersistentDisk")) is not None:
            out.append(("gce", g.get("pdName"), bool(g.get("readOnly"))))
        elif (a := v.get("awsElasticBlockStore")) is not None:
            out.append(("ebs", a.get("volumeID"), False))  # conflicts read-only too
        elif (i := v.get("iscsi")) is not None:
            out.append(("iscsi", i.get("iqn"), bool(i.get("readOnly"))))
        elif (r := v.get("rbd")) is not None:
            out.append(("rbd", (frozenset(r.get("monitors") or ()), r.get("pool") or "rbd", r.get("image")),
                        bool(r.get("readOnly"))))
    return tuple(out)


def disks_conflict(a: Disk, b: Disk) -> bool:
    """volume_restrictions.go isVolumeConflict for two inline volumes."""
    if a[0] != b[0] or (a[2] and b[2]):
        return False
    if a[0] == "rbd":
        return bool(a[1][0] & b[1][0]) and a[1][1:] == b[1][1:]
    return bool(a[1] == b[1])


def _node_terms(raw: Any) -> tuple[Term, ...]:
    return tuple((_requirements(t.get("matchExpressions")), _requirements(t.get("matchFields"))) for t in raw or ())


def _host_ports(spec: Obj) -> tuple[HostPort, ...]:
    host_network = spec.get("hostNetwork") is True
    running = list(spec.get("containers") or ()) + [c for c in spec.get("initContainers") or ()
                                                     if c.get("restartPolicy") == "Always"]
    out = set()
    for c in running:
        for p in c.get("ports") or ():
            port = p.get("hostPort") or (p.get("containerPort") if host_network else 0) or 0
            if port > 0:
                out.add((str(p.get("protocol") or "TCP"), str(p.get("hostIP") or "0.0.0.0"), int(port)))
    return tuple(sorted(out))


def ports_clash(a: HostPort, b: HostPort) -> bool:
    """HostPortInfo.CheckConflict: one protocol and port, on one IP or either on 0.0.0.0."""
    return a[0] == b[0] and a[2] == b[2] and (a[1] == b[1] or "0.0.0.0" in (a[1], b[1]))


def _features(spec: Obj) -> frozenset[str]:
    """nodedeclaredfeatures' registry, InferForScheduling of each feature of 1.37.2."""
    out = set()
    containers = list(spec.get("containers") or ()) + list(spec.get("initContainers") or ())
    if any(r.get("action") == "RestartAllContainers" for c in containers for r in c.get("restartPolicyRules") or ()):
        out.add("RestartAllContainersOnContainerExits")
    if spec.get("hostNetwork") is True and spec.get("hostUsers") is False:
        out.add("UserNamespacesHostNetworkSupport")
    mounting = containers + list(spec.get("ephemeralContainers") or ())
    if any(m.get("bindMountOptions") for c in mounting for m in c.get("volumeMounts") or ()):
        out.add("VolumeBindMountOptions")
    return frozenset(out)


def _pod_terms(raw: Any, namespace: str, labels: Mapping[str, str]) -> tuple[PodTerm, ...]:
    out = []
    for t in raw or ():
        named = frozenset(str(n) for n in t.get("namespaces") or ())
        ns_selector = selector(t.get("namespaceSelector"))
        if not named and ns_selector is None:
            named = frozenset((namespace,))
        out.append(PodTerm(topology_key=str(t.get("topologyKey", "")),
                           selector=selector(t.get("labelSelector"), labels, t.get("matchLabelKeys") or (),
                                             t.get("mismatchLabelKeys") or ()),
                           namespaces=named, namespace_selector=ns_selector))
    return tuple(out)


def _spread(raw: Any, labels: Mapping[str, str]) -> tuple[Spread, ...]:
    return tuple(Spread(max_skew=int(c["maxSkew"]), topology_key=str(c["topologyKey"]),
                        selector=selector(c.get("labelSelector"), labels, c.get("matchLabelKeys") or ()),
                        min_domains=int(c.get("minDomains") or 1),
                        honor_affinity=(c.get("nodeAffinityPolicy") or "Honor") == "Honor",
                        honor_taints=(c.get("nodeTaintsPolicy") or "Ignore") == "Honor")
                 for c in raw or () if c.get("whenUnsatisfiable") == "DoNotSchedule")


# ---- volumes ---------------------------------------------------------------------------

BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BETA_CLASS = "volume.beta.kubernetes.io/storage-class"


def _class_of(obj: Obj) -> str:
    notes = obj["metadata"].get("annotations") or {}
    return str(notes[BETA_CLASS] if BETA_CLASS in notes else obj.get("spec", {}).get("storageClassName") or "")


def _storage(raw: Any) -> Fraction:
    return amount(raw["storage"]) if raw and "storage" in raw else Fraction(0)


# CSI migration, on in kube-scheduler 1.37 for five in-tree plugins (nodevolumelimits/utils.go
# isCSIMigrationOn), each counted under its CSI driver (csi-translation-lib/plugins); Azure File and
# vSphere migrate elsewhere but not here: their volumes count for nothing
IN_TREE = {"awsElasticBlockStore": ("aws-ebs", "ebs.csi.aws.com"),
           "gcePersistentDisk": ("gce-pd", "pd.csi.storage.gke.io"),
           "azureDisk": ("azure-disk", "disk.csi.azure.com"), "cinder": ("cinder", "cinder.csi.openstack.org"),
           "portworxVolume": ("portworx-volume", "pxd.portworx.com")}
PROVISIONED_AS = {f"kubernetes.io/{plugin}": driver for plugin, driver in IN_TREE.values()}
UNCOUNTED = {"kubernetes.io/azure-file", "kubernetes.io/vsphere-volume"}


def _translated(source: str, raw: Obj, labels: Mapping[str, str] | None) -> str | None:
    """The CSI volume handle an in-tree source translates to (a PersistentVolume's ``labels``;
    None inline), or None when the translation fails."""
    if source == "awsElasticBlockStore":
        vid = str(raw.get("volumeID") or "")
        if not vid.startswith("aws://"):
            return vid
        tail = vid.split("/", 3)[3] if vid.count("/") >= 3 else ""
        tail = tail.strip("/")
        return tail if re.fullmatch(r"vol-[^/]*", tail) else None
    if source == "gcePersistentDisk":
        name, labels = str(raw.get("pdName") or ""), labels or {}
        where = labels.get("failure-domain.beta.kubernetes.io/zone") or labels.get("topology.kubernetes.io/zone") or ""
        zones = where.split("__")
        if len(zones) > 1:
            parts = [z.split("-") for z in zones]
            regions = {"-".join(p[:2]) for p in parts}
            if any(len(p) != 3 for p in parts) or len(regions) != 1:
                return None
            return f"projects/UNSPECIFIED/regions/{regions.pop()}/disks/{name}"
        return f"projects/UNSPECIFIED/zones/{where or 'UNSPECIFIED'}/disks/{name}"
    if source == "azureDisk":
        if raw.get("kind") is not None and str(raw["kind"]).lower() != "managed":
            return None
        return str(raw.get("diskURI") or "")
    return str(raw.get("volumeID") or "")


def _migrated(holder: Obj, labels: Mapping[str, str] | None) -> tuple[str, str | None] | None:
    """(driver, handle or None when untranslatable) of an in-tree source in ``holder`` (a
    volume, or a PersistentVolume's spec), None when it has no migrated one."""
    for source, (_, driver) in IN_TREE.items():
        if holder.get(source) is not None:
            return driver, _translated(source, holder[source], labels)
    return None


def _and(a: list[Term] | None, b: list[Term] | None) -> list[Term] | None:
    """Node selector terms a node matches when it matches one of ``a`` and one of ``b`` (None:
    any node)."""
    if a is None or b is None:
        return b if a is None else a
    return [(x[0] + y[0], x[1] + y[1]) for x in a for y in b]


class _Volumes:
    """VolumeBinding (volume_binding.go, binder.go) over the snapshot's claims, volumes and
    classes: what each of a pending pod's claims asks of a node."""

    def __init__(self, claims: Iterable[Obj], volumes: Iterable[Obj], classes: Iterable[Obj],
                 translating: bool = False, drivers: Iterable[Obj] = (), capacities: Iterable[Obj] = ()) -> None:
        self.claims = {f"{c['metadata'].get('namespace') or 'default'}/{c['metadata']['name']}": c for c in claims}
        self.volumes = {v["metadata"]["name"]: v for v in volumes}
        self.classes = {c["metadata"]["name"]: c for c in classes}
        # each volume's capacity and node affinity, read once (every claim asks them)
        self.room_of = {n: _storage((v.get("spec") or {}).get("capacity")) for n, v in self.volumes.items()}
        self.terms_of = {n: _node_terms(((v.get("spec") or {}).get("nodeAffinity") or {}).get("required", {})
                                        .get("nodeSelectorTerms")) for n, v in self.volumes.items()}
        self.translating = translating  # some node has a CSINode: the scheduler translates there
        # storage capacity tracking (binder.go hasEnoughCapacity): the drivers that opt in, and
        # per class the (size limit, node topology) of each CSIStorageCapacity
        self.tracked = {str(d["metadata"]["name"]) for d in drivers if (d.get("spec") or {}).get("storageCapacity")}
        self.room: dict[str, list[tuple[Fraction | None, Obj | None]]] = {}
        for c in capacities:
            limit = c.get("maximumVolumeSize") if c.get("maximumVolumeSize") is not None else c.get("capacity")
            self.room.setdefault(str(c.get("storageClassName")), []).append(
                (None if limit is None else amount(limit), c.get("nodeTopology")))
        self.migrated: set[tuple[str, str]] = set()  # the in-tree volumes csi_of counted, translated

    def claims_of(self, spec: Obj, namespace: str, pod_name: str) -> tuple[Claim, ...]:
        out = []
        for vol in spec.get("volumes") or ():
            found = _migrated(vol, None)
            if found is not None and found[1] is None and self.translating:
                out.append(Claim(refusal=f"inline volume {vol.get('name')} fails CSI migration's translation"))
            if vol.get("persistentVolumeClaim") is not None:
                name, ephemeral = str(vol["persistentVolumeClaim"].get("claimName")), False
            elif vol.get("ephemeral") is not None:
                name, ephemeral = f"{pod_name}-{vol.get('name', '')}", True
            else:
                continue
            claim = self.claims.get(f"{namespace}/{name}")
            if claim is None:
                out.append(Claim(refusal=f"claim {name} does not exist"
                                 + (" (the ephemeral volume controller has not made it)" if ephemeral else "")))
                continue
            out.append(self._claim(claim))
            volume = self.volumes.get((claim.get("spec") or {}).get("volumeName") or "")
            if volume is not None and not ephemeral:  # VolumeZone reads persistentVolumeClaim volumes
                out.append(Claim(zones=_volume_zones(volume)))
        return tuple(out)

    def csi_of(self, spec: Obj, namespace: str, pod_name: str) -> frozenset[tuple[str, str]]:
        """NodeVolumeLimits' view of the pod's volumes (csi.go filterAttachableVolumes): each
        claim's CSI volume (driver, driver/handle), from its PersistentVolume when it names one
        that exists, else from its class's provisioner, under a name of the claim's own."""
        out = set()
        for vol in spec.get("volumes") or ():
            if vol.get("persistentVolumeClaim") is not None:
                name = str(vol["persistentVolumeClaim"].get("claimName"))
            elif vol.get("ephemeral") is not None:
                name = f"{pod_name}-{vol.get('name', '')}"
            else:
                found = _migrated(vol, None)
                if found is not None and found[1] is not None:
                    self.migrated.add((found[0], f"{found[0]}/{found[1]}"))
                    out.add((found[0], f"{found[0]}/{found[1]}"))
                continue
            claim = self.claims.get(f"{namespace}/{name}")
            if claim is None:
                continue
            volume = self.volumes.get((claim.get("spec") or {}).get("volumeName") or "")
            if volume is not None:
                vspec = volume.get("spec") or {}
                csi = vspec.get("csi")
                if csi:
                    out.add((str(csi["driver"]), f"{csi['driver']}/{csi['volumeHandle']}"))
                elif (found := _migrated(vspec, volume["metadata"].get("labels"))) and found[1] is not None:
                    self.migrated.add((found[0], f"{found[0]}/{found[1]}"))
                    out.add((found[0], f"{found[0]}/{found[1]}"))
                continue
            cls = self.classes.get(_class_of(claim))
            provisioner = str((cls or {}).get("provisioner") or "")
            if provisioner and provisioner not in UNCOUNTED:
                driver = PROVISIONED_AS.get(provisioner, provisioner)
                out.add((driver, f"{driver}/{namespace}/{name} (not bound)"))
                if provisioner in PROVISIONED_AS:
                    self.migrated.add((driver, f"{driver}/{namespace}/{name} (not bound)"))
        return frozenset(out)

    def _claim(self, claim: Obj) -> Claim:
        meta, spec, status = claim["metadata"], claim.get("spec") or {}, claim.get("status") or {}
        name = meta["name"]
        if meta.get("deletionTimestamp"):
            return Claim(refusal=f"claim {name} is being deleted")
        if status.get("phase") == "Lost":
            return Claim(refusal=f"claim {name} is Lost")
        volume_name = spec.get("volumeName") or ""
        if volume_name and BIND_COMPLETED in (meta.get("annotations") or {}):
            volume = self.volumes.get(volume_name)
            if volume is None:
                return Claim(refusal=f"claim {name} is bound to a missing volume {volume_name}")
            terms = _node_terms(((volume.get("spec") or {}).get("nodeAffinity") or {}).get("required", {})
                                .get("nodeSelectorTerms"))
            return Claim(terms=terms or None)
        cls = self.classes.get(_class_of(claim)) if _class_of(claim) else None
        if cls is None or cls.get("volumeBindingMode") != "WaitForFirstConsumer" or volume_name:
            return Claim(refusal=f"claim {name} is unbound and binds immediately")
        want = _storage((spec.get("resources") or {}).get("requests"))
        provisioner = str(cls.get("provisioner") or "")
        provisions = bool(provisioner) and provisioner != "kubernetes.io/no-provisioner"
        topologies: list[Term] = [(tuple((str(e.get("key", "")), "In", tuple(map(str, e.get("values") or ())))
                                         for e in t.get("matchLabelExpressions") or ()), ())
                                  for t in cls.get("allowedTopologies") or ()]
        topologies = [t for t in topologies if t[0]]  # a term without expressions matches no node
        room = self._room(provisioner, cls, want)
        selected = (meta.get("annotations") or {}).get("volume.kubernetes.io/selected-node")
        if selected:  # being provisioned for that node: only there, as provisioning allows
            if not provisions:
                return Claim(refusal=f"claim {name} is being provisioned without a provisioner")
            here: Term = ((), (("metadata.name", "In", (str(selected),)),))
            near = _and([here], topologies if cls.get("allowedTopologies") else None) or []
            return Claim(terms=tuple(_and(near, room) or ()))
        options: list[Term] = []
        for name, volume in self.volumes.items():
            if not volume_takes(volume, claim, self.room_of[name], want):
                continue
            terms = self.terms_of[name]
            if not terms:
                return Claim()
            options.extend(terms)
        if provisions:  # where no volume matches: allowedTopologies, and room for it where the node is
            provisioned = _and(topologies if cls.get("allowedTopologies") else None, room)
            if provisioned is None:
                return Claim()
            options.extend(provisioned)
        if not options:
            return Claim(refusal=f"claim {name} finds no volume to bind and none is provisioned")
        return Claim(terms=tuple(options))

    def static(self, spec: Obj, namespace: str) -> tuple[StaticClaim, ...]:
        """The pod's claims that only an available volume serves: not bound, not being
        provisioned for a node, of a WaitForFirstConsumer class that does not provision."""
        out = []
        for vol in spec.get("volumes") or ():
            if vol.get("persistentVolumeClaim") is None:
                continue  # an ephemeral volume's claim is made for it: provisioned
            claim = self.claims.get(f"{namespace}/{vol['persistentVolumeClaim'].get('claimName')}")
            if claim is None:
                continue
            meta, cspec = claim["metadata"], claim.get("spec") or {}
            cls = self.classes.get(_class_of(claim)) if _class_of(claim) else None
            if cspec.get("volumeName") or (meta.get("annotations") or {}).get("volume.kubernetes.io/selected-node") \
                    or cls is None or cls.get("volumeBindingMode") != "WaitForFirstConsumer" \
                    or str(cls.get("provisioner") or "") not in ("", "kubernetes.io/no-provisioner"):
                continue
            out.append(StaticClaim(key=f"{namespace}/{meta['name']}", obj=claim,
                                   want=_storage((cspec.get("resources") or {}).get("requests"))))
        return tuple(out)

    def static_volumes(self) -> tuple[StaticVolume, ...]:
        out = []
        for name, v in self.volumes.items():
            out.append(StaticVolume(name=str(name), obj=v, terms=self.terms_of[name], room=self.room_of[name]))
        return tuple(out)

    def _room(self, provisioner: str, cls: Obj, want: Fraction) -> list[Term] | None:
        """Where the class's driver, tracking capacity, may provision ``want``: the topologies
        of the class's CSIStorageCapacities whose maximumVolumeSize (else capacity) holds it;
        None: the driver does not track capacity, any node."""
        if provisioner not in self.tracked or not want:
            return None
        out: list[Term] = []
        for limit, topology in self.room.get(str(cls["metadata"]["name"]), ()):
            if limit is None or limit < want or topology is None:
                continue
            exprs: tuple[Requirement, ...] = tuple((str(k), "In", (str(v),))
                                                   for k, v in (topology.get("matchLabels") or {}).items())
            exprs += _requirements(topology.get("matchExpressions"))
            if not exprs:
                return None  # every node
            out.append((exprs, ()))
        return out


ZONE_KEYS = ("failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
             "topology.kubernetes.io/zone", "topology.kubernetes.io/region")


def _volume_zones(volume: Obj) -> tuple[tuple[str, frozenset[str]], ...]:
    """getPVTopologies: each zone or region label, split on "__" (LabelZonesToSet; a label
    with an empty part is skipped)."""
    labels = volume["metadata"].get("labels") or {}
    out = []
    for key in ZONE_KEYS:
        if key in labels:
            parts = [p.strip() for p in str(labels[key]).split("__")]
            if "" not in parts:
                out.append((key, frozenset(parts)))
    return tuple(out)


def _zone_refusal(claim: Claim, node: NodeFacts) -> bool:
    """VolumeZone's Filter: a node with any zone or region label must match every topology of
    the volume, a beta key falling back to its GA name when the node lacks it."""
    if not claim.zones or not any(k in node.labels for k in ZONE_KEYS):
        return False
    for key, zones in claim.zones:
        value = node.labels.get(key)
        if value is None:
            value = node.labels.get(key.replace("failure-domain.beta.kubernetes.io/", "topology.kubernetes.io/"))
        if value is None or value not in zones:
            return True
    return False


# ---- the snapshot ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Budget:
    """A PodDisruptionBudget as the Eviction API reads it (eviction.go)."""

    key: str
    namespace: str
    selector: Selector | None  # a null selector selects no pod, an empty one every pod
    disruptions_allowed: int
    generation: int
    observed_generation: int
    always_allow_unhealthy: bool  # unhealthyPodEvictionPolicy AlwaysAllow
    current_healthy: int
    desired_healthy: int


def read_budget(o: Obj) -> Budget:
    meta, spec, status = o["metadata"], o.get("spec") or {}, o.get("status") or {}
    ns = str(meta.get("namespace") or "default")
    return Budget(key=f"{ns}/{meta['name']}", namespace=ns, selector=selector(spec.get("selector")),
                  disruptions_allowed=int(status.get("disruptionsAllowed") or 0),
                  generation=int(meta.get("generation") or 0),
                  observed_generation=int(status.get("observedGeneration") or 0),
                  always_allow_unhealthy=spec.get("unhealthyPodEvictionPolicy") == "AlwaysAllow",
                  current_healthy=int(status.get("currentHealthy") or 0),
                  desired_healthy=int(status.get("desiredHealthy") or 0))


@dataclass
class Facts:
    """Everything the verifier reads itself, by node name and by pod key."""

    nodes: dict[str, NodeFacts] = field(default_factory=dict)
    pods: dict[str, PodFacts] = field(default_factory=dict)
    labels: dict[str, Mapping[str, str]] = field(default_factory=dict)  # pod key -> its labels
    ready: dict[str, bool] = field(default_factory=dict)  # pod key -> condition Ready is True
    # pods the Eviction API deletes without asking a budget (canIgnorePDB): phase Pending,
    # Succeeded or Failed, or being deleted
    budget_free: set[str] = field(default_factory=set)
    # pod key -> the ReadWriteOncePod claims its persistentVolumeClaim volumes name (VolumeRestrictions)
    once_pod: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # VolumeBinding's static volumes: per pending pod, its claims that must find an available
    # volume (WaitForFirstConsumer, a class that does not provision); and those volumes
    static_claims: dict[str, tuple[StaticClaim, ...]] = field(default_factory=dict)
    static_volumes: tuple[StaticVolume, ...] = ()
    # extended resources a DeviceClass serves (DRAExtendedResource): on a node whose
    # allocatable lacks one, DynamicResources allocates it, not NodeResourcesFit
    dra_served: frozenset[str] = frozenset()
    namespaces: dict[str, Mapping[str, str]] = field(default_factory=dict)  # Namespace objects' labels
    # NodeVolumeLimits: pod key -> its CSI volumes (driver, unique name); node -> its CSINode's
    # drivers, and their limits; node -> its VolumeAttachments' volumes; drivers a node must have
    csi_volumes: dict[str, frozenset[tuple[str, str]]] = field(default_factory=dict)
    # those of them CSI migration translated from in-tree volumes: counted only where a CSINode is
    migrated: frozenset[tuple[str, str]] = frozenset()
    csi_drivers: dict[str, frozenset[str]] = field(default_factory=dict)
    volume_limits: dict[str, dict[str, int]] = field(default_factory=dict)
    attached: dict[str, set[tuple[str, str]]] = field(default_factory=dict)
    csi_required: frozenset[str] = frozenset()
    budgets: tuple[Budget, ...] = ()
    # "Pod/<key>" of a standalone pod, or a root group's key -> its gangplace.io/value (absent: 1)
    values: dict[str, int] = field(default_factory=dict)

    def left_to_dra(self, resource: str, node: NodeFacts) -> bool:
        """shouldDelegateResourceToDRA (plugins/noderesources/fit.go): a DeviceClass serves the
        resource and the node's allocatable lacks it, so DynamicResources, not NodeResourcesFit,
        decides it there."""
        return resource in self.dra_served and not node.allocatable.get(resource)

    def namespace_labels(self, namespace: str) -> Mapping[str, str]:
        return self.namespaces.get(namespace) or {"kubernetes.io/metadata.name": namespace}


def _admit(spec: Obj, runtime_classes: Mapping[str, Obj]) -> Obj:
    """The RuntimeClass admission plugin: the class's podFixed overhead, node selector and
    tolerations, on a pod naming a class (a recorded pod has them already)."""
    cls = runtime_classes.get(str(spec.get("runtimeClassName") or ""))
    if cls is None:
        return spec
    out = dict(spec)
    fixed = (cls.get("overhead") or {}).get("podFixed")
    if fixed and out.get("overhead") is None:
        out["overhead"] = fixed
    scheduling = cls.get("scheduling") or {}
    if scheduling.get("nodeSelector"):
        out["nodeSelector"] = {**(out.get("nodeSelector") or {}), **scheduling["nodeSelector"]}
    extra = [t for t in scheduling.get("tolerations") or () if t not in (out.get("tolerations") or ())]
    if extra:
        out["tolerations"] = list(out.get("tolerations") or ()) + extra
    return out


def _pod_facts(spec: Obj, ns: str, name: str, labels: Mapping[str, str], volumes: _Volumes) -> PodFacts:
    affinity = spec.get("affinity") or {}
    required = (affinity.get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    return PodFacts(
        requests=tuple(sorted(requests(spec).items())),
        node_selector=tuple(sorted((str(k), str(v)) for k, v in (spec.get("nodeSelector") or {}).items())),
        node_terms=_node_terms(required.get("nodeSelectorTerms")) if required else None,
        tolerations=tuple((str(t.get("key") or ""), str(t.get("operator") or ""), str(t.get("value") or ""),
                           str(t.get("effect") or "")) for t in spec.get("tolerations") or ()),
        host_ports=_host_ports(spec),
        disks=_disks(spec),
        features=_features(spec),
        affinity=_pod_terms((affinity.get("podAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"), ns, labels),
        anti_affinity=_pod_terms((affinity.get("podAntiAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"), ns, labels),
        spread=_spread(spec.get("topologySpreadConstraints"), labels),
        claims=volumes.claims_of(spec, ns, name) if not spec.get("nodeName") else (),
    )


VALUE = "gangplace.io/value"


def _read_value(facts: Facts, obj: Obj, root: str) -> None:
    """A workload's worth in the plan's first tier, as the annotation says it (solver.kube
    refused a malformed one and one below a workload's root)."""
    text = (obj["metadata"].get("annotations") or {}).get(VALUE)
    if text is not None:
        facts.values[root] = int(text)


def read(objects: Iterable[Obj]) -> Facts:
    """The verifier's facts from the snapshot's objects (already checked by solver.kube)."""
    by_kind: dict[str, list[Obj]] = {}
    for o in objects:
        by_kind.setdefault(str(o.get("kind")), []).append(o)
    facts = Facts()
    for o in by_kind.get("Node", ()):
        node = read_node(o)
        facts.nodes[node.name] = node
    for o in by_kind.get("Namespace", ()):
        name = str(o["metadata"]["name"])
        facts.namespaces[name] = {**(o["metadata"].get("labels") or {}), "kubernetes.io/metadata.name": name}
    facts.budgets = tuple(read_budget(o) for o in by_kind.get("PodDisruptionBudget", ()))
    for kind in ("PodGroup", "CompositePodGroup"):
        for o in by_kind.get(kind, ()):
            meta = o["metadata"]
            # the plan names a PodGroup namespace/name, a CompositePodGroup with its kind first
            ns_name = f"{meta.get('namespace') or 'default'}/{meta['name']}"
            _read_value(facts, o, ns_name if kind == "PodGroup" else f"{kind}/{ns_name}")
    facts.dra_served = frozenset(
        name for o in by_kind.get("DeviceClass", ())
        for name in ("deviceclass.resource.kubernetes.io/" + str(o["metadata"]["name"]),
                     str((o.get("spec") or {}).get("extendedResourceName") or "")) if name)
    runtime = {str(o["metadata"]["name"]): o for o in by_kind.get("RuntimeClass", ())}
    volumes = _Volumes(by_kind.get("PersistentVolumeClaim", ()), by_kind.get("PersistentVolume", ()),
                       by_kind.get("StorageClass", ()), translating=bool(by_kind.get("CSINode")),
                       drivers=by_kind.get("CSIDriver", ()), capacities=by_kind.get("CSIStorageCapacity", ()))
    seen: dict[tuple[str, ...], PodFacts] = {}  # pods alike (a gang's, a ReplicaSet's) read once
    shared: dict[PodFacts, PodFacts] = {}
    for i, o in enumerate(by_kind.get("Pod", ())):
        if not i % 1024:
            checkpoint("reading")  # 180,000 pods take seconds
        meta = o["metadata"]
        ns, name = str(meta.get("namespace") or "default"), str(meta["name"])
        key = f"{ns}/{name}"
        labels = meta.get("labels") or {}
        raw = o.get("spec") or {}
        bound = raw.get("nodeName") or ""
        text = repr([item for item in raw.items() if item[0] != "nodeName"]) if bound else repr(raw)
        # what else the facts read: whether it is bound (a pending pod's claims), its name (its
        # ephemeral claims) and its labels (matchLabelKeys), the last two only when the spec asks
        alike = (ns, "bound" if bound else "", text, name if "ephemeral" in text else "",
                 repr(labels) if "LabelKeys" in text else "")
        pod = seen.get(alike)
        if pod is None:
            made = _pod_facts(_admit(raw, runtime), ns, name, labels, volumes)
            pod = seen[alike] = shared.setdefault(made, made)
        facts.pods[key] = pod
        if "persistentVolumeClaim" in text or "ephemeral" in text or any(k in text for k in IN_TREE):
            csi = volumes.csi_of(raw, ns, name)
            if csi:
                facts.csi_volumes[key] = csi
        if "persistentVolumeClaim" in text and not bound:
            static = volumes.static(raw, ns)
            if static:
                facts.static_claims[key] = static
        if "persistentVolumeClaim" in text:
            named = [f"{ns}/{v['persistentVolumeClaim'].get('claimName')}" for v in raw.get("volumes") or ()
                     if v.get("persistentVolumeClaim") is not None]
            once = tuple(c for c in named if "ReadWriteOncePod" in
                         ((volumes.claims.get(c) or {}).get("spec", {}).get("accessModes") or ()))
            if once:
                facts.once_pod[key] = once
        facts.labels[key] = labels
        _read_value(facts, o, f"Pod/{key}")
        status = o.get("status") or {}
        facts.ready[key] = any(c.get("type") == "Ready" and c.get("status") == "True"
                               for c in status.get("conditions") or ())
        if status.get("phase") in ("Pending", "Succeeded", "Failed") or meta.get("deletionTimestamp"):
            facts.budget_free.add(key)
    for o in by_kind.get("CSINode", ()):
        drivers = (o.get("spec") or {}).get("drivers") or ()
        host = str(o["metadata"]["name"])
        facts.csi_drivers[host] = frozenset(str(d["name"]) for d in drivers)
        facts.volume_limits[host] = {str(d["name"]): int(d["allocatable"]["count"]) for d in drivers
                                     if (d.get("allocatable") or {}).get("count") is not None}
    facts.migrated = frozenset(volumes.migrated)
    facts.static_volumes = volumes.static_volumes()
    facts.csi_required = frozenset(str(o["metadata"]["name"]) for o in by_kind.get("CSIDriver", ())
                                   if (o.get("spec") or {}).get("preventPodSchedulingIfMissing") is True)
    for o in by_kind.get("VolumeAttachment", ()):
        spec = o.get("spec") or {}
        source = volumes.volumes.get(str((spec.get("source") or {}).get("persistentVolumeName") or ""))
        handle = (((source or {}).get("spec") or {}).get("csi") or {}).get("volumeHandle")
        if spec.get("attacher") and spec.get("nodeName") and handle:
            facts.attached.setdefault(str(spec["nodeName"]), set()).add(
                (str(spec["attacher"]), f"{spec['attacher']}/{handle}"))
    return facts


# ---- the node filters ----------------------------------------------------------------------


def refusal(pod: PodFacts, node: NodeFacts) -> str:
    """Why the node filters refuse the pod on the node before capacity, ports and inter-pod
    rules ("" when none does): NodeAffinity, TaintToleration and NodeUnschedulable,
    NodeDeclaredFeatures, VolumeBinding."""
    if any(node.labels.get(k) != v for k, v in pod.node_selector):
        return "nodeSelector"
    if pod.node_terms is not None and not any(term_holds(t, node) for t in pod.node_terms):
        return "required node affinity"
    for taint in node.taints:
        if not any(tolerated(t, taint) for t in pod.tolerations):
            return f"taint {taint[0]}={taint[1]}:{taint[2]}"
    missing = sorted(pod.features - node.features)
    if missing:
        return f"node does not declare {missing}"
    for claim in pod.claims:
        if claim.refusal:
            return claim.refusal
        if claim.terms is not None and not any(term_holds(t, node) for t in claim.terms):
            return "a claim's volume cannot be used there"
        if _zone_refusal(claim, node):
            return "a claim's volume is in another zone"
    return ""


def affinity_holds(pod: PodFacts, node: NodeFacts) -> bool:
    """nodeSelector and required node affinity (spread's nodeAffinityPolicy Honor)."""
    return all(node.labels.get(k) == v for k, v in pod.node_selector) and (
        pod.node_terms is None or any(term_holds(t, node) for t in pod.node_terms))


def taints_tolerated(pod: PodFacts, node: NodeFacts) -> bool:
    return all(any(tolerated(t, taint) for t in pod.tolerations) for taint in node.taints)


def term_selects(term: PodTerm, namespace: str, labels: Mapping[str, str], ns_labels: Mapping[str, str]) -> bool:
    """AffinityTerm.Matches: the other pod's namespace is in the term's, and its labels match."""
    if term.selector is None:
        return False
    if namespace not in term.namespaces and (term.namespace_selector is None
                                             or not term.namespace_selector.matches(ns_labels)):
        return False
    return term.selector.matches(labels)
