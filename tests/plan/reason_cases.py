"""One cluster whose sixteen pending pods the default profile refuses everywhere, each for other
reasons (tests/plan/test_reasons.py; the real kube-scheduler's words for them are compared
in tests/controlplane/test_reasons_vs_upstream.py)."""

from __future__ import annotations

from typing import Any

from tests.builders import node, pod
from tests.pipeline.test_refusals import _class, _host_network, _network_volume, _once_pod, _pvc

# what kube-scheduler 1.37.2 writes in each pod's PodScheduled condition
# n1: web's priority is higher (no victims); n4: 1 cpu, never enough for these pods however empty
PREEMPTION = ("preemption: 0/4 nodes are available: 1 No preemption victims found for incoming pod, "
              "3 Preemption is not helpful for scheduling.")
EXPECTED = {
    "default/huge": "0/4 nodes are available: 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable, "
                    "2 Insufficient cpu. preemption: 0/4 nodes are available: 4 Preemption is not helpful for "
                    "scheduling.",
    "default/lost": "0/4 nodes are available: 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable, "
                    "2 node(s) didn't match Pod's node affinity/selector. preemption: 0/4 nodes are available: "
                    "4 Preemption is not helpful for scheduling.",
    "default/friend": "0/4 nodes are available: 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable, "
                      "2 node(s) didn't match pod affinity rules. preemption: 0/4 nodes are available: "
                      "4 Preemption is not helpful for scheduling.",
    "default/port": "0/4 nodes are available: 1 Insufficient cpu, 1 node(s) didn't have free ports for the requested "
                    "pod ports, 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable. " + PREEMPTION,
    "default/spread": "0/4 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match pod topology spread "
                      "constraints, 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable. " + PREEMPTION,
    "default/clash": "0/4 nodes are available: 1 Insufficient cpu, 1 node(s) had no available disk, 1 node(s) had "
                     "untolerated taint(s), 1 node(s) were unschedulable. " + PREEMPTION,
    # VolumeBinding's PreFilter refuses before any node; the DynamicResources PostFilter then finds
    # no cycle state of its own, and its error ("not found") is the message's last part
    "default/orphan": '0/4 nodes are available: persistentvolumeclaim "nope" not found. not found',
    "default/immediate": "0/4 nodes are available: pod has unbound immediate PersistentVolumeClaims. not found",
    # VolumeRestrictions' Filter, resolvable: a ReadWriteOncePod claim holder (n1) uses
    "default/solo": "0/4 nodes are available: 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable, 2 "
                    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already "
                    "in-use by another pod. " + PREEMPTION.replace("1 No preemption victims found for incoming pod, 3",
                                                                   "2 No preemption victims found for incoming pod, 2"),
    # VolumeBinding's Filter: no CSIStorageCapacity of the class holds 10Gi where n1 or n4 is; the
    # claim "picked" is being provisioned for n3 alone
    "default/tight": "0/4 nodes are available: 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable, 2 "
                     "node(s) did not have enough free storage. preemption: 0/4 nodes are available: 4 Preemption "
                     "is not helpful for scheduling.",
    "default/picked": "0/4 nodes are available: 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable, 2 "
                      "node(s) didn't find available persistent volumes to bind. preemption: 0/4 nodes are available: "
                      "4 Preemption is not helpful for scheduling.",
    # the filters pass on n1; reserving the full claim at PreBind fails (the API server's refusal)
    "default/late": 'running PreBind plugin "DynamicResources": add reservation to claim default/held: '
                    'ResourceClaim.resource.k8s.io "held" is invalid: status.reservedFor: Too many: 257: must have '
                    "at most 256 items",
    # the nodes a PreFilter leaves out are counted apart, before any filter (n2's taint, n3's cordon)
    "default/ghost": "0/4 nodes are available: 4 node(s) didn't satisfy plugin(s) [NodeAffinity]. preemption: 0/4 "
                     "nodes are available: 4 Preemption is not helpful for scheduling.",
    "default/only-n4": "0/4 nodes are available: 1 Insufficient cpu, 3 node(s) didn't satisfy plugin(s) "
                       "[NodeAffinity]. preemption: 0/4 nodes are available: 4 Preemption is not helpful for "
                       "scheduling.",
    "default/at-odds": "0/4 nodes are available: pod affinity terms conflict. not found",
    # DynamicResources' Filter: the claim's allocation names n4 (issue 50, item 4: was "cannot
    # allocate all claims")
    "default/away": "0/4 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint(s), 1 node(s) "
                    "were unschedulable, 1 resourceclaim not available on the node. preemption: 0/4 nodes are "
                    "available: 4 Preemption is not helpful for scheduling.",
    # a filter's error, not a refusal: CSI migration cannot translate the inline disk on n1 (a CSINode)
    "default/disk": 'running "NodeVolumeLimits" filter plugin: converting volume(data) from inline to csi: '
                    "kind(Dedicated) is not supported in csi migration",
}


def cluster() -> list[Any]:
    """n1 (4 cpu, zone a) runs web (priority 1000, host port 8080); n2 (2 cpu, zone b) is
    tainted; n3 is cordoned; n4 (1 cpu, zone b) runs low (priority 0, as the pending pods); n1's
    CSINode lists the Azure Disk CSI driver; web mounts GCE PD d9."""
    web = _host_network(pod("web").on("n1").cpu_m(500).priority(1000).label("app", "web"), 8080)
    clash = pod("clash").cpu_m(1500)
    for p in (web, clash):  # GCE PD d9, read-write: VolumeRestrictions keeps clash off n1
        p.obj["spec"]["volumes"] = [{"name": "d", "gcePersistentDisk": {"pdName": "d9"}}]
    spread = pod("spread").cpu_m(3000).label("app", "web")
    spread.obj["spec"]["topologySpreadConstraints"] = [{
        "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}}}]
    friend = pod("friend").cpu_m(100)
    friend.obj["spec"]["affinity"] = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    disk = pod("disk").cpu_m(100)
    disk.obj["spec"]["volumes"] = [{"name": "data", "azureDisk": {
        "diskName": "d", "diskURI": "https://acct.blob.core.windows.net/vhds/d.vhd", "kind": "Dedicated"}}]
    csi_node = {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": "n1"},
                "spec": {"drivers": [{"name": "disk.csi.azure.com", "nodeID": "n1", "allocatable": {"count": 8}}]}}
    orphan = pod("orphan").cpu_m(100)  # its claim does not exist
    orphan.obj["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "nope"}}]
    immediate = pod("immediate").cpu_m(100)  # its claim is not bound and its class binds at once
    immediate.obj["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "imm"}}]
    solo = pod("solo").cpu_m(100)  # its ReadWriteOncePod claim is in use by holder
    solo.obj["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "solo"}}]
    holder = pod("holder").on("n1").cpu_m(100).priority(1000)
    holder.obj["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "solo"}}]
    volumes = [_class("fast", "Immediate"), _pvc("imm", cls="fast"), _network_volume("solo"), _once_pod("solo")]
    # provisioning by a driver that tracks capacity: room for 1Gi in zone a only, "tight" asks 10Gi;
    # and a claim already being provisioned for n3 (cordoned)
    volumes += [_class("tracked", "WaitForFirstConsumer", provisioner="csi.example.com"),
                {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": "csi.example.com"},
                 "spec": {"storageCapacity": True}},
                {"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
                 "metadata": {"name": "zone-a", "namespace": "default"}, "storageClassName": "tracked",
                 "capacity": "1Gi", "nodeTopology": {"matchLabels": {"topology.kubernetes.io/zone": "a"}}},
                _pvc("big", cls="tracked"), _pvc("picked", cls="tracked")]
    volumes[-2]["spec"]["resources"]["requests"]["storage"] = "10Gi"
    volumes[-1]["metadata"]["annotations"] = {"volume.kubernetes.io/selected-node": "n3"}
    tight, picked = pod("tight").cpu_m(100), pod("picked").cpu_m(100)
    tight.obj["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "big"}}]
    picked.obj["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "picked"}}]
    # a GPU of n1 allocated to claim "held", reserved for web and 255 other consumers: full
    from tests.dra_builders import claim, gpu_slice, request, with_claims
    from tests.pipeline.test_rules_dra import GPU_CLASS

    held = claim("held", request("gpu"), allocated=[("n1", "gpu-0")], node="n1", reserved_for=["web"])
    held.obj["status"]["reservedFor"] += [{"resource": "widgets", "apiGroup": "example.com", "name": f"x{i}",
                                           "uid": f"uid-x{i}"} for i in range(255)]
    late = with_claims(pod("late").cpu_m(100), gpu="claim:held")
    # a GPU of n4 allocated to claim "parked", reserved for low (so no PostFilter deallocates it):
    # away, which shares it, may only go where the allocation is (n4, too small for it)
    parked = claim("parked", request("gpu"), allocated=[("n4", "gpu-0")], node="n4", reserved_for=["low"])
    away = with_claims(pod("away").cpu_m(1500), gpu="claim:parked")
    devices = [gpu_slice("n1", 1), gpu_slice("n4", 1), GPU_CLASS, held, late, parked, away]
    # NodeAffinity's PreFilter: required terms naming nodes by metadata.name
    def naming(name: str, *fields: list[str]) -> Any:
        p = pod(name).cpu_m(1500)
        p.obj["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": v}
                                                   for v in fields]}]}}}
        return p

    named = [naming("ghost", ["nope"]), naming("only-n4", ["n4"]), naming("at-odds", ["n1"], ["n2"])]
    return [*named, *devices, *volumes, tight, picked, holder, solo, immediate, csi_node, disk, clash, orphan, node("n1").cpu_m(4000).zone("a"), node("n2").cpu_m(2000).zone("b").taint("dedicated", "gpu"),
            node("n3").cpu_m(4000).unschedulable(), node("n4").cpu_m(1000).zone("b"),
            web, pod("low").on("n4").cpu_m(800).label("app", "low"),
            pod("huge").cpu_m(64000), pod("lost").cpu_m(100).selector("topology.kubernetes.io/zone", "c"),
            friend, _host_network(pod("port").cpu_m(3800), 8080), spread]
