"""NodeVolumeLimits (solver/filters/attach.py): a node attaches at most its CSINode's count of
CSI volumes per driver, each counted once, and a driver whose CSIDriver prevents scheduling
where it is missing bars the nodes whose CSINode lacks it. Each case asserts the model's plan
and the baseline's (both verified), the pending pod's reason in kube-scheduler's words, and
that the verifier refuses the binding upstream refuses."""

from __future__ import annotations

from typing import Any

import pytest

from solver import api, reading
from solver.core.errors import SnapshotInvalidError
from tests.builders import node, pod, pod_group, snapshot
from tests.pipeline.test_refusals import _plans as _plans_of
from tests.pipeline.test_refusals import _refused

DRIVER = "csi.example.com"


def _csi_node(name: str, count: int | None = None, driver: str = DRIVER) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": driver, "nodeID": name}
    if count is not None:
        entry["allocatable"] = {"count": count}
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": name},
            "spec": {"drivers": [entry]}}


def _volume(claim: str, handle: str) -> list[dict[str, Any]]:
    """A claim bound to a CSI volume of DRIVER with ``handle``."""
    return [{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"pv-{handle}"},
             "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteMany"],
                      "claimRef": {"namespace": "default", "name": claim},
                      "csi": {"driver": DRIVER, "volumeHandle": handle}}},
            {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
             "metadata": {"name": claim, "namespace": "default",
                          "annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
             "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1Gi"}},
                      "volumeName": f"pv-{handle}", "storageClassName": ""}}]


def _uses(p: Any, *claims: str) -> Any:
    p.obj["spec"]["volumes"] = [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
                                for i, c in enumerate(claims)]
    return p


def _plans(objs: list[Any]) -> dict[str, dict[str, str]]:
    return _plans_of(*objs)


def _reason(objs: list[Any]) -> str:
    plan = api.plan(snapshot(*objs), api.PlanOptions(time_limit=10))
    return next(w.reason for w in plan.workloads if not w.satisfied)


# one node that may attach one volume of DRIVER and holds one (a running pod's, "old")
FULL = [node("n1"), _csi_node("n1", 1), *_volume("old", "h1"), _uses(pod("r").on("n1").cpu_m(100), "old")]


def test_a_node_at_its_limit_takes_no_pod_with_a_new_volume() -> None:
    objs = [*FULL, *_volume("new", "h2"), _uses(pod("p").cpu_m(100), "new")]
    assert _plans(objs) == {"model": {}, "baseline": {}}
    assert _reason(objs).startswith("0/1 nodes are available: 1 node(s) exceed max volume count.")
    assert _refused(objs, {"p": "n1"}) == ["volume-limits"]
    # another node, with no CSINode (no limit), takes it
    assert _plans([*objs, node("n2").cpu_m(1000)]) == {"model": {"p": "n2"}, "baseline": {"p": "n2"}}


def test_a_volume_the_node_holds_already_counts_once() -> None:
    """The running pod's volume is attached: a pod asking it adds nothing, and two pods that
    share a new volume add one (room for one more: both go)."""
    objs = [*FULL, _uses(pod("p").cpu_m(100), "old")]
    assert _plans(objs) == {"model": {"p": "n1"}, "baseline": {"p": "n1"}}
    two = [node("n1"), _csi_node("n1", 2), *_volume("old", "h1"), _uses(pod("r").on("n1").cpu_m(100), "old"),
           *_volume("shared", "h2"), _uses(pod("p").cpu_m(100), "shared"), _uses(pod("q").cpu_m(100), "shared")]
    assert _plans(two) == {"model": {"p": "n1", "q": "n1"}, "baseline": {"p": "n1", "q": "n1"}}


def test_of_two_pods_with_a_new_volume_each_one_fits_the_last_slot() -> None:
    objs = [node("n1"), _csi_node("n1", 2), *_volume("old", "h1"), _uses(pod("r").on("n1").cpu_m(100), "old"),
            *_volume("a", "h2"), *_volume("b", "h3"), _uses(pod("p").cpu_m(100), "a"), _uses(pod("q").cpu_m(100), "b")]
    plans = _plans(objs)
    assert [len(p) for p in plans.values()] == [1, 1]
    assert _refused(objs, {"p": "n1", "q": "n1"}) == ["volume-limits"]


def test_volume_attachments_and_unbound_claims_count_too() -> None:
    """A VolumeAttachment holds a volume on the node; a claim not bound yet counts as a volume
    of its class's provisioner."""
    attachment = {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": {"name": "va"},
                  "spec": {"attacher": DRIVER, "nodeName": "n1", "source": {"persistentVolumeName": "pv-h1"}}}
    late = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "csi"},
            "provisioner": DRIVER, "volumeBindingMode": "WaitForFirstConsumer"}
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "late", "namespace": "default"},
             "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                      "storageClassName": "csi"}}
    base = [node("n1"), _csi_node("n1", 1), *_volume("old", "h1"), attachment, late, claim]
    assert _plans([*base, _uses(pod("p").cpu_m(100), "late")]) == {"model": {}, "baseline": {}}
    assert _plans([*base, _uses(pod("p").cpu_m(100), "old")]) == {"model": {"p": "n1"}, "baseline": {"p": "n1"}}
    # without the attachment the slot is free
    assert _plans([*base[:3], late, claim, _uses(pod("p").cpu_m(100), "late")]) == {
        "model": {"p": "n1"}, "baseline": {"p": "n1"}}


def test_a_driver_that_must_be_on_the_node_bars_nodes_without_it() -> None:
    driver = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": DRIVER},
              "spec": {"preventPodSchedulingIfMissing": True}}
    objs = [node("n1"), node("n2").cpu_m(1000), _csi_node("n2", driver="other.example.com"), driver,
            *_volume("data", "h1"), _uses(pod("p").cpu_m(100), "data")]
    assert _plans(objs) == {"model": {}, "baseline": {}}
    assert _reason(objs).startswith(f"0/2 nodes are available: 2 {DRIVER} CSI driver is not installed on the node.")
    assert _refused(objs, {"p": "n1"}) == ["volume-limits"]
    assert _plans([*objs, _csi_node("n3"), node("n3").cpu_m(500)]) == {"model": {"p": "n3"}, "baseline": {"p": "n3"}}
    # without the CSIDriver's opt-in a node without the driver is fine
    assert _plans([o for o in objs if o is not driver]) == {"model": {"p": "n1"}, "baseline": {"p": "n1"}}


@pytest.mark.parametrize(("count", "message"), [
    (-1, "CSINode/n1: spec.drivers[0].allocatable.count: must be a 32-bit integer of at least 0, got -1"),
    ("3", "CSINode/n1: spec.drivers[0].allocatable.count: must be a 32-bit integer of at least 0, got '3'"),
])
def test_a_bad_count_is_refused_naming_the_field(count: object, message: str) -> None:
    bad = _csi_node("n1", 1)
    bad["spec"]["drivers"][0]["allocatable"]["count"] = count
    with pytest.raises(SnapshotInvalidError, match=message.replace("[", r"\[").replace("]", r"\]")):
        reading.read([node("n1").build(), bad])


def test_evicting_frees_no_volume_slot() -> None:
    """The pod holding the node's one slot is of lower priority: gangplace keeps a victim's
    volumes counted (attach.py), so it neither evicts it for the slot nor says it would."""
    objs = [node("n1"), _csi_node("n1", 1), *_volume("old", "h1"), _uses(pod("r").on("n1").cpu_m(100), "old"),
            *_volume("new", "h2"), _uses(pod("p").cpu_m(100).priority(100), "new")]
    plan = api.plan(snapshot(*objs), api.PlanOptions(time_limit=10))
    assert not plan.bindings and not plan.evictions
    assert _reason(objs) == ("0/1 nodes are available: 1 node(s) exceed max volume count. preemption: 0/1 nodes "
                             "are available: 1 node(s) exceed max volume count.")


def test_a_volume_is_the_pods_own_again_once_its_holders_are_evicted() -> None:
    """n1 is past its limit (0) with r's volume. p shares that volume, so it adds none while r
    stays; but p needs r's cpu, and once r is evicted the volume would be p's own, past the
    limit: upstream refuses it, and so does every plan."""
    objs = [node("n1").cpu_m(1000), _csi_node("n1", 0), *_volume("old", "h1"),
            _uses(pod("r").on("n1").cpu_m(1000), "old"), _uses(pod("p").cpu_m(500).priority(100), "old")]
    assert _plans(objs) == {"model": {}, "baseline": {}}
    roomy = [node("n1").cpu_m(2000), *objs[1:]]  # room beside r: p goes, r stays
    assert _plans(roomy) == {"model": {"p": "n1"}, "baseline": {"p": "n1"}}


def test_no_eviction_takes_a_volume_from_a_pod_placed_beside_its_holder() -> None:
    """n1 is past its limit (0) with r's volume; a gang of two (minCount 1) shares it, and one
    fits beside r. The second needs r's cpu, but evicting r would leave the first adding the
    volume, past the limit (the verifier binds after the evictions, as upstream's Filter would
    see it): the model keeps r, and so does the baseline, whose greedy walk placed the first
    before it looked for victims (found by the thorough property profile)."""
    objs = [node("n1").cpu_m(1000), _csi_node("n1", 0), *_volume("old", "h1"),
            _uses(pod("r").on("n1").cpu_m(500), "old"), pod_group("g", 1).priority(100),
            *(_uses(pod(f"g{i}").group("g").cpu_m(500), "old") for i in range(2))]
    assert _plans(objs) == {"model": {"g0": "n1"}, "baseline": {"g0": "n1"}}
    for options in (api.PlanOptions(time_limit=10), api.PlanOptions(baseline_only=True)):
        assert not api.plan(snapshot(*objs), options).evictions


# ---- CSI migration: in-tree volumes counted under the CSI driver they translate to -------------
EBS = "ebs.csi.aws.com"


def _inline(p: Any, **sources: dict[str, Any]) -> Any:
    """``p`` with one inline volume per keyword (volume name -> {source: fields})."""
    p.obj["spec"]["volumes"] = [{"name": name, **source} for name, source in sources.items()]
    return p


def _ebs(volume_id: str) -> dict[str, Any]:
    return {"awsElasticBlockStore": {"volumeID": volume_id}}


def test_an_inline_in_tree_volume_counts_under_the_csi_driver_it_migrates_to() -> None:
    """An inline EBS volume is an ebs.csi.aws.com volume to NodeVolumeLimits; ``aws://zone/vol-1``
    and ``vol-1`` are one volume (the translation drops the zone)."""
    base = [node("n1"), _csi_node("n1", 1, driver=EBS), _inline(pod("r").on("n1").cpu_m(100), a=_ebs("aws://us-east-1a/vol-1"))]
    new = [*base, _inline(pod("p").cpu_m(100), a=_ebs("vol-2"))]
    assert _plans(new) == {"model": {}, "baseline": {}}
    assert _reason(new).startswith("0/1 nodes are available: 1 node(s) exceed max volume count.")
    assert _refused(new, {"p": "n1"}) == ["volume-limits"]
    same = [*base, _inline(pod("p").cpu_m(100), a=_ebs("vol-1"))]
    assert _plans(same) == {"model": {"p": "n1"}, "baseline": {"p": "n1"}}
    # the limit is ebs.csi.aws.com's: a node limiting another driver only takes it
    other = [node("n1"), _csi_node("n1", 0), _inline(pod("p").cpu_m(100), a=_ebs("vol-2"))]
    assert _plans(other) == {"model": {"p": "n1"}, "baseline": {"p": "n1"}}


def _gce_pd(claim: str, disk: str, zone: str) -> list[dict[str, Any]]:
    """A claim bound to a GCE PD PersistentVolume in ``zone`` (an in-tree volume)."""
    return [{"apiVersion": "v1", "kind": "PersistentVolume",
             "metadata": {"name": f"pv-{disk}", "labels": {"topology.kubernetes.io/zone": zone}},
             "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                      "claimRef": {"namespace": "default", "name": claim}, "gcePersistentDisk": {"pdName": disk}}},
            {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
             "metadata": {"name": claim, "namespace": "default",
                          "annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
             "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                      "volumeName": f"pv-{disk}", "storageClassName": ""}}]


def test_an_in_tree_persistent_volume_and_an_in_tree_provisioner_count_too() -> None:
    """A claim bound to a GCE PD PersistentVolume is a pd.csi.storage.gke.io volume with the
    zonal handle its zone label gives; a claim not bound whose class provisions with
    kubernetes.io/gce-pd counts under the CSI driver; Azure File and vSphere, whose migration the
    scheduler has off, count for nothing."""
    gce = "pd.csi.storage.gke.io"
    cls = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "pd"},
           "provisioner": "kubernetes.io/gce-pd", "volumeBindingMode": "WaitForFirstConsumer"}
    late = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "late", "namespace": "default"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                     "storageClassName": "pd"}}
    base = [node("n1"), _csi_node("n1", 1, driver=gce), *_gce_pd("disk", "d1", "europe-west1-b"), cls, late,
            _uses(pod("r").on("n1").cpu_m(100), "disk")]
    assert _plans([*base, _uses(pod("p").cpu_m(100), "late")]) == {"model": {}, "baseline": {}}
    assert _refused([*base, _uses(pod("p").cpu_m(100), "late")], {"p": "n1"}) == ["volume-limits"]
    # the same disk inline is another handle (no zone: projects/UNSPECIFIED/zones/UNSPECIFIED/...)
    inline = [*base, _inline(pod("p").cpu_m(100), a={"gcePersistentDisk": {"pdName": "d1"}})]
    assert _plans(inline) == {"model": {}, "baseline": {}}
    kept = [*base, _uses(pod("p").cpu_m(100), "disk")]
    assert _plans(kept) == {"model": {"p": "n1"}, "baseline": {"p": "n1"}}
    off = [*base, _inline(pod("p").cpu_m(100), a={"azureFile": {"secretName": "s", "shareName": "x"}},
                          b={"vsphereVolume": {"volumePath": "[ds] v.vmdk"}})]
    assert _plans(off) == {"model": {"p": "n1"}, "baseline": {"p": "n1"}}


def test_an_inline_volume_the_translation_refuses_fails_the_pod_where_nodes_have_a_csinode() -> None:
    """Upstream's Filter errors on an Azure Disk that is not managed (and on a malformed EBS
    ID): the pod is placed nowhere, with that error, once any node has a CSINode; a running
    pod's such volume is not counted, with a warning."""
    shared = {"azureDisk": {"diskName": "d", "diskURI": "https://x/d.vhd", "kind": "Shared"}}
    objs = [node("n1"), _csi_node("n1", 4, driver="disk.csi.azure.com"), _inline(pod("p").cpu_m(100), a=shared)]
    assert _plans(objs) == {"model": {}, "baseline": {}}
    assert "converting volume(a) from inline to csi: kind(Shared) is not supported in csi migration" in _reason(objs)
    assert _refused(objs, {"p": "n1"}) == ["binding"]
    bad = [node("n1"), _csi_node("n1", 4, driver=EBS), _inline(pod("p").cpu_m(100), a=_ebs("aws://zone/snap-1"))]
    assert "Invalid format for AWS volume (aws://zone/snap-1)" in _reason(bad)
    # no CSINode anywhere: the scheduler translates nothing
    assert _plans([node("n1"), _inline(pod("p").cpu_m(100), a=shared)]) == {"model": {"p": "n1"}, "baseline": {"p": "n1"}}
    running = [*objs[:2], _inline(pod("r").on("n1").cpu_m(100), a=shared), pod("q").cpu_m(100)]
    plan = api.plan(snapshot(*running), api.PlanOptions(time_limit=10))
    assert [b.pod for b in plan.bindings] == ["default/q"]
    assert any("default/r" in w and "kind(Shared)" in w for w in plan.warnings), plan.warnings


def test_a_migrated_driver_that_must_be_on_the_node_bars_nodes_with_a_csinode_without_it() -> None:
    """preventPodSchedulingIfMissing on ebs.csi.aws.com bars a node whose CSINode lacks it. On a
    node with no CSINode upstream translates nothing and so passes the pod; gangplace bars it
    too (stricter, docs/fidelity.md), and the verifier, which reads upstream's rule, accepts
    that binding."""
    driver = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": EBS},
              "spec": {"preventPodSchedulingIfMissing": True}}
    objs = [node("n1"), _csi_node("n1", driver="other.example.com"), driver, _inline(pod("p").cpu_m(100), a=_ebs("vol-1"))]
    assert _plans(objs) == {"model": {}, "baseline": {}}
    assert _refused(objs, {"p": "n1"}) == ["volume-limits"]
    bare = [node("n2"), driver, _inline(pod("p").cpu_m(100), a=_ebs("vol-1"))]
    assert _plans(bare) == {"model": {}, "baseline": {}}
    assert _refused(bare, {"p": "n2"}) == []
