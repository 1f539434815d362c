"""Property: on random small clusters the aggregated model's tiers equal a naive model's.

The generator covers composite trees, rack/zone topology at two levels, running
gang members, `disruptionMode: all` victim units, PDBs, priorities with
`preemptionPolicy: Never`, taints and selectors. In about a third of the examples
it adds DRA (``dra_part``): node-local GPUs and a network-attached pool, claim
templates (count, All, CEL selectors, firstAvailable, matchAttribute /
distinctAttribute on the PCIe root, taint tolerations), per-pod and
PodGroup-shared claims of the pending pods, and devices held by running pods
that go free when every reserving pod is evicted. Every plan passes
``solver.verify``; the greedy baseline's plan is verified too and never beats
the optimum.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import event, given
from hypothesis import strategies as st

from solver import api, verify
from solver.baseline import greedy
from solver.core.features import FeatureGates
from solver.core.plan import Plan
from solver.model.bounds import domains, room
from solver.model.build import build_model
from solver.model.solve import SolveParams, solve
from solver.plan.decode import make_plan
from solver.problem.build import Problem, build_problem
from tests import builders as b
from tests.dra_builders import (
    DRIVER,
    PCIE,
    claim,
    claim_template,
    device,
    device_class,
    first_available,
    group_claims,
    request,
    reserved_for_groups,
    resource_slice,
    with_claims,
)
from tests.pipeline.naive import naive_tiers

CPU = st.sampled_from([500, 1000, 2000, 3000])
MODEL = f'device.attributes["{DRIVER}"].model'
TAINT = {"key": "broken", "value": "ecc"}


@dataclass(frozen=True)
class _Dev:
    pool: str
    name: str
    reach: frozenset[str]


@dataclass
class _DraPart:
    objs: list[Any]
    devices: list[_Dev]
    templates: list[str]


def _device(draw: Any, name: str, pcie: str | None) -> dict[str, Any]:
    d = device(name, model=draw(st.sampled_from(["A", "B"])))
    if pcie is not None:
        d["attributes"][PCIE] = {"string": pcie}
    if draw(st.integers(0, 7)) == 0:
        d["taints"] = [{**TAINT, "effect": draw(st.sampled_from(["NoSchedule", "NoExecute"]))}]
    if draw(st.integers(0, 11)) == 0:
        d["allowMultipleAllocations"] = True
    return d


def _sub(draw: Any, name: str) -> dict[str, Any]:
    all_mode = draw(st.integers(0, 4)) == 0
    model = draw(st.sampled_from([None, None, "A", "B"]))
    tolerate = draw(st.integers(0, 3)) == 0
    return request(name, count=None if all_mode else draw(st.integers(1, 2)), all_mode=all_mode,
                   selectors=(f'{MODEL} == "{model}"',) if model else (),
                   tolerations=[{"key": TAINT["key"], "operator": "Exists"}] if tolerate else None)


def _template(draw: Any, name: str) -> Any:
    requests = []
    n_requests = 2 if draw(st.integers(0, 4)) == 0 else 1
    for r in range(n_requests):
        if draw(st.integers(0, 3)) == 0:
            requests.append(first_available(f"r{r}", _sub(draw, "a"), _sub(draw, "b")))
        else:
            requests.append(_sub(draw, f"r{r}"))
            if draw(st.integers(0, 7)) == 0:  # admin access: devices in use too, nothing used up
                requests[-1]["exactly"]["adminAccess"] = True
    match = PCIE if draw(st.integers(0, 2)) == 0 else None
    distinct = PCIE if n_requests == 1 and draw(st.integers(0, 3)) == 0 else None
    return claim_template(name, *requests, match=match, distinct=distinct)


@st.composite
def dra_part(draw: Any, nodes: list[str], racks: dict[str, str]) -> _DraPart:
    """GPUs (0-4 per node, at most 8 in all, model A/B, 1-2 PCIe roots), maybe a network pool
    (1-2 devices, a rack's nodes or all nodes), the DeviceClass and 1-2 claim templates."""
    objs: list[Any] = [device_class("gpu", f'device.driver == "{DRIVER}"')]
    devices: list[_Dev] = []
    budget = 8
    for n in nodes:
        k = draw(st.integers(0, min(4, budget)))
        budget -= k
        if k == 0:
            continue
        roots = draw(st.integers(1, 2))
        devs = [_device(draw, f"gpu-{j}", f"pci{j * roots // k}") for j in range(k)]
        objs.append(resource_slice(f"{n}-gpu", devs, node=n))
        devices += [_Dev(n, d["name"], frozenset([n])) for d in devs]
    if budget and draw(st.booleans()):
        devs = [_device(draw, f"link-{j}", draw(st.sampled_from([None, "pci0"])))
                for j in range(draw(st.integers(1, min(2, budget))))]
        rack = draw(st.sampled_from([None, "r0", "r1"]))
        if rack is None:
            objs.append(resource_slice("fabric", devs, pool="fabric", all_nodes=True))
            reach = frozenset(nodes)
        else:
            objs.append(resource_slice("fabric", devs, pool="fabric", node_selector={"nodeSelectorTerms": [
                {"matchExpressions": [{"key": b.RACK, "operator": "In", "values": [rack]}]}]}))
            reach = frozenset(n for n in nodes if racks.get(n) == rack)
        devices += [_Dev("fabric", d["name"], reach) for d in devs]
    templates = [f"t{k}" for k in range(draw(st.integers(1, 2)))]
    objs += [_template(draw, t) for t in templates]
    return _DraPart(objs, devices, templates)


def _hold_devices(draw: Any, dra: _DraPart, running: list[tuple[Any, str, str]]) -> list[Any]:
    """Allocated claims of running pods (1-2 devices reachable from the pod's node), reserved
    by it, sometimes by a second running pod or by its PodGroup, rarely by nobody."""
    objs: list[Any] = []
    free = list(dra.devices)
    entries: dict[str, dict[str, str]] = {name: {} for _, name, _ in running}
    for k, (_, name, node) in enumerate(running):
        cands = [d for d in free if node in d.reach]
        if not cands or draw(st.integers(0, 2)) == 0:
            continue
        picked = [draw(st.sampled_from(cands))]
        rest = [d for d in cands if d != picked[0]]
        if rest and draw(st.integers(0, 3)) == 0:
            picked.append(draw(st.sampled_from(rest)))
        for d in picked:
            free.remove(d)
        reserved = [name]
        others = [(pn, pnode) for _, pn, pnode in running if pn != name and all(pnode in d.reach for d in picked)]
        how = draw(st.integers(0, 9))
        if how == 0:
            reserved = []
        elif how <= 2 and others:
            second = draw(st.sampled_from(others))[0]
            reserved.append(second)
            entries[second][f"h{k}"] = f"claim:h{k}"
        c = claim(f"h{k}", request("gpu"), allocated=[(d.pool, d.name) for d in picked], node=node,
                  reserved_for=reserved)
        if how == 3 and name.startswith("vic-"):
            c.obj["status"]["reservedFor"] = []
            reserved_for_groups(c, "vic")
        if how == 5:  # an admin-access allocation: it holds nothing
            c.obj["spec"]["devices"]["requests"][0]["exactly"]["adminAccess"] = True
            for result in c.obj["status"]["allocation"]["devices"]["results"]:
                result["adminAccess"] = True
        if how == 4:  # reserved for as many consumers as it may be, or nearly (at most 256)
            listed = c.obj["status"]["reservedFor"]
            listed += [{"resource": "widgets", "apiGroup": "example.com", "name": f"x{i}", "uid": f"uid-x{i}"}
                       for i in range(draw(st.sampled_from([255, 256])) - len(listed))]
        objs.append(c)
        entries[name][f"h{k}"] = f"claim:h{k}"
    for pb, name, _ in running:
        _add_claims(pb, **entries[name])
    return objs


def _add_claims(pb: Any, **entries: str) -> Any:
    """with_claims, keeping the pod's earlier entries."""
    if entries:
        old = pb.obj["spec"].get("resourceClaims", [])
        with_claims(pb, **entries)
        pb.obj["spec"]["resourceClaims"] = old + pb.obj["spec"]["resourceClaims"]
    return pb


@st.composite
def clusters(draw: Any) -> list[Any]:
    objs: list[Any] = []
    n_nodes = draw(st.integers(1, 4))
    racks: dict[str, str] = {}
    for i in range(n_nodes):
        nb = b.node(f"n{i}").cpu_m(draw(st.sampled_from([2000, 4000, 6000]))).pods(draw(st.sampled_from([3, 110])))
        if draw(st.booleans()) or i == 0:
            nb.rack(f"r{i // 2}").zone(f"z{i // 3}")
            racks[f"n{i}"] = f"r{i // 2}"
        if draw(st.integers(0, 5)) == 0:
            nb.taint("dedicated", "x")
        objs.append(nb)
    nodes = [f"n{i}" for i in range(n_nodes)]
    dra = draw(dra_part(nodes, racks)) if draw(st.integers(0, 2)) == 0 else None
    if dra:
        objs += dra.objs
    templates = dra.templates if dra else []
    running: list[tuple[Any, str, str]] = []  # (builder, pod name, node)
    standalone: list[Any] = []  # pending pods outside any group
    pending: list[Any] = []

    def claims(pb: Any, shared: str | None = None) -> Any:
        """Some pending pods get a per-pod claim; most sharers name their group's shared claim."""
        pending.append(pb)
        entries = {}
        if templates and draw(st.integers(0, 2)) != 0:
            entries["gpu"] = draw(st.sampled_from(templates))
            if draw(st.integers(0, 5)) == 0:
                entries["aux"] = draw(st.sampled_from(templates))
        if shared and draw(st.integers(0, 5)) != 0:
            entries["shared"] = shared
        return _add_claims(pb, **entries)

    def shared_claim(g: Any) -> str | None:
        if not templates or draw(st.integers(0, 2)) != 0:
            return None
        t = draw(st.sampled_from(templates))
        group_claims(g, shared=t)
        return t

    # running background: single pods and `all` groups
    for i in range(draw(st.integers(0, 5))):
        p = b.pod(f"bg{i}").on(draw(st.sampled_from(nodes))).cpu_m(draw(CPU)).priority(draw(st.sampled_from([0, 10, 50])))
        if draw(st.booleans()):
            p.label("app", "db")
        if draw(st.integers(0, 5)) == 0:  # going already: its room held, never a victim
            p.obj["metadata"]["deletionTimestamp"] = "2026-12-01T00:00:30Z"
            if draw(st.booleans()):
                p.obj["status"]["conditions"] = [{"type": "DisruptionTarget", "status": "True",
                                                  "reason": "PreemptionByScheduler"}]
        if draw(st.integers(0, 3)) == 0:
            p.cost(draw(st.sampled_from(["0", "2.5", "40"])))
        how = draw(st.integers(0, 9))
        if how == 0:  # keeps every pending pod of the first workload off its node or rack
            _anti(p, {"labelSelector": {"matchLabels": {"wl": "w0"}},
                      "topologyKey": draw(st.sampled_from([HOST, b.RACK]))})
        elif how == 1:
            _port(p)
        elif how == 2:
            p.label("wl", "w0")  # an anchor for the first workload's affinity, or a conflict
        objs.append(p)
        running.append((p, f"bg{i}", p.obj["spec"]["nodeName"]))
    if draw(st.booleans()):
        mode_all = draw(st.booleans())
        g = b.pod_group("vic", 1).priority(draw(st.sampled_from([0, 10])))
        if mode_all:
            g.disruption_all()
        objs.append(g)
        for j in range(draw(st.integers(1, 3))):
            p = b.pod(f"vic-{j}").group("vic").on(draw(st.sampled_from(nodes))).cpu_m(draw(CPU)).label("app", "db")
            objs.append(p)
            running.append((p, f"vic-{j}", p.obj["spec"]["nodeName"]))
    if draw(st.booleans()):
        budget = b.pdb("db", draw(st.integers(0, 1)), app="db")
        how = draw(st.integers(0, 5))
        if how == 0:  # the Eviction API lets an unready pod go without spending
            budget.obj["spec"]["unhealthyPodEvictionPolicy"] = "AlwaysAllow"
        elif how == 1:  # healthy enough: IfHealthyBudget lets an unready pod go too
            budget.obj["status"].update(currentHealthy=2, desiredHealthy=1)
        elif how == 2:  # its status lags its spec: the Eviction API refuses what would spend
            budget.obj["metadata"]["generation"] = 2
            budget.obj["status"]["observedGeneration"] = 1
        elif how == 3:  # a second budget over the same pods: the Eviction API refuses them all
            objs.append(b.pdb("db-too", 1, app="db"))
        objs.append(budget)
        for pb, _, _ in running:
            if draw(st.booleans()):  # most running pods of a real cluster are Ready
                pb.obj["status"].setdefault("conditions", []).append({"type": "Ready", "status": "True"})
    def admission_noise(pb: Any) -> Any:
        """Now and then: a scheduling gate, a nomination, being deleted, Never, another priority."""
        how = draw(st.integers(0, 19))
        if how == 0:
            pb.obj["spec"]["schedulingGates"] = [{"name": "example.com/hold"}]
        elif how == 1:
            pb.obj["status"]["nominatedNodeName"] = draw(st.sampled_from(nodes))
        elif how == 2:
            pb.obj["metadata"]["deletionTimestamp"] = "2026-12-01T00:00:30Z"
        elif how == 3:
            pb.never_preempt()
        elif how == 4:
            pb.priority(draw(st.sampled_from([20, 100])))
        return pb

    def inter_pod(name: str) -> Any:
        """One inter-pod rule for every pod of a workload (its pods are labelled wl=<name>),
        or none: self anti-affinity, anti-affinity to db pods, self affinity, affinity to the
        first workload, spread, a host port."""
        how = draw(st.integers(0, 9))
        key = draw(st.sampled_from([HOST, b.RACK, b.ZONE]))
        if how == 0:
            return lambda pb: _anti(pb, {"labelSelector": {"matchLabels": {"wl": name}}, "topologyKey": key})
        if how == 1:
            return lambda pb: _anti(pb, {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": key})
        if how == 2:
            return lambda pb: _affine(pb, {"labelSelector": {"matchLabels": {"wl": name}}, "topologyKey": key})
        if how == 3:
            return lambda pb: _affine(pb, {"labelSelector": {"matchLabels": {"wl": "w0"}}, "topologyKey": key})
        if how == 4:
            skew, min_domains = draw(st.integers(1, 2)), draw(st.sampled_from([None, None, 2, 3]))
            return lambda pb: _spread(pb, key, skew, min_domains, name)
        if how == 5:
            return _port
        return lambda pb: pb

    if draw(st.integers(0, 9)) == 0:  # its PodGroup does not exist yet: it waits
        objs.append(b.pod("orphan").group("ghost").cpu_m(draw(CPU)))
    # pending workloads
    for w in range(draw(st.integers(1, 2))):
        prio = draw(st.sampled_from([20, 100]))
        kind = draw(st.sampled_from(["gang", "basic", "composite", "pod", "replicas"]))
        name = f"w{w}"
        rule = inter_pod(name)
        # a workload's value in the first tier (gangplace.io/value on its root), or none: 1
        worth = draw(st.sampled_from([None, None, None, 0, 2, 5]))

        def valued(root: Any, worth: int | None = worth) -> Any:
            return root if worth is None else root.worth(worth)

        if kind == "pod":
            objs.append(claims(admission_noise(rule(valued(b.pod(name).cpu_m(draw(CPU)).priority(prio)
                                                           .label("wl", name))))))
            standalone.append(objs[-1])
            continue
        if kind == "replicas":  # alike standalone pods (a ReplicaSet's): one pooled class, each its own workload
            cpu = draw(CPU)
            entries = {"gpu": draw(st.sampled_from(templates))} if templates and draw(st.booleans()) else {}
            for i in range(draw(st.integers(2, 4))):
                # later draws may set one apart (a claim several name, an allocated one, volumes)
                objs.append(_add_claims(rule(valued(b.pod(f"{name}-{i}").cpu_m(cpu).priority(prio).label("wl", name))),
                                        **entries))
                pending.append(objs[-1])
                standalone.append(objs[-1])
            continue
        if kind in ("gang", "basic"):
            n_pods = draw(st.integers(1, 3))
            g = valued(b.pod_group(name, draw(st.integers(1, n_pods + 1)) if kind == "gang" else None).priority(prio))
            if draw(st.booleans()):
                g.topology(b.RACK)
            if draw(st.integers(0, 3)) == 0:
                g.never_preempt()
            shared = shared_claim(g)
            objs.append(g)
            cpu = draw(CPU)
            for j in range(n_pods):
                objs.append(claims(admission_noise(rule(b.pod(f"{name}-{j}").group(name).cpu_m(cpu).label("wl", name))),
                                   shared))
            if draw(st.integers(0, 3)) == 0:
                p = b.pod(f"{name}-run").group(name).on(nodes[0]).cpu_m(500)
                objs.append(p)
                running.append((p, f"{name}-run", nodes[0]))
            continue
        n_kids = draw(st.integers(1, 3))
        cg = valued(b.composite(name, draw(st.integers(1, n_kids)) if draw(st.booleans()) else None).priority(prio))
        if draw(st.booleans()):
            cg.topology(b.ZONE)
        if draw(st.integers(0, 4)) == 0:
            cg.disruption_all()
        objs.append(cg)
        for k in range(n_kids):
            child = f"{name}-c{k}"
            n_pods = draw(st.integers(1, 2))
            g = b.pod_group(child, draw(st.integers(1, n_pods)) if draw(st.booleans()) else None).parent(name)
            if draw(st.booleans()):
                g.topology(b.RACK)
            shared = shared_claim(g)
            objs.append(g)
            cpu = draw(CPU)
            for j in range(n_pods):
                pb = admission_noise(rule(b.pod(f"{child}-{j}").group(child).cpu_m(cpu).label("wl", name)))
                if draw(st.integers(0, 5)) == 0:
                    pb.tolerate("dedicated", "x", "NoSchedule")
                objs.append(claims(pb, shared))
    if draw(st.integers(0, 2)) == 0:
        objs += _volume_limits(draw, objs, nodes, running)
    if draw(st.integers(0, 4)) == 0:
        objs += _provisioned(draw, objs, nodes)
    if draw(st.integers(0, 3)) == 0:
        objs += _local_storage(draw, objs, nodes)
    if dra:
        held = _hold_devices(draw, dra, running)
        objs += held
        if held and standalone and draw(st.integers(0, 3)) == 0:
            # a pending pod naming an allocated claim: pinned where it is usable, and it keeps it held
            _add_claims(draw(st.sampled_from(standalone)),
                        pre=f"claim:{draw(st.sampled_from(held)).obj['metadata']['name']}")
        if templates and len(pending) > 1 and draw(st.integers(0, 3)) == 0:
            # a ResourceClaim several pending pods name, of one group or not: allocated once
            template = draw(st.sampled_from(templates))
            spec = next(o.build() for o in dra.objs if o.obj["metadata"]["name"] == template)["spec"]["spec"]
            objs.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                         "metadata": {"name": "both", "namespace": b.NS}, "spec": spec})
            target = "claim:both" if not held or draw(st.booleans()) else \
                f"claim:{draw(st.sampled_from(held)).obj['metadata']['name']}"
            for i in draw(st.lists(st.integers(0, len(pending) - 1), min_size=2, max_size=3, unique=True)):
                if not any(e.get("resourceClaimName") == target[6:] for e in pending[i].obj["spec"].get(
                        "resourceClaims", [])):
                    _add_claims(pending[i], named=target)
    return objs


def _local_storage(draw: Any, objs: list[Any], nodes: list[str]) -> list[Any]:
    """VolumeBinding's static local volumes: 0-2 volumes of 5Gi or 20Gi on some nodes (a class
    that does not provision), and a claim of 5Gi or 10Gi for some pending pods: two claims never
    take one volume."""
    from tests.pipeline.test_refusals import _class, _local_claims, _local_pv

    out: list[Any] = [_class("local", "WaitForFirstConsumer")]
    for n in nodes:
        for i in range(draw(st.sampled_from([0, 1, 1, 2]))):
            out.append(_local_pv(f"lpv-{n}-{i}", n, draw(st.sampled_from(["5Gi", "20Gi"]))))
    pending = [o for o in objs if isinstance(o, b.PodBuilder) and not o.obj["spec"].get("nodeName")]
    for pb in pending:
        if draw(st.booleans()):
            name = f"lc-{pb.obj['metadata']['name']}"
            out += _local_claims(name, size=draw(st.sampled_from(["5Gi", "10Gi"])))
            pb.obj["spec"].setdefault("volumes", []).append({"name": "local", "persistentVolumeClaim": {"claimName": name}})
    return out


def _provisioned(draw: Any, objs: list[Any], nodes: list[str]) -> list[Any]:
    """VolumeBinding's provisioning: a WaitForFirstConsumer class whose driver may track storage
    capacity, 0-2 CSIStorageCapacities (in a zone, or anywhere; room for the 10Gi claims or
    not), and a claim of the class for some pending pods, now and then already being
    provisioned for a node (selected-node)."""
    from tests.pipeline.test_refusals import _class, _pvc

    out: list[Any] = [_class("tracked", "WaitForFirstConsumer", provisioner="disk.example.com"),
                      {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": "disk.example.com"},
                       "spec": {"storageCapacity": draw(st.integers(0, 3)) != 0}}]
    for i in range(draw(st.integers(0, 2))):
        cap: dict[str, Any] = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
                               "metadata": {"name": f"cap{i}", "namespace": "default"}, "storageClassName": "tracked",
                               "capacity": draw(st.sampled_from(["1Gi", "20Gi"]))}
        zone = draw(st.sampled_from([None, "z0", "z1"]))
        cap["nodeTopology"] = {"matchLabels": {b.ZONE: zone}} if zone else {}
        out.append(cap)
    pending = [o for o in objs if isinstance(o, b.PodBuilder) and not o.obj["spec"].get("nodeName")]
    for pb in pending:
        if draw(st.integers(0, 3)) == 0:
            name = f"pv-{pb.obj['metadata']['name']}"
            claim = _pvc(name, cls="tracked")
            claim["spec"]["resources"]["requests"]["storage"] = "10Gi"
            if draw(st.integers(0, 3)) == 0:
                claim["metadata"]["annotations"] = {"volume.kubernetes.io/selected-node": draw(st.sampled_from(nodes))}
            out.append(claim)
            pb.obj["spec"].setdefault("volumes", []).append({"name": "prov", "persistentVolumeClaim": {"claimName": name}})
    return out


def _volume_limits(draw: Any, objs: list[Any], nodes: list[str], running: list[tuple[Any, str, str]]) -> list[Any]:
    """NodeVolumeLimits: CSINodes allowing 0-2 volumes of the driver (or no limit), a CSIDriver
    that must be on the node now and then, and CSI volumes (ReadWriteMany, so that pods may
    share one) on some running and some pending pods; or, now and then, inline in-tree EBS
    volumes that CSI migration counts under ebs.csi.aws.com (``aws://z/vol-0`` and ``vol-0``
    being one volume); and now and then an inline GCE PD, read-only or not (VolumeRestrictions;
    also a migrated volume, counted under pd.csi.storage.gke.io)."""
    from tests.pipeline.test_volume_limits import DRIVER, EBS, _csi_node, _ebs, _inline, _uses, _volume

    migrated = draw(st.integers(0, 3)) == 0
    driver = EBS if migrated else DRIVER
    out: list[Any] = []
    for n in nodes:
        if draw(st.integers(0, 3)) != 0:
            out.append(_csi_node(n, draw(st.sampled_from([None, 0, 1, 1, 2])), driver=driver))
    if draw(st.integers(0, 3)) == 0:
        out.append({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": driver},
                    "spec": {"preventPodSchedulingIfMissing": True}})
    claims = [f"vol{i}" for i in range(draw(st.integers(1, 4)))]
    if not migrated:
        for c in claims:
            out += _volume(c, c)
    pending = [o for o in objs if isinstance(o, b.PodBuilder) and not o.obj["spec"].get("nodeName")]
    for pb in [r[0] for r in running] + pending:
        if draw(st.integers(0, 2)) == 0:
            c = draw(st.sampled_from(claims))
            if migrated:
                _inline(pb, a=_ebs(draw(st.sampled_from([f"vol-{c[3:]}", f"aws://z/vol-{c[3:]}"]))))
            else:
                _uses(pb, c)
        if draw(st.integers(0, 4)) == 0:  # an inline disk VolumeRestrictions keeps apart
            pb.obj["spec"].setdefault("volumes", []).append(
                {"name": "disk", "gcePersistentDisk": {"pdName": draw(st.sampled_from(["d0", "d1"])),
                                                       "readOnly": draw(st.booleans())}})
    return out


@given(clusters(), st.booleans(), st.booleans())
def test_aggregated_model_matches_naive_model(objs: list[Any], gate: bool, dra_free: bool) -> None:
    # gate: PodGroupPreemptionPolicy; dra_free: evicting every holder frees devices (else upstream's rule);
    # the soft PDB policy, every tier in play (the strict one: the next test)
    snap = b.snapshot(*objs)
    gates = FeatureGates(pod_group_preemption_policy=gate)
    plan = api.plan(snap, api.PlanOptions(time_limit=60, gates=gates, dra_preemption=dra_free, pdb_policy="soft"))
    assert plan.status == "OPTIMAL"
    assert verify.verify(snap.facts, snap, plan, gates=gates, dra_preemption=dra_free) == []
    want = naive_tiers(snap, group_policy_gate=gate, dra_preemption=dra_free)
    event(f"held pods: {min(len(plan.held), 1)}")
    rules = [p for p in snap.pods if p.pod_affinity or p.pod_anti_affinity or p.spread or p.host_ports]
    event(f"inter-pod rules: {min(len(rules), 2)}")
    event(f"refused by admission: {any('all pods in a single pod group' in w.reason for w in plan.workloads)}")
    event(f"evicted pods: {min(plan.objective.evicted_pods, 3)}")
    event(f"satisfied workloads: {plan.objective.satisfied_workloads}/{len(plan.workloads)}")
    event(f"pdb violations: {min(plan.objective.pdb_violations, 1)}")
    event(f"composite satisfied: {any(w.kind == 'CompositePodGroup' and w.satisfied for w in plan.workloads)}")
    limited = [n for n in snap.nodes if n.volume_limits]
    event(f"csi volume limits: {'none' if not limited else min(sum(len(p.csi_volumes) for p in snap.pods), 3)}")
    if snap.dra.devices or snap.dra.claims:
        event(f"dra: {min(len(plan.device_allocations), 3)} allocations")
        event(f"dra: shared claim allocated: {any(a.pod_group for a in plan.device_allocations)}")
        held = {a.device for c in snap.dra.claims.values() for a in c.allocation or ()}
        event(f"dra: held device reused: {any(_key(d) in held for a in plan.device_allocations for d in a.devices)}")
    else:
        event("dra: none")
    o = plan.objective
    have_levels = tuple((p, n) for p, n in sorted(o.satisfied_by_priority.items(), reverse=True))
    assert have_levels == want.satisfied_by_priority
    problem = build_problem(snap, gates=gates, dra_preemption=dra_free, pdb_policy="soft")
    assert _at_least(room.satisfied_bound(problem), want.satisfied_by_priority)
    assert _at_least(room.satisfied_bound(problem, domains.satisfied_caps(problem, 10)), want.satisfied_by_priority)
    _placed_at_most(problem, want)
    assert o.placed_pods == want.placed
    assert o.pdb_violations == want.pdb_violations
    assert round(o.preemption_cost * 1000) == want.cost_milli
    assert o.evicted_pods == want.evicted
    # one monolithic model gives the same tiers as the per-domain decomposition
    whole = api.plan(snap, api.PlanOptions(time_limit=60, decompose=False, gates=gates, dra_preemption=dra_free,
                                           pdb_policy="soft"))
    assert whole.status == "OPTIMAL"
    assert whole.objective.tiers == o.tiers
    # the greedy baseline is a valid plan, never better than the optimum
    base = make_plan(problem, greedy.baseline(problem), stats={})
    assert verify.verify(snap.facts, snap, base, gates=gates, dra_preemption=False) == []  # upstream frees no device
    assert base.objective.tiers <= o.tiers
    for two_level in _two_level(problem):
        assert verify.verify(snap.facts, snap, two_level, gates=gates, dra_preemption=dra_free) == []
        assert two_level.objective.tiers <= o.tiers


@given(clusters())
def test_strict_pdbs_match_the_naive_model_with_hard_budgets(objs: list[Any]) -> None:
    # the default policy: a PDB is a hard rule; the tiers are the naive model's with v == 0
    snap = b.snapshot(*objs)
    plan = api.plan(snap, api.PlanOptions(time_limit=60))  # strict: the default
    assert plan.status == "OPTIMAL"
    assert verify.verify(snap.facts, snap, plan, strict_pdbs=True) == []
    want = naive_tiers(snap, strict_pdbs=True)
    event(f"pdbs: {min(len(snap.pdbs), 1)}")
    o = plan.objective
    assert tuple((p, n) for p, n in sorted(o.satisfied_by_priority.items(), reverse=True)) == \
        want.satisfied_by_priority
    assert (o.placed_pods, o.pdb_violations, round(o.preemption_cost * 1000), o.evicted_pods) == \
        (want.placed, 0, want.cost_milli, want.evicted)
    strict = build_problem(snap, pdb_policy="strict")
    assert _at_least(room.satisfied_bound(strict), want.satisfied_by_priority)
    assert _at_least(room.satisfied_bound(strict, domains.satisfied_caps(strict, 10)), want.satisfied_by_priority)
    _placed_at_most(strict, want)
    baseline = api.plan(snap, api.PlanOptions(baseline_only=True, pdb_policy="strict"))
    assert verify.verify(snap.facts, snap, baseline, strict_pdbs=True) == []
    for two_level in _two_level(strict):
        assert verify.verify(snap.facts, snap, two_level, strict_pdbs=True) == []
        assert two_level.objective.tiers <= o.tiers


def _two_level(problem: Problem) -> list[Plan]:
    """The plans of the two-level search (the guided walk; the chosen workloads placed exactly
    on their domains' nodes), made whatever the deadline: each must pass the verifier and be
    no better than the optimum."""
    choice = domains.choose(problem, 10)
    assignments = [greedy.guided(problem, choice.where)]
    if choice.where:
        exact = solve(build_model(api._chosen(problem, choice.where)), SolveParams(time_limit=10))
        assert exact.assignment is not None  # the empty plan at least
        assignments.append(exact.assignment)
    return [make_plan(problem, a, stats={}) for a in assignments]


def _placed_at_most(problem: Problem, want: Any) -> None:
    """Where the optimum satisfies the domain bound's caps at every priority, it places no more
    pods than the relaxation's most under them (``Choice.placed``)."""
    choice = domains.choose(problem, 10)
    if choice.placed is None:
        return
    caps = tuple((p, choice.caps[p]) for p in sorted(choice.caps, reverse=True))
    event(f"placed bound: at the caps {caps == want.satisfied_by_priority}, "
          f"tight {caps == want.satisfied_by_priority and choice.placed == want.placed}")
    if caps == want.satisfied_by_priority:
        assert want.placed <= choice.placed


def _at_least(bound: tuple[tuple[int, int], ...], best: tuple[tuple[int, int], ...]) -> bool:
    """Is the room bound (per priority, with or without the domains' caps) lexicographically at
    least the naive optimum's?"""
    levels = sorted({p for p, _ in bound} | {p for p, _ in best}, reverse=True)
    have, want = dict(bound), dict(best)
    return [have.get(p, 0) for p in levels] >= [want.get(p, 0) for p in levels]


HOST = "kubernetes.io/hostname"


def _anti(pb: Any, term: dict[str, Any]) -> Any:
    aff = pb.obj["spec"].setdefault("affinity", {}).setdefault("podAntiAffinity", {})
    aff.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(term)
    return pb


def _affine(pb: Any, term: dict[str, Any]) -> Any:
    aff = pb.obj["spec"].setdefault("affinity", {}).setdefault("podAffinity", {})
    aff.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(term)
    return pb


def _spread(pb: Any, key: str, skew: int, min_domains: int | None, name: str) -> Any:
    c: dict[str, Any] = {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
                         "labelSelector": {"matchLabels": {"wl": name}}}
    if min_domains:
        c["minDomains"] = min_domains
    pb.obj["spec"].setdefault("topologySpreadConstraints", []).append(c)
    return pb


def _port(pb: Any) -> Any:
    pb.obj["spec"]["containers"][0]["ports"] = [{"containerPort": 8080, "hostPort": 8080}]
    return pb


def _key(d: Any) -> str:
    return f"{d.driver}/{d.pool}/{d.device}"
