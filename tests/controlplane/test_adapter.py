"""The adapter end to end on the real kube-apiserver 1.37.2, as deploy/base's ServiceAccount.

What the API server double (tests/apiserver.py) cannot show is shown here: the real RBAC, the
Eviction API judged against PDB status the disruption controller computed, strict field
validation of every object the adapter writes, the real watch and Lease semantics. Faults that
cannot be injected into the real server (a hung renewal, a 500 on one request) stay on the
double (tests/adapter/test_faults.py).

Every test here runs under the capacity watch (conftest.py ``capacity``, tests/capacity.py): a
thread watching the pods fails the test if at any event a node's bound pods, those still
terminating included, requested more than its allocatable. A victim held terminating by a
kubelet that takes its time (``test_the_gang_is_bound_only_once_its_victim_is_gone``) is what
makes that check bite: the running pods here are otherwise deleted at once (grace 0)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from adapter.cluster import Cluster
from adapter.controller import CONDITION
from adapter.main import Adapter, in_process
from tests.adapter.test_e2e import CrashingCluster, die_mid_plan, run_until
from tests.builders import RACK, gang_scenario, node, ours, pod, pod_group
from tests.controlplane.conftest import CapacityWatch, Real
from tests.dra_builders import gpu_slice

LEASE_NS = "gangplace"
pytestmark = pytest.mark.usefixtures("capacity")


def _pdb(name: str, min_available: int, **labels: str) -> dict[str, Any]:
    """A PDB without status: the disruption controller computes disruptionsAllowed (an integer
    minAvailable, since the bare pods here have no controller to give an expected count)."""
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": "default"},
            "spec": {"minAvailable": min_available, "selector": {"matchLabels": labels}}}


def _cluster(real: Real, *, pdb_min_available: int | None = None) -> None:
    """builders.gang_scenario on the real API server, with a PDB over app=batch when asked."""
    if pdb_min_available is not None:
        real.put(_pdb("batch", pdb_min_available, app="batch"))
    gang_scenario(real.put)


def _adapter(kubeconfig: Path, identity: str = "a", **kw: Any) -> Adapter:
    return Adapter(Cluster.connect(str(kubeconfig)), in_process(5.0), renew=0.2, identity=identity,
                   lease_namespace=LEASE_NS, **kw)


def _run(adapter: Adapter, until: Callable[[], bool], *, timeout: float = 60.0) -> Adapter:
    return run_until(adapter, until, timeout=timeout, poll=0.1)


def _condition(real: Real, group: str) -> dict[str, Any] | None:
    obj = real.podgroup(group) or {}
    return next((c for c in obj.get("status", {}).get("conditions", []) if c["type"] == CONDITION), None)


def _pdb_allowed(real: Real, name: str) -> int | None:
    obj = real.get(f"/apis/policy/v1/namespaces/default/poddisruptionbudgets/{name}") or {}
    status = obj.get("status", {})
    return status.get("disruptionsAllowed") if status.get("observedGeneration") else None


def _no_refusals(real: Real) -> list[tuple[str, str, str, int, str]]:
    calls = real.adapter_calls()
    assert not [c for c in calls if c[3] in (401, 403)], f"the adapter's RBAC refused: {calls}"
    return calls


def test_a_gang_is_bound_with_the_victims_it_needs_evicted_through_the_eviction_api(
        real: Real, adapter_kubeconfig: Path) -> None:
    _cluster(real, pdb_min_available=1)  # 2 Ready batch pods: 1 may go
    deadline = time.monotonic() + 30
    while _pdb_allowed(real, "batch") != 1:  # the disruption controller counts the Ready pods
        assert time.monotonic() < deadline, "the disruption controller never computed the PDB"
        time.sleep(0.2)
    _run(_adapter(adapter_kubeconfig), lambda: bool(real.node_of("train-0") and real.node_of("train-1")
                                                    and _condition(real, "train")))
    assert (real.node_of("train-0"), real.node_of("train-1")) == ("n1", "n1")
    assert real.pod("low-b") is None and all(real.pod(p) for p in ("low-a", "keep", "vip"))
    calls = _no_refusals(real)
    assert [(c[4], c[3]) for c in calls if c[2] == "eviction"] == [("low-b", 201)]
    assert sorted((c[4], c[3]) for c in calls if c[2] == "binding") == [("train-0", 201), ("train-1", 201)]
    cond = _condition(real, "train")
    assert cond is not None and (cond["status"], cond["reason"]) == ("True", "Scheduled")
    assert [c[3] for c in calls if c[1] == "events"] == [201] * 3, calls
    reasons = sorted(e["reason"] for e in real.events())
    assert reasons.count("Scheduled") == 2 and reasons.count("Preempted") == 1


SLOW_KUBELET = "gangplace.io/test-kubelet"  # the finalizer a test's kubelet removes when it is done


def test_the_gang_is_bound_only_once_its_victim_is_gone(real: Real, adapter_kubeconfig: Path,
                                                         capacity: CapacityWatch) -> None:
    """low-b is evicted, then takes 2 s to terminate (a finalizer a kubelet thread removes 2 s
    after its deletionTimestamp appears): the adapter waits for it, so n1 never holds low-b's
    3,000m beside the gang's 4,000m."""
    for name, rack in (("n0", "r0"), ("n1", "r0"), ("n2", "r1")):
        real.put(node(name).rack(rack).cpu_m(4000).build())
    real.put(pod("low-a").on("n0").cpu_m(3000).priority(1).build())
    slow = pod("low-b").on("n1").cpu_m(3000).priority(1).build()
    slow["metadata"]["finalizers"] = [SLOW_KUBELET]
    real.put(slow)
    real.put(pod("keep").on("n0").cpu_m(500).priority(1000).build())
    real.put(pod("vip").on("n2").cpu_m(3500).priority(1000).build())
    real.put(pod_group("train", 2).topology(RACK).priority(100).build())
    for k in range(2):
        real.put(ours(pod(f"train-{k}").group("train").priority(100).cpu_m(2000)))
    stop = threading.Event()

    def kubelet() -> None:
        while not stop.wait(0.1):
            if (real.pod("low-b") or {}).get("metadata", {}).get("deletionTimestamp"):
                stop.wait(2.0)
                real.rest.call("PATCH", "/api/v1/namespaces/default/pods/low-b", {"metadata": {"finalizers": None}},
                               content_type="application/merge-patch+json")
                return

    helper = threading.Thread(target=kubelet, daemon=True)
    helper.start()
    try:
        _run(_adapter(adapter_kubeconfig), lambda: bool(real.node_of("train-0") and real.node_of("train-1")
                                                        and _condition(real, "train")))
    finally:
        stop.set()
        helper.join(10)
    assert (real.node_of("train-0"), real.node_of("train-1")) == ("n1", "n1") and real.pod("low-b") is None
    # in the watch's order: low-b terminating, then gone, and only then a binding
    events = [(t, k, n, d) for t, k, n, d in capacity.log if k in ("default/low-b", "default/train-0",
                                                                     "default/train-1")]
    gone = events.index(("DELETED", "default/low-b", "n1", True))
    first_bound = min(i for i, (_, k, n, _) in enumerate(events) if k != "default/low-b" and n)
    assert any(e[1:] == ("default/low-b", "n1", True) for e in events[:gone]) and first_bound > gone, events
    assert [(c[4], c[3]) for c in _no_refusals(real) if c[2] == "eviction"] == [("low-b", 201)]


def test_a_pdb_the_disruption_controller_closed_keeps_the_gang_pending_without_evicting(
        real: Real, adapter_kubeconfig: Path) -> None:
    _cluster(real, pdb_min_available=2)  # neither may go
    deadline = time.monotonic() + 30
    while _pdb_allowed(real, "batch") != 0:
        assert time.monotonic() < deadline, "the disruption controller never computed the PDB"
        time.sleep(0.2)
    _run(_adapter(adapter_kubeconfig), lambda: _condition(real, "train") is not None)
    cond = _condition(real, "train")
    assert cond is not None and (cond["status"], cond["reason"]) == ("False", "Unschedulable")
    assert real.node_of("train-0") is None and real.node_of("train-1") is None
    assert not [c for c in _no_refusals(real) if c[2] in ("eviction", "binding")]


@pytest.mark.usefixtures("soft_rbac")  # the base grants no pod delete: deploy/components/pdb-soft does
def test_the_soft_policy_deletes_the_victim_a_closed_pdb_protects_as_kube_scheduler_does(
        real: Real, adapter_kubeconfig: Path) -> None:
    # the same closed budget: with --pdb-policy soft the plan breaks it (tier 3) and the victim is
    # deleted, not evicted (the Eviction API would refuse it), after its DisruptionTarget condition
    _cluster(real, pdb_min_available=2)
    deadline = time.monotonic() + 30
    while _pdb_allowed(real, "batch") != 0:
        assert time.monotonic() < deadline, "the disruption controller never computed the PDB"
        time.sleep(0.2)
    adapter = _adapter(adapter_kubeconfig, pdb_policy="soft")
    adapter.solve = in_process(5.0, "soft")
    _run(adapter, lambda: bool(real.node_of("train-0") and real.node_of("train-1") and _condition(real, "train")))
    assert (real.node_of("train-0"), real.node_of("train-1")) == ("n1", "n1")
    assert adapter.plans[-1].objective.pdb_violations == 1 and adapter.plans[-1].stats["pdbPolicy"] == "soft"
    calls = _no_refusals(real)
    assert not [c for c in calls if c[2] == "eviction"]
    assert [(c[0], c[4], c[3]) for c in calls if c[1] == "pods" and c[0] == "delete"] == [("delete", "low-b", 200)]
    patched = [c for c in calls if c[1] == "pods" and c[2] == "status" and c[4] == "low-b"]
    assert [c[3] for c in patched] == [200]
    assert real.pod("low-b") is None


def _autoscaler_sees(pod: dict[str, Any]) -> bool:
    """Cluster Autoscaler's test for a pod to scale up for (utils/kubernetes/listers.go:
    NewUnschedulablePodInNamespaceLister's field selector, then UnschedulablePodLister.List):
    no node, not Succeeded or Failed, and PodScheduled False with reason Unschedulable."""
    if pod["spec"].get("nodeName") or pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
        return False
    cond = next((c for c in pod.get("status", {}).get("conditions", []) if c["type"] == "PodScheduled"), None)
    return cond is not None and cond["status"] == "False" and cond.get("reason") == "Unschedulable"


def test_a_gang_that_cannot_fit_stays_pending_with_its_condition_false(real: Real, adapter_kubeconfig: Path) -> None:
    """Left pending, the group says why and so does every pod, in the PodScheduled condition
    Cluster Autoscaler scales up for; once a node makes room, the binding sets it True."""
    for name, rack in (("n0", "r0"), ("n1", "r0"), ("n2", "r1")):
        real.put(node(name).rack(rack).cpu_m(4000).build())
    real.put(pod_group("train", 3).topology(RACK).priority(100).build())
    for k in range(3):  # 3 pods of 3 cpu in one rack of two 4-cpu nodes: never
        real.put(ours(pod(f"train-{k}").group("train").priority(100).cpu_m(3000)))
    real.put(ours(pod("huge").cpu_m(64000)))  # a pod of its own that no node can take
    names = [f"train-{k}" for k in range(3)] + ["huge"]
    _run(_adapter(adapter_kubeconfig), lambda: _condition(real, "train") is not None and all(
        _autoscaler_sees(real.pod(n) or {"spec": {}}) for n in names))
    cond = _condition(real, "train")
    assert cond is not None and (cond["status"], cond["reason"]) == ("False", "Unschedulable") and cond["message"]
    scheduled = {n: next(c for c in (real.pod(n) or {})["status"]["conditions"] if c["type"] == "PodScheduled")
                 for n in names}
    assert {scheduled[f"train-{k}"]["message"] for k in range(3)} == {cond["message"]}
    assert scheduled["huge"]["message"] == ("0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are "
                                            "available: 3 Preemption is not helpful for scheduling.")
    assert not [c for c in _no_refusals(real) if c[2] in ("binding", "eviction")]
    assert "FailedScheduling" in {e["reason"] for e in real.events()}
    # room in rack r0: the gang is bound, and the API server turns PodScheduled True
    real.put(node("n3").rack("r0").cpu_m(4000).build())
    _run(_adapter(adapter_kubeconfig),
         lambda: all((real.pod(f"train-{k}") or {}).get("spec", {}).get("nodeName") for k in range(3)))
    for k in range(3):
        got = real.pod(f"train-{k}") or {}
        assert not _autoscaler_sees(got)
        assert [c["status"] for c in got["status"]["conditions"] if c["type"] == "PodScheduled"] == ["True"]
    assert _autoscaler_sees(real.pod("huge") or {})


def test_a_pod_stuck_terminating_keeps_its_room_and_is_not_evicted_again(real: Real, adapter_kubeconfig: Path) -> None:
    # low-b hangs on a finalizer (no kubelet, and a finalizer nobody removes): its 3 cpu stay
    # taken, so the gang must not be bound into that room, nor low-b evicted again
    for name, rack in (("n0", "r0"), ("n1", "r0"), ("n2", "r1")):
        real.put(node(name).rack(rack).cpu_m(4000).build())
    real.put(pod("low-a").on("n0").cpu_m(3000).priority(1000).build())
    stuck = pod("low-b").on("n1").cpu_m(3000).priority(1).build()
    stuck["metadata"]["deletionTimestamp"] = "2026-12-01T00:00:30Z"  # created held, then deleted
    real.put(stuck)
    real.put(pod("vip").on("n2").cpu_m(3500).priority(1000).build())
    real.put(pod_group("train", 2).topology(RACK).priority(100).build())
    for k in range(2):
        real.put(ours(pod(f"train-{k}").group("train").priority(100).cpu_m(2000)))
    assert (real.pod("low-b") or {}).get("metadata", {}).get("deletionTimestamp")
    _run(_adapter(adapter_kubeconfig), lambda: _condition(real, "train") is not None)
    cond = _condition(real, "train")
    assert cond is not None and (cond["status"], cond["reason"]) == ("False", "Unschedulable")
    assert real.node_of("train-0") is None and real.node_of("train-1") is None
    assert not [c for c in _no_refusals(real) if c[2] == "eviction"]


def test_restarted_it_relists_and_binds_only_what_is_left(real: Real, adapter_kubeconfig: Path) -> None:
    _cluster(real)
    _run(_adapter(adapter_kubeconfig, identity="first"), lambda: bool(real.node_of("train-0")))
    # a second gang arrives while no adapter runs; a new process lists everything again
    real.put(pod_group("infer", 1).priority(100).build())
    real.put(ours(pod("infer-0").group("infer").priority(100).cpu_m(500)))
    _run(_adapter(adapter_kubeconfig, identity="second"),
         lambda: bool(real.node_of("infer-0") and real.node_of("train-1")))
    bindings = sorted(c[4] for c in _no_refusals(real) if c[2] == "binding" and c[3] == 201)
    assert bindings == ["infer-0", "train-0", "train-1"]  # each pod bound once, by either process


def test_two_adapters_only_the_lease_holder_acts(real: Real, adapter_kubeconfig: Path) -> None:
    _cluster(real)
    a, b = _adapter(adapter_kubeconfig, identity="a"), _adapter(adapter_kubeconfig, identity="b")
    stop = threading.Event()
    threads = [threading.Thread(target=x.run, args=(stop,), daemon=True) for x in (a, b)]
    for t in threads:
        t.start()
    try:
        deadline = time.monotonic() + 60
        while not (real.node_of("train-0") and real.node_of("train-1")):
            assert time.monotonic() < deadline
            time.sleep(0.1)
        lease = real.get(f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NS}/leases/gangplace-adapter")
        assert lease is not None and lease["spec"]["holderIdentity"] in ("a", "b")
        time.sleep(0.5)
    finally:
        stop.set()
        for t in threads:
            t.join(15)
    acted = [x.elector.identity for x in (a, b) if x.outcomes]
    assert acted == [lease["spec"]["holderIdentity"]]
    assert len([c for c in _no_refusals(real) if c[2] == "binding" and c[3] == 201]) == 2


def test_dra_claims_from_templates_are_allocated_and_reserved_before_binding(
        real: Real, adapter_kubeconfig: Path) -> None:
    from tests.dra_builders import two_gpu_gang

    two_gpu_gang(real.put)
    _run(_adapter(adapter_kubeconfig), lambda: bool(real.node_of("train-0") and real.node_of("train-1")))
    devices = []
    for k in range(2):
        status = (real.pod(f"train-{k}") or {})["status"]
        (entry,) = status["resourceClaimStatuses"]
        claim = real.get(f"/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/{entry['resourceClaimName']}")
        assert claim is not None and [r["name"] for r in claim["status"]["reservedFor"]] == [f"train-{k}"]
        devices += [r["device"] for r in claim["status"]["allocation"]["devices"]["results"]]
    assert sorted(devices) == ["gpu-0", "gpu-1"]
    claims = real.rest.call("GET", "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims")["items"]
    assert len(claims) == 2, [c["metadata"]["name"] for c in claims]  # one claim per pod, no duplicate
    _no_refusals(real)


def test_a_pod_bound_with_a_claim_allocated_before_joins_its_reservations(
        real: Real, adapter_kubeconfig: Path) -> None:
    """A claim allocated on n1 and reserved for its running pod r; p names it too. As
    kube-scheduler's PreBind does, the adapter adds p to reservedFor (the kubelet prepares the
    devices only for pods the claim is reserved for), keeping r, before it binds p there."""
    from tests.dra_builders import claim, device_class, request, with_claims

    held = claim("shared", request("gpu"), allocated=[("n1", "gpu-0")], node="n1").build()
    status = held.pop("status")
    for obj in (node("n1").cpu_m(2000).build(), node("n2").cpu_m(4000).build(), gpu_slice("n1", 1).build(),
                device_class("gpu", 'device.driver == "gpu.example.com"').build(), held,
                with_claims(pod("r").on("n1").cpu_m(500), gpu="claim:shared").build()):
        real.put(obj)
    uid = (real.pod("r") or {})["metadata"]["uid"]
    status["reservedFor"] = [{"resource": "pods", "name": "r", "uid": uid}]
    real.rest.call("PATCH", "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/shared/status",
                   {"status": status}, content_type="application/merge-patch+json")
    real.put(ours(with_claims(pod("p").cpu_m(500), gpu="claim:shared")))
    _run(_adapter(adapter_kubeconfig), lambda: bool(real.node_of("p")))
    assert real.node_of("p") == "n1"
    got = real.get("/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/shared")
    assert got is not None
    assert got["status"]["reservedFor"] == [{"resource": "pods", "name": "r", "uid": uid},
                                            {"resource": "pods", "name": "p",
                                             "uid": (real.pod("p") or {})["metadata"]["uid"]}]
    assert got["status"]["allocation"]["devices"]["results"] == [
        {"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-0"}]
    # the adapter wrote it, before the binding: not kube-controller-manager's resourceclaim
    # controller, which reserves a claim for a pod it finds bound without one
    entry = f'k:{{"uid":"{got["status"]["reservedFor"][1]["uid"]}"}}'
    writers = [m["manager"] for m in got["metadata"]["managedFields"]
               if entry in m.get("fieldsV1", {}).get("f:status", {}).get("f:reservedFor", {})]
    assert writers and "kube-controller-manager" not in writers, got["metadata"]["managedFields"]
    _no_refusals(real)


def test_a_claim_two_pods_name_is_allocated_once_and_reserved_for_both(
        real: Real, adapter_kubeconfig: Path) -> None:
    """Two gangplace pods name one ResourceClaim: the adapter writes its allocation once,
    reserved for both (kube-apiserver accepts it), and binds both beside the device."""
    from tests.pipeline.test_rules_dra import _named_by_two

    for obj in _named_by_two(node("n1").cpu_m(4000), node("n2").cpu_m(4000), slices=[gpu_slice("n1", 1)]):
        real.put(ours(obj) if obj.obj["kind"] == "Pod" else obj.build())
    _run(_adapter(adapter_kubeconfig), lambda: bool(real.node_of("a") and real.node_of("b")))
    assert (real.node_of("a"), real.node_of("b")) == ("n1", "n1")
    got = real.get("/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/c")
    assert got is not None
    assert [r["device"] for r in got["status"]["allocation"]["devices"]["results"]] == ["gpu-0"]
    assert [(r["name"], r["uid"]) for r in got["status"]["reservedFor"]] == [
        (p, (real.pod(p) or {})["metadata"]["uid"]) for p in ("a", "b")]
    _no_refusals(real)


def test_admin_access_results_are_written_as_kube_apiserver_takes_them(
        real: Real, adapter_kubeconfig: Path) -> None:
    """DRAAdminAccess: in a namespace labelled for admin access, a monitoring pod's claim takes
    the GPU a running pod holds; the adapter writes the result with adminAccess, which
    kube-apiserver accepts, and the holder's claim keeps its device."""
    docs = json.loads((Path(__file__).resolve().parents[1] / "data" / "dra_upstream"
                       / "admin-access-beside-the-holder.json").read_text())
    for obj in docs:
        if obj["kind"] == "Pod" and not obj["spec"].get("nodeName"):
            obj["spec"]["schedulerName"] = "gangplace"
        real.put(obj)
    _run(_adapter(adapter_kubeconfig), lambda: bool(real.node_of("m1", "ops") and real.node_of("m2", "ops")))
    for name in ("m1", "m2"):
        (entry,) = (real.pod(name, "ops") or {})["status"]["resourceClaimStatuses"]
        claim = real.get(f"/apis/resource.k8s.io/v1/namespaces/ops/resourceclaims/{entry['resourceClaimName']}")
        assert claim is not None
        assert claim["status"]["allocation"]["devices"]["results"] == [
            {"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-0", "adminAccess": True}]
    _no_refusals(real)


def extended_resource_case(put: Callable[[dict[str, Any]], None]) -> None:
    """A DeviceClass serving example.com/gpu (DRAExtendedResource), two GPUs on n2, and a pod
    asking for two in its container requests; no node advertises the resource."""
    from tests.pipeline.test_extended_resources import asking, gpu_class

    for obj in (node("n1").build(), node("n2").build(), gpu_slice("n2", 2).build(), gpu_class(), ours(asking("p", 2))):
        put(obj)


def test_extended_resources_dra_serves_get_the_claim_kube_scheduler_would_make(
        real: Real, adapter_kubeconfig: Path) -> None:
    extended_resource_case(real.put)
    _run(_adapter(adapter_kubeconfig), lambda: bool(real.node_of("p")))
    assert real.node_of("p") == "n2"
    status = (real.pod("p") or {})["status"]["extendedResourceClaimStatus"]
    assert status["requestMappings"] == [{"containerName": "c", "resourceName": "example.com/gpu",
                                          "requestName": "container-0-request-1"}]
    claim = real.get(f"/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/{status['resourceClaimName']}")
    assert claim is not None
    assert claim["metadata"]["annotations"] == {"resource.kubernetes.io/extended-resource-claim": "true"}
    assert [r["name"] for r in claim["status"]["reservedFor"]] == ["p"]
    assert sorted(r["device"] for r in claim["status"]["allocation"]["devices"]["results"]) == ["gpu-0", "gpu-1"]
    _no_refusals(real)


def test_shares_of_one_device_are_written_with_their_share_ids_and_consumed_capacity(
        real: Real, adapter_kubeconfig: Path) -> None:
    """DRAConsumableCapacity: two pods' claims share n1's one GPU; kube-apiserver accepts each
    result's shareID and consumedCapacity as the adapter writes them."""
    from tests.pipeline.test_consumable_capacity import shared_case

    for obj in shared_case("16e9", None):
        real.put(ours(obj) if obj.obj["kind"] == "Pod" else obj.build())
    _run(_adapter(adapter_kubeconfig), lambda: bool(real.node_of("p0") and real.node_of("p1")))
    results = []
    for k in range(2):
        (entry,) = (real.pod(f"p{k}") or {})["status"]["resourceClaimStatuses"]
        claim = real.get(f"/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/{entry['resourceClaimName']}")
        assert claim is not None
        results += claim["status"]["allocation"]["devices"]["results"]
    assert [r["device"] for r in results] == ["gpu-s", "gpu-s"]
    assert results[0]["shareID"] != results[1]["shareID"]
    from solver.verify.read import amount

    assert [amount(r["consumedCapacity"]["memory"]) for r in results] == [15 * 2**30, 2**30]
    _no_refusals(real)


def test_a_claim_waiting_for_its_pod_gets_what_volume_bindings_prebind_writes(
        real: Real, adapter_kubeconfig: Path) -> None:
    """Before binding a pod, kube-scheduler's VolumeBinding PreBind binds its claims that wait
    for their first consumer: a local volume's claimRef names the claim (the PV controller then
    binds the claim), or, for a class that provisions, the claim's selected-node annotation
    starts provisioning there. Without it the kubelet would wait for the claim forever. The
    adapter writes both, as the real API server takes them."""
    from tests.pipeline.test_refusals import _class, _local_claims, _local_pv, _with_claim

    for obj in (node("n1").cpu_m(2000).build(), node("n2").cpu_m(4000).build(),
                _class("local", "WaitForFirstConsumer"),
                _class("made", "WaitForFirstConsumer", provisioner="example.com/made"),
                _local_pv("pv-small", "n1", "5Gi"), _local_pv("pv-big", "n1", "20Gi"),
                *_local_claims("data", size="4Gi")):
        real.put(obj)
    made = _local_claims("scratch")[0]
    made["spec"]["storageClassName"] = "made"
    real.put(made)
    deadline = time.monotonic() + 30  # the PV controller makes the volumes Available, as the scheduler needs
    while time.monotonic() < deadline and any((real.get(f"/api/v1/persistentvolumes/{v}") or {}).get(
            "status", {}).get("phase") != "Available" for v in ("pv-small", "pv-big")):
        time.sleep(0.5)
    real.put(ours(_with_claim(pod("p").cpu_m(500), "data")))
    real.put(ours(_with_claim(pod("q").cpu_m(500), "scratch")))
    _run(_adapter(adapter_kubeconfig), lambda: bool(real.node_of("p") and real.node_of("q")))
    assert real.node_of("p") == "n1"  # the only node with a volume for it
    volume = real.get("/api/v1/persistentvolumes/pv-small") or {}
    assert {k: volume["spec"]["claimRef"][k] for k in ("namespace", "name")} == {"namespace": "default", "name": "data"}
    assert "claimRef" not in (real.get("/api/v1/persistentvolumes/pv-big") or {})["spec"]  # the smallest that fits
    claim = real.get("/api/v1/namespaces/default/persistentvolumeclaims/scratch") or {}
    assert claim["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == real.node_of("q")
    deadline = time.monotonic() + 30  # kube-controller-manager's PV controller completes the binding
    while time.monotonic() < deadline and (real.get(
            "/api/v1/namespaces/default/persistentvolumeclaims/data") or {}).get("status", {}).get("phase") != "Bound":
        time.sleep(0.5)
    bound = real.get("/api/v1/namespaces/default/persistentvolumeclaims/data") or {}
    assert (bound.get("status", {}).get("phase"), bound["spec"].get("volumeName")) == ("Bound", "pv-small")
    _no_refusals(real)


@pytest.mark.parametrize("after", [4, 5], ids=["before-the-bindings", "after-the-first-binding"])
def test_killed_mid_plan_and_restarted_it_binds_each_pod_once_and_evicts_nothing_extra(
        real: Real, adapter_kubeconfig: Path, after: int) -> None:
    # a clean run writes (tests/adapter/test_e2e.py PHASES, less the pod left out there): the two
    # preemptors nominated, a Preempted event, the eviction, then bindings and Scheduled events
    # (each binding first), the group's condition. The process dies before write `after` (all
    # but the Lease's count: after the eviction / after the first binding) and never releases
    # its Lease, so the second process waits for it to expire
    _cluster(real)
    cluster = CrashingCluster(Cluster.connect(str(adapter_kubeconfig)), after)
    crashing = Adapter(cluster, in_process(5.0), renew=0.2, identity="first", lease_namespace=LEASE_NS,
                       lease_duration=2)
    die_mid_plan(crashing, rounds=20, pause=0.2, sync=20)
    made = [(method, "/".join(path.split("/")[-2:])) for method, path in cluster.made]
    assert len(made) == after, made
    assert sorted(made[:2]) == [("PATCH", "train-0/status"), ("PATCH", "train-1/status")], made
    assert made[2:4] == [("POST", "default/events"), ("POST", "low-b/eviction")], made
    assert after == 4 or made[4][1] in ("train-0/binding", "train-1/binding"), made
    _run(_adapter(adapter_kubeconfig, identity="second"),
         lambda: bool(real.node_of("train-0") and real.node_of("train-1") and _condition(real, "train")))
    calls = _no_refusals(real)
    assert sorted(c[4] for c in calls if c[2] == "binding") == ["train-0", "train-1"]  # no second try, no 409
    assert [(c[4], c[3]) for c in calls if c[2] == "eviction"] == [("low-b", 201)]
    nominated = sorted(c[4] for c in calls if c[1] == "pods" and c[2] == "status" and c[0] == "patch")
    assert nominated == ["train-0", "train-1"]  # once each: the second process sees them nominated
    assert all(real.pod(p) for p in ("low-a", "keep", "vip"))
