"""DRA (resource.k8s.io/v1): ResourceSlices, DeviceClasses, ResourceClaims, templates and the
claim references of pods and PodGroups -> ``DraState``."""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from solver import cel
from solver.core import snapshot as s
from solver.core.quantity import parse_quantity
from solver.kube.objects import Obj, get_field, ident_of, invalid, list_field, name_of, opt_text_field, quantity
from solver.kube.pods import node_selector_terms, positive_int32

# ---- DRA (resource.k8s.io/v1) ----------------------------------------------------
# Decisions where the API leaves room (selector semantics: solver.cel):
# - Only the slices of the newest pool.generation of each (driver, pool) count;
#   resourceSliceCount (incomplete pools) is not modelled. Partitionable devices are: a
#   slice's sharedCounters and each device's consumesCounters (``_counter_sets``).
# - Device taints with an effect other than NoSchedule / NoExecute are dropped: upstream
#   treats None and unknown effects as no taint.
# - adminAccess (DRAAdminAccess, GA): SubRequest.admin_access and AllocationResult.admin_access
#   (solver.problem.dra: such devices are taken whether in use or not, and held by nobody).
# - Consumable capacity (DRAConsumableCapacity) is read in milli-units, rounded up: a
#   device's capacity entries with their requestPolicy, a request's capacity.requests, an
#   allocation result's shareID and consumedCapacity (solver.filters.consumable).
# - A pod's template claim: status.resourceClaimStatuses names the generated claim. A
#   running pod must have that entry and the claim must exist. A pending pod uses the
#   named claim when it exists, else the claim its template will create ("ns/pod#entry",
#   unallocated). An entry whose resourceClaimName is unset needs no claim (upstream: "can
#   be ignored") and is left out.
# - A PodGroup's shared template claim: the PodGroup's status.resourceClaimStatuses names
#   the generated claim (which must exist); without it, the claim the template will
#   create, "ns/pg#entry", unallocated.
# - status.reservedFor consumers other than pods and podgroups: Claim.reserved_other.

DRA_TAINT_EFFECTS = ("NoSchedule", "NoExecute")  # the effects that keep a device off new claims
_ATTRIBUTE_TYPES: dict[str, type[bool] | type[int] | type[str]] = {
    "bool": bool, "int": int, "string": str, "version": str}
_LIST_ATTRIBUTE_TYPES = ("bools", "ints", "strings", "versions")
_QUANTITIES: dict[str, int] = {}  # capacity text -> base units (valid, non-cpu): slices repeat a few values


def _qualify(driver: str, name: str) -> tuple[str, str]:
    """(domain, name): an unqualified name belongs to the driver's domain (the first "/" splits)."""
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


def _node_selector(obj: Obj, field: str, raw: Any) -> tuple[s.NodeSelectorTerm, ...]:
    if not isinstance(raw, Mapping):
        raise invalid(obj, field, "expected a node selector")
    terms = raw.get("nodeSelectorTerms")
    if not isinstance(terms, list) or not terms:
        raise invalid(obj, f"{field}.nodeSelectorTerms", "must be a non-empty list")
    return node_selector_terms(obj, f"{field}.nodeSelectorTerms", terms)


def _placement(obj: Obj, field: str, raw: Mapping[str, Any], options: tuple[str, ...]) -> str | None:
    """Which one of ``options`` (nodeName, nodeSelector, allNodes ...) is set; None for none."""
    chosen = [o for o in options if raw.get(o) not in (None, False, "")]
    if len(chosen) > 1:
        raise invalid(obj, field, f"exactly one of {', '.join(options)} must be set, got {' and '.join(chosen)}")
    return chosen[0] if chosen else None


def _attribute(obj: Obj, field: str, raw: Any) -> s.AttributeValue:
    if type(raw) is dict and len(raw) == 1:  # the usual shape, checked fast
        kind, value = next(iter(raw.items()))
        want = _ATTRIBUTE_TYPES.get(kind)
        if want is not None and type(value) is want:
            return _version(obj, field, value) if kind == "version" and isinstance(value, str) else value
    if not isinstance(raw, Mapping):
        raise invalid(obj, field, "expected a device attribute")
    if any(raw.get(k) is not None for k in _LIST_ATTRIBUTE_TYPES):
        raise invalid(obj, field, "list-valued attributes (DRAListTypeAttributes) are not supported")
    present = [k for k in _ATTRIBUTE_TYPES if raw.get(k) is not None]
    if len(present) != 1:
        raise invalid(obj, field, "exactly one of bool, int, string, version must be set")
    kind = present[0]
    value, want = raw[kind], _ATTRIBUTE_TYPES[kind]
    if not isinstance(value, want) or (want is int and isinstance(value, bool)):
        raise invalid(obj, f"{field}.{kind}", f"expected {want.__name__}, got {type(value).__name__}")
    return _version(obj, field, value) if kind == "version" and isinstance(value, str) else value


@functools.lru_cache(maxsize=4096)
def _is_semver(text: str) -> bool:
    try:
        cel.parse_semver(text)
    except ValueError:
        return False
    return True


def _version(obj: Obj, field: str, text: str) -> s.Version:
    if not _is_semver(text):
        raise invalid(obj, f"{field}.version", f"not a semantic version (semver.org 2.0.0): {text!r}")
    return s.Version(text)


def _device_taints(obj: Obj, field: str, raw: Any) -> tuple[s.Taint, ...]:
    out = []
    for i, t in enumerate(list_field(obj, field, raw)):
        if not isinstance(t, Mapping) or not isinstance(t.get("key"), str) or not t["key"]:
            raise invalid(obj, f"{field}[{i}].key", "missing")
        effect = t.get("effect")
        if not isinstance(effect, str) or not effect:
            raise invalid(obj, f"{field}[{i}].effect", "missing")
        if effect not in (*DRA_TAINT_EFFECTS, "None"):
            raise invalid(obj, f"{field}[{i}].effect", f"must be NoSchedule, NoExecute or None, got {effect!r}")
        if effect in DRA_TAINT_EFFECTS:
            value = opt_text_field(obj, f"{field}[{i}].value", t.get("value"))
            out.append(s.Taint(key=t["key"], value=value, effect=effect))
    return tuple(sorted(out, key=lambda t: (t.key, t.value, t.effect)))


def _device(obj: Obj, field: str, d: Any, driver: str, pool: str, per_device: bool,
            where: tuple[s.NodeName | None, tuple[s.NodeSelectorTerm, ...], bool]) -> s.Device:
    if not isinstance(d, Mapping):
        raise invalid(obj, field, "expected a device")
    name = d.get("name")
    if not isinstance(name, str) or not name:
        raise invalid(obj, f"{field}.name", "missing")
    values: dict[str, dict[str, dict[str, Any]]] = {"attributes": defaultdict(dict), "capacity": defaultdict(dict)}
    consumable: list[s.Consumable] = []
    for kind, table in values.items():
        entries = d.get(kind)
        if entries is None:
            continue
        if not isinstance(entries, Mapping):
            raise invalid(obj, f"{field}.{kind}", "expected a map")
        first: dict[tuple[str, str], str] = {}
        for key, raw in entries.items():
            if not isinstance(key, str):
                raise invalid(obj, f"{field}.{kind}[{key}]", f"a name must be a string, got {type(key).__name__}")
            domain, ident = _qualify(driver, key)
            if not domain or not ident or "/" in ident:
                raise invalid(obj, f"{field}.{kind}[{key}]",
                            "a qualified name is a domain and a name separated by one slash")
            if (domain, ident) in first:
                raise invalid(obj, f"{field}.{kind}[{key}]",
                            f"the same name as {first[(domain, ident)]!r} once qualified")
            first[(domain, ident)] = key
            if kind == "attributes":
                table[domain][ident] = _attribute(obj, f"{field}.{kind}[{key}]", raw)
                continue
            if type(raw) is dict and type(raw.get("value")) is str and raw["value"] in _QUANTITIES:
                table[domain][ident] = _QUANTITIES[raw["value"]]
            else:
                if not isinstance(raw, Mapping) or raw.get("value") is None:
                    raise invalid(obj, f"{field}.{kind}[{key}].value", "missing")
                table[domain][ident] = quantity(obj, f"{field}.{kind}[{key}].value", "", raw["value"])
                if isinstance(raw["value"], str) and len(_QUANTITIES) < 4096:
                    _QUANTITIES[raw["value"]] = table[domain][ident]
            consumable.append(_consumable(obj, f"{field}.{kind}[{key}]", str(key), raw))
    node, selector, all_nodes = where
    options = ("nodeName", "nodeSelector", "allNodes")
    chosen = _placement(obj, field, d, options)
    if per_device:
        if chosen is None:
            raise invalid(obj, field, "exactly one of nodeName, nodeSelector, allNodes must be set "
                                    "(spec.perDeviceNodeSelection is true)")
        if chosen == "nodeName" and not isinstance(d["nodeName"], str):
            raise invalid(obj, f"{field}.nodeName", "expected str")
        node = s.NodeName(d["nodeName"]) if chosen == "nodeName" else None
        selector = _node_selector(obj, f"{field}.nodeSelector", d["nodeSelector"]) if chosen == "nodeSelector" else ()
        all_nodes = chosen == "allNodes"
    elif chosen is not None:
        raise invalid(obj, f"{field}.{chosen}", "may only be set when spec.perDeviceNodeSelection is true")
    consumes: list[tuple[str, str, int]] = []
    for i, use in enumerate(list_field(obj, f"{field}.consumesCounters", d.get("consumesCounters"))):
        uf = f"{field}.consumesCounters[{i}]"
        counter_set = use.get("counterSet") if isinstance(use, Mapping) else None
        if not isinstance(counter_set, str) or not counter_set:
            raise invalid(obj, f"{uf}.counterSet", "missing")
        consumes.extend((f"{driver}/{pool}/{counter_set}", counter, amount)
                        for counter, amount in _counters(obj, f"{uf}.counters", use.get("counters")).items())
    multiple = d.get("allowMultipleAllocations", False)
    if not isinstance(multiple, bool):
        raise invalid(obj, f"{field}.allowMultipleAllocations", f"expected bool, got {type(multiple).__name__}")
    return s.Device(
        driver=driver, pool=pool, name=name,
        attributes={dm: dict(sorted(v.items())) for dm, v in sorted(values["attributes"].items())},
        capacity={dm: dict(sorted(v.items())) for dm, v in sorted(values["capacity"].items())},
        allow_multiple=multiple,
        taints=_device_taints(obj, f"{field}.taints", d.get("taints")),
        node=node, node_selector=selector, all_nodes=all_nodes, consumes=tuple(sorted(consumes)),
        consumable=tuple(sorted(consumable, key=lambda c: c.name)),
    )


MAX_MILLI = 2**62  # a consumable capacity in milli-units (upstream's range arithmetic is int64)


def _milli(obj: Obj, field: str, raw: Any) -> int:
    """A quantity in milli-units, rounded up (DRAConsumableCapacity works in milli-values)."""
    if type(raw) is str and raw in _MILLI:
        return _MILLI[raw]
    try:
        value = parse_quantity(raw)
    except ValueError as exc:
        raise invalid(obj, field, f"unparsable quantity {str(raw)[:64]!r}") from exc
    if value < 0:
        raise invalid(obj, field, f"negative quantity {str(raw)[:64]!r}")
    if value * 1000 > MAX_MILLI:
        raise invalid(obj, field, f"quantity {str(raw)[:64]!r} is beyond {MAX_MILLI} milli-units")
    milli = math.ceil(value * 1000)
    if type(raw) is str and len(_MILLI) < 4096:
        _MILLI[raw] = milli
    return milli


_MILLI: dict[str, int] = {}


def _consumable(obj: Obj, field: str, name: str, raw: Any) -> s.Consumable:
    """One device capacity with its requestPolicy (DRAConsumableCapacity)."""
    if not isinstance(raw, Mapping) or raw.get("value") is None:
        raise invalid(obj, f"{field}.value", "missing")
    value = _milli(obj, f"{field}.value", raw["value"])
    policy = raw.get("requestPolicy")
    if policy is None:
        return s.Consumable(name=name, value=value)
    pf = f"{field}.requestPolicy"
    if not isinstance(policy, Mapping):
        raise invalid(obj, pf, "expected a request policy")
    default = None if policy.get("default") is None else _milli(obj, f"{pf}.default", policy["default"])
    values = policy.get("validValues")
    rng = policy.get("validRange")
    if values is not None and rng is not None:
        raise invalid(obj, pf, "at most one of validValues and validRange may be set")
    valid: list[int] = []
    for i, v in enumerate(list_field(obj, f"{pf}.validValues", values)):
        valid.append(_milli(obj, f"{pf}.validValues[{i}]", v))
        if len(valid) > 1 and valid[-1] <= valid[-2]:
            raise invalid(obj, f"{pf}.validValues[{i}]", "validValues must be in ascending order")
    lo = hi = step = None
    if rng is not None:
        if not isinstance(rng, Mapping):
            raise invalid(obj, f"{pf}.validRange", "expected a range")
        if rng.get("min") is None:
            raise invalid(obj, f"{pf}.validRange.min", "missing")
        lo = _milli(obj, f"{pf}.validRange.min", rng["min"])
        hi = None if rng.get("max") is None else _milli(obj, f"{pf}.validRange.max", rng["max"])
        step = None if rng.get("step") is None else _milli(obj, f"{pf}.validRange.step", rng["step"])
        if step == 0:
            raise invalid(obj, f"{pf}.validRange.step", "must be positive")
    return s.Consumable(name=name, value=value, policy=s.CapacityPolicy(
        default=default, valid_values=tuple(valid), min=lo, max=hi, step=step))


def _counters(obj: Obj, field: str, raw: Any) -> dict[str, int]:
    """A map of counters, each ``{value: quantity}``."""
    if not isinstance(raw, Mapping) or not raw:
        raise invalid(obj, field, "expected a map of counters")
    out = {}
    for name, entry in raw.items():
        if not isinstance(entry, Mapping) or entry.get("value") is None:
            raise invalid(obj, f"{field}[{name}].value", "missing")
        out[str(name)] = quantity(obj, f"{field}[{name}].value", "", entry["value"])
    return out


def _counter_sets(obj: Obj, driver: str, pool: str) -> dict[str, dict[str, int]]:
    """spec.sharedCounters of a ResourceSlice: "driver/pool/set" -> counter -> amount."""
    out: dict[str, dict[str, int]] = {}
    for i, entry in enumerate(get_field(obj, "spec.sharedCounters", list, [])):
        name = entry.get("name") if isinstance(entry, Mapping) else None
        if not isinstance(name, str) or not name:
            raise invalid(obj, f"spec.sharedCounters[{i}].name", "missing")
        key = f"{driver}/{pool}/{name}"
        if key in out:
            raise invalid(obj, f"spec.sharedCounters[{i}].name", f"duplicate counter set {name!r}")
        out[key] = _counters(obj, f"spec.sharedCounters[{i}].counters", entry.get("counters"))
    return out


def parse_resource_slice(obj: Obj) -> tuple[tuple[str, str], int, list[s.Device]]:
    """((driver, pool), pool generation, devices) of one ResourceSlice."""
    name_of(obj, namespaced=False)
    driver = get_field(obj, "spec.driver", str)
    if not driver:
        raise invalid(obj, "spec.driver", "missing")
    pool = get_field(obj, "spec.pool.name", str)
    if not pool:
        raise invalid(obj, "spec.pool.name", "missing")
    generation = get_field(obj, "spec.pool.generation", int, 0)
    spec = obj["spec"]
    options = ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection")
    chosen = _placement(obj, "spec", spec, options)
    if chosen is None:
        raise invalid(obj, "spec", f"exactly one of {', '.join(options)} must be set")
    if chosen == "nodeName" and not isinstance(spec["nodeName"], str):
        raise invalid(obj, "spec.nodeName", "expected str")
    where = (
        s.NodeName(spec["nodeName"]) if chosen == "nodeName" else None,
        _node_selector(obj, "spec.nodeSelector", spec["nodeSelector"]) if chosen == "nodeSelector" else (),
        chosen == "allNodes",
    )
    devices: list[s.Device] = []
    seen: dict[str, int] = {}
    for i, d in enumerate(get_field(obj, "spec.devices", list, [])):
        dev = _device(obj, f"spec.devices[{i}]", d, driver, pool, chosen == "perDeviceNodeSelection", where)
        if dev.name in seen:
            raise invalid(obj, f"spec.devices[{i}].name",
                        f"duplicate device name {dev.name!r} (also spec.devices[{seen[dev.name]}])")
        seen[dev.name] = i
        devices.append(dev)
    return (driver, pool), generation, devices


def _slices(objs: list[Obj]) -> tuple[tuple[s.Device, ...], dict[str, dict[str, int]]]:
    """Devices and counter sets of the newest generation of every pool; a device key published
    twice is an error, and so is a device consuming a counter its pool's sets lack."""
    newest: dict[tuple[str, str], tuple[int, list[tuple[Obj, list[s.Device]]]]] = {}
    for obj in objs:
        pool, generation, devices = parse_resource_slice(obj)
        have = newest.get(pool)
        if have is None or generation > have[0]:
            newest[pool] = (generation, [(obj, devices)])
        elif generation == have[0]:
            have[1].append((obj, devices))
    out: dict[s.DeviceKey, s.Device] = {}
    owner: dict[s.DeviceKey, str] = {}
    counters: dict[str, dict[str, int]] = {}
    for (driver, pool_name), (_, parts) in sorted(newest.items()):
        for obj, _ in sorted(parts, key=lambda p: ident_of(p[0])):
            for key, amounts in _counter_sets(obj, driver, pool_name).items():
                if key in counters:
                    raise invalid(obj, "spec.sharedCounters", f"counter set {key} is also defined in another slice")
                counters[key] = amounts
    for _, parts in newest.values():
        for obj, devices in sorted(parts, key=lambda p: ident_of(p[0])):
            ident = ident_of(obj)
            for i, dev in enumerate(devices):
                key = dev.key
                if key in out:
                    raise invalid(obj, f"spec.devices[{i}].name", f"device {key} is also published by {owner[key]}")
                for set_key, counter, _ in dev.consumes:
                    if counter not in counters.get(set_key, {}):
                        raise invalid(obj, f"spec.devices[{i}].consumesCounters",
                                    f"counter {counter!r} of set {set_key} is not in its pool's sharedCounters")
                out[key], owner[key] = dev, ident
    return tuple(out[k] for k in sorted(out)), counters


def _taint_rules(devices: tuple[s.Device, ...], rules: list[Obj]) -> tuple[s.Device, ...]:
    """DeviceTaintRule (DRADeviceTaintRules, GA in 1.37): each rule's taint is added to every
    device its ``spec.deviceSelector`` selects (driver, pool and device name, each when set;
    an empty selector selects every device, none selects none). Effect None only records."""
    extra: dict[s.DeviceKey, list[s.Taint]] = {}
    for obj in sorted(rules, key=ident_of):
        selector = get_field(obj, "spec.deviceSelector", Mapping)
        raw = get_field(obj, "spec.taint", Mapping)
        if raw is None:
            raise invalid(obj, "spec.taint", "missing")
        (taint,) = _device_taints(obj, "spec.taint", [raw]) or (None,)
        if selector is None or taint is None:
            continue
        wanted = {f: get_field(obj, f"spec.deviceSelector.{f}", str) for f in ("driver", "pool", "device")}
        for dev in devices:
            if all(v is None or v == have for v, have in zip(wanted.values(), (dev.driver, dev.pool, dev.name),
                                                               strict=True)):
                extra.setdefault(dev.key, []).append(taint)
    if not extra:
        return devices
    return tuple(dataclasses.replace(d, taints=tuple(sorted(set(d.taints) | set(extra[d.key]),
                                                            key=lambda t: (t.key, t.value, t.effect))))
                 if d.key in extra else d for d in devices)


def parse_device_class(obj: Obj, origins: Origins | None = None) -> s.DeviceClass:
    _, name = name_of(obj, namespaced=False)
    extended = get_field(obj, "spec.extendedResourceName", str) or ""
    if extended and (extended.startswith(("kubernetes.io/", "requests.")) or "/" not in extended):
        raise invalid(obj, "spec.extendedResourceName", f"{extended!r} is not an extended resource name")
    selectors = _selectors(obj, "spec.selectors", get_field(obj, "spec.selectors", list, []), origins)
    return s.DeviceClass(name=name, selectors=selectors,
                         extended_resource=extended, created=get_field(obj, "metadata.creationTimestamp", str) or "")


# DRAExtendedResource (GA in 1.37): a container's extended resource a DeviceClass serves
IMPLICIT_PREFIX = "deviceclass.resource.kubernetes.io/"  # resourceapi.ResourceDeviceClassPrefix
EXTENDED_CLAIM = "<extended-resources>"  # the pod's claim entry upstream keeps in memory (specialClaimInMemName)


def extended_resource_classes(classes: Iterable[s.DeviceClass]) -> dict[str, str]:
    """Extended resource name -> the DeviceClass serving it (ExtendedResourceCache,
    dynamic-resource-allocation/deviceclass/extendedresourcecache): each class serves
    ``deviceclass.resource.kubernetes.io/<name>``, and its ``extendedResourceName``; a name two
    classes give goes to the newest, then the first by name."""
    classes = list(classes)
    out = {IMPLICIT_PREFIX + c.name: c.name for c in classes}
    explicit: dict[str, s.DeviceClass] = {}
    for c in classes:
        have = explicit.get(c.extended_resource)
        if c.extended_resource and (have is None or (c.created, have.name) > (have.created, c.name)):
            explicit[c.extended_resource] = c
    out.update({name: c.name for name, c in explicit.items()})
    return out


def extended_requests(obj: Obj, resource: str, class_name: str) -> list[s.Request]:
    """The device requests upstream's implicit claim makes for one extended resource
    (createRequestsAndMappings, plugins/dynamicresources/extendeddynamicresources.go): one per
    long-lived container (regular containers and sidecars) asking for it, named
    container-<index>-request-<the resource's index among that container's requests>, indexes
    over init containers then containers; a regular init container reuses the requests of the
    long-lived containers after it, and only the largest remaining one is kept."""
    spec = obj.get("spec") or {}
    inits = list(spec.get("initContainers") or [])
    containers = inits + list(spec.get("containers") or [])

    def asked(c: Any) -> tuple[int, str] | None:
        requests = ((c.get("resources") or {}).get("requests") or {}) if isinstance(c, Mapping) else {}
        if resource not in requests:
            return None
        count = quantity(obj, f"requests[{resource}]", resource, requests[resource])
        return (count, f"{sorted(requests).index(resource)}") if count else None

    long_lived = [i for i, c in enumerate(containers)
                  if i >= len(inits) or (isinstance(c, Mapping) and c.get("restartPolicy") == "Always")]
    made: dict[int, tuple[str, int]] = {}
    for i in long_lived:
        if (a := asked(containers[i])) is not None:
            made[i] = (f"container-{i}-request-{a[1]}", a[0])
    largest: tuple[str, int] | None = None
    for i in range(len(inits)):
        if i in long_lived or (a := asked(containers[i])) is None:
            continue
        covered = 0
        for j in sorted(k for k in made if k > i):
            covered += made[j][1]
            if covered >= a[0]:
                break
        if covered < a[0] and (largest is None or a[0] - covered > largest[1]):
            largest = (f"container-{i}-request-{a[1]}", a[0] - covered)
    out = sorted([*made.values(), *([largest] if largest else [])])
    return [s.Request(name=name, alternatives=(s.SubRequest(name=name, device_class=class_name, count=count),))
            for name, count in out]


Origins = dict[str, tuple[str, str]]  # a CEL selector -> (object, field) where it was first read


def _selectors(obj: Obj, field: str, raw: Any, origins: Origins | None) -> tuple[str, ...]:
    """CEL selectors. With ``origins`` (the snapshot's reading) each is checked for length only
    and recorded with its object and field: it is compiled under the plan's deadline
    (``solver.problem.dra.compile_selectors``), an error naming that object and field. Without
    (a lone object, the adapter's), each is compiled here."""
    out = []
    for i, sel in enumerate(list_field(obj, field, raw)):
        spec = sel.get("cel") if isinstance(sel, Mapping) else None
        expr = spec.get("expression") if isinstance(spec, Mapping) else None
        at = f"{field}[{i}].cel.expression"
        if not isinstance(expr, str) or not expr:
            raise invalid(obj, at, "missing")
        try:
            if origins is None:
                cel.compile_expression(expr)
            else:
                cel.check_length(expr)
                origins.setdefault(expr, (ident_of(obj), at))
        except cel.CelError as exc:
            raise invalid(obj, at, f"CEL: {exc.reason}") from None
        out.append(expr)
    return tuple(out)


def _device_tolerations(obj: Obj, field: str, raw: Any) -> tuple[s.Toleration, ...]:
    out = []
    for i, t in enumerate(list_field(obj, field, raw)):
        if not isinstance(t, Mapping):
            raise invalid(obj, f"{field}[{i}]", "expected a toleration")
        op = t.get("operator") or "Equal"
        if op not in ("Equal", "Exists"):
            raise invalid(obj, f"{field}[{i}].operator", f"unknown operator {op!r}")
        effect = t.get("effect") or ""
        if effect not in ("", *DRA_TAINT_EFFECTS):
            raise invalid(obj, f"{field}[{i}].effect", f"unknown effect {effect!r}")
        out.append(s.Toleration(key=opt_text_field(obj, f"{field}[{i}].key", t.get("key")), operator=op,
                                value=opt_text_field(obj, f"{field}[{i}].value", t.get("value")), effect=effect))
    return tuple(out)


def sub_request(obj: Obj, field: str, raw: Any, name: str, classes: Mapping[str, s.DeviceClass] | None, *,
                exact: bool = True, origins: Origins | None = None) -> s.SubRequest:
    """A device request (a claim's ``exactly``, or with ``exact`` False one of its
    ``firstAvailable``, which has no adminAccess) at ``field``; ``classes`` None: its
    DeviceClass is checked later, against the snapshot's."""
    if not isinstance(raw, Mapping):
        raise invalid(obj, field, "expected a device request")
    class_name = raw.get("deviceClassName")
    if not isinstance(class_name, str) or not class_name:
        raise invalid(obj, f"{field}.deviceClassName", "missing")
    if classes is not None and class_name not in classes:
        raise invalid(obj, f"{field}.deviceClassName", f"DeviceClass {class_name!r} not found")
    mode = raw.get("allocationMode") or "ExactCount"
    if mode not in ("ExactCount", "All"):
        raise invalid(obj, f"{field}.allocationMode", f"unknown allocation mode {mode!r}")
    count = raw.get("count")
    if count is None:
        count = 1
    positive_int32(obj, f"{field}.count", count)
    capacity: dict[str, int] = {}
    requested = raw.get("capacity")
    if requested is not None:
        asked = requested.get("requests") if isinstance(requested, Mapping) else None
        if not isinstance(asked, Mapping):
            raise invalid(obj, f"{field}.capacity.requests", "expected a map of quantities")
        for key, amount in asked.items():
            capacity[str(key)] = _milli(obj, f"{field}.capacity.requests[{key}]", amount)
    admin = raw.get("adminAccess")
    if admin is not None and (not exact or not isinstance(admin, bool)):
        raise invalid(obj, f"{field}.adminAccess", "expected true or false" if exact else
                    "a firstAvailable entry has no adminAccess (only exactly does)")
    return s.SubRequest(
        name=name, device_class=class_name,
        selectors=_selectors(obj, f"{field}.selectors", raw.get("selectors"), origins),
        all_mode=mode == "All", count=count,
        tolerations=_device_tolerations(obj, f"{field}.tolerations", raw.get("tolerations")),
        capacity=tuple(sorted(capacity.items())),
        admin_access=bool(admin),
    )


# a DNS-1123 label, as upstream validates request, subrequest and pod claim names
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def _label(obj: Obj, field: str, name: str) -> str:
    if len(name) > 63 or not _DNS_LABEL.fullmatch(name):
        raise invalid(obj, field, f"{name!r} is not a DNS label (lower case alphanumerics and '-', at most 63)")
    return name


def _new_name(obj: Obj, field: str, entry: object, seen: set[str], what: str) -> str:
    """``entry.name``: present, a DNS label, and not among ``seen`` (then added)."""
    name = entry.get("name") if isinstance(entry, Mapping) else None
    if not isinstance(name, str) or not name:
        raise invalid(obj, f"{field}.name", "missing")
    _label(obj, f"{field}.name", name)
    if name in seen:
        raise invalid(obj, f"{field}.name", f"duplicate {what} {name!r}")
    seen.add(name)
    return name


def _claim_spec(obj: Obj, prefix: str, classes: Mapping[str, s.DeviceClass], origins: Origins) -> s.ClaimSpec:
    """A ResourceClaimSpec at ``prefix`` (``spec`` of a claim, ``spec.spec`` of a template)."""
    field = f"{prefix}.devices"
    requests: list[s.Request] = []
    names: set[str] = set()  # requests and "request/sub"
    for i, r in enumerate(get_field(obj, f"{field}.requests", list, [])):
        rf = f"{field}.requests[{i}]"
        name = _new_name(obj, rf, r, names, "request name")
        exactly, first = r.get("exactly"), r.get("firstAvailable")
        if (exactly is None) == (first is None):
            raise invalid(obj, rf, "exactly one of exactly and firstAvailable must be set")
        if exactly is not None:
            alternatives = [sub_request(obj, f"{rf}.exactly", exactly, name, classes, origins=origins)]
        else:
            if not isinstance(first, list) or not first:
                raise invalid(obj, f"{rf}.firstAvailable", "must be a non-empty list")
            alternatives = []
            for j, sub in enumerate(first):
                sf = f"{rf}.firstAvailable[{j}]"
                sub_name = sub.get("name") if isinstance(sub, Mapping) else None
                if not isinstance(sub_name, str) or not sub_name:
                    raise invalid(obj, f"{sf}.name", "missing")
                _label(obj, f"{sf}.name", sub_name)
                if f"{name}/{sub_name}" in names:
                    raise invalid(obj, f"{sf}.name", f"duplicate subrequest name {sub_name!r}")
                names.add(f"{name}/{sub_name}")
                alternatives.append(sub_request(obj, sf, sub, f"{name}/{sub_name}", classes, exact=False,
                                                origins=origins))
        requests.append(s.Request(name=name, alternatives=tuple(alternatives)))
    constraints = []
    for i, c in enumerate(get_field(obj, f"{field}.constraints", list, [])):
        cf = f"{field}.constraints[{i}]"
        if not isinstance(c, Mapping):
            raise invalid(obj, cf, "expected a constraint")
        refs = c.get("requests") or []
        if not isinstance(refs, list):
            raise invalid(obj, f"{cf}.requests", "expected a list")
        for j, ref in enumerate(refs):
            if ref not in names:
                raise invalid(obj, f"{cf}.requests[{j}]", f"no request or subrequest named {ref!r}")
        set_ = [k for k in ("matchAttribute", "distinctAttribute") if c.get(k) is not None]
        if len(set_) != 1:
            raise invalid(obj, cf, "exactly one of matchAttribute and distinctAttribute must be set")
        attr = c[set_[0]]
        domain, _, ident = attr.partition("/") if isinstance(attr, str) else ("", "", "")
        if not domain or not ident:
            raise invalid(obj, f"{cf}.{set_[0]}",
                        f"a fully qualified name must be a domain and a name separated by a slash, got {attr!r}")
        constraints.append(s.Constraint(
            requests=tuple(refs),
            match_attribute=attr if set_[0] == "matchAttribute" else None,
            distinct_attribute=attr if set_[0] == "distinctAttribute" else None,
        ))
    return s.ClaimSpec(requests=tuple(requests), constraints=tuple(constraints))


def parse_resource_claim(obj: Obj, classes: Mapping[str, s.DeviceClass], origins: Origins) -> s.Claim:
    ns, name = name_of(obj, namespaced=True)
    spec = _claim_spec(obj, "spec", classes, origins)
    allocation: tuple[s.AllocationResult, ...] | None = None
    nodes: tuple[s.NodeSelectorTerm, ...] = ()
    raw = get_field(obj, "status.allocation", Mapping)
    if raw is not None:
        results = []
        for i, r in enumerate(get_field(obj, "status.allocation.devices.results", list, [])):
            rf = f"status.allocation.devices.results[{i}]"
            if not isinstance(r, Mapping):
                raise invalid(obj, rf, "expected an allocation result")
            for key in ("request", "driver", "pool", "device"):
                if not isinstance(r.get(key), str) or not r[key]:
                    raise invalid(obj, f"{rf}.{key}", "missing")
            share = r.get("shareID")
            if share is not None and (not isinstance(share, str) or not share):
                raise invalid(obj, f"{rf}.shareID", "expected a non-empty string")
            used = r.get("consumedCapacity")
            if used is not None and not isinstance(used, Mapping):
                raise invalid(obj, f"{rf}.consumedCapacity", "expected a map of quantities")
            admin = r.get("adminAccess")
            if admin is not None and not isinstance(admin, bool):
                raise invalid(obj, f"{rf}.adminAccess", "expected true or false")
            results.append(s.AllocationResult(
                request=r["request"], device=s.DeviceKey(f"{r['driver']}/{r['pool']}/{r['device']}"),
                share_id=share, consumed=tuple(sorted(
                    (str(k), _milli(obj, f"{rf}.consumedCapacity[{k}]", v)) for k, v in (used or {}).items())),
                admin_access=bool(admin)))
        allocation = tuple(results)
        if raw.get("nodeSelector") is not None:
            nodes = _node_selector(obj, "status.allocation.nodeSelector", raw["nodeSelector"])
    pods, groups, other = [], [], []
    for i, ref in enumerate(get_field(obj, "status.reservedFor", list, [])):
        rf = f"status.reservedFor[{i}]"
        if not isinstance(ref, Mapping) or not isinstance(ref.get("name"), str) or not ref["name"]:
            raise invalid(obj, f"{rf}.name", "missing")
        resource = opt_text_field(obj, f"{rf}.resource", ref.get("resource"))
        group = opt_text_field(obj, f"{rf}.apiGroup", ref.get("apiGroup"))
        if resource == "pods" and not group:
            pods.append(f"{ns}/{ref['name']}")
        elif resource == "podgroups":
            groups.append(f"{ns}/{ref['name']}")
        else:
            other.append(f"{resource}.{group}/{ns}/{ref['name']}" if group else f"{resource}/{ns}/{ref['name']}")
    return s.Claim(
        key=s.ClaimKey(f"{ns}/{name}"), namespace=ns, name=name, spec=spec,
        allocation=allocation, allocation_nodes=nodes,
        reserved_pods=tuple(pods), reserved_groups=tuple(groups), reserved_other=tuple(other),
    )


def _claim_refs(obj: Obj, field: str) -> list[tuple[int, str, str, str]]:
    """(index, entry name, "claim" | "template", target) of spec.resourceClaims (pod or PodGroup)."""
    out = []
    names: set[str] = set()
    for i, e in enumerate(get_field(obj, field, list, [])):
        ef = f"{field}[{i}]"
        name = _new_name(obj, ef, e, names, "claim entry")
        claim, template = e.get("resourceClaimName"), e.get("resourceClaimTemplateName")
        if (claim is None) == (template is None) or not isinstance(claim or template, str) or not (claim or template):
            raise invalid(obj, ef, "exactly one of resourceClaimName and resourceClaimTemplateName must be set")
        out.append((i, name, "claim" if claim is not None else "template", claim or template))
    return out


def _claim_statuses(obj: Obj) -> dict[str, tuple[int, str | None]]:
    """status.resourceClaimStatuses: entry name -> (index, generated claim name or None)."""
    out: dict[str, tuple[int, str | None]] = {}
    for j, st in enumerate(get_field(obj, "status.resourceClaimStatuses", list, [])):
        if not isinstance(st, Mapping) or not isinstance(st.get("name"), str):
            raise invalid(obj, f"status.resourceClaimStatuses[{j}].name", "missing")
        claim = st.get("resourceClaimName")
        if claim is not None and not isinstance(claim, str):
            raise invalid(obj, f"status.resourceClaimStatuses[{j}].resourceClaimName", "expected str")
        out[st["name"]] = (j, claim or None)
    return out


class DraBuilder:
    """Resolves the claim references of pods and PodGroups into DraState.claims / pod_claims."""

    def __init__(self, by_kind: Mapping[str, list[Obj]]) -> None:
        self.selectors: Origins = {}
        classes = (parse_device_class(o, self.selectors) for o in by_kind["DeviceClass"])
        self.classes = {c.name: c for c in sorted(classes, key=lambda c: c.name)}
        devices, self.counters = _slices(by_kind["ResourceSlice"])
        self.devices = _taint_rules(devices, by_kind["DeviceTaintRule"])
        self.claims: dict[s.ClaimKey, s.Claim] = {}
        self.deleting: set[str] = set()  # the claims being deleted (metadata.deletionTimestamp)
        for obj in by_kind["ResourceClaim"]:
            claim = parse_resource_claim(obj, self.classes, self.selectors)
            self.claims[claim.key] = claim
            if get_field(obj, "metadata.deletionTimestamp", str):
                self.deleting.add(claim.key)
        self.templates: dict[str, s.ClaimSpec] = {}
        for obj in by_kind["ResourceClaimTemplate"]:
            ns, name = name_of(obj, namespaced=True)
            self.templates[f"{ns}/{name}"] = _claim_spec(obj, "spec.spec", self.classes, self.selectors)
        self.pod_claims: dict[str, tuple[s.PodClaim, ...]] = {}
        self.extended_classes = extended_resource_classes(self.classes.values())
        self.warnings: list[str] = []
        # PodGroup key -> entry name -> (kind, target, resolved claim key or None: not needed)
        self.group_refs: dict[str, dict[str, tuple[str, str, s.ClaimKey | None]]] = {}
        for obj in by_kind["PodGroup"]:
            self._group(obj)

    def _group(self, obj: Obj) -> None:
        ns, name = name_of(obj, namespaced=True)
        key = f"{ns}/{name}"
        statuses = _claim_statuses(obj)
        refs: dict[str, tuple[str, str, s.ClaimKey | None]] = {}
        for i, entry, kind, target in _claim_refs(obj, "spec.resourceClaims"):
            resolved: s.ClaimKey | None
            if kind == "claim":
                resolved = self._existing(obj, f"spec.resourceClaims[{i}]", ns, target)
            else:
                self._template(obj, f"spec.resourceClaims[{i}]", ns, target)
                j, generated = statuses.get(entry, (None, None))
                if j is not None and generated is None:
                    resolved = None  # upstream: generating a claim was not necessary
                elif generated is not None:
                    resolved = self._existing(obj, f"status.resourceClaimStatuses[{j}].resourceClaimName",
                                              ns, generated)
                else:
                    resolved = self._synthesize(ns, name, entry, target)
            refs[entry] = (kind, target, resolved)
        self.group_refs[key] = refs

    def _existing(self, obj: Obj, field: str, ns: str, name: str) -> s.ClaimKey:
        key = s.ClaimKey(f"{ns}/{name}")
        if key not in self.claims:
            raise invalid(obj, field, f"ResourceClaim {key} not found")
        return key

    def _template(self, obj: Obj, field: str, ns: str, name: str) -> s.ClaimSpec:
        spec = self.templates.get(f"{ns}/{name}")
        if spec is None:
            raise invalid(obj, field, f"ResourceClaimTemplate {ns}/{name} not found")
        return spec

    def _synthesize(self, ns: str, owner: str, entry: str, template: str) -> s.ClaimKey:
        """The claim a template will create for ``owner`` (a pod or a PodGroup), unallocated."""
        key = s.ClaimKey(f"{ns}/{owner}#{entry}")
        self.claims[key] = s.Claim(key=key, namespace=ns, name=f"{owner}#{entry}",
                                   spec=self.templates[f"{ns}/{template}"])
        return key

    def waits(self, obj: Obj, pod: s.Pod) -> str:
        """Why upstream's DynamicResources PreEnqueue holds a pending pod (``foreachPodResourceClaim``),
        "" when it does not: a claim it names does not exist or is being deleted, or a template
        claim has none made and its template is missing (nothing will make one). The pod is
        held, as a gated pod is, and the rest of the cluster is planned."""
        if pod.node is not None:
            return ""
        statuses = _claim_statuses(obj)
        group_refs = self.group_refs.get(pod.group, {}) if pod.group is not None else {}
        for _, entry, kind, target in _claim_refs(obj, "spec.resourceClaims"):
            shared = group_refs.get(entry)
            _, generated = statuses.get(entry, (None, None))
            name = target if kind == "claim" else generated
            if shared is not None and shared[:2] == (kind, target) and shared[2] is not None:
                name = shared[2].split("/", 1)[1]  # the group's claim
            if name is not None and f"{pod.namespace}/{name}" in self.deleting:
                return f'resourceclaim "{name}" is being deleted'
            if shared is not None and shared[:2] == (kind, target):
                continue  # the group's claim: its PodGroup is read first
            if kind == "claim":
                if f"{pod.namespace}/{target}" not in self.claims:
                    return f'resourceclaim.resource.k8s.io "{target}" not found'
                continue
            if generated is None and f"{pod.namespace}/{target}" not in self.templates and entry not in statuses:
                return (f'pod "{pod.namespace}/{pod.name}": ResourceClaim not created yet '
                        f"(ResourceClaimTemplate {pod.namespace}/{target} not found)")
        return ""

    def pod(self, obj: Obj, pod: s.Pod) -> None:
        refs = _claim_refs(obj, "spec.resourceClaims")
        if not refs:
            return
        ns, name = pod.namespace, pod.name
        statuses = _claim_statuses(obj)
        group_refs = self.group_refs.get(pod.group, {}) if pod.group is not None else {}
        out = []
        for i, entry, kind, target in refs:
            field = f"spec.resourceClaims[{i}]"
            shared = group_refs.get(entry)
            if shared is not None and shared[:2] == (kind, target):
                if shared[2] is not None:
                    out.append(s.PodClaim(name=entry, claim=shared[2], shared_by=pod.group))
                continue
            if kind == "claim":
                out.append(s.PodClaim(name=entry, claim=self._existing(obj, field, ns, target)))
                continue
            j, generated = statuses.get(entry, (None, None))
            if j is not None and generated is None:
                continue  # upstream: generating a claim was not necessary
            if generated is not None and (pod.node is not None or f"{ns}/{generated}" in self.claims):
                key = self._existing(obj, f"status.resourceClaimStatuses[{j}].resourceClaimName", ns, generated)
            elif pod.node is not None:
                raise invalid(obj, "status.resourceClaimStatuses",
                            f"a running pod needs the name of the claim generated for {field} ({entry!r})")
            else:
                self._template(obj, field, ns, target)
                key = self._synthesize(ns, name, entry, target)
            out.append(s.PodClaim(name=entry, claim=key))
        if out:
            self.pod_claims[pod.key] = tuple(out)

    def extended(self, obj: Obj, pod: s.Pod, advertised: set[str]) -> s.Pod:
        """DRAExtendedResource: an extended resource of the pod's requests that a DeviceClass
        serves and no node advertises in its allocatable is asked of DRA instead of the node's
        capacity (NodeResourcesFit ``shouldDelegateResourceToDRA``). A pending pod then gets the
        claim upstream makes for it (``EXTENDED_CLAIM``, its requests from
        ``extended_requests``); a running one holds the claim its
        ``status.extendedResourceClaimStatus`` names. The resource leaves the pod's requests.

        Where some node advertises the resource (a device plugin), gangplace counts it as the
        node's capacity everywhere: upstream would still serve it through DRA on the nodes
        that do not advertise it, so the plan may leave a pod pending there that upstream binds."""
        mapping = self.extended_classes
        served = {r: mapping[r] for r, amount in pod.requests.items()
                  if amount and r in mapping and r not in advertised}
        if not served:
            return pod
        ns, name = pod.namespace, pod.name
        if pod.node is not None:
            status = get_field(obj, "status.extendedResourceClaimStatus", Mapping)
            claim = status.get("resourceClaimName") if status else None
            if not isinstance(claim, str) or not claim:
                self.warnings.append(f"{ident_of(obj)}: status.extendedResourceClaimStatus: a running pod asks for "
                                     f"{sorted(served)}, served by DRA, but names no claim: its devices are not "
                                     "known and count as free")
            else:
                key = self._existing(obj, "status.extendedResourceClaimStatus.resourceClaimName", ns, claim)
                self.pod_claims[pod.key] = (*self.pod_claims.get(pod.key, ()), s.PodClaim(name=EXTENDED_CLAIM,
                                                                                          claim=key))
        else:
            requests = [r for resource in sorted(served) for r in extended_requests(obj, resource, served[resource])]
            key = s.ClaimKey(f"{ns}/{name}#{EXTENDED_CLAIM}")
            self.claims[key] = s.Claim(key=key, namespace=ns, name=f"{name}#{EXTENDED_CLAIM}",
                                       spec=s.ClaimSpec(requests=tuple(requests)))
            self.pod_claims[pod.key] = (*self.pod_claims.get(pod.key, ()), s.PodClaim(name=EXTENDED_CLAIM, claim=key))
        return dataclasses.replace(pod, requests={r: v for r, v in pod.requests.items() if r not in served},
                                   has_resource_claims=True)

    def state(self) -> s.DraState:
        return s.DraState(
            devices=self.devices,
            classes=self.classes,
            claims={k: self.claims[k] for k in sorted(self.claims)},
            pod_claims={k: self.pod_claims[k] for k in sorted(self.pod_claims)},
            counters={k: self.counters[k] for k in sorted(self.counters)},
            selectors=self.selectors,
        )
