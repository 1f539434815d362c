"""How assignments become plans.

``make_plan`` turns an ``Assignment`` (solver.problem.assignment) into a ``Plan`` for the
CP-SAT model and for the greedy baseline alike, every tier evaluated from the assignment
itself. Pure: no I/O.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from solver.core import snapshot as s
from solver.core.plan import (
    FEASIBLE,
    OPTIMAL,
    TIER_NAMES,
    Binding,
    Eviction,
    GroupVerdict,
    Held,
    Objective,
    Plan,
    Tiers,
    WorkloadVerdict,
    WouldTake,
)
from solver.core.words import counted
from solver.filters import selectors
from solver.plan.devices import device_allocations
from solver.plan.reasons import Diagnoser, Diagnosis
from solver.problem import dra as dra_mod
from solver.problem.assignment import (
    Assignment,
    Evaluation,
    evaluate,
    pdb_taken,
    satisfied_value,
    tiers,
    trivial_bound,
)
from solver.problem.build import MILLI, Problem, dra_abort_reason
from solver.problem.workloads import Workload

__all__ = ["blocking_budgets", "make_plan", "unsatisfied_reason"]


def make_plan(
    problem: Problem,
    assignment: Assignment,
    *,
    bound: Tiers | None = None,
    stats: Mapping[str, Any],
    would_take: Mapping[int, WouldTake] | None = None,
) -> Plan:
    """The plan of ``assignment``, with ``bound``, the best tiers any plan can reach (a proven
    lexicographic bound: ``objective.lex_bound``). OPTIMAL exactly when the plan's tiers are
    the bound; else FEASIBLE, with the gap of the first tier not proven. No bound: the trivial
    one (``trivial_bound``), which proves nothing but an ideal plan. ``would_take`` (workload
    index -> what placing it would take, ``bounds.would_take``) goes into its verdict and, in
    words, its reason."""
    ev = evaluate(problem, assignment)
    found = tiers(problem, ev)
    bound = trivial_bound(problem) if bound is None else bound
    if bound < found:
        raise ValueError(f"bound {bound} below the plan's own tiers {found}")
    bindings, node_pods = _bindings(problem, assignment)
    node_of = {b.pod: b.node for b in bindings}
    labels: dict[str, Mapping[str, str]] = {n.name: n.labels for n in problem.nodes}
    context = _ReasonContext(problem, assignment)
    workloads = tuple(_verdict(problem, w, ev, node_of, labels, context) for w in problem.workloads)
    by_priority = satisfied_value(problem, ev)
    gap_tier, gap = first_gap(found, bound)
    # no plan satisfies the one workload (a workload worth 0 the first tier cannot tell)
    proven_out = len(problem.workloads) == 1 and problem.workloads[0].value > 0 and not bound_satisfied(bound)
    workloads = tuple(replace(w, proven=True) if not w.satisfied and (w.proven or proven_out) else w
                      for w in workloads)
    for index, took in (would_take or {}).items():
        verdict = workloads[index]
        if not verdict.satisfied:
            taken = replace(verdict, would_take=took, reason=verdict.reason + taking(took))
            workloads = (*workloads[:index], taken, *workloads[index + 1:])
    return Plan(
        status=OPTIMAL if found == bound else FEASIBLE,
        workloads=workloads,
        bindings=bindings,
        evictions=_evictions(problem, assignment),
        device_allocations=device_allocations(problem, assignment.devices, assignment.shared, bindings, node_pods),
        held=tuple(sorted((Held(pod=k, reason=why) for k, why in problem.held),
                          key=lambda h: h.pod)) + tuple(
            Held(pod=w.pod, reason=w.reason) for w in problem.snapshot.waiting),
        warnings=problem.snapshot.warnings,
        objective=Objective(
            satisfied_workloads=sum(ev.satisfied.values()),
            satisfied_by_priority=dict(by_priority),
            placed_pods=ev.placed,
            pdb_violations=ev.pdb_violations,
            preemption_cost=ev.cost_milli / MILLI,
            evicted_pods=ev.evicted_pods,
            first_available=ev.first_available,
            satisfied_bound=bound_satisfied(bound),
            satisfied_by_priority_bound=dict(bound.satisfied),
            placed_bound=bound.placed,
            pdb_violations_bound=bound.pdb_violations,
            preemption_cost_bound=bound.cost_milli / MILLI,
            evicted_pods_bound=bound.evicted,
            first_available_bound=bound.first_available,
            gap=round(gap, 6),
            gap_tier=gap_tier,
        ),
        stats=stats,
    )


def without_taking(verdict: WorkloadVerdict) -> str:
    """The verdict's reason without its ``taking`` tail (``--explain`` says what it would take
    itself, once)."""
    tail = taking(verdict.would_take) if verdict.would_take is not None else ""
    return verdict.reason[:-len(tail)] if tail and verdict.reason.endswith(tail) else verdict.reason


def taking(took: WouldTake) -> str:
    """A reason's tail: what placing the workload would take (``without_taking`` removes it)."""
    shown = "; ".join(f"PodDisruptionBudget {b.budget}: {counted(b.needed, 'eviction')}, {b.allowed} allowed"
                      for b in took.budgets[:_BUDGETS_NAMED])
    more = f" and {len(took.budgets) - _BUDGETS_NAMED} more" if len(took.budgets) > _BUDGETS_NAMED else ""
    fewest = ", the fewest violations" if took.proven else ""
    plan = f" ({shown}{more}, {counted(took.evictions, 'pod')} evicted{fewest})" if took.budgets else ""
    return (f"; placing it needs at least {counted(took.violations_at_least, 'eviction')} beyond the "
            f"budgets{plan}, which pdbPolicy soft allows")


def bound_satisfied(bound: Tiers) -> int:
    """The workloads satisfied in the bound (its vector's sum)."""
    return sum(n for _, n in bound.satisfied)


def first_gap(found: Tiers, bound: Tiers) -> tuple[str, float]:
    """The first tier where ``found`` is not proven (its name in the plan's objective, "" when
    none) and its relative gap, |bound − value| / max(|bound|, |value|, 1). The satisfied tier
    compares its vectors' sums, the gap of a vector that differs at a higher priority."""
    pairs = [(bound_satisfied(found), bound_satisfied(bound)), (found.placed, bound.placed),
             (found.pdb_violations, bound.pdb_violations), (found.cost_milli, bound.cost_milli),
             (found.evicted, bound.evicted), (found.first_available, bound.first_available)]
    for i, (name, (value, best)) in enumerate(zip(TIER_NAMES, pairs, strict=True)):
        if value != best or (i == 0 and found.satisfied != bound.satisfied):
            gap = abs(best - value) / max(abs(best), abs(value), 1)
            return name, gap if gap > 0 else 1 / max(abs(best), 1)
    return "", 0.0


def _bindings(problem: Problem, assignment: Assignment
              ) -> tuple[tuple[Binding, ...], dict[tuple[int, s.NodeName], list[str]]]:
    by_class: dict[int, list[tuple[s.NodeName, int]]] = defaultdict(list)
    for (c, node), n in assignment.counts.items():
        if n > 0:
            by_class[c].append((node, n))
    out: list[Binding] = []
    node_pods: dict[tuple[int, s.NodeName], list[str]] = {}
    for c, nodes in sorted(by_class.items()):
        pods = iter(problem.classes[c].pods)
        for node, n in sorted(nodes):
            here: list[str] = [next(pods).key for _ in range(n)]
            node_pods[c, node] = here
            out.extend(Binding(pod=key, node=node) for key in here)
    return tuple(sorted(out, key=lambda b: b.pod)), node_pods


def _evictions(problem: Problem, assignment: Assignment) -> tuple[Eviction, ...]:
    out = []
    for u in sorted(assignment.evicted):
        unit = problem.units[u]
        for pod in unit.members:
            group = unit.key if unit.key != pod.key else (pod.group or "")
            cost = (pod.preemption_cost_milli if pod.preemption_cost_milli is not None
                    else MILLI * (1 + max(0, unit.priority)))
            out.append(Eviction(pod=pod.key, node=pod.node or "", cost=cost / MILLI, group=group))
    return tuple(sorted(out, key=lambda e: e.pod))


def _verdict(problem: Problem, w: Workload, ev: Evaluation, node_of: Mapping[str, str],
             labels: Mapping[str, Mapping[str, str]], context: _ReasonContext) -> WorkloadVerdict:
    groups = []
    for key in w.groups:
        group = problem.groups[key]
        domain: dict[str, str] = {}
        if group.topology_key is not None:
            nodes: list[str] = [p.node for p in problem.running_under(key) if p.node]
            nodes += [node_of[p.key] for c in problem.classes_under(key)
                      for p in problem.classes[c].pods if p.key in node_of]
            values = {labels[n].get(group.topology_key, "") for n in nodes}
            if len(values) == 1:
                domain = {group.topology_key: values.pop()}
        groups.append(GroupVerdict(
            name=key, kind=group.kind, placed_pods=ev.new[key],
            running_pods=len(problem.running_under(key)), min_count=group.min_count,
            satisfied=ev.ok[key], domain=domain,
        ))
    if w.pod is not None:
        placed = w.pod.key in node_of
        groups.append(GroupVerdict(name=w.key, kind=s.STANDALONE_POD, placed_pods=int(placed),
                                   running_pods=0, min_count=None, satisfied=placed))
    satisfied = ev.satisfied[w.index]
    reason = "" if satisfied else unsatisfied_reason(problem, w, ev, context)
    return WorkloadVerdict(
        name=w.key, kind=w.kind, priority=w.priority, satisfied=satisfied, reason=reason,
        groups=tuple(groups), proven=not satisfied and _statically_out(problem, w),
    )


def _best_domain(problem: Problem, w: Workload) -> str:
    """The numbers behind "no single domain has room": per gang of ``w`` that none has, the
    domain that takes the most of its pods and how many, against what it needs."""
    parts = []
    for key in w.groups:
        if (short := problem.short_domains.get(key)) is not None:
            best, most, need = short
            group = problem.groups[key]
            where = f", in {group.topology_key}={best}" if best else ""
            parts.append(f"{key} needs {counted(need, 'pod')} in one domain; at most {most} fit{where}")
    return f" ({'; '.join(parts)})" if parts else ""


def _statically_out(problem: Problem, w: Workload) -> bool:
    """Its own objects rule it out whatever the room: rejected at admission, or a root gang
    that cannot reach its minCount (minGroupCount) with every pod (child) it has."""
    if w.rejected:
        return True
    if w.kind == s.STANDALONE_POD:
        return False
    key = w.groups[0]
    group = problem.groups[key]
    if group.min_count is None:
        return False
    if group.kind == s.POD_GROUP:
        have = len(problem.running_in_group.get(key, ())) + \
            sum(len(problem.classes[c].pods) for c in problem.classes_under(key))
    else:
        have = len(problem.tree.children(key))
    return have < group.min_count


_BUDGETS_NAMED = 5  # a reason names this many budgets, then counts the rest


class _ReasonContext:
    """What the reasons of one plan's workloads share: pods by key, held pods, and per node
    the units a budget counts (built on first use)."""

    def __init__(self, problem: Problem, assignment: Assignment | None = None) -> None:
        self.problem = problem
        self.held = {k for k, _ in problem.held}
        self._pods: dict[str, s.Pod] | None = None
        self._counted: dict[s.NodeName, list[int]] | None = None
        self.budget_counts: dict[object, defaultdict[str, int]] = {}
        self.diagnoser = Diagnoser(problem, assignment)

    @property
    def pods(self) -> dict[str, s.Pod]:
        if self._pods is None:
            self._pods = {p.key: p for p in self.problem.snapshot.pods}
        return self._pods

    @property
    def counted_on(self) -> dict[s.NodeName, list[int]]:
        if self._counted is None:
            self._counted = counted_units(self.problem)
        return self._counted


def blocking_budgets(problem: Problem, w: Workload, counted_on: Mapping[s.NodeName, Sequence[int]] | None = None,
                     memo: dict[object, defaultdict[str, int]] | None = None) -> list[tuple[str, int]]:
    """The budgets (key, disruptionsAllowed) that cap ``w``'s victims under the strict policy:
    those counting more of the running pods ``w`` may preempt (lower priority, on a node one of
    its classes could use) than they allow. Sorted by key. ``counted_on`` (``counted_units``)
    lists per node the units a budget counts, and ``memo`` keeps the counts per set of nodes
    and priority, both shared between the workloads of one plan."""
    if not problem.snapshot.pdbs:
        return []
    counted_on = counted_units(problem) if counted_on is None else counted_on
    nodes_by_power: dict[int, set[s.NodeName]] = defaultdict(set)
    for c in w.classes:
        power = problem.classes[c].power
        if power is not None:  # eligible: strictly lower priority, and may preempt at all
            nodes_by_power[power].update(problem.candidates[c])
    key = tuple(sorted((power, frozenset(nodes)) for power, nodes in nodes_by_power.items()))
    counted = memo.get(key) if memo is not None else None
    if counted is None:
        units: set[int] = set()
        for power, nodes in nodes_by_power.items():
            for node in nodes:
                units.update(u for u in counted_on.get(node, ()) if problem.units[u].priority < power)
        counted = pdb_taken(problem, units)
        if memo is not None:
            memo[key] = counted
    return [(b.key, b.allowed) for b in sorted(problem.snapshot.pdbs, key=lambda b: b.key)
            if counted[b.key] > b.allowed]


def counted_units(problem: Problem) -> dict[s.NodeName, list[int]]:
    """node -> the victim units there that some budget counts and that may be preempted at all."""
    out: dict[s.NodeName, list[int]] = {}
    for node, on in problem.units_on_node.items():
        kept = [u for u in on if problem.units[u].pdb_counts and not problem.units[u].protected]
        if kept:
            out[node] = kept
    return out


def unsatisfied_reason(problem: Problem, w: Workload, ev: Evaluation, context: _ReasonContext | None = None) -> str:
    """Why a workload was left out, most specific first (upstream gangscheduling wording).
    ``context`` holds what every workload's reason reads, made once per plan."""
    context = _ReasonContext(problem) if context is None else context
    if w.rejected:
        return w.rejected
    if w.ongoing:
        return w.ongoing
    held, pods = context.held, context.pods
    for key in reversed(w.groups):
        group = problem.groups[key]
        if group.kind == s.POD_GROUP and group.min_count is not None:
            running = len(problem.running_in_group.get(key, ()))
            pending = sum(len(problem.classes[c].pods) for c in problem.classes_under(key))
            if running + pending < group.min_count:
                gated = sorted(k for k in held if pods[k].group == key)
                more = f", {len(gated)} held ({', '.join(gated)})" if gated else ""
                return (f"{key}: minCount ({group.min_count}) cannot be satisfied: "
                        f"{running} running, {pending} pending{more}")
        if group.kind == s.COMPOSITE_POD_GROUP and group.min_count is not None:
            kids = len(problem.tree.children(key))
            if kids < group.min_count:
                return f"{key}: minGroupCount ({group.min_count}) cannot be satisfied: {kids} child groups"
    alone: list[tuple[str, Diagnosis]] = []  # (subject, diagnosis) of classes no node takes as things are
    for c in w.classes:
        cls = problem.classes[c]
        subject = "" if w.kind == s.STANDALONE_POD else f"{cls.group or w.key}: pod {cls.pods[0].key}: "
        named = w.pod or cls.pods[0]  # a pooled class's reason names the workload's own pod
        # the allocator's run-time error aborts the scheduling attempt: it is the reason, whatever
        # the filters say of each node
        aborted = dra_abort_reason(problem, cls) if problem.dra.active and not problem.candidates[c] else ""
        rep = cls.pods[0]
        if selectors.named_nodes(rep) == frozenset():  # NodeAffinity's PreFilter: the terms conflict
            aborted = f"0/{len(problem.nodes)} nodes are available: pod affinity terms conflict. not found"
        elif rep.volume_stage == s.VOLUME_ERROR:  # a Filter's error ends the attempt
            aborted = rep.volume_block
        elif rep.volume_stage == s.VOLUME_PREFILTER:  # and the DynamicResources PostFilter finds no state
            aborted = f"0/{len(problem.nodes)} nodes are available: {rep.volume_block}. not found"
        if aborted:
            return subject + aborted
        d = context.diagnoser.diagnose(c)
        if d is not None and not d.fits and not d.after_preemption:  # not even after evictions
            return subject + d.message()
        if not problem.candidates[c]:
            full = next((cap for cap in problem.dra.reserve_caps if cls.index in cap.classes and cap.room == 0), None)
            if full is not None:  # upstream passes the filters and fails to reserve the claim at PreBind
                name = full.claim.split("/", 1)[1]
                return subject + (f'running PreBind plugin "DynamicResources": add reservation to claim {full.claim}: '
                                  f'ResourceClaim.resource.k8s.io "{name}" is invalid: status.reservedFor: Too many: '
                                  f"{dra_mod.RESERVED_MAX + 1}: must have at most {dra_mod.RESERVED_MAX} items")
            keys = sorted({k for g in w.groups if (k := problem.groups[g].topology_key) is not None})
            if d is not None and keys:  # some node takes the pod: the gang's domains cannot
                return (f"{w.key}: no single {' / '.join(keys)} domain has room for the gang's pods of "
                        f"{named.key}'s shape, even after evicting every victim this plan may evict"
                        + _best_domain(problem, w))
            return (f"{cls.group or named.key}: no node can host pod {named.key} "
                    "(node selector, affinity, taints, topology or capacity even after preemption)")
        if d is not None and not d.fits:
            alone.append((subject, d))
    if w.kind != s.STANDALONE_POD and ev.new.get(w.groups[0], 0) == 0 and ev.ok.get(w.groups[0], False):
        return "no new pod could be placed: every group is already satisfied by running pods"
    standalone = w.kind == s.STANDALONE_POD
    why = (f"not enough free capacity for the {'pod' if standalone else 'gang'}, even after evicting every "
           "lower-priority pod this plan could take for it")
    if problem.strict_pdbs and (budgets := blocking_budgets(problem, w, context.counted_on, context.budget_counts)):
        shown = [f"{key} ({allowed} allowed)" for key, allowed in budgets[:_BUDGETS_NAMED]]
        more = f" and {len(budgets) - _BUDGETS_NAMED} more" if len(budgets) > _BUDGETS_NAMED else ""
        why += f", within the disruptionsAllowed of PodDisruptionBudget {', '.join(shown)}{more}"
    if problem.dra.active and not problem.dra_preemption:
        why += "; devices allocated to running pods stay held (no DRA preemption)"
    if alone:  # kube-scheduler's words first, then why preemption did not help
        subject, d = alone[0]
        return f"{subject}{d.message()} preemption: {why}"
    if standalone and (after := context.diagnoser.diagnose_after(w.classes[0])) is not None and not after.fits:
        # it fits alone but not beside the plan's pods: upstream's queue tried it after them
        if after.never or not after.after_preemption:
            return after.message()
        return f"{after.message()} preemption: {why}"
    return why
