"""A real control plane (etcd, kube-apiserver and kube-controller-manager 1.37.2, built by
scripts/build-control-plane.sh) for the whole session, and the adapter's credentials on it: the
ServiceAccount and RBAC of deploy/base, applied as they are, and a token issued to that account.
The adapter never runs as cluster-admin here, so a permission it lacks fails its test.
``capacity`` watches the pods through a test and fails it if a node was ever overcommitted
(tests/capacity.py; tests/controlplane/test_adapter.py uses it on every test).

Without the binaries every test here fails with the command that builds them; set
GANGPLACE_SKIP_CONTROL_PLANE=1 to skip this tier knowingly."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from solver.bench import controlplane, upstream
from solver.bench.controlplane import ControlPlane
from tests.capacity import Overcommit, overcommitted

ROOT = Path(__file__).resolve().parent.parent.parent
ADAPTER_USER = "system:serviceaccount:gangplace:gangplace-adapter"
NS = "default"


@pytest.fixture(autouse=True)
def _tier() -> None:
    if os.environ.get("GANGPLACE_SKIP_CONTROL_PLANE"):
        pytest.skip("GANGPLACE_SKIP_CONTROL_PLANE is set")


@pytest.fixture(scope="session")
def plane() -> Iterator[ControlPlane]:
    running = ControlPlane.start(controller_manager=True)
    yield running
    running.stop()


def _base_rbac() -> list[dict[str, Any]]:
    from tests.deploy.test_manifests import BASE_DOCS

    kinds = ("Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
    return [d for d in BASE_DOCS if d["kind"] in kinds]


@pytest.fixture(scope="session")
def adapter_kubeconfig(plane: ControlPlane) -> Path:
    """deploy/base's ServiceAccount with its RBAC, and a kubeconfig holding a token issued to it."""
    rest = upstream.Rest(plane)
    try:
        for obj in _base_rbac():
            rest.create(obj)
        sa = next(o for o in _base_rbac() if o["kind"] == "ServiceAccount")["metadata"]
        token = rest.call("POST", f"/api/v1/namespaces/{sa['namespace']}/serviceaccounts/{sa['name']}/token", {
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"expirationSeconds": 7200}})["status"]["token"]
    finally:
        rest.close()
    return controlplane.write_kubeconfig(plane.workdir / "adapter.kubeconfig", plane.url,
                                         plane.pki / "ca.crt", token=token)


@pytest.fixture()
def soft_rbac(plane: ControlPlane, adapter_kubeconfig: Path) -> Iterator[None]:
    """deploy/components/pdb-soft's RBAC (pods delete, for --pdb-policy soft) for one test, then
    gone again: every other test runs with the base's alone, which grants no pod delete."""
    from tests.deploy.test_manifests import PDB_SOFT_DOCS

    objs = [d for d in PDB_SOFT_DOCS if d["kind"] in ("ClusterRole", "ClusterRoleBinding")]
    rest = upstream.Rest(plane)
    try:
        for obj in objs:
            rest.create(obj)
        yield
    finally:
        for obj in reversed(objs):
            rest.call("DELETE", upstream.path_of(obj, named=True))
        rest.close()


class Real:
    """One test's objects on the real API server, created as a cluster would hold them
    (solver.bench.upstream's rules) and all removed afterwards."""

    def __init__(self, plane: ControlPlane) -> None:
        self.plane = plane
        self.rest = upstream.Rest(plane)
        self.classes: dict[str, int] = {}
        self.made: dict[int, str] = {}
        self.created: list[dict[str, Any]] = []
        self.started = time.time()

    def put(self, obj: dict[str, Any]) -> None:
        self.created.append(obj)
        if obj["kind"] == "Pod" and obj["spec"].get("nodeName"):
            upstream.create_running_pod(self.rest, obj, upstream.prepare_pod(obj, self.classes, self.made,
                                                                              self.rest, None))
            return
        if obj["kind"] == "Pod":
            body = upstream.prepare_pod(obj, self.classes, self.made, self.rest, obj["spec"].get("schedulerName"))
        else:
            body = upstream.prepare(obj, self.classes, self.made, self.rest)
            if obj["kind"] == "Node":
                body["status"] = obj.get("status", {})
        if obj["kind"] == "PriorityClass":
            self.classes[obj["metadata"]["name"]] = int(obj["value"])
        self.rest.create(obj, body)

    def get(self, path: str) -> dict[str, Any] | None:
        try:
            return self.rest.call("GET", path)
        except upstream.LoadError as exc:
            if " 404 " in str(exc):
                return None
            raise

    def pod(self, name: str, namespace: str = NS) -> dict[str, Any] | None:
        return self.get(f"/api/v1/namespaces/{namespace}/pods/{name}")

    def node_of(self, name: str, namespace: str = NS) -> str | None:
        obj = self.pod(name, namespace)
        return None if obj is None else obj["spec"].get("nodeName")

    def podgroup(self, name: str) -> dict[str, Any] | None:
        return self.get(f"/apis/scheduling.k8s.io/v1beta1/namespaces/{NS}/podgroups/{name}")

    def events(self) -> list[dict[str, Any]]:
        return self.rest.call("GET", f"/apis/events.k8s.io/v1/namespaces/{NS}/events")["items"]

    def adapter_calls(self, wait: float = 1.5) -> list[tuple[str, str, str, int]]:
        """(verb, resource, subresource or "", code) of every request the adapter's account made
        during this test, from the audit log (written within a second of the request)."""
        time.sleep(wait)
        out = []
        for ev in self.plane.audit():
            if ev.get("user", {}).get("username") != ADAPTER_USER or ev.get("stage") != "ResponseComplete":
                continue
            stamp = ev.get("requestReceivedTimestamp", "")
            if stamp and _epoch(stamp) < self.started:
                continue
            ref = ev.get("objectRef", {})
            out.append((ev["verb"], ref.get("resource", ""), ref.get("subresource", ""),
                        int(ev.get("responseStatus", {}).get("code", 0)), ref.get("name", "")))
        return out

    def _delete(self, path: str) -> None:
        try:
            self.rest.call("DELETE", path, {"gracePeriodSeconds": 0})
        except upstream.LoadError as exc:  # gone already (the garbage collector, a namespace)
            if " 404 " not in str(exc):
                raise

    def cleanup(self) -> None:
        # pods first (held ones let go), then everything else; cluster-scoped objects too; in
        # every namespace a test wrote to (a Namespace it made goes last, once emptied here:
        # no namespace controller empties it)
        namespaces = sorted({NS} | {o["metadata"]["namespace"] for o in self.created
                                    if o["metadata"].get("namespace")})
        for obj in reversed(self.created):
            if obj["kind"] == "Pod":
                cur = self.pod(obj["metadata"]["name"], obj["metadata"].get("namespace") or NS)
                if cur and cur["metadata"].get("finalizers"):
                    cur["metadata"]["finalizers"] = []
                    self.rest.call("PUT", upstream.path_of(obj, named=True), cur)
        lists = [path for ns in namespaces for path in (
            f"/api/v1/namespaces/{ns}/pods", f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims")]
        for path in lists:
            for item in self.rest.call("GET", path)["items"]:
                self._delete(f"{path}/{item['metadata']['name']}")
        for obj in reversed(self.created):
            if obj["kind"] not in ("Pod", "Namespace"):
                self._delete(upstream.path_of(obj, named=True))
        for name in self.made.values():
            self.rest.call("DELETE", f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}")
        deadline = time.monotonic() + 30
        while any(self.rest.call("GET", f"/api/v1/namespaces/{ns}/pods")["items"] for ns in namespaces):
            assert time.monotonic() < deadline, "pods of the last test did not go"
            time.sleep(0.1)
        for obj in self.created:
            if obj["kind"] == "Namespace":
                self._delete(upstream.path_of(obj, named=True))
        deadline = time.monotonic() + 30
        while self.rest.call("GET", "/apis/scheduling.k8s.io/v1beta1/namespaces/default/podgroups")["items"]:
            assert time.monotonic() < deadline, "podgroups of the last test did not go"
            time.sleep(0.1)
        self.rest.close()


class CapacityWatch:
    """The capacity invariant (tests/capacity.py) on the real API server: a thread lists the pods
    of every namespace, then watches them, and on every event checks the node of the pod the
    event is about; a node's bound pods (terminating ones too: no kubelet removes them here until
    the test or the adapter's eviction does) never request more than its allocatable. Nodes are
    read once each, when a pod is first seen on one. ``violations`` lists what it found, ``log``
    every event as (type, "ns/name", nodeName, terminating), in resourceVersion order."""

    def __init__(self, plane: ControlPlane) -> None:
        from kubernetes import client

        self.rest = upstream.Rest(plane)
        self.core = client.CoreV1Api(self.rest.api)
        self.pods: dict[str, dict[str, Any]] = {}
        self.nodes: dict[str, dict[str, Any] | None] = {}
        self.violations: list[Overcommit] = []
        self.log: list[tuple[str, str, str, bool]] = []
        self.error: BaseException | None = None
        listed = self.rest.call("GET", "/api/v1/pods")
        for p in listed["items"]:
            self.pods[_pod_key(p)] = p
        self.rv: str = listed["metadata"]["resourceVersion"]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="capacity-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        from kubernetes.watch.watch import iter_resp_lines

        try:
            while True:
                last = self._stop.is_set()  # a watch begun after stop() covers every event before it
                resp = self.core.list_pod_for_all_namespaces(watch=True, resource_version=self.rv, timeout_seconds=1,
                                                             allow_watch_bookmarks=True, _preload_content=False)
                try:
                    for line in iter_resp_lines(resp):  # type: ignore[no-untyped-call]  # unannotated in the client
                        if line.strip():
                            self._event(json.loads(line))
                finally:
                    resp.close()
                    resp.release_conn()
                if last:
                    return
        except BaseException as exc:  # the test fails on it: a watcher that died checks nothing
            self.error = exc

    def _event(self, event: dict[str, Any]) -> None:
        kind, obj = event["type"], event["object"]
        if kind == "ERROR":
            raise AssertionError(f"the pod watch failed: {obj}")
        self.rv = obj["metadata"]["resourceVersion"]
        if kind == "BOOKMARK":
            return
        key = _pod_key(obj)
        if kind == "DELETED":
            self.pods.pop(key, None)
        else:
            self.pods[key] = obj
        node_name = (obj.get("spec") or {}).get("nodeName") or ""
        self.log.append((kind, key, node_name, bool(obj["metadata"].get("deletionTimestamp"))))
        if kind == "DELETED" or not node_name:
            return
        if node_name not in self.nodes:
            status, body = self.rest.request("GET", f"/api/v1/nodes/{node_name}")
            self.nodes[node_name] = body if status == 200 else None
        node_obj = self.nodes[node_name]
        if node_obj is not None:
            self.violations += overcommitted(node_obj, self.pods.values(), f"{kind} {key} (resourceVersion {self.rv})")

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        assert not self._thread.is_alive(), "the capacity watch did not end"
        self.rest.close()


def _pod_key(p: dict[str, Any]) -> str:
    return f"{p['metadata'].get('namespace', '')}/{p['metadata']['name']}"


@pytest.fixture()
def capacity(plane: ControlPlane, real: Real) -> Iterator[CapacityWatch]:
    """The capacity invariant watched through one test (set up after ``real``, so ended before
    its cleanup): the test fails on a violation, or if the watch died."""
    watch = CapacityWatch(plane)
    yield watch
    watch.stop()
    assert watch.error is None, f"the capacity watch died: {watch.error!r}"
    assert watch.log, "the capacity watch saw no pod event"
    assert not watch.violations, "a node was overcommitted:\n" + "\n".join(map(str, watch.violations))


def _epoch(stamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


@pytest.fixture()
def real(plane: ControlPlane) -> Iterator[Real]:
    cluster = Real(plane)
    yield cluster
    cluster.cleanup()


def dump(obj: Any) -> str:
    return json.dumps(obj, indent=1)[:2000]
