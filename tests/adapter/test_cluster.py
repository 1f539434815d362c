"""adapter.cluster against the API server double: objects travel as the API printed them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from adapter.cluster import KINDS, Cluster, Gone
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
