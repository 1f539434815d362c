"""adapter.cluster against the API server double: objects travel as the API printed them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from adapter import cluster as cluster_module
from adapter.cluster import (
    ATTEMPTS,
    KINDS,
    Cluster,
    ClusterError,
    Conflict,
    Gone,
    Refused,
    Unavailable,
    UnexpectedStatus,
)
from tests.apiserver import ApiServerDouble
from tests.builders import RACK, node, pod, pod_group

KIND = {k.name: k for k in KINDS}


@pytest.fixture()
def api() -> Iterator[ApiServerDouble]:
    with ApiServerDouble(kubelet=False) as server:
        server.put(node("n0").build())  # resourceVersion 0 means "any": start the store past it
        yield server


@pytest.fixture()
def cluster(api: ApiServerDouble) -> Iterator[Cluster]:
    c = Cluster.at(api.url)
    yield c
    c.close()


def _changes(cluster: Cluster, kind: str, rv: str) -> list[tuple[str, dict]]:
    return [(t, o) for t, o in cluster.watch(KIND[kind], rv, timeout=1) if t != "BOOKMARK"]


def test_watch_yields_the_objects_as_served_plain_dicts_with_kind_and_api_version(
        api: ApiServerDouble, cluster: Cluster) -> None:
    _, rv = cluster.list(KIND["Pod"])
    p = pod("p").group("train").cpu_m(500).build()
    p["spec"]["schedulerName"] = "gangplace"
    p["spec"]["notAModelField"] = {"someCamelCase": 1}  # a model would drop it
    served = [api.put(p)]
    served.append(api.modify("pods", "default", "p",
                             lambda o: o["metadata"].setdefault("labels", {}).update(app="x")))
    api.delete("pods", "default", "p")
    events = _changes(cluster, "Pod", rv)
    assert [t for t, _ in events] == ["ADDED", "MODIFIED", "DELETED"]
    assert [o for _, o in events[:2]] == served  # exactly as served: every field, camelCase
    for _, obj in events:
        assert type(obj) is dict and (obj["kind"], obj["apiVersion"]) == ("Pod", "v1")
        assert obj["spec"]["schedulerName"] == "gangplace"
        assert obj["spec"]["schedulingGroup"] == {"podGroupName": "train"}
        assert obj["spec"]["notAModelField"] == {"someCamelCase": 1}
        assert isinstance(obj["metadata"]["creationTimestamp"], str)
    assert events[1][1]["metadata"]["labels"]["app"] == "x"


def test_watch_objects_equal_what_a_get_serves(api: ApiServerDouble, cluster: Cluster) -> None:
    _, rv = cluster.list(KIND["PodGroup"])
    api.put(pod_group("train", 4).topology(RACK).priority(100).build())
    [(etype, obj)] = _changes(cluster, "PodGroup", rv)
    assert etype == "ADDED"
    assert obj == api.get("podgroups", "default", "train")
    assert (obj["kind"], obj["apiVersion"]) == ("PodGroup", "scheduling.k8s.io/v1beta1")
    assert obj["spec"]["schedulingPolicy"]["gang"]["minCount"] == 4


def test_watch_from_a_compacted_resource_version_raises_gone(api: ApiServerDouble, cluster: Cluster) -> None:
    _, rv = cluster.list(KIND["Pod"])
    api.put(pod("p").build())
    api.compact()
    with pytest.raises(Gone):
        list(cluster.watch(KIND["Pod"], rv, timeout=1))


def test_no_api_exception_leaves_the_module_every_error_is_a_cluster_error(
        api: ApiServerDouble, cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cluster_module, "_BACKOFF", 0.001)
    assert all(issubclass(e, ClusterError) for e in (Gone, Conflict, Refused, Unavailable, UnexpectedStatus))
    assert (Gone.status, Conflict.status, Refused.status) == (410, 409, 429)

    def binds() -> int:
        return len([path for verb, path, _ in list(api.calls) if verb == "POST" and path.endswith("/p/binding")])

    # calls tried once: a 5xx is an UnexpectedStatus naming the call, the status and the reason
    api.fail_next("GET", r"^/api/v1/pods$", 503)
    with pytest.raises(UnexpectedStatus) as listed:
        cluster.list(KIND["Pod"])
    assert (listed.value.call, listed.value.status) == ("list", 503) and listed.value.reason
    assert str(listed.value) == f"list: 503 {listed.value.reason}"
    api.fail_next("GET", r"/leases/lease$", 500)
    with pytest.raises(UnexpectedStatus) as lease:
        cluster.get_lease("kube-system", "lease")
    assert (lease.value.call, lease.value.status) == ("get_lease", 500)
    api.fail_next("watch", r"^/api/v1/pods$", 500)
    with pytest.raises(UnexpectedStatus) as watched:
        list(cluster.watch(KIND["Pod"], "1", timeout=1))
    assert (watched.value.call, watched.value.status) == ("watch", 500)
    # a retried write: a status it does not expect is not retried; 5xx past the retries is Unavailable
    api.fail_next("POST", r"/pods/p/binding$", 403)
    with pytest.raises(UnexpectedStatus) as forbidden:
        cluster.bind("default", "p", "n0")
    assert (forbidden.value.call, forbidden.value.status, binds()) == ("bind", 403, 1)
    api.fail_next("POST", r"/pods/p/binding$", 500, times=ATTEMPTS)
    with pytest.raises(Unavailable):
        cluster.bind("default", "p", "n0")
    assert binds() == 1 + ATTEMPTS
