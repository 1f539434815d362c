"""DRA-backed extended resources (DRAExtendedResource, GA in 1.37): a container asks for
``example.com/gpu`` and a DeviceClass with that ``extendedResourceName`` serves it
(plugins/noderesources/fit.go shouldDelegateResourceToDRA, plugins/dynamicresources/
extendeddynamicresources.go, dynamic-resource-allocation/deviceclass/extendedresourcecache)."""

from __future__ import annotations

from typing import Any

import pytest

from solver import api, reading, verify
from solver.core import snapshot as s
from solver.kube.dra import EXTENDED_CLAIM, extended_requests, extended_resource_classes
from tests.builders import admitted, node, pod
from tests.dra_builders import device_class, gpu_slice

GPU = "example.com/gpu"


def gpu_class(name: str = "gpu", resource: str | None = GPU, created: str = "2026-01-01T00:00:00Z") -> dict[str, Any]:
    cls = device_class(name, 'device.driver == "gpu.example.com"').build()
    if resource:
        cls["spec"]["extendedResourceName"] = resource
    cls["metadata"]["creationTimestamp"] = created
    return cls


def asking(name: str, gpus: int, resource: str = GPU) -> Any:
    p = pod(name).cpu_m(500)
    p.obj["spec"]["containers"][0]["resources"]["requests"][resource] = str(gpus)
    p.obj["spec"]["containers"][0]["resources"]["limits"] = {resource: str(gpus)}  # extended: limit = request
    return p


def _plans(objs: list[Any]) -> dict[str, tuple[dict[str, str], list[str]]]:
    snap = reading.read(admitted([o.build() if hasattr(o, "build") else o for o in objs]))
    out = {}
    for name, options in (("model", api.PlanOptions(time_limit=10)), ("baseline", api.PlanOptions(baseline_only=True))):
        plan = api.plan(snap, options)
        assert verify.verify(snap.facts, snap, plan, strict_pdbs=True) == []
        out[name] = ({b.pod.split("/")[1]: b.node for b in plan.bindings},
                     sorted(f"{a.pod.split('/')[1]}:{a.request}:{d.device}" for a in plan.device_allocations
                            for d in a.devices))
    return out


def test_a_container_request_a_device_class_serves_is_allocated_devices() -> None:
    """No node advertises example.com/gpu: the pod goes where the class's devices are, with the
    claim upstream would make (one request per container); before, no node could host it."""
    objs = [node("n1"), node("n2"), gpu_slice("n2", 2), gpu_class(), asking("p", 2)]
    want = ({"p": "n2"}, ["p:container-0-request-1:gpu-0", "p:container-0-request-1:gpu-1"])
    assert _plans(objs) == {"model": want, "baseline": want}
    # three GPUs asked of two: nowhere
    assert _plans([*objs[:4], asking("p", 3)]) == {"model": ({}, []), "baseline": ({}, [])}


def test_the_implicit_name_of_every_class_serves_too() -> None:
    objs = [node("n1"), gpu_slice("n1", 1), gpu_class(resource=None),
            asking("p", 1, "deviceclass.resource.kubernetes.io/gpu")]
    assert _plans(objs)["model"] == ({"p": "n1"}, ["p:container-0-request-1:gpu-0"])


def test_a_node_advertising_the_resource_keeps_it_a_node_resource() -> None:
    # a device plugin advertises example.com/gpu on n1: gangplace counts it as n1's capacity
    objs = [node("n1").gpus(1), node("n2"), gpu_slice("n2", 2), gpu_class(), asking("p", 1)]
    assert _plans(objs) == {"model": ({"p": "n1"}, []), "baseline": ({"p": "n1"}, [])}


def test_a_running_pod_holds_its_claims_devices_until_evicted() -> None:
    """A running pod's extended resources are the claim its status names: its device is taken,
    so a pod of lower priority waits, and one of higher priority evicts it (DRA-aware
    preemption frees the device)."""
    held = asking("r", 1).on("n1").priority(1)
    held.obj["status"]["extendedResourceClaimStatus"] = {"resourceClaimName": "r-extended-resources",
                                                         "requestMappings": []}
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "r-extended-resources", "namespace": "default",
                          "annotations": {"resource.kubernetes.io/extended-resource-claim": "true"}},
             "spec": {"devices": {"requests": [{"name": "container-0-request-1", "exactly": {
                 "deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1}}]}},
             "status": {"allocation": {"devices": {"results": [{"request": "container-0-request-1",
                                                                "driver": "gpu.example.com", "pool": "n1",
                                                                "device": "gpu-0"}]}},
                        "reservedFor": [{"resource": "pods", "name": "r", "uid": ""}]}}
    base = [node("n1"), gpu_slice("n1", 1), gpu_class(), held, claim]
    assert _plans([*base, asking("p", 1).priority(0)]) == {"model": ({}, []), "baseline": ({}, [])}
    plans = _plans([*base, asking("p", 1).priority(100)])
    assert plans["model"] == ({"p": "n1"}, ["p:container-0-request-1:gpu-0"])


def test_the_newest_class_serves_a_name_two_classes_give() -> None:
    classes = [s.DeviceClass(name="a", extended_resource=GPU, created="2026-01-02T00:00:00Z"),
               s.DeviceClass(name="b", extended_resource=GPU, created="2026-01-01T00:00:00Z"),
               s.DeviceClass(name="c", extended_resource="example.com/nic", created="2026-01-01T00:00:00Z"),
               s.DeviceClass(name="d", extended_resource="example.com/nic", created="2026-01-01T00:00:00Z")]
    mapping = extended_resource_classes(classes)
    assert mapping[GPU] == "a" and mapping["example.com/nic"] == "c"  # a tie goes to the first name
    assert mapping["deviceclass.resource.kubernetes.io/b"] == "b"


@pytest.mark.parametrize(("containers", "inits", "want"), [
    # one request per long-lived container, by container index (init containers first)
    ([2, 1], [], [("container-0-request-1", 2), ("container-1-request-1", 1)]),
    # a sidecar is long-lived; a regular init container asking for no more than the containers
    # after it reuse reuses their devices
    ([2], [("Always", 1), (None, 2)], [("container-0-request-1", 1), ("container-2-request-1", 2)]),
    # an init container asking for more than what follows it adds the difference
    ([1], [(None, 4)], [("container-0-request-1", 3), ("container-1-request-1", 1)]),
])
def test_requests_are_made_as_upstream_makes_them(containers: list[int], inits: list[tuple[str | None, int]],
                                                  want: list[tuple[str, int]]) -> None:
    spec: dict[str, Any] = {
        "containers": [{"name": f"c{i}", "resources": {"requests": {"cpu": "1", GPU: str(n)}}}
                       for i, n in enumerate(containers)],
        "initContainers": [{"name": f"i{i}", **({"restartPolicy": r} if r else {}),
                            "resources": {"requests": {"cpu": "1", GPU: str(n)}}} for i, (r, n) in enumerate(inits)]}
    got = extended_requests({"kind": "Pod", "metadata": {"name": "p"}, "spec": spec}, GPU, "gpu")
    assert [(r.name, r.alternatives[0].count) for r in got] == want
    assert all(r.alternatives[0].device_class == "gpu" for r in got)


def test_the_claim_is_named_for_the_pod() -> None:
    snap = reading.read(admitted([o.build() if hasattr(o, "build") else o for o in
                                                [node("n1"), gpu_slice("n1", 1), gpu_class(), asking("p", 1)]]))
    assert snap.dra.pod_claims["default/p"] == (s.PodClaim(name=EXTENDED_CLAIM,
                                                           claim=s.ClaimKey(f"default/p#{EXTENDED_CLAIM}")),)
    assert "example.com/gpu" not in snap.pods[0].requests
