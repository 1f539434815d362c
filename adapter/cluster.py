"""All Kubernetes API I/O of the adapter: the only module that imports ``kubernetes``.

Objects travel as plain dicts, as the API prints them (camelCase; list items get their
``kind`` and ``apiVersion`` back), so the watch cache hands ``solver.kube`` exactly what a
recorded snapshot holds. Every call the adapter makes is a method here; ``CALLS`` lists
them with the RBAC verb and resource each needs (deploy/ grants exactly those).

No ``ApiException`` leaves this module: an answer a caller acts on is a ``ClusterError`` of
its own (Gone, Conflict, Refused), a write's 5xx past the retries is Unavailable, and any
other status is UnexpectedStatus with the status code and reason. (A connection error on a
call that is not retried still comes as urllib3's or an OSError.)
"""

from __future__ import annotations

import builtins
import functools
import json
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ParamSpec, TypeVar

import urllib3
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

Obj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Kind:
    name: str  # Kind
    api_version: str
    plural: str
    list_call: Callable[[client.ApiClient], Callable[..., Any]]


KINDS: tuple[Kind, ...] = (
    Kind("Node", "v1", "nodes", lambda c: client.CoreV1Api(c).list_node),
    Kind("Pod", "v1", "pods", lambda c: client.CoreV1Api(c).list_pod_for_all_namespaces),
    # their labels: the namespaceSelector of pod affinity terms
    Kind("Namespace", "v1", "namespaces", lambda c: client.CoreV1Api(c).list_namespace),
    Kind("PriorityClass", "scheduling.k8s.io/v1", "priorityclasses",
         lambda c: client.SchedulingV1Api(c).list_priority_class),
    Kind("PodDisruptionBudget", "policy/v1", "poddisruptionbudgets",
         lambda c: client.PolicyV1Api(c).list_pod_disruption_budget_for_all_namespaces),
    Kind("PodGroup", "scheduling.k8s.io/v1beta1", "podgroups",
         lambda c: client.SchedulingV1beta1Api(c).list_pod_group_for_all_namespaces),
    Kind("Workload", "scheduling.k8s.io/v1beta1", "workloads",
         lambda c: client.SchedulingV1beta1Api(c).list_workload_for_all_namespaces),
    Kind("CompositePodGroup", "scheduling.k8s.io/v1alpha3", "compositepodgroups",
         lambda c: client.SchedulingV1alpha3Api(c).list_composite_pod_group_for_all_namespaces),
    Kind("ResourceSlice", "resource.k8s.io/v1", "resourceslices",
         lambda c: client.ResourceV1Api(c).list_resource_slice),
    Kind("DeviceClass", "resource.k8s.io/v1", "deviceclasses", lambda c: client.ResourceV1Api(c).list_device_class),
    Kind("ResourceClaim", "resource.k8s.io/v1", "resourceclaims",
         lambda c: client.ResourceV1Api(c).list_resource_claim_for_all_namespaces),
    Kind("ResourceClaimTemplate", "resource.k8s.io/v1", "resourceclaimtemplates",
         lambda c: client.ResourceV1Api(c).list_resource_claim_template_for_all_namespaces),
    Kind("DeviceTaintRule", "resource.k8s.io/v1", "devicetaintrules",
         lambda c: client.ResourceV1Api(c).list_device_taint_rule),
    # a pending pod's volumes (solver/kube/volumes.py)
    Kind("PersistentVolumeClaim", "v1", "persistentvolumeclaims",
         lambda c: client.CoreV1Api(c).list_persistent_volume_claim_for_all_namespaces),
    Kind("PersistentVolume", "v1", "persistentvolumes", lambda c: client.CoreV1Api(c).list_persistent_volume),
    Kind("StorageClass", "storage.k8s.io/v1", "storageclasses", lambda c: client.StorageV1Api(c).list_storage_class),
    Kind("CSIStorageCapacity", "storage.k8s.io/v1", "csistoragecapacities",
         lambda c: client.StorageV1Api(c).list_csi_storage_capacity_for_all_namespaces),
    # the CSI volumes a node may attach (NodeVolumeLimits: solver/filters/attach.py)
    Kind("CSINode", "storage.k8s.io/v1", "csinodes", lambda c: client.StorageV1Api(c).list_csi_node),
    Kind("CSIDriver", "storage.k8s.io/v1", "csidrivers", lambda c: client.StorageV1Api(c).list_csi_driver),
    Kind("VolumeAttachment", "storage.k8s.io/v1", "volumeattachments",
         lambda c: client.StorageV1Api(c).list_volume_attachment),
    # what a pod's runtimeClassName adds, should a pod be planned before admission filled it in
    Kind("RuntimeClass", "node.k8s.io/v1", "runtimeclasses", lambda c: client.NodeV1Api(c).list_runtime_class),
)

# (verb, API group, resource) of every call below: the ClusterRole in deploy/ is checked against it
CALLS: tuple[tuple[str, str, str], ...] = (
    *((verb, k.api_version.rpartition("/")[0], k.plural) for k in KINDS for verb in ("list", "watch")),
    ("create", "", "pods/eviction"),
    ("delete", "", "pods"),  # Cluster.preempt: --pdb-policy soft deletes victims as kube-scheduler does
    ("get", "", "pods"),
    ("create", "", "pods/binding"),
    ("patch", "scheduling.k8s.io", "podgroups/status"),
    ("patch", "resource.k8s.io", "resourceclaims/status"),
    # not a request of its own: kube-apiserver checks it on that status patch, which writes
    # status.allocation and status.reservedFor (pkg/registry/resource/utils.go; the scheduler's
    # bootstrap role holds the same, found on the real API server)
    ("patch", "resource.k8s.io", "resourceclaims/binding"),
    ("create", "resource.k8s.io", "resourceclaims"),
    ("patch", "", "pods/status"),
    ("patch", "", "persistentvolumes"),  # VolumeBinding's PreBind: a volume's claimRef
    ("patch", "", "persistentvolumeclaims"),  # and a claim's selected-node annotation
    ("create", "events.k8s.io", "events"),
    ("get", "coordination.k8s.io", "leases"),
    ("create", "coordination.k8s.io", "leases"),
    ("update", "coordination.k8s.io", "leases"),
)


class ClusterError(Exception):
    """Every error this module raises: nothing above it sees the client's ``ApiException``.
    ``status`` is the HTTP status the API server answered, when it answered one."""

    status: int | None = None


class Gone(ClusterError):
    """The watch's resourceVersion is too old (410): relist."""

    status = 410


class Conflict(ClusterError):
    """409: already bound, already exists, or a stale resourceVersion."""

    status = 409


class Refused(ClusterError):
    """429 from the Eviction API: a PDB forbids it now."""

    status = 429


# the eviction subresource's message for a pod two PodDisruptionBudgets select (eviction.go)
TWO_BUDGETS = "more than one PodDisruptionBudget"


class Unavailable(ClusterError):
    """The API server answered 5xx or not at all, ``ATTEMPTS`` times in a row."""


class UnexpectedStatus(ClusterError):
    """A status the call does not expect (403, 422, a 5xx of a call that is not retried, ...)."""

    def __init__(self, call: str, status: int | None, reason: str) -> None:
        self.call, self.status, self.reason = call, status, reason
        super().__init__(f"{call}: {status} {reason}")


def _unexpected(call: str, exc: ApiException) -> UnexpectedStatus:
    status = exc.status if isinstance(exc.status, int) else None
    return UnexpectedStatus(call, status, str(exc.reason or ""))


ATTEMPTS = 4  # a write is tried this often on a 5xx or a dropped connection, with jittered backoff
_BACKOFF = 0.05  # seconds before the second attempt, doubling, each times a jitter in [0.5, 1.5)

P = ParamSpec("P")
R = TypeVar("R")


def _transient(exc: BaseException) -> bool:
    if isinstance(exc, ApiException):
        return exc.status is None or exc.status >= 500
    return isinstance(exc, (urllib3.exceptions.HTTPError, OSError))


def retried(fn: Callable[P, R]) -> Callable[P, R]:
    """Call ``fn`` again on a 5xx or a connection error (the writes are idempotent: a repeated
    eviction finds the pod gone, a repeated binding a 409); Unavailable when it never answers,
    UnexpectedStatus on any other status ``fn`` lets through."""
    @functools.wraps(fn)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        delay = _BACKOFF
        for attempt in range(ATTEMPTS):
            try:
                return fn(*args, **kwargs)
            except Exception as exc:
                if not _transient(exc):
                    if isinstance(exc, ApiException):
                        raise _unexpected(fn.__name__, exc) from exc
                    raise
                if attempt == ATTEMPTS - 1:
                    raise Unavailable(f"{fn.__name__}: {exc}") from exc
                time.sleep(delay * random.uniform(0.5, 1.5))
                delay *= 2
        raise AssertionError("unreachable")
    return call


def translated(fn: Callable[P, R]) -> Callable[P, R]:
    """A call tried once: any status ``fn`` lets through becomes UnexpectedStatus."""
    @functools.wraps(fn)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except ApiException as exc:
            raise _unexpected(fn.__name__, exc) from exc
    return call


def _json(resp: object) -> Obj:
    """The JSON body of a call made with ``_preload_content=False``: the client then returns
    urllib3's response as it came, which its annotations (the model type) do not say."""
    if not isinstance(resp, urllib3.BaseHTTPResponse):
        raise TypeError(f"not a raw response: {type(resp).__name__}")
    body: Obj = json.loads(resp.data)
    return body


def _unless_changed(what: str, call: Callable[[], object]) -> None:
    """A write over an object as last seen (its resourceVersion): a 409 is a Conflict naming it."""
    try:
        call()
    except ApiException as exc:
        if exc.status == 409:
            raise Conflict(f"{what}: {exc.reason}") from exc
        raise


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Cluster:
    def __init__(self, api: client.ApiClient) -> None:
        self.api = api
        self.core = client.CoreV1Api(api)
        self.coordination = client.CoordinationV1Api(api)
        self.events = client.EventsV1Api(api)
        self.resource = client.ResourceV1Api(api)
        self.scheduling = client.SchedulingV1beta1Api(api)

    POOL = 32  # one connection per watched kind (11) plus the writes, with room

    @classmethod
    def connect(cls, kubeconfig: str | None = None, in_cluster: bool = False) -> Cluster:
        cfg = client.Configuration()
        if in_cluster:
            config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]  # unannotated
        else:
            config.load_kube_config(  # type: ignore[no-untyped-call]  # unannotated in the client
                config_file=kubeconfig, client_configuration=cfg)
        cfg.connection_pool_maxsize = cls.POOL
        return cls(client.ApiClient(cfg))

    @classmethod
    def at(cls, host: str) -> Cluster:
        cfg = client.Configuration(host=host)
        cfg.connection_pool_maxsize = cls.POOL
        return cls(client.ApiClient(cfg))

    def close(self) -> None:
        self.api.close()  # type: ignore[no-untyped-call]  # unannotated in the client

    # ---- list and watch ----------------------------------------------------------------
    PAGE = 500  # objects per list request, as client-go's reflector pages its lists

    @translated
    def list(self, kind: Kind) -> tuple[list[Obj], str]:
        """Every object of ``kind`` and the list's resourceVersion, ``PAGE`` at a time
        (limit/continue: the pages are one consistent snapshot; an expired continue token is
        a 410, Gone, and the caller lists again)."""
        items: list[Obj] = []
        token = None
        while True:
            kwargs: dict[str, Any] = {"limit": self.PAGE, "_preload_content": False}
            if token:
                kwargs["_continue"] = token
            try:
                body = _json(kind.list_call(self.api)(**kwargs))
            except ApiException as exc:
                if exc.status == 404 and not token:  # the API group is not served: nothing of that kind
                    return [], ""
                if exc.status == 410:
                    raise Gone() from exc
                raise
            items += [{"kind": kind.name, "apiVersion": kind.api_version, **item} for item in body.get("items", [])]
            meta = body.get("metadata", {})
            token = meta.get("continue")
            if not token:
                return items, meta.get("resourceVersion", "")

    def watch(self, kind: Kind, resource_version: str, timeout: int = 60) -> Iterator[tuple[str, Obj]]:
        """(type, object) events after ``resource_version``, each object the dict the API printed
        (no model deserialization: ``watch.Watch().stream`` builds a model of every event, and its
        ``deserialize=False`` path fails on an ERROR event); raises Gone on 410."""
        try:
            resp = kind.list_call(self.api)(watch=True, resource_version=resource_version, timeout_seconds=timeout,
                                            allow_watch_bookmarks=True, _preload_content=False)
        except ApiException as exc:
            if exc.status == 410:
                raise Gone() from exc
            raise _unexpected("watch", exc) from exc
        try:
            for line in iter_resp_lines(resp):  # type: ignore[no-untyped-call]  # unannotated
                if not line.strip():
                    continue
                event = json.loads(line)
                raw = event.get("object") or {}
                if event.get("type") == "ERROR":
                    if raw.get("code") == 410:
                        raise Gone()
                    raise UnexpectedStatus("watch", raw.get("code", 500), raw.get("message", ""))
                yield event["type"], {"kind": kind.name, "apiVersion": kind.api_version, **raw}
        finally:
            resp.close()
            resp.release_conn()

    # ---- plan execution ----------------------------------------------------------------
    @retried
    def get_pod(self, namespace: str, name: str) -> Obj | None:
        try:
            return _json(self.core.read_namespaced_pod(name, namespace, _preload_content=False))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    @retried
    def evict(self, namespace: str, name: str) -> None:
        """Through the Eviction API; gone already is fine; Refused on 429 (a PDB) and on the 500
        the subresource answers for a pod two budgets select, which no retry changes."""
        body = client.V1Eviction(metadata=client.V1ObjectMeta(name=name, namespace=namespace))
        try:
            self.core.create_namespaced_pod_eviction(name, namespace, body, _preload_content=False)
        except ApiException as exc:
            if exc.status == 404:
                return
            if exc.status == 429:
                raise Refused(f"{namespace}/{name}: {exc.reason}") from exc
            text = exc.body.decode(errors="replace") if isinstance(exc.body, bytes) else str(exc.body or "")
            if exc.status == 500 and TWO_BUDGETS in text:
                raise Refused(f"{namespace}/{name}: {TWO_BUDGETS}") from exc
            raise

    @retried
    def preempt(self, namespace: str, name: str, message: str) -> None:
        """As kube-scheduler's preemption deletes a victim (pkg/scheduler/framework/preemption/
        executor.go, prepareCandidate): the DisruptionTarget condition, reason
        PreemptionByScheduler, then a plain delete, which no PDB refuses; gone already is fine."""
        condition = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
                     "message": message, "lastTransitionTime": now()}
        try:
            # strategic merge: conditions merge by type, the pod's others stay
            self.core.patch_namespaced_pod_status(name, namespace, {"status": {"conditions": [condition]}},
                                                  _preload_content=False,
                                                  _content_type="application/strategic-merge-patch+json")
            self.core.delete_namespaced_pod(name, namespace, _preload_content=False)
        except ApiException as exc:
            if exc.status != 404:
                raise

    @retried
    def bind(self, namespace: str, name: str, node: str) -> None:
        """Through the Binding subresource; Conflict when the pod is bound already."""
        body = client.V1Binding(metadata=client.V1ObjectMeta(name=name, namespace=namespace),
                                target=client.V1ObjectReference(kind="Node", api_version="v1", name=node))
        try:
            # the API answers a Status, not a Binding: do not let the client parse it as one
            self.core.create_namespaced_pod_binding(name, namespace, body, _preload_content=False)
        except ApiException as exc:
            if exc.status == 409:
                raise Conflict(f"{namespace}/{name}: {exc.reason}") from exc
            raise

    @retried
    def set_podgroup_condition(self, namespace: str, name: str, condition: Obj) -> None:
        # strategic merge: conditions merge by type, other controllers' conditions stay
        patch = {"status": {"conditions": [condition]}}
        self.scheduling.patch_namespaced_pod_group_status(name, namespace, patch, _preload_content=False,
                                                          _content_type="application/strategic-merge-patch+json")

    @retried
    def set_claim_allocation(self, namespace: str, name: str, status: Obj) -> None:
        self.resource.patch_namespaced_resource_claim_status(name, namespace, {"status": status},
                                                            _preload_content=False,
                                                            _content_type="application/merge-patch+json")

    @retried
    def reserve_claim(self, namespace: str, name: str, reserved: builtins.list[Obj], resource_version: str) -> None:
        """``status.reservedFor`` as given, only over the claim as last seen (``resource_version``:
        a claim changed since is a Conflict, as kube-scheduler's update conflicts)."""
        body = {"metadata": {"resourceVersion": resource_version}, "status": {"reservedFor": reserved}}
        _unless_changed(f"ResourceClaim {namespace}/{name}",
                        lambda: self.resource.patch_namespaced_resource_claim_status(
                            name, namespace, body, _preload_content=False,
                            _content_type="application/merge-patch+json"))

    @retried
    def bind_volume(self, name: str, claim_namespace: str, claim: str, claim_uid: str, resource_version: str) -> None:
        """The volume's spec.claimRef names the claim (and the bound-by-controller annotation), as
        kube-scheduler's VolumeBinding PreBind writes it (``GetBindVolumeToClaim``); over the
        volume as last seen: one changed since is a Conflict. The PV controller binds the claim."""
        body = {"metadata": {"resourceVersion": resource_version,
                             "annotations": {"pv.kubernetes.io/bound-by-controller": "yes"}},
                "spec": {"claimRef": {"kind": "PersistentVolumeClaim", "apiVersion": "v1",
                                      "namespace": claim_namespace, "name": claim, "uid": claim_uid}}}
        _unless_changed(f"PersistentVolume {name}", lambda: self.core.patch_persistent_volume(
            name, body, _preload_content=False, _content_type="application/merge-patch+json"))

    @retried
    def select_node(self, namespace: str, claim: str, node: str, resource_version: str) -> None:
        """The claim's volume.kubernetes.io/selected-node annotation, which starts its provisioning
        there, as kube-scheduler's VolumeBinding PreBind writes it; over the claim as last seen."""
        body = {"metadata": {"resourceVersion": resource_version,
                             "annotations": {"volume.kubernetes.io/selected-node": node}}}
        _unless_changed(f"PersistentVolumeClaim {namespace}/{claim}",
                        lambda: self.core.patch_namespaced_persistent_volume_claim(
                            claim, namespace, body, _preload_content=False,
                            _content_type="application/merge-patch+json"))

    @retried
    def create_claim(self, namespace: str, obj: Obj) -> None:
        try:
            self.resource.create_namespaced_resource_claim(  # a dict body goes out as it is
                namespace, obj, _preload_content=False)  # type: ignore[arg-type]  # annotated as the model only
        except ApiException as exc:
            if exc.status == 409:
                raise Conflict(f"ResourceClaim {namespace}/{obj['metadata']['name']} exists") from exc
            raise

    @retried
    def set_pod_claim_statuses(self, namespace: str, name: str, statuses: builtins.list[Obj]) -> None:
        # strategic merge: entries merge by name, a pod's other claims' entries stay
        self.core.patch_namespaced_pod_status(name, namespace, {"status": {"resourceClaimStatuses": statuses}},
                                              _preload_content=False,
                                              _content_type="application/strategic-merge-patch+json")

    @retried
    def set_pod_extended_claim(self, namespace: str, name: str, status: Obj) -> None:
        """status.extendedResourceClaimStatus: the claim serving the pod's extended resources."""
        self.core.patch_namespaced_pod_status(name, namespace, {"status": {"extendedResourceClaimStatus": status}},
                                              _preload_content=False,
                                              _content_type="application/merge-patch+json")

    @retried
    def nominate(self, namespace: str, name: str, node: str) -> None:
        """status.nominatedNodeName, as kube-scheduler's preemption marks a preemptor waiting for
        its victims to go: a later plan then sees the preemption as under way."""
        self.core.patch_namespaced_pod_status(name, namespace, {"status": {"nominatedNodeName": node}},
                                              _preload_content=False,
                                              _content_type="application/strategic-merge-patch+json")

    @retried
    def set_pod_condition(self, namespace: str, name: str, condition: Obj) -> None:
        """One pod condition (PodScheduled=False when left pending, as kube-scheduler's
        handleSchedulingFailure writes it); strategic merge by type, the others stay."""
        self.core.patch_namespaced_pod_status(name, namespace, {"status": {"conditions": [condition]}},
                                              _preload_content=False,
                                              _content_type="application/strategic-merge-patch+json")

    @retried
    def set_podgroup_claim_statuses(self, namespace: str, name: str, statuses: builtins.list[Obj]) -> None:
        self.scheduling.patch_namespaced_pod_group_status(
            name, namespace, {"status": {"resourceClaimStatuses": statuses}}, _preload_content=False,
            _content_type="application/strategic-merge-patch+json")

    @translated
    def event(self, *, namespace: str, regarding: Obj, reason: str, note: str, type_: str = "Normal",
              action: str = "Scheduling", reporter: str = "gangplace", related: Obj | None = None) -> None:
        meta = regarding["metadata"]
        # named as client-go's event recorder names them (tools/events makeEvent: the object's
        # name, a dot, the time in hex nanoseconds); a generateName ending in "." is refused by
        # the API server's validation (found on the real kube-apiserver)
        body: Obj = {
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": f"{meta['name']}.{time.time_ns():x}", "namespace": namespace},
            "eventTime": now(), "reportingController": f"gangplace.io/{reporter}", "reportingInstance": reporter,
            "action": action, "reason": reason, "note": note[:1024], "type": type_,
            "regarding": {"kind": regarding.get("kind", "Pod"), "apiVersion": regarding.get("apiVersion", "v1"),
                          "namespace": namespace, "name": meta["name"], "uid": meta.get("uid", "")},
        }
        if related is not None:  # as upstream's preemption names its preemptor on a Preempted Event
            rmeta = related["metadata"]
            body["related"] = {"kind": related.get("kind", "Pod"), "apiVersion": related.get("apiVersion", "v1"),
                               "namespace": rmeta.get("namespace", ""), "name": rmeta["name"],
                               "uid": rmeta.get("uid", "")}
        self.events.create_namespaced_event(  # a dict body goes out as it is (sanitize_for_serialization)
            namespace, body, _preload_content=False)  # type: ignore[arg-type]  # annotated as the model only

    # ---- leases --------------------------------------------------------------------------
    @translated
    def get_lease(self, namespace: str, name: str) -> Obj | None:
        try:
            return _json(self.coordination.read_namespaced_lease(name, namespace, _preload_content=False))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    @translated
    def create_lease(self, namespace: str, obj: Obj) -> Obj:
        try:
            return _json(self.coordination.create_namespaced_lease(  # a dict body goes out as it is
                namespace, obj, _preload_content=False))  # type: ignore[arg-type]  # annotated as the model only
        except ApiException as exc:
            if exc.status == 409:
                raise Conflict("lease exists") from exc
            raise

    @translated
    def update_lease(self, namespace: str, obj: Obj) -> Obj:
        """PUT with the object's resourceVersion: Conflict when someone else wrote it first."""
        try:
            return _json(self.coordination.replace_namespaced_lease(  # a dict body goes out as it is
                obj["metadata"]["name"], namespace, obj, _preload_content=False))  # type: ignore[arg-type]  # annotated as the model only
        except ApiException as exc:
            if exc.status == 409:
                raise Conflict("lease changed") from exc
            raise
