"""The API server double against the real ``kubernetes`` client: what the adapter relies on."""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Iterator
from typing import Any

import pydantic
import pytest
import urllib3
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from tests.apiserver import ApiServerDouble, merge_patch, strategic_merge_patch
from tests.builders import node, pdb, pod, pod_group

CONDITION = "PodGroupInitiallyScheduled"


@pytest.fixture()
def k8s(api: ApiServerDouble) -> Iterator[client.ApiClient]:
    c = client.ApiClient(client.Configuration(host=api.url))
    yield c
    c.close()


def _body(resp: Any) -> Any:
    return json.loads(resp.data)


def _status(exc: pytest.ExceptionInfo[ApiException]) -> dict[str, Any]:
    return json.loads(exc.value.body)


class Streamer:
    """Runs a client Watch in a thread; events land in a queue, the end (or error) too."""

    def __init__(self, func: Any, *args: Any, **kwargs: Any) -> None:
        self.watch = watch.Watch()
        self.events: queue.Queue[Any] = queue.Queue()
        self.error: BaseException | None = None
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(func, args, kwargs), daemon=True)
        self.thread.start()

    def _run(self, func: Any, args: Any, kwargs: Any) -> None:
        try:
            for ev in self.watch.stream(func, *args, **kwargs):
                self.events.put((ev["type"], ev["raw_object"]))
        except BaseException as exc:  # handed to the test
            self.error = exc
        finally:
            self.done.set()

    def next(self, timeout: float = 5.0) -> tuple[str, dict[str, Any]]:
        return self.events.get(timeout=timeout)

    def names(self, n: int, timeout: float = 5.0) -> list[tuple[str, str]]:
        return [(t, o["metadata"]["name"]) for t, o in (self.next(timeout) for _ in range(n))]

    def close(self) -> None:
        self.watch.stop()  # shuts the client's socket down: the stream thread must end at once
        self.thread.join(2)
        assert not self.thread.is_alive(), "Watch.stop() did not end the stream"


def _running(name: str, **labels: str) -> dict[str, Any]:
    b = pod(name).on("n0")
    for k, v in labels.items():
        b = b.label(k, v)
    obj = b.build()
    obj["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    return obj


# ---- list + watch ------------------------------------------------------------------------------


def test_list_then_watch_from_its_resource_version_sees_only_later_changes(api: ApiServerDouble,
                                                                           k8s: client.ApiClient) -> None:
    api.kubelet_paused = True
    api.put(pod("before").build())
    core = client.CoreV1Api(k8s)
    listed = core.list_pod_for_all_namespaces()
    assert [p.metadata.name for p in listed.items] == ["before"]
    rv = listed.metadata.resource_version
    assert rv == api.resource_version
    api.put(pod("missed-by-nobody").build())  # after the list, before the watch: must be replayed
    s = Streamer(core.list_pod_for_all_namespaces, resource_version=rv, timeout_seconds=10)
    try:
        assert s.names(1) == [("ADDED", "missed-by-nobody")]
        api.wait_until(lambda: api.open_watches("pods") == 1)
        api.put(pod("later").label("x", "1").build())
        api.delete("pods", "default", "before")
        assert s.names(2) == [("ADDED", "later"), ("DELETED", "before")]
        api.put(pod("later").label("x", "2").build())
        typ, obj = s.next()
        assert typ == "MODIFIED" and obj["metadata"]["labels"] == {"x": "2"}
        assert obj["kind"] == "Pod" and obj["apiVersion"] == "v1"
        assert int(obj["metadata"]["resourceVersion"]) > int(rv)
    finally:
        s.close()


def test_a_watch_without_resource_version_starts_with_the_current_objects(api: ApiServerDouble,
                                                                          k8s: client.ApiClient) -> None:
    api.put(node("n0").build())
    api.put(node("n1").build())
    s = Streamer(client.CoreV1Api(k8s).list_node, timeout_seconds=10)
    try:
        assert s.names(2) == [("ADDED", "n0"), ("ADDED", "n1")]
    finally:
        s.close()


def test_selectors_filter_lists_and_watches(api: ApiServerDouble, k8s: client.ApiClient) -> None:
    api.kubelet_paused = True
    api.put(pod("a").label("app", "web").build())
    api.put(pod("b").label("app", "db").on("n1").build())
    api.put(pod("c").build())
    core = client.CoreV1Api(k8s)

    def names(**kw: Any) -> list[str]:
        return [p.metadata.name for p in core.list_namespaced_pod("default", **kw).items]

    assert names(label_selector="app=web") == ["a"]
    assert names(label_selector="app in (web,db)") == ["a", "b"]
    assert names(label_selector="app,app!=web") == ["b"]
    assert names(label_selector="!app") == ["c"]
    assert names(field_selector="spec.nodeName=n1") == ["b"]
    assert names(field_selector="spec.nodeName=") == ["a", "c"]  # unbound, as the scheduler lists them
    assert names(field_selector="metadata.name=c") == ["c"]
    s = Streamer(core.list_pod_for_all_namespaces, label_selector="app=web",
                 resource_version=api.resource_version, timeout_seconds=10)
    try:
        api.wait_until(lambda: api.open_watches("pods") == 1)
        api.put(pod("c").label("app", "web").build())  # starts matching: ADDED to this watch
        api.put(pod("a").label("app", "gone").build())  # stops matching: DELETED from this watch
        api.put(pod("d").build())  # never matches
        assert s.names(2) == [("ADDED", "c"), ("DELETED", "a")]
        with pytest.raises(queue.Empty):
            s.next(0.3)
    finally:
        s.close()


def test_lists_page_with_limit_and_continue(api: ApiServerDouble, k8s: client.ApiClient) -> None:
    for i in range(5):
        api.put(node(f"n{i}").build())
    core = client.CoreV1Api(k8s)
    first = core.list_node(limit=2)
    assert [n.metadata.name for n in first.items] == ["n0", "n1"] and first.metadata.remaining_item_count == 3
    rest = core.list_node(limit=10, _continue=first.metadata._continue)
    assert [n.metadata.name for n in rest.items] == ["n2", "n3", "n4"] and not rest.metadata._continue


def test_list_items_print_as_the_real_apiserver_prints_them(api: ApiServerDouble, k8s: client.ApiClient) -> None:
    api.put(pod_group("g", 2).build())
    body = _body(client.SchedulingV1beta1Api(k8s).list_pod_group_for_all_namespaces(_preload_content=False))
    assert (body["kind"], body["apiVersion"]) == ("PodGroupList", "scheduling.k8s.io/v1beta1")
    assert body["metadata"]["resourceVersion"] == api.resource_version
    assert "kind" not in body["items"][0] and "apiVersion" not in body["items"][0]  # built-in lists drop them
    one = _body(client.SchedulingV1beta1Api(k8s).read_namespaced_pod_group("g", "default", _preload_content=False))
    assert (one["kind"], one["apiVersion"]) == ("PodGroup", "scheduling.k8s.io/v1beta1")
    # the same storage through the other served version
    alpha = _body(client.SchedulingV1alpha3Api(k8s).read_namespaced_pod_group("g", "default", _preload_content=False))
    assert alpha["apiVersion"] == "scheduling.k8s.io/v1alpha3" and alpha["metadata"]["uid"] == one["metadata"]["uid"]


def test_watch_timeout_ends_the_stream_cleanly_with_bookmarks(k8s: client.ApiClient) -> None:
    with ApiServerDouble(bookmark_interval=0.1) as server:
        c = client.ApiClient(client.Configuration(host=server.url))
        try:
            server.put(node("n0").build())
            start = time.monotonic()
            events = list(watch.Watch().stream(client.CoreV1Api(c).list_node, resource_version=server.resource_version,
                                               timeout_seconds=1, allow_watch_bookmarks=True))
            assert 0.9 <= time.monotonic() - start < 5
            assert events and {e["type"] for e in events} == {"BOOKMARK"}
            assert events[-1]["raw_object"]["metadata"]["resourceVersion"] == server.resource_version
        finally:
            c.close()


# ---- dropped streams and 410 Gone -----------------------------------------------------------------


def test_drop_watches_ends_every_stream(api: ApiServerDouble, k8s: client.ApiClient) -> None:
    core = client.CoreV1Api(k8s)
    abrupt = Streamer(core.list_pod_for_all_namespaces, resource_version=api.resource_version, timeout_seconds=30)
    try:
        assert api.wait_until(lambda: api.open_watches() == 1)
        assert api.drop_watches() == 1
        assert abrupt.done.wait(5)
        assert isinstance(abrupt.error, urllib3.exceptions.ProtocolError)  # the connection broke mid-stream
        assert api.open_watches() == 0
    finally:
        abrupt.close()
    clean = Streamer(core.list_node, resource_version=api.resource_version, timeout_seconds=30)
    try:
        assert api.wait_until(lambda: api.open_watches() == 1)
        assert api.drop_watches(abrupt=False) == 1
        assert clean.done.wait(5) and clean.error is None  # the chunked stream ended: the generator just stops
    finally:
        clean.close()


def test_compact_makes_an_old_resource_version_410_through_the_clients_watch(api: ApiServerDouble,
                                                                             k8s: client.ApiClient) -> None:
    core = client.CoreV1Api(k8s)
    api.put(pod("a").build())
    rv = core.list_pod_for_all_namespaces().metadata.resource_version
    api.put(pod("b").build())
    api.compact()
    with pytest.raises(ApiException) as exc:
        for _ in watch.Watch().stream(core.list_pod_for_all_namespaces, resource_version=rv, timeout_seconds=5):
            pass
    assert exc.value.status == 410 and exc.value.reason.startswith("Expired: too old resource version")
    assert len([c for c in api.calls if c[1] == "/api/v1/pods"]) == 2  # the list, one watch (no retry)
    # without timeout_seconds the client retries once from the same resourceVersion, then raises
    with pytest.raises(ApiException) as exc:
        for _ in watch.Watch().stream(core.list_pod_for_all_namespaces, resource_version=rv):
            pass
    assert exc.value.status == 410
    assert len([c for c in api.calls if c[1] == "/api/v1/pods"]) == 4
    # the 410 is an ERROR event on a 200 stream, as upstream sends it
    raw = core.list_pod_for_all_namespaces(watch=True, resource_version=rv, _preload_content=False)
    try:
        assert raw.status == 200
        event = json.loads(raw.data.splitlines()[0])
    finally:
        raw.release_conn()
    assert event["type"] == "ERROR" and event["object"]["code"] == 410 and event["object"]["reason"] == "Expired"
    # from the current resourceVersion it works again
    s = Streamer(core.list_pod_for_all_namespaces, resource_version=api.resource_version, timeout_seconds=10)
    try:
        assert api.wait_until(lambda: api.open_watches() == 1)
        api.put(pod("c").build())
        assert s.names(1) == [("ADDED", "c")]
    finally:
        s.close()


# ---- bindings ---------------------------------------------------------------------------------------


def _binding(name: str, node_name: str) -> client.V1Binding:
    return client.V1Binding(metadata=client.V1ObjectMeta(name=name),
                            target=client.V1ObjectReference(kind="Node", api_version="v1", name=node_name))


def test_binding_twice_the_second_is_409(api: ApiServerDouble, k8s: client.ApiClient) -> None:
    api.kubelet_paused = True
    api.put(node("n0").build())
    api.put(pod("p").build())
    core = client.CoreV1Api(k8s)
    resp = core.create_namespaced_pod_binding("p", "default", _binding("p", "n0"), _preload_content=False)
    assert resp.status == 201
    assert _body(resp) == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
    bound = api.get("pods", "default", "p")
    assert bound["spec"]["nodeName"] == "n0"
    assert {"type": "PodScheduled", "status": "True"}.items() <= bound["status"]["conditions"][0].items()
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_pod_binding("p", "default", _binding("p", "n1"), _preload_content=False)
    assert exc.value.status == 409
    status = _status(exc)
    assert (status["kind"], status["status"], status["reason"], status["code"]) == ("Status", "Failure", "Conflict", 409)
    assert status["message"] == 'Operation cannot be fulfilled on pods/binding "p": pod p is already assigned to node "n0"'
    assert api.get("pods", "default", "p")["spec"]["nodeName"] == "n0"
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_pod_binding("nope", "default", _binding("nope", "n0"), _preload_content=False)
    assert exc.value.status == 404 and _status(exc)["message"] == 'pods "nope" not found'
    assert [c[2] for c in api.calls if c[1].endswith("/binding")] == [201, 409, 404]


def test_binding_with_the_clients_default_deserialization(api: ApiServerDouble, k8s: client.ApiClient) -> None:
    """Upstream answers a Status, which the client cannot read as a V1Binding (``target`` is required):
    it raises pydantic's ValidationError *after* the pod was bound. Call it with _preload_content=False."""
    api.put(pod("p").build())
    api.put(pod("q").build())
    core = client.CoreV1Api(k8s)
    with pytest.raises(pydantic.ValidationError):
        core.create_namespaced_pod_binding("p", "default", _binding("p", "n0"))
    assert api.get("pods", "default", "p")["spec"]["nodeName"] == "n0"  # done nonetheless
    # POST namespaces/NS/bindings (create_namespaced_binding) is the same thing
    resp = core.create_namespaced_binding("default", _binding("q", "n1"), _preload_content=False)
    assert resp.status == 201 and api.get("pods", "default", "q")["spec"]["nodeName"] == "n1"
    with ApiServerDouble(binding_response="binding") as other:  # a double that answers the Binding back
        c = client.ApiClient(client.Configuration(host=other.url))
        try:
            other.put(pod("p").build())
            out = client.CoreV1Api(c).create_namespaced_pod_binding("p", "default", _binding("p", "n0"))
            assert isinstance(out, client.V1Binding) and out.target.name == "n0"
        finally:
            c.close()


def test_a_binding_into_the_room_of_a_pod_still_terminating_is_recorded_as_overcommitting() -> None:
    """The capacity invariant: a node's bound pods, the terminating ones too, never request more
    than its allocatable. Its own double here: the ``api`` fixture fails a test that leaves a
    violation, and this one makes one on purpose."""
    with ApiServerDouble() as server:
        c = client.ApiClient(client.Configuration(host=server.url))
        try:
            core = client.CoreV1Api(c)
            server.kubelet_paused = True  # "old" stays terminating until the kubelet runs again
            server.put(node("n0").cpu_m(4000).build())
            server.put(pod("old").on("n0").cpu_m(3000).build())
            server.put(pod("new").cpu_m(2000).build())
            server.put(pod("later").cpu_m(1000).build())
            server.put(pod("over").on("n0").cpu_m(9000).build())  # the test's own store write: not checked
            server.delete("pods", "default", "over")
            assert server.capacity_violations == []
            assert _evict(core, "old").status == 201
            assert server.capacity_violations == []  # an eviction frees nothing yet, and takes nothing
            core.create_namespaced_pod_binding("new", "default", _binding("new", "n0"), _preload_content=False)
            assert [str(v) for v in server.capacity_violations] == [
                "node n0: cpu 5000 requested > 4000 allocatable after POST "
                "/api/v1/namespaces/default/pods/new/binding; pods default/new, default/old (terminating)"]
            server.kubelet_paused = False
            assert server.wait_until(lambda: server.get("pods", "default", "old") is None, timeout=5)
            core.create_namespaced_pod_binding("later", "default", _binding("later", "n0"), _preload_content=False)
            assert len(server.capacity_violations) == 1  # 3000m of 4000m once "old" is gone: fine
        finally:
            c.close()


# ---- evictions --------------------------------------------------------------------------------------


def _evict(core: client.CoreV1Api, name: str, grace: int | None = None) -> Any:
    body = client.V1Eviction(metadata=client.V1ObjectMeta(name=name, namespace="default"),
                             delete_options=None if grace is None else client.V1DeleteOptions(grace_period_seconds=grace))
    return core.create_namespaced_pod_eviction(name, "default", body, _preload_content=False)


def test_eviction_refused_by_a_pdb_is_429(api: ApiServerDouble, k8s: client.ApiClient) -> None:
    api.put(_running("p", app="batch"))
    api.put(pdb("batch", 0, app="batch").build())
    with pytest.raises(ApiException) as exc:
        _evict(client.CoreV1Api(k8s), "p")
    assert exc.value.status == 429
    status = _status(exc)
    assert (status["reason"], status["code"]) == ("TooManyRequests", 429)
    assert status["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    assert status["details"]["causes"][0]["reason"] == "DisruptionBudget"
    assert "batch" in status["details"]["causes"][0]["message"]
    p = api.get("pods", "default", "p")
    assert "deletionTimestamp" not in p["metadata"]
    assert api.get("pdb", "default", "batch")["status"]["disruptionsAllowed"] == 0


def test_eviction_allowed_decrements_the_pdb_and_the_pod_goes_after_the_scaled_grace(
        api: ApiServerDouble, k8s: client.ApiClient) -> None:
    api.put(_running("p", app="batch"))
    api.put(_running("other", app="batch"))
    api.put(pdb("batch", 1, app="batch").build())
    core = client.CoreV1Api(k8s)
    start = time.monotonic()
    resp = _evict(core, "p")
    assert resp.status == 201 and _body(resp)["status"] == "Success"
    budget = api.get("poddisruptionbudgets", "default", "batch")["status"]
    assert budget["disruptionsAllowed"] == 0 and "p" in budget["disruptedPods"]
    terminating = api.get("pods", "default", "p")["metadata"]
    assert terminating["deletionTimestamp"] and terminating["deletionGracePeriodSeconds"] == 30
    target = next(c for c in api.get("pods", "default", "p")["status"]["conditions"] if c["type"] == "DisruptionTarget")
    assert target["reason"] == "EvictionByEvictionAPI"
    # evicting it again while it terminates: success, no second decrement (upstream answers 201 here too)
    assert _evict(core, "p").status == 201
    assert api.get("pdb", "default", "batch")["status"]["disruptionsAllowed"] == 0
    # the budget is spent now: the next pod is refused
    with pytest.raises(ApiException) as exc:
        _evict(core, "other")
    assert exc.value.status == 429
    assert api.wait_until(lambda: api.get("pods", "default", "p") is None, timeout=5)
    assert time.monotonic() - start >= 30 * api.grace_scale - 0.05
    with pytest.raises(ApiException) as exc:
        _evict(core, "p")
    assert exc.value.status == 404


def test_eviction_details_as_upstream(api: ApiServerDouble, k8s: client.ApiClient) -> None:
    core = client.CoreV1Api(k8s)
    api.put(pod("pending").label("app", "batch").build())  # Pending pods ignore PDBs
    api.put(_running("free"))  # no PDB covers it
    api.put(_running("double", app="batch", tier="x"))
    api.put(pdb("batch", 0, app="batch").build())
    api.put(pdb("tier", 5, tier="x").build())
    assert _evict(core, "pending").status == 201
    assert api.get("pods", "default", "pending") is None  # unscheduled: deleted at once
    api.kubelet_paused = True
    assert _evict(core, "free", grace=0).status == 201
    assert api.get("pods", "default", "free") is None  # grace 0: at once, kubelet or not
    with pytest.raises(ApiException) as exc:
        _evict(core, "double")
    assert exc.value.status == 500 and "more than one PodDisruptionBudget" in _status(exc)["message"]


def test_the_kubelet_loop_can_be_paused(api: ApiServerDouble, k8s: client.ApiClient) -> None:
    api.kubelet_paused = True
    api.put(_running("p"))
    _evict(client.CoreV1Api(k8s), "p")
    time.sleep(30 * api.grace_scale + 0.2)
    assert api.get("pods", "default", "p") is not None
    api.kubelet_paused = False
    assert api.wait_until(lambda: api.get("pods", "default", "p") is None, timeout=5)


def test_the_kubelet_starts_bound_pods(api: ApiServerDouble, k8s: client.ApiClient) -> None:
    api.put(pod("p").build())
    client.CoreV1Api(k8s).create_namespaced_pod_binding("p", "default", _binding("p", "n0"), _preload_content=False)
    assert api.wait_until(lambda: api.get("pods", "default", "p")["status"]["phase"] == "Running", timeout=5)
    status = api.get("pods", "default", "p")["status"]
    assert status["startTime"] and {"type": "Ready", "status": "True"}.items() <= next(
        c for c in status["conditions"] if c["type"] == "Ready").items()
    assert api.get("pods", "default", "p")["status"]["phase"] == "Running"


def test_the_kubelet_visits_only_pods_with_work(api: ApiServerDouble, k8s: client.ApiClient) -> None:
    api.kubelet_paused = True
    api.put(_running("idle"))
    api.put(pod("unbound").build())
    api.put(pod("bound").build())
    api.put(_running("leaving"))
    core = client.CoreV1Api(k8s)
    core.create_namespaced_pod_binding("bound", "default", _binding("bound", "n0"), _preload_content=False)
    _evict(core, "leaving")
    assert api._kubelet_work == {("default", "bound"), ("default", "leaving")}
    api.kubelet_paused = False
    assert api.wait_until(lambda: not api._kubelet_work, timeout=5)
    assert api.get("pods", "default", "bound")["status"]["phase"] == "Running"
    assert api.get("pods", "default", "leaving") is None
    assert {p["metadata"]["name"] for p in api.list("pods")} == {"idle", "unbound", "bound"}


def test_a_burst_of_parallel_requests_is_queued_not_refused(api: ApiServerDouble) -> None:
    results: list[int] = []
    lock = threading.Lock()

    def get() -> None:
        http = urllib3.PoolManager()
        code = http.request("GET", f"{api.url}/version", retries=False).status
        with lock:
            results.append(code)

    threads = [threading.Thread(target=get) for _ in range(64)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert results == [200] * 64


def test_graceful_delete(api: ApiServerDouble, k8s: client.ApiClient) -> None:
    core = client.CoreV1Api(k8s)
    api.put(_running("bound"))
    api.put(pod("unbound").build())
    api.put(_running("forced"))
    out = _body(core.delete_namespaced_pod("bound", "default", grace_period_seconds=10, _preload_content=False))
    assert out["kind"] == "Pod" and out["metadata"]["deletionGracePeriodSeconds"] == 10
    core.delete_namespaced_pod("unbound", "default", _preload_content=False)
    assert api.get("pods", "default", "unbound") is None
    core.delete_namespaced_pod("forced", "default", body=client.V1DeleteOptions(grace_period_seconds=0),
                               _preload_content=False)
    assert api.get("pods", "default", "forced") is None
    assert api.wait_until(lambda: api.get("pods", "default", "bound") is None, timeout=5)
    with pytest.raises(ApiException) as exc:
        core.delete_namespaced_pod("bound", "default", _preload_content=False)
    assert exc.value.status == 404
    api.put(pdb("x", 1).build())  # other kinds go at once
    out = _body(client.PolicyV1Api(k8s).delete_namespaced_pod_disruption_budget("x", "default", _preload_content=False))
    assert out["status"] == "Success" and api.get("pdb", "default", "x") is None


# ---- create, update, leases ----------------------------------------------------------------------


def _lease(holder: str) -> dict[str, Any]:
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "gangplace", "namespace": "kube-system"},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15}}


def test_lease_optimistic_concurrency(api: ApiServerDouble, k8s: client.ApiClient) -> None:
    coord = client.CoordinationV1Api(k8s)
    created = coord.create_namespaced_lease("kube-system", _lease("a"))
    assert created.metadata.uid and created.metadata.creation_timestamp and created.metadata.resource_version
    with pytest.raises(ApiException) as exc:
        coord.create_namespaced_lease("kube-system", _lease("b"))
    assert exc.value.status == 409 and _status(exc)["reason"] == "AlreadyExists"
    mine = _body(coord.read_namespaced_lease("gangplace", "kube-system", _preload_content=False))
    theirs = json.loads(json.dumps(mine))
    mine["spec"]["holderIdentity"] = "a2"
    renewed = coord.replace_namespaced_lease("gangplace", "kube-system", mine)
    assert renewed.spec.holder_identity == "a2"
    assert int(renewed.metadata.resource_version) > int(theirs["metadata"]["resourceVersion"])
    theirs["spec"]["holderIdentity"] = "b"
    with pytest.raises(ApiException) as exc:
        coord.replace_namespaced_lease("gangplace", "kube-system", theirs)  # a stale resourceVersion
    assert exc.value.status == 409
    assert _status(exc)["message"] == ('Operation cannot be fulfilled on leases.coordination.k8s.io "gangplace": the '
                                       "object has been modified; please apply your changes to the latest version "
                                       "and try again")
    assert api.get("leases", "kube-system", "gangplace")["spec"]["holderIdentity"] == "a2"
    with pytest.raises(ApiException) as exc:
        coord.replace_namespaced_lease("other", "kube-system", {**_lease("x"), "metadata": {"name": "other"}})
    assert exc.value.status == 404


def test_create_applies_server_fields_and_generate_name(api: ApiServerDouble, k8s: client.ApiClient) -> None:
    ev = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"generateName": "p.", "namespace": "default"},
          "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "gangplace.io/x", "reportingInstance": "x",
          "action": "Binding", "reason": "Scheduled", "note": "assigned", "type": "Normal",
          "regarding": {"kind": "Pod", "name": "p", "namespace": "default"}}
    out = _body(client.EventsV1Api(k8s).create_namespaced_event("default", ev, _preload_content=False))
    assert out["metadata"]["name"].startswith("p.") and len(out["metadata"]["name"]) == 7
    # one storage, two views: core v1 sees the same Event with its field names
    core_view = client.CoreV1Api(k8s).list_namespaced_event("default").items[0]
    assert (core_view.message, core_view.involved_object.name, core_view.reason) == ("assigned", "p", "Scheduled")
    assert [e["reason"] for e in api.list("events")] == ["Scheduled"]
    with pytest.raises(ApiException) as exc:
        client.CoreV1Api(k8s).create_namespaced_pod("other", pod("x").build(), _preload_content=False)
    assert exc.value.status == 400  # the body's namespace is not the URL's
    created = _body(client.CoreV1Api(k8s).create_namespaced_pod("default", pod("x").build(), _preload_content=False))
    assert created["spec"]["schedulerName"] == "default-scheduler" and created["status"] == {"phase": "Pending"}


def test_put_and_patch_never_touch_status_and_status_never_touches_spec(api: ApiServerDouble,
                                                                        k8s: client.ApiClient) -> None:
    api.put(pod_group("g", 2).build() | {"status": {"conditions": [{"type": "A", "status": "True"}]}})
    sched = client.SchedulingV1beta1Api(k8s)
    cur = _body(sched.read_namespaced_pod_group("g", "default", _preload_content=False))
    cur["spec"]["schedulingPolicy"]["gang"]["minCount"] = 3
    cur["status"] = {"conditions": []}
    out = _body(sched.replace_namespaced_pod_group("g", "default", cur, _preload_content=False))
    assert out["spec"]["schedulingPolicy"]["gang"]["minCount"] == 3 and out["metadata"]["generation"] == 2
    assert out["status"]["conditions"] == [{"type": "A", "status": "True"}]
    out = _body(sched.patch_namespaced_pod_group_status("g", "default", {"spec": {"priority": 7}},
                                                        _preload_content=False))
    assert "priority" not in out["spec"]


# ---- patches -----------------------------------------------------------------------------------------


def test_a_status_patch_of_a_podgroup_condition_merges_by_type(api: ApiServerDouble, k8s: client.ApiClient) -> None:
    api.put(pod_group("g", 2).build() | {"status": {"conditions": [
        {"type": "Other", "status": "True", "reason": "ByAnother"},
        {"type": CONDITION, "status": "False", "reason": "Unschedulable"}]}})
    sched = client.SchedulingV1beta1Api(k8s)
    cond = {"type": CONDITION, "status": "True", "reason": "Scheduled", "message": "2 pods placed"}
    # a dict body: the client sends strategic merge (its default json-patch content type is rewritten)
    sched.patch_namespaced_pod_group_status("g", "default", {"status": {"conditions": [cond]}}, _preload_content=False)
    got = api.get("podgroups", "default", "g")["status"]["conditions"]
    assert got == [{"type": "Other", "status": "True", "reason": "ByAnother"}, cond]
    assert api.requests[-1].content_type == "application/strategic-merge-patch+json"
    # a JSON merge patch (RFC 7386) replaces the whole list, as the real apiserver does
    sched.patch_namespaced_pod_group_status("g", "default", {"status": {"conditions": [cond]}}, _preload_content=False,
                                            _content_type="application/merge-patch+json")
    assert api.get("podgroups", "default", "g")["status"]["conditions"] == [cond]
    # JSON patch (a list body)
    sched.patch_namespaced_pod_group_status("g", "default", [{"op": "add", "path": "/status/conditions/-",
                                                              "value": {"type": "B", "status": "True"}}],
                                            _preload_content=False)
    assert [c["type"] for c in api.get("podgroups", "default", "g")["status"]["conditions"]] == [CONDITION, "B"]
    # a patch carrying a stale resourceVersion is a precondition: 409
    with pytest.raises(ApiException) as exc:
        sched.patch_namespaced_pod_group("g", "default", {"metadata": {"resourceVersion": "1", "labels": {"a": "b"}}},
                                         _preload_content=False)
    assert exc.value.status == 409


def test_patch_helpers() -> None:
    assert merge_patch({"a": 1, "b": {"c": 2, "d": 3}}, {"b": {"c": None, "e": 4}, "f": [1]}) == \
        {"a": 1, "b": {"d": 3, "e": 4}, "f": [1]}
    assert strategic_merge_patch({"metadata": {"finalizers": ["a"]}, "spec": {"containers": [
        {"name": "x", "image": "1"}, {"name": "y", "image": "2"}]}},
        {"metadata": {"finalizers": ["b"]}, "spec": {"containers": [{"name": "y", "image": "3"},
                                                                    {"name": "x", "$patch": "delete"}]}}) == \
        {"metadata": {"finalizers": ["a", "b"]}, "spec": {"containers": [{"name": "y", "image": "3"}]}}


def test_pod_status_patch(api: ApiServerDouble, k8s: client.ApiClient) -> None:
    api.put(pod("p").build())
    client.CoreV1Api(k8s).patch_namespaced_pod_status(
        "p", "default", {"status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "p-gpu"}]}},
        _preload_content=False, _content_type="application/merge-patch+json")
    assert api.get("pods", "default", "p")["status"]["resourceClaimStatuses"] == [
        {"name": "gpu", "resourceClaimName": "p-gpu"}]


def test_resource_claims_create_and_status(api: ApiServerDouble, k8s: client.ApiClient) -> None:
    res = client.ResourceV1Api(k8s)
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "c", "namespace": "default"},
             "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}}
    res.create_namespaced_resource_claim("default", claim, _preload_content=False)
    with pytest.raises(ApiException) as exc:
        res.create_namespaced_resource_claim("default", claim, _preload_content=False)
    assert exc.value.status == 409
    status = {"allocation": {"devices": {"results": [{"request": "gpu", "driver": "d", "pool": "p", "device": "g0"}]}},
              "reservedFor": [{"resource": "pods", "name": "p", "uid": "u1"}]}
    res.patch_namespaced_resource_claim_status("c", "default", {"status": status}, _preload_content=False,
                                               _content_type="application/merge-patch+json")
    assert api.get("resourceclaims", "default", "c")["status"] == status
    assert res.list_resource_claim_for_all_namespaces().items[0].status.allocation.devices.results[0].device == "g0"


# ---- custom objects ---------------------------------------------------------------------------------


def test_custom_objects_list_and_watch_podgroups(api: ApiServerDouble, k8s: client.ApiClient) -> None:
    api.put(pod_group("a", 2).build())
    co = client.CustomObjectsApi(k8s)
    listed = co.list_namespaced_custom_object("scheduling.k8s.io", "v1beta1", "default", "podgroups")
    assert [i["metadata"]["name"] for i in listed["items"]] == ["a"]
    s = Streamer(co.list_cluster_custom_object, "scheduling.k8s.io", "v1beta1", "podgroups",
                 resource_version=listed["metadata"]["resourceVersion"], timeout_seconds=10)
    try:
        assert api.wait_until(lambda: api.open_watches("podgroups") == 1)
        co.create_namespaced_custom_object("scheduling.k8s.io", "v1beta1", "default", "podgroups",
                                           pod_group("b", 1).build())
        co.patch_namespaced_custom_object_status("scheduling.k8s.io", "v1beta1", "default", "podgroups", "b",
                                                 {"status": {"conditions": [{"type": CONDITION, "status": "True"}]}})
        typ, obj = s.next()
        assert (typ, obj["metadata"]["name"], obj["kind"]) == ("ADDED", "b", "PodGroup")
        typ, obj = s.next()
        assert typ == "MODIFIED" and obj["status"]["conditions"][0]["type"] == CONDITION
    finally:
        s.close()
    got = co.get_namespaced_custom_object("scheduling.k8s.io", "v1alpha3", "default", "podgroups", "b")
    assert got["apiVersion"] == "scheduling.k8s.io/v1alpha3"


def test_a_registered_custom_resource_is_served_like_a_crd(api: ApiServerDouble, k8s: client.ApiClient) -> None:
    api.register("example.com", "v1", "widgets", "Widget")
    co = client.CustomObjectsApi(k8s)
    co.create_namespaced_custom_object("example.com", "v1", "default", "widgets",
                                       {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
                                        "spec": {"size": 1}})
    items = co.list_namespaced_custom_object("example.com", "v1", "default", "widgets")["items"]
    assert items[0]["kind"] == "Widget"  # CRD lists keep kind on items
    with pytest.raises(ApiException) as exc:
        co.patch_namespaced_custom_object("example.com", "v1", "default", "widgets", "w", {"spec": {"size": 2}},
                                          _content_type="application/strategic-merge-patch+json")
    assert exc.value.status == 415
    co.patch_namespaced_custom_object("example.com", "v1", "default", "widgets", "w", {"spec": {"size": 2}})
    assert api.get("widgets", "default", "w")["spec"]["size"] == 2


def test_unserved_groups_answer_404(k8s: client.ApiClient) -> None:
    with ApiServerDouble(unserved=["scheduling.k8s.io/v1alpha3"]) as server:
        c = client.ApiClient(client.Configuration(host=server.url))
        try:
            with pytest.raises(ApiException) as exc:
                client.SchedulingV1alpha3Api(c).list_composite_pod_group_for_all_namespaces()
            assert exc.value.status == 404
            assert client.SchedulingV1beta1Api(c).list_pod_group_for_all_namespaces().items == []
        finally:
            c.close()


# ---- injected failures and the records ----------------------------------------------------------------


def test_fail_next_injects_errors_that_change_nothing(api: ApiServerDouble, k8s: client.ApiClient) -> None:
    api.put(_running("p"))
    core = client.CoreV1Api(k8s)
    api.fail_next("POST", r"/pods/p/eviction$", 429, times=2)
    for _ in range(2):
        with pytest.raises(ApiException) as exc:
            _evict(core, "p")
        assert exc.value.status == 429 and _status(exc)["reason"] == "TooManyRequests"
    assert "deletionTimestamp" not in api.get("pods", "default", "p")["metadata"]
    assert _evict(core, "p").status == 201  # the third goes through
    evictions = [c for c in api.calls if c[0] == "POST" and c[1].endswith("/eviction")]
    assert evictions == [("POST", "/api/v1/namespaces/default/pods/p/eviction", 429)] * 2 + [
        ("POST", "/api/v1/namespaces/default/pods/p/eviction", 201)]
    # by Kubernetes verb: a list fails, a get of the same path does not
    api.fail_next("list", r"^/api/v1/nodes$", 503, message="etcd is sad")
    with pytest.raises(ApiException) as exc:
        core.list_node()
    assert exc.value.status == 503 and _status(exc)["message"] == "etcd is sad"
    assert core.list_node().items == []
    # a 410 on a watch comes as the ERROR event
    api.fail_next("watch", r"/pods$", 410)
    with pytest.raises(ApiException) as exc:
        for _ in watch.Watch().stream(core.list_pod_for_all_namespaces, resource_version=api.resource_version,
                                      timeout_seconds=5):
            pass
    assert exc.value.status == 410
    assert [r.verb for r in api.requests][-1] == "watch"


def test_delay_next(api: ApiServerDouble, k8s: client.ApiClient) -> None:
    api.delay_next("get", r"/nodes/n0$", 0.3)
    api.put(node("n0").build())
    start = time.monotonic()
    client.CoreV1Api(k8s).read_node("n0")
    assert time.monotonic() - start >= 0.3


def test_stop_closes_everything() -> None:
    before = {t.ident for t in threading.enumerate()}
    server = ApiServerDouble().start()
    url = server.url
    c = client.ApiClient(client.Configuration(host=url))
    s = Streamer(client.CoreV1Api(c).list_node, resource_version="0", timeout_seconds=60)
    assert server.wait_until(lambda: server.open_watches() == 1)
    server.stop()
    assert s.done.wait(5)
    s.close()
    c.close()
    assert {t.ident for t in threading.enumerate()} <= before
    with urllib3.PoolManager(retries=False) as pool, pytest.raises(urllib3.exceptions.HTTPError):
        pool.request("GET", f"{url}/api/v1/nodes", timeout=1)
