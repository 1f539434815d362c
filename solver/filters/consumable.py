"""Consumable capacity (DRAConsumableCapacity, beta and on in 1.37): what one allocation of a
device uses up, and whether it may.

Upstream: ``dynamic-resource-allocation/structured/internal/incubating/consumable_capacity.go``
(``CmpRequestOverCapacity``, ``calculateConsumedCapacity``, ``violatesPolicy``), called by
the allocator's ``allocateDevice`` for every device once the gate is on:

- A request naming a capacity the device does not have does not fit the device.
- Every capacity of the device is consumed, asked or not: an asked amount is rounded up
  by the policy (``validRange``: to ``min``, then to ``min`` plus a whole number of
  ``step``; ``validValues``: to the first value at or above it), an unasked one is the
  policy's ``default``, else the whole capacity.
- The consumed amount must satisfy the policy (equal to ``default``; else within
  ``max`` and a whole number of steps from ``min``; else one of ``validValues``) and,
  added to what the device's other shares already consume, stay within the capacity.
- Only an ``allowMultipleAllocations`` device keeps the amount (``consumedCapacity`` and
  a ``shareID`` in the allocation result); an ordinary device is used whole, the check
  above deciding only whether the request fits it at all.

Amounts are milli-units (``snapshot.Consumable``). A ``validRange`` with a ``step`` is
worked out in whole units, each of the request, ``min`` and ``step`` rounded up to one
(``Quantity.Value()``), as upstream does with DRAFractionalCapacityRange off: its 1.37
default needs an emulated compatibility version of 1.37, which a 1.37.2 cluster does not
have (the real kube-scheduler reports the gate off). So 400m on a range of min 100m and step
100m consumes 1, not 400m. Upstream compares a consumed amount with ``default`` as Go
structs; here by value.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from solver.core import snapshot as s

Used = tuple[tuple[str, int], ...]  # (capacity name, milli-units), sorted by name


def _units(milli: int) -> int:
    """``Quantity.Value()`` of a milli-unit amount (never negative here): whole units, rounded up."""
    return -(-milli // 1000)


def _rounded(asked: int, policy: s.CapacityPolicy) -> int:
    if policy.min is not None:
        if asked < policy.min:
            return policy.min
        if policy.step is None:
            return asked
        low, step = _units(policy.min), _units(policy.step)
        steps = -(-(_units(asked) - low) // step) if step else 0
        return (low + steps * step) * 1000
    for v in policy.valid_values:
        if asked <= v:
            return v
    return asked


def _violates(used: int, policy: s.CapacityPolicy) -> bool:
    if policy.default is not None and used == policy.default:
        return False
    if policy.min is not None:
        if policy.max is not None and used > policy.max:
            return True
        step = _units(policy.step) if policy.step is not None else 0
        return bool(step) and (_units(used) - _units(policy.min)) % step != 0
    if policy.valid_values:
        return used not in policy.valid_values
    return False


def consumed(requests: Sequence[tuple[str, int]], device: Sequence[s.Consumable]) -> Used | None:
    """What one allocation of ``device`` for a request asking ``requests`` consumes, every
    capacity of the device; None when the request does not fit the device on its own (it
    names a capacity the device lacks, breaks a policy, or asks more than there is)."""
    asked = dict(requests)
    names = {c.name for c in device}
    if any(name not in names for name in asked):
        return None
    out = []
    for cap in device:
        amount = asked.get(cap.name)
        policy = cap.policy
        if amount is None:
            used = policy.default if policy is not None and policy.default is not None else cap.value
        else:
            used = amount if policy is None else _rounded(amount, policy)
        if (policy is not None and _violates(used, policy)) or used > cap.value:
            return None
        out.append((cap.name, used))
    return tuple(out)


def room(used: Used, device: Sequence[s.Consumable], in_use: Mapping[str, int]) -> int | None:
    """How many more allocations consuming ``used`` fit beside ``in_use`` (None: no bound)."""
    most: int | None = None
    for cap in device:
        amount = dict(used).get(cap.name, 0)
        if amount:
            n = max(0, (cap.value - in_use.get(cap.name, 0)) // amount)
            most = n if most is None else min(most, n)
    return most


def text(milli: int) -> str:
    """A milli-unit amount as a quantity string ("2", "1500m")."""
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"
