"""Builders of resource.k8s.io/v1 objects (dicts as the API prints them), for DRA tests.

    gpu_slice("n1", 8, pcie=4)                 # node-local: gpu-0..7, pcieRoot pci0/pci1
    device_class("gpu", 'device.driver == "gpu.example.com"')
    claim_template("one-gpu", request("gpu", count=1))
    with_claims(pod("p").group("g"), gpu="one-gpu")
"""

from __future__ import annotations

from typing import Any

from tests.builders import NS, _Builder

DRIVER = "gpu.example.com"
PCIE = "resource.kubernetes.io/pcieRoot"


def device(name: str, **attrs: object) -> dict[str, Any]:
    """A device; attribute values: str -> string, bool -> bool, int -> int, "v:1.2.3" -> version."""
    out: dict[str, Any] = {}
    for key, value in attrs.items():
        key = key.replace("__", "/").replace("_", "-") if "__" in key else key
        if isinstance(value, bool):
            out[key] = {"bool": value}
        elif isinstance(value, int):
            out[key] = {"int": value}
        elif isinstance(value, str) and value.startswith("v:"):
            out[key] = {"version": value[2:]}
        else:
            out[key] = {"string": value}
    return {"name": name, "attributes": out}


def resource_slice(name: str, devices: list[dict[str, Any]], *, node: str | None = None,
                   node_selector: dict[str, Any] | None = None, all_nodes: bool = False,
                   driver: str = DRIVER, pool: str | None = None) -> _Builder:
    spec: dict[str, Any] = {"driver": driver, "pool": {"name": pool or node or name, "generation": 1,
                                                       "resourceSliceCount": 1}, "devices": devices}
    if node:
        spec["nodeName"] = node
    elif node_selector:
        spec["nodeSelector"] = node_selector
    elif all_nodes:
        spec["allNodes"] = True
    return _Builder({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                     "metadata": {"name": name}, "spec": spec})


def gpu_slice(node: str, count: int = 8, *, pcie: int = 4, model: str = "H100", driver: str = DRIVER,
              taint: dict[str, str] | None = None) -> _Builder:
    devs = []
    for i in range(count):
        d = device(f"gpu-{i}", model=model)
        d["attributes"][PCIE] = {"string": f"pci{i // pcie}"}
        if taint and i == 0:
            d["taints"] = [taint]
        devs.append(d)
    return resource_slice(f"{node}-{driver}", devs, node=node, driver=driver)


def device_class(name: str, *expressions: str) -> _Builder:
    return _Builder({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
                     "spec": {"selectors": [{"cel": {"expression": e}} for e in expressions]}})


def request(name: str, *, device_class: str = "gpu", count: int | None = None, all_mode: bool = False,
            selectors: tuple[str, ...] = (), tolerations: list[dict[str, str]] | None = None) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": device_class}
    if all_mode:
        exactly["allocationMode"] = "All"
    if count is not None:
        exactly["count"] = count
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    if tolerations:
        exactly["tolerations"] = tolerations
    return {"name": name, "exactly": exactly}


def first_available(name: str, *subs: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "firstAvailable": [{"name": s["name"], **s["exactly"]} for s in subs]}


def _devices(requests: list[dict[str, Any]], match: str | None, distinct: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"requests": requests}
    constraints = []
    if match:
        constraints.append({"matchAttribute": match})
    if distinct:
        constraints.append({"distinctAttribute": distinct})
    if constraints:
        out["constraints"] = constraints
    return out


def claim_template(name: str, *requests: dict[str, Any], match: str | None = None,
                   distinct: str | None = None) -> _Builder:
    return _Builder({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                     "metadata": {"name": name, "namespace": NS},
                     "spec": {"spec": {"devices": _devices(list(requests), match, distinct)}}})


def claim(name: str, *requests: dict[str, Any], allocated: list[tuple[str, str]] | None = None,
          node: str | None = None, reserved_for: list[str] | None = None) -> _Builder:
    """A ResourceClaim; ``allocated``: (pool, device) of an existing allocation on ``node``."""
    obj: dict[str, Any] = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                           "metadata": {"name": name, "namespace": NS},
                           "spec": {"devices": _devices(list(requests), None, None)}}
    if allocated is not None:
        # kube-scheduler writes allocationTimestamp; an allocation without one is refused when
        # the scheduler binds a pod naming the claim ("field cannot be modified once set")
        alloc: dict[str, Any] = {"devices": {"results": [
            {"request": requests[0]["name"], "driver": DRIVER, "pool": p, "device": d} for p, d in allocated]},
            "allocationTimestamp": "2026-12-01T00:00:00Z"}
        if node:
            alloc["nodeSelector"] = {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node]}]}]}
        obj["status"] = {"allocation": alloc,
                         "reservedFor": [{"resource": "pods", "name": p, "uid": f"uid-{p}"} for p in reserved_for or ()]}
    return _Builder(obj)


def with_claims(builder: _Builder, **entries: str) -> _Builder:
    """Pod claim entries: entry=template name, or entry="claim:NAME" for a ResourceClaim."""
    spec = builder.obj["spec"]
    refs = []
    for entry, target in entries.items():
        if target.startswith("claim:"):
            refs.append({"name": entry, "resourceClaimName": target[6:]})
        else:
            refs.append({"name": entry, "resourceClaimTemplateName": target})
    spec["resourceClaims"] = refs
    return builder


def group_claims(builder: _Builder, **entries: str) -> _Builder:
    """PodGroup spec.resourceClaims entries: entry=template name (shared by the group)."""
    builder.obj["spec"]["resourceClaims"] = [{"name": e, "resourceClaimTemplateName": t} for e, t in entries.items()]
    return builder


def reserved_for_groups(builder: _Builder, *groups: str) -> _Builder:
    """Add PodGroups to an allocated claim's status.reservedFor (every running pod of each consumes it)."""
    builder.obj["status"]["reservedFor"] += [
        {"resource": "podgroups", "apiGroup": "scheduling.k8s.io", "name": g, "uid": f"uid-{g}"} for g in groups]
    return builder


def two_gpu_gang(put: Any) -> None:
    """The adapter's DRA end-to-end cluster, written through ``put``: node n0 with 2 GPUs, and a
    gang of two gangplace pods each claiming one from the template one-gpu."""
    from tests.builders import node, ours, pod, pod_group

    put(node("n0").rack("r0").cpu_m(8000).build())
    put(gpu_slice("n0", 2).build())
    put(device_class("gpu", f'device.driver == "{DRIVER}"').build())
    put(claim_template("one-gpu", request("gpu", count=1)).build())
    put(pod_group("train", 2).priority(100).build())
    for k in range(2):
        put(ours(with_claims(pod(f"train-{k}").group("train").priority(100).cpu_m(1000), gpu="one-gpu")))
