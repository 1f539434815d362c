"""solver.kube: resource.k8s.io/v1 objects and pod / PodGroup claim references -> DraState."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from solver import reading
from solver.core import snapshot as s
from solver.core.errors import SnapshotInvalidError
from solver.problem.build import build_problem

GPU, NIC, LIC = "gpu.example.com", "nic.example.com", "lic.example.com"
PCIE = "resource.kubernetes.io/pcieRoot"

SNAPSHOT = f"""
apiVersion: v1
kind: Node
metadata: {{name: n1, labels: {{rack: r1}}}}
status: {{allocatable: {{cpu: "64", memory: 512Gi, pods: "110"}}}}
---
apiVersion: v1
kind: Node
metadata: {{name: n2, labels: {{rack: r2}}}}
status: {{allocatable: {{cpu: "64", memory: 512Gi, pods: "110"}}}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: n1-gpus}}
spec:
  driver: {GPU}
  pool: {{name: n1, generation: 3, resourceSliceCount: 1}}
  nodeName: n1
  devices:
""" + "".join(f"""
  - name: gpu-{i}
    attributes:
      model: {{string: A100}}
      driverVersion: {{version: 1.2.3}}
      index: {{int: {i}}}
      {PCIE}: {{string: pci{i // 4}}}
    capacity:
      memory: {{value: 80Gi}}
""" + ("""    taints:
    - {key: broken, value: ecc, effect: NoSchedule}
    - {key: note, effect: None}
""" if i == 7 else "") for i in range(8)) + f"""
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: fabric-new}}
spec:
  driver: {NIC}
  pool: {{name: fabric, generation: 2, resourceSliceCount: 1}}
  nodeSelector:
    nodeSelectorTerms:
    - matchExpressions: [{{key: rack, operator: In, values: [r1]}}]
  devices:
  - name: nic-0
    attributes: {{speed: {{int: 400}}, {NIC}/rdma: {{bool: true}}}}
  - name: nic-1
    allowMultipleAllocations: true
    attributes: {{speed: {{int: 100}}}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: fabric-old}}
spec:
  driver: {NIC}
  pool: {{name: fabric, generation: 1, resourceSliceCount: 1}}
  allNodes: true
  devices:
  - name: nic-9
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: licenses}}
spec:
  driver: {LIC}
  pool: {{name: global}}
  allNodes: true
  devices:
  - name: seat-0
    attributes: {{floating: {{bool: true}}}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {{name: gpu}}
spec:
  selectors:
  - cel: {{expression: 'device.driver == "{GPU}"'}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {{name: nic}}
spec:
  selectors:
  - cel: {{expression: 'device.driver == "{NIC}"'}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {{name: license}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {{name: two-gpus, namespace: team}}
spec:
  spec:
    devices:
      requests:
      - name: gpus
        exactly:
          deviceClassName: gpu
          count: 2
          selectors:
          - cel: {{expression: 'device.capacity["{GPU}"].memory.compareTo(quantity("40Gi")) >= 0'}}
          tolerations:
          - {{key: broken, operator: Exists, effect: NoSchedule}}
      constraints:
      - matchAttribute: {PCIE}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {{name: fabric, namespace: team}}
spec:
  spec:
    devices:
      requests:
      - name: nic
        firstAvailable:
        - name: fast
          deviceClassName: nic
          selectors:
          - cel: {{expression: 'device.attributes["{NIC}"].speed >= 400'}}
        - {{name: any, deviceClassName: nic, allocationMode: All}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: trainer-gpus-x7k2, namespace: team}}
spec:
  devices:
    requests:
    - name: gpus
      exactly: {{deviceClassName: gpu, count: 2}}
status:
  allocation:
    devices:
      results:
      - {{request: gpus, driver: {GPU}, pool: n1, device: gpu-0}}
      - {{request: gpus, driver: {GPU}, pool: n1, device: gpu-1}}
    nodeSelector:
      nodeSelectorTerms:
      - matchFields: [{{key: metadata.name, operator: In, values: [n1]}}]
  reservedFor:
  - {{resource: pods, name: trainer, uid: u1}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: site-license, namespace: team}}
spec:
  devices:
    requests:
    - name: seat
      exactly: {{deviceClassName: license}}
status:
  allocation:
    devices:
      results:
      - {{request: seat, driver: {LIC}, pool: global, device: seat-0}}
  reservedFor:
  - {{resource: podgroups, apiGroup: scheduling.k8s.io, name: pg}}
  - {{resource: jobs, apiGroup: batch, name: nightly}}
---
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {{name: pg, namespace: team}}
spec:
  schedulingPolicy: {{gang: {{minCount: 2}}}}
  resourceClaims:
  - {{name: fabric, resourceClaimTemplateName: fabric}}
  - {{name: license, resourceClaimName: site-license}}
---
apiVersion: v1
kind: Pod
metadata: {{name: trainer, namespace: team}}
spec:
  nodeName: n1
  containers: [{{name: c, resources: {{requests: {{cpu: "1"}}}}}}]
  resourceClaims:
  - {{name: gpus, resourceClaimTemplateName: two-gpus}}
status:
  phase: Running
  resourceClaimStatuses:
  - {{name: gpus, resourceClaimName: trainer-gpus-x7k2}}
""" + "".join(f"""
---
apiVersion: v1
kind: Pod
metadata: {{name: w-{i}, namespace: team}}
spec:
  schedulingGroup: {{podGroupName: pg}}
  containers: [{{name: c, resources: {{requests: {{cpu: "1"}}}}}}]
  resourceClaims:
  - {{name: fabric, resourceClaimTemplateName: fabric}}
  - {{name: license, resourceClaimName: site-license}}
  - {{name: gpus, resourceClaimTemplateName: two-gpus}}
status: {{phase: Pending}}
""" for i in range(2))


def _docs() -> list[Any]:
    return list(yaml.safe_load_all(SNAPSHOT))


def _gpu(i: int) -> s.Device:
    return s.Device(
        driver=GPU, pool="n1", name=f"gpu-{i}",
        attributes={GPU: {"model": "A100", "driverVersion": s.Version("1.2.3"), "index": i},
                    "resource.kubernetes.io": {"pcieRoot": f"pci{i // 4}"}},
        capacity={GPU: {"memory": 80 * 2**30}},
        consumable=(s.Consumable(name="memory", value=80 * 2**30 * 1000),),
        taints=(s.Taint(key="broken", value="ecc", effect="NoSchedule"),) if i == 7 else (),
        node=s.NodeName("n1"),
    )


RACK_R1 = (s.NodeSelectorTerm(match_expressions=(s.SelectorRequirement(key="rack", operator="In", values=("r1",)),)),)
TWO_GPUS = s.ClaimSpec(
    requests=(s.Request(name="gpus", alternatives=(s.SubRequest(
        name="gpus", device_class="gpu", count=2,
        selectors=(f'device.capacity["{GPU}"].memory.compareTo(quantity("40Gi")) >= 0',),
        tolerations=(s.Toleration(key="broken", operator="Exists", effect="NoSchedule"),)),)),),
    constraints=(s.Constraint(match_attribute=PCIE),),
)
FABRIC = s.ClaimSpec(requests=(s.Request(name="nic", alternatives=(
    s.SubRequest(name="nic/fast", device_class="nic", selectors=(f'device.attributes["{NIC}"].speed >= 400',)),
    s.SubRequest(name="nic/any", device_class="nic", all_mode=True),
)),))

EXPECTED = s.DraState(
    devices=(
        *(_gpu(i) for i in range(8)),
        s.Device(driver=LIC, pool="global", name="seat-0", attributes={LIC: {"floating": True}}, all_nodes=True),
        s.Device(driver=NIC, pool="fabric", name="nic-0", attributes={NIC: {"speed": 400, "rdma": True}},
                 node_selector=RACK_R1),
        s.Device(driver=NIC, pool="fabric", name="nic-1", attributes={NIC: {"speed": 100}}, allow_multiple=True,
                 node_selector=RACK_R1),
    ),
    classes={
        "gpu": s.DeviceClass(name="gpu", selectors=(f'device.driver == "{GPU}"',)),
        "license": s.DeviceClass(name="license"),
        "nic": s.DeviceClass(name="nic", selectors=(f'device.driver == "{NIC}"',)),
    },
    claims={
        s.ClaimKey("team/pg#fabric"): s.Claim(key=s.ClaimKey("team/pg#fabric"), namespace="team",
                                              name="pg#fabric", spec=FABRIC),
        s.ClaimKey("team/site-license"): s.Claim(
            key=s.ClaimKey("team/site-license"), namespace="team", name="site-license",
            spec=s.ClaimSpec(requests=(s.Request(name="seat", alternatives=(
                s.SubRequest(name="seat", device_class="license"),)),)),
            allocation=(s.AllocationResult(request="seat", device=s.DeviceKey(f"{LIC}/global/seat-0")),),
            reserved_groups=("team/pg",), reserved_other=("jobs.batch/team/nightly",)),
        s.ClaimKey("team/trainer-gpus-x7k2"): s.Claim(
            key=s.ClaimKey("team/trainer-gpus-x7k2"), namespace="team", name="trainer-gpus-x7k2",
            spec=s.ClaimSpec(requests=(s.Request(name="gpus", alternatives=(
                s.SubRequest(name="gpus", device_class="gpu", count=2),)),)),
            allocation=(s.AllocationResult(request="gpus", device=s.DeviceKey(f"{GPU}/n1/gpu-0")),
                        s.AllocationResult(request="gpus", device=s.DeviceKey(f"{GPU}/n1/gpu-1"))),
            allocation_nodes=(s.NodeSelectorTerm(match_fields=(
                s.SelectorRequirement(key="metadata.name", operator="In", values=("n1",)),)),),
            reserved_pods=("team/trainer",)),
        **{s.ClaimKey(f"team/w-{i}#gpus"): s.Claim(key=s.ClaimKey(f"team/w-{i}#gpus"), namespace="team",
                                                    name=f"w-{i}#gpus", spec=TWO_GPUS) for i in range(2)},
    },
    pod_claims={
        "team/trainer": (s.PodClaim(name="gpus", claim=s.ClaimKey("team/trainer-gpus-x7k2")),),
        **{f"team/w-{i}": (
            s.PodClaim(name="fabric", claim=s.ClaimKey("team/pg#fabric"), shared_by="team/pg"),
            s.PodClaim(name="license", claim=s.ClaimKey("team/site-license"), shared_by="team/pg"),
            s.PodClaim(name="gpus", claim=s.ClaimKey(f"team/w-{i}#gpus")),
        ) for i in range(2)},
    },
    # each selector with where it was first read, for its compile error under the plan's deadline
    selectors={
        'device.driver == "gpu.example.com"': ("DeviceClass/gpu", "spec.selectors[0].cel.expression"),
        'device.driver == "nic.example.com"': ("DeviceClass/nic", "spec.selectors[0].cel.expression"),
        'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0': (
            "ResourceClaimTemplate/team/two-gpus", "spec.spec.devices.requests[0].exactly.selectors[0].cel.expression"),
        'device.attributes["nic.example.com"].speed >= 400': (
            "ResourceClaimTemplate/team/fabric",
            "spec.spec.devices.requests[0].firstAvailable[0].selectors[0].cel.expression"),
    },
)


def test_dra_objects_become_the_exact_dra_state() -> None:
    snap = reading.read(_docs())
    assert snap.dra.devices == EXPECTED.devices
    assert snap.dra.classes == EXPECTED.classes
    assert snap.dra.claims == EXPECTED.claims
    assert snap.dra.pod_claims == EXPECTED.pod_claims
    assert snap.dra == EXPECTED
    assert snap.skipped_kinds == {}  # DRA kinds are read, not skipped
    assert [p.key for p in snap.pods if p.has_resource_claims] == ["team/trainer", "team/w-0", "team/w-1"]


def test_the_group_status_names_the_generated_shared_claim() -> None:
    docs = _docs()
    pg = next(d for d in docs if d["kind"] == "PodGroup")
    pg["status"] = {"resourceClaimStatuses": [{"name": "fabric", "resourceClaimName": "pg-fabric-abc"}]}
    docs.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                 "metadata": {"name": "pg-fabric-abc", "namespace": "team"},
                 "spec": {"devices": {"requests": [{"name": "nic", "exactly": {"deviceClassName": "nic"}}]}}})
    dra = reading.read(docs).dra
    assert "team/pg#fabric" not in dra.claims
    assert dra.pod_claims["team/w-0"][0] == s.PodClaim(name="fabric", claim=s.ClaimKey("team/pg-fabric-abc"),
                                                       shared_by="team/pg")


def test_a_pending_pod_uses_its_generated_claim_when_it_exists() -> None:
    docs = _docs()
    w0 = next(d for d in docs if d["metadata"]["name"] == "w-0")
    w0["status"]["resourceClaimStatuses"] = [{"name": "gpus", "resourceClaimName": "trainer-gpus-x7k2"},
                                             {"name": "fabric"}]
    dra = reading.read(docs).dra
    assert dra.pod_claims["team/w-0"][-1] == s.PodClaim(name="gpus", claim=s.ClaimKey("team/trainer-gpus-x7k2"))
    assert "team/w-0#gpus" not in dra.claims


def test_an_entry_that_needs_no_claim_is_left_out() -> None:
    docs = _docs()
    trainer = next(d for d in docs if d["metadata"]["name"] == "trainer")
    trainer["status"]["resourceClaimStatuses"] = [{"name": "gpus"}]
    dra = reading.read(docs).dra
    assert "team/trainer" not in dra.pod_claims


def test_per_device_node_selection() -> None:
    docs = _docs()
    docs.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "mixed"},
                 "spec": {"driver": "x.example.com", "pool": {"name": "p"}, "perDeviceNodeSelection": True,
                          "devices": [{"name": "a", "nodeName": "n2"}, {"name": "b", "allNodes": True}]}})
    devices = {d.name: d for d in reading.read(docs).dra.devices if d.driver == "x.example.com"}
    assert (devices["a"].node, devices["a"].all_nodes) == ("n2", False)
    assert (devices["b"].node, devices["b"].all_nodes) == (None, True)


# ---- bad input ---------------------------------------------------------------------


def _find(docs: list[Any], kind: str, name: str) -> dict[str, Any]:
    return next(d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name)


def _slice(docs: list[Any]) -> dict[str, Any]:
    return _find(docs, "ResourceSlice", "n1-gpus")


def _set(path: str, value: Any) -> Any:
    def edit(obj: dict[str, Any]) -> None:
        cur: Any = obj
        parts = path.split(".")
        for p in parts[:-1]:
            cur = cur[int(p)] if isinstance(cur, list) else cur.setdefault(p, {})
        if isinstance(cur, list):
            cur[int(parts[-1])] = value
        elif value is None:
            cur.pop(parts[-1], None)
        else:
            cur[parts[-1]] = value
    return edit


def _append(doc: dict[str, Any]) -> Any:
    def edit(docs: list[Any]) -> None:
        docs.append(doc)
    return edit


GPU_TEMPLATE_REQ = "spec.spec.devices.requests.0"
BAD: list[tuple[str, str, str, Any, str]] = [
    ("slice-two-placements", "ResourceSlice", "n1-gpus", _set("spec.allNodes", True),
     "ResourceSlice/n1-gpus: spec: exactly one of nodeName, nodeSelector, allNodes, perDeviceNodeSelection "
     "must be set, got nodeName and allNodes"),
    ("slice-no-placement", "ResourceSlice", "n1-gpus", _set("spec.nodeName", None),
     "ResourceSlice/n1-gpus: spec: exactly one of nodeName, nodeSelector, allNodes, perDeviceNodeSelection must be set"),
    ("slice-duplicate-device", "ResourceSlice", "n1-gpus", _set("spec.devices.1.name", "gpu-0"),
     "ResourceSlice/n1-gpus: spec.devices[1].name: duplicate device name 'gpu-0' (also spec.devices[0])"),
    ("slice-missing-pool", "ResourceSlice", "n1-gpus", _set("spec.pool", None),
     "ResourceSlice/n1-gpus: spec.pool.name: missing"),
    ("slice-bad-version", "ResourceSlice", "n1-gpus",
     _set("spec.devices.0.attributes.driverVersion", {"version": "1.2"}),
     "ResourceSlice/n1-gpus: spec.devices[0].attributes[driverVersion].version: "
     "not a semantic version (semver.org 2.0.0): '1.2'"),
    ("slice-two-attribute-values", "ResourceSlice", "n1-gpus",
     _set("spec.devices.0.attributes.model", {"string": "A100", "int": 1}),
     "ResourceSlice/n1-gpus: spec.devices[0].attributes[model]: exactly one of bool, int, string, version must be set"),
    ("slice-list-attribute", "ResourceSlice", "n1-gpus",
     _set("spec.devices.0.attributes.model", {"strings": ["A100"]}),
     "ResourceSlice/n1-gpus: spec.devices[0].attributes[model]: "
     "list-valued attributes (DRAListTypeAttributes) are not supported"),
    ("slice-attribute-twice-once-qualified", "ResourceSlice", "n1-gpus",
     lambda obj: obj["spec"]["devices"][0]["attributes"].update({f"{GPU}/model": {"string": "H100"}}),
     f"ResourceSlice/n1-gpus: spec.devices[0].attributes[{GPU}/model]: the same name as 'model' once qualified"),
    ("slice-bad-capacity", "ResourceSlice", "n1-gpus", _set("spec.devices.0.capacity.memory", {"value": "lots"}),
     "ResourceSlice/n1-gpus: spec.devices[0].capacity[memory].value: unparsable quantity 'lots'"),
    ("slice-device-placement-without-per-device", "ResourceSlice", "n1-gpus",
     _set("spec.devices.0.nodeName", "n2"),
     "ResourceSlice/n1-gpus: spec.devices[0].nodeName: may only be set when spec.perDeviceNodeSelection is true"),
    ("class-selector-does-not-compile", "DeviceClass", "gpu",
     _set("spec.selectors.0", {"cel": {"expression": "device.driver =="}}),
     "DeviceClass/gpu: spec.selectors[0].cel.expression: CEL: syntax error at column 15"),
    ("class-selector-unknown-function", "DeviceClass", "gpu",
     _set("spec.selectors.0", {"cel": {"expression": "isGpu(device)"}}),
     "DeviceClass/gpu: spec.selectors[0].cel.expression: CEL: unknown function 'isGpu'"),
    ("class-selector-not-bool", "DeviceClass", "gpu",
     _set("spec.selectors.0", {"cel": {"expression": "device.driver"}}),
     "DeviceClass/gpu: spec.selectors[0].cel.expression: CEL: must evaluate to bool, not string"),
    ("template-unknown-class", "ResourceClaimTemplate", "two-gpus",
     _set(f"{GPU_TEMPLATE_REQ}.exactly.deviceClassName", "tpu"),
     "ResourceClaimTemplate/team/two-gpus: spec.spec.devices.requests[0].exactly.deviceClassName: "
     "DeviceClass 'tpu' not found"),
    ("template-request-selector-does-not-compile", "ResourceClaimTemplate", "two-gpus",
     _set(f"{GPU_TEMPLATE_REQ}.exactly.selectors.0", {"cel": {"expression": "device.model == 1"}}),
     "ResourceClaimTemplate/team/two-gpus: spec.spec.devices.requests[0].exactly.selectors[0].cel.expression: "
     "CEL: undefined field 'model' of device"),
    # found by the typed fuzz (tests/grpc/test_fuzz_typed.py): "a/b" reads as request a's subrequest b
    ("template-request-name-not-a-label", "ResourceClaimTemplate", "two-gpus",
     _set(f"{GPU_TEMPLATE_REQ}.name", "a/b"),
     "ResourceClaimTemplate/team/two-gpus: spec.spec.devices.requests[0].name: "
     "'a/b' is not a DNS label (lower case alphanumerics and '-', at most 63)"),
    ("pod-claim-name-not-a-label", "Pod", "w-0", _set("spec.resourceClaims.1.name", "Licence"),
     "Pod/team/w-0: spec.resourceClaims[1].name: 'Licence' is not a DNS label (lower case alphanumerics and '-', "
     "at most 63)"),
    ("template-request-both", "ResourceClaimTemplate", "two-gpus",
     _set(f"{GPU_TEMPLATE_REQ}.firstAvailable", [{"name": "a", "deviceClassName": "gpu"}]),
     "ResourceClaimTemplate/team/two-gpus: spec.spec.devices.requests[0]: "
     "exactly one of exactly and firstAvailable must be set"),
    ("template-request-neither", "ResourceClaimTemplate", "two-gpus", _set(f"{GPU_TEMPLATE_REQ}.exactly", None),
     "ResourceClaimTemplate/team/two-gpus: spec.spec.devices.requests[0]: "
     "exactly one of exactly and firstAvailable must be set"),
    ("template-unknown-mode", "ResourceClaimTemplate", "two-gpus",
     _set(f"{GPU_TEMPLATE_REQ}.exactly.allocationMode", "Some"),
     "ResourceClaimTemplate/team/two-gpus: spec.spec.devices.requests[0].exactly.allocationMode: "
     "unknown allocation mode 'Some'"),
    ("template-zero-count", "ResourceClaimTemplate", "two-gpus", _set(f"{GPU_TEMPLATE_REQ}.exactly.count", 0),
     "ResourceClaimTemplate/team/two-gpus: spec.spec.devices.requests[0].exactly.count: "
     "must be a positive 32-bit integer, got 0"),
    ("template-unqualified-match-attribute", "ResourceClaimTemplate", "two-gpus",
     _set("spec.spec.devices.constraints.0.matchAttribute", "pcieRoot"),
     "ResourceClaimTemplate/team/two-gpus: spec.spec.devices.constraints[0].matchAttribute: "
     "a fully qualified name must be a domain and a name separated by a slash, got 'pcieRoot'"),
    ("template-constraint-unknown-request", "ResourceClaimTemplate", "two-gpus",
     _set("spec.spec.devices.constraints.0.requests", ["nics"]),
     "ResourceClaimTemplate/team/two-gpus: spec.spec.devices.constraints[0].requests[0]: "
     "no request or subrequest named 'nics'"),
    ("claim-unknown-class", "ResourceClaim", "site-license",
     _set("spec.devices.requests.0.exactly.deviceClassName", "seat"),
     "ResourceClaim/team/site-license: spec.devices.requests[0].exactly.deviceClassName: "
     "DeviceClass 'seat' not found"),
    ("claim-result-without-device", "ResourceClaim", "site-license",
     _set("status.allocation.devices.results.0", {"request": "seat", "driver": LIC, "pool": "global"}),
     "ResourceClaim/team/site-license: status.allocation.devices.results[0].device: missing"),
    ("pod-claim-and-template", "Pod", "w-0",
     _set("spec.resourceClaims.2", {"name": "gpus", "resourceClaimName": "a", "resourceClaimTemplateName": "b"}),
     "Pod/team/w-0: spec.resourceClaims[2]: exactly one of resourceClaimName and resourceClaimTemplateName must be set"),
    ("running-pod-generated-claim-missing", "Pod", "trainer",
     _set("status.resourceClaimStatuses.0", {"name": "gpus", "resourceClaimName": "gone"}),
     "Pod/team/trainer: status.resourceClaimStatuses[0].resourceClaimName: ResourceClaim team/gone not found"),
    ("running-pod-without-claim-status", "Pod", "trainer", _set("status.resourceClaimStatuses", None),
     "Pod/team/trainer: status.resourceClaimStatuses: a running pod needs the name of the claim generated "
     "for spec.resourceClaims[0] ('gpus')"),
    ("podgroup-missing-template", "PodGroup", "pg",
     _set("spec.resourceClaims.0", {"name": "fabric", "resourceClaimTemplateName": "ghost"}),
     "PodGroup/team/pg: spec.resourceClaims[0]: ResourceClaimTemplate team/ghost not found"),
    ("podgroup-missing-claim", "PodGroup", "pg",
     _set("spec.resourceClaims.1", {"name": "license", "resourceClaimName": "ghost"}),
     "PodGroup/team/pg: spec.resourceClaims[1]: ResourceClaim team/ghost not found"),
]


@pytest.mark.parametrize(("kind", "name", "edit", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_dra_input_names_the_object_and_the_field(kind: str, name: str, edit: Any, message: str) -> None:
    docs = copy.deepcopy(_docs())
    edit(_find(docs, kind, name))
    with pytest.raises(SnapshotInvalidError) as exc:
        build_problem(reading.read(docs))  # selectors are compiled by the plan, under its deadline
    assert str(exc.value) == message


@pytest.mark.parametrize(("entry", "why"), [
    ({"name": "extra", "resourceClaimName": "x"}, 'resourceclaim.resource.k8s.io "x" not found'),
    ({"name": "more", "resourceClaimTemplateName": "ghost"},
     'pod "team/w-0": ResourceClaim not created yet (ResourceClaimTemplate team/ghost not found)'),
], ids=["claim", "template"])
def test_a_pending_pod_naming_a_missing_claim_is_held_and_the_rest_planned(entry: dict[str, Any], why: str) -> None:
    """Upstream's DynamicResources PreEnqueue holds such a pod (foreachPodResourceClaim) until the
    claim exists; the other pods are scheduled. gangplace holds it with upstream's words and
    plans the rest (the whole snapshot was once refused)."""
    docs = copy.deepcopy(_docs())
    w0 = _find(docs, "Pod", "w-0")
    w0["spec"]["resourceClaims"] = [*w0["spec"]["resourceClaims"], entry]
    snap = reading.read(docs)
    assert [(h.pod, h.reason) for h in snap.waiting] == [("team/w-0", why)]
    assert "team/w-0" not in {p.key for p in snap.pods}
    assert any(p.node is None for p in snap.pods)  # the other pending pods are planned


def test_a_pending_pod_naming_a_claim_being_deleted_is_held() -> None:
    """PreEnqueue: "resourceclaim ... is being deleted" (a claim the pod names, or the one made
    from its template); the claim's deletionTimestamp is the sign."""
    docs = copy.deepcopy(_docs())
    w0 = _find(docs, "Pod", "w-0")
    named = next(e["resourceClaimName"] for e in w0["spec"]["resourceClaims"] if e.get("resourceClaimName"))
    _find(docs, "ResourceClaim", named)["metadata"]["deletionTimestamp"] = "2026-12-01T00:00:00Z"
    snap = reading.read(docs)
    assert (("team/w-0", f'resourceclaim "{named}" is being deleted') in
            [(h.pod, h.reason) for h in snap.waiting])


def test_a_device_published_by_two_slices_of_one_pool_is_an_error() -> None:
    docs = _docs()
    twin = copy.deepcopy(_slice(docs))
    twin["metadata"]["name"] = "n1-gpus-more"
    twin["spec"]["devices"] = twin["spec"]["devices"][:1]
    docs.append(twin)
    with pytest.raises(SnapshotInvalidError) as exc:
        reading.read(docs)
    assert str(exc.value) == (f"ResourceSlice/n1-gpus-more: spec.devices[0].name: device {GPU}/n1/gpu-0 "
                              "is also published by ResourceSlice/n1-gpus")


def test_an_older_generation_may_repeat_a_device() -> None:
    docs = _docs()
    old = copy.deepcopy(_slice(docs))
    old["metadata"]["name"] = "n1-gpus-old"
    old["spec"]["pool"]["generation"] = 2
    docs.append(old)
    assert reading.read(docs).dra.devices == EXPECTED.devices
