"""What the real scheduler refuses, gangplace refuses (issue 29): each case is one upstream
rule the model, the greedy baseline and the verifier once missed. Each asserts the model's
plan and the baseline's (both verified), and that the verifier refuses the binding the
real scheduler refuses."""

from __future__ import annotations

from typing import Any

import pytest

from solver import api, reading, verify
from solver.core.errors import SnapshotInvalidError
from solver.filters import selectors
from tests.builders import node, pdb, pod, snapshot
from tests.verify.test_verify_dra import plan as hand_plan


def _plans(*objs: Any) -> dict[str, dict[str, str]]:
    """The model's and the baseline's bindings (pod name -> node), each plan verified."""
    snap = snapshot(*objs)
    out = {}
    for name, options in (("model", api.PlanOptions(time_limit=10)), ("baseline", api.PlanOptions(baseline_only=True))):
        plan = api.plan(snap, options)
        assert verify.verify(snap.facts, snap, plan, strict_pdbs=True) == []
        out[name] = {b.pod.split("/")[1]: b.node for b in plan.bindings}
    return out


def _refused(objs: list[Any], bindings: dict[str, str]) -> list[str]:
    """The verifier's rules broken by a plan with these bindings."""
    snap = snapshot(*objs)
    return sorted({v.rule for v in verify.verify(snap.facts, snap, hand_plan(snap, {f"default/{p}": n for p, n in bindings.items()}))})


@pytest.mark.parametrize(("text", "value"), [
    ("16", 16), ("+16", 16), ("-3", -3), ("0009", 9), (str((1 << 63) - 1), (1 << 63) - 1),
    ("1_6", None), (" 16", None), ("16 ", None), ("", None), ("0x10", None), ("١٦", None),
    (str(1 << 63), None), ("1e3", None),
])
def test_gt_and_lt_read_labels_as_strconv_parseint_does(text: str, value: int | None) -> None:
    assert selectors.parse_int64(text) == value


def test_a_label_python_would_read_as_a_number_does_not_match_gt() -> None:
    objs = [node("n1").label("gpus", "1_6"), node("n2").cpu_m(1000).label("gpus", "16"),
            pod("p").cpu_m(1000).affinity("gpus", "Gt", "8")]
    assert _plans(*objs) == {"model": {"p": "n2"}, "baseline": {"p": "n2"}}
    assert _refused(objs, {"p": "n1"}) == ["binding"]  # "fails selector/affinity/taints"


def _host_network(p: Any, container_port: int) -> Any:
    p.obj["spec"]["hostNetwork"] = True
    p.obj["spec"]["containers"][0]["ports"] = [{"containerPort": container_port}]
    return p


def test_a_host_network_pods_container_ports_are_host_ports() -> None:
    # the API server defaults hostPort to containerPort under hostNetwork: two such pods on
    # one node clash, although neither names a hostPort
    objs = [node("n1"), node("n2").cpu_m(1000),
            _host_network(pod("web").on("n1").cpu_m(500).priority(1000), 8080),
            _host_network(pod("p").cpu_m(1000), 8080)]
    assert _plans(*objs) == {"model": {"p": "n2"}, "baseline": {"p": "n2"}}
    assert _refused(objs, {"p": "n1"}) == ["host-port"]
    # another port does not clash
    objs[-1] = _host_network(pod("p").cpu_m(1000), 9090)
    assert _refused(objs, {"p": "n1"}) == []


def _pod_level(p: Any, **resources: dict[str, str]) -> Any:
    p.obj["spec"]["resources"] = resources
    return p


def test_pod_level_requests_replace_the_containers() -> None:
    # the container asks 500m; the pod asks 3 cpus (PodLevelResources, beta and on)
    objs = [node("n1").cpu_m(2000), node("n2").cpu_m(4000),
            _pod_level(pod("p").cpu_m(500), requests={"cpu": "3"})]
    assert _plans(*objs) == {"model": {"p": "n2"}, "baseline": {"p": "n2"}}
    assert _refused(objs, {"p": "n1"}) == ["capacity"]


def test_a_pod_level_limit_is_the_request_where_no_container_asks() -> None:
    # no container asks memory: the pod-level memory limit is its request (API defaulting);
    # cpu is asked by the container, so the pod-level cpu limit does not replace it
    objs = [node("n1").cpu_m(4000).memory_mi(1024), node("n2").cpu_m(4000).memory_mi(8192),
            _pod_level(pod("p").cpu_m(500), limits={"memory": "4Gi", "cpu": "8"})]
    assert _plans(*objs) == {"model": {"p": "n2"}, "baseline": {"p": "n2"}}
    assert _refused(objs, {"p": "n1"}) == ["capacity"]


# ---- the Eviction API under strict budgets (pkg/registry/core/pod/storage/eviction.go) ----------


def _eviction_case(*budgets: Any, ready: bool = True) -> list[Any]:
    """n1 is full with "v" (priority 0, app=db); "p" (priority 100) fits only once v is gone."""
    victim = pod("v").on("n1").cpu_m(4000).priority(0).label("app", "db")
    if ready:
        victim.obj["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    return [node("n1").cpu_m(4000), victim, *budgets, pod("p").cpu_m(2000).priority(100)]


def _strict(objs: list[Any]) -> dict[str, tuple[dict[str, str], list[str]]]:
    """The model's and the baseline's (bindings, evictions) under strict budgets, verified."""
    snap = snapshot(*objs)
    out = {}
    for name, options in (("model", api.PlanOptions(time_limit=10)), ("baseline", api.PlanOptions(baseline_only=True))):
        plan = api.plan(snap, options)
        assert verify.verify(snap.facts, snap, plan, strict_pdbs=True) == []
        out[name] = ({b.pod.split("/")[1]: b.node for b in plan.bindings}, [e.pod.split("/")[1] for e in plan.evictions])
    return out


def _strict_refusals(objs: list[Any]) -> list[str]:
    """What the verifier says of the plan that evicts v for p, under strict budgets."""
    snap = snapshot(*objs)
    draft = hand_plan(snap, {"default/p": "n1"}, evict=["default/v"])
    return sorted(f"{v.rule}: {v.subject}" for v in verify.verify(snap.facts, snap, draft, strict_pdbs=True)
                  if v.rule in ("eviction-api", "pdb"))


PLACED = {"model": ({"p": "n1"}, ["v"]), "baseline": ({"p": "n1"}, ["v"])}
PENDING = {"model": ({}, []), "baseline": ({}, [])}


def _budget(name: str, allowed: int, **fields: Any) -> Any:
    budget = pdb(name, allowed, app="db")
    for path, value in fields.items():
        part, key = path.split("__")
        budget.obj[part][key] = value
    return budget


def test_a_budget_that_allows_one_lets_the_eviction_through() -> None:
    objs = _eviction_case(_budget("db", 1))
    assert _strict(objs) == PLACED and _strict_refusals(objs) == []


def test_a_pod_two_budgets_select_is_never_evicted() -> None:
    # the eviction subresource answers 500 "more than one PodDisruptionBudget"
    objs = _eviction_case(_budget("db", 1), _budget("db-too", 1))
    assert _strict(objs) == PENDING
    assert _strict_refusals(objs) == ["eviction-api: default/v"]


def test_a_budget_whose_status_lags_its_spec_refuses() -> None:
    # checkAndDecrement answers 429 while status.observedGeneration < metadata.generation
    objs = _eviction_case(_budget("db", 1, metadata__generation=3, status__observedGeneration=2))
    assert _strict(objs) == PENDING
    assert _strict_refusals(objs) == ["eviction-api: default/v"]


def test_an_unready_pod_goes_without_spending_under_always_allow() -> None:
    always = _budget("db", 0, spec__unhealthyPodEvictionPolicy="AlwaysAllow")
    assert _strict(_eviction_case(always, ready=False)) == PLACED
    assert _strict_refusals(_eviction_case(always, ready=False)) == []
    # a Ready pod spends, and the budget allows none
    assert _strict(_eviction_case(always)) == PENDING
    assert _strict_refusals(_eviction_case(always)) == ["pdb: default/db"]


def test_an_unready_pod_goes_under_a_healthy_if_healthy_budget() -> None:
    healthy = _budget("db", 0, status__currentHealthy=3, status__desiredHealthy=2)
    assert _strict(_eviction_case(healthy, ready=False)) == PLACED
    short = _budget("db", 0, status__currentHealthy=1, status__desiredHealthy=2)
    assert _strict(_eviction_case(short, ready=False)) == PENDING
    assert _strict_refusals(_eviction_case(short, ready=False)) == ["pdb: default/db"]


def test_a_pod_not_started_yet_goes_without_asking_its_budgets() -> None:
    # canIgnorePDB: a pod in phase Pending is deleted before any budget is listed, so neither
    # two budgets nor one that allows nothing stop it
    objs = _eviction_case(_budget("db", 0), _budget("db-too", 0), ready=False)
    objs[1].obj["status"]["phase"] = "Pending"
    assert _strict(objs) == PLACED
    assert _strict_refusals(objs) == []
    objs[1].obj["status"]["phase"] = "Running"
    assert _strict(objs) == PENDING
    assert _strict_refusals(objs) == ["eviction-api: default/v"]


# ---- NodeDeclaredFeatures (plugins/nodedeclaredfeatures) -----------------------------------


def _declares(n: Any, *features: str) -> Any:
    n.obj["status"]["declaredFeatures"] = list(features)
    return n


def test_a_pod_needing_a_node_feature_goes_only_where_it_is_declared() -> None:
    needs = pod("p").cpu_m(1000)
    needs.obj["spec"]["containers"][0]["restartPolicy"] = "Never"  # required beside rules
    needs.obj["spec"]["containers"][0]["restartPolicyRules"] = [
        {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}]
    objs = [node("n1"), _declares(node("n2").cpu_m(1000), "RestartAllContainersOnContainerExits"), needs]
    assert _plans(*objs) == {"model": {"p": "n2"}, "baseline": {"p": "n2"}}
    assert _refused(objs, {"p": "n1"}) == ["binding"]


def test_host_network_in_a_user_namespace_needs_its_feature() -> None:
    p = _host_network(pod("p").cpu_m(1000), 8080)
    p.obj["spec"]["hostUsers"] = False
    objs = [node("n1"), _declares(node("n2").cpu_m(1000), "UserNamespacesHostNetworkSupport"), p]
    assert _plans(*objs) == {"model": {"p": "n2"}, "baseline": {"p": "n2"}}
    assert _refused(objs, {"p": "n1"}) == ["binding"]
    # with host users (the default) nothing is needed: the emptier node, as the baseline scores
    p.obj["spec"].pop("hostUsers")
    assert _refused(objs, {"p": "n1"}) == []


def test_bind_mount_options_need_their_feature() -> None:
    """volumebindmountoptions: a mount with bindMountOptions (possible only where the alpha
    gate let the field in) needs VolumeBindMountOptions on the node; found by the verifier's
    own reading before the parser read it."""
    p = pod("p").cpu_m(1000)
    p.obj["spec"]["volumes"] = [{"name": "v", "emptyDir": {}}]
    p.obj["spec"]["containers"][0]["volumeMounts"] = [{"name": "v", "mountPath": "/v", "bindMountOptions": ["ro"]}]
    objs = [node("n1"), _declares(node("n2").cpu_m(1000), "VolumeBindMountOptions"), p]
    assert _plans(*objs) == {"model": {"p": "n2"}, "baseline": {"p": "n2"}}
    assert _refused(objs, {"p": "n1"}) == ["binding"]


# ---- VolumeBinding (plugins/volumebinding) -----------------------------------------------


def _with_claim(p: Any, claim: str) -> Any:
    p.obj["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
    return p


def _pvc(name: str, *, cls: str | None = "local", volume: str = "", bound: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if bound:
        meta["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    if cls is not None:
        spec["storageClassName"] = cls
    if volume:
        spec["volumeName"] = volume
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}


def _pv(name: str, node_name: str, *, claim: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "local",
        "local": {"path": "/mnt/disk"},
        "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [node_name]}]}]}}}
    if claim:
        spec["claimRef"] = {"namespace": "default", "name": claim}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec}


def _class(name: str, mode: str, provisioner: str = "kubernetes.io/no-provisioner", **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
            "provisioner": provisioner, "volumeBindingMode": mode, **extra}


NODES = [node("n1"), node("n2").cpu_m(1000)]  # n2 is the fuller fit: the baseline's spread picks n1


def test_a_claim_bound_to_a_local_volume_pins_the_pod_to_its_node() -> None:
    objs = [*NODES, _class("local", "WaitForFirstConsumer"), _pv("pv-2", "n2", claim="data"),
            _pvc("data", volume="pv-2", bound=True), _with_claim(pod("p").cpu_m(1000), "data")]
    assert _plans(*objs) == {"model": {"p": "n2"}, "baseline": {"p": "n2"}}
    assert _refused(objs, {"p": "n1"}) == ["binding"]


def test_a_wait_for_first_consumer_claim_goes_where_an_available_volume_is() -> None:
    objs = [*NODES, _class("local", "WaitForFirstConsumer"), _pv("pv-2", "n2"),
            _pvc("data"), _with_claim(pod("p").cpu_m(1000), "data")]
    assert _plans(*objs) == {"model": {"p": "n2"}, "baseline": {"p": "n2"}}
    assert _refused(objs, {"p": "n1"}) == ["binding"]


def test_a_provisioning_class_goes_where_its_allowed_topologies_say() -> None:
    topologies = [{"matchLabelExpressions": [{"key": "kubernetes.io/hostname", "values": ["n2"]}]}]
    objs = [*NODES, _class("local", "WaitForFirstConsumer", "csi.example.com", allowedTopologies=topologies),
            _pvc("data"), _with_claim(pod("p").cpu_m(1000), "data")]
    assert _plans(*objs) == {"model": {"p": "n2"}, "baseline": {"p": "n2"}}


@pytest.mark.parametrize("objs", [
    pytest.param([_with_claim(pod("p").cpu_m(1000), "missing")], id="claim-missing"),
    pytest.param([_class("local", "Immediate"), _pvc("data"), _with_claim(pod("p").cpu_m(1000), "data")],
                 id="unbound-immediate"),
    pytest.param([_class("local", "WaitForFirstConsumer"), _pvc("data"), _with_claim(pod("p").cpu_m(1000), "data")],
                 id="no-volume-no-provisioner"),
    pytest.param([_pvc("data", volume="gone", bound=True), _with_claim(pod("p").cpu_m(1000), "data")],
                 id="bound-to-a-missing-volume"),
])
def test_a_pod_whose_claims_no_node_can_serve_stays_pending(objs: list[Any]) -> None:
    assert _plans(*NODES, *objs) == {"model": {}, "baseline": {}}
    assert _refused([*NODES, *objs], {"p": "n1"}) == ["binding"]


def _zoned_volume(zones: str, key: str = "topology.kubernetes.io/zone") -> list[dict[str, Any]]:
    """A network volume (no node affinity) bound to the claim, labelled with its zones."""
    volume = _pv("pv-z", "any", claim="data")
    del volume["spec"]["nodeAffinity"], volume["spec"]["local"]
    volume["spec"]["csi"] = {"driver": "csi.example.com", "volumeHandle": "z"}
    volume["metadata"]["labels"] = {key: zones}
    return [_class("local", "WaitForFirstConsumer"), volume, _pvc("data", volume="pv-z", bound=True)]


def test_a_volume_zone_label_keeps_the_pod_in_its_zone() -> None:
    """VolumeZone (plugins/volumezone): n1 is in zone a, n2 in zone b, n3 has no zone label at
    all (VolumeZone lets it through); the volume is in b, or in a and b ("a__b")."""
    nodes = [node("n1").zone("a"), node("n2").zone("b").cpu_m(1000), node("n3").cpu_m(1000)]
    p = _with_claim(pod("p").cpu_m(1000), "data")
    objs = [*nodes, *_zoned_volume("b"), p]
    assert _refused(objs, {"p": "n1"}) == ["binding"]
    assert _refused(objs, {"p": "n2"}) == [] and _refused(objs, {"p": "n3"}) == []
    both = [*nodes, *_zoned_volume("a__b"), p]
    assert _refused(both, {"p": "n1"}) == [] and _plans(*both) == {"model": {"p": "n1"}, "baseline": {"p": "n1"}}
    # a beta label on the volume, met by the node's GA label
    beta = [node("n1").zone("a"), node("n2").zone("b"), *_zoned_volume("b", "failure-domain.beta.kubernetes.io/zone"), p]
    assert _plans(*beta) == {"model": {"p": "n2"}, "baseline": {"p": "n2"}}
    assert _refused(beta, {"p": "n1"}) == ["binding"]


def _once_pod(name: str = "data") -> dict[str, Any]:
    claim = _pvc(name, volume="pv-n", bound=True)
    claim["spec"]["accessModes"] = ["ReadWriteOncePod"]
    return claim


def _network_volume(claim: str = "data") -> dict[str, Any]:
    volume = _pv("pv-n", "any", claim=claim)
    del volume["spec"]["nodeAffinity"], volume["spec"]["local"]
    volume["spec"]["csi"] = {"driver": "csi.example.com", "volumeHandle": "n"}
    volume["spec"]["accessModes"] = ["ReadWriteOncePod"]
    return volume


def _tracked(*capacities: tuple[str, str, str | None], tracking: bool = True) -> list[dict[str, Any]]:
    """A class whose CSI driver provisions (WaitForFirstConsumer) and, with ``tracking``, opts into
    storage capacity tracking; a CSIStorageCapacity per (zone, capacity, maximumVolumeSize); and
    claim "data" asking 10Gi of the class."""
    driver = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": "csi.example.com"},
              "spec": {"storageCapacity": tracking}}
    out = [_class("tracked", "WaitForFirstConsumer", provisioner="csi.example.com"), driver, _pvc("data", cls="tracked")]
    out[-1]["spec"]["resources"]["requests"]["storage"] = "10Gi"
    for i, (zone, capacity, most) in enumerate(capacities):
        cap: dict[str, Any] = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
                               "metadata": {"name": f"cap-{i}", "namespace": "kube-system"},
                               "storageClassName": "tracked", "capacity": capacity,
                               "nodeTopology": {"matchLabels": {"topology.kubernetes.io/zone": zone}}}
        if most is not None:
            cap["maximumVolumeSize"] = most
        out.append(cap)
    return out


def test_a_driver_tracking_capacity_provisions_only_where_a_capacity_holds_the_claim() -> None:
    """VolumeBinding's hasEnoughCapacity: the CSIStorageCapacity of n2's zone holds 10Gi, n1's
    does not (a maximumVolumeSize is read before the capacity); a driver that does not track
    capacity provisions anywhere."""
    nodes = [node("n1").zone("a"), node("n2").zone("b").cpu_m(1000)]
    p = _with_claim(pod("p").cpu_m(1000), "data")
    objs = [*nodes, *_tracked(("a", "100Gi", "5Gi"), ("b", "20Gi", None)), p]
    assert _plans(*objs) == {"model": {"p": "n2"}, "baseline": {"p": "n2"}}
    assert _refused(objs, {"p": "n1"}) == ["binding"]
    alone = [nodes[0], *_tracked(("a", "100Gi", "5Gi"), ("b", "20Gi", None)), p]
    assert api.plan(snapshot(*alone), api.PlanOptions(time_limit=10)).workloads[0].reason == (
        "0/1 nodes are available: 1 node(s) did not have enough free storage. preemption: 0/1 nodes are available: "
        "1 Preemption is not helpful for scheduling.")
    untracked = [*nodes, *_tracked(("a", "1Gi", None), tracking=False), p]
    assert _plans(*untracked)["model"] == {"p": "n1"}


def test_a_claim_being_provisioned_for_a_node_keeps_its_pod_there() -> None:
    """A claim annotated volume.kubernetes.io/selected-node is provisioned for that node only
    (FindPodVolumes' fast path): n2, though n1 is the emptier node."""
    nodes = [node("n1"), node("n2").cpu_m(1000)]
    claim = _pvc("data", cls="fast")
    claim["metadata"]["annotations"] = {"volume.kubernetes.io/selected-node": "n2"}
    objs = [*nodes, _class("fast", "WaitForFirstConsumer", provisioner="csi.example.com"), claim,
            _with_claim(pod("p").cpu_m(1000), "data")]
    assert _plans(*objs) == {"model": {"p": "n2"}, "baseline": {"p": "n2"}}
    assert _refused(objs, {"p": "n1"}) == ["binding"]
    assert api.plan(snapshot(*objs[:1], *objs[2:]), api.PlanOptions(time_limit=10)).workloads[0].reason == (
        "0/1 nodes are available: 1 node(s) didn't find available persistent volumes to bind. preemption: 0/1 nodes "
        "are available: 1 Preemption is not helpful for scheduling.")


def test_a_volume_left_out_by_node_affinity_or_zone_is_told_so() -> None:
    """VolumeBinding's node affinity conflict and VolumeZone's each keep upstream's words."""
    bound = [node("n1"), _class("local", "WaitForFirstConsumer"), _pv("pv-2", "n2", claim="data"),
             _pvc("data", volume="pv-2", bound=True), _with_claim(pod("p").cpu_m(1000), "data")]
    assert api.plan(snapshot(*bound), api.PlanOptions(time_limit=10)).workloads[0].reason.startswith(
        "0/1 nodes are available: 1 node(s) didn't match PersistentVolume's node affinity.")
    zoned = [node("n1").zone("a"), *_zoned_volume("b"), _with_claim(pod("p").cpu_m(1000), "data")]
    assert api.plan(snapshot(*zoned), api.PlanOptions(time_limit=10)).workloads[0].reason.startswith(
        "0/1 nodes are available: 1 node(s) had no available volume zone.")


def _local_claims(*names: str, size: str = "1Gi") -> list[dict[str, Any]]:
    out = []
    for name in names:
        claim = _pvc(name)
        claim["spec"]["resources"]["requests"]["storage"] = size
        out.append(claim)
    return out


def _local_pv(name: str, node_name: str, size: str = "10Gi") -> dict[str, Any]:
    volume = _pv(name, node_name)
    volume["spec"]["capacity"]["storage"] = size
    return volume


def test_two_claims_never_take_one_local_volume() -> None:
    """findMatchingVolumes assumes each binding as it schedules a pod: of two pods whose claims
    only n1's one local volume serves, one binds (the stronger first) and the other waits; a
    second volume, on n2, takes the other pod there."""
    objs = [node("n1"), node("n2").cpu_m(1000), _class("local", "WaitForFirstConsumer"), _local_pv("pv-1", "n1"),
            *_local_claims("data-p", "data-q"), _with_claim(pod("p").cpu_m(500).priority(100), "data-p"),
            _with_claim(pod("q").cpu_m(500), "data-q")]
    assert _plans(*objs) == {"model": {"p": "n1"}, "baseline": {"p": "n1"}}
    assert _refused(objs, {"p": "n1", "q": "n1"}) == ["binding"]
    assert _plans(*objs, _local_pv("pv-2", "n2")) == {"model": {"p": "n1", "q": "n2"},
                                                       "baseline": {"p": "n1", "q": "n2"}}


def test_a_local_volume_serves_a_claim_its_size_holds() -> None:
    """n1's volumes hold 5Gi and 20Gi: a 10Gi claim and a 5Gi claim both fit (the 10Gi one on
    the 20Gi volume); two 10Gi claims do not, and one pod asking two 10Gi claims does not."""
    base = [node("n1"), _class("local", "WaitForFirstConsumer"), _local_pv("pv-s", "n1", "5Gi"),
            _local_pv("pv-l", "n1", "20Gi")]
    both = [*base, *_local_claims("big", size="10Gi"), *_local_claims("small", size="5Gi"),
            _with_claim(pod("p").cpu_m(500), "big"), _with_claim(pod("q").cpu_m(500), "small")]
    assert _plans(*both) == {"model": {"p": "n1", "q": "n1"}, "baseline": {"p": "n1", "q": "n1"}}
    two = [*base, *_local_claims("b1", "b2", size="10Gi"), _with_claim(pod("p").cpu_m(500), "b1"),
           _with_claim(pod("q").cpu_m(500), "b2")]
    assert len(_plans(*two)["model"]) == 1
    assert _refused(two, {"p": "n1", "q": "n1"}) == ["binding"]
    # one 20Gi volume, a 5Gi claim placed first and a 10Gi claim: the second finds none (the
    # baseline once counted only the sizes the new pod asks; the thorough property profile found it)
    one = [node("n1"), _class("local", "WaitForFirstConsumer"), _local_pv("pv-l", "n1", "20Gi"),
           *_local_claims("s1", size="5Gi"), *_local_claims("b1", size="10Gi"),
           _with_claim(pod("a").cpu_m(500), "s1"), _with_claim(pod("b").cpu_m(500), "b1")]
    plans = _plans(*one)
    assert len(plans["model"]) == 1 and len(plans["baseline"]) == 1, plans
    pair = pod("p").cpu_m(500)
    pair.obj["spec"]["volumes"] = [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
                                   for i, c in enumerate(("b1", "b2"))]
    assert _plans(*base, *_local_claims("b1", "b2", size="10Gi"), pair) == {"model": {}, "baseline": {}}


@pytest.mark.parametrize("mismatch", ["selector", "volume mode", "attributes class", "released"])
def test_a_volume_the_claim_cannot_take_is_not_an_option(mismatch: str) -> None:
    """FindMatchingVolume: n1's volume (the emptier node) differs from the claim in its labels
    (the claim's selector), its volumeMode, its volumeAttributesClassName, or is Released; n2's
    matches, so the pod goes to n2."""
    nodes = [node("n1"), node("n2").cpu_m(1000)]
    near, far = _local_pv("pv-1", "n1"), _local_pv("pv-2", "n2")
    claim = _local_claims("data")[0]
    for volume in (near, far):
        volume["metadata"]["labels"] = {"tier": "fast"}
    if mismatch == "selector":
        claim["spec"]["selector"] = {"matchLabels": {"tier": "fast"}}
        near["metadata"]["labels"] = {"tier": "slow"}
    elif mismatch == "volume mode":
        near["spec"]["volumeMode"] = "Block"
    elif mismatch == "attributes class":
        near["spec"]["volumeAttributesClassName"] = "gold"
    else:
        near["status"] = {"phase": "Released"}
    objs = [*nodes, _class("local", "WaitForFirstConsumer"), near, far, claim, _with_claim(pod("p").cpu_m(500), "data")]
    assert _plans(*objs) == {"model": {"p": "n2"}, "baseline": {"p": "n2"}}
    assert _refused(objs, {"p": "n1"}) == ["binding"]


def test_a_read_write_once_pod_claim_serves_one_pod() -> None:
    """VolumeRestrictions: while "user" runs with the claim no other pod may have it; of two
    pending pods asking for it, the plan binds one (the first by name), never both."""
    base = [*NODES, _class("local", "WaitForFirstConsumer"), _network_volume(), _once_pod()]
    running = _with_claim(pod("user").on("n1").cpu_m(500), "data")
    objs = [*base, running, _with_claim(pod("p").cpu_m(1000), "data")]
    assert _plans(*objs) == {"model": {}, "baseline": {}}
    assert _refused(objs, {"p": "n2"}) == ["volume-restrictions"]
    two = [*base, _with_claim(pod("p").cpu_m(1000), "data"), _with_claim(pod("q").cpu_m(1000), "data")]
    assert _plans(*two) == {"model": {"p": "n2"}, "baseline": {"p": "n1"}}
    assert _refused(two, {"p": "n1", "q": "n2"}) == ["volume-restrictions"]


def test_a_wait_for_first_consumer_claim_two_pods_share_binds_once_and_keeps_them_together() -> None:
    """Issue 50, item 1: two pending pods name one claim that only node-local volumes serve
    (one on a, one on b). Upstream binds the claim with the first pod, to that node's volume,
    and the second can only go where the volume is. Both go to b, where both fit, taking one
    volume; the model, the baseline and the naive model alike; a plan that splits them, or
    that has a third pod take b's other claim's volume twice, is refused."""
    from tests.pipeline.naive import naive_tiers

    base = [node("a").cpu_m(1000), node("b").cpu_m(4000), _class("local", "WaitForFirstConsumer"),
            _pv("pv-a", "a"), _pv("pv-b", "b"), _pvc("data")]
    readers = [_with_claim(pod(f"reader-{x}").cpu_m(1000), "data") for x in "ab"]
    objs = [*base, *readers]
    assert _plans(*objs) == {"model": {"reader-a": "b", "reader-b": "b"}, "baseline": {"reader-a": "b", "reader-b": "b"}}
    snap = snapshot(*objs)
    assert naive_tiers(snap, strict_pdbs=True).placed == 2
    assert _refused(objs, {"reader-a": "a", "reader-b": "b"}) == ["binding"]
    assert _refused(objs, {"reader-a": "b", "reader-b": "b"}) == []
    # b holds one volume: a pod of another claim of the class and the pair cannot both be there
    other = _with_claim(pod("solo").cpu_m(1000), "other")
    crowded = [*base, _pvc("other"), *readers, other]
    assert _refused(crowded, {"reader-a": "b", "reader-b": "b", "solo": "b"}) == ["binding"]
    plans = _plans(*crowded)
    for placed in plans.values():  # three pods, two volumes on two nodes, a's room for one pod
        assert sorted(placed.items()) in ([("reader-a", "b"), ("reader-b", "b"), ("solo", "a")],)
    assert naive_tiers(snapshot(*crowded), strict_pdbs=True).placed == 3
    # one volume, room for both: both (per pod, the second found no volume); two nodes of room
    # for one pod each: one (split, each took a volume of its own)
    one = [node("b").cpu_m(4000), _class("local", "WaitForFirstConsumer"), _pv("pv-b", "b"), _pvc("data"), *readers]
    small = [node("a").cpu_m(1000), node("b").cpu_m(1000), *base[2:], *readers]
    for case, placed in ((one, 2), (small, 1)):
        plans = _plans(*case)
        assert [len(p) for p in plans.values()] == [placed, placed] and len(set(plans["model"].values())) == 1
        assert naive_tiers(snapshot(*case), strict_pdbs=True).placed == placed


@pytest.mark.parametrize("policy", ["strict", "soft"])
def test_a_read_write_once_pod_claim_is_taken_by_preempting_its_lower_holder_on_its_node(policy: str) -> None:
    """Issue 50, item 2: a lower-priority running pod holds the claim; upstream's preemption
    dry run removes it from its node (VolumeRestrictions' RemovePod lifts the conflict there
    and nowhere else), so the pod goes to that node, the holder evicted: the model, the
    baseline and the naive model alike. Of two pending pods asking, only the first by name
    may; a pod that may not preempt the holder (not above it, or Never) stays pending."""
    from tests.pipeline.naive import naive_tiers

    base = [*NODES, _class("local", "WaitForFirstConsumer"), _network_volume(), _once_pod()]
    holder = _with_claim(pod("user").on("n2").cpu_m(500).priority(1), "data")
    objs = [*base, holder, _with_claim(pod("p").cpu_m(500).priority(100), "data"),
            _with_claim(pod("q").cpu_m(500).priority(100), "data")]
    snap = snapshot(*objs)
    for options in (api.PlanOptions(time_limit=10, pdb_policy=policy),
                    api.PlanOptions(baseline_only=True, pdb_policy=policy)):
        plan = api.plan(snap, options)
        assert verify.verify(snap.facts, snap, plan, strict_pdbs=policy == "strict") == []
        assert ({b.pod: b.node for b in plan.bindings}, [e.pod for e in plan.evictions]) == (
            {"default/p": "n2"}, ["default/user"])
    o, want = api.plan(snap, api.PlanOptions(time_limit=10, pdb_policy=policy)).objective, \
        naive_tiers(snap, strict_pdbs=policy == "strict")
    assert (tuple(sorted(o.satisfied_by_priority.items(), reverse=True)), o.placed_pods, o.pdb_violations,
            round(o.preemption_cost * 1000), o.evicted_pods) == \
        (want.satisfied_by_priority, want.placed, want.pdb_violations, want.cost_milli, want.evicted) == \
        (((100, 1),), 1, 0, 2000, 1)
    # the holder kept, or the pod elsewhere: refused
    assert _refused(objs, {"p": "n2"}) == ["volume-restrictions"]
    assert _refused(objs, {"p": "n1"}) == ["volume-restrictions"]
    for weaker in (pod("p").cpu_m(500).priority(1), pod("p").cpu_m(500).priority(100).never_preempt()):
        kept = [*base, holder, _with_claim(weaker, "data")]
        assert _plans(*kept) == {"model": {}, "baseline": {}}


# ---- RuntimeClass admission (plugin/pkg/admission/runtimeclass) --------------------------


def _runtime_class(name: str, overhead_cpu: str, **scheduling: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name},
                           "handler": name, "overhead": {"podFixed": {"cpu": overhead_cpu}}}
    if scheduling:
        obj["scheduling"] = scheduling
    return obj


def _runs_in(p: Any, runtime: str) -> Any:
    p.obj["spec"]["runtimeClassName"] = runtime
    return p


def test_a_runtime_class_overhead_counts_as_admission_sets_it() -> None:
    # 900m asked + 250m of the class's overhead do not fit in n1's 1000m
    objs = [node("n1").cpu_m(1000), node("n2").cpu_m(2000), _runtime_class("kata", "250m"),
            _runs_in(pod("p").cpu_m(900), "kata")]
    assert _plans(*objs) == {"model": {"p": "n2"}, "baseline": {"p": "n2"}}
    assert _refused(objs, {"p": "n1"}) == ["capacity"]


def test_a_runtime_class_node_selector_is_merged_into_the_pod() -> None:
    objs = [node("n1"), node("n2").cpu_m(1000).label("sandbox", "yes"),
            _runtime_class("kata", "0", nodeSelector={"sandbox": "yes"}), _runs_in(pod("p").cpu_m(500), "kata")]
    assert _plans(*objs) == {"model": {"p": "n2"}, "baseline": {"p": "n2"}}
    assert _refused(objs, {"p": "n1"}) == ["binding"]


def test_a_pod_whose_overhead_differs_from_its_runtime_class_is_bad_input() -> None:
    p = _runs_in(pod("p").cpu_m(500), "kata")
    p.obj["spec"]["overhead"] = {"cpu": "100m"}
    with pytest.raises(SnapshotInvalidError, match=r"default/p.*spec\.overhead"):
        snapshot(node("n1"), _runtime_class("kata", "0.25"), p)
    p.obj["spec"]["overhead"] = {"cpu": "250m"}  # the same quantity, written another way
    assert snapshot(node("n1"), _runtime_class("kata", "0.25"), p).pods[0].requests["cpu"] == 750


def test_prebind_gives_each_claim_the_smallest_volume_left_or_its_provisioning_node() -> None:
    """What the adapter writes before binding (kube/volumes.py ``prebind``, as VolumeBinding's
    PreBind): p's 4Gi claim the 5Gi volume, q's the 20Gi one (the 5Gi one is p's), r's claim
    of a provisioning class its node, and so does e's generic ephemeral volume's claim
    (``e-scratch``); a claim already bound gets nothing."""
    from solver.kube.volumes import prebind
    from tests.builders import admitted

    objs = [node("n1"), _class("local", "WaitForFirstConsumer"),
            _class("made", "WaitForFirstConsumer", provisioner="example.com/made"),
            _local_pv("pv-big", "n1", "20Gi"), _local_pv("pv-small", "n1", "5Gi"),
            *_local_claims("a", "b", size="4Gi"), _pvc("c", cls="made"), _pvc("done", volume="pv-x", bound=True),
            _with_claim(pod("p").cpu_m(100), "a"), _with_claim(pod("q").cpu_m(100), "b"),
            _with_claim(pod("r").cpu_m(100), "c"), _with_claim(pod("s").cpu_m(100), "done"),
            _pvc("e-scratch", cls="made"), pod("e").cpu_m(100)]
    objs[-1].obj["spec"]["volumes"] = [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {
        "accessModes": ["ReadWriteOnce"], "storageClassName": "made", "resources": {"requests": {"storage": "1Gi"}}}}}}]
    docs = admitted([o.build() if hasattr(o, "build") else o for o in objs])
    by_kind: dict[str, list[Any]] = {}
    for o in docs:
        by_kind.setdefault(o["kind"], []).append(o)
    nodes = {n.name: n for n in reading.read(docs).nodes}
    got = prebind(by_kind, [("default/p", "n1"), ("default/q", "n1"), ("default/r", "n1"), ("default/s", "n1"),
                            ("default/e", "n1")], nodes)
    assert [(b.claim, b.volume, b.node) for b in got] == [("a", "pv-small", ""), ("b", "pv-big", ""), ("c", "", "n1"),
                                                          ("e-scratch", "", "n1")]
