"""DRA devices: what each placed pod's claims take, and how many devices each type has.

For pods of class c on node n and each slot j (one request of one per-pod claim), with
its options o = (alternative a, matchAttribute value v) and the device types T(o, n) the
option may take from n:

    Σ_o pick[c, n, j, o] = count[c, n]                          (one option per pod)
    Σ_{t ∈ T(o, n)} alloc[c, n, j, o, t] = need(o, n)·pick[c, n, j, o]
    alloc[c, n, j, o, t] = |t|·pick[c, n, j, o]                 (All mode: every device)
    Σ_a pick[c, n, j, (a, v)] = val[c, n, claim(j), v]          (matchAttribute: one value
    Σ_v val[c, n, k, v] = count[c, n]                            per pod for the claim)
    Σ_{t: attr(t) = d} alloc[c, n, j, o, t] ≤ pick[c, n, j, o]  (distinctAttribute)

and per type t that is not shareable (supply; a held type goes free with its holders):

    Σ alloc[·, t] + Σ shared_alloc[·, t] ≤ free(t) + |t|·freed(holder(t))
    count[c, n] ≤ most·(1 − freed(holder(t)))   for every pending class c naming a claim
                                                  that holds t (placed, it keeps the claim)

Below the five tiers, a last stage prefers earlier ``firstAvailable`` entries (upstream takes
the first that fits): it minimises Σ rank·pick, rank counting only entries usable there.

A PodGroup's shared claim is allocated once, when any pod of the group is placed
(used[i]), from types anywhere; a used type pins every pod of the group to the nodes it
reaches (node-local types: one node, the claim's site). So is a claim several pending pods
name. A claim each binding adds a pod to the reservedFor of (dra.ReserveCap) takes at most
what that list has room for: Σ_{c naming it} count[c, ·] ≤ room.

Pure model building: no I/O.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable

from ortools.sat.python import cp_model

from solver.core import snapshot as s
from solver.core.stopping import checkpoint
from solver.filters import consumable
from solver.model.vars import PlacementVars
from solver.problem import dra as dra_mod
from solver.problem.build import Problem
from solver.problem.dra import AllocKey, MatchValue, Option, SharedOption

# type -> (class, alloc var, its max, the (sub)request it is for)
OnType = dict[int, list[tuple[int | None, cp_model.IntVar, int, s.SubRequest]]]


def add(problem: Problem, vars: PlacementVars) -> None:
    dra = problem.dra
    for cap in dra.reserve_caps:  # a claim's reservedFor takes at most cap.room more pods
        counts = [v for c in sorted(cap.classes) for v in vars.nodes_of(c).values()]
        if counts:
            vars.model.add(cp_model.LinearExpr.sum(counts) <= cap.room)
    if not dra.active and not any(dra.class_slots) and not dra.shared:
        return
    m = vars.model
    on_type: OnType = defaultdict(list)
    for cls in problem.classes:
        slots = dra.class_slots[cls.index]
        if not slots:
            continue
        for i, (node, most) in enumerate(sorted(problem.candidates[cls.index].items())):
            if not i & 127:
                checkpoint("the model (devices)")
            count = vars.count_on(cls.index, node)
            _pod_slots(problem, vars, cls.index, node, most, count, slots, on_type)
    for shared in dra.shared:
        checkpoint("the model (devices)")
        _shared_claim(problem, vars, shared, on_type)
    freed_of: dict[int, cp_model.IntVar | None] = {}

    def freed_var(dtype: dra_mod.DeviceType) -> cp_model.IntVar | None:
        if dtype.index not in freed_of:
            assert dtype.holder
            freed_of[dtype.index] = _freed(problem, vars, dtype.holder, dtype.kept_by, f"{dtype.index}")
        return freed_of[dtype.index]

    in_use: dict[int, cp_model.IntVar | int] = {}
    for i, (t, takers) in enumerate(sorted(on_type.items())):
        if not i & 255:
            checkpoint("the model (devices)")
        dtype = dra.types[t]
        if dtype.metered:  # admin access too, on the safe side: the allocator checks a share's
            in_use[t] = _metered(problem, vars, dtype, takers)  # capacity and counters for it
        if dtype.shareable:
            continue
        # admin access takes a device in use too: it uses up nothing (its counters aside:
        # _counters charges them, as the allocator checks them for it too)
        takers = [tk for tk in takers if not tk[3].admin_access]
        if not takers:
            continue
        most = sum(hi for _, _, hi, _ in takers)
        free = dtype.size if dtype.holder is None else 0
        terms: list[cp_model.LinearExprT] = [v for _, v, _, _ in takers]
        if dtype.holder:
            freed = freed_var(dtype)
            if freed is not None:
                terms.append(-dtype.size * freed)
            elif most <= free:
                continue
        elif most <= free:
            continue
        m.add(cp_model.LinearExpr.sum(terms) <= free)
    for dtype in dra.types:  # metered devices only their existing shares use
        if dtype.metered and dtype.shares and dtype.index not in in_use:
            in_use[dtype.index] = _metered(problem, vars, dtype, [])
    if dra.counters:
        _counters(problem, vars, on_type, freed_var, in_use)


def _metered(problem: Problem, vars: PlacementVars, dtype: dra_mod.DeviceType,
             takers: list[tuple[int | None, cp_model.IntVar, int, s.SubRequest]]) -> cp_model.IntVar | int:
    """DRAConsumableCapacity on one shareable device (``consumable_capacity.go``
    ``CmpRequestOverCapacity``): per capacity q, what the new shares and the existing ones
    still held consume stays within it,

        Σ used(r, q)·alloc[·, r] + Σ_share used(share, q)·(1 − freed(share)) ≤ capacity(q)

    and the device is in use (its counters charged once) while any share uses it. Returns
    in use: 1, or a literal."""
    m = vars.model
    held: list[tuple[consumable.Used, cp_model.IntVar | None]] = [
        (share.used, _freed(problem, vars, share.holder, share.kept_by, f"{dtype.index}/{k}") if share.holder else None)
        for k, share in enumerate(dtype.shares)]
    for cap in dtype.consumable:
        coeffs: list[tuple[int, cp_model.LinearExprT]] = []
        for _, var, _, sub in takers:
            used = dict(dtype.uses(sub)).get(cap.name, 0)
            if used:
                coeffs.append((used, var))
        fixed = 0  # as if every share stays; a share that may go free gives its use back
        for share_used, freed in held:
            used = dict(share_used).get(cap.name, 0)
            fixed += used
            if used and freed is not None:
                coeffs.append((-used, freed))
        if not any(c > 0 for c, _ in coeffs):
            continue
        g = math.gcd(*(abs(c) for c, _ in coeffs))  # keep coefficients small: divide the row through
        m.add(cp_model.LinearExpr.sum([(c // g) * v for c, v in coeffs]) <= (cap.value - fixed) // g)
    if any(freed is None for _, freed in held):
        return 1
    if not takers and not held:
        return 0
    use = m.new_bool_var(f"in_use[{dtype.index}]")
    for _, var, hi, _ in takers:
        m.add(var <= hi * use)
    for _, freed in held:
        assert freed is not None
        m.add(use >= 1 - freed)
    return use


def _counters(problem: Problem, vars: PlacementVars, on_type: OnType,
              freed_var: Callable[[dra_mod.DeviceType], cp_model.IntVar | None],
              in_use: dict[int, cp_model.IntVar | int]) -> None:
    """DRAPartitionableDevices (dynamic-resource-allocation/structured, the allocator's
    counter check): per counter of a counter set, what the taken devices consume plus what
    the held ones still consume stays within its amount,

        Σ_t amount(t)·(Σ alloc[·, t] + |t|·held(t)) ≤ amount(counter)

    held(t) is 1 for a held type, 1 − freed for one its holders' eviction frees. A metered
    shareable device counts once while in use (the allocator skips the check for a further
    share); one that is not metered consumes no counters."""
    terms: dict[tuple[str, str], list[cp_model.LinearExprT]] = defaultdict(list)
    held: dict[tuple[str, str], int] = defaultdict(int)
    for dtype in problem.dra.types:
        if not dtype.consumes:
            continue
        if dtype.shareable:
            use = in_use.get(dtype.index, 0)
            for set_key, counter, amount in dtype.consumes:
                if isinstance(use, int):
                    held[set_key, counter] += amount * use
                else:
                    terms[set_key, counter].append(amount * use)
            continue
        takers = on_type.get(dtype.index, [])
        freed = freed_var(dtype) if dtype.holder else None
        for set_key, counter, amount in dtype.consumes:
            key = (set_key, counter)
            terms[key].extend(amount * v for _, v, _, _ in takers)
            if dtype.holder is not None:
                held[key] += amount * dtype.size
                if freed is not None:
                    terms[key].append(-amount * dtype.size * freed)
    for key, amount in sorted(problem.dra.counters.items()):
        if terms.get(key):
            vars.model.add(cp_model.LinearExpr.sum(terms[key]) + held[key] <= amount)


def _pod_slots(problem: Problem, vars: PlacementVars, c: int, node: s.NodeName, most: int,
               count: cp_model.IntVar, slots: tuple[dra_mod.Slot, ...], on_type: OnType) -> None:
    dra, m = problem.dra, vars.model
    vals: dict[tuple[int, MatchValue], cp_model.IntVar] = {}
    for j, slot in enumerate(slots):
        opts = dra.options(slot, node)
        if not opts:
            m.add(count == 0)
            return
        picks = []
        by_value: dict[MatchValue, list[cp_model.IntVar]] = defaultdict(list)
        ranks = _ranks(opts)
        for a, v, types, need in opts:
            sub = slot.request.alternatives[a]
            if len(opts) == 1 and slot.match is None:
                pick = count
            else:
                pick = m.new_int_var(0, most, f"pick[{c},{node},{j},{a},{v!r}]")
                picks.append(pick)
                by_value[v].append(pick)
                if ranks[a]:
                    vars.add_alt_pick(ranks[a], pick)
            allocs = _take(problem, vars, slot, sub, types, need, pick, most, c, on_type)
            for t, (var, _) in zip(types, allocs, strict=True):
                vars.add_alloc(c, node, AllocKey(j, a, v, t), var)
        if picks:
            if slot.match is None:
                m.add(cp_model.LinearExpr.sum(picks) == count)
            else:
                for v, members in by_value.items():
                    key = (slot.claim, v)
                    if key not in vals:
                        vals[key] = m.new_int_var(0, most, f"val[{c},{node},{slot.claim},{v!r}]")
                    m.add(cp_model.LinearExpr.sum(members) == vals[key])
    for k in {k for k, _ in vals}:
        matched = [slot for slot in slots if slot.claim == k and slot.match is not None]
        # a value no slot of the claim can take is no value: every slot must offer it
        usable = set.intersection(*({v for a, v, _, _ in dra.options(sl, node)} for sl in matched))
        for (kk, v), var in vals.items():
            if kk == k and v not in usable:
                m.add(var == 0)
        m.add(cp_model.LinearExpr.sum([var for (kk, _), var in vals.items() if kk == k]) == count)


def _ranks(opts: list[Option]) -> dict[int, int]:
    """alternative -> its rank among the usable ones (0: the first)."""
    return {a: r for r, a in enumerate(sorted({o.alt for o in opts}))}


def _take(problem: Problem, vars: PlacementVars, slot: dra_mod.Slot, sub: s.SubRequest, types: tuple[int, ...],
          need: int, pick: cp_model.IntVar, owners: int, c: int | None, on_type: OnType
          ) -> list[tuple[cp_model.IntVar, int]]:
    """The devices ``pick`` owners (at most ``owners``) take from ``types`` for one option:
    one allocation variable per type, need·pick in all (All mode: every device of each type),
    at most one per distinctAttribute value and owner."""
    dra, m = problem.dra, vars.model
    allocs = []
    for t in types:
        size = dra.types[t].size
        hi = owners * min(need, size)
        var = m.new_int_var(0, hi, f"alloc[{c},{slot.claim_entry},{sub.name},{t}]")
        on_type[t].append((c, var, hi, sub))
        allocs.append((var, hi))
        if sub.all_mode:
            m.add(var == size * pick)
        elif (dra.types[t].shareable or sub.admin_access) and need > size and owners > 1:
            # a request's devices are distinct (upstream's allocator moves past each one it
            # takes), so each owner takes at most |t| of a shareable type, or with admin access
            m.add(var <= size * pick)
    if not sub.all_mode:
        m.add(cp_model.LinearExpr.sum([v for v, _ in allocs]) == need * pick)
    if slot.distinct is not None:
        groups: dict[MatchValue, list[cp_model.IntVar]] = defaultdict(list)
        for t, (var, _) in zip(types, allocs, strict=True):
            groups[dra.types[t].values[slot.distinct]].append(var)
        for members in groups.values():
            if len(members) > 1 or need > 1:  # else the sum row above already caps it
                m.add(cp_model.LinearExpr.sum(members) <= pick)
    return allocs


def _shared_claim(problem: Problem, vars: PlacementVars, shared: dra_mod.SharedClaim, on_type: OnType) -> None:
    dra, m = problem.dra, vars.model
    classes = sorted(shared.users)
    counts = [(c, n, v, problem.candidates[c][n]) for c in classes for n, v in vars.nodes_of(c).items()]
    if not counts:
        return
    used = m.new_bool_var(f"shared_used[{shared.group},{shared.entry}]")
    total = cp_model.LinearExpr.sum([v for _, _, v, _ in counts])
    m.add(total >= 1).only_enforce_if(used)
    m.add(total == 0).only_enforce_if(~used)
    uses: dict[int, cp_model.IntVar] = {}
    vals: dict[MatchValue, cp_model.IntVar] = {}
    sites = sorted({n for _, n, _, _ in counts})
    for j, slot in enumerate(shared.slots):
        # All mode takes what the claim's node reaches: one option per distinct reachable set
        opts = [o for o in dra.options(slot, None) if not slot.request.alternatives[o.alt].all_mode]
        seen: set[tuple[int, str, tuple[int, ...]]] = set()
        for n in sites:
            for o in dra.options(slot, n):
                if slot.request.alternatives[o.alt].all_mode and (o.alt, repr(o.value), o.types) not in seen:
                    seen.add((o.alt, repr(o.value), o.types))
                    opts.append(o)
        if not opts:
            m.add(used == 0)
            return
        picks = []
        ranks = _ranks(opts)
        for k, (a, v, types, need) in enumerate(opts):
            sub = slot.request.alternatives[a]
            pick = m.new_bool_var(f"shared_pick[{shared.index},{j},{k}]")
            picks.append(pick)
            if sub.all_mode:  # the claim is allocated on one sharer's node, whose All set these
                # devices are exactly; the other sharers only reach them (the rows below), as
                # upstream pins a pod to an allocated claim's devices and does not ask All again
                exact = [var for _, n, var, _ in counts if n in dra.all_reach(slot, a, types)]
                m.add(cp_model.LinearExpr.sum(exact) >= pick)
            if ranks[a]:
                vars.add_alt_pick(ranks[a], pick)
            if slot.match is not None:
                if v not in vals:
                    vals[v] = m.new_bool_var(f"shared_val[{shared.index},{v!r}]")
                m.add(pick <= vals[v])
            allocs = _take(problem, vars, slot, sub, types, need, pick, 1, None, on_type)
            for t, (var, hi) in zip(types, allocs, strict=True):
                vars.add_shared_alloc(shared.index, SharedOption(j, a, v, k), t, var)
                if t not in uses:
                    uses[t] = m.new_bool_var(f"shared_uses[{shared.index},{t}]")
                m.add(var <= hi * uses[t])
        m.add(cp_model.LinearExpr.sum(picks) == used)
    if vals:
        m.add(cp_model.LinearExpr.sum(list(vals.values())) <= 1)
    # reach: node-local types fix one site; network types a node set
    site: dict[s.NodeName, cp_model.IntVar] = {}
    for t, u in uses.items():
        node = dra.types[t].node
        if node is not None:
            if node not in site:
                site[node] = m.new_bool_var(f"shared_site[{shared.index},{node}]")
            m.add(u <= site[node])
    if site:
        any_local = cp_model.LinearExpr.sum(list(site.values()))
        m.add(any_local <= 1)
        for _, n, var, most in counts:
            here = site.get(n)
            m.add(var <= most * (1 - any_local + here) if here is not None else var <= most * (1 - any_local))
    for t, u in uses.items():
        if dra.types[t].node is None:
            for _, n, var, most in counts:
                if n not in dra.types[t].reach:
                    m.add(var <= most * (1 - u))


def _freed(problem: Problem, vars: PlacementVars, holder: tuple[int, ...], kept_by: tuple[int, ...],
           name: str) -> cp_model.IntVar | None:
    """1 only if every holder (of a type, or of a metered device's share) is evicted and no
    pending pod naming the holding claim is placed; None when no class may evict them all."""
    units = [problem.units[u] for u in holder]
    # room freed by an eviction may be used by any pod: it is enough that some class may evict
    # every holder (the eviction itself must be necessary for someone, see preemption.py)
    if not any(all(problem.eligible(c, u) for u in units) for c in problem.classes):
        return None
    evicts = [vars.evicts(u.index) for u in units]
    if len(evicts) == 1 and not kept_by:
        return evicts[0]
    freed = vars.model.new_bool_var(f"freed[{name}]")
    for e in evicts:
        vars.model.add(freed <= e)
    for c in kept_by:  # a placed pod naming the claim keeps it allocated
        for node, most in problem.candidates[c].items():
            count = vars.count(c, node)
            if count is not None:
                vars.model.add(count <= most * (1 - freed))
    return freed
