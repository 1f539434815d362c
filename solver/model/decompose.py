"""Solve a single workload with a root topology constraint one domain at a time.

When exactly one workload is pending and its root group has a topology key,
every pod it places lands in one domain of that key, and only victims inside
that domain can be evicted (an eviction must be necessary for a pod beside
it). The problem therefore separates exactly: the optimum is the best of the
per-domain optima, each a model over one domain's nodes. Each sub-model is
built by the same ``build_model`` and solved by the same staged ``solve``.

Each domain has a bound, the best tiers any plan there may reach (lexicographically,
``objective.lex_bound``); a domain proven no better than the incumbent (pruned) drops
out. The plan's bound is the greatest left, so it is OPTIMAL exactly when no domain
may beat it on any tier, firstAvailable included. Under strict budgets, a domain where
the gang needs more budget-counted evictions than the budgets allow is proven empty
by the floors, without a search (``floors.strict_blocks``). Under soft budgets every
domain's bound starts at its own PDB floor, from one floor of the whole problem
(``PdbFloor.by_domain``), so a domain no search reaches within the deadline still
counts with its floor, and one whose floor is behind that floor's plan is pruned
without a search.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from solver.baseline import greedy
from solver.core import snapshot as s
from solver.core.plan import FEASIBLE, OPTIMAL, Tiers
from solver.model import objective
from solver.model.bounds import floors
from solver.model.build import BuiltModel, build_model
from solver.model.solve import SolveParams, SolveResult, StageReport, solve
from solver.problem.assignment import Assignment, score, trivial_bound
from solver.problem.build import Problem


@dataclass(frozen=True, slots=True, kw_only=True)
class DecomposedResult:
    result: SolveResult
    domains: int
    variables: int  # of the largest sub-model
    constraints: int
    build_seconds: float  # all sub-models together


def root_key(problem: Problem) -> str | None:
    """The topology key the problem separates on, or None."""
    if len(problem.workloads) != 1 or problem.workloads[0].kind == s.STANDALONE_POD:
        return None
    return problem.groups[problem.workloads[0].groups[0]].topology_key


def domains(problem: Problem, key: str) -> list[str]:
    labels = {n.name: n.labels for n in problem.nodes}
    return sorted({labels[n][key] for cand in problem.candidates for n in cand})


def split(problem: Problem, key: str) -> dict[str, Problem]:
    """One sub-problem per domain of ``key`` (in ``domains`` order): the problem with every
    class's candidates cut to that domain's nodes, all made in one pass over the candidates."""
    labels = {n.name: n.labels for n in problem.nodes}
    cut: dict[str, list[dict[s.NodeName, int]]] = {
        v: [{} for _ in problem.candidates] for v in domains(problem, key)}
    for c, cand in enumerate(problem.candidates):
        for n, k in cand.items():
            value = labels[n].get(key)
            if value is not None:
                cut[value][c][n] = k
    return {v: replace(problem, candidates=tuple(candidates)) for v, candidates in cut.items()}


def solve_by_domain(problem: Problem, params: SolveParams, key: str) -> DecomposedResult:
    """Branch and bound over the domains.

    Pass 1 solves tiers 1-3 in every domain (cheap). Pass 2 solves the cost tiers
    only in the domains that reach the best tiers 1-3, cheapest greedy first, each
    asked to match or beat the incumbent's cost, so most are pruned by the solver's
    own proof instead of being optimised. Both run in rounds: each round's groundwork
    (floors and hints) takes at most half the time left, and a round that ends with time
    left starts another on the domains not reached yet.
    """
    search = _ByDomain(problem, params, key)
    while search.groundwork():  # in rounds: time a round leaves goes to the domains not reached
        progress = len(search.passed) + len(search.costed)
        search.first_pass()
        if search.first:
            search.cost_pass(max(k for k, _ in search.first.values()))
        if search.left() <= params.time_limit * 0.05 or \
                (not search.pending and len(search.passed) + len(search.costed) == progress):
            break
    return search.sizes.result(search.combined(), len(search.values))


class _ByDomain:
    """The branch and bound's state: each domain's sub-problem, floors and hint; pass 1's
    tiers 1-3 per domain and its incumbent; pass 2's finalists, their results and the best;
    and per domain the best tiers it could still reach (its bound), or none once it is proven
    no better than the incumbent."""

    def __init__(self, problem: Problem, params: SolveParams, key: str) -> None:
        self.problem, self.params = problem, params
        self.start = time.perf_counter()
        self.subs = split(problem, key)
        self.values = list(self.subs)
        self.trivial = trivial_bound(problem)
        self.bounds: dict[str, Tiers] = dict.fromkeys(self.values, self.trivial)  # domain -> what it may reach
        self.floors: dict[str, floors.PdbFloor | None] = {}
        self.hints: dict[str, Assignment] = {}
        self.pending = list(self.values)  # domains whose groundwork is still to do
        self.tried: list[str] = []  # domains with a hint, in the order pass 1 takes them
        self.passed: set[str] = set()  # domains pass 1 has tried
        self.costed: set[str] = set()  # finalists pass 2 has tried
        self.sizes = _Sizes(self.floors)
        self.first: dict[str, tuple[Tiers, bool]] = {}  # domain -> (tiers 1-3, proven)
        # pass 1's models of the domains that may still be finalists (their tiers 1-3 are the best
        # so far): solve leaves a model as built, so pass 2 solves it again instead of rebuilding
        self.models: dict[str, BuiltModel] = {}
        self.incumbent: tuple[int, int] | None = None  # (stage-1 value, PDB violations) of the best domain so far
        self.reports: list[StageReport] = []
        self.cost_floors: dict[str, int | None] = {}  # finalist -> its proven floor on the cost
        self.best: tuple[Tiers, Assignment] | None = None
        self.key = key
        self.whole_done = False  # the whole problem's PDB floor tried (``whole_floor``)
        self.floor_plan: tuple[Tiers, Assignment] | None = None  # its plan, made outside any domain's search
        self.evicted_floors: dict[str, int] = {}  # domain -> the fewest pods a plan placing every pod evicts

    def left(self) -> float:
        return self.params.time_limit - (time.perf_counter() - self.start)

    def out_of_time(self) -> bool:
        """The search's time is up, or its caller has gone."""
        return self.left() < 0 or (self.params.stop is not None and self.params.stop.is_set())

    def groundwork(self) -> bool:
        """Each pending domain's floors and greedy hint, until half of the time left is spent
        (the domains left wait for the next round; their bound stays trivial until then), so
        the groundwork never eats the search. False when there is nothing to search."""
        stop = self.params.stop
        until = time.perf_counter() + self.left() * 0.5
        trivial = self.trivial
        if not self.whole_done:  # it may take the whole search: it bounds every domain, and its plan meets it
            self.whole_floor()
            until = time.perf_counter() + self.left() * 0.5
        while self.pending and time.perf_counter() < until and not (stop is not None and stop.is_set()):
            v = self.pending.pop(0)
            if self.behind(v):  # its floor is behind a plan in hand: no search can help
                self.reports.append({"domain": v, "status": "PRUNED", "tier": 3,
                                     "floor": self.bounds[v].pdb_violations})
                self.drop(v)
                continue
            sub = self.subs[v]
            if floors.strict_blocks(sub):
                # strict: placing the gang here needs more budget-counted evictions than the
                # budgets allow, so nothing is placed here in any plan (solver/model/bounds/floors.py)
                self.bounds[v] = replace(trivial, satisfied=tuple((p, 0) for p, _ in trivial.satisfied), placed=0)
                self.reports.append({"domain": v, "status": "UNPLACEABLE"})
                continue
            self.floors[v] = floor = floors.pdb_floor(sub)
            if floor is not None:
                self.raise_to_floor(v, floor.violations, floor.evicted_pods)
            self.hints[v] = _better(sub, greedy.hint(sub), floor)
            self.tried.append(v)
        return any(v not in self.passed for v in self.tried)

    def whole_floor(self) -> None:
        """The PDB floor of the whole problem, worked out once for every domain (the per-node
        programs are most of a floor's work): each domain's bound from the start, so a domain the
        groundwork does not reach still counts with its floor, and one needing more violations
        than a plan found is behind it. Its plan, in the domain that needs the least, leads the
        way (that domain's groundwork comes first). Nothing when there is none (strict budgets,
        no budgets, another shape) or no time for it."""
        self.whole_done = True
        whole = floors.pdb_floor(self.problem, stop=self.out_of_time)
        if whole is None:
            return
        for v, (violations, evicted) in whole.by_domain.items():
            self.raise_to_floor(v, violations, evicted)
        # the domains needing the fewest violations first (a stable sort: the floor's plan's domain
        # ahead of its ties); where every pod cannot go, last
        labels = {n.name: n.labels.get(self.key) for n in self.problem.nodes}
        lead = {labels[n] for _, n in whole.plan.counts} if whole.plan is not None else set()
        self.pending.sort(key=lambda v: (whole.by_domain[v][0] if v in whole.by_domain else math.inf, v not in lead))
        if whole.plan is not None:
            self.floor_plan = (score(self.problem, whole.plan), whole.plan)

    def behind(self, v: str) -> bool:
        """Domain ``v``'s bound is proven behind a plan already made (the whole floor's)."""
        bound = self.bounds.get(v)
        return bound is not None and self.floor_plan is not None and bound < self.floor_plan[0]

    def raise_to_floor(self, v: str, violations: int, evicted: int) -> None:
        """A plan placing every pod in domain ``v`` has at least ``violations`` and evicts at least
        ``evicted`` pods: its bound says so, and keeps the evicted pods' floor for when its cost
        is priced (``open_cost_floors``). (A plan placing fewer is behind the bound on an earlier
        tier.)"""
        self.evicted_floors[v] = max(self.evicted_floors.get(v, 0), evicted)
        bound = self.bounds.get(v)
        if bound is not None and bound.pdb_violations < violations and bound.placed == self.trivial.placed:
            self.bounds[v] = replace(bound, pdb_violations=violations, cost_milli=0, evicted=0, first_available=0)

    def drop(self, v: str) -> None:
        """Domain ``v`` is proven no better than the incumbent: its bound no longer counts."""
        self.bounds.pop(v, None)

    def pdb_cutoff(self, kind: objective.StageKind, found: dict[objective.StageKind, tuple[int, bool]]
                   ) -> int | None:
        """Branch and bound on tier 3: a domain must match the incumbent's violations. Only the
        PDB stage is cut (a domain that can evict nothing has none: its second stage is
        firstAvailable, which no incumbent's violations say anything of)."""
        if kind is not objective.StageKind.PDB or self.incumbent is None:
            return None
        (value, proven), (best_value, best_pdb) = found[objective.StageKind.WORKLOADS_PODS], self.incumbent
        if value == best_value:
            return best_pdb
        return -1 if value < best_value and proven else None  # -1: proven worse, prune

    def first_pass(self) -> None:
        """Tiers 1-3 in every domain, the best greedy tiers first so the incumbent is good early
        (a stable sort: ties keep their order)."""
        problem = self.problem
        fresh = sorted((v for v in self.tried if v not in self.passed),
                       key=lambda v: score(problem, self.hints[v]).head, reverse=True)
        for i, v in enumerate(fresh):
            share = _share(self.params, self.start, len(fresh) - i, 0.5, self.sizes.overhead())
            if share is None:
                break
            self.passed.add(v)
            built = self.sizes.build(self.subs[v], v)
            result = solve(built, share, hint=self.hints[v], upto_cost=True, stage_cutoff=self.pdb_cutoff)
            if result.pruned:
                self.drop(v)
                self.reports.append({"domain": v, "status": "PRUNED", "tier": 3})
                continue
            self.bounds[v] = min(self.bounds[v], result.bound)  # the floors' bound may be the tighter
            if result.assignment is None:
                continue
            found = score(problem, result.assignment)
            self.first[v] = (found.head, result.bound.head == found.head)
            self.models[v] = built
            best_head = max(head for head, _ in self.first.values())
            self.models = {d: m for d, m in self.models.items() if self.first[d][0] == best_head}
            if found > score(problem, self.hints[v]):
                self.hints[v] = result.assignment  # pass 2 starts from what pass 1 found
            # the incumbent is the returned solution itself: its stage-1 value and its own violations
            stage1 = next((r.get("objective") for r in result.stages
                           if r["stage"] == objective.StageKind.WORKLOADS_PODS.value), None)
            if isinstance(stage1, float):
                pdb, best = found.pdb_violations, self.incumbent
                if best is None or stage1 > best[0] or (stage1 == best[0] and pdb < best[1]):
                    self.incumbent = (round(stage1), pdb)

    def cost_pass(self, best13: Tiers) -> None:
        """The cost tiers in the domains that reach ``best13``: lowest cost floor (then
        greedy cost) first, each asked to beat the incumbent's cost or pruned by its floors."""
        problem = self.problem
        finalists = [v for v, (k, _) in self.first.items() if k == best13 and v not in self.costed]
        # a proven floor on each finalist's cost (solver/model/bounds/floors.py), when tiers 1-3 place every
        # pod, while the search has time left (a finalist past it has no floor: bound 0)
        costs: dict[str, floors.CostFloor | None] = {}
        for v in finalists:
            costs[v] = None if self.out_of_time() else _cost_floor(problem, self.subs[v], best13, self.out_of_time)
        self.cost_floors.update({v: None if c is None else c.cost for v, c in costs.items()})
        for v, c in costs.items():
            if c is not None and c.plan is not None:
                self.hints[v] = _better_plan(self.subs[v], self.hints[v], c.plan)
            if c is not None and self.first[v][1]:  # tiers 1-3 proven: the cost is at least the floor
                self.bounds[v] = replace(self.bounds[v], cost_milli=max(self.bounds[v].cost_milli, c.cost))
        self.open_cost_floors(set(costs), self.out_of_time)
        finalists.sort(key=lambda v: (self.cost_floors[v] or 0, _greedy_cost(problem, self.hints[v], best13)))
        for i, v in enumerate(finalists):
            share = _share(self.params, self.start, len(finalists) - i, 1.0, self.sizes.overhead())
            if share is None:
                break  # the finalists left keep their pass-1 bound, raised to their cost floor
            self.costed.add(v)
            best = self.best
            # the cost cutoff only applies where tiers 1-3 are proven equal to the incumbent's
            cutoff = None if best is None else (best[0].head, best[0].cost_milli)
            if best is not None and self.first[v][1] and _cannot_beat(best[0], self.cost_floors[v], self.floors[v]):
                self.drop(v)
                self.reports.append({"domain": v, "status": "PRUNED", "tier": 4, "floor": self.cost_floors[v]})
                continue  # proven by its floors: at best as costly as the incumbent
            built = self.models.pop(v, None)
            if built is None:
                built = self.sizes.build(self.subs[v], v, {best13.pdb_violations: costs[v]})
            else:
                built.cost_floors[best13.pdb_violations] = costs[v]
            result = solve(built, share, hint=self.hints[v], cost_cutoff=cutoff)
            self.reports.append({"domain": v, "status": "PRUNED" if result.pruned else result.status,
                                 "seconds": round(result.solve_seconds, 4)})
            if result.pruned:
                self.drop(v)
                continue  # proven: same tiers 1-3, costlier than the incumbent
            self.bounds[v] = min(self.bounds[v], result.bound)
            if result.assignment is None:
                continue
            full = score(problem, result.assignment)
            if best is None or full > best[0]:
                self.best = (full, result.assignment)

    def open_cost_floors(self, done: set[str], stop: Callable[[], bool]) -> None:
        """The cost floor of each domain not yet priced whose bound leads (it is the plan's bound),
        at its bound's violations: a plan there placing every pod has at least those, and with
        exactly those costs at least the floor (with more it is behind on the PDB tier). Without
        it a zone tied on the PDB tier but never searched kept a cost bound of 0 (100 %)."""
        every = self.trivial.placed
        while not stop():
            lead = max((b for v, b in self.bounds.items() if v not in done), default=None)
            if lead is None or lead.placed != every or lead < max(self.bounds.values()):
                return  # none left, or behind a domain priced already: it does not set the bound
            v = next(v for v, b in self.bounds.items() if v not in done and b == lead)
            done.add(v)
            floor = floors.cost_floor(self.subs[v], lead.pdb_violations, stop)
            if floor is not None and floor.cost > lead.cost_milli:
                # a plan at that cost evicts at least the PDB floor's pods (whatever its cost)
                self.bounds[v] = replace(lead, cost_milli=floor.cost, evicted=self.evicted_floors.get(v, 0),
                                         first_available=0)

    def combined(self) -> SolveResult:
        """The best plan found (else the best pass-1 domain's, else the best greedy hint, else
        nothing placed), and the best tiers any domain may still reach: OPTIMAL when they are
        the plan's own."""
        problem = self.problem
        candidates = ([self.best[1]] if self.best is not None else []) + list(self.hints.values()) + \
            ([self.floor_plan[1]] if self.floor_plan is not None else [])
        assignment = max(candidates, key=lambda a: score(problem, a), default=None)
        if assignment is None:
            assignment = Assignment(counts={}, evicted=frozenset())
        found = score(problem, assignment)
        bound = max(self.bounds.values(), default=found)
        if bound < found:  # a plan beats what the domains were proven to reach: claim nothing
            bound = self.trivial
        return SolveResult(
            assignment=assignment,
            status=OPTIMAL if bound == found else FEASIBLE,
            bound=bound,
            solve_seconds=time.perf_counter() - self.start - self.sizes.build_seconds,
            stages=tuple(self.reports),
        )


def _better(sub: Problem, hint: Assignment, floor: floors.PdbFloor | None) -> Assignment:
    """The floor's plan when it leads the greedy hint on the tiers."""
    return hint if floor is None or floor.plan is None else _better_plan(sub, hint, floor.plan)


def _cannot_beat(incumbent: Tiers, cost: int | None, floor: floors.PdbFloor | None) -> bool:
    """True when a domain with these floors (tiers 1-3 equal) cannot beat the incumbent."""
    if cost is None:
        return False
    best_cost, best_evicted = incumbent.cost_milli, incumbent.evicted
    pods = floor.evicted_pods if floor is not None else 0
    # equal on cost and evicted pods, a domain may still take earlier firstAvailable entries
    return cost > best_cost or (cost == best_cost and (pods > best_evicted or
                                                        (pods == best_evicted and incumbent.first_available == 0)))


def _better_plan(sub: Problem, hint: Assignment, plan: Assignment) -> Assignment:
    return plan if score(sub, plan) > score(sub, hint) else hint


def _cost_floor(problem: Problem, sub: Problem, best13: Tiers, stop: Callable[[], bool]) -> floors.CostFloor | None:
    """The domain's floor on cost at tiers 1-3 ``best13``, when those place every pending pod."""
    if best13.placed != sum(len(c.pods) for c in problem.classes):
        return None
    return floors.cost_floor(sub, best13.pdb_violations, stop)


class _Sizes:
    """Builds sub-models and remembers the largest and the total build time."""

    def __init__(self, floors: dict[str, floors.PdbFloor | None]) -> None:
        self.variables = self.constraints = 0
        self.build_seconds = 0.0
        self.longest = 0.0
        self._floors = floors

    def build(self, sub: Problem, domain: str,
              cost_floors: dict[int, floors.CostFloor | None] | None = None) -> BuiltModel:
        built = build_model(sub, pdb_floor=self._floors[domain], cost_floors=cost_floors)
        self.build_seconds += built.build_seconds
        self.longest = max(self.longest, built.build_seconds)
        self.variables = max(self.variables, built.variables)
        self.constraints = max(self.constraints, built.constraints)
        return built

    def overhead(self) -> float:
        """Seconds a domain costs besides its search: the longest build so far, doubled for the
        checks around the search (the hinted plan's, the floors'), at least 10 ms."""
        return max(0.01, 2 * self.longest)

    def result(self, result: SolveResult, domains: int) -> DecomposedResult:
        return DecomposedResult(result=result, domains=domains, variables=self.variables,
                                constraints=self.constraints, build_seconds=self.build_seconds)


def _share(params: SolveParams, start: float, left: int, fraction: float, overhead: float) -> SolveParams | None:
    """The search time of the next of ``left`` domains: its part of ``fraction`` of what is left,
    once each domain's own building and checking (``overhead`` seconds) is set aside, so the
    domains together keep to the limit."""
    remaining = (params.time_limit - (time.perf_counter() - start)) * fraction
    if remaining - overhead <= 0.01:
        return None
    # too little for every domain left: this one still gets a short search (the next round, or
    # the bound, takes care of the rest)
    return replace(params, time_limit=max((remaining - overhead * left) / left, min(0.05, remaining - overhead)))


def _greedy_cost(problem: Problem, hint: Assignment, best13: Tiers) -> tuple[int, int]:
    tiers = score(problem, hint)
    return (0 if tiers.head == best13 else 1, tiers.cost_milli)
