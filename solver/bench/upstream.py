"""The real kube-scheduler 1.37 on a recorded snapshot, scored like any plan.

``run_kube_scheduler(objects)`` loads the snapshot into a fresh real control plane
(``solver.bench.controlplane``): namespaces, PriorityClasses, nodes, DRA objects, the groups,
PDBs with their recorded status, the running pods bound where they run, then, with the
scheduler started, the pending pods for ``default-scheduler``. It lets the scheduler run until
it has settled for ``settle`` seconds (``Settling``: no binding, no deletion and no attempt but
failed ones — gangs, workload-aware preemption, victims deleted, next cycles — and either idle,
no pod in its active or backoff queue and none under an attempt, or retrying unschedulable
pods without success, from its ``scheduler_pending_pods`` and ``scheduler_schedule_attempts_total``),
or until ``timeout`` (then ``settled`` is False), and reads back the bindings and the pods it
deleted. ``score`` turns that outcome into a Plan on the original snapshot through the
product's own evaluation, so the verifier judges it and the tiers compare with gangplace's
and the baseline's.

How a recorded object becomes one the real API server takes (each a rule of the apiserver,
not of gangplace):

- server-set metadata (uid, resourceVersion, managedFields, ownerReferences…) is dropped;
- a pod's ``spec.priority`` must come from its PriorityClass (Priority admission refuses a
  pod that sets another): a pod whose class is missing, or that has none, gets a class
  ``gangplace-priority-<value>`` made for its value;
- a running pod is created bound (``spec.nodeName``) and given status Running and Ready (a
  kubelet would); its ``terminationGracePeriodSeconds`` is 0, so a victim the scheduler
  deletes is gone at once, as a kubelet that confirms at once would make it;
- a pod recorded terminating is created with a finalizer and deleted, so it stays
  terminating and keeps its room;
- recorded ``status`` (a PDB's disruptionsAllowed, a claim's allocation) is written through
  the status subresource; no disruption controller runs, so it stays as recorded;
- every create uses ``fieldValidation=Strict``: a field the 1.37 API does not have is an
  error naming the object, never silently dropped.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from solver.bench.controlplane import ControlPlane
from solver.core.errors import Kind, SolverError

if TYPE_CHECKING:
    from solver.core.plan import PlanDevice

Obj = dict[str, Any]

# (apiVersion, kind) -> (API path prefix, plural, namespaced)
KINDS: dict[tuple[str, str], tuple[str, str, bool]] = {
    ("v1", "Namespace"): ("/api/v1", "namespaces", False),
    ("v1", "Node"): ("/api/v1", "nodes", False),
    ("v1", "Pod"): ("/api/v1", "pods", True),
    ("scheduling.k8s.io/v1", "PriorityClass"): ("/apis/scheduling.k8s.io/v1", "priorityclasses", False),
    ("policy/v1", "PodDisruptionBudget"): ("/apis/policy/v1", "poddisruptionbudgets", True),
    ("scheduling.k8s.io/v1beta1", "PodGroup"): ("/apis/scheduling.k8s.io/v1beta1", "podgroups", True),
    ("scheduling.k8s.io/v1beta1", "Workload"): ("/apis/scheduling.k8s.io/v1beta1", "workloads", True),
    ("scheduling.k8s.io/v1alpha3", "PodGroup"): ("/apis/scheduling.k8s.io/v1alpha3", "podgroups", True),
    ("scheduling.k8s.io/v1alpha3", "CompositePodGroup"): (
        "/apis/scheduling.k8s.io/v1alpha3", "compositepodgroups", True),
    ("resource.k8s.io/v1", "DeviceClass"): ("/apis/resource.k8s.io/v1", "deviceclasses", False),
    ("resource.k8s.io/v1", "ResourceSlice"): ("/apis/resource.k8s.io/v1", "resourceslices", False),
    ("resource.k8s.io/v1", "DeviceTaintRule"): ("/apis/resource.k8s.io/v1", "devicetaintrules", False),
    ("resource.k8s.io/v1", "ResourceClaim"): ("/apis/resource.k8s.io/v1", "resourceclaims", True),
    ("resource.k8s.io/v1", "ResourceClaimTemplate"): ("/apis/resource.k8s.io/v1", "resourceclaimtemplates", True),
    ("v1", "PersistentVolumeClaim"): ("/api/v1", "persistentvolumeclaims", True),
    ("v1", "PersistentVolume"): ("/api/v1", "persistentvolumes", False),
    ("storage.k8s.io/v1", "StorageClass"): ("/apis/storage.k8s.io/v1", "storageclasses", False),
    ("storage.k8s.io/v1", "CSINode"): ("/apis/storage.k8s.io/v1", "csinodes", False),
    ("storage.k8s.io/v1", "CSIDriver"): ("/apis/storage.k8s.io/v1", "csidrivers", False),
    ("storage.k8s.io/v1", "VolumeAttachment"): ("/apis/storage.k8s.io/v1", "volumeattachments", False),
    ("storage.k8s.io/v1", "CSIStorageCapacity"): ("/apis/storage.k8s.io/v1", "csistoragecapacities", True),
    ("node.k8s.io/v1", "RuntimeClass"): ("/apis/node.k8s.io/v1", "runtimeclasses", False),
    ("v1", "ServiceAccount"): ("/api/v1", "serviceaccounts", True),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): ("/apis/rbac.authorization.k8s.io/v1", "clusterroles", False),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): (
        "/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings", False),
    ("rbac.authorization.k8s.io/v1", "Role"): ("/apis/rbac.authorization.k8s.io/v1", "roles", True),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): ("/apis/rbac.authorization.k8s.io/v1", "rolebindings", True),
}
# creation order: what an object refers to exists before it
ORDER = ("Namespace", "PriorityClass", "DeviceClass", "StorageClass", "CSIDriver", "RuntimeClass", "Node", "CSINode",
         "ResourceSlice", "DeviceTaintRule",
         "PersistentVolume", "VolumeAttachment", "CSIStorageCapacity", "PersistentVolumeClaim", "Workload",
         "CompositePodGroup", "PodGroup",
         "PodDisruptionBudget", "ResourceClaimTemplate", "ResourceClaim")
HOLD = "gangplace.io/hold"  # the finalizer that keeps a recorded terminating pod terminating
_SERVER_SET = ("uid", "resourceVersion", "managedFields", "generation", "creationTimestamp", "selfLink",
               "ownerReferences", "deletionTimestamp", "deletionGracePeriodSeconds")


DEFAULT_TIMEOUT = 300.0  # seconds a run may take at most, settled or not (--upstream-timeout)
WRITERS = 16  # concurrent creates while loading: a snapshot of 100k pods loads in minutes, not hours


def each_in_parallel(fn: Any, items: Iterable[Any]) -> None:
    """``fn`` over ``items`` on WRITERS threads; the first error is raised."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(WRITERS) as pool:
        for _ in pool.map(fn, items):
            pass


class LoadError(SolverError):
    """The real API server refused an object of the snapshot (the message names it)."""

    kind = Kind.INPUT


class Rest:
    """Plain JSON calls on the API server with the admin's credentials."""

    def __init__(self, plane: ControlPlane) -> None:
        from kubernetes import config

        self.api = config.new_client_from_config(  # type: ignore[no-untyped-call]  # unannotated in the client
            str(plane.admin_kubeconfig))
        self.api.configuration.connection_pool_maxsize = WRITERS
        self.api.rest_client.pool_manager.connection_pool_kw["maxsize"] = WRITERS

    def request(self, method: str, path: str, body: Any = None, query: Iterable[tuple[str, str]] = (),
                content_type: str = "application/json") -> tuple[int, Any]:
        """(HTTP status, decoded body) whatever the status."""
        from urllib.parse import urlencode

        url = self.api.configuration.host + path + (f"?{urlencode(list(query))}" if query else "")
        resp = self.api.call_api(method, url, header_params={"Content-Type": content_type,
                                                             "Accept": "application/json"},
                                 body=body, _request_timeout=60)
        data = resp.read()
        try:
            decoded = json.loads(data) if data else None
        except ValueError:
            decoded = data.decode(errors="replace") if isinstance(data, bytes) else data
        return int(resp.status), decoded

    def call(self, method: str, path: str, body: Any = None, query: Iterable[tuple[str, str]] = (),
             content_type: str = "application/json") -> Any:
        status, data = self.request(method, path, body, query, content_type)
        if status >= 300:
            raise LoadError(f"{method} {path}: {status} {message_of(data)}")
        return data

    def create(self, obj: Obj, body: Obj | None = None) -> Any:
        """POST ``body`` (default: ``obj``) where ``obj`` lives, fieldValidation=Strict. Priority
        admission reads PriorityClasses from an informer, so a pod or group naming a class
        created a moment ago can be refused as naming none: that refusal is retried, for 10 s."""
        deadline = time.monotonic() + 10
        while True:
            try:
                return self.call("POST", path_of(obj), obj if body is None else body, [("fieldValidation", "Strict")])
            except LoadError as exc:
                if "no PriorityClass with name" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def close(self) -> None:
        self.api.close()


def message_of(body: Any) -> str:
    """A Status body's message (the body itself when it is none)."""
    return str(body.get("message", body)) if isinstance(body, dict) else str(body)


def path_of(obj: Obj, *, named: bool = False, sub: str = "") -> str:
    key = (obj.get("apiVersion", ""), obj.get("kind", ""))
    if key not in KINDS:
        raise LoadError(f"{key[1]} {obj.get('metadata', {}).get('name')}: kind {key[0]}/{key[1]} is not loaded")
    prefix, plural, namespaced = KINDS[key]
    meta = obj["metadata"]
    where = f"{prefix}/namespaces/{meta.get('namespace') or 'default'}/{plural}" if namespaced else f"{prefix}/{plural}"
    if named or sub:
        where += f"/{meta['name']}"
    return where + (f"/{sub}" if sub else "")


def _clean(obj: Obj) -> Obj:
    out = copy.deepcopy(obj)
    for k in _SERVER_SET:
        out.get("metadata", {}).pop(k, None)
    out.pop("status", None)
    return out


@dataclass
class Loaded:
    running: list[str] = field(default_factory=list)  # ns/name of the running pods created
    priority_classes: dict[int, str] = field(default_factory=dict)  # made for a value
    # kind -> objects of it not loaded: the scheduler reads none of them (a Service, a
    # ConfigMap); reported with the run (SchedulerRun.skipped_kinds), never dropped unsaid
    skipped: dict[str, int] = field(default_factory=dict)


def _class_for(value: int, classes: Mapping[str, int], made: dict[int, str], rest: Rest) -> str:
    if value not in made:
        name = f"gangplace-priority-{value}" if value >= 0 else f"gangplace-priority-minus-{-value}"
        rest.call("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", {
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name}, "value": value, "preemptionPolicy": "PreemptLowerPriority"})
        made[value] = name
    return made[value]


def prepare(obj: Obj, classes: Mapping[str, int], made: dict[int, str], rest: Rest) -> Obj:
    """The object to create; a pod's or group's priority comes from a PriorityClass, since
    Priority admission refuses one that sets a value its class (or the default 0) does not give."""
    out = _clean(obj)
    if obj.get("kind") not in ("Pod", "PodGroup", "CompositePodGroup"):
        return out
    spec = out.setdefault("spec", {})
    value = spec.pop("priority", None)
    name = spec.get("priorityClassName")
    if name is not None and (name not in classes or (value is not None and classes[name] != value)):
        spec.pop("priorityClassName")
        name = None
    if name is None and value not in (None, 0):
        spec["priorityClassName"] = _class_for(int(value), classes, made, rest)
    return out


def prepare_pod(pod: Obj, classes: Mapping[str, int], made: dict[int, str], rest: Rest,
                scheduler_name: str | None) -> Obj:
    out = prepare(pod, classes, made, rest)
    spec = out["spec"]
    if spec.get("nodeName"):
        spec["terminationGracePeriodSeconds"] = 0
    elif scheduler_name:
        spec["schedulerName"] = scheduler_name
    return out


def _running_status(pod: Obj) -> Obj:
    recorded = pod.get("status") or {}
    started = recorded.get("startTime") or pod.get("metadata", {}).get("creationTimestamp") or "2026-01-01T00:00:00Z"
    return {"phase": "Running", "startTime": started,
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": started},
                           {"type": "PodScheduled", "status": "True", "lastTransitionTime": started}]}


def load_background(rest: Rest, objects: list[Obj], *, status: bool = True) -> tuple[Loaded, list[Obj]]:
    """Everything but the pending pods; returns them (prepared later, once the scheduler runs)."""
    loaded = Loaded()
    by_kind: dict[str, list[Obj]] = {}
    for o in objects:
        by_kind.setdefault(o.get("kind", ""), []).append(o)
    namespaces = {o.get("metadata", {}).get("namespace") for o in objects} - {None, "", "default"}
    existing = {o["metadata"]["name"] for o in by_kind.get("Namespace", [])}
    for ns in sorted(namespaces - existing):
        by_kind.setdefault("Namespace", []).append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    classes = {o["metadata"]["name"]: int(o.get("value", 0)) for o in by_kind.get("PriorityClass", [])}
    loaded.skipped = {kind: len(objs) for kind, objs in sorted(by_kind.items()) if kind not in ORDER and kind != "Pod"}

    def create(pair: tuple[Obj, Obj]) -> None:
        o, body = pair
        created = rest.create(o, body)
        if status and o["kind"] in ("PodDisruptionBudget", "ResourceClaim") and o.get("status"):
            recorded = dict(o["status"])
            if o["kind"] == "PodDisruptionBudget":
                recorded.setdefault("observedGeneration", created["metadata"].get("generation", 1))
            rest.call("PATCH", path_of(o, sub="status"), {"status": recorded},
                      content_type="application/merge-patch+json")

    for kind in ORDER:
        pairs = []
        for o in by_kind.get(kind, []):
            if kind == "Namespace" and o["metadata"]["name"] in ("default", "kube-system", "kube-public"):
                continue
            body = prepare(o, classes, loaded.priority_classes, rest)
            if kind == "Node":
                body["status"] = o.get("status", {})  # a node's status is kept on create
            pairs.append((o, body))
        each_in_parallel(create, pairs)
    pending, running = [], []
    for o in by_kind.get("Pod", []):
        if not o.get("spec", {}).get("nodeName"):
            pending.append(o)
        elif (o.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
            running.append((o, prepare_pod(o, classes, loaded.priority_classes, rest, None)))
    each_in_parallel(lambda pair: create_running_pod(rest, *pair), running)
    loaded.running.extend(_key(o) for o, _ in running)
    return loaded, [prepare_pod(o, classes, loaded.priority_classes, rest, "default-scheduler") for o in pending]


def create_running_pod(rest: Rest, o: Obj, body: Obj) -> None:
    """A pod bound where it runs (``body`` from prepare_pod), Running and Ready as its kubelet
    would report it; a pod recorded terminating is held by a finalizer and deleted, so it stays
    terminating."""
    terminating = bool(o.get("metadata", {}).get("deletionTimestamp"))
    if terminating:
        body["metadata"].setdefault("finalizers", []).append(HOLD)
    rest.create(o, body)
    rest.call("PATCH", path_of(o, sub="status"), {"status": _running_status(o)},
              content_type="application/merge-patch+json")
    if terminating:
        rest.call("DELETE", path_of(o, named=True), {"gracePeriodSeconds": 30})


def _key(o: Obj) -> str:
    return f"{o['metadata'].get('namespace') or 'default'}/{o['metadata']['name']}"


@dataclass
class SchedulerRun:
    """What the real scheduler did: pod -> node for the pods it bound, the running pods it
    deleted, and when (seconds after the first pending pod was created)."""

    bindings: dict[str, str]
    deleted: list[str]
    seconds_to_last_binding: float
    settled: bool  # it settled (Settling); False: the timeout ended the run
    seconds_waited: float = 0.0  # first pending pod created to the run's end (settled or the timeout)
    podgroup_attempts: int = 0
    podgroup_attempt_seconds_mean: float | None = None
    podgroup_attempt_seconds_p50: float | None = None  # from the attempts histogram, as Prometheus would
    podgroup_attempt_seconds_p99: float | None = None
    advice: dict[str, float] = field(default_factory=dict)  # with the plugin: gangplace_advice_total by "point/result"
    gates: dict[str, bool] = field(default_factory=dict)  # the control plane's feature gates
    # the devices it allocated to the pods it bound, read back from the claims' status:
    # (owner "ns/name", is a PodGroup, the owner's claim entry, request, driver, pool, device)
    allocations: list[tuple[str, bool, str, str, PlanDevice]] = field(default_factory=list)
    # pod -> the message of its PodScheduled=False condition, for the pods it left pending
    reasons: dict[str, str] = field(default_factory=dict)
    skipped_kinds: dict[str, int] = field(default_factory=dict)  # Loaded.skipped


def read_reasons(rest: Rest, keys: Iterable[str]) -> dict[str, str]:
    """pod -> its PodScheduled=False condition's message, for those of ``keys`` that have one."""
    out = {}
    for key in keys:
        ns, name = key.split("/", 1)
        pod = rest.call("GET", f"/api/v1/namespaces/{ns}/pods/{name}")
        for c in (pod.get("status") or {}).get("conditions") or []:
            if c.get("type") == "PodScheduled" and c.get("status") == "False":
                out[key] = c.get("message", "")
    return out


def read_allocations(rest: Rest, bound: Iterable[str], before: Iterable[str] = ()
                     ) -> list[tuple[str, bool, str, str, PlanDevice]]:
    """The allocations the run made for the claims the bound pods (or their PodGroups) use,
    named by the owner's claim entry: ``status.resourceClaimStatuses`` for a claim made from a
    template, the entry's ``resourceClaimName`` otherwise, ``<extended-resources>`` for the
    claim that serves a pod's extended resources (``status.extendedResourceClaimStatus``).
    ``before``: the claims (namespace/name) allocated before the run, whose allocation the
    run did not make."""
    from solver.core.plan import PlanDevice
    from solver.kube.dra import EXTENDED_CLAIM

    out: list[tuple[str, bool, str, str, PlanDevice]] = []
    claims = {_key(c): c for c in rest.call("GET", "/apis/resource.k8s.io/v1/resourceclaims")["items"]}
    pods = {_key(p): p for p in rest.call("GET", "/api/v1/pods")["items"]}
    # each claim is read once: a PodGroup's, or one several bound pods name, whose allocation
    # goes to the first of them by name (as gangplace's plans give it)
    read: set[str] = set()
    allocated_before = set(before)
    for pod_key in sorted(bound):
        ns = pod_key.split("/", 1)[0]
        pod = pods.get(pod_key) or {}
        spec, status = pod.get("spec", {}), pod.get("status", {})
        entries: list[tuple[str, bool, str, str]] = []  # (owner, is a group, entry, claim name)
        made = {m["name"]: m.get("resourceClaimName") for m in status.get("resourceClaimStatuses") or []}
        for e in spec.get("resourceClaims") or []:
            claim_name = e.get("resourceClaimName") or made.get(e["name"])
            if claim_name:
                entries.append((pod_key, False, e["name"], claim_name))
        extended = (status.get("extendedResourceClaimStatus") or {}).get("resourceClaimName")
        if extended:
            entries.append((pod_key, False, EXTENDED_CLAIM, extended))
        for owner, _, entry, claim_name in entries:
            if f"{ns}/{claim_name}" in allocated_before:
                continue  # allocated already: the run only reserved it
            claim = claims.get(f"{ns}/{claim_name}") or {}
            reserved = (claim.get("status") or {}).get("reservedFor") or []
            group = next((r["name"] for r in reserved if r.get("resource") == "podgroups"), None)
            who, is_group = (f"{ns}/{group}", True) if group else (owner, False)
            if f"{ns}/{claim_name}" in read:
                continue
            read.add(f"{ns}/{claim_name}")
            results = ((claim.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results") or []
            out.extend((who, is_group, entry, r["request"], PlanDevice(
                driver=r["driver"], pool=r["pool"], device=r["device"], share_id=r.get("shareID") or "",
                consumed=tuple(sorted((k, str(v)) for k, v in (r.get("consumedCapacity") or {}).items())),
                admin_access=bool(r.get("adminAccess"))))
                for r in results)
    return out


class Watch(threading.Thread):
    """Pods as the API server reports them, from a resourceVersion on: binding and deletion
    times, without listing every pod again and again."""

    def __init__(self, rest: Rest, resource_version: str) -> None:
        super().__init__(daemon=True)
        self.rest, self.rv = rest, resource_version
        self.bound: dict[str, tuple[str, float]] = {}
        self.deleted: dict[str, float] = {}
        self.last_change = time.monotonic()
        self.stop_event = threading.Event()
        self.error: str | None = None
        self._current: Any = None  # the watch under way, for finish()

    def finish(self) -> None:
        """Stop watching now: the open watch request is cut (the API server's shutdown waits for
        it otherwise, up to its 5 s timeout)."""
        self.stop_event.set()
        current = self._current
        if current is not None:
            current.stop()
        self.join(timeout=5)

    def run(self) -> None:
        from kubernetes import client, watch

        core = client.CoreV1Api(self.rest.api)
        while not self.stop_event.is_set():
            w = self._current = watch.Watch()  # type: ignore[no-untyped-call]  # unannotated in the client
            try:
                for ev in w.stream(  # type: ignore[no-untyped-call]  # unannotated in the client
                        core.list_pod_for_all_namespaces, resource_version=self.rv, timeout_seconds=5,
                        _request_timeout=10):
                    pod = ev["object"]
                    self.rv = pod.metadata.resource_version
                    key = f"{pod.metadata.namespace}/{pod.metadata.name}"
                    now = time.monotonic()
                    if ev["type"] == "DELETED":
                        self.deleted[key] = now
                        self.last_change = now
                    elif pod.spec.node_name and key not in self.bound:
                        self.bound[key] = (pod.spec.node_name, now)
                        self.last_change = now
                    if self.stop_event.is_set():
                        break
            except Exception as exc:  # a dropped watch: resume from the last version seen
                self.error = str(exc)
                time.sleep(0.2)
            finally:
                w.stop()  # type: ignore[no-untyped-call]  # unannotated in the client


# kube-controller-manager's controllers a run starts once the objects are loaded: claims made
# from templates and a victim's claims deallocated; WaitForFirstConsumer volumes bound (never
# the disruption controller: a budget's status stays as recorded)
CONTROLLERS = ("resourceclaim-controller", "persistentvolume-binder-controller")
CLAIM_FINALIZER = "resource.kubernetes.io/delete-protection"  # resourceapi.Finalizer


def own_claims(rest: Rest, objects: Iterable[Obj]) -> None:
    """Recorded allocated claims as a cluster holds them: each pod reservation names the
    running pod as created (its uid), and the claim carries the finalizer the scheduler adds
    when it allocates, so that the resourceclaim controller keeps what runs reserved and
    deallocates what an evicted pod held (pkg/controller/resourceclaim, syncClaim)."""
    for o in objects:
        status = o.get("status") or {}
        if o.get("kind") != "ResourceClaim" or not status.get("allocation"):
            continue
        ns = o["metadata"].get("namespace") or "default"
        reserved = []
        for ref in status.get("reservedFor") or []:
            ref = dict(ref)
            if ref.get("resource") == "pods" and not ref.get("apiGroup"):
                got, pod = rest.request("GET", f"/api/v1/namespaces/{ns}/pods/{ref['name']}")
                if got == 200:
                    ref["uid"] = pod["metadata"]["uid"]
            reserved.append(ref)
        path = path_of(o, named=True)
        finalizers = [*o["metadata"].get("finalizers", [])]
        if CLAIM_FINALIZER not in finalizers:
            rest.call("PATCH", path, {"metadata": {"finalizers": [*finalizers, CLAIM_FINALIZER]}},
                      content_type="application/merge-patch+json")
        rest.call("PATCH", path_of(o, sub="status"), {"status": {"reservedFor": reserved}},
                  content_type="application/merge-patch+json")


def own_volumes(rest: Rest, objects: Iterable[Obj]) -> None:
    """A recorded volume's claimRef names its claim as created (its uid): the PV binder marks a
    claim whose volume names another uid Lost, "Two claims are bound to the same volume"."""
    for o in objects:
        ref = (o.get("spec") or {}).get("claimRef")
        if o.get("kind") != "PersistentVolume" or not ref or not ref.get("name"):
            continue
        ns = ref.get("namespace") or "default"
        got, claim = rest.request("GET", f"/api/v1/namespaces/{ns}/persistentvolumeclaims/{ref['name']}")
        if got == 200:
            rest.call("PATCH", path_of(o, named=True), {"spec": {"claimRef": {
                "uid": claim["metadata"]["uid"], "resourceVersion": None}}},
                content_type="application/merge-patch+json")


@dataclass(frozen=True, slots=True)
class WithPlugin:
    """Run kube-scheduler with the gangplace plugin (deploy/components/scheduler-plugin's profile,
    for default-scheduler) and its advisor (`gangplace adapter --advise` asking a `gangplace serve`
    of its own, at this time limit and PDB policy) instead of kube-scheduler alone. A PodGroup is
    held for its plan at most the time limit and a second, so a plan slower than the shipped 2 s
    hold still counts."""

    time_limit: float = 10.0
    pdb_policy: str = "strict"


def run_kube_scheduler(objects: Iterable[Mapping[str, Any]], *, gates: Mapping[str, bool] | None = None,
                       settle: float = 10.0, timeout: float = DEFAULT_TIMEOUT, pending_first: bool = False,
                       report: Callable[[Waiting], None] | None = None,
                       plugin: WithPlugin | None = None) -> SchedulerRun:
    """Load ``objects`` on a fresh control plane, run kube-scheduler until it has settled for
    ``settle`` seconds (``Settling``: idle, or only retrying pods it cannot place) or
    ``timeout`` seconds have passed since the first pending pod was created (``settled`` False),
    and read back what it bound and deleted. ``report`` hears how the run goes every 10 s.

    The pending pods are created once the scheduler runs, as a controller would, so a gang's
    first cycle may start when its minCount pods exist and before the others do. With
    ``pending_first`` they all exist before the scheduler starts (its informers list them
    before the first cycle), which is the state the baseline models: the choice then depends
    on the pods, not on the order the API server took them in.
    """
    # the controllers (CONTROLLERS) start once the recorded claims and volumes point at their
    # objects as created (own_claims, own_volumes); the API server's gates as the scheduler's:
    # 1.37's defaults (PodGroupPreemptionPolicy off) unless the run asks otherwise, so that a
    # snapshot a default cluster holds loads as it is
    scheduler_gates = {"PodGroupPreemptionPolicy": False, **(gates or {})}
    plane = ControlPlane.start(api_gates=scheduler_gates)
    rest = Rest(plane)
    try:
        docs = [dict(o) for o in objects]
        loaded, pending = load_background(rest, docs)
        own_claims(rest, docs)
        own_volumes(rest, docs)
        plane.start_controller_manager(CONTROLLERS)
        rv = rest.call("GET", "/api/v1/pods", query=[("limit", "1")])["metadata"]["resourceVersion"]
        watcher = Watch(rest, rv)
        watcher.start()
        if pending_first:
            each_in_parallel(rest.create, pending)
        if plugin is None:
            plane.start_scheduler(scheduler_gates)
        else:
            start_with_plugin(plane, scheduler_gates, plugin)
        start = time.monotonic()
        if not pending_first:
            each_in_parallel(rest.create, pending)
        pending_keys = {_key(o) for o in pending}
        settled = wait_until_settled(plane, watcher, pending_keys, settle=settle, deadline=start + timeout,
                                     report=report)
        waited = time.monotonic() - start
        watcher.finish()
        bindings = {k: node for k, (node, _) in watcher.bound.items() if k in pending_keys}
        times = [t for k, (_, t) in watcher.bound.items() if k in pending_keys]
        deleted = sorted(k for k in watcher.deleted if k in set(loaded.running))
        metrics = plane.scheduler_metrics()
        attempts, mean = _podgroup_latency(metrics)
        p50, p99 = (_quantile(metrics, PODGROUP_ATTEMPT, q) for q in (0.5, 0.99))
        allocations = read_allocations(rest, bindings, before=(
            _key(o) for o in docs if o.get("kind") == "ResourceClaim" and (o.get("status") or {}).get("allocation")))
        reasons = read_reasons(rest, sorted(pending_keys - set(bindings)))
        return SchedulerRun(bindings=bindings, deleted=deleted, allocations=allocations, reasons=reasons,
                            skipped_kinds=loaded.skipped,
                            seconds_to_last_binding=round(max(times) - start, 3) if times else 0.0,
                            settled=settled, seconds_waited=round(waited, 1), podgroup_attempts=attempts,
                            podgroup_attempt_seconds_mean=mean, podgroup_attempt_seconds_p50=p50,
                            podgroup_attempt_seconds_p99=p99, gates=dict(sorted(plane.api_gates.items())),
                            advice=_advice(metrics))
    finally:
        rest.close()
        plane.stop()


class MetricsSource(Protocol):
    """Where the scheduler's /metrics text comes from (a ControlPlane)."""

    def scheduler_metrics(self) -> str: ...


class WatchState(Protocol):
    """What the pod watch has seen so far (a Watch): bindings, deletions and the time
    (``time.monotonic``) of the last of either."""

    bound: dict[str, tuple[str, float]]
    deleted: dict[str, float]
    last_change: float


RETRY = "unschedulable"  # the attempt result of a pod or PodGroup that found no place


@dataclass(frozen=True, slots=True)
class SchedulerState:
    """The scheduler at one moment, from its /metrics: pods per queue
    (``scheduler_pending_pods``) and attempts per result, a pod's
    (``scheduler_schedule_attempts_total``) and a PodGroup's
    (``scheduler_podgroup_schedule_attempts_total``) added up."""

    queues: Mapping[str, float]
    attempts: Mapping[str, float]

    @classmethod
    def read(cls, metrics: str) -> SchedulerState:
        queues: dict[str, float] = {}
        attempts: dict[str, float] = {}
        for line in metrics.splitlines():
            if line.startswith("scheduler_pending_pods{"):
                into, label = queues, 'queue="'
            elif line.startswith(("scheduler_schedule_attempts_total{", "scheduler_podgroup_schedule_attempts_total{")):
                into, label = attempts, 'result="'
            else:
                continue
            if label not in line:
                continue
            name = line.split(label, 1)[1].split('"', 1)[0]
            into[name] = into.get(name, 0.0) + float(line.rsplit(" ", 1)[1])
        return cls(queues, attempts)

    @property
    def retries(self) -> float:
        """Attempts that found no place: the scheduler retrying without success."""
        return self.attempts.get(RETRY, 0.0)

    @property
    def work(self) -> float:
        """Every other attempt (scheduled, waiting on preemption, error): the scheduler getting on."""
        return sum(v for k, v in self.attempts.items() if k != RETRY)

    def busy(self, waiting: int) -> bool:
        """Under way now: a pod in the active queue, or a pod still pending in no queue at all
        (under an attempt, waiting at Permit, being bound; an attempt at a PodGroup on thousands
        of nodes can run for many seconds)."""
        return self.queues.get("active", 0) > 0 or sum(self.queues.values()) < waiting


@dataclass(frozen=True, slots=True)
class Waiting:
    """One progress report of a run under way."""

    elapsed: float  # seconds since the wait began
    bound: int  # pods of the run bound so far
    waiting: int  # pods of the run still pending
    unschedulable: int  # pods in the scheduler's unschedulable queue
    phase: str  # "idle", "retrying unschedulable" or "working"
    quiet: float  # seconds since the last binding, deletion or attempt that was not a failure


class Settling:
    """The settle rule, one poll at a time. The run has settled once, for ``settle`` seconds, no
    pod was bound or deleted and no attempt had a result but unschedulable, and the scheduler
    is not busy now (``SchedulerState.busy``) and either idle (its backoff queue empty too) or
    retrying without success (unschedulable attempts since that last progress: a pod or gang it
    retries from its backoff queue never leaves it idle). An attempt under way keeps the run
    going however long it takes."""

    def __init__(self, settle: float, now: float, last_change: float, state: SchedulerState) -> None:
        self.settle = settle
        self.change = last_change
        self.progress_at = now  # the last binding, deletion or attempt that was not a failure
        self.work = state.work
        self.retries_at_progress = state.retries
        self.phase = "working"

    def observe(self, now: float, last_change: float, waiting: int, state: SchedulerState) -> bool:
        if last_change != self.change:
            self.change = last_change
            self.progress_at = max(self.progress_at, last_change)
            self.retries_at_progress = state.retries
        if state.work != self.work:
            self.work = state.work
            self.progress_at = now
            self.retries_at_progress = state.retries
        if state.busy(waiting):
            self.phase = "working"
        elif state.queues.get("backoff", 0) == 0:
            self.phase = "idle"
        elif state.retries > self.retries_at_progress:
            self.phase = "retrying unschedulable"
        else:
            self.phase = "working"  # in backoff after an attempt that was not a failure
        return self.phase != "working" and now - self.progress_at >= self.settle


def _read_state(plane: MetricsSource) -> SchedulerState | None:
    """The scheduler's state, or None when its /metrics did not answer: for a moment after its
    /healthz answers, it refuses the admin's certificate (403 to system:anonymous)."""
    try:
        return SchedulerState.read(plane.scheduler_metrics())
    except OSError:  # urllib's HTTPError and URLError
        return None


def wait_until_settled(plane: MetricsSource, watcher: WatchState, pending_keys: set[str], *, settle: float,
                       deadline: float, until_bound: bool = False, report: Callable[[Waiting], None] | None = None,
                       every: float = 10.0, clock: Callable[[], float] = time.monotonic,
                       sleep: Callable[[float], None] = time.sleep) -> bool:
    """Wait until the scheduler has settled (True, ``Settling``'s rule) or ``deadline``
    (``clock``'s time) has passed (False). With ``until_bound``, settled as soon as every pod of
    ``pending_keys`` is bound, for a caller that created no other pending pod: the scheduler has
    nothing left to do, and what it deleted on the way was seen before the binding.
    ``report`` is told how the run goes every ``every`` seconds."""
    began = reported = clock()
    change = watcher.last_change
    state = _read_state(plane)
    rule = None if state is None else Settling(settle, began, change, state)
    while clock() < deadline:
        sleep(0.2 if until_bound else 0.5)
        now = clock()
        waiting = len(pending_keys - watcher.bound.keys())
        if until_bound and not waiting:
            return True
        state = _read_state(plane)
        if state is None:  # no answer: nothing is decided on this poll
            continue
        if rule is None:
            rule = Settling(settle, began, change, state)
        settled = rule.observe(now, watcher.last_change, waiting, state)
        if report is not None and (settled or now - reported >= every):
            reported = now
            report(Waiting(elapsed=round(now - began, 1), bound=len(pending_keys) - waiting, waiting=waiting,
                           unschedulable=int(state.queues.get("unschedulable", 0)), phase=rule.phase,
                           quiet=round(now - rule.progress_at, 1)))
        if settled:
            return True
    return False


PODGROUP_ATTEMPT = "scheduler_podgroup_scheduling_attempt_duration_seconds"


def start_with_plugin(plane: ControlPlane, gates: Mapping[str, bool], plugin: WithPlugin) -> None:
    """The advisor, then the plugin's kube-scheduler; returns once the plugin finds the advisor
    healthy (before that it would do what upstream does, and the run would measure that)."""
    from solver.bench import controlplane

    rest = Rest(plane)
    try:
        for obj in controlplane.plugin_rbac():
            rest.create(obj)
    finally:
        rest.close()
    address = plane.start_advisor(scheduler_name="default-scheduler", time_limit=plugin.time_limit,
                                  pdb_policy=plugin.pdb_policy)
    hold_ms = max(2000, int((plugin.time_limit + 1) * 1000))
    config = controlplane.plugin_config(address, pdbPolicy=plugin.pdb_policy, holdMilliseconds=hold_ms,
                                        maxPlanAgeMilliseconds=max(10000, hold_ms))
    plane.start_scheduler(gates, binary=controlplane.plugin_scheduler(), config=config)
    deadline = time.monotonic() + 60
    while True:
        try:
            if "gangplace_advisor_healthy 1" in plane.scheduler_metrics():
                return
        except OSError:  # 403 until it has read the API server's client CA
            pass
        if time.monotonic() > deadline:
            raise controlplane.ControlPlaneError(f"the plugin never found its advisor healthy in 60 s:\n"
                                                 f"{plane.procs['advisor'].tail()}")
        time.sleep(0.2)


def _quantile(metrics: str, name: str, q: float) -> float | None:
    """The q-quantile of a histogram summed over its label sets, interpolated within the bucket
    as Prometheus's histogram_quantile does; None without observations."""
    buckets: dict[float, float] = {}
    for m in re.finditer(rf'^{name}_bucket\{{(?:[^}}]*,)?le="([^"]+)"[^}}]*\}} (\S+)$', metrics, re.M):
        le = float("inf") if m.group(1) == "+Inf" else float(m.group(1))
        buckets[le] = buckets.get(le, 0.0) + float(m.group(2))
    if not buckets or not buckets.get(float("inf")):
        return None
    bounds = sorted(buckets)
    rank = q * buckets[float("inf")]
    lower, below = 0.0, 0.0
    for bound in bounds:
        if buckets[bound] >= rank:
            if bound == float("inf"):
                return lower
            inside = buckets[bound] - below
            return round(lower + (bound - lower) * ((rank - below) / inside if inside else 1.0), 6)
        lower, below = bound, buckets[bound]
    return lower


def _advice(metrics: str) -> dict[str, float]:
    """gangplace_advice_total by "extension point/result" (empty without the plugin)."""
    return {f"{m.group(1)}/{m.group(2)}": float(m.group(3)) for m in re.finditer(
        r'^gangplace_advice_total\{extension_point="(\w+)",result="(\w+)"\} (\S+)$', metrics, re.M)}


def _podgroup_latency(metrics: str) -> tuple[int, float | None]:
    """scheduler_podgroup_scheduling_attempt_duration_seconds: attempts and their mean."""
    total = count = 0.0
    for line in metrics.splitlines():
        if line.startswith("scheduler_podgroup_scheduling_attempt_duration_seconds_sum"):
            total += float(line.rsplit(" ", 1)[1])
        elif line.startswith("scheduler_podgroup_scheduling_attempt_duration_seconds_count"):
            count += float(line.rsplit(" ", 1)[1])
    return int(count), (round(total / count, 6) if count else None)


@dataclass
class Scored:
    plan: Any  # solver.core.plan.Plan
    violations: list[str]
    unplanned: list[str]  # what the scheduler did that no plan of the snapshot can say


def score(snapshot: Any, outcome: SchedulerRun, *, gates: Any = None, dra_preemption: bool = False) -> Scored:
    """The real scheduler's outcome as a Plan on ``snapshot``, checked by the verifier.

    Bindings count per pod class and node (a class's pods are interchangeable, so the tiers
    are exactly the outcome's), and the plan binds each pod where the scheduler did; a deleted
    running pod evicts its whole victim unit, and a unit only part of which was deleted is
    named in ``unplanned``. The devices are the ones the
    scheduler allocated (``SchedulerRun.allocations``, read back from the claims), so the
    device checks judge its real choice.
    """
    from collections import defaultdict

    from solver import verify
    from solver.core.features import FeatureGates
    from solver.core.plan import Binding, DeviceAllocation
    from solver.plan.decode import make_plan
    from solver.problem.assignment import Assignment
    from solver.problem.build import build_problem

    gates = gates or FeatureGates()
    problem = build_problem(snapshot, gates=gates, dra_preemption=dra_preemption)
    # by the "ns/name" text the control plane reports
    class_of: dict[str, int] = {p.key: c.index for c in problem.classes for p in c.pods}
    unit_of: dict[str, int] = {p.key: u.index for u in problem.units for p in u.members}
    counts: dict[tuple[int, Any], int] = defaultdict(int)
    unplanned = []
    for pod, node in sorted(outcome.bindings.items()):
        if pod in class_of:
            counts[class_of[pod], node] += 1
        else:
            unplanned.append(f"bound {pod} to {node}, which the snapshot holds back")
    evicted = set()
    for pod in outcome.deleted:
        if pod in unit_of:
            evicted.add(unit_of[pod])
        else:
            unplanned.append(f"deleted {pod}, which is no victim unit")
    deleted = set(outcome.deleted)
    for u in evicted:
        missing = [p.key for p in problem.units[u].members if p.key not in deleted]
        if missing:
            unplanned.append(f"deleted part of victim unit {problem.units[u].key} (not {', '.join(missing)})")
    assignment = Assignment(counts=dict(counts), evicted=frozenset(evicted))
    plan = make_plan(problem, assignment, stats={"solver": "kube-scheduler"})
    # the decoder names a class's pods in its own order; the scheduler's names are kept, so
    # that the devices it allocated to a pod (by name, below) sit on that pod's node
    plan = dataclasses.replace(plan, bindings=tuple(
        Binding(pod=pod, node=node) for pod, node in sorted(outcome.bindings.items()) if pod in class_of))
    by_request: dict[tuple[str, bool, str, str], list[PlanDevice]] = defaultdict(list)
    for owner, is_group, entry, request, device in outcome.allocations:
        by_request[owner, is_group, entry, request].append(device)
    plan = dataclasses.replace(plan, device_allocations=tuple(
        DeviceAllocation(pod="" if is_group else owner, pod_group=owner if is_group else "", claim=entry,
                         request=request, devices=tuple(devices))
        for (owner, is_group, entry, request), devices in sorted(by_request.items())))
    violations = verify.verify(snapshot.facts, snapshot, plan, gates=gates, dra_preemption=dra_preemption)
    return Scored(plan=plan, violations=[str(v) for v in violations], unplanned=unplanned)
