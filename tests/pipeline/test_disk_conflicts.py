"""VolumeRestrictions' inline disks (volume_restrictions.go ``satisfyVolumeConflicts``,
``isVolumeConflict``): two pods on one node may not share a GCE PD, an iSCSI target or an RBD
image unless both mount it read-only, nor an EBS volume at all. Each case asserts the model's
plan and the baseline's (both verified), and that the verifier refuses what upstream refuses."""

from __future__ import annotations

from typing import Any

import pytest

from solver import api, reading
from solver.core.errors import SnapshotInvalidError
from tests.builders import node, pod, pod_group, snapshot
from tests.pipeline.test_refusals import _plans as _plans_of
from tests.pipeline.test_refusals import _refused
from tests.pipeline.test_volume_limits import _inline


def _plans(objs: list[Any]) -> dict[str, dict[str, str]]:
    return _plans_of(*objs)


def gce(disk: str, read_only: bool = False) -> dict[str, Any]:
    return {"gcePersistentDisk": {"pdName": disk, "readOnly": read_only}}


def test_a_node_whose_pod_mounts_a_disk_read_write_takes_no_other_pod_mounting_it() -> None:
    objs = [node("n1"), _inline(pod("r").on("n1").cpu_m(100), a=gce("d1")), _inline(pod("p").cpu_m(100), a=gce("d1"))]
    assert _plans(objs) == {"model": {}, "baseline": {}}
    plan = api.plan(snapshot(*objs), api.PlanOptions(time_limit=10))
    assert plan.workloads[0].reason == ("0/1 nodes are available: 1 node(s) had no available disk. preemption: "
                                        "0/1 nodes are available: 1 No preemption victims found for incoming pod.")
    assert _refused(objs, {"p": "n1"}) == ["volume-restrictions"]
    assert _plans([*objs, node("n2").cpu_m(1000)]) == {"model": {"p": "n2"}, "baseline": {"p": "n2"}}
    # another disk, or both read-only: no conflict
    assert _plans([*objs[:2], _inline(pod("p").cpu_m(100), a=gce("d2"))]) == {"model": {"p": "n1"}, "baseline": {"p": "n1"}}
    ro = [node("n1"), _inline(pod("r").on("n1").cpu_m(100), a=gce("d1", True)),
          _inline(pod("p").cpu_m(100), a=gce("d1", True))]
    assert _plans(ro) == {"model": {"p": "n1"}, "baseline": {"p": "n1"}}
    assert _refused(ro, {"p": "n1"}) == []


def test_an_ebs_volume_conflicts_even_read_only() -> None:
    ebs = {"awsElasticBlockStore": {"volumeID": "vol-1", "readOnly": True}}
    objs = [node("n1"), _inline(pod("r").on("n1").cpu_m(100), a=ebs), _inline(pod("p").cpu_m(100), a=ebs)]
    assert _plans(objs) == {"model": {}, "baseline": {}}
    assert _refused(objs, {"p": "n1"}) == ["volume-restrictions"]


def test_rbd_images_are_one_when_they_share_a_monitor_pool_and_image() -> None:
    def rbd(monitors: list[str], pool: str | None = None) -> dict[str, Any]:
        return {"rbd": {"monitors": monitors, "image": "img", **({"pool": pool} if pool else {})}}

    base = [node("n1"), _inline(pod("r").on("n1").cpu_m(100), a=rbd(["m1", "m2"]))]
    assert _plans([*base, _inline(pod("p").cpu_m(100), a=rbd(["m2", "m3"], "rbd"))]) == {"model": {}, "baseline": {}}
    assert _plans([*base, _inline(pod("p").cpu_m(100), a=rbd(["m3"]))]) == {"model": {"p": "n1"}, "baseline": {"p": "n1"}}
    assert _plans([*base, _inline(pod("p").cpu_m(100), a=rbd(["m1"], "other"))]) == {
        "model": {"p": "n1"}, "baseline": {"p": "n1"}}


def test_pending_pods_mounting_one_target_spread_unless_all_read_only() -> None:
    """Two pods of one shape mounting an iSCSI target read-write take a node each; read-only,
    one node takes both; beside read-only ones a read-write pod does not fit."""
    def iscsi(read_only: bool) -> dict[str, Any]:
        return {"iscsi": {"targetPortal": "10.0.0.1:3260", "iqn": "iqn.2026-01.io.example:t", "lun": 0,
                          "readOnly": read_only}}

    rw = [node("n1"), node("n2").cpu_m(1000), *(_inline(pod(f"p{i}").cpu_m(100), a=iscsi(False)) for i in range(2))]
    plans = _plans(rw)
    assert sorted(plans["model"].values()) == ["n1", "n2"] and sorted(plans["baseline"].values()) == ["n1", "n2"]
    assert _refused(rw, {"p0": "n1", "p1": "n1"}) == ["volume-restrictions"]
    ro = [node("n1"), *(_inline(pod(f"p{i}").cpu_m(100), a=iscsi(True)) for i in range(2)),
          _inline(pod("w").cpu_m(100), a=iscsi(False))]
    assert _plans(ro) == {"model": {"p0": "n1", "p1": "n1"}, "baseline": {"p0": "n1", "p1": "n1"}}
    # a gang of two read-only pods (one class) beside a read-write pod: the gang takes the node,
    # both its pods on it (the class is not held to one pod by the read-write one left out)
    gang = [node("n1"), pod_group("g", 2), *(_inline(pod(f"g{i}").group("g").cpu_m(100), a=iscsi(True))
                                             for i in range(2)), _inline(pod("w").cpu_m(100), a=iscsi(False))]
    assert _plans(gang) == {"model": {"g0": "n1", "g1": "n1"}, "baseline": {"g0": "n1", "g1": "n1"}}


def test_a_lower_priority_pod_holding_the_disk_is_preempted() -> None:
    objs = [node("n1"), _inline(pod("r").on("n1").cpu_m(100), a=gce("d1")),
            _inline(pod("p").cpu_m(100).priority(100), a=gce("d1"))]
    for options in (api.PlanOptions(time_limit=10), api.PlanOptions(baseline_only=True)):
        plan = api.plan(snapshot(*objs), options)
        assert [(b.pod, b.node) for b in plan.bindings] == [("default/p", "n1")]
        assert [e.pod for e in plan.evictions] == ["default/r"]


@pytest.mark.parametrize(("volume", "message"), [
    ({"gcePersistentDisk": {"pdName": "d", "readOnly": "yes"}},
     r"spec.volumes\[0\].gcePersistentDisk.readOnly: expected a boolean, got str"),
    ({"rbd": {"image": "i", "monitors": "m1"}}, r"spec.volumes\[0\].rbd.monitors: expected a list of strings"),
    ({"iscsi": {"iqn": 7}}, r"spec.volumes\[0\].iscsi.iqn: expected a string, got int"),
])
def test_a_bad_disk_is_refused_naming_the_field(volume: dict[str, Any], message: str) -> None:
    p = _inline(pod("p").cpu_m(100), a=volume)
    with pytest.raises(SnapshotInvalidError, match=message):
        reading.read([node("n1").build(), p.build()])
