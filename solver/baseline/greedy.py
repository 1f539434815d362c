"""The upstream-greedy baseline: kube-scheduler 1.37 workload-aware scheduling, in bulk.

Workloads are taken one at a time, highest priority first (then by name). For each:

1. place the whole tree without preemption. ``baseline`` follows upstream's placement
   algorithm (schedule_one_podgroup.go): a group with a topology key is placed in each domain
   in turn, nested for CompositePodGroups, and the feasible placements are scored by the
   default PlacementScore plugins (``place.py``); inside a placement each pod goes to
   the node the default profile scores best (NodeResourcesFit LeastAllocated +
   BalancedAllocation, ``fill.py``) among the ``nodes_to_score`` feasible nodes found
   walking the snapshot's node order (``state.node_tree_order``) from where the last search
   stopped. ``hint`` (the solver's hint, not upstream's choice) takes domains best-fit first
   (least free room) and packs each class on the fullest nodes (MostAllocated);
2. if that fails and the workload may preempt: remove every candidate victim
   (strictly lower priority, on a node the workload could use), place the tree once,
   then reprieve victims one at a time as upstream's selectVictimsOnDomain does
   (framework/preemption/podgrouppreemption.go): the victims are classified by
   FilterVictimsWithPDBViolation (each budget spent over every potential victim
   cluster-wide in importance order; ``victims.pdb_violating``), the violating ones are tried
   first, then the others, each in MoreImportantVictim order (priority, victim rank —
   CompositePodGroup > PodGroup > pod, a pod of a `single` group ranking as a PodGroup —
   more pods, earlier start; ``victims.importance``), keeping each one whose return still leaves
   every node's placement feasible;
3. when the tree was placed without preemption but some of its pods were not, preempt for
   those as upstream's next cycle does, inside the domains the placed pods fix
   (``preempt.preempt_for_remainder``).

Where it still differs from kube-scheduler 1.37, and why (the cross-check against the real
scheduler is tests/controlplane/test_baseline_vs_upstream.py):

- random tie-breaks made deterministic: between nodes of equal score upstream draws at random
  (sorted_nodes.go, Randomizer), here a fixed pseudo-random draw per node and search
  (``fill.py``), so that tied pods spread over the cluster as upstream's do (taking tied nodes in
  a row evicted a third of what upstream did on podgroup-preemption-1000-all); between
  placements of equal score (findBestPlacement) the domain first by name; victims sort.Slice
  leaves equal go by key;
- queue order: workloads of equal priority go by name; upstream's queue goes by the time each
  was queued, which a snapshot does not record, and a gang's first cycle may start before all
  its pods exist (the cross-check creates them first);
- node order: nodes are taken as added in name order (the informer's first list); a cluster
  whose nodes were added over time lists them in creation order;
- node scores: only the resource plugins are scored; TaintToleration (PreferNoSchedule),
  preferred node and pod affinity, PodTopologySpread's soft and default constraints, image
  locality and DynamicResources scoring are not, as a snapshot's pending pods rarely carry
  them. A pod's non-zero defaults apply per pod, where upstream applies them per container
  (a snapshot keeps pod totals). A pod of a class takes the best of one sample of candidates
  until they are used up, as OpportunisticBatching does for pods of one signature; a pod under
  inter-pod rules has no signature and upstream searches afresh for it, here the same sample
  is scored again;
- kept because every plan must pass the verifier: a final reprieve over all workloads'
  victims, dropping and re-running a workload whose victim became unnecessary (upstream
  evicts in sequence and never looks back), and with strict PDBs the retry within the
  budgets;
- not upstream: ``hint`` packs fullest first and takes best-fit domains; it is the solver's
  starting point only.

It honours the rules the CP-SAT model encodes (capacity, gangs, topology,
victim units; a victim that cannot be reprieved is exactly a necessary one),
so its Assignment is a valid plan and serves as the solver's complete hint.
The walk is split by concern: this module runs it workload by workload (``baseline``,
``hint``, ``state_of``, ``put_back``); ``state`` holds what it has placed and evicted;
``place`` places a tree domain by domain; ``fill`` picks the nodes; ``preempt`` finds, tries
and reprieves victims; ``devices``, ``interpod``, ``victims`` and ``fragment`` hold the rules.
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from solver.baseline.place import place_workload
from solver.baseline.preempt import (
    candidate_victims,
    preempt_for_remainder,
    preempt_in_domains,
    preempt_pod,
    preempt_pod_hint,
    preemption_domains,
    reprieve,
    try_with,
)
from solver.baseline.state import State
from solver.baseline.victims import within_budgets
from solver.core import snapshot as s
from solver.core.stopping import checkpoint
from solver.problem.assignment import Assignment
from solver.problem.build import Problem
from solver.problem.workloads import Workload


def baseline(problem: Problem, stop: Callable[[], bool] | None = None) -> Assignment:
    """Upstream's plan as this module follows it: each pod on the node the default profile
    scores best (``spread_fill``). The bench's and ``--baseline``'s yardstick. ``stop`` as
    for ``hint``: once true, no further workload is tried."""
    return _run(problem, spread=True, stop=stop)


def hint(problem: Problem, stop: Callable[[], bool] | None = None) -> Assignment:
    """The solver's complete hint: the same walk, but each class packed on the fullest nodes
    first, which leaves more room for later workloads and usually evicts less. Not upstream's
    choice of node, so never reported as the baseline. Once ``stop()`` is true the walk tries
    no further workload (in priority order): the hint is then the plan of those it reached."""
    return _run(problem, spread=False, stop=stop)


def guided(problem: Problem, where: Mapping[int, frozenset[s.NodeName] | None],
           stop: Callable[[], bool] | None = None) -> Assignment:
    """The hint's walk, guided by a relaxation over domains (``domains.choose``; issue 51,
    item 3): within a priority the workloads it satisfies first, each tried in the domain it
    chose (without preemption, then with, in that domain alone) before the hint's own search."""
    return _run(problem, spread=False, stop=stop, where=where)


def _run(problem: Problem, *, spread: bool, stop: Callable[[], bool] | None = None,
         where: Mapping[int, frozenset[s.NodeName] | None] | None = None) -> Assignment:
    """A lower-priority workload may lean on room a victim left for a higher one; when a later
    eviction then makes that victim unnecessary, the lowest-priority workload on its node is
    dropped and the greedy run again (every eviction of a plan must be necessary). A run cut
    by ``stop`` is run again over the same workloads only."""
    skip: set[int] = set()
    upto: int | None = None
    while True:
        state, reached, done = _greedy(problem, skip, spread, stop=stop if upto is None else None, upto=upto,
                                       where=where)
        blamed = state.blame_unnecessary()
        if blamed is None:
            return state.assignment()
        cls = problem.classes[blamed]
        # a pooled class's pods are workloads of their own: drop the last one placed
        pooled = [w for w in done if problem.workloads[w].pod is not None and problem.workloads[w].classes == (blamed,)]
        skip.add(max(pooled, key=lambda w: problem.workloads[w].rank) if pooled else cls.workload)
        if stop is not None and stop():
            upto = reached


def _greedy(problem: Problem, skip: set[int], spread: bool = False, *, stop: Callable[[], bool] | None = None,
            upto: int | None = None, where: Mapping[int, frozenset[s.NodeName] | None] | None = None,
            ) -> tuple[State, int, set[int]]:
    """The walk over the workloads in priority order; it ends early when ``stop()`` is true or
    after ``upto`` of them. Returns the state, how many workloads it went through and the ones
    it placed."""
    state = State(problem, spread=spread)
    chosen = where or {}
    if spread:  # upstream's queue: priority, then (here) the name
        order = sorted(problem.workloads, key=lambda w: (-w.priority, w.key))
    else:  # the hint: within a priority the smallest first, the most workloads for the room
        # (guided: the relaxation's choice first, the largest first, as a bin packing's decreasing
        # fit: which workloads go is chosen, what is left is where the last ones fit)
        order = sorted(problem.workloads, key=lambda w: (
            -w.priority, w.index not in chosen,
            -problem.pending_pods(w) if w.index in chosen else problem.pending_pods(w), w.key))
    reached = 0
    done: set[int] = set()  # workloads placed
    for workload in order[:upto]:
        checkpoint("the greedy walk")  # the caller has gone: raise (a deadline only ends the walk)
        if stop is not None and stop():
            break
        reached += 1
        if workload.index in skip or workload.rejected:
            continue
        point = state.savepoint()
        # where the relaxation put it first: placed there, else by preempting there alone
        mine = set(nodes) if (nodes := chosen.get(workload.index)) is not None else None
        there = mine is not None and place_workload(state, workload, mine)
        if mine is not None and not there and workload.power is not None and \
                preempt_in_domains(state, workload, [mine], point):
            done.add(workload.index)
            continue
        if there or _place(state, workload):
            done.add(workload.index)
            if workload.power is not None:
                preempt_for_remainder(state, workload)
            continue
        if workload.power is None:
            continue
        if not spread and (domains := preemption_domains(state, workload)) is not None:
            placed = preempt_in_domains(state, workload, domains, point)
        elif workload.kind == s.STANDALONE_POD:
            placed = preempt_pod(state, workload) if spread else preempt_pod_hint(state, workload)
        else:
            victims = candidate_victims(problem, workload, state)
            placed = bool(victims) and try_with(state, workload, victims, point)
            if victims and not placed and problem.strict_pdbs:
                # the reprieves were not enough: only the victims the budgets allow
                placed = try_with(state, workload, within_budgets(problem, state.evicted, victims), point)
        if placed:
            done.add(workload.index)
    # Upstream tries a pending workload again once a pod is deleted (the preemptions' victims):
    # one left pending before a later workload's preemption freed room (a preemptionPolicy Never
    # one above all) may now fit, and takes it without preempting.
    if state.evicted and not (stop is not None and stop()):
        for workload in order[:reached]:
            if workload.index in done or workload.index in skip or workload.rejected:
                continue
            checkpoint("the greedy walk (retries)")
            if _place(state, workload):
                done.add(workload.index)
    # A later workload's evictions can make room that an earlier victim no longer
    # needs to leave: put back every victim that fits again (the plan is joint).
    reprieve(state, sorted(state.evicted))
    return state, reached, done


def _place(state: State, workload: Workload) -> bool:
    """``place_workload`` without preemption, taken back when it fails. In the hint, a pod
    outside any group whose class found no room a moment ago (``State.no_room``) tries only the
    nodes an eviction has freed since: 5,000 alike pods do not each sort 5,000 nodes."""
    point = state.savepoint()
    remember = not state.spread and workload.kind == s.STANDALONE_POD and \
        state.remembers(state.problem.classes[workload.classes[0]])
    allowed = state.freed_since(workload.classes[0]) if remember else None
    if (allowed is None or allowed) and place_workload(state, workload, allowed):
        return True
    state.rollback(point)
    if remember:
        state.no_room[workload.classes[0]] = point
    return False


def state_of(problem: Problem, assignment: Assignment) -> State:
    """The cluster as ``assignment`` leaves it: its pods placed, with their devices and shared
    claims, and its victims evicted."""
    state = State(problem, frees_devices=problem.dra_preemption)
    dra = problem.dra
    for i, take in assignment.shared.items():
        reach = frozenset.intersection(*(dra.types[t].reach for (_, _, _, t) in take))
        owner = min(dra.shared[i].users)
        state.dev.commit_shared(i, dict(take), reach, owner)
    for (c, node), n in assignment.counts.items():
        state.place(c, node, n, take=dict(assignment.devices.get((c, node), {})) or None)
    for u in assignment.evicted:
        state.evict(u, logged=False)
    return state


def put_back(problem: Problem, assignment: Assignment) -> Assignment:
    """Put back, in reprieve order, every evicted victim that fits again.

    Never worse on any tier; used on a solver plan a time limit cut short.
    """
    state = state_of(problem, assignment)
    reprieve(state, sorted(state.evicted))
    return state.assignment()


