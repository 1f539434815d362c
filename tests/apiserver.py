"""A Kubernetes API server double for the adapter's tests: a real HTTP server on 127.0.0.1.

Where it is still used, and why: tests/controlplane runs the adapter end to end on the real
kube-apiserver 1.37.2; this double stays for what cannot be made to happen there on demand:
one request failing with a 500 or 503 (``fail_next``), a lease renewal that hangs
(``delay_next``), a watch dropped or compacted mid-stream (``drop_watches``, ``compact``), a
kubelet that finishes a deletion at a chosen moment (``kubelet_paused``), and a crash after
exactly the k-th write (tests/adapter/test_e2e.py, test_faults.py). What the real server
showed that this double did not (an event name it refuses, a permission it checks on a status
write, claims the resourceclaim controller makes) is listed in docs/control-plane.md.

It speaks the REST and watch protocol of kube-apiserver for the resources the adapter uses,
so the official ``kubernetes`` client works against it unmodified::

    with ApiServerDouble() as server:          # or server.start() ... server.stop()
        server.put(node("n0").build())         # direct store access, no HTTP
        api = client.ApiClient(client.Configuration(host=server.url))
        client.CoreV1Api(api).list_node()
        api.close()

What it models, as upstream does:

- one global, increasing resourceVersion; lists carry it; watches (``?watch=1``) stream chunked
  JSON lines of every change after ``resourceVersion`` then live changes, BOOKMARKs when asked,
  end cleanly at ``timeoutSeconds``, and answer an ERROR event with a 410 ``Expired`` Status when
  the resourceVersion is older than the retained history (``compact()`` forgets it);
- create (uid, creationTimestamp, generateName, 409 AlreadyExists), update with optimistic
  concurrency (409 Conflict on a stale resourceVersion), merge / strategic-merge / JSON patches,
  ``/status`` subresources (the main resource never changes status, ``/status`` only does);
- pods: ``binding`` (409 when bound already), ``eviction`` (PDBs, 429, DisruptionTarget condition,
  graceful deletion), graceful DELETE finished by a kubelet loop that also starts bound pods;
- errors are ``Status`` objects with the HTTP code.

Test controls: ``put``/``get``/``list``/``delete``/``modify`` (store access that emits watch
events), ``drop_watches``, ``compact``, ``calls``/``requests``, ``fail_next``, ``delay_next``,
``kubelet_paused``, ``grace_scale``, ``register`` (a custom resource), ``wait_until``.

What it checks: the capacity invariant (tests/capacity.py), on every change a mutating request
(a binding, an eviction, a create, update, patch or delete) makes, inside the lock the change
is made under, so no moment is missed: a node whose bound pods (terminating ones included,
as the kubelet holds their room) request more than its allocatable is recorded in
``capacity_violations``. The adapter tests' fixture fails any test that leaves one there.

Every response but a watch stream carries ``Connection: close``: each request is its own TCP
connection, so no client socket is left open in a pool when a test forgets to close its
ApiClient (the client's Watch closes its stream's connection itself when it ends).
"""

from __future__ import annotations

import base64
import copy
import json
import random
import re
import select
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from tests.capacity import Overcommit, overcommitted

Obj = dict[str, Any]

__all__ = ["ApiError", "ApiServerDouble", "Call", "Request", "Resource", "api_server"]


# ---- resources -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Resource:
    group: str
    versions: tuple[str, ...]  # served versions; the first is the preferred one
    plural: str
    kind: str
    namespaced: bool = True
    subresources: frozenset[str] = frozenset()
    builtin: bool = True  # False: served like a CRD (no strategic merge, list items keep kind)
    storage: str = ""  # resources sharing storage (core and events.k8s.io Events) name it
    short: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return self.storage or f"{self.group}/{self.plural}"

    @property
    def qualified(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def api_version(self, version: str | None = None) -> str:
        v = version or self.versions[0]
        return f"{self.group}/{v}" if self.group else v


def _r(group: str, versions: str, plural: str, kind: str, namespaced: bool = True, sub: str = "",
       storage: str = "", short: str = "") -> Resource:
    return Resource(group, tuple(versions.split()), plural, kind, namespaced, frozenset(sub.split()),
                    storage=storage, short=tuple(short.split()))


BUILTIN: tuple[Resource, ...] = (
    _r("", "v1", "namespaces", "Namespace", False, "status", short="ns"),
    _r("", "v1", "nodes", "Node", False, "status", short="no"),
    _r("", "v1", "pods", "Pod", True, "status binding eviction", short="po"),
    _r("", "v1", "events", "Event", True, storage="events", short="ev"),
    _r("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, "status", short="pdb"),
    _r("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, short="pc"),
    _r("scheduling.k8s.io", "v1beta1 v1alpha3", "podgroups", "PodGroup", True, "status"),
    _r("scheduling.k8s.io", "v1beta1 v1alpha3", "workloads", "Workload", True),
    _r("scheduling.k8s.io", "v1alpha3", "compositepodgroups", "CompositePodGroup", True, "status"),
    _r("resource.k8s.io", "v1", "resourceslices", "ResourceSlice", False),
    _r("resource.k8s.io", "v1", "deviceclasses", "DeviceClass", False),
    _r("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", True, "status"),
    _r("resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate", True),
    _r("coordination.k8s.io", "v1", "leases", "Lease", True),
    _r("events.k8s.io", "v1", "events", "Event", True, storage="events"),
)

# events.k8s.io/v1 Event field <-> core v1 Event field (one storage, two views, as upstream)
_EVENT_FIELDS = {"note": "message", "regarding": "involvedObject", "reportingController": "reportingComponent",
                 "deprecatedSource": "source", "deprecatedFirstTimestamp": "firstTimestamp",
                 "deprecatedLastTimestamp": "lastTimestamp", "deprecatedCount": "count"}

# strategic merge patch: list fields merged by a key (the patchMergeKey / listMapKey upstream)
_MERGE_KEYS = {
    "conditions": "type", "containers": "name", "initContainers": "name", "ephemeralContainers": "name",
    "volumes": "name", "volumeMounts": "mountPath", "env": "name", "ports": "containerPort",
    "resourceClaims": "name", "resourceClaimStatuses": "name", "ownerReferences": "uid",
    "reservedFor": "uid", "imagePullSecrets": "name", "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey", "readinessGates": "conditionType",
}
_MERGE_PRIMITIVES = {"finalizers"}  # primitive lists with patchStrategy merge: a union


# ---- errors --------------------------------------------------------------------------------------

_REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed",
            406: "NotAcceptable", 409: "Conflict", 410: "Gone", 415: "UnsupportedMediaType", 422: "Invalid",
            429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable", 504: "Timeout"}


class ApiError(Exception):
    """An error answer: a ``Status`` with ``code`` as the HTTP status."""

    def __init__(self, code: int, message: str, reason: str | None = None, details: Obj | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or _REASONS.get(code, "Unknown")
        self.details = details
        self.headers = headers or {}

    def status(self) -> Obj:
        out: Obj = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": self.message, "reason": self.reason, "code": self.code}
        if self.details is not None:
            out["details"] = self.details
        return out


def _details(res: Resource, name: str, **more: Any) -> Obj:
    d: Obj = {"name": name, "kind": res.plural}
    if res.group:
        d["group"] = res.group
    d.update(more)
    return d


def _not_found(res: Resource, name: str) -> ApiError:
    return ApiError(404, f'{res.qualified} "{name}" not found', "NotFound", _details(res, name))


def _conflict(res: Resource, name: str, why: str, qualified: str | None = None) -> ApiError:
    return ApiError(409, f'Operation cannot be fulfilled on {qualified or res.qualified} "{name}": {why}',
                    "Conflict", _details(res, name))


_STALE = "the object has been modified; please apply your changes to the latest version and try again"


def _success(code: int) -> Obj:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code}


# ---- small helpers -------------------------------------------------------------------------------


def _now(delta: float = 0.0) -> str:
    return (datetime.now(UTC) + timedelta(seconds=delta)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _event_view(obj: Obj, to_group: str) -> Obj:
    """An Event in the field names of ``to_group`` ("" core v1, "events.k8s.io")."""
    names = _EVENT_FIELDS if to_group == "" else {v: k for k, v in _EVENT_FIELDS.items()}
    return {names.get(k, k): v for k, v in obj.items()}


def _group_of(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version


def _lookup(obj: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def _set_condition(conditions: list[Obj], cond: Obj) -> None:
    """As podutil.UpdatePodCondition: the condition replaced whole (a reason and message the
    old one had go), its lastTransitionTime kept while the status stays."""
    for i, c in enumerate(conditions):
        if c.get("type") == cond["type"]:
            if c.get("status") == cond.get("status") and "lastTransitionTime" in c:
                cond = {**cond, "lastTransitionTime": c["lastTransitionTime"]}
            conditions[i] = cond
            return
    conditions.append(cond)


def _pod_ready(pod: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in pod.get("status", {}).get("conditions") or [])


# ---- selectors -----------------------------------------------------------------------------------

_REQ = re.compile(r"^\s*(?P<neg>!)?\s*(?P<key>[A-Za-z0-9_./-]+)\s*"
                  r"(?:(?P<op>==|=|!=|>|<)\s*(?P<val>[A-Za-z0-9_.-]*)|\s(?P<setop>in|notin)\s*\((?P<set>[^)]*)\))?\s*$")


def parse_label_selector(text: str) -> Callable[[dict[str, str]], bool]:
    """``a=b,c!=d,e in (x,y),f notin (z),g,!h`` (the apiserver's labelSelector syntax)."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    checks: list[Callable[[dict[str, str]], bool]] = []
    for part in (p for p in parts if p.strip()):
        m = _REQ.match(part)
        if not m:
            raise ApiError(400, f"unable to parse requirement: {part!r}", "BadRequest")
        key, op, val, setop = m["key"], m["op"], m["val"], m["setop"]
        if m["neg"]:
            checks.append(lambda ls, k=key: k not in ls)
        elif setop:
            values = {v.strip() for v in m["set"].split(",") if v.strip()}
            if setop == "in":
                checks.append(lambda ls, k=key, vs=values: ls.get(k) in vs)
            else:
                checks.append(lambda ls, k=key, vs=values: ls.get(k) not in vs)
        elif op in ("=", "=="):
            checks.append(lambda ls, k=key, v=val: ls.get(k) == v)
        elif op == "!=":
            checks.append(lambda ls, k=key, v=val: ls.get(k) != v)
        elif op in (">", "<"):
            def cmp(ls: dict[str, str], k: str = key, v: str = val, gt: bool = op == ">") -> bool:
                try:
                    return (int(ls[k]) > int(v)) if gt else (int(ls[k]) < int(v))
                except (KeyError, ValueError):
                    return False
            checks.append(cmp)
        else:
            checks.append(lambda ls, k=key: k in ls)
    return lambda labels: all(c(labels) for c in checks)


def parse_field_selector(text: str) -> Callable[[Obj], bool]:
    """``spec.nodeName=n0,metadata.name!=x``: any dotted field path, = / == / !=."""
    checks: list[Callable[[Obj], bool]] = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        m = re.match(r"^([A-Za-z0-9_.]+)\s*(==|=|!=)\s*(.*)$", part)
        if not m:
            raise ApiError(400, f"invalid selector: {part!r}", "BadRequest")
        path, op, val = m.groups()

        def check(o: Obj, p: str = path, v: str = val, neg: bool = op == "!=") -> bool:
            got = _lookup(o, p)
            got = "" if got is None else (str(got).lower() if isinstance(got, bool) else str(got))
            return (got != v) if neg else (got == v)
        checks.append(check)
    return lambda o: all(c(o) for c in checks)


def selector_matches(selector: Obj | None, labels: dict[str, str]) -> bool:
    """A metav1.LabelSelector: nil matches nothing, {} everything (policy/v1 PDB semantics)."""
    if selector is None:
        return False
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in selector.get("matchExpressions") or []:
        k, op, vals = e.get("key"), e.get("operator"), set(e.get("values") or [])
        if op == "In" and labels.get(k) not in vals:
            return False
        if op == "NotIn" and k in labels and labels[k] in vals:
            return False
        if op == "Exists" and k not in labels:
            return False
        if op == "DoesNotExist" and k in labels:
            return False
    return True


# ---- patches -------------------------------------------------------------------------------------


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: maps merge, null deletes, anything else (lists too) replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def strategic_merge_patch(target: Any, patch: Any, field_name: str = "") -> Any:
    """Strategic merge patch: merge patch, but lists in ``_MERGE_KEYS`` merge by their key
    (``status.conditions`` by ``type``), ``finalizers`` is a union, and the ``$patch``,
    ``$deleteFromPrimitiveList/``, ``$setElementOrder/`` and ``$retainKeys`` directives work."""
    if isinstance(patch, dict):
        directive = patch.get("$patch")
        if directive == "delete":
            return None
        body = {k: v for k, v in patch.items() if k != "$patch"}
        if directive == "replace":
            return {k: v for k, v in body.items() if not k.startswith("$")}
        out = dict(target) if isinstance(target, dict) else {}
        for k, v in body.items():
            if k.startswith("$setElementOrder/") or k == "$retainKeys":
                continue
            if k.startswith("$deleteFromPrimitiveList/"):
                name = k.split("/", 1)[1]
                out[name] = [x for x in out.get(name) or [] if x not in v]
                continue
            if v is None:
                out.pop(k, None)
                continue
            merged = strategic_merge_patch(out.get(k), v, k)
            if merged is None and isinstance(v, dict) and v.get("$patch") == "delete":
                out.pop(k, None)
            else:
                out[k] = merged
        if "$retainKeys" in body:
            keep = set(body["$retainKeys"])
            out = {k: v for k, v in out.items() if k in keep}
        return out
    if isinstance(patch, list):
        if any(isinstance(x, dict) and x.get("$patch") == "replace" for x in patch):
            return [x for x in patch if not (isinstance(x, dict) and x.get("$patch") == "replace")]
        if field_name in _MERGE_PRIMITIVES and isinstance(target, list):
            return list(target) + [x for x in patch if x not in target]
        key = _MERGE_KEYS.get(field_name)
        if key is None or not isinstance(target, list):
            return [x for x in copy.deepcopy(patch) if not (isinstance(x, dict) and x.get("$patch") == "delete")]
        out_list = list(target)
        for item in patch:
            if not isinstance(item, dict) or key not in item:
                out_list.append(copy.deepcopy(item))
                continue
            at = next((i for i, x in enumerate(out_list) if isinstance(x, dict) and x.get(key) == item[key]), None)
            if item.get("$patch") == "delete":
                if at is not None:
                    out_list.pop(at)
            elif at is None:
                out_list.append(strategic_merge_patch({}, item))
            else:
                out_list[at] = strategic_merge_patch(out_list[at], item)
        return out_list
    return copy.deepcopy(patch)


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise ApiError(422, f"invalid JSON pointer {path!r}", "Invalid")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def json_patch(doc: Any, ops: list[Obj]) -> Any:
    """RFC 6902: add, remove, replace, move, copy, test."""
    doc = copy.deepcopy(doc)

    def parent(path: str) -> tuple[Any, str]:
        parts = _pointer(path)
        if not parts:
            raise ApiError(422, "the root cannot be the target", "Invalid")
        node = doc
        for p in parts[:-1]:
            node = node[int(p)] if isinstance(node, list) else node[p]
        return node, parts[-1]

    def get(path: str) -> Any:
        node = doc
        for p in _pointer(path):
            node = node[int(p)] if isinstance(node, list) else node[p]
        return node

    def add(path: str, value: Any) -> None:
        node, last = parent(path)
        if isinstance(node, list):
            node.insert(len(node) if last == "-" else int(last), value)
        else:
            node[last] = value

    def remove(path: str) -> Any:
        node, last = parent(path)
        return node.pop(int(last)) if isinstance(node, list) else node.pop(last)

    for op in ops:
        kind, path = op.get("op"), op.get("path", "")
        try:
            if kind == "add":
                add(path, copy.deepcopy(op["value"]))
            elif kind == "remove":
                remove(path)
            elif kind == "replace":
                remove(path)
                add(path, copy.deepcopy(op["value"]))
            elif kind == "move":
                add(path, remove(op["from"]))
            elif kind == "copy":
                add(path, copy.deepcopy(get(op["from"])))
            elif kind == "test":
                if get(path) != op.get("value"):
                    raise ApiError(422, f"the test at {path} failed", "Invalid")
            else:
                raise ApiError(400, f"unknown JSON patch operation {kind!r}", "BadRequest")
        except (KeyError, IndexError, ValueError, TypeError) as exc:
            raise ApiError(422, f"the JSON patch {op} cannot be applied: {exc!r}", "Invalid") from exc
    return doc


# ---- records -------------------------------------------------------------------------------------


class Call(tuple):
    """(verb, path, code): the HTTP method, the path without the query, the answered status."""

    __slots__ = ()

    def __new__(cls, verb: str, path: str, code: int) -> Call:
        return super().__new__(cls, (verb, path, code))


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str
    query: dict[str, str]
    verb: str  # the Kubernetes verb: list, watch, get, create, update, patch, delete, deletecollection
    code: int
    body: Any = None
    content_type: str = ""
    at: float = 0.0  # time.monotonic() when it was answered


@dataclass(slots=True)
class _Rule:
    verb: str
    path: re.Pattern[str]
    times: int
    code: int = 0
    message: str = ""
    reason: str | None = None
    delay: float = 0.0

    def matches(self, method: str, verb: str, path: str) -> bool:
        return (self.verb in ("*", method.upper(), verb.lower())) and bool(self.path.search(path))


@dataclass(slots=True)
class _Change:
    rv: int
    key: str  # Resource.key
    type: str  # ADDED, MODIFIED, DELETED
    old: Obj | None
    new: Obj | None


@dataclass(eq=False)
class _Watch:
    res: Resource
    version: str
    namespace: str | None
    labels: Callable[[dict[str, str]], bool] | None
    fields: Callable[[Obj], bool] | None
    bookmarks: bool
    queue: deque[Obj] = field(default_factory=deque)
    wake: threading.Event = field(default_factory=threading.Event)
    closed: threading.Event = field(default_factory=threading.Event)
    end: str = ""  # "", "graceful" or "abrupt"

    def matches(self, obj: Obj | None) -> bool:
        if obj is None:
            return False
        meta = obj.get("metadata", {})
        if self.namespace is not None and meta.get("namespace") != self.namespace:
            return False
        if self.labels is not None and not self.labels(meta.get("labels") or {}):
            return False
        return self.fields is None or self.fields(obj)

    def translate(self, change: _Change) -> tuple[str, Obj] | None:
        was, now = self.matches(change.old), self.matches(change.new)
        if change.type == "DELETED":
            return ("DELETED", change.old) if was else None  # type: ignore[return-value]
        if now and (was or change.type == "ADDED"):
            return change.type, change.new  # type: ignore[return-value]
        if now:
            return "ADDED", change.new  # type: ignore[return-value]
        if was:  # it stopped matching the selector: gone from this watch's view
            return "DELETED", change.new  # type: ignore[return-value]
        return None


# ---- the server ----------------------------------------------------------------------------------


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # listen backlog: a burst of parallel requests is queued, not refused

    def __init__(self, addr: tuple[str, int], handler: type, double: ApiServerDouble) -> None:
        self.double = double
        self.handler_threads: set[threading.Thread] = set()
        self.connections: set[socket.socket] = set()
        self.track = threading.Lock()
        super().__init__(addr, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        t = threading.Thread(target=self._serve, args=(request, client_address), daemon=True,
                             name="apiserver-double-request")
        with self.track:
            self.handler_threads.add(t)
            self.connections.add(request)
        t.start()

    def _serve(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)
            with self.track:
                self.handler_threads.discard(threading.current_thread())
                self.connections.discard(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that went away mid-answer is not the test's failure


class ApiServerDouble:
    """The double. Keyword arguments:

    - ``grace_scale`` (0.01): a pod's deletion grace of g seconds lasts g × grace_scale seconds;
    - ``kubelet`` (True) / ``kubelet_period`` (0.02 s): the kubelet loop (``kubelet_paused`` pauses it);
    - ``bookmark_interval`` (1.0 s): how often a watch with allowWatchBookmarks gets a BOOKMARK;
    - ``history_limit`` (100 000): changes kept for watches; older resourceVersions get 410;
    - ``watch_timeout`` (1800 s): a watch's length when the request gives no timeoutSeconds;
    - ``binding_response`` ("status"): what POST pods/binding answers: "status" (upstream: a
      ``Status`` Success, code 201) or "binding" (the Binding back, which the Python client can
      deserialize as V1Binding);
    - ``unserved``: resources answered 404, by plural, ``plural.group`` or ``group/version``;
    - ``port`` (0: any free one).
    """

    def __init__(self, *, grace_scale: float = 0.01, kubelet: bool = True, kubelet_period: float = 0.02,
                 bookmark_interval: float = 1.0, history_limit: int = 100_000, watch_timeout: float = 1800.0,
                 binding_response: str = "status", unserved: Iterable[str] = (), port: int = 0) -> None:
        if binding_response not in ("status", "binding"):
            raise ValueError("binding_response is 'status' or 'binding'")
        self.grace_scale = grace_scale
        self.kubelet_paused = False
        self.kubelet_period = kubelet_period
        self.bookmark_interval = bookmark_interval
        self.history_limit = history_limit
        self.watch_timeout = watch_timeout
        self.binding_response = binding_response
        self.unserved = set(unserved)
        self._kubelet_enabled = kubelet
        self._port = port
        self._lock = threading.RLock()
        self._rv = 0
        self._floor = 0  # watches from a resourceVersion below this get 410
        self._resources: list[Resource] = list(BUILTIN)
        self._objects: dict[str, dict[tuple[str, str], Obj]] = {}
        self._history: deque[_Change] = deque()
        self._watches: set[_Watch] = set()
        self._deadlines: dict[tuple[str, str, str], float] = {}  # (ns, name, uid) -> monotonic
        self._kubelet_work: set[tuple[str, str]] = set()  # pods the kubelet loop has to visit: (ns, name)
        self._rules: list[_Rule] = []
        self._calls: list[Call] = []
        self._requests: list[Request] = []
        self._httpd: _HTTPServer | None = None
        self._serve_thread: threading.Thread | None = None
        self._kubelet_thread: threading.Thread | None = None
        self._stopping = threading.Event()
        # the capacity invariant (tests/capacity.py), checked on every change a mutating request
        # makes; the test's own store writes (put, modify, delete) and the kubelet loop's are not
        self.capacity_violations: list[Overcommit] = []
        self._serving = threading.local()  # .request: "METHOD path" while a handler thread acts on one

    # ---- lifecycle -----------------------------------------------------------------------------
    def start(self) -> ApiServerDouble:
        if self._httpd is not None:
            return self
        self._stopping.clear()
        self._httpd = _HTTPServer(("127.0.0.1", self._port), _Handler, self)
        self._serve_thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                              daemon=True, name="apiserver-double")
        self._serve_thread.start()
        if self._kubelet_enabled:
            self._kubelet_thread = threading.Thread(target=self._kubelet, daemon=True, name="apiserver-double-kubelet")
            self._kubelet_thread.start()
        return self

    def stop(self) -> None:
        """End every watch, stop serving, close every socket, join every thread."""
        httpd = self._httpd
        if httpd is None:
            return
        self._stopping.set()
        self._end_watches("graceful")
        httpd.shutdown()
        httpd.server_close()
        with httpd.track:
            conns, threads = list(httpd.connections), list(httpd.handler_threads)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for t in threads:
            t.join(5)
        if self._serve_thread is not None:
            self._serve_thread.join(5)
        if self._kubelet_thread is not None:
            self._kubelet_thread.join(5)
        self._httpd = self._serve_thread = self._kubelet_thread = None

    def __enter__(self) -> ApiServerDouble:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "start() the server first"
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def api_client(self) -> Any:
        """A ``kubernetes.client.ApiClient`` for this server (close it)."""
        from kubernetes import client

        return client.ApiClient(client.Configuration(host=self.url))

    # ---- test controls: the store --------------------------------------------------------------
    @property
    def resource_version(self) -> str:
        with self._lock:
            return str(self._rv)

    def register(self, group: str, versions: str | Iterable[str], plural: str, kind: str, *,
                 namespaced: bool = True, status: bool = True) -> Resource:
        """Serve a custom resource (as a CRD: merge and JSON patches, no strategic merge)."""
        vs = tuple(versions.split()) if isinstance(versions, str) else tuple(versions)
        res = Resource(group, vs, plural, kind, namespaced, frozenset({"status"} if status else ()), builtin=False)
        with self._lock:
            self._resources = [r for r in self._resources if (r.group, r.plural) != (group, plural)] + [res]
        return res

    def put(self, obj: Any) -> Obj:
        """Create or replace ``obj`` (a dict or a builder) as given, bypassing HTTP and validation;
        the server fills uid, creationTimestamp (kept on a replace), generation, resourceVersion,
        and a namespaced object without a namespace goes to "default". Emits ADDED or MODIFIED."""
        if hasattr(obj, "build"):
            obj = obj.build()
        obj = copy.deepcopy(obj)
        group, _ = _group_of(obj.get("apiVersion", ""))
        res = self._resource_for(group, obj.get("kind", ""))
        meta = obj.setdefault("metadata", {})
        if not meta.get("name"):
            raise ValueError("put: metadata.name is required")
        if res.namespaced:
            meta.setdefault("namespace", "default")
        else:
            meta.pop("namespace", None)
        with self._lock:
            old = self._store(res).get((meta.get("namespace", ""), meta["name"]))
            if old is None:
                return copy.deepcopy(self._insert(res, obj))
            meta.setdefault("uid", old["metadata"].get("uid"))
            meta.setdefault("creationTimestamp", old["metadata"].get("creationTimestamp"))
            meta.setdefault("generation", old["metadata"].get("generation", 1))
            return copy.deepcopy(self._replace(res, old, obj))

    def get(self, resource: str, namespace: str | None = None, name: str | None = None) -> Obj | None:
        """The stored object or None. Cluster-scoped: ``get("nodes", "n0")``; namespaced:
        ``get("pods", "default", "p")``. ``resource`` is a plural, a Kind, a short name or
        ``plural.group``."""
        for res in self._resolve(resource):
            ns, nm = ("", name or namespace) if not res.namespaced else (namespace or "", name)
            if nm is None:
                raise ValueError(f"get {resource}: a namespaced resource needs namespace and name")
            with self._lock:
                obj = self._store(res).get((ns, nm))
                if obj is not None:
                    return copy.deepcopy(obj)
        return None

    def list(self, resource: str, namespace: str | None = None, *, label_selector: str | None = None) -> list[Obj]:
        """Every stored object of ``resource`` (optionally in one namespace), by namespace/name."""
        labels = parse_label_selector(label_selector) if label_selector else None
        out: dict[tuple[str, str, str], Obj] = {}
        for res in self._resolve(resource):
            with self._lock:
                for (ns, nm), obj in self._store(res).items():
                    if namespace is not None and ns != namespace:
                        continue
                    if labels is not None and not labels(obj["metadata"].get("labels") or {}):
                        continue
                    out[(res.key, ns, nm)] = copy.deepcopy(obj)
        return [out[k] for k in sorted(out)]

    def delete(self, resource: str, namespace: str | None = None, name: str | None = None) -> bool:
        """Remove at once (no grace, no finalizers); False when it was not there. Emits DELETED."""
        for res in self._resolve(resource):
            ns, nm = ("", name or namespace) if not res.namespaced else (namespace or "", name)
            with self._lock:
                obj = self._store(res).get((ns, nm or ""))
                if obj is not None:
                    self._remove(res, obj)
                    return True
        return False

    def modify(self, resource: str, namespace: str | None, name: str | None, fn: Callable[[Obj], Any]) -> Obj:
        """Change a stored object in place under the lock: ``fn(obj)`` mutates (or returns) it."""
        for res in self._resolve(resource):
            ns, nm = ("", name or namespace) if not res.namespaced else (namespace or "", name)
            with self._lock:
                old = self._store(res).get((ns, nm or ""))
                if old is None:
                    continue
                new = copy.deepcopy(old)
                new = fn(new) or new
                return copy.deepcopy(self._replace(res, old, new))
        raise KeyError(f"{resource} {namespace}/{name} not found")

    def compact(self) -> None:
        """Forget the watch history: a watch from any resourceVersion before now gets 410 Expired."""
        with self._lock:
            self._history.clear()
            self._floor = self._rv

    def drop_watches(self, *, abrupt: bool = True, timeout: float = 5.0) -> int:
        """End every open watch stream now: ``abrupt`` closes the connection mid-stream (the
        client's read fails: urllib3 ProtocolError), else the chunked stream ends cleanly.
        Returns how many were open; they are closed when it returns."""
        return self._end_watches("abrupt" if abrupt else "graceful", timeout)

    def open_watches(self, resource: str | None = None) -> int:
        with self._lock:
            if resource is None:
                return len(self._watches)
            keys = {r.key for r in self._resolve(resource)}
            return sum(1 for w in self._watches if w.res.key in keys)

    def wait_until(self, predicate: Callable[[], Any], timeout: float = 10.0, interval: float = 0.01) -> bool:
        deadline = time.monotonic() + timeout
        while True:
            if predicate():
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(interval)

    # ---- test controls: requests ---------------------------------------------------------------
    @property
    def calls(self) -> list[Call]:
        """A copy of every answered request as (HTTP method, path without query, status code)."""
        with self._lock:
            return list(self._calls)

    @property
    def requests(self) -> list[Request]:
        """A copy of every answered request with its query, Kubernetes verb and body."""
        with self._lock:
            return list(self._requests)

    def reset_calls(self) -> None:
        with self._lock:
            self._calls.clear()
            self._requests.clear()

    def fail_next(self, verb: str, path_regex: str, code: int, times: int = 1, *, message: str | None = None,
                  reason: str | None = None) -> None:
        """The next ``times`` requests matching answer ``code`` with a Status, doing nothing.
        ``verb``: an HTTP method ("POST"), a Kubernetes verb ("watch", "list", "create", ...) or
        "*"; ``path_regex`` is searched in the path (no query). A 410 on a watch comes as the
        ERROR event, as upstream sends it."""
        with self._lock:
            self._rules.append(_Rule(verb.lower() if verb.islower() else verb.upper(), re.compile(path_regex),
                                     times, code, message or f"injected failure ({code})", reason))

    def clear_faults(self) -> None:
        """Drop every failure and delay still to come (``fail_next``, ``delay_next``)."""
        with self._lock:
            self._rules.clear()

    def delay_next(self, verb: str, path_regex: str, seconds: float, times: int = 1) -> None:
        """The next ``times`` matching requests wait ``seconds`` before being handled."""
        with self._lock:
            self._rules.append(_Rule(verb.lower() if verb.islower() else verb.upper(), re.compile(path_regex),
                                     times, delay=seconds))

    # ---- internals: the store (callers hold the lock) ------------------------------------------
    def _resolve(self, name: str) -> list[Resource]:
        n = name.lower()
        with self._lock:
            found = [r for r in self._resources
                     if n in (r.plural, r.kind.lower(), r.qualified, f"{r.kind.lower()}.{r.group}", *r.short)]
        if not found:
            raise KeyError(f"unknown resource {name!r}")
        seen, out = set(), []
        for r in found:
            if r.key not in seen:
                seen.add(r.key)
                out.append(r)
        return out

    def _resource_for(self, group: str, kind: str) -> Resource:
        with self._lock:
            for r in self._resources:
                if r.group == group and r.kind == kind:
                    return r
        raise KeyError(f"no resource of kind {kind!r} in group {group!r}")

    def _store(self, res: Resource) -> dict[tuple[str, str], Obj]:
        return self._objects.setdefault(res.key, {})

    def _bump(self) -> int:
        self._rv += 1
        return self._rv

    def _emit(self, res: Resource, etype: str, old: Obj | None, new: Obj | None, rv: int) -> None:
        change = _Change(rv, res.key, etype, copy.deepcopy(old), copy.deepcopy(new))
        self._history.append(change)
        while len(self._history) > self.history_limit:
            self._floor = self._history.popleft().rv
        for w in self._watches:
            if w.res.key == res.key and not w.end:
                ev = w.translate(change)
                if ev is not None:
                    w.queue.append({"type": ev[0], "object": self._render(ev[1], w.res, w.version)})
                    w.wake.set()

    def _check_capacity(self, res: Resource, new: Obj | None) -> None:
        """After a change a request made: the node it touches (the pod's, or the node itself) holds
        no more than its allocatable. Only a pod bound somewhere or a node can raise the sum."""
        cause = getattr(self._serving, "request", None)
        if cause is None or new is None or res.group != "" or res.kind not in ("Pod", "Node"):
            return
        name = new["metadata"]["name"] if res.kind == "Node" else (new.get("spec") or {}).get("nodeName")
        if not name:
            return
        node = self._store(self._resource_for("", "Node")).get(("", name))
        if node is not None:
            self.capacity_violations += overcommitted(node, self._store(self._pods()).values(), cause)

    def _insert(self, res: Resource, obj: Obj) -> Obj:
        meta = obj["metadata"]
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", _now())
        meta.setdefault("generation", 1)
        obj.setdefault("apiVersion", res.api_version())
        obj.setdefault("kind", res.kind)
        rv = self._bump()
        meta["resourceVersion"] = str(rv)
        self._store(res)[(meta.get("namespace", ""), meta["name"])] = obj
        self._track_work(res, obj)
        self._emit(res, "ADDED", None, obj, rv)
        self._check_capacity(res, obj)
        return obj

    def _replace(self, res: Resource, old: Obj, new: Obj) -> Obj:
        if old.get("spec") != new.get("spec") and "generation" in old["metadata"]:
            new["metadata"]["generation"] = int(old["metadata"]["generation"]) + 1
        rv = self._bump()
        new["metadata"]["resourceVersion"] = str(rv)
        meta = new["metadata"]
        self._store(res)[(meta.get("namespace", ""), meta["name"])] = new
        self._track_work(res, new)
        self._emit(res, "MODIFIED", old, new, rv)
        self._check_capacity(res, new)
        return new

    def _remove(self, res: Resource, obj: Obj) -> Obj:
        meta = obj["metadata"]
        self._store(res).pop((meta.get("namespace", ""), meta["name"]), None)
        if res.kind == "Pod":
            self._kubelet_work.discard((meta.get("namespace", ""), meta["name"]))
        self._deadlines.pop((meta.get("namespace", ""), meta["name"], meta.get("uid", "")), None)
        rv = self._bump()
        gone = copy.deepcopy(obj)
        gone["metadata"]["resourceVersion"] = str(rv)
        self._emit(res, "DELETED", gone, None, rv)
        return gone

    def _render(self, obj: Obj, res: Resource, version: str) -> Obj:
        """The stored object as ``res`` in ``version`` serves it (Events convert between groups)."""
        out = copy.deepcopy(obj)
        group, _ = _group_of(out.get("apiVersion", ""))
        if res.plural == "events" and group != res.group:
            out = _event_view(out, res.group)
        out["apiVersion"] = res.api_version(version)
        out["kind"] = res.kind
        return out

    def _end_watches(self, how: str, timeout: float = 5.0) -> int:
        with self._lock:
            watches = list(self._watches)
            for w in watches:
                w.end = how
                w.wake.set()
        deadline = time.monotonic() + timeout
        for w in watches:
            w.closed.wait(max(0.0, deadline - time.monotonic()))
        return len(watches)

    # ---- internals: pods -----------------------------------------------------------------------
    def _pods(self) -> Resource:
        return self._resource_for("", "Pod")

    def _delete_pod(self, pod: Obj, grace: int | None, dry: bool = False) -> Obj:
        """Graceful pod deletion as upstream's pod strategy: unscheduled or terminal pods go at
        once; others get deletionTimestamp = now + grace and the kubelet loop removes them."""
        res = self._pods()
        spec, meta = pod.get("spec", {}), pod["metadata"]
        period = grace if grace is not None else int(spec.get("terminationGracePeriodSeconds", 30))
        if not spec.get("nodeName") or pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
            period = 0
        if period < 0:
            period = 1
        if dry:
            return copy.deepcopy(pod)
        key = (meta.get("namespace", ""), meta["name"], meta.get("uid", ""))
        if meta.get("deletionTimestamp"):
            current = int(meta.get("deletionGracePeriodSeconds", 30))
            if period >= current:
                return copy.deepcopy(pod)  # deleting already: only a shorter grace changes anything
        if period == 0 and not meta.get("finalizers"):
            return self._remove(res, pod)
        new = copy.deepcopy(pod)
        new["metadata"]["deletionTimestamp"] = _now(period)
        new["metadata"]["deletionGracePeriodSeconds"] = period
        self._deadlines[key] = time.monotonic() + period * self.grace_scale
        return self._replace(res, pod, new)

    def _track_work(self, res: Resource, obj: Obj) -> None:
        """Keep ``_kubelet_work`` current on every pod write: a pod is there while it is
        terminating or bound and not yet started, so a kubelet tick visits only those."""
        if res.kind != "Pod" or res.group != "":
            return
        meta = obj["metadata"]
        key = (meta.get("namespace", ""), meta["name"])
        bound_pending = obj.get("spec", {}).get("nodeName") and (obj.get("status") or {}).get("phase",
                                                                                           "Pending") == "Pending"
        if meta.get("deletionTimestamp") or bound_pending:
            self._kubelet_work.add(key)
        else:
            self._kubelet_work.discard(key)

    def _kubelet(self) -> None:
        while not self._stopping.wait(self.kubelet_period):
            if self.kubelet_paused:
                continue
            try:
                self._kubelet_tick()
            except Exception:  # pragma: no cover - a bug here must not kill the loop silently
                import traceback

                traceback.print_exc()

    def _kubelet_tick(self) -> None:
        res = self._pods()
        with self._lock:
            now = time.monotonic()
            store = self._store(res)
            for work in sorted(self._kubelet_work):
                pod = store.get(work)
                if pod is None:
                    self._kubelet_work.discard(work)
                    continue
                meta = pod["metadata"]
                key = (meta.get("namespace", ""), meta["name"], meta.get("uid", ""))
                if meta.get("deletionTimestamp"):
                    if key not in self._deadlines:  # put with a deletionTimestamp: start its grace now
                        grace = int(meta.get("deletionGracePeriodSeconds", 30))
                        self._deadlines[key] = now + grace * self.grace_scale
                    if now >= self._deadlines[key] and not meta.get("finalizers"):
                        self._remove(res, pod)
                    continue
                status = pod.get("status") or {}
                if pod.get("spec", {}).get("nodeName") and status.get("phase", "Pending") == "Pending":
                    self._replace(res, pod, self._started(pod))

    @staticmethod
    def _started(pod: Obj) -> Obj:
        new = copy.deepcopy(pod)
        status = new.setdefault("status", {})
        stamp = _now()
        status["phase"] = "Running"
        status.setdefault("startTime", stamp)
        conditions = status.setdefault("conditions", [])
        for t in ("PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready", "PodScheduled"):
            _set_condition(conditions, {"type": t, "status": "True", "lastTransitionTime": stamp})
        status["containerStatuses"] = [
            {"name": c.get("name", ""), "image": c.get("image", ""), "imageID": "", "ready": True, "started": True,
             "restartCount": 0, "containerID": f"double://{uuid.uuid4().hex[:12]}",
             "state": {"running": {"startedAt": stamp}}}
            for c in new.get("spec", {}).get("containers") or []]
        return new

    # ---- internals: verbs (called by the handler; raise ApiError) ------------------------------
    def _route(self, path: str) -> tuple[Resource, str, str | None, str | None, str | None] | Obj:
        """path -> (resource, version, namespace, name, subresource), or a discovery document."""
        segs = [unquote(s) for s in path.strip("/").split("/") if s]
        if not segs or segs[0] not in ("api", "apis"):
            if segs and segs[0] in ("healthz", "livez", "readyz"):
                return {"_text": "ok"}
            if segs == ["version"]:
                return {"major": "1", "minor": "37", "gitVersion": "v1.37.0-double", "platform": "linux/amd64"}
            raise ApiError(404, "the server could not find the requested resource", "NotFound")
        if segs[0] == "api":
            if len(segs) == 1:
                return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
            group, version, rest = "", segs[1], segs[2:]
        else:
            if len(segs) == 1:
                return self._discovery_groups()
            if len(segs) == 2:
                raise ApiError(404, "the server could not find the requested resource", "NotFound")
            group, version, rest = segs[1], segs[2], segs[3:]
        served = [r for r in self._resources if r.group == group and version in r.versions
                  and not self._unserved(r, version)]
        if not served:
            raise ApiError(404, "the server could not find the requested resource", "NotFound")
        if not rest:
            return self._discovery_resources(group, version, served)
        by_plural = {r.plural: r for r in served}
        namespace = None
        if rest[0] == "namespaces" and len(rest) >= 3 and (rest[2] in by_plural or (group == "" and rest[2] == "bindings")):
            namespace, rest = rest[1], rest[2:]
        if group == "" and rest[0] == "bindings" and namespace is not None and len(rest) == 1:
            return by_plural["pods"], version, namespace, None, "bindings"
        res = by_plural.get(rest[0])
        if res is None or len(rest) > 3:
            raise ApiError(404, "the server could not find the requested resource", "NotFound")
        if namespace is not None and not res.namespaced:
            raise ApiError(404, "the server could not find the requested resource", "NotFound")
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if res.namespaced and namespace is None and name is not None:
            raise ApiError(404, "the server could not find the requested resource", "NotFound")
        if sub is not None and sub not in res.subresources:
            raise ApiError(404, "the server could not find the requested resource", "NotFound")
        return res, version, namespace, name, sub

    def _unserved(self, r: Resource, version: str) -> bool:
        return bool({r.plural, r.qualified, f"{r.group}/{version}" if r.group else version} & self.unserved)

    def _discovery_groups(self) -> Obj:
        groups: dict[str, list[str]] = {}
        for r in self._resources:
            if r.group:
                for v in r.versions:
                    if not self._unserved(r, v) and v not in groups.setdefault(r.group, []):
                        groups[r.group].append(v)
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
            {"name": g, "versions": [{"groupVersion": f"{g}/{v}", "version": v} for v in vs],
             "preferredVersion": {"groupVersion": f"{g}/{vs[0]}", "version": vs[0]}} for g, vs in groups.items() if vs]}

    def _discovery_resources(self, group: str, version: str, served: list[Resource]) -> Obj:
        verbs = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
        items: list[Obj] = []
        for r in served:
            items.append({"name": r.plural, "singularName": r.kind.lower(), "namespaced": r.namespaced,
                          "kind": r.kind, "verbs": verbs, "shortNames": list(r.short)})
            for sub in sorted(r.subresources):
                kind = {"binding": "Binding", "eviction": "Eviction"}.get(sub, r.kind)
                items.append({"name": f"{r.plural}/{sub}", "singularName": "", "namespaced": r.namespaced,
                              "kind": kind, "verbs": ["create"] if sub in ("binding", "eviction")
                              else ["get", "patch", "update"]})
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{group}/{version}" if group else version,
                "resources": items}

    def _list(self, res: Resource, version: str, namespace: str | None, q: dict[str, str]) -> Obj:
        labels = parse_label_selector(q["labelSelector"]) if q.get("labelSelector") else None
        fields = parse_field_selector(q["fieldSelector"]) if q.get("fieldSelector") else None
        with self._lock:
            rv = self._rv
            items = sorted(self._store(res).items())
        start = ""
        if q.get("continue"):
            try:
                token = json.loads(base64.urlsafe_b64decode(q["continue"].encode()))
                start = token["start"]
                rv = int(token["rv"])
            except (ValueError, KeyError) as exc:
                raise ApiError(400, "invalid continue token", "BadRequest") from exc
        out = []
        for (ns, nm), obj in items:
            if namespace is not None and ns != namespace:
                continue
            if start and f"{ns}/{nm}" <= start:
                continue
            if labels is not None and not labels(obj["metadata"].get("labels") or {}):
                continue
            if fields is not None and not fields(obj):
                continue
            out.append((f"{ns}/{nm}", obj))
        meta: Obj = {"resourceVersion": str(rv)}
        limit = int(q.get("limit") or 0)
        if limit and len(out) > limit:
            meta["continue"] = base64.urlsafe_b64encode(json.dumps({"rv": rv, "start": out[limit - 1][0]}).encode()).decode()
            meta["remainingItemCount"] = len(out) - limit
            out = out[:limit]
        rendered = []
        for _, obj in out:
            item = self._render(obj, res, version)
            if res.builtin:  # upstream lists of built-in types print items without kind/apiVersion
                item.pop("kind", None)
                item.pop("apiVersion", None)
            rendered.append(item)
        return {"kind": f"{res.kind}List", "apiVersion": res.api_version(version), "metadata": meta, "items": rendered}

    def _open_watch(self, res: Resource, version: str, namespace: str | None, name: str | None,
                    q: dict[str, str]) -> tuple[_Watch, list[Obj], Obj | None]:
        """Register a watch: (the watch, the events it starts with, a 410 Status or None)."""
        labels = parse_label_selector(q["labelSelector"]) if q.get("labelSelector") else None
        fsel = q.get("fieldSelector") or ""
        if name is not None:
            fsel = ",".join(x for x in (fsel, f"metadata.name={name}") if x)
        fields = parse_field_selector(fsel) if fsel else None
        bookmarks = q.get("allowWatchBookmarks", "").lower() in ("true", "1")
        w = _Watch(res, version, namespace, labels, fields, bookmarks)
        rv_text = q.get("resourceVersion", "")
        initial = q.get("sendInitialEvents", "").lower() in ("true", "1")
        with self._lock:
            events: list[Obj] = []
            if rv_text in ("", "0") or initial:
                for obj in (o for _, o in sorted(self._store(res).items())):
                    if w.matches(obj):
                        events.append({"type": "ADDED", "object": self._render(obj, res, version)})
                if initial and bookmarks:
                    events.append(self._bookmark(w, {"k8s.io/initial-events-end": "true"}))
            else:
                try:
                    since = int(rv_text)
                except ValueError as exc:
                    raise ApiError(400, f"invalid resource version: {rv_text!r}", "BadRequest") from exc
                if since < self._floor:
                    gone = ApiError(410, f"too old resource version: {since} ({self._floor + 1})", "Expired").status()
                    return w, [], gone
                for change in self._history:
                    if change.rv > since and change.key == res.key:
                        ev = w.translate(change)
                        if ev is not None:
                            events.append({"type": ev[0], "object": self._render(ev[1], res, version)})
            self._watches.add(w)
        return w, events, None

    def _bookmark(self, w: _Watch, annotations: dict[str, str] | None = None) -> Obj:
        meta: Obj = {"resourceVersion": str(self._rv)}
        if annotations:
            meta["annotations"] = annotations
        return {"type": "BOOKMARK", "object": {"kind": w.res.kind, "apiVersion": w.res.api_version(w.version),
                                               "metadata": meta}}

    def _close_watch(self, w: _Watch) -> None:
        with self._lock:
            self._watches.discard(w)
        w.closed.set()

    def _get(self, res: Resource, version: str, namespace: str | None, name: str) -> Obj:
        with self._lock:
            obj = self._store(res).get((namespace or "", name))
            if obj is None:
                raise _not_found(res, name)
            return self._render(obj, res, version)

    def _check_body(self, res: Resource, body: Any, namespace: str | None, name: str | None) -> Obj:
        if not isinstance(body, dict):
            raise ApiError(400, "the body of the request is not a JSON object", "BadRequest")
        meta = body.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise ApiError(400, "metadata is not an object", "BadRequest")
        if res.namespaced:
            if meta.get("namespace") and meta["namespace"] != namespace:
                raise ApiError(400, "the namespace of the provided object does not match the namespace sent on "
                                    "the request", "BadRequest")
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        if name is not None and meta.get("name") and meta["name"] != name:
            raise ApiError(400, f"the name of the object ({meta['name']}) does not match the name on the URL ({name})",
                           "BadRequest")
        if name is not None:
            meta["name"] = name
        body["apiVersion"] = body.get("apiVersion") or res.api_version()
        body["kind"] = res.kind
        return body

    def _create(self, res: Resource, version: str, namespace: str | None, body: Any, dry: bool) -> Obj:
        obj = self._check_body(res, body, namespace, None)
        meta = obj["metadata"]
        if not meta.get("name"):
            if not meta.get("generateName"):
                raise ApiError(422, f"{res.kind}.{res.group or 'core'} is invalid: metadata.name: Required value: "
                                    "name or generateName is required", "Invalid")
            meta["name"] = meta["generateName"] + "".join(random.choices("bcdfghjklmnpqrstvwxz2456789", k=5))
        for k in ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                  "generation"):
            meta.pop(k, None)
        if res.namespaced and not namespace:
            raise ApiError(400, "a namespace is required", "BadRequest")
        with self._lock:
            if (meta.get("namespace", ""), meta["name"]) in self._store(res):
                raise ApiError(409, f'{res.qualified} "{meta["name"]}" already exists', "AlreadyExists",
                               _details(res, meta["name"]))
            if res.kind == "Pod" and res.group == "":
                self._admit_pod(obj)
            elif "status" in res.subresources:
                obj.pop("status", None)  # upstream resets status on create: it is written through /status
            if dry:
                return self._render(obj, res, version)
            return self._render(self._insert(res, obj), res, version)

    def _admit_pod(self, pod: Obj) -> None:
        """Defaults and the Priority admission plugin, as a real apiserver applies them on create."""
        spec = pod.setdefault("spec", {})
        spec.setdefault("schedulerName", "default-scheduler")
        spec.setdefault("terminationGracePeriodSeconds", 30)
        spec.setdefault("restartPolicy", "Always")
        spec.setdefault("dnsPolicy", "ClusterFirst")
        spec.setdefault("enableServiceLinks", True)
        classes = self._store(self._resource_for("scheduling.k8s.io", "PriorityClass"))
        pc_name = spec.get("priorityClassName")
        if pc_name:
            pc = classes.get(("", pc_name))
            if pc is None:
                raise ApiError(403, f'pods "{pod["metadata"]["name"]}" is forbidden: no PriorityClass with name '
                                    f"{pc_name} was found", "Forbidden")
            value = int(pc.get("value", 0))
        else:
            default = next((c for c in classes.values() if c.get("globalDefault")), None)
            value = int(default.get("value", 0)) if default else 0
            if default:
                spec["priorityClassName"] = default["metadata"]["name"]
        if "priority" in spec and spec["priority"] != value:
            raise ApiError(403, f'pods "{pod["metadata"]["name"]}" is forbidden: the integer value of priority '
                                f"({spec['priority']}) must not be provided in pod spec; priority admission "
                                f"controller computed {value} from the given PriorityClass name", "Forbidden")
        spec["priority"] = value
        pod["status"] = {"phase": "Pending"}

    def _apply_update(self, res: Resource, version: str, namespace: str | None, name: str, sub: str | None,
                      make: Callable[[Obj], Obj], dry: bool, precondition: str | None = None) -> Obj:
        """The common part of PUT and PATCH: optimistic concurrency, what a (sub)resource may change."""
        with self._lock:
            old = self._store(res).get((namespace or "", name))
            if old is None:
                raise _not_found(res, name)
            new = make(self._render(old, res, version))
            new = self._check_body(res, new, namespace, name)
            given = new["metadata"].get("resourceVersion") if precondition is None else precondition
            if given and given != old["metadata"].get("resourceVersion"):
                raise _conflict(res, name, _STALE)
            if sub == "status":
                status = new.get("status")
                new = copy.deepcopy(old)
                if status is None:
                    new.pop("status", None)
                else:
                    new["status"] = status
            else:
                if "status" in res.subresources:  # the main resource never changes status
                    if "status" in old:
                        new["status"] = copy.deepcopy(old["status"])
                    else:
                        new.pop("status", None)
                meta, before = new["metadata"], old["metadata"]
                for k in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation",
                          "namespace", "name"):
                    if k in before:
                        meta[k] = before[k]
                    else:
                        meta.pop(k, None)
            stored_version = old.get("apiVersion", res.api_version())
            if res.plural == "events" and _group_of(stored_version)[0] != res.group:
                new = _event_view(new, _group_of(stored_version)[0])  # keep the stored group's field names
            new["apiVersion"] = stored_version
            new["kind"] = old.get("kind", res.kind)
            new["metadata"]["resourceVersion"] = old["metadata"].get("resourceVersion")
            if dry:
                return self._render(new, res, version)
            if new == old:
                return self._render(old, res, version)  # a no-op write changes nothing, as upstream
            stored = self._replace(res, old, new)
            if stored["metadata"].get("deletionTimestamp") and not stored["metadata"].get("finalizers") \
                    and res.kind != "Pod":
                self._remove(res, stored)
            return self._render(stored, res, version)

    def _update(self, res: Resource, version: str, namespace: str | None, name: str, sub: str | None, body: Any,
                dry: bool) -> Obj:
        if not isinstance(body, dict):
            raise ApiError(400, "the body of the request is not a JSON object", "BadRequest")
        return self._apply_update(res, version, namespace, name, sub, lambda _: copy.deepcopy(body), dry)

    def _patch(self, res: Resource, version: str, namespace: str | None, name: str, sub: str | None, body: Any,
               content_type: str, dry: bool) -> Obj:
        if content_type == "application/merge-patch+json":
            fn: Callable[[Obj], Obj] = lambda cur: merge_patch(cur, body)
        elif content_type == "application/strategic-merge-patch+json" and res.builtin:
            fn = lambda cur: strategic_merge_patch(cur, body)
        elif content_type == "application/json-patch+json":
            if not isinstance(body, list):
                raise ApiError(400, "json: cannot unmarshal object into Go value of type jsonpatch.Patch", "BadRequest")
            fn = lambda cur: json_patch(cur, body)
        else:
            accepted = "application/json-patch+json, application/merge-patch+json" + (
                ", application/strategic-merge-patch+json" if res.builtin else "")
            raise ApiError(415, f"the body of the request was in an unknown format - accepted media types include: "
                                f"{accepted}", "UnsupportedMediaType")
        precondition = None
        if isinstance(body, dict):
            precondition = (body.get("metadata") or {}).get("resourceVersion") or ""
        return self._apply_update(res, version, namespace, name, sub, fn, dry, precondition)

    def _delete(self, res: Resource, version: str, namespace: str | None, name: str, opts: Obj, dry: bool) -> Obj:
        with self._lock:
            obj = self._store(res).get((namespace or "", name))
            if obj is None:
                raise _not_found(res, name)
            pre = opts.get("preconditions") or {}
            if pre.get("uid") and pre["uid"] != obj["metadata"].get("uid"):
                raise _conflict(res, name, f"Precondition failed: UID in precondition: {pre['uid']}, UID in object "
                                           f"meta: {obj['metadata'].get('uid')}")
            if pre.get("resourceVersion") and pre["resourceVersion"] != obj["metadata"].get("resourceVersion"):
                raise _conflict(res, name, f"Precondition failed: ResourceVersion in precondition: "
                                           f"{pre['resourceVersion']}, ResourceVersion in object meta: "
                                           f"{obj['metadata'].get('resourceVersion')}")
            grace = opts.get("gracePeriodSeconds")
            if res.kind == "Pod" and res.group == "":
                return self._render(self._delete_pod(obj, None if grace is None else int(grace), dry), res, version)
            if dry:
                return _success(200) | {"details": _details(res, name, uid=obj["metadata"].get("uid"))}
            if obj["metadata"].get("finalizers"):
                if not obj["metadata"].get("deletionTimestamp"):
                    new = copy.deepcopy(obj)
                    new["metadata"]["deletionTimestamp"] = _now()
                    new["metadata"]["deletionGracePeriodSeconds"] = 0
                    obj = self._replace(res, obj, new)
                return self._render(obj, res, version)
            self._remove(res, obj)
            return _success(200) | {"details": _details(res, name, uid=obj["metadata"].get("uid"))}

    def _bind(self, namespace: str, name: str | None, body: Any, dry: bool) -> tuple[int, Obj]:
        """POST pods/NAME/binding or namespaces/NS/bindings, as upstream's BindingREST."""
        res = self._pods()
        if not isinstance(body, dict):
            raise ApiError(400, "the body of the request is not a JSON object", "BadRequest")
        meta = body.get("metadata") or {}
        pod_name = name or meta.get("name")
        if name is not None and meta.get("name") and meta["name"] != name:
            raise ApiError(400, f"the name of the object ({meta['name']}) does not match the name on the URL ({name})",
                           "BadRequest")
        target = body.get("target") or {}
        if not target.get("name"):
            raise ApiError(422, 'Binding.core "" is invalid: target.name: Required value', "Invalid")
        if target.get("kind") not in (None, "", "Node"):
            raise ApiError(422, f"Binding.core is invalid: target.kind: Invalid value: {target['kind']!r}: must be "
                                "empty or 'Node'", "Invalid")
        with self._lock:
            pod = self._store(res).get((namespace, pod_name or ""))
            if pod is None:
                raise _not_found(res, pod_name or "")
            why = None
            if meta.get("uid") and meta["uid"] != pod["metadata"].get("uid"):
                why = (f"Precondition failed: UID in precondition: {meta['uid']}, UID in object meta: "
                       f"{pod['metadata'].get('uid')}")
            elif pod["metadata"].get("deletionTimestamp"):
                why = f"pod {pod_name} is being deleted, cannot be assigned to a host"
            elif pod.get("spec", {}).get("nodeName"):
                why = f'pod {pod_name} is already assigned to node "{pod["spec"]["nodeName"]}"'
            elif pod.get("spec", {}).get("schedulingGates"):
                why = f"pod {pod_name} has non-empty .spec.schedulingGates"
            if why:
                raise _conflict(res, pod_name or "", why, qualified="pods/binding")
            if not dry:
                new = copy.deepcopy(pod)
                new.setdefault("spec", {})["nodeName"] = target["name"]
                if meta.get("annotations"):
                    new["metadata"].setdefault("annotations", {}).update(meta["annotations"])
                _set_condition(new.setdefault("status", {}).setdefault("conditions", []),
                               {"type": "PodScheduled", "status": "True", "lastTransitionTime": _now()})
                self._replace(res, pod, new)
        if self.binding_response == "binding":
            out = copy.deepcopy(body)
            out.setdefault("apiVersion", "v1")
            out["kind"] = "Binding"
            return 201, out
        return 201, _success(201)

    def _evict(self, namespace: str, name: str, body: Any, dry: bool) -> tuple[int, Obj]:
        """POST pods/NAME/eviction, as upstream's EvictionREST (pkg/registry/core/pod/storage/eviction.go)."""
        res = self._pods()
        if not isinstance(body, dict):
            raise ApiError(400, "the body of the request is not a JSON object", "BadRequest")
        if (body.get("metadata") or {}).get("name") != name:
            raise ApiError(400, "name in URL does not match name in Eviction object", "BadRequest")
        opts = body.get("deleteOptions") or {}
        dry = dry or bool(opts.get("dryRun"))
        grace = opts.get("gracePeriodSeconds")
        grace = None if grace is None else int(grace)
        with self._lock:
            pod = self._store(res).get((namespace, name))
            if pod is None:
                raise _not_found(res, name)
            phase = pod.get("status", {}).get("phase", "Pending")
            if phase in ("Succeeded", "Failed", "Pending") or pod["metadata"].get("deletionTimestamp"):
                self._evict_pod(pod, grace, dry)  # the PDB can be ignored
                return 201, _success(201)
            pdb_res = self._resource_for("policy", "PodDisruptionBudget")
            labels = pod["metadata"].get("labels") or {}
            pdbs = [p for (ns, _), p in sorted(self._store(pdb_res).items())
                    if ns == namespace and selector_matches(p.get("spec", {}).get("selector"), labels)]
            if len(pdbs) > 1:
                raise ApiError(500, "This pod has more than one PodDisruptionBudget, which the eviction subresource "
                                    "does not support.", "InternalError")
            if pdbs:
                pdb = pdbs[0]
                st = pdb.get("status") or {}
                skip = False
                if not _pod_ready(pod):
                    always = pdb.get("spec", {}).get("unhealthyPodEvictionPolicy") == "AlwaysAllow"
                    healthy = int(st.get("currentHealthy", 0)) >= int(st.get("desiredHealthy", 0)) > 0
                    skip = always or healthy
                if not skip:
                    self._check_and_decrement(pdb_res, pdb, name, dry)
            self._evict_pod(pod, grace, dry)
            return 201, _success(201)

    def _check_and_decrement(self, pdb_res: Resource, pdb: Obj, pod_name: str, dry: bool) -> None:
        st = pdb.get("status") or {}
        pname = pdb["metadata"]["name"]
        # a budget the disruption controller has not observed yet (no observedGeneration) is 0
        if int(st.get("observedGeneration", 0)) < int(pdb["metadata"].get("generation", 1)):
            raise ApiError(429, "Cannot evict pod as it would violate the pod's disruption budget.", "TooManyRequests",
                           {"retryAfterSeconds": 10, "causes": [{"reason": "DisruptionBudget", "message":
                            f"The disruption budget {pname} is still being processed by the server."}]},
                           {"Retry-After": "10"})
        allowed = int(st.get("disruptionsAllowed", 0))
        if allowed < 0:
            raise ApiError(403, f'poddisruptionbudget.policy "{pname}" is forbidden: pdb disruptions allowed is '
                                "negative", "Forbidden", _details(pdb_res, pname))
        if allowed == 0:
            raise ApiError(429, "Cannot evict pod as it would violate the pod's disruption budget.", "TooManyRequests",
                           {"causes": [{"reason": "DisruptionBudget", "message":
                            f"The disruption budget {pname} needs {st.get('desiredHealthy', 0)} healthy pods and has "
                            f"{st.get('currentHealthy', 0)} currently"}]})
        if dry:
            return
        new = copy.deepcopy(pdb)
        status = new.setdefault("status", {})
        status["disruptionsAllowed"] = allowed - 1
        status.setdefault("disruptedPods", {})[pod_name] = _now()
        if allowed - 1 == 0:
            _set_condition(status.setdefault("conditions", []),
                           {"type": "DisruptionAllowed", "status": "False", "reason": "InsufficientPods",
                            "message": "", "lastTransitionTime": _now()})
        self._replace(pdb_res, pdb, new)

    def _evict_pod(self, pod: Obj, grace: int | None, dry: bool) -> None:
        if dry:
            return
        if not pod["metadata"].get("deletionTimestamp"):
            new = copy.deepcopy(pod)
            _set_condition(new.setdefault("status", {}).setdefault("conditions", []),
                           {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
                            "message": "Eviction API: evicting", "lastTransitionTime": _now()})
            pod = self._replace(self._pods(), pod, new)
        self._delete_pod(pod, grace)

    def _record(self, method: str, path: str, query: dict[str, str], verb: str, code: int, body: Any,
                content_type: str) -> None:
        with self._lock:
            self._calls.append(Call(method, path, code))
            self._requests.append(Request(method, path, query, verb, code, body, content_type, time.monotonic()))

    def _rule_for(self, method: str, verb: str, path: str) -> _Rule | None:
        with self._lock:
            for rule in self._rules:
                if rule.times > 0 and rule.matches(method, verb, path):
                    rule.times -= 1
                    if rule.times <= 0:
                        self._rules.remove(rule)
                    return rule
        return None


# ---- the HTTP handler ----------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer
    server_version = "apiserver-double"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    # ---- plumbing ------------------------------------------------------------------------------
    def _send(self, code: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        if isinstance(obj, dict) and "_text" in obj:
            data, ctype = obj["_text"].encode(), "text/plain; charset=utf-8"
        else:
            data, ctype = json.dumps(obj).encode(), "application/json"
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def _chunk(self, obj: Obj) -> None:
        data = json.dumps(obj).encode() + b"\n"
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _client_gone(self) -> bool:
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def _body(self) -> tuple[Any, str]:
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None, ctype
        try:
            return json.loads(raw), ctype
        except ValueError as exc:
            raise ApiError(400, f"the body of the request is not valid JSON: {exc}", "BadRequest") from exc

    def _handle(self, method: str) -> None:
        """Route, act, record the call, then answer: a client that got its answer finds its
        request in ``calls`` already."""
        double: ApiServerDouble = self.server.double
        parts = urlsplit(self.path)
        path = parts.path
        query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        verb, body, ctype = method.lower(), None, ""
        headers: dict[str, str] = {}
        stream: Callable[[], None] | None = None
        double._serving.request = f"{method} {path}" if method != "GET" else None
        try:
            body, ctype = self._body()
            routed = double._route(path)
            if isinstance(routed, dict):
                verb = "get"
                if method != "GET":
                    raise ApiError(405, "method not allowed", "MethodNotAllowed")
                code, out = 200, routed
            else:
                res, version, namespace, name, sub = routed
                verb = self._verb(method, name, sub, query)
                rule = double._rule_for(method, verb, path)
                if rule is not None and rule.delay:
                    time.sleep(rule.delay)
                if rule is not None and rule.code:
                    err = ApiError(rule.code, rule.message, rule.reason or ("Expired" if rule.code == 410 else None))
                    if verb != "watch" or rule.code != 410:
                        raise err
                    code, out = 200, {}
                    stream = lambda: self._watch_error(err.status())
                elif verb == "watch":
                    opened = double._open_watch(res, version, namespace, name, query)
                    code, out = 200, {}
                    stream = lambda: self._watch(double, *opened, query)
                else:
                    code, out = self._dispatch(double, method, verb, res, version, namespace, name, sub, query, body,
                                               ctype)
        except ApiError as err:
            code, out, headers = err.code, err.status(), err.headers
        except Exception as exc:  # a bug in the double: answer 500, never hang the client
            code, out = 500, ApiError(500, f"apiserver double: {exc!r}").status()
        finally:
            double._serving.request = None
        double._record(method, path, query, verb, code, body, ctype)
        try:
            if stream is not None:
                stream()
            else:
                self._send(code, out, headers)
        except OSError:
            self.close_connection = True  # the client went away

    def _watch_error(self, status: Obj) -> None:
        self.close_connection = True
        self._start_stream()
        self._chunk({"type": "ERROR", "object": status})
        self.wfile.write(b"0\r\n\r\n")

    @staticmethod
    def _verb(method: str, name: str | None, sub: str | None, q: dict[str, str]) -> str:
        if method == "GET":
            if q.get("watch", "").lower() in ("true", "1"):
                return "watch"
            return "get" if name is not None else "list"
        if method == "POST":
            return "create"
        if method == "PUT":
            return "update"
        if method == "PATCH":
            return "patch"
        return "delete" if name is not None else "deletecollection"

    def _dispatch(self, d: ApiServerDouble, method: str, verb: str, res: Resource, version: str,
                  namespace: str | None, name: str | None, sub: str | None, q: dict[str, str], body: Any,
                  ctype: str) -> tuple[int, Obj]:
        dry = q.get("dryRun") == "All"
        if sub == "bindings":
            if method != "POST":
                raise ApiError(405, "method not allowed", "MethodNotAllowed")
            return d._bind(namespace or "", None, body, dry)
        if sub in ("binding", "eviction"):
            if method != "POST":
                raise ApiError(405, "method not allowed", "MethodNotAllowed")
            assert name is not None and namespace is not None
            return d._bind(namespace, name, body, dry) if sub == "binding" else d._evict(namespace, name, body, dry)
        if verb == "list":
            if sub is not None:
                raise ApiError(405, "method not allowed", "MethodNotAllowed")
            return 200, d._list(res, version, namespace, q)
        if verb == "get":
            assert name is not None
            return 200, d._get(res, version, namespace, name)
        if verb == "create":
            if name is not None:
                raise ApiError(405, "method not allowed", "MethodNotAllowed")
            if res.namespaced and namespace is None:
                raise ApiError(404, "the server could not find the requested resource", "NotFound")
            return 201, d._create(res, version, namespace, body, dry)
        if verb == "update":
            assert name is not None
            return 200, d._update(res, version, namespace, name, sub, body, dry)
        if verb == "patch":
            assert name is not None
            if body is None:
                raise ApiError(400, "the body of the request is empty", "BadRequest")
            return 200, d._patch(res, version, namespace, name, sub, body, ctype, dry)
        if verb == "delete":
            assert name is not None
            opts = dict(body) if isinstance(body, dict) else {}
            if "gracePeriodSeconds" in q:
                opts["gracePeriodSeconds"] = int(q["gracePeriodSeconds"])
            return 200, d._delete(res, version, namespace, name, opts, dry or bool(opts.get("dryRun")))
        # deletecollection
        listed = d._list(res, version, namespace, q)
        opts = dict(body) if isinstance(body, dict) else {}
        for item in listed["items"]:
            try:
                d._delete(res, version, item["metadata"].get("namespace"), item["metadata"]["name"], opts, dry)
            except ApiError:
                pass
        return 200, listed

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        # no "Connection: close" here, as upstream: with it http.client hands the socket to the
        # response (HTTPConnection.sock = None) and the client's Watch.stop() cannot shut it down
        self.end_headers()
        self.wfile.flush()

    def _watch(self, d: ApiServerDouble, w: _Watch, initial: list[Obj], gone: Obj | None, q: dict[str, str]) -> None:
        self.close_connection = True
        try:
            self._start_stream()
            if gone is not None:
                self._chunk({"type": "ERROR", "object": gone})
                self.wfile.write(b"0\r\n\r\n")
                return
            timeout = float(q["timeoutSeconds"]) if q.get("timeoutSeconds") else d.watch_timeout
            deadline = time.monotonic() + timeout
            next_bookmark = time.monotonic() + d.bookmark_interval
            for ev in initial:
                self._chunk(ev)
            while True:
                w.wake.wait(0.05)
                w.wake.clear()
                with d._lock:
                    events = list(w.queue)
                    w.queue.clear()
                    end = w.end
                if end == "abrupt":
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                for ev in events:
                    self._chunk(ev)
                if end:
                    break
                now = time.monotonic()
                if now >= deadline:
                    if w.bookmarks:
                        with d._lock:
                            bookmark = d._bookmark(w) if not w.queue else None
                        if bookmark is not None:
                            self._chunk(bookmark)
                    break
                if w.bookmarks and now >= next_bookmark:
                    with d._lock:
                        bookmark = d._bookmark(w) if not w.queue else None
                    if bookmark is not None:
                        self._chunk(bookmark)
                    next_bookmark = now + d.bookmark_interval
                if self._client_gone():
                    return
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass  # the client closed the stream
        finally:
            d._close_watch(w)


# ---- pytest --------------------------------------------------------------------------------------


def api_server(**kwargs: Any) -> Iterator[ApiServerDouble]:
    """A started double, stopped afterwards; as a fixture::

        api = pytest.fixture(tests.apiserver.api_server)   # or: with ApiServerDouble() as api:
    """
    with ApiServerDouble(**kwargs) as server:
        yield server

